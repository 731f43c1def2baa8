// SPDX-License-Identifier: Apache-2.0
/* The requests inside an inspected TLS session (core.h), one at a time:
 * the head read with the proxy's own parser (parse/parse.h), refused when
 * it is no origin-form request for the session's name (400, 421 with
 * x-proxy-error: host-mismatch), its path put in normal form
 * (parse/path.h; sent so when the policy has path rules), judged by
 * conn_decide() as plain HTTP with its method and path, and logged as
 * inspected. A denied request gets 403 with the reason's x-proxy-error
 * (blocked-by-method-policy, blocked-by-path-policy, ...) and the session
 * goes on when the request had no body. An allowed one goes to the name's
 * server over a fresh connection (conn_connect_upstream(): the addresses
 * the policy allows) and a fresh verified TLS (session.c), with the head
 * http_fwd.h builds from what was judged; its body and the response are
 * framed here (Content-Length, chunked, until close) and streamed under
 * the watermarks of core.h, so a large body never sits in memory whole. A
 * judged WebSocket upgrade answered 101 becomes a tunnel to that server.
 * Then the next request of the kept-alive session, judged on its own. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <event2/buffer.h>

#include "inspect/core.h"
#include "lib/log.h"
#include "policy/secret.h"
#include "proxy/http_fwd.h"
#include "proxy/http_hook.h"

/* What a request head read now makes the reader do. */
enum head_next {
	HEAD_WAIT = 0, /* more bytes, or the session is busy with it */
	HEAD_AGAIN,    /* answered and kept: the next request may be there */
};

void
ix_request_free(struct isess *s)
{
	secrets_wipe_free(s->uout, s->uoutlen); /* it may hold a secret's value */
	s->uout = NULL;
	s->uoutlen = 0;
	secrets_wipe_free(s->body_out, s->body_outlen);
	s->body_out = NULL;
	s->body_outlen = 0;
	if (s->held)
		evbuffer_free(s->held);
	s->held = NULL;
}

/* A refusal of the request read (used bytes of the input): kept when the
 * client keeps the connection and nothing of a body follows. */
static enum head_next
refuse(struct isess *s, size_t used, int status, const char *phrase, const char *perr,
       const char *words)
{
	bool keep = s->req->keep_alive && s->req->body == HTTP_BODY_NONE;

	evbuffer_drain(bufferevent_get_input(s->cb), used);
	ix_reply(s, status, phrase, perr, keep, "egressctl: %s", words);
	return keep ? HEAD_AGAIN : HEAD_WAIT;
}

static void on_upstream_tcp(struct conn *c);

/* Is v (n bytes) this media type's start ("text/plain; charset=x")? */
static bool
type_is(const char *v, size_t n, const char *t)
{
	size_t k = strlen(t);

	return n >= k && !strncasecmp(v, t, k) && (n == k || v[k] == ';' || v[k] == ' ');
}

/* A body whose placeholders are swapped too: to a host some secret with a
 * value may go to, framed by Content-Length (at most IX_SWAP_MAX bytes) or
 * chunked (held until it ends, or streams as it is past IX_SWAP_MAX),
 * not encoded (gzip), of a text type (text/..., JSON, XML, a form). */
static bool
body_swappable(const struct isess *s, const struct http_request *req)
{
	const struct http_header *ct = http_find_header(req, "content-type"),
				 *ce = http_find_header(req, "content-encoding");
	const char *v;
	size_t n, sub;

	if (!(req->body == HTTP_BODY_CHUNKED ||
	      (req->body == HTTP_BODY_LENGTH && req->body_len && req->body_len <= IX_SWAP_MAX)) ||
	    !secrets_any_value_for(conn_secrets(s->c), s->c->host))
		return false;
	if (ce && !(ce->value_len == 8 && !strncasecmp(ce->value, "identity", 8)))
		return false;
	if (!ct)
		return false;
	v = ct->value;
	n = ct->value_len;
	if ((n > 5 && !strncasecmp(v, "text/", 5)) || type_is(v, n, "application/json") ||
	    type_is(v, n, "application/xml") ||
	    type_is(v, n, "application/x-www-form-urlencoded") ||
	    type_is(v, n, "application/graphql"))
		return true;
	/* application/...+json, application/...+xml */
	sub = strcspn(v, "; ");
	sub = sub < n ? sub : n;
	return n > 12 && !strncasecmp(v, "application/", 12) && sub >= 17 &&
	       (!strncasecmp(v + sub - 5, "+json", 5) || !strncasecmp(v + sub - 4, "+xml", 4));
}

static void hold_body(struct isess *s);
static void note_used(struct isess *s, uint64_t bits);

/* The request's head (and a held body, body_out) go once the upstream is
 * connected: the client is not read meanwhile. */
static void
go_upstream(struct isess *s, char *body, size_t len)
{
	s->body_out = body;
	s->body_outlen = len;
	s->phase = IX_UPSTREAM;
	s->reused = false;
	bufferevent_disable(s->cb, EV_READ);
	if (ix_pool_take(s)) { /* a connection kept from an earlier request */
		ix_upstream_up(s);
		return;
	}
	conn_connect_upstream(s->c, on_upstream_tcp);
}

/* A request body carries secret hit's placeholder to a host not the
 * secret's: denied and logged (*d), unless --audit lets it through. */
static bool
body_leak_denied(struct isess *s, int hit, struct policy_decision *d)
{
	s->c->leak = hit + 1;
	return conn_decide(s->c, NULL, d, NULL) != 1;
}

/* ... and its 403 blocked-by-secret-policy. */
static void
reply_body_leak(struct isess *s, const struct policy_decision *d, bool keep)
{
	ix_reply(s, 403, "Forbidden", "blocked-by-secret-policy", keep,
		 "egressctl: blocked %s https://%s%s: the placeholder of secret %s in its body",
		 s->c->method, s->c->host, s->c->path ? s->c->path : "",
		 d->secret ? d->secret : "?");
}

/* The request allowed: its head as it goes upstream, its framing, then
 * the connect. */
static enum head_next
forward(struct isess *s, size_t used)
{
	const struct http_request *req = s->req;
	bool ws = http_fwd_websocket(req);
	struct secrets *sec = conn_secrets(s->c);
	uint64_t used_bits = 0;

	s->used = 0;
	/* the rule's header hooks, then the placeholders of this host's
	 * secrets in the header lines: their values, in this copy only */
	s->uout = http_hook_head(req, ws, s->c->rule ? s->c->rule->hooks : NULL, sec, s->c->host,
				 true, &s->uoutlen, &used_bits);
	if (s->uout) {
		s->uout = secrets_substitute(sec, s->c->host, s->uout, &s->uoutlen, &used_bits);
		note_used(s, used_bits);
	}
	if (s->uout && s->ins->pool_max) /* the connection may serve the next request */
		s->uout = http_fwd_keep_alive(s->uout, &s->uoutlen);
	if (!s->uout) {
		conn_close(s->c, "out of memory");
		return HEAD_WAIT;
	}
	s->upgrade = ws;
	s->req_body = req->body;
	s->req_left = req->body_len;
	memset(&s->reqc, 0, sizeof(s->reqc));
	s->req_done =
		req->body == HTTP_BODY_NONE || (req->body == HTTP_BODY_LENGTH && !req->body_len);
	s->head_req = !strcmp(req->method, "HEAD");
	memset(&s->scan, 0, sizeof(s->scan));
	s->scanned = 0;
	s->client_keep = req->keep_alive;
	s->sent = s->resp_head_done = s->resp_started = s->resp_done = s->upstream_eof = false;
	memset(&s->respc, 0, sizeof(s->respc));
	if (!ws && body_swappable(s, req)) {
		s->held = evbuffer_new();
		if (!s->held) {
			conn_close(s->c, "out of memory");
			return HEAD_WAIT;
		}
		evbuffer_drain(bufferevent_get_input(s->cb), used);
		s->phase = IX_BODY;
		conn_timer(s->c, conn_idle_timeout(s->c));
		hold_body(s);
		return HEAD_WAIT;
	}
	evbuffer_drain(bufferevent_get_input(s->cb), used);
	go_upstream(s, NULL, 0);
	return HEAD_WAIT;
}

/* ---- a request body held to swap placeholders in (IX_BODY) ---- */

/* The secrets of bits (bit i) put into this request: counted once each. */
static void
note_used(struct isess *s, uint64_t bits)
{
	struct secrets *sec = conn_secrets(s->c);

	for (unsigned int i = 0; i < secrets_count(sec); i++)
		if ((bits & (1ull << i)) && !(s->used & (1ull << i))) {
			s->used |= 1ull << i;
			secrets_note_used(sec, i, s->c->host);
			log_info("conn %llu: secret %s put into the request to %s",
				 (unsigned long long)s->c->id, secrets_name(sec, i), s->c->host);
		}
}

/* The head in s->uout framed by "Content-Length: n" (the body swapped):
 * the line that framed it (Content-Length, or Transfer-Encoding: the
 * chunked body goes decoded) replaced. */
static int
set_framing(struct isess *s, size_t n)
{
	const char *h = s->uout, *p, *eol;
	char line[40], *out;
	size_t len = s->uoutlen, k, ll, rest;

	for (p = h; (p = memmem(p, len - (size_t)(p - h), "\r\n", 2)); p += 2) {
		size_t left = len - (size_t)(p - h) - 2;

		if ((left > 15 && !strncasecmp(p + 2, "content-length:", 15)) ||
		    (left > 18 && !strncasecmp(p + 2, "transfer-encoding:", 18)))
			break;
	}
	if (!p)
		return -EINVAL;
	k = (size_t)(p - h) + 2; /* the line's start */
	eol = memmem(h + k, len - k, "\r\n", 2);
	if (!eol)
		return -EINVAL;
	ll = (size_t)snprintf(line, sizeof(line), "Content-Length: %zu", n);
	rest = len - (size_t)(eol - h);
	out = malloc(k + ll + rest);
	if (!out)
		return -ENOMEM;
	memcpy(out, h, k);
	memcpy(out + k, line, ll);
	memcpy(out + k + ll, eol, rest);
	secrets_wipe_free(s->uout, s->uoutlen);
	s->uoutlen = k + ll + rest;
	s->uout = out;
	return 0;
}

/* The held body is whole: a placeholder of a secret that may not go to
 * this host refuses it (403, as a streamed body's would be); those of its
 * own secrets become the values; the head's Content-Length follows; then
 * the connect. */
static void
swap_body(struct isess *s)
{
	struct secrets *sec = conn_secrets(s->c);
	size_t len = evbuffer_get_length(s->held), rawlen = 0, used = 0;
	uint64_t bits = 0;
	struct policy_decision d;
	char *body = malloc(len ? len : 1), *raw = NULL;
	int hit;

	if (!body) {
		conn_close(s->c, "out of memory");
		return;
	}
	evbuffer_remove(s->held, body, len);
	evbuffer_free(s->held);
	s->held = NULL;
	if (s->req_body == HTTP_BODY_CHUNKED) {
		/* the chunks' data (the framing was read whole and checked) */
		raw = body;
		rawlen = len;
		body = malloc(rawlen ? rawlen : 1);
		if (!body || http_chunked_decode(raw, rawlen, body, &len, &used) != PARSE_DONE) {
			const char *why = body ? "bad chunked request body" : "out of memory";

			secrets_wipe_free(raw, rawlen);
			secrets_wipe_free(body, rawlen);
			conn_close(s->c, why);
			return;
		}
	}
	hit = secrets_find(sec, s->c->host, body, len);
	if (hit >= 0 && body_leak_denied(s, hit, &d)) {
		secrets_wipe_free(body, len);
		secrets_wipe_free(raw, rawlen);
		ix_request_free(s);
		reply_body_leak(s, &d, s->client_keep);
		if (s->client_keep)
			ix_next_request(s); /* the body was read whole */
		return;
	}
	body = secrets_substitute_body(sec, s->c->host, body, &len, &bits);
	if (!body || (bits && set_framing(s, len))) {
		secrets_wipe_free(body, len);
		secrets_wipe_free(raw, rawlen);
		conn_close(s->c, "out of memory");
		return;
	}
	note_used(s, bits);
	if (raw && !bits) { /* nothing swapped: the body as the client framed it */
		secrets_wipe_free(body, len);
		body = raw;
		len = rawlen;
	} else {
		secrets_wipe_free(raw, rawlen);
	}
	s->req_left = 0;
	s->req_done = true;
	go_upstream(s, body, len);
}

/* A chunked body past IX_SWAP_MAX: what was held goes as it is (scanned
 * as a streamed body's first bytes are), the rest streams (feed_body()). */
static void
stream_held(struct isess *s)
{
	struct secrets *sec = conn_secrets(s->c);
	size_t len = evbuffer_get_length(s->held), scan = len < IX_SCAN_MAX ? len : IX_SCAN_MAX;
	struct policy_decision d;
	char *raw = malloc(len ? len : 1);
	int hit;

	if (!raw) {
		conn_close(s->c, "out of memory");
		return;
	}
	evbuffer_remove(s->held, raw, len);
	evbuffer_free(s->held);
	s->held = NULL;
	hit = secrets_scan_feed(sec, &s->scan, s->c->host, raw, scan);
	s->scanned = scan;
	if (hit >= 0 && body_leak_denied(s, hit, &d)) {
		secrets_wipe_free(raw, len);
		ix_request_free(s);
		reply_body_leak(s, &d, false); /* the rest of the body is not read */
		return;
	}
	go_upstream(s, raw, len);
}

/* What the client sent of a chunked body held (IX_BODY). */
static void
hold_chunked(struct isess *s)
{
	struct evbuffer *in = bufferevent_get_input(s->cb);
	size_t n = evbuffer_get_length(in), used = 0;
	enum parse_result r = PARSE_MORE;

	if (n) {
		r = http_chunked_feed(&s->reqc, (const char *)evbuffer_pullup(in, (ssize_t)n), n,
				      &used);
		if (r != PARSE_DONE && r != PARSE_MORE) {
			conn_close(s->c, "bad chunked request body");
			return;
		}
		evbuffer_remove_buffer(in, s->held, used);
		conn_touch(s->c);
	}
	if (r == PARSE_DONE)
		swap_body(s);
	else if (evbuffer_get_length(s->held) > IX_SWAP_MAX)
		stream_held(s);
	else
		bufferevent_enable(s->cb, EV_READ);
}

/* What the client sent of a held body (IX_BODY). */
static void
hold_body(struct isess *s)
{
	struct evbuffer *in = bufferevent_get_input(s->cb);
	size_t n = evbuffer_get_length(in);

	if (!s->held)
		return;
	if (s->req_body == HTTP_BODY_CHUNKED) {
		hold_chunked(s);
		return;
	}
	if (n > s->req_left)
		n = (size_t)s->req_left;
	if (n) {
		evbuffer_remove_buffer(in, s->held, n);
		s->req_left -= n;
		conn_touch(s->c);
	}
	if (!s->req_left)
		swap_body(s);
	else
		bufferevent_enable(s->cb, EV_READ);
}

/* The request of s->req (used bytes): for this session's name, its path,
 * then the policy's word. */
static enum head_next
judge(struct isess *s, size_t used)
{
	struct http_request *req = s->req;
	struct conn *c = s->c;
	struct policy_decision d;
	char path[sizeof(req->target)], words[400], msg[700];
	size_t hl = strlen(req->host);
	bool rules = policy_has_paths(conn_policy(c));
	int err;

	if (hl && req->host[hl - 1] == '.')
		req->host[--hl] = 0;
	if (hl && strcasecmp(req->host, c->host))
		return refuse(s, used, 421, "Misdirected Request", "host-mismatch",
			      "this TLS session is for another name than the request's Host");
	err = http_fwd_path(req, rules, path, sizeof(path));
	if (err && rules)
		return refuse(s, used, 400, "Bad Request", NULL,
			      "a request path the path rules cannot judge");
	c->proto = POLICY_P_HTTP;
	snprintf(c->method, sizeof(c->method), "%s", req->method);
	if (conn_set_path(c, err ? NULL : path, err ? 0 : strlen(path))) {
		conn_close(c, "out of memory");
		return HEAD_WAIT;
	}
	s->ins->st.requests++;
	conn_scan_secrets(
		c, (const char *)evbuffer_pullup(bufferevent_get_input(s->cb), (ssize_t)used),
		used);
	c->hreq = req;
	err = conn_decide(c, NULL, &d, NULL);
	c->hreq = NULL;
	if (err == 1)
		return forward(s, used);
	snprintf(msg, sizeof(msg), "blocked %s https://%s%s: %s", req->method, c->host,
		 c->path ? c->path : "",
		 policy_reason_words(&d, req->method, words, sizeof(words)));
	return refuse(s, used, 403, "Forbidden", policy_reason_header(d.reason), msg);
}

/* Reads a request head from the client's input. */
static enum head_next
read_head(struct isess *s)
{
	struct evbuffer *in = bufferevent_get_input(s->cb);
	size_t len = evbuffer_get_length(in), used = 0;
	size_t want = len < CONN_MAX_HEAD ? len : CONN_MAX_HEAD;
	enum parse_result r;
	const char *p;

	if (!len)
		return HEAD_WAIT;
	p = (const char *)evbuffer_pullup(in, (ssize_t)want);
	r = http_parse_request(p, want, CONN_MAX_HEAD, s->req, &used);
	if (r == PARSE_MORE && len < CONN_MAX_HEAD)
		return HEAD_WAIT;
	conn_touch(s->c);
	s->requested = true;
	if (r == PARSE_MORE || r == PARSE_TOO_LONG) {
		ix_reply(s, 431, "Request Header Fields Too Large", NULL, false,
			 "egressctl: request head over %d bytes", CONN_MAX_HEAD);
		return HEAD_WAIT;
	}
	if (r != PARSE_DONE || s->req->connect || s->req->absolute) {
		ix_reply(s, 400, "Bad Request", NULL, false, "egressctl: %s",
			 r != PARSE_DONE ? "malformed request"
					 : "not an origin-form request (inside TLS: GET /path)");
		return HEAD_WAIT;
	}
	return judge(s, used);
}

void
ix_next_request(struct isess *s)
{
	struct conn *c = s->c;

	s->phase = IX_HEAD;
	c->state = CS_HEAD;
	conn_timer(c, s->requested ? conn_idle_timeout(c) : conn_head_timeout(c));
	bufferevent_enable(s->cb, EV_READ);
	if (evbuffer_get_length(bufferevent_get_input(s->cb)))
		ix_client_read(s->cb, s);
}

/* ---- the request body, client -> upstream ---- */

/* The first IX_SCAN_MAX bytes of a request body, used bytes of in now:
 * a placeholder of a secret that may not go to this host ends the
 * request before the piece that completes it goes (the server gets the
 * head and an incomplete body, and its connection closed), with 403
 * blocked-by-secret-policy and a decision line naming the secret (not in
 * --audit). True when s was handed on. */
static bool
body_leak(struct isess *s, struct evbuffer *in, size_t used)
{
	struct secrets *sec = conn_secrets(s->c);
	struct evbuffer_iovec v[16];
	struct policy_decision d;
	int n, hit = -1;

	if (!secrets_count(sec) || s->scanned >= IX_SCAN_MAX)
		return false;
	if (used > IX_SCAN_MAX - s->scanned)
		used = (size_t)(IX_SCAN_MAX - s->scanned);
	n = evbuffer_peek(in, (ssize_t)used, NULL, v, 16);
	for (int k = 0; k < n && k < 16 && hit < 0 && used; k++) {
		size_t len = v[k].iov_len < used ? v[k].iov_len : used;

		hit = secrets_scan_feed(sec, &s->scan, s->c->host, v[k].iov_base, len);
		used -= len;
		s->scanned += len;
	}
	if (hit < 0 || !body_leak_denied(s, hit, &d))
		return false; /* none, or --audit: recorded, let through */
	ix_upstream_close(s);
	if (s->resp_started) {
		conn_close(s->c, "a secret's placeholder in the request body");
		return true;
	}
	reply_body_leak(s, &d, false);
	return true;
}

/* Moves the body's bytes the client sent so far upstream, as framed;
 * -1 when c was closed. */
static int
feed_body(struct isess *s)
{
	struct evbuffer *in = bufferevent_get_input(s->cb), *out = bufferevent_get_output(s->ub);
	size_t len = evbuffer_get_length(in), used = 0;

	if (!s->req_done && len && s->req_body == HTTP_BODY_LENGTH) {
		used = len < s->req_left ? len : (size_t)s->req_left;
		s->req_left -= used;
		s->req_done = !s->req_left;
	} else if (!s->req_done && len) {
		enum parse_result r = http_chunked_feed(
			&s->reqc, (const char *)evbuffer_pullup(in, (ssize_t)len), len, &used);

		if (r == PARSE_DONE)
			s->req_done = true;
		else if (r != PARSE_MORE) {
			conn_close(s->c, "bad chunked request body");
			return -1;
		}
	}
	if (used && body_leak(s, in, used))
		return -1;
	if (used)
		evbuffer_remove_buffer(in, out, used);
	conn_touch(s->c);
	if (s->req_done || evbuffer_get_length(out) > IX_HIGH)
		bufferevent_disable(s->cb, EV_READ); /* the next request waits its turn */
	else
		bufferevent_enable(s->cb, EV_READ);
	return 0;
}

void
ix_upstream_up(struct isess *s)
{
	struct conn *c = s->c;

	s->phase = IX_EXCHANGE;
	c->state = CS_RELAY;
	conn_touch(c);
	conn_timer(c, conn_idle_timeout(c));
	evbuffer_add(bufferevent_get_output(s->ub), s->uout, s->uoutlen);
	if (s->body_out) /* a held body, swapped */
		evbuffer_add(bufferevent_get_output(s->ub), s->body_out, s->body_outlen);
	/* on a kept connection the server may have closed meanwhile: a request
	 * all here (no body still to come from the client) is kept until its
	 * response starts, to be sent again on a new one (upstream_gone) */
	if (!s->reused || !s->req_done)
		ix_request_free(s);
	bufferevent_enable(s->ub, EV_READ | EV_WRITE);
	feed_body(s);
}

void
ix_upstream_write(struct bufferevent *bev, void *arg)
{
	struct isess *s = arg;
	struct conn *c = s->c;

	if (s->phase == IX_TUNNEL) {
		bufferevent_enable(s->cb, EV_READ);
		return;
	}
	if (!s->req_done) {
		bufferevent_enable(s->cb, EV_READ);
		return;
	}
	if (s->sent || evbuffer_get_length(bufferevent_get_output(bev)))
		return;
	s->sent = true; /* all with the server: its response head has a time limit */
	if (!s->resp_started) {
		c->state = CS_RESPONSE;
		conn_timer(c, conn_response_timeout(c));
	}
}

void
ix_response_timeout(struct isess *s)
{
	struct conn *c = s->c;

	if (s->resp_started) {
		conn_close(c, "timeout");
		return;
	}
	log_info("conn %llu: %s:%u: no response head within %d s", (unsigned long long)c->id,
		 c->host, c->port, conn_response_timeout(c));
	ix_reply(s, 504, "Gateway Timeout", "upstream-response-timeout", false,
		 "egressctl: %s:%u sent no response within %d s", c->host, c->port,
		 conn_response_timeout(c));
}

/* ---- the response, upstream -> client ---- */

static bool
hop_header(const struct http_header *h, const char *conn_v, size_t conn_len)
{
	static const char *const hop[] = {
		"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
		"te",	      "trailer",    "upgrade"};

	for (size_t k = 0; k < sizeof(hop) / sizeof(hop[0]); k++)
		if (h->name_len == strlen(hop[k]) && !strncasecmp(h->name, hop[k], h->name_len))
			return true;
	/* and whatever the Connection header names */
	for (size_t k = 0; conn_v && k + h->name_len <= conn_len; k++)
		if (!strncasecmp(conn_v + k, h->name, h->name_len) &&
		    (k == 0 || conn_v[k - 1] == ',' || conn_v[k - 1] == ' ') &&
		    (k + h->name_len == conn_len || conn_v[k + h->name_len] == ',' ||
		     conn_v[k + h->name_len] == ' '))
			return true;
	return false;
}

/* The response head as the client gets it: our version, the server's
 * status, its headers but the hop-by-hop ones, our Connection. */
static void
send_head(struct isess *s, const char *head, bool keep)
{
	struct evbuffer *out = bufferevent_get_output(s->cb);
	const char *eol = strstr(head, "\r\n"), *conn_v = NULL;
	size_t conn_len = 0;

	evbuffer_add(out, "HTTP/1.1", 8);
	evbuffer_add(out, head + 8, (size_t)(eol - head) - 8 + 2);
	for (size_t i = 0; i < s->resp.nheaders; i++) {
		const struct http_header *h = &s->resp.headers[i];

		if (h->name_len == 10 && !strncasecmp(h->name, "connection", 10)) {
			conn_v = h->value;
			conn_len = h->value_len;
		}
	}
	for (size_t i = 0; i < s->resp.nheaders; i++) {
		const struct http_header *h = &s->resp.headers[i];

		if (hop_header(h, conn_v, conn_len))
			continue;
		evbuffer_add(out, h->name, h->name_len);
		evbuffer_add(out, ": ", 2);
		evbuffer_add(out, h->value, h->value_len);
		evbuffer_add(out, "\r\n", 2);
	}
	evbuffer_add_printf(out, "Connection: %s\r\n\r\n", keep ? "keep-alive" : "close");
	s->resp_started = true;
}

/* Does r switch to WebSocket (the only upgrade ever offered)? */
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

/* 101 to the judged WebSocket upgrade: the head as the server sent it,
 * then bytes both ways. */
static void
tunnel(struct isess *s, size_t used)
{
	struct evbuffer *in = bufferevent_get_input(s->ub), *out = bufferevent_get_output(s->cb);

	evbuffer_remove_buffer(in, out, used);
	evbuffer_add_buffer(out, in);
	s->resp_started = true;
	s->phase = IX_TUNNEL;
	s->c->state = CS_RELAY;
	conn_timer(s->c, conn_idle_timeout(s->c));
	bufferevent_enable(s->cb, EV_READ);
	if (evbuffer_get_length(bufferevent_get_input(s->cb)))
		ix_client_read(s->cb, s);
}

/* The response head, if it is all there. Returns 1 when the pump goes
 * on, 0 when it waits, -1 when s was handed on (an error, a tunnel). */
static int
response_head(struct isess *s)
{
	struct evbuffer *in = bufferevent_get_input(s->ub);
	size_t len = evbuffer_get_length(in), used = 0;
	size_t want = len < CONN_MAX_HEAD ? len : CONN_MAX_HEAD;
	const char *p;
	enum parse_result r;
	bool keep;

	if (!len)
		return 0;
	p = (const char *)evbuffer_pullup(in, (ssize_t)want);
	r = http_parse_response(p, want, CONN_MAX_HEAD, s->head_req, &s->resp, &used);
	if (r == PARSE_MORE && len < CONN_MAX_HEAD)
		return 0;
	if (r != PARSE_DONE ||
	    (s->resp.status == 101 && (!s->upgrade || !resp_websocket(&s->resp)))) {
		if (!s->resp_started)
			ix_reply(s, 502, "Bad Gateway", NULL, false,
				 "egressctl: bad response from upstream");
		else
			conn_close(s->c, "bad response head");
		return -1;
	}
	if (s->resp.status == 101) {
		tunnel(s, used);
		return -1;
	}
	if (s->resp.status < 200) { /* interim: passed on, the final one follows */
		send_head(s, p, true);
		evbuffer_drain(in, used);
		return 1;
	}
	ix_request_free(s); /* a response: nothing is sent again */
	keep = s->client_keep && !s->resp.until_close;
	send_head(s, p, keep);
	evbuffer_drain(in, used);
	s->client_keep = keep;
	s->resp_head_done = true;
	s->resp_left = s->resp.body_len;
	s->resp_done = (s->resp.body == HTTP_BODY_NONE && !s->resp.until_close) ||
		       (s->resp.body == HTTP_BODY_LENGTH && !s->resp_left);
	s->c->state = CS_RELAY;
	conn_timer(s->c, conn_idle_timeout(s->c));
	return 1;
}

/* The response's end: the next request, or the close. */
static void
exchange_end(struct isess *s)
{
	bool keep = s->client_keep && s->req_done;

	if (!s->req_done || !ix_pool_put(s))
		ix_upstream_close(s);
	if (keep)
		ix_next_request(s);
	else
		ix_finish(s);
}

/* Moves the response body's bytes there are, as framed. -1 when s was
 * handed on. */
static int
response_body(struct isess *s)
{
	struct evbuffer *in = bufferevent_get_input(s->ub), *out = bufferevent_get_output(s->cb);
	size_t len = evbuffer_get_length(in), n = len, used = 0;

	if (s->resp.until_close) {
		evbuffer_remove_buffer(in, out, len);
	} else if (s->resp.body == HTTP_BODY_LENGTH) {
		n = len < s->resp_left ? len : (size_t)s->resp_left;
		evbuffer_remove_buffer(in, out, n);
		s->resp_left -= n;
		s->resp_done = !s->resp_left;
	} else {
		enum parse_result r = http_chunked_feed(
			&s->respc, (const char *)evbuffer_pullup(in, (ssize_t)len), len, &used);

		if (r == PARSE_ERROR || r == PARSE_TOO_LONG) {
			conn_close(s->c, "bad chunked response");
			return -1;
		}
		evbuffer_remove_buffer(in, out, used);
		s->resp_done = r == PARSE_DONE;
	}
	return 0;
}

/* The server is gone before the response was all there: 502, or the
 * close when part of it went already. */
static void
upstream_gone(struct isess *s)
{
	if (s->reused && !s->resp_started && s->uout) {
		/* a kept connection the server closed as the request came: the
		 * same request on a new one (it had no response at all) */
		log_info("conn %llu: %s:%u: a kept connection closed before a response: "
			 "a new one",
			 (unsigned long long)s->c->id, s->c->host, s->c->port);
		ix_upstream_close(s);
		s->reused = s->sent = s->resp_head_done = s->upstream_eof = false;
		s->phase = IX_UPSTREAM;
		conn_connect_upstream(s->c, on_upstream_tcp);
		return;
	}
	if (!s->resp_started) {
		ix_reply(s, 502, "Bad Gateway", NULL, false,
			 "egressctl: %s:%u closed before a response", s->c->host, s->c->port);
		return;
	}
	conn_close(s->c, "upstream closed mid-response");
}

void
ix_pump_response(struct isess *s)
{
	struct evbuffer *in = bufferevent_get_input(s->ub), *out = bufferevent_get_output(s->cb);
	int r;

	conn_touch(s->c);
	while (!s->resp_done) {
		if (!s->resp_head_done) {
			r = response_head(s);
			if (r < 0)
				return;
			if (!r) {
				if (s->upstream_eof)
					upstream_gone(s);
				return;
			}
			continue;
		}
		if (!evbuffer_get_length(in)) {
			if (!s->upstream_eof)
				return;
			if (!s->resp.until_close) {
				upstream_gone(s);
				return;
			}
			s->resp_done = true; /* its end is the server's close */
			break;
		}
		if (response_body(s))
			return;
		if (evbuffer_get_length(out) > IX_HIGH) {
			bufferevent_disable(s->ub, EV_READ); /* ix_client_write resumes it */
			return;
		}
	}
	exchange_end(s);
}

void
ix_upstream_read(struct bufferevent *bev, void *arg)
{
	struct isess *s = arg;

	if (s->phase == IX_TUNNEL) {
		struct evbuffer *out = bufferevent_get_output(s->cb);

		conn_touch(s->c);
		evbuffer_add_buffer(out, bufferevent_get_input(bev));
		if (evbuffer_get_length(out) > IX_HIGH)
			bufferevent_disable(bev, EV_READ);
		return;
	}
	ix_pump_response(s);
}

void
ix_upstream_event(struct bufferevent *bev, short what, void *arg)
{
	struct isess *s = arg;

	(void)bev;
	(void)what; /* an error is an end as well: what came is all there is */
	if (s->phase == IX_TUNNEL) {
		ix_finish(s);
		return;
	}
	s->upstream_eof = true;
	ix_pump_response(s);
}

/* ---- the client's bytes ---- */

void
ix_client_read(struct bufferevent *bev, void *arg)
{
	struct isess *s = arg;

	switch (s->phase) {
	case IX_HEAD:
		/* HEAD_AGAIN only when s was kept: nothing else is safe to touch */
		while (read_head(s) == HEAD_AGAIN)
			;
		return;
	case IX_BODY:
		hold_body(s);
		return;
	case IX_EXCHANGE:
		if (!s->req_done)
			feed_body(s);
		else
			bufferevent_disable(bev, EV_READ);
		return;
	case IX_TUNNEL: {
		struct evbuffer *out = bufferevent_get_output(s->ub);

		conn_touch(s->c);
		evbuffer_add_buffer(out, bufferevent_get_input(bev));
		if (evbuffer_get_length(out) > IX_HIGH)
			bufferevent_disable(bev, EV_READ);
		return;
	}
	default:
		bufferevent_disable(bev, EV_READ);
		return;
	}
}

/* ---- the upstream's connect ---- */

static void
on_upstream_tcp(struct conn *c)
{
	struct isess *s = c->pstate;

	if (c->ufd != -1) {
		ix_upstream_tls(s);
		return;
	}
	if (c->up_err == EACCES)
		ix_reply(s, 403, "Forbidden", "blocked-by-policy", false,
			 "egressctl: blocked %s:%u: local or private address", c->host, c->port);
	else if (c->up_err == ETIMEDOUT)
		ix_reply(s, 504, "Gateway Timeout", "upstream-connect-timeout", false,
			 "egressctl: %s:%u did not answer in time", c->host, c->port);
	else if (c->up_err == EMFILE || c->up_err == ENFILE)
		ix_reply(s, 503, "Service Unavailable", "overloaded", false,
			 "egressctl: out of file descriptors");
	else
		ix_reply(s, 502, "Bad Gateway", NULL, false, "egressctl: cannot reach %s:%u: %s",
			 c->host, c->port, strerror(c->up_err));
}
