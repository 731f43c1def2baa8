// SPDX-License-Identifier: Apache-2.0
/* The answers that open the kernel's direct paths (see kpaths.h). Every
 * approval is judged by kpath_allows() with the policy in force: a deny
 * rule on the name or on the address wins, and without --ipv6 the policy
 * denies every IPv6 address. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dns/kpaths.h"
#include "dns/wire.h"
#include "kernel/kpath.h"
#include "lib/clock.h"
#include "lib/sockaddr.h"
#include "policy/policy.h"

#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)                                                 \
	for ((var) = TAILQ_FIRST((head)); (var) && ((tvar) = TAILQ_NEXT((var), field), 1);         \
	     (var) = (tvar))
#endif

struct kpaths_fast {
	TAILQ_ENTRY(kpaths_fast) entry;
	struct sockaddr_storage addr; /* with port */
	uint64_t expires;
	char name[DNS_MAX_NAME + 1]; /* the name it was answered for */
};

void
kpaths_init(struct dns_kpaths *k, bool audit_mode)
{
	memset(k, 0, sizeof(*k));
	k->audit_mode = audit_mode;
	TAILQ_INIT(&k->fast);
}

void
kpaths_free(struct dns_kpaths *k)
{
	struct kpaths_fast *fe;

	while ((fe = TAILQ_FIRST(&k->fast))) {
		TAILQ_REMOVE(&k->fast, fe, entry);
		free(fe);
	}
}

void
kpaths_save(struct dns_kpaths *k, bool put, enum egr_saved_kind kind,
	    const struct sockaddr_storage *addr, uint64_t expires, const char *name)
{
	struct kpath_saved sv = {.kind = kind, .addr = *addr, .expires = expires, .name = name};

	if (!k->kp)
		return;
	if (put)
		k->kp->save(k->kp->arg, &sv);
	else
		k->kp->unsave(k->kp->arg, &sv);
}

/* ---- the fast path ---- */

/* ss approved for name until expires: 1 when listed, 0 when in the kernel
 * only (for its TTL: out of memory), -errno when fast_add failed. */
static int
fast_approve(struct dns_kpaths *k, const struct sockaddr_storage *ss, const char *name,
	     uint64_t expires, uint64_t ttl_ns)
{
	struct kpaths_fast *fe;
	int err = k->kp->fast_add(k->kp->arg, (const struct sockaddr *)ss, name, ttl_ns);

	if (err)
		return err;
	fe = calloc(1, sizeof(*fe));
	if (!fe)
		return 0;
	fe->addr = *ss;
	fe->expires = expires;
	snprintf(fe->name, sizeof(fe->name), "%s", name);
	TAILQ_INSERT_TAIL(&k->fast, fe, entry);
	return 1;
}

/* A name's answers that its tcp:// rules allow, on their ports. */
static void
fast_open(struct dns_kpaths *k, const struct policy *p, const char *name, const struct dns_rr *rrs,
	  int nrr)
{
	uint16_t ports[16];
	int np = policy_tcp_ports(p, name, ports, 16);

	for (int i = 0; i < nrr; i++) {
		struct sockaddr_storage ss;

		if (rrs[i].section != DNS_S_ANSWER || !dns_rr_addr(&rrs[i], &ss))
			continue;
		for (int n = 0; n < np; n++) {
			uint64_t exp = now_s() + rrs[i].ttl;
			int r;

			sockaddr_set_port(&ss, ports[n]);
			if (!kpath_allows(p, &ss, name, POLICY_P_TCP, NULL))
				continue; /* a deny rule on the address wins; IPv6
					   * without --ipv6 is the policy's deny too */
			r = fast_approve(k, &ss, name, exp, (uint64_t)rrs[i].ttl * 1000000000ull);
			if (r < 0)
				continue;
			k->fast_path++;
			if (r > 0)
				kpaths_save(k, true, EGR_SAVED_FAST, &ss, exp, name);
		}
	}
}

/* fe leaves the list: its saved entry goes too, unless another approval of
 * the same target for the same name is still listed (that one is saved) */
static void
fast_forget(struct dns_kpaths *k, struct kpaths_fast *fe)
{
	struct kpaths_fast *o, *keep = NULL;

	TAILQ_FOREACH(o, &k->fast, entry)
	if (o != fe && sockaddr_same(&o->addr, &fe->addr) && !strcmp(o->name, fe->name) &&
	    (!keep || o->expires > keep->expires))
		keep = o;
	if (keep)
		kpaths_save(k, true, EGR_SAVED_FAST, &keep->addr, keep->expires, keep->name);
	else
		kpaths_save(k, false, EGR_SAVED_FAST, &fe->addr, fe->expires, fe->name);
}

/* fe goes: out of the kernel too, unless keep_kernel (another approval
 * still holds the same address and port there). */
static void
fast_remove(struct dns_kpaths *k, struct kpaths_fast *fe, bool keep_kernel)
{
	if (!keep_kernel && k->kp)
		k->kp->fast_del(k->kp->arg, (struct sockaddr *)&fe->addr);
	fast_forget(k, fe);
	TAILQ_REMOVE(&k->fast, fe, entry);
	free(fe);
}

void
kpaths_sweep(struct dns_kpaths *k, uint64_t now)
{
	struct kpaths_fast *fe, *tmp, *o;

	TAILQ_FOREACH_SAFE(fe, &k->fast, entry, tmp)
	{
		bool live = false;

		if (fe->expires > now)
			continue;
		/* a newer approval of the same target may be in the map: only
		 * remove it when no later entry for it is still live */
		TAILQ_FOREACH(o, &k->fast, entry)
		if (o != fe && o->expires > now && sockaddr_same(&o->addr, &fe->addr))
			live = true;
		fast_remove(k, fe, live);
	}
}

static bool
fast_still_allowed(const struct policy *p, const struct kpaths_fast *fe)
{
	uint16_t ports[16], port = sockaddr_port(&fe->addr);
	int np = policy_tcp_ports(p, fe->name, ports, 16);

	for (int n = 0; n < np; n++)
		if (ports[n] == port)
			return kpath_allows(p, &fe->addr, fe->name, POLICY_P_TCP, NULL);
	return false;
}

uint64_t
kpaths_set_policy(struct dns_kpaths *k, const struct policy *p)
{
	struct kpaths_fast *fe, *tmp, *o;
	uint64_t removed = 0;

	if (k->kp && k->kp->kv_add)
		k->kp->kv_clear(k->kp->arg); /* answers after this one open it again */
	TAILQ_FOREACH_SAFE(fe, &k->fast, entry, tmp)
	{
		bool shared = false;

		if (fast_still_allowed(p, fe))
			continue;
		/* the kernel's key is the address and port: another name still
		 * allowed there keeps it */
		TAILQ_FOREACH(o, &k->fast, entry)
		if (o != fe && sockaddr_same(&o->addr, &fe->addr) && fast_still_allowed(p, o))
			shared = true;
		fast_remove(k, fe, shared);
		removed++;
	}
	return removed;
}

int
kpaths_restore_fast(struct dns_kpaths *k, const struct policy *p, const struct kpath_saved *s,
		    uint64_t now)
{
	int r;

	/* the policy's word (without --ipv6 it denies every IPv6 address) */
	if ((s->addr.ss_family != AF_INET && s->addr.ss_family != AF_INET6) || !k->kp ||
	    !kpath_allows(p, &s->addr, s->name, POLICY_P_TCP, NULL))
		return 0;
	r = fast_approve(k, &s->addr, s->name, s->expires, (s->expires - now) * 1000000000ull);
	return r < 0 ? r : r ? 1 : -ENOMEM;
}

/* ---- the kernel-verified path ---- */

/* As what the policy allows a direct connection to ss (IPv4 or IPv6, its
 * port set) for name without the proxy: TLS (a host rule for it, no deny
 * on name or address). Never plain HTTP (EGR_VN_HTTP): the kernel would
 * judge its first request only, and a kept-alive connection's later ones
 * could ask a front end at that address for any site
 * (docs/security-http.md); it keeps the proxy, which judges every
 * request. IPv6 only with --ipv6: the policy denies it otherwise. */
static uint32_t
kv_flags(const struct policy *p, const char *name, const struct sockaddr_storage *ss)
{
	return kpath_allows(p, ss, name, POLICY_P_TLS, NULL) ? EGR_VN_TLS : 0;
}

/* On port 443 where a host rule allows it (policy_kv_ports). Audit mode
 * keeps the proxy, which records everything. */
void
kpaths_kv_open(struct dns_kpaths *k, const struct policy *p, const char *name,
	       const struct dns_rr *rrs, int nrr)
{
	uint16_t ports[16];
	int np;

	if (!k->kp || !k->kp->kv_add || k->audit_mode)
		return;
	np = policy_kv_ports(p, name, ports, 16);
	for (int i = 0; i < nrr && np; i++) {
		struct sockaddr_storage ss;

		if (rrs[i].section != DNS_S_ANSWER || !dns_rr_addr(&rrs[i], &ss))
			continue;
		for (int n = 0; n < np; n++) {
			uint32_t f;

			sockaddr_set_port(&ss, ports[n]);
			f = kv_flags(p, name, &ss);
			if (f && !k->kp->kv_add(k->kp->arg, (const struct sockaddr *)&ss, name, f,
						(uint64_t)rrs[i].ttl * 1000000000ull))
				k->kv_path++;
		}
	}
}

void
kpaths_open(struct dns_kpaths *k, const struct policy *p, const char *name,
	    const struct dns_rr *rrs, int nrr)
{
	if (!k->kp)
		return;
	fast_open(k, p, name, rrs, nrr);
	kpaths_kv_open(k, p, name, rrs, nrr);
}

int
kpaths_kv_restore(struct dns_kpaths *k, const struct policy *p, const struct sockaddr_storage *ss,
		  const char *name, uint64_t ttl_ns)
{
	uint16_t ports[16], port = sockaddr_port(ss);
	int np;

	if (!k->kp || !k->kp->kv_add || k->audit_mode || !ttl_ns ||
	    (ss->ss_family != AF_INET && ss->ss_family != AF_INET6))
		return 0;
	np = policy_kv_ports(p, name, ports, 16);
	for (int n = 0; n < np; n++) {
		uint32_t f;

		if (ports[n] != port)
			continue;
		f = kv_flags(p, name, ss);
		if (!f)
			return 0;
		return k->kp->kv_add(k->kp->arg, (const struct sockaddr *)ss, name, f, ttl_ns) ? -1
											       : 1;
	}
	return 0;
}
