// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the run's summary (confine/summary.c) and the suggested
 * policy (confine/suggest.c): one row per destination (a name's lookup and its
 * connections are one row, whichever came first), the totals, the text,
 * markdown and JSON forms, --summary FILE appended; the marks of rules that
 * need a human (random-looking and long labels, local addresses, seen
 * once), widening to "**.domain" at SUGGEST_WIDEN_AT names by registrable
 * domain, and merging with what a file holds (counts, first and last seen,
 * a human's rules kept). No root, no network. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cJSON.h>
#include <cmocka.h>

#include "confine/suggest.h"
#include "confine/summary.h"
#include "parse/psl.h"
#include "audit/audit.h"
#include "policy/policy.h"
#include "table.h"

static void
rec(struct summary *s, const char *decision, const char *source, const char *host, uint16_t port,
    const char *suggest, uint32_t pid, const char *comm)
{
	char dest[300];
	struct audit_rec r = {
		.decision = decision,
		.reason = strcmp(decision, "allow") ? "no rule allows it" : "rule 1",
		.source = source,
		.host = host,
		.port = port,
		.pid = pid,
		.comm = comm,
		.suggest = suggest,
	};

	if (port)
		snprintf(dest, sizeof(dest), "%s:%u", host, port);
	else
		snprintf(dest, sizeof(dest), "%s", host);
	r.dest = dest;
	summary_add(s, &r);
}

static char *
render(const struct summary *s, enum summary_format fmt, bool audit)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	summary_write(s, f, fmt, audit, NULL);
	fclose(f);
	return text;
}

static void
test_one_row_dns_first(void **state)
{
	struct summary *s = summary_new();
	char *t;

	(void)state;
	rec(s, "allow", "dns", "a.example.test", 0, NULL, 10, "python3");
	rec(s, "allow", "transparent", "a.example.test", 80, "a.example.test", 11, "curl");
	rec(s, "allow", "transparent", "a.example.test", 80, "a.example.test", 11, "curl");
	rec(s, "deny", "dns", "blocked.test", 0, "blocked.test", 12, "dig");
	t = render(s, SUMMARY_TEXT, false);
	assert_non_null(strstr(t, "summary: 2 allowed, 1 denied, 2 destinations\n"));
	assert_non_null(strstr(t, "  allowed        2  a.example.test:80 (dns: allowed)\n"));
	assert_null(strstr(t, "a.example.test\n")); /* no row of its own */
	assert_non_null(strstr(t, "  denied         1  blocked.test "));
	free(t);
	summary_free(s);
}

static void
test_one_row_conn_first(void **state)
{
	struct summary *s = summary_new();
	cJSON *doc, *d;
	char *t;

	(void)state;
	/* audit mode: the connection first, then a lookup of the same name;
	 * then another port of it: a row of its own */
	rec(s, "would-deny", "connect", "b.example.test", 443, "b.example.test", 20, "curl");
	rec(s, "would-deny", "dns", "b.example.test", 0, "b.example.test", 21, "python3");
	rec(s, "would-deny", "http", "b.example.test", 80, "b.example.test", 20, "curl");
	t = render(s, SUMMARY_JSON, true);
	doc = cJSON_Parse(t);
	assert_non_null(doc);
	assert_int_equal(cJSON_GetObjectItem(doc, "schema")->valueint, SUMMARY_SCHEMA);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "destinations")), 2);
	d = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "destinations"), 0);
	assert_string_equal(cJSON_GetObjectItem(d, "destination")->valuestring,
			    "b.example.test:443");
	assert_string_equal(cJSON_GetObjectItem(d, "host")->valuestring, "b.example.test");
	assert_int_equal(cJSON_GetObjectItem(d, "port")->valueint, 443);
	assert_int_equal(cJSON_GetObjectItem(d, "denied")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(d, "dns_denied")->valueint, 1);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(d, "dns")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "who")), 2);
	cJSON_Delete(doc);
	free(t);
	t = render(s, SUMMARY_MARKDOWN, true);
	assert_non_null(strstr(t, "### egressctl: 0 allowed, 2 would deny, 2 destinations\n"));
	assert_non_null(strstr(t, "| would deny | 1 | b.example.test:443 \\(dns: would deny\\) | "
				  "curl\\[20\\], python3\\[21\\] | --allow b.example.test |\n"));
	free(t);
	summary_free(s);
}

/* A denied lookup of a name shaped like data sent out in it (make demo's
 * c2VjcmV0.exfil.test) was offered as "--allow c2vjcmv0.exfil.test" by
 * every form of the summary: it must be flagged and not proposed. */
static void
test_suspect_not_suggested(void **state)
{
	struct summary *s = summary_new();
	char *t;

	(void)state;
	rec(s, "deny", "dns", "c2vjcmv0.exfil.test", 0, "c2vjcmv0.exfil.test", 30, "python3");
	rec(s, "deny", "dns", "blocked.test", 0, "blocked.test", 31, "dig");
	t = render(s, SUMMARY_TEXT, false);
	assert_non_null(strstr(t, "(review: encoded-looking label; not suggested)\n"));
	assert_null(strstr(t, "--allow c2vjcmv0"));
	assert_non_null(strstr(t, "--allow blocked.test\n"));
	free(t);
	t = render(s, SUMMARY_MARKDOWN, false);
	assert_non_null(strstr(t, "| review: encoded-looking label; not suggested |\n"));
	assert_null(strstr(t, "--allow c2vjcmv0"));
	free(t);
	t = render(s, SUMMARY_JSON, false);
	assert_non_null(strstr(t, "\"suspect\":\"encoded-looking label\""));
	assert_null(strstr(t, "\"suggest\":\"c2vjcmv0"));
	assert_non_null(strstr(t, "\"suggest\":\"blocked.test\""));
	free(t);
	summary_free(s);
}

/* A rule's "comment" in the policy file follows its decisions into the
 * summary: beside an allowed row, and as a deny rule's words. */
static void
test_rule_comment(void **state)
{
	struct summary *s = summary_new();
	struct audit_rec a = {.decision = "allow",
			      .reason = "rule 1",
			      .source = "connect",
			      .host = "api.test",
			      .port = 443,
			      .dest = "api.test:443",
			      .rule = "api.test",
			      .comment = "the API, for releases"};
	struct audit_rec d = {.decision = "deny",
			      .reason = "denied by rule 2",
			      .source = "connect",
			      .host = "x.api.test",
			      .port = 443,
			      .dest = "x.api.test:443",
			      .rule = "x.api.test",
			      .comment = "no pastes",
			      .suggest = "x.api.test"};
	char *t;

	(void)state;
	summary_add(s, &a);
	summary_add(s, &d);
	t = render(s, SUMMARY_TEXT, false);
	assert_non_null(strstr(t, "  allowed        1  api.test:443  # the API, for releases\n"));
	assert_non_null(strstr(t, "(denied by rule 2: no pastes)\n"));
	free(t);
	t = render(s, SUMMARY_JSON, false);
	assert_non_null(strstr(t, "\"comment\":\"the API, for releases\""));
	assert_non_null(strstr(t, "\"comment\":\"no pastes\""));
	free(t);
	summary_free(s);
}

static void
test_markdown_escapes(void **state)
{
	struct summary *s = summary_new();
	char *t;

	(void)state;
	rec(s, "deny", "http", "x.test", 80, NULL, 1, "<img|src>");
	t = render(s, SUMMARY_MARKDOWN, false);
	assert_non_null(strstr(t, "&#60;img&#124;src&#62;\\[1\\]"));
	assert_null(strstr(t, "<img"));
	free(t);
	summary_free(s);
}

static void
test_append_file(void **state)
{
	char path[] = "/tmp/egr-test-summary-XXXXXX", buf[4096];
	struct summary *s = summary_new();
	int fd = mkstemp(path);
	ssize_t n;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "before\n", 7), 7);
	rec(s, "allow", "http", "a.example.test", 80, "a.example.test", 1, "curl");
	assert_int_equal(summary_append_file(s, path, SUMMARY_MARKDOWN, false, NULL), 0);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	assert_true(n > 0);
	buf[n] = 0;
	assert_true(
		!strncmp(buf, "before\n### egressctl: 1 allowed, 0 denied, 1 destination\n", 57));
	close(fd);
	unlink(path);
	summary_free(s);
}

/* ---- marks ---- */

struct label_case {
	const char *name;
	const char *label;
	const char *why; /* NULL: fine */
};

static const struct label_case labels[] = {
	{"short", "github", NULL},
	{"long-word", "githubusercontent", NULL},
	{"words-with-dashes", "actions-results-receiver-production", NULL},
	{"long-words", "kubernetes-default-svc-cluster", NULL},
	{"hex", "6b2f9a1c0d3e4f5a6b7c", "high-entropy label"},
	{"base32", "mfrggzdfmztwq2lknnwg23tp", "high-entropy label"},
	{"consonant-run", "xkcdqwrtzplmnbvc", "high-entropy label"},
	/* each marked by one of the three alone: digits, a run, the entropy */
	{"digits-only", "ab12ab12ab12ab12", "high-entropy label"},
	{"run-only", "bcdfghjkbcdfghjk", "high-entropy label"},
	/* sixteen letters, none twice, vowels between: only the entropy says so */
	{"entropy-only", "kvazwupoxlinbrem", "high-entropy label"},
	{"very-long", "thisisaverylonglabelmadeofwordsbutstillsuspicious", "very long label"},
	{"fifteen", "a1b2c3d4e5f6g7h", NULL}, /* below POLICY_ENTROPY_MIN */
	/* short labels: base64 or base32 of a few bytes, lowercased by DNS
	 * ("secret" is c2VjcmV0), reads as letters and digits without a vowel */
	{"coded-short", "c2vjcmv0", "encoded-looking label"},
	{"coded-random", "x9kq2zfw", "encoded-looking label"},
	{"seven", "c2vjcmv", NULL},	   /* below POLICY_CODED_MIN */
	{"digits-only", "20261205", NULL}, /* a number, not a code */
	{"letters-only", "bcdfghjk", NULL},
	{"word-and-digit", "cdn77", NULL},
	{"with-vowel", "s3eu-west", NULL},
};

static void
run_label(void **state)
{
	const struct label_case *c = *state;
	const char *why = policy_label_suspect(c->label, strlen(c->label));

	if (!c->why)
		assert_null(why);
	else
		assert_string_equal(why ? why : "(null)", c->why);
}

struct review_case {
	const char *name;
	const char *rule;
	unsigned long long count;
	const char *why; /* "": none */
};

static const struct review_case reviews[] = {
	{"name-twice", "a.example.test", 2, ""},
	{"name-once", "a.example.test", 1, "seen once"},
	{"exfil", "mfrggzdfmztwq2lknnwg23tp.evil.test", 5, "high-entropy label"},
	{"exfil-once", "mfrggzdfmztwq2lknnwg23tp.evil.test", 1, "high-entropy label, seen once"},
	{"exfil-short", "c2vjcmv0.exfil.test", 4, "encoded-looking label"},
	{"loopback", "127.0.0.1:5432", 3, "loopback address"},
	{"metadata", "169.254.169.254:80", 3, "link-local address (cloud metadata)"},
	{"private", "tcp://10.1.2.3:22", 3, "private or special address"},
	{"ula", "[fd00::1]:443", 3, "private or special address"},
	{"public-address", "203.0.113.7:443", 3, ""},
	{"tcp-name", "tcp://git.example.test:22", 2, ""},
};

static void
run_review(void **state)
{
	const struct review_case *c = *state;
	char buf[256];
	bool r = suggest_review(c->rule, c->count, buf, sizeof(buf));

	assert_int_equal(r, c->why[0] != 0);
	assert_string_equal(buf, c->why);
}

/* ---- building and merging ---- */

static cJSON *
obs(const char *rule, int count, const char *first, const char *last)
{
	cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, rule);

	cJSON_AddNumberToObject(e, "count", count);
	cJSON_AddNumberToObject(e, "runs", 1);
	cJSON_AddStringToObject(e, "first_seen", first);
	cJSON_AddStringToObject(e, "last_seen", last);
	return o;
}

static void
add_obs(cJSON *to, const char *rule, int count)
{
	cJSON *o = obs(rule, count, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z");

	cJSON_AddItemToObject(to, rule, cJSON_DetachItemFromObject(o, rule));
	cJSON_Delete(o);
}

static bool
allows(const cJSON *doc, const char *rule)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "allow")) if (cJSON_IsString(e) &&
								     !strcmp(e->valuestring,
									     rule)) return true;
	return false;
}

static const cJSON *
review_of(const cJSON *doc, const char *rule)
{
	return cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "observed"), "review"), rule);
}

static void
test_widen_at_threshold(void **state)
{
	static const char list[] = "test\nco.test\n";
	struct psl *psl = psl_parse(list, sizeof(list) - 1);
	cJSON *fresh = cJSON_CreateObject(), *doc;

	(void)state;
	add_obs(fresh, "a.example.test", 2);
	add_obs(fresh, "b.example.test", 2);
	add_obs(fresh, "x.shop.co.test", 2);
	add_obs(fresh, "y.shop.co.test", 2);
	add_obs(fresh, "z.shop.co.test", 2);
	add_obs(fresh, "once.shop.co.test", 1);
	doc = suggest_build(NULL, fresh, psl);
	/* two names of example.test: below SUGGEST_WIDEN_AT, kept as they are */
	assert_true(allows(doc, "a.example.test"));
	assert_true(allows(doc, "b.example.test"));
	assert_false(allows(doc, "**.example.test"));
	/* three of shop.co.test (co.test is a public suffix): widened */
	assert_true(allows(doc, "**.shop.co.test"));
	assert_false(allows(doc, "**.co.test"));
	assert_false(allows(doc, "x.shop.co.test"));
	/* seen once: for review, not counted for widening */
	assert_non_null(review_of(doc, "once.shop.co.test"));
	cJSON_Delete(doc);
	/* no list: the last two labels, so co.test would be the domain */
	doc = suggest_build(NULL, fresh, NULL);
	assert_true(allows(doc, "**.co.test"));
	cJSON_Delete(doc);
	cJSON_Delete(fresh);
	psl_free(psl);
}

static void
test_merge(void **state)
{
	cJSON *run1 =
		obs("once.example.test", 1, "2026-01-01T10:00:00.000Z", "2026-01-01T10:00:00.000Z");
	cJSON *run2 =
		obs("once.example.test", 1, "2026-01-02T10:00:00.000Z", "2026-01-02T10:00:05.000Z");
	cJSON *doc1, *doc2, *e;
	char *text;

	(void)state;
	add_obs(run1, "mfrggzdfmztwq2lknnwg23tp.evil.test", 1);
	doc1 = suggest_build(NULL, run1, NULL);
	assert_false(allows(doc1, "once.example.test"));
	assert_non_null(review_of(doc1, "once.example.test"));
	assert_non_null(review_of(doc1, "mfrggzdfmztwq2lknnwg23tp.evil.test"));
	/* a human allows one by hand and adds a rule of their own */
	cJSON_AddItemToArray(cJSON_GetObjectItem(doc1, "allow"),
			     cJSON_CreateString("mfrggzdfmztwq2lknnwg23tp.evil.test"));
	cJSON_AddItemToArray(cJSON_GetObjectItem(doc1, "allow"),
			     cJSON_CreateString("mine.example.test"));
	/* the file round-trips through the policy loader */
	text = cJSON_Print(doc1);
	{
		struct policy *p = policy_new();
		char err[256];

		assert_int_equal(config_load_buf(p, text, strlen(text), "t", err, sizeof(err)), 0);
		assert_int_equal(policy_count(p), 2);
		policy_free(p);
	}
	free(text);
	doc2 = suggest_build(doc1, run2, NULL);
	/* seen once in each of two runs: allowed now */
	assert_true(allows(doc2, "once.example.test"));
	assert_null(review_of(doc2, "once.example.test"));
	/* what the human did stays */
	assert_true(allows(doc2, "mfrggzdfmztwq2lknnwg23tp.evil.test"));
	assert_null(review_of(doc2, "mfrggzdfmztwq2lknnwg23tp.evil.test"));
	assert_true(allows(doc2, "mine.example.test"));
	e = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(doc2, "observed"), "rules"),
				"once.example.test");
	assert_int_equal(cJSON_GetObjectItem(e, "count")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(e, "runs")->valueint, 2);
	assert_string_equal(cJSON_GetObjectItem(e, "first_seen")->valuestring,
			    "2026-01-01T10:00:00.000Z");
	assert_string_equal(cJSON_GetObjectItem(e, "last_seen")->valuestring,
			    "2026-01-02T10:00:05.000Z");
	cJSON_Delete(doc1);
	cJSON_Delete(doc2);
	cJSON_Delete(run1);
	cJSON_Delete(run2);
}

static void
test_write_file_refuses_garbage(void **state)
{
	char path[] = "/tmp/egr-test-suggest-XXXXXX", err[512];
	cJSON *fresh =
		obs("a.example.test", 3, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z");
	int fd = mkstemp(path);
	char buf[64];

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"allow\": [\"a b\"]}", 18), 18);
	assert_int_equal(suggest_write_file(path, fresh, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "holds no policy to merge with"));
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 18); /* left as it was */
	close(fd);
	unlink(path);
	assert_int_equal(suggest_write_file(path, fresh, err, sizeof(err)), 0);
	{
		struct policy *p = policy_new();

		assert_int_equal(config_load_file(p, path, err, sizeof(err)), 0);
		assert_int_equal(policy_count(p), 1);
		policy_free(p);
	}
	unlink(path);
	cJSON_Delete(fresh);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_row_dns_first),
		cmocka_unit_test(test_one_row_conn_first),
		cmocka_unit_test(test_suspect_not_suggested),
		cmocka_unit_test(test_rule_comment),
		cmocka_unit_test(test_markdown_escapes),
		cmocka_unit_test(test_append_file),
		cmocka_unit_test(test_widen_at_threshold),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_write_file_refuses_garbage),
	};
	int failed = cmocka_run_group_tests_name("summary", tests, NULL, NULL);

	failed += RUN_TABLE("labels", labels, run_label);
	failed += RUN_TABLE("review", reviews, run_review);
	return failed ? 1 : 0;
}
