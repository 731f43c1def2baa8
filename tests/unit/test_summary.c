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
#include <cmocka.h>

#include "confine/suggest.h"
#include "confine/summary.h"
#include "lib/jsonx.h"
#include "parse/psl.h"
#include "audit/audit.h"
#include "policy/policy.h"
#include "policy/secret.h"
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
	json_t *doc, *d;
	char *t;

	(void)state;
	/* audit mode: the connection first, then a lookup of the same name;
	 * then another port of it: a row of its own */
	rec(s, "would-deny", "connect", "b.example.test", 443, "b.example.test", 20, "curl");
	rec(s, "would-deny", "dns", "b.example.test", 0, "b.example.test", 21, "python3");
	rec(s, "would-deny", "http", "b.example.test", 80, "b.example.test", 20, "curl");
	t = render(s, SUMMARY_JSON, true);
	/* one line, no spaces, keys in their order, counts as integers */
	assert_non_null(strstr(t, "{\"schema\":"));
	assert_non_null(strstr(t, ",\"audit\":true,\"allowed\":0,\"denied\":2,"));
	assert_non_null(strstr(t,
			       "{\"destination\":\"b.example.test:443\",\"host\":"
			       "\"b.example.test\",\"port\":443,\"allowed\":0,\"denied\":1,"
			       "\"would_deny\":true,\"inspected\":0,\"dns\":true,\"dns_allowed\":0,"
			       "\"dns_denied\":1,"));
	assert_string_equal(strchr(t, '\n'), "\n");
	doc = json_loads(t, 0, NULL);
	assert_non_null(doc);
	assert_true(json_is_integer(json_object_get(doc, "schema")));
	assert_int_equal(json_integer_value(json_object_get(doc, "schema")), SUMMARY_SCHEMA);
	assert_int_equal(json_array_size(json_object_get(doc, "destinations")), 2);
	d = json_array_get(json_object_get(doc, "destinations"), 0);
	assert_string_equal(jsonx_get_str(d, "destination"), "b.example.test:443");
	assert_string_equal(jsonx_get_str(d, "host"), "b.example.test");
	assert_int_equal(json_integer_value(json_object_get(d, "port")), 443);
	assert_int_equal(json_integer_value(json_object_get(d, "denied")), 1);
	assert_int_equal(json_integer_value(json_object_get(d, "dns_denied")), 1);
	assert_true(json_is_true(json_object_get(d, "dns")));
	assert_int_equal(json_array_size(json_object_get(d, "who")), 2);
	json_decref(doc);
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

static json_t *
obs(const char *rule, int count, const char *first, const char *last)
{
	json_t *o = json_object(), *e = jsonx_add_object(o, rule);

	jsonx_set_int(e, "count", count);
	jsonx_set_int(e, "runs", 1);
	jsonx_set_str(e, "first_seen", first);
	jsonx_set_str(e, "last_seen", last);
	return o;
}

static void
add_obs(json_t *to, const char *rule, int count)
{
	json_t *o = obs(rule, count, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z");

	json_object_set(to, rule, json_object_get(o, rule));
	json_decref(o);
}

static bool
allows(const json_t *doc, const char *rule)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(doc, "allow"), i, e)
		if (json_is_string(e) && !strcmp(json_string_value(e), rule))
			return true;
	return false;
}

static const json_t *
review_of(const json_t *doc, const char *rule)
{
	return json_object_get(json_object_get(json_object_get(doc, "observed"), "review"), rule);
}

static void
test_widen_at_threshold(void **state)
{
	static const char list[] = "test\nco.test\n";
	struct psl *psl = psl_parse(list, sizeof(list) - 1);
	json_t *fresh = json_object(), *doc;

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
	json_decref(doc);
	/* no list: the last two labels, so co.test would be the domain */
	doc = suggest_build(NULL, fresh, NULL);
	assert_true(allows(doc, "**.co.test"));
	json_decref(doc);
	json_decref(fresh);
	psl_free(psl);
}

static void
test_merge(void **state)
{
	json_t *run1 =
		obs("once.example.test", 1, "2026-01-01T10:00:00.000Z", "2026-01-01T10:00:00.000Z");
	json_t *run2 =
		obs("once.example.test", 1, "2026-01-02T10:00:00.000Z", "2026-01-02T10:00:05.000Z");
	json_t *doc1, *doc2, *e;
	char *text;

	(void)state;
	add_obs(run1, "mfrggzdfmztwq2lknnwg23tp.evil.test", 1);
	doc1 = suggest_build(NULL, run1, NULL);
	assert_false(allows(doc1, "once.example.test"));
	assert_non_null(review_of(doc1, "once.example.test"));
	assert_non_null(review_of(doc1, "mfrggzdfmztwq2lknnwg23tp.evil.test"));
	/* a human allows one by hand and adds a rule of their own */
	json_array_append_new(json_object_get(doc1, "allow"),
			      jsonx_string("mfrggzdfmztwq2lknnwg23tp.evil.test"));
	json_array_append_new(json_object_get(doc1, "allow"), jsonx_string("mine.example.test"));
	/* the file round-trips through the policy loader */
	text = jsonx_pretty(doc1);
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
	e = json_object_get(json_object_get(json_object_get(doc2, "observed"), "rules"),
			    "once.example.test");
	assert_true(json_is_integer(json_object_get(e, "count")));
	assert_int_equal(json_integer_value(json_object_get(e, "count")), 2);
	assert_int_equal(json_integer_value(json_object_get(e, "runs")), 2);
	assert_string_equal(jsonx_get_str(e, "first_seen"), "2026-01-01T10:00:00.000Z");
	assert_string_equal(jsonx_get_str(e, "last_seen"), "2026-01-02T10:00:05.000Z");
	json_decref(doc1);
	json_decref(doc2);
	json_decref(run1);
	json_decref(run2);
}

static void
test_write_file_refuses_garbage(void **state)
{
	char path[] = "/tmp/egr-test-suggest-XXXXXX", err[512];
	json_t *fresh =
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
	/* missing, then empty (a file the service's client created for a run
	 * that failed: nothing a human wrote): written as new */
	for (int empty = 0; empty < 2; empty++) {
		struct policy *p = policy_new();

		if (empty)
			assert_int_equal(truncate(path, 0), 0);
		else
			unlink(path);
		assert_int_equal(suggest_write_file(path, fresh, err, sizeof(err)), 0);
		assert_int_equal(config_load_file(p, path, err, sizeof(err)), 0);
		assert_int_equal(policy_count(p), 1);
		policy_free(p);
	}
	unlink(path);
	json_decref(fresh);
}

/* "fd:N": the file the service's client opened (read and write), read
 * from its start to merge, then truncated and written through N; empty,
 * nothing to merge; what holds no policy, left as it is. */
static void
test_write_given_fd(void **state)
{
	char path[] = "/tmp/egr-test-suggest-XXXXXX", err[512], fdn[16], buf[8192];
	const char *mine = "{\"allow\": [\"mine.example.test\"]}";
	json_t *fresh =
		obs("a.example.test", 3, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z");
	int fd = mkstemp(path);
	struct policy *p;
	ssize_t n;

	(void)state;
	assert_true(fd >= 0);
	snprintf(fdn, sizeof(fdn), "fd:%d", fd);
	/* empty: written as new, through the descriptor */
	assert_int_equal(suggest_write_file(fdn, fresh, err, sizeof(err)), 0);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	assert_true(n > 0);
	buf[n] = 0;
	assert_non_null(strstr(buf, "\"a.example.test\""));
	/* a rule of the user's own is kept, the file rewritten from its start */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, mine, strlen(mine), 0), (ssize_t)strlen(mine));
	assert_int_equal(suggest_write_file(fdn, fresh, err, sizeof(err)), 0);
	p = policy_new();
	assert_int_equal(config_load_file(p, path, err, sizeof(err)), 0);
	assert_int_equal(policy_count(p), 2);
	policy_free(p);
	/* garbage: left as it is */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, "{\"allow\": [\"a b\"]}", 18, 0), 18);
	assert_int_equal(suggest_write_file(fdn, fresh, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "holds no policy to merge with"));
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 18);
	close(fd);
	unlink(path);
	assert_int_equal(suggest_write_file("fd:1x", fresh, err, sizeof(err)), -EBADF);
	/* a pipe: refused, nothing written (a write could block for ever) */
	{
		int pfd[2];

		assert_int_equal(pipe(pfd), 0);
		snprintf(fdn, sizeof(fdn), "fd:%d", pfd[1]);
		assert_int_equal(suggest_write_file(fdn, fresh, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "not a regular file"));
		close(pfd[1]);
		assert_int_equal(read(pfd[0], buf, sizeof(buf)), 0);
		close(pfd[0]);
	}
	json_decref(fresh);
}

/* A secret's leak attempts: the "secrets" of the JSON form (name, uses per
 * host, leak attempts by place with who), the placeholder in a name
 * written {NAME}, in no form the placeholder, and no rule suggested for
 * them (in the rows; --suggest-policy puts the host a request carried it
 * to in review, never in allow). */
static void
test_secrets(void **state)
{
	struct policy *p = policy_new();
	struct secrets *sec;
	struct summary *s = summary_new();
	char err[256], name[300], dest[300], *t;
	const char *ph, *rnd;
	json_t *doc, *e, *a, *obs;
	enum summary_format fmt;

	(void)state;
	assert_int_equal(policy_add_secret_arg(p, "TOK=env:X@api.test", err, sizeof(err)), 0);
	sec = secrets_new(p);
	assert_non_null(sec);
	ph = secrets_placeholder(sec, 0);
	rnd = ph + strlen(ph) - SECRET_RAND_HEX;
	summary_set_secrets(s, sec);
	secrets_note_used(sec, 0, "api.test");
	secrets_note_used(sec, 0, "api.test");
	secrets_note(sec, 0, true);
	secrets_note(sec, 0, true);
	snprintf(name, sizeof(name), "x%s.evil.test", rnd);
	summary_add(s, &(struct audit_rec){.decision = "deny",
					   .reason = "secret TOK",
					   .source = "dns",
					   .host = name,
					   .dest = name,
					   .pid = 7,
					   .comm = "dig",
					   .suggest = name,
					   .secret = "TOK"});
	snprintf(dest, sizeof(dest), "paste.test:443");
	summary_add(s, &(struct audit_rec){.decision = "deny",
					   .reason = "secret TOK",
					   .source = "http",
					   .host = "paste.test",
					   .port = 443,
					   .dest = dest,
					   .pid = 8,
					   .comm = "curl",
					   .suggest = "paste.test",
					   .secret = "TOK"});
	t = render(s, SUMMARY_JSON, false);
	doc = json_loads(t, 0, NULL);
	assert_non_null(doc);
	e = json_array_get(json_object_get(doc, "secrets"), 0);
	assert_string_equal(jsonx_get_str(e, "name"), "TOK");
	assert_int_equal(json_integer_value(json_object_get(e, "used")), 2);
	a = json_array_get(json_object_get(e, "used_at"), 0);
	assert_string_equal(jsonx_get_str(a, "host"), "api.test");
	assert_int_equal(json_integer_value(json_object_get(a, "requests")), 2);
	assert_int_equal(json_integer_value(json_object_get(e, "leaks")), 2);
	assert_int_equal(json_array_size(json_object_get(e, "leak_attempts")), 2);
	a = json_array_get(json_object_get(e, "leak_attempts"), 0);
	assert_string_equal(jsonx_get_str(a, "where"), "dns");
	assert_string_equal(jsonx_get_str(a, "destination"), "x{TOK}.evil.test");
	assert_int_equal(json_integer_value(json_object_get(a, "count")), 1);
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(json_object_get(a, "who"), 0), "pid")),
			 7);
	assert_string_equal(jsonx_get_str(json_array_get(json_object_get(a, "who"), 0), "comm"),
			    "dig");
	a = json_array_get(json_object_get(e, "leak_attempts"), 1);
	assert_string_equal(jsonx_get_str(a, "where"), "request");
	assert_string_equal(jsonx_get_str(a, "destination"), "paste.test:443");
	for (size_t i = 0; i < json_array_size(json_object_get(doc, "destinations")); i++)
		assert_null(json_object_get(json_array_get(json_object_get(doc, "destinations"), i),
					    "suggest"));
	json_decref(doc);
	free(t);
	for (fmt = SUMMARY_TEXT; fmt <= SUMMARY_JSON; fmt++) {
		t = render(s, fmt, false);
		assert_non_null(strstr(t, "TOK"));
		assert_non_null(strstr(t, "paste.test"));
		assert_null(strcasestr(t, rnd));
		assert_null(strstr(t, SECRET_PH_PREFIX));
		free(t);
	}
	t = render(s, SUMMARY_TEXT, false);
	assert_non_null(strstr(t, "  secret TOK: 2 requests to api.test\n"));
	assert_non_null(
		strstr(t, "  secret TOK: leak attempt denied 1: dns x{TOK}.evil.test by dig[7]\n"));
	free(t);
	/* --suggest-policy: the host a request carried the placeholder to is
	 * for review, never allowed; the name that carried it is not there */
	obs = suggest_observe(s);
	assert_int_equal(json_object_size(obs), 1);
	assert_string_equal(jsonx_get_str(json_object_get(obs, "paste.test"), "secret_leak"),
			    "TOK");
	doc = suggest_build(NULL, obs, NULL);
	assert_non_null(doc);
	assert_int_equal(json_array_size(json_object_get(doc, "allow")), 0);
	a = json_object_get(json_object_get(json_object_get(doc, "observed"), "review"),
			    "paste.test");
	assert_string_equal(json_string_value(json_array_get(a, 0)),
			    "secret TOK's placeholder sent to it: an exfiltration attempt");
	t = json_dumps(doc, 0);
	assert_null(strcasestr(t, rnd));
	free(t);
	json_decref(doc);
	json_decref(obs);
	summary_free(s);
	secrets_free(sec);
	policy_free(p);
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
		cmocka_unit_test(test_secrets),
		cmocka_unit_test(test_append_file),
		cmocka_unit_test(test_widen_at_threshold),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_write_file_refuses_garbage),
		cmocka_unit_test(test_write_given_fd),
	};
	int failed = cmocka_run_group_tests_name("summary", tests, NULL, NULL);

	failed += RUN_TABLE("labels", labels, run_label);
	failed += RUN_TABLE("review", reviews, run_review);
	return failed ? 1 : 0;
}
