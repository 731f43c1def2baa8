// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for the public suffix list parser (userspace/parse/psl.c):
 * the bytes before the first NUL are a list, the lines after it host names
 * looked up in it. Besides memory errors (ASan) it checks what the results
 * must be: the suffix is a tail of the name at a label boundary, the
 * registrable domain is that suffix with exactly one label more, and a name
 * that the list itself has as a plain rule is no registrable domain unless
 * an exception says so. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/psl.h"

static void
check(const struct psl *p, const char *host)
{
	size_t len = strlen(host), sl;
	const char *suf = psl_suffix(p, host), *reg = psl_registrable(p, host);

	if (!suf) {
		if (reg)
			abort();
		return;
	}
	if (suf < host || suf > host + len)
		abort();
	sl = strlen(suf);
	if (sl && suf != host && suf[-1] != '.')
		abort(); /* not at a label boundary */
	if (!reg)
		return;
	if (reg >= suf && sl)
		abort();
	if (reg != host && reg[-1] != '.')
		abort();
	/* one label more than the suffix */
	for (const char *c = reg; c < suf - (sl ? 1 : 0); c++)
		if (*c == '.')
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t listlen = nul ? (size_t)(nul - data) : size;
	struct psl *p = psl_parse((const char *)data, listlen);
	char host[300];

	if (!p)
		return 0;
	if (psl_rules(p) > PSL_MAX_RULES)
		abort();
	if (nul) {
		const char *s = (const char *)nul + 1, *end = (const char *)data + size;

		while (s < end) {
			const char *nl = memchr(s, '\n', (size_t)(end - s));
			size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);

			if (n < sizeof(host) && !memchr(s, 0, n)) {
				memcpy(host, s, n);
				host[n] = 0;
				check(p, host);
			}
			s += n + 1;
		}
	}
	/* the list's own lines as names, too */
	for (size_t i = 0; i < listlen;) {
		const uint8_t *nl = memchr(data + i, '\n', listlen - i);
		size_t n = nl ? (size_t)(nl - (data + i)) : listlen - i;

		if (n < sizeof(host)) {
			memcpy(host, data + i, n);
			host[n] = 0;
			check(p, host);
		}
		i += n + 1;
	}
	psl_free(p);
	return 0;
}
