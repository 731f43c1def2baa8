// SPDX-License-Identifier: Apache-2.0
/* Containers in a daemon target (--containers): the names a decision's
 * cgroup has. A container runtime told to place its containers under a
 * target (docker's cgroup-parent, podman's --cgroup-parent, containerd's
 * cgroup path) gives each one a cgroup below it whose path carries the
 * container's id; the decision log names both. */
#ifndef CONTAINERS_H
#define CONTAINERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The container id a cgroup path carries (pure; the path is any bytes):
 * the component nearest the leaf that is a 64-hex-digit id, alone
 * (docker's cgroupfs driver: <parent>/<id>; containerd) or as
 * docker-<id>.scope, libpod-<id>.scope (podman; libpod-payload-<id> with
 * --cgroups=split), crio-<id>.scope,
 * cri-containerd-<id>.scope, with or without ".scope". conmon's
 * libpod-conmon-<id> is no container. Writes it (lower case) to id (65
 * bytes at least) and returns true, or false with id "". */
bool ctr_id_of_path(const char *path, char *id, size_t idlen);

/* The address of --containers ADDR (and the config's "containers"): an
 * IPv4 address of this host (network order), neither unspecified nor
 * loopback, multicast or broadcast. Returns 0, or -EINVAL with err set. */
int ctr_parse_addr(const char *s, uint32_t *ip, char *err, size_t errlen);

/* Keeps ip (network order) an address of this network namespace: a
 * container's redirected connection to it must be delivered here, never
 * routed out towards whoever has it elsewhere (a bridge that went away
 * with its last container: podman's). When no interface has it, it is
 * added to lo as ip/32 (and stays: pinned programs outlive the daemon).
 * Returns 0 (it was there), 1 (added), or -errno with err set. */
int ctr_addr_ensure(uint32_t ip, char *err, size_t errlen);

struct ctr_names;

/* Names for cgroups of the cgroup2 mount mnt. NULL with errno. */
struct ctr_names *ctr_names_new(const char *mnt);
void ctr_names_free(struct ctr_names *n);

/* The path below the mount (as /proc/PID/cgroup shows it) of cgroup
 * cgid and its container id; NULL each when unknown (a cgroup already
 * gone). Valid until the next call. The signature of audit_namer. */
void ctr_names_lookup(void *names, uint64_t cgid, const char **path, const char **id);

#endif /* CONTAINERS_H */
