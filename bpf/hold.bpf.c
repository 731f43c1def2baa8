// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The hold: what the daemon attaches to a selector's root so that a cgroup
 * made below it is confined from its mkdir, not from the moment the daemon
 * has loaded and attached its target's programs (docs/operations.md,
 * "Selectors"). Until the daemon passes a cgroup, every connect() and UDP
 * send of its processes is refused (EPERM) and every packet of its sockets
 * dropped: nothing leaves, loopback included.
 *
 * egr_hold_pass holds the cgroups passed: EGR_HOLD_TREE, a cgroup and
 * everything below it (a target attached there: from then on its own
 * programs decide; the default's "unconfined"; the daemon's own), and
 * EGR_HOLD_SELF, a cgroup alone (a directory under which a selector may
 * still match, the root itself, and what stood below the root before its
 * hold). Passing never lifts a target's own programs: a cgroup's effective
 * programs are its own and its ancestors', each of which must allow.
 *
 * A process is judged by its own cgroup (connect and sendmsg run in its
 * context), a packet by its socket's (where the socket was made). */
#include "lib/common.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGR_HOLD_MAX);
	__type(key, __u64);
	__type(value, __u32);
} egr_hold_pass SEC(".maps");

__u64 egr_hold_refused[EGR_HOLD_NSTATS] = {}; /* read by the daemon */

static __always_inline int
passed(__u64 self, bool is_skb, struct __sk_buff *skb)
{
	__u32 *v;

	if (!self) /* no cgroup to judge: not a process of the root's */
		return 1;
	if (bpf_map_lookup_elem(&egr_hold_pass, &self))
		return 1;
	for (int level = 1; level < EGR_HOLD_DEPTH; level++) {
		__u64 id = is_skb ? bpf_skb_ancestor_cgroup_id(skb, level)
				  : bpf_get_current_ancestor_cgroup_id(level);

		if (!id || id == self)
			break;
		v = bpf_map_lookup_elem(&egr_hold_pass, &id);
		if (v && (*v & EGR_HOLD_TREE))
			return 1;
	}
	return 0;
}

static __always_inline int
addr_hold(int stat)
{
	if (passed(bpf_get_current_cgroup_id(), false, NULL))
		return 1;
	__sync_fetch_and_add(&egr_hold_refused[stat], 1);
	return 0;
}

SEC("cgroup/connect4")
int
egr_hold_connect4(struct bpf_sock_addr *ctx)
{
	return addr_hold(EGR_HOLD_CONNECT);
}

SEC("cgroup/connect6")
int
egr_hold_connect6(struct bpf_sock_addr *ctx)
{
	return addr_hold(EGR_HOLD_CONNECT);
}

SEC("cgroup/sendmsg4")
int
egr_hold_sendmsg4(struct bpf_sock_addr *ctx)
{
	return addr_hold(EGR_HOLD_SENDMSG);
}

SEC("cgroup/sendmsg6")
int
egr_hold_sendmsg6(struct bpf_sock_addr *ctx)
{
	return addr_hold(EGR_HOLD_SENDMSG);
}

SEC("cgroup_skb/egress")
int
egr_hold_skb(struct __sk_buff *skb)
{
	if (passed(bpf_skb_cgroup_id(skb), true, skb))
		return 1;
	__sync_fetch_and_add(&egr_hold_refused[EGR_HOLD_SKB], 1);
	return 0;
}
