// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/policy/secret.c: --secret parsed and refused,
 * hosts matched, placeholders random and distinct, values checked, a
 * placeholder found in bytes (any case, split across pieces, skipped for
 * the secret's own hosts), and the swap in a request head (headers only,
 * the secret's hosts only, the old head wiped). */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "confine/options.h"
#include "policy/policy.h"
#include "policy/secret.h"

static struct policy *
two_secrets(void)
{
	struct policy *p = policy_new();
	char err[300];

	assert_non_null(p);
	assert_int_equal(policy_add_secret_arg(p, "GH=env:GH_REAL@api.github.test,**.gh.test", err,
					       sizeof(err)),
			 0);
	assert_int_equal(policy_add_secret_arg(p, "AI=command:op read op://v/i@x@api.ai.test", err,
					       sizeof(err)),
			 0);
	return p;
}

static void
test_arg(void **state)
{
	struct policy *p = two_secrets();
	const struct policy_secret *s;
	char err[300];

	(void)state;
	assert_int_equal(policy_secret_count(p), 2);
	s = policy_secret_at(p, 1);
	assert_string_equal(s->name, "AI");
	assert_int_equal(s->kind, SECRET_CMD);
	assert_string_equal(s->arg, "op read op://v/i@x"); /* the last '@' ends it */
	assert_int_equal(s->nhosts, 1);
	assert_true(policy_secret_host(policy_secret_at(p, 0), "API.github.test."));
	assert_true(policy_secret_host(policy_secret_at(p, 0), "gh.test"));
	assert_true(policy_secret_host(policy_secret_at(p, 0), "a.b.gh.test"));
	assert_false(policy_secret_host(policy_secret_at(p, 0), "xgh.test"));
	assert_false(policy_secret_host(policy_secret_at(p, 0), "github.test"));
	assert_true(policy_secret_any_host(p, "api.ai.test"));
	assert_false(policy_secret_any_host(p, "ai.test"));
	assert_true(policy_inspects(p));

	assert_int_equal(policy_add_secret_arg(p, "GH=env:X@a.test", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "secret GH defined twice");
	assert_int_equal(policy_add_secret_arg(p, "X=env:X", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "expected NAME=SOURCE@HOST[,HOST...]");
	assert_int_equal(policy_add_secret_arg(p, "X=env:X@", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "no hosts: a secret names the hosts it may be sent to");
	assert_int_equal(policy_add_secret_arg(p, "X=ssm:x@a.test", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown source \"ssm:x\""));
	assert_int_equal(policy_add_secret_arg(p, "X=command: @a.test", err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_add_secret_arg(p, "X-Y=env:X@a.test", err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_add_secret_arg(p, "X=env:X@*", err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_add_secret_arg(p, "X=env:X@1.2.3.4", err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_secret_count(p), 2);
	policy_free(p);
}

/* A secret's source replaced (the service's run: a value its client
 * read): hosts and where it was defined kept; an unknown name or a bad
 * source refused, the secret as it was */
static void
test_set_from(void **state)
{
	struct policy *p = two_secrets();
	const struct policy_secret *s;
	char err[300];

	(void)state;
	assert_int_equal(policy_secret_set_from(p, "AI", "fd:7", err, sizeof(err)), 0);
	s = policy_secret_at(p, 1);
	assert_int_equal(s->kind, SECRET_FD);
	assert_string_equal(s->from, "fd:7");
	assert_string_equal(s->arg, "7");
	assert_int_equal(s->nhosts, 1);
	assert_true(policy_secret_any_host(p, "api.ai.test"));
	assert_int_equal(policy_secret_set_from(p, "NOPE", "fd:7", err, sizeof(err)), -ENOENT);
	assert_int_equal(policy_secret_set_from(p, "GH", "ssm:x", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown source"));
	assert_int_equal(policy_secret_at(p, 0)->kind, SECRET_ENV);
	policy_free(p);
}

/* A secret's host is inspected even where its rule says nothing of it,
 * never on the kernel-verified path nor in NO_PROXY. */
static void
test_inspected(void **state)
{
	struct policy *p = two_secrets();
	struct policy_query q = {.host = "api.github.test", .port = 443, .proto = POLICY_P_TLS};
	struct policy_decision d;
	uint16_t ports[4];
	char np[200] = "";
	char err[300];

	(void)state;
	assert_int_equal(policy_add(p, POLICY_ALLOW, "**.github.test", NULL, "t", err, sizeof(err)),
			 0);
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.action, POLICY_ALLOW);
	assert_true(d.inspect);
	q.host = "www.github.test";
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_false(d.inspect);
	assert_int_equal(policy_kv_ports(p, "api.github.test", ports, 4), 0);
	assert_int_equal(policy_kv_ports(p, "www.github.test", ports, 4), 1);
	/* **.github.test nests api.github.test: not in NO_PROXY */
	assert_int_equal(policy_noproxy_names(p, np, sizeof(np), 64), 0);
	policy_free(p);
}

static void
test_store(void **state)
{
	struct policy *p = two_secrets();
	struct secrets *a = secrets_new(p), *b = secrets_new(p);
	const char *ph;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(secrets_count(a), 2);
	ph = secrets_placeholder(a, 0);
	assert_int_equal(strncmp(ph, "EGRESSCTL_SECRET_GH_", 20), 0);
	assert_int_equal(strlen(ph), 20 + SECRET_RAND_HEX);
	assert_string_not_equal(ph, secrets_placeholder(b, 0)); /* random per store */
	assert_string_not_equal(ph + 20, secrets_placeholder(a, 1) + 20);
	assert_false(secrets_has_value(a, 0));
	assert_int_equal(secrets_set_value(a, 0, "tok\r\nX: y", 10), -EINVAL);
	assert_int_equal(secrets_set_value(a, 0, "", 0), -EINVAL);
	assert_int_equal(secrets_set_value(a, 0, "ghp_REAL", 8), 0);
	assert_true(secrets_has_value(a, 0));
	secrets_free(a);
	secrets_free(b);
	policy_free(p);
}

static void
test_find(void **state)
{
	struct policy *p = two_secrets();
	struct secrets *s = secrets_new(p);
	char buf[400], up[200];
	struct secrets_scan st = {0};
	const char *ph;
	size_t n;
	int hit = -1;

	(void)state;
	ph = secrets_placeholder(s, 1);
	snprintf(buf, sizeof(buf), "GET /?q=%s HTTP/1.1\r\n", ph);
	assert_int_equal(secrets_find(s, "other.test", buf, strlen(buf)), 1);
	assert_int_equal(secrets_find(s, NULL, buf, strlen(buf)), 1);
	/* its own host: no leak */
	assert_int_equal(secrets_find(s, "api.ai.test", buf, strlen(buf)), -1);
	/* the random part alone, upper-cased, as a DNS label would carry it */
	n = strlen(ph);
	for (size_t i = 0; i < SECRET_RAND_HEX; i++)
		up[i] = (char)toupper((unsigned char)ph[n - SECRET_RAND_HEX + i]);
	snprintf(buf, sizeof(buf), "x%.*s.evil.test", SECRET_RAND_HEX, up);
	assert_int_equal(secrets_find(s, NULL, buf, strlen(buf)), 1);
	/* 31 of its digits: nothing */
	snprintf(buf, sizeof(buf), "%.*s", SECRET_RAND_HEX - 1, ph + n - SECRET_RAND_HEX);
	assert_int_equal(secrets_find(s, NULL, buf, strlen(buf)), -1);
	/* split at every point, and fed a byte at a time, after a long run of
	 * other hex digits */
	snprintf(buf, sizeof(buf), "0123456789abcdef0123456789abcdef0123456789%s tail", ph);
	for (size_t cut = 0; cut <= strlen(buf); cut++) {
		memset(&st, 0, sizeof(st));
		hit = secrets_scan_feed(s, &st, NULL, buf, cut);
		if (hit < 0)
			hit = secrets_scan_feed(s, &st, NULL, buf + cut, strlen(buf) - cut);
		assert_int_equal(hit, 1);
	}
	memset(&st, 0, sizeof(st));
	hit = -1;
	for (size_t i = 0; buf[i] && hit < 0; i++)
		hit = secrets_scan_feed(s, &st, NULL, buf + i, 1);
	assert_int_equal(hit, 1);
	assert_int_equal(secrets_find(s, NULL, "no placeholder here", 19), -1);
	secrets_free(s);
	policy_free(p);
}

static void
test_substitute(void **state)
{
	struct policy *p = two_secrets();
	struct secrets *s = secrets_new(p);
	const char *ph = NULL;
	char *head, *out;
	uint64_t used = 0;
	size_t len;

	(void)state;
	ph = secrets_placeholder(s, 0);
	assert_int_equal(secrets_set_value(
				 s, 0, "ghp_REAL_VALUE_LONGER_THAN_THE_PLACEHOLDER_0123456789", 53),
			 0);
	assert_true(asprintf(&head,
			     "GET /%s HTTP/1.1\r\nAuthorization: Bearer %s\r\nX-A: %s%s\r\n\r\n",
			     ph, ph, ph, ph) > 0);
	len = strlen(head);
	/* another host: untouched */
	out = secrets_substitute(s, "evil.test", head, &len, &used);
	assert_ptr_equal(out, head);
	assert_int_equal(used, 0);
	out = secrets_substitute(s, "api.github.test", head, &len, &used);
	assert_non_null(out);
	assert_int_equal(used, 1);
	assert_int_equal(len, strlen(out));
	assert_non_null(strstr(out, "\r\nAuthorization: Bearer "
				    "ghp_REAL_VALUE_LONGER_THAN_THE_PLACEHOLDER_0123456789\r\n"));
	assert_non_null(strstr(out,
			       "X-A: ghp_REAL_VALUE_LONGER_THAN_THE_PLACEHOLDER_0123456789"
			       "ghp_REAL_VALUE_LONGER_THAN_THE_PLACEHOLDER_0123456789\r\n\r\n"));
	/* the request line keeps the placeholder */
	assert_int_equal(strncmp(out + 5, ph, strlen(ph)), 0);
	/* a secret without a value is never swapped */
	secrets_wipe_free(out, len);
	assert_true(asprintf(&head, "GET / HTTP/1.1\r\nA: %s\r\n\r\n", secrets_placeholder(s, 1)) >
		    0);
	len = strlen(head);
	used = 0;
	out = secrets_substitute(s, "api.ai.test", head, &len, &used);
	assert_ptr_equal(out, head);
	assert_int_equal(used, 0);
	free(out);
	/* a body: every byte from the first, at its start and end, twice in a
	 * row; shorter than the placeholder too */
	assert_true(secrets_any_value_for(s, "api.github.test"));
	assert_true(secrets_any_value_for(s, "x.gh.test"));
	assert_false(secrets_any_value_for(s, "api.ai.test")); /* AI has no value */
	assert_false(secrets_any_value_for(s, "evil.test"));
	assert_int_equal(secrets_set_value(s, 0, "v", 1), 0);
	assert_true(asprintf(&head, "%s{\"k\":\"%s%s\"}%s", ph, ph, ph, ph) > 0);
	len = strlen(head);
	used = 0;
	out = secrets_substitute_body(s, "evil.test", head, &len, &used);
	assert_ptr_equal(out, head);
	out = secrets_substitute_body(s, "api.github.test", head, &len, &used);
	assert_int_equal(used, 1);
	assert_int_equal(len, 12);
	assert_memory_equal(out, "v{\"k\":\"vv\"}v", 12);
	secrets_wipe_free(out, len);
	secrets_free(s);
	policy_free(p);
}

/* The daemon's builder refuses secrets, from --secret and from a file,
 * unless --secret-placeholders says who hands the placeholders on; then
 * --secret's only (a policy file's would change on a reload). */
static void
test_daemon_refuses(void **state)
{
	static struct target_opts o;
	struct policy *p;
	char err[400], path[] = "/tmp/egr-test-secret-XXXXXX";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd,
			       "{\"allow\": [\"ok.test\"], \"secrets\": {\"F\": {\"from\": "
			       "\"env:Y\", \"hosts\": [\"ok.test\"]}}}",
			       81),
			 81);
	close(fd);
	o.rules[0] = (struct rule_arg){POLICY_ALLOW, "ok.test"};
	o.nrules = 1;
	p = target_policy_build(&o, NULL, 0, err, sizeof(err));
	assert_non_null(p);
	policy_free(p);
	o.secrets[0] = "GH=env:X@ok.test";
	o.nsecrets = 1;
	assert_null(target_policy_build(&o, NULL, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "secret GH: the daemon confines processes it did not start: "
				    "give --secret-placeholders FILE"));
	o.secret_placeholders = "/run/x/placeholders";
	p = target_policy_build(&o, NULL, 0, err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(policy_secret_count(p), 1);
	policy_free(p);
	o.policy_file = path;
	assert_null(target_policy_build(&o, NULL, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "secret F: the daemon takes secrets from --secret only"));
	o.policy_file = NULL;
	o.secret_placeholders = NULL;
	unlink(path);
	/* run's path: the options add it once, however often they are applied */
	p = target_build_policy(NULL, o.rules, o.nrules, err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(target_policy_options(p, &o, err, sizeof(err)), 0);
	assert_int_equal(target_policy_options(p, &o, err, sizeof(err)), 0);
	assert_int_equal(policy_secret_count(p), 1);
	policy_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arg),	   cmocka_unit_test(test_inspected),
		cmocka_unit_test(test_store),	   cmocka_unit_test(test_find),
		cmocka_unit_test(test_substitute), cmocka_unit_test(test_daemon_refuses),
		cmocka_unit_test(test_set_from),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
