// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for userspace/policy/secret.c: what finds a secret's
 * placeholder in untrusted bytes and swaps it in a request head. The
 * input's first byte picks a split point; "@0" and "@1" in the rest stand
 * for the two secrets' placeholders (random per process). The scan fed in
 * two pieces finds what it finds in one; the swap for a.test leaves no
 * placeholder of a.test's secret after the request line, its length is
 * what it says, and only a.test's secret is swapped in. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/secret.h"

static struct secrets *S;

static void
setup(void)
{
	struct policy *p = policy_new();
	char err[200];

	if (!p || policy_add_secret_arg(p, "A=env:A@a.test", err, sizeof(err)) ||
	    policy_add_secret_arg(p, "B=env:B@**.b.test", err, sizeof(err)))
		abort();
	S = secrets_new(p);
	if (!S || secrets_set_value(S, 0, "value-of-a", 10) ||
	    secrets_set_value(S, 1, "value-of-b-0123456789abcdef0123456789abcdef", 43))
		abort();
	policy_free(p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct secrets_scan st = {0};
	size_t n = 0, split, len, phl = strlen(secrets_placeholder(S ? S : (setup(), S), 0));
	char *buf, *out;
	const char *eol;
	uint64_t used = 0;
	int one, two;

	if (!size || size > 4096)
		return 0;
	buf = malloc(size * 80 + 1);
	if (!buf)
		return 0;
	for (size_t i = 1; i < size; i++) {
		if (data[i] == '@' && i + 1 < size && (data[i + 1] == '0' || data[i + 1] == '1')) {
			const char *ph = secrets_placeholder(S, data[i + 1] - '0');

			memcpy(buf + n, ph, strlen(ph));
			n += strlen(ph);
			i++;
		} else {
			buf[n++] = (char)data[i];
		}
	}
	buf[n] = 0;
	split = n ? data[0] % (n + 1) : 0;
	one = secrets_find(S, NULL, buf, n);
	two = secrets_scan_feed(S, &st, NULL, buf, split);
	if (two < 0)
		two = secrets_scan_feed(S, &st, NULL, buf + split, n - split);
	if (one != two || one < -1 || one > 1)
		abort();
	if (secrets_find(S, "a.test", buf, n) == 0)
		abort(); /* a.test's own secret is never a leak there */
	len = n;
	out = secrets_substitute(S, "a.test", buf, &len, &used);
	if (!out)
		return 0;
	if (strlen(out) > len || used & ~1ull)
		abort();
	eol = memmem(out, len, "\r\n", 2);
	if (eol && memmem(eol, len - (size_t)(eol - out), secrets_placeholder(S, 0), phl))
		abort();
	explicit_bzero(out, len);
	free(out);
	return 0;
}
