/* The transparent listener. A connection the kernel redirected arrives
 * with its original destination in the BPF connection index (c->who, read
 * at accept): recovered here into c->orig, it is the destination the
 * client asked for, and its first bytes are judged by the stream judge
 * (judge.c): TLS SNI, HTTP Host, or plain TCP by address and tcp:// rules.
 * A client over a connection limit is reset (answers_over is false). */
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "proxy/conn.h"
#include "proxy/proto.h"

#define FIRST_BYTES_MS 1000 /* how long a client may stay silent before it is plain TCP */

/* The original destination the index keeps for c (IPv4 as v4-mapped). */
static void
original_destination(struct conn *c)
{
	const struct egr_conn_val *who = &c->who;

	if (who->addr[0] == 0 && who->addr[1] == 0 && who->addr[2] == htonl(0xffff)) {
		struct sockaddr_in *in = (struct sockaddr_in *)&c->orig;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = who->addr[3];
		in->sin_port = who->port;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&c->orig;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, who->addr, 16);
		in6->sin6_port = who->port;
	}
}

static int
tproxy_start(struct conn *c)
{
	original_destination(c);
	c->source = CONN_SRC_TRANSPARENT;
	c->port = (uint16_t)conn_sockaddr_port(&c->orig);
	c->host[0] = 0;
	return judge_start(c, FIRST_BYTES_MS);
}

const struct proto_ops tproxy_proto_ops = {
	.name = "transparent",
	.start = tproxy_start,
};
