// SPDX-License-Identifier: Apache-2.0
/* The proxy's own state, shared by the two files of its core: proxy.c
 * (listeners, accept, limits, the public API of proxy.h) and conn.c (one
 * connection's life: I/O, timers, decisions, the upstream connect, close).
 * Protocols never include this: they see struct conn and conn.h's API. */
#ifndef PROXY_CORE_H
#define PROXY_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <event2/event.h>

#include "proxy/conn.h"
#include "proxy/proxy.h"
#include "proxy/quota.h"

struct proto_ops;

struct proxy {
	struct event_base *base;
	struct proxy_opts opts; /* timeouts in force (defaults filled in) */
	struct quota quota;	/* connection limits and counts */
	const struct kpath *kp; /* the kernel paths; NULL until set */
	int conns_fd;
	/* [l] on 127.0.0.1; [PROXY_L_MAX + l] the same port on the address of
	 * other network namespaces (opts.ns_ip4, containers), when set */
	int lfd[2 * PROXY_L_MAX];
	uint16_t port[PROXY_L_MAX];
	struct event *lev[2 * PROXY_L_MAX];
	const struct proto_ops *lops[2 * PROXY_L_MAX]; /* each listener's protocol */
	bool limit_warned;  /* said once that the connection limit was hit */
	bool proc_warned;   /* ... that a process hit its own */
	bool fd_warned;	    /* ... that descriptors ran out */
	bool pipe_warned;   /* ... that a relay pipe could not be made */
	struct event *rest; /* listeners off for a moment: out of descriptors, no spare */
	int spare_fd;	    /* /dev/null, given up to accept-and-refuse without descriptors */
	TAILQ_HEAD(, conn) conns;
	int nrefusing; /* connections kept only to be refused (c->over) */
	uint64_t next_id;
	struct proxy_stats st;
	/* relay pipes (relay.c): at most pipes_max exist, leased to a
	 * direction while its bytes move, else empty in the pool; directions
	 * that found none wait in pipe_waiters, first come first served */
	int (*pool)[2];
	int npool, pipes_total, pipes_max;
	uint64_t pipe_waits; /* directions that found no pipe free */
	TAILQ_HEAD(, relay_dir) pipe_waiters;
};

/* conn.c: a connection for the accepted client fd (attributed to who, over
 * a limit if over is not QUOTA_NONE) that ops speaks; it is in p->conns and
 * its client events and timer are assigned. NULL when out of memory (fd
 * is not closed then). */
struct conn *conn_new(struct proxy *p, int fd, const struct egr_conn_val *who, enum quota_hit over,
		      const struct proto_ops *ops);
/* Starts c: the head timeout, the protocol's start, then the client's
 * first bytes if they are there already. */
void conn_start(struct conn *c);

#endif /* PROXY_CORE_H */
