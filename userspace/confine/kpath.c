// SPDX-License-Identifier: Apache-2.0
/* A target's kernel paths (kernel/kpath.h) over its loader: the fast path
 * and the kernel-verified path the responder opens (and --ask's fast-path
 * approvals), each told to the revoker with the name it is for; the store
 * of what was learned, kept in the pins for a restarted daemon and taken
 * back by it; and the exact-address rules of the policy on the fast path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "dns/responder.h"
#include "kernel/loader.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "proxy/proxy.h"
#include "confine/core.h"
#include "confine/revoke.h"

/* ---- the store: what the responder learned, kept in the pins (egr_saved) ---- */

static void
saved_key(const struct kpath_saved *s, struct egr_saved_key *k)
{
	int port;

	memset(k, 0, sizeof(*k));
	port = loader_sockaddr_key((const struct sockaddr *)&s->addr, k->addr);
	k->kind = (uint8_t)s->kind;
	if (s->kind == EGR_SAVED_FAST) {
		k->port = port < 0 ? 0 : (uint16_t)port;
		k->name_hash = fnv1a_str(FNV1A_BASIS, s->name);
	}
}

static void
store_put(void *arg, const struct kpath_saved *s)
{
	struct target *t = arg;
	struct egr_saved_key k;
	struct egr_saved_val v = {.expires_s = s->expires};
	int err;

	saved_key(s, &k);
	snprintf(v.name, sizeof(v.name), "%s", s->name);
	err = loader_saved_put(t->ld, &k, &v);
	if (err && !t->saved_warned) {
		log_warnx("%scannot keep what DNS answered for a restart (%s): a restarted "
			  "daemon judges some of these addresses without their names",
			  t->env->label, strerror(-err));
		t->saved_warned = true;
	}
}

static void
store_del(void *arg, const struct kpath_saved *s)
{
	struct target *t = arg;
	struct egr_saved_key k;

	saved_key(s, &k);
	loader_saved_del(t->ld, &k);
}

struct restore_walk {
	struct target *t;
	int kind;		    /* EGR_SAVED_*: this pass's */
	struct egr_saved_key *drop; /* entries the responder did not take back */
	int ndrop, cap, err;
};

static int
restore_one(void *arg, const struct egr_saved_key *k, const struct egr_saved_val *v)
{
	struct restore_walk *w = arg;
	struct kpath_saved s = {.kind = k->kind, .expires = v->expires_s, .name = v->name};
	int r;

	if (k->kind != w->kind)
		return 0;
	sockaddr_from_key(k->addr, k->port, &s.addr);
	r = w->t->dns ? dns_restore(w->t->dns, &s) : 0;
	if (r < 0) {
		w->err = r;
		return 1;
	}
	if (r > 0) {
		if (k->kind == EGR_SAVED_FAST)
			w->t->restored_fast++;
		else
			w->t->restored_names++;
		return 0;
	}
	if (w->ndrop == w->cap) {
		int cap = w->cap ? 2 * w->cap : 64;
		struct egr_saved_key *d = realloc(w->drop, sizeof(*d) * (size_t)cap);

		if (!d)
			return 0; /* kept in the map: the next restart judges it again */
		w->drop = d;
		w->cap = cap;
	}
	w->drop[w->ndrop++] = *k;
	return 0;
}

struct kv_saved {
	struct sockaddr_storage ss;
	uint64_t ttl_ns;
	char name[256];
};

struct kv_walk {
	struct kv_saved *v;
	size_t n, cap;
};

static int
kv_collect(void *arg, const struct sockaddr_storage *ss, const char *name, uint32_t flags,
	   uint64_t ttl_ns)
{
	struct kv_walk *w = arg;

	(void)flags; /* judged again by the policy in force */
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct kv_saved *v = realloc(w->v, sizeof(*v) * cap);

		if (!v)
			return 1; /* the rest are not taken back: DNS answers open them */
		w->v = v;
		w->cap = cap;
	}
	w->v[w->n].ss = *ss;
	w->v[w->n].ttl_ns = ttl_ns;
	snprintf(w->v[w->n].name, sizeof(w->v[w->n].name), "%s", name);
	w->n++;
	return 0;
}

/* A take-over: the kernel-verified approvals of the daemon before, those
 * the policy in force still allows, written again (and told to the
 * revoker, so a later policy change still ends their connections); the
 * rest are gone. */
static void
restore_kv(struct target *t)
{
	struct kv_walk w = {0};

	loader_kv_walk(t->ld, kv_collect, &w);
	loader_kv_clear(t->ld);
	for (size_t i = 0; !t->o->no_kverify && i < w.n; i++)
		if (t->dns && dns_kv_restore(t->dns, &w.v[i].ss, w.v[i].name, w.v[i].ttl_ns) > 0)
			t->restored_kv++;
	free(w.v);
}

/* A restarted daemon: the learned names and fast-path approvals of the one
 * before it, those the policy in force still allows (the rest dropped). The
 * fast path is emptied first, so no approval outlives the judgement; each
 * approval comes back with the name it was answered for, which the
 * revoker learns. */
static int
restore_saved(struct target *t, char *errbuf, size_t errlen)
{
	struct restore_walk w = {.t = t, .kind = EGR_SAVED_NAME};

	loader_fast_clear(t->ld);
	loader_saved_walk(t->ld, restore_one, &w);
	w.kind = EGR_SAVED_FAST;
	loader_saved_walk(t->ld, restore_one, &w);
	for (int i = 0; i < w.ndrop; i++)
		loader_saved_del(t->ld, &w.drop[i]);
	free(w.drop);
	if (w.err) {
		snprintf(errbuf, errlen,
			 "cannot open the fast path again for what DNS answered: %s",
			 strerror(-w.err));
		return w.err;
	}
	return 0;
}

/* ---- the kernel paths (kernel/kpath.h) ---- */

/* The responder's (and --ask's) fast-path approvals; the revoker learns
 * the name each one is for. */
static int
fast_add(void *arg, const struct sockaddr *sa, const char *name, uint64_t ttl_ns)
{
	struct target *t = arg;
	int err = loader_fast_add(t->ld, sa, IPPROTO_TCP, ttl_ns);

	if (!err && t->rk)
		revoker_answered(t->rk, sa, name, ttl_ns, false);
	return err;
}

static int
kv_add(void *arg, const struct sockaddr *sa, const char *name, uint32_t flags, uint64_t ttl_ns)
{
	struct target *t = arg;
	int err = loader_kv_add(t->ld, sa, name, flags, ttl_ns);

	if (!err && t->rk) /* a policy change that denies name ends its connections */
		revoker_answered(t->rk, sa, name, ttl_ns, true);
	return err;
}

static int
kv_clear(void *arg)
{
	struct target *t = arg;

	return loader_kv_clear(t->ld);
}

static int
fast_del(void *arg, const struct sockaddr *sa)
{
	struct target *t = arg;

	return loader_fast_del(t->ld, sa, IPPROTO_TCP);
}

void
target_kpath_open(struct target *t)
{
	t->kp = (struct kpath){
		.fast_add = fast_add,
		.fast_del = fast_del,
		.kv_add = t->o->no_kverify ? NULL : kv_add,
		.kv_clear = kv_clear,
		.save = store_put,
		.unsave = store_del,
		.arg = t,
	};
	if (t->dns)
		dns_set_kpath(t->dns, &t->kp);
	proxy_set_kpath(t->px, &t->kp);
}

int
target_kpath_restore(struct target *t, char *errbuf, size_t errlen)
{
	restore_kv(t);
	return restore_saved(t, errbuf, errlen);
}

/* ---- the exact-address rules on the fast path ---- */

/* The exact-address allow rules of p (the command line's, the policy
 * file's, the runtime ones) that p allows, deny rules weighed: fast-path
 * targets; IPv6 ones with --ipv6 only. */
static int
fast_set(const struct policy *p, bool v6, struct sockaddr_storage *out, int max)
{
	struct sockaddr_storage cand[TARGET_MAX_FAST];
	int n = policy_exact_addrs(p, cand, TARGET_MAX_FAST, v6), k = 0;

	for (int i = 0; i < n && k < max; i++)
		if (kpath_allows(p, &cand[i], NULL, POLICY_P_TCP, NULL))
			out[k++] = cand[i];
	return k;
}

static bool
in_set(const struct sockaddr_storage *set, int n, const struct sockaddr_storage *ss)
{
	for (int i = 0; i < n; i++)
		if (sockaddr_same(&set[i], ss))
			return true;
	return false;
}

bool
target_fast_rule(const struct policy *p, bool v6, const struct sockaddr *sa)
{
	struct sockaddr_storage set[TARGET_MAX_FAST], ss;
	int n = fast_set(p, v6, set, TARGET_MAX_FAST);

	if (!sockaddr_store(sa, &ss))
		return false;
	return in_set(set, n, &ss);
}

/* The ports the rules name into egr_ports, enforced where that proves
 * something: not in audit mode (nothing is refused) nor with --ask (any
 * destination may be approved on the terminal). */
static int
sync_ports(struct target *t, char *errbuf, size_t errlen)
{
	static uint64_t bits[1024];
	bool enforce = policy_allow_port_bits(t->policy, bits) && !t->o->audit && !t->env->ask.ask;
	int err = loader_set_ports(t->ld, bits, enforce);

	if (err)
		snprintf(errbuf, errlen, "cannot set the ports the rules name: %s", strerror(-err));
	return err;
}

/* Of the policy's IPv4 network allow rules that no deny rule overlaps
 * (policy_allow_nets4), those t->o->direct_nets names. */
static int
direct_nets(const struct target *t, uint32_t *net, uint8_t *len, int max)
{
	int n = policy_allow_nets4(t->policy, net, len, max), k = 0;

	for (int i = 0; i < n; i++) {
		bool named = false;

		for (int j = 0; j < t->o->ndirect_nets && !named; j++) {
			char a[INET_ADDRSTRLEN];
			const char *s = t->o->direct_nets[j], *slash = strchr(s, '/');
			struct in_addr x;

			if (!slash || (size_t)(slash - s) >= sizeof(a))
				continue;
			memcpy(a, s, (size_t)(slash - s));
			a[slash - s] = 0;
			named = inet_pton(AF_INET, a, &x) == 1 && x.s_addr == net[i] &&
				atoi(slash + 1) == len[i];
		}
		if (named) {
			net[k] = net[i];
			len[k++] = len[i];
		}
	}
	return k;
}

int
target_kpath_sync_rules(struct target *t, char *errbuf, size_t errlen)
{
	struct sockaddr_storage want[TARGET_MAX_FAST];
	int n = fast_set(t->policy, t->o->ipv6, want, TARGET_MAX_FAST), err;

	for (int i = 0; i < t->nfast; i++)
		if (!in_set(want, n, &t->fast[i]))
			loader_fast_del(t->ld, (struct sockaddr *)&t->fast[i], IPPROTO_TCP);
	for (int i = 0; i < n; i++) {
		err = loader_fast_add(t->ld, (struct sockaddr *)&want[i], IPPROTO_TCP, 0);
		if (err) {
			char a[INET6_ADDRSTRLEN + 8];

			sockaddr_format((struct sockaddr *)&want[i], a, sizeof(a));
			snprintf(errbuf, errlen, "cannot open the fast path for %s: %s", a,
				 strerror(-err));
			return err;
		}
	}
	memcpy(t->fast, want, sizeof(want[0]) * (size_t)n);
	t->nfast = n;
	revoker_rules(t->rk, t->fast, t->nfast);
	if (t->o->ndirect_nets) {
		uint32_t net[EGR_FAST_NET_MAX];
		uint8_t len[EGR_FAST_NET_MAX];
		int k = direct_nets(t, net, len, EGR_FAST_NET_MAX);

		err = loader_fast_nets_sync(t->ld, net, len, k);
		if (err) {
			snprintf(errbuf, errlen, "cannot open the fast path to its networks: %s",
				 strerror(-err));
			return err;
		}
	}
	return sync_ports(t, errbuf, errlen);
}
