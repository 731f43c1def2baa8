// SPDX-License-Identifier: Apache-2.0
/* Idmapped binds for a confined job's containers: a container that runs
 * as anybody but the job's user (root: docker's default, the image's
 * USER) gets each read-write bind of a host path through an idmapped
 * mount of that path, where the job user's uid and gid are 0, instead of
 * being refused: what its root makes there is the job user's, set-uid to
 * nobody else, and it can write nothing the job user could not. A
 * container's own copy of the mount lives as long as the container; ours
 * are kept while the job runs (dockerd binds them again at each start).
 * Linux 5.12 and a file system that takes idmapped mounts (ext4, xfs,
 * btrfs; tmpfs since 6.3); else the container is refused, saying why. */
#ifndef DOCKERAPI_IDMAP_H
#define DOCKERAPI_IDMAP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DK_IDMAP_MAX   256 /* mount points (one per path and user) */
#define DK_IDMAP_USERS 8   /* user namespaces (one per uid:gid) */

struct dk_idmap {
	dev_t dev;
	ino_t ino;
	unsigned int uid, gid;
	uint64_t job;	  /* whose container asked (dockerapi_job.id) */
	unsigned int seq; /* its mount point: DIR/<seq> */
};

struct dk_idmap_user {
	unsigned int uid, gid;
	int fd; /* its user namespace; -1: unused */
};

struct dk_idmaps {
	char dir[PATH_MAX]; /* DIR/egressctl-idmap-<pid> */
	bool made;
	unsigned int seq;
	int n;
	struct dk_idmap maps[DK_IDMAP_MAX];
	struct dk_idmap_user users[DK_IDMAP_USERS];
};

/* Nothing made yet; mount points will be below dir (a directory of
 * root's: the daemon's). */
void dk_idmaps_init(struct dk_idmaps *m, const char *dir);
/* An earlier daemon's mount points in dir: detached and removed. */
void dk_idmaps_forget_earlier(const struct dk_idmaps *m, const char *dir);
/* Ours detached and removed, the namespaces closed. */
void dk_idmaps_free(struct dk_idmaps *m);

/* The idmapped mount of what fd (O_PATH, the bind's source) is, its
 * uid:gid as 0, for job's containers, made or found again: its mount
 * point into out. 0, or -errno with why set ("its file system cannot be
 * idmapped ..."). */
int dk_idmap_make(struct dk_idmaps *m, int fd, unsigned int uid, unsigned int gid, uint64_t job,
		  char *out, size_t outlen, char *why, size_t whylen);
/* job is gone: its mounts detached and removed (its containers, if any
 * still run, keep their copies; one started again binds an empty
 * directory). */
void dk_idmaps_forget_job(struct dk_idmaps *m, uint64_t job);

#endif /* DOCKERAPI_IDMAP_H */
