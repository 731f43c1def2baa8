// SPDX-License-Identifier: Apache-2.0
/* One inspected session's state, shared by the two files that move it:
 * session.c (the inspector, the client's TLS, the upstream's TLS, replies,
 * timeouts, the close) and exchange.c (each request inside: its head
 * judged, forwarded, its body and the response framed, a WebSocket
 * tunnel). Only these include it. */
#ifndef INSPECT_CORE_H
#define INSPECT_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <event2/bufferevent.h>
#include <openssl/ssl.h>

#include "inspect/ca.h"
#include "inspect/inspect.h"
#include "parse/http_resp.h"
#include "parse/parse.h"
#include "policy/secret.h"
#include "proxy/conn.h"

#define IX_HIGH	    (1 << 20) /* bytes buffered towards one side before the other stops reading */
#define IX_LOW	    (1 << 18)
#define IX_SCAN_MAX (1 << 20) /* bytes of a request body scanned for placeholders */
#define IX_SWAP_MAX (1 << 20) /* a request body held to swap placeholders in: at most */

struct ix_pooled;

struct inspector {
	struct inspect_ca *ca;
	SSL_CTX *server; /* towards CMD: our certificates, HTTP/1.1 by ALPN */
	SSL_CTX *client; /* towards servers: verified, TLS 1.2 at least */
	struct inspect_stats st;
	TAILQ_HEAD(ix_pool_head, ix_pooled) pool; /* pool.c: idle upstreams, oldest first */
	int npool, pool_max;
};

enum ix_phase {
	IX_HANDSHAKE = 0, /* the client's TLS handshake */
	IX_HEAD,	  /* reading a request head */
	IX_BODY,	  /* holding a request body to swap placeholders in, before the connect */
	IX_UPSTREAM,	  /* the upstream connect and its TLS handshake */
	IX_EXCHANGE,	  /* request body up, response down */
	IX_TUNNEL,	  /* a WebSocket after its 101: bytes both ways */
	IX_CLOSING,	  /* the last bytes to the client, then the close */
};

struct isess {
	struct inspector *ins;
	struct conn *c;
	enum ix_phase phase;
	struct bufferevent *cb, *cu; /* the client: TLS over its socket's bufferevent */
	struct bufferevent *ub, *uu; /* the upstream: the same; NULL between requests */
	bool requested;		     /* a request was read already (its idle timeout) */
	/* the request in flight */
	struct http_request *req; /* room for the parsed head */
	char *uout;		  /* its head as sent upstream */
	size_t uoutlen;
	enum http_body req_body;
	uint64_t req_left;
	struct http_chunked reqc;
	bool req_done, head_req, client_keep, upgrade, sent;
	/* its body scanned for secrets' placeholders (policy/secret.h), up to
	 * IX_SCAN_MAX bytes */
	struct secrets_scan scan;
	uint64_t scanned;
	/* a body of a text type to a secret's host, held whole (IX_BODY) and
	 * sent after the head with the placeholders swapped (body_out: it may
	 * hold a value, wiped when freed) */
	struct evbuffer *held;
	char *body_out;
	size_t body_outlen;
	uint64_t used; /* the secrets the head carries (bit i): counted once */
	/* its response */
	struct http_response resp;
	struct http_chunked respc;
	uint64_t resp_left;
	bool resp_head_done, resp_started, resp_done;
	bool upstream_eof; /* the server closed (or failed): what it sent is all */
	bool reused;	   /* the upstream came from the pool (pool.c) */
};

/* ---- session.c ---- */

/* Replies with status (phrase, x-proxy-error perr or none, a one-line
 * body of fmt's words) inside the TLS session; keep: the session goes on
 * with the next request, else it closes once the reply is out. */
void ix_reply(struct isess *s, int status, const char *phrase, const char *perr, bool keep,
	      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The upstream's TLS to c->host over c->ufd (connected); ix_upstream_up()
 * once it is up, or 502 upstream-tls-failed. */
void ix_upstream_tls(struct isess *s);
/* Frees the upstream's bufferevents and closes c->ufd. */
void ix_upstream_close(struct isess *s);
/* Closes the session once what the client is owed is out. */
void ix_finish(struct isess *s);
/* The client's bufferevent callbacks, by phase (exchange.c's). */
void ix_client_read(struct bufferevent *bev, void *arg);
void ix_client_write(struct bufferevent *bev, void *arg);

/* ---- exchange.c ---- */

/* Ready for the next request: its head is read (and what is buffered
 * judged at once). */
void ix_next_request(struct isess *s);
/* The upstream's TLS is up: the request goes, the response comes. */
void ix_upstream_up(struct isess *s);
/* Forwards what the server sent (the client took some of what it had). */
void ix_pump_response(struct isess *s);
/* The upstream's bufferevent callbacks. */
void ix_upstream_read(struct bufferevent *bev, void *arg);
void ix_upstream_write(struct bufferevent *bev, void *arg);
void ix_upstream_event(struct bufferevent *bev, short what, void *arg);
/* No response head within the response timeout: 504, or the close. */
void ix_response_timeout(struct isess *s);
/* Frees what the request in flight holds. */
void ix_request_free(struct isess *s);

/* ---- pool.c ---- */

/* s's upstream, its response read whole and the server keeping it, kept
 * idle for the next request to c->host:c->port (s no longer has it);
 * false: it cannot be (the server closes, bytes pending, the host's
 * share taken, an upstream proxy's route): the caller closes it. */
bool ix_pool_put(struct isess *s);
/* An idle upstream to c->host:c->port whose peer the request may go to
 * (conn_reuse_upstream()): s->ub, s->uu and c->ufd set, s->reused. */
bool ix_pool_take(struct isess *s);
void ix_pool_free(struct inspector *in);

#endif /* INSPECT_CORE_H */
