// SPDX-License-Identifier: Apache-2.0
/* Direct connections a policy change no longer allows (see revoke.h): the
 * destinations approved for the fast path and what for, the judgment of
 * each under a new policy, and the revoke pass of kernel/existing.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "confine/revoke.h"
#include "kernel/kpath.h"
#include "kernel/loader.h"
#include "kernel/existing.h"
#include "lib/clock.h"
#include "lib/hash.h"
#include "lib/sockaddr.h"

#define BUCKETS 1024

struct rname {
	char *name;
	uint64_t expires; /* CLOCK_MONOTONIC ns; UINT64_MAX: until removed */
	bool tls;	  /* the kernel-verified path's: judged as TLS by name */
};

struct dest {
	struct dest *next;
	struct egr_fast_key key;
	struct rname names[REVOKE_NAMES]; /* the DNS names answered for it */
	int nnames;
	bool rule; /* an exact-address rule puts it on the fast path now */
	bool seen; /* the last pass left a direct connection to it open */
	/* a run's judgment */
	bool revoke;
	const char *host; /* what it was judged by; NULL: its address */
	struct policy_decision d;
};

struct revoker {
	struct existing *ex;
	struct dest *b[BUCKETS];
	size_t n;
};

struct revoker *
revoker_new(struct existing *ex)
{
	struct revoker *rk = calloc(1, sizeof(*rk));

	if (!rk) {
		existing_free(ex);
		return NULL;
	}
	rk->ex = ex;
	return rk;
}

static void
dest_free(struct dest *d)
{
	for (int i = 0; i < d->nnames; i++)
		free(d->names[i].name);
	free(d);
}

void
revoker_free(struct revoker *rk)
{
	if (!rk)
		return;
	for (int i = 0; i < BUCKETS; i++) {
		struct dest *d, *next;

		for (d = rk->b[i]; d; d = next) {
			next = d->next;
			dest_free(d);
		}
	}
	existing_free(rk->ex);
	free(rk);
}

static unsigned int
bucket(const struct egr_fast_key *k)
{
	return fnv1a(FNV1A_BASIS, k, sizeof(*k)) % BUCKETS;
}

static struct dest *
find(struct revoker *rk, const struct egr_fast_key *k)
{
	for (struct dest *d = rk->b[bucket(k)]; d; d = d->next)
		if (!memcmp(&d->key, k, sizeof(*k)))
			return d;
	return NULL;
}

/* Approved now: by a rule, or by an answer whose TTL has not run out. */
static bool
current(const struct dest *d, uint64_t now)
{
	if (d->rule)
		return true;
	for (int i = 0; i < d->nnames; i++)
		if (d->names[i].expires > now)
			return true;
	return false;
}

/* Frees what no approval and no connection needs (keep: the predicate's
 * own verdict on each); returns how many went. */
static size_t
prune(struct revoker *rk, bool (*keep)(const struct dest *, uint64_t), uint64_t now)
{
	size_t gone = 0;

	for (int i = 0; i < BUCKETS; i++) {
		struct dest **pp = &rk->b[i], *d;

		while ((d = *pp)) {
			if (keep(d, now)) {
				pp = &d->next;
				continue;
			}
			*pp = d->next;
			dest_free(d);
			rk->n--;
			gone++;
		}
	}
	return gone;
}

static bool
keep_needed(const struct dest *d, uint64_t now)
{
	return current(d, now) || d->seen;
}

static bool
keep_current(const struct dest *d, uint64_t now)
{
	return current(d, now);
}

static struct dest *
get(struct revoker *rk, const struct egr_fast_key *k)
{
	struct dest *d = find(rk, k);
	unsigned int h;

	if (d)
		return d;
	/* full: what is approved no more goes first, even if a connection to
	 * it may be open (it then counts as not known) */
	if (rk->n >= REVOKE_DESTS && !prune(rk, keep_current, now_ns()))
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->key = *k;
	h = bucket(k);
	d->next = rk->b[h];
	rk->b[h] = d;
	rk->n++;
	return d;
}

static bool
key_of(const struct sockaddr *sa, struct egr_fast_key *k)
{
	int port;

	memset(k, 0, sizeof(*k));
	port = loader_sockaddr_key(sa, k->addr); /* IPv4 v4-mapped, or IPv6 (--ipv6) */
	if (port < 0)
		return false;
	k->port = (uint16_t)port;
	k->proto = IPPROTO_TCP;
	return true;
}

void
revoker_answered(struct revoker *rk, const struct sockaddr *sa, const char *name, uint64_t ttl_ns,
		 bool tls)
{
	uint64_t exp = ttl_ns ? now_ns() + ttl_ns : UINT64_MAX;
	struct egr_fast_key k;
	struct dest *d;
	int oldest = 0;

	if (!rk || !name || !key_of(sa, &k) || !(d = get(rk, &k)))
		return;
	for (int i = 0; i < d->nnames; i++) {
		if (!strcmp(d->names[i].name, name) && d->names[i].tls == tls) {
			if (exp > d->names[i].expires)
				d->names[i].expires = exp;
			return;
		}
		if (d->names[i].expires < d->names[oldest].expires)
			oldest = i;
	}
	if (d->nnames == REVOKE_NAMES) { /* the one that runs out first goes */
		free(d->names[oldest].name);
		d->names[oldest] = d->names[--d->nnames];
	}
	d->names[d->nnames].name = strdup(name);
	d->names[d->nnames].tls = tls;
	if (d->names[d->nnames].name)
		d->names[d->nnames++].expires = exp;
}

void
revoker_rules(struct revoker *rk, const struct sockaddr_storage *set, int n)
{
	struct egr_fast_key k;
	struct dest *d;

	if (!rk)
		return;
	for (int i = 0; i < BUCKETS; i++)
		for (d = rk->b[i]; d; d = d->next)
			d->rule = false;
	for (int i = 0; i < n; i++) {
		if (!key_of((const struct sockaddr *)&set[i], &k) || !(d = get(rk, &k)))
			continue;
		d->rule = true;
	}
}

/* Would p let a new TCP connection to k through, by its address or, with
 * host, by that name (a tcp:// rule; tls: as TLS for it, a host rule)? */
static bool
allows(const struct policy *p, const struct egr_fast_key *k, const char *host, bool tls,
       struct policy_decision *d)
{
	struct sockaddr_storage ss;

	sockaddr_from_key(k->addr, k->port, &ss);
	return kpath_allows(p, &ss, host, tls ? POLICY_P_TLS : POLICY_P_TCP, d);
}

/* d's verdict under p: revoked unless its address or one of its names is
 * still allowed. */
static void
judge(const struct policy *p, struct dest *d)
{
	struct policy_decision pd;

	d->revoke = false;
	d->host = NULL;
	if (allows(p, &d->key, NULL, false, &d->d))
		return;
	for (int i = 0; i < d->nnames; i++) {
		if (allows(p, &d->key, d->names[i].name, d->names[i].tls, &pd))
			return;
		if (!i || pd.reason == POLICY_R_DENY_RULE) { /* say the name's verdict */
			d->host = d->names[i].name;
			d->d = pd;
		}
	}
	d->revoke = true;
}

static void
conn_key(const struct existing_conn *c, struct egr_fast_key *k)
{
	memset(k, 0, sizeof(*k));
	memcpy(k->addr, c->raddr, sizeof(k->addr));
	k->port = htons(c->rport);
	k->proto = c->protocol;
}

/* A pass over keys[0..n); cb for what it ended; the destinations of the
 * direct connections it left open marked seen (unknown ones, whose
 * address a deny rule names, added to *more when more is not NULL). */
static int
one_pass(struct revoker *rk, const struct policy *p, const struct egr_fast_key *keys, size_t n,
	 revoke_cb cb, void *arg, struct egr_fast_key **more, size_t *nmore,
	 struct revoke_stats *st, char *errbuf, size_t errlen)
{
	struct existing_conn *v = NULL;
	struct existing_stats es = {0};
	size_t nv = 0;
	int err;

	err = existing_revoke(rk->ex, keys, n, &v, &nv, &es, errbuf, errlen);
	st->passes++;
	st->ns += es.total_ns;
	if (err)
		return err;
	for (size_t i = 0; i < nv; i++) {
		struct egr_fast_key k;
		struct policy_decision pd;
		struct dest *d;

		conn_key(&v[i], &k);
		d = find(rk, &k);
		if (v[i].action == EGR_PRE_DIRECT) {
			st->direct++;
			if (d) {
				d->seen = true;
			} else if (more && k.proto == IPPROTO_TCP &&
				   !allows(p, &k, NULL, false, &pd) &&
				   pd.reason == POLICY_R_DENY_RULE) {
				struct egr_fast_key *nk =
					realloc(*more, (*nmore + 1) * sizeof(*nk));

				if (nk) {
					nk[(*nmore)++] = k;
					*more = nk;
				}
			}
			continue;
		}
		st->direct++;
		if (v[i].action == EGR_PRE_REVOKED)
			st->revoked++;
		else
			st->failed++;
		if (d) {
			cb(arg, &v[i], d->host, &d->d);
		} else {
			allows(p, &k, NULL, false, &pd);
			cb(arg, &v[i], NULL, &pd);
		}
	}
	free(v);
	return 0;
}

int
revoker_run(struct revoker *rk, const struct policy *p, revoke_cb cb, void *arg,
	    struct revoke_stats *st, char *errbuf, size_t errlen)
{
	struct egr_fast_key *keys, *more = NULL;
	size_t n = 0, nmore = 0;
	int err;

	memset(st, 0, sizeof(*st));
	keys = calloc(rk->n ? rk->n : 1, sizeof(*keys));
	if (!keys) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < BUCKETS; i++) {
		for (struct dest *d = rk->b[i]; d; d = d->next) {
			judge(p, d);
			if (d->revoke)
				keys[n++] = d->key;
		}
	}
	if (!n && !policy_denies_addresses(p)) {
		/* nothing it knows of is denied, and no rule could deny a direct
		 * connection it does not know by its address: no pass (it would
		 * walk every socket on the event loop for nothing) */
		free(keys);
		st->dests = rk->n;
		return 0;
	}
	for (int i = 0; i < BUCKETS; i++)
		for (struct dest *d = rk->b[i]; d; d = d->next)
			d->seen = false;
	err = one_pass(rk, p, keys, n, cb, arg, &more, &nmore, st, errbuf, errlen);
	if (!err && nmore) /* not known, and a deny rule names the address */
		err = one_pass(rk, p, more, nmore, cb, arg, NULL, NULL, st, errbuf, errlen);
	free(more);
	free(keys);
	if (err) {
		for (int i = 0; i < BUCKETS; i++) /* keep it all for the next change */
			for (struct dest *d = rk->b[i]; d; d = d->next)
				d->seen = true;
		return err;
	}
	prune(rk, keep_needed, now_ns());
	st->dests = rk->n;
	return 0;
}
