// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for userspace/parse/sni.c: tls_parse_sni() and
 * sniff_protocol() on exactly sized buffers. A reported name is lower-case
 * [a-z0-9._-]; the same bytes parse to the same result under a smaller name
 * buffer (or PARSE_TOO_LONG when the name does not fit), under a limit of
 * exactly the input, and one byte short (PARSE_MORE, or PARSE_DONE when the
 * ClientHello ended before the last byte). sniff_protocol() must call a
 * parsed ClientHello TLS, and must not change its mind once it has decided. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/parse.h"

#define BIG (1 << 20)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[256], small[8], again[256];
	enum parse_result r, r2;
	size_t i, n;
	int s, s2;

	r = tls_parse_sni(data, size, BIG, name, sizeof(name));
	if (r > PARSE_TOO_LONG || !memchr(name, '\0', sizeof(name)))
		abort();
	if (r != PARSE_DONE && name[0])
		abort();
	if (r == PARSE_DONE) {
		for (i = 0; name[i]; i++)
			if (!((name[i] >= 'a' && name[i] <= 'z') ||
			      (name[i] >= '0' && name[i] <= '9') || strchr("._-", name[i])))
				abort();
		if (sniff_protocol(data, size) != 1)
			abort();
		if (tls_parse_sni(data, size, size, again, sizeof(again)) != PARSE_DONE ||
		    strcmp(name, again))
			abort();
		r2 = tls_parse_sni(data, size - 1, BIG, again, sizeof(again));
		if (r2 != PARSE_MORE && (r2 != PARSE_DONE || strcmp(name, again)))
			abort();
		r2 = tls_parse_sni(data, size, size - 1, again, sizeof(again));
		if (r2 != PARSE_TOO_LONG && (r2 != PARSE_DONE || strcmp(name, again)))
			abort();
	}
	r2 = tls_parse_sni(data, size, BIG, small, sizeof(small));
	if (r == PARSE_DONE && strlen(name) >= sizeof(small) ? r2 != PARSE_TOO_LONG : r2 != r)
		abort();
	if (r2 == PARSE_DONE && strcmp(small, name))
		abort();

	s = sniff_protocol(data, size);
	if (s < -1 || s > 2 || (s == -1 && size > 23))
		abort();
	n = size < 32 ? size : 32;
	for (i = 0; i <= n; i++) {
		s2 = sniff_protocol(data, i);
		if (s2 != -1 && s2 != s)
			abort();
	}
	return 0;
}
