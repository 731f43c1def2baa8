// SPDX-License-Identifier: Apache-2.0
/* Table-driven unit tests: one cmocka test per row of a case table, named
 * by the row and given the row as its state.
 *
 *	struct foo_case { const char *name; ... };
 *	static const struct foo_case foo_cases[] = { {"empty", ...}, ... };
 *	static void run_foo(void **state) { const struct foo_case *c = *state; ... }
 *	failed += RUN_TABLE("foo", foo_cases, run_foo);
 *
 * Include after <cmocka.h>. */
#ifndef TABLE_H
#define TABLE_H

#include <stddef.h>
#include <stdlib.h>

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

/* The rows of `rows` (`n` of them, `row_size` bytes apart, each starting with
 * its name) through `fn` as the cmocka group `group`; what
 * _cmocka_run_group_tests returns, the number of tests failed. */
static inline int
table_run(const char *group, const void *rows, size_t row_size, size_t n, CMUnitTestFunction fn)
{
	struct CMUnitTest *tests = calloc(n, sizeof(*tests));
	int failed;

	if (!tests)
		return 1;
	for (size_t i = 0; i < n; i++) {
		const void *row = (const char *)rows + i * row_size;

		tests[i].name = *(const char *const *)row;
		tests[i].test_func = fn;
		tests[i].initial_state = (void *)row;
	}
	failed = _cmocka_run_group_tests(group, tests, n, NULL, NULL);
	free(tests);
	return failed;
}

/* Every row of the array `rows` through `fn`; the row type must start with
 * `const char *name` and `rows` must be an array, not a pointer (both
 * checked when compiled). */
#define RUN_TABLE(group, rows, fn)                                                                 \
	__extension__({                                                                            \
		_Static_assert(                                                                    \
			!__builtin_types_compatible_p(__typeof__(rows), __typeof__(&(rows)[0])),   \
			#rows " is a pointer, not an array");                                      \
		_Static_assert(offsetof(__typeof__((rows)[0]), name) == 0 &&                       \
				       __builtin_types_compatible_p(__typeof__((rows)[0].name),    \
								    const char *),                 \
			       #rows ": a row must start with its const char *name");              \
		table_run(group, rows, sizeof((rows)[0]), NCASES(rows), fn);                       \
	})

#endif
