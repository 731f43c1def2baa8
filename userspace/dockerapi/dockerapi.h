// SPDX-License-Identifier: Apache-2.0
/* dockerd's socket, kept for a confined job: the daemon's `--docker PATH`.
 * A socket of egressctl's is bind-mounted over dockerd's (PATH), so that
 * every name of PATH leads to it; each connection is served by who made
 * it. A process of a job the daemon confines (the caller says which, by
 * its cgroup) has its Docker Engine API requests judged (rules.h): its
 * containers and build steps run under the job's cgroup, where the job's
 * programs confine them, and what would take one out of there is refused
 * with a message naming the flag; a registry dockerd would reach for it
 * (pull, push, login) is judged by the job's policy. Anybody else's
 * connection is relayed to
 * dockerd untouched. dockerd itself is reached through a descriptor of
 * its socket opened before the mount. One libevent loop (the daemon's). */
#ifndef DOCKERAPI_H
#define DOCKERAPI_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <event2/event.h>

struct dockerapi;

/* The job a connection's process belongs to, as the caller tells it. */
struct dockerapi_job {
	char cgroup
		[PATH_MAX]; /* below the cgroup2 mount ("/egressctl/x"): the containers' parent */
	bool audit;	    /* record what would be refused, refuse nothing */
	uint64_t id;	    /* the caller's name of the job, for said() */
};

struct dockerapi_opts {
	const char *path; /* dockerd's socket, taken over ("/run/docker.sock") */
	const char *own;  /* where egressctl's socket is made (a directory of root's) */
	const char *mnt;  /* the cgroup2 mount */
	/* Is a process in cgroup (below mnt) one of a job's? 1 with job
	 * filled, 0 if not. */
	int (*job_of)(void *arg, const char *cgroup, struct dockerapi_job *job);
	/* A line for the log of job id (and stderr). */
	void (*said)(void *arg, uint64_t id, const char *words);
	/* May job id have dockerd reach host:port for it (a registry: a
	 * pull, push, login)? 0, or -EPERM with why (the policy's words). */
	int (*judge)(void *arg, uint64_t id, const char *host, unsigned short port, char *why,
		     size_t whylen);
	/* job id's docker start (or restart) of container (as its request
	 * named it: an id, a prefix or a name) succeeded; NULL: not told */
	void (*started)(void *arg, uint64_t id, const char *container);
	/* job id asks dockerd to connect a container to a network or
	 * disconnect one, or to remove or prune networks: called before any
	 * but a connect goes to dockerd (done false), and after dockerd
	 * answered (done true); NULL: not told */
	void (*networks)(void *arg, uint64_t id, bool done);
	void *arg;
};

/* Takes PATH over: dockerd's socket opened, egressctl's made (owner,
 * group and mode of dockerd's) and mounted over it, dockerd asked what it
 * is (its cgroup driver, its root directory). NULL with err set. */
struct dockerapi *dockerapi_open(struct event_base *base, const struct dockerapi_opts *o, char *err,
				 size_t errlen);

/* Serving stops. uncover: the mount goes (and any mount of an earlier
 * egressctl's socket under it), PATH is dockerd's again; else it stays,
 * and every connection to PATH is refused until a daemon takes it again
 * (fail closed: the programs of the jobs stay attached too). */
void dockerapi_free(struct dockerapi *d, bool uncover);

/* The gateway of dockerd's default bridge network: the address its
 * containers reach this host at (daemon --containers). 0 or -errno (no
 * bridge: -ENOENT). */
int dockerapi_bridge_gateway(struct dockerapi *d, uint32_t *ip4);

/* A container's place on a network, as dockerd has it. */
#define DOCKERAPI_NET_NAMES 8
struct dockerapi_net {
	char id[65];	 /* the network's */
	uint8_t ip4[4];	 /* its address there (network order); has4 */
	uint8_t ip6[16]; /* has6 */
	bool has4, has6;
	/* the network's containers reach each other straight, as a docker
	 * bridge lets them: its driver bridge, its bridge docker's own (made
	 * for it: not the default network's docker0, no
	 * com.docker.network.bridge.name, which may name a bridge of the
	 * host's, a LAN's; br-<the id's first 12> here), so an address there
	 * is the container's holding it */
	bool peers;
	/* the names it has there (docker's embedded DNS answers them): its
	 * own, its aliases (a compose service's), DNSNames; lower case */
	char names[DOCKERAPI_NET_NAMES][64];
	int nnames;
};

/* A container as dockerd has it now. */
#define DOCKERAPI_PORTS 32
#define DOCKERAPI_NETS	4
struct dockerapi_ctr {
	char id[65];
	pid_t pid;
	/* TCP ports it publishes on this host's loopback or every address */
	unsigned short ports[DOCKERAPI_PORTS];
	int nports;
	struct dockerapi_net nets[DOCKERAPI_NETS]; /* the first DOCKERAPI_NETS */
	int nnets;
};

/* Container name (an id, a prefix or a name) as dockerd has it now into
 * c; with nets its networks too (one GET of each). 0, or -errno
 * (-ENOENT: no such container, or not running). */
int dockerapi_inspect(struct dockerapi *d, const char *name, bool nets, struct dockerapi_ctr *c);

/* The job with this id is gone: what was made for its containers goes
 * (their idmapped binds, idmap.h). */
void dockerapi_job_gone(struct dockerapi *d, uint64_t job);

/* Asked of the server at PATH before it is taken over: its process (the
 * peer of a connection, or where systemd made the socket for socket
 * activation the other process that holds it) into *pid, and the subnets
 * of its networks (IPAM) as rule texts ("172.17.0.0/16", "[fd00::]/64")
 * into nets[0..*n), at most max. 0, or -errno with err set. */
int dockerapi_server(const char *path, pid_t *pid, char (*nets)[64], int max, int *n, char *err,
		     size_t errlen);

/* A container dockerd runs that a filter selects (dockerapi_running). */
struct dockerapi_svc {
	struct dockerapi_ctr c;
	char name[128];
};

/* Is filter one dockerapi_running takes: "network=GLOB" (a network the
 * container is on, by name: fnmatch(3)) or "label=KEY" / "label=KEY=VALUE"?
 * 0, or -EINVAL with why. */
int dockerapi_filter_check(const char *filter, char *err, size_t errlen);

/* Asked of the server at PATH before it is taken over: the containers
 * running now that filter selects, at most max into out[0..*n) (more:
 * -E2BIG). 0, or -errno with err set. */
int dockerapi_running(const char *path, const char *filter, struct dockerapi_svc *out, int max,
		      int *n, char *err, size_t errlen);

/* PATH resolved (the name the mount is on). */
const char *dockerapi_path(const struct dockerapi *d);

#endif /* DOCKERAPI_H */
