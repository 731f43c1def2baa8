// SPDX-License-Identifier: Apache-2.0
/* The transparent listener. A connection the kernel redirected arrives
 * with its original destination in the BPF connection index (c->who, read
 * at accept): recovered here into c->orig, it is the destination the
 * client asked for, and its first bytes are judged by the stream judge
 * (judge.c): TLS SNI, HTTP Host, or plain TCP by address and tcp:// rules.
 * A client over a connection limit is reset (answers_over is false). */
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "lib/sockaddr.h"
#include "proxy/conn.h"
#include "proxy/proto.h"

#define FIRST_BYTES_MS 1000 /* how long a client may stay silent before it is plain TCP */

/* The original destination the index keeps for c (IPv4 as v4-mapped). */
static void
original_destination(struct conn *c)
{
	sockaddr_from_key(c->who.addr, c->who.port, &c->orig);
}

static int
tproxy_start(struct conn *c)
{
	original_destination(c);
	c->source = CONN_SRC_TRANSPARENT;
	c->port = sockaddr_port(&c->orig);
	c->host[0] = 0;
	return judge_start(c, FIRST_BYTES_MS);
}

const struct proto_ops tproxy_proto_ops = {
	.name = "transparent",
	.start = tproxy_start,
};
