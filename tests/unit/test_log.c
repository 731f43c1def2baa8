// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/lib/log.c: a message's control characters
 * (what others wrote: a user's option to the service, a path, a name) are
 * written as '?' (C1 as UTF-8 spells it too; other UTF-8 kept), but for
 * the line breaks and tabs of a message of several lines; the program's
 * prefix and the errno's text are kept. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/log.h"

/* What fn's log line wrote to stderr, in out. */
static void
captured(void (*fn)(void), char *out, size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	assert_non_null(tmp);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fileno(tmp), 2), 2);
	fn();
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, len - 1, tmp);
	out[n] = 0;
	fclose(tmp);
}

static void
escape(void)
{
	log_warnx("--allow-unix %s: refused", "/run/\033]0;t\007x\177y\302\233z\303\251");
}

static void
lines(void)
{
	log_warnx("one\n\ttwo");
}

static void
with_errno(void)
{
	errno = ENOENT;
	log_warn("open \033[31m");
}

static void
test_sanitized(void **state)
{
	char out[256];

	(void)state;
	log_init("egressctl");
	captured(escape, out, sizeof(out));
	assert_string_equal(out, "egressctl: --allow-unix /run/?]0;t?x?y??z\303\251: refused\n");
	captured(lines, out, sizeof(out));
	assert_string_equal(out, "egressctl: one\n\ttwo\n");
	captured(with_errno, out, sizeof(out));
	assert_string_equal(out, "egressctl: open ?[31m: No such file or directory\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sanitized),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
