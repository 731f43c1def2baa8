// SPDX-License-Identifier: Apache-2.0
/* Judging a query against a policy (policy_decide and the questions
 * built on it): the query's name walked by label suffix with the hashes of
 * all suffixes from one backward pass and their slots prefetched together,
 * '?' groups by masked lookup, addresses by prefix length; every candidate
 * checked against port, protocol and method; deny wins, then the
 * local-address check, then the most specific allow. Writes nothing
 * shared: concurrent judging needs no locks. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/engine.h"
#include "policy/policy.h"
#include "policy/secret.h"

/* A path segment (no '/') against a pattern segment: '*' any run of bytes. */
static bool
seg_glob(const char *p, size_t pn, const char *s, size_t sn)
{
	size_t pi = 0, si = 0, star = (size_t)-1, mark = 0;

	while (si < sn) {
		if (pi < pn && p[pi] == '*') {
			star = pi++;
			mark = si;
		} else if (pi < pn && p[pi] == s[si]) {
			pi++;
			si++;
		} else if (star != (size_t)-1) {
			pi = star + 1;
			si = ++mark;
		} else {
			return false;
		}
	}
	while (pi < pn && p[pi] == '*')
		pi++;
	return pi == pn;
}

bool
policy_path_match(const char *pat, const char *path)
{
	const char *p, *s;

	if (!pat || !path || pat[0] != '/' || path[0] != '/')
		return false;
	for (p = pat + 1, s = path + 1;; p++, s++) {
		const char *pe = strchrnul(p, '/'), *se = strchrnul(s, '/');
		size_t sn = (size_t)(se - s);
		const char *semi = memchr(s, ';', sn);

		if (!*p)
			return true; /* "/" or a pattern ending in '/': all below */
		if (semi)
			sn = (size_t)(semi - s); /* parameters: not the segment's name */
		if (!seg_glob(p, (size_t)(pe - p), s, sn))
			return false;
		if (!*pe)
			return !*se || *se == '/';
		if (!*se)
			return false;
		p = pe;
		s = se;
	}
}

static bool
paths_match(const struct policy_rule *pr, const char *path)
{
	for (unsigned int i = 0; i < pr->npaths; i++)
		if (policy_path_match(pr->paths[i], path))
			return true;
	return false;
}

/* Does r apply to the query? 1 yes, 0 no, -1 only its method list is
 * wrong, -2 only its paths. A deny rule with methods or paths applies to
 * plain HTTP whose method and path it lists (an unknown one counts as
 * listed: fails closed); to TLS it does not apply but makes the stream
 * inspected (c->inspect_deny), so that each request is judged by it; to
 * other streams it applies whole. An allow host rule with methods, paths
 * or inspect allows TLS inspected (judge() decides). */
static int
rule_applies(struct qctx *c, const struct rule *r)
{
	const struct policy_rule *pr = &r->pub;

	if (pr->port && pr->port != c->port)
		return 0;
	if (pr->action == POLICY_DENY) {
		if ((pr->methods || pr->npaths) && c->proto == POLICY_P_TLS) {
			c->inspect_deny = true;
			return 0;
		}
		if (c->proto == POLICY_P_HTTP && pr->npaths && c->path && !paths_match(pr, c->path))
			return 0;
		return !pr->methods || !c->mbit || (pr->methods & c->mbit);
	}
	if (c->tcp_only && !pr->tcp)
		return 0;
	if (r->kind == RK_ANY && !c->has_host)
		return 0;
	if (pr->tcp || r->kind == RK_ADDR)
		return 1;
	if (c->proto == POLICY_P_TLS)
		return 1;
	if (c->proto != POLICY_P_HTTP)
		return 0;
	if (pr->methods && !(pr->methods & c->mbit))
		return -1;
	if (pr->npaths && (!c->path || !paths_match(pr, c->path)))
		return -2;
	return 1;
}

/* Most specific first: exact > '?' > wildcard (longer suffix first) >
 * address (longer prefix first) > "*:port"; then with a port, then with
 * methods, then with paths or inspect, then the earlier rule (so whether
 * TLS is inspected never depends on the order rules were given). */
static bool
better(const struct rule *a, const struct rule *b)
{
	static const uint8_t rank[] = {
		[RK_EXACT] = 5, [RK_QMARK] = 4, [RK_WILD] = 3, [RK_ADDR] = 2, [RK_ANY] = 1,
	};
	size_t la, lb;

	if (!b)
		return true;
	if (rank[a->kind] != rank[b->kind])
		return rank[a->kind] > rank[b->kind];
	la = a->kind == RK_ADDR ? a->plen : a->name_len * 4 + (a->star == 1);
	lb = b->kind == RK_ADDR ? b->plen : b->name_len * 4 + (b->star == 1);
	if (la != lb)
		return la > lb;
	if (!a->pub.port != !b->pub.port)
		return a->pub.port;
	if (!a->pub.methods != !b->pub.methods)
		return a->pub.methods;
	if (policy_rule_inspects(&a->pub) != policy_rule_inspects(&b->pub))
		return policy_rule_inspects(&a->pub);
	return a->pub.index < b->pub.index;
}

static void
pick(const struct rule **best, const struct rule *r)
{
	if (better(r, *best))
		*best = r;
}

static void
add_port(struct qctx *c, uint16_t port)
{
	for (int m = 0; m < c->nports; m++)
		if (c->ports[m] == port)
			return;
	if (c->nports < c->maxports)
		c->ports[c->nports++] = port;
}

/* The ports an allow rule r contributes to c->ports: a tcp:// rule's, or
 * (host_ports) 443 for a host rule without a method limit that allows 443
 * (without a port, or with 443). */
static void
collect_port(struct qctx *c, const struct rule *r, int ai)
{
	if (r->pub.action != POLICY_ALLOW)
		return;
	if (!c->host_ports) {
		if (r->pub.tcp && r->pub.port)
			add_port(c, r->pub.port);
		return;
	}
	if (ai >= 0 || r->pub.tcp || policy_rule_inspects(&r->pub) ||
	    (r->pub.port && r->pub.port != 443))
		return;
	add_port(c, 443);
}

/* ai: index of the address in c->addrs an address rule matched; -1 for names. */
static void
consider(struct qctx *c, const struct rule *r, int ai)
{
	int m;

	if (c->possible) {
		if (r->pub.action == POLICY_ALLOW)
			c->possible_yes = true;
		else if (!r->pub.port && !r->pub.methods && !r->pub.npaths)
			c->possible_no = true;
		return;
	}
	if (c->ports) {
		collect_port(c, r, ai);
		return;
	}
	m = rule_applies(c, r);
	if (r->pub.action == POLICY_DENY) {
		if (m > 0)
			pick(&c->deny, r);
		return;
	}
	if (ai >= 0 && r->plen >= c->addrs[ai].cls_plen &&
	    (c->any_port || !r->pub.port || r->pub.port == c->port))
		c->named[ai] = true;
	if (ai > 0)
		return; /* the literal host only denies and names; q->addr decides */
	if (m > 0)
		pick(&c->allow, r);
	else if (m == -1)
		pick(&c->method, r);
	else if (m == -2)
		pick(&c->pathf, r);
}

static bool
qmark_eq(const char *pat, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (pat[i] == '?' ? s[i] == '.' : pat[i] != s[i])
			return false;
	}
	return true;
}

static bool
qmark_match(const struct rule *r, const char *h, size_t n)
{
	size_t pn = r->name_len;

	if (n == pn)
		return r->star != 1 && qmark_eq(r->name, h, n);
	if (!r->star || n < pn + 2 || h[n - pn - 1] != '.')
		return false;
	return qmark_eq(r->name, h + n - pn, pn);
}

static void
consider_list(struct qctx *c, const struct rule *r, int ai)
{
	for (; r; r = r->next)
		consider(c, r, ai);
}

/* The '?' patterns of groups g whose part in front of the suffix ends at
 * c->host[end]. */
static void
match_qgroups(struct qctx *c, const struct qgroup *g, size_t end)
{
	const char *h = c->host;
	char buf[HOST_MAX + 1];
	const struct hslot *s;
	const struct rule *r;
	size_t i, x0;

	for (; g; g = g->next) {
		if (g->len > end)
			continue;
		x0 = end - g->len;
		if (x0 && h[x0 - 1] != '.')
			continue;
		for (i = 0; i < g->len; i++)
			buf[i] = g->shape[i] == '?' ? '?' : h[x0 + i];
		s = htab_get(&g->tab, buf, g->len, hash_key(buf, g->len));
		for (r = s ? s->rules : NULL; r; r = r->next) {
			if (qmark_match(r, h, c->hlen))
				consider(c, r, -1);
		}
	}
}

static void
match_names(const struct policy *p, struct qctx *c)
{
	const char *h = c->host;
	size_t n = c->hlen, i, k, nsfx = 0, start[HOST_MAX / 2 + 2];
	uint64_t hash = FNV_BASIS, hashes[HOST_MAX / 2 + 2];
	const struct hslot *s;
	const struct rule *r;

	if (p->names.used) {
		/* Hashes of every label suffix, shortest first; their slots are
		 * fetched together so that the cache misses overlap. */
		for (i = n; i-- > 0;) {
			hash ^= (unsigned char)h[i];
			hash *= FNV_PRIME;
			if (!i || h[i - 1] == '.') {
				start[nsfx] = i;
				hashes[nsfx] = hash_fin(hash);
				__builtin_prefetch(&p->names.slots[hashes[nsfx] & p->names.mask]);
				nsfx++;
			}
		}
		for (k = 0; k < nsfx; k++)
			htab_prefetch(&p->names, hashes[k]);
		for (k = 0; k < nsfx; k++) {
			i = start[k];
			s = htab_get(&p->names, h + i, n - i, hashes[k]);
			if (!s)
				continue;
			if (!i)
				consider_list(c, s->rules, -1);
			for (r = s->wild; r; r = r->next) {
				if (i || r->star == 2)
					consider(c, r, -1);
			}
			if (i)
				match_qgroups(c, s->qmark, i - 1);
		}
	}
	match_qgroups(c, p->qrest, n);
}

static void
match_addr(const struct policy *p, struct qctx *c, int ai)
{
	const struct naddr *a = &c->addrs[ai];
	int f = a->family == 6, bytes = f ? 16 : 4;
	struct {
		uint64_t hash;
		const struct htab *t;
		uint8_t key[16];
	} pr[129];
	unsigned int w, n = 0, k;
	const struct hslot *s;
	uint64_t bits;

	if (!a->family)
		return;
	for (w = 0; w < 3; w++) {
		for (bits = p->cidr_used[f][w]; bits; bits &= bits - 1) {
			pr[n].t = &p->cidr[f][w * 64 + __builtin_ctzll(bits)];
			rule_mask_addr(a->b, w * 64 + __builtin_ctzll(bits), pr[n].key, bytes);
			pr[n].hash = hash_addr(pr[n].key, bytes);
			__builtin_prefetch(&pr[n].t->slots[pr[n].hash & pr[n].t->mask]);
			n++;
		}
	}
	for (k = 0; k < n; k++)
		htab_prefetch(pr[k].t, pr[k].hash);
	for (k = 0; k < n; k++) {
		s = htab_get(pr[k].t, pr[k].key, bytes, pr[k].hash);
		if (s)
			consider_list(c, s->rules, ai);
	}
}

/* The read-only methods of --limited. */
#define LIMITED_METHODS (POLICY_M_GET | POLICY_M_HEAD | POLICY_M_OPTIONS)

/* c->allow allows: d says so, and whether TLS is inspected; a limited
 * policy denies a plain-HTTP method that is not read-only. */
static void
allowed(const struct policy *p, const struct qctx *c, struct policy_decision *d)
{
	const struct policy_rule *r = &c->allow->pub;
	bool limited = p->limited && !r->tcp;

	*d = (struct policy_decision){POLICY_ALLOW, POLICY_R_ALLOWED, r, false};
	if (c->proto == POLICY_P_TLS)
		d->inspect = limited || policy_rule_inspects(r) || c->inspect_deny ||
			     (c->host && policy_secret_any_host(p, c->host));
	else if (c->proto == POLICY_P_HTTP && limited && !(c->mbit & LIMITED_METHODS))
		*d = (struct policy_decision){POLICY_DENY, POLICY_R_LIMITED, r, false};
}

static int
judge(const struct policy *p, struct qctx *c, const struct policy_query *q,
      struct policy_decision *d)
{
	char name[HOST_MAX + 1];
	const struct hslot *s;
	struct naddr lit;
	bool have_lit;
	size_t hl;
	uint16_t port = c->port;
	int i;

	if (q->host && q->host[0]) {
		hl = strlen(q->host);
		have_lit = addr_from_literal(&lit, q->host, hl);
		if (!have_lit &&
		    !rule_host_check(q->host, hl, false, name, sizeof(name), NULL, 0) &&
		    !rule_numeric_tld(name, hl - (q->host[hl - 1] == '.'))) {
			c->host = name;
			c->hlen = hl - (q->host[hl - 1] == '.');
		}
		c->has_host = have_lit || c->host;
	} else {
		have_lit = false;
		if (!q->addr)
			return -EINVAL;
	}
	if (q->addr)
		addr_from_sockaddr(&c->addrs[c->naddrs++], q->addr);
	if (have_lit && (!c->naddrs || lit.family != c->addrs[0].family ||
			 memcmp(lit.b, c->addrs[0].b, sizeof(lit.b))))
		c->addrs[c->naddrs++] = lit;

	if (c->host)
		match_names(p, c);
	s = htab_get(&p->any, &port, sizeof(port), hash_addr(&port, sizeof(port)));
	if (s)
		consider_list(c, s->rules, -1);
	for (i = 0; i < c->naddrs; i++)
		match_addr(p, c, i);

	*d = (struct policy_decision){.action = POLICY_DENY};
	for (i = 0; p->no_ipv6 && i < c->naddrs; i++) {
		if (c->addrs[i].family == 6) { /* v4-mapped is family 4 by now */
			d->reason = POLICY_R_NO_IPV6;
			return 0;
		}
	}
	if (c->deny) {
		d->reason = POLICY_R_DENY_RULE;
		d->rule = &c->deny->pub;
		return 0;
	}
	for (i = 0; i < c->naddrs; i++) {
		if (c->addrs[i].cls == ADDR_V4_IN_V6) {
			d->reason = POLICY_R_V4_IN_V6; /* no rule can allow it */
			d->rule = NULL;
			return 0;
		}
		if (c->addrs[i].cls != ADDR_PUBLIC && !c->named[i]) {
			d->reason = POLICY_R_LOCAL;
			return 0;
		}
	}
	if (c->allow)
		allowed(p, c, d);
	else if (c->method)
		*d = (struct policy_decision){POLICY_DENY, POLICY_R_METHOD, &c->method->pub, false};
	else if (c->pathf)
		*d = (struct policy_decision){POLICY_DENY, POLICY_R_PATH, &c->pathf->pub, false};
	else
		d->reason = POLICY_R_NO_RULE;
	return 0;
}

int
policy_decide(const struct policy *p, const struct policy_query *q, struct policy_decision *d)
{
	struct qctx c = {0};

	if (!p || !q || !d)
		return -EINVAL;
	c.port = q->port;
	c.proto = q->proto;
	if (q->proto == POLICY_P_HTTP && q->method)
		c.mbit = rule_method_bit(q->method);
	if (q->proto == POLICY_P_HTTP)
		c.path = q->path;
	return judge(p, &c, q, d);
}

bool
policy_tcp_rule(const struct policy *p, const char *host, uint16_t port)
{
	struct policy_query q = {.host = host, .port = port, .proto = POLICY_P_TCP};
	struct policy_decision d;
	struct qctx c = {.port = port, .proto = POLICY_P_TCP, .tcp_only = true};

	if (!p || !host)
		return false;
	return !judge(p, &c, &q, &d) && d.action == POLICY_ALLOW;
}

/* The policy_host_possible() walk: c->possible_yes, c->possible_no; false
 * for no host, an invalid one or a numeric last label. */
static bool
possible_walk(const struct policy *p, const char *host, char *name, struct qctx *c)
{
	const struct rule *r;
	size_t i;

	if (!p || !host || rule_host_check(host, strlen(host), false, name, HOST_MAX + 1, NULL, 0))
		return false;
	c->host = name;
	c->hlen = strlen(name);
	if (rule_numeric_tld(name, c->hlen))
		return false;
	c->has_host = true;
	match_names(p, c);
	for (i = 0; i <= p->any.mask && p->any.slots && !c->possible_yes; i++) {
		for (r = p->any.slots[i].rules; r && !c->possible_yes; r = r->next)
			c->possible_yes = r->pub.action == POLICY_ALLOW;
	}
	return true;
}

bool
policy_host_judge(const struct policy *p, const char *host, bool *denied)
{
	char name[HOST_MAX + 1];
	struct qctx c = {.possible = true};
	bool walked = possible_walk(p, host, name, &c);

	*denied = walked && c.possible_no;
	return walked && c.possible_yes && !c.possible_no;
}

bool
policy_host_possible(const struct policy *p, const char *host)
{
	bool denied;

	return policy_host_judge(p, host, &denied);
}

/* The ports c's name rules give host (normalised into name, HOST_MAX + 1
 * bytes), collected by match_names into c->ports; false for no host or an
 * invalid one. */
static bool
host_ports(const struct policy *p, const char *host, char *name, struct qctx *c)
{
	if (!p || !host || !host[0] || c->maxports <= 0)
		return false;
	if (rule_host_check(host, strlen(host), false, name, HOST_MAX + 1, NULL, 0) ||
	    rule_numeric_tld(name, strlen(name)))
		return false;
	c->host = name;
	c->hlen = strlen(name);
	c->has_host = true;
	match_names(p, c);
	return true;
}

int
policy_tcp_ports(const struct policy *p, const char *host, uint16_t *ports, int max)
{
	char name[HOST_MAX + 1];
	uint16_t found[64];
	struct qctx c = {.ports = found, .maxports = 64};
	int n = 0;

	if (!host_ports(p, host, name, &c))
		return 0;
	/* deny wins: keep only ports a TCP query to host would be allowed on */
	for (int i = 0; i < c.nports && n < max; i++)
		if (policy_tcp_rule(p, name, found[i]))
			ports[n++] = found[i];
	return n;
}

int
policy_kv_ports(const struct policy *p, const char *host, uint16_t *ports, int max)
{
	char name[HOST_MAX + 1];
	struct qctx c = {.ports = ports, .maxports = max, .host_ports = true};
	struct policy_query q = {.host = name, .port = 443, .proto = POLICY_P_TLS};
	struct policy_decision d;

	if (p && p->limited)
		return 0; /* every host rule's TLS is inspected: the proxy's */
	if (policy_secret_any_host(p, host))
		return 0; /* a secret's host is always inspected */
	if (!host_ports(p, host, name, &c) || !c.nports)
		return 0;
	/* an uninspected rule gave 443, but TLS to the name may be judged by
	 * a more specific one that inspects (methods or paths beside it) */
	if (p->ninspect && !policy_decide(p, &q, &d) && d.action == POLICY_ALLOW && d.inspect)
		return 0;
	return c.nports;
}

/* Is one of a and b (normalised names or suffixes) the other or under it? */
static bool
names_nest(const char *a, size_t an, const char *b, size_t bn)
{
	if (an < bn)
		return names_nest(b, bn, a, an);
	return !memcmp(a + an - bn, b, bn) && (an == bn || a[an - bn - 1] == '.');
}

int
policy_noproxy_names(const struct policy *p, char *buf, size_t len, int max)
{
	size_t used = buf && len ? strlen(buf) : 0;
	const struct rule **deny = NULL;
	unsigned int ndeny = 0;
	int n = 0;

	if (!p || !buf || used >= len || p->limited)
		return 0;
	/* the deny host rules and the inspecting allow ones, once: a name
	 * near one stays on the proxy */
	deny = calloc(p->nrules ? p->nrules : 1, sizeof(*deny));
	if (!deny)
		return 0;
	for (unsigned int i = 0; i < p->nrules; i++)
		if ((p->rules[i]->pub.action == POLICY_DENY ||
		     policy_rule_inspects(&p->rules[i]->pub)) &&
		    p->rules[i]->kind <= RK_QMARK)
			deny[ndeny++] = p->rules[i];
	for (unsigned int i = 0; used < len && i < p->nrules && n < max; i++) {
		const struct rule *r = p->rules[i];
		bool near = false;
		int w;

		if (r->pub.action != POLICY_ALLOW || r->pub.tcp || policy_rule_inspects(&r->pub) ||
		    (r->pub.port && r->pub.port != 443) ||
		    (r->kind != RK_EXACT && r->kind != RK_WILD) ||
		    policy_via_upstream(p, r->name, NULL))
			continue;
		/* NO_PROXY takes a name's subdomains too: a deny rule at, under
		 * or above it keeps the name on the proxy, whose 403 says why */
		for (unsigned int j = 0; j < ndeny && !near; j++)
			near = names_nest(r->name, r->name_len, deny[j]->name, deny[j]->name_len);
		/* and so does a secret's host: always inspected */
		for (unsigned int j = 0; j < p->nsecrets && !near; j++)
			for (unsigned int h = 0; h < p->secrets[j].nhosts && !near; h++) {
				const char *sh = p->secrets[j].hosts[h];

				sh += !strncmp(sh, "**.", 3) ? 3 : !strncmp(sh, "*.", 2) ? 2 : 0;
				near = names_nest(r->name, r->name_len, sh, strlen(sh));
			}
		if (near)
			continue;
		w = snprintf(buf + used, len - used, "%s%s%s", used ? "," : "",
			     r->star == 1 ? "." : "", r->name);
		if (w < 0 || (size_t)w >= len - used) {
			buf[used] = '\0'; /* not a cut entry: a shorter list */
			break;
		}
		used += (size_t)w;
		n++;
	}
	free(deny);
	return n;
}

bool
policy_addr_named(const struct policy *p, const struct sockaddr *sa)
{
	struct qctx c = {.any_port = true};

	if (!p || !sa)
		return false;
	addr_from_sockaddr(&c.addrs[0], sa);
	c.naddrs = 1;
	match_addr(p, &c, 0);
	return c.named[0] && !c.deny;
}
