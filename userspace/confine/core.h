// SPDX-License-Identifier: Apache-2.0
/* One target's own state, shared by the files that make it (see
 * target.h): target.c (what it is made of, attaching, finishing),
 * kpath.c (its kernel paths, what they learned and their revoke memory)
 * and records.c (every decision: the log, the summary, the denial lines,
 * the kernel's events, the revoke pass's ends). Only these include it. */
#ifndef CONFINE_CORE_H
#define CONFINE_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "kernel/kpath.h"
#include "lib/proxyurl.h"
#include "sandbox/unixsvc.h"
#include "confine/target.h"

#define TARGET_MAX_FAST 64 /* exact-address rules opened on the fast path */

struct egr_event;

struct target {
	const struct target_opts *o;
	const struct target_env *env;
	struct event_base *base;
	struct policy *policy;
	struct audit *audit;
	struct summary *summary;
	struct resolver *res; /* the proxy's and the responder's */
	struct proxy *px;
	struct inspector *ins;	 /* HTTPS inspection; NULL until the policy inspects */
	struct secrets *secrets; /* the policy's secrets, their values (policy/secret.h); or NULL */
	struct dns_server *dns;	 /* NULL with --dns-port */
	struct loader *ld;
	struct kpath kp;	 /* over ld, for the responder and the proxy (kpath.c) */
	struct revoker *rk;	 /* env->revoke_direct: the direct connections' revoke pass */
	struct existing *ahead;	 /* iterators loaded ahead (target_take_iterators), unused yet */
	struct unixsvc unix_svc; /* the unix sockets denied, by entry index */
	struct event *ev_ring, *ev_status;
	struct event *ev_drain; /* the kernel-verified path's allow events: no wakeup each */
	LIST_ENTRY(target) addrs_entry; /* hostaddrs.c: egr_hostaddr kept in step */
	bool addrs_watched;
	int status_fd;
	char status_path[128];
	const char *cgpath;
	uint64_t cgid;
	char http_url[64], socks_url[64];
	/* --upstream-proxy (host "": none) and its Proxy-Authorization value,
	 * read when the target is made; the auth erased when it is freed */
	struct proxyurl upstream;
	char upstream_auth[PROXYURL_AUTH_MAX];
	char log_ca[32]; /* --log-ca fd:N as the path its reader opens (target_file_path) */
	bool adopted;	 /* took over pinned programs */
	int restored_names, restored_fast, restored_kv; /* taken back, when adopted */
	bool saved_warned;				/* egr_saved could not take one */
	struct sockaddr_storage fast[TARGET_MAX_FAST];	/* exact-address rules in egr_fast */
	int nfast;
	double tokens, last_refill; /* denial line rate limit */
	unsigned long suppressed;
	bool finished;
};

/* ---- kpath.c ---- */

/* t->kp over t->ld (the kernel-verified path unless --no-kernel-verify),
 * handed to the responder and the proxy. */
void target_kpath_open(struct target *t);

/* A take-over: what the daemon before learned and approved, as far as the
 * policy in force still allows it, taken back (counted in t->restored_*).
 * Returns 0 or -errno with errbuf set. */
int target_kpath_restore(struct target *t, char *errbuf, size_t errlen);

/* The fast path for exactly the exact-address rules of the policy in
 * force: new ones opened, those no rule names any more closed. */
int target_kpath_sync_rules(struct target *t, char *errbuf, size_t errlen);

/* ---- hostaddrs.c ---- */

/* t's egr_hostaddr kept as this network namespace's addresses (whom a
 * connection a listener of t's accepted may answer): synced now, and again
 * when they change. One rtnetlink watch serves every target of the
 * process, and a change is read 20 ms after rtnetlink says so, once for a
 * burst; the maps are written only when the list differs. 0, or -errno
 * with errbuf set. */
int target_watch_hostaddrs(struct target *t, char *errbuf, size_t errlen);
/* t no longer kept (its loader about to go); the watch closes with the
 * last target. */
void target_unwatch_hostaddrs(struct target *t);

/* ---- ways.c ---- */
struct conn;
/* --upstream-proxy and its credentials into t (0, or -EINVAL with errbuf). */
int target_upstream_read(struct target *t, char *errbuf, size_t errlen);
/* t->ins, with --ca's CA or one made now (0, or -EINVAL with errbuf). */
int target_open_inspector(struct target *t, char *errbuf, size_t errlen);
/* The proxy's inspection hook (proxy_opts.inspect.start), arg the target. */
void target_inspect_hook(void *arg, struct conn *c);

/* ---- records.c ---- */

#define TARGET_DENIAL_BURST 20 /* denial lines at once (then 10 a second) */

/* Every decision of the proxy and the responder (the audit log's sink). */
void target_on_decision(void *arg, const struct audit_rec *r);
/* Every event of the programs (the ring buffer's). */
void target_on_event(const struct egr_event *e, void *arg);
/* The denial lines not shown, said once. */
void target_say_suppressed(struct target *t);
/* After a change of the policy: the connections that went direct to a
 * destination it denies are ended (counted in rv->conns). */
void target_revoke_direct(struct target *t, struct target_revoked *rv);

#endif /* CONFINE_CORE_H */
