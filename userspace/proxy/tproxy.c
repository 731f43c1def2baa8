/* The transparent listener and the stream judge. A connection the kernel
 * redirected arrives with its original destination (from the BPF index);
 * its first bytes say what it is: a TLS ClientHello names the host (SNI),
 * an HTTP/1.x request names it in Host, anything else (or silence: a
 * protocol where the server speaks first; HTTP/2 with prior knowledge) is
 * plain TCP judged by address and tcp:// rules. With a name, the upstream
 * is an address that name resolves to -- the original destination only if
 * it is among them -- so a forged SNI cannot reach an address the policy
 * does not allow. A TLS stream is judged once and relayed (one SNI per
 * connection); a plain-HTTP stream goes to the proxy's HTTP exchange
 * (http_stream_start), which judges every request on it, so a kept-alive
 * connection opened for one host cannot carry requests for another. The
 * SOCKS5 path uses the same judge for tunnels that host rules may allow. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/conn.h"
#include "lib/log.h"
#include "parse/parse.h"

#define FIRST_BYTES_MS 1000 /* how long a client may stay silent before it is plain TCP */

static void
on_upstream(struct conn *c)
{
	if (c->ufd == -1) {
		conn_close(c, "upstream failed");
		return;
	}
	relay_start(c);
}

/* A denied TLS or TCP stream (plain HTTP is answered by http_proxy.c). */
static void
denied(struct conn *c)
{
	/* a reset, not an orderly close: the client fails at once
	 * with ECONNRESET rather than reading an empty reply */
	struct linger lg = {1, 0};

	setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	conn_close(c, "denied");
}

static void
on_decided(struct conn *c, bool allowed)
{
	if (!allowed) {
		denied(c);
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

	c->judging = false;
	evtimer_del(&c->timer);
	event_del(&c->cev_r);
	if (c->orig.ss_family && (!c->host[0] || c->learned))
		addr = (const struct sockaddr *)&c->orig;
	r = conn_decide_ask(c, addr, &d, on_decided);
	if (r == -1)
		return;
	if (!r) {
		denied(c);
		return;
	}
	conn_connect_upstream(c, on_upstream);
}

/* Does the name the stream carries agree with the name the client asked
 * for (SOCKS5 domain requests)? Without an asked-for name, any name goes:
 * the upstream is then chosen by that name alone. */
static bool
name_agrees(const struct conn *c, const char *name)
{
	return !c->host[0] || !strcasecmp(c->host, name);
}

void
stream_judge(struct conn *c, bool timed_out)
{
	const uint8_t *buf = (const uint8_t *)c->in;
	char name[256], norm[256];
	struct http_request *req;
	enum parse_result r;
	size_t used;
	int kind;

	kind = sniff_protocol(buf, c->inlen);
	if (kind == -1 && !timed_out)
		goto wait; /* too short to tell yet */
	name[0] = 0;
	if (kind == 1) {
		r = tls_parse_sni(buf, c->inlen, CONN_MAX_HEAD, name, sizeof(name));
		if (r == PARSE_MORE && !timed_out)
			goto wait;
		if (r == PARSE_MORE)
			goto unfinished;
		if (r == PARSE_DONE && name[0])
			c->proto = POLICY_P_TLS;
		else
			name[0] = 0;
	} else if (kind == 2) {
		req = malloc(sizeof(*req));
		if (!req) {
			conn_close(c, "out of memory");
			return;
		}
		r = http_parse_request(c->in, c->inlen, CONN_MAX_HEAD, req, &used);
		if (r == PARSE_MORE) {
			free(req);
			if (timed_out)
				goto unfinished;
			goto wait;
		}
		/* CONNECT (to a proxy at the original destination) is plain
		 * TCP to that address; so is a request without Host */
		if (r == PARSE_DONE && !req->connect)
			snprintf(name, sizeof(name), "%s", req->host);
		free(req);
		if (name[0] && policy_host_normalize(name, false, norm, sizeof(norm)) == 0 &&
		    name_agrees(c, norm)) {
			/* every request of it judged from here */
			http_stream_start(c);
			return;
		}
	}
	if (name[0] && policy_host_normalize(name, false, norm, sizeof(norm)) == 0 &&
	    name_agrees(c, norm)) {
		snprintf(c->host, sizeof(c->host), "%s", norm);
	} else {
		/* plain TCP: only address and tcp:// rules can allow it, by the
		 * name the DNS responder answered this address for, if any */
		const char *learned = c->host[0] ? NULL : conn_learned_name(c);

		c->proto = POLICY_P_TCP;
		c->method[0] = 0;
		if (learned && !strcmp(c->source, "transparent")) {
			snprintf(c->host, sizeof(c->host), "%s", learned);
			c->learned = true;
		}
		if (name[0] && !name_agrees(c, name))
			log_info("conn %llu: stream names %s, client asked for %s",
				 (unsigned long long)c->id, name, c->host);
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
	if (c->inlen && !c->head_clock) {
		c->head_clock = true;
		conn_timer(c, conn_head_timeout(c));
	}
}

static void
on_bytes(struct conn *c)
{
	if (c->inlen > CONN_MAX_HEAD) {
		stream_judge(c, true);
		return;
	}
	stream_judge(c, false);
}

void
tproxy_start(struct conn *c)
{
	c->source = "transparent";
	c->port = (uint16_t)conn_sockaddr_port(&c->orig);
	c->host[0] = 0;
	c->judging = true;
	conn_read_client(c, on_bytes);
	conn_timer_ms(c, FIRST_BYTES_MS);
}
