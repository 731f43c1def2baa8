// SPDX-License-Identifier: Apache-2.0
/* The daemon's targets (see core.h): each resolved to its cgroup (a path,
 * a systemd unit, a process's), attached (its programs taken over from the
 * daemon before, or attached afresh), watched while it lives (a cgroup
 * that goes is let go; one that comes is attached: inotify and a tick once
 * a second, which also expires runtime rules), and the daemon's own cgroup
 * outside them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "audit/audit.h"
#include "daemon/containers.h"
#include "daemon/control.h"
#include "daemon/core.h"
#include "daemon/peers.h"
#include "daemon/metrics.h"
#include "dockerapi/dockerapi.h"
#include "kernel/cgroup.h"
#include "kernel/existing.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/sockaddr.h"

#define DAEMON_CGROUP "daemon" /* <cgroup2>/egressctl/daemon: where it moves itself */

static void
keep_line(struct daemon *dm, const char *line, uint64_t cgid)
{
	char *copy = strdup(line);
	unsigned int i = dm->recent_at;

	if (!copy)
		return;
	free(dm->recent[i]);
	dm->recent[i] = copy;
	dm->recent_cgid[i] = cgid;
	dm->recent_at = (i + 1) % RECENT_LINES;
	if (dm->nrecent < RECENT_LINES)
		dm->nrecent++;
}

/* Every line a target logs: kept for `log`, and sent to `log -f`. */
static void
dt_on_record(void *arg, const struct audit_rec *r)
{
	struct dtarget *dt = arg;
	struct daemon *dm = dt->dm;
	struct follower *f;
	struct timespec ts;
	char line[2048];
	int n;

	if (r->decision)
		metrics_count(dt, r);
	clock_gettime(CLOCK_REALTIME, &ts);
	n = audit_format(r, (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000, line,
			 sizeof(line));
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	keep_line(dm, line, dt->cgid);
	LIST_FOREACH(f, &dm->followers, entry)
	if (!f->cgid || f->cgid == dt->cgid)
		control_send(f->cl, line);
}

void
dt_event(struct dtarget *dt, const char *event, const char *fmt, ...)
{
	struct audit_rec r = {0};
	char words[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(words, sizeof(words), fmt, ap);
	va_end(ap);
	log_warnx("%s%s", dt->label, words);
	if (!dt->tg)
		return;
	r.event = event;
	r.reason = words;
	r.cgroup = dt->cgid;
	target_log_event(dt->tg, &r);
}

/* systemd's own answer for a unit's cgroup, if systemd runs. */
static int
systemd_cgroup(const char *mnt, const char *unit, char *out, size_t outlen)
{
	char rel[PATH_MAX] = "";
	int pfd[2], status;
	ssize_t n;
	pid_t pid;

	if (access("/run/systemd/system", F_OK))
		return -ENOENT; /* not a systemd host */
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		dup2(pfd[1], 1);
		execlp("systemctl", "systemctl", "show", "--property=ControlGroup", "--value", unit,
		       (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	n = read(pfd[0], rel, sizeof(rel) - 1);
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -ENOENT;
	rel[n] = 0;
	rel[strcspn(rel, "\n")] = 0;
	if (rel[0] != '/')
		return -ENOENT; /* empty: the unit is not running */
	if ((size_t)snprintf(out, outlen, "%s%s", mnt, rel) >= outlen)
		return -ENAMETOOLONG;
	return 0;
}

/* The cgroup directory a target names, checked to exist. */
int
dt_resolve(const char *mnt, const struct dspec *s, char *out, size_t outlen, char *errbuf,
	   size_t errlen)
{
	struct stat st;
	char buf[PATH_MAX];
	int err;

	switch (s->kind) {
	case DSPEC_CGROUP:
		if (s->what[0] != '/' && strchr(s->what, '/')) {
			snprintf(buf, sizeof(buf), "%s/%s", mnt, s->what);
			err = cgroup_resolve(mnt, buf, 0, out, outlen, NULL);
		} else {
			err = cgroup_resolve(mnt, s->what, 1, out, outlen, NULL);
		}
		if (err) {
			daemon_errf(errbuf, errlen,
				    "%s: not a NAME ([A-Za-z0-9._-]) nor a path below %s", s->where,
				    mnt);
			return err;
		}
		break;
	case DSPEC_UNIT:
		err = systemd_cgroup(mnt, s->what, out, outlen);
		if (err)
			err = cgroup_find_named(mnt, s->what, out, outlen);
		if (err == -EEXIST) {
			daemon_errf(errbuf, errlen, "%s: more than one cgroup is called %s",
				    s->where, s->what);
			return err;
		}
		if (err) {
			daemon_errf(errbuf, errlen, "%s: unit %s has no cgroup (is it running?)",
				    s->where, s->what);
			return err;
		}
		break;
	case DSPEC_PID:
		err = cgroup_of_pid(mnt, (pid_t)atoi(s->what), out, outlen);
		if (err) {
			daemon_errf(errbuf, errlen, "%s: no cgroup2 cgroup for process %s: %s",
				    s->where, s->what, strerror(-err));
			return err;
		}
		break;
	}
	if (stat(out, &st) || !S_ISDIR(st.st_mode)) {
		err = -errno ? -errno : -ENOTDIR;
		daemon_errf(errbuf, errlen, "%s: %s: %s", s->where, out,
			    strerror(errno ? errno : ENOTDIR));
		return err;
	}
	return 0;
}

/* Is path at or below dir? */
static bool
below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == 0 || path[n] == '/');
}

static void
dt_watch_parent(struct dtarget *dt)
{
	char parent[PATH_MAX], *slash;

	if (dt->wd >= 0 || dt->dm->ino_fd < 0 || !dt->cgpath[0])
		return;
	snprintf(parent, sizeof(parent), "%s", dt->cgpath);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return;
	*slash = 0;
	dt->wd = inotify_add_watch(dt->dm->ino_fd, parent, IN_CREATE | IN_ONLYDIR);
}

static void
dt_unwatch(struct dtarget *dt)
{
	if (dt->wd >= 0)
		inotify_rm_watch(dt->dm->ino_fd, dt->wd);
	dt->wd = -1;
}

/* The connections the cgroup had open before the attach (the pass of
 * confine/target.c): listed (or ended, with kill_existing), each one said on
 * stderr and logged, with who holds it. */
static void
on_existing(void *arg, const struct existing_conn *v, size_t n, const struct existing_stats *st,
	    const char *err)
{
	struct dtarget *dt = arg;

	if (err) {
		dt_event(dt, "pre-existing",
			 "cannot list the connections open before the attach: %s", err);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		struct audit_rec r = {0};
		char line[400];

		existing_format(&v[i], line, sizeof(line));
		log_warnx("%s%s", dt->label, line);
		sockaddr_from_key(v[i].raddr, 0, &ss);
		r.event = v[i].action == EGR_PRE_KILLED ? "pre-existing-killed" : "pre-existing";
		r.reason = line;
		r.ip = (const struct sockaddr *)&ss;
		r.port = v[i].rport;
		r.pid = (uint32_t)v[i].pid;
		r.comm = v[i].comm[0] ? v[i].comm : NULL;
		r.cgroup = v[i].cgroup_id;
		target_log_event(dt->tg, &r);
	}
	if (st && st->failures)
		dt_event(dt, "pre-existing",
			 "%u connections open before the attach could be neither left open nor "
			 "ended: their packets are dropped",
			 st->failures);
}

static void dt_load_join(struct dtarget *dt);
static void dt_load_next(struct daemon *dm);

void
dt_release(struct dtarget *dt, bool detach)
{
	if (dt->loading) { /* a load under way: waited for, thrown away */
		if (dt->load_queued) {
			TAILQ_REMOVE(&dt->dm->load_queue, dt, load_entry);
			dt->load_queued = false;
		} else {
			dt_load_join(dt);
			dt_load_next(dt->dm);
		}
		target_load_free(dt->load);
		dt->load = NULL;
		target_free(dt->loading);
		dt->loading = NULL;
	}
	if (dt->tg) {
		target_finish(dt->tg);
		target_write_summary_file(dt->tg); /* --summary FILE: at detach and stop */
		if (detach) {
			target_detach(dt->tg);
			sel_unpass(dt->dm, dt->cgid); /* held again, if it is still there */
			if (dt->dm->docker)
				dockerapi_job_gone(dt->dm->docker, dt->cgid);
			docker_guard(dt->dm, dt->cgid, false);
		}
		target_free(dt->tg);
		dt->tg = NULL;
	}
	if (dt->cg_fd >= 0)
		close(dt->cg_fd); /* and its lock */
	dt->cg_fd = -1;
	dt->cgid = 0;
}

/* --containers ADDR: the address stays this host's (ctr_addr_ensure), or
 * the containers' redirected connections would be routed out to it.
 * Said when it had to be added. */
static int
dt_keep_address(struct dtarget *dt, char *errbuf, size_t errlen)
{
	char a[INET_ADDRSTRLEN];
	int rc;

	if (!dt->spec.o.containers_ip4)
		return 0;
	rc = ctr_addr_ensure(dt->spec.o.containers_ip4, errbuf, errlen);
	if (rc == 1) {
		inet_ntop(AF_INET, &dt->spec.o.containers_ip4, a, sizeof(a));
		dt_event(dt, "containers",
			 "--containers %s: no interface had it (a bridge that is not up): added "
			 "%s/32 to lo, so that containers' connections to it stay on this host",
			 a, a);
	}
	return rc < 0 ? rc : 0;
}

static void dt_attached(struct dtarget *dt);
static int dt_load_start(struct dtarget *dt, char *errbuf, size_t errlen);

/* Attaches dt to its cgroup (taking over what a previous daemon pinned).
 * With worker, its programs load in a worker, and it is attached when they
 * are (dt->loading meanwhile), the loop deciding for the others (a load is
 * 80-90 ms): a selector's target, and a named one whose cgroup came (or
 * came back) while the loop runs (dt_check). A named target the start or a
 * reload attaches is attached here, before the daemon says it is ready or
 * the reload is answered. -ENOENT: the cgroup does not exist (yet). */
static int
dt_attach(struct dtarget *dt, bool worker, char *errbuf, size_t errlen)
{
	struct daemon *dm = dt->dm;
	int err;

	err = dt_resolve(dm->mnt, &dt->spec, dt->cgpath, sizeof(dt->cgpath), errbuf, errlen);
	if (err)
		return err;
	dt->cg_fd = open(dt->cgpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dt->cg_fd < 0) {
		err = -errno;
		daemon_errf(errbuf, errlen, "%s: %s", dt->cgpath, strerror(-err));
		return err;
	}
	if (flock(dt->cg_fd, LOCK_EX | LOCK_NB)) {
		daemon_errf(errbuf, errlen,
			    "cgroup %s is confined by another egressctl (run or daemon)",
			    dt->cgpath);
		err = -EBUSY;
		goto fail;
	}
	dt->cgid = cgroup_id_of(dt->cgpath);
	if (!dt->cgid) {
		err = -errno;
		daemon_errf(errbuf, errlen, "cannot read the id of cgroup %s", dt->cgpath);
		goto fail;
	}
	err = dt_keep_address(dt, errbuf, errlen);
	if (err)
		goto fail;
	/* its policy: built already (off the loop, or before it), or now */
	dt->tg = target_new(dm->base, &dt->spec.o, &dt->env, dt->waiting_policy, errbuf, errlen);
	dt->waiting_policy = NULL;
	if (!dt->tg) {
		err = -EINVAL;
		goto fail;
	}
	target_take_iterators(dt->tg, dt->ahead);
	dt->ahead = NULL;
	if (worker) { /* its programs load off the loop */
		err = target_attach_begin(dt->tg, dt->cgpath, dt->cgid, true, &dt->load, errbuf,
					  errlen);
		if (err < 0)
			goto fail;
		if (err == 1) {
			err = dt_load_start(dt, errbuf, errlen);
			if (err)
				goto fail;
			log_info("%sloading its programs in a worker", dt->label);
			return 0;
		}
	} else {
		err = target_attach(dt->tg, dt->cgpath, dt->cg_fd, dt->cgid, true, errbuf, errlen);
		if (err)
			goto fail;
	}
	dt_attached(dt);
	return 0;
fail:
	dt_release(dt, false);
	return err;
}

/* dt's programs in (attached, or taken over): it confines from now on. */
static void
dt_attached(struct dtarget *dt)
{
	uint32_t ids[24];
	char idtext[160] = "";
	int nids;

	dt->since = now_s();
	/* its programs decide from now on: a selector's root lets it go */
	sel_pass(dt->dm, dt->cgpath, dt->cgid, EGR_HOLD_TREE);
	docker_guard(dt->dm, dt->cgid, true);
	dt_unwatch(dt);
	target_link_ids(dt->tg, ids, 24, &nids);
	for (int i = 0, n = 0; i < nids && n < (int)sizeof(idtext); i++)
		n += snprintf(idtext + n, sizeof(idtext) - (size_t)n, "%s%u", i ? " " : "", ids[i]);
	if (target_adopted(dt->tg)) {
		int names, fast, kv;

		target_restored(dt->tg, &names, &fast, &kv);
		dt_event(dt, "adopt",
			 "took over the programs pinned on %s (cgroup %llu; links %s; %d learned "
			 "names, %d fast-path entries and %d kernel-verified approvals the policy "
			 "still allows)",
			 dt->cgpath, (unsigned long long)dt->cgid, idtext, names, fast, kv);
	} else {
		dt_event(dt, "attach", "attached to %s (cgroup %llu; links %s)", dt->cgpath,
			 (unsigned long long)dt->cgid, idtext);
	}
}

/* A worker's load done (its eventfd): the programs attached on the loop,
 * and a policy a reload built meanwhile put in force; or a selector's
 * target goes (its cgroup stays held: nothing of it leaves), a named one
 * waits to be tried again (dt_check, as when its attach fails on the
 * loop). */
static void
dt_load_done(evutil_socket_t fd, short what, void *arg)
{
	struct dtarget *dt = arg;
	struct target_revoked rv;
	struct policy *old = NULL;
	struct target *tg;
	char why[512];
	int err;

	(void)fd;
	(void)what;
	dt_load_join(dt);
	dt_load_next(dt->dm);
	tg = dt->loading;
	dt->loading = NULL;
	err = target_attach_loaded(tg, dt->load, dt->cgpath, dt->cg_fd, dt->cgid, why, sizeof(why));
	target_load_free(dt->load);
	dt->load = NULL;
	if (err && !dt->dyn) {
		log_warnx("%s%s", dt->label, why);
		target_free(tg);
		dt_release(dt, false);
		return;
	}
	if (err) {
		log_warnx("%s%s (held: nothing of it leaves)", dt->label, why);
		target_free(tg);
		dt_release(dt, false);
		sel_unpass(dt->dm, cgroup_id_of(dt->dyn_what));
		dt_free(dt, false);
		return;
	}
	dt->tg = tg;
	dt_attached(dt);
	if (dt->waiting_policy) {
		target_swap_policy(dt->tg, &dt->spec.o, dt->waiting_policy, &rv, &old, why,
				   sizeof(why));
		dt->waiting_policy = NULL;
		policy_free(old);
	}
}

static int dt_load_thread(struct dtarget *dt);

/* A worker freed: the next queued load starts (one that cannot stays held
 * and goes). */
static void
dt_load_next(struct daemon *dm)
{
	struct dtarget *dt;

	dm->loads_running--;
	while ((dt = TAILQ_FIRST(&dm->load_queue))) {
		TAILQ_REMOVE(&dm->load_queue, dt, load_entry);
		dt->load_queued = false;
		if (!dt_load_thread(dt))
			return;
		log_warnx("%scannot start a worker to load the programs (held: nothing of it "
			  "leaves)",
			  dt->label);
		dt_release(dt, false);
		sel_unpass(dm, cgroup_id_of(dt->dyn_what));
		dt_free(dt, false);
	}
}

static void *
dt_load_run(void *arg)
{
	struct dtarget *dt = arg;
	uint64_t one = 1;

	target_load_run(dt->load);
	if (write(dt->load_efd, &one, sizeof(one)) != sizeof(one))
		log_warn("%scannot tell the loop the programs are loaded", dt->label);
	return NULL;
}

/* A worker for dt's load, counted in dm->loads_running. 0 or -ENOMEM
 * (nothing started). */
static int
dt_load_thread(struct dtarget *dt)
{
	dt->load_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (dt->load_efd < 0 ||
	    !(dt->load_ev = event_new(dt->dm->base, dt->load_efd, EV_READ, dt_load_done, dt)) ||
	    event_add(dt->load_ev, NULL) || pthread_create(&dt->load_th, NULL, dt_load_run, dt)) {
		if (dt->load_ev)
			event_free(dt->load_ev);
		dt->load_ev = NULL;
		if (dt->load_efd >= 0)
			close(dt->load_efd);
		dt->load_efd = -1;
		return -ENOMEM;
	}
	dt->dm->loads_running++;
	return 0;
}

/* dt's target (dt->tg, its listeners open) waits in dt->loading while a
 * worker loads its programs, or for a worker: as many run at once as
 * there are CPUs (more would finish every load of a burst late, none
 * early); dt->tg is NULL meanwhile, as for a target whose cgroup is not
 * there (a reload builds its policy for later). */
static int
dt_load_start(struct dtarget *dt, char *errbuf, size_t errlen)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (dt->dm->loads_running >= (cpus > 0 ? cpus : 1)) {
		dt->load_queued = true;
		TAILQ_INSERT_TAIL(&dt->dm->load_queue, dt, load_entry);
	} else if (dt_load_thread(dt)) {
		daemon_errf(errbuf, errlen, "cannot start a worker to load the programs");
		target_load_free(dt->load);
		dt->load = NULL;
		return -ENOMEM;
	}
	dt->loading = dt->tg;
	dt->tg = NULL;
	return 0;
}

/* The worker gone (waited for), its event and descriptor closed. */
static void
dt_load_join(struct dtarget *dt)
{
	pthread_join(dt->load_th, NULL);
	event_free(dt->load_ev);
	dt->load_ev = NULL;
	close(dt->load_efd);
	dt->load_efd = -1;
}

/* --containers, --docker: every decision names its cgroup and container. */
void
dt_name_containers(struct dtarget *dt)
{
	bool on = (dt->spec.o.containers_ip4 || dt->dm->docker) && dt->dm->names;

	dt->env.name_cgroup = on ? ctr_names_lookup : NULL;
	dt->env.name_arg = on ? dt->dm->names : NULL;
	/* a job's containers by their names on its networks (peers.c) */
	dt->env.local_name = dt->dm->docker && !dt->spec.server ? peers_local_name : NULL;
	dt->env.local_arg = dt;
}

struct dtarget *
dt_new(struct daemon *dm, const struct dspec *s)
{
	struct dtarget *dt = calloc(1, sizeof(*dt));

	if (!dt)
		return NULL;
	dt->dm = dm;
	dt->spec = *s;
	dt->cg_fd = -1;
	dt->wd = -1;
	dt->load_efd = -1;
	snprintf(dt->label, sizeof(dt->label), "target %s: ", s->name);
	snprintf(dt->command, sizeof(dt->command), "daemon target %s", s->name);
	dt->env.label = dt->label;
	dt->env.command = dt->command;
	dt->env.denial_lines = true;
	dt->env.emit_redirects = true;
	dt->env.on_record = dt_on_record;
	dt->env.record_arg = dt;
	dt->env.existing_pass = true;
	dt->env.revoke_direct = true;
	dt->env.kill_existing = s->kill_existing;
	/* secrets: their placeholders go to the file whoever started the
	 * daemon hands on; one file, so one target (a selector's would
	 * each write theirs) */
	dt->env.hands_secrets = s->o.secret_placeholders && !s->selector;
	dt->env.on_existing = on_existing;
	dt_name_containers(dt);
	TAILQ_INSERT_TAIL(&dm->targets, dt, entry);
	return dt;
}

void
dt_free(struct dtarget *dt, bool detach)
{
	policy_free(dt->waiting_policy);
	existing_free(dt->ahead);
	dt_unwatch(dt);
	dt_release(dt, detach);
	TAILQ_REMOVE(&dt->dm->targets, dt, entry);
	free(dt);
}

/* The daemon is never confined by itself: inside a target, it moves to a
 * cgroup of its own (<cgroup2>/egressctl/daemon) before opening a socket. */
int
targets_leave(struct daemon *dm, char *errbuf, size_t errlen)
{
	char self[PATH_MAX], own[PATH_MAX];
	struct dtarget *dt;
	bool created;
	int err;

	err = cgroup_of_pid(dm->mnt, getpid(), self, sizeof(self));
	if (err) {
		daemon_errf(errbuf, errlen, "cannot read the daemon's own cgroup: %s",
			    strerror(-err));
		return err;
	}
	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->cgpath[0] && below(self, dt->cgpath))
		break;
	if (!dt)
		return 0;
	daemon_errf(own, sizeof(own), "%s/egressctl/%s", dm->mnt, DAEMON_CGROUP);
	if (below(own, dt->cgpath)) {
		daemon_errf(errbuf, errlen,
			    "the daemon runs inside target %s (%s) and its own cgroup %s would be "
			    "inside it too: start it from another cgroup",
			    dt->spec.name, dt->cgpath, own);
		return -ELOOP;
	}
	err = cgroup_create(own, &created);
	if (!err)
		err = cgroup_enter(own, getpid());
	if (err) {
		daemon_errf(errbuf, errlen,
			    "the daemon runs inside target %s (%s) and cannot leave it for %s: %s",
			    dt->spec.name, dt->cgpath, own, strerror(-err));
		return err;
	}
	dm->moved = true;
	log_warnx("the daemon ran inside target %s (%s): moved itself to %s", dt->spec.name,
		  dt->cgpath, own);
	return 0;
}

/* At exit: the cgroup targets_leave made goes with the daemon (it moves
 * to the root cgroup to remove it; another daemon still in it keeps it). */
void
targets_remove_own(struct daemon *dm)
{
	char own[PATH_MAX];
	int err;

	if (!dm->moved)
		return;
	daemon_errf(own, sizeof(own), "%s/egressctl/%s", dm->mnt, DAEMON_CGROUP);
	err = cgroup_enter(dm->mnt, getpid());
	if (!err && rmdir(own) && errno != EBUSY)
		err = -errno;
	if (err)
		log_info("cannot remove %s: %s", own, strerror(-err));
}

/* Two targets where one holds the other would run two sets of programs
 * on the same sockets. */
int
targets_check_overlap(const struct daemon *dm, char *errbuf, size_t errlen)
{
	const struct dtarget *a, *b;

	TAILQ_FOREACH(a, &dm->targets, entry)
	TAILQ_FOREACH(b, &dm->targets, entry)
	{
		if (a == b || !a->cgpath[0] || !b->cgpath[0] || !below(b->cgpath, a->cgpath))
			continue;
		daemon_errf(errbuf, errlen,
			    "targets %s (%s) and %s (%s) overlap: confine one of them",
			    a->spec.name, a->cgpath, b->spec.name, b->cgpath);
		return -EINVAL;
	}
	return 0;
}

/* Attaches one target, or leaves it waiting for its cgroup (a unit that
 * is not running yet; its policy waits with it). p: its policy, owned from
 * now on (NULL: build it). Errors other than a missing cgroup are the
 * caller's. */
int
dt_start(struct dtarget *dt, struct policy *p, char *errbuf, size_t errlen)
{
	int err;

	policy_free(dt->waiting_policy);
	dt->waiting_policy = p;
	err = dt_attach(dt, dt->dyn, errbuf, errlen);
	if (err == -ENOENT && dt->spec.kind != DSPEC_PID) {
		log_warnx("%swaiting for its cgroup (%s)", dt->label, errbuf);
		dt_watch_parent(dt);
		return 0;
	}
	return err;
}

void
targets_log_all(struct daemon *dm, const char *event, const char *words)
{
	struct dtarget *dt;

	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->tg) {
		struct audit_rec r = {.event = event, .reason = words};

		target_log_event(dt->tg, &r);
	}
}

void
dt_check(struct dtarget *dt)
{
	char why[512];
	struct stat st;

	/* gone, or gone and made again under its name (a recycled name: the
	 * programs went with the cgroup they were attached to) */
	if (dt->tg && (stat(dt->cgpath, &st) || cgroup_id_of(dt->cgpath) != dt->cgid)) {
		dt_event(dt, "detach", "cgroup %s (%llu) is gone", dt->cgpath,
			 (unsigned long long)dt->cgid);
		dt_release(dt, true);
		if (dt->spec.kind == DSPEC_PID || dt->dyn) {
			dt_free(dt, false);
			return;
		}
		dt_watch_parent(dt);
	}
	if (dt->tg && dt_keep_address(dt, why, sizeof(why)))
		dt_event(dt, "containers", "%s", why);
	if (!dt->tg && !dt->held && !dt->loading) {
		int err = dt_attach(dt, dt->dyn || dt->dm->looping, why, sizeof(why));

		if (err && err != -ENOENT)
			log_warnx("%s%s", dt->label, why);
	}
}
