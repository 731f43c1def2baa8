// SPDX-License-Identifier: Apache-2.0
/* The kernel's direct paths as the DNS responder and the proxy use them.
 * The fast path: an address and port approved for TCP, so that a connect
 * to it goes direct (tcp:// rules). The kernel-verified path: an address,
 * port and name, so that a connect goes direct and the kernel checks that
 * the first bytes carry the name (host rules, TLS). Each approval carries
 * the name it was answered for. And the store that outlives the process
 * (the daemon's pins): what was learned, for a restarted daemon to take
 * back. The target implements it over its loader, telling its revoker
 * what each approval is for (confine/kpath.c); the callers never see the
 * maps.
 *
 * kpath_allows() is the one question every direct path asks the policy. */
#ifndef KPATH_H
#define KPATH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "egress_abi.h"
#include "policy/policy.h"

/* One entry of the store. */
struct kpath_saved {
	enum egr_saved_kind kind;     /* EGR_SAVED_NAME: an answered address's name;
				       * EGR_SAVED_FAST: a fast-path approval */
	struct sockaddr_storage addr; /* FAST: with the approved port */
	uint64_t expires;	      /* now_s() seconds */
	const char *name;
};

struct kpath {
	/* the fast path: sa (its port set) approved for TCP for ttl_ns (0:
	 * until removed), as answered for name (NULL: not known); removed */
	int (*fast_add)(void *arg, const struct sockaddr *sa, const char *name, uint64_t ttl_ns);
	int (*fast_del)(void *arg, const struct sockaddr *sa);
	/* the kernel-verified path: name answered with sa, allowed there as
	 * flags (EGR_VN_TLS) for ttl_ns; every entry forgotten (a new
	 * policy). kv_add NULL: no kernel-verified path */
	int (*kv_add)(void *arg, const struct sockaddr *sa, const char *name, uint32_t flags,
		      uint64_t ttl_ns);
	int (*kv_clear)(void *arg);
	/* the store: put replaces an entry of the same kind and address (for
	 * FAST, port and name too); del removes it */
	void (*save)(void *arg, const struct kpath_saved *s);
	void (*unsave)(void *arg, const struct kpath_saved *s);
	void *arg;
};

/* May a new TCP connection to ss (IPv4 or IPv6, its port set) go direct,
 * past the proxy: by name (NULL: by its address alone) as proto
 * (POLICY_P_TCP: a tcp:// or an exact-address rule; POLICY_P_TLS: a host
 * rule, the kernel-verified path)? A deny rule on the name or on the
 * address wins; without --ipv6 the policy denies every IPv6 address; an
 * allowed destination that is inspected (d->inspect) never goes direct, nor
 * one when an upstream proxy is set that is not one of its exceptions
 * (policy_via_upstream(): there is no direct route). d (NULL: not wanted)
 * gets the decision; one the policy cannot make is a deny for lack of a
 * rule. */
bool kpath_allows(const struct policy *p, const struct sockaddr_storage *ss, const char *name,
		  enum policy_proto proto, struct policy_decision *d);

#endif /* KPATH_H */
