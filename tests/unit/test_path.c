// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/parse/path.c (http_path_normalize): the normal
 * form path rules judge and the proxy sends upstream, one cmocka test per
 * row: escapes, dot segments, merged slashes, the query kept, and each
 * refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "table.h"

#include "parse/path.h"

struct norm_case {
	const char *name;
	const char *target;
	enum parse_result want;
	const char *out; /* PARSE_DONE: the normal form */
	size_t pathlen;	 /* ... and its path's length */
};

static const struct norm_case norm_cases[] = {
	{"root", "/", PARSE_DONE, "/", 1},
	{"plain", "/a/b", PARSE_DONE, "/a/b", 4},
	{"trailing", "/a/b/", PARSE_DONE, "/a/b/", 5},
	{"query-kept", "/a/./b?x=/../y&%2e", PARSE_DONE, "/a/b?x=/../y&%2e", 4},
	{"query-only", "/?q", PARSE_DONE, "/?q", 1},
	{"options-star", "*", PARSE_DONE, "*", 1},
	{"dot", "/a/./b", PARSE_DONE, "/a/b", 4},
	{"dot-end", "/a/.", PARSE_DONE, "/a/", 3},
	{"dotdot", "/a/b/../c", PARSE_DONE, "/a/c", 4},
	{"dotdot-end", "/a/b/..", PARSE_DONE, "/a/", 3},
	{"dotdot-root", "/../../a", PARSE_DONE, "/a", 2},
	{"dotdot-only", "/..", PARSE_DONE, "/", 1},
	{"slashes", "//a///b//", PARSE_DONE, "/a/b/", 5},
	{"dots-name", "/a/.../b..c/.d", PARSE_DONE, "/a/.../b..c/.d", 14},
	{"escape-unreserved", "/%41%7e%2D", PARSE_DONE, "/A~-", 4},
	{"escape-upper", "/a%2fb%3a", PARSE_DONE, "/a%2Fb%3A", 9},
	{"escaped-dots", "/a/%2e%2E/b", PARSE_DONE, "/b", 2},
	{"escaped-dot", "/a/%2E/b", PARSE_DONE, "/a/b", 4},
	{"escaped-slash-kept", "/group%2Fproject/x", PARSE_DONE, "/group%2Fproject/x", 18},
	{"params-kept", "/a;x=1/b", PARSE_DONE, "/a;x=1/b", 8},
	{"relative", "a/b", PARSE_ERROR, NULL, 0},
	{"empty", "", PARSE_ERROR, NULL, 0},
	{"bad-escape", "/a%zz", PARSE_ERROR, NULL, 0},
	{"short-escape", "/a%2", PARSE_ERROR, NULL, 0},
	{"escape-into-query", "/a%2?x", PARSE_ERROR, NULL, 0},
	{"escaped-nul", "/a%00b", PARSE_ERROR, NULL, 0},
	{"backslash", "/a\\b", PARSE_ERROR, NULL, 0},
	{"escaped-backslash", "/a%5cb", PARSE_ERROR, NULL, 0},
	{"escaped-slash-dotdot", "/a/x%2F..%2Fadmin", PARSE_ERROR, NULL, 0},
	{"escaped-slash-dot-first", "/..%2Fadmin", PARSE_ERROR, NULL, 0},
	{"escaped-slash-dot-last", "/a%2F.", PARSE_ERROR, NULL, 0},
	{"escaped-slash-dots-name", "/a%2F...%2Fb", PARSE_DONE, "/a%2F...%2Fb", 12},
	{"space", "/a b", PARSE_ERROR, NULL, 0},
	{"non-ascii", "/\xc3\xa9", PARSE_ERROR, NULL, 0},
};

static void
run_norm_case(void **state)
{
	const struct norm_case *c = *state;
	char out[64];
	size_t pathlen = 0;

	assert_int_equal(http_path_normalize(c->target, out, sizeof(out), &pathlen), c->want);
	if (c->want != PARSE_DONE)
		return;
	assert_string_equal(out, c->out);
	assert_int_equal(pathlen, c->pathlen);
	/* a normal form is its own */
	{
		char again[64];
		size_t n2 = 0;

		assert_int_equal(http_path_normalize(out, again, sizeof(again), &n2), PARSE_DONE);
		assert_string_equal(again, out);
	}
}

/* out too small for the normal form: PARSE_TOO_LONG, never a cut path. */
static void
test_too_long(void **state)
{
	char out[6];
	size_t n;

	(void)state;
	assert_int_equal(http_path_normalize("/abcdef", out, sizeof(out), &n), PARSE_TOO_LONG);
	assert_int_equal(http_path_normalize("/ab?cdef", out, sizeof(out), &n), PARSE_TOO_LONG);
	assert_int_equal(http_path_normalize("/ab?c", out, sizeof(out), &n), PARSE_DONE);
	assert_string_equal(out, "/ab?c");
}

int
main(void)
{
	const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_too_long),
	};
	int failed = 0;

	failed += RUN_TABLE("normalize", norm_cases, run_norm_case);
	failed += cmocka_run_group_tests_name("misc", misc, NULL, NULL);
	return failed ? 1 : 0;
}
