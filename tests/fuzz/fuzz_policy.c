// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for the rule engine in userspace/policy/. The input is
 * split into lines; each line is a rule ("text", "text|METHODS" or
 * "text|METHODS|PATH", an empty METHODS none), added
 * alternately as allow and deny, to two policies in opposite orders. Each
 * line is then also turned into queries: its host part with the wildcard
 * syntax stripped, its address if it has one, the port and proto taken from
 * its bytes. Besides memory errors and leaks (ASan) it checks invariants:
 * decisions are well-formed, the same in both policies (order never
 * matters), policy_tcp_rule() implies a TCP allow, an allowed name is
 * policy_host_possible(), only an allowed TLS query is inspected (alike in
 * both), and normalising a host twice changes nothing. The first byte's
 * bits also turn IPv6 off and the limited mode on. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "policy/policy.h"

#define MAX_RULES 64
#define LINE_MAX_ 300

static const char *const methods[] = {"GET", "POST", "CONNECT", "get", "BREW", NULL};

static void
check_decision(const struct policy *p, const struct policy_decision *d)
{
	bool allowed = d->reason == POLICY_R_ALLOWED;

	if ((d->action == POLICY_ALLOW) != allowed)
		abort();
	if (d->reason == POLICY_R_NO_RULE || d->reason == POLICY_R_LOCAL ||
	    d->reason == POLICY_R_V4_IN_V6 || d->reason == POLICY_R_NO_IPV6) {
		if (d->rule)
			abort();
		return;
	}
	if (!d->rule || !d->rule->index || d->rule->index > policy_count(p) || !d->rule->text)
		abort();
	if ((d->rule->action == POLICY_DENY) != (d->reason == POLICY_R_DENY_RULE))
		abort();
}

static void
decide_both(const struct policy *a, const struct policy *b, const struct policy_query *q,
	    struct policy_decision *da)
{
	struct policy_decision db;
	int ea = policy_decide(a, q, da), eb = policy_decide(b, q, &db);

	if (ea != eb)
		abort();
	if (ea)
		return;
	check_decision(a, da);
	check_decision(b, &db);
	if (da->action != db.action || da->reason != db.reason || da->inspect != db.inspect)
		abort(); /* insertion order changed the outcome */
	if (da->inspect && (da->action != POLICY_ALLOW || q->proto != POLICY_P_TLS))
		abort();
}

/* A host the rule could match: "*.a?.b:22|GET" gives "x.ax.b"; a tcp:// prefix is dropped. */
static void
query_host(const char *rule, char *out, size_t outlen)
{
	size_t i = 0;

	if (!strncmp(rule, "tcp://", 6))
		rule += 6;
	if (!strncmp(rule, "**.", 3))
		rule += 3;
	else if (!strncmp(rule, "*.", 2) && outlen > 2) {
		memcpy(out, "x.", 2);
		i = 2;
	}
	for (; *rule && *rule != '|' && *rule != ':' && i + 1 < outlen; rule++)
		out[i++] = *rule == '?' ? 'x' : *rule;
	out[i] = '\0';
}

/* Would the policy take host for a name, neither an address literal
 * ("10.0.0.3.", "[::1]") nor a numeric form getaddrinfo() reads as one? */
static bool
is_name(const char *host)
{
	char norm[256], text[64];
	struct in_addr in;
	const char *last;
	size_t n, i = 0;

	if (policy_host_normalize(host, false, norm, sizeof(norm)))
		return false;
	n = strlen(host);
	if (n && n < sizeof(text)) {
		memcpy(text, host, n + 1);
		if (text[n - 1] == '.')
			text[n - 1] = '\0';
		if (inet_pton(AF_INET, text, &in) == 1)
			return false;
	}
	last = strrchr(norm, '.');
	last = last ? last + 1 : norm;
	if (last[0] == '0' && last[1] == 'x' && last[2])
		i = 2;
	for (; last[i]; i++) {
		if (!(last[i] >= '0' && last[i] <= '9') && !(i > 1 && strchr("abcdef", last[i])))
			return true;
	}
	return false;
}

/* The path of a "text|METHODS|PATH" line, or a path of its bytes. */
static const char *
line_path(const char *line)
{
	const char *bar = strchr(line, '|');

	bar = bar ? strchr(bar + 1, '|') : NULL;
	return bar ? bar + 1 : line;
}

/* Adds the rule of line (its '|' parts cut off for the call, then put
 * back); what policy_add_opts() returns. */
static int
add_line(struct policy *p, enum policy_action a, char *line, char *errbuf, size_t errlen)
{
	char *bar = strchr(line, '|'), *bar2 = bar ? strchr(bar + 1, '|') : NULL;
	const char *paths[1];
	struct policy_rule_opts o = {0};
	int err;

	if (bar) {
		*bar = '\0';
		o.methods = bar[1] && bar[1] != '|' ? bar + 1 : NULL;
	}
	if (bar2) {
		*bar2 = '\0';
		paths[0] = bar2 + 1;
		o.paths = paths;
		o.npaths = 1;
	}
	err = policy_add_opts(p, a, line, &o, "fuzz", errbuf, errlen);
	if (bar)
		*bar = '|';
	if (bar2)
		*bar2 = '|';
	return err;
}

static void
run_queries(const struct policy *a, const struct policy *b, const char *line, const uint8_t *raw,
	    size_t rawlen)
{
	char host[LINE_MAX_], norm[256], norm2[256], *end;
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct policy_query q = {0};
	struct policy_decision d;
	const char *colon;
	int proto, m;
	bool literal;

	query_host(line, host, sizeof(host));
	colon = strrchr(line, ':');
	q.port = colon ? (uint16_t)strtoul(colon + 1, &end, 10) : 0;
	if (!q.port)
		q.port = rawlen ? 1 + raw[0] % 1024 : 443;

	if (!policy_host_normalize(host, false, norm, sizeof(norm))) {
		if (policy_host_normalize(norm, false, norm2, sizeof(norm2)) || strcmp(norm, norm2))
			abort();
	}
	literal = inet_pton(AF_INET, host, &sin.sin_addr) == 1;
	if (inet_pton(AF_INET6, host, &sin6.sin6_addr) != 1)
		memcpy(&sin6.sin6_addr, raw, rawlen < 16 ? rawlen : 16);
	if (!literal && rawlen >= 4)
		memcpy(&sin.sin_addr, raw + rawlen - 4, 4);

	for (proto = POLICY_P_HTTP; proto <= POLICY_P_TCP; proto++) {
		for (m = 0; m < (proto == POLICY_P_HTTP ? 6 : 1); m++) {
			q = (struct policy_query){.host = host, .port = q.port, .proto = proto};
			q.method = proto == POLICY_P_HTTP ? methods[m] : NULL;
			q.path = m % 2 ? "/" : line_path(line);
			decide_both(a, b, &q, &d);
			if (!d.action && is_name(host) && !policy_host_possible(a, host))
				abort(); /* allowed, yet the DNS responder would refuse it */
			q.addr = (const struct sockaddr *)&sin;
			decide_both(a, b, &q, &d);
			q.addr = (const struct sockaddr *)&sin6;
			decide_both(a, b, &q, &d);
			q.host = NULL;
			decide_both(a, b, &q, &d);
		}
	}
	if (policy_tcp_rule(a, host, q.port) != policy_tcp_rule(b, host, q.port))
		abort();
	if (policy_tcp_rule(a, host, q.port)) {
		q = (struct policy_query){.host = host, .port = q.port, .proto = POLICY_P_TCP};
		if (policy_decide(a, &q, &d) || d.action != POLICY_ALLOW)
			abort();
	}
	if (policy_host_possible(a, host) != policy_host_possible(b, host))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *lines[MAX_RULES], errbuf[128];
	struct policy *a = policy_new(), *b = policy_new();
	size_t n = 0, i, start = 0;
	int ea, eb;

	if (!a || !b)
		goto out;
	for (i = 0; i <= size && n < MAX_RULES; i++) {
		if (i < size && data[i] != '\n')
			continue;
		if (i - start < LINE_MAX_) {
			lines[n] = malloc(i - start + 1);
			if (!lines[n])
				break;
			memcpy(lines[n], data + start, i - start);
			lines[n][i - start] = '\0'; /* an embedded NUL just ends the rule */
			n++;
		}
		start = i + 1;
	}
	for (i = 0; i < n; i++) {
		size_t j = n - 1 - i;

		ea = add_line(a, i % 2 ? POLICY_DENY : POLICY_ALLOW, lines[i], errbuf,
			      sizeof(errbuf));
		if (ea && !errbuf[0])
			abort(); /* every rejection says why */
		eb = add_line(b, j % 2 ? POLICY_DENY : POLICY_ALLOW, lines[j], NULL, 0);
		(void)eb;
	}
	if (policy_count(a) != policy_count(b))
		abort();
	if (size && data[0] & 1) { /* without --ipv6: both deny IPv6 alike */
		policy_set_ipv6(a, false);
		policy_set_ipv6(b, false);
	}
	if (size && data[0] & 2) {
		policy_set_limited(a, true);
		policy_set_limited(b, true);
	}
	for (i = 0; i < n && i < 8; i++)
		run_queries(a, b, lines[i], data, size);
	for (i = 0; i < n; i++)
		free(lines[i]);
out:
	policy_free(a);
	policy_free(b);
	return 0;
}
