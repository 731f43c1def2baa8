// SPDX-License-Identifier: Apache-2.0
/* Unit tests for header hooks: userspace/policy/hook.c (a hook's secret
 * defined, and allowed to go to every name its rule allows: a table of rule
 * and secret-host pairs) and userspace/proxy/http_hook.c (a request judged:
 * placeholder required, missing, another value, twice, without its prefix,
 * plain HTTP, a host not the secret's; the head forwarded byte for byte:
 * stripped headers gone in any case, set headers replacing the client's,
 * the value only where the judge accepts, the head parsing back to the
 * request that was judged). Requests are parsed from exact-size buffers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "exact.h"
#include "table.h"

#include "parse/parse.h"
#include "policy/policy.h"
#include "policy/secret.h"
#include "proxy/http_hook.h"

#define BIG 65536

/* ---- policy_hooks_check(): the secret may go everywhere the rule allows */

struct cover_case {
	const char *name;
	const char *rule;
	const char *hosts; /* the secret's, as --secret takes them */
	int err;
	const char *msg; /* the message contains this; NULL when err is 0 */
};

static const struct cover_case cover_cases[] = {
	{"exact-exact", "api.test", "api.test", 0, NULL},
	{"exact-case-dot", "API.test.", "api.test", 0, NULL},
	{"exact-other", "api.test", "web.test", -EINVAL, "secret T may not go to every name"},
	{"exact-under-star", "a.api.test", "*.api.test", 0, NULL},
	{"exact-apex-star", "api.test", "*.api.test", -EINVAL, "may not go"},
	{"exact-apex-2star", "api.test", "**.api.test", 0, NULL},
	{"exact-deep-2star", "x.y.api.test", "**.api.test", 0, NULL},
	{"star-star", "*.api.test", "*.api.test", 0, NULL},
	{"star-2star", "*.api.test", "**.api.test", 0, NULL},
	{"2star-star", "**.api.test", "*.api.test", -EINVAL, "may not go"},
	{"2star-2star", "**.api.test", "**.api.test", 0, NULL},
	{"star-exact", "*.api.test", "api.test", -EINVAL, "may not go"},
	{"star-deeper", "*.a.api.test", "*.api.test", 0, NULL},
	{"star-wider", "*.test", "*.api.test", -EINVAL, "may not go"},
	{"2star-under-star", "**.a.api.test", "*.api.test", 0, NULL},
	{"suffix-not-label", "*.xapi.test", "**.api.test", -EINVAL, "may not go"},
	{"second-host", "web.test", "api.test,web.test", 0, NULL},
	{"qmark", "api?.test", "**.test", -EINVAL, "may not go"},
	{"any-port", "*:443", "**.test", -EINVAL, "may not go"},
};

static void
run_cover(void **state)
{
	const struct cover_case *c = *state;
	struct policy *p = policy_new();
	struct policy_hook_set set = {.name = "X-K", .secret = "T", .prefix = ""};
	struct policy_hooks h = {.set = &set, .nset = 1};
	struct policy_rule_opts o = {.hooks = &h};
	char err[400], arg[200];

	assert_non_null(p);
	snprintf(arg, sizeof(arg), "T=env:X@%s", c->hosts);
	assert_int_equal(policy_add_secret_arg(p, arg, err, sizeof(err)), 0);
	assert_int_equal(policy_add_opts(p, POLICY_ALLOW, c->rule, &o, "t", err, sizeof(err)), 0);
	assert_int_equal(policy_hooks_check(p, err, sizeof(err)), c->err);
	if (c->msg && !strstr(err, c->msg))
		fail_msg("want \"%s\" in \"%s\"", c->msg, err);
	policy_free(p);
}

static void
test_undefined(void **state)
{
	struct policy *p = policy_new();
	struct policy_hook_set set = {.name = "X-K", .secret = "NOPE", .prefix = ""};
	struct policy_hooks h = {.set = &set, .nset = 1};
	struct policy_rule_opts o = {.hooks = &h};
	struct policy_query q = {.host = "a.test", .port = 443, .proto = POLICY_P_TLS};
	struct policy_decision d;
	char err[400];

	(void)state;
	assert_int_equal(policy_add_opts(p, POLICY_ALLOW, "a.test", &o, "t", err, sizeof(err)), 0);
	assert_int_equal(policy_hooks_check(p, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "rule 1 \"a.test\": header X-K: no secret NOPE (define it in "
				 "\"secrets\" or with --secret)");
	/* a rule with hooks inspects, and is copied: the caller's h may go */
	assert_true(policy_inspects(p));
	set.name = "Changed";
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.action, POLICY_ALLOW);
	assert_true(d.inspect);
	assert_non_null(d.rule->hooks);
	assert_string_equal(d.rule->hooks->set[0].name, "X-K");
	policy_free(p);
}

/* ---- a request judged and forwarded -------------------------------------- */

static struct http_request req, back;

static struct policy *pol;
static struct secrets *sec;
static char ph[SECRET_PH_MAX];

static int
store_setup(void **state)
{
	char err[300];

	(void)state;
	pol = policy_new();
	assert_non_null(pol);
	assert_int_equal(policy_add_secret_arg(pol, "T=env:X@api.test", err, sizeof(err)), 0);
	assert_int_equal(policy_add_secret_arg(pol, "U=env:Y@api.test", err, sizeof(err)), 0);
	sec = secrets_new(pol);
	assert_non_null(sec);
	assert_int_equal(secrets_set_value(sec, 0, "real-value", 10), 0);
	snprintf(ph, sizeof(ph), "%s", secrets_placeholder(sec, 0));
	return 0;
}

static int
store_teardown(void **state)
{
	(void)state;
	secrets_free(sec);
	policy_free(pol);
	return 0;
}

static const char *const strip_v[] = {"cookie", "x-drop"};
static const struct policy_hook_set set_v[] = {
	{.name = "Authorization", .secret = "T", .prefix = "Bearer ", .placeholder = true},
};
static const struct policy_hooks hooks = {.strip = strip_v, .nstrip = 2, .set = set_v, .nset = 1};
static const struct policy_hook_set set_free_v[] = {
	{.name = "X-K", .secret = "T", .prefix = ""},
};
static const struct policy_hooks hooks_free = {.set = set_free_v, .nset = 1};
static const struct policy_hook_set set_novalue_v[] = {
	{.name = "X-U", .secret = "U", .prefix = ""},
};
static const struct policy_hooks hooks_novalue = {.set = set_novalue_v, .nset = 1};

struct hook_case {
	const char *name;
	const struct policy_hooks *h;
	const char *host;
	bool tls;
	const char *head; /* the client's header lines; each %s the placeholder */
	enum policy_hook_fail want;
	const char *fwd; /* the header lines forwarded (Host first; Connection added) */
};

static const struct hook_case hook_cases[] = {
	{"placeholder", &hooks, "api.test", true,
	 "Host: api.test\r\nCookie: a=1\r\nAuthorization: Bearer %s\r\nAccept: */*\r\n",
	 POLICY_HOOK_OK,
	 "Host: api.test\r\nAccept: */*\r\nContent-Length: 2\r\nAuthorization: Bearer "
	 "real-value\r\n"},
	{"strip-any-case", &hooks, "api.test", true,
	 "Host: api.test\r\nCOOKIE: a=1\r\nx-Drop: 1\r\ncookie: b\r\nauthorization: Bearer %s\r\n",
	 POLICY_HOOK_OK,
	 "Host: api.test\r\nContent-Length: 2\r\nAuthorization: Bearer real-value\r\n"},
	{"missing", &hooks, "api.test", true, "Host: api.test\r\nCookie: a=1\r\n",
	 POLICY_HOOK_MISSING, "Host: api.test\r\nContent-Length: 2\r\n"},
	{"mismatch", &hooks, "api.test", true, "Host: api.test\r\nAuthorization: Bearer other\r\n",
	 POLICY_HOOK_MISMATCH, "Host: api.test\r\nContent-Length: 2\r\n"},
	{"no-prefix", &hooks, "api.test", true, "Host: api.test\r\nAuthorization: %s\r\n",
	 POLICY_HOOK_MISMATCH, "Host: api.test\r\nContent-Length: 2\r\n"},
	{"trailing-bytes", &hooks, "api.test", true,
	 "Host: api.test\r\nAuthorization: Bearer %sx\r\n", POLICY_HOOK_MISMATCH,
	 "Host: api.test\r\nContent-Length: 2\r\n"},
	{"twice", &hooks, "api.test", true,
	 "Host: api.test\r\nAuthorization: Bearer %s\r\nauthorization: Bearer %s\r\n",
	 POLICY_HOOK_TWICE, "Host: api.test\r\nContent-Length: 2\r\n"},
	{"plain-http", &hooks, "api.test", false, "Host: api.test\r\nAuthorization: Bearer %s\r\n",
	 POLICY_HOOK_PLAIN, "Host: api.test\r\nContent-Length: 2\r\n"},
	{"other-host", &hooks, "web.test", true, "Host: web.test\r\nAuthorization: Bearer %s\r\n",
	 POLICY_HOOK_NO_SECRET, "Host: web.test\r\nContent-Length: 2\r\n"},
	{"free-replaces", &hooks_free, "api.test", true,
	 "Host: api.test\r\nX-K: mine\r\nx-k: 2\r\n", POLICY_HOOK_OK,
	 "Host: api.test\r\nContent-Length: 2\r\nX-K: real-value\r\n"},
	{"free-added", &hooks_free, "api.test", true, "Host: api.test\r\n", POLICY_HOOK_OK,
	 "Host: api.test\r\nContent-Length: 2\r\nX-K: real-value\r\n"},
	{"free-plain", &hooks_free, "api.test", false, "Host: api.test\r\nX-K: mine\r\n",
	 POLICY_HOOK_PLAIN, "Host: api.test\r\nContent-Length: 2\r\n"},
	{"no-value", &hooks_novalue, "api.test", true, "Host: api.test\r\n", POLICY_HOOK_NO_SECRET,
	 "Host: api.test\r\nContent-Length: 2\r\n"},
	{"no-hooks", NULL, "api.test", true, "Host: api.test\r\nCookie: a\r\n", POLICY_HOOK_OK,
	 "Host: api.test\r\nCookie: a\r\nContent-Length: 2\r\n"},
};

/* in with each "%s" the placeholder, into out (len bytes) */
static void
expand(const char *in, char *out, size_t len)
{
	size_t o = 0, k = strlen(ph);

	for (; *in; in++) {
		if (in[0] == '%' && in[1] == 's') {
			assert_true(o + k < len);
			memcpy(out + o, ph, k);
			o += k;
			in++;
			continue;
		}
		assert_true(o + 1 < len);
		out[o++] = *in;
	}
	out[o] = 0;
}

static void
run_hook(void **state)
{
	const struct hook_case *c = *state;
	char raw[2048], lines[1024], want[2048], *keep, *out;
	size_t n, consumed = 0, len = 0;
	uint64_t used = 0;
	unsigned int which = 99;

	expand(c->head, lines, sizeof(lines));
	n = (size_t)snprintf(raw, sizeof(raw), "POST /v1/x HTTP/1.1\r\n%sContent-Length: 2\r\n\r\n",
			     lines);
	keep = dup_exact(raw, n);
	assert_int_equal(http_parse_request(keep, n, BIG, &req, &consumed), PARSE_DONE);
	assert_int_equal(http_hook_judge(c->h, sec, c->host, c->tls, &req, &which), c->want);
	if (c->want != POLICY_HOOK_OK)
		assert_int_equal(which, 0);
	out = http_hook_head(&req, false, c->h, sec, c->host, c->tls, &len, &used);
	assert_non_null(out);
	/* the client's headers kept, in order, then the ones set */
	n = (size_t)snprintf(want, sizeof(want),
			     "POST /v1/x HTTP/1.1\r\n%sConnection: close\r\n\r\n", c->fwd);
	if (len != n || memcmp(out, want, n))
		fail_msg("forwarded\n%.*s\nwant\n%s", (int)len, out, want);
	assert_int_equal(used, strstr(c->fwd, "real-value") ? 1u : 0u);
	/* no placeholder goes on once its header is set or stripped */
	if (c->h)
		assert_null(memmem(out, len, ph, strlen(ph)));
	/* what goes to the server parses back to the request judged */
	consumed = 0;
	assert_int_equal(http_parse_request(out, len, BIG, &back, &consumed), PARSE_DONE);
	assert_int_equal(consumed, len);
	assert_string_equal(back.method, req.method);
	assert_string_equal(back.target, req.target);
	assert_int_equal(back.body, req.body);
	assert_int_equal(back.body_len, req.body_len);
	secrets_wipe_free(out, len);
	free(keep);
}

int
main(void)
{
	const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_undefined),
	};
	int failed = 0;

	failed += RUN_TABLE("cover", cover_cases, run_cover);
	failed += cmocka_run_group_tests_name("check", misc, NULL, NULL);
	store_setup(NULL);
	failed += RUN_TABLE("hook", hook_cases, run_hook);
	store_teardown(NULL);
	return failed ? 1 : 0;
}
