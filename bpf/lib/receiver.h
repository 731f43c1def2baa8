// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Which socket would receive a connection or datagram, and whether it is
 * the sandbox's own. "The sandbox's own" loopback socket is decided from the
 * socket that will receive: bpf_sk_lookup_tcp/udp, the kernel's own receive
 * lookup, returns it, and it is ours when it was created in the sandbox
 * cgroup or below (a socket's cgroup is fixed at creation: who holds it
 * later, or where it was passed, changes nothing), and so is every member
 * of its SO_REUSEPORT group. Nothing is remembered about binds, so nothing
 * can go stale. Used by connect/sendmsg and bind (sock_addr.c) and by
 * the catch-all (skb.c). */
#ifndef EGR_RECEIVER_H
#define EGR_RECEIVER_H

#include "lib/common.h"
#include "lib/addr.h"
#include "lib/tunables.h"

#define CG_DEPTH      8	  /* cgroup levels below the sandbox's that still count as ours */
#define REUSEPORT_MAX 256 /* members of a SO_REUSEPORT group checked; larger: not ours */

/* Was this socket created in the sandbox cgroup or below it? s is any
 * kernel socket (read through bpf_rdonly_cast: faulting reads give 0). */
static __always_inline int
sock_ours(struct sock *s)
{
	struct cgroup_subsys_state *css = &s->sk_cgrp_data.cgroup->self;
	__u64 want = sandbox_cgid;

	if (!want)
		return 0;
#pragma unroll
	for (int i = 0; i < CG_DEPTH; i++) {
		if (!css)
			return 0;
		if (css->cgroup->kn->id == want)
			return 1;
		css = css->parent;
	}
	return 0;
}

struct group_walk {
	struct sock_reuseport *r;
	__u32 n;
	int ours;
};

static long
group_member(__u64 i, void *arg)
{
	struct group_walk *w = arg;
	struct sock *m = NULL;
	unsigned long at;

	if (i >= w->n)
		return 1;
	at = (unsigned long)w->r + bpf_core_field_offset(struct sock_reuseport, socks) + i * 8;
	if (bpf_probe_read_kernel(&m, sizeof(m), (void *)at) || !m ||
	    !sock_ours(bpf_rdonly_cast(m, bpf_core_type_id_kernel(struct sock)))) {
		w->ours = 0;
		return 1;
	}
	return 0;
}

/* s is ours, and so is every socket that shares its SO_REUSEPORT group
 * (the kernel picks a member per connection or datagram: by a hash of the
 * addresses and ports, or by the group's own BPF program). */
static __always_inline int
receiver_ours_sk(struct bpf_sock *sk)
{
	struct sock *s = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct sock));
	struct group_walk w = {};

	if (!sock_ours(s))
		return 0;
	w.r = s->sk_reuseport_cb;
	if (!w.r)
		return 1;
	w.n = w.r->num_socks; /* the open members; closed ones take nothing new */
	if (w.n > REUSEPORT_MAX)
		return 0;
	w.ours = 1;
	bpf_loop(REUSEPORT_MAX, group_member, &w, 0);
	return w.ours;
}

enum {
	RCV_NONE = 0,
	RCV_OTHER = 1,
	RCV_OURS = 2
};

/* Who receives a connection (TCP) or a datagram (UDP) from src:sport to
 * dst:dport: nobody, a socket of this sandbox (receiver_ours_sk), or any
 * other. The lookup is the kernel's receive lookup, in the caller's network
 * namespace: a connected socket, else the listener or bound socket with the
 * most specific address (IPv4 also reaches [::] sockets without
 * IPV6_V6ONLY), and a SO_REUSEPORT group's member. ctx is the program's
 * context (a sock_addr or skb one). */
static __always_inline int
receiver(void *ctx, const __be32 *dst, __be16 dport, const __be32 *src, __be16 sport, __u8 proto)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;
	int ours;

	if (is_mapped(dst)) {
		t.ipv4.saddr = src[3];
		t.ipv4.daddr = dst[3];
		t.ipv4.sport = sport;
		t.ipv4.dport = dport;
		if (proto == IPPROTO_TCP)
			sk = bpf_sk_lookup_tcp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
		else
			sk = bpf_sk_lookup_udp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	} else {
		addr_copy(t.ipv6.saddr, src);
		addr_copy(t.ipv6.daddr, dst);
		t.ipv6.sport = sport;
		t.ipv6.dport = dport;
		if (proto == IPPROTO_TCP)
			sk = bpf_sk_lookup_tcp(ctx, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
		else
			sk = bpf_sk_lookup_udp(ctx, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
	}
	if (!sk)
		return RCV_NONE;
	ours = receiver_ours_sk(sk);
	bpf_sk_release(sk);
	return ours ? RCV_OURS : RCV_OTHER;
}

#endif /* EGR_RECEIVER_H */
