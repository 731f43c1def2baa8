// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/lib/jsonx.c, the JSON every document of
 * egressctl goes through: whole numbers written as integers (a count
 * beyond 2^53 exact, not "1.8e+19"), fractions as reals; strings that are
 * not UTF-8 still written (the bad bytes as U+FFFD), not dropped; keys in
 * the order they were set, a key set again in its place; one-line text
 * without spaces, indented text; and what a parse error says: the place
 * of a syntax error, the path and place of a key given twice, the nesting
 * limit, the end of the value when data follows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "table.h"

#include "lib/jsonx.h"

/* j as one line, freed: the text compared with want */
static void
line_is(json_t *j, const char *want)
{
	char *t = jsonx_line(j);

	assert_non_null(t);
	assert_string_equal(t, want);
	free(t);
	json_decref(j);
}

static void
test_numbers(void **state)
{
	(void)state;
	line_is(jsonx_number(443), "443");
	line_is(jsonx_number(-2), "-2");
	line_is(jsonx_number(0), "0");
	line_is(jsonx_number(1.5), "1.5");
	line_is(jsonx_number(0.1), "0.1");
	line_is(jsonx_number(4294967296.0 * 4096), "17592186044416");
	line_is(json_integer(9007199254740993ll), "9007199254740993");
}

static void
test_strings(void **state)
{
	(void)state;
	line_is(jsonx_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
	line_is(jsonx_string("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
	/* a Latin-1 byte, a cut sequence, an overlong '/' and a surrogate */
	line_is(jsonx_string("a\xe9z"), "\"a\xef\xbf\xbdz\"");
	line_is(jsonx_string("a\xc3"), "\"a\xef\xbf\xbd\"");
	line_is(jsonx_string("\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\"");
	line_is(jsonx_string("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	assert_null(jsonx_string(NULL));
}

static void
test_objects(void **state)
{
	json_t *o = json_object(), *a;
	char *t;

	(void)state;
	jsonx_set_str(o, "z", "last");
	jsonx_set_int(o, "a", 1);
	jsonx_set_bool(o, "ok", true);
	jsonx_set_null(o, "none");
	a = jsonx_add_array(o, "list");
	json_array_append_new(a, jsonx_string("x"));
	jsonx_add_object(o, "empty");
	jsonx_set_int(o, "a", 2); /* set again: keeps its place */
	assert_string_equal(jsonx_get_str(o, "z"), "last");
	assert_null(jsonx_get_str(o, "a"));
	assert_true(jsonx_get_true(o, "ok"));
	assert_false(jsonx_get_true(o, "z"));
	assert_true(jsonx_get_num(o, "a") == 2.0);
	assert_true(jsonx_get_num(o, "z") == 0.0);
	t = jsonx_pretty(o);
	assert_string_equal(
		t, "{\n  \"z\": \"last\",\n  \"a\": 2,\n  \"ok\": true,\n  \"none\": null,\n"
		   "  \"list\": [\n    \"x\"\n  ],\n  \"empty\": {}\n}");
	free(t);
	line_is(o,
		"{\"z\":\"last\",\"a\":2,\"ok\":true,\"none\":null,\"list\":[\"x\"],\"empty\":{}}");
	/* _ascii: past ASCII as \uXXXX (a C1 control, U+009B, and é), ESC too */
	{
		json_t *c = json_object();

		jsonx_set_str(c, "cmd",
			      "a\xc2\x9b"
			      "31m\xc3\xa9\x1b");
		t = jsonx_pretty_ascii(c);
		assert_string_equal(t, "{\n  \"cmd\": \"a\\u009B31m\\u00E9\\u001B\"\n}");
		free(t);
		json_decref(c);
	}
	/* nothing happens on no object */
	assert_int_equal(jsonx_set_str(NULL, "k", "v"), -1);
	assert_null(jsonx_add_array(NULL, "k"));
}

struct parse_case {
	const char *name;
	const char *in;
	const char *err; /* the message; NULL: parses */
	size_t end;	 /* where the value ends, when it parses */
};

static const struct parse_case parse_cases[] = {
	{"object", "{\"a\": [1, 2]}", NULL, 13},
	{"data-after", "{\"a\": 1} x", NULL, 8},
	{"scalar", "\"s\"", NULL, 3},
	{"trailing-comma", "[1,]",
	 "JSON syntax error at line 1, column 4 (byte offset 3): "
	 "unexpected token near ']'"},
	{"cut-short", "{\"a\":",
	 "JSON syntax error at line 1, column 6 (byte offset 5): "
	 "unexpected token near end of file"},
	{"token", "{\n \"a\": nul}",
	 "JSON syntax error at line 2, column 7 (byte offset 8): "
	 "invalid token near 'nul'"},
	{"dup-top", "{\"a\": 1, \"a\": 2}",
	 "duplicate key \"a\" at line 1, column 10 (byte offset 9)"},
	{"dup-path", "{\"t\": [{}, {\"x\": {\"k\": 1, \"k\": 2}}]}",
	 "t[1].x: duplicate key \"k\" at line 1, column 27 (byte offset 26)"},
	{"dup-after-strings", "{\"a,[{\": [\"]\", \"\\\"{\"], \"b\": {\"k\\\"\": 1, \"k\\\"\": 2}}",
	 "b: duplicate key \"k\\\"\" at line 1, column 40 (byte offset 39)"},
	{"not-utf8", "[\"ok\", \"\xff\"]",
	 "JSON syntax error at line 1, column 9 (byte offset 8): unable to decode byte 0xff near "
	 "'\"'"},
	{"deep", "[[[[[1]]]]]",
	 "JSON nesting too deep (limit 4) at line 1, column 5 (byte offset 4)"},
	{"deep-after-error", "[x[[[[1]]]]]",
	 "JSON syntax error at line 1, column 2 (byte offset 1): "
	 "invalid token near 'x'"},
};

static void
run_parse(void **state)
{
	const struct parse_case *c = *state;
	char err[300] = "";
	size_t end = 0;
	json_t *j = jsonx_parse(c->in, strlen(c->in), 4, &end, err, sizeof(err));

	if (!c->err) {
		if (!j)
			fail_msg("%s: %s", c->name, err);
		assert_int_equal(end, c->end);
		json_decref(j);
		return;
	}
	assert_null(j);
	if (strcmp(err, c->err))
		fail_msg("%s: \"%s\", want \"%s\"", c->name, err, c->err);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_objects),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	failed += RUN_TABLE("parse", parse_cases, run_parse);
	return failed ? 1 : 0;
}
