// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The maps, shared by every program. Names stay within 15 characters so
 * the kernel shows them whole. Userspace reaches them through the skeleton and the pins
 * under /sys/fs/bpf/egressctl/<cgroup id>/. */
#ifndef EGR_MAPS_H
#define EGR_MAPS_H

#include "lib/common.h"
#include "lib/sk_maps.h" /* egr_socks, egr_sk */

/* The proxy's lookup: client (local addr, port) -> who connected, to where. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct egr_conn_key);
	__type(value, struct egr_conn_val);
} egr_conns SEC(".maps");

/* The TCP ports some allow rule names (include/egress_abi.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct egr_ports);
} egr_ports SEC(".maps");

/* Approved direct targets (fast path) and explicit loopback allows. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct egr_fast_key);
	__type(value, struct egr_fast_val);
} egr_fast SEC(".maps");

/* IPv4 networks a TCP connect goes to direct (include/egress_abi.h). */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EGR_FAST_NET_MAX);
	__type(key, struct egr_net_key);
	__type(value, __u8);
} egr_fast_net SEC(".maps");

/* The addresses of egressctl's own network namespace (include/egress_abi.h):
 * whom a connection a listener of the sandbox accepted may answer. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGR_HOSTADDR_MAX);
	__type(key, struct egr_hostaddr_key);
	__type(value, __u8);
} egr_hostaddr SEC(".maps");

/* A job's containers on a docker network they share: whom a socket of a
 * network namespace reaches direct (include/egress_abi.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGR_PEER_MAX);
	__type(key, struct egr_peer_key);
	__type(value, __u8);
} egr_peer SEC(".maps");

/* Learned names and fast-path approvals, for a restarted daemon (no program
 * reads it: it is pinned and adopted with the rest). As many as the
 * responder keeps of both. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EGR_SAVED_NAMES + 65536);
	__type(key, struct egr_saved_key);
	__type(value, struct egr_saved_val);
} egr_saved SEC(".maps");

/* The kernel-verified path (include/egress_abi.h): answered addresses and
 * ports, and the names answered with them; written by the DNS responder. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct egr_fast_key);
	__type(value, struct egr_fast_val);
} egr_vdst SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct egr_vname_key);
	__type(value, struct egr_vname_val);
} egr_vname SEC(".maps");

/* Deny, redirect and loopback-allow events for userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} egr_events SEC(".maps");

/* Counters by enum egr_counter, per CPU: no atomics on the hot path. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EGR_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} egr_stats SEC(".maps");

#endif /* EGR_MAPS_H */
