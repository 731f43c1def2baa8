// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for http_connect_feed() (parse/http_resp.c): an upstream
 * proxy's reply to CONNECT, as untrusted as any server's bytes, fed in the
 * pieces the first input byte chooses (a slow or hostile proxy splits its
 * reply anywhere). Whatever the split: no byte past the head is taken, the
 * bytes taken are never more than offered, and the result and the head's
 * length are those of the whole reply fed at once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/http_resp.h"

/* Feeds data in pieces of at most step bytes (0: at once), as a socket
 * gives them: what was not taken is offered again with what follows. */
static enum parse_result
feed(struct http_connect_reader *r, const char *data, size_t size, size_t step, size_t *taken,
     int *status)
{
	enum parse_result res = PARSE_MORE;
	size_t off = 0;

	memset(r, 0, sizeof(*r));
	*taken = 0;
	while (res == PARSE_MORE && off < size) {
		size_t n = step && size - off > step ? step : size - off, take = 0;
		char *piece = malloc(n); /* exact size: ASan sees any over-read */

		if (!piece)
			abort();
		memcpy(piece, data + off, n);
		res = http_connect_feed(r, piece, n, &take, status);
		free(piece);
		if (take > n || (res == PARSE_MORE && take != n))
			abort();
		off += take;
		*taken += take;
	}
	return res;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_connect_reader *r = malloc(sizeof(*r));
	size_t whole = 0, split = 0, step;
	int s1 = 0, s2 = 0;
	enum parse_result a, b;

	if (!r || !size) {
		free(r);
		return 0;
	}
	step = data[0] % 17 + 1;
	a = feed(r, (const char *)data + 1, size - 1, 0, &whole, &s1);
	b = feed(r, (const char *)data + 1, size - 1, step, &split, &s2);
	if (a == PARSE_DONE || b == PARSE_DONE) {
		/* the same head and status however it arrived, and nothing past it */
		if (a != b || whole != split || s1 != s2 || s1 < 100 || s1 > 999 ||
		    whole > HTTP_CONNECT_HEAD_MAX || whole > size - 1)
			abort();
		if (whole < 4 || memcmp(data + 1 + whole - 4, "\r\n\r\n", 4))
			abort();
	}
	free(r);
	return 0;
}
