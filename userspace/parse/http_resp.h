// SPDX-License-Identifier: Apache-2.0
/* Parser of the response heads that upstream servers send back through the
 * HTTP proxy: status, framing (RFC 9112 §6.3) and the headers to pass on;
 * and of an upstream proxy's reply to CONNECT, read to its head's end.
 * Pure, like parse.h's parsers, and fuzzed (tests/fuzz/fuzz_http_resp.c). */
#ifndef HTTP_RESP_H
#define HTTP_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse/parse.h"

struct http_response {
	int status;	   /* 100-999 */
	int version_minor; /* HTTP/1.x */
	bool close;	   /* the server will close: Connection: close, or 1.0 without keep-alive */
	bool until_close;  /* no length: the body runs until the server closes */
	enum http_body body; /* NONE (no body at all), LENGTH or CHUNKED */
	uint64_t body_len;   /* for HTTP_BODY_LENGTH */
	size_t nheaders;
	struct http_header headers[HTTP_MAX_HEADERS];
};

/* Parses one response head. head_request: the request was HEAD (no body
 * whatever the headers say). Status 1xx, 204 and 304 have no body. Errors
 * as for requests: bad status line, bad header lines, bad or conflicting
 * Content-Length, Transfer-Encoding not ending in chunked (then the body
 * runs until close, per RFC 9112 §6.3 for responses), NUL bytes, bare CR. */
enum parse_result http_parse_response(const char *buf, size_t len, size_t max_head,
				      bool head_request, struct http_response *r, size_t *consumed);

/* A proxy's reply to CONNECT (RFC 9110 §9.3.6), read as it arrives
 * without taking a byte past its head: the tunnel's first bytes (a
 * server that speaks first) may follow it in the same segment, and they
 * are the client's. */
#define HTTP_CONNECT_HEAD_MAX 16384

struct http_connect_reader {
	size_t len; /* bytes of the head taken so far */
	char head[HTTP_CONNECT_HEAD_MAX];
};

/* data (n bytes): what can be read now, not yet taken from the stream.
 * PARSE_MORE: all n are head (*take = n): take them, call again with what
 * follows. PARSE_DONE: the head ends within them: take *take bytes, the
 * rest is the tunnel's; *status is the reply's (a 2xx opens the tunnel;
 * the body of any other is not read). PARSE_ERROR: a malformed head (as
 * http_parse_response() judges it); PARSE_TOO_LONG: no end within
 * HTTP_CONNECT_HEAD_MAX bytes. Start from a reader whose len is 0. */
enum parse_result http_connect_feed(struct http_connect_reader *r, const char *data, size_t n,
				    size_t *take, int *status);

#endif /* HTTP_RESP_H */
