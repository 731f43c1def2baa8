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
 * lookups write nothing shared, so concurrent judging needs no locks. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/policy.h"

#define RULE_MAX  1024 /* longest rule text accepted */
#define HOST_MAX  253  /* longest host name, trailing dot excluded */
#define LABEL_MAX 63
#define FNV_BASIS 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

enum rule_kind {
	RK_EXACT = 0, /* example.com */
	RK_WILD = 1,  /* *.x or **.x; name is the suffix x */
	RK_QMARK = 2, /* has '?', maybe after a leading "*." or "**." */
	RK_ANY = 3,   /* *:port */
	RK_ADDR = 4,  /* address or CIDR */
};

struct rule {
	struct policy_rule pub; /* what decisions point at */
	enum rule_kind kind;
	uint8_t star;	   /* 1 for "*." (subdomains), 2 for "**." (apex too), else 0 */
	uint8_t family;	   /* RK_ADDR: 4 or 6 (v4-mapped rules are stored as 4) */
	uint8_t plen;	   /* RK_ADDR: prefix length */
	uint8_t addr[16];  /* RK_ADDR: network, host bits zero */
	size_t name_len;   /* of name */
	char *name;	   /* normalised host, suffix or pattern, star label removed */
	struct rule *next; /* same list (hash slot or '?' group) */
	char buf[];	   /* name (next to the fields matching reads), then text */
};

struct qgroup;

/* One key. In the names table it is a normalised name or suffix, and the
 * slot gathers every kind of rule filed under it, so that one probe per
 * label suffix of a query finds them all. Lists are unordered: better()
 * decides between candidates. */
struct hslot {
	uint64_t hash;	 /* 0: empty slot */
	const void *key; /* points into a rule's name or addr */
	size_t klen;
	struct rule *rules;   /* exact names; "*:port" by port; CIDRs by network */
	struct rule *wild;    /* names: "*." and "**." rules with this suffix */
	struct qgroup *qmark; /* names: '?' patterns with this fixed suffix */
};

/* Open addressing, linear probing, at most 3/4 full; never shrinks. */
struct htab {
	struct hslot *slots;
	size_t mask; /* capacity - 1 */
	size_t used;
};

/* '?' patterns with the same fixed suffix and the same shape in front of it
 * (length, and '?' at the same places). Copying the host's bytes there with
 * those places masked turns the byte-wise match into one lookup, so many
 * patterns under one suffix cost one probe per shape, not one per rule. */
struct qgroup {
	struct qgroup *next;
	size_t len;	   /* bytes in front of ".suffix" (the whole pattern if none) */
	const char *shape; /* the first pattern's name: '?' marks the masked bytes */
	struct htab tab;   /* rules by those len bytes, '?' included */
};

/* A rule source ("--allow", a file name), copied once per policy. */
struct source {
	struct source *next;
	char name[];
};

struct policy {
	struct rule **rules; /* by index - 1; owns them */
	unsigned int nrules;
	unsigned int cap;
	struct htab names;	  /* RK_EXACT, RK_WILD, and RK_QMARK by fixed suffix */
	struct qgroup *qrest;	  /* RK_QMARK with '?' in the last label */
	struct htab any;	  /* RK_ANY by port */
	struct htab cidr[2][129]; /* RK_ADDR by [v4, v6][prefix length] */
	uint64_t cidr_used[2][3]; /* bit per prefix length in use */
	struct source *sources;	  /* interned rule sources */
	unsigned int naddr_deny;  /* deny rules an address alone can match */
	bool no_ipv6;		  /* policy_set_ipv6(p, false) */
	unsigned int *exact;	  /* indexes of exact ADDR:PORT allow rules */
	unsigned int nexact, exact_cap;
};

/* A destination address as judged: v4-mapped IPv6 already turned into v4. */
struct naddr {
	int family; /* 4, 6, or 0 for an unknown family */
	uint8_t b[16];
	enum addr_class cls;
	uint8_t cls_plen; /* prefix length of the special range it falls in */
};

struct qctx {
	const char *host; /* normalised name; NULL if none or an address literal */
	size_t hlen;
	bool has_host;	       /* a valid name or an address literal */
	struct naddr addrs[2]; /* [0] q->addr (or the literal), [1] the literal */
	int naddrs;
	uint16_t port;
	enum policy_proto proto;
	uint32_t mbit;	   /* the query's method bit; 0 when unknown */
	bool tcp_only;	   /* policy_tcp_rule(): allow only through tcp:// rules */
	bool possible;	   /* policy_host_possible() walk */
	bool possible_yes; /* ... an allow rule could match */
	bool possible_no;  /* ... a deny rule without port or methods matches */
	const struct rule *deny;
	const struct rule *allow;
	const struct rule *method; /* allow rules that failed only on the method */
	bool named[2];		   /* addrs[i] named by an allow address rule */
	bool any_port;		   /* policy_addr_named(): a rule naming it on any port */
	uint16_t *ports;	   /* policy_tcp_ports(): collect allow tcp:// ports */
	int nports, maxports;
	bool host_ports; /* policy_kv_ports(): ... host rules' ports instead */
};

static const char *const method_names[] = {
	"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE",
};

static int __attribute__((format(printf, 3, 4)))
fail(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *
show_byte(unsigned char c, char *buf, size_t len)
{
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, len, "'%c'", c);
	else
		snprintf(buf, len, "byte 0x%02x", c);
	return buf;
}

/* FNV-1a leaves its low bits, the ones a mask picks, weakly mixed. */
static uint64_t
hash_fin(uint64_t h)
{
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return h ? h : 1;
}

/* FNV-1a over the bytes last to first, so that the hashes of all label
 * suffixes of a name fall out of one pass (see match_names()). */
static uint64_t
hash_key(const void *key, size_t len)
{
	const unsigned char *s = key;
	uint64_t h = FNV_BASIS;

	while (len--) {
		h ^= s[len];
		h *= FNV_PRIME;
	}
	return hash_fin(h);
}

/* Addresses (4 or 16 bytes) and ports (2) hash by words, not bytes. */
static uint64_t
hash_addr(const void *key, size_t len)
{
	uint64_t lo = 0, hi = 0;

	memcpy(&lo, key, len < 8 ? len : 8);
	if (len > 8)
		memcpy(&hi, (const uint8_t *)key + 8, len - 8);
	return hash_fin((lo ^ (hi * 0x9e3779b97f4a7c15ULL)) + len);
}

static const struct hslot *
htab_get(const struct htab *t, const void *key, size_t klen, uint64_t hash)
{
	size_t i;

	if (!t->used)
		return NULL;
	for (i = hash & t->mask;; i = (i + 1) & t->mask) {
		const struct hslot *s = &t->slots[i];

		if (!s->hash)
			return NULL;
		if (s->hash == hash && s->klen == klen && !memcmp(s->key, key, klen))
			return s;
	}
}

/* Fetches what htab_get() will read past the slot: the key and the rules
 * of the slots whose hash matches (they live in the rules' allocations). */
static void
htab_prefetch(const struct htab *t, uint64_t hash)
{
	size_t i;

	if (!t->used)
		return;
	for (i = hash & t->mask;; i = (i + 1) & t->mask) {
		const struct hslot *s = &t->slots[i];

		if (!s->hash)
			return;
		if (s->hash == hash) {
			__builtin_prefetch(s->key);
			__builtin_prefetch(s->rules);
			__builtin_prefetch(s->wild);
		}
	}
}

static struct hslot *
htab_slot(struct hslot *slots, size_t mask, const void *key, size_t klen, uint64_t hash)
{
	size_t i;

	for (i = hash & mask;; i = (i + 1) & mask) {
		struct hslot *s = &slots[i];

		if (!s->hash || (s->hash == hash && s->klen == klen && !memcmp(s->key, key, klen)))
			return s;
	}
}

static int
htab_grow(struct htab *t)
{
	size_t cap = t->slots ? (t->mask + 1) * 2 : 8, i;
	struct hslot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; t->slots && i <= t->mask; i++) {
		const struct hslot *s = &t->slots[i];

		if (s->hash)
			*htab_slot(slots, cap - 1, s->key, s->klen, s->hash) = *s;
	}
	free(t->slots);
	t->slots = slots;
	t->mask = cap - 1;
	return 0;
}

/* Makes room for one more key, so that the next htab_insert() cannot fail. */
static int
htab_reserve(struct htab *t)
{
	if (t->slots && (t->used + 1) * 4 <= (t->mask + 1) * 3)
		return 0;
	return htab_grow(t);
}

/* The slot of key, created if new; htab_reserve() first. key must live as
 * long as the table; hash is hash_key() for names, hash_addr() otherwise. */
static struct hslot *
htab_insert(struct htab *t, const void *key, size_t klen, uint64_t hash)
{
	struct hslot *s = htab_slot(t->slots, t->mask, key, klen, hash);

	if (!s->hash) {
		*s = (struct hslot){.hash = hash, .key = key, .klen = klen};
		t->used++;
	}
	return s;
}

static void
htab_free(struct htab *t)
{
	free(t->slots);
	t->slots = NULL;
}

/* ---- parsing ----------------------------------------------------------- */

/* How host_check() treats each byte. */
enum hbyte {
	HB_BAD = 0,
	HB_OK = 1,	/* a-z 0-9 - _ */
	HB_UPPER = 2,	/* A-Z, lowered */
	HB_DOT = 3,	/* label separator */
	HB_PATTERN = 4, /* '*' and '?', in rules only */
};

static const uint8_t hbyte[256] = {
	['a' ... 'z'] = HB_OK,	  ['0' ... '9'] = HB_OK, ['-'] = HB_OK,	     ['_'] = HB_OK,
	['A' ... 'Z'] = HB_UPPER, ['.'] = HB_DOT,	 ['*'] = HB_PATTERN, ['?'] = HB_PATTERN,
};

/* policy_host_normalize() with a reason. in need not be NUL-terminated. */
static int
host_check(const char *in, size_t len, bool pattern, char *out, size_t outlen, char *errbuf,
	   size_t errlen)
{
	size_t i, label = 0;
	char b[16];

	if (len && in[len - 1] == '.')
		len--;
	if (!len)
		return fail(errbuf, errlen, "empty host name");
	if (len > HOST_MAX)
		return fail(errbuf, errlen, "host name longer than %d bytes", HOST_MAX);
	if (len >= outlen)
		return fail(errbuf, errlen, "host name too long");
	for (i = 0; i < len; i++) {
		unsigned char c = in[i];

		switch (hbyte[c]) {
		case HB_UPPER:
			c += 'a' - 'A';
			break;
		case HB_DOT:
			if (!label)
				return fail(errbuf, errlen, "empty label in host name");
			label = 0;
			out[i] = c;
			continue;
		case HB_PATTERN:
			if (pattern)
				break;
			/* fall through */
		case HB_BAD:
			return fail(errbuf, errlen, "invalid %s in host name",
				    show_byte(c, b, sizeof(b)));
		}
		if (++label > LABEL_MAX)
			return fail(errbuf, errlen, "label longer than %d bytes in host name",
				    LABEL_MAX);
		out[i] = c;
	}
	if (!label)
		return fail(errbuf, errlen, "empty label in host name");
	out[len] = '\0';
	return 0;
}

int
policy_host_normalize(const char *in, bool pattern, char *out, size_t outlen)
{
	if (!in || !out)
		return -EINVAL;
	return host_check(in, strlen(in), pattern, out, outlen, NULL, 0);
}

int
policy_methods_parse(const char *list, uint32_t *bits, char *errbuf, size_t errlen)
{
	const char *s = list, *e;
	uint32_t set = 0;
	size_t n, i;

	if (!list || !bits)
		return fail(errbuf, errlen, "no method list");
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strcspn(s, ",");
		n = e - s;
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (!n)
			return fail(errbuf, errlen,
				    *list ? "empty method name" : "empty method list");
		for (i = 0; i < sizeof(method_names) / sizeof(method_names[0]); i++) {
			if (strlen(method_names[i]) == n && !strncasecmp(s, method_names[i], n))
				break;
		}
		if (i == sizeof(method_names) / sizeof(method_names[0]))
			return fail(errbuf, errlen,
				    "unknown method '%.*s' (known: GET, HEAD, POST, PUT, DELETE, "
				    "PATCH, OPTIONS, CONNECT, TRACE)",
				    (int)(n > 32 ? 32 : n), s);
		set |= 1u << i;
		if (!*e)
			break;
		s = e + 1;
	}
	*bits = set;
	return 0;
}

/* The bit of an HTTP method as sent; methods are case-sensitive (RFC 9110). */
static uint32_t
method_bit(const char *m)
{
	size_t i;

	for (i = 0; i < sizeof(method_names) / sizeof(method_names[0]); i++) {
		if (!strcmp(m, method_names[i]))
			return 1u << i;
	}
	return POLICY_M_OTHER;
}

static int
parse_port(const char *s, size_t n, uint16_t *port, char *errbuf, size_t errlen)
{
	unsigned long v = 0;
	size_t i;

	for (i = 0; i < n && i < 6; i++) {
		if (s[i] < '0' || s[i] > '9')
			break;
		v = v * 10 + (s[i] - '0');
	}
	if (!n || i != n || !v || v > 65535)
		return fail(errbuf, errlen, "expected 1-65535 for the port");
	*port = v;
	return 0;
}

/* out = the first plen bits of in (n bytes), the rest zero. */
static void
mask_addr(const uint8_t *in, unsigned int plen, uint8_t *out, size_t n)
{
	size_t full = plen / 8;

	memcpy(out, in, full);
	if (full < n) {
		out[full] = in[full] & (0xff00 >> (plen % 8));
		memset(out + full + 1, 0, n - full - 1);
	}
}

static bool
is_v4_mapped(const uint8_t *b)
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(b, pfx, sizeof(pfx));
}

/* "203.0.113.0/24", "2001:db8::1", ...: s[0..n) with an optional
 * "/len" in s or in plen_s[0..plen_n) (the "[v6]/len" form). */
static int
parse_addr(struct rule *r, const char *s, size_t n, const char *plen_s, size_t plen_n, char *errbuf,
	   size_t errlen)
{
	char text[INET6_ADDRSTRLEN + 8], net[INET6_ADDRSTRLEN];
	const char *slash = memchr(s, '/', n);
	unsigned int max, plen, i;
	uint8_t m[16];

	if (slash) {
		if (plen_s)
			return fail(errbuf, errlen, "two prefix lengths");
		plen_s = slash + 1;
		plen_n = s + n - plen_s;
		n = slash - s;
	}
	if (n >= sizeof(text))
		return fail(errbuf, errlen, "invalid address");
	memcpy(text, s, n);
	text[n] = '\0';
	if (inet_pton(AF_INET, text, r->addr) == 1) {
		r->family = 4;
	} else if (inet_pton(AF_INET6, text, r->addr) == 1) {
		r->family = 6;
	} else {
		return fail(errbuf, errlen,
			    memchr(s, ':', n) ? "invalid IPv6 address" : "invalid IPv4 address");
	}
	max = r->family == 4 ? 32 : 128;
	plen = max;
	if (plen_s) {
		for (i = 0, plen = 0; i < plen_n && i < 4 && plen_s[i] >= '0' && plen_s[i] <= '9';
		     i++)
			plen = plen * 10 + (plen_s[i] - '0');
		if (!plen_n || i != plen_n || plen > max)
			return fail(errbuf, errlen, "expected 0-%u for the prefix length", max);
	}
	mask_addr(r->addr, plen, m, max / 8);
	if (memcmp(m, r->addr, max / 8)) {
		inet_ntop(r->family == 4 ? AF_INET : AF_INET6, m, net, sizeof(net));
		return fail(errbuf, errlen, "host bits set in the address (the network is %s/%u)",
			    net, plen);
	}
	r->plen = plen;
	if (r->family == 6 && plen >= 96 && is_v4_mapped(r->addr)) {
		memmove(r->addr, r->addr + 12, 4);
		memset(r->addr + 4, 0, 12);
		r->family = 4;
		r->plen = plen - 96;
	}
	r->kind = RK_ADDR;
	return 0;
}

/* Is the last label of a normalised name numeric ("1", "0x7f")? Such names
 * are addresses to getaddrinfo() ("127.1", "2130706433"), never host names. */
static bool
numeric_tld(const char *name, size_t n)
{
	const char *last = name + n;
	size_t i = 0, len;

	while (last > name && last[-1] != '.')
		last--;
	len = name + n - last;
	if (len > 2 && last[0] == '0' && last[1] == 'x')
		i = 2;
	for (; i < len; i++) {
		if (!(last[i] >= '0' && last[i] <= '9') &&
		    !(i > 1 && last[1] == 'x' && last[i] >= 'a' && last[i] <= 'f'))
			return false;
	}
	return true;
}

/* A host name or pattern; name receives the normalised form, star removed. */
static int
parse_host(struct rule *r, const char *s, size_t n, char *name, char *errbuf, size_t errlen)
{
	int err;

	err = host_check(s, n, true, name, HOST_MAX + 1, errbuf, errlen);
	if (err)
		return err;
	if (!strncmp(name, "**.", 3))
		r->star = 2;
	else if (!strncmp(name, "*.", 2))
		r->star = 1;
	if (r->star)
		memmove(name, name + r->star + 1, strlen(name) - r->star);
	if (strchr(name, '*'))
		return fail(errbuf, errlen, "'*' must be a whole leading label ('*.example.com')");
	if (numeric_tld(name, strlen(name)))
		return fail(errbuf, errlen, "not a host name (numeric last label) nor an address");
	r->kind = strchr(name, '?') ? RK_QMARK : r->star ? RK_WILD : RK_EXACT;
	return 0;
}

/* Fills r (text and name not yet copied; name goes to the caller's buffer). */
static int
rule_parse(struct rule *r, const char *rule, const char *methods, char *name, char *errbuf,
	   size_t errlen)
{
	const char *s = rule, *host, *port = NULL, *plen = NULL, *close, *colon, *sep;
	size_t hn, pn = 0, plen_n = 0, len = strlen(rule);
	bool bracket = false;
	int err;

	name[0] = '\0';
	if (!len)
		return fail(errbuf, errlen, "empty rule");
	if (len > RULE_MAX)
		return fail(errbuf, errlen, "rule longer than %d bytes", RULE_MAX);
	if (!strncasecmp(s, "tcp://", 6)) {
		r->pub.tcp = true;
		s += 6;
	} else if ((sep = strstr(s, "://"))) {
		return fail(errbuf, errlen, "unknown scheme '%.*s://' (only tcp:// is supported)",
			    (int)(sep - s > 16 ? 16 : sep - s), s);
	}
	host = s;
	hn = strlen(s);
	if (*s == '[') {
		close = strchr(s, ']');
		if (!close)
			return fail(errbuf, errlen, "missing ']' after an IPv6 address");
		bracket = true;
		host = s + 1;
		hn = close - host;
		s = close + 1;
		if (*s == '/') {
			plen = s + 1;
			plen_n = strcspn(plen, ":");
			s = plen + plen_n;
		}
		if (*s == ':') {
			port = s + 1;
			pn = strlen(port);
		} else if (*s) {
			return fail(errbuf, errlen, "unexpected text after ']'");
		}
	} else if ((colon = strchr(s, ':')) && !strchr(colon + 1, ':')) {
		hn = colon - s;
		port = colon + 1;
		pn = strlen(port);
	}
	if (port) {
		err = parse_port(port, pn, &r->pub.port, errbuf, errlen);
		if (err)
			return err;
	}
	if (bracket) {
		err = parse_addr(r, host, hn, plen, plen_n, errbuf, errlen);
		if (err && !memchr(host, ':', hn) && !memchr(host, '/', hn))
			return fail(errbuf, errlen, "brackets are only for IPv6 addresses");
	} else if (memchr(host, ':', hn)) {
		err = parse_addr(r, host, hn, NULL, 0, errbuf, errlen);
		if (err && !memchr(host, '/', hn))
			fail(errbuf, errlen,
			     "invalid IPv6 address (with a port: [2001:db8::1]:443)");
	} else if (memchr(host, '/', hn)) {
		err = parse_addr(r, host, hn, NULL, 0, errbuf, errlen);
		if (err && r->family == 0)
			fail(errbuf, errlen, "'/' may only follow an address ('203.0.113.0/24')");
	} else if (hn == 1 && *host == '*') {
		if (!r->pub.port)
			return fail(errbuf, errlen,
				    "a bare '*' would match every host; use '*:PORT' for any host "
				    "on one port");
		r->kind = RK_ANY;
		err = 0;
	} else {
		err = parse_addr(r, host, hn, NULL, 0, NULL, 0);
		if (err)
			err = parse_host(r, host, hn, name, errbuf, errlen);
	}
	if (err)
		return err;
	if (r->pub.tcp && !r->pub.port)
		return fail(errbuf, errlen, "tcp:// rules need a port (tcp://HOST:PORT)");
	if (methods) {
		if (r->pub.tcp)
			return fail(errbuf, errlen, "methods apply only to host rules, not tcp://");
		if (r->kind == RK_ADDR)
			return fail(errbuf, errlen,
				    "methods apply only to host rules, not addresses");
		err = policy_methods_parse(methods, &r->pub.methods, errbuf, errlen);
		if (err)
			return err;
	}
	return 0;
}

/* ---- policy objects ----------------------------------------------------- */

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
	free(p);
}

unsigned int
policy_count(const struct policy *p)
{
	return p ? p->nrules : 0;
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

int
policy_add(struct policy *p, enum policy_action action, const char *rule, const char *methods,
	   const char *source, char *errbuf, size_t errlen)
{
	char name[HOST_MAX + 1];
	struct rule tmp = {0}, *r, **rules;
	size_t tlen, nlen;
	unsigned int cap;
	bool exact;
	int err;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!p || !rule || (action != POLICY_ALLOW && action != POLICY_DENY))
		return fail(errbuf, errlen, "invalid arguments");
	err = rule_parse(&tmp, rule, methods, name, errbuf, errlen);
	if (err)
		return err;
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
	exact = action == POLICY_ALLOW && r->kind == RK_ADDR && r->pub.port &&
		r->plen == (r->family == 4 ? 32 : 128);
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
	return 0;
out_free:
	free(r);
out_nomem:
	fail(errbuf, errlen, "out of memory");
	return -ENOMEM;
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

/* ---- addresses ----------------------------------------------------------- */

static void
set_class(struct naddr *a, enum addr_class cls, unsigned int plen)
{
	a->cls = cls;
	a->cls_plen = plen;
}

/* ADDR_V4_IN_V6's prefixes (:: and ::1 are taken out before). */
static bool
is_v4_in_v6(const uint8_t *b)
{
	static const uint8_t nat64[4] = {0, 0x64, 0xff, 0x9b}, teredo[4] = {0x20, 0x01, 0, 0};
	static const uint8_t zero[10], siit[4] = {0xff, 0xff, 0, 0};

	if (!memcmp(b, nat64, 4) || !memcmp(b, teredo, 4) || (b[0] == 0x20 && b[1] == 0x02))
		return true;
	if (memcmp(b, zero, 8))
		return false;
	return !memcmp(b + 8, siit, 4) || !memcmp(b + 8, zero, 4);
}

/* The classes of policy.h, each with the prefix length of its range. */
static void
classify(struct naddr *a)
{
	const uint8_t *b = a->b;
	uint32_t v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	static const uint8_t zero[15];

	set_class(a, ADDR_PUBLIC, 0);
	if (a->family == 4) {
		if (v == 0xffffffff)
			set_class(a, ADDR_UNSPEC, 32);
		else if (v >> 24 == 0)
			set_class(a, ADDR_UNSPEC, 8);
		else if (v >> 24 == 127)
			set_class(a, ADDR_LOOPBACK, 8);
		else if (v >> 24 == 10)
			set_class(a, ADDR_PRIVATE, 8);
		else if (v >> 20 == 0xac1) /* 172.16/12 */
			set_class(a, ADDR_PRIVATE, 12);
		else if (v >> 16 == 0xc0a8) /* 192.168/16 */
			set_class(a, ADDR_PRIVATE, 16);
		else if (v >> 16 == 0xa9fe) /* 169.254/16 */
			set_class(a, ADDR_LINKLOCAL, 16);
		else if (v >> 22 == 0x64400000 >> 22) /* 100.64/10 */
			set_class(a, ADDR_CGNAT, 10);
		else if (v >> 28 == 0xe) /* 224/4 */
			set_class(a, ADDR_MULTICAST, 4);
	} else if (a->family == 6) {
		if (b[0] == 0xff)
			set_class(a, ADDR_MULTICAST, 8);
		else if ((b[0] & 0xfe) == 0xfc)
			set_class(a, ADDR_ULA, 7);
		else if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
			set_class(a, ADDR_LINKLOCAL, 10);
		else if (!memcmp(b, zero, 15) && b[15] <= 1)
			set_class(a, b[15] ? ADDR_LOOPBACK : ADDR_UNSPEC, 128);
		else if (is_v4_in_v6(b))
			set_class(a, ADDR_V4_IN_V6, 0);
	} else {
		set_class(a, ADDR_UNSPEC, 0); /* unknown family: no rule can name it */
	}
}

static void
naddr_from_sockaddr(struct naddr *a, const struct sockaddr *sa)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET) {
		a->family = 4;
		memcpy(a->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;

		a->family = is_v4_mapped(b) ? 4 : 6;
		memcpy(a->b, a->family == 4 ? b + 12 : b, a->family == 4 ? 4 : 16);
	}
	classify(a);
}

/* A host that is an address literal ("203.0.113.7", "[2001:db8::1]", "::1"). */
static bool
naddr_from_literal(struct naddr *a, const char *host, size_t n)
{
	char text[INET6_ADDRSTRLEN + 2];

	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host++;
		n -= 2;
	} else if (n && host[n - 1] == '.') {
		n--; /* "127.0.0.1." */
	}
	if (!n || n >= sizeof(text))
		return false;
	/* Names are the common case: an IPv4 literal ends in a digit, an IPv6 one has a ':'. */
	if ((host[n - 1] < '0' || host[n - 1] > '9') && !memchr(host, ':', n))
		return false;
	memcpy(text, host, n);
	text[n] = '\0';
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, text, a->b) == 1) {
		a->family = 4;
	} else if (inet_pton(AF_INET6, text, a->b) == 1) {
		a->family = 6;
		if (is_v4_mapped(a->b)) {
			memmove(a->b, a->b + 12, 4);
			memset(a->b + 4, 0, 12);
			a->family = 4;
		}
	} else {
		return false;
	}
	classify(a);
	return true;
}

enum addr_class
addr_classify(const struct sockaddr *sa)
{
	struct naddr a;

	if (!sa)
		return ADDR_UNSPEC;
	naddr_from_sockaddr(&a, sa);
	return a.cls;
}

const char *
policy_reason_header(enum policy_reason r)
{
	switch (r) {
	case POLICY_R_ALLOWED:
		return "";
	case POLICY_R_NO_RULE:
		return "blocked-by-allowlist";
	case POLICY_R_DENY_RULE:
		return "blocked-by-denylist";
	case POLICY_R_METHOD:
		return "blocked-by-method-policy";
	case POLICY_R_LOCAL:
	case POLICY_R_V4_IN_V6:
	case POLICY_R_NO_IPV6:
		break;
	}
	return "blocked-by-policy";
}

const char *
policy_reason_words(const struct policy_decision *d, const char *method, char *buf, size_t len)
{
	unsigned int index = d->rule ? d->rule->index : 0;
	const char *text = d->rule ? d->rule->text : "";

	switch (d->reason) {
	case POLICY_R_ALLOWED:
		snprintf(buf, len, "rule %u \"%s\"", index, text);
		break;
	case POLICY_R_DENY_RULE:
		snprintf(buf, len, "denied by rule %u \"%s\"", index, text);
		break;
	case POLICY_R_METHOD:
		if (method)
			snprintf(buf, len, "method %s not allowed for it", method);
		else
			snprintf(buf, len, "method not allowed for this host");
		break;
	case POLICY_R_LOCAL:
		snprintf(buf, len, "local or private address");
		break;
	case POLICY_R_V4_IN_V6:
		snprintf(buf, len, "IPv4 carried in IPv6 (NAT64, 6to4, Teredo) is refused");
		break;
	case POLICY_R_NO_IPV6:
		snprintf(buf, len, "IPv6 is denied (use --ipv6)");
		break;
	default:
		snprintf(buf, len, "no rule allows it");
		break;
	}
	return buf;
}

const char *
policy_safe_str(const char *in, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n && in[i] && o + 1 < outlen; i++) {
		unsigned char c = (unsigned char)in[i];

		out[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (outlen)
		out[o] = 0;
	return out;
}

void
policy_safe_comm(const char comm[16], char out[17])
{
	policy_safe_str(comm, 16, out, 17);
}

/* ---- matching ------------------------------------------------------------ */

/* Does r apply to the query? 1 yes, 0 no, -1 only its method list is wrong.
 * A method-restricted deny applies unless the method is known and not
 * listed: a TLS stream might carry any method, so it fails closed. */
static int
rule_applies(const struct qctx *c, const struct rule *r)
{
	const struct policy_rule *pr = &r->pub;

	if (pr->port && pr->port != c->port)
		return 0;
	if (pr->action == POLICY_DENY)
		return !pr->methods || !c->mbit || (pr->methods & c->mbit);
	if (c->tcp_only && !pr->tcp)
		return 0;
	if (r->kind == RK_ANY && !c->has_host)
		return 0;
	if (pr->tcp || r->kind == RK_ADDR)
		return 1;
	if (c->proto != POLICY_P_HTTP && c->proto != POLICY_P_TLS)
		return 0;
	if (!pr->methods || (c->proto == POLICY_P_HTTP && (pr->methods & c->mbit)))
		return 1;
	return -1;
}

/* Most specific first: exact > '?' > wildcard (longer suffix first) >
 * address (longer prefix first) > "*:port"; then with a port, then with
 * methods, then the earlier rule. */
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
	if (ai >= 0 || r->pub.tcp || r->pub.methods || (r->pub.port && r->pub.port != 443))
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
		else if (!r->pub.port && !r->pub.methods)
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
	else if (m < 0)
		pick(&c->method, r);
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
			mask_addr(a->b, w * 64 + __builtin_ctzll(bits), pr[n].key, bytes);
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
		have_lit = naddr_from_literal(&lit, q->host, hl);
		if (!have_lit && !host_check(q->host, hl, false, name, sizeof(name), NULL, 0) &&
		    !numeric_tld(name, hl - (q->host[hl - 1] == '.'))) {
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
		naddr_from_sockaddr(&c->addrs[c->naddrs++], q->addr);
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
	if (c->allow) {
		d->action = POLICY_ALLOW;
		d->reason = POLICY_R_ALLOWED;
		d->rule = &c->allow->pub;
	} else if (c->method) {
		d->reason = POLICY_R_METHOD;
		d->rule = &c->method->pub;
	} else {
		d->reason = POLICY_R_NO_RULE;
	}
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
		c.mbit = method_bit(q->method);
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

	if (!p || !host || host_check(host, strlen(host), false, name, HOST_MAX + 1, NULL, 0))
		return false;
	c->host = name;
	c->hlen = strlen(name);
	if (numeric_tld(name, c->hlen))
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
	if (host_check(host, strlen(host), false, name, HOST_MAX + 1, NULL, 0) ||
	    numeric_tld(name, strlen(name)))
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

	return host_ports(p, host, name, &c) ? c.nports : 0;
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

	if (!p || !buf || used >= len)
		return 0;
	/* the deny host rules, once: a name near one stays on the proxy */
	deny = calloc(p->nrules ? p->nrules : 1, sizeof(*deny));
	if (!deny)
		return 0;
	for (unsigned int i = 0; i < p->nrules; i++)
		if (p->rules[i]->pub.action == POLICY_DENY && p->rules[i]->kind <= RK_QMARK)
			deny[ndeny++] = p->rules[i];
	for (unsigned int i = 0; used < len && i < p->nrules && n < max; i++) {
		const struct rule *r = p->rules[i];
		bool near = false;
		int w;

		if (r->pub.action != POLICY_ALLOW || r->pub.tcp || r->pub.methods ||
		    (r->pub.port && r->pub.port != 443) ||
		    (r->kind != RK_EXACT && r->kind != RK_WILD))
			continue;
		/* NO_PROXY takes a name's subdomains too: a deny rule at, under
		 * or above it keeps the name on the proxy, whose 403 says why */
		for (unsigned int j = 0; j < ndeny && !near; j++)
			near = names_nest(r->name, r->name_len, deny[j]->name, deny[j]->name_len);
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
	naddr_from_sockaddr(&c.addrs[0], sa);
	c.naddrs = 1;
	match_addr(p, &c, 0);
	return c.named[0] && !c.deny;
}
