// SPDX-License-Identifier: Apache-2.0
/* The request head the proxy sends upstream for a parsed, judged request
 * (parse.h): built from the parsed fields so that the server frames and
 * routes the request exactly as it was judged. Pure (one malloc), fuzzed
 * with the request parser (tests/fuzz/fuzz_http.c): the head it builds
 * parses back to the same method, target, host and body framing. */
#ifndef HTTP_FWD_H
#define HTTP_FWD_H

#include <stdbool.h>
#include <stddef.h>

#include "parse/parse.h"

/* Is req a WebSocket opening handshake (RFC 6455 §4.1) the proxy may pass
 * on: GET, HTTP/1.1, no body, "upgrade" among the Connection options and
 * "websocket" among the Upgrade protocols? Other upgrades (h2c, TLS) are
 * never offered upstream. */
bool http_fwd_websocket(const struct http_request *req);

/* The path req is judged by (the policy's path rules, parse/path.h): its
 * target in normal form, into path (len bytes, without the query). With
 * rewrite (the policy has path rules), req->target becomes that normal
 * form (query kept), so that the server gets the path that was judged.
 * Returns 0, -EINVAL for a target that has none (malformed, or refused:
 * path.h), -E2BIG when it does not fit. */
int http_fwd_path(struct http_request *req, bool rewrite, char *path, size_t len);

/* The head for req in origin-form ("*" for OPTIONS *), HTTP/1.1, with:
 *  - Host naming what was judged: the client's own Host line for an
 *    origin-form request; for an absolute-form one, host[:port] of the URI
 *    and no Host line of the client's (RFC 9112 §3.2.2);
 *  - every other header of the client's but the hop-by-hop ones, except
 *    that Content-Length and Transfer-Encoding are always kept, whatever
 *    Connection names (the body is relayed as the client framed it, and
 *    the server must frame it the same way);
 *  - "Connection: close" (one request per upstream connection), or for
 *    websocket "Connection: Upgrade" and "Upgrade: websocket".
 * req must not be CONNECT and must name a host. Returns a malloc'd buffer
 * of *len bytes (not NUL-terminated), or NULL with errno ENOMEM. */
char *http_fwd_head(const struct http_request *req, bool websocket, size_t *len);

/* http_fwd_head() with the client's headers i for which skip[i] is true
 * (skip: NULL, or req->nheaders flags) left out, and extra (extralen
 * bytes of whole header lines, "Name: value\r\n" each) added after the
 * client's (http_hook.h). */
char *http_fwd_head_edit(const struct http_request *req, bool websocket, const bool *skip,
			 const char *extra, size_t extralen, size_t *len);

/* The head http_fwd_head() built, for an HTTP proxy (--upstream-proxy):
 * its request line in absolute form, "http://" authority and the
 * origin-form target ("*" adds nothing), and after it
 * "Proxy-Authorization: " auth unless auth is "". Returns a malloc'd
 * buffer of *len bytes, or NULL with errno ENOMEM (or EINVAL: head does
 * not start with a request line). */
char *http_fwd_absolute(const char *head, size_t n, const char *authority, const char *auth,
			size_t *len);

/* The head http_fwd_head() built (head, *len bytes; taken), for an
 * upstream connection kept after the response: "Connection: keep-alive"
 * instead of "close" (a WebSocket's upgrade stays as it is). The old
 * buffer is wiped and freed. NULL with errno ENOMEM (head freed too). */
char *http_fwd_keep_alive(char *head, size_t *len);

/* Does a head http_fwd_head() built offer a WebSocket upgrade? */
bool http_fwd_upgrades(const char *head, size_t n);

#endif /* HTTP_FWD_H */
