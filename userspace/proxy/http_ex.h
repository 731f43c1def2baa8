// SPDX-License-Identifier: Apache-2.0
/* The plain-HTTP exchange (http_ex.c), as the HTTP listener (http_proxy.c)
 * uses it: one allowed request forwarded over its upstream connection and
 * its response brought back, framed (Content-Length, chunked, until
 * close), then the next request of a kept-alive connection handed back to
 * the listener's head reader; and the one builder of the proxy's own HTTP
 * error responses. Nothing else includes it: the rest of the proxy has
 * proto.h. */
#ifndef HTTP_EX_H
#define HTTP_EX_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "parse/parse.h"
#include "proxy/conn.h"

struct http_ex;

/* The protocol's state of a connection (c->pstate). */
struct http_conn {
	bool stream; /* a transparent or SOCKS5 plain-HTTP stream (http_stream_start) */
	struct http_request *req; /* the parsed head, kept across a question on the terminal */
	size_t req_used;	  /* bytes of c->in it took */
	struct http_ex *ex;	  /* the plain-HTTP exchange in flight; NULL if none */
	/* the listener's reader of a request head: the exchange hands it the
	 * next request of a kept-alive connection */
	void (*on_head)(struct conn *c);
};

/* c's http_conn */
static inline struct http_conn *
hc(const struct conn *c)
{
	return c->pstate;
}

/* The one builder of the proxy's own HTTP responses (403, 400, 431, 502,
 * 503, 504): status line, x-proxy-error if any, a one-line text body,
 * Connection: close. The body is fmt's words and a newline. Returns the
 * length written into buf (cut to fit). */
int http_error_vformat(char *buf, size_t len, int status, const char *phrase,
		       const char *proxy_error, const char *fmt, va_list ap)
	__attribute__((format(printf, 6, 0)));
int http_error_format(char *buf, size_t len, int status, const char *phrase,
		      const char *proxy_error, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* The 502 or 504 for a failure of the upstream proxy on c
 * (c->via_upstream, c->up_err, c->up_status: conn.h), with an
 * x-proxy-error naming it: upstream-proxy-timeout (504, no answer in
 * time), upstream-proxy-refused (502, a status other than 2xx, which the
 * body gives, or a reply that is not HTTP), upstream-proxy-unreachable
 * (502, no connection to it). Returns the length written into buf. */
int http_upstream_error(const struct conn *c, char *buf, size_t len);

/* An exchange for the allowed request req (not CONNECT) in c's http_conn:
 * the head to send upstream in c->uout (origin-form, http_fwd.h), what
 * frames the request body, whether the client keeps the connection.
 * Returns 0 or -ENOMEM. */
int http_ex_open(struct conn *c, const struct http_request *req);

/* The upstream connection is up (c->ufd): the head and the request body go,
 * the response comes back; at its end the next request, or a WebSocket
 * tunnel after a 101, or the close. */
void http_ex_start(struct conn *c);

/* No response head within --response-timeout of the request: 504, or the
 * close when part of a response went already. */
void http_ex_timeout(struct conn *c);

/* Frees the exchange in flight, if any. */
void http_ex_free(struct conn *c);

#endif /* HTTP_EX_H */
