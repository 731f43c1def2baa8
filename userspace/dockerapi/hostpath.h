// SPDX-License-Identifier: Apache-2.0
/* The host paths a confined job's container may not bind (-v, --mount
 * type=bind): what would let a container's root leave the job's cgroup
 * or reach a runtime outside it. Never, even read-only: /, /proc, /sys,
 * /dev, /run and every cgroup and BPF filesystem (a read-only bind still
 * lets one connect to a unix socket in it), dockerd's sockets; and not
 * writable: what the host runs as root from (/etc, /usr, /lib..., /boot,
 * /root, /var/lib, /var/spool, dockerd's root directory). A path is
 * refused when it is one of those, lies inside one, or holds one. It is
 * judged by its real path (symbolic links followed, as dockerd's mount
 * will follow them); a link changed between the judgement and the
 * container's start is not seen (docs/ci.md). */
#ifndef DOCKERAPI_HOSTPATH_H
#define DOCKERAPI_HOSTPATH_H

#include <stdbool.h>
#include <stddef.h>

#define DK_PATHS_MAX 64

struct dk_paths {
	char *never[DK_PATHS_MAX]; /* not even read-only */
	int nnever;
	char *rw[DK_PATHS_MAX]; /* not writable */
	int nrw;
};

/* The fixed lists, every cgroup, cgroup2 and bpf mount point of
 * mountinfo's text, and what the caller adds (NULL-terminated lists).
 * 0 or -ENOMEM (-E2BIG: too many). */
int dk_paths_init(struct dk_paths *p, const char *mountinfo, const char *const *never,
		  const char *const *rw);
void dk_paths_free(struct dk_paths *p);

/* May a container bind the real path path (read-only if ro)? 0, or -EPERM
 * with why ("/ holds /run"). Pure. */
int dk_paths_judge(const struct dk_paths *p, const char *path, bool ro, char *why, size_t whylen);

/* path's real path: the longest part that exists resolved (realpath(3)),
 * the rest appended as it is (dockerd makes a missing bind source). 0, or
 * -EINVAL (not absolute, a ".." past what exists), -ENAMETOOLONG, -errno. */
int dk_resolve(const char *path, char *out, size_t outlen);

#endif /* DOCKERAPI_HOSTPATH_H */
