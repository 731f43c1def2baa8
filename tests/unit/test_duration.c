/* Unit tests for userspace/duration.c: the durations of --head-timeout,
 * --connect-timeout, --response-timeout and --idle-timeout, table-driven,
 * one cmocka test per row; then formatting, and parse(format(x)) == x. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "duration.h"

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))
#define DAY	  86400L

struct parse_case {
	const char *name;
	const char *in;
	long max;
	int want; /* 0, -EINVAL or -ERANGE */
	long secs;
};

static const struct parse_case parse_cases[] = {
	{"bare-seconds", "30", DAY, 0, 30},
	{"bare-one", "1", DAY, 0, 1},
	{"seconds", "30s", DAY, 0, 30},
	{"minutes", "2m", DAY, 0, 120},
	{"hours", "1h", DAY, 0, 3600},
	{"day", "1d", DAY, 0, DAY},
	{"combined", "1m30s", DAY, 0, 90},
	{"combined-all", "1h2m3s", DAY, 0, 3723},
	{"combined-skip", "1h5s", DAY, 0, 3605},
	{"leading-zeros", "007s", DAY, 0, 7},
	{"minutes-over-60", "90m", DAY, 0, 5400},
	{"at-max", "86400", DAY, 0, DAY},
	{"at-max-units", "23h59m60s", DAY, 0, DAY},
	{"over-max-bare", "86401", DAY, -ERANGE, 0},
	{"over-max-units", "1d1s", DAY, -ERANGE, 0},
	{"over-max-small", "11s", 10, -ERANGE, 0},
	{"huge", "99999999999999999999999", DAY, -ERANGE, 0},
	{"huge-unit", "9999999999999h", DAY, -ERANGE, 0},
	{"zero", "0", DAY, -ERANGE, 0},
	{"zero-units", "0m0s", DAY, -ERANGE, 0},
	{"empty", "", DAY, -EINVAL, 0},
	{"unit-only", "s", DAY, -EINVAL, 0},
	{"milliseconds", "500ms", DAY, -EINVAL, 0},
	{"fraction", "1.5s", DAY, -EINVAL, 0},
	{"negative", "-5", DAY, -EINVAL, 0},
	{"plus", "+5", DAY, -EINVAL, 0},
	{"space", "5 s", DAY, -EINVAL, 0},
	{"leading-space", " 5", DAY, -EINVAL, 0},
	{"trailing-space", "5s ", DAY, -EINVAL, 0},
	{"upper-case", "5S", DAY, -EINVAL, 0},
	{"unknown-unit", "5x", DAY, -EINVAL, 0},
	{"trailing-number", "1m30", DAY, -EINVAL, 0},
	{"repeated-unit", "1m1m", DAY, -EINVAL, 0},
	{"out-of-order", "30s1m", DAY, -EINVAL, 0},
	{"hex", "0x10", DAY, -EINVAL, 0},
};

static void
run_parse(void **state)
{
	const struct parse_case *c = *state;
	long out = -42;

	assert_int_equal(duration_parse(c->in, c->max, &out), c->want);
	if (c->want)
		assert_int_equal(out, -42); /* untouched on error */
	else
		assert_int_equal(out, c->secs);
}

static void
test_null(void **state)
{
	long out = -42;

	(void)state;
	assert_int_equal(duration_parse(NULL, DAY, &out), -EINVAL);
	assert_int_equal(out, -42);
}

struct format_case {
	const char *name;
	long secs;
	const char *want;
};

static const struct format_case format_cases[] = {
	{"fmt-seconds", 10, "10s"}, {"fmt-minutes", 600, "10m"}, {"fmt-mixed", 90, "1m30s"},
	{"fmt-hour", 3600, "1h"},   {"fmt-day", DAY, "1d"},	 {"fmt-all", 90061, "1d1h1m1s"},
	{"fmt-zero", 0, "0s"},	    {"fmt-skip", 3605, "1h5s"},
};

static void
run_format(void **state)
{
	const struct format_case *c = *state;
	char buf[32];
	long back = 0;

	duration_format(c->secs, buf, sizeof(buf));
	assert_string_equal(buf, c->want);
	if (c->secs > 0) {
		assert_int_equal(duration_parse(buf, 10 * DAY, &back), 0);
		assert_int_equal(back, c->secs);
	}
}

static void
test_format_truncates(void **state)
{
	char buf[4];

	(void)state;
	duration_format(90061, buf, sizeof(buf));
	assert_int_equal(strlen(buf), 3); /* cut, terminated */
	duration_format(90061, buf, 0);	  /* nothing written */
}

static void
test_roundtrip(void **state)
{
	char buf[32];
	long back;

	(void)state;
	for (long s = 1; s <= 2 * DAY; s += s < 4000 ? 1 : 997) {
		duration_format(s, buf, sizeof(buf));
		back = 0;
		assert_int_equal(duration_parse(buf, 2 * DAY, &back), 0);
		assert_int_equal(back, s);
	}
}

static int
run_table(const char *group, const void *rows, size_t row_size, size_t n, void (*fn)(void **state))
{
	struct CMUnitTest *tests = calloc(n, sizeof(*tests));
	int failed;

	if (!tests)
		return 1;
	for (size_t i = 0; i < n; i++) {
		const void *row = (const char *)rows + i * row_size;

		/* Every table row starts with its name. */
		tests[i].name = *(const char *const *)row;
		tests[i].test_func = fn;
		tests[i].initial_state = (void *)row;
	}
	failed = _cmocka_run_group_tests(group, tests, n, NULL, NULL);
	free(tests);
	return failed;
}

int
main(void)
{
	const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_null),
		cmocka_unit_test(test_format_truncates),
		cmocka_unit_test(test_roundtrip),
	};
	int failed = 0;

	failed += run_table("duration_parse", parse_cases, sizeof(parse_cases[0]),
			    NCASES(parse_cases), run_parse);
	failed += run_table("duration_format", format_cases, sizeof(format_cases[0]),
			    NCASES(format_cases), run_format);
	failed += cmocka_run_group_tests_name("duration_misc", misc, NULL, NULL);
	return failed ? 1 : 0;
}
