// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* What the maps know about a socket and a target: the socket's record
 * (egr_socks by cookie, else egr_sk), who connected (for egr_conns), and
 * the approved targets (egr_fast). */
#ifndef EGR_RECORD_H
#define EGR_RECORD_H

#include "lib/common.h"
#include "lib/addr.h"
#include "lib/maps.h"

/* The connect/sendmsg record of a socket: egr_socks, else egr_sk (full map). */
static __always_inline struct egr_sk_orig *
sock_rec(struct bpf_sock *sk, __u64 cookie)
{
	struct egr_sk_orig *o = bpf_map_lookup_elem(&egr_socks, &cookie);

	if (o || !sk)
		return o;
	return bpf_sk_storage_get(&egr_sk, sk, 0, 0);
}

/* The socket's record to change (sendmsg: look up first, it repeats), or a
 * new one: an egr_socks entry keyed by the socket cookie. Creating
 * sk_storage costs an allocation and several irq-disabling locks per
 * socket; a preallocated hash insert takes one bucket lock. When egr_socks
 * is full the record goes to egr_sk instead, where every reader looks
 * second. v is the new record's content when it is created here (then NULL
 * is returned, and *created is 1). */
static __always_inline struct egr_sk_orig *
rec_for(struct bpf_sock *sk, __u64 cookie, __u8 hook, struct egr_sk_orig *v, int *created)
{
	struct egr_sk_orig *o = NULL;

	*created = 0;
	if (hook == EGR_H_SENDMSG4 || hook == EGR_H_SENDMSG6)
		o = sock_rec(sk, cookie);
	if (o)
		return o;
	if (!bpf_map_update_elem(&egr_socks, &cookie, v, BPF_NOEXIST)) {
		*created = 1;
		return NULL;
	}
	o = bpf_map_lookup_elem(&egr_socks, &cookie); /* lost a race */
	if (!o && sk)
		o = bpf_sk_storage_get(&egr_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	return o;
}

/* Who is connecting: the current task, for the proxy's and the responder's
 * lookup (egr_conns). Only in the task's own context (connect, sendmsg,
 * TCP_CONNECT_CB), never in the catch-all. */
static __always_inline void
who_task(struct egr_conn_val *w, __u64 cookie, __u64 netns)
{
	__u64 id = bpf_get_current_pid_tgid();

	w->cookie = cookie;
	w->netns = netns;
	w->cgroup_id = bpf_get_current_cgroup_id();
	w->pid = (__u32)id;
	w->tgid = id >> 32;
	w->uid = (__u32)bpf_get_current_uid_gid();
	bpf_get_current_comm(w->comm, sizeof(w->comm));
}

/* Indexes who connected from k (egr_conns) for the proxy's or the
 * responder's lookup. The entry it replaces may be a live socket's that
 * no accept (or datagram) took yet: then two sockets share that address
 * and port -- containers, each in its own network namespace, may -- and
 * whichever the listener gets cannot be told apart. The entry then says
 * EGR_CONN_AMBIGUOUS (and stays so for the socket that wrote it), and is
 * refused. Live:
 * the socket still has its egr_socks record (a redirected socket keeps it
 * until it is released; one whose record went to egr_sk, with egr_socks
 * full, is not seen). */
static __always_inline void
conns_put(const struct egr_conn_key *k, struct egr_conn_val *w)
{
	struct egr_conn_val *e = bpf_map_lookup_elem(&egr_conns, k);

	if (!e)
		;
	else if (e->cookie != w->cookie && bpf_map_lookup_elem(&egr_socks, &e->cookie))
		w->flags |= EGR_CONN_AMBIGUOUS; /* another live socket's */
	else if (e->cookie == w->cookie && (e->flags & EGR_CONN_AMBIGUOUS))
		w->flags |= EGR_CONN_AMBIGUOUS; /* this socket's, found ambiguous before */
	bpf_map_update_elem(&egr_conns, k, w, BPF_ANY);
}

/* An entry for (addr, port, proto) in map (egr_fast, or egr_vdst of the
 * kernel-verified path: the same key and value) that has not expired; an
 * expired one is removed. */
static __always_inline int
dst_hit(void *map, const __be32 *addr, __be16 port, __u8 proto)
{
	struct egr_fast_key k = {};
	struct egr_fast_val *v;

	addr_copy(k.addr, addr);
	k.port = port;
	k.proto = proto;
	v = bpf_map_lookup_elem(map, &k);
	if (!v)
		return 0;
	if (v->expires_ns && v->expires_ns < bpf_ktime_get_boot_ns()) {
		bpf_map_delete_elem(map, &k);
		return 0;
	}
	v->hits++;
	return 1;
}

/* addr (v4-mapped) in a network of egr_fast_net. */
static __always_inline int
net_hit(const __be32 *addr)
{
	struct egr_net_key k = {.prefixlen = 128};

	addr_copy(k.addr, addr);
	return bpf_map_lookup_elem(&egr_fast_net, &k) != NULL;
}

/* A fast-path entry for (addr, port, proto) that has not expired. */
static __always_inline int
fast_hit(const __be32 *addr, __be16 port, __u8 proto)
{
	return dst_hit(&egr_fast, addr, port, proto);
}

/* A socket of network namespace netns to addr: a container of the
 * target's to another on a docker network both are on (egr_peer), kept by
 * the daemon. 0 for a namespace it has not named, and without peers_on. */
static __always_inline int
peer_hit(__u64 netns, const __be32 *addr)
{
	struct egr_peer_key k = {.netns = netns};

	if (!peers_on || !netns)
		return 0;
	k.addr[0] = addr[0];
	k.addr[1] = addr[1];
	k.addr[2] = addr[2];
	k.addr[3] = addr[3];
	return bpf_map_lookup_elem(&egr_peer, &k) != NULL;
}

#endif /* EGR_RECORD_H */
