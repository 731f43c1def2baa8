// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/lib/duration.c: the forms timeout(1) takes (plain
 * seconds, decimals, s/m/h/d suffixes, 0) and pairs largest unit first
 * ("1h30m"), exact values (no floating point: "0.1" is 100,000,000 ns),
 * rounding up below a nanosecond, the upper bound, what is refused (signs,
 * spaces, exponents, hex, units repeated or out of order, unknown
 * suffixes, empty), duration_parse_secs() for the timers that count whole
 * seconds, and duration_format() reading back. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "table.h"

#include "lib/duration.h"

#define S 1000000000ull

struct dcase {
	const char *in;
	int err;
	uint64_t ns;
};

static const struct dcase cases[] = {
	{"0", 0, 0},
	{"0s", 0, 0},
	{"0.0", 0, 0},
	{"1", 0, S},
	{"1s", 0, S},
	{"30", 0, 30 * S},
	{"1.5", 0, 1500000000ull},
	{"1.5s", 0, 1500000000ull},
	{".5", 0, S / 2},
	{"5.", 0, 5 * S},
	{"0.1", 0, 100000000ull},
	{"0.001", 0, 1000000ull},
	{"0.000000001", 0, 1},
	{"0.0000000001", 0, 1},		    /* below 1 ns: up, never to 0 */
	{"0.0000000000000000000001", 0, 1}, /* past the exact digits: still up */
	{"1.0000000001", 0, S + 1},
	{"2m", 0, 120 * S},
	{"1.5m", 0, 90 * S},
	{"1h", 0, 3600 * S},
	{".5h", 0, 1800 * S},
	{"1d", 0, 86400 * S},
	{"0.5d", 0, 43200 * S},
	{"0.00001d", 0, 864000000ull},
	{"007", 0, 7 * S},
	{"10000d", 0, DURATION_MAX_NS},
	{"864000000", 0, DURATION_MAX_NS},
	{"10000.000000001d", -ERANGE, 0},
	{"10001d", -ERANGE, 0},
	{"864000001", -ERANGE, 0},
	{"99999999999999999999999999999", -ERANGE, 0},
	{"", -EINVAL, 0},
	{".", -EINVAL, 0},
	{"s", -EINVAL, 0},
	{".s", -EINVAL, 0},
	{"-1", -EINVAL, 0},
	{"+1", -EINVAL, 0},
	{" 1", -EINVAL, 0},
	{"1 ", -EINVAL, 0},
	{"1 s", -EINVAL, 0},
	{"1S", -EINVAL, 0},
	{"1ms", -EINVAL, 0},
	{"1sm", -EINVAL, 0},
	{"1w", -EINVAL, 0},
	{"1e3", -EINVAL, 0},
	{"0x10", -EINVAL, 0},
	{"inf", -EINVAL, 0},
	{"nan", -EINVAL, 0},
	{"1m30s", 0, 90 * S},
	{"1h2m3s", 0, 3723 * S},
	{"1h5s", 0, 3605 * S},
	{"1d0.5h", 0, (86400 + 1800) * S},
	{"1m0.5s", 0, 60 * S + S / 2},
	{"9999d24h", 0, DURATION_MAX_NS},
	{"9999d24h1s", -ERANGE, 0},
	{"1m30", -EINVAL, 0},
	{"1m1m", -EINVAL, 0},
	{"30s1m", -EINVAL, 0},
	{"1h1", -EINVAL, 0},
	{"1hm", -EINVAL, 0},
	{"1.5.5", -EINVAL, 0},
	{"1,5", -EINVAL, 0},
	{"1:30", -EINVAL, 0},
};

static void
test_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES(cases); i++) {
		char err[160] = "untouched";
		uint64_t ns = 12345;
		int r = duration_parse(cases[i].in, &ns, err, sizeof(err));

		if (r != cases[i].err || (!r && ns != cases[i].ns))
			fail_msg("\"%s\": got %d, %llu ns (%s); want %d, %llu ns", cases[i].in, r,
				 (unsigned long long)ns, err, cases[i].err,
				 (unsigned long long)cases[i].ns);
		if (r) {
			/* the message names the input and says what is expected */
			if (!strstr(err, cases[i].in) ||
			    !strstr(err, r == -ERANGE ? "longer than 10000 days"
						      : "expected a number of seconds"))
				fail_msg("\"%s\": message \"%s\"", cases[i].in, err);
			assert_int_equal(ns, 12345); /* untouched on error */
		} else {
			assert_string_equal(err, "");
		}
	}
}

static void
test_null(void **state)
{
	uint64_t ns = 0;
	char err[160];

	(void)state;
	assert_int_equal(duration_parse(NULL, &ns, err, sizeof(err)), -EINVAL);
	assert_int_equal(duration_parse("1", &ns, NULL, 0), 0);
	assert_int_equal(ns, S);
	assert_int_equal(duration_parse("x", &ns, NULL, 0), -EINVAL);
}

static void
test_format(void **state)
{
	static const struct {
		uint64_t ns;
		const char *out;
	} f[] = {
		{0, "0s"},
		{1, "0.000000001s"},
		{S / 4, "0.25s"},
		{S, "1s"},
		{90 * S, "90s"},
		{1500000000ull, "1.5s"},
		{120 * S, "2m"},
		{3600 * S, "1h"},
		{5400 * S, "90m"},
		{86400 * S, "1d"},
		{DURATION_MAX_NS, "10000d"},
	};
	char buf[32];
	uint64_t back;

	(void)state;
	for (size_t i = 0; i < NCASES(f); i++) {
		duration_format(f[i].ns, buf, sizeof(buf));
		assert_string_equal(buf, f[i].out);
		assert_int_equal(duration_parse(buf, &back, NULL, 0), 0);
		assert_int_equal(back, f[i].ns);
	}
	/* every parsed case reads back from its formatted text */
	for (size_t i = 0; i < NCASES(cases); i++) {
		uint64_t ns;

		if (duration_parse(cases[i].in, &ns, NULL, 0))
			continue;
		duration_format(ns, buf, sizeof(buf));
		assert_int_equal(duration_parse(buf, &back, NULL, 0), 0);
		assert_int_equal(back, ns);
	}
}

static void
test_secs(void **state)
{
	static const struct {
		const char *in;
		long min, max;
		int err;
		long secs;
		const char *msg;
	} c[] = {
		{"30", 1, 86400, 0, 30, NULL},
		{"1m30s", 1, 86400, 0, 90, NULL},
		{"1.5m", 1, 86400, 0, 90, NULL},
		{"1d", 1, 86400, 0, 86400, NULL},
		{"1d1s", 1, 86400, -ERANGE, 0, "expected a duration from 1s to 1d"},
		{"0", 1, 86400, -ERANGE, 0, "expected a duration from 1s to 1d"},
		{"11", 1, 10, -ERANGE, 0, "from 1s to 10s"},
		{"1.5s", 1, 86400, -EINVAL, 0, "whole seconds only"},
		{"0.5", 1, 86400, -EINVAL, 0, "whole seconds only"},
		{"10001d", 1, 86400, -ERANGE, 0, "expected a duration from 1s to 1d"},
		{"x", 1, 86400, -EINVAL, 0, "expected a number of seconds"},
	};
	char err[160];

	(void)state;
	for (size_t i = 0; i < NCASES(c); i++) {
		long v = -42;
		int r = duration_parse_secs(c[i].in, c[i].min, c[i].max, &v, err, sizeof(err));

		if (r != c[i].err || (!r && v != c[i].secs) || (r && v != -42))
			fail_msg("\"%s\": got %d, %ld (%s)", c[i].in, r, v, r ? err : "");
		if (r && (!strstr(err, c[i].msg) || !strstr(err, c[i].in)))
			fail_msg("\"%s\": message \"%s\"", c[i].in, err);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_null),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_secs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
