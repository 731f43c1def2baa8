// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The two maps of per-socket records, egr_socks and egr_sk: part of the
 * maps every program shares (lib/maps.h), and the ones the pre-existing
 * pass (existing.bpf.c, an object of its own) shares with them by fd
 * (bpf_map__reuse_fd before load; kernel/existing.c checks type, key and
 * value sizes first). */
#ifndef EGR_SK_MAPS_H
#define EGR_SK_MAPS_H

#include "lib/common.h"

/* Per socket, by socket cookie: what connect/sendmsg decided (original
 * destination, EGR_SK_* flags). Preallocated, so the connect path allocates
 * nothing; freed at sock_release, or for TCP fast-path sockets once both
 * sock_release and TCP_CLOSE have been seen (EGR_LIFE_*). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u64);
	__type(value, struct egr_sk_orig);
} egr_socks SEC(".maps");

/* Per socket, freed with it: catch-all reports (EGR_SK_SKB_SEEN), audit-mode
 * passes, and connect/sendmsg records while egr_socks is full. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct egr_sk_orig);
} egr_sk SEC(".maps");

#endif /* EGR_SK_MAPS_H */
