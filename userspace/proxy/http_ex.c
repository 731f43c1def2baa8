// SPDX-License-Identifier: Apache-2.0
/* The plain-HTTP exchange (http_ex.h): an allowed request forwarded
 * (http_fwd.h: origin-form, Host the judged host, no hop-by-hop headers)
 * over a fresh upstream connection; its body and the response framed here
 * (Content-Length, chunked, until close), so a keep-alive client gets a
 * fresh decision for each request's host: the next request goes back to
 * the listener's head reader. In a plain-HTTP stream (transparent, SOCKS5)
 * a WebSocket upgrade, once judged, turns the connection into a tunnel to
 * that request's upstream. Heads and chunked bodies go through
 * bufferevents with watermarks; a Content-Length request body and a
 * Content-Length or until-close response body move with splice(2) like a
 * tunnel's bytes, once what was read with their head is sent (libevent
 * reads at most 4 KiB per call, which held plain-HTTP transfers near
 * 200 MiB/s). 504 when a response head does not come within
 * --response-timeout of the request, 502 when upstream fails before one.
 * One idea in one file, past 800 lines: the exchange is one state machine
 * (struct http_ex) that every callback here moves along. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "lib/log.h"
#include "lib/sockaddr.h"
#include "parse/http_resp.h"
#include "parse/parse.h"
#include "proxy/conn.h"
#include "proxy/http_ex.h"
#include "proxy/http_fwd.h"
#include "proxy/http_hook.h"
#include "proxy/proto.h"

#define EX_HIGH (1 << 20) /* buffered bytes before the other side stops reading */
#define EX_LOW	(1 << 18)

struct http_ex {
	struct bufferevent *cb, *ub; /* client, upstream; fds owned by the conn */
	enum http_body req_body;
	uint64_t req_left;
	struct http_chunked reqc;
	bool req_done;
	bool head_req;	     /* HEAD: the response has no body */
	bool client_keep;    /* the client asked for keep-alive */
	bool resp_head_done; /* final (non-1xx) response head sent */
	bool resp_started;   /* anything sent to the client */
	struct http_response resp;
	struct http_chunked respc;
	uint64_t resp_left;
	bool resp_done;
	bool splicing;	   /* the response body: upstream -> pipe -> client */
	bool req_splicing; /* the request body: client -> pipe -> upstream */
	bool closing;	   /* close once the client's output is flushed */
	bool upgrade;	   /* a WebSocket upgrade was offered upstream */
	bool switched;	   /* 101: a tunnel once the client has the head */
	bool watching;	   /* gone: the client's end, while nothing came back */
	struct event gone;
};

int
http_error_vformat(char *buf, size_t len, int status, const char *phrase, const char *proxy_error,
		   const char *fmt, va_list ap)
{
	char body[512];
	int blen, n;

	blen = vsnprintf(body, sizeof(body) - 1, fmt, ap);
	if (blen < 0)
		blen = 0;
	if (blen > (int)sizeof(body) - 2)
		blen = (int)sizeof(body) - 2;
	body[blen++] = '\n';
	body[blen] = 0;
	n = snprintf(buf, len,
		     "HTTP/1.1 %d %s\r\n"
		     "%s%s%s"
		     "Content-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %d\r\n"
		     "Connection: close\r\n"
		     "\r\n%s",
		     status, phrase, proxy_error ? "x-proxy-error: " : "",
		     proxy_error ? proxy_error : "", proxy_error ? "\r\n" : "", blen, body);
	if (n < 0 || n >= (int)len)
		n = (int)strlen(buf);
	return n;
}

int
http_error_format(char *buf, size_t len, int status, const char *phrase, const char *proxy_error,
		  const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = http_error_vformat(buf, len, status, phrase, proxy_error, fmt, ap);
	va_end(ap);
	return n;
}

int
http_upstream_error(const struct conn *c, char *buf, size_t len)
{
	const char *url = conn_upstream_proxy(c);
	char to[300];

	if (c->host[0])
		snprintf(to, sizeof(to), strchr(c->host, ':') ? "[%s]:%u" : "%s:%u", c->host,
			 c->port);
	else
		sockaddr_format((const struct sockaddr *)&c->orig, to, sizeof(to));
	if (c->up_err == ETIMEDOUT)
		return http_error_format(buf, len, 504, "Gateway Timeout", "upstream-proxy-timeout",
					 "egressctl: the upstream proxy %s did not answer in time "
					 "(for %s)",
					 url, to);
	if (c->up_err == EBADMSG)
		return http_error_format(
			buf, len, 502, "Bad Gateway", "upstream-proxy-refused",
			"egressctl: the upstream proxy %s sent a reply that is not "
			"HTTP (for %s)",
			url, to);
	if (c->up_err == EPROTO)
		return http_error_format(
			buf, len, 502, "Bad Gateway", "upstream-proxy-refused",
			"egressctl: the upstream proxy %s refused %s: %d%s", url, to, c->up_status,
			c->up_status == 407 ? " (it wants credentials: --upstream-proxy-auth)"
					    : "");
	return http_error_format(buf, len, 502, "Bad Gateway", "upstream-proxy-unreachable",
				 "egressctl: cannot reach the upstream proxy %s (for %s): %s", url,
				 to,
				 c->up_err == ENOENT	   ? "its name does not resolve"
				 : c->up_err == ECONNRESET ? "it closed the connection"
							   : strerror(c->up_err));
}

void
http_ex_free(struct conn *c)
{
	struct http_ex *ex = hc(c)->ex;

	if (!ex)
		return;
	if (ex->watching)
		event_del(&ex->gone);
	if (ex->cb)
		bufferevent_free(ex->cb);
	if (ex->ub)
		bufferevent_free(ex->ub);
	free(ex);
	hc(c)->ex = NULL;
}

/* Writes what out holds to fd now, not after a turn of the loop. A socket
 * bufferevent's output is frozen at its start for everyone but the
 * bufferevent itself (evbuffer_write() would write nothing), so it is
 * thawed for the write. */
static void
ex_write_now(struct evbuffer *out, int fd)
{
	evbuffer_unfreeze(out, 1);
	evbuffer_write(out, fd);
	evbuffer_freeze(out, 1);
}

/* Moves request body bytes from data to upstream; returns bytes used or -1. */
static long
ex_feed_request(struct conn *c, const char *data, size_t len)
{
	struct http_ex *ex = hc(c)->ex;
	struct evbuffer *out = bufferevent_get_output(ex->ub);
	size_t used = 0;

	if (ex->req_done)
		return 0;
	switch (ex->req_body) {
	case HTTP_BODY_NONE:
		ex->req_done = true;
		return 0;
	case HTTP_BODY_LENGTH:
		used = len < ex->req_left ? len : (size_t)ex->req_left;
		ex->req_left -= used;
		if (!ex->req_left)
			ex->req_done = true;
		break;
	case HTTP_BODY_CHUNKED: {
		enum parse_result r = http_chunked_feed(&ex->reqc, data, len, &used);

		if (r == PARSE_DONE)
			ex->req_done = true;
		else if (r != PARSE_MORE)
			return -1;
		break;
	}
	}
	if (used && evbuffer_add(out, data, used))
		return -1;
	return (long)used;
}

/* The response head as the client gets it: hop-by-hop headers dropped, our
 * own Connection header. */
static int
ex_send_head(struct conn *c, const char *head, bool keep)
{
	struct http_ex *ex = hc(c)->ex;
	struct evbuffer *out = bufferevent_get_output(ex->cb);
	const char *eol = strstr(head, "\r\n");
	const char *conn_v = NULL;
	size_t conn_len = 0;

	if (!eol || eol - head < 12)
		return -1;
	/* our own version on the status line (RFC 9110 §6.2), then code and reason */
	evbuffer_add(out, "HTTP/1.1", 8);
	evbuffer_add(out, head + 8, (size_t)(eol - head) - 8 + 2);
	for (size_t i = 0; i < ex->resp.nheaders; i++) {
		const struct http_header *h = &ex->resp.headers[i];

		if (h->name_len == 10 && !strncasecmp(h->name, "connection", 10)) {
			conn_v = h->value;
			conn_len = h->value_len;
		}
	}
	for (size_t i = 0; i < ex->resp.nheaders; i++) {
		const struct http_header *h = &ex->resp.headers[i];
		static const char *const hop[] = {
			"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
			"te",	      "trailer",    "upgrade"};
		bool drop = false;

		for (size_t k = 0; k < sizeof(hop) / sizeof(hop[0]); k++)
			if (h->name_len == strlen(hop[k]) &&
			    !strncasecmp(h->name, hop[k], h->name_len))
				drop = true;
		/* and whatever the Connection header names */
		for (size_t k = 0; conn_v && k + h->name_len <= conn_len && !drop; k++)
			if (!strncasecmp(conn_v + k, h->name, h->name_len) &&
			    (k == 0 || conn_v[k - 1] == ',' || conn_v[k - 1] == ' ') &&
			    (k + h->name_len == conn_len || conn_v[k + h->name_len] == ',' ||
			     conn_v[k + h->name_len] == ' '))
				drop = true;
		if (drop)
			continue;
		evbuffer_add(out, h->name, h->name_len);
		evbuffer_add(out, ": ", 2);
		evbuffer_add(out, h->value, h->value_len);
		evbuffer_add(out, "\r\n", 2);
	}
	evbuffer_add_printf(out, "Connection: %s\r\n\r\n", keep ? "keep-alive" : "close");
	ex->resp_started = true;
	return 0;
}

static void ex_finish(struct conn *c);

static void
ex_unwatch(struct http_ex *ex)
{
	if (ex->watching)
		event_del(&ex->gone);
	ex->watching = false;
}

/* While the response is awaited the client's reads are off (a pipelined
 * request waits in the socket), so its leaving would go unseen until the
 * response timeout. An end of stream here abandons the exchange, as squid
 * (half_closed_clients off) and Envoy do: a half-close cannot be told from
 * a close, and a client that half-closes before the response is rare. */
static void
on_client_gone(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	(void)what;
	hc(c)->ex->watching = false;
	if (n > 0)
		return; /* a pipelined request: the client is there */
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		event_add(&hc(c)->ex->gone, NULL);
		hc(c)->ex->watching = true;
		return;
	}
	log_info("conn %llu: %s:%u: the client left before the response", (unsigned long long)c->id,
		 c->host, c->port);
	conn_close(c, "client left before the response");
}

/* The request is all with the upstream: its response head has
 * conn_response_timeout() seconds to come, and the client is watched. */
static void
ex_request_sent(struct conn *c)
{
	struct http_ex *ex = hc(c)->ex;

	if (ex->resp_head_done || ex->resp_started || c->state == CS_RESPONSE)
		return;
	c->state = CS_RESPONSE;
	conn_timer(c, conn_response_timeout(c));
	if (!ex->watching && !evbuffer_get_length(bufferevent_get_input(ex->cb))) {
		event_assign(&ex->gone, event_get_base(&c->timer), c->cfd, EV_READ, on_client_gone,
			     c);
		event_add(&ex->gone, NULL);
		ex->watching = true;
	}
}

void
http_ex_timeout(struct conn *c)
{
	struct http_ex *ex = hc(c)->ex;
	char head[1024];
	int n;

	bufferevent_disable(ex->ub, EV_READ);
	bufferevent_disable(ex->cb, EV_READ);
	n = http_error_format(
		head, sizeof(head), 504, "Gateway Timeout", "upstream-response-timeout",
		"egressctl: %s:%u sent no response within %d s%s%s", c->host, c->port,
		conn_response_timeout(c), c->via_upstream ? " through the upstream proxy " : "",
		c->via_upstream ? conn_upstream_proxy(c) : "");
	evbuffer_add(bufferevent_get_output(ex->cb), head, (size_t)n);
	ex->closing = true;
	log_info("conn %llu: %s:%u: no response head within %d s", (unsigned long long)c->id,
		 c->host, c->port, conn_response_timeout(c));
	/* a client that does not read the reply is closed after the head timeout */
	c->state = CS_REPLY;
	conn_timer(c, conn_head_timeout(c));
}

/* why: for the log; a 502 unless a response went out already. upstream:
 * the upstream proxy's failure (http_upstream_error()), not the site's. */
static void
ex_error_as(struct conn *c, const char *why, bool upstream)
{
	struct http_ex *ex = hc(c)->ex;

	if (!ex->resp_started) {
		char head[1024];
		int n = upstream ? http_upstream_error(c, head, sizeof(head))
				 : http_error_format(head, sizeof(head), 502, "Bad Gateway", NULL,
						     "egressctl: bad response from upstream");

		bufferevent_disable(ex->ub, EV_READ);
		bufferevent_disable(ex->cb, EV_READ);
		evbuffer_add(bufferevent_get_output(ex->cb), head, (size_t)n);
		ex->closing = true;
		log_info("conn %llu: %s", (unsigned long long)c->id, why);
		return;
	}
	conn_close(c, why);
}

static void
ex_error(struct conn *c, const char *why)
{
	ex_error_as(c, why, false);
}

/* A response body the relay can move: its length is known or it ends with
 * the upstream connection. */
static bool
ex_body_spliceable(const struct http_ex *ex)
{
	return ex->resp_head_done && !ex->resp_done &&
	       (ex->resp.until_close || ex->resp.body == HTTP_BODY_LENGTH);
}

static void
ex_splice(struct conn *c)
{
	struct http_ex *ex = hc(c)->ex;

	conn_touch(c);
	switch (relay_move(c, 1, ex->resp.until_close ? NULL : &ex->resp_left)) {
	case RELAY_BLOCKED:
	case RELAY_CLOSED:
		return;
	case RELAY_EOF:
		if (!ex->resp.until_close) {
			conn_close(c, "upstream closed mid-response");
			return;
		}
		break;
	case RELAY_LIMIT:
		break;
	}
	ex->splicing = false;
	ex->resp_done = true;
	ex_finish(c);
}

static void
on_splice_ready(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	ex_splice(arg);
}

/* The client's output is empty and so is the upstream input buffer: the rest
 * of the body goes by splice. */
static void
ex_splice_start(struct conn *c)
{
	bufferevent_disable(hc(c)->ex->ub, EV_READ);
	relay_arm(c, 1, on_splice_ready);
	hc(c)->ex->splicing = true;
	ex_splice(c);
}

/* Does a 101 response switch to WebSocket (the only upgrade ever offered)? */
static bool
resp_websocket(const struct http_response *r)
{
	for (size_t i = 0; i < r->nheaders; i++) {
		const struct http_header *h = &r->headers[i];

		if (h->name_len == 7 && !strncasecmp(h->name, "upgrade", 7) && h->value_len == 9 &&
		    !strncasecmp(h->value, "websocket", 9))
			return true;
	}
	return false;
}

/* 101 to the WebSocket upgrade this request offered: the head (used bytes)
 * goes to the client as the server sent it, with whatever the server sent
 * after it; once that is written (on_cb_write) the connection is a tunnel
 * to this upstream. The request was judged like any other, and what follows
 * are WebSocket frames to the site it named, not requests a front end could
 * route to another. */
static void
ex_switch(struct conn *c, size_t used)
{
	struct http_ex *ex = hc(c)->ex;
	struct evbuffer *in = bufferevent_get_input(ex->ub);
	struct evbuffer *out = bufferevent_get_output(ex->cb);

	bufferevent_disable(ex->ub, EV_READ);
	bufferevent_disable(ex->cb, EV_READ);
	evbuffer_remove_buffer(in, out, used);
	evbuffer_add_buffer(out, in);
	ex->resp_started = true;
	ex->switched = true;
}

/* What the pump does next. */
enum pump {
	PUMP_ON = 0, /* go on with the bytes */
	PUMP_WAIT,   /* wait for more bytes or for the client's output */
	PUMP_HANDED, /* c is handed on (closed, answered with an error, switched) */
};

/* The response head at the start of the upstream input, if it is all
 * there: an interim one passed on, the final one sent to the client and
 * its body's framing noted. */
static enum pump
ex_response_head(struct conn *c, size_t len)
{
	struct http_ex *ex = hc(c)->ex;
	struct evbuffer *in = bufferevent_get_input(ex->ub);
	size_t want = len < CONN_MAX_HEAD ? len : CONN_MAX_HEAD;
	const char *p;
	enum parse_result r;
	size_t used = 0;
	bool keep;

	if (!len)
		return PUMP_WAIT;
	p = (const char *)evbuffer_pullup(in, (ssize_t)want);
	r = http_parse_response(p, want, CONN_MAX_HEAD, ex->head_req, &ex->resp, &used);
	if (r == PARSE_MORE)
		return PUMP_WAIT;
	if (r != PARSE_DONE) {
		ex_error(c, "bad response head");
		return PUMP_HANDED;
	}
	if (ex->resp.status == 407 && c->via_upstream) {
		/* the upstream proxy's, for an absolute-form request: the client
		 * never spoke to it and cannot answer it */
		c->up_err = EPROTO;
		c->up_status = 407;
		ex_error_as(c, "the upstream proxy wants credentials", true);
		return PUMP_HANDED;
	}
	if (ex->resp.status >= 100 && ex->resp.status < 200) {
		/* interim (100 Continue...): pass on, wait for the final one */
		if (ex->resp.status == 101) {
			if (!ex->upgrade || !resp_websocket(&ex->resp)) {
				ex_error(c, "protocol upgrade refused");
				return PUMP_HANDED;
			}
			ex_switch(c, used);
			return PUMP_HANDED;
		}
		ex_send_head(c, p, true);
		evbuffer_drain(in, used);
		return PUMP_ON;
	}
	keep = ex->client_keep && !ex->resp.until_close;
	if (ex_send_head(c, p, keep)) {
		ex_error(c, "bad response head");
		return PUMP_HANDED;
	}
	evbuffer_drain(in, used);
	ex->resp_head_done = true;
	if (c->state == CS_RESPONSE) {
		c->state = CS_RELAY;
		conn_timer(c, conn_idle_timeout(c));
	}
	if (!keep)
		ex->client_keep = false;
	ex->resp_left = ex->resp.body_len;
	if ((ex->resp.body == HTTP_BODY_NONE && !ex->resp.until_close) ||
	    (ex->resp.body == HTTP_BODY_LENGTH && !ex->resp_left))
		ex->resp_done = true;
	return PUMP_ON;
}

/* Forwards response bytes from upstream to the client per the framing.
 * Returns true if it handed c on (closed, finished, answering with an error
 * or splicing): the caller must not touch c any more. */
static bool
ex_pump_response(struct conn *c)
{
	struct http_ex *ex = hc(c)->ex;
	struct evbuffer *in = bufferevent_get_input(ex->ub);
	struct evbuffer *out = bufferevent_get_output(ex->cb);

	while (!ex->resp_done) {
		size_t len = evbuffer_get_length(in);

		if (!ex->resp_head_done) {
			enum pump next = ex_response_head(c, len);

			if (next != PUMP_ON)
				return next == PUMP_HANDED;
			continue;
		}
		if (!len) {
			if (!ex_body_spliceable(ex))
				return false;
			bufferevent_disable(ex->ub, EV_READ);
			if (evbuffer_get_length(out))
				return false; /* on_cb_write starts it once that is sent */
			ex_splice_start(c);
			return true;
		}
		if (ex->resp.until_close) {
			evbuffer_remove_buffer(in, out, len);
		} else if (ex->resp.body == HTTP_BODY_LENGTH) {
			size_t n = len < ex->resp_left ? len : (size_t)ex->resp_left;

			evbuffer_remove_buffer(in, out, n);
			ex->resp_left -= n;
			if (!ex->resp_left)
				ex->resp_done = true;
		} else {
			const char *p = (const char *)evbuffer_pullup(in, (ssize_t)len);
			enum parse_result r;
			size_t used = 0;

			r = http_chunked_feed(&ex->respc, p, len, &used);
			if (r == PARSE_ERROR || r == PARSE_TOO_LONG) {
				conn_close(c, "bad chunked response");
				return true;
			}
			evbuffer_remove_buffer(in, out, used);
			if (r == PARSE_DONE)
				ex->resp_done = true;
		}
		if (evbuffer_get_length(out) > EX_HIGH) {
			bufferevent_disable(ex->ub, EV_READ); /* resumed by on_cb_write */
			return false;
		}
	}
	ex_finish(c);
	return true;
}

static void
on_ub_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	conn_touch(c);
	ex_unwatch(hc(c)->ex); /* writing to the client will tell */
	ex_pump_response(c);
}

/* A request body of known length: once the head (and the body bytes read
 * with it) is sent, the rest goes client -> pipe -> upstream. */
static bool
ex_req_spliceable(const struct http_ex *ex)
{
	return ex->req_body == HTTP_BODY_LENGTH && !ex->req_done;
}

static void
ex_req_splice(struct conn *c)
{
	struct http_ex *ex = hc(c)->ex;

	conn_touch(c);
	switch (relay_move(c, 0, &ex->req_left)) {
	case RELAY_BLOCKED:
	case RELAY_CLOSED:
		return;
	case RELAY_EOF:
		conn_close(c, "client closed mid-request");
		return;
	case RELAY_LIMIT:
		break;
	}
	ex->req_splicing = false;
	ex->req_done = true; /* what the client sends next waits in the socket */
	ex_request_sent(c);
}

static void
on_req_splice_ready(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	ex_req_splice(arg);
}

static void
on_ub_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct http_ex *ex = hc(c)->ex;

	if (ex->req_done && !evbuffer_get_length(bufferevent_get_output(bev)))
		ex_request_sent(c);
	if (ex->req_done || ex->req_splicing)
		return;
	if (!ex_req_spliceable(ex)) {
		bufferevent_enable(ex->cb, EV_READ);
		return;
	}
	if (evbuffer_get_length(bufferevent_get_output(bev)))
		return;
	relay_arm(c, 0, on_req_splice_ready);
	ex->req_splicing = true;
	ex_req_splice(c);
}

static void
on_ub_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	struct http_ex *ex = hc(c)->ex;

	(void)bev;
	if (what & BEV_EVENT_EOF) {
		if (ex_pump_response(c)) /* whatever is left */
			return;
		if (ex->resp_head_done && ex->resp.until_close) {
			ex->resp_done = true;
			ex_finish(c);
			return;
		}
	}
	if (!ex->resp_started) {
		ex_error(c, "upstream closed");
		return;
	}
	conn_close(c, "upstream closed mid-response");
}

static void
on_cb_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct http_ex *ex = hc(c)->ex;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	long used;

	conn_touch(c);
	if (ex->req_done || !len) {
		/* the next request (pipelined): it waits for this exchange */
		bufferevent_disable(bev, EV_READ);
		return;
	}
	used = ex_feed_request(c, (const char *)evbuffer_pullup(in, (ssize_t)len), len);
	if (used < 0) {
		conn_close(c, "bad request body");
		return;
	}
	evbuffer_drain(in, (size_t)used);
	if (ex->req_done || evbuffer_get_length(bufferevent_get_output(ex->ub)) > EX_HIGH)
		bufferevent_disable(bev, EV_READ);
}

/* Moves the bytes the client's bufferevent has read, and not passed on,
 * behind c->in: they come after the request. -1 when out of memory. */
static int
ex_keep_input(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(hc(c)->ex->cb);
	size_t len = evbuffer_get_length(in);
	char *nin;

	if (!len)
		return 0;
	nin = realloc(c->in, c->inlen + len);
	if (!nin)
		return -1;
	c->in = nin;
	c->incap = c->inlen + len;
	evbuffer_remove(in, c->in + c->inlen, len);
	c->inlen += len;
	return 0;
}

/* After a 101 (ex_switch): the client's bytes read so far, and any of the
 * request not yet sent upstream, go first, then the relay splices. */
static void
ex_tunnel(struct conn *c)
{
	struct evbuffer *uout = bufferevent_get_output(hc(c)->ex->ub);
	size_t ulen = evbuffer_get_length(uout);

	if (ex_keep_input(c)) {
		conn_close(c, "out of memory");
		return;
	}
	if (ulen) {
		c->uout = malloc(ulen);
		if (!c->uout) {
			conn_close(c, "out of memory");
			return;
		}
		evbuffer_remove(uout, c->uout, ulen);
		c->uoutlen = ulen;
		c->uoutoff = 0;
	}
	http_ex_free(c);
	relay_start(c);
}

static void
ex_next_request(struct conn *c)
{
	/* bytes the client already sent belong to its next request */
	if (ex_keep_input(c)) {
		conn_close(c, "out of memory");
		return;
	}
	http_ex_free(c);
	close(c->ufd);
	c->ufd = -1;
	c->host[0] = 0;
	c->method[0] = 0;
	conn_set_path(c, NULL, 0);
	c->rule = NULL;
	c->allowed = false;  /* the next request is judged on its own */
	c->approved = false; /* an answer on the terminal was for that request */
	if (!hc(c)->stream) {
		c->port = 0;
		c->source = CONN_SRC_HTTP;
	}
	conn_read_client(c, hc(c)->on_head);
	conn_timer(c, conn_idle_timeout(c));
	if (c->inlen)
		hc(c)->on_head(c);
}

static void
on_cb_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct http_ex *ex = hc(c)->ex;

	if (evbuffer_get_length(bufferevent_get_output(bev)))
		return;
	if (ex->switched) {
		ex_tunnel(c);
		return;
	}
	if (ex->closing) {
		conn_close(c, "exchange done");
		return;
	}
	if (ex->resp_done) {
		ex_next_request(c);
		return;
	}
	if (ex_body_spliceable(ex)) {
		if (!ex->splicing)
			ex_splice_start(c);
		return;
	}
	bufferevent_enable(ex->ub, EV_READ);
}

static void
on_cb_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	conn_close(arg, "client closed");
}

static void
ex_finish(struct conn *c)
{
	struct http_ex *ex = hc(c)->ex;

	bufferevent_disable(ex->ub, EV_READ);
	if (!ex->client_keep || !ex->req_done)
		ex->closing = true;
	/* the rest of a small response goes now, not a turn of the loop later */
	ex_write_now(bufferevent_get_output(ex->cb), c->cfd);
	if (!evbuffer_get_length(bufferevent_get_output(ex->cb)))
		on_cb_write(ex->cb, c);
}

void
http_ex_start(struct conn *c)
{
	struct event_base *base = event_get_base(&c->timer);
	struct http_ex *ex = hc(c)->ex;
	long used;
	bool sent;
	ssize_t n;
	size_t off;

	evtimer_del(&c->timer);
	ex->cb = bufferevent_socket_new(base, c->cfd, 0);
	ex->ub = bufferevent_socket_new(base, c->ufd, 0);
	if (!ex->cb || !ex->ub) {
		conn_close(c, "out of memory");
		return;
	}
	bufferevent_setcb(ex->cb, on_cb_read, on_cb_write, on_cb_event, c);
	bufferevent_setcb(ex->ub, on_ub_read, on_ub_write, on_ub_event, c);
	/* a body to splice waits for the head to be all sent */
	bufferevent_setwatermark(ex->ub, EV_WRITE, ex_req_spliceable(ex) ? 0 : EX_LOW, 0);
	bufferevent_setwatermark(ex->cb, EV_WRITE, 0, 0);
	/* The head goes now, not a turn of the loop later, and only what the
	 * socket did not take goes to the bufferevent: bytes added to its
	 * output arm its write event (a bufferevent writes by default), which
	 * would then wake the loop once with nothing left to write. */
	n = send(c->ufd, c->uout, c->uoutlen, MSG_NOSIGNAL | MSG_DONTWAIT);
	off = n > 0 ? (size_t)n : 0;
	if (off < c->uoutlen)
		evbuffer_add(bufferevent_get_output(ex->ub), c->uout + off, c->uoutlen - off);
	free(c->uout);
	c->uout = NULL;
	c->uoutlen = c->uoutoff = 0;
	used = ex_feed_request(c, c->in, c->inlen);
	if (used < 0) {
		conn_close(c, "bad request body");
		return;
	}
	conn_drop_input(c, (size_t)used);
	c->state = CS_RELAY;
	conn_touch(c);
	conn_timer(c, conn_idle_timeout(c));
	/* the upstream's write event only if more is to be written (the rest,
	 * or a body); the client's is armed by what is added to its output */
	sent = !evbuffer_get_length(bufferevent_get_output(ex->ub));
	bufferevent_enable(ex->ub, sent && ex->req_done ? EV_READ : EV_READ | EV_WRITE);
	if (!ex->req_done && !ex_req_spliceable(ex))
		bufferevent_enable(ex->cb, EV_READ);
	else if (!ex->req_done)
		bufferevent_enable(ex->cb, EV_WRITE);
	if (sent)
		on_ub_write(ex->ub, c);
}

int
http_ex_open(struct conn *c, const struct http_request *req)
{
	struct http_conn *h = hc(c);
	struct http_ex *ex;

	ex = h->ex = calloc(1, sizeof(*ex));
	if (!ex)
		return -ENOMEM;
	/* a WebSocket upgrade is passed on only in a stream: proxy clients
	 * tunnel WebSocket with CONNECT */
	ex->upgrade = h->stream && http_fwd_websocket(req);
	/* the rule's header hooks strip here; they set nothing in plain HTTP
	 * (a request they would set a header in was refused: http_hook.h) */
	c->uout = http_hook_head(req, ex->upgrade, c->rule ? c->rule->hooks : NULL, NULL, c->host,
				 false, &c->uoutlen, NULL);
	c->uoutoff = 0;
	if (!c->uout)
		return -ENOMEM;
	ex->req_body = req->body;
	ex->req_left = req->body_len;
	ex->head_req = !strcmp(req->method, "HEAD");
	ex->client_keep = req->keep_alive;
	if (req->version_minor == 0 && !h->stream) {
		/* HTTP/1.0 clients of proxies ask with Proxy-Connection */
		const struct http_header *pc = http_find_header(req, "proxy-connection");

		if (pc && pc->value_len == 10 && !strncasecmp(pc->value, "keep-alive", 10))
			ex->client_keep = true;
	}
	return 0;
}
