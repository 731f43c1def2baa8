// SPDX-License-Identifier: Apache-2.0
/* The DNS responder: every query from the confined cgroup lands here (the
 * kernel redirects port 53, UDP and TCP, whatever resolver address the
 * client used). Names no rule could allow are refused without a query
 * leaving the machine; allowed names are resolved upstream (c-ares), their
 * answers filtered (local addresses stripped unless named, AAAA empty while
 * IPv6 is denied), cached and coalesced. Answered addresses are remembered
 * as address -> name for the transparent listener, and names that match a
 * tcp:// rule (a host rule on port 443) open the kernel fast path (the
 * kernel-verified path) before the answer is released (kernel/kpath.h).
 * A sibling of the proxy, which it shares the resolver with; the target
 * owns both. */
#ifndef DNS_H
#define DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/ask_hook.h"

struct event_base;
struct resolver;
struct policy;
struct audit;
struct dns_server;
struct kpath;
struct kpath_saved;

/* TCP clients served at once (the target keeps their descriptors out of
 * the proxy's connection limit) */
#define DNS_TCP_MAX_CLIENTS 256

struct dns_opts {
	const struct policy *policy; /* not owned */
	struct audit *audit;	     /* decision log; may be NULL */
	struct resolver *res;	     /* upstream; not owned */
	bool audit_mode;	     /* --audit: answer everything, record would-deny */
	struct ask_hook ask;	     /* --ask: questions on the terminal; .ask NULL = none */
	struct policy *policy_rw;    /* the same policy, for names approved with --ask */
	uint32_t ttl_min, ttl_max;   /* answer TTL bounds in seconds (default 5, 300) */
	int head_timeout_s;	     /* > 0: a TCP client's next whole message (--head-timeout) */
	uint16_t port; /* the port to listen on (taking over pinned programs); 0: any */
	/* containers: the same port on this IPv4 address too (network order;
	 * IP_FREEBIND), for other network namespaces; 0: none */
	uint32_t ns_ip4;
	/* --ipv6 (never with ns_ip4): the same port on ::1 too, and AAAA
	 * answers kept (judged as A answers are) */
	bool ipv6;
	/* secrets (policy/secret.h): a query whose name carries a placeholder
	 * is refused and logged; NULL: none. Not owned */
	struct secrets *secrets;
	/* names answered here and never asked upstream: the neighbours of the
	 * asking socket's network namespace netns (the daemon's docker: the
	 * job's containers on a docker network the asking container is on,
	 * by their names there). name is normalised (lower case, no final
	 * dot). -1: no such name there; else how many addresses of family af
	 * (AF_INET, AF_INET6) it has, at most max put into addr (IPv4 in the
	 * first 4 bytes). NULL: none */
	int (*local_name)(void *arg, uint64_t netns, const char *name, int af, uint8_t (*addr)[16],
			  int max);
	void *local_arg;
};

/* Opens UDP and TCP listeners on one 127.0.0.1 port (and on ns_ip4's). NULL
 * with errbuf set. */
struct dns_server *dns_new(struct event_base *base, const struct dns_opts *o, char *errbuf,
			   size_t errlen);
uint16_t dns_port(const struct dns_server *d);

/* The BPF connection index, to attribute queries (unattributed ones are
 * dropped: the responder is not an open resolver for other local users). */
void dns_set_index(struct dns_server *d, int conns_fd);

/* The kernel paths and the store of what was learned (kernel/kpath.h),
 * once the BPF maps exist; kp must outlive the responder. Until then no
 * answer opens a direct path, and nothing is saved. */
void dns_set_kpath(struct dns_server *d, const struct kpath *kp);

/* Takes back one saved entry (a restarted daemon's) if it has not expired
 * and the policy in force still allows it; a FAST one is approved again
 * through fast_add for what is left of its TTL. 1 if taken, 0 if not (the
 * caller drops it from its store), -errno if fast_add failed. */
int dns_restore(struct dns_server *d, const struct kpath_saved *s);

/* Takes back one kernel-verified approval (a restarted daemon's: name was
 * answered with ss, IPv4 or IPv6, for ttl_ns more) if the policy in force
 * still allows it there: through kv_add. 1 if taken, 0 if not, -1 if kv_add
 * failed. */
int dns_kv_restore(struct dns_server *d, const struct sockaddr_storage *ss, const char *name,
		   uint64_t ttl_ns);

/* The name an answered address was learned for (until its TTL runs out),
 * or NULL. */
const char *dns_learned_name(const struct dns_server *d, const struct sockaddr *sa);

/* A new policy (after a reload) for every answer from now on: the answer
 * cache is emptied, and the fast-path entries and learned names it no
 * longer allows are removed (counted in rv). */
struct dns_revoked {
	uint64_t fast;	/* fast-path entries removed */
	uint64_t names; /* learned names forgotten */
};
void dns_set_policy(struct dns_server *d, const struct policy *p, struct policy *rw,
		    struct dns_revoked *rv);

struct dns_stats {
	uint64_t queries, refused, answered, cached, upstream, servfail, fast_path;
	uint64_t kv_path; /* (address, port, name) entries of the kernel-verified path */
	uint64_t ech;	  /* HTTPS/SVCB records whose ech parameter was removed */
};
void dns_get_stats(const struct dns_server *d, struct dns_stats *st);

void dns_free(struct dns_server *d);

#endif /* DNS_H */
