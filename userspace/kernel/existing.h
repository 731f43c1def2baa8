// SPDX-License-Identifier: Apache-2.0
/* Connections a cgroup already had when the programs were attached to it
 * (runner mode: `egressctl daemon` confines a live cgroup). One pass right
 * after loader_attach() finds, in the cgroup and below, every TCP socket
 * with a peer and every connected UDP socket whose peer is not loopback and
 * that the programs did not decide (bpf/existing.bpf.c), and either leaves
 * it open, marked so that the catch-all lets it pass ("pre-existing, not
 * confined"), or ends it (bpf_sock_destroy(): the process sees
 * ECONNABORTED). Each one is named with a process holding it, found in
 * /proc/PID/fd of the cgroup's processes. Connections made after the attach
 * are the programs' and are left alone.
 *
 * Between the attach and the pass the catch-all drops what these sockets
 * send; TCP sends it again (retransmission), UDP datagrams of that window
 * are lost. Open the pass before loader_attach() (existing_open) and run it
 * right after (existing_run) to keep the window short.
 *
 * The same iterators, kept loaded for the life of a target (loading them
 * takes 50-70 ms), run the revoke pass after a policy change
 * (existing_revoke): the target's sockets that went direct (the kernel
 * fast path) to a destination the caller revokes are ended, the other
 * direct ones listed. Pre-existing connections are not the policy's and
 * are left alone.
 *
 * One pass at a time per process: it enters network namespaces with
 * setns() of the calling thread and reads into a static buffer. */
#ifndef EXISTING_H
#define EXISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "egress_abi.h"

struct existing_conn {
	uint64_t cookie;    /* socket cookie */
	uint64_t cgroup_id; /* cgroup the socket was created in (the target or below) */
	uint64_t ino;	    /* socket:[ino]; 0 when no file refers to it (closed, FIN pending) */
	uint64_t netns;	    /* inode of the network namespace it lives in */
	uint32_t laddr[4];  /* local address, network order, v4-mapped for IPv4 */
	uint32_t raddr[4];  /* peer address, likewise */
	uint16_t lport;	    /* local port, host order */
	uint16_t rport;	    /* peer port, host order */
	uint8_t family;	    /* AF_INET, AF_INET6 */
	uint8_t protocol;   /* IPPROTO_TCP, IPPROTO_UDP */
	uint8_t state;	    /* TCP state; connected UDP: 1 (TCP_ESTABLISHED) */
	uint8_t action;	    /* enum egr_pre_action (a revoke pass: REVOKED, DIRECT, FAILED) */
	int err;	    /* EGR_PRE_FAILED: -errno; else 0 */
	pid_t pid;	    /* the lowest pid holding it; 0: none found (gone, unreadable,
			     * or EGR_PRE_DIRECT, whose holders are not looked for) */
	bool in_cgroup;	    /* pid is a process of the cgroup tree (else one outside holds it) */
	char comm[17];	    /* pid's command name, printable ASCII; "" without pid */
	/* a revoke pass: who connected (the programs' record), pid's value
	 * when no process holds the socket any more; 0: not recorded */
	pid_t conn_tgid;
	char conn_comm[16];
};

struct existing_opts {
	int socks_fd;	     /* egr_socks of the attached programs */
	int sk_fd;	     /* egr_sk of the attached programs */
	uint64_t cgid;	     /* the cgroup they are attached to */
	const char *cg_path; /* its directory: processes there and below are searched */
	bool kill;	     /* end the connections instead of leaving them open */
	bool revoke;	     /* also for revoke passes: needs bpf_sock_destroy() */
};

/* Destinations one revoke pass can take (egr_revoke's size). */
#define REVOKE_KEYS_MAX 16384

/* What a pass took (for the log and docs/kernel.md). */
struct existing_stats {
	uint64_t pass_ns;      /* the iterators, in every network namespace */
	uint64_t total_ns;     /* the whole existing_run(), /proc included */
	uint64_t visited;      /* sockets the iterators looked at (all cgroups) */
	unsigned int netns;    /* network namespaces searched */
	unsigned int procs;    /* processes in the cgroup tree */
	unsigned int failures; /* entries with EGR_PRE_FAILED */
};

struct existing;

/* Checks the kernel, loads the iterators sharing egr_socks and egr_sk by
 * fd (their type and sizes checked first) and creates their links. Call
 * before loader_attach(): the pass then only has to run. NULL on error,
 * with errbuf set. o is copied (cg_path too). */
struct existing *existing_open(const struct existing_opts *o, char *errbuf, size_t errlen);

/* The pass: runs both iterators in this process's network namespace and in
 * that of every process of the cgroup tree (setns() of the calling thread,
 * and back), then names a holder of each socket. *out (free() it) gets
 * one entry per connection, *n their number; st may be NULL. Returns 0
 * (entries with EGR_PRE_FAILED included: see st->failures) or -errno with
 * errbuf set. */
int existing_run(struct existing *ex, struct existing_conn **out, size_t *n,
		 struct existing_stats *st, char *errbuf, size_t errlen);

/* The revoke pass: ends every socket of the cgroup tree that the programs
 * let go direct and whose peer is one of keys[0..nkeys) (at most
 * REVOKE_KEYS_MAX; the TCP iterator only, unless a key is UDP), in every
 * network namespace as existing_run() does. *out gets one entry per direct
 * socket seen: EGR_PRE_REVOKED (ended: the process sees ECONNABORTED) or
 * EGR_PRE_FAILED, both with a holder named, and EGR_PRE_DIRECT (left
 * open; no holder looked for). nkeys 0 only lists. The ex must have been
 * opened with revoke. Returns 0 or -errno with errbuf set. */
struct egr_fast_key;
int existing_revoke(struct existing *ex, const struct egr_fast_key *keys, size_t nkeys,
		    struct existing_conn **out, size_t *n, struct existing_stats *st, char *errbuf,
		    size_t errlen);

/* Whether ex was opened as o asks (the cgroup, kill, revoke) on the same
 * two maps, by id: iterators loaded ahead of their target
 * (target_iterators_ahead) are used only for the programs they were
 * loaded for. */
bool existing_matches(const struct existing *ex, const struct existing_opts *o);

void existing_free(struct existing *ex);

/* existing_open, existing_run, existing_free in one. */
int existing_scan(const struct existing_opts *o, struct existing_conn **out, size_t *n,
		  struct existing_stats *st, char *errbuf, size_t errlen);

/* "established", "syn-sent", ... (TCP), "connected" (UDP). */
const char *existing_state_word(uint8_t protocol, uint8_t state);

/* "198.51.100.7:80" or "[2001:db8::1]:443" for a v4-mapped or IPv6 address. */
void existing_addr(const uint32_t a[4], uint16_t port, char *buf, size_t len);

/* One line for the log and the daemon's output:
 * "python3[1234] tcp 198.18.0.2:41000 → 203.0.113.5:7000 established:
 * pre-existing, not confined". Returns the length snprintf would write. */
int existing_format(const struct existing_conn *c, char *buf, size_t len);

#endif /* EXISTING_H */
