// SPDX-License-Identifier: Apache-2.0
/* The answers that open the kernel's direct paths (kernel/kpath.h), for
 * the responder (responder.c), before an answer is released: a name a
 * tcp:// rule allows puts each answered address, with the rule's ports,
 * on the fast path for the answer's TTL; a name a host rule allows on port
 * 443 puts it on the kernel-verified path. Fast-path approvals are listed
 * here: the sweep removes them when they expire, a new policy removes those
 * it no longer allows, and each is saved while it lives (a restarted daemon
 * takes them back). Private to dns/. */
#ifndef DNS_KPATHS_H
#define DNS_KPATHS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "egress_abi.h"

struct dns_rr;
struct kpath;
struct kpath_saved;
struct policy;
struct kpaths_fast;

struct dns_kpaths {
	const struct kpath *kp;		/* NULL until the maps exist: nothing opens */
	bool audit_mode;		/* --audit keeps the proxy: no kernel-verified path */
	TAILQ_HEAD(, kpaths_fast) fast; /* the fast-path approvals, oldest first */
	uint64_t fast_path, kv_path;	/* approvals made (dns_stats) */
};

void kpaths_init(struct dns_kpaths *k, bool audit_mode);
void kpaths_free(struct dns_kpaths *k);

/* An entry of the store (kernel/kpath.h), put or deleted; nothing before
 * the maps exist. */
void kpaths_save(struct dns_kpaths *k, bool put, enum egr_saved_kind kind,
		 const struct sockaddr_storage *addr, uint64_t expires, const char *name);

/* Opens the fast path and the kernel-verified path for name's A and AAAA
 * answers (rrs, as they are released) under policy p. */
void kpaths_open(struct dns_kpaths *k, const struct policy *p, const char *name,
		 const struct dns_rr *rrs, int nrr);
/* The kernel-verified path alone (an answer from the cache: its entries
 * may have gone from the kernel's LRU map, or been cleared). */
void kpaths_kv_open(struct dns_kpaths *k, const struct policy *p, const char *name,
		    const struct dns_rr *rrs, int nrr);

/* Removes the fast-path approvals that expired by now (now_s()). */
void kpaths_sweep(struct dns_kpaths *k, uint64_t now);

/* A new policy p: the kernel-verified path is emptied (answers after this
 * open it again) and the fast-path approvals p no longer allows removed.
 * Returns how many were. */
uint64_t kpaths_set_policy(struct dns_kpaths *k, const struct policy *p);

/* A saved fast-path approval taken back (a restarted daemon's), if p still
 * allows it: 1, 0 if not, -errno if fast_add failed. */
int kpaths_restore_fast(struct dns_kpaths *k, const struct policy *p, const struct kpath_saved *s,
			uint64_t now);
/* A kernel-verified approval taken back (dns_kv_restore). */
int kpaths_kv_restore(struct dns_kpaths *k, const struct policy *p,
		      const struct sockaddr_storage *ss, const char *name, uint64_t ttl_ns);

#endif /* DNS_KPATHS_H */
