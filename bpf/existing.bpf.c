// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The pre-existing pass: run once right after the enforcement programs
 * (egress.bpf.c) are attached to a cgroup that already has processes. Its
 * sockets that were connected before the attach have no record the
 * catch-all (cgroup_skb/egress) lets pass, so their packets would be dropped
 * and the connections would stall. For each such socket these iterators
 * either end it (bpf_sock_destroy(), with kill_existing) or mark it
 * EGR_SK_PREEXISTING|EGR_SK_DIRECT in egr_sk, which the catch-all passes:
 * "pre-existing, not confined". Either way one struct egr_pre_rec goes to
 * the seq file for userspace (kernel/existing.c), which names the process.
 *
 * A socket is the target's when its cgroup (sk_cgrp_data: where it was
 * created) is target_cgid or below it, as for the attached programs. It is
 * pre-existing when it has a peer that is not loopback and no record that
 * the programs decided it (EGR_SK_DIRECT without EGR_SK_PREEXISTING, in
 * egr_socks or egr_sk): every connect after the attach to a peer that is
 * not loopback either made such a record (fast path, audit mode) or was
 * redirected to loopback or refused. Loopback peers are left out: the
 * catch-all judges loopback on its own (loopback_pkt). The marks go to
 * egr_sk, socket storage freed with the socket after its last packet: a
 * record in egr_socks would be freed at close() (sock_release) and the FIN
 * and any unsent bytes after it dropped.
 *
 * The same object, kept loaded per target, runs the revoke pass after a
 * policy change (revoke_mode): every socket of the target that the
 * programs let go direct (EGR_SK_DIRECT in egr_socks or egr_sk, not
 * EGR_SK_PREEXISTING: pre-existing connections are not the policy's)
 * whose peer (address, port, protocol) userspace put in egr_revoke is
 * ended with bpf_sock_destroy() and reported EGR_PRE_REVOKED; the other
 * direct ones are reported EGR_PRE_DIRECT and left alone (userspace keeps
 * what it knows of them for the next change). A loopback connection to a
 * revoked key carries no record (the catch-all judges loopback at the
 * SYN): it is ended only when the socket that receives it is not the
 * target's (a host service an address rule opened; the target's own
 * server stays reachable whatever the policy says), which takes two more
 * walks: REVOKE_RECEIVERS finds the receivers of the connections
 * REVOKE_DIRECT put in egr_revoke_lo, REVOKE_LOOPBACK ends those whose
 * receiver is outside the target.
 *
 * The iterators run in the network namespace of the task that creates them
 * (bpf_iter_create), and hold the socket's lock while they look at it. */
#include "lib/common.h"
#include "lib/sk_maps.h" /* egr_socks, egr_sk: the egress object's, by fd */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 target_cgid = 0;  /* kernfs id of the attached cgroup */
const volatile __u8 kill_existing = 0; /* end them instead of marking them */
__u64 visited = 0;		       /* sockets looked at, for the pass's figures */
__u8 revoke_mode = 0;		       /* set by userspace for a revoke pass: */
#define REVOKE_DIRECT	 1	       /* direct sockets to egr_revoke's keys */
#define REVOKE_RECEIVERS 2	       /* who receives the loopback ones found */
#define REVOKE_LOOPBACK	 3	       /* end those received outside the target */
__u32 lo_found = 0;		       /* REVOKE_DIRECT: loopback ones found */

/* bpf_sock_destroy(): Linux 6.5, iter/tcp and iter/udp only, socket locked.
 * Weak so that a scan without kill loads on a kernel without it;
 * userspace refuses a kill there before loading (existing_open). */
extern int bpf_sock_destroy(struct sock_common *sk) __ksym __weak;

/* The destinations a policy change revoked, filled by userspace before a
 * revoke pass (and emptied after it). Its size is REVOKE_KEYS_MAX of
 * kernel/existing.h. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct egr_fast_key);
	__type(value, __u8);
} egr_revoke SEC(".maps");

/* A loopback connection as its receiver sees it (local: the destination),
 * in the network namespace netns; the value: 0 no receiver seen, 1 the
 * receiver is the target's, 2 it is outside the target. */
struct lo_key {
	__be32 laddr[4];
	__be32 raddr[4];
	__be16 lport;
	__be16 rport;
	__u32 netns;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct lo_key);
	__type(value, __u8);
} egr_revoke_lo SEC(".maps");

#define CG_WALK 64 /* cgroup levels walked up from a socket's (cgroup v2 nests less) */

/* Was s created in the target cgroup or below it? */
static __always_inline int
in_target(struct sock *s, __u64 *cgid)
{
	struct cgroup *cg = s->sk_cgrp_data.cgroup;
	struct cgroup_subsys_state *css;

	*cgid = 0;
	if (!cg || !target_cgid)
		return 0;
	*cgid = cg->kn->id;
	css = &cg->self;
	for (int i = 0; i < CG_WALK; i++) {
		if (!css || !css->cgroup)
			return 0;
		if (css->cgroup->kn->id == target_cgid)
			return 1;
		css = css->parent;
	}
	return 0;
}

static __always_inline int
mapped_loopback(const __be32 *a)
{
	if (a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff))
		return (bpf_ntohl(a[3]) >> 24) == 127;
	return a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == bpf_htonl(1);
}

/* Fills the addresses, ports, family and state of r from s. */
static __always_inline void
describe(struct sock *s, struct egr_pre_rec *r)
{
	struct sock_common *c = &s->__sk_common;
	__u16 fam = c->skc_family;

	r->family = (__u8)fam;
	r->state = c->skc_state;
	r->lport = bpf_htons(c->skc_num);
	r->rport = c->skc_dport;
	if (fam == AF_INET) {
		r->laddr[2] = bpf_htonl(0xffff);
		r->laddr[3] = c->skc_rcv_saddr;
		r->raddr[2] = bpf_htonl(0xffff);
		r->raddr[3] = c->skc_daddr;
	} else {
		BPF_CORE_READ_INTO(&r->laddr, c, skc_v6_rcv_saddr.in6_u.u6_addr32);
		BPF_CORE_READ_INTO(&r->raddr, c, skc_v6_daddr.in6_u.u6_addr32);
	}
}

/* The programs' own record of s, if it says they decided the socket (or an
 * earlier pass marked it: *before). */
static __always_inline int
decided(struct sock *s, __u64 cookie, int *before)
{
	struct egr_sk_orig *o;

	*before = 0;
	o = bpf_map_lookup_elem(&egr_socks, &cookie);
	if (o && (o->flags & EGR_SK_DIRECT))
		return 1;
	o = bpf_sk_storage_get(&egr_sk, s, 0, 0);
	if (o && (o->flags & EGR_SK_DIRECT)) {
		if (o->flags & EGR_SK_PREEXISTING) {
			*before = 1;
			return 0;
		}
		return 1;
	}
	return 0;
}

/* Did the programs let s go direct (the fast path)? Pre-existing sockets
 * (marked by an earlier pass) and those the programs redirected did not. */
static __always_inline int
went_direct(struct sock *s, __u64 cookie)
{
	struct egr_sk_orig *o;

	o = bpf_map_lookup_elem(&egr_socks, &cookie);
	if (o && (o->flags & EGR_SK_DIRECT))
		return 1;
	o = bpf_sk_storage_get(&egr_sk, s, 0, 0);
	return o && (o->flags & EGR_SK_DIRECT) && !(o->flags & EGR_SK_PREEXISTING);
}

/* The revoke pass for one socket of the target with a peer that is not
 * loopback (r described). Its peer is its destination: a direct socket is
 * never rewritten. Not marked: the reset bpf_sock_destroy() sends passes
 * the catch-all (the record says EGR_SK_DIRECT), so the peer learns the
 * connection is gone; nothing else can follow it. */
static __always_inline int
revoke_one(struct seq_file *seq, struct sock *s, struct sock_common *skc, struct egr_pre_rec *r)
{
	struct egr_fast_key k = {};
	struct egr_sk_orig *o;

	if (!went_direct(s, r->cookie))
		return 0;
	/* who connected (sock_addr's record, kept for kernel-verified
	 * sockets): the process may be gone when userspace looks for the
	 * socket's holder, after the end */
	o = bpf_map_lookup_elem(&egr_socks, &r->cookie);
	if (!o)
		o = bpf_sk_storage_get(&egr_sk, s, 0, 0);
	if (o && o->who.tgid) {
		r->tgid = o->who.tgid;
		__builtin_memcpy(r->comm, o->who.comm, sizeof(r->comm));
	}
	__builtin_memcpy(k.addr, r->raddr, sizeof(k.addr));
	k.port = r->rport;
	k.proto = r->protocol;
	if (!bpf_map_lookup_elem(&egr_revoke, &k)) {
		r->action = EGR_PRE_DIRECT;
	} else if (!bpf_sock_destroy) {
		r->action = EGR_PRE_FAILED;
		r->err = -EOPNOTSUPP; /* userspace checks before loading */
	} else {
		r->err = bpf_sock_destroy(skc);
		r->action = r->err ? EGR_PRE_FAILED : EGR_PRE_REVOKED;
	}
	bpf_seq_write(seq, r, sizeof(*r));
	return 0;
}

/* k for r (reverse: as the other end sees it). */
static __always_inline void
lo_key_of(struct sock *s, const struct egr_pre_rec *r, int reverse, struct lo_key *k)
{
	__builtin_memcpy(k->laddr, reverse ? r->raddr : r->laddr, sizeof(k->laddr));
	__builtin_memcpy(k->raddr, reverse ? r->laddr : r->raddr, sizeof(k->raddr));
	k->lport = reverse ? r->rport : r->lport;
	k->rport = reverse ? r->lport : r->rport;
	k->netns = s->__sk_common.skc_net.net->ns.inum;
}

/* A TCP socket of the target to a loopback peer (r described), in each
 * revoke mode: REVOKE_DIRECT notes it when its peer is a revoked key,
 * REVOKE_LOOPBACK ends it when its receiver is outside the target. */
static __always_inline int
revoke_lo(struct seq_file *seq, struct sock *s, struct sock_common *skc, struct egr_pre_rec *r)
{
	struct egr_fast_key k = {};
	struct lo_key lk = {};
	__u8 none = 0, *v;

	lo_key_of(s, r, 1, &lk);
	if (revoke_mode == REVOKE_DIRECT) {
		__builtin_memcpy(k.addr, r->raddr, sizeof(k.addr));
		k.port = r->rport;
		k.proto = IPPROTO_TCP;
		if (bpf_map_lookup_elem(&egr_revoke, &k) &&
		    !bpf_map_update_elem(&egr_revoke_lo, &lk, &none, BPF_NOEXIST))
			lo_found++;
		return 0;
	}
	v = bpf_map_lookup_elem(&egr_revoke_lo, &lk);
	if (!v || *v != 2)
		return 0; /* the target's own server, or no receiver seen */
	if (!bpf_sock_destroy) {
		r->action = EGR_PRE_FAILED;
		r->err = -EOPNOTSUPP;
	} else {
		r->err = bpf_sock_destroy(skc);
		r->action = r->err ? EGR_PRE_FAILED : EGR_PRE_REVOKED;
	}
	bpf_seq_write(seq, r, sizeof(*r));
	return 0;
}

/* REVOKE_RECEIVERS: s (any cgroup's; mine: the target's) receives a
 * loopback connection REVOKE_DIRECT found? */
static __always_inline int
receiver_one(struct sock *s, int mine)
{
	struct egr_pre_rec r = {};
	struct lo_key lk = {};
	__u8 *v;

	describe(s, &r);
	if (r.state == TCP_CLOSE || r.state == TCP_LISTEN || !mapped_loopback(r.laddr))
		return 0;
	lo_key_of(s, &r, 0, &lk);
	v = bpf_map_lookup_elem(&egr_revoke_lo, &lk);
	if (v)
		*v = mine ? 1 : 2;
	return 0;
}

/* One socket: s is the full socket, skc the iterator's (trusted) pointer to
 * it for bpf_sock_destroy(). */
static __always_inline int
one(struct seq_file *seq, struct sock *s, struct sock_common *skc, __u8 proto)
{
	struct egr_pre_rec r = {};
	struct egr_sk_orig *o;
	struct socket *so;
	__u64 cgid;
	int before, mine = in_target(s, &cgid);

	if (revoke_mode == REVOKE_RECEIVERS)
		return proto == IPPROTO_TCP ? receiver_one(s, mine) : 0;
	if (!mine)
		return 0;
	describe(s, &r);
	if (proto == IPPROTO_TCP) {
		if (r.state == TCP_CLOSE || r.state == TCP_LISTEN)
			return 0; /* no peer */
	} else if (r.state != TCP_ESTABLISHED) {
		return 0; /* unconnected UDP: every send runs sendmsg4/6 */
	}
	r.cookie = bpf_get_socket_cookie(s);
	r.cgroup_id = cgid;
	r.protocol = proto;
	so = s->sk_socket;
	if (so && so->file)
		r.ino = so->file->f_inode->i_ino;
	if (mapped_loopback(r.raddr))
		return revoke_mode && proto == IPPROTO_TCP ? revoke_lo(seq, s, skc, &r) : 0;
	if (revoke_mode == REVOKE_LOOPBACK)
		return 0;
	if (revoke_mode)
		return revoke_one(seq, s, skc, &r);
	if (decided(s, r.cookie, &before))
		return 0;
	if (kill_existing) {
		if (before && (o = bpf_sk_storage_get(&egr_sk, s, 0, 0)))
			/* marked by an earlier pass: its reset is dropped too */
			o->flags &= ~(EGR_SK_PREEXISTING | EGR_SK_DIRECT);
		if (!bpf_sock_destroy) {
			r.action = EGR_PRE_FAILED;
			r.err = -EOPNOTSUPP; /* userspace checks before loading */
		} else {
			/* not marked: the reset it sends is dropped by the
			 * catch-all; nothing reaches the peer any more */
			r.err = bpf_sock_destroy(skc);
			r.action = r.err ? EGR_PRE_FAILED : EGR_PRE_KILLED;
		}
	} else if (before) {
		r.action = EGR_PRE_MARKED_BEFORE;
	} else {
		o = bpf_sk_storage_get(&egr_sk, s, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (o) {
			o->flags |= EGR_SK_PREEXISTING | EGR_SK_DIRECT;
			r.action = EGR_PRE_MARKED;
		} else {
			r.action = EGR_PRE_FAILED;
			r.err = -ENOMEM;
		}
	}
	bpf_seq_write(seq, &r, sizeof(r));
	return 0;
}

SEC("iter/tcp")
int
egr_iter_tcp(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct tcp_sock *tp;

	if (!skc)
		return 0;
	visited++;
	tp = bpf_skc_to_tcp_sock(skc); /* full sockets only: not TIME_WAIT, requests */
	if (!tp)
		return 0;
	return one(ctx->meta->seq, (struct sock *)tp, skc, IPPROTO_TCP);
}

SEC("iter/udp")
int
egr_iter_udp(struct bpf_iter__udp *ctx)
{
	struct udp_sock *us = ctx->udp_sk;

	if (!us)
		return 0;
	visited++;
	return one(ctx->meta->seq, (struct sock *)us, (struct sock_common *)us, IPPROTO_UDP);
}
