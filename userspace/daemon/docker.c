// SPDX-License-Identifier: Apache-2.0
/* `daemon --docker PATH`: dockerd's socket kept for the targets
 * (dockerapi/). The daemon tells it whose a process is (the target whose
 * cgroup holds it) and writes its lines in that target's log; the
 * targets' options follow: PATH is allowed to their connect_unix hook
 * (their docker talks to egressctl's socket there), and their containers
 * reach egressctl at the gateway of dockerd's default bridge unless
 * --containers names an address. */
#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core.h"
#include "dockerapi/dockerapi.h"
#include "lib/log.h"

static int
job_of(void *arg, const char *cgroup, struct dockerapi_job *job)
{
	struct daemon *dm = arg;
	size_t mlen = strlen(dm->mnt);
	struct dtarget *dt;

	TAILQ_FOREACH(dt, &dm->targets, entry)
	{
		const char *rel = dt->cgpath + mlen;
		size_t n = strlen(rel);

		if (!dt->cgpath[0] || strncmp(dt->cgpath, dm->mnt, mlen) || !n ||
		    strncmp(cgroup, rel, n) || (cgroup[n] && cgroup[n] != '/'))
			continue;
		snprintf(job->cgroup, sizeof(job->cgroup), "%s", rel);
		job->audit = dt->spec.o.audit;
		job->id = dt->cgid;
		return 1;
	}
	return 0;
}

static void
said(void *arg, uint64_t id, const char *words)
{
	struct daemon *dm = arg;
	struct dtarget *dt;

	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->cgid == id && id) {
		dt_event(dt, "docker", "%s", words);
		return;
	}
	log_warnx("docker: %s", words); /* its target is gone */
}

static void
add_allow(struct target_opts *o, const char *path)
{
	for (int i = 0; i < o->nallow_unix; i++)
		if (!strcmp(o->allow_unix[i], path))
			return;
	if (o->nallow_unix < TARGET_MAX_UNIX)
		o->allow_unix[o->nallow_unix++] = path;
	else
		log_warnx("docker: no room for --allow-unix %s (at most %d)", path,
			  TARGET_MAX_UNIX);
}

static void
amend(const struct daemon *dm, struct target_opts *o)
{
	for (int i = 0; i < dm->ndocker_names; i++)
		add_allow(o, dm->docker_names[i]);
	if (!o->containers_ip4)
		o->containers_ip4 = dm->docker_gw;
}

void
docker_amend(const struct daemon *dm, struct dconfig *c)
{
	if (!dm->docker)
		return;
	for (int i = 0; i < c->n; i++)
		amend(dm, &c->specs[i].o);
}

int
docker_start(struct daemon *dm, char *errbuf, size_t errlen)
{
	char dir[PATH_MAX], a[INET_ADDRSTRLEN];
	struct dockerapi_opts o = {.path = dm->opts->docker,
				   .mnt = dm->mnt,
				   .job_of = job_of,
				   .said = said,
				   .arg = dm};
	struct dtarget *dt;
	int err;

	if (!dm->opts->docker)
		return 0;
	snprintf(dir, sizeof(dir), "%s", dm->cfg.control);
	o.own = dirname(dir);
	dm->docker = dockerapi_open(dm->base, &o, errbuf, errlen);
	if (!dm->docker)
		return -EINVAL;
	dm->docker_names[0] = dm->opts->docker;
	dm->docker_names[1] = dockerapi_path(dm->docker);
	dm->ndocker_names = strcmp(dm->docker_names[0], dm->docker_names[1]) ? 2 : 1;
	err = dockerapi_bridge_gateway(dm->docker, &dm->docker_gw);
	if (err)
		log_warnx("docker: dockerd has no default bridge (%s): a container on a bridge of "
			  "its "
			  "own reaches egressctl only with --containers ADDR",
			  strerror(-err));
	docker_amend(dm, &dm->cfg);
	TAILQ_FOREACH(dt, &dm->targets, entry)
	{
		amend(dm, &dt->spec.o);
		dt_name_containers(dt);
	}
	inet_ntop(AF_INET, &dm->docker_gw, a, sizeof(a));
	log_warnx("docker: %s is egressctl's now: the targets' containers run under their "
		  "cgroups%s%s",
		  dockerapi_path(dm->docker),
		  dm->docker_gw ? "; containers reach egressctl at " : "", dm->docker_gw ? a : "");
	return 0;
}

void
docker_stop(struct daemon *dm)
{
	if (!dm->docker)
		return;
	/* a target left attached keeps its programs (fail closed): PATH stays
	 * covered by a socket nobody serves */
	dockerapi_free(dm->docker, TAILQ_EMPTY(&dm->targets));
	dm->docker = NULL;
}
