// SPDX-License-Identifier: Apache-2.0
/* The stream judge: a stream's first bytes say what it is. A TLS
 * ClientHello names the host (SNI), an HTTP/1.x request names it in Host,
 * anything else (or silence: a protocol where the server speaks first;
 * HTTP/2 with prior knowledge) is plain TCP judged by address and tcp://
 * rules. With a name, the upstream is an address that name resolves to --
 * the original destination only if it is among them -- so a forged SNI
 * cannot reach an address the policy does not allow. A TLS stream is
 * judged once and relayed (one SNI per connection); a plain-HTTP stream
 * goes to the proxy's HTTP exchange (http_stream_start()), which judges
 * every request on it, so a kept-alive connection opened for one host
 * cannot carry requests for another. Used by the transparent listener and
 * by SOCKS5 tunnels that host rules may allow (judge_start(), proto.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "lib/log.h"
#include "parse/parse.h"
#include "proxy/conn.h"
#include "proxy/proto.h"

struct judge {
	bool head_clock; /* the head timeout runs (from the first byte, or the start) */
};

static void judge(struct conn *c, bool timed_out);

static void
on_upstream(struct conn *c)
{
	if (c->ufd == -1 && c->via_upstream) {
		/* the upstream proxy failed or refused: a reset, as for a denial */
		conn_abort(c, "upstream proxy failed");
		return;
	}
	if (c->ufd == -1) {
		conn_close(c, "upstream failed");
		return;
	}
	relay_start(c);
}

/* A denied TLS or TCP stream (plain HTTP is answered by http_proxy.c): a
 * reset, not an orderly close: the client fails at once with ECONNRESET
 * rather than reading an empty reply. */
static void
on_decided(struct conn *c, bool allowed)
{
	if (!allowed) {
		conn_abort(c, "denied");
		return;
	}
	if (c->inspect) {
		conn_inspect(c); /* TLS whose requests are judged one by one */
		return;
	}
	conn_connect_upstream(c, on_upstream);
}

static void
decide_and_connect(struct conn *c)
{
	struct policy_decision d;
	const struct sockaddr *addr = NULL;
	int r;

	evtimer_del(&c->timer);
	event_del(&c->cev_r);
	if (c->orig.ss_family && (!c->host[0] || c->learned))
		addr = (const struct sockaddr *)&c->orig;
	r = conn_decide(c, addr, &d, on_decided);
	if (r != -1)
		on_decided(c, r);
}

/* Does the name the stream carries agree with the name the client asked
 * for (SOCKS5 domain requests)? Without an asked-for name, any name goes:
 * the upstream is then chosen by that name alone. */
static bool
name_agrees(const struct conn *c, const char *name)
{
	return !c->host[0] || !strcasecmp(c->host, name);
}

/* The name in an HTTP request head at c->in into name ("" for CONNECT, no
 * Host, or a malformed head). PARSE_MORE while the head is unfinished;
 * -1 when out of memory (c closed). */
static int
http_name(struct conn *c, char *name, size_t len)
{
	struct http_request *req = malloc(sizeof(*req));
	enum parse_result r;
	size_t used;

	if (!req) {
		conn_close(c, "out of memory");
		return -1;
	}
	name[0] = 0;
	r = http_parse_request(c->in, c->inlen, CONN_MAX_HEAD, req, &used);
	/* CONNECT (to a proxy at the original destination) is plain TCP to
	 * that address; so is a request without Host */
	if (r == PARSE_DONE && !req->connect)
		snprintf(name, len, "%s", req->host);
	free(req);
	return r == PARSE_MORE ? PARSE_MORE : PARSE_DONE;
}

/* Neither TLS nor HTTP with an agreeing name: plain TCP, which only
 * address and tcp:// rules can allow, by the name the DNS responder
 * answered this address for, if any. name: what the stream named. */
static void
plain_tcp(struct conn *c, const char *name)
{
	const char *learned = c->host[0] ? NULL : conn_learned_name(c);

	c->proto = POLICY_P_TCP;
	c->method[0] = 0;
	if (learned && c->source == CONN_SRC_TRANSPARENT) {
		snprintf(c->host, sizeof(c->host), "%s", learned);
		c->learned = true;
	}
	if (name[0] && !name_agrees(c, name))
		log_info("conn %llu: stream names %s, client asked for %s",
			 (unsigned long long)c->id, name, c->host);
}

/* Judges the stream by c->in; timed_out: no more bytes will be waited for. */
static void
judge(struct conn *c, bool timed_out)
{
	const uint8_t *buf = (const uint8_t *)c->in;
	struct judge *j = c->pstate;
	char name[256], norm[256];
	int kind, r = PARSE_DONE;

	kind = sniff_protocol(buf, c->inlen);
	if (kind == -1 && !timed_out)
		goto wait; /* too short to tell yet */
	name[0] = 0;
	if (kind == 1) {
		r = tls_parse_sni(buf, c->inlen, CONN_MAX_HEAD, name, sizeof(name));
		if (r == PARSE_DONE && name[0])
			c->proto = POLICY_P_TLS;
		else if (r != PARSE_MORE)
			name[0] = 0;
	} else if (kind == 2) {
		r = http_name(c, name, sizeof(name));
		if (r == -1)
			return;
	}
	if (r == PARSE_MORE && !timed_out)
		goto wait;
	if (r == PARSE_MORE)
		goto unfinished;
	if (name[0] && policy_host_normalize(name, false, norm, sizeof(norm)) == 0 &&
	    name_agrees(c, norm)) {
		if (kind == 2) {
			/* every request of it judged from here */
			http_stream_start(c);
			return;
		}
		snprintf(c->host, sizeof(c->host), "%s", norm);
	} else {
		plain_tcp(c, name);
	}
	decide_and_connect(c);
	return;
unfinished:
	/* a ClientHello or request head begun and not finished within the
	 * head timeout (a stream too long to judge is TCP, not this): closed,
	 * not relayed as plain TCP, or a dribbling client would hold on */
	log_info("conn %llu: head not finished within %d s", (unsigned long long)c->id,
		 conn_head_timeout(c));
	conn_close(c, "client head timeout");
	return;
wait:
	/* a client that has started talking gets the head timeout, counted
	 * from its first byte: more bytes do not restart it */
	if (c->inlen && !j->head_clock) {
		j->head_clock = true;
		conn_timer(c, conn_head_timeout(c));
	}
}

static void
on_bytes(struct conn *c)
{
	judge(c, c->inlen > CONN_MAX_HEAD);
}

/* The head timeout, or the silence a server-first protocol keeps. */
static void
judge_timeout(struct conn *c)
{
	if (c->state != CS_HEAD) {
		conn_timed_out(c);
		return;
	}
	judge(c, true);
}

/* A transparent connection closed before its first byte: connect() had
 * succeeded (it reached this listener), so the client took the port for
 * open. It is judged as plain TCP to its original destination (the name
 * the responder answered for it, if any) and logged with the reason
 * words saying it closed before any data: a probe of a denied port shows
 * as denied. Nothing is asked (nobody is waiting for the answer). */
static void
judge_eof(struct conn *c)
{
	struct policy_decision d;

	if (c->source == CONN_SRC_TRANSPARENT && !c->host[0]) {
		evtimer_del(&c->timer);
		plain_tcp(c, "");
		c->closed_early = true;
		conn_decide(c, c->orig.ss_family ? (const struct sockaddr *)&c->orig : NULL, &d,
			    NULL);
	}
	conn_close(c, "client closed before any data");
}

static void
judge_free(struct conn *c)
{
	free(c->pstate);
	c->pstate = NULL;
}

const struct proto_ops judge_proto_ops = {
	.name = "judge",
	.timeout = judge_timeout,
	.free = judge_free,
	.eof = judge_eof,
};

int
judge_start(struct conn *c, int silence_ms)
{
	struct judge *j = calloc(1, sizeof(*j));

	if (!j) {
		conn_close(c, "out of memory");
		return -1;
	}
	conn_set_proto(c, &judge_proto_ops, j);
	conn_read_client(c, on_bytes);
	if (silence_ms) {
		conn_timer_ms(c, silence_ms);
		return 0;
	}
	j->head_clock = true;
	conn_timer(c, conn_head_timeout(c));
	return 0;
}
