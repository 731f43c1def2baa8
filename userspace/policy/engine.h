// SPDX-License-Identifier: Apache-2.0
/* The rule engine's own structures, shared by its files (policy.h is the
 * face): rules and the tables that index them (policy.c builds them from
 * rule.c's parses, htab.c grows the tables), a query as judged (addr.c turns
 * its address into one, match.c judges it). The hashes and the lookup, which
 * every query runs, are here, inline. Nothing outside policy/ includes it. */
#ifndef POLICY_ENGINE_H
#define POLICY_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
	struct htab names;	    /* RK_EXACT, RK_WILD, and RK_QMARK by fixed suffix */
	struct qgroup *qrest;	    /* RK_QMARK with '?' in the last label */
	struct htab any;	    /* RK_ANY by port */
	struct htab cidr[2][129];   /* RK_ADDR by [v4, v6][prefix length] */
	uint64_t cidr_used[2][3];   /* bit per prefix length in use */
	struct source *sources;	    /* interned rule sources */
	unsigned int naddr_deny;    /* deny rules an address alone can match */
	bool no_ipv6;		    /* policy_set_ipv6(p, false) */
	bool limited;		    /* policy_set_limited(p, true) */
	unsigned int ninspect;	    /* host rules with methods, paths or inspect */
	unsigned int npathrules;    /* rules with paths */
	struct policy_route *route; /* policy_set_upstream(): NULL without one (route.c) */
	unsigned int *exact;	    /* indexes of exact ADDR:PORT allow rules */
	unsigned int nexact, exact_cap;
	struct policy_secret *secrets; /* policy/secret.h: their definitions */
	unsigned int nsecrets;
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
	const char *path;  /* the query's normalised path; NULL when unknown */
	bool tcp_only;	   /* policy_tcp_rule(): allow only through tcp:// rules */
	bool possible;	   /* policy_host_possible() walk */
	bool possible_yes; /* ... an allow rule could match */
	bool possible_no;  /* ... a deny rule without port or methods matches */
	const struct rule *deny;
	const struct rule *allow;
	const struct rule *method; /* allow rules that failed only on the method */
	const struct rule *pathf;  /* ... only on the path */
	bool inspect_deny;	   /* TLS: a deny rule with methods or paths matched */
	bool named[2];		   /* addrs[i] named by an allow address rule */
	bool any_port;		   /* policy_addr_named(): a rule naming it on any port */
	uint16_t *ports;	   /* policy_tcp_ports(): collect allow tcp:// ports */
	int nports, maxports;
	bool host_ports; /* policy_kv_ports(): ... host rules' ports instead */
};

/* FNV-1a leaves its low bits, the ones a mask picks, weakly mixed. */
static inline uint64_t
hash_fin(uint64_t h)
{
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return h ? h : 1;
}

/* FNV-1a over the bytes last to first, so that the hashes of all label
 * suffixes of a name fall out of one pass (see match_names()). */
static inline uint64_t
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
static inline uint64_t
hash_addr(const void *key, size_t len)
{
	uint64_t lo = 0, hi = 0;

	memcpy(&lo, key, len < 8 ? len : 8);
	if (len > 8)
		memcpy(&hi, (const uint8_t *)key + 8, len - 8);
	return hash_fin((lo ^ (hi * 0x9e3779b97f4a7c15ULL)) + len);
}

static inline const struct hslot *
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
static inline void
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

/* htab.c: the tables' growth. */
int htab_grow(struct htab *t);
/* Makes room for one more key, so that the next htab_insert() cannot fail. */
int htab_reserve(struct htab *t);
/* The slot of key, created if new; htab_reserve() first. key must live as
 * long as the table; hash is hash_key() for names, hash_addr() otherwise. */
struct hslot *htab_insert(struct htab *t, const void *key, size_t klen, uint64_t hash);
void htab_free(struct htab *t);

/* hook.c: h copied into one allocation (free() frees it); NULL: no memory. */
struct policy_hooks *hooks_copy(const struct policy_hooks *h);

/* secret.c: p's secret definitions freed. */
void secret_defs_free(struct policy *p);

/* rule.c: one rule's text parsed. */
/* errbuf := the formatted reason; returns -EINVAL. */
int rule_fail(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* policy_host_normalize() with a reason; in need not be NUL-terminated. */
int rule_host_check(const char *in, size_t len, bool pattern, char *out, size_t outlen,
		    char *errbuf, size_t errlen);
/* The bit of an HTTP method as sent (case-sensitive); 0 when unknown. */
uint32_t rule_method_bit(const char *m);
/* Is the last label of a normalised name numeric ("1", "0x7f")? */
bool rule_numeric_tld(const char *name, size_t n);
/* out = the first plen bits of in (n bytes), the rest zero. */
void rule_mask_addr(const uint8_t *in, unsigned int plen, uint8_t *out, size_t n);
/* Is b (16 bytes) ::ffff:a.b.c.d? */
bool rule_is_v4_mapped(const uint8_t *b);
/* Fills r from rule and methods (text and name not yet copied; name gets
 * the normalised host). 0 or -EINVAL with errbuf set. */
int rule_parse(struct rule *r, const char *rule, const char *methods, char *name, char *errbuf,
	       size_t errlen);
/* The paths, inspect and hooks of o for the parsed rule r (an action's):
 * checked; the caller copies them. 0 or -EINVAL. */
int rule_opts_check(const struct rule *r, enum policy_action action,
		    const struct policy_rule_opts *o, char *errbuf, size_t errlen);

/* addr.c: a destination address as judged, with its class. */
void addr_from_sockaddr(struct naddr *a, const struct sockaddr *sa);
/* A host that is an address literal; false when it is none. */
bool addr_from_literal(struct naddr *a, const char *host, size_t n);

#endif /* POLICY_ENGINE_H */
