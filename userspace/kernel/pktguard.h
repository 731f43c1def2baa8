// SPDX-License-Identifier: Apache-2.0
/* The packet guard (bpf/pktguard.bpf.c) of `daemon --docker`: its tc
 * ingress program on the host side of every veth that is a bridge's port
 * in this network namespace, now and as they appear (rtnetlink, read by a
 * thread of its own), drops
 * what an AF_PACKET socket of a target's cgroup wrote (a docker build's
 * RUN step keeps docker's NET_RAW). Not pinned: tc holds the program while
 * a port has it; the daemon's stop takes it off the ports it put it on. */
#ifndef KERNEL_PKTGUARD_H
#define KERNEL_PKTGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pktguard;

/* Loaded, put on every bridge port there is now, and its thread putting
 * it on each new one as rtnetlink says it is made. NULL with errbuf on
 * failure, nothing left on. */
struct pktguard *pktguard_open(char *errbuf, size_t errlen);

/* A target's cgroup (and what is below it) guarded, or not any more. */
int pktguard_add(struct pktguard *g, uint64_t cgid);
int pktguard_del(struct pktguard *g, uint64_t cgid);

/* Frames dropped so far. */
uint64_t pktguard_dropped(const struct pktguard *g);

/* Its thread stopped; taken off every port it was put on (off), or left
 * there (the ports keep the program and its map: what was guarded stays
 * so), and closed. */
void pktguard_close(struct pktguard *g, bool off);

#endif /* KERNEL_PKTGUARD_H */
