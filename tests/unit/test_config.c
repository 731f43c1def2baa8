// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/policy/config.c. A table of JSON documents fed to
 * config_load_buf(), each with the rule count it yields or the error and the
 * message (JSON path first) it must produce; then config_load_file() on real
 * files in a temporary directory: a valid policy and the decisions it makes,
 * missing file, directory, empty, over the size limit, and a syntax error. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "table.h"

#include "policy/policy.h"

#define CONFIG_MAX_SIZE (16u << 20)

struct buf_case {
	const char *name;
	const char *json;
	int err;
	const char *msg;    /* the message starts with this; NULL when err is 0 */
	unsigned int count; /* rules added (on error: before it) */
};

static const struct buf_case buf_cases[] = {
	{"one-rule", "{\"allow\": [\"example.com\"]}", 0, NULL, 1},
	{"schema-example",
	 "{ \"allow\": [ \"github.com\", \"tcp://github.com:22\",\n"
	 "              { \"rule\": \"api.example.test\", \"methods\": [\"GET\", \"HEAD\"] } ],\n"
	 "  \"deny\":  [ \"gist.github.com\" ] }\n",
	 0, NULL, 4},
	{"version-1", "{\"version\": 1, \"allow\": [\"example.com\"]}", 0, NULL, 1},
	{"version-1.0", "{\"version\": 1.0}", 0, NULL, 0},
	{"empty-object", "{}", 0, NULL, 0},
	{"empty-arrays", "{\"allow\": [], \"deny\": []}", 0, NULL, 0},
	{"deny-only", "{\"deny\": [\"example.com\", \"*:25\"]}", 0, NULL, 2},
	{"whitespace", " \r\n\t{ \"allow\" : [ \"a.test\" ] } \n\n", 0, NULL, 1},
	{"object-without-methods", "{\"allow\": [{\"rule\": \"a.test\"}]}", 0, NULL, 1},
	{"methods-case", "{\"allow\": [{\"methods\": [\"get\"], \"rule\": \"a.test\"}]}", 0, NULL,
	 1},
	{"escaped-slash", "{\"allow\": [\"203.0.113.0\\/24\"]}", 0, NULL, 1},
	{"empty", "", -EINVAL, "empty policy", 0},
	{"blank", "  \n\t ", -EINVAL, "empty policy", 0},
	{"array-root", "[\"example.com\"]", -EINVAL, "expected a JSON object at the top level", 0},
	{"string-root", "\"example.com\"", -EINVAL, "expected a JSON object at the top level", 0},
	{"null-root", "null", -EINVAL, "expected a JSON object at the top level", 0},
	{"truncated", "{\"allow\": [\"a.test\"", -EINVAL, "JSON syntax error at line 1", 0},
	{"open-brace", "{", -EINVAL, "JSON syntax error at line 1", 0},
	{"trailing-comma", "{\"allow\": [\"a.test\",]}", -EINVAL,
	 "JSON syntax error at line 1, column 21 (byte offset 20)", 0},
	{"missing-comma-line-4", "{\n  \"allow\": [\n    \"a.test\"\n    \"b.test\"\n  ]\n}",
	 -EINVAL,
	 "JSON syntax error at line 4, column 5 (byte offset 32): ']' expected near '\"b.test\"'",
	 0},
	{"single-quotes", "{'allow': []}", -EINVAL, "JSON syntax error", 0},
	{"comment", "{\"allow\": [] // no\n}", -EINVAL, "JSON syntax error", 0},
	{"data-after", "{} x", -EINVAL,
	 "unexpected data after the JSON value at line 1, column 4 (byte offset 3)", 0},
	{"two-objects", "{}\n{}", -EINVAL, "unexpected data after the JSON value at line 2", 0},
	{"escaped-nul", "{\"allow\": [\"evil.test\\u0000.good.test\"]}", -EINVAL,
	 "NUL character at line 1, column 22", 0},
	{"escaped-backslash-not-nul", "{\"allow\": [\"a\\\\u0000\"]}", -EINVAL,
	 "allow[0]: invalid '\\' in host name", 0},
	{"unknown-key", "{\"allowed\": [\"example.com\"]}", -EINVAL,
	 "unknown key \"allowed\" (expected \"version\", \"mode\", \"allow\", \"deny\", "
	 "\"secrets\", \"comment\" or \"observed\")",
	 0},
	/* secrets: each definition checked, the JSON path first */
	{"secret",
	 "{\"secrets\": {\"GH\": {\"from\": \"env:GH_REAL\", \"hosts\": [\"api.github.com\", "
	 "\"**.githubusercontent.com\"], \"comment\": \"ci\"}}, \"allow\": [\"api.github.com\"]}",
	 0, NULL, 1},
	{"secret-kind", "{\"secrets\": {\"GH\": {\"from\": \"vault:x\", \"hosts\": [\"a.test\"]}}}",
	 -EINVAL,
	 "secrets.GH: unknown source \"vault:x\" (expected env:VAR, file:/PATH, "
	 "command:CMDLINE or fd:N)",
	 0},
	{"secret-no-hosts", "{\"secrets\": {\"GH\": {\"from\": \"env:X\", \"hosts\": []}}}",
	 -EINVAL, "secrets.GH.hosts: expected an array of at least one host", 0},
	{"secret-hosts-missing", "{\"secrets\": {\"GH\": {\"from\": \"env:X\"}}}", -EINVAL,
	 "secrets.GH.hosts: expected an array of at least one host", 0},
	{"secret-from-missing", "{\"secrets\": {\"GH\": {\"hosts\": [\"a.test\"]}}}", -EINVAL,
	 "secrets.GH.from: expected", 0},
	{"secret-name", "{\"secrets\": {\"9X\": {\"from\": \"env:X\", \"hosts\": [\"a.test\"]}}}",
	 -EINVAL, "secrets.9X: a secret's name is an environment variable's", 0},
	{"secret-host-pattern",
	 "{\"secrets\": {\"X\": {\"from\": \"env:X\", \"hosts\": [\"a?.test\"]}}}", -EINVAL,
	 "secrets.X: host \"a?.test\": a name, *.name or **.name", 0},
	{"secret-host-port",
	 "{\"secrets\": {\"X\": {\"from\": \"env:X\", \"hosts\": [\"a.test:443\"]}}}", -EINVAL,
	 "secrets.X: host \"a.test:443\": a name without a port", 0},
	{"secret-file-relative",
	 "{\"secrets\": {\"X\": {\"from\": \"file:tok\", \"hosts\": [\"a.test\"]}}}", -EINVAL,
	 "secrets.X: file:PATH: expected an absolute path", 0},
	{"secret-unknown-key",
	 "{\"secrets\": {\"X\": {\"from\": \"env:X\", \"hosts\": [\"a.test\"], \"to\": 1}}}",
	 -EINVAL, "secrets.X: unknown key \"to\"", 0},
	{"secrets-type", "{\"secrets\": []}", -EINVAL, "secrets: expected an object", 0},
	/* comments: the file's and a rule's; a bad one is an error at its place */
	{"comments",
	 "{\"comment\": \"ours\", \"allow\": [{\"rule\": \"a.test\", \"comment\": \"why\"}]}", 0,
	 NULL, 1},
	{"comment-type", "{\"allow\": [{\"rule\": \"a.test\", \"comment\": []}]}", -EINVAL,
	 "allow[0].comment: expected a string", 0},
	{"comment-control", "{\"allow\": [{\"rule\": \"a.test\", \"comment\": \"a\\nb\"}]}",
	 -EINVAL, "allow[0].comment: at most 512 bytes, no control characters", 1},
	/* what --suggest-policy saw: accepted and ignored, whatever it holds */
	{"observed-ignored",
	 "{\"allow\": [\"a.test\"], \"observed\": {\"rules\": {\"x.test\": {\"count\": 1}}, "
	 "\"allow\": [\"not-a-rule!\"]}}",
	 0, NULL, 1},
	{"observed-not-object", "{\"observed\": [\"a.test\"]}", -EINVAL,
	 "observed: expected an object", 0},
	{"unknown-key-control", "{\"a\\nb\": 1}", -EINVAL, "unknown key \"a?b\"", 0},
	{"duplicate-key", "{\"allow\": [], \"allow\": [\"a.test\"]}", -EINVAL,
	 "duplicate key \"allow\" at line 1, column 15 (byte offset 14)", 0},
	{"duplicate-key-line-3", "{\n  \"deny\": [],\n  \"deny\": []\n}", -EINVAL,
	 "duplicate key \"deny\" at line 3, column 3 (byte offset 18)", 0},
	/* the parser refuses a key twice anywhere, "observed" too, by path */
	{"duplicate-key-observed",
	 "{\"observed\": {\"rules\": {\"a.test\": {\"count\": 1, \"count\": 2}}}}", -EINVAL,
	 "observed.rules.a.test: duplicate key \"count\" at line 1", 0},
	{"not-utf8", "{\"allow\": [\"a\xff.test\"]}", -EINVAL,
	 "JSON syntax error at line 1, column 14 (byte offset 13): unable to decode byte 0xff", 0},
	{"big-integer", "{\"version\": 100000000000000000000}", -EINVAL,
	 "JSON syntax error at line 1, column 33 (byte offset 32): too big integer", 0},
	{"syntax-error-words", "{\"allow\": [tru]}", -EINVAL,
	 "JSON syntax error at line 1, column 12 (byte offset 11): invalid token near 'tru'", 0},
	{"version-2", "{\"version\": 2}", -EINVAL, "version: expected 1", 0},
	{"version-string", "{\"version\": \"1\"}", -EINVAL, "version: expected 1", 0},
	{"version-1.5", "{\"version\": 1.5}", -EINVAL, "version: expected 1", 0},
	{"allow-string", "{\"allow\": \"example.com\"}", -EINVAL,
	 "allow: expected an array of rules", 0},
	{"deny-object", "{\"deny\": {\"rule\": \"a.test\"}}", -EINVAL,
	 "deny: expected an array of rules", 0},
	{"allow-null", "{\"allow\": null}", -EINVAL, "allow: expected an array of rules", 0},
	{"element-number", "{\"allow\": [\"a.test\", 42]}", -EINVAL,
	 "allow[1]: expected a rule string or an object", 1},
	{"element-null", "{\"deny\": [null]}", -EINVAL,
	 "deny[0]: expected a rule string or an object", 0},
	{"element-array", "{\"allow\": [[\"a.test\"]]}", -EINVAL,
	 "allow[0]: expected a rule string or an object", 0},
	{"missing-rule", "{\"allow\": [{\"methods\": [\"GET\"]}]}", -EINVAL,
	 "allow[0]: missing \"rule\"", 0},
	{"rule-number", "{\"allow\": [{\"rule\": 7}]}", -EINVAL, "allow[0].rule: expected a string",
	 0},
	{"rule-unknown-key", "{\"allow\": [{\"rule\": \"a.test\", \"method\": [\"GET\"]}]}",
	 -EINVAL,
	 "allow[0]: unknown key \"method\" (expected \"rule\", \"methods\", \"paths\", "
	 "\"inspect\", \"strip_headers\", \"set_headers\" or \"comment\")",
	 0},
	/* header hooks (a secret's definition is checked later, once the
	 * policy is whole: test_policy.c) */
	{"hooks",
	 "{\"allow\": [{\"rule\": \"a.test\", \"strip_headers\": [\"cookie\", \"X-A\"], "
	 "\"set_headers\": {\"Authorization\": {\"secret\": \"T\", \"prefix\": \"Bearer \", "
	 "\"require_placeholder\": true}, \"X-K\": {\"secret\": \"K\"}}}]}",
	 0, NULL, 1},
	{"hooks-strip-string",
	 "{\"allow\": [{\"rule\": \"a.test\", \"strip_headers\": \"cookie\"}]}", -EINVAL,
	 "allow[0].strip_headers: expected an array of header names", 0},
	{"hooks-strip-empty", "{\"allow\": [{\"rule\": \"a.test\", \"strip_headers\": []}]}",
	 -EINVAL, "allow[0].strip_headers: expected an array of header names", 0},
	{"hooks-strip-number", "{\"allow\": [{\"rule\": \"a.test\", \"strip_headers\": [1]}]}",
	 -EINVAL, "allow[0].strip_headers[0]: expected a string", 0},
	{"hooks-strip-bad-name",
	 "{\"allow\": [{\"rule\": \"a.test\", \"strip_headers\": [\"x y\"]}]}", -EINVAL,
	 "allow[0]: strip_headers[0]: \"x y\" is no header name", 0},
	{"hooks-strip-host", "{\"allow\": [{\"rule\": \"a.test\", \"strip_headers\": [\"HOST\"]}]}",
	 -EINVAL, "allow[0]: strip_headers[0]: HOST routes or frames the request", 0},
	{"hooks-strip-proxy",
	 "{\"allow\": [{\"rule\": \"a.test\", \"strip_headers\": [\"Proxy-Authorization\"]}]}",
	 -EINVAL, "allow[0]: strip_headers[0]: Proxy-Authorization is for proxies", 0},
	{"hooks-strip-twice",
	 "{\"allow\": [{\"rule\": \"a.test\", \"strip_headers\": [\"a\", \"A\"]}]}", -EINVAL,
	 "allow[0]: strip_headers[1]: A twice", 0},
	{"hooks-set-and-strip",
	 "{\"allow\": [{\"rule\": \"a.test\", \"strip_headers\": [\"x-k\"], "
	 "\"set_headers\": {\"X-K\": {\"secret\": \"K\"}}}]}",
	 -EINVAL, "allow[0]: set_headers[0]: X-K is stripped too", 0},
	{"hooks-set-no-secret",
	 "{\"allow\": [{\"rule\": \"a.test\", \"set_headers\": {\"X-K\": {\"prefix\": \"a\"}}}]}",
	 -EINVAL, "allow[0].set_headers.X-K: expected \"secret\"", 0},
	{"hooks-set-unknown-key",
	 "{\"allow\": [{\"rule\": \"a.test\", \"set_headers\": {\"X-K\": {\"secret\": \"K\", "
	 "\"value\": \"v\"}}}]}",
	 -EINVAL, "allow[0].set_headers.X-K: unknown key \"value\"", 0},
	{"hooks-set-placeholder-string",
	 "{\"allow\": [{\"rule\": \"a.test\", \"set_headers\": {\"X-K\": {\"secret\": \"K\", "
	 "\"require_placeholder\": \"yes\"}}}]}",
	 -EINVAL,
	 "allow[0].set_headers.X-K: unknown key \"require_placeholder\" or not of its type", 0},
	{"hooks-set-length",
	 "{\"allow\": [{\"rule\": \"a.test\", \"set_headers\": {\"content-length\": "
	 "{\"secret\": \"K\"}}}]}",
	 -EINVAL, "allow[0]: set_headers[0]: content-length routes or frames the request", 0},
	{"hooks-set-prefix-crlf",
	 "{\"allow\": [{\"rule\": \"a.test\", \"set_headers\": {\"X-K\": {\"secret\": \"K\", "
	 "\"prefix\": \"a\\r\\nX-Evil: 1\"}}}]}",
	 -EINVAL, "allow[0]: set_headers[0]: X-K: the prefix takes visible ASCII and blanks only",
	 0},
	{"hooks-set-empty", "{\"allow\": [{\"rule\": \"a.test\", \"set_headers\": {}}]}", -EINVAL,
	 "allow[0].set_headers: expected an object", 0},
	{"hooks-on-deny", "{\"deny\": [{\"rule\": \"a.test\", \"strip_headers\": [\"cookie\"]}]}",
	 -EINVAL, "deny[0]: header hooks apply to allow rules", 0},
	{"hooks-on-tcp",
	 "{\"allow\": [{\"rule\": \"tcp://a.test:22\", \"strip_headers\": [\"cookie\"]}]}", -EINVAL,
	 "allow[0]: header hooks apply only to host rules, not tcp://", 0},
	{"hooks-on-addr",
	 "{\"allow\": [{\"rule\": \"203.0.113.7\", \"strip_headers\": [\"cookie\"]}]}", -EINVAL,
	 "allow[0]: header hooks apply only to host rules, not addresses", 0},
	/* paths and inspect (HTTPS inspection) and the limited mode */
	{"paths", "{\"allow\": [{\"rule\": \"a.test\", \"paths\": [\"/x\", \"/y/*/z\"]}]}", 0, NULL,
	 1},
	{"paths-string", "{\"allow\": [{\"rule\": \"a.test\", \"paths\": \"/x\"}]}", -EINVAL,
	 "allow[0].paths: expected an array of paths", 0},
	{"paths-empty", "{\"allow\": [{\"rule\": \"a.test\", \"paths\": []}]}", -EINVAL,
	 "allow[0].paths: expected at least one path", 0},
	{"paths-number", "{\"allow\": [{\"rule\": \"a.test\", \"paths\": [\"/x\", 2]}]}", -EINVAL,
	 "allow[0].paths[1]: expected a string", 0},
	{"paths-relative", "{\"allow\": [{\"rule\": \"a.test\", \"paths\": [\"x\"]}]}", -EINVAL,
	 "allow[0].paths[0]: a path starts with '/'", 0},
	{"paths-dotdot", "{\"allow\": [{\"rule\": \"a.test\", \"paths\": [\"/a/../b\"]}]}", -EINVAL,
	 "allow[0].paths[0]: '.' or '..' segment", 0},
	{"paths-on-tcp", "{\"allow\": [{\"rule\": \"tcp://a.test:22\", \"paths\": [\"/x\"]}]}",
	 -EINVAL, "allow[0]: paths apply only to host rules, not tcp://", 0},
	{"inspect", "{\"allow\": [{\"rule\": \"a.test\", \"inspect\": true}]}", 0, NULL, 1},
	{"inspect-string", "{\"allow\": [{\"rule\": \"a.test\", \"inspect\": \"yes\"}]}", -EINVAL,
	 "allow[0].inspect: expected true or false", 0},
	{"inspect-deny", "{\"deny\": [{\"rule\": \"a.test\", \"inspect\": true}]}", -EINVAL,
	 "deny[0]: inspect applies to allow rules", 0},
	{"inspect-on-addr", "{\"allow\": [{\"rule\": \"203.0.113.7\", \"inspect\": true}]}",
	 -EINVAL, "allow[0]: inspect applies only to host rules, not addresses", 0},
	{"mode-limited", "{\"mode\": \"limited\", \"allow\": [\"a.test\"]}", 0, NULL, 1},
	{"mode-full", "{\"mode\": \"full\"}", 0, NULL, 0},
	{"mode-other", "{\"mode\": \"readonly\"}", -EINVAL,
	 "mode: expected \"full\" or \"limited\"", 0},
	{"rule-duplicate-key", "{\"allow\": [{\"rule\": \"a.test\", \"rule\": \"b.test\"}]}",
	 -EINVAL, "allow[0]: duplicate key \"rule\" at line 1, column 31 (byte offset 30)", 0},
	{"rule-duplicate-key-third",
	 "{\"deny\": [\"x.test\", \"y.test\", {\"rule\": \"a.test\", \"methods\": [\"GET\"], "
	 "\"methods\": [\"PUT\"]}]}",
	 -EINVAL, "deny[2]: duplicate key \"methods\"", 0},
	{"methods-string", "{\"allow\": [{\"rule\": \"a.test\", \"methods\": \"GET\"}]}", -EINVAL,
	 "allow[0].methods: expected an array of methods", 0},
	{"methods-empty", "{\"allow\": [{\"rule\": \"a.test\", \"methods\": []}]}", -EINVAL,
	 "allow[0].methods: expected at least one method", 0},
	{"methods-number",
	 "{\"allow\": [\"x.test\", \"y.test\", {\"rule\": \"a.test\", \"methods\": [\"GET\", 1]}]}",
	 -EINVAL, "allow[2].methods[1]: expected a string", 2},
	{"methods-unknown", "{\"allow\": [{\"rule\": \"a.test\", \"methods\": [\"FETCH\"]}]}",
	 -EINVAL, "allow[0].methods[0]: unknown method 'FETCH' (known: GET, HEAD", 0},
	{"methods-list-in-one",
	 "{\"allow\": [{\"rule\": \"a.test\", \"methods\": [\"GET,HEAD\"]}]}", -EINVAL,
	 "allow[0].methods[0]: expected one method, not a list", 0},
	{"methods-empty-name", "{\"allow\": [{\"rule\": \"a.test\", \"methods\": [\"\"]}]}",
	 -EINVAL, "allow[0].methods[0]: expected a method name", 0},
	{"methods-on-tcp",
	 "{\"allow\": [{\"rule\": \"tcp://git.test:22\", \"methods\": [\"GET\"]}]}", -EINVAL,
	 "allow[0]: methods apply only to host rules", 0},
	{"methods-on-deny", "{\"deny\": [{\"rule\": \"a.test\", \"methods\": [\"POST\"]}]}", 0,
	 NULL, 1},
	{"deny-bad-port", "{\"deny\": [\"example.com:99999\"]}", -EINVAL,
	 "deny[0]: expected 1-65535 for the port", 0},
	{"allow-bare-star", "{\"allow\": [\"a.test\", \"b.test\", \"*\"]}", -EINVAL,
	 "allow[2]: a bare '*'", 2},
	{"allow-host-bits", "{\"allow\": [\"203.0.113.1/24\"]}", -EINVAL, "allow[0]: host bits set",
	 0},
	{"allow-empty-rule", "{\"allow\": [\"\"]}", -EINVAL, "allow[0]: empty rule", 0},
	{"rule-object-bad", "{\"deny\": [{\"rule\": \"tcp://x.test\"}]}", -EINVAL,
	 "deny[0]: tcp:// rules need a port", 0},
	/* Regression: deeper than the nesting limit was "JSON syntax error at line 1,
	 * column 1009", which sent users looking for a typo. */
	{"deep-nesting", NULL, -EINVAL,
	 "JSON nesting too deep (limit 1000) at line 1, column 1009 (byte offset 1008)",
	 0}, /* filled in main() */
};

static char deep[4100];

static void
run_buf_case(void **state)
{
	const struct buf_case *c = *state;
	const char *json = c->json ? c->json : deep;
	struct policy *p = policy_new();
	char errbuf[512];
	int err;

	assert_non_null(p);
	memset(errbuf, 'x', sizeof(errbuf));
	err = config_load_buf(p, json, strlen(json), "test.json", errbuf, sizeof(errbuf));
	if (err != c->err)
		fail_msg("error %d (%s), want %d", err, errbuf, c->err);
	if (c->msg && strncmp(errbuf, c->msg, strlen(c->msg)))
		fail_msg("message \"%s\", want \"%s...\"", errbuf, c->msg);
	if (!c->msg)
		assert_string_equal(errbuf, "");
	assert_int_equal(policy_count(p), c->count);
	policy_free(p);
}

/* ---- buffers that a string table cannot hold ----------------------------- */

static void
test_buf_embedded_nul(void **state)
{
	static const char json[] = "{\"allow\": [\"a.test\"]}\0{\"deny\": [\"a.test\"]}";
	struct policy *p = policy_new();
	char errbuf[256];

	(void)state;
	assert_int_equal(config_load_buf(p, json, sizeof(json) - 1, "t", errbuf, sizeof(errbuf)),
			 -EINVAL);
	assert_string_equal(errbuf, "NUL character at line 1, column 22 (byte offset 21)");
	/* Only len bytes are read: the same buffer cut before the NUL is fine. */
	assert_int_equal(config_load_buf(p, json, 21, "t", errbuf, sizeof(errbuf)), 0);
	assert_int_equal(policy_count(p), 1);
	policy_free(p);
}

static void
test_buf_too_big(void **state)
{
	size_t len = CONFIG_MAX_SIZE + 1;
	struct policy *p = policy_new();
	char *json = malloc(len), errbuf[256];

	(void)state;
	assert_non_null(json);
	memset(json, ' ', len);
	json[0] = '{';
	json[len - 1] = '}';
	assert_int_equal(config_load_buf(p, json, len, "t", errbuf, sizeof(errbuf)), -EFBIG);
	assert_string_equal(errbuf, "policy larger than 16 MiB");
	/* One byte less is accepted. */
	json[len - 2] = '}';
	assert_int_equal(config_load_buf(p, json, len - 1, "t", errbuf, sizeof(errbuf)), 0);
	free(json);
	policy_free(p);
}

static void
test_buf_args(void **state)
{
	struct policy *p = policy_new();
	char errbuf[64];

	(void)state;
	assert_int_equal(config_load_buf(NULL, "{}", 2, "t", errbuf, sizeof(errbuf)), -EINVAL);
	assert_int_equal(config_load_buf(p, NULL, 2, "t", errbuf, sizeof(errbuf)), -EINVAL);
	assert_int_equal(config_load_buf(p, NULL, 0, "t", errbuf, sizeof(errbuf)), -EINVAL);
	assert_string_equal(errbuf, "empty policy (expected a JSON object)");
	/* No error buffer at all, and a one-byte one. */
	assert_int_equal(config_load_buf(p, "[]", 2, "t", NULL, 0), -EINVAL);
	assert_int_equal(config_load_buf(p, "[]", 2, "t", errbuf, 1), -EINVAL);
	assert_string_equal(errbuf, "");
	assert_int_equal(config_load_file(p, NULL, errbuf, sizeof(errbuf)), -EINVAL);
	policy_free(p);
}

/* json: prefix, then n x open, then n x close, then suffix. */
static char *
nested(const char *prefix, size_t n, char open, char close, const char *suffix)
{
	size_t lp = strlen(prefix), ls = strlen(suffix);
	char *json = malloc(lp + 2 * n + ls + 1);

	assert_non_null(json);
	memcpy(json, prefix, lp);
	memset(json + lp, open, n);
	memset(json + lp + n, close, n);
	memcpy(json + lp + 2 * n, suffix, ls + 1);
	return json;
}

static int
load(const char *json, char *errbuf, size_t errlen)
{
	struct policy *p = policy_new();
	int err;

	assert_non_null(p);
	err = config_load_buf(p, json, strlen(json), "t", errbuf, errlen);
	policy_free(p);
	return err;
}

/* Nesting: at the loader's limit the document parses (and fails on the schema,
 * as it should); one level more is "nesting too deep" at the bracket that
 * opens that level, on whatever line it is; brackets inside strings do not
 * count; a syntax error before the deep part is still a syntax error. */
static void
test_buf_nesting(void **state)
{
	char errbuf[256], *json;

	(void)state;
	/* the top-level object is level 1: 999 arrays inside it make 1000 */
	json = nested("{\"allow\":", 999, '[', ']', "}");
	assert_int_equal(load(json, errbuf, sizeof(errbuf)), -EINVAL);
	assert_string_equal(errbuf,
			    "allow[0]: expected a rule string or an object {\"rule\": ...}");
	free(json);
	json = nested("{\"allow\":", 1000, '[', ']', "}");
	assert_int_equal(load(json, errbuf, sizeof(errbuf)), -EINVAL);
	assert_string_equal(errbuf, "JSON nesting too deep (limit 1000) at line 1, column 1009 "
				    "(byte offset 1008)");
	free(json);
	/* objects count as arrays do, and the place is line and column: the
	 * 999th {"a": opens level 1001 (object, array, 999 objects) */
	json = malloc(16 + 999 * 5 + 1 + 999 + 3);
	assert_non_null(json);
	strcpy(json, "{\n \"allow\": [\n  ");
	for (int i = 0; i < 999; i++)
		strcat(json, "{\"a\":");
	strcat(json, "1");
	memset(json + strlen(json), '}', 999);
	strcpy(json + 16 + 999 * 5 + 1 + 999, "]}");
	assert_int_equal(load(json, errbuf, sizeof(errbuf)), -EINVAL);
	assert_string_equal(errbuf, "JSON nesting too deep (limit 1000) at line 3, column 4993 "
				    "(byte offset 5006)");
	free(json);
	/* deep brackets in a string are a (bad) rule, not nesting */
	json = nested("{\"allow\": [\"", 2000, '[', ']', "\"]}");
	assert_int_equal(load(json, errbuf, sizeof(errbuf)), -EINVAL);
	assert_null(strstr(errbuf, "nesting"));
	assert_int_equal(strncmp(errbuf, "allow[0]: ", 10), 0);
	free(json);
	/* a syntax error before the limit is reached stays one */
	json = nested("{\"allow\": x", 2000, '[', ']', "}");
	assert_int_equal(load(json, errbuf, sizeof(errbuf)), -EINVAL);
	assert_string_equal(errbuf, "JSON syntax error at line 1, column 11 (byte offset 10): "
				    "invalid token near 'x'");
	free(json);
	/* a quote escaped inside a string does not end it (nor does its '['
	 * count): the 1000th '[' after the 9-byte key opens level 1001 */
	json = nested("{\"a\\\"[\": ", 1000, '[', ']', "}");
	assert_int_equal(load(json, errbuf, sizeof(errbuf)), -EINVAL);
	assert_string_equal(errbuf, "JSON nesting too deep (limit 1000) at line 1, column 1009 "
				    "(byte offset 1008)");
	free(json);
}

/* A long "allow" array, and rules keep the source even after the caller's
 * string is gone. */
static void
test_buf_many_rules(void **state)
{
	struct policy *p = policy_new();
	struct policy_query q = {.port = 443, .proto = POLICY_P_TLS};
	struct policy_decision d;
	size_t cap = 64 << 10, len = 0;
	char *json = malloc(cap), *src = strdup("many.json"), host[32], errbuf[256];
	int i;

	(void)state;
	assert_non_null(json);
	len += snprintf(json + len, cap - len, "{\"allow\": [");
	for (i = 0; i < 2000; i++)
		len += snprintf(json + len, cap - len, "%s\"h%d.test\"", i ? "," : "", i);
	len += snprintf(json + len, cap - len, "]}");
	assert_true(len < cap);
	assert_int_equal(config_load_buf(p, json, len, src, errbuf, sizeof(errbuf)), 0);
	free(src);
	assert_int_equal(policy_count(p), 2000);
	q.host = host;
	snprintf(host, sizeof(host), "h1999.test");
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.reason, POLICY_R_ALLOWED);
	assert_int_equal(d.rule->index, 2000);
	assert_string_equal(d.rule->source, "many.json");
	free(json);
	policy_free(p);
}

/* The pace hook: a load of N rules calls it once per POLICY_PACE_EVERY,
 * and the policy is the same; policy_free calls it too; unset, nothing
 * calls it. */
static void
count_pace(void *arg)
{
	(*(int *)arg)++;
}

static void
test_buf_paced(void **state)
{
	struct policy *p = policy_new();
	struct policy_query q = {.host = "h1999.test", .port = 443, .proto = POLICY_P_TLS};
	struct policy_decision d;
	size_t cap = 64 << 10, len = 0;
	char *json = malloc(cap), errbuf[256];
	int calls = 0;

	(void)state;
	assert_non_null(json);
	len += snprintf(json + len, cap - len, "{\"allow\": [");
	for (int i = 0; i < 2000; i++)
		len += snprintf(json + len, cap - len, "%s\"h%d.test\"", i ? "," : "", i);
	len += snprintf(json + len, cap - len, "]}");
	policy_set_pace(count_pace, &calls);
	assert_int_equal(config_load_buf(p, json, len, "paced", errbuf, sizeof(errbuf)), 0);
	assert_int_equal(calls, 2000 / POLICY_PACE_EVERY);
	assert_int_equal(policy_count(p), 2000);
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.reason, POLICY_R_ALLOWED);
	calls = 0;
	policy_free(p);
	assert_true(calls >= 2000 / POLICY_PACE_EVERY);
	policy_set_pace(NULL, NULL);
	calls = 0;
	p = policy_new();
	assert_int_equal(config_load_buf(p, json, len, "unpaced", errbuf, sizeof(errbuf)), 0);
	policy_free(p);
	assert_int_equal(calls, 0);
	free(json);
}

/* ---- config_load_file ------------------------------------------------------ */

struct files {
	char dir[64];
	char path[128];
};

static int
files_setup(void **state)
{
	struct files *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/egressctl-test-config-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int
files_teardown(void **state)
{
	struct files *f = *state;

	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static const char *
write_file(struct files *f, const char *name, const char *text, off_t size)
{
	int fd;

	snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, name);
	fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	if (text)
		assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	if (size)
		assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
	return f->path;
}

static void
decide_expect(struct policy *p, const char *host, uint16_t port, enum policy_proto proto,
	      const char *method, enum policy_reason want)
{
	struct policy_query q = {.host = host, .port = port, .proto = proto, .method = method};
	struct policy_decision d;

	assert_int_equal(policy_decide(p, &q, &d), 0);
	if (d.reason != want)
		fail_msg("%s:%u: reason %d, want %d", host, port, d.reason, want);
}

static void
test_file_valid(void **state)
{
	struct files *f = *state;
	struct policy *p = policy_new();
	struct policy_query q = {.host = "github.com", .port = 443, .proto = POLICY_P_TLS};
	struct policy_decision d;
	char errbuf[256];
	const char *path = write_file(f, "policy.json",
				      "{ \"version\": 1,\n"
				      "  \"allow\": [ \"github.com\", \"tcp://github.com:22\",\n"
				      "             { \"rule\": \"api.example.test\", \"methods\": "
				      "[\"GET\", \"HEAD\"] } ],\n"
				      "  \"deny\":  [ \"gist.github.com\" ] }\n",
				      0);

	memset(errbuf, 'x', sizeof(errbuf));
	assert_int_equal(config_load_file(p, path, errbuf, sizeof(errbuf)), 0);
	assert_string_equal(errbuf, "");
	assert_int_equal(policy_count(p), 4);
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.reason, POLICY_R_ALLOWED);
	assert_string_equal(d.rule->source, path);
	decide_expect(p, "github.com", 22, POLICY_P_TCP, NULL, POLICY_R_ALLOWED);
	decide_expect(p, "gist.github.com", 443, POLICY_P_TLS, NULL, POLICY_R_DENY_RULE);
	decide_expect(p, "api.example.test", 80, POLICY_P_HTTP, "GET", POLICY_R_ALLOWED);
	decide_expect(p, "api.example.test", 80, POLICY_P_HTTP, "POST", POLICY_R_METHOD);
	assert_true(policy_host_possible(p, "github.com"));
	assert_true(policy_tcp_rule(p, "github.com", 22));
	policy_free(p);
}

static void
test_file_errors(void **state)
{
	struct files *f = *state;
	struct policy *p = policy_new();
	char errbuf[512], want[512];
	const char *path;

	/* Missing. */
	snprintf(f->path, sizeof(f->path), "%s/missing.json", f->dir);
	assert_int_equal(config_load_file(p, f->path, errbuf, sizeof(errbuf)), -ENOENT);
	snprintf(want, sizeof(want), "cannot read %s: No such file or directory", f->path);
	assert_string_equal(errbuf, want);
	/* A directory. */
	assert_int_equal(config_load_file(p, f->dir, errbuf, sizeof(errbuf)), -EISDIR);
	snprintf(want, sizeof(want), "cannot read %s: Is a directory", f->dir);
	assert_string_equal(errbuf, want);
	/* Empty. */
	path = write_file(f, "empty.json", NULL, 0);
	assert_int_equal(config_load_file(p, path, errbuf, sizeof(errbuf)), -EINVAL);
	snprintf(want, sizeof(want), "%s: empty policy (expected a JSON object)", path);
	assert_string_equal(errbuf, want);
	unlink(path);
	/* Over the limit (sparse). */
	path = write_file(f, "huge.json", "{}", CONFIG_MAX_SIZE + 1);
	assert_int_equal(config_load_file(p, path, errbuf, sizeof(errbuf)), -EFBIG);
	snprintf(want, sizeof(want), "%s: larger than 16 MiB, the limit for a policy", path);
	assert_string_equal(errbuf, want);
	unlink(path);
	/* Exactly at the limit: "{}" and NUL padding, which is refused as such. */
	path = write_file(f, "limit.json", "{}", CONFIG_MAX_SIZE);
	assert_int_equal(config_load_file(p, path, errbuf, sizeof(errbuf)), -EINVAL);
	assert_non_null(strstr(errbuf, "NUL character at line 1, column 3 (byte offset 2)"));
	unlink(path);
	/* Syntax error: the file name, then where. */
	path = write_file(f, "bad.json", "{\n  \"allow\": [\"a.test\" \"b.test\"]\n}\n", 0);
	assert_int_equal(config_load_file(p, path, errbuf, sizeof(errbuf)), -EINVAL);
	snprintf(want, sizeof(want), "%s: JSON syntax error at line 2", path);
	assert_memory_equal(errbuf, want, strlen(want));
	unlink(path);
	/* A bad rule: the file name, then the JSON path. */
	path = write_file(f, "rule.json", "{\"deny\": [\"x.test:0\"]}", 0);
	assert_int_equal(config_load_file(p, path, errbuf, sizeof(errbuf)), -EINVAL);
	snprintf(want, sizeof(want), "%s: deny[0]: expected 1-65535 for the port", path);
	assert_string_equal(errbuf, want);
	assert_int_equal(policy_count(p), 0);
	policy_free(p);
}

static void
test_file_dev_null(void **state)
{
	struct policy *p = policy_new();
	char errbuf[256];

	(void)state;
	assert_int_equal(config_load_file(p, "/dev/null", errbuf, sizeof(errbuf)), -EINVAL);
	assert_string_equal(errbuf, "/dev/null: empty policy (expected a JSON object)");
	policy_free(p);
}

int
main(void)
{
	const struct CMUnitTest bufs[] = {
		cmocka_unit_test(test_buf_embedded_nul), cmocka_unit_test(test_buf_too_big),
		cmocka_unit_test(test_buf_args),	 cmocka_unit_test(test_buf_many_rules),
		cmocka_unit_test(test_buf_nesting),	 cmocka_unit_test(test_buf_paced),
	};
	const struct CMUnitTest files[] = {
		cmocka_unit_test_setup_teardown(test_file_valid, files_setup, files_teardown),
		cmocka_unit_test_setup_teardown(test_file_errors, files_setup, files_teardown),
		cmocka_unit_test(test_file_dev_null),
	};
	int failed = 0;

	/* Deeper than the loader's nesting limit (1000). */
	memcpy(deep, "{\"allow\":", 9);
	memset(deep + 9, '[', sizeof(deep) - 10);
	failed += RUN_TABLE("load_buf", buf_cases, run_buf_case);
	failed += cmocka_run_group_tests_name("load_buf_misc", bufs, NULL, NULL);
	failed += cmocka_run_group_tests_name("load_file", files, NULL, NULL);
	return failed ? 1 : 0;
}
