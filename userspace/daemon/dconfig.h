// SPDX-License-Identifier: Apache-2.0
/* The daemon's configuration: which cgroups it confines (targets), each
 * with the options a `run` takes (policy, log, timeouts, limits) under the
 * same names, from a JSON file or from the command line. Parsing only: no
 * cgroup is looked at here. */
#ifndef DCONFIG_H
#define DCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "confine/options.h"
#include "paths.h" /* generated: the configured EGR_SYSCONFDIR, EGR_RUNDIR */

#define DCONFIG_DEFAULT	    EGR_SYSCONFDIR "/daemon.json"
#define DCONFIG_CONTROL	    EGR_RUNDIR "/control"
#define DCONFIG_POLICY	    EGR_SYSCONFDIR "/policy.json"
#define DCONFIG_MAX_TARGETS 64

enum dspec_kind {
	DSPEC_CGROUP = 0, /* a cgroup2 directory (its descendants too) */
	DSPEC_UNIT = 1,	  /* the cgroup systemd gave a unit */
	DSPEC_PID = 2,	  /* the cgroup of a process */
};

/* One target as it was named. */
struct dspec {
	enum dspec_kind kind;
	const char *what;     /* the path, the unit's name, or the pid as text */
	const char *name;     /* for messages and `--cgroup NAME`; never NULL */
	bool kill_existing;   /* end connections opened before the attach */
	struct target_opts o; /* strings point into the dconfig */
	char where[64];	      /* "targets[2]" or "the command line" */
	/* "policy": NAME with a policy_dir: NAME (o.policy_file is
	 * <policy_dir>/NAME.json); NULL for a policy named by its path */
	const char *policy_name;
	/* "cgroup": a glob (kubepods.slice/STAR/pod-STAR, STAR a '*'): a selector, not a
	 * target; each cgroup it matches becomes one when it appears. A "unit"
	 * with a glob (ci-STAR.service) is one too: what is then the glob of
	 * the cgroups systemd makes for those units in its "slice", <slice's
	 * path>/<unit>, and unit the pattern as written. */
	bool selector;
	/* dockerd's own cgroup (daemon --docker, docker_server_spec): detached
	 * when the daemon stops, whatever the others do */
	bool server;
	const char *unit;
	/* "annotations": {KEY: GLOB} of a selector: a cgroup it matches is
	 * taken only if its container's OCI bundle has every KEY with a value
	 * the GLOB matches (a json_t object of the config's; NULL: none) */
	const void *annotations;
	/* "labels": {KEY: GLOB} of a selector: the same of a docker
	 * container's labels (dockerd's config.v2.json) */
	const void *labels;
};

/* What a cgroup no selector matches gets ("default"): required with
 * selectors, so that nothing is left unconfined by omission. */
enum dconfig_default {
	DCONFIG_DFLT_NONE = 0, /* no selectors */
	DCONFIG_DFLT_DENY,     /* confined, nothing allowed */
	DCONFIG_DFLT_UNCONFINED,
};

/* A selector's glob against a cgroup's path below the cgroup2 mount
 * ("/a/b"): components matched by fnmatch(3), "**" any number of them
 * (at the end: one or more). */
enum dsel_match {
	DSEL_NONE = 0,	/* neither it nor anything below it */
	DSEL_BELOW = 1, /* not it, but something below it may */
	DSEL_MATCH = 2,
};
enum dsel_match dsel_match(const char *glob, const char *path);
/* The glob of a selector as a path below mnt: one that starts with <mnt>/
 * without it, any other as it is. */
const char *dsel_rel(const char *mnt, const char *glob);

struct dconfig {
	const char *path; /* the file; NULL: the command line */
	const char *control;
	/* "policy_dir": one file per policy, NAME.json, which a target names
	 * by "policy": "NAME"; watched, reloaded when a file changes */
	const char *policy_dir;
	enum dconfig_default dflt;
	const char *metrics; /* "metrics": as --metrics ADDR (read at start only) */
	/* "oci_bundles": where bundles are, each with "{id}" (oci.h) */
	const char *bundle_dirs[8];
	int nbundle_dirs;
	/* "docker_containers": dockerd's containers directories, "{id}" in
	 * each (oci.h; default /var/lib/docker/containers/{id}) */
	const char *docker_dirs[8];
	int ndocker_dirs;
	int nselectors;
	struct dspec deny; /* the target a cgroup no selector matches is, with "deny" */
	struct dspec specs[DCONFIG_MAX_TARGETS];
	int n;
	void *doc;  /* the parsed file (a json_t): owns the strings */
	void *nums; /* numbers of the file as text (they are options' arguments) */
	char names[DCONFIG_MAX_TARGETS][80];
};

/* Reads and checks path: every key known, every rule valid. Errors name
 * the place: "targets[1].allow[3]: ...". Returns 0, or -errno with errbuf
 * set (*c is then empty). */
int dconfig_load(const char *path, struct dconfig *c, char *errbuf, size_t errlen);

/* Adds a target named on the command line, with the command line's
 * options o (copied). Returns 0 or -errno with errbuf set. */
int dconfig_add(struct dconfig *c, enum dspec_kind kind, const char *what,
		const struct target_opts *o, bool kill_existing, char *errbuf, size_t errlen);

void dconfig_free(struct dconfig *c);

/* The same target (kind and what)? */
bool dspec_same_target(const struct dspec *a, const struct dspec *b);

/* The same options, but perhaps for the policy (rules and policy file)? */
bool dspec_same_but_policy(const struct dspec *a, const struct dspec *b);

#endif /* DCONFIG_H */
