// SPDX-License-Identifier: Apache-2.0
/* Where an allowed connection goes when an upstream proxy is set
 * (--upstream-proxy, policy_set_upstream()): through it, never direct,
 * but for the exceptions of --upstream-no-proxy -- names (each covering
 * the names under it, as NO_PROXY does), addresses and CIDRs -- and for
 * loopback and link-local addresses and localhost, which name this
 * machine and its link and never a place the upstream proxy could reach
 * for it. The policy decides what is allowed; this decides only the way.
 * kpath_allows() asks it before a kernel path is opened, the proxy
 * before it connects, `check` for the path it prints. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/engine.h"
#include "policy/policy.h"

#define ROUTE_MAX 256 /* exceptions in one list */

struct route_entry {
	uint8_t family; /* 0: a name; 4 or 6: an address or CIDR */
	uint8_t plen;
	uint8_t addr[16];
	size_t len;
	char name[HOST_MAX + 1];
};

struct policy_route {
	unsigned int n;
	struct route_entry e[];
};

static int
route_fail(char *err, size_t errlen, const char *entry, size_t n, const char *why)
{
	snprintf(err, errlen, "'%.*s': %s", (int)(n > 80 ? 80 : n), entry, why);
	return -EINVAL;
}

/* An address or CIDR ("10.0.0.0/8", "2001:db8::/32", "192.0.2.7"). */
static int
parse_cidr(struct route_entry *e, const char *s, size_t n, char *err, size_t errlen)
{
	char text[INET6_ADDRSTRLEN + 1];
	const char *slash = memchr(s, '/', n);
	size_t an = slash ? (size_t)(slash - s) : n;
	unsigned int max, plen = 0;
	uint8_t m[16];

	if (an >= sizeof(text))
		return route_fail(err, errlen, s, n, "invalid address");
	memcpy(text, s, an);
	text[an] = 0;
	if (inet_pton(AF_INET, text, e->addr) == 1)
		e->family = 4;
	else if (inet_pton(AF_INET6, text, e->addr) == 1)
		e->family = 6;
	else
		return route_fail(err, errlen, s, n, "invalid address");
	max = e->family == 4 ? 32 : 128;
	if (!slash) {
		plen = max;
	} else {
		size_t i;

		for (i = an + 1; i < n && i < an + 5 && s[i] >= '0' && s[i] <= '9'; i++)
			plen = plen * 10 + (unsigned int)(s[i] - '0');
		if (i == an + 1 || i != n || plen > max)
			return route_fail(err, errlen, s, n,
					  e->family == 4 ? "expected 0-32 for the prefix length"
							 : "expected 0-128 for the prefix length");
	}
	rule_mask_addr(e->addr, plen, m, max / 8);
	if (memcmp(m, e->addr, max / 8))
		return route_fail(err, errlen, s, n, "host bits set in the address");
	e->plen = (uint8_t)plen;
	if (e->family == 6 && plen >= 96 && rule_is_v4_mapped(e->addr)) {
		memmove(e->addr, e->addr + 12, 4);
		memset(e->addr + 4, 0, 12);
		e->family = 4;
		e->plen = (uint8_t)(plen - 96);
	}
	return 0;
}

/* One entry (n bytes, blanks trimmed): a name (a leading '.' allowed),
 * or an address or CIDR (IPv6 bare or in brackets). */
static int
parse_entry(struct route_entry *e, const char *s, size_t n, char *err, size_t errlen)
{
	char text[HOST_MAX + 2];

	memset(e, 0, sizeof(*e));
	if (n == 1 && s[0] == '*')
		return route_fail(err, errlen, s, n,
				  "it would send everything direct: leave --upstream-proxy out");
	if (n >= 2 && s[0] == '[' && memchr(s, ']', n)) {
		const char *close = memchr(s, ']', n);
		size_t an = (size_t)(close - s - 1);

		if (an >= sizeof(text) || (close + 1 < s + n && close[1] != '/'))
			return route_fail(err, errlen, s, n, "invalid IPv6 address");
		memcpy(text, s + 1, an);
		memcpy(text + an, close + 1, (size_t)(s + n - close - 1));
		return parse_cidr(e, text, an + (size_t)(s + n - close - 1), err, errlen);
	}
	if (memchr(s, ':', n) || memchr(s, '/', n))
		return parse_cidr(e, s, n, err, errlen);
	if (s[0] == '.') {
		s++;
		n--;
	}
	if (n >= sizeof(text))
		return route_fail(err, errlen, s, n, "a name longer than 253 bytes");
	memcpy(text, s, n);
	text[n] = 0;
	if (policy_host_normalize(text, false, e->name, sizeof(e->name)))
		return route_fail(err, errlen, s, n,
				  strchr(text, '*') ? "a name covers the names under it: write "
						      "example.com, not *.example.com"
						    : "expected a host name, an address or a CIDR");
	e->len = strlen(e->name);
	if (rule_numeric_tld(e->name, e->len)) /* "192.0.2.7", "127.1": an address */
		return parse_cidr(e, s, n, err, errlen);
	return 0;
}

/* The list into a route (NULL list: no exceptions); NULL with err set. */
static struct policy_route *
route_parse(const char *list, char *err, size_t errlen)
{
	struct policy_route *r;
	unsigned int cap = 1;
	const char *s;

	for (s = list; s && *s; s++)
		cap += *s == ',';
	if (cap > ROUTE_MAX) {
		snprintf(err, errlen, "more than %d exceptions", ROUTE_MAX);
		return NULL;
	}
	r = calloc(1, sizeof(*r) + cap * sizeof(r->e[0]));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (s = list; s && *s;) {
		size_t n = strcspn(s, ",");
		const char *t = s;
		size_t tn = n;

		while (tn && (*t == ' ' || *t == '\t'))
			t++, tn--;
		while (tn && (t[tn - 1] == ' ' || t[tn - 1] == '\t'))
			tn--;
		if (tn && parse_entry(&r->e[r->n++], t, tn, err, errlen)) {
			free(r);
			return NULL;
		}
		s += n + (s[n] == ',');
	}
	if (list && !r->n) {
		snprintf(err, errlen,
			 "expected a comma-separated list of names, addresses or CIDRs");
		free(r);
		return NULL;
	}
	return r;
}

int
policy_noproxy_check(const char *no_proxy, char *errbuf, size_t errlen)
{
	struct policy_route *r = route_parse(no_proxy, errbuf, errlen);

	free(r);
	return r ? 0 : -EINVAL;
}

int
policy_set_upstream(struct policy *p, bool on, const char *no_proxy, char *errbuf, size_t errlen)
{
	struct policy_route *r = NULL;

	if (on && !(r = route_parse(no_proxy, errbuf, errlen)))
		return -EINVAL;
	free(p->route);
	p->route = r;
	return 0;
}

bool
policy_upstream(const struct policy *p)
{
	return p && p->route;
}

static bool
addr_direct(const struct policy_route *r, const struct naddr *a)
{
	if (a->family != 4 && a->family != 6)
		return false;
	if (a->cls == ADDR_LOOPBACK || a->cls == ADDR_LINKLOCAL)
		return true;
	for (unsigned int i = 0; i < r->n; i++) {
		const struct route_entry *e = &r->e[i];
		uint8_t m[16];

		if (e->family != a->family)
			continue;
		rule_mask_addr(a->b, e->plen, m, a->family == 4 ? 4 : 16);
		if (!memcmp(m, e->addr, a->family == 4 ? 4 : 16))
			return true;
	}
	return false;
}

/* Is host e's name or under it? */
static bool
name_covered(const struct route_entry *e, const char *host, size_t n)
{
	return n >= e->len && !memcmp(host + n - e->len, e->name, e->len) &&
	       (n == e->len || host[n - e->len - 1] == '.');
}

bool
policy_via_upstream(const struct policy *p, const char *host, const struct sockaddr *addr)
{
	static const struct route_entry localhost = {.name = "localhost", .len = 9};
	const struct policy_route *r = p ? p->route : NULL;
	struct naddr a;

	if (!r)
		return false;
	if (addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6)) {
		addr_from_sockaddr(&a, addr);
		if (addr_direct(r, &a))
			return false;
	}
	if (host && addr_from_literal(&a, host, strlen(host)))
		return !addr_direct(r, &a);
	if (host) {
		size_t n = strlen(host);

		if (n && host[n - 1] == '.')
			n--;
		if (name_covered(&localhost, host, n))
			return false;
		for (unsigned int i = 0; i < r->n; i++)
			if (!r->e[i].family && name_covered(&r->e[i], host, n))
				return false;
	}
	return true;
}
