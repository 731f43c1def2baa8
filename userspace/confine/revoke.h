// SPDX-License-Identifier: Apache-2.0
/* Direct connections a policy change no longer allows (runner mode's live
 * reload). The kernel fast path lets a target's connections to approved
 * destinations go direct, past the proxy, and once connected the catch-all
 * passes such a socket by its record for its whole life, whatever egr_fast
 * holds later: no proxy connection to close. After every change of a
 * target's policy (a reload, a runtime deny, the rebuild when a runtime
 * allow expires) the revoke pass (kernel/existing.c) ends those whose
 * destination the new policy denies.
 *
 * What each destination was approved for is remembered here: an exact
 * address rule, or the names the DNS responder answered it for. A direct
 * connection is judged as a new connection to it through the proxy would
 * be: by its address, and by each of those names (tcp:// rules). The memory
 * outlives a fast-path entry's TTL: an entry that expires ends nothing (the
 * connection goes on; a new connect needs a new answer), a later change
 * that denies the name does. A direct socket whose approval is not known
 * (made before the daemon restarted, or past the memory's bound) is ended
 * only when a deny rule names its address.
 *
 * On the event loop; the pass costs about 1 ms per network namespace of
 * the target's processes plus about a microsecond per socket there. */
#ifndef REVOKE_H
#define REVOKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "policy/policy.h"

struct existing;
struct existing_conn;
struct policy;

/* Destinations remembered at most (each with up to REVOKE_NAMES names). */
#define REVOKE_DESTS 16384
#define REVOKE_NAMES 8

struct revoker;

/* Takes ex (opened with revoke; freed with the revoker). NULL when out of
 * memory (ex freed too). */
struct revoker *revoker_new(struct existing *ex);
void revoker_free(struct revoker *rk);

/* A fast-path approval of sa (IPv4 with its port, TCP) for the DNS name
 * name, for ttl_ns (0: until removed); name NULL is not remembered (a name
 * the responder did not keep: such connections count as not known). tls:
 * an answer of the kernel-verified path (sa goes direct, its SNI checked):
 * judged by name as TLS, not as a tcp:// rule. */
void revoker_answered(struct revoker *rk, const struct sockaddr *sa, const char *name,
		      uint64_t ttl_ns, bool tls);

/* The exact-address rules on the fast path now (all of them, each call):
 * remembered as approved by their address. */
void revoker_rules(struct revoker *rk, const struct sockaddr_storage *set, int n);

/* One connection the pass ended (or failed to: c->action EGR_PRE_FAILED,
 * c->err): host is the name it was judged by (NULL: by its address), d
 * the new policy's decision (its rule lives as long as the policy). */
typedef void (*revoke_cb)(void *arg, const struct existing_conn *c, const char *host,
			  const struct policy_decision *d);

struct revoke_stats {
	unsigned int direct;  /* direct connections of the target seen */
	unsigned int revoked; /* of them, ended */
	unsigned int failed;  /* could not be ended (bpf_sock_destroy failed) */
	unsigned int passes;  /* 1, or 2 when a deny rule named unknown ones */
	uint64_t ns;	      /* the passes, holders included */
	size_t dests;	      /* destinations remembered after it */
};

/* After a change to policy p: the pass, cb for each connection ended,
 * then what is remembered pruned (destinations neither approved now nor
 * still connected to). Returns 0 or -errno with errbuf set. */
int revoker_run(struct revoker *rk, const struct policy *p, revoke_cb cb, void *arg,
		struct revoke_stats *st, char *errbuf, size_t errlen);

#endif /* REVOKE_H */
