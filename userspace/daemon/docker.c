// SPDX-License-Identifier: Apache-2.0
/* `daemon --docker PATH`: dockerd's socket kept for the targets
 * (dockerapi/). The daemon tells it whose a process is (the target whose
 * cgroup holds it) and writes its lines in that target's log; the
 * targets' options follow: PATH is allowed to their connect_unix hook
 * (their docker talks to egressctl's socket there), and their containers
 * reach egressctl at the gateway of dockerd's default bridge unless
 * --containers names an address. Since PATH is allowed, the mount over it
 * must be in the targets' mount namespace: the daemon refuses to start in
 * another (a unit's private one), where they would reach dockerd's own. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/core.h"
#include "daemon/peers.h"
#include "dockerapi/dockerapi.h"
#include "kernel/cgroup.h"
#include "kernel/pktguard.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "policy/policy.h"

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

/* Does a cgroup path carry the container's id? */
static bool
names_container(const char *name, const char *id)
{
	return strstr(name, id) != NULL;
}

/* The id of the container a cgroup directory's name carries (64 hex
 * digits in it: "<id>", "docker-<id>.scope") into id. */
static bool
ctr_dir(const char *name, char id[65])
{
	for (const char *s = name; *s; s++)
		if (strspn(s, "0123456789abcdef") >= 64) {
			memcpy(id, s, 64);
			id[64] = 0;
			return true;
		}
	return false;
}

bool
docker_ctr_dirs(const char *under, bool (*fn)(void *arg, const char *path, const char *id),
		void *arg)
{
	char sub[PATH_MAX], sub2[PATH_MAX], id[65];
	struct dirent *de, *e2;
	bool stop = false;
	DIR *d = opendir(under), *d2;

	while (d && !stop && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    (size_t)snprintf(sub, sizeof(sub), "%s/%s", under, de->d_name) >= sizeof(sub))
			continue;
		if (ctr_dir(de->d_name, id)) {
			stop = fn(arg, sub, id);
			continue;
		}
		d2 = opendir(sub);
		while (d2 && !stop && (e2 = readdir(d2)))
			if (e2->d_type == DT_DIR && ctr_dir(e2->d_name, id) &&
			    (size_t)snprintf(sub2, sizeof(sub2), "%s/%s", sub, e2->d_name) <
				    sizeof(sub2))
				stop = fn(arg, sub2, id);
		if (d2)
			closedir(d2);
	}
	if (d)
		closedir(d);
	return stop;
}

struct ctr_find {
	const char *id;
	char *out;
	size_t len;
};

static bool
ctr_found(void *arg, const char *path, const char *id)
{
	struct ctr_find *f = arg;

	return !strcmp(id, f->id) && (size_t)snprintf(f->out, f->len, "%s", path) < f->len;
}

/* The cgroup of container id into out: its process's (pid as dockerd
 * says, which in another PID namespace is somebody else here: taken only
 * when its path carries the id), or else a directory below under (one or
 * two levels: a job's containers) whose name carries it. 0, -ESRCH. */
static int
container_cgroup(const struct daemon *dm, pid_t pid, const char *id, const char *under, char *out,
		 size_t len)
{
	struct ctr_find f = {.id = id, .out = out, .len = len};

	if (!cgroup_of_pid(dm->mnt, pid, out, len) && names_container(out, id))
		return 0;
	return under && docker_ctr_dirs(under, ctr_found, &f) ? 0 : -ESRCH;
}

struct dtarget *
docker_target(struct daemon *dm, uint64_t cgid)
{
	struct dtarget *dt;

	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->cgid == cgid && cgid)
		return dt;
	return NULL;
}

/* Is TCP port served on this host's loopback by dockerd's userland proxy:
 * a docker-proxy in dockerd's cgroup with -proto tcp, -host-port port and
 * a -host-ip of every address or loopback? Without one (dockerd run with
 * --userland-proxy=false, with or without its DNAT) the port may be
 * anybody's socket on 127.0.0.1, which a rule must not open. */
static bool
proxied_port(const struct daemon *dm, unsigned short port)
{
	char path[PATH_MAX + 32], want[8];
	bool found = false;
	FILE *f;
	int pid;

	if (!dm->docker_cg[0])
		return false;
	snprintf(want, sizeof(want), "%u", port);
	snprintf(path, sizeof(path), "%s/cgroup.procs", dm->docker_cg);
	f = fopen(path, "re");
	while (f && !found && fscanf(f, "%d", &pid) == 1) {
		char args[1024], *a[16] = {0};
		bool tcp = false, any = false, ours = false;
		int na = 0, fd;
		ssize_t r;

		snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = read(fd, args, sizeof(args) - 1);
		close(fd);
		if (r <= 0)
			continue;
		args[r] = 0;
		for (char *c = args; c < args + r && na < 16; c += strlen(c) + 1)
			a[na++] = c;
		if (!na || strcmp(basename(a[0]), "docker-proxy"))
			continue;
		for (int i = 1; i + 1 < na; i++) {
			if (!strcmp(a[i], "-proto"))
				tcp = !strcmp(a[i + 1], "tcp");
			else if (!strcmp(a[i], "-host-port"))
				ours = !strcmp(a[i + 1], want);
			else if (!strcmp(a[i], "-host-ip"))
				any = !strcmp(a[i + 1], "0.0.0.0") ||
				      !strcmp(a[i + 1], "127.0.0.1") || !strcmp(a[i + 1], "::");
		}
		found = tcp && any && ours;
	}
	if (f)
		fclose(f);
	return found;
}

/* A job's container started: each TCP port it publishes on this host and
 * dockerd's userland proxy serves (proxied_port) is allowed to the job on
 * 127.0.0.1 (its own container, confined as the job is) until the
 * container's cgroup is gone (published_tick). A port some rule of the
 * job's runtime ones allows already is left to that rule. */
static void
started(void *arg, uint64_t job, const char *name)
{
	struct daemon *dm = arg;
	struct dtarget *dt = docker_target(dm, job);
	struct dockerapi_ctr c;
	const unsigned short *ports = c.ports;
	const char *id = c.id;
	char cg[PATH_MAX], why[512];
	int n;

	if (!dt || !dm->docker || dockerapi_inspect(dm->docker, name, true, &c))
		return;
	if (container_cgroup(dm, c.pid, id, dt->cgpath, cg, sizeof(cg))) /* gone meanwhile */
		return;
	peers_started(dm, job, &c, cg);
	n = c.nports;
	for (int i = 0; i < n; i++) {
		char rule[24];
		bool have = false;

		snprintf(rule, sizeof(rule), "127.0.0.1:%u", ports[i]);
		if (!proxied_port(dm, ports[i])) {
			dt_event(
				dt, "docker",
				"container %.12s publishes port %u: no userland proxy of dockerd's "
				"serves it, so %s is not allowed (allow it if it is yours)",
				id, ports[i], rule);
			continue;
		}
		for (int k = 0; k < dm->npub && !have; k++)
			if (dm->pub[k].job == job && !strcmp(dm->pub[k].rule, rule)) {
				/* ours already (a restart: the cgroup made anew) */
				dm->pub[k].ccg = cgroup_id_of(cg);
				snprintf(dm->pub[k].cg, sizeof(dm->pub[0].cg), "%s", cg);
				snprintf(dm->pub[k].cid, sizeof(dm->pub[0].cid), "%.12s", id);
				have = true;
			}
		/* (not one that expired: the tick may have seen the restart's
		 * new cgroup first and taken this port's rule back) */
		for (int k = 0; k < dt->nrules && !have; k++)
			have = dt->rules[k].action == POLICY_ALLOW && !dt->rules[k].expires &&
			       !strcmp(dt->rules[k].text, rule);
		if (have)
			continue;
		if (dm->npub == DOCKER_MAX_PUBLISHED) {
			dt_event(dt, "docker",
				 "container %.12s publishes port %u: not allowed on "
				 "127.0.0.1, %d such ports are already",
				 id, ports[i], DOCKER_MAX_PUBLISHED);
			continue;
		}
		if (requests_add_rule(dt, POLICY_ALLOW, rule, 0, why, sizeof(why))) {
			dt_event(dt, "docker", "container %.12s publishes port %u: %s", id,
				 ports[i], why);
			continue;
		}
		dm->pub[dm->npub].job = job;
		dm->pub[dm->npub].ccg = cgroup_id_of(cg);
		snprintf(dm->pub[dm->npub].cg, sizeof(dm->pub[0].cg), "%s", cg);
		snprintf(dm->pub[dm->npub].rule, sizeof(dm->pub[0].rule), "%s", rule);
		snprintf(dm->pub[dm->npub].cid, sizeof(dm->pub[0].cid), "%.12s", id);
		dm->npub++;
		dt_event(dt, "docker",
			 "container %.12s publishes port %u: %s allowed while it runs", id,
			 ports[i], rule);
	}
}

/* The published ports of containers whose cgroup is gone (or made anew)
 * are no longer allowed: their rules expire now. */
static void
published_tick(struct daemon *dm)
{
	uint64_t now = now_s();
	int k = 0;

	for (int i = 0; i < dm->npub; i++) {
		struct dtarget *dt = docker_target(dm, dm->pub[i].job);
		bool gone = !dt || cgroup_id_of(dm->pub[i].cg) != dm->pub[i].ccg;

		if (!gone) {
			dm->pub[k++] = dm->pub[i];
			continue;
		}
		if (!dt)
			continue;
		for (int r = dt->nrules - 1; r >= 0; r--)
			if (dt->rules[r].action == POLICY_ALLOW && !dt->rules[r].expires &&
			    !strcmp(dt->rules[r].text, dm->pub[i].rule)) {
				dt->rules[r].expires = now ? now : 1;
				break;
			}
		dt_event(dt, "docker", "container %s is gone: %s no longer allowed", dm->pub[i].cid,
			 dm->pub[i].rule);
		reload_expire_rules(dt, now + 1);
	}
	dm->npub = k;
}

static void
networks(void *arg, uint64_t job, bool done)
{
	peers_networks(arg, job, done);
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

/* A registry dockerd would reach for target id, judged by its policy as
 * a TLS connection to host:port (an address literal by its address). */
static int
judge(void *arg, uint64_t id, const char *host, unsigned short port, char *why, size_t whylen)
{
	struct daemon *dm = arg;
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	struct policy_query q = {.host = host, .port = port, .proto = POLICY_P_TLS};
	struct policy_decision d;
	struct dtarget *dt;

	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->cgid == id && id)
		break;
	if (!dt || !dt->tg) {
		snprintf(why, whylen, "its target is not attached");
		return -EPERM;
	}
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
	}
	if (ss.ss_family) {
		q.addr = (const struct sockaddr *)&ss;
		q.host = NULL;
	}
	if (policy_decide(target_policy(dt->tg), &q, &d)) {
		snprintf(why, whylen, "the policy cannot judge it");
		return -EPERM;
	}
	if (d.action == POLICY_ALLOW)
		return 0;
	policy_reason_words(&d, NULL, why, whylen);
	return -EPERM;
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
	o->peers = true;
}

void
docker_amend(const struct daemon *dm, struct dconfig *c)
{
	if (!dm->docker)
		return;
	for (int i = 0; i < c->n; i++)
		amend(dm, &c->specs[i].o);
}

/* "mnt:[INODE]" of pid (readlink: a stat of it needs more than root has
 * on some hosts' PID 1) */
static int
mntns_of(pid_t pid, char *buf, size_t len)
{
	char p[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)pid);
	n = readlink(p, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

/* The targets' processes, one of them at least, share the daemon's mount
 * namespace: 0, or -EXDEV with why (an empty target: none to judge by). */
static int
targets_share_ns(struct daemon *dm, const char *self, char *errbuf, size_t errlen)
{
	struct dtarget *dt;
	size_t seen = 0;

	TAILQ_FOREACH(dt, &dm->targets, entry)
	{
		pid_t *pids = NULL;
		size_t n = 0;
		char ns[64];
		int fd = dt->cgpath[0] && !dt->spec.server /* dockerd's: no client of PATH */
				 ? open(dt->cgpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
				 : -1;

		if (fd < 0 || cgroup_pids_at(fd, &pids, &n))
			n = 0;
		if (fd >= 0)
			close(fd);
		for (size_t i = 0; i < n; i++) {
			if (mntns_of(pids[i], ns, sizeof(ns)))
				continue; /* gone */
			if (strcmp(ns, self)) {
				daemon_errf(
					errbuf, errlen,
					"--docker: process %d of target %s is in another mount "
					"namespace than the daemon: the mount over %s would not be "
					"its",
					(int)pids[i], dt->spec.name, dm->opts->docker);
				free(pids);
				return -EXDEV;
			}
			seen++;
		}
		free(pids);
	}
	if (seen)
		return 0;
	daemon_errf(
		errbuf, errlen,
		"--docker: the daemon is not in the host's mount namespace (a systemd unit's "
		"ProtectSystem=, PrivateTmp=?) and the targets have no process to compare with: "
		"the mount over %s may not be theirs",
		dm->opts->docker);
	return -EXDEV;
}

/* The mount over PATH is seen by the targets' processes only in the
 * mount namespace the daemon makes it in: the host's, or theirs. */
static int
check_ns(struct daemon *dm, char *errbuf, size_t errlen)
{
	char self[64], init[64];
	int err = mntns_of(getpid(), self, sizeof(self));

	if (err) {
		daemon_errf(errbuf, errlen,
			    "--docker: cannot read the daemon's mount namespace: %s",
			    strerror(-err));
		return err;
	}
	/* (PID 1's may not be readable: then the targets' say) */
	if (!mntns_of(1, init, sizeof(init)) && !strcmp(self, init))
		return 0;
	return targets_share_ns(dm, self, errbuf, errlen);
}

/* Why cg cannot be a target of its own (dockerd's, a service's): the root
 * cgroup, the daemon's own or one it runs below, or one that holds cgroups
 * (the first one's name into sub); CG_FIT when it can. */
enum cg_unfit {
	CG_FIT = 0,
	CG_ROOT,
	CG_OURS,
	CG_NESTED,
};

static enum cg_unfit
cg_unfit(const struct daemon *dm, const char *cg, char *sub, size_t sublen)
{
	char own[PATH_MAX];
	size_t n = strlen(dm->mnt), k = strlen(cg);
	enum cg_unfit r = CG_FIT;
	struct dirent *de;
	DIR *d;

	if (!strcmp(cg, dm->mnt) || !strcmp(cg + n, "/"))
		return CG_ROOT;
	if (!cgroup_of_pid(dm->mnt, getpid(), own, sizeof(own)) && !strncmp(own, cg, k) &&
	    (!own[k] || own[k] == '/'))
		return CG_OURS;
	d = opendir(cg);
	while (d && r == CG_FIT && (de = readdir(d)))
		if (de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(sub, sublen, "%s", de->d_name);
			r = CG_NESTED;
		}
	if (d)
		closedir(d);
	return r;
}

int
docker_server_find(struct daemon *dm, char *errbuf, size_t errlen)
{
	const char *e = dm->opts->docker_egress;
	char sub[NAME_MAX + 1];
	size_t n;
	pid_t pid;
	int err;

	if (e && !strcmp(e, "open")) {
		log_warnx(
			"docker: dockerd's own connections are not judged (--docker-egress "
			"open): what it fetches for a job (a build's FROM, its ADD of a URL) goes "
			"where the job names");
		return 0;
	}
	if (e && strcmp(e, "confined")) {
		daemon_errf(errbuf, errlen, "--docker-egress %s: expected confined or open", e);
		return -EINVAL;
	}
	err = dockerapi_server(dm->opts->docker, &pid, dm->docker_nets,
			       (int)(sizeof(dm->docker_nets) / sizeof(dm->docker_nets[0])),
			       &dm->ndocker_nets, errbuf, errlen);
	if (err)
		return err;
	err = cgroup_of_pid(dm->mnt, pid, dm->docker_cg, sizeof(dm->docker_cg));
	if (err) {
		daemon_errf(errbuf, errlen, "docker: the cgroup of dockerd (pid %d): %s", (int)pid,
			    strerror(-err));
		return err;
	}
	n = strlen(dm->mnt);
	switch (cg_unfit(dm, dm->docker_cg, sub, sizeof(sub))) {
	case CG_FIT:
		break;
	case CG_ROOT:
		daemon_errf(errbuf, errlen,
			    "docker: dockerd (pid %d) runs in the root cgroup: its own connections "
			    "(its pulls, a build's FROM and ADD of a URL) cannot be confined "
			    "without the whole host's; start it in a cgroup of its own (a systemd "
			    "service is one), or pass --docker-egress open",
			    (int)pid);
		dm->docker_cg[0] = 0;
		return -EINVAL;
	case CG_OURS:
		daemon_errf(errbuf, errlen,
			    "docker: egressctl runs in dockerd's cgroup %s: start it in "
			    "another (dockerd's own connections are confined there)",
			    dm->docker_cg);
		dm->docker_cg[0] = 0;
		return -EINVAL;
	case CG_NESTED:
		daemon_errf(errbuf, errlen,
			    "docker: dockerd's cgroup %s holds cgroups of its own (%s): "
			    "they would be confined with dockerd's own connections; start "
			    "dockerd in a cgroup of its own, or pass --docker-egress open",
			    dm->docker_cg, sub);
		dm->docker_cg[0] = 0;
		return -EINVAL;
	}
	log_warnx("docker: dockerd (pid %d, %s): its own connections (its pulls, a build's "
		  "FROM and ADD of a URL) are judged by the command line's policy, its %d "
		  "networks' subnets allowed",
		  (int)pid, dm->docker_cg + n, dm->ndocker_nets);
	return 0;
}

int
docker_server_spec(const struct daemon *dm, struct dconfig *c, char *errbuf, size_t errlen)
{
	struct target_opts o = dm->opts->t;
	struct dspec *s;
	int err;

	if (!dm->docker_cg[0])
		return 0;
	o.allow_abstract_unix = true; /* no unix hooks: dockerd talks to containerd */
	o.local_udp_any = true;	      /* its embedded DNS answers the containers */
	o.peers = true;		      /* the jobs' published containers (peers.c) */
	o.nsecrets = 0;		      /* the job's: its placeholders, its summary */
	o.secret_placeholders = NULL;
	o.summary_file = NULL;
	o.suggest_policy = NULL;
	for (int i = 0; i < dm->ndocker_nets; i++) {
		if (o.nrules == TARGET_MAX_RULES) {
			daemon_errf(errbuf, errlen,
				    "docker: no room for dockerd's %d subnets among %d rules",
				    dm->ndocker_nets, TARGET_MAX_RULES);
			return -E2BIG;
		}
		o.rules[o.nrules++] = (struct rule_arg){POLICY_ALLOW, dm->docker_nets[i]};
		/* its userland proxy reaches them as they are */
		if (o.ndirect_nets < TARGET_MAX_DIRECT_NETS)
			o.direct_nets[o.ndirect_nets++] = dm->docker_nets[i];
	}
	/* its connections from before (a registry's, kept alive from the
	 * runner's pulls) ended: kept, they would go on unjudged */
	err = dconfig_add(c, DSPEC_CGROUP, dm->docker_cg, &o, true, errbuf, errlen);
	if (err)
		return err;
	s = &c->specs[c->n - 1];
	s->server = true;
	snprintf(c->names[c->n - 1], sizeof(c->names[0]), "dockerd");
	snprintf(s->where, sizeof(s->where), "dockerd's cgroup (--docker)");
	return 0;
}

/* cg (a container's cgroup) may be a target: cg_unfit's, and not
 * dockerd's. */
static int
service_cg_ok(const struct daemon *dm, const char *cg, const char *name, char *errbuf,
	      size_t errlen)
{
	const char *rel = cg + strlen(dm->mnt);
	char sub[NAME_MAX + 1];
	enum cg_unfit u = cg_unfit(dm, cg, sub, sizeof(sub));

	if (u == CG_ROOT || (dm->docker_cg[0] && !strcmp(cg, dm->docker_cg)))
		daemon_errf(errbuf, errlen,
			    "--docker-services: container %s runs in %s, not a cgroup of its own",
			    name, rel[0] ? rel : "/");
	else if (u == CG_OURS)
		daemon_errf(errbuf, errlen,
			    "--docker-services: egressctl runs in container %s's cgroup %s", name,
			    rel);
	else if (u == CG_NESTED)
		daemon_errf(errbuf, errlen,
			    "--docker-services: container %s's cgroup %s holds cgroups of its own "
			    "(%s): they would be confined with it",
			    name, rel, sub);
	else
		return 0;
	return -EINVAL;
}

int
docker_services_find(struct daemon *dm, char *errbuf, size_t errlen)
{
	struct dockerapi_svc s[DOCKER_MAX_SERVICES];
	struct target_opts *o = &dm->opts->t;
	int n = 0, err;

	if (!dm->opts->docker_services)
		return 0;
	if (!dm->opts->docker) {
		daemon_errf(errbuf, errlen, "--docker-services needs --docker");
		return -EINVAL;
	}
	err = dockerapi_running(dm->opts->docker, dm->opts->docker_services, s, DOCKER_MAX_SERVICES,
				&n, errbuf, errlen);
	if (err) {
		if (err == -EINVAL) {
			char why[256];

			snprintf(why, sizeof(why), "%s", errbuf);
			daemon_errf(errbuf, errlen, "--docker-services %s", why);
		}
		return err;
	}
	for (int i = 0; i < n; i++) {
		char *cg = dm->svc[dm->nsvc].cg, ports[128] = "";
		size_t at = 0;

		err = container_cgroup(dm, s[i].c.pid, s[i].c.id, NULL, cg, sizeof(dm->svc[0].cg));
		if (err) {
			daemon_errf(
				errbuf, errlen,
				"--docker-services: the cgroup of container %s (pid %d as dockerd "
				"sees it): %s",
				s[i].name, (int)s[i].c.pid,
				err == -ESRCH ? "the process of that pid here is not the "
						"container's (dockerd in another PID namespace?)"
					      : strerror(-err));
			return err;
		}
		err = service_cg_ok(dm, cg, s[i].name, errbuf, errlen);
		if (err)
			return err;
		snprintf(dm->svc[dm->nsvc].name, sizeof(dm->svc[0].name), "%s", s[i].name);
		snprintf(dm->svc[dm->nsvc].id, sizeof(dm->svc[0].id), "%.12s", s[i].c.id);
		dm->nsvc++;
		for (int k = 0; k < s[i].c.nports; k++) {
			char *r = dm->svc_rules[dm->nsvc_rules];

			if (!proxied_port(dm, s[i].c.ports[k])) {
				log_warnx("docker: service %s publishes port %u, and no userland "
					  "proxy "
					  "of dockerd's serves it: 127.0.0.1:%u is not allowed "
					  "(allow "
					  "it if it is the service's)",
					  s[i].name, s[i].c.ports[k], s[i].c.ports[k]);
				continue;
			}
			if (dm->nsvc_rules ==
				    (int)(sizeof(dm->svc_rules) / sizeof(dm->svc_rules[0])) ||
			    o->nrules == TARGET_MAX_RULES) {
				daemon_errf(
					errbuf, errlen,
					"--docker-services: no room for the services' ports among "
					"%d rules",
					TARGET_MAX_RULES);
				return -E2BIG;
			}
			snprintf(r, sizeof(dm->svc_rules[0]), "127.0.0.1:%u", s[i].c.ports[k]);
			dm->nsvc_rules++;
			o->rules[o->nrules++] = (struct rule_arg){POLICY_ALLOW, r};
			at += (size_t)snprintf(ports + at,
					       at < sizeof(ports) ? sizeof(ports) - at : 0, "%s%u",
					       at ? "," : "", s[i].c.ports[k]);
		}
		log_warnx("docker: service %s (container %.12s, %s): confined by the command "
			  "line's policy",
			  s[i].name, s[i].c.id, cg + strlen(dm->mnt));
		if (at)
			log_warnx("docker: service %s: 127.0.0.1:%s allowed to the command line's "
				  "targets",
				  s[i].name, ports);
	}
	if (!n)
		log_warnx("docker: no running container matches --docker-services %s",
			  dm->opts->docker_services);
	return 0;
}

int
docker_services_spec(const struct daemon *dm, struct dconfig *c, char *errbuf, size_t errlen)
{
	for (int i = 0; i < dm->nsvc; i++) {
		struct target_opts o = dm->opts->t;
		struct dspec *s;
		int err;

		o.nsecrets = 0; /* the job's: its placeholders, its summary */
		o.secret_placeholders = NULL;
		o.summary_file = NULL;
		o.suggest_policy = NULL;
		/* its connections from before ended: the job could use them */
		err = dconfig_add(c, DSPEC_CGROUP, dm->svc[i].cg, &o, true, errbuf, errlen);
		if (err)
			return err;
		s = &c->specs[c->n - 1];
		s->server = true;
		snprintf(c->names[c->n - 1], sizeof(c->names[0]), "svc-%s", dm->svc[i].name);
		snprintf(s->where, sizeof(s->where), "service %.24s (--docker-services)",
			 dm->svc[i].name);
	}
	return 0;
}

void
docker_tick(struct daemon *dm)
{
	uint64_t n;

	published_tick(dm);
	peers_tick(dm);
	if (!dm->guard)
		return;
	n = pktguard_dropped(dm->guard);
	if (n != dm->guard_said) {
		log_warnx("docker: %llu frames written by an AF_PACKET socket of a target's "
			  "cgroup dropped so far (a container's NET_RAW, a build step's)",
			  (unsigned long long)n);
		dm->guard_said = n;
	}
}

/* The guard gone: taken off the ports (off), or left on them (fail closed:
 * tc keeps its program while a port has it). */
static void
guard_stop(struct daemon *dm, bool off)
{
	pktguard_close(dm->guard, off);
	dm->guard = NULL;
}

void
docker_guard(struct daemon *dm, uint64_t cgid, bool on)
{
	int err;

	if (!dm->guard || !cgid)
		return;
	err = on ? pktguard_add(dm->guard, cgid) : pktguard_del(dm->guard, cgid);
	if (err && on)
		log_warnx("docker: cgroup %llu not guarded from AF_PACKET frames: %s",
			  (unsigned long long)cgid, strerror(-err));
}

int
docker_start(struct daemon *dm, char *errbuf, size_t errlen)
{
	char dir[PATH_MAX], a[INET_ADDRSTRLEN];
	struct dockerapi_opts o = {.path = dm->opts->docker,
				   .mnt = dm->mnt,
				   .job_of = job_of,
				   .said = said,
				   .started = started,
				   .networks = networks,
				   .judge = judge,
				   .arg = dm};
	struct dtarget *dt;
	int err;

	if (!dm->opts->docker)
		return 0;
	err = check_ns(dm, errbuf, errlen);
	if (err)
		return err;
	/* before the socket is taken: no container of a target's runs
	 * unguarded (a kernel without skb->sk in tc programs is an error
	 * here, not a way out) */
	dm->guard = pktguard_open(errbuf, errlen);
	if (!dm->guard)
		return -EINVAL;
	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->tg)
		docker_guard(dm, dt->cgid, true); /* attached before the guard was there */
	snprintf(dir, sizeof(dir), "%s", dm->cfg.control);
	o.own = dirname(dir);
	err = peers_open(dm);
	if (err) {
		snprintf(errbuf, errlen, "docker: %s", strerror(-err));
		guard_stop(dm, true);
		return err;
	}
	dm->docker = dockerapi_open(dm->base, &o, errbuf, errlen);
	if (!dm->docker) {
		peers_close(dm);
		guard_stop(dm, true);
		return -EINVAL;
	}
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
	struct dtarget *dt;
	bool attached = false;

	if (!dm->docker)
		return;
	/* a target left attached keeps its programs (fail closed): PATH stays
	 * covered by a socket nobody serves, and the guard stays on the
	 * bridges' ports; with none (all detached, or a start that failed)
	 * PATH is dockerd's again and the guard comes off */
	TAILQ_FOREACH(dt, &dm->targets, entry)
	attached |= dt->tg != NULL && !dt->spec.server; /* dockerd's goes with the daemon */
	dockerapi_free(dm->docker, !attached);
	dm->docker = NULL;
	peers_close(dm);
	guard_stop(dm, !attached);
}
