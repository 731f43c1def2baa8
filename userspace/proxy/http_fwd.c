// SPDX-License-Identifier: Apache-2.0
/* Forwarded request heads (see http_fwd.h). The client's bytes are never
 * passed on as they came: the request line and the headers that decide
 * routing (Host), framing (Content-Length, Transfer-Encoding) and the fate
 * of the connection (Connection, Upgrade) are written from what the parser
 * read and the policy judged, so the server cannot see a different host, a
 * different body length, or an offer to switch protocols it was not meant
 * to get. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse/path.h"
#include "proxy/http_fwd.h"

static bool
is_named(const struct http_header *h, const char *name)
{
	return h->name_len == strlen(name) && !strncasecmp(h->name, name, h->name_len);
}

bool
http_fwd_websocket(const struct http_request *req)
{
	return !strcmp(req->method, "GET") && req->version_minor == 1 &&
	       req->body == HTTP_BODY_NONE && http_header_has_token(req, "connection", "upgrade") &&
	       http_header_has_token(req, "upgrade", "websocket");
}

static size_t
put(char *out, size_t off, const char *s, size_t n)
{
	memcpy(out + off, s, n);
	return off + n;
}

int
http_fwd_path(struct http_request *req, bool rewrite, char *path, size_t len)
{
	char norm[sizeof(req->target)];
	size_t plen;
	enum parse_result r = http_path_normalize(req->target, norm, sizeof(norm), &plen);

	if (r != PARSE_DONE)
		return r == PARSE_TOO_LONG ? -E2BIG : -EINVAL;
	if (plen >= len)
		return -E2BIG;
	memcpy(path, norm, plen);
	path[plen] = 0;
	if (rewrite)
		memcpy(req->target, norm, strlen(norm) + 1);
	return 0;
}

static const char conn_ws[] = "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n";

char *
http_fwd_head(const struct http_request *req, bool websocket, size_t *len)
{
	return http_fwd_head_edit(req, websocket, NULL, NULL, 0, len);
}

char *
http_fwd_head_edit(const struct http_request *req, bool websocket, const bool *skip,
		   const char *extra, size_t extralen, size_t *len)
{
	static const char conn_close[] = "Connection: close\r\n\r\n";
	/* the URI names the host, or the client sent no Host line: ours */
	bool own_host = req->absolute || !http_find_header(req, "host");
	size_t cap, n;
	char *out;
	int w;

	cap = strlen(req->method) + strlen(req->target) + strlen(req->host) + 64 + sizeof(conn_ws) +
	      extralen;
	for (size_t i = 0; i < req->nheaders; i++)
		cap += req->headers[i].name_len + req->headers[i].value_len + 4;
	out = malloc(cap);
	if (!out) {
		errno = ENOMEM;
		return NULL;
	}
	w = snprintf(out, cap, "%s %s HTTP/1.1\r\n", req->method, req->target);
	n = (size_t)w;
	if (own_host && req->host[0]) {
		bool v6 = strchr(req->host, ':') != NULL;

		w = snprintf(out + n, cap - n, "Host: %s%s%s", v6 ? "[" : "", req->host,
			     v6 ? "]" : "");
		n += (size_t)w;
		if (req->port != 80) {
			w = snprintf(out + n, cap - n, ":%u", req->port);
			n += (size_t)w;
		}
		n = put(out, n, "\r\n", 2);
	}
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http_header *h = &req->headers[i];

		if (skip && skip[i])
			continue;
		if (is_named(h, "host")) {
			if (own_host)
				continue;
		} else if (!is_named(h, "content-length") && !is_named(h, "transfer-encoding") &&
			   http_is_hop_header(req, h)) {
			continue;
		}
		n = put(out, n, h->name, h->name_len);
		n = put(out, n, ": ", 2);
		n = put(out, n, h->value, h->value_len);
		n = put(out, n, "\r\n", 2);
	}
	if (extralen)
		n = put(out, n, extra, extralen);
	if (websocket)
		n = put(out, n, conn_ws, sizeof(conn_ws) - 1);
	else
		n = put(out, n, conn_close, sizeof(conn_close) - 1);
	*len = n;
	return out;
}

char *
http_fwd_keep_alive(char *head, size_t *len)
{
	static const char conn_close[] = "Connection: close\r\n\r\n",
			  conn_keep[] = "Connection: keep-alive\r\n\r\n";
	size_t k = sizeof(conn_close) - 1, n = *len;
	char *out;

	if (n < k || memcmp(head + n - k, conn_close, k))
		return head; /* a WebSocket's upgrade */
	out = malloc(n - k + sizeof(conn_keep) - 1);
	if (out) {
		memcpy(out, head, n - k);
		memcpy(out + n - k, conn_keep, sizeof(conn_keep) - 1);
		*len = n - k + sizeof(conn_keep) - 1;
	}
	explicit_bzero(head, n); /* it may hold a secret's value */
	free(head);
	if (!out)
		errno = ENOMEM;
	return out;
}

bool
http_fwd_upgrades(const char *head, size_t n)
{
	size_t k = sizeof(conn_ws) - 1;

	return n >= k && !memcmp(head + n - k, conn_ws, k);
}

char *
http_fwd_absolute(const char *head, size_t n, const char *authority, const char *auth, size_t *len)
{
	const char *sp1 = memchr(head, ' ', n), *sp2, *eol;
	size_t cap, o;
	char *out;

	sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - head)) : NULL;
	eol = sp2 ? memchr(sp2, '\n', n - (size_t)(sp2 - head)) : NULL;
	if (!eol) {
		errno = EINVAL;
		return NULL;
	}
	cap = n + strlen(authority) + strlen(auth) + 64;
	out = malloc(cap);
	if (!out) {
		errno = ENOMEM;
		return NULL;
	}
	o = put(out, 0, head, (size_t)(sp1 + 1 - head));
	o = put(out, o, "http://", 7);
	o = put(out, o, authority, strlen(authority));
	if (!(sp2 - sp1 == 2 && sp1[1] == '*'))
		o = put(out, o, sp1 + 1, (size_t)(sp2 - sp1 - 1));
	o = put(out, o, sp2, (size_t)(eol + 1 - sp2));
	if (auth[0]) {
		o = put(out, o, "Proxy-Authorization: ", 21);
		o = put(out, o, auth, strlen(auth));
		o = put(out, o, "\r\n", 2);
	}
	o = put(out, o, eol + 1, n - (size_t)(eol + 1 - head));
	*len = o;
	return out;
}
