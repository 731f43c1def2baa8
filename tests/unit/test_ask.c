// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the pure parts of ask.c: reading an answer line byte by
 * byte (what counts as yes, what a terminal's reply to a query can say,
 * what is echoed) and showing a question whose text came from the confined
 * command. The terminal itself is tested end to end (tests/e2e/audit.sh). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "cli/ask.h"

struct line_case {
	const char *desc;
	const char *typed; /* fed byte by byte up to and including the first \r, \n, ^C or ^D */
	enum ask_feed end; /* how feeding ended */
	enum ask_answer answer;
};

static const struct line_case line_cases[] = {
	{"y", "y\r", ASK_F_DONE, ASK_ONCE},
	{"Y with LF", "Y\n", ASK_F_DONE, ASK_ONCE},
	{"yes", "yes\r", ASK_F_DONE, ASK_ONCE},
	{"YeS, blanks around", "  YeS \r", ASK_F_DONE, ASK_ONCE},
	{"a", "a\r", ASK_F_DONE, ASK_ALWAYS},
	{"always", "Always\r", ASK_F_DONE, ASK_ALWAYS},
	{"empty: the default is no", "\r", ASK_F_DONE, ASK_NO},
	{"n", "n\r", ASK_F_DONE, ASK_NO},
	{"no", "no\r", ASK_F_DONE, ASK_NO},
	{"a word that starts with y", "yeah\r", ASK_F_DONE, ASK_NO},
	{"a word that starts with a", "abort\r", ASK_F_DONE, ASK_NO},
	{"ya", "ya\r", ASK_F_DONE, ASK_NO},
	{"y a", "y a\r", ASK_F_DONE, ASK_NO},
	{"backspace fixes a typo", "x\x7fy\r", ASK_F_DONE, ASK_ONCE},
	{"^H fixes a typo", "n\by\r", ASK_F_DONE, ASK_ONCE},
	{"backspace on an empty line",
	 "\x7f\x7f"
	 "a\r",
	 ASK_F_DONE, ASK_ALWAYS},
	{"backspace away the answer", "y\x7f\r", ASK_F_DONE, ASK_NO},
	/* a terminal's reply to a query CMD printed starts with ESC */
	{"device attributes reply, then y", "\033[?64;1;2cy\r", ASK_F_DONE, ASK_NO},
	{"title report with a", "\033]la\033\\\r", ASK_F_DONE, ASK_NO},
	{"8-bit CSI",
	 "\x9b"
	 "y\r",
	 ASK_F_DONE, ASK_NO},
	{"an arrow key, then y", "\033[Ay\r", ASK_F_DONE, ASK_NO},
	{"a tab", "\ty\r", ASK_F_DONE, ASK_NO},
	{"taint survives backspace", "\033\x7fy\r", ASK_F_DONE, ASK_NO},
	{"UTF-8", "y\xc3\xa9\r", ASK_F_DONE, ASK_NO},
	{"NUL", "y\0", ASK_F_MORE, ASK_NO}, /* strlen stops at it: fed nothing after y */
	{"^C", "y\x03", ASK_F_CANCEL, ASK_NO},
	{"^D", "a\x04", ASK_F_CANCEL, ASK_NO},
	{"too long to be an answer",
	 "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\r", ASK_F_DONE,
	 ASK_NO},
};

static void
test_line_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(line_cases) / sizeof(line_cases[0]); i++) {
		const struct line_case *c = &line_cases[i];
		struct ask_line l;
		enum ask_feed f = ASK_F_MORE;
		char echo[8];

		memset(&l, 0, sizeof(l));
		for (const char *p = c->typed; *p && f == ASK_F_MORE; p++)
			f = ask_line_feed(&l, (unsigned char)*p, echo);
		if (f != c->end)
			fail_msg("%s: feeding ended %d, want %d", c->desc, f, c->end);
		if (f == ASK_F_DONE && ask_line_answer(&l) != c->answer)
			fail_msg("%s: answer %d, want %d", c->desc, ask_line_answer(&l), c->answer);
	}
}

/* Raw mode echoes nothing: the asker does, and never an escape byte. */
static void
test_line_echo(void **state)
{
	struct ask_line l;
	char echo[8];

	(void)state;
	memset(&l, 0, sizeof(l));
	assert_int_equal(ask_line_feed(&l, 'y', echo), ASK_F_MORE);
	assert_string_equal(echo, "y");
	assert_int_equal(ask_line_feed(&l, 0x7f, echo), ASK_F_MORE);
	assert_string_equal(echo, "\b \b");
	assert_int_equal(ask_line_feed(&l, 0x7f, echo), ASK_F_MORE);
	assert_string_equal(echo, ""); /* nothing left to erase */
	assert_int_equal(ask_line_feed(&l, 033, echo), ASK_F_MORE);
	assert_string_equal(echo, "");
	assert_int_equal(ask_line_feed(&l, '\r', echo), ASK_F_DONE);
	assert_string_equal(echo, "");
	assert_true(l.tainted);
	/* no echo buffer: cooked mode, the terminal echoes */
	memset(&l, 0, sizeof(l));
	assert_int_equal(ask_line_feed(&l, 'a', NULL), ASK_F_MORE);
	assert_int_equal(ask_line_feed(&l, '\n', NULL), ASK_F_DONE);
	assert_int_equal(ask_line_answer(&l), ASK_ALWAYS);
}

/* Host names and process names come from CMD: a question shows none of
 * their control bytes (a "\r\033[2K" would overwrite the real question). */
static void
test_sanitize(void **state)
{
	char out[64];

	(void)state;
	ask_sanitize(out, sizeof(out), "allow evil.test:443 for curl[7]");
	assert_string_equal(out, "allow evil.test:443 for curl[7]");
	ask_sanitize(out, sizeof(out),
		     "allow \r\033[2Kpypi.org for \x9b"
		     "1m[7]\x7f\xc3\xa9");
	assert_string_equal(out, "allow ??[2Kpypi.org for ?1m[7]???");
	ask_sanitize(out, 6, "abcdefgh");
	assert_string_equal(out, "abcde");
	ask_sanitize(out, 1, "abc");
	assert_string_equal(out, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_table),
		cmocka_unit_test(test_line_echo),
		cmocka_unit_test(test_sanitize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
