// SPDX-License-Identifier: Apache-2.0
/* The DNS responder (see dns/responder.h). One UDP socket and one TCP listener on the
 * same 127.0.0.1 port; queries are attributed through the BPF index, judged
 * by name (policy_host_possible), answered from the cache, joined to an
 * identical query already on its way, or sent upstream with c-ares'
 * raw-message interface. Upstream answers are rebuilt record by record
 * (dns/wire.c), never passed through as bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/queue.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "audit/audit.h"
#include "dns/kpaths.h"
#include "dns/resolver.h"
#include "dns/responder.h"
#include "dns/wire.h"
#include "kernel/kpath.h"
#include "kernel/loader.h"
#include "lib/clock.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "policy/policy.h"

/* glibc's sys/queue.h lacks the _SAFE iterators (the BSDs have them) */
#ifndef LIST_FOREACH_SAFE
#define LIST_FOREACH_SAFE(var, head, field, tvar)                                                  \
	for ((var) = LIST_FIRST((head)); (var) && ((tvar) = LIST_NEXT((var), field), 1);           \
	     (var) = (tvar))
#endif
#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)                                                 \
	for ((var) = TAILQ_FIRST((head)); (var) && ((tvar) = TAILQ_NEXT((var), field), 1);         \
	     (var) = (tvar))
#endif

#define CACHE_BUCKETS 1024
#define CACHE_MAX     4096
#define LEARN_BUCKETS 1024
#define LEARN_MAX     16384
#define LEARN_GRACE_S 60 /* connections often follow an answer a little late */
#define NEG_TTL_S     30 /* negative answers without SOA */
#define FAST_SWEEP_S  1

struct waiter {
	TAILQ_ENTRY(waiter) entry;
	struct dns_query q;
	struct sockaddr_storage from; /* UDP client */
	int ufd;		      /* ... and the socket it wrote to */
	struct tcp_client *tcp;	      /* or a TCP client (NULL for UDP) */
	struct egr_conn_val who;
};
TAILQ_HEAD(waiter_list, waiter);

/* An upstream query in flight; identical queries join it. */
struct inflight {
	LIST_ENTRY(inflight) entry;
	struct dns_server *d;
	char name[DNS_MAX_NAME + 1];
	uint16_t qtype;
	struct resolve_req *rq;
	struct waiter_list waiters;
};

struct cache_entry {
	LIST_ENTRY(cache_entry) entry;
	char name[DNS_MAX_NAME + 1];
	uint16_t qtype;
	int rcode;
	uint64_t expires; /* monotonic seconds */
	uint64_t stored;  /* when it was stored, to age TTLs */
	int nrr;
	struct dns_rr *rrs;
};
LIST_HEAD(cache_bucket, cache_entry);

struct learned {
	LIST_ENTRY(learned) entry;
	struct sockaddr_storage addr;
	char name[DNS_MAX_NAME + 1];
	uint64_t expires;
};
LIST_HEAD(learn_bucket, learned);

struct tcp_client {
	LIST_ENTRY(tcp_client) entry;
	struct dns_server *d;
	int fd;
	struct event rev, wev, timer;
	struct egr_conn_val who;
	uint8_t in[2 + 65535];
	size_t inlen;
	uint8_t *out;
	size_t outlen, outoff;
	int pending; /* waiters not yet answered */
	bool closing;
	bool in_read; /* inside on_tcp_read: failures mark dead, freed there */
	bool dead;
};

struct dns_server {
	struct event_base *base;
	struct dns_opts o;
	int conns_fd;
	int ufd, tfd;
	int ufd_ns, tfd_ns; /* on o.ns_ip4 (containers); -1: none */
	uint16_t port;
	struct event *uev, *tev, *sweep, *uev_ns, *tev_ns;
	LIST_HEAD(, inflight) inflight;
	struct cache_bucket cache[CACHE_BUCKETS];
	int ncache;
	struct learn_bucket learn[LEARN_BUCKETS];
	int nlearn;
	struct dns_kpaths paths; /* the answers' kernel paths (kpaths.c) */
	LIST_HEAD(, tcp_client) tcp;
	LIST_HEAD(, dns_ask) asks; /* questions on the terminal (--ask) */
	int ntcp;
	struct dns_stats st;
};

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

/* ---- decisions ---- */

/* Logs a decision; returns true when the query may go on (allowed, or
 * denied by the policy in audit mode, where the denial is only recorded).
 * policy: the name's rules decided (a denial suggests allowing the name);
 * false for what no name rule changes (ANY, local answers). */
static bool
log_decision(struct dns_server *d, const struct egr_conn_val *who, const char *name, bool allow,
	     bool policy, const char *reason)
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
	audit_write(d->o.audit, &r);
	return allow || audit;
}

/* ---- replies ---- */

static void tcp_client_free(struct tcp_client *tc);
static void tcp_flush(struct tcp_client *tc);

/* A TCP client that failed: freed now, or by on_tcp_read when it is the
 * caller further up the stack. */
static void
tcp_fail(struct tcp_client *tc)
{
	if (tc->in_read)
		tc->dead = true;
	else
		tcp_client_free(tc);
}

static void
send_reply(struct dns_server *d, struct waiter *w, const uint8_t *msg, int len)
{
	(void)d; /* a UDP answer leaves from the socket the query came to (w->ufd) */
	if (len < 0)
		return;
	if (!w->tcp) {
		socklen_t sl = w->from.ss_family == AF_INET ? sizeof(struct sockaddr_in)
							    : sizeof(struct sockaddr_in6);

		if (sendto(w->ufd, msg, (size_t)len, MSG_DONTWAIT, (struct sockaddr *)&w->from,
			   sl) < 0)
			log_debug("dns: sendto: %s", strerror(errno));
		return;
	}
	/* TCP: length-prefixed, appended to the client's output */
	{
		struct tcp_client *tc = w->tcp;
		uint8_t *nout;

		tc->pending--;
		if (tc->dead)
			return;
		nout = realloc(tc->out, tc->outlen + 2 + (size_t)len);
		if (!nout) {
			tcp_fail(tc);
			return;
		}
		tc->out = nout;
		tc->out[tc->outlen] = (uint8_t)(len >> 8);
		tc->out[tc->outlen + 1] = (uint8_t)len;
		memcpy(tc->out + tc->outlen + 2, msg, (size_t)len);
		tc->outlen += 2 + (size_t)len;
		tcp_flush(tc);
	}
}

static void
reply_rcode(struct dns_server *d, struct waiter *w, int rcode)
{
	uint8_t buf[1024];
	int n;

	n = dns_build_response(&w->q, rcode, NULL, 0, w->tcp ? 65535 : sizeof(buf), buf,
			       sizeof(buf));
	send_reply(d, w, buf, n);
}

static void
reply_rrs(struct dns_server *d, struct waiter *w, int rcode, const struct dns_rr *rrs, int nrr)
{
	static uint8_t buf[65535];
	size_t max = w->tcp ? sizeof(buf) : dns_udp_max(&w->q);
	int n;

	n = dns_build_response(&w->q, rcode, rrs, nrr, max, buf, sizeof(buf));
	if (n < 0) {
		reply_rcode(d, w, DNS_R_SERVFAIL);
		return;
	}
	send_reply(d, w, buf, n);
}

/* ---- cache and learned names ---- */

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

static void
on_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct dns_server *d = arg;

	(void)fd;
	(void)what;
	kpaths_sweep(&d->paths, now_s());
}

int
dns_kv_restore(struct dns_server *d, const struct sockaddr_storage *ss, const char *name,
	       uint64_t ttl_ns)
{
	return kpaths_kv_restore(&d->paths, d->o.policy, ss, name, ttl_ns);
}

void
dns_set_policy(struct dns_server *d, const struct policy *p, struct policy *rw,
	       struct dns_revoked *rv)
{
	struct learned *l, *ltmp;

	memset(rv, 0, sizeof(*rv));
	d->o.policy = p;
	d->o.policy_rw = rw;
	cache_clear(d); /* answers were filtered by the old policy */
	rv->fast = kpaths_set_policy(&d->paths, p);
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
			rv->names++;
		}
}

/* ---- upstream ---- */

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
			reply_rcode(d, w, DNS_R_SERVFAIL);
		else
			reply_rrs(d, w, rcode, rrs, nrr);
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
	struct dns_msg *m = NULL;
	struct dns_rr *kept = NULL;
	uint32_t min_ttl;
	int n, rcode, local = 0, addrs = 0;

	f->rq = NULL;
	m = malloc(sizeof(*m));
	kept = malloc(sizeof(*kept) * DNS_MAX_RRS);
	if (status || !m || !kept || dns_parse_response(answer, (size_t)alen, m) ||
	    strcasecmp(m->q.name, f->name) || m->q.qtype != f->qtype) {
		d->st.servfail++;
		log_info("dns: %s: no usable answer from upstream (%s)", f->name,
			 status ? strerror(-status) : "malformed");
		finish_inflight(f, DNS_R_SERVFAIL, NULL, 0);
		goto out;
	}
	rcode = m->rcode;
	if (rcode != DNS_R_NOERROR && rcode != DNS_R_NXDOMAIN) {
		finish_inflight(f, DNS_R_SERVFAIL, NULL, 0);
		goto out;
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
out:
	free(m);
	free(kept);
}

static void
answer_from_cache(struct dns_server *d, struct waiter *w, struct cache_entry *e)
{
	struct dns_rr *rrs = NULL;
	uint64_t age = now_s() - e->stored;

	if (e->nrr) {
		rrs = malloc(sizeof(*rrs) * (size_t)e->nrr);
		if (!rrs) {
			reply_rcode(d, w, DNS_R_SERVFAIL);
			return;
		}
		memcpy(rrs, e->rrs, sizeof(*rrs) * (size_t)e->nrr);
		for (int i = 0; i < e->nrr; i++)
			rrs[i].ttl = rrs[i].ttl > age ? rrs[i].ttl - (uint32_t)age : 1;
	}
	d->st.cached++;
	/* an entry the kernel's LRU may have dropped, or a new policy cleared */
	kpaths_kv_open(&d->paths, d->o.policy, e->name, rrs, e->nrr);
	reply_rrs(d, w, e->rcode, rrs, e->nrr);
	free(rrs);
}

static void resolve_query(struct dns_server *d, struct waiter *w, const char *norm);

/* --ask: a name no rule allows waits for an answer on the terminal. */
struct dns_ask {
	LIST_ENTRY(dns_ask) entry;
	struct dns_server *d;
	struct waiter *w;
	struct ask_req *req;
	char name[DNS_MAX_NAME + 1];
};

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
		reply_rcode(d, w, DNS_R_REFUSED);
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
		reply_rrs(d, w, DNS_R_NOERROR, NULL, 0);
		free(w);
		return;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		reply_rcode(d, w, DNS_R_SERVFAIL);
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
		reply_rcode(d, w, DNS_R_SERVFAIL);
		free(w);
	}
}

/* Takes ownership of w. */
static void
handle_query(struct dns_server *d, struct waiter *w)
{
	char norm[DNS_MAX_NAME + 1];
	bool denied;

	d->st.queries++;
	if (w->q.qclass != DNS_C_IN || w->q.qtype == DNS_T_ANY) {
		/* refused in audit mode too: no policy could want ANY (RFC 8482) */
		log_decision(d, &w->who, w->q.name, false, false,
			     w->q.qtype == DNS_T_ANY ? "ANY queries refused" : "class not IN");
		d->st.refused++;
		reply_rcode(d, w, DNS_R_REFUSED);
		free(w);
		return;
	}
	if (policy_host_normalize(w->q.name, false, norm, sizeof(norm))) {
		d->st.refused++;
		reply_rcode(d, w, DNS_R_REFUSED); /* not a host name: nothing to resolve */
		free(w);
		return;
	}
	if (!policy_host_judge(d->o.policy, norm, &denied)) {
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
			reply_rcode(d, w, DNS_R_REFUSED);
			free(w);
			return;
		}
	} else {
		log_decision(d, &w->who, norm, true, true, "name may be allowed");
	}
	resolve_query(d, w, norm);
}

/* The allowed part of handle_query(): answer from the cache, join a query
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
		reply_rrs(d, w, DNS_R_NOERROR, NULL, 0);
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
		reply_rcode(d, w, DNS_R_SERVFAIL);
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
		uq.id = (uint16_t)arc4random();
		uq.edns = true;
		uq.edns_do = false;
		qlen = dns_build_query(&uq, qbuf, sizeof(qbuf));
	}
	d->st.upstream++;
	if (qlen < 0 || !(f->rq = resolver_send(d->o.res, qbuf, (size_t)qlen, on_upstream, f)))
		finish_inflight(f, DNS_R_SERVFAIL, NULL, 0);
}

static void
process_message(struct dns_server *d, const uint8_t *buf, size_t len,
		const struct sockaddr_storage *from, int ufd, struct tcp_client *tc,
		const struct egr_conn_val *who)
{
	struct waiter *w = calloc(1, sizeof(*w));
	bool id_ok = false;
	int rc;

	if (!w)
		return;
	w->who = *who;
	w->ufd = ufd;
	w->tcp = tc;
	if (from)
		w->from = *from;
	if (tc)
		tc->pending++;
	rc = dns_parse_query(buf, len, &w->q, &id_ok);
	/* a response is never answered: two responders would bounce errors */
	if (rc && id_ok && !(len > 2 && (buf[2] & 0x80))) {
		reply_rcode(d, w, rc); /* FORMERR, NOTIMP, BADVERS: dns/wire.c knows how */
		free(w);
		return;
	}
	if (rc) {
		if (tc)
			tc->pending--;
		free(w);
		return;
	}
	handle_query(d, w);
}

/* ---- UDP ---- */

static void
on_udp(evutil_socket_t fd, short what, void *arg)
{
	struct dns_server *d = arg;
	uint8_t buf[4096];

	(void)what;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		struct egr_conn_val who;
		ssize_t n;

		n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (n < 0)
			return;
		if (d->conns_fd < 0 ||
		    loader_conn_lookup(d->conns_fd, (struct sockaddr *)&from, IPPROTO_UDP, &who)) {
			log_debug("dns: dropped an unattributed datagram");
			continue;
		}
		if (who.flags & EGR_CONN_AMBIGUOUS) {
			/* two sockets (network namespaces) share that address
			 * and port: whose query it is cannot be told */
			log_debug("dns: dropped a datagram of an ambiguous sender");
			continue;
		}
		process_message(d, buf, (size_t)n, &from, fd, NULL, &who);
	}
}

/* ---- TCP ---- */

static void
tcp_client_free(struct tcp_client *tc)
{
	struct dns_server *d = tc->d;
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
	event_del(&tc->rev);
	event_del(&tc->wev);
	event_del(&tc->timer);
	close(tc->fd);
	free(tc->out);
	LIST_REMOVE(tc, entry);
	d->ntcp--;
	free(tc);
}

static void
tcp_flush(struct tcp_client *tc)
{
	while (tc->outoff < tc->outlen) {
		ssize_t n = send(tc->fd, tc->out + tc->outoff, tc->outlen - tc->outoff,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				event_add(&tc->wev, NULL);
				return;
			}
			tcp_fail(tc);
			return;
		}
		tc->outoff += (size_t)n;
	}
	event_del(&tc->wev);
	free(tc->out);
	tc->out = NULL;
	tc->outlen = tc->outoff = 0;
	if (tc->closing && !tc->pending)
		tcp_fail(tc);
}

static void
on_tcp_write(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	tcp_flush(arg);
}

static void
on_tcp_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	tcp_client_free(arg);
}

static void
on_tcp_read(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_client *tc = arg;
	struct timeval idle = {tc->d->o.head_timeout_s, 0};
	ssize_t n;

	(void)what;
	n = recv(fd, tc->in + tc->inlen, sizeof(tc->in) - tc->inlen, MSG_DONTWAIT);
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		tc->closing = true;
		event_del(&tc->rev);
		if (!tc->pending && !tc->outlen)
			tcp_client_free(tc);
		return;
	}
	tc->inlen += (size_t)n;
	for (;;) {
		size_t mlen;

		if (tc->inlen < 2)
			return;
		mlen = ((size_t)tc->in[0] << 8) | tc->in[1];
		if (mlen == 0 || tc->inlen < 2 + mlen)
			break;
		tc->in_read = true;
		process_message(tc->d, tc->in + 2, mlen, NULL, -1, tc, &tc->who);
		tc->in_read = false;
		if (tc->dead) {
			tcp_client_free(tc);
			return;
		}
		memmove(tc->in, tc->in + 2 + mlen, tc->inlen - 2 - mlen);
		tc->inlen -= 2 + mlen;
		/* the clock restarts for each whole message, not for each
		 * byte: a message dribbled in is cut off the head timeout
		 * after the last whole one */
		evtimer_add(&tc->timer, &idle);
	}
	if (tc->inlen >= 2 && (((size_t)tc->in[0] << 8) | tc->in[1]) == 0)
		tcp_client_free(tc); /* a zero-length message: garbage */
}

static void
on_tcp_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct dns_server *d = arg;
	struct timeval idle = {d->o.head_timeout_s, 0};
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);
	struct egr_conn_val who;
	struct tcp_client *tc;
	int fd;

	(void)what;
	fd = accept4(lfd, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (d->conns_fd < 0 ||
	    loader_conn_lookup(d->conns_fd, (struct sockaddr *)&peer, IPPROTO_TCP, &who) ||
	    (who.flags & EGR_CONN_AMBIGUOUS) || d->ntcp >= DNS_TCP_MAX_CLIENTS) {
		close(fd);
		return;
	}
	tc = calloc(1, sizeof(*tc));
	if (!tc) {
		close(fd);
		return;
	}
	tc->d = d;
	tc->fd = fd;
	tc->who = who;
	event_assign(&tc->rev, d->base, fd, EV_READ | EV_PERSIST, on_tcp_read, tc);
	event_assign(&tc->wev, d->base, fd, EV_WRITE | EV_PERSIST, on_tcp_write, tc);
	evtimer_assign(&tc->timer, d->base, on_tcp_timer, tc);
	LIST_INSERT_HEAD(&d->tcp, tc, entry);
	d->ntcp++;
	event_add(&tc->rev, NULL);
	evtimer_add(&tc->timer, &idle);
}

/* ---- setup ---- */

/* A UDP socket and a TCP listener on ip:port (network order; port 0: the
 * UDP socket's), ip an IPv4 address or, with v6, ::1 (IPV6_V6ONLY), or -1
 * with errno. freebind: the address may come later (a container
 * runtime's bridge). */
static int
open_pair(uint32_t ip, bool v6, uint16_t port, bool freebind, int *ufd, int *tfd, uint16_t *bound)
{
	struct sockaddr_storage ss;
	socklen_t sl = sockaddr_listen_addr(&ss, ip, v6, port);
	int one = 1, e;

	*ufd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	*tfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (*ufd < 0 || *tfd < 0)
		goto fail;
	setsockopt(*tfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v6 && (setsockopt(*ufd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) ||
		   setsockopt(*tfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))))
		goto fail;
	if (freebind && (setsockopt(*ufd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) ||
			 setsockopt(*tfd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one))))
		goto fail;
	if (bind(*ufd, (struct sockaddr *)&ss, sl) ||
	    getsockname(*ufd, (struct sockaddr *)&ss, &sl))
		goto fail;
	/* the TCP listener on the same port; another socket may hold it */
	if (bind(*tfd, (struct sockaddr *)&ss, sl) || listen(*tfd, 128))
		goto fail;
	*bound = sockaddr_port(&ss);
	return 0;
fail:
	e = errno;
	if (*ufd >= 0)
		close(*ufd);
	if (*tfd >= 0)
		close(*tfd);
	*ufd = *tfd = -1;
	errno = e;
	return -1;
}

/* 127.0.0.1 and, on the same port, ns_ip4 (containers) or ::1 (--ipv6). */
static int
open_sockets(struct dns_server *d, char *errbuf, size_t errlen)
{
	char where[INET6_ADDRSTRLEN + 2] = "127.0.0.1";
	uint32_t ns = d->o.ns_ip4;
	bool v6 = d->o.ipv6;
	int e;

	for (int attempt = 0; attempt < 20; attempt++) {
		uint16_t port = 0;

		if (open_pair(htonl(INADDR_LOOPBACK), false, d->o.port, false, &d->ufd, &d->tfd,
			      &port)) {
			if (d->o.port)
				break; /* that port or none */
			continue;
		}
		if ((!ns && !v6) || !open_pair(ns, v6, port, !v6, &d->ufd_ns, &d->tfd_ns, &port)) {
			d->port = port;
			return 0;
		}
		e = errno;
		sockaddr_listen_where(ns, v6, where, sizeof(where));
		close(d->ufd);
		close(d->tfd);
		d->ufd = d->tfd = -1;
		errno = e;
		if (d->o.port || e != EADDRINUSE)
			break; /* that port or none */
	}
	snprintf(errbuf, errlen, "cannot open the DNS listeners on %s%s%.0u: %s%s", where,
		 d->o.port ? ":" : "", d->o.port, strerror(errno),
		 v6 && strchr(where, ':') ? " (--ipv6 needs IPv6 on the loopback device)" : "");
	return -1;
}

struct dns_server *
dns_new(struct event_base *base, const struct dns_opts *o, char *errbuf, size_t errlen)
{
	struct timeval sweep = {FAST_SWEEP_S, 0};
	struct dns_server *d = calloc(1, sizeof(*d));

	if (!d) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	d->base = base;
	d->o = *o;
	if (!d->o.ttl_min)
		d->o.ttl_min = 5;
	if (!d->o.ttl_max)
		d->o.ttl_max = 300;
	d->conns_fd = -1;
	d->ufd = d->tfd = d->ufd_ns = d->tfd_ns = -1;
	LIST_INIT(&d->inflight);
	kpaths_init(&d->paths, o->audit_mode);
	LIST_INIT(&d->tcp);
	LIST_INIT(&d->asks);
	if (open_sockets(d, errbuf, errlen))
		goto fail;
	d->uev = event_new(base, d->ufd, EV_READ | EV_PERSIST, on_udp, d);
	d->tev = event_new(base, d->tfd, EV_READ | EV_PERSIST, on_tcp_accept, d);
	d->sweep = event_new(base, -1, EV_PERSIST, on_sweep, d);
	if (!d->uev || !d->tev || !d->sweep || event_add(d->uev, NULL) || event_add(d->tev, NULL) ||
	    event_add(d->sweep, &sweep)) {
		snprintf(errbuf, errlen, "cannot watch the DNS listeners");
		goto fail;
	}
	if (d->ufd_ns >= 0) {
		d->uev_ns = event_new(base, d->ufd_ns, EV_READ | EV_PERSIST, on_udp, d);
		d->tev_ns = event_new(base, d->tfd_ns, EV_READ | EV_PERSIST, on_tcp_accept, d);
		if (!d->uev_ns || !d->tev_ns || event_add(d->uev_ns, NULL) ||
		    event_add(d->tev_ns, NULL)) {
			snprintf(errbuf, errlen, "cannot watch the DNS listeners");
			goto fail;
		}
	}
	return d;
fail:
	dns_free(d);
	return NULL;
}

uint16_t
dns_port(const struct dns_server *d)
{
	return d->port;
}

void
dns_set_index(struct dns_server *d, int conns_fd)
{
	d->conns_fd = conns_fd;
}

void
dns_set_kpath(struct dns_server *d, const struct kpath *kp)
{
	d->paths.kp = kp;
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
dns_get_stats(const struct dns_server *d, struct dns_stats *st)
{
	*st = d->st;
	st->fast_path = d->paths.fast_path;
	st->kv_path = d->paths.kv_path;
}

void
dns_free(struct dns_server *d)
{
	struct inflight *f;
	struct tcp_client *tc;

	if (!d)
		return;
	while ((tc = LIST_FIRST(&d->tcp)))
		tcp_client_free(tc);
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
	for (int i = 0; i < LEARN_BUCKETS; i++) {
		struct learned *l;

		while ((l = LIST_FIRST(&d->learn[i]))) {
			LIST_REMOVE(l, entry);
			free(l);
		}
	}
	kpaths_free(&d->paths);
	if (d->uev)
		event_free(d->uev);
	if (d->tev)
		event_free(d->tev);
	if (d->sweep)
		event_free(d->sweep);
	if (d->uev_ns)
		event_free(d->uev_ns);
	if (d->tev_ns)
		event_free(d->tev_ns);
	if (d->ufd >= 0)
		close(d->ufd);
	if (d->tfd >= 0)
		close(d->tfd);
	if (d->ufd_ns >= 0)
		close(d->ufd_ns);
	if (d->tfd_ns >= 0)
		close(d->tfd_ns);
	free(d);
}
