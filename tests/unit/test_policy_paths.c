// SPDX-License-Identifier: Apache-2.0
/* Unit tests for what HTTPS inspection adds to the rule engine
 * (userspace/policy/), in test_policy.c's style, one cmocka test per table
 * row: path patterns as rules take them (policy_path_check), a pattern
 * against a normalised path (policy_path_match), and decisions with paths,
 * methods, "inspect" and --limited: which TLS is inspected, which request
 * inside is allowed, and the reason of each denial; policy_inspects. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "table.h"

#include "policy/policy.h"

#define HTTP	POLICY_P_HTTP
#define TLS	POLICY_P_TLS
#define TCP	POLICY_P_TCP
#define OK	POLICY_R_ALLOWED
#define NORULE	POLICY_R_NO_RULE
#define DENIED	POLICY_R_DENY_RULE
#define METHOD	POLICY_R_METHOD
#define PATH	POLICY_R_PATH
#define LIMITED POLICY_R_LIMITED

/* ---- policy_path_check ---------------------------------------------------- */

struct check_case {
	const char *name;
	const char *pattern;
	const char *err; /* substring of the message; NULL: accepted */
};

static const struct check_case check_cases[] = {
	{"root", "/", NULL},
	{"prefix", "/repos", NULL},
	{"trailing-slash", "/repos/", NULL},
	{"star", "/repos/*/issues", NULL},
	{"star-in-segment", "/v*.json", NULL},
	{"escape", "/a%20b", NULL},
	{"escaped-slash", "/group%2Fproject", NULL},
	{"empty", "", "starts with '/'"},
	{"relative", "repos", "starts with '/'"},
	{"double-slash", "/a//b", "empty segment"},
	{"dot", "/a/./b", "'.' or '..' segment"},
	{"dotdot-end", "/a/..", "'.' or '..' segment"},
	{"query", "/a?b", "invalid '?'"},
	{"fragment", "/a#b", "invalid '#'"},
	{"semicolon", "/a;b", "invalid ';'"},
	{"backslash", "/a\\b", "invalid '\\'"},
	{"space", "/a b", "invalid byte 0x20"},
	{"non-ascii", "/\xc3\xa9", "invalid byte 0xc3"},
	{"double-star", "/a/**", "'**'"},
	{"escape-lower", "/a%2fb", "upper-case escape"},
	{"escape-unreserved", "/%41", "upper-case escape"},
	{"escape-short", "/a%2", "upper-case escape"},
	{"escape-nul", "/a%00", "upper-case escape"},
};

static void
run_check_case(void **state)
{
	const struct check_case *c = *state;
	char errbuf[256] = "";
	int err = policy_path_check(c->pattern, errbuf, sizeof(errbuf));

	if (!c->err) {
		if (err)
			fail_msg("refused: %s", errbuf);
		return;
	}
	assert_int_equal(err, -EINVAL);
	if (!strstr(errbuf, c->err))
		fail_msg("message \"%s\" lacks \"%s\"", errbuf, c->err);
}

/* ---- policy_path_match ---------------------------------------------------- */

struct match_case {
	const char *name;
	const char *pattern;
	const char *path;
	bool want;
};

static const struct match_case match_cases[] = {
	{"exact", "/simple", "/simple", true},
	{"under", "/simple", "/simple/requests/", true},
	{"under-slash", "/simple", "/simple/", true},
	{"not-longer-name", "/simple", "/simpler", false},
	{"not-parent", "/simple/x", "/simple", false},
	{"case-sensitive", "/Simple", "/simple", false},
	{"root-all", "/", "/anything/at/all", true},
	{"root-root", "/", "/", true},
	{"trailing-under", "/a/", "/a/b", true},
	{"trailing-dir", "/a/", "/a/", true},
	{"trailing-not-self", "/a/", "/a", false},
	{"star-segment", "/repos/*/issues", "/repos/org/issues", true},
	{"star-under", "/repos/*/issues", "/repos/org/issues/7", true},
	{"star-not-two-segments", "/repos/*/issues", "/repos/org/x/issues", false},
	{"star-not-empty-path", "/repos/*", "/repos", false},
	{"star-empty-segment", "/repos/*", "/repos/", true},
	{"star-within", "/v*.json", "/v1.2.json", true},
	{"star-within-miss", "/v*.json", "/v1.2.txt", false},
	{"stars-backtrack", "/a*b*c", "/aXbYbZc", true},
	{"stars-backtrack-miss", "/a*b*c", "/aXbYbZ", false},
	{"params-stripped", "/admin", "/admin;jsessionid=1/x", true},
	{"params-last", "/admin", "/admin;x", true},
	{"params-not-name", "/admin", "/admin2;x", false},
	{"escaped-slash-one-segment", "/a/b", "/a%2Fb", false},
	{"escaped-slash-star", "/*", "/a%2Fb", true},
	{"options-star", "/", "*", false},
};

static void
run_match_case(void **state)
{
	const struct match_case *c = *state;

	assert_int_equal(policy_path_match(c->pattern, c->path), c->want);
}

/* ---- decisions --------------------------------------------------------------- */

/* A rule: its text, then methods ("" none), paths (',' between, "" none),
 * and whether it says "inspect". */
struct trule {
	const char *text, *methods, *paths;
	bool inspect;
};

struct decide_case {
	const char *name;
	struct trule allow[3];
	struct trule deny[2];
	bool limited;
	const char *host;
	uint16_t port;
	enum policy_proto proto;
	const char *method, *path;
	enum policy_reason reason;
	const char *rule; /* the deciding rule's text; NULL none */
	bool inspect;
};

/* clang-format off */
static const struct decide_case decide_cases[] = {
	/* paths on plain HTTP (or a request inside an inspected session) */
	{"path-prefix", {{"a.test", "", "/repos"}}, {{0}}, 0,
	 "a.test", 443, HTTP, "GET", "/repos/x", OK, "a.test", 0},
	{"path-outside", {{"a.test", "", "/repos"}}, {{0}}, 0,
	 "a.test", 443, HTTP, "GET", "/repository", PATH, "a.test", 0},
	{"path-unknown-fails-closed", {{"a.test", "", "/repos"}}, {{0}}, 0,
	 "a.test", 443, HTTP, "GET", NULL, PATH, "a.test", 0},
	{"path-second-pattern", {{"a.test", "", "/x,/y/*/z"}}, {{0}}, 0,
	 "a.test", 80, HTTP, "PUT", "/y/1/z/2", OK, "a.test", 0},
	{"path-and-method-method", {{"a.test", "GET", "/pub"}}, {{0}}, 0,
	 "a.test", 80, HTTP, "POST", "/pub", METHOD, "a.test", 0},
	{"path-and-method-path", {{"a.test", "GET", "/pub"}}, {{0}}, 0,
	 "a.test", 80, HTTP, "GET", "/priv", PATH, "a.test", 0},
	{"path-other-rule-allows", {{"a.test", "", "/pub"}, {"**.a.test"}}, {{0}}, 0,
	 "a.test", 80, HTTP, "GET", "/priv", OK, "**.a.test", 0},
	{"path-tcp-not-http", {{"a.test", "", "/pub"}}, {{0}}, 0,
	 "a.test", 443, TCP, NULL, NULL, NORULE, NULL, 0},
	/* TLS to such a host: allowed, inspected */
	{"path-tls-inspected", {{"a.test", "", "/pub"}}, {{0}}, 0,
	 "a.test", 443, TLS, NULL, NULL, OK, "a.test", 1},
	{"inspect-tls", {{"a.test", "", "", 1}}, {{0}}, 0,
	 "a.test", 443, TLS, NULL, NULL, OK, "a.test", 1},
	{"inspect-any-request", {{"a.test", "", "", 1}}, {{0}}, 0,
	 "a.test", 443, HTTP, "DELETE", "/x", OK, "a.test", 0},
	{"plain-not-inspected", {{"a.test"}}, {{0}}, 0,
	 "a.test", 443, TLS, NULL, NULL, OK, "a.test", 0},
	/* a plain rule and one with paths for the same name: inspected,
	 * whichever came first (the more specific rule decides) */
	{"plain-then-paths-inspected", {{"a.test"}, {"a.test", "", "/pub"}}, {{0}}, 0,
	 "a.test", 443, TLS, NULL, NULL, OK, "a.test", 1},
	{"paths-then-plain-inspected", {{"a.test", "", "/pub"}, {"a.test"}}, {{0}}, 0,
	 "a.test", 443, TLS, NULL, NULL, OK, "a.test", 1},
	{"plain-then-paths-other-path", {{"a.test"}, {"a.test", "", "/pub"}}, {{0}}, 0,
	 "a.test", 443, HTTP, "GET", "/priv", OK, "a.test", 0},
	{"inspect-wildcard", {{"**.a.test", "", "", 1}}, {{0}}, 0,
	 "x.a.test", 443, TLS, NULL, NULL, OK, "**.a.test", 1},
	{"inspect-any-port-rule", {{"*:443", "", "", 1}}, {{0}}, 0,
	 "x.test", 443, TLS, NULL, NULL, OK, "*:443", 1},
	/* deny rules with paths */
	{"deny-path-hit", {{"a.test"}}, {{"a.test", "", "/admin"}}, 0,
	 "a.test", 443, HTTP, "GET", "/admin/users", DENIED, "a.test", 0},
	{"deny-path-miss", {{"a.test"}}, {{"a.test", "", "/admin"}}, 0,
	 "a.test", 443, HTTP, "GET", "/public", OK, "a.test", 0},
	{"deny-path-params", {{"a.test"}}, {{"a.test", "", "/admin"}}, 0,
	 "a.test", 443, HTTP, "GET", "/admin;x=1", DENIED, "a.test", 0},
	{"deny-path-unknown-fails-closed", {{"a.test"}}, {{"a.test", "", "/admin"}}, 0,
	 "a.test", 443, HTTP, "GET", NULL, DENIED, "a.test", 0},
	{"deny-path-tls-inspected", {{"a.test"}}, {{"a.test", "", "/admin"}}, 0,
	 "a.test", 443, TLS, NULL, NULL, OK, "a.test", 1},
	{"deny-method-and-path", {{"a.test"}}, {{"a.test", "POST", "/admin"}}, 0,
	 "a.test", 443, HTTP, "GET", "/admin", OK, "a.test", 0},
	{"deny-method-and-path-hit", {{"a.test"}}, {{"a.test", "POST", "/admin"}}, 0,
	 "a.test", 443, HTTP, "POST", "/admin/x", DENIED, "a.test", 0},
	{"deny-path-other-port", {{"a.test"}}, {{"a.test:8443", "", "/admin"}}, 0,
	 "a.test", 443, TLS, NULL, NULL, OK, "a.test", 0},
	{"deny-plain-wins", {{"a.test", "", "", 1}}, {{"a.test"}}, 0,
	 "a.test", 443, TLS, NULL, NULL, DENIED, "a.test", 0},
	/* --limited: read-only; TLS inspected, tcp:// rules raw */
	{"limited-tls", {{"a.test"}}, {{0}}, 1,
	 "a.test", 443, TLS, NULL, NULL, OK, "a.test", 1},
	{"limited-get", {{"a.test"}}, {{0}}, 1,
	 "a.test", 443, HTTP, "GET", "/x", OK, "a.test", 0},
	{"limited-head", {{"a.test"}}, {{0}}, 1,
	 "a.test", 443, HTTP, "HEAD", "/x", OK, "a.test", 0},
	{"limited-options", {{"a.test"}}, {{0}}, 1,
	 "a.test", 443, HTTP, "OPTIONS", "*", OK, "a.test", 0},
	{"limited-post", {{"a.test"}}, {{0}}, 1,
	 "a.test", 443, HTTP, "POST", "/x", LIMITED, "a.test", 0},
	{"limited-unknown-method", {{"a.test"}}, {{0}}, 1,
	 "a.test", 80, HTTP, "PROPFIND", "/x", LIMITED, "a.test", 0},
	{"limited-method-rule-post", {{"a.test", "POST"}}, {{0}}, 1,
	 "a.test", 443, HTTP, "POST", "/x", LIMITED, "a.test", 0},
	{"limited-tcp-rule-raw", {{"tcp://a.test:443"}}, {{0}}, 1,
	 "a.test", 443, TLS, NULL, NULL, OK, "tcp://a.test:443", 0},
	{"limited-tcp-rule-http", {{"tcp://a.test:80"}}, {{0}}, 1,
	 "a.test", 80, HTTP, "POST", "/x", OK, "tcp://a.test:80", 0},
	{"limited-no-rule", {{"a.test"}}, {{0}}, 1,
	 "b.test", 443, TLS, NULL, NULL, NORULE, NULL, 0},
};
/* clang-format on */

/* The patterns of a rule's "a,b" list into v; how many. */
static size_t
split_paths(const char *list, char *buf, size_t len, const char **v, size_t max)
{
	size_t n = 0;

	if (!list || !list[0])
		return 0;
	snprintf(buf, len, "%s", list);
	for (char *s = strtok(buf, ","); s && n < max; s = strtok(NULL, ","))
		v[n++] = s;
	return n;
}

static void
add(struct policy *p, enum policy_action a, const struct trule *r)
{
	const char *paths[8];
	char buf[256], errbuf[256];
	struct policy_rule_opts o = {
		.methods = r->methods && r->methods[0] ? r->methods : NULL,
		.inspect = r->inspect,
	};

	o.npaths = split_paths(r->paths, buf, sizeof(buf), paths, 8);
	o.paths = paths;
	if (policy_add_opts(p, a, r->text, &o, "test", errbuf, sizeof(errbuf)))
		fail_msg("rule \"%s\": %s", r->text, errbuf);
}

static void
run_decide_case(void **state)
{
	const struct decide_case *c = *state;
	struct policy *p = policy_new();
	struct policy_query q = {.host = c->host,
				 .port = c->port,
				 .proto = c->proto,
				 .method = c->method,
				 .path = c->path};
	struct policy_decision d;

	assert_non_null(p);
	for (size_t i = 0; i < NCASES(c->allow) && c->allow[i].text; i++)
		add(p, POLICY_ALLOW, &c->allow[i]);
	for (size_t i = 0; i < NCASES(c->deny) && c->deny[i].text; i++)
		add(p, POLICY_DENY, &c->deny[i]);
	policy_set_limited(p, c->limited);
	assert_int_equal(policy_decide(p, &q, &d), 0);
	if (d.reason != c->reason)
		fail_msg("reason %d (%s), want %d", d.reason, policy_reason_header(d.reason),
			 c->reason);
	assert_int_equal(d.action, c->reason == OK ? POLICY_ALLOW : POLICY_DENY);
	if (d.inspect != c->inspect)
		fail_msg("inspect %d, want %d", d.inspect, c->inspect);
	if (!c->rule)
		assert_null(d.rule);
	else
		assert_string_equal(d.rule ? d.rule->text : "(none)", c->rule);
	/* what a policy with such rules tells run: CMD gets the CA */
	assert_int_equal(policy_inspects(p),
			 c->limited || c->allow[0].inspect ||
				 (c->allow[0].paths && c->allow[0].paths[0]) ||
				 (c->allow[0].methods && c->allow[0].methods[0]) ||
				 (c->deny[0].paths && c->deny[0].paths[0]) ||
				 (c->deny[0].methods && c->deny[0].methods[0]) ||
				 (c->allow[1].paths && c->allow[1].paths[0]));
	policy_free(p);
}

/* The words and headers of the two new reasons. */
static void
test_words(void **state)
{
	struct policy_rule r = {.index = 4, .text = (char *)"z.test"};
	struct policy_decision d = {POLICY_DENY, POLICY_R_PATH, &r, false};
	char buf[128];

	(void)state;
	assert_string_equal(policy_reason_header(POLICY_R_PATH), "blocked-by-path-policy");
	assert_string_equal(policy_reason_header(POLICY_R_LIMITED), "blocked-by-method-policy");
	assert_string_equal(policy_reason_words(&d, "GET", buf, sizeof(buf)),
			    "path not allowed for it by rule 4 \"z.test\"");
	d.reason = POLICY_R_LIMITED;
	assert_string_equal(policy_reason_words(&d, "POST", buf, sizeof(buf)),
			    "method POST not allowed: read-only (limited mode)");
}

/* paths and inspect go on host rules only, inspect on allow rules only. */
static void
test_add_refusals(void **state)
{
	struct policy *p = policy_new();
	const char *bad[] = {"x"}, *good[] = {"/x"};
	struct policy_rule_opts o = {.paths = good, .npaths = 1};
	char errbuf[256];

	(void)state;
	assert_int_equal(policy_add_opts(p, POLICY_ALLOW, "tcp://a.test:443", &o, "t", errbuf,
					 sizeof(errbuf)),
			 -EINVAL);
	assert_string_equal(errbuf, "paths apply only to host rules, not tcp://");
	assert_int_equal(
		policy_add_opts(p, POLICY_ALLOW, "203.0.113.0/24", &o, "t", errbuf, sizeof(errbuf)),
		-EINVAL);
	o.paths = bad;
	assert_int_equal(
		policy_add_opts(p, POLICY_ALLOW, "a.test", &o, "t", errbuf, sizeof(errbuf)),
		-EINVAL);
	assert_string_equal(errbuf, "path 1: a path starts with '/'");
	o = (struct policy_rule_opts){.inspect = true};
	assert_int_equal(policy_add_opts(p, POLICY_DENY, "a.test", &o, "t", errbuf, sizeof(errbuf)),
			 -EINVAL);
	assert_int_equal(policy_count(p), 0);
	assert_false(policy_inspects(p));
	assert_int_equal(
		policy_add_opts(p, POLICY_ALLOW, "a.test", &o, "t", errbuf, sizeof(errbuf)), 0);
	assert_true(policy_inspects(p));
	policy_free(p);
}

int
main(void)
{
	const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_add_refusals),
	};
	int failed = 0;

	failed += RUN_TABLE("path_check", check_cases, run_check_case);
	failed += RUN_TABLE("path_match", match_cases, run_match_case);
	failed += RUN_TABLE("decide", decide_cases, run_decide_case);
	failed += cmocka_run_group_tests_name("misc", misc, NULL, NULL);
	return failed ? 1 : 0;
}
