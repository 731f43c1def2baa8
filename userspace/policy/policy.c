// SPDX-License-Identifier: Apache-2.0
/* The rule engine behind policy.h: parses rules (README.md "Policy") into
 * indexes and judges queries against them, with no I/O. Exact hosts, the
 * suffixes of "*." and "**." wildcards and the longest fixed label-suffix of
 * '?' patterns share one open-addressing hash table; a lookup walks the
 * query's label suffixes (a.b.c, b.c, c), hashing them all in one backward
 * pass and prefetching their slots together, so its cost follows the number
 * of labels, not of rules. '?' patterns under a suffix are grouped by shape
 * and found by masked lookup. "*:port" rules are keyed by port, CIDRs sit in
 * one table per prefix length in use. Every candidate found is checked
 * against the query (port, proto, method): deny wins, then the local-address
 * check, then the most specific allow. Rules are immutable once added and
 * lookups write nothing shared, so concurrent judging needs no locks.
 *
 * This file holds the policy object and builds its indexes; engine.h the
 * structures, htab.c the tables, rule.c the parsing of a rule, addr.c the
 * addresses, match.c the judging, words.c a decision's words. */
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

static void
qgroups_free(struct qgroup *g)
{
	struct qgroup *next;

	for (; g; g = next) {
		next = g->next;
		htab_free(&g->tab);
		free(g);
	}
}

struct policy *
policy_new(void)
{
	return calloc(1, sizeof(struct policy));
}

int
policy_expect(struct policy *p, size_t n)
{
	struct rule **rules;

	if (n > (1u << 24))
		n = 1u << 24;
	/* the name table at most 3/4 full with n more keys: no rehash while
	 * a big policy file goes in */
	while (!p->names.slots || (p->names.used + n) * 4 > (p->names.mask + 1) * 3)
		if (htab_grow(&p->names))
			return -ENOMEM;
	if (p->nrules + n > p->cap) {
		rules = realloc(p->rules, (p->nrules + n) * sizeof(*rules));
		if (!rules)
			return -ENOMEM;
		p->rules = rules;
		p->cap = p->nrules + (unsigned int)n;
	}
	return 0;
}

static __thread void (*pace_fn)(void *);
static __thread void *pace_arg;

void
policy_set_pace(void (*fn)(void *), void *arg)
{
	pace_fn = fn;
	pace_arg = arg;
}

void
policy_pace(unsigned int i)
{
	if (pace_fn && !(i % POLICY_PACE_EVERY))
		pace_fn(pace_arg);
}

void
policy_free(struct policy *p)
{
	struct source *s, *next;
	unsigned int f, l;
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nrules; i++) {
		free(p->rules[i]->pub.comment);
		free(p->rules[i]->pub.paths);
		free((void *)p->rules[i]->pub.hooks);
		free(p->rules[i]);
		policy_pace((unsigned int)i);
	}
	free(p->rules);
	free(p->exact);
	for (i = 0; p->names.slots && i <= p->names.mask; i++) {
		qgroups_free(p->names.slots[i].qmark);
		if (!(i & 255))
			policy_pace(0); /* a slot is cheaper than a rule */
	}
	qgroups_free(p->qrest);
	htab_free(&p->names);
	htab_free(&p->any);
	for (f = 0; f < 2; f++) {
		for (l = 0; l <= 128; l++)
			htab_free(&p->cidr[f][l]);
	}
	for (s = p->sources; s; s = next) {
		next = s->next;
		free(s);
	}
	free(p->route);
	secret_defs_free(p);
	free(p);
}

unsigned int
policy_count(const struct policy *p)
{
	return p ? p->nrules : 0;
}

bool
policy_allow_port_bits(const struct policy *p, uint64_t bits[1024])
{
	unsigned int nallow = 0;

	memset(bits, 0, 1024 * sizeof(bits[0]));
	for (unsigned int i = 0; p && i < p->nrules; i++) {
		const struct policy_rule *r = &p->rules[i]->pub;

		if (r->action != POLICY_ALLOW)
			continue;
		if (!r->port)
			return false; /* any port: nothing to prove */
		bits[r->port >> 6] |= 1ull << (r->port & 63);
		nallow++;
	}
	/* no allow rule at all: every attempt still goes to the listeners,
	 * which log each with what it tried to say */
	return nallow > 0;
}

int
policy_exact_addrs(const struct policy *p, struct sockaddr_storage *out, int max, bool v6)
{
	int n = 0;

	/* the candidates were listed as the rules went in: a reload's swap on
	 * the event loop does not walk 100,000 rules for a handful */
	for (unsigned int i = 0; p && i < p->nexact && n < max; i++) {
		const struct rule *r = p->rules[p->exact[i]];
		struct sockaddr_in *sin = (struct sockaddr_in *)&out[n];
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out[n];

		if (r->pub.action != POLICY_ALLOW || r->kind != RK_ADDR || !r->pub.port ||
		    r->pub.methods || r->plen != (r->family == 4 ? 32 : 128) ||
		    (r->family == 6 && !v6))
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		if (r->family == 4) {
			sin->sin_family = AF_INET;
			memcpy(&sin->sin_addr, r->addr, 4);
			sin->sin_port = htons(r->pub.port);
		} else {
			sin6->sin6_family = AF_INET6;
			memcpy(&sin6->sin6_addr, r->addr, 16);
			sin6->sin6_port = htons(r->pub.port);
		}
		n++;
	}
	return n;
}

/* Does a deny rule match some address of the IPv4 network net/len (any
 * port)? Address rules by overlap; "*:PORT" (any destination on a port)
 * always. */
static bool
deny_overlaps4(const struct policy *p, const uint8_t *net, uint8_t len)
{
	if (!p->naddr_deny)
		return false;
	for (unsigned int i = 0; i < p->nrules; i++) {
		const struct rule *r = p->rules[i];
		uint8_t l = r->plen < len ? r->plen : len;
		bool same = true;

		if (r->pub.action != POLICY_DENY)
			continue;
		if (r->kind == RK_ANY)
			return true;
		if (r->kind != RK_ADDR || r->family != 4)
			continue;
		for (uint8_t b = 0; b < l && same; b++)
			same = ((r->addr[b / 8] ^ net[b / 8]) >> (7 - b % 8) & 1) == 0;
		if (same)
			return true;
	}
	return false;
}

int
policy_allow_nets4(const struct policy *p, uint32_t *net, uint8_t *len, int max)
{
	int n = 0;

	for (unsigned int i = 0; p && i < p->nexact && n < max; i++) {
		const struct rule *r = p->rules[p->exact[i]];

		if (r->pub.action != POLICY_ALLOW || r->kind != RK_ADDR || r->pub.port ||
		    r->family != 4 || r->pub.methods || r->pub.npaths ||
		    deny_overlaps4(p, r->addr, r->plen))
			continue;
		memcpy(&net[n], r->addr, 4);
		len[n] = r->plen;
		n++;
	}
	return n;
}

/* Rules keep their source by pointer; a private copy outlives the caller's. */
static const char *
source_intern(struct policy *p, const char *name)
{
	struct source *s;
	size_t n;

	for (s = p->sources; s; s = s->next) {
		if (!strcmp(s->name, name))
			return s->name;
	}
	n = strlen(name);
	s = malloc(sizeof(*s) + n + 1);
	if (!s)
		return NULL;
	memcpy(s->name, name, n + 1);
	s->next = p->sources;
	p->sources = s;
	return s->name;
}

/* Length of the fixed label-suffix of a '?' pattern: the labels after the
 * last one holding a '?'; 0 when the last label has one. */
static size_t
qmark_suffix(const char *name, size_t n)
{
	const char *q = strrchr(name, '?'), *dot = memchr(q, '.', n - (q - name));

	return dot ? n - (dot + 1 - name) : 0;
}

static struct qgroup *
qgroup_find(struct qgroup *g, const char *name, size_t len)
{
	size_t i;

	for (; g; g = g->next) {
		if (g->len != len)
			continue;
		for (i = 0; i < len && (g->shape[i] == '?') == (name[i] == '?'); i++)
			;
		if (i == len)
			return g;
	}
	return NULL;
}

/* Every allocation comes before the first change, so that a failure leaves
 * nothing pointing into r (which the caller then frees). */
static int
index_qmark(struct policy *p, struct rule *r)
{
	size_t sfx = qmark_suffix(r->name, r->name_len);
	size_t len = sfx ? r->name_len - sfx - 1 : r->name_len;
	const char *key = r->name + r->name_len - sfx;
	const struct hslot *found = NULL;
	struct qgroup **head = &p->qrest, *g, *fresh = NULL;
	struct hslot *s;
	int err;

	if (sfx) {
		err = htab_reserve(&p->names);
		if (err)
			return err;
		found = htab_get(&p->names, key, sfx, hash_key(key, sfx));
	}
	g = qgroup_find(sfx ? (found ? found->qmark : NULL) : p->qrest, r->name, len);
	if (!g) {
		fresh = g = calloc(1, sizeof(*g));
		if (!g)
			return -ENOMEM;
		g->len = len;
		g->shape = r->name;
	}
	err = htab_reserve(&g->tab);
	if (err) {
		free(fresh);
		return err;
	}
	if (sfx)
		head = &htab_insert(&p->names, key, sfx, hash_key(key, sfx))->qmark;
	if (fresh) {
		fresh->next = *head;
		*head = fresh;
	}
	s = htab_insert(&g->tab, r->name, len, hash_key(r->name, len));
	r->next = s->rules;
	s->rules = r;
	return 0;
}

static int
rule_index(struct policy *p, struct rule *r)
{
	struct rule **list;
	struct hslot *hslot;
	struct htab *t;
	const void *key;
	int f = r->family == 6, err;
	size_t klen;

	switch (r->kind) {
	case RK_EXACT:
	case RK_WILD:
		t = &p->names;
		key = r->name;
		klen = r->name_len;
		break;
	case RK_QMARK:
		return index_qmark(p, r);
	case RK_ANY:
		t = &p->any;
		key = &r->pub.port;
		klen = sizeof(r->pub.port);
		break;
	case RK_ADDR:
		t = &p->cidr[f][r->plen];
		key = r->addr;
		klen = f ? 16 : 4;
		break;
	default:
		return -EINVAL;
	}
	err = htab_reserve(t);
	if (err)
		return err;
	if (r->kind == RK_ADDR)
		p->cidr_used[f][r->plen / 64] |= 1ULL << (r->plen % 64);
	hslot = htab_insert(t, key, klen,
			    t == &p->names ? hash_key(key, klen) : hash_addr(key, klen));
	list = r->kind == RK_WILD ? &hslot->wild : &hslot->rules;
	r->next = *list;
	*list = r;
	return 0;
}

/* Room for one more exact-address candidate; -ENOMEM. */
static int
exact_reserve(struct policy *p)
{
	if (p->nexact == p->exact_cap) {
		unsigned int cap = p->exact_cap ? 2 * p->exact_cap : 16;
		unsigned int *e = realloc(p->exact, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		p->exact = e;
		p->exact_cap = cap;
	}
	return 0;
}

/* The paths of o in one allocation: the pointers, then the strings.
 * NULL when there are none (then *fail says whether it was memory). */
static char **
paths_copy(const struct policy_rule_opts *o, bool *fail)
{
	size_t len = 0;
	char **v, *w;

	*fail = false;
	if (!o || !o->npaths)
		return NULL;
	for (size_t i = 0; i < o->npaths; i++)
		len += strlen(o->paths[i]) + 1;
	v = malloc(o->npaths * sizeof(*v) + len);
	if (!v) {
		*fail = true;
		return NULL;
	}
	w = (char *)(v + o->npaths);
	for (size_t i = 0; i < o->npaths; i++) {
		size_t n = strlen(o->paths[i]) + 1;

		v[i] = memcpy(w, o->paths[i], n);
		w += n;
	}
	return v;
}

int
policy_add(struct policy *p, enum policy_action action, const char *rule, const char *methods,
	   const char *source, char *errbuf, size_t errlen)
{
	struct policy_rule_opts o = {.methods = methods};

	return policy_add_opts(p, action, rule, &o, source, errbuf, errlen);
}

int
policy_add_opts(struct policy *p, enum policy_action action, const char *rule,
		const struct policy_rule_opts *o, const char *source, char *errbuf, size_t errlen)
{
	char name[HOST_MAX + 1];
	struct rule tmp = {0}, *r, **rules;
	size_t tlen, nlen;
	unsigned int cap;
	bool exact, nomem;
	int err;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!p || !rule || (action != POLICY_ALLOW && action != POLICY_DENY))
		return rule_fail(errbuf, errlen, "invalid arguments");
	err = rule_parse(&tmp, rule, o ? o->methods : NULL, name, errbuf, errlen);
	if (!err)
		err = rule_opts_check(&tmp, action, o, errbuf, errlen);
	if (err)
		return err;
	tmp.pub.inspect = o && o->inspect;
	tmp.pub.npaths = o ? (unsigned int)o->npaths : 0;
	if (p->nrules == p->cap) {
		cap = p->cap ? p->cap * 2 : 16;
		rules = realloc(p->rules, cap * sizeof(*rules));
		if (!rules)
			goto out_nomem;
		p->rules = rules;
		p->cap = cap;
	}
	tlen = strlen(rule);
	nlen = strlen(name);
	r = malloc(sizeof(*r) + nlen + 1 + tlen + 1);
	if (!r)
		goto out_nomem;
	*r = tmp;
	r->pub.paths = paths_copy(o, &nomem);
	if (nomem) {
		free(r);
		goto out_nomem;
	}
	r->pub.hooks = o && o->hooks ? hooks_copy(o->hooks) : NULL;
	if (o && o->hooks && !r->pub.hooks) {
		free(r->pub.paths);
		free(r);
		goto out_nomem;
	}
	r->name = memcpy(r->buf, name, nlen + 1);
	r->pub.text = memcpy(r->buf + nlen + 1, rule, tlen + 1);
	r->name_len = nlen;
	r->pub.action = action;
	r->pub.index = p->nrules + 1;
	r->pub.source = NULL;
	if (source) {
		r->pub.source = source_intern(p, source);
		if (!r->pub.source)
			goto out_free;
	}
	/* the fast path's candidates: exact ADDR:PORT, and IPv4 networks
	 * without a port (policy_allow_nets4) */
	exact = action == POLICY_ALLOW && r->kind == RK_ADDR &&
		((r->pub.port && r->plen == (r->family == 4 ? 32 : 128)) ||
		 (!r->pub.port && r->family == 4));
	if (exact && exact_reserve(p))
		goto out_free;
	err = rule_index(p, r);
	if (err)
		goto out_free;
	if (exact)
		p->exact[p->nexact++] = p->nrules;
	p->rules[p->nrules++] = r;
	if (action == POLICY_DENY && (r->kind == RK_ADDR || r->kind == RK_ANY))
		p->naddr_deny++;
	if (policy_rule_inspects(&r->pub))
		p->ninspect++;
	if (r->pub.npaths)
		p->npathrules++;
	return 0;
out_free:
	free(r->pub.paths);
	free((void *)r->pub.hooks);
	free(r);
out_nomem:
	rule_fail(errbuf, errlen, "out of memory");
	return -ENOMEM;
}

int
policy_set_comment(struct policy *p, const char *comment)
{
	struct policy_rule *r;
	size_t n;

	if (!p || !p->nrules || !comment)
		return -EINVAL;
	n = strnlen(comment, POLICY_COMMENT_MAX + 1);
	if (n > POLICY_COMMENT_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)comment[i] < 0x20 || comment[i] == 0x7f)
			return -EINVAL; /* printed on terminals and in logs as it is */
	r = &p->rules[p->nrules - 1]->pub;
	free(r->comment);
	r->comment = strdup(comment);
	return r->comment ? 0 : -ENOMEM;
}

void
policy_set_limited(struct policy *p, bool on)
{
	p->limited = on;
}

bool
policy_limited(const struct policy *p)
{
	return p && p->limited;
}

bool
policy_inspects(const struct policy *p)
{
	return p && (p->limited || p->ninspect || p->nsecrets);
}

bool
policy_has_paths(const struct policy *p)
{
	return p && p->npathrules;
}

void
policy_set_ipv6(struct policy *p, bool on)
{
	p->no_ipv6 = !on;
}

bool
policy_denies_addresses(const struct policy *p)
{
	return p->naddr_deny > 0;
}

unsigned int
policy_allow_v6(const struct policy *p, const struct policy_rule **first)
{
	unsigned int n = 0;

	*first = NULL;
	for (unsigned int i = 0; i < p->nrules; i++) {
		const struct rule *r = p->rules[i];

		if (r->pub.action != POLICY_ALLOW || r->kind != RK_ADDR || r->family != 6)
			continue;
		if (!n++)
			*first = &r->pub;
	}
	return n;
}
