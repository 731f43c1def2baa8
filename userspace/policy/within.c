// SPDX-License-Identifier: Apache-2.0
/* One allow rule within another (see policy.h, policy_rule_within): what
 * an administrator's ceiling (users.json's "allow") needs of a user's
 * rules. Decided on the parsed rules, conservatively: a pair this file
 * cannot show contained is "not within", never the other way round. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "policy/engine.h"
#include "policy/policy.h"

/* Does name end with ".suffix" (strictly below it)? */
static bool
below(const char *name, size_t n, const char *suffix, size_t sn)
{
	return n > sn && name[n - sn - 1] == '.' && !memcmp(name + n - sn, suffix, sn);
}

/* An exact name against a '?' pattern without a star: '?' is any byte
 * but '.', as match.c has it. */
static bool
qmatch(const char *pat, size_t pn, const char *s, size_t sn)
{
	if (pn != sn)
		return false;
	for (size_t i = 0; i < pn; i++)
		if (pat[i] == '?' ? s[i] == '.' : pat[i] != s[i])
			return false;
	return true;
}

/* Every name host rule a matches is one b matches (kinds RK_EXACT,
 * RK_WILD, RK_QMARK; names normalised, the star label removed). */
static bool
names_within(const struct rule *a, const struct rule *b)
{
	const char *an = a->name, *bn = b->name;
	size_t al = a->name_len, bl = b->name_len;
	/* the part of a a '?' can change: in front of its last '?' */
	const char *q = a->kind == RK_QMARK ? memrchr(an, '?', al) : NULL;

	if (b->kind == RK_QMARK) {
		if (a->star || b->star) /* a star with a '?': the same rule only */
			return a->star == b->star && a->kind == b->kind && al == bl &&
			       !memcmp(an, bn, al);
		return qmatch(bn, bl, an, al); /* a '?' of a's matches only b's '?' */
	}
	if (b->kind == RK_EXACT)
		return a->kind == RK_EXACT && al == bl && !memcmp(an, bn, al);
	/* b is *.x (star 1: below x) or **.x (star 2: x too) */
	if (q && (size_t)(q - an) + bl + 1 >= al)
		return false; /* a '?' of a's would fall in x */
	if (below(an, al, bn, bl))
		return true;
	if (al != bl || memcmp(an, bn, al))
		return false;
	/* the same suffix: a matches x itself unless it is *.x */
	return b->star == 2 || (a->kind == RK_WILD && a->star == 1);
}

/* Does a local address class's range (policy.h: named only by a rule at
 * least as specific) keep b from allowing what a allows there? a allows
 * such addresses only when its network falls in one whose range is no
 * longer than a's prefix; b must then be as specific. */
static bool
local_wider(const struct rule *a, const struct rule *b)
{
	struct sockaddr_storage ss = {0};
	struct naddr na;

	if (a->family == 4) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, a->addr, 4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, a->addr, 16);
	}
	addr_from_sockaddr(&na, (struct sockaddr *)&ss);
	return na.cls != ADDR_PUBLIC && na.cls_plen <= a->plen && b->plen < na.cls_plen;
}

static bool
rule_within(const struct rule *a, const struct rule *b)
{
	if (b->pub.port && a->pub.port != b->pub.port)
		return false;
	/* tcp:// and address rules allow any protocol; host rules and
	 * "*:PORT" only HTTP and TLS */
	if ((a->pub.tcp || a->kind == RK_ADDR) && !b->pub.tcp && b->kind != RK_ADDR)
		return false;
	if (a->kind == RK_ADDR) {
		uint8_t net[16];
		size_t n = a->family == 4 ? 4 : 16;

		if (b->kind != RK_ADDR || a->family != b->family || a->plen < b->plen)
			return false;
		rule_mask_addr(a->addr, b->plen, net, n);
		return !memcmp(net, b->addr, n) && !local_wider(a, b);
	}
	if (b->kind == RK_ADDR)
		return false; /* a name may resolve anywhere */
	if (b->kind == RK_ANY)
		return true; /* any host (on its port, checked) */
	if (a->kind == RK_ANY)
		return false;
	return names_within(a, b);
}

int
policy_rule_within(const char *a, const char *b, char *errbuf, size_t errlen)
{
	char an[HOST_MAX + 1], bn[HOST_MAX + 1];
	struct rule ra = {0}, rb = {0};

	if (rule_parse(&ra, a, NULL, an, errbuf, errlen) ||
	    rule_parse(&rb, b, NULL, bn, errbuf, errlen))
		return -EINVAL;
	ra.name = an;
	ra.name_len = strlen(an);
	rb.name = bn;
	rb.name_len = strlen(bn);
	return rule_within(&ra, &rb);
}

const struct policy_rule *
policy_outside(const struct policy *p, const char *const *ceiling, int n, char *errbuf,
	       size_t errlen)
{
	/* struct rule ends in a flexible array: the names live beside */
	struct rule *c;
	char(*names)[HOST_MAX + 1];
	const struct policy_rule *out = NULL;

	if (n > POLICY_CEILING_MAX) {
		snprintf(errbuf, errlen, "more than %d ceiling rules", POLICY_CEILING_MAX);
		return NULL;
	}
	c = calloc((size_t)(n > 0 ? n : 1), sizeof(*c));
	names = calloc((size_t)(n > 0 ? n : 1), sizeof(*names));
	if (!c || !names) {
		snprintf(errbuf, errlen, "out of memory");
		goto done;
	}
	for (int k = 0; k < n; k++) {
		if (rule_parse(&c[k], ceiling[k], NULL, names[k], errbuf, errlen))
			goto done;
		c[k].name = names[k];
		c[k].name_len = strlen(names[k]);
	}
	errbuf[0] = 0;
	for (unsigned int i = 0; i < p->nrules && !out; i++) {
		const struct rule *r = p->rules[i];
		bool in = false;

		if (r->pub.action != POLICY_ALLOW)
			continue;
		for (int k = 0; k < n && !in; k++)
			in = rule_within(r, &c[k]);
		if (!in)
			out = &r->pub;
	}
done:
	free(c);
	free(names);
	return out;
}
