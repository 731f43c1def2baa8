// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the public suffix list parser (parse/psl.c): the format
 * (comments, first word, wildcards, exceptions, Unicode and malformed rules
 * skipped) and the algorithm (longest rule, exceptions prevail, "*" when
 * nothing matches), by the examples of publicsuffix.org's test data, and
 * the system's own list when it is installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "parse/psl.h"
#include "table.h"

static const char list[] = "// a comment\n"
			   "com\n"
			   "uk\n"
			   "co.uk\n"
			   "*.ck\n"
			   "!www.ck\n"
			   "jp\n"
			   "kawasaki.jp\n"
			   "*.kawasaki.jp\n"
			   "!city.kawasaki.jp\n"
			   "github.io  trailing words are ignored\n"
			   "\xe4\xb8\xad\xe5\x9b\xbd\n" /* a Unicode rule: skipped */
			   "bad..rule\n"
			   ".leading\n"
			   "a.*.b\n"
			   "\n"
			   "  \n"
			   "TEST\r\n";

struct psl_case {
	const char *name;
	const char *host;
	const char *suffix;	 /* NULL: malformed */
	const char *registrable; /* NULL: none */
};

static const struct psl_case cases[] = {
	{"tld", "com", "com", NULL},
	{"name", "example.com", "com", "example.com"},
	{"subdomain", "a.b.example.com", "com", "example.com"},
	{"two-label-suffix", "www.example.co.uk", "co.uk", "example.co.uk"},
	{"suffix-itself", "co.uk", "co.uk", NULL},
	{"unlisted-tld", "a.b.example", "example", "b.example"},
	{"unlisted-tld-alone", "example", "example", NULL},
	{"wildcard", "www.foo.ck", "foo.ck", "www.foo.ck"},
	{"wildcard-suffix-itself", "foo.ck", "foo.ck", NULL},
	{"exception", "www.ck", "ck", "www.ck"},
	{"exception-below", "a.www.ck", "ck", "www.ck"},
	{"deep-wildcard", "a.b.kawasaki.jp", "b.kawasaki.jp", "a.b.kawasaki.jp"},
	{"deep-exception", "www.city.kawasaki.jp", "kawasaki.jp", "city.kawasaki.jp"},
	{"private-section-rule", "user.github.io", "github.io", "user.github.io"},
	{"rule-lower-cased", "a.b.test", "test", "b.test"},
	{"empty", "", NULL, NULL},
	{"leading-dot", ".example.com", NULL, NULL},
	{"trailing-dot", "example.com.", NULL, NULL},
	{"empty-label", "a..example.com", NULL, NULL},
};

static struct psl *the_list;

static void
run_case(void **state)
{
	const struct psl_case *c = *state;
	const char *suf = psl_suffix(the_list, c->host), *reg = psl_registrable(the_list, c->host);

	if (!c->suffix)
		assert_null(suf);
	else
		assert_string_equal(suf ? suf : "(null)", c->suffix);
	if (!c->registrable)
		assert_null(reg);
	else
		assert_string_equal(reg ? reg : "(null)", c->registrable);
}

static void
test_counts(void **state)
{
	(void)state;
	/* com uk co.uk *.ck !www.ck jp kawasaki.jp *.kawasaki.jp !city... github.io TEST */
	assert_int_equal(psl_rules(the_list), 11);
	/* the Unicode rule, bad..rule, .leading, a.*.b */
	assert_int_equal(psl_skipped(the_list), 4);
}

static void
test_without_list(void **state)
{
	(void)state;
	/* no list: every name's suffix is its last label ("*") */
	assert_string_equal(psl_suffix(NULL, "a.example.co.uk"), "uk");
	assert_string_equal(psl_registrable(NULL, "a.example.co.uk"), "co.uk");
}

static void
test_nul_and_unterminated(void **state)
{
	static const char buf[] = {'c', 'o', 'm', '\n', 'x', 0, 'y', '\n', 'n', 'e', 't'};
	struct psl *p = psl_parse(buf, sizeof(buf));

	(void)state;
	assert_non_null(p);
	assert_int_equal(psl_rules(p), 2); /* com, net (no newline at the end) */
	assert_int_equal(psl_skipped(p), 1);
	assert_string_equal(psl_registrable(p, "a.b.net"), "b.net");
	psl_free(p);
}

static void
test_system_list(void **state)
{
	char err[256];
	struct psl *p;

	(void)state;
	if (access(PSL_DEFAULT_PATH, R_OK)) {
		print_message("(no %s: skipped)\n", PSL_DEFAULT_PATH);
		return;
	}
	p = psl_load(PSL_DEFAULT_PATH, err, sizeof(err));
	assert_non_null(p);
	assert_true(psl_rules(p) > 5000);
	assert_string_equal(psl_registrable(p, "www.example.co.uk"), "example.co.uk");
	assert_string_equal(psl_registrable(p, "foo.bar.github.io"), "bar.github.io");
	/* a public suffix of its own (the list's private section): each name
	 * under it is someone else's, so nothing widens to **.githubusercontent.com */
	assert_string_equal(psl_registrable(p, "objects.githubusercontent.com"),
			    "objects.githubusercontent.com");
	assert_null(psl_registrable(p, "s3.amazonaws.com"));
	psl_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_without_list),
		cmocka_unit_test(test_nul_and_unterminated),
		cmocka_unit_test(test_system_list),
	};
	int failed;

	the_list = psl_parse(list, sizeof(list) - 1);
	if (!the_list)
		return 1;
	failed = RUN_TABLE("psl", cases, run_case);
	failed += cmocka_run_group_tests_name("psl_list", tests, NULL, NULL);
	psl_free(the_list);
	return failed ? 1 : 0;
}
