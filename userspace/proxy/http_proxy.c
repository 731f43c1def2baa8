// SPDX-License-Identifier: Apache-2.0
/* The HTTP proxy listener: `CONNECT host:port` tunnels and absolute-URI
 * requests (`GET http://host/path`), each judged by the policy before any
 * upstream connection is made. Refusals are answered the way clients can
 * show them: 403 with an x-proxy-error header and a one-line body, 400 for
 * malformed requests, 431 for oversized heads, 502/504 for upstream
 * failures (an upstream proxy's with their own x-proxy-error), 503 over a
 * connection limit. An allowed plain request goes to
 * the exchange (http_ex.c), which hands each later request of a kept-alive
 * connection back to on_head() for a fresh decision. The same head reader
 * serves the plain-HTTP streams of the transparent and SOCKS5 paths
 * (http_stream_start): there every request is judged by its Host, on the
 * stream's port. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "parse/parse.h"
#include "proxy/conn.h"
#include "proxy/http_ex.h"
#include "proxy/http_fwd.h"
#include "proxy/proto.h"

static void on_head(struct conn *c);
static int http_start(struct conn *c);

/* Replies with the error response and closes. */
static void send_error(struct conn *c, int status, const char *phrase, const char *proxy_error,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void
send_error(struct conn *c, int status, const char *phrase, const char *proxy_error, const char *fmt,
	   ...)
{
	char head[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = http_error_vformat(head, sizeof(head), status, phrase, proxy_error, fmt, ap);
	va_end(ap);
	conn_reply(c, head, (size_t)n, NULL);
}

/* 403 for the decision d on c's request. */
static void
send_blocked(struct conn *c, const struct policy_decision *d)
{
	char words[400];

	send_error(c, 403, "Forbidden", policy_reason_header(d->reason),
		   "egressctl: blocked %s:%u: %s", c->host, c->port,
		   policy_reason_words(d, c->method[0] ? c->method : NULL, words, sizeof(words)));
}

static void
on_upstream(struct conn *c)
{
	static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	if (c->ufd == -1 && c->via_upstream) {
		char head[1024];
		int n = http_upstream_error(c, head, sizeof(head));

		conn_reply(c, head, (size_t)n, NULL);
		return;
	}
	if (c->ufd == -1) {
		if (c->up_err == EACCES) {
			struct policy_decision d = {.reason = POLICY_R_LOCAL};

			send_blocked(c, &d);
		} else if (c->up_err == ETIMEDOUT) {
			send_error(c, 504, "Gateway Timeout", "upstream-connect-timeout",
				   "egressctl: %s:%u did not answer in time", c->host, c->port);
		} else if (c->up_err == EMFILE || c->up_err == ENFILE) {
			send_error(c, 503, "Service Unavailable", "overloaded",
				   "egressctl: out of file descriptors");
		} else {
			send_error(c, 502, "Bad Gateway", NULL, "egressctl: cannot reach %s:%u: %s",
				   c->host, c->port, strerror(c->up_err));
		}
		return;
	}
	if (c->source == CONN_SRC_CONNECT) {
		conn_reply(c, established, sizeof(established) - 1, relay_start);
		return;
	}
	http_ex_start(c);
}

/* With path rules in the policy, the path c's request is judged by
 * (c->path), and sent on, in normal form (http_fwd_path); a request
 * without one is refused (400). 0, or -1 when c was answered (req freed). */
static int
request_path(struct conn *c, struct http_request *req)
{
	char path[sizeof(req->target)];
	int err;

	if (!policy_has_paths(conn_policy(c)))
		return conn_set_path(c, NULL, 0);
	err = http_fwd_path(req, true, path, sizeof(path));
	if (err) {
		free(req);
		send_error(c, 400, "Bad Request", NULL,
			   "egressctl: a request path the path rules cannot judge");
		return -1;
	}
	if (conn_set_path(c, path, strlen(path))) {
		free(req);
		conn_close(c, "out of memory");
		return -1;
	}
	return 0;
}

/* Allowed: forward it. hc(c)->req is the parsed head (its headers point into
 * c->in, so the input is dropped only after they are copied). */
static void
proceed(struct conn *c)
{
	struct http_conn *h = hc(c);
	struct http_request *req = h->req;

	h->req = NULL;
	if (req->connect && c->inspect) {
		/* HTTPS inspection: the TLS inside is the inspector's */
		static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		free(req);
		conn_drop_input(c, h->req_used);
		conn_reply(c, established, sizeof(established) - 1, conn_inspect);
		return;
	}
	if (!req->connect && http_ex_open(c, req)) {
		free(req);
		conn_close(c, "out of memory");
		return;
	}
	free(req);
	conn_drop_input(c, h->req_used);
	conn_connect_upstream(c, on_upstream);
}

static void
on_decided(struct conn *c, bool allowed)
{
	if (!allowed) {
		struct policy_decision d = {.reason = POLICY_R_NO_RULE};

		free(hc(c)->req);
		hc(c)->req = NULL;
		send_blocked(c, &d);
		return;
	}
	proceed(c);
}

static void
on_head(struct conn *c)
{
	struct http_request *req;
	struct policy_decision d;
	enum parse_result r;
	size_t used = 0;
	char host[256];
	int verdict;

	req = malloc(sizeof(*req));
	if (!req) {
		conn_close(c, "out of memory");
		return;
	}
	r = http_parse_request(c->in, c->inlen, CONN_MAX_HEAD, req, &used);
	if (r == PARSE_MORE && c->inlen <= CONN_MAX_HEAD) {
		free(req);
		return;
	}
	if (r == PARSE_MORE || r == PARSE_TOO_LONG) {
		free(req);
		send_error(c, 431, "Request Header Fields Too Large", NULL,
			   "egressctl: request head over %d bytes", CONN_MAX_HEAD);
		return;
	}
	if (r == PARSE_ERROR || (!hc(c)->stream && !req->connect && !req->absolute)) {
		bool origin = r != PARSE_ERROR;

		free(req);
		send_error(c, 400, "Bad Request", NULL, "egressctl: %s",
			   origin ? "not a proxy request (use an absolute URI or CONNECT)"
				  : "malformed request");
		return;
	}
	if (hc(c)->stream && req->connect) {
		/* the server behind a plain-HTTP stream is no proxy of ours */
		free(req);
		send_error(c, 405, "Method Not Allowed", NULL,
			   "egressctl: CONNECT is not passed on inside a plain-HTTP stream");
		return;
	}
	if (hc(c)->stream && !req->host[0]) {
		/* HTTP/1.0 without Host: the server would pick a site itself */
		free(req);
		send_error(c, 400, "Bad Request", NULL, "egressctl: a request without Host");
		return;
	}
	if (policy_host_normalize(req->host, false, host, sizeof(host)) == 0)
		snprintf(c->host, sizeof(c->host), "%s", host);
	else
		snprintf(c->host, sizeof(c->host), "%s", req->host); /* an address literal */
	if (!hc(c)->stream) /* a stream keeps its port, whatever Host says */
		c->port = req->port;
	if (req->connect) {
		c->source = CONN_SRC_CONNECT;
		c->proto = POLICY_P_TLS;
	} else {
		if (!hc(c)->stream)
			c->source = CONN_SRC_HTTP;
		c->proto = POLICY_P_HTTP;
		snprintf(c->method, sizeof(c->method), "%s", req->method);
		if (request_path(c, req))
			return;
	}
	hc(c)->req = req;
	hc(c)->req_used = used;
	conn_scan_secrets(c, c->in, used); /* the request line and the headers */
	c->hreq = req->connect ? NULL : req;
	verdict = conn_decide(c, NULL, &d, on_decided);
	c->hreq = NULL;
	switch (verdict) {
	case -1:
		return; /* asked on the terminal: on_decided() goes on */
	case 0:
		hc(c)->req = NULL;
		free(req);
		send_blocked(c, &d);
		return;
	default:
		proceed(c);
	}
}

/* Over a connection limit: the request head is read (so that closing does
 * not reset the connection under the reply), then 503. */
static void
on_overload_head(struct conn *c)
{
	char why[160];

	if (c->inlen <= CONN_MAX_HEAD && !memmem(c->in, c->inlen, "\r\n\r\n", 4))
		return;
	conn_over_words(c, why, sizeof(why));
	send_error(c, 503, "Service Unavailable", "overloaded", "egressctl: %s", why);
}

/* A client over a connection limit, without a struct conn: 503 if it fits
 * in the socket buffer at once. What the client has sent is read first; if
 * more follows, the close resets the connection, and the reply is still
 * read from the client's socket before the reset. */
static bool
http_refuse(int fd, const char *why)
{
	char buf[4096], resp[1024];
	int n;

	for (int i = 0; i < 16 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0; i++)
		;
	n = http_error_format(resp, sizeof(resp), 503, "Service Unavailable", "overloaded",
			      "egressctl: %s", why);
	return send(fd, resp, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == n;
}

static void
http_timeout(struct conn *c)
{
	if (c->state == CS_RESPONSE && hc(c)->ex) {
		http_ex_timeout(c);
		return;
	}
	conn_timed_out(c);
}

static void
http_free(struct conn *c)
{
	struct http_conn *h = c->pstate;

	if (!h)
		return;
	http_ex_free(c);
	free(h->req);
	free(h);
	c->pstate = NULL;
}

const struct proto_ops http_proto_ops = {
	.name = "http",
	.start = http_start,
	.timeout = http_timeout,
	.free = http_free,
	.answers_over = true,
	.refuse = http_refuse,
};

static struct http_conn *
http_state(struct conn *c, bool stream)
{
	struct http_conn *h = calloc(1, sizeof(*h));

	if (!h) {
		conn_close(c, "out of memory");
		return NULL;
	}
	h->stream = stream;
	h->on_head = on_head;
	return h;
}

void
http_stream_start(struct conn *c)
{
	struct http_conn *h = http_state(c, true);

	if (!h)
		return;
	conn_set_proto(c, &http_proto_ops, h);
	evtimer_del(&c->timer);
	conn_read_client(c, on_head);
	on_head(c);
}

static int
http_start(struct conn *c)
{
	struct http_conn *h = http_state(c, false);

	if (!h)
		return -1;
	c->pstate = h;
	c->source = CONN_SRC_HTTP;
	conn_read_client(c, c->over ? on_overload_head : on_head);
	return 0;
}
