// SPDX-License-Identifier: Apache-2.0
/* Unit tests for policy/within.c: an allow rule within the administrator's
 * ceiling (users.json's "allow"): host globs, '?' patterns, ports, tcp://,
 * "*:PORT", CIDRs and the local ranges; and policy_outside() naming the
 * first rule of a policy outside it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "policy/policy.h"

static void
test_within(void **state)
{
	static const struct {
		const char *a, *b;
		int want;
	} c[] = {
		/* names */
		{"x.test", "x.test", 1},
		{"X.Test.", "x.test", 1},
		{"y.test", "x.test", 0},
		{"a.x.test", "x.test", 0},
		{"a.x.test", "*.x.test", 1},
		{"a.b.x.test", "*.x.test", 1},
		{"x.test", "*.x.test", 0},
		{"x.test", "**.x.test", 1},
		{"*.x.test", "*.x.test", 1},
		{"**.x.test", "*.x.test", 0},
		{"**.x.test", "**.x.test", 1},
		{"*.x.test", "**.x.test", 1},
		{"*.a.x.test", "*.x.test", 1},
		{"**.a.x.test", "*.x.test", 1},
		{"*.x.test", "x.test", 0},
		{"ax.test", "*.x.test", 0}, /* a suffix, not a label */
		{"*.test", "*.x.test", 0},
		{"api1.x.test", "api?.x.test", 1},
		{"api.x.test", "api?.x.test", 0},
		{"api?.x.test", "api?.x.test", 1},
		{"api?.x.test", "api1.x.test", 0},
		{"api?.x.test", "*.x.test", 1},
		{"api.x?.test", "*.x1.test", 0},
		{"api?.x.test", "**.test", 1},
		{"*.api?.x.test", "*.api?.x.test", 1},
		{"**.api?.x.test", "*.api?.x.test", 0},
		{"a.api1.x.test", "*.api?.x.test", 0}, /* a star beside a ? : the same rule only */
		/* ports */
		{"x.test:443", "x.test", 1},
		{"x.test", "x.test:443", 0},
		{"x.test:80", "x.test:443", 0},
		{"x.test:443", "**.x.test:443", 1},
		{"*:443", "*:443", 1},
		{"x.test:443", "*:443", 1},
		{"x.test", "*:443", 0},
		{"*:443", "x.test", 0},
		/* protocols: tcp:// and addresses take any */
		{"tcp://x.test:22", "x.test", 0},
		{"tcp://x.test:22", "tcp://x.test:22", 1},
		{"tcp://a.x.test:22", "tcp://*.x.test:22", 1},
		{"x.test:22", "tcp://x.test:22", 1},
		{"tcp://x.test:22", "*:22", 0},
		/* addresses */
		{"203.0.113.7", "203.0.113.0/24", 1},
		{"203.0.113.0/25", "203.0.113.0/24", 1},
		{"203.0.112.0/23", "203.0.113.0/24", 0},
		{"198.51.100.1", "203.0.113.0/24", 0},
		{"203.0.113.7:443", "203.0.113.0/24", 1},
		{"203.0.113.7", "203.0.113.0/24:443", 0},
		{"203.0.113.7", "x.test", 0},
		{"x.test", "203.0.113.0/24", 0},
		{"203.0.113.7", "*:443", 0},
		{"[2001:db8::1]:443", "2001:db8::/32", 1},
		{"2001:db8::/31", "2001:db8::/32", 0},
		{"203.0.113.7", "2001:db8::/32", 0},
		{"203.0.113.7", "0.0.0.0/0", 1},
		/* a local range: the ceiling must name it as the policy needs */
		{"10.1.2.3", "0.0.0.0/0", 0},
		{"10.0.0.0/8", "0.0.0.0/0", 0},
		{"10.1.0.0/16", "10.0.0.0/8", 1},
		{"127.0.0.1:5432", "127.0.0.0/8", 1},
		{"127.0.0.1:5432", "0.0.0.0/1", 0},
		{"192.168.1.1", "192.168.0.0/16", 1},
		{"192.168.1.1", "192.0.0.0/8", 0},
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		int got = policy_rule_within(c[i].a, c[i].b, err, sizeof(err));

		if (got != c[i].want)
			fail_msg("%s within %s: got %d, want %d", c[i].a, c[i].b, got, c[i].want);
	}
	assert_int_equal(policy_rule_within("*", "x.test", err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_rule_within("x.test", "x.test:0", err, sizeof(err)), -EINVAL);
}

static void
test_outside(void **state)
{
	const char *ceiling[] = {"**.x.test", "203.0.113.0/24"};
	const struct policy_rule *r;
	struct policy *p = policy_new();
	char err[256];

	(void)state;
	assert_non_null(p);
	assert_int_equal(policy_add(p, POLICY_ALLOW, "a.x.test", NULL, "--allow", err, sizeof(err)),
			 0);
	assert_int_equal(policy_add(p, POLICY_DENY, "evil.test", NULL, "--deny", err, sizeof(err)),
			 0);
	assert_int_equal(
		policy_add(p, POLICY_ALLOW, "203.0.113.9:443", NULL, "--allow", err, sizeof(err)),
		0);
	assert_null(policy_outside(p, ceiling, 2, err, sizeof(err)));
	assert_string_equal(err, "");
	assert_int_equal(policy_add(p, POLICY_ALLOW, "y.test", NULL, "p.json", err, sizeof(err)),
			 0);
	r = policy_outside(p, ceiling, 2, err, sizeof(err));
	assert_non_null(r);
	assert_string_equal(r->text, "y.test");
	assert_string_equal(r->source, "p.json");
	assert_null(policy_outside(p, (const char *[]){"*"}, 1, err, sizeof(err)));
	assert_true(err[0] != 0);
	r = policy_outside(p, NULL, 0, err, sizeof(err)); /* an empty ceiling: nothing */
	assert_non_null(r);
	assert_string_equal(r->text, "a.x.test");
	policy_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_within),
		cmocka_unit_test(test_outside),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
