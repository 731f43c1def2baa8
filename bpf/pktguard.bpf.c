// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The packet guard (daemon --docker): a tc ingress program on the host
 * side of every veth that is a bridge's port in the daemon's network
 * namespace, the way a container's frames enter the host. A frame written
 * by an AF_PACKET socket (any socket but an inet one) passes no connect,
 * sendmsg or egress hook of a cgroup, and the host forwards it as it
 * forwards the container's routed traffic; it still carries its socket,
 * and so the cgroup the socket was made in, as far as this ingress (the
 * bridge orphans it after). Such a frame from a socket of a target's
 * cgroup, or below it (a docker build's RUN step keeps docker's NET_RAW),
 * is dropped; everything else passes untouched: other containers' frames,
 * and the targets' own through their inet sockets, which their cgroup's
 * programs judged already. */
#include "lib/common.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define GUARD_DEPTH 16 /* cgroup levels looked up for a target's */
#define TC_ACT_OK   0
#define TC_ACT_SHOT 2

/* the targets' cgroup ids (the daemon's) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u32);
} egr_guard_cg SEC(".maps");

__u64 egr_guard_dropped = 0; /* read by the daemon */

SEC("tc")
int
egr_pktguard(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;

	if (!sk)
		return TC_ACT_OK;
	sk = bpf_sk_fullsock(sk);
	if (!sk || sk->family == AF_INET || sk->family == AF_INET6)
		return TC_ACT_OK;
	for (int level = GUARD_DEPTH; level >= 0; level--) {
		__u64 id = bpf_skb_ancestor_cgroup_id(skb, level);

		if (id && bpf_map_lookup_elem(&egr_guard_cg, &id)) {
			__sync_fetch_and_add(&egr_guard_dropped, 1);
			return TC_ACT_SHOT;
		}
	}
	return TC_ACT_OK;
}
