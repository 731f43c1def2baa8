// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for http_resp.c: response heads from upstream servers,
 * then the chunked body decoder on what follows them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/http_resp.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_response *r = malloc(sizeof(*r));
	size_t used = 0;
	char *buf;

	if (!r)
		return 0;
	buf = malloc(size ? size : 1);
	if (!buf) {
		free(r);
		return 0;
	}
	memcpy(buf, data, size); /* exact size: ASan sees any over-read */
	for (int head = 0; head < 2; head++) {
		if (http_parse_response(buf, size, 65536, head, r, &used) == PARSE_DONE) {
			struct http_chunked c = {0};
			size_t body = 0;

			if (used > size || r->status < 100 || r->status > 999)
				abort();
			for (size_t i = 0; i < r->nheaders; i++)
				if (r->headers[i].name < buf || r->headers[i].value < buf ||
				    r->headers[i].value + r->headers[i].value_len > buf + used)
					abort();
			if (r->body == HTTP_BODY_CHUNKED)
				http_chunked_feed(&c, buf + used, size - used, &body);
		}
	}
	free(buf);
	free(r);
	return 0;
}
