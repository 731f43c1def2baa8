// SPDX-License-Identifier: Apache-2.0
/* The SOCKS5 listener (RFC 1928, no authentication, CONNECT only). A
 * tunnel that an address or tcp:// rule allows is connected before the
 * reply, as the RFC intends. A tunnel that only host rules could allow gets
 * a success reply first; its first bytes must then be a TLS ClientHello or
 * an HTTP request for the requested name (the stream judge, judge.c), or it
 * is closed.
 * A name no rule could allow is refused at once with 0x02. A client over a
 * connection limit (or when descriptors run out) gets 0x01 for its request.
 * An upstream proxy's failure: 0x02 when it refused (403, 407), 0x04 for
 * its 5xx, 0x01 when it could not be reached or did not answer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "parse/parse.h"
#include "proxy/conn.h"
#include "proxy/proto.h"

static void
send_reply(struct conn *c, enum socks5_reply rep, conn_step next)
{
	uint8_t out[22];
	size_t n;

	if (rep == SOCKS5_SUCCEEDED && c->ufd != -1) {
		struct sockaddr_storage local;
		socklen_t len = sizeof(local);

		if (getsockname(c->ufd, (struct sockaddr *)&local, &len) == 0) {
			if (local.ss_family == AF_INET) {
				struct sockaddr_in *in = (struct sockaddr_in *)&local;

				n = socks5_build_reply(rep, (uint8_t *)&in->sin_addr, AF_INET,
						       ntohs(in->sin_port), out);
			} else {
				struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&local;

				n = socks5_build_reply(rep, (uint8_t *)&in6->sin6_addr, AF_INET6,
						       ntohs(in6->sin6_port), out);
			}
			conn_reply(c, (const char *)out, n, next);
			return;
		}
	}
	n = socks5_build_reply(rep, NULL, AF_INET, 0, out);
	conn_reply(c, (const char *)out, n, next);
}

static enum socks5_reply
errno_reply(int err)
{
	switch (err) {
	case ECONNREFUSED:
		return SOCKS5_CONN_REFUSED;
	case ENETUNREACH:
		return SOCKS5_NET_UNREACHABLE;
	case EACCES:
		return SOCKS5_NOT_ALLOWED;
	case EMFILE:
	case ENFILE:
		return SOCKS5_GENERAL_FAILURE; /* out of descriptors: overloaded */
	default:
		return SOCKS5_HOST_UNREACHABLE;
	}
}

/* A failure of the upstream proxy: its refusal as the reply codes say it
 * (403, 407: not allowed; a 5xx: the host unreachable from there);
 * anything else (no connection to it, no answer in time) is this
 * server's failure, not the host's. */
static enum socks5_reply
upstream_reply(const struct conn *c)
{
	if (c->up_status == 403 || c->up_status == 407)
		return SOCKS5_NOT_ALLOWED;
	if (c->up_status >= 500)
		return SOCKS5_HOST_UNREACHABLE;
	return SOCKS5_GENERAL_FAILURE;
}

static void
on_upstream_direct(struct conn *c)
{
	if (c->ufd == -1) {
		send_reply(c, c->via_upstream ? upstream_reply(c) : errno_reply(c->up_err), NULL);
		return;
	}
	send_reply(c, SOCKS5_SUCCEEDED, relay_start);
}

static void
on_decided(struct conn *c, bool allowed)
{
	if (!allowed) {
		send_reply(c, SOCKS5_NOT_ALLOWED, NULL);
		return;
	}
	conn_connect_upstream(c, on_upstream_direct);
}

/* After the success reply: the tunnel's first bytes are judged, the head
 * timeout running from the reply. */
static void
await_first_bytes(struct conn *c)
{
	judge_start(c, 0);
}

/* Would a host rule allow TLS or plain HTTP to c->host (or, for an address
 * request, the name the DNS responder answered it for) on c->port? */
static bool
host_rules_possible(struct conn *c)
{
	struct sockaddr_storage lit;
	struct policy_query q;
	struct policy_decision d;

	if (!c->host[0]) {
		const char *learned = conn_learned_name(c);

		if (!learned)
			return false;
		snprintf(c->host, sizeof(c->host), "%s", learned);
	}
	conn_query(c, NULL, &q, &lit);
	q.proto = POLICY_P_TLS;
	q.method = NULL;
	if (policy_decide(conn_policy(c), &q, &d) == 0 && d.action == POLICY_ALLOW)
		return true;
	q.proto = POLICY_P_HTTP;
	q.method = "GET";
	if (policy_decide(conn_policy(c), &q, &d) == 0 &&
	    (d.action == POLICY_ALLOW || d.reason == POLICY_R_METHOD))
		return true;
	return false;
}

static void
on_request(struct conn *c)
{
	struct socks5_request req;
	struct policy_decision d;
	struct sockaddr_storage lit;
	const struct sockaddr *addr;
	struct policy_query q;
	enum parse_result r;
	size_t used = 0;
	char host[256];

	r = socks5_parse_request((const uint8_t *)c->in, c->inlen, &req, &used);
	if (r == PARSE_MORE)
		return;
	if (c->over) {
		send_reply(c, SOCKS5_GENERAL_FAILURE, NULL);
		return;
	}
	if (r != PARSE_DONE) {
		bool atyp = req.atyp != 1 && req.atyp != 3 && req.atyp != 4;

		send_reply(c, atyp ? SOCKS5_ATYP_NOT_SUPPORTED : SOCKS5_GENERAL_FAILURE, NULL);
		return;
	}
	conn_drop_input(c, used);
	if (req.cmd != 1) {
		send_reply(c, SOCKS5_CMD_NOT_SUPPORTED, NULL);
		return;
	}
	c->port = req.port;
	c->proto = POLICY_P_TCP;
	if (req.atyp == 3) {
		if (policy_host_normalize(req.host, false, host, sizeof(host))) {
			send_reply(c, SOCKS5_HOST_UNREACHABLE, NULL);
			return;
		}
		snprintf(c->host, sizeof(c->host), "%s", host);
	} else if (req.atyp == 1) {
		struct sockaddr_in *in = (struct sockaddr_in *)&c->orig;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, req.addr, 4);
		in->sin_port = htons(req.port);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&c->orig;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, req.addr, 16);
		in6->sin6_port = htons(req.port);
	}

	/* Any TCP allowed (tcp:// or address rules)? Then connect first. */
	addr = c->host[0] ? NULL : (const struct sockaddr *)&c->orig;
	conn_query(c, addr, &q, &lit);
	if (policy_decide(conn_policy(c), &q, &d) == 0 && d.action == POLICY_ALLOW) {
		conn_decide(c, addr, &d, NULL); /* log it */
		conn_connect_upstream(c, on_upstream_direct);
		return;
	}
	/* Could host rules allow it once we see TLS or HTTP for this name on
	 * this port? (For an address, the name the DNS responder answered it
	 * for.) Otherwise refuse now, with 0x02. */
	if (d.reason != POLICY_R_DENY_RULE && d.reason != POLICY_R_LOCAL &&
	    d.reason != POLICY_R_V4_IN_V6 && d.reason != POLICY_R_NO_IPV6 &&
	    host_rules_possible(c)) {
		send_reply(c, SOCKS5_SUCCEEDED, await_first_bytes);
		return;
	}
	/* logs the refusal, or asks on the terminal (--ask) */
	switch (conn_decide(c, addr, &d, on_decided)) {
	case -1:
		return;
	case 0:
		send_reply(c, SOCKS5_NOT_ALLOWED, NULL);
		return;
	default:
		conn_connect_upstream(c, on_upstream_direct);
	}
}

static void
on_method_sent(struct conn *c)
{
	conn_read_client(c, on_request);
	if (c->inlen)
		on_request(c);
}

static void
on_greeting(struct conn *c)
{
	enum parse_result r;
	bool no_auth = false;
	size_t used = 0;

	r = socks5_parse_greeting((const uint8_t *)c->in, c->inlen, &no_auth, &used);
	if (r == PARSE_MORE)
		return;
	if (r != PARSE_DONE) {
		conn_close(c, "bad socks5 greeting");
		return;
	}
	conn_drop_input(c, used);
	if (!no_auth) {
		conn_reply(c, "\x05\xff", 2, NULL);
		return;
	}
	conn_reply(c, "\x05\x00", 2, on_method_sent);
}

static int
socks_start(struct conn *c)
{
	c->source = CONN_SRC_SOCKS5;
	conn_read_client(c, on_greeting);
	return 0;
}

/* Over a limit, the request gets 0x01 (on_request); out of descriptors, a
 * reset. */
const struct proto_ops socks5_proto_ops = {
	.name = "socks5",
	.start = socks_start,
	.answers_over = true,
};
