// SPDX-License-Identifier: Apache-2.0
/* What a query becomes (see core.h): judged by name (policy_host_judge; a
 * name no rule could allow is refused without a query leaving the machine,
 * or with --ask put to the terminal), answered from the cache, joined to
 * an identical query already on its way, or sent upstream with c-ares'
 * raw-message interface. Upstream answers are rebuilt record by record
 * (dns/wire.c), never passed through as bytes: local addresses stripped
 * unless a rule names them, AAAA emptied while IPv6 is denied, TTLs
 * bounded; their addresses are learned (address -> name, for the
 * transparent listener) and open the kernel paths (kpaths.c) before the
 * answer is released. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "audit/audit.h"
#include "dns/core.h"
#include "dns/resolver.h"
#include "kernel/kpath.h"
#include "lib/clock.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "policy/policy.h"
#include "policy/secret.h"

#define CACHE_MAX     4096
#define LEARN_MAX     EGR_SAVED_NAMES /* egr_saved has room for them */
#define LEARN_GRACE_S 60	      /* connections often follow an answer a little late */
#define NEG_TTL_S     30	      /* negative answers without SOA */

static uint32_t
hash_str(const char *s, uint32_t seed)
{
	return fnv1a_str(FNV1A_BASIS ^ seed, s);
}

static uint32_t
hash_addr(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return fnv1a(FNV1A_BASIS, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	return fnv1a(FNV1A_BASIS, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

void
dns_reply_rcode(struct dns_server *d, struct waiter *w, int rcode)
{
	uint8_t buf[1024];
	int n;

	n = dns_build_response(&w->q, rcode, NULL, 0, w->tcp ? 65535 : sizeof(buf), buf,
			       sizeof(buf));
	w->send(d, w, buf, n);
}

void
dns_reply_rrs(struct dns_server *d, struct waiter *w, int rcode, const struct dns_rr *rrs, int nrr)
{
	static uint8_t buf[65535];
	size_t max = w->tcp ? sizeof(buf) : dns_udp_max(&w->q);
	int n;

	n = dns_build_response(&w->q, rcode, rrs, nrr, max, buf, sizeof(buf));
	if (n < 0) {
		dns_reply_rcode(d, w, DNS_R_SERVFAIL);
		return;
	}
	w->send(d, w, buf, n);
}

/* Logs a decision; returns true when the query may go on (allowed, or
 * denied by the policy in audit mode, where the denial is only recorded).
 * policy: the name's rules decided (a denial suggests allowing the name);
 * false for what no name rule changes (ANY, local answers). */
static bool
log_decision_secret(struct dns_server *d, const struct egr_conn_val *who, const char *name,
		    bool allow, bool policy, const char *reason, const char *secret)
{
	struct audit_rec r = {0};
	char comm[17], safe[DNS_MAX_NAME + 1];
	bool audit = policy && d->o.audit_mode;

	policy_safe_comm(who->comm, comm);
	policy_safe_str(name, SIZE_MAX, safe, sizeof(safe));

	r.decision = allow ? "allow" : audit ? "would-deny" : "deny";
	r.reason = reason;
	r.source = "dns";
	r.host = name;
	r.pid = who->tgid;
	r.comm = comm;
	r.cgroup = who->cgroup_id;
	r.dest = safe;
	r.suggest = allow || !policy ? NULL : safe; /* no rule of a name would allow it */
	r.secret = secret;
	audit_write(d->o.audit, &r);
	return allow || audit;
}

static bool
log_decision(struct dns_server *d, const struct egr_conn_val *who, const char *name, bool allow,
	     bool policy, const char *reason)
{
	return log_decision_secret(d, who, name, allow, policy, reason, NULL);
}

static struct cache_entry *
cache_find(struct dns_server *d, const char *name, uint16_t qtype)
{
	struct cache_bucket *b = &d->cache[hash_str(name, qtype) % CACHE_BUCKETS];
	struct cache_entry *e, *tmp;
	uint64_t now = now_s();

	LIST_FOREACH_SAFE(e, b, entry, tmp)
	{
		if (e->expires <= now) {
			LIST_REMOVE(e, entry);
			free(e->rrs);
			free(e);
			d->ncache--;
			continue;
		}
		if (e->qtype == qtype && !strcmp(e->name, name))
			return e;
	}
	return NULL;
}

static void
cache_clear(struct dns_server *d)
{
	for (int i = 0; i < CACHE_BUCKETS; i++) {
		struct cache_entry *e;

		while ((e = LIST_FIRST(&d->cache[i]))) {
			LIST_REMOVE(e, entry);
			free(e->rrs);
			free(e);
		}
	}
	d->ncache = 0;
}

static void
cache_store(struct dns_server *d, const char *name, uint16_t qtype, int rcode,
	    const struct dns_rr *rrs, int nrr, uint32_t ttl)
{
	struct cache_entry *e;

	if (d->ncache >= CACHE_MAX)
		cache_clear(d); /* crude, bounded; the upstream answers again */
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	if (nrr) {
		e->rrs = malloc(sizeof(*rrs) * (size_t)nrr);
		if (!e->rrs) {
			free(e);
			return;
		}
		memcpy(e->rrs, rrs, sizeof(*rrs) * (size_t)nrr);
	}
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->qtype = qtype;
	e->rcode = rcode;
	e->nrr = nrr;
	e->stored = now_s();
	e->expires = e->stored + ttl;
	LIST_INSERT_HEAD(&d->cache[hash_str(name, qtype) % CACHE_BUCKETS], e, entry);
	d->ncache++;
}

/* addr learned for name until exp (now_s() seconds) */
static bool
learn_until(struct dns_server *d, const struct sockaddr_storage *addr, const char *name,
	    uint64_t exp)
{
	struct learn_bucket *b = &d->learn[hash_addr(addr) % LEARN_BUCKETS];
	struct learned *l;

	LIST_FOREACH(l, b, entry)
	{
		if (sockaddr_same_ip(&l->addr, addr)) {
			snprintf(l->name, sizeof(l->name), "%s", name);
			l->expires = exp;
			return true;
		}
	}
	if (d->nlearn >= LEARN_MAX)
		return false; /* full: the transparent path falls back to the address */
	l = calloc(1, sizeof(*l));
	if (!l)
		return false;
	l->addr = *addr;
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->expires = exp;
	LIST_INSERT_HEAD(b, l, entry);
	d->nlearn++;
	return true;
}

static void
learn(struct dns_server *d, const struct sockaddr_storage *addr, const char *name, uint32_t ttl)
{
	uint64_t exp = now_s() + ttl + LEARN_GRACE_S;

	if (learn_until(d, addr, name, exp))
		kpaths_save(&d->paths, true, EGR_SAVED_NAME, addr, exp, name);
}

const char *
dns_learned_name(const struct dns_server *d, const struct sockaddr *sa)
{
	struct sockaddr_storage key;
	const struct learned *l;
	uint64_t now = now_s();

	if (!d || !sockaddr_store(sa, &key))
		return NULL;
	LIST_FOREACH(l, &d->learn[hash_addr(&key) % LEARN_BUCKETS], entry)
	if (sockaddr_same_ip(&l->addr, &key) && l->expires > now)
		return l->name;
	return NULL;
}

int
dns_kv_restore(struct dns_server *d, const struct sockaddr_storage *ss, const char *name,
	       uint64_t ttl_ns)
{
	return kpaths_kv_restore(&d->paths, d->o.policy, ss, name, ttl_ns);
}

void
dns_answer_set_policy(struct dns_server *d, const struct policy *p, uint64_t *fast, uint64_t *names)
{
	struct learned *l, *ltmp;

	*names = 0;
	cache_clear(d); /* answers were filtered by the old policy */
	*fast = kpaths_set_policy(&d->paths, p);
	for (int i = 0; i < LEARN_BUCKETS; i++)
		LIST_FOREACH_SAFE(l, &d->learn[i], entry, ltmp)
		{
			if (policy_host_possible(p, l->name))
				continue;
			kpaths_save(&d->paths, false, EGR_SAVED_NAME, &l->addr, l->expires,
				    l->name);
			LIST_REMOVE(l, entry);
			free(l);
			d->nlearn--;
			(*names)++;
		}
}

/* Keeps what a sandbox may see of an upstream answer; bounds the TTLs.
 * Returns the number kept in out; *min_ttl the smallest TTL kept; *local
 * how many local addresses were stripped, *addrs how many addresses kept. */
static int
filter_answer(struct dns_server *d, const struct dns_msg *m, struct dns_rr *out, uint32_t *min_ttl,
	      int *local, int *addrs)
{
	int n = 0;

	*min_ttl = d->o.ttl_max;
	for (int i = 0; i < m->nrr; i++) {
		const struct dns_rr *rr = &m->rr[i];

		if (rr->section == DNS_S_ADDITIONAL)
			continue; /* glue is not ours to hand out */
		if (rr->type == DNS_T_AAAA && !d->o.audit_mode && !d->o.ipv6)
			continue; /* IPv6 is denied: no address the client could use */
		if ((rr->type == DNS_T_A || rr->type == DNS_T_AAAA) &&
		    rr->section == DNS_S_ANSWER) {
			struct sockaddr_storage ss;

			if (!dns_rr_addr(rr, &ss))
				continue;
			/* DNS rebinding: local addresses only where a rule names them
			 * (IPv4 carried in IPv6, DNS64's too, is never public) */
			if (addr_classify((struct sockaddr *)&ss) != ADDR_PUBLIC &&
			    !policy_addr_named(d->o.policy, (struct sockaddr *)&ss) &&
			    !d->o.audit_mode) {
				(*local)++;
				continue;
			}
			(*addrs)++;
		}
		out[n] = *rr;
		if ((rr->type == DNS_T_HTTPS || rr->type == DNS_T_SVCB) &&
		    dns_svcb_strip_ech(out[n].rdata, &out[n].rdlen))
			d->st.ech++; /* the kernel-verified path reads the real name */
		if (out[n].ttl > d->o.ttl_max)
			out[n].ttl = d->o.ttl_max;
		if (out[n].ttl < d->o.ttl_min)
			out[n].ttl = d->o.ttl_min;
		if (out[n].ttl < *min_ttl)
			*min_ttl = out[n].ttl;
		n++;
	}
	return n;
}

static void
finish_inflight(struct inflight *f, int rcode, const struct dns_rr *rrs, int nrr)
{
	struct dns_server *d = f->d;
	struct waiter *w;

	while ((w = TAILQ_FIRST(&f->waiters))) {
		TAILQ_REMOVE(&f->waiters, w, entry);
		if (rcode == DNS_R_SERVFAIL && !nrr)
			dns_reply_rcode(d, w, DNS_R_SERVFAIL);
		else
			dns_reply_rrs(d, w, rcode, rrs, nrr);
		free(w);
	}
	LIST_REMOVE(f, entry);
	free(f);
}

static void
on_upstream(int status, const unsigned char *answer, int alen, void *arg)
{
	struct inflight *f = arg;
	struct dns_server *d = f->d;
	struct dns_msg *m;
	struct dns_rr *kept;
	uint32_t min_ttl;
	int n, rcode, local = 0, addrs = 0;

	f->rq = NULL;
	if (!d->up_msg)
		d->up_msg = malloc(sizeof(*d->up_msg));
	if (!d->up_kept)
		d->up_kept = malloc(sizeof(*d->up_kept) * DNS_MAX_RRS);
	m = d->up_msg;
	kept = d->up_kept;
	if (status || !m || !kept || dns_parse_response(answer, (size_t)alen, m) ||
	    strcasecmp(m->q.name, f->name) || m->q.qtype != f->qtype) {
		d->st.servfail++;
		log_info("dns: %s: no usable answer from upstream (%s)", f->name,
			 status ? strerror(-status) : "malformed");
		finish_inflight(f, DNS_R_SERVFAIL, NULL, 0);
		return;
	}
	rcode = m->rcode;
	if (rcode != DNS_R_NOERROR && rcode != DNS_R_NXDOMAIN) {
		finish_inflight(f, DNS_R_SERVFAIL, NULL, 0);
		return;
	}
	n = filter_answer(d, m, kept, &min_ttl, &local, &addrs);
	/* an allowed name that resolves only to local addresses (DNS
	 * rebinding) gets no address: said once, for the first asker */
	if (local && !addrs && !TAILQ_EMPTY(&f->waiters))
		log_decision(d, &TAILQ_FIRST(&f->waiters)->who, f->name, false, false,
			     "resolves only to local or private addresses");
	for (int i = 0; i < n; i++) {
		struct sockaddr_storage ss;

		if (kept[i].section == DNS_S_ANSWER && dns_rr_addr(&kept[i], &ss))
			learn(d, &ss, f->name, kept[i].ttl);
	}
	/* the fast path opens before the answer is released, so the client's
	 * first connect already goes direct */
	kpaths_open(&d->paths, d->o.policy, f->name, kept, n);
	cache_store(d, f->name, f->qtype, rcode, kept, n, n ? min_ttl : NEG_TTL_S);
	finish_inflight(f, rcode, kept, n);
}

static void
answer_from_cache(struct dns_server *d, struct waiter *w, struct cache_entry *e)
{
	struct dns_rr *rrs = NULL;
	uint64_t age = now_s() - e->stored;

	if (e->nrr) {
		rrs = malloc(sizeof(*rrs) * (size_t)e->nrr);
		if (!rrs) {
			dns_reply_rcode(d, w, DNS_R_SERVFAIL);
			return;
		}
		memcpy(rrs, e->rrs, sizeof(*rrs) * (size_t)e->nrr);
		for (int i = 0; i < e->nrr; i++)
			rrs[i].ttl = rrs[i].ttl > age ? rrs[i].ttl - (uint32_t)age : 1;
	}
	d->st.cached++;
	/* an entry the kernel's LRU may have dropped, or a new policy cleared */
	kpaths_kv_open(&d->paths, d->o.policy, e->name, rrs, e->nrr);
	dns_reply_rrs(d, w, e->rcode, rrs, e->nrr);
	free(rrs);
}

static void resolve_query(struct dns_server *d, struct waiter *w, const char *norm);

static void
on_name_answer(void *arg, enum ask_answer a)
{
	struct dns_ask *k = arg;
	struct dns_server *d = k->d;
	struct waiter *w = k->w;
	char err[256];

	LIST_REMOVE(k, entry);
	if (a == ASK_ALWAYS &&
	    policy_add(d->o.policy_rw, POLICY_ALLOW, k->name, NULL, "--ask", err, sizeof(err)))
		a = ASK_ONCE; /* not a rule (cannot happen for a normalised name) */
	if (a == ASK_NO) {
		log_decision(d, &w->who, k->name, false, true, "no rule allows this name");
		d->st.refused++;
		dns_reply_rcode(d, w, DNS_R_REFUSED);
		free(w);
	} else {
		log_decision(d, &w->who, k->name, true, true,
			     a == ASK_ALWAYS ? "approved on the terminal for this run"
					     : "approved once on the terminal");
		resolve_query(d, w, k->name);
	}
	free(k);
}

static void
ask_name(struct dns_server *d, struct waiter *w, const char *norm)
{
	struct dns_ask *k;
	char comm[17], question[400];

	if (w->q.qtype == DNS_T_AAAA) {
		/* one question per name: the A query asks it; an AAAA query
		 * (IPv6 denied, or --ipv6 before an "always" made it a rule)
		 * gets an empty answer, so clients use the A answer */
		dns_reply_rrs(d, w, DNS_R_NOERROR, NULL, 0);
		free(w);
		return;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		dns_reply_rcode(d, w, DNS_R_SERVFAIL);
		free(w);
		return;
	}
	policy_safe_comm(w->who.comm, comm);
	snprintf(question, sizeof(question), "allow the name %s (DNS) for %s[%u]", norm, comm,
		 w->who.tgid);
	k->d = d;
	k->w = w;
	snprintf(k->name, sizeof(k->name), "%s", norm);
	LIST_INSERT_HEAD(&d->asks, k, entry);
	k->req = d->o.ask.ask(d->o.ask.arg, question, on_name_answer, k);
	if (!k->req) {
		LIST_REMOVE(k, entry);
		free(k);
		dns_reply_rcode(d, w, DNS_R_SERVFAIL);
		free(w);
	}
}

/* A name local_name knows for the asker's network namespace: answered
 * here, its addresses of the type asked (none: NOERROR without any), with
 * a short TTL (a container may go). true when answered (w freed). */
#define LOCAL_MAX   8
#define LOCAL_TTL_S 5
static bool
local_answer(struct dns_server *d, struct waiter *w, const char *norm)
{
	uint16_t qt = w->q.qtype;
	int af = qt == DNS_T_AAAA ? AF_INET6 : AF_INET, n;
	uint8_t addr[LOCAL_MAX][16];
	struct dns_rr rr[LOCAL_MAX];

	n = d->o.local_name(d->o.local_arg, w->who.netns, norm, af, addr, LOCAL_MAX);
	if (n < 0)
		return false;
	if (qt != DNS_T_A && qt != DNS_T_AAAA)
		n = 0;
	if (n > LOCAL_MAX)
		n = LOCAL_MAX;
	for (int i = 0; i < n; i++) {
		memset(&rr[i], 0, sizeof(rr[i]));
		rr[i].section = DNS_S_ANSWER;
		snprintf(rr[i].name, sizeof(rr[i].name), "%s", norm);
		rr[i].type = qt;
		rr[i].rclass = DNS_C_IN;
		rr[i].ttl = LOCAL_TTL_S;
		rr[i].rdlen = af == AF_INET ? 4 : 16;
		memcpy(rr[i].rdata, addr[i], rr[i].rdlen);
	}
	log_decision(d, &w->who, norm, true, false,
		     "a container of the job's on a docker network the asker is on");
	dns_reply_rrs(d, w, DNS_R_NOERROR, rr, n);
	free(w);
	return true;
}

/* A denied name whose first label is a local name (local_answer) there:
 * "db.corp.example" for "db" under a resolver's search domain. NXDOMAIN
 * rather than REFUSED, as docker's DNS would have it answered upstream:
 * musl's resolver gives up at a refusal and never asks for "db". */
static bool
local_under_search(struct dns_server *d, const struct waiter *w, const char *norm)
{
	char first[DNS_MAX_NAME + 1];
	const char *dot = strchr(norm, '.');
	uint8_t addr[1][16];

	if (!d->o.local_name || !w->who.netns || !dot || (size_t)(dot - norm) >= sizeof(first))
		return false;
	memcpy(first, norm, (size_t)(dot - norm));
	first[dot - norm] = 0;
	return d->o.local_name(d->o.local_arg, w->who.netns, first, AF_INET, addr, 1) >= 0;
}

/* Takes ownership of w. */
void
dns_answer(struct dns_server *d, struct waiter *w)
{
	char norm[DNS_MAX_NAME + 1];
	bool denied;

	d->st.queries++;
	if (w->q.qclass != DNS_C_IN || w->q.qtype == DNS_T_ANY) {
		/* refused in audit mode too: no policy could want ANY (RFC 8482) */
		log_decision(d, &w->who, w->q.name, false, false,
			     w->q.qtype == DNS_T_ANY ? "ANY queries refused" : "class not IN");
		d->st.refused++;
		dns_reply_rcode(d, w, DNS_R_REFUSED);
		free(w);
		return;
	}
	if (secrets_count(d->o.secrets)) {
		/* a secret's placeholder in a name: never a place for one, in
		 * audit mode neither */
		int i = secrets_find(d->o.secrets, NULL, w->q.name, strlen(w->q.name));

		if (i >= 0) {
			char why[160];

			secrets_note(d->o.secrets, (unsigned int)i, true);
			snprintf(why, sizeof(why),
				 "the placeholder of secret %s, which may not go there: an "
				 "exfiltration attempt",
				 secrets_name(d->o.secrets, (unsigned int)i));
			log_decision_secret(d, &w->who, w->q.name, false, false, why,
					    secrets_name(d->o.secrets, (unsigned int)i));
			d->st.refused++;
			dns_reply_rcode(d, w, DNS_R_REFUSED);
			free(w);
			return;
		}
	}
	if (policy_host_normalize(w->q.name, false, norm, sizeof(norm))) {
		d->st.refused++;
		dns_reply_rcode(d, w, DNS_R_REFUSED); /* not a host name: nothing to resolve */
		free(w);
		return;
	}
	if (d->o.local_name && w->who.netns && local_answer(d, w, norm))
		return;
	if (!policy_host_judge(d->o.policy, norm, &denied)) {
		if (!d->o.audit_mode && local_under_search(d, w, norm)) {
			log_decision(d, &w->who, norm, false, false,
				     "a container's name under a search domain: NXDOMAIN, so "
				     "that the resolver asks for the name alone");
			d->st.refused++;
			dns_reply_rcode(d, w, DNS_R_NXDOMAIN);
			free(w);
			return;
		}
		/* a deny rule is never asked about */
		if (d->o.ask.ask && !d->o.audit_mode && !denied) {
			ask_name(d, w, norm);
			return;
		}
		/* nothing leaves the machine for a name no rule could allow */
		if (!log_decision(d, &w->who, norm, false, true,
				  denied ? "a deny rule matches this name"
					 : "no rule allows this name")) {
			d->st.refused++;
			dns_reply_rcode(d, w, DNS_R_REFUSED);
			free(w);
			return;
		}
	} else {
		log_decision(d, &w->who, norm, true, true, "name may be allowed");
	}
	resolve_query(d, w, norm);
}

/* The allowed part of dns_answer(): answer from the cache, join a query
 * in flight, or ask upstream. Takes ownership of w. */
static void
resolve_query(struct dns_server *d, struct waiter *w, const char *norm)
{
	struct cache_entry *e;
	struct inflight *f;
	uint8_t qbuf[600];
	int qlen;

	d->st.answered++;
	if (w->q.qtype == DNS_T_AAAA && !d->o.audit_mode && !d->o.ipv6) {
		/* IPv6 is denied: an empty answer, so clients move on to A */
		dns_reply_rrs(d, w, DNS_R_NOERROR, NULL, 0);
		free(w);
		return;
	}
	e = cache_find(d, norm, w->q.qtype);
	if (e) {
		answer_from_cache(d, w, e);
		free(w);
		return;
	}
	LIST_FOREACH(f, &d->inflight, entry)
	{
		if (f->qtype == w->q.qtype && !strcmp(f->name, norm)) {
			TAILQ_INSERT_TAIL(&f->waiters, w, entry);
			return;
		}
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		dns_reply_rcode(d, w, DNS_R_SERVFAIL);
		free(w);
		return;
	}
	f->d = d;
	snprintf(f->name, sizeof(f->name), "%s", norm);
	f->qtype = w->q.qtype;
	TAILQ_INIT(&f->waiters);
	TAILQ_INSERT_TAIL(&f->waiters, w, entry);
	LIST_INSERT_HEAD(&d->inflight, f, entry);
	{
		struct dns_query uq = w->q;

		snprintf(uq.name, sizeof(uq.name), "%s", norm);
		uq.id = 0; /* whoever sends it sets its own random id (csock, c-ares) */
		uq.edns = true;
		uq.edns_do = false;
		qlen = dns_build_query(&uq, qbuf, sizeof(qbuf));
	}
	d->st.upstream++;
	if (qlen < 0 || !(f->rq = resolver_send(d->o.res, qbuf, (size_t)qlen, on_upstream, f)))
		finish_inflight(f, DNS_R_SERVFAIL, NULL, 0);
}

int
dns_restore(struct dns_server *d, const struct kpath_saved *s)
{
	uint64_t now = now_s();

	if (s->expires <= now || !s->name[0] || strlen(s->name) > DNS_MAX_NAME)
		return 0;
	if (s->kind == EGR_SAVED_FAST)
		return kpaths_restore_fast(&d->paths, d->o.policy, s, now);
	if (s->kind != EGR_SAVED_NAME || !policy_host_possible(d->o.policy, s->name))
		return 0;
	return learn_until(d, &s->addr, s->name, s->expires) ? 1 : 0;
}

void
dns_answer_forget_client(struct dns_server *d, const struct tcp_client *tc)
{
	struct inflight *f;

	/* answers still on their way must not reach a freed client */
	LIST_FOREACH(f, &d->inflight, entry)
	{
		struct waiter *w, *tmp;

		TAILQ_FOREACH_SAFE(w, &f->waiters, entry, tmp)
		{
			if (w->tcp == tc) {
				TAILQ_REMOVE(&f->waiters, w, entry);
				free(w);
			}
		}
	}
	{
		struct dns_ask *k, *tmp;

		LIST_FOREACH_SAFE(k, &d->asks, entry, tmp)
		{
			if (k->w->tcp != tc)
				continue;
			d->o.ask.cancel(k->req);
			LIST_REMOVE(k, entry);
			free(k->w);
			free(k);
		}
	}
}

void
dns_answer_free(struct dns_server *d)
{
	struct inflight *f;

	while ((f = LIST_FIRST(&d->inflight))) {
		struct waiter *w;

		resolver_cancel(f->rq);
		while ((w = TAILQ_FIRST(&f->waiters))) {
			TAILQ_REMOVE(&f->waiters, w, entry);
			free(w);
		}
		LIST_REMOVE(f, entry);
		free(f);
	}
	while (!LIST_EMPTY(&d->asks)) {
		struct dns_ask *k = LIST_FIRST(&d->asks);

		d->o.ask.cancel(k->req);
		LIST_REMOVE(k, entry);
		free(k->w);
		free(k);
	}
	cache_clear(d);
	free(d->up_msg);
	free(d->up_kept);
	d->up_msg = NULL;
	d->up_kept = NULL;
	for (int i = 0; i < LEARN_BUCKETS; i++) {
		struct learned *l;

		while ((l = LIST_FIRST(&d->learn[i]))) {
			LIST_REMOVE(l, entry);
			free(l);
		}
	}
}
