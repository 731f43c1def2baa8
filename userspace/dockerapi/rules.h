// SPDX-License-Identifier: Apache-2.0
/* What a confined job may ask of dockerd through egressctl's socket: the
 * Docker Engine API judged request by request. Pure (but for the bind
 * sources, judged through a callback): a request's method and target
 * classified (rules.c), its JSON body judged and rewritten (hostcfg.c),
 * the answer to refuse it. Every container the job makes is put under the
 * job's cgroup (HostConfig.CgroupParent, /build's cgroupparent), where
 * the job's BPF programs run for its sockets; what would take a container
 * out of that cgroup or out of the programs' sight (--privileged,
 * --cap-add NET_ADMIN, --pid host, a bind of / or of a runtime's socket,
 * --cgroup-parent, a log driver that sends the container's output over
 * the network, BuildKit, plugins, swarm, ...) is refused with a message
 * naming the flag; a container that is not the job's may not be started,
 * attached to, exec'd into, updated or written to. */
#ifndef DOCKERAPI_RULES_H
#define DOCKERAPI_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dockerapi/json.h"

#define DK_BODY_MAX   (1u << 20) /* a JSON body read to be judged */
#define DK_ID_MAX     128	 /* a container's id or name in a path */
#define DK_TARGET_MAX 16384	 /* a request target as forwarded */
#define DK_MSG_MAX    640

/* The answer to a refused request: status (403, 400, 411, 413) and the
 * message docker prints ("Error response from daemon: MESSAGE"). */
struct dk_verdict {
	int status;
	char msg[DK_MSG_MAX];
	/* a create's first read-write bind of a host file or directory, as
	 * docker names it ("" none): the set-id rule (hostcfg.c) */
	char rw_bind[160];
};

/* What a request is, as far as the judge cares. */
enum dk_kind {
	DK_OTHER = 0,	  /* forwarded as it is */
	DK_CREATE,	  /* POST /containers/create: body judged, CgroupParent set */
	DK_UPDATE,	  /* POST /containers/{id}/update: body judged */
	DK_EXEC,	  /* POST /containers/{id}/exec: body judged */
	DK_START,	  /* POST /containers/{id}/start: no HostConfig body */
	DK_BUILD,	  /* POST /build: query judged, cgroupparent set */
	DK_VOLUME,	  /* POST /volumes/create: body judged */
	DK_CONTAINER_USE, /* the job's containers only (attach, restart, archive) */
	DK_AUTH,	  /* POST /auth (docker login): its registry judged */
	DK_NETWORK,	  /* POST /networks/{id}/connect, /disconnect, /networks/prune,
			   * DELETE /networks/{id}: the daemon told before (but a
			   * connect) and after (dockerapi_opts.networks) */
};

struct dk_route {
	enum dk_kind kind;
	bool body;	    /* a JSON body to read and judge */
	bool own;	    /* the container in the path must be the job's */
	char id[DK_ID_MAX]; /* the {id} of /containers/{id}/ACTION, decoded */
	/* a build's --network NAME (its first networkmode, as dockerd reads
	 * it) where that is a network's name or id: its driver must be
	 * bridge, asked of dockerd (dk_build_network); "" none */
	char network[DK_ID_MAX];
	char action[32];  /* ACTION ("start", "attach/ws") */
	char version[16]; /* "1.41" of a "/v1.41" prefix; "" none */
	bool has_query;
	size_t query; /* where the query starts in the target (after '?') */
	/* a registry dockerd would reach for the job (pull, push, login,
	 * search, inspect): judged by the job's policy; "" none */
	char registry[256];
	unsigned short rport;
	char rwhat[24]; /* "docker pull from", ... */
};

/* What the judge needs to know of the job and the host. */
struct dk_ctx {
	const char *parent; /* the job's cgroup below the cgroup2 mount ("/egressctl/x") */
	bool place;	    /* set CgroupParent (false: dockerd cannot take it; audit mode) */
	/* A bind's host path: 0 when a container may have it (read-only if
	 * ro), 1 when it may and is docker's socket (no file can be made
	 * through it), else -EPERM with why set ("holds /run"). */
	int (*host_path)(void *arg, const char *path, bool ro, char *why, size_t whylen);
	void *arg;
	/* who asks (SO_PEERCRED): a container with a read-write bind runs as
	 * uid:gid (user_known false: it cannot have one) */
	bool user_known;
	unsigned int uid, gid;
	uint64_t job; /* the job's id (dockerapi_job.id) */
	/* A container that runs as anybody else gets its read-write binds
	 * idmapped (idmap.h): the mount point of path's idmapped copy, uid
	 * and gid its 0, for job, into out; 0, or -errno with why set. NULL:
	 * such a container is refused (audit mode: nothing rewritten). */
	int (*idmap)(void *arg, const char *path, unsigned int uid, unsigned int gid, uint64_t job,
		     char *out, size_t outlen, char *why, size_t whylen);
};

/* Classifies method and target (as sent: "/v1.41/containers/x/start?y";
 * ctype: the Content-Type header's value or NULL). 0 with r filled, or
 * -EPERM with v set (refused whatever the body). */
int dk_classify(const char *method, const char *target, size_t len, const char *ctype,
		struct dk_route *r, struct dk_verdict *v);

/* Judges a JSON body of kind r->kind, rewriting it (CgroupParent). 0, or
 * -EPERM with v set. */
int dk_judge_body(const struct dk_route *r, struct dj *body, const struct dk_ctx *c,
		  struct dk_verdict *v);

/* /build's target with its query judged, its cgroupparent pairs (docker
 * sends one, empty) replaced by cgroupparent=<parent>, into out. 0, or
 * -EPERM with v set. */
int dk_build_target(const char *target, size_t len, const struct dk_ctx *c, char *out,
		    size_t outlen, struct dk_verdict *v);

/* The target with the container of the path replaced by id (its full
 * id, which no rename changes), into out. 0 or -ENAMETOOLONG. */
int dk_target_with_id(const char *target, size_t len, const struct dk_route *r, const char *id,
		      char *out, size_t outlen);

/* Is the container dockerd described (GET /containers/{id}/json, the
 * JSON in body) the job's: made under its cgroup? Its full id into id.
 * 0, or -EPERM with v set (another's, or not a container). */
int dk_owned(const struct dj *inspect, const struct dk_ctx *c, const struct dk_route *r, char *id,
	     size_t idlen, struct dk_verdict *v);

/* May a build's RUN steps run on the network dockerd described (GET
 * /networks/{name}, the JSON in body)? Only a bridge's ports carry the
 * packet guard; on any other driver's interface (macvlan, ipvlan: the
 * host's own device) a step's AF_PACKET frames would leave unseen. 0, or
 * -EPERM with v set. */
int dk_build_network(const struct dj *inspect, const struct dk_route *r, struct dk_verdict *v);

/* The registry an image reference names, as docker reads it ("busybox",
 * "ghcr.io/o/x:1", "localhost:5000/x", "[2001:db8::1]:5000/x"): its host
 * (docker.io's is registry-1.docker.io) and port (443 unless given).
 * 0 or -EINVAL. */
int dk_registry_of(const char *ref, char *host, size_t hostlen, unsigned short *port);

/* POST /auth's body: the registry of its serveraddress (a URL or
 * HOST[:PORT]; none: docker.io's index) into r. 0, or -EPERM with v. */
int dk_auth_registry(const struct dj *body, struct dk_route *r, struct dk_verdict *v);

/* With dockerd's systemd cgroup driver a container's parent is a slice
 * name: the slice whose cgroup cgroup is (below the cgroup2 mount, as the
 * job's), systemd's root being root there ("" or "/": the mount's own;
 * "/x": dockerd's cgroup namespace's), so cgroup must be root's
 * "/a.slice", "/a.slice/a-b.slice", ... as systemd nests slices. Its last
 * component ("a-b.slice") into out: 0, -EINVAL (not a slice's cgroup),
 * -ENAMETOOLONG. Pure. */
int dk_slice_of(const char *cgroup, const char *root, char *out, size_t outlen);

/* v := status, "egressctl: " and the message. */
void dk_refuse(struct dk_verdict *v, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Percent-decodes n bytes of s into out (plus as space if plus): 0, or
 * -EINVAL on a bad escape or a NUL, -ENAMETOOLONG. */
int dk_unescape(const char *s, size_t n, bool plus, char *out, size_t outlen);

/* Does filter (dockerapi_filter_check's: "network=GLOB", "label=KEY",
 * "label=KEY=VALUE") select the container c, an element of GET
 * /containers/json? A network by its name (fnmatch), a label by its key
 * and, with "=VALUE", its value. */
bool dk_filter_selects(const char *filter, const struct dj *c);

#endif /* DOCKERAPI_RULES_H */
