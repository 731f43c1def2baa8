// SPDX-License-Identifier: Apache-2.0
/* dockerapi's own state (see dockerapi.h), shared by server.c (the socket
 * taken over, the listener, dockerd asked at the start) and conn.c (one
 * connection's life). Only these include it. */
#ifndef DOCKERAPI_CORE_H
#define DOCKERAPI_CORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/queue.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "dockerapi/dockerapi.h"
#include "dockerapi/hostpath.h"
#include "dockerapi/idmap.h"

#define DK_MAX_CONNS   1024	    /* at once, everybody's */
#define DK_MAX_JOBS    256	    /* of them, the jobs' (the rest stays for anybody else) */
#define DK_HEAD_MAX    (256u << 10) /* a request head (X-Registry-Config can be large) */
#define DK_RESP_HEAD   (64u << 10)
#define DK_INSPECT_MAX (4u << 20) /* GET /containers/{id}/json */
#define DK_HIGH	       (1u << 20) /* bytes waiting for a slow reader before reading stops */

struct dk_conn;

struct dockerapi {
	struct event_base *base;
	struct dockerapi_opts o;
	char path[PATH_MAX]; /* PATH resolved: where the mount is */
	char own[PATH_MAX];  /* egressctl's socket */
	char mnt[PATH_MAX];  /* the cgroup2 mount */
	int real_fd;	     /* O_PATH: dockerd's socket, below the mount */
	char real_name[32];  /* "/proc/self/fd/N": how dockerd is reached */
	struct evconnlistener *lis;
	bool mounted;
	char driver[32]; /* dockerd's cgroup driver ("cgroupfs", "systemd") */
	/* systemd's: the root its slices are below (rules.h, dk_slice_of) */
	char sd_root[PATH_MAX];
	bool sd_known;
	bool same_mntns;	 /* dockerd resolves paths in the daemon's mount namespace */
	char root_dir[PATH_MAX]; /* dockerd's DockerRootDir */
	struct dk_paths paths;	 /* what no container of a job may bind */
	struct dk_idmaps idmaps; /* read-write binds of containers not run as the job's user */
	LIST_HEAD(, dk_conn) conns;
	int nconns, njob;
	bool warned_full;
};

/* ---- server.c ---- */

/* A new connection to dockerd (nonblocking; the connect may still be in
 * progress): the descriptor, or -errno. */
int dk_dial(struct dockerapi *d);
/* A blocking request to dockerd: the response's status and its body
 * (malloc'd, NUL-terminated, at most max bytes) for GET target, sent as
 * HTTP/1.0 so that dockerd ends the body by closing. 0 or -errno. */
int dk_get(struct dockerapi *d, const char *target, size_t max, int *status, char **body,
	   size_t *len);

/* The containers' parent of a job whose cgroup (below the cgroup2 mount)
 * is cgroup, as dockerd's cgroup driver takes it, into out: the cgroup
 * itself (cgroupfs), the slice whose cgroup it is (systemd). False: none
 * (out is the cgroup then), what would need one is refused. */
bool dk_job_parent(const struct dockerapi *d, const char *cgroup, char *out, size_t outlen);

/* ---- conn.c ---- */

/* A connection accepted on egressctl's socket: who made it decides. */
void dk_conn_accept(struct dockerapi *d, int fd);
void dk_conn_free_all(struct dockerapi *d);

#endif /* DOCKERAPI_CORE_H */
