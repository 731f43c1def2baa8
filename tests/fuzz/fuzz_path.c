// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for userspace/parse/path.c (http_path_normalize) and
 * the path rules of userspace/policy/ (policy_path_check,
 * policy_path_match). The input is a request target, optionally a
 * pattern after a NUL. A normal form starts with '/' (or is "*"), has no
 * "//", no "." or ".." segment, no backslash, is no longer than the
 * target, and is its own normal form; its path ends where its query
 * starts. A pattern policy_path_check() takes matches itself, and matching
 * it against the normal form never reads out of bounds. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/path.h"
#include "policy/policy.h"

#define MAX 4096

static void
check_form(const char *out, size_t pathlen, size_t inlen)
{
	size_t n = strlen(out);

	if (n > inlen || pathlen > n || (out[pathlen] && out[pathlen] != '?'))
		abort();
	if (!strcmp(out, "*"))
		return;
	if (out[0] != '/' || memchr(out, '\\', pathlen) || memmem(out, pathlen, "//", 2))
		abort();
	for (size_t i = 0; i < pathlen; i++) {
		size_t e = i + 1;

		if (out[i] != '/')
			continue;
		while (e < pathlen && out[e] != '/')
			e++;
		if ((e - i == 2 && out[i + 1] == '.') ||
		    (e - i == 3 && out[i + 1] == '.' && out[i + 2] == '.'))
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char target[MAX + 1], out[MAX + 1], again[MAX + 1], path[MAX + 1];
	const char *pattern = NULL;
	size_t tlen, pathlen = 0, n2 = 0;
	enum parse_result r;

	if (size > MAX)
		return 0;
	memcpy(target, data, size);
	target[size] = 0;
	tlen = strlen(target);
	if (tlen < size)
		pattern = target + tlen + 1;
	r = http_path_normalize(target, out, sizeof(out), &pathlen);
	if (r > PARSE_TOO_LONG)
		abort();
	if (r == PARSE_DONE) {
		check_form(out, pathlen, tlen);
		if (http_path_normalize(out, again, sizeof(again), &n2) != PARSE_DONE ||
		    strcmp(out, again) || n2 != pathlen)
			abort();
	}
	if (pattern && policy_path_check(pattern, NULL, 0) == 0) {
		if (!policy_path_match(pattern, pattern) && !strchr(pattern, '*'))
			abort();
		if (r == PARSE_DONE) {
			memcpy(path, out, pathlen);
			path[pathlen] = 0;
			(void)policy_path_match(pattern, path);
		}
	}
	return 0;
}
