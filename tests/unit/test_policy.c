// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the rule engine (userspace/policy/), one cmocka test per table row: rule
 * syntax (accepted forms and the message for each malformed one), decisions
 * (host forms, ports, wildcards, '?', "*:port", tcp://, addresses and CIDRs,
 * methods, deny over allow in both insertion orders, local addresses), the
 * DNS and fast-path helpers, address classes and host normalisation. Each
 * decision row builds a fresh policy from its own rules. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <cmocka.h>
#include "table.h"

#include "policy/policy.h"

#define NONE                                                                                       \
	{                                                                                          \
		NULL                                                                               \
	}
#define HTTP   POLICY_P_HTTP
#define TLS    POLICY_P_TLS
#define TCP    POLICY_P_TCP
#define OK     POLICY_R_ALLOWED
#define NORULE POLICY_R_NO_RULE
#define DENIED POLICY_R_DENY_RULE
#define METHOD POLICY_R_METHOD
#define LOCAL  POLICY_R_LOCAL

/* Rules are "text" or "text|METHODS". */
static struct policy *
build(const char *const *allow, size_t na, const char *const *deny, size_t nd, bool deny_first)
{
	struct policy *p = policy_new();
	char errbuf[256], text[1100];
	int pass, err;
	size_t i;

	assert_non_null(p);
	for (pass = 0; pass < 2; pass++) {
		bool is_deny = (pass == 0) == deny_first;
		const char *const *v = is_deny ? deny : allow;
		size_t n = is_deny ? nd : na;

		for (i = 0; i < n && v[i]; i++) {
			char *bar;

			snprintf(text, sizeof(text), "%s", v[i]);
			bar = strchr(text, '|');
			if (bar)
				*bar++ = '\0';
			err = policy_add(p, is_deny ? POLICY_DENY : POLICY_ALLOW, text, bar, "test",
					 errbuf, sizeof(errbuf));
			if (err)
				fail_msg("rule \"%s\": %s", v[i], errbuf);
		}
	}
	return p;
}

/* policy_allow_v6: IPv6 allow rules (addresses, networks, with or without a
 * port), not v4-mapped ones (IPv4's), not deny rules, not names */
static void
test_allow_v6(void **state)
{
	static const char *const allow[] = {"a.test", "::ffff:198.51.100.1", "[2001:db8::1]:443",
					    "2001:db8:2::/64", "198.51.100.0/24"};
	static const char *const deny[] = {"2001:db8:3::/64"};
	const struct policy_rule *first;
	struct policy *p = build(allow, 5, deny, 1, false);

	(void)state;
	assert_int_equal(policy_allow_v6(p, &first), 2);
	assert_non_null(first);
	assert_string_equal(first->text, "[2001:db8::1]:443");
	assert_string_equal(first->source, "test");
	policy_free(p);
	p = build(allow, 2, deny, 1, false);
	assert_int_equal(policy_allow_v6(p, &first), 0);
	assert_null(first);
	policy_free(p);
}

/* "203.0.113.7", "2001:db8::1" or "unix" (a family the policy cannot judge). */
static const struct sockaddr *
make_sa(const char *text, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!text)
		return NULL;
	if (!strcmp(text, "unix")) {
		ss->ss_family = AF_UNIX;
	} else if (strchr(text, ':')) {
		sin6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, text, &sin6->sin6_addr), 1);
	} else {
		sin->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, text, &sin->sin_addr), 1);
	}
	return (const struct sockaddr *)ss;
}

/* ---- policy_add: accepted and rejected syntax ----------------------------- */

struct syntax_case {
	const char *name;
	const char *rule;
	const char *methods;
	const char *err; /* substring of the message; NULL: accepted */
	const char *err2;
};

static char long_label[80], long_name[300], long_rule[1100];

static const struct syntax_case syntax_cases[] = {
	{"host", "example.com", NULL, NULL, NULL},
	{"host-port", "example.com:443", NULL, NULL, NULL},
	{"star", "*.example.com", NULL, NULL, NULL},
	{"double-star", "**.example.com", NULL, NULL, NULL},
	{"qmark", "api?.example.com", NULL, NULL, NULL},
	{"qmark-star", "*.ap?.example.com", NULL, NULL, NULL},
	{"any-port", "*:443", NULL, NULL, NULL},
	{"tcp-host", "tcp://git.example.com:22", NULL, NULL, NULL},
	{"tcp-upper-scheme", "TCP://git.example.com:22", NULL, NULL, NULL},
	{"tcp-wildcard", "tcp://*.example.com:22", NULL, NULL, NULL},
	{"tcp-any", "tcp://*:22", NULL, NULL, NULL},
	{"tcp-v4", "tcp://203.0.113.7:22", NULL, NULL, NULL},
	{"tcp-v6", "tcp://[2001:db8::1]:22", NULL, NULL, NULL},
	{"v4", "203.0.113.7", NULL, NULL, NULL},
	{"v4-port", "203.0.113.7:443", NULL, NULL, NULL},
	{"v4-cidr-port", "203.0.113.0/24:443", NULL, NULL, NULL},
	{"v4-all", "0.0.0.0/0", NULL, NULL, NULL},
	{"v6", "2001:db8::1", NULL, NULL, NULL},
	{"v6-bracket-port", "[2001:db8::1]:443", NULL, NULL, NULL},
	{"v6-cidr", "2001:db8::/32", NULL, NULL, NULL},
	{"v6-cidr-bracket-port", "[2001:db8::]/32:443", NULL, NULL, NULL},
	{"v6-cidr-inside-bracket", "[2001:db8::/32]:443", NULL, NULL, NULL},
	{"v6-all", "::/0", NULL, NULL, NULL},
	{"punycode", "xn--bcher-kva.example", NULL, NULL, NULL},
	{"underscore", "_dmarc.example.com", NULL, NULL, NULL},
	{"trailing-dot", "example.com.", NULL, NULL, NULL},
	{"methods", "example.com", "GET,HEAD", NULL, NULL},
	{"methods-case-blanks", "example.com", " get , Head ", NULL, NULL},
	{"methods-any-port", "*:443", "CONNECT", NULL, NULL},
	{"max-label", long_label + 1, NULL, NULL, NULL}, /* 63 bytes */
	{"empty", "", NULL, "empty rule", NULL},
	{"bare-star", "*", NULL, "bare '*'", "*:PORT"},
	{"tcp-bare-star", "tcp://*", NULL, "bare '*'", NULL},
	{"double-star-alone", "**", NULL, "whole leading label", NULL},
	{"star-in-label", "a*b.example.com", NULL, "whole leading label", NULL},
	{"star-middle", "x.*.y", NULL, "whole leading label", NULL},
	{"star-star", "*.*.example.com", NULL, "whole leading label", NULL},
	{"star-suffix", "example.*", NULL, "whole leading label", NULL},
	{"port-0", "example.com:0", NULL, "expected 1-65535 for the port", NULL},
	{"port-65536", "example.com:65536", NULL, "expected 1-65535 for the port", NULL},
	{"port-huge", "example.com:99999999999", NULL, "expected 1-65535 for the port", NULL},
	{"port-empty", "example.com:", NULL, "expected 1-65535 for the port", NULL},
	{"port-name", "example.com:https", NULL, "expected 1-65535 for the port", NULL},
	{"port-sign", "example.com:+443", NULL, "expected 1-65535 for the port", NULL},
	{"any-port-0", "*:0", NULL, "expected 1-65535 for the port", NULL},
	{"tcp-no-port", "tcp://git.example.com", NULL, "need a port", NULL},
	{"tcp-v4-no-port", "tcp://203.0.113.7", NULL, "need a port", NULL},
	{"other-scheme", "https://example.com", NULL, "unknown scheme 'https://'", NULL},
	{"v4-host-bits", "203.0.113.1/24", NULL, "host bits set", "203.0.113.0/24"},
	{"v6-host-bits", "2001:db8::1/32", NULL, "host bits set", "2001:db8::/32"},
	{"v4-plen", "203.0.113.0/33", NULL, "0-32", NULL},
	{"v6-plen", "2001:db8::/129", NULL, "0-128", NULL},
	{"plen-empty", "203.0.113.0/", NULL, "prefix length", NULL},
	{"plen-twice", "[2001:db8::/32]/32", NULL, "two prefix lengths", NULL},
	{"path", "example.com/path", NULL, "'/' may only follow an address", NULL},
	{"space", "exa mple.com", NULL, "in host name", NULL},
	{"utf8",
	 "b\xc3\xbc"
	 "cher.example",
	 NULL, "byte 0xc3", NULL},
	{"empty-label", "example..com", NULL, "empty label", NULL},
	{"two-trailing-dots", "example.com..", NULL, "empty label", NULL},
	{"leading-dot", ".example.com", NULL, "empty label", NULL},
	{"empty-host", ":443", NULL, "empty host name", NULL},
	{"long-label", long_label, NULL, "label longer than 63", NULL},
	{"long-name", long_name, NULL, "longer than 253", NULL},
	{"long-rule", long_rule, NULL, "longer than 1024", NULL},
	{"bracket-open", "[2001:db8::1", NULL, "missing ']'", NULL},
	{"bracket-junk", "[2001:db8::1]x", NULL, "unexpected text after ']'", NULL},
	{"bracket-host", "[example.com]:443", NULL, "brackets are only for IPv6", NULL},
	{"bad-v6", "2001:db8::zz", NULL, "invalid IPv6 address", "[2001:db8::1]:443"},
	{"numeric-host", "1.2.3.256", NULL, "numeric last label", NULL},
	{"numeric-wildcard", "*.0.113.7", NULL, "numeric last label", NULL},
	{"hex-last-label", "example.0x1f", NULL, "numeric last label", NULL},
	{"unknown-method", "example.com", "GET,FETCH", "unknown method 'FETCH'",
	 "known: GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS, CONNECT, TRACE"},
	{"empty-methods", "example.com", "", "empty method list", NULL},
	{"empty-method", "example.com", "GET,,HEAD", "empty method name", NULL},
	{"trailing-comma", "example.com", "GET,", "empty method name", NULL},
	{"methods-on-tcp", "tcp://git.example.com:22", "GET", "only to host rules", "tcp://"},
	{"methods-on-addr", "203.0.113.0/24", "GET", "only to host rules", "addresses"},
};

static void
run_syntax_case(void **state)
{
	const struct syntax_case *c = *state;
	struct policy *p = policy_new();
	char errbuf[256];
	int err;

	assert_non_null(p);
	memset(errbuf, 'x', sizeof(errbuf));
	err = policy_add(p, POLICY_ALLOW, c->rule, c->methods, "t", errbuf, sizeof(errbuf));
	if (!c->err) {
		if (err)
			fail_msg("\"%s\" rejected: %s", c->rule, errbuf);
		assert_int_equal(policy_count(p), 1);
	} else {
		assert_int_equal(err, -EINVAL);
		assert_int_equal(policy_count(p), 0);
		if (!strstr(errbuf, c->err) || (c->err2 && !strstr(errbuf, c->err2)))
			fail_msg("\"%s\": message \"%s\" lacks \"%s\"", c->rule, errbuf, c->err);
		/* The same rule as a deny fails the same way. */
		assert_int_equal(policy_add(p, POLICY_DENY, c->rule, c->methods, "t", errbuf,
					    sizeof(errbuf)),
				 -EINVAL);
	}
	policy_free(p);
}

/* ---- policy_decide --------------------------------------------------------- */

struct decide_case {
	const char *name;
	const char *allow[5];
	const char *deny[4];
	bool deny_first;
	const char *host;
	const char *addr;
	uint16_t port;
	enum policy_proto proto;
	const char *method;
	enum policy_reason reason;
	const char *rule; /* text of the deciding rule; NULL: none */
	bool inspect;	  /* the decision inspects (TLS to a host whose rules need it) */
};

/* Rows: name, allow rules, deny rules, deny rules added first; then the query (host, addr,
 * port, proto, method), the reason wanted, the text of the deciding rule and whether TLS is
 * inspected (test_policy_paths.c has the path rules and --limited). Hand laid out. */
/* clang-format off */
static const struct decide_case decide_cases[] = {
	/* Exact hosts. */
	{"exact-tls", {"example.com"}, NONE, 0,
	 "example.com", NULL, 443, TLS, NULL, OK, "example.com"},
	{"exact-any-port", {"example.com"}, NONE, 0,
	 "example.com", NULL, 8443, TLS, NULL, OK, "example.com"},
	{"exact-http", {"example.com"}, NONE, 0,
	 "example.com", NULL, 80, HTTP, "GET", OK, "example.com"},
	{"exact-other-host", {"example.com"}, NONE, 0,
	 "www.example.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"exact-not-substring", {"example.com"}, NONE, 0,
	 "notexample.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"exact-not-parent", {"www.example.com"}, NONE, 0,
	 "example.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"exact-case-query", {"example.com"}, NONE, 0,
	 "ExAmPlE.CoM", NULL, 443, TLS, NULL, OK, "example.com"},
	{"exact-case-rule", {"EXAMPLE.com"}, NONE, 0,
	 "example.com", NULL, 443, TLS, NULL, OK, "EXAMPLE.com"},
	{"exact-trailing-dot-query", {"example.com"}, NONE, 0,
	 "example.com.", NULL, 443, TLS, NULL, OK, "example.com"},
	{"exact-trailing-dot-rule", {"example.com."}, NONE, 0,
	 "example.com", NULL, 443, TLS, NULL, OK, "example.com."},
	{"empty-policy", NONE, NONE, 0, "example.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"host-rule-not-tcp", {"example.com"}, NONE, 0,
	 "example.com", NULL, 22, TCP, NULL, NORULE, NULL},
	{"invalid-query-host", {"example.com"}, NONE, 0,
	 "exa mple.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"punycode", {"xn--bcher-kva.example"}, NONE, 0,
	 "XN--BCHER-KVA.example", NULL, 443, TLS, NULL, OK, "xn--bcher-kva.example"},
	/* Ports. */
	{"port-match", {"example.com:443"}, NONE, 0,
	 "example.com", NULL, 443, TLS, NULL, OK, "example.com:443"},
	{"port-mismatch", {"example.com:443"}, NONE, 0,
	 "example.com", NULL, 80, HTTP, "GET", NORULE, NULL},
	{"port-second", {"example.com:443", "example.com:8443"}, NONE, 0,
	 "example.com", NULL, 8443, TLS, NULL, OK, "example.com:8443"},
	{"port-more-specific", {"example.com", "example.com:443"}, NONE, 0,
	 "example.com", NULL, 443, TLS, NULL, OK, "example.com:443"},
	{"same-rule-twice-first-wins", {"example.com", "example.com"}, NONE, 0,
	 "example.com", NULL, 443, TLS, NULL, OK, "example.com"},
	/* "*." and "**." */
	{"star-sub", {"*.example.com"}, NONE, 0,
	 "www.example.com", NULL, 443, TLS, NULL, OK, "*.example.com"},
	{"star-deep", {"*.example.com"}, NONE, 0,
	 "a.b.example.com", NULL, 443, TLS, NULL, OK, "*.example.com"},
	{"star-not-apex", {"*.example.com"}, NONE, 0,
	 "example.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"star-not-substring", {"*.example.com"}, NONE, 0,
	 "wwwexample.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"star-port", {"*.example.com:443"}, NONE, 0,
	 "www.example.com", NULL, 80, HTTP, "GET", NORULE, NULL},
	{"star-tld", {"*.com"}, NONE, 0, "example.com", NULL, 443, TLS, NULL, OK, "*.com"},
	{"dstar-apex", {"**.example.com"}, NONE, 0,
	 "example.com", NULL, 443, TLS, NULL, OK, "**.example.com"},
	{"dstar-sub", {"**.example.com"}, NONE, 0,
	 "www.example.com", NULL, 443, TLS, NULL, OK, "**.example.com"},
	{"dstar-deep", {"**.example.com"}, NONE, 0,
	 "a.b.c.example.com", NULL, 443, TLS, NULL, OK, "**.example.com"},
	{"dstar-other", {"**.example.com"}, NONE, 0,
	 "example.org", NULL, 443, TLS, NULL, NORULE, NULL},
	{"dstar-not-substring", {"**.example.com"}, NONE, 0,
	 "badexample.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"star-case-dot", {"*.Example.COM"}, NONE, 0,
	 "WWW.example.com.", NULL, 443, TLS, NULL, OK, "*.Example.COM"},
	{"exact-beats-wildcard", {"**.example.com", "api.example.com"}, NONE, 0,
	 "api.example.com", NULL, 443, TLS, NULL, OK, "api.example.com"},
	{"longer-suffix-wins", {"*.example.com", "*.api.example.com"}, NONE, 0,
	 "x.api.example.com", NULL, 443, TLS, NULL, OK, "*.api.example.com"},
	/* '?' */
	{"qmark", {"api?.example.com"}, NONE, 0,
	 "api1.example.com", NULL, 443, TLS, NULL, OK, "api?.example.com"},
	{"qmark-needs-a-byte", {"api?.example.com"}, NONE, 0,
	 "api.example.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"qmark-one-byte-only", {"api?.example.com"}, NONE, 0,
	 "api12.example.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"qmark-not-dot", {"a?b.example.com"}, NONE, 0,
	 "a.b.example.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"qmark-last-label", {"example.co?"}, NONE, 0,
	 "example.com", NULL, 443, TLS, NULL, OK, "example.co?"},
	{"qmark-last-label-miss", {"example.co?"}, NONE, 0,
	 "example.co", NULL, 443, TLS, NULL, NORULE, NULL},
	{"qmark-middle", {"www.ex?mple.com"}, NONE, 0,
	 "www.exbmple.com", NULL, 443, TLS, NULL, OK, "www.ex?mple.com"},
	{"qmark-case", {"API?.example.com"}, NONE, 0,
	 "Api7.Example.com", NULL, 443, TLS, NULL, OK, "API?.example.com"},
	{"qmark-star", {"*.ap?.example.com"}, NONE, 0,
	 "x.api.example.com", NULL, 443, TLS, NULL, OK, "*.ap?.example.com"},
	{"qmark-star-not-apex", {"*.ap?.example.com"}, NONE, 0,
	 "api.example.com", NULL, 443, TLS, NULL, NORULE, NULL},
	{"qmark-dstar-apex", {"**.ap?.example.com"}, NONE, 0,
	 "api.example.com", NULL, 443, TLS, NULL, OK, "**.ap?.example.com"},
	{"qmark-port", {"api?.example.com:443"}, NONE, 0,
	 "api1.example.com", NULL, 80, HTTP, "GET", NORULE, NULL},
	/* "*:port" */
	{"any-port", {"*:443"}, NONE, 0, "anything.test", NULL, 443, TLS, NULL, OK, "*:443"},
	{"any-port-other-port", {"*:443"}, NONE, 0,
	 "anything.test", NULL, 80, HTTP, "GET", NORULE, NULL},
	{"any-port-not-tcp", {"*:443"}, NONE, 0,
	 "anything.test", NULL, 443, TCP, NULL, NORULE, NULL},
	{"any-port-needs-host", {"*:443"}, NONE, 0,
	 NULL, "203.0.113.7", 443, TLS, NULL, NORULE, NULL},
	{"exact-beats-any-port", {"*:443", "example.com"}, NONE, 0,
	 "example.com", NULL, 443, TLS, NULL, OK, "example.com"},
	{"any-port-literal", {"*:443"}, NONE, 0, "203.0.113.7", NULL, 443, TLS, NULL, OK, "*:443"},
	{"any-port-local-addr", {"*:443"}, NONE, 0,
	 "example.com", "10.0.0.1", 443, TLS, NULL, LOCAL, NULL},
	{"any-port-local-literal", {"*:443"}, NONE, 0,
	 "127.0.0.1", NULL, 443, TLS, NULL, LOCAL, NULL},
	{"any-port-local-v6-literal", {"*:443"}, NONE, 0,
	 "[::1]", NULL, 443, TLS, NULL, LOCAL, NULL},
	/* Regression: getaddrinfo() reads these as 127.0.0.1; they were taken for host
	 * names, so "*:443" allowed them without the local-address check. */
	{"literal-trailing-dot", {"*:443"}, NONE, 0,
	 "127.0.0.1.", NULL, 443, TLS, NULL, LOCAL, NULL},
	{"short-form-not-a-name", {"*:443"}, NONE, 0, "127.1", NULL, 443, TLS, NULL, NORULE, NULL},
	{"decimal-not-a-name", {"*:443"}, NONE, 0,
	 "2130706433", NULL, 443, TLS, NULL, NORULE, NULL},
	{"hex-not-a-name", {"*:443"}, NONE, 0, "127.0.0.0x1", NULL, 443, TLS, NULL, NORULE, NULL},
	{"hex-looking-name-is-a-name", {"*:443"}, NONE, 0,
	 "cafe.0xdead.beef", NULL, 443, TLS, NULL, OK, "*:443"},
	/* tcp:// */
	{"tcp-host", {"tcp://git.example.com:22"}, NONE, 0,
	 "git.example.com", NULL, 22, TCP, NULL, OK, "tcp://git.example.com:22"},
	{"tcp-host-http", {"tcp://git.example.com:22"}, NONE, 0,
	 "git.example.com", NULL, 22, HTTP, "GET", OK, "tcp://git.example.com:22"},
	{"tcp-host-tls", {"tcp://git.example.com:22"}, NONE, 0,
	 "git.example.com", NULL, 22, TLS, NULL, OK, "tcp://git.example.com:22"},
	{"tcp-wrong-port", {"tcp://git.example.com:22"}, NONE, 0,
	 "git.example.com", NULL, 2222, TCP, NULL, NORULE, NULL},
	{"tcp-wildcard", {"tcp://*.example.com:22"}, NONE, 0,
	 "git.example.com", NULL, 22, TCP, NULL, OK, "tcp://*.example.com:22"},
	{"tcp-any-host", {"tcp://*:22"}, NONE, 0,
	 "git.example.com", NULL, 22, TCP, NULL, OK, "tcp://*:22"},
	{"tcp-host-needs-host", {"tcp://git.example.com:22"}, NONE, 0,
	 NULL, "203.0.113.7", 22, TCP, NULL, NORULE, NULL},
	{"tcp-v4", {"tcp://203.0.113.7:22"}, NONE, 0,
	 NULL, "203.0.113.7", 22, TCP, NULL, OK, "tcp://203.0.113.7:22"},
	{"tcp-v4-wrong-port", {"tcp://203.0.113.7:22"}, NONE, 0,
	 NULL, "203.0.113.7", 23, TCP, NULL, NORULE, NULL},
	{"tcp-v4-cidr", {"tcp://203.0.113.0/24:22"}, NONE, 0,
	 NULL, "203.0.113.99", 22, TCP, NULL, OK, "tcp://203.0.113.0/24:22"},
	{"tcp-v6", {"tcp://[2001:db8::1]:22"}, NONE, 0,
	 NULL, "2001:db8::1", 22, TCP, NULL, OK, "tcp://[2001:db8::1]:22"},
	/* Addresses. */
	{"v4", {"203.0.113.7"}, NONE, 0, NULL, "203.0.113.7", 443, TCP, NULL, OK, "203.0.113.7"},
	{"v4-other", {"203.0.113.7"}, NONE, 0, NULL, "203.0.113.8", 443, TCP, NULL, NORULE, NULL},
	{"v4-cidr", {"203.0.113.0/24"}, NONE, 0,
	 NULL, "203.0.113.200", 443, TCP, NULL, OK, "203.0.113.0/24"},
	{"v4-cidr-outside", {"203.0.113.0/24"}, NONE, 0,
	 NULL, "203.0.114.1", 443, TCP, NULL, NORULE, NULL},
	{"v4-cidr-port", {"203.0.113.0/24:443"}, NONE, 0,
	 NULL, "203.0.113.5", 443, TLS, NULL, OK, "203.0.113.0/24:443"},
	{"v4-cidr-port-miss", {"203.0.113.0/24:443"}, NONE, 0,
	 NULL, "203.0.113.5", 80, TCP, NULL, NORULE, NULL},
	{"v6", {"2001:db8::1"}, NONE, 0, NULL, "2001:db8::1", 443, TCP, NULL, OK, "2001:db8::1"},
	{"v6-bracket-port", {"[2001:db8::1]:443"}, NONE, 0,
	 NULL, "2001:db8::1", 443, TCP, NULL, OK, "[2001:db8::1]:443"},
	{"v6-bracket-port-miss", {"[2001:db8::1]:443"}, NONE, 0,
	 NULL, "2001:db8::1", 80, TCP, NULL, NORULE, NULL},
	{"v6-cidr", {"2001:db8::/32"}, NONE, 0,
	 NULL, "2001:db8:1::5", 443, TCP, NULL, OK, "2001:db8::/32"},
	{"v6-cidr-outside", {"2001:db8::/32"}, NONE, 0,
	 NULL, "2001:db9::1", 443, TCP, NULL, NORULE, NULL},
	{"v6-odd-prefix", {"2001:db8:8000::/33"}, NONE, 0,
	 NULL, "2001:db8:8001::1", 443, TCP, NULL, OK, "2001:db8:8000::/33"},
	{"v6-odd-prefix-miss", {"2001:db8:8000::/33"}, NONE, 0,
	 NULL, "2001:db8:7fff::1", 443, TCP, NULL, NORULE, NULL},
	{"v4-mapped-query", {"203.0.113.0/24"}, NONE, 0,
	 NULL, "::ffff:203.0.113.9", 443, TCP, NULL, OK, "203.0.113.0/24"},
	{"v4-mapped-rule", {"::ffff:203.0.113.0/120"}, NONE, 0,
	 NULL, "203.0.113.9", 443, TCP, NULL, OK, "::ffff:203.0.113.0/120"},
	{"v6-rule-not-v4", {"::/0"}, NONE, 0, NULL, "203.0.113.9", 443, TCP, NULL, NORULE, NULL},
	{"addr-rule-any-proto", {"203.0.113.0/24"}, NONE, 0,
	 "example.com", "203.0.113.5", 80, HTTP, "POST", OK, "203.0.113.0/24"},
	{"longer-prefix-wins", {"203.0.113.0/24", "203.0.113.0/25"}, NONE, 0,
	 NULL, "203.0.113.5", 443, TCP, NULL, OK, "203.0.113.0/25"},
	{"all-v4-public", {"0.0.0.0/0"}, NONE, 0,
	 NULL, "198.51.100.1", 443, TCP, NULL, OK, "0.0.0.0/0"},
	{"literal-host", {"203.0.113.7"}, NONE, 0,
	 "203.0.113.7", NULL, 443, TLS, NULL, OK, "203.0.113.7"},
	{"literal-host-v6", {"2001:db8::1"}, NONE, 0,
	 "[2001:db8::1]", NULL, 443, TLS, NULL, OK, "2001:db8::1"},
	{"literal-and-addr-addr-decides", {"203.0.113.7"}, NONE, 0,
	 "203.0.113.7", "198.51.100.1", 443, TLS, NULL, NORULE, NULL},
	/* Methods. */
	{"method-get", {"api.example.test|GET,HEAD"}, NONE, 0,
	 "api.example.test", NULL, 80, HTTP, "GET", OK, "api.example.test"},
	{"method-head", {"api.example.test|GET,HEAD"}, NONE, 0,
	 "api.example.test", NULL, 80, HTTP, "HEAD", OK, "api.example.test"},
	{"method-post-blocked", {"api.example.test|GET,HEAD"}, NONE, 0,
	 "api.example.test", NULL, 80, HTTP, "POST", METHOD, "api.example.test"},
	/* TLS to a method-limited host is inspected: each request judged */
	{"method-tls-inspected", {"api.example.test|GET,HEAD"}, NONE, 0,
	 "api.example.test", NULL, 443, TLS, NULL, OK, "api.example.test", 1},
	{"method-tcp-no-rule", {"api.example.test|GET"}, NONE, 0,
	 "api.example.test", NULL, 443, TCP, NULL, NORULE, NULL},
	{"method-connect-http", {"api.example.test|CONNECT"}, NONE, 0,
	 "api.example.test", NULL, 443, HTTP, "CONNECT", OK, "api.example.test"},
	{"method-connect-tls-inspected", {"api.example.test|CONNECT"}, NONE, 0,
	 "api.example.test", NULL, 443, TLS, NULL, OK, "api.example.test", 1},
	{"method-case-sensitive", {"api.example.test|GET"}, NONE, 0,
	 "api.example.test", NULL, 80, HTTP, "get", METHOD, "api.example.test"},
	{"method-other", {"api.example.test|GET"}, NONE, 0,
	 "api.example.test", NULL, 80, HTTP, "PROPFIND", METHOD, "api.example.test"},
	{"method-null", {"api.example.test|GET"}, NONE, 0,
	 "api.example.test", NULL, 80, HTTP, NULL, METHOD, "api.example.test"},
	{"method-other-rule-allows", {"api.example.test|GET", "**.example.test"}, NONE, 0,
	 "api.example.test", NULL, 80, HTTP, "POST", OK, "**.example.test"},
	{"method-more-specific", {"**.example.test", "api.example.test|GET"}, NONE, 0,
	 "api.example.test", NULL, 80, HTTP, "GET", OK, "api.example.test"},
	{"method-wrong-port-no-rule", {"api.example.test:443|GET"}, NONE, 0,
	 "api.example.test", NULL, 80, HTTP, "GET", NORULE, NULL},
	{"method-any-port", {"*:80|GET"}, NONE, 0, "x.test", NULL, 80, HTTP, "GET", OK, "*:80"},
	{"method-any-port-blocked", {"*:80|GET"}, NONE, 0,
	 "x.test", NULL, 80, HTTP, "PUT", METHOD, "*:80"},
	{"deny-method-listed", {"example.com"}, {"example.com|POST"}, 0,
	 "example.com", NULL, 80, HTTP, "POST", DENIED, "example.com"},
	{"deny-method-unlisted", {"example.com"}, {"example.com|POST"}, 0,
	 "example.com", NULL, 80, HTTP, "GET", OK, "example.com"},
	/* TLS can carry any method: inspected, so that POST is denied inside */
	{"deny-method-tls-inspected", {"example.com"}, {"example.com|POST"}, 0,
	 "example.com", NULL, 443, TLS, NULL, OK, "example.com", 1},
	{"deny-method-tcp-fails-closed", {"tcp://example.com:443"}, {"example.com|POST"}, 0,
	 "example.com", NULL, 443, TCP, NULL, DENIED, "example.com"},
	{"method-wildcard-exact-plain", {"**.example.com|GET", "api.example.com"}, NONE, 0,
	 "api.example.com", NULL, 443, TLS, NULL, OK, "api.example.com", 0},
	{"method-exact-wildcard-plain", {"**.example.com", "api.example.com|GET"}, NONE, 0,
	 "api.example.com", NULL, 443, TLS, NULL, OK, "api.example.com", 1},
	/* Deny wins, whatever the order. */
	{"deny-after-allow", {"example.com"}, {"example.com"}, 0,
	 "example.com", NULL, 443, TLS, NULL, DENIED, "example.com"},
	{"deny-before-allow", {"example.com"}, {"example.com"}, 1,
	 "example.com", NULL, 443, TLS, NULL, DENIED, "example.com"},
	{"deny-wildcard-after", {"api.example.com"}, {"*.example.com"}, 0,
	 "api.example.com", NULL, 443, TLS, NULL, DENIED, "*.example.com"},
	{"deny-wildcard-before", {"api.example.com"}, {"*.example.com"}, 1,
	 "api.example.com", NULL, 443, TLS, NULL, DENIED, "*.example.com"},
	{"deny-subdomain", {"**.github.com"}, {"gist.github.com"}, 0,
	 "gist.github.com", NULL, 443, TLS, NULL, DENIED, "gist.github.com"},
	{"deny-subdomain-sibling", {"**.github.com"}, {"gist.github.com"}, 0,
	 "api.github.com", NULL, 443, TLS, NULL, OK, "**.github.com"},
	{"deny-port-only-other", {"example.com"}, {"example.com:80"}, 0,
	 "example.com", NULL, 443, TLS, NULL, OK, "example.com"},
	{"deny-port-only-hit", {"example.com"}, {"example.com:80"}, 0,
	 "example.com", NULL, 80, HTTP, "GET", DENIED, "example.com:80"},
	{"deny-host-hits-tcp", {"tcp://example.com:22"}, {"example.com"}, 0,
	 "example.com", NULL, 22, TCP, NULL, DENIED, "example.com"},
	{"deny-qmark", {"**.example.com"}, {"api?.example.com"}, 1,
	 "api2.example.com", NULL, 443, TLS, NULL, DENIED, "api?.example.com"},
	{"deny-addr-beats-host", {"example.com"}, {"203.0.113.0/24"}, 0,
	 "example.com", "203.0.113.5", 443, TLS, NULL, DENIED, "203.0.113.0/24"},
	{"deny-addr-beats-named-local", {"10.0.0.0/8"}, {"10.1.0.0/16"}, 0,
	 NULL, "10.1.2.3", 443, TCP, NULL, DENIED, "10.1.0.0/16"},
	{"deny-any-port-no-host", {"203.0.113.0/24"}, {"*:25"}, 0,
	 NULL, "203.0.113.5", 25, TCP, NULL, DENIED, "*:25"},
	{"deny-v4-hits-mapped", {"**.example.com"}, {"203.0.113.0/24"}, 1,
	 "example.com", "::ffff:203.0.113.1", 443, TLS, NULL, DENIED, "203.0.113.0/24"},
	{"deny-literal-host", {"*:443"}, {"203.0.113.7"}, 0,
	 "203.0.113.7", NULL, 443, TLS, NULL, DENIED, "203.0.113.7"},
	{"deny-literal-even-if-addr-differs", {"198.51.100.0/24"}, {"203.0.113.7"}, 0,
	 "203.0.113.7", "198.51.100.1", 443, TLS, NULL, DENIED, "203.0.113.7"},
	{"deny-tcp-rule", {"**.example.com"}, {"tcp://*.example.com:443"}, 0,
	 "www.example.com", NULL, 443, TLS, NULL, DENIED, "tcp://*.example.com:443"},
	{"deny-only", NONE, {"example.com"}, 0, "example.org", NULL, 443, TLS, NULL, NORULE, NULL},
	/* Local addresses: a hostname resolving into them is denied. */
	{"local-127", {"localhost"}, NONE, 0,
	 "localhost", "127.0.0.1", 80, HTTP, "GET", LOCAL, NULL},
	{"local-10", {"internal.example.com"}, NONE, 0,
	 "internal.example.com", "10.1.2.3", 443, TLS, NULL, LOCAL, NULL},
	{"local-172-16", {"example.com"}, NONE, 0,
	 "example.com", "172.20.0.1", 443, TLS, NULL, LOCAL, NULL},
	{"public-172-32", {"example.com"}, NONE, 0,
	 "example.com", "172.32.0.1", 443, TLS, NULL, OK, "example.com"},
	{"local-192-168", {"example.com"}, NONE, 0,
	 "example.com", "192.168.1.1", 443, TLS, NULL, LOCAL, NULL},
	{"local-metadata", {"example.com"}, NONE, 0,
	 "example.com", "169.254.169.254", 80, HTTP, "GET", LOCAL, NULL},
	{"local-cgnat", {"example.com"}, NONE, 0,
	 "example.com", "100.64.0.1", 443, TLS, NULL, LOCAL, NULL},
	{"public-past-cgnat", {"example.com"}, NONE, 0,
	 "example.com", "100.128.0.1", 443, TLS, NULL, OK, "example.com"},
	{"local-ula", {"example.com"}, NONE, 0,
	 "example.com", "fc00::1", 443, TLS, NULL, LOCAL, NULL},
	{"local-ula-fd", {"example.com"}, NONE, 0,
	 "example.com", "fd12:3456::1", 443, TLS, NULL, LOCAL, NULL},
	{"local-fe80", {"example.com"}, NONE, 0,
	 "example.com", "fe80::1", 443, TLS, NULL, LOCAL, NULL},
	{"local-ff02", {"example.com"}, NONE, 0,
	 "example.com", "ff02::1", 443, TLS, NULL, LOCAL, NULL},
	{"local-v6-loopback", {"example.com"}, NONE, 0,
	 "example.com", "::1", 443, TLS, NULL, LOCAL, NULL},
	{"local-v6-unspec", {"example.com"}, NONE, 0,
	 "example.com", "::", 443, TLS, NULL, LOCAL, NULL},
	{"local-0000", {"example.com"}, NONE, 0,
	 "example.com", "0.0.0.0", 443, TLS, NULL, LOCAL, NULL},
	{"local-broadcast", {"example.com"}, NONE, 0,
	 "example.com", "255.255.255.255", 443, TLS, NULL, LOCAL, NULL},
	{"local-multicast", {"example.com"}, NONE, 0,
	 "example.com", "224.0.0.1", 443, TLS, NULL, LOCAL, NULL},
	{"local-v4-mapped", {"example.com"}, NONE, 0,
	 "example.com", "::ffff:127.0.0.1", 443, TLS, NULL, LOCAL, NULL},
	{"local-unknown-family", {"example.com"}, NONE, 0,
	 "example.com", "unix", 443, TLS, NULL, LOCAL, NULL},
	{"local-tcp-any-host", {"tcp://*:5432"}, NONE, 0,
	 "db.example.com", "10.0.0.5", 5432, TCP, NULL, LOCAL, NULL},
	{"named-127", {"127.0.0.1"}, NONE, 0, NULL, "127.0.0.1", 8080, TCP, NULL, OK, "127.0.0.1"},
	{"named-127-other", {"127.0.0.1"}, NONE, 0,
	 NULL, "127.0.0.2", 8080, TCP, NULL, LOCAL, NULL},
	{"named-10-8", {"10.0.0.0/8"}, NONE, 0, NULL, "10.1.2.3", 443, TCP, NULL, OK, "10.0.0.0/8"},
	{"named-narrower", {"10.1.2.0/24"}, NONE, 0,
	 NULL, "10.1.2.3", 443, TCP, NULL, OK, "10.1.2.0/24"},
	{"not-named-by-all", {"0.0.0.0/0"}, NONE, 0, NULL, "10.1.2.3", 443, TCP, NULL, LOCAL, NULL},
	{"not-named-by-wider", {"172.0.0.0/8"}, NONE, 0,
	 NULL, "172.16.0.1", 443, TCP, NULL, LOCAL, NULL},
	{"named-172-12", {"172.16.0.0/12"}, NONE, 0,
	 NULL, "172.31.255.254", 443, TCP, NULL, OK, "172.16.0.0/12"},
	{"named-metadata", {"169.254.169.254"}, NONE, 0,
	 NULL, "169.254.169.254", 80, HTTP, "GET", OK, "169.254.169.254"},
	{"named-v4-mapped", {"127.0.0.1"}, NONE, 0,
	 NULL, "::ffff:127.0.0.1", 80, TCP, NULL, OK, "127.0.0.1"},
	{"named-v6-loopback", {"::1"}, NONE, 0, NULL, "::1", 80, TCP, NULL, OK, "::1"},
	{"not-named-v6-all", {"::/0"}, NONE, 0, NULL, "::1", 80, TCP, NULL, LOCAL, NULL},
	{"named-ula", {"fd00::/8"}, NONE, 0, NULL, "fd00::1", 80, TCP, NULL, OK, "fd00::/8"},
	{"named-host-allows", {"192.168.0.0/16", "nas.example.internal"}, NONE, 0,
	 "nas.example.internal", "192.168.1.1", 443, TLS, NULL, OK, "nas.example.internal"},
	{"named-other-port-does-not-name", {"10.0.0.0/8:443", "db.example.com"}, NONE, 0,
	 "db.example.com", "10.0.0.5", 80, HTTP, "GET", LOCAL, NULL},
	{"named-tcp-rule", {"tcp://10.0.0.5:5432"}, NONE, 0,
	 NULL, "10.0.0.5", 5432, TCP, NULL, OK, "tcp://10.0.0.5:5432"},
	{"named-literal", {"127.0.0.1"}, NONE, 0,
	 "127.0.0.1", NULL, 8080, HTTP, "GET", OK, "127.0.0.1"},
	{"deny-beats-named", {"127.0.0.1"}, {"127.0.0.0/8"}, 1,
	 NULL, "127.0.0.1", 80, TCP, NULL, DENIED, "127.0.0.0/8"},
	{"test-net-198-18-public", {"**.example.com"}, NONE, 0,
	 "example.com", "198.18.0.1", 443, TLS, NULL, OK, "**.example.com"},
	{"test-net-192-0-2-public", {"**.example.com"}, NONE, 0,
	 "example.com", "192.0.2.1", 443, TLS, NULL, OK, "**.example.com"},
	{"test-net-2001-db8-public", {"**.example.com"}, NONE, 0,
	 "example.com", "2001:db8::5", 443, TLS, NULL, OK, "**.example.com"},
};
/* clang-format on */

static void
run_decide_case(void **state)
{
	const struct decide_case *c = *state;
	struct policy *p =
		build(c->allow, NCASES(c->allow), c->deny, NCASES(c->deny), c->deny_first);
	struct sockaddr_storage ss;
	struct policy_query q = {
		.host = c->host,
		.addr = make_sa(c->addr, &ss),
		.port = c->port,
		.proto = c->proto,
		.method = c->method,
	};
	struct policy_decision d;

	assert_int_equal(policy_decide(p, &q, &d), 0);
	if (d.reason != c->reason)
		fail_msg("reason %d (%s), want %d", d.reason, policy_reason_header(d.reason),
			 c->reason);
	assert_int_equal(d.action, c->reason == OK ? POLICY_ALLOW : POLICY_DENY);
	if (d.inspect != c->inspect)
		fail_msg("inspect %d, want %d", d.inspect, c->inspect);
	if (!c->rule) {
		assert_null(d.rule);
	} else {
		assert_non_null(d.rule);
		assert_string_equal(d.rule->text, c->rule);
		assert_int_equal(d.rule->action, c->reason == DENIED ? POLICY_DENY : POLICY_ALLOW);
		assert_string_equal(d.rule->source, "test");
	}
	policy_free(p);
}

/* ---- policy_host_possible ------------------------------------------------ */

struct possible_case {
	const char *name;
	const char *allow[4];
	const char *deny[3];
	const char *host;
	bool want;
};

static const struct possible_case possible_cases[] = {
	{"exact", {"example.com"}, NONE, "example.com", true},
	{"exact-case-dot", {"example.com"}, NONE, "EXAMPLE.com.", true},
	{"other", {"example.com"}, NONE, "example.org", false},
	{"port-rule", {"example.com:8443"}, NONE, "example.com", true},
	{"method-rule", {"example.com|GET"}, NONE, "example.com", true},
	{"star-sub", {"*.example.com"}, NONE, "www.example.com", true},
	{"star-apex", {"*.example.com"}, NONE, "example.com", false},
	{"dstar-apex", {"**.example.com"}, NONE, "example.com", true},
	{"qmark", {"api?.example.com"}, NONE, "api1.example.com", true},
	{"any-port", {"*:443"}, NONE, "anything.example", true},
	{"tcp-host", {"tcp://git.example.com:22"}, NONE, "git.example.com", true},
	{"addr-not-looked-at", {"203.0.113.0/24"}, NONE, "example.com", false},
	{"empty", NONE, NONE, "example.com", false},
	{"invalid-host", {"*:443"}, NONE, "bad host", false},
	{"numeric-host", {"*:443"}, NONE, "127.1", false},
	{"denied", {"**.github.com"}, {"gist.github.com"}, "gist.github.com", false},
	{"denied-sibling", {"**.github.com"}, {"gist.github.com"}, "api.github.com", true},
	{"denied-wildcard", {"*:443"}, {"*.example.com"}, "www.example.com", false},
	{"deny-with-port", {"**.github.com"}, {"gist.github.com:443"}, "gist.github.com", true},
	{"deny-with-method", {"**.github.com"}, {"gist.github.com|POST"}, "gist.github.com", true},
	{"deny-any-port", {"**.github.com"}, {"*:443"}, "gist.github.com", true},
};

static void
run_possible_case(void **state)
{
	const struct possible_case *c = *state;
	struct policy *p = build(c->allow, NCASES(c->allow), c->deny, NCASES(c->deny), false);

	assert_int_equal(policy_host_possible(p, c->host), c->want);
	policy_free(p);
}

/* ---- policy_denies_addresses ---------------------------------------------- */

/* Whether a reload's revoke pass could end a direct connection it knows
 * only by its address: a deny rule an address alone matches. */
/* The ports the allow rules name: a proof only when every allow rule names
 * its port (deny rules do not count). */
static void
test_allow_port_bits(void **state)
{
	static const struct {
		const char *allow[3], *deny[2];
		bool proven;
		int port, named; /* a port, and whether its bit is set */
	} cases[] = {
		{{"github.com:443", "tcp://git.test:22", "203.0.113.0/24:8443"}, NONE, true, 22, 1},
		{{"github.com:443", "tcp://git.test:22"}, NONE, true, 8443, 0},
		{{"*:8080"}, {"bad.test"}, true, 8080, 1},
		{{"github.com:443", "api.test"}, NONE, false, 0, 0},	/* any port */
		{{"github.com:443", "203.0.113.7"}, NONE, false, 0, 0}, /* any port */
		{{"a.test:65535"}, NONE, true, 65535, 1},
		{NONE, {"bad.test:443"}, false, 0, 0}, /* no allow rule: not used */
	};
	uint64_t bits[1024];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct policy *p = build(cases[i].allow, NCASES(cases[i].allow), cases[i].deny,
					 NCASES(cases[i].deny), false);
		bool proven;

		assert_non_null(p);
		proven = policy_allow_port_bits(p, bits);
		if (proven != cases[i].proven)
			fail_msg("case %zu: proven %d", i, proven);
		if (proven &&
		    !!(bits[cases[i].port >> 6] & (1ull << (cases[i].port & 63))) != cases[i].named)
			fail_msg("case %zu: port %d", i, cases[i].port);
		policy_free(p);
	}
}

static void
test_denies_addresses(void **state)
{
	static const struct {
		const char *allow[2], *deny[2];
		bool want;
	} cases[] = {
		{{"example.com", "203.0.113.0/24"}, NONE, false},
		{{"**.example.com"}, {"gist.example.com"}, false},
		{{"**.example.com"}, {"gist.example.com:443"}, false},
		{{"**.example.com"}, {"203.0.113.7"}, true},
		{{"**.example.com"}, {"198.51.100.0/24:22"}, true},
		{{"**.example.com"}, {"*:22"}, true},
		{{"**.example.com"}, {"tcp://203.0.113.7:22"}, true},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct policy *p = build(cases[i].allow, NCASES(cases[i].allow), cases[i].deny,
					 NCASES(cases[i].deny), false);

		assert_non_null(p);
		if (policy_denies_addresses(p) != cases[i].want)
			fail_msg("case %zu: got %d", i, !cases[i].want);
		policy_free(p);
	}
}

/* ---- policy_tcp_rule ------------------------------------------------------- */

struct tcp_case {
	const char *name;
	const char *allow[3];
	const char *deny[3];
	const char *host;
	uint16_t port;
	bool want;
};

static const struct tcp_case tcp_cases[] = {
	{"match", {"tcp://git.example.com:22"}, NONE, "git.example.com", 22, true},
	{"case", {"tcp://git.example.com:22"}, NONE, "GIT.example.com.", 22, true},
	{"wrong-port", {"tcp://git.example.com:22"}, NONE, "git.example.com", 23, false},
	{"wrong-host", {"tcp://git.example.com:22"}, NONE, "example.com", 22, false},
	{"host-rule-is-not-tcp", {"git.example.com"}, NONE, "git.example.com", 22, false},
	{"any-port-is-not-tcp", {"*:22"}, NONE, "git.example.com", 22, false},
	{"wildcard", {"tcp://*.example.com:22"}, NONE, "git.example.com", 22, true},
	{"any-host", {"tcp://*:22"}, NONE, "git.example.com", 22, true},
	{"denied-host",
	 {"tcp://git.example.com:22"},
	 {"git.example.com"},
	 "git.example.com",
	 22,
	 false},
	{"denied-port", {"tcp://*.example.com:22"}, {"*:22"}, "git.example.com", 22, false},
	{"literal", {"tcp://203.0.113.7:22"}, NONE, "203.0.113.7", 22, true},
	{"literal-local-named", {"tcp://10.0.0.5:22"}, NONE, "10.0.0.5", 22, true},
	{"literal-local-unnamed", {"tcp://*:22"}, NONE, "10.0.0.5", 22, false},
	{"empty", NONE, NONE, "git.example.com", 22, false},
};

static void
run_tcp_case(void **state)
{
	const struct tcp_case *c = *state;
	struct policy *p = build(c->allow, NCASES(c->allow), c->deny, NCASES(c->deny), false);

	assert_int_equal(policy_tcp_rule(p, c->host, c->port), c->want);
	policy_free(p);
}

/* ---- addr_classify ------------------------------------------------------- */

struct class_case {
	const char *name;
	const char *addr;
	enum addr_class want;
};

static const struct class_case class_cases[] = {
	{"public-v4", "203.0.113.1", ADDR_PUBLIC},
	{"public-198-18", "198.18.0.1", ADDR_PUBLIC},
	{"public-192-0-2", "192.0.2.1", ADDR_PUBLIC},
	{"public-8-8-8-8", "8.8.8.8", ADDR_PUBLIC},
	{"public-240", "240.0.0.1", ADDR_PUBLIC},
	{"loopback", "127.0.0.1", ADDR_LOOPBACK},
	{"loopback-end", "127.255.255.254", ADDR_LOOPBACK},
	{"private-10", "10.255.0.1", ADDR_PRIVATE},
	{"private-172-16", "172.16.0.1", ADDR_PRIVATE},
	{"private-172-31", "172.31.255.255", ADDR_PRIVATE},
	{"public-172-15", "172.15.255.255", ADDR_PUBLIC},
	{"public-172-32", "172.32.0.0", ADDR_PUBLIC},
	{"private-192-168", "192.168.0.1", ADDR_PRIVATE},
	{"linklocal", "169.254.169.254", ADDR_LINKLOCAL},
	{"cgnat", "100.64.0.1", ADDR_CGNAT},
	{"cgnat-end", "100.127.255.255", ADDR_CGNAT},
	{"public-100-63", "100.63.255.255", ADDR_PUBLIC},
	{"multicast", "224.0.0.251", ADDR_MULTICAST},
	{"multicast-end", "239.255.255.250", ADDR_MULTICAST},
	{"unspec-0", "0.0.0.0", ADDR_UNSPEC},
	{"unspec-0-8", "0.1.2.3", ADDR_UNSPEC},
	{"broadcast", "255.255.255.255", ADDR_UNSPEC},
	{"public-v6", "2606:4700::1", ADDR_PUBLIC},
	{"public-2001-db8", "2001:db8::1", ADDR_PUBLIC},
	{"loopback-v6", "::1", ADDR_LOOPBACK},
	{"unspec-v6", "::", ADDR_UNSPEC},
	{"linklocal-v6", "fe80::1", ADDR_LINKLOCAL},
	{"linklocal-v6-end", "febf::1", ADDR_LINKLOCAL},
	{"public-fec0", "fec0::1", ADDR_PUBLIC},
	{"ula-fc", "fc00::1", ADDR_ULA},
	{"ula-fd", "fdff::1", ADDR_ULA},
	{"multicast-v6", "ff02::1", ADDR_MULTICAST},
	{"mapped-private", "::ffff:10.0.0.1", ADDR_PRIVATE},
	{"mapped-public", "::ffff:8.8.8.8", ADDR_PUBLIC},
	{"mapped-loopback", "::ffff:127.0.0.1", ADDR_LOOPBACK},
	{"nat64", "64:ff9b::cb00:7107", ADDR_V4_IN_V6},
	{"nat64-local", "64:ff9b:1::cb00:7107", ADDR_V4_IN_V6},
	{"6to4", "2002:cb00:7107::1", ADDR_V4_IN_V6},
	{"teredo", "2001:0:cb00:7107::1", ADDR_V4_IN_V6},
	{"v4-compatible", "::203.0.113.7", ADDR_V4_IN_V6},
	{"siit", "::ffff:0:203.0.113.7", ADDR_V4_IN_V6},
	{"public-2001-1", "2001:1::1", ADDR_PUBLIC},
	{"public-2003", "2003::1", ADDR_PUBLIC},
	{"public-64-ff9a", "64:ff9a::1", ADDR_PUBLIC},
	{"unknown-family", "unix", ADDR_UNSPEC},
};

static void
run_class_case(void **state)
{
	const struct class_case *c = *state;
	struct sockaddr_storage ss;

	assert_int_equal(addr_classify(make_sa(c->addr, &ss)), c->want);
}

/* ---- policy_host_normalize ------------------------------------------------ */

struct norm_case {
	const char *name;
	const char *in;
	bool pattern;
	size_t outlen;	  /* 0: 256 */
	const char *want; /* NULL: -EINVAL */
};

static char name_253[254], name_254[255], label_63[64], label_64[65];

static const struct norm_case norm_cases[] = {
	{"lower", "Example.COM", false, 0, "example.com"},
	{"trailing-dot", "example.com.", false, 0, "example.com"},
	{"single-label", "localhost", false, 0, "localhost"},
	{"underscore-dash", "_a-b.example", false, 0, "_a-b.example"},
	{"punycode", "XN--BCHER-KVA.example", false, 0, "xn--bcher-kva.example"},
	{"pattern", "*.Api?.example", true, 0, "*.api?.example"},
	{"pattern-refused", "*.example.com", false, 0, NULL},
	{"qmark-refused", "api?.example.com", false, 0, NULL},
	{"empty", "", false, 0, NULL},
	{"dot", ".", false, 0, NULL},
	{"empty-label", "a..b", false, 0, NULL},
	{"two-trailing-dots", "a.b..", false, 0, NULL},
	{"leading-dot", ".a.b", false, 0, NULL},
	{"space", "a b", false, 0, NULL},
	{"slash", "a/b", false, 0, NULL},
	{"colon", "a:443", false, 0, NULL},
	{"non-ascii",
	 "b\xc3\xbc"
	 "cher.de",
	 false, 0, NULL},
	{"253", name_253, false, 0, name_253},
	{"254", name_254, false, 0, NULL},
	{"label-63", label_63, false, 0, label_63},
	{"label-64", label_64, false, 0, NULL},
	{"253-trailing-dot-fits", NULL, false, 0, name_253}, /* filled in main() */
	{"short-buffer", "example.com", false, 11, NULL},
	{"exact-buffer", "example.com", false, 12, "example.com"},
};

static char name_253_dot[256];

static void
run_norm_case(void **state)
{
	const struct norm_case *c = *state;
	char out[256];
	const char *in = c->in ? c->in : name_253_dot;
	int err = policy_host_normalize(in, c->pattern, out, c->outlen ? c->outlen : sizeof(out));

	if (!c->want) {
		assert_int_equal(err, -EINVAL);
	} else {
		assert_int_equal(err, 0);
		assert_string_equal(out, c->want);
	}
}

/* ---- everything else ------------------------------------------------------- */

static void
test_decide_einval(void **state)
{
	struct policy *p = policy_new();
	struct policy_query q = {.port = 443, .proto = POLICY_P_TLS};
	struct policy_decision d;

	(void)state;
	assert_int_equal(policy_decide(p, &q, &d), -EINVAL);
	q.host = "";
	assert_int_equal(policy_decide(p, &q, &d), -EINVAL);
	q.host = "example.com";
	assert_int_equal(policy_decide(NULL, &q, &d), -EINVAL);
	assert_int_equal(policy_decide(p, NULL, &d), -EINVAL);
	assert_int_equal(policy_decide(p, &q, NULL), -EINVAL);
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.reason, POLICY_R_NO_RULE);
	assert_false(policy_host_possible(NULL, "example.com"));
	assert_false(policy_host_possible(p, NULL));
	assert_false(policy_tcp_rule(NULL, "example.com", 22));
	assert_int_equal(policy_add(p, POLICY_ALLOW, NULL, NULL, NULL, NULL, 0), -EINVAL);
	assert_int_equal(policy_add(NULL, POLICY_ALLOW, "x.test", NULL, NULL, NULL, 0), -EINVAL);
	assert_int_equal(policy_add(p, (enum policy_action)7, "x.test", NULL, NULL, NULL, 0),
			 -EINVAL);
	assert_int_equal(policy_count(NULL), 0);
	policy_free(p);
	policy_free(NULL);
}

static void
test_rule_fields(void **state)
{
	struct policy *p = policy_new();
	struct policy_query q = {.host = "api.example.test", .port = 80, .method = "GET"};
	struct policy_decision d;
	char src[32], errbuf[128];

	(void)state;
	strcpy(src, "policy.json");
	assert_int_equal(policy_add(p, POLICY_ALLOW, "tcp://git.example.test:22", NULL, src, errbuf,
				    sizeof(errbuf)),
			 0);
	assert_string_equal(errbuf, "");
	assert_int_equal(policy_add(p, POLICY_ALLOW, "api.example.test:80", "get,Head", "--allow",
				    errbuf, sizeof(errbuf)),
			 0);
	assert_int_equal(policy_add(p, POLICY_DENY, "x.example.test", NULL, NULL, NULL, 0), 0);
	assert_int_equal(policy_count(p), 3);
	/* The source is copied: the caller's buffer may change or go. */
	strcpy(src, "clobbered");
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.reason, POLICY_R_ALLOWED);
	assert_int_equal(d.rule->index, 2);
	assert_int_equal(d.rule->action, POLICY_ALLOW);
	assert_string_equal(d.rule->text, "api.example.test:80");
	assert_string_equal(d.rule->source, "--allow");
	assert_int_equal(d.rule->methods, POLICY_M_GET | POLICY_M_HEAD);
	assert_int_equal(d.rule->port, 80);
	assert_false(d.rule->tcp);
	q = (struct policy_query){.host = "git.example.test", .port = 22, .proto = POLICY_P_TCP};
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.rule->index, 1);
	assert_true(d.rule->tcp);
	assert_int_equal(d.rule->port, 22);
	assert_string_equal(d.rule->source, "policy.json");
	q.host = "x.example.test";
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.reason, POLICY_R_DENY_RULE);
	assert_int_equal(d.rule->index, 3);
	assert_null(d.rule->source);
	policy_free(p);
}

static void
test_methods_parse(void **state)
{
	char errbuf[160];
	uint32_t bits = 0;

	(void)state;
	assert_int_equal(policy_methods_parse("GET,HEAD,POST,PUT,DELETE,PATCH,OPTIONS,CONNECT,"
					      "TRACE",
					      &bits, errbuf, sizeof(errbuf)),
			 0);
	assert_int_equal(bits, POLICY_M_OTHER - 1);
	assert_int_equal(policy_methods_parse("options", &bits, errbuf, sizeof(errbuf)), 0);
	assert_int_equal(bits, POLICY_M_OPTIONS);
	assert_int_equal(policy_methods_parse("OTHER", &bits, errbuf, sizeof(errbuf)), -EINVAL);
	assert_non_null(strstr(errbuf, "unknown method 'OTHER'"));
	/* A tiny buffer is truncated, never overrun. */
	assert_int_equal(policy_methods_parse("NOPE", &bits, errbuf, 8), -EINVAL);
	assert_int_equal(strlen(errbuf), 7);
}

static void
test_reason_and_class_names(void **state)
{
	(void)state;
	assert_string_equal(policy_reason_header(POLICY_R_ALLOWED), "");
	assert_string_equal(policy_reason_header(POLICY_R_NO_RULE), "blocked-by-allowlist");
	assert_string_equal(policy_reason_header(POLICY_R_DENY_RULE), "blocked-by-denylist");
	assert_string_equal(policy_reason_header(POLICY_R_METHOD), "blocked-by-method-policy");
	assert_string_equal(policy_reason_header(POLICY_R_LOCAL), "blocked-by-policy");
	assert_string_equal(policy_reason_header(POLICY_R_V4_IN_V6), "blocked-by-policy");
	assert_int_equal(addr_classify(NULL), ADDR_UNSPEC);
}

/* Bytes from outside made printable: cut at n, at a NUL, at what fits;
 * control bytes, DEL and bytes past ASCII become '?'. */
static void
test_safe_str(void **state)
{
	const char comm[16] = "a\tb\033[31m\377\177123456"; /* 16 bytes, no NUL */
	char out[17], small[4];

	(void)state;
	assert_string_equal(policy_safe_str("a\nb\200c\177", SIZE_MAX, out, sizeof(out)), "a?b?c?");
	assert_string_equal(policy_safe_str("abcdef", 3, out, sizeof(out)), "abc");
	assert_string_equal(policy_safe_str("ab\0cd", 5, out, sizeof(out)), "ab");
	assert_string_equal(policy_safe_str("abcdef", SIZE_MAX, small, sizeof(small)), "abc");
	out[0] = 'x';
	policy_safe_str("abc", 3, out, 0); /* no room: nothing written */
	assert_int_equal(out[0], 'x');
	policy_safe_comm(comm, out);
	assert_string_equal(out, "a?b?[31m??123456");
}

/* Enough rules of each kind that every table grows many times. */
static void
test_many_rules(void **state)
{
	struct policy *p = policy_new();
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct policy_query q = {.port = 443, .proto = POLICY_P_TLS};
	struct policy_decision d;
	char rule[64], host[64];
	int i;

	(void)state;
	for (i = 0; i < 5000; i++) {
		snprintf(rule, sizeof(rule), "h%d.example.com", i);
		assert_int_equal(policy_add(p, POLICY_ALLOW, rule, NULL, NULL, NULL, 0), 0);
		snprintf(rule, sizeof(rule), "*.w%d.example.net", i);
		assert_int_equal(policy_add(p, POLICY_ALLOW, rule, NULL, NULL, NULL, 0), 0);
		snprintf(rule, sizeof(rule), "q%d?.example.org", i);
		assert_int_equal(policy_add(p, POLICY_ALLOW, rule, NULL, NULL, NULL, 0), 0);
		snprintf(rule, sizeof(rule), "198.51.%d.%d", i / 256, i % 256);
		assert_int_equal(policy_add(p, POLICY_ALLOW, rule, NULL, NULL, NULL, 0), 0);
		snprintf(rule, sizeof(rule), "*:%d", 1000 + i);
		assert_int_equal(policy_add(p, POLICY_DENY, rule, NULL, NULL, NULL, 0), 0);
	}
	assert_int_equal(policy_count(p), 25000);
	for (i = 0; i < 5000; i += 7) {
		snprintf(host, sizeof(host), "H%d.example.com", i);
		q.host = host;
		assert_int_equal(policy_decide(p, &q, &d), 0);
		assert_int_equal(d.reason, POLICY_R_ALLOWED);
		assert_int_equal(d.rule->index, 5 * i + 1);
		snprintf(host, sizeof(host), "a.b.w%d.example.net", i);
		assert_int_equal(policy_decide(p, &q, &d), 0);
		assert_int_equal(d.rule->index, 5 * i + 2);
		snprintf(host, sizeof(host), "q%dz.example.org", i);
		assert_int_equal(policy_decide(p, &q, &d), 0);
		assert_int_equal(d.rule->index, 5 * i + 3);
		q.host = NULL;
		q.addr = (struct sockaddr *)&sin;
		sin.sin_addr.s_addr = htonl(0xc6330000u | i);
		assert_int_equal(policy_decide(p, &q, &d), 0);
		assert_int_equal(d.rule->index, 5 * i + 4);
		q.port = 1000 + i;
		assert_int_equal(policy_decide(p, &q, &d), 0);
		assert_int_equal(d.reason, POLICY_R_DENY_RULE);
		assert_int_equal(d.rule->index, 5 * i + 5);
		q.addr = NULL;
		q.port = 443;
	}
	q.host = "h5000.example.com";
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.reason, POLICY_R_NO_RULE);
	policy_free(p);
}

/* IPv4 carried in IPv6: refused even when a rule names it exactly; the
 * fast path's exact rules hold IPv6 ones only when asked for. */
static void
test_v4_in_v6_and_exact(void **state)
{
	struct policy *p = policy_new();
	struct sockaddr_storage ss[8];
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};
	struct policy_query q = {
		.addr = (struct sockaddr *)&sin6, .port = 443, .proto = POLICY_P_TCP};
	struct policy_decision d;
	char err[200], words[200];

	(void)state;
	assert_non_null(p);
	assert_int_equal(policy_add(p, POLICY_ALLOW, "[64:ff9b::cb00:7107]:443", NULL, "t", err,
				    sizeof(err)),
			 0);
	assert_int_equal(
		policy_add(p, POLICY_ALLOW, "[2001:db8::5]:443", NULL, "t", err, sizeof(err)), 0);
	assert_int_equal(
		policy_add(p, POLICY_ALLOW, "198.51.100.5:443", NULL, "t", err, sizeof(err)), 0);
	assert_int_equal(
		policy_add(p, POLICY_ALLOW, "[2001:db8::]/64:80", NULL, "t", err, sizeof(err)), 0);
	inet_pton(AF_INET6, "64:ff9b::cb00:7107", &sin6.sin6_addr);
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.action, POLICY_DENY);
	assert_int_equal(d.reason, POLICY_R_V4_IN_V6);
	assert_null(d.rule);
	assert_string_equal(policy_reason_words(&d, NULL, words, sizeof(words)),
			    "IPv4 carried in IPv6 (NAT64, 6to4, Teredo) is refused");
	inet_pton(AF_INET6, "2001:db8::5", &sin6.sin6_addr);
	assert_int_equal(policy_decide(p, &q, &d), 0);
	assert_int_equal(d.action, POLICY_ALLOW);
	/* exact: the v4 rule, and the exact v6 ones only with v6 (the /64 never) */
	assert_int_equal(policy_exact_addrs(p, ss, 8, false), 1);
	assert_int_equal(ss[0].ss_family, AF_INET);
	assert_int_equal(policy_exact_addrs(p, ss, 8, true), 3);
	assert_int_equal(ss[0].ss_family, AF_INET6);
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss[1])->sin6_port), 443);
	assert_int_equal(ss[2].ss_family, AF_INET);
	policy_free(p);
}

/* policy_allow_nets4: IPv4 network allow rules without a port, but those a
 * deny rule overlaps; "*:PORT" deny rules leave none */
static void
test_allow_nets4(void **state)
{
	static const char *const allow[] = {"198.19.6.0/24", "198.19.7.0/24",	  "198.18.0.0/15",
					    "198.51.100.7",  "203.0.113.0/24:80", "[2001:db8::]/64",
					    "example.com"};
	struct policy *p = policy_new();
	uint32_t net[8];
	uint8_t len[8];
	char err[256], a[INET_ADDRSTRLEN];
	int n;

	(void)state;
	for (size_t i = 0; i < sizeof(allow) / sizeof(allow[0]); i++)
		assert_int_equal(policy_add(p, POLICY_ALLOW, allow[i], NULL, "t", err, sizeof(err)),
				 0);
	assert_int_equal(policy_add(p, POLICY_DENY, "198.19.2.3", NULL, "t", err, sizeof(err)), 0);
	n = policy_allow_nets4(p, net, len, 8);
	assert_int_equal(n, 3); /* 198.18.0.0/15 holds a denied address */
	assert_string_equal(inet_ntop(AF_INET, &net[0], a, sizeof(a)), "198.19.6.0");
	assert_int_equal(len[0], 24);
	assert_string_equal(inet_ntop(AF_INET, &net[1], a, sizeof(a)), "198.19.7.0");
	assert_string_equal(inet_ntop(AF_INET, &net[2], a, sizeof(a)), "198.51.100.7");
	assert_int_equal(len[2], 32);
	assert_int_equal(policy_allow_nets4(p, net, len, 1), 1);
	assert_int_equal(policy_add(p, POLICY_DENY, "*:22", NULL, "t", err, sizeof(err)), 0);
	assert_int_equal(policy_allow_nets4(p, net, len, 8), 0);
	policy_free(p);
}

static void
fill_long_names(void)
{
	size_t i;

	memset(long_label, 'l', 64);
	memcpy(long_label + 64, ".example", 9);
	for (i = 0; i + 4 <= 256; i += 4)
		memcpy(long_name + i, "abc.", 4);
	memcpy(long_name + 252, "com", 4);
	memset(long_rule, 'r', 1025);
	for (i = 0; i < 253; i += 2)
		memcpy(name_253 + i, i + 1 < 253 ? "a." : "a", i + 1 < 253 ? 2 : 1);
	memcpy(name_254, name_253, 253);
	memcpy(name_254 + 252, "ab", 3);
	memset(label_63, 'x', 63);
	memset(label_64, 'x', 64);
	snprintf(name_253_dot, sizeof(name_253_dot), "%s.", name_253);
}

/* The kernel-verified path's port: 443 for a host rule without a port or
 * with 443 and no method limit; nothing for tcp://, address rules, other
 * ports, method limits, names no rule matches. */
static void
test_kv_ports(void **state)
{
	static const char *const allow[] = {"a.test",	      "b.test:443",	  "c.test:8443",
					    "d.test|GET",     "tcp://e.test:443", "**.f.test",
					    "203.0.113.7:443"};
	struct policy_rule_opts ins = {.inspect = true};
	const char *paths[] = {"/x"};
	struct policy_rule_opts pth = {.paths = paths, .npaths = 1};
	struct policy *p = build(allow, sizeof(allow) / sizeof(allow[0]), NULL, 0, false);
	uint16_t ports[4];

	(void)state;
	assert_int_equal(policy_kv_ports(p, "a.test", ports, 4), 1);
	assert_int_equal(ports[0], 443);
	assert_int_equal(policy_kv_ports(p, "B.test.", ports, 4), 1);
	assert_int_equal(policy_kv_ports(p, "x.f.test", ports, 4), 1);
	assert_int_equal(policy_kv_ports(p, "c.test", ports, 4), 0);
	assert_int_equal(policy_kv_ports(p, "d.test", ports, 4), 0);
	assert_int_equal(policy_kv_ports(p, "e.test", ports, 4), 0);
	assert_int_equal(policy_kv_ports(p, "other.test", ports, 4), 0);
	assert_int_equal(policy_kv_ports(p, "203.0.113.7", ports, 4), 0);
	assert_int_equal(policy_kv_ports(p, "a.test", ports, 0), 0);
	/* inspected names are the proxy's: paths, inspect, a limited policy */
	assert_int_equal(policy_add_opts(p, POLICY_ALLOW, "g.test", &ins, "t", NULL, 0), 0);
	assert_int_equal(policy_add_opts(p, POLICY_ALLOW, "h.test", &pth, "t", NULL, 0), 0);
	assert_int_equal(policy_kv_ports(p, "g.test", ports, 4), 0);
	assert_int_equal(policy_kv_ports(p, "h.test", ports, 4), 0);
	/* a plain rule beside one with paths: TLS to it is inspected (the
	 * more specific rule decides), so it does not go direct either */
	assert_int_equal(policy_add_opts(p, POLICY_ALLOW, "i.test", NULL, "t", NULL, 0), 0);
	assert_int_equal(policy_kv_ports(p, "i.test", ports, 4), 1);
	assert_int_equal(policy_add_opts(p, POLICY_ALLOW, "i.test", &pth, "t", NULL, 0), 0);
	assert_int_equal(policy_kv_ports(p, "i.test", ports, 4), 0);
	policy_set_limited(p, true);
	assert_int_equal(policy_kv_ports(p, "a.test", ports, 4), 0);
	policy_free(p);
}

/* NO_PROXY's names: what the kernel-verified path serves, in rule order,
 * appended to what the buffer holds; a name near a deny rule, a port other
 * than 443, a method limit, tcp://, '?' and address rules left out; only
 * whole entries, at most max. */
static void
test_noproxy_names(void **state)
{
	static const char *const allow[] = {
		"A.test",    "b.test:443", "c.test:8443", "d.test|GET",	     "tcp://e.test:443",
		"**.f.test", "*.g.test",   "api?.h.test", "203.0.113.7:443", "gone.test",
		"**.i.test", "j.test",	   "**.k.l.test", "x.test"};
	/* at gone.test, under **.i.test, under j.test, above **.k.l.test; a
	 * name that only ends the same (nox.test) is not near x.test */
	static const char *const deny[] = {"gone.test", "a.i.test", "*.sub.j.test", "l.test:80",
					   "nox.test"};
	struct policy *p = build(allow, sizeof(allow) / sizeof(allow[0]), deny,
				 sizeof(deny) / sizeof(deny[0]), false);
	char buf[64] = "localhost";

	(void)state;
	assert_int_equal(policy_noproxy_names(p, buf, sizeof(buf), 16), 5);
	assert_string_equal(buf, "localhost,a.test,b.test,f.test,.g.test,x.test");
	snprintf(buf, sizeof(buf), "%s", "");
	assert_int_equal(policy_noproxy_names(p, buf, sizeof(buf), 2), 2);
	assert_string_equal(buf, "a.test,b.test");
	snprintf(buf, 32, "%s", "0123456789012345678901234");
	assert_int_equal(policy_noproxy_names(p, buf, 32, 16), 0);
	assert_string_equal(buf, "0123456789012345678901234");
	assert_int_equal(policy_noproxy_names(p, buf, 39, 16),
			 1); /* ",a.test" fits, ",b.test" not */
	assert_string_equal(buf, "0123456789012345678901234,a.test");
	assert_int_equal(policy_noproxy_names(NULL, buf, sizeof(buf), 16), 0);
	/* an inspecting rule keeps itself and every name near it off the list */
	{
		const char *paths[] = {"/x"};
		struct policy_rule_opts pth = {.paths = paths, .npaths = 1};

		assert_int_equal(policy_add_opts(p, POLICY_ALLOW, "sub.b.test", &pth, "t", NULL, 0),
				 0);
		snprintf(buf, sizeof(buf), "%s", "");
		assert_int_equal(policy_noproxy_names(p, buf, sizeof(buf), 16), 4);
		assert_string_equal(buf, "a.test,f.test,.g.test,x.test");
		policy_set_limited(p, true);
		snprintf(buf, sizeof(buf), "%s", "");
		assert_int_equal(policy_noproxy_names(p, buf, sizeof(buf), 16), 0);
	}
	policy_free(p);
}

/* Why a name is not possible: a deny host rule (without a port) matches
 * it, or no rule does; policy_host_judge says both in one walk. */
static bool
judged_denied(const struct policy *p, const char *host, bool possible)
{
	bool denied = !possible;

	assert_int_equal(policy_host_judge(p, host, &denied), possible);
	assert_int_equal(policy_host_possible(p, host), possible);
	return denied;
}

static void
test_host_denied(void **state)
{
	static const char *const allow[] = {"**.example.test", "c.test"};
	static const char *const deny[] = {"b.example.test", "c.test:80", "*.d.example.test"};
	struct policy *p = build(allow, 2, deny, 3, false);

	(void)state;
	assert_true(judged_denied(p, "b.example.test", false));
	assert_true(judged_denied(p, "x.d.example.test", false));
	assert_false(judged_denied(p, "a.example.test", true));
	assert_false(judged_denied(p, "c.test", true));	     /* denied on :80 only */
	assert_false(judged_denied(p, "other.test", false)); /* no rule at all */
	assert_false(judged_denied(p, "bad..name", false));
	assert_false(judged_denied(NULL, "b.example.test", false));
	assert_false(policy_host_possible(p, "b.example.test"));
	policy_free(p);
}

int
main(void)
{
	const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_host_denied),
		cmocka_unit_test(test_noproxy_names),
		cmocka_unit_test(test_kv_ports),
		cmocka_unit_test(test_allow_v6),
		cmocka_unit_test(test_decide_einval),
		cmocka_unit_test(test_rule_fields),
		cmocka_unit_test(test_methods_parse),
		cmocka_unit_test(test_reason_and_class_names),
		cmocka_unit_test(test_many_rules),
		cmocka_unit_test(test_safe_str),
		cmocka_unit_test(test_denies_addresses),
		cmocka_unit_test(test_allow_port_bits),
		cmocka_unit_test(test_v4_in_v6_and_exact),
		cmocka_unit_test(test_allow_nets4),
	};
	int failed = 0;

	fill_long_names();
	failed += RUN_TABLE("syntax", syntax_cases, run_syntax_case);
	failed += RUN_TABLE("decide", decide_cases, run_decide_case);
	failed += RUN_TABLE("host_possible", possible_cases, run_possible_case);
	failed += RUN_TABLE("tcp_rule", tcp_cases, run_tcp_case);
	failed += RUN_TABLE("addr_classify", class_cases, run_class_case);
	failed += RUN_TABLE("host_normalize", norm_cases, run_norm_case);
	failed += cmocka_run_group_tests_name("misc", misc, NULL, NULL);
	return failed ? 1 : 0;
}
