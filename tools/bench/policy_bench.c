// SPDX-License-Identifier: Apache-2.0
/* Benchmark of policy_decide() (the rule engine, userspace/policy/) on a large policy:
 * 100,000 rules (about 60% exact hosts, 25% "*." and "**." wildcards, 10%
 * IPv4/IPv6 CIDRs over five prefix lengths each, and some '?' patterns,
 * tcp:// rules, "*:port" rules and deny rules), then at least 1,000,000
 * decisions over a fixed mixed query set (exact and wildcard hits with 2-6
 * labels, misses, '?' hits, addresses alone and with a host, v4 and v6),
 * reported as a whole and per query kind. Deterministic (fixed PRNG seed).
 * Times are the thread's CPU time, so that other load on the machine does
 * not count (wall time is printed too, for the mixed run).
 *
 *   gcc -O2 -std=gnu11 -D_GNU_SOURCE -Iuserspace tools/bench/policy_bench.c \
 *       $(ls userspace/policy/*.c | grep -v config.c) -lm -o /tmp/policy_bench &&
 *       /tmp/policy_bench [RULES [DECISIONS]]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "policy/policy.h"

#define NQUERIES 8192 /* distinct queries, cycled */

enum qkind {
	Q_EXACT = 0,
	Q_WILD = 1,
	Q_QMARK = 2,
	Q_MISS = 3,
	Q_ADDR = 4,
	Q_HOST_ADDR = 5,
	Q_KINDS = 6,
};

static const char *const kind_names[Q_KINDS] = {
	"exact host hit", "wildcard hit (2-6 labels)", "'?' hit",
	"host miss",	  "address only (v4/v6)",      "host + resolved address",
};

struct bq {
	enum qkind kind;
	char host[96];
	struct sockaddr_storage ss;
	struct policy_query q;
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng >> 11;
}

static const char *const tlds[] = {"com", "net", "org", "io", "dev", "test"};
static const unsigned int v4_plens[] = {16, 20, 24, 28, 32};
static const unsigned int v6_plens[] = {32, 48, 56, 64, 128};

static double
clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
now(void)
{
	return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static void
add(struct policy *p, enum policy_action a, const char *rule, const char *methods)
{
	char errbuf[256];

	if (policy_add(p, a, rule, methods, "bench", errbuf, sizeof(errbuf))) {
		fprintf(stderr, "policy_bench: %s: %s\n", rule, errbuf);
		exit(1);
	}
}

static void
v4_net(unsigned int i, unsigned int plen, char *out, size_t len)
{
	uint32_t a = (0x0b000000u + i * 0x1357u) & (plen ? ~0u << (32 - plen) : 0);

	if ((a >> 24) == 127 || (a >> 24) == 10)
		a ^= 0x20000000u; /* stay public */
	snprintf(out, len, "%u.%u.%u.%u/%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255,
		 plen);
}

static void
v6_net(unsigned int i, unsigned int plen, char *out, size_t len)
{
	uint8_t b[16] = {0x2a, 0x01};
	char text[INET6_ADDRSTRLEN];
	unsigned int k;

	b[2] = i >> 8;
	b[3] = i;
	b[4] = i * 7;
	b[5] = i * 13;
	b[6] = i >> 3;
	b[7] = i * 31;
	b[15] = i;
	for (k = plen; k < 128; k++)
		b[k / 8] &= ~(0x80 >> (k % 8));
	inet_ntop(AF_INET6, b, text, sizeof(text));
	snprintf(out, len, "%s/%u", text, plen);
}

/* The exact host of rule i: 2 or 3 labels. */
static void
exact_host(unsigned int i, char *out, size_t len)
{
	if (i % 3)
		snprintf(out, len, "h%u.svc%u.%s", i, i % 97, tlds[i % 6]);
	else
		snprintf(out, len, "h%u.%s", i, tlds[i % 6]);
}

static unsigned int
build(struct policy *p, unsigned int n)
{
	char rule[160];
	unsigned int i, k;

	for (i = 0; i < n; i++) {
		unsigned int r = i % 100;
		const char *tld = tlds[i % 6];

		if (r < 60) /* exact, 2-4 labels, some with a port or methods */
			exact_host(i, rule, sizeof(rule));
		else if (r < 73)
			snprintf(rule, sizeof(rule), "*.w%u.%s", i, tld);
		else if (r < 85)
			snprintf(rule, sizeof(rule), "**.d%u.%s", i, tld);
		else if (r < 90)
			v4_net(i, v4_plens[i % 5], rule, sizeof(rule));
		else if (r < 95)
			v6_net(i, v6_plens[i % 5], rule, sizeof(rule));
		else if (r < 97)
			snprintf(rule, sizeof(rule), "q%u?.api.%s", i, tld);
		else if (r < 99)
			snprintf(rule, sizeof(rule), "tcp://git%u.%s:22", i, tld);
		else
			snprintf(rule, sizeof(rule), "bad%u.%s", i, tld);
		if (r == 7)
			strcat(rule, ":443");
		add(p, r == 99 ? POLICY_DENY : POLICY_ALLOW, rule, r == 11 ? "GET,HEAD" : NULL);
	}
	for (k = 0; k < 4; k++) {
		snprintf(rule, sizeof(rule), "*:%u", 8443 + k);
		add(p, POLICY_ALLOW, rule, NULL);
	}
	add(p, POLICY_DENY, "*:25", NULL);
	return policy_count(p);
}

/* i: the rule index to aim at (same numbering as build()). */
static void
make_query(struct bq *b, unsigned int n)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&b->ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&b->ss;
	unsigned int i = rnd() % n, r = rnd() % 100, depth, k;
	char net[80], *slash;

	memset(b, 0, sizeof(*b));
	b->kind = r < 30   ? Q_EXACT
		  : r < 50 ? Q_WILD
		  : r < 55 ? Q_QMARK
		  : r < 70 ? Q_MISS
		  : r < 85 ? Q_ADDR
			   : Q_HOST_ADDR;
	b->q.port = rnd() % 4 ? 443 : 80;
	b->q.proto = b->q.port == 80 ? POLICY_P_HTTP : POLICY_P_TLS;
	b->q.method = b->q.port == 80 ? "GET" : NULL;
	switch (b->kind) {
	case Q_EXACT:
		i -= i % 100;
		i += rnd() % 60;
		exact_host(i, b->host, sizeof(b->host));
		break;
	case Q_WILD:
		i -= i % 100;
		i += 60 + rnd() % 25;
		depth = rnd() % 4; /* 0-3 labels in front of w<i>.tld: 2-5 labels, 6 below */
		b->host[0] = '\0';
		for (k = 0; k < depth; k++)
			snprintf(b->host + strlen(b->host), sizeof(b->host) - strlen(b->host),
				 "l%u.", rnd() % 1000);
		if (depth == 3 && rnd() % 2)
			strcat(b->host, "x.");
		snprintf(b->host + strlen(b->host), sizeof(b->host) - strlen(b->host),
			 i % 100 < 73 ? "w%u.%s" : "d%u.%s", i, tlds[i % 6]);
		break;
	case Q_QMARK:
		i -= i % 100;
		i += 95 + rnd() % 2;
		snprintf(b->host, sizeof(b->host), "q%u%c.api.%s", i, 'a' + rnd() % 26,
			 tlds[i % 6]);
		break;
	case Q_MISS:
		depth = 2 + rnd() % 5;
		b->host[0] = '\0';
		for (k = 0; k + 1 < depth; k++)
			snprintf(b->host + strlen(b->host), sizeof(b->host) - strlen(b->host),
				 "m%u.", rnd() % 100000);
		strcat(b->host, tlds[rnd() % 6]);
		break;
	case Q_ADDR:
	case Q_HOST_ADDR:
		i -= i % 100;
		i += 85 + rnd() % 10;
		if (i % 100 < 90)
			v4_net(i, v4_plens[i % 5], net, sizeof(net));
		else
			v6_net(i, v6_plens[i % 5], net, sizeof(net));
		slash = strchr(net, '/');
		*slash = '\0';
		if (strchr(net, ':')) {
			sin6->sin6_family = AF_INET6;
			inet_pton(AF_INET6, net, &sin6->sin6_addr);
			if (rnd() % 4 == 0)
				sin6->sin6_addr.s6_addr[9] ^= 0x5a; /* miss */
		} else {
			sin->sin_family = AF_INET;
			inet_pton(AF_INET, net, &sin->sin_addr);
			if (rnd() % 4 == 0)
				sin->sin_addr.s_addr ^= htonl(0x00a50000); /* miss */
		}
		b->q.addr = (struct sockaddr *)&b->ss;
		if (b->kind == Q_ADDR) {
			b->q.proto = POLICY_P_TCP;
			b->q.method = NULL;
		} else {
			snprintf(b->host, sizeof(b->host), "n%u.cdn.%s", rnd() % 5000,
				 tlds[rnd() % 6]);
		}
		break;
	case Q_KINDS:
		break;
	}
	b->q.host = b->host[0] ? b->host : NULL;
}

int
main(int argc, char **argv)
{
	unsigned int nrules = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	unsigned long total = argc > 2 ? strtoul(argv[2], NULL, 10) : 2000000, i;
	unsigned long allowed = 0, per_kind[Q_KINDS] = {0}, per_allow[Q_KINDS] = {0};
	double t0, t1, w0, w1, kind_time[Q_KINDS] = {0};
	struct policy *p = policy_new();
	struct policy_decision d;
	struct bq *qs = calloc(NQUERIES, sizeof(*qs));
	unsigned int count, k;

	if (!p || !qs || nrules < 100 || total < 1) {
		fprintf(stderr, "usage: policy_bench [RULES>=100 [DECISIONS]]\n");
		return 1;
	}
	t0 = now();
	count = build(p, nrules);
	t1 = now();
	printf("policy: %u rules built in %.1f ms (%.2f us/rule)\n", count, (t1 - t0) * 1e3,
	       (t1 - t0) * 1e6 / count);
	for (k = 0; k < NQUERIES; k++) {
		make_query(&qs[k], nrules);
		qs[k].q.addr = qs[k].q.addr ? (struct sockaddr *)&qs[k].ss : NULL;
		qs[k].q.host = qs[k].host[0] ? qs[k].host : NULL;
	}

	/* Warm up, then the timed run over the mixed set. */
	for (k = 0; k < NQUERIES; k++)
		policy_decide(p, &qs[k].q, &d);
	w0 = clock_s(CLOCK_MONOTONIC);
	t0 = now();
	for (i = 0; i < total; i++) {
		if (policy_decide(p, &qs[i % NQUERIES].q, &d))
			return 1;
		allowed += d.action == POLICY_ALLOW;
	}
	t1 = now();
	w1 = clock_s(CLOCK_MONOTONIC);
	printf("mixed: %lu decisions in %.3f s CPU (%.3f s wall): %.0f decisions/s, "
	       "%.0f ns/decision (%.1f%% allowed)\n",
	       total, t1 - t0, w1 - w0, total / (t1 - t0), (t1 - t0) * 1e9 / total,
	       100.0 * allowed / total);

	/* Per kind: each query repeated, so this is the warm-cache cost. */
	for (k = 0; k < NQUERIES; k++) {
		enum qkind kind = qs[k].kind;
		int rep;

		t0 = now();
		for (rep = 0; rep < 64; rep++)
			policy_decide(p, &qs[k].q, &d);
		kind_time[kind] += now() - t0;
		per_kind[kind] += 64;
		per_allow[kind] += 64 * (d.action == POLICY_ALLOW);
	}
	for (k = 0; k < Q_KINDS; k++) {
		if (per_kind[k])
			printf("  %-26s %6.0f ns/decision (%5.1f%% allowed)\n", kind_names[k],
			       kind_time[k] * 1e9 / per_kind[k],
			       100.0 * per_allow[k] / per_kind[k]);
	}
	policy_free(p);
	free(qs);
	return 0;
}
