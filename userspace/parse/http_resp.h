// SPDX-License-Identifier: Apache-2.0
/* Parser of the response heads that upstream servers send back through the
 * HTTP proxy: status, framing (RFC 9112 §6.3) and the headers to pass on.
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

#endif /* HTTP_RESP_H */
