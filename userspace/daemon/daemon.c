// SPDX-License-Identifier: Apache-2.0
/* `egressctl daemon` (see daemon.h): its options, the targets it confines
 * (resolved to cgroups, attached or taken over, watched while they live),
 * reloading, runtime rules, the control socket's requests and systemd's
 * readiness protocol. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <event2/event.h>
#include <cJSON.h>

#include "lib/opts.h"
#include "target/status.h"
#include "target/suggest.h"
#include "target/summary.h"
#include "target/target.h"
#include "daemon/containers.h"
#include "daemon/control.h"
#include "daemon/daemon.h"
#include "daemon/dconfig.h"
#include "daemon/notify.h"
#include "kernel/cgroup.h"
#include "kernel/existing.h"
#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/log.h"
#include "audit/audit.h"
#include "proxy/proxy.h"
#include "proxy/quota.h"

#define DAEMON_MAX_RULES 64	  /* runtime rules per target */
#define RECENT_LINES	 512	  /* what `egressctl log` shows without -f */
#define DAEMON_CGROUP	 "daemon" /* <cgroup2>/egressctl/daemon: where it moves itself */

#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)                                                 \
	for ((var) = TAILQ_FIRST((head)); (var) && ((tvar) = TAILQ_NEXT((var), field), 1);         \
	     (var) = (tvar))
#endif

struct daemon;

/* One target: what the config named, and what it is now. */
struct dtarget {
	TAILQ_ENTRY(dtarget) entry;
	struct daemon *dm;
	struct dspec spec;
	char label[112]; /* "target NAME: " */
	char command[96];
	struct target_env env;
	struct target *tg; /* NULL while its cgroup does not exist */
	char cgpath[PATH_MAX];
	uint64_t cgid;
	int cg_fd;
	int wd; /* inotify: the parent directory, while waiting for the cgroup */
	struct target_rule rules[DAEMON_MAX_RULES];
	int nrules;
	bool rebuild_pending;	       /* its policy is to be built again (a rule expired) */
	struct policy *waiting_policy; /* built, for when its cgroup comes */
	uint64_t since;		       /* monotonic seconds: attached */
};

/* A `log -f` reader. */
struct follower {
	LIST_ENTRY(follower) entry;
	struct control_client *cl;
	uint64_t cgid; /* 0: every target */
};

struct daemon_opts {
	struct target_opts t; /* for the targets the command line names */
	const char *config;
	const char *control;
	bool kill_existing;
	struct {
		enum dspec_kind kind;
		const char *what;
	} named[DCONFIG_MAX_TARGETS];
	int nnamed;
};

struct daemon {
	struct daemon_opts *opts;
	struct event_base *base;
	struct dconfig cfg;
	TAILQ_HEAD(, dtarget) targets;
	struct control *ctl;
	int sfd, ino_fd;
	struct event *ev_sig, *ev_ino, *tick;
	LIST_HEAD(, follower) followers;
	char *recent[RECENT_LINES];
	uint64_t recent_cgid[RECENT_LINES];
	unsigned int nrecent, recent_at;
	char mnt[PATH_MAX];
	bool moved;		 /* it left a target for <mnt>/egressctl/daemon (leave_targets) */
	struct ctr_names *names; /* the cgroups of the containers' decisions */
	uint64_t started;
	uint64_t reloads, reloads_rejected;
	int status;
	struct job *job; /* a policy build in a worker thread */
	bool reload_pending;
	struct control_client *pending_waiters[16]; /* `reload`s waiting for the next one */
	int npending;
};

/* Runtime rules by target, copied for a worker. */
struct rules_of {
	enum dspec_kind kind;
	char what[PATH_MAX];
	struct target_rule rules[DAEMON_MAX_RULES];
	int n;
};

/* A policy build off the event loop: a reload (the config file and every
 * policy read again) or the rebuild of one target's policy (a runtime
 * rule expired). The worker touches only its job; the loop applies what
 * it built when its eventfd fires, so decisions never wait for a build.
 * One job at a time: what is asked meanwhile is queued. */
struct job {
	struct daemon *dm;
	bool reload;
	struct dtarget *dt; /* a rebuild's target (still there: dt_free cancels it) */
	struct dconfig cfg; /* a reload's: read by the worker */
	const struct target_opts *o;
	struct rules_of *ro; /* runtime rules at the start */
	int nro;
	struct policy *built[DCONFIG_MAX_TARGETS];
	int err;
	char errbuf[768];
	pthread_t th;
	int efd;
	struct event *ev;
	struct control_client *waiters[16];
	int nwait;
	uint64_t t_start, t_built; /* CLOCK_MONOTONIC ns: asked, built */
};

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* An error message; one cut short is still the message. */
static void errf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
errf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* ---- options ---- */

static int
add_named(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct daemon_opts *d = dst;

	if (d->nnamed == DCONFIG_MAX_TARGETS) {
		snprintf(err, errlen, "at most %d targets", DCONFIG_MAX_TARGETS);
		return -EINVAL;
	}
	if (!strcmp(o->name, "pid")) {
		char *end;
		long v = strtol(arg, &end, 10);

		if (*end || v < 1 || v > 4194304) {
			snprintf(err, errlen, "expected a process id");
			return -EINVAL;
		}
	}
	d->named[d->nnamed].kind = !strcmp(o->name, "cgroup") ? DSPEC_CGROUP
				   : !strcmp(o->name, "unit") ? DSPEC_UNIT
							      : DSPEC_PID;
	d->named[d->nnamed].what = arg;
	d->nnamed++;
	return 0;
}

static int
set_containers(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct daemon_opts *d = dst;

	(void)o;
	return ctr_parse_addr(arg, &d->t.containers_ip4, err, errlen);
}

#define DO(field) offsetof(struct daemon_opts, field)

static const struct opt daemon_opt_table[] = {
	{"config", 0, OPT_T_STR, DO(config), "FILE",
	 "the targets and their options, as JSON (default\n" DCONFIG_DEFAULT
	 " when no target is named)"},
	{"cgroup", 0, OPT_T_CALL, 0, "NAME|PATH",
	 "confine this existing cgroup and its descendants:\n"
	 "NAME is <cgroup2>/egressctl/NAME, PATH absolute or\n"
	 "relative to the cgroup2 mount (repeatable)",
	 .call = add_named},
	{"unit", 0, OPT_T_CALL, 0, "NAME", "confine the cgroup of a systemd unit (x.service)",
	 .call = add_named},
	{"pid", 0, OPT_T_CALL, 0, "PID", "confine the cgroup of process PID", .call = add_named},
	{"kill-existing", 0, OPT_T_FLAG, DO(kill_existing), NULL,
	 "end the connections the targets had open before\n"
	 "the attach (default: list them, not confined)"},
	{"containers", 0, OPT_T_CALL, 0, "ADDR",
	 "confine the targets' containers too, in network\n"
	 "namespaces of their own: their connections and DNS\n"
	 "reach egressctl at ADDR, this host's address on\n"
	 "their bridge (docker0 172.17.0.1, podman 10.88.0.1)",
	 .call = set_containers},
	{"control", 0, OPT_T_STR, DO(control), "PATH",
	 "the control socket (default " DCONFIG_CONTROL ")"},
	{"verbose", 'v', OPT_T_COUNT, 0, NULL,
	 "more diagnostics (twice: libbpf and verifier output)", .var = &log_verbose},
	{"help", 'h', OPT_T_HELP, 0, NULL, "this text"},
	{0},
};

/* daemon takes run's target rows but for --suggest-policy (summary has it). */
static const struct opt *
daemon_target_rows(struct opt *buf, size_t n)
{
	size_t k = 0;

	for (const struct opt *o = target_opt_table; o->name && k + 1 < n; o++)
		if (strcmp(o->name, "suggest-policy"))
			buf[k++] = *o;
	memset(&buf[k], 0, sizeof(buf[k]));
	return buf;
}

void
daemon_usage(FILE *f)
{
	struct opt rows[48];
	struct daemon_opts o;
	const struct opt_set sets[] = {{daemon_opt_table, &o},
				       {daemon_target_rows(rows, 48), &o.t}};

	fprintf(f,
		"usage: egressctl daemon [--config FILE] [--cgroup PATH|--unit NAME|--pid PID]...\n"
		"                        [OPTIONS]\n"
		"\n"
		"Confines cgroups that exist already (a CI runner's service, a systemd unit,\n"
		"the cgroup of a process) with the programs and proxy `run` uses, each with\n"
		"its own policy and log. Runs in the foreground (systemd Type=notify). The\n"
		"programs stay pinned when the daemon stops: its targets' new connections\n"
		"are refused until it runs again and takes them over (link ids unchanged);\n"
		"`egressctl detach` lifts confinement. SIGHUP or `egressctl reload` reads\n"
		"the config and the policies again: a file that does not parse is rejected\n"
		"whole and the old policy stays. The options below the first block apply\n"
		"to the targets named on the command line; in FILE each target has them as\n"
		"keys (\"max_conns\": 100). The policy defaults to $EGRESSCTL_POLICY or\n"
		"/etc/egressctl/policy.json.\n"
		"\n");
	opts_help(f, sets, 2);
	fprintf(f, "\n"
		   "Exit status: 0 after SIGTERM/SIGINT; 2 a usage error; 125 egressctl failed.\n");
}

/* ---- recent lines and followers ---- */

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
on_record(void *arg, const struct audit_rec *r)
{
	struct dtarget *dt = arg;
	struct daemon *dm = dt->dm;
	struct follower *f;
	struct timespec ts;
	char line[2048];
	int n;

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

/* An event of the daemon's own, in the target's log and on stderr. */
static void dt_event(struct dtarget *dt, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
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

/* ---- resolving a target to its cgroup ---- */

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
static int
resolve(const char *mnt, const struct dspec *s, char *out, size_t outlen, char *errbuf,
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
			errf(errbuf, errlen, "%s: not a NAME ([A-Za-z0-9._-]) nor a path below %s",
			     s->where, mnt);
			return err;
		}
		break;
	case DSPEC_UNIT:
		err = systemd_cgroup(mnt, s->what, out, outlen);
		if (err)
			err = cgroup_find_named(mnt, s->what, out, outlen);
		if (err == -EEXIST) {
			errf(errbuf, errlen, "%s: more than one cgroup is called %s", s->where,
			     s->what);
			return err;
		}
		if (err) {
			errf(errbuf, errlen, "%s: unit %s has no cgroup (is it running?)", s->where,
			     s->what);
			return err;
		}
		break;
	case DSPEC_PID:
		err = cgroup_of_pid(mnt, (pid_t)atoi(s->what), out, outlen);
		if (err) {
			errf(errbuf, errlen, "%s: no cgroup2 cgroup for process %s: %s", s->where,
			     s->what, strerror(-err));
			return err;
		}
		break;
	}
	if (stat(out, &st) || !S_ISDIR(st.st_mode)) {
		err = -errno ? -errno : -ENOTDIR;
		errf(errbuf, errlen, "%s: %s: %s", s->where, out,
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

/* ---- attaching ---- */

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

/* Connections the cgroup had open before the programs: listed (or ended,
 * with kill_existing) and logged. */
/* The connections the cgroup had open before the attach (the pass of
 * target.c): each one said on stderr and logged, with who holds it. */
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
		struct sockaddr_storage ss = {0};
		struct audit_rec r = {0};
		char line[400];

		existing_format(&v[i], line, sizeof(line));
		log_warnx("%s%s", dt->label, line);
		if (!memcmp(v[i].raddr, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;

			in->sin_family = AF_INET;
			memcpy(&in->sin_addr, &v[i].raddr[3], 4);
		} else {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

			in6->sin6_family = AF_INET6;
			memcpy(&in6->sin6_addr, v[i].raddr, 16);
		}
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

static void
dt_release(struct dtarget *dt, bool detach)
{
	if (dt->tg) {
		target_finish(dt->tg);
		target_write_summary_file(dt->tg); /* --summary FILE: at detach and stop */
		if (detach)
			target_detach(dt->tg);
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

/* Attaches dt to its cgroup (taking over what a previous daemon pinned).
 * -ENOENT: the cgroup does not exist (yet). */
static int
dt_attach(struct dtarget *dt, char *errbuf, size_t errlen)
{
	struct daemon *dm = dt->dm;
	uint32_t ids[24];
	char idtext[160] = "";
	int err, nids;

	err = resolve(dm->mnt, &dt->spec, dt->cgpath, sizeof(dt->cgpath), errbuf, errlen);
	if (err)
		return err;
	dt->cg_fd = open(dt->cgpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dt->cg_fd < 0) {
		err = -errno;
		errf(errbuf, errlen, "%s: %s", dt->cgpath, strerror(-err));
		return err;
	}
	if (flock(dt->cg_fd, LOCK_EX | LOCK_NB)) {
		errf(errbuf, errlen, "cgroup %s is confined by another egressctl (run or daemon)",
		     dt->cgpath);
		err = -EBUSY;
		goto fail;
	}
	dt->cgid = cgroup_id_of(dt->cgpath);
	if (!dt->cgid) {
		err = -errno;
		errf(errbuf, errlen, "cannot read the id of cgroup %s", dt->cgpath);
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
	err = target_attach(dt->tg, dt->cgpath, dt->cg_fd, dt->cgid, true, errbuf, errlen);
	if (err)
		goto fail;
	dt->since = now_s();
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
	return 0;
fail:
	dt_release(dt, false);
	return err;
}

/* --containers: every decision names its cgroup and container. */
static void
dt_name_containers(struct dtarget *dt)
{
	bool on = dt->spec.o.containers_ip4 && dt->dm->names;

	dt->env.name_cgroup = on ? ctr_names_lookup : NULL;
	dt->env.name_arg = on ? dt->dm->names : NULL;
}

static struct dtarget *
dt_new(struct daemon *dm, const struct dspec *s)
{
	struct dtarget *dt = calloc(1, sizeof(*dt));

	if (!dt)
		return NULL;
	dt->dm = dm;
	dt->spec = *s;
	dt->cg_fd = -1;
	dt->wd = -1;
	snprintf(dt->label, sizeof(dt->label), "target %s: ", s->name);
	snprintf(dt->command, sizeof(dt->command), "daemon target %s", s->name);
	dt->env.label = dt->label;
	dt->env.command = dt->command;
	dt->env.denial_lines = true;
	dt->env.emit_redirects = true;
	dt->env.on_record = on_record;
	dt->env.record_arg = dt;
	dt->env.existing_pass = true;
	dt->env.revoke_direct = true;
	dt->env.kill_existing = s->kill_existing;
	dt->env.on_existing = on_existing;
	dt_name_containers(dt);
	TAILQ_INSERT_TAIL(&dm->targets, dt, entry);
	return dt;
}

static void
dt_free(struct dtarget *dt, bool detach)
{
	if (dt->dm->job && dt->dm->job->dt == dt)
		dt->dm->job->dt = NULL; /* its rebuild's result goes nowhere */
	policy_free(dt->waiting_policy);
	dt_unwatch(dt);
	dt_release(dt, detach);
	TAILQ_REMOVE(&dt->dm->targets, dt, entry);
	free(dt);
}

/* ---- the daemon's own cgroup ---- */

/* The daemon is never confined by itself: inside a target, it moves to a
 * cgroup of its own (<cgroup2>/egressctl/daemon) before opening a socket. */
static int
leave_targets(struct daemon *dm, char *errbuf, size_t errlen)
{
	char self[PATH_MAX], own[PATH_MAX];
	struct dtarget *dt;
	bool created;
	int err;

	err = cgroup_of_pid(dm->mnt, getpid(), self, sizeof(self));
	if (err) {
		errf(errbuf, errlen, "cannot read the daemon's own cgroup: %s", strerror(-err));
		return err;
	}
	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->cgpath[0] && below(self, dt->cgpath))
		break;
	if (!dt)
		return 0;
	errf(own, sizeof(own), "%s/egressctl/%s", dm->mnt, DAEMON_CGROUP);
	if (below(own, dt->cgpath)) {
		errf(errbuf, errlen,
		     "the daemon runs inside target %s (%s) and its own cgroup %s would be "
		     "inside it too: start it from another cgroup",
		     dt->spec.name, dt->cgpath, own);
		return -ELOOP;
	}
	err = cgroup_create(own, &created);
	if (!err)
		err = cgroup_enter(own, getpid());
	if (err) {
		errf(errbuf, errlen,
		     "the daemon runs inside target %s (%s) and cannot leave it for %s: %s",
		     dt->spec.name, dt->cgpath, own, strerror(-err));
		return err;
	}
	dm->moved = true;
	log_warnx("the daemon ran inside target %s (%s): moved itself to %s", dt->spec.name,
		  dt->cgpath, own);
	return 0;
}

/* At exit: the cgroup leave_targets made goes with the daemon (it moves
 * to the root cgroup to remove it; another daemon still in it keeps it). */
static void
remove_own(struct daemon *dm)
{
	char own[PATH_MAX];
	int err;

	if (!dm->moved)
		return;
	errf(own, sizeof(own), "%s/egressctl/%s", dm->mnt, DAEMON_CGROUP);
	err = cgroup_enter(dm->mnt, getpid());
	if (!err && rmdir(own) && errno != EBUSY)
		err = -errno;
	if (err)
		log_info("cannot remove %s: %s", own, strerror(-err));
}

/* Two targets where one holds the other would run two sets of programs
 * on the same sockets. */
static int
check_overlap(const struct daemon *dm, char *errbuf, size_t errlen)
{
	const struct dtarget *a, *b;

	TAILQ_FOREACH(a, &dm->targets, entry)
	TAILQ_FOREACH(b, &dm->targets, entry)
	{
		if (a == b || !a->cgpath[0] || !b->cgpath[0] || !below(b->cgpath, a->cgpath))
			continue;
		errf(errbuf, errlen, "targets %s (%s) and %s (%s) overlap: confine one of them",
		     a->spec.name, a->cgpath, b->spec.name, b->cgpath);
		return -EINVAL;
	}
	return 0;
}

/* ---- the targets named at start, and reloads ---- */

/* A target with neither a policy nor rules: $EGRESSCTL_POLICY, else
 * /etc/egressctl/policy.json when it exists; and $EGRESSCTL_LOG for one
 * without a log. */
static void
set_default_policy(struct dconfig *c)
{
	for (int i = 0; i < c->n; i++) {
		struct target_opts *o = &c->specs[i].o;
		bool none = !o->policy_file && !o->nrules;

		target_env_defaults(o);
		if (none && !o->policy_file && !access(DCONFIG_POLICY, R_OK))
			o->policy_file = DCONFIG_POLICY;
	}
}

/* The configuration: the file, or the targets of the command line. Reads
 * only dm->opts: a worker thread may call it. */
static int
load_config(const struct daemon *dm, struct dconfig *c, char *errbuf, size_t errlen)
{
	const struct daemon_opts *o = dm->opts;
	int err;

	if (o->config || !o->nnamed) {
		const char *path = o->config ? o->config : DCONFIG_DEFAULT;

		if (!o->config && access(path, F_OK)) {
			errf(errbuf, errlen,
			     "no targets: name them (--cgroup, --unit, --pid) or give --config "
			     "FILE (%s does not exist)",
			     path);
			return -ENOENT;
		}
		err = dconfig_load(path, c, errbuf, errlen);
		if (err)
			return err;
	} else {
		memset(c, 0, sizeof(*c));
		for (int i = 0; i < o->nnamed; i++) {
			err = dconfig_add(c, o->named[i].kind, o->named[i].what, &o->t,
					  o->kill_existing, errbuf, errlen);
			if (err)
				return err;
		}
	}
	if (o->control)
		c->control = o->control;
	set_default_policy(c);
	return 0;
}

/* Every target's policy for c, with its runtime rules; all or nothing.
 * Pure (files and memory): runs in the worker, or before the loop. */
static int
build_all(const struct dconfig *c, const struct rules_of *ro, int nro, struct policy **built,
	  char *errbuf, size_t errlen)
{
	for (int i = 0; i < c->n; i++) {
		const struct target_rule *extra = NULL;
		char why[512];
		int nextra = 0;

		for (int k = 0; k < nro; k++)
			if (ro[k].kind == c->specs[i].kind &&
			    !strcmp(ro[k].what, c->specs[i].what)) {
				extra = ro[k].rules;
				nextra = ro[k].n;
			}
		built[i] = target_policy_build(&c->specs[i].o, extra, nextra, why, sizeof(why));
		if (!built[i]) {
			errf(errbuf, errlen, "%s: %s", c->specs[i].where, why);
			while (i-- > 0) {
				policy_free(built[i]);
				built[i] = NULL;
			}
			return -EINVAL;
		}
	}
	return 0;
}

/* Attaches one target, or leaves it waiting for its cgroup (a unit that
 * is not running yet; its policy waits with it). p: its policy, owned from
 * now on (NULL: build it). Errors other than a missing cgroup are the
 * caller's. */
static int
start_target(struct dtarget *dt, struct policy *p, char *errbuf, size_t errlen)
{
	int err;

	policy_free(dt->waiting_policy);
	dt->waiting_policy = p;
	err = dt_attach(dt, errbuf, errlen);
	if (err == -ENOENT && dt->spec.kind != DSPEC_PID) {
		log_warnx("%swaiting for its cgroup (%s)", dt->label, errbuf);
		dt_watch_parent(dt);
		return 0;
	}
	return err;
}

static void
log_all(struct daemon *dm, const char *event, const char *words)
{
	struct dtarget *dt;

	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->tg) {
		struct audit_rec r = {.event = event, .reason = words};

		target_log_event(dt->tg, &r);
	}
}

/* The builder's duty cycle (and the retirer's): after BUILD_WORK_NS of
 * work, a pause of BUILD_PAUSE_NS. SCHED_IDLE alone leaves the loop its
 * core but takes the rest of a 2-core machine that the connections also
 * wait on (the clients, the servers, softirq): a 100,000-rule build added
 * 1.8-6.0 ms to the p99 of the connections during it; paced like this,
 * -16-638 us, and the build takes 2.1 s instead of 0.3 (docs/performance.md,
 * "Runner mode"). */
#define BUILD_WORK_NS  100000ULL
#define BUILD_PAUSE_NS 1000000ULL

static void
build_pace(void *arg)
{
	uint64_t *since = arg, now = mono_ns();
	struct timespec ts = {0, BUILD_PAUSE_NS};

	if (now - *since < BUILD_WORK_NS)
		return;
	nanosleep(&ts, NULL);
	*since = mono_ns();
}

/* A worker thread (the builder, the retirer) takes what the event loop
 * leaves, paced by build_pace from now on; since: the pace's state, on the
 * worker's stack. */
static void
worker_background(uint64_t *since)
{
	struct sched_param none = {0};

	pthread_setschedparam(pthread_self(), SCHED_IDLE, &none);
	*since = mono_ns();
	policy_set_pace(build_pace, since);
}

static void *
job_run(void *arg)
{
	struct job *j = arg;
	uint64_t one = 1, since;

	worker_background(&since); /* decisions first */
	if (j->reload) {
		j->err = load_config(j->dm, &j->cfg, j->errbuf, sizeof(j->errbuf));
		if (!j->err)
			j->err = build_all(&j->cfg, j->ro, j->nro, j->built, j->errbuf,
					   sizeof(j->errbuf));
	} else {
		j->built[0] = target_policy_build(j->o, j->ro[0].rules, j->ro[0].n, j->errbuf,
						  sizeof(j->errbuf));
		j->err = j->built[0] ? 0 : -EINVAL;
	}
	j->t_built = mono_ns();
	if (write(j->efd, &one, sizeof(one)) < 0)
		j->err = j->err ? j->err : -errno; /* the loop waits on it: cannot happen */
	return NULL;
}

static void job_done(evutil_socket_t fd, short what, void *arg);

static void *
free_policy(void *arg)
{
	uint64_t since;

	worker_background(&since);
	policy_free(arg);
	return NULL;
}

/* A policy of 100,000 rules takes milliseconds to free: not on the loop. */
static void
retire_policy(struct policy *p)
{
	pthread_attr_t a;
	pthread_t th;

	if (!p)
		return;
	if (pthread_attr_init(&a) || pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) ||
	    pthread_create(&th, &a, free_policy, p))
		policy_free(p);
	pthread_attr_destroy(&a);
}

static void
job_reply(struct job *j, int err, const char *errbuf)
{
	for (int i = 0; i < j->nwait; i++) {
		cJSON *o = cJSON_CreateObject();
		char *out;

		cJSON_AddBoolToObject(o, "ok", !err);
		if (err)
			cJSON_AddStringToObject(o, "error", errbuf);
		out = cJSON_PrintUnformatted(o);
		if (out)
			control_send(j->waiters[i], out);
		cJSON_free(out);
		cJSON_Delete(o);
		control_end(j->waiters[i]);
	}
	j->nwait = 0;
}

/* Starts a job: a reload, or (dt) a rebuild of dt's policy. */
static int
job_start(struct daemon *dm, struct dtarget *dt)
{
	struct job *j = calloc(1, sizeof(*j));
	struct dtarget *t;
	int n = 0;

	if (!j)
		return -ENOMEM;
	j->dm = dm;
	j->t_start = mono_ns();
	j->reload = !dt;
	j->dt = dt;
	j->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	TAILQ_FOREACH(t, &dm->targets, entry)
	n++;
	j->ro = calloc(n ? (size_t)n : 1, sizeof(*j->ro));
	if (j->efd < 0 || !j->ro)
		goto fail;
	TAILQ_FOREACH(t, &dm->targets, entry)
	{
		if (dt && t != dt)
			continue;
		j->ro[j->nro].kind = t->spec.kind;
		snprintf(j->ro[j->nro].what, sizeof(j->ro[j->nro].what), "%s", t->spec.what);
		memcpy(j->ro[j->nro].rules, t->rules, sizeof(t->rules));
		j->ro[j->nro].n = t->nrules;
		j->nro++;
	}
	if (dt)
		j->o = &dt->spec.o;
	j->ev = event_new(dm->base, j->efd, EV_READ, job_done, j);
	if (!j->ev || event_add(j->ev, NULL) || pthread_create(&j->th, NULL, job_run, j))
		goto fail;
	dm->job = j;
	if (!dt)
		notify_send("RELOADING=1");
	return 0;
fail:
	if (j->ev)
		event_free(j->ev);
	if (j->efd >= 0)
		close(j->efd);
	free(j->ro);
	free(j);
	return -ENOMEM;
}

/* name as it is once the job's dconfig is the daemon's: a name in the
 * job's names[] moves with it. */
static const char *
cfg_name(const struct job *j, const struct daemon *dm, const char *name)
{
	uintptr_t p = (uintptr_t)name, lo = (uintptr_t)j->cfg.names;
	size_t row = sizeof(j->cfg.names[0]);

	if (p < lo || p >= lo + sizeof(j->cfg.names))
		return name;
	return dm->cfg.names[(p - lo) / row] + (p - lo) % row;
}

/* A reload's result: targets the config no longer names are detached, new
 * ones attached, the rest get their new policy (or, when other options
 * changed, attach again). */
static void
apply_reload(struct daemon *dm, struct job *j)
{
	struct dtarget *dt, *tmp;
	char why[512];

	dm->reloads++;
	TAILQ_FOREACH_SAFE(dt, &dm->targets, entry, tmp)
	{
		bool named = false;

		for (int i = 0; i < j->cfg.n; i++)
			named |= dspec_same_target(&dt->spec, &j->cfg.specs[i]);
		if (!named) {
			dt_event(dt, "detach", "no longer in the configuration: detached");
			dt_free(dt, true);
		}
	}
	for (int i = 0; i < j->cfg.n; i++) {
		struct dspec *s = &j->cfg.specs[i];
		struct policy *p = j->built[i];

		j->built[i] = NULL;
		TAILQ_FOREACH(dt, &dm->targets, entry)
		if (dspec_same_target(&dt->spec, s))
			break;
		if (!dt) {
			dt = dt_new(dm, s);
			if (!dt || start_target(dt, p, why, sizeof(why))) {
				log_warnx("%s: %s", s->where, dt ? why : "out of memory");
				if (dt)
					dt_free(dt, false);
				else
					policy_free(p);
			}
			continue;
		}
		if (dt->tg && dspec_same_but_policy(&dt->spec, s)) {
			struct target_revoked rv;
			struct policy *old = NULL;

			dt->spec = *s;
			if (target_swap_policy(dt->tg, &dt->spec.o, p, &rv, &old, why, sizeof(why)))
				dt_event(dt, "reload", "the fast path does not follow: %s", why);
			dt_event(dt, "reload",
				 "policy reloaded: %u rules; revoked %llu connections, %llu "
				 "fast-path entries, %llu learned names",
				 target_rule_count(dt->tg), (unsigned long long)rv.conns,
				 (unsigned long long)rv.fast, (unsigned long long)rv.names);
			retire_policy(old);
			continue;
		}
		/* other options changed (or it was waiting): attach again */
		dt_release(dt, false);
		dt->spec = *s;
		dt->env.kill_existing = s->kill_existing;
		dt_name_containers(dt);
		snprintf(dt->label, sizeof(dt->label), "target %s: ", s->name);
		if (start_target(dt, p, why, sizeof(why)))
			log_warnx("%s%s", dt->label, why);
	}
	/* every target now points into the new config */
	dconfig_free(&dm->cfg);
	dm->cfg = j->cfg;
	memset(&j->cfg, 0, sizeof(j->cfg));
	/* names made up from the target (no "name" key) live in the dconfig
	 * itself, which moved from the job (freed next) to the daemon */
	for (int i = 0; i < dm->cfg.n; i++)
		dm->cfg.specs[i].name = cfg_name(j, dm, dm->cfg.specs[i].name);
	TAILQ_FOREACH(dt, &dm->targets, entry)
	dt->spec.name = cfg_name(j, dm, dt->spec.name);
}

static void
job_free(struct job *j)
{
	for (int i = 0; i < DCONFIG_MAX_TARGETS; i++)
		policy_free(j->built[i]);
	dconfig_free(&j->cfg);
	event_free(j->ev);
	close(j->efd);
	free(j->ro);
	free(j);
}

static void job_next(struct daemon *dm);

static void
job_done(evutil_socket_t fd, short what, void *arg)
{
	struct job *j = arg;
	struct daemon *dm = j->dm;
	struct target_revoked rv;
	char why[512];

	(void)fd;
	(void)what;
	pthread_join(j->th, NULL);
	dm->job = NULL;
	if (j->reload && j->err) {
		char words[900];

		dm->reloads_rejected++;
		snprintf(words, sizeof(words), "reload rejected, the old policy stays: %s",
			 j->errbuf);
		log_warnx("%s", words);
		log_all(dm, "reload-rejected", words);
		notify_send("READY=1\nSTATUS=reload rejected");
	} else if (j->reload) {
		apply_reload(dm, j);
		log_warnx("reloaded: policies built in %.1f ms off the event loop, applied in %.2f "
			  "ms",
			  (double)(j->t_built - j->t_start) / 1e6,
			  (double)(mono_ns() - j->t_built) / 1e6);
		notify_send("READY=1\nSTATUS=reloaded");
	} else if (j->dt && j->err) {
		dt_event(j->dt, "reload-rejected", "policy after a rule expired rejected: %s",
			 j->errbuf);
	} else if (j->dt && j->dt->tg) {
		struct policy *old = NULL;

		target_swap_policy(j->dt->tg, &j->dt->spec.o, j->built[0], &rv, &old, why,
				   sizeof(why));
		j->built[0] = NULL;
		retire_policy(old);
	} else if (j->dt) {
		policy_free(j->dt->waiting_policy);
		j->dt->waiting_policy = j->built[0];
		j->built[0] = NULL;
	}
	job_reply(j, j->reload ? j->err : 0, j->errbuf);
	job_free(j);
	job_next(dm);
}

/* What was asked while a job ran. */
static void
job_next(struct daemon *dm)
{
	struct dtarget *dt;

	if (dm->job)
		return;
	if (dm->reload_pending) {
		dm->reload_pending = false;
		if (job_start(dm, NULL)) {
			log_warnx("cannot start the reload: out of memory");
			return;
		}
		memcpy(dm->job->waiters, dm->pending_waiters, sizeof(dm->pending_waiters));
		dm->job->nwait = dm->npending;
		dm->npending = 0;
		return;
	}
	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->rebuild_pending) {
		dt->rebuild_pending = false;
		if (!job_start(dm, dt))
			return;
	}
}

/* A reload asked for (SIGHUP, or `egressctl reload` from cl). */
static void
want_reload(struct daemon *dm, struct control_client *cl)
{
	if (cl && dm->npending < 16)
		dm->pending_waiters[dm->npending++] = cl;
	else if (cl) {
		control_send(cl, "{\"ok\":false,\"error\":\"too many reloads waiting\"}");
		control_end(cl);
	}
	dm->reload_pending = true;
	job_next(dm);
}

/* ---- runtime rules, the tick ---- */

static void
expire_rules(struct dtarget *dt, uint64_t now)
{
	int k = 0, gone = 0;

	for (int i = 0; i < dt->nrules; i++) {
		if (dt->rules[i].expires && dt->rules[i].expires <= now) {
			dt_event(dt, "rule-expired", "%s %s expired",
				 dt->rules[i].action == POLICY_ALLOW ? "allow" : "deny",
				 dt->rules[i].text);
			gone++;
			continue;
		}
		dt->rules[k++] = dt->rules[i];
	}
	dt->nrules = k;
	if (gone) {
		dt->rebuild_pending = true;
		job_next(dt->dm);
	}
}

/* Once a second: expired runtime rules, targets whose cgroup went away
 * (the kernel detached their programs with it), waiting targets whose
 * cgroup came. */
static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *dm = arg;
	struct dtarget *dt, *tmp;
	uint64_t now = now_s();
	char why[512];
	struct stat st;

	(void)fd;
	(void)what;
	TAILQ_FOREACH_SAFE(dt, &dm->targets, entry, tmp)
	{
		expire_rules(dt, now);
		if (dt->tg && stat(dt->cgpath, &st)) {
			dt_event(dt, "detach", "cgroup %s is gone", dt->cgpath);
			dt_release(dt, true);
			if (dt->spec.kind == DSPEC_PID) {
				dt_free(dt, false);
				continue;
			}
			dt_watch_parent(dt);
		}
		if (dt->tg && dt_keep_address(dt, why, sizeof(why)))
			dt_event(dt, "containers", "%s", why);
		if (!dt->tg) {
			int err = dt_attach(dt, why, sizeof(why));

			if (err && err != -ENOENT)
				log_warnx("%s%s", dt->label, why);
		}
	}
}

static void
on_inotify(evutil_socket_t fd, short what, void *arg)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	(void)what;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	on_tick(-1, 0, arg); /* a directory came: attach what waits for it */
}

/* ---- the control socket's requests ---- */

static const char *
jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void
reply(struct control_client *cl, cJSON *o)
{
	char *out = cJSON_PrintUnformatted(o);

	if (out)
		control_send(cl, out);
	cJSON_free(out);
	cJSON_Delete(o);
}

static void reply_error(struct control_client *cl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
reply_error(struct control_client *cl, const char *fmt, ...)
{
	cJSON *o = cJSON_CreateObject();
	char words[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(words, sizeof(words), fmt, ap);
	va_end(ap);
	cJSON_AddFalseToObject(o, "ok");
	cJSON_AddStringToObject(o, "error", words);
	reply(cl, o);
	control_end(cl);
}

static void
reply_ok(struct control_client *cl, cJSON *o)
{
	if (!o)
		o = cJSON_CreateObject();
	cJSON_AddTrueToObject(o, "ok");
	reply(cl, o);
	control_end(cl);
}

/* The target `--cgroup X` means: its name, its cgroup (absolute, or
 * relative to the mount), or its cgroup id. */
static struct dtarget *
find_target(struct daemon *dm, const char *x)
{
	struct dtarget *dt;
	char *end;
	unsigned long long id = x ? strtoull(x, &end, 10) : 0;

	if (!x)
		return NULL;
	TAILQ_FOREACH(dt, &dm->targets, entry)
	{
		size_t n = strlen(dm->mnt);

		if (!strcmp(dt->spec.name, x) || !strcmp(dt->spec.what, x) ||
		    (dt->cgpath[0] && !strcmp(dt->cgpath, x)) ||
		    (dt->cgpath[0] && !strncmp(dt->cgpath, dm->mnt, n) &&
		     !strcmp(dt->cgpath + n + (x[0] != '/'), x)) ||
		    (!*end && id && id == dt->cgid))
			return dt;
	}
	return NULL;
}

static struct dtarget *
want_target(struct daemon *dm, struct control_client *cl, const cJSON *req)
{
	const char *x = jstr(req, "target");
	struct dtarget *dt;

	if (!x) {
		/* one target: it needs no naming */
		dt = TAILQ_FIRST(&dm->targets);
		if (dt && !TAILQ_NEXT(dt, entry))
			return dt;
		reply_error(cl, "name the target (--cgroup NAME|PATH): the daemon has %s",
			    dt ? "several" : "none");
		return NULL;
	}
	dt = find_target(dm, x);
	if (!dt)
		reply_error(cl, "no target %s", x);
	return dt;
}

static cJSON *
target_json(const struct daemon *dm, const struct dtarget *dt)
{
	static const char *const kinds[] = {"cgroup", "unit", "pid"};
	cJSON *o = cJSON_CreateObject(), *rules, *links;
	uint64_t now = now_s();

	cJSON_AddStringToObject(o, "name", dt->spec.name);
	cJSON_AddStringToObject(o, "kind", kinds[dt->spec.kind]);
	cJSON_AddStringToObject(o, "what", dt->spec.what);
	cJSON_AddStringToObject(o, "state", dt->tg ? "confined" : "waiting");
	if (dt->cgpath[0])
		cJSON_AddStringToObject(o, "cgroup", dt->cgpath);
	cJSON_AddNumberToObject(o, "cgroup_id", (double)dt->cgid);
	if (dt->spec.o.policy_file)
		cJSON_AddStringToObject(o, "policy_file", dt->spec.o.policy_file);
	if (dt->spec.o.log_file)
		cJSON_AddStringToObject(o, "log", dt->spec.o.log_file);
	cJSON_AddBoolToObject(o, "audit", dt->spec.o.audit);
	rules = cJSON_AddArrayToObject(o, "runtime_rules");
	for (int i = 0; i < dt->nrules; i++) {
		cJSON *r = cJSON_CreateObject();

		cJSON_AddStringToObject(r, "action",
					dt->rules[i].action == POLICY_ALLOW ? "allow" : "deny");
		cJSON_AddStringToObject(r, "rule", dt->rules[i].text);
		if (dt->rules[i].expires)
			cJSON_AddNumberToObject(r, "expires_in",
						(double)(dt->rules[i].expires - now));
		cJSON_AddItemToArray(rules, r);
	}
	if (dt->tg) {
		struct status_info si;
		uint32_t ids[24];
		int n;
		char *doc;

		cJSON_AddBoolToObject(o, "adopted", target_adopted(dt->tg));
		cJSON_AddNumberToObject(o, "uptime", (double)(now - dt->since));
		links = cJSON_AddArrayToObject(o, "links");
		target_link_ids(dt->tg, ids, 24, &n);
		for (int i = 0; i < n; i++)
			cJSON_AddItemToArray(links, cJSON_CreateNumber(ids[i]));
		target_status(dt->tg, &si);
		doc = status_render(&si);
		if (doc)
			cJSON_AddItemToObject(o, "run", cJSON_Parse(doc));
		free(doc);
	}
	(void)dm;
	return o;
}

static void
req_status(struct daemon *dm, struct control_client *cl)
{
	cJSON *o = cJSON_CreateObject(), *ts;
	struct dtarget *dt;

	cJSON_AddNumberToObject(o, "pid", getpid());
	cJSON_AddNumberToObject(o, "uptime", (double)(now_s() - dm->started));
	if (dm->cfg.path)
		cJSON_AddStringToObject(o, "config", dm->cfg.path);
	cJSON_AddNumberToObject(o, "reloads", (double)dm->reloads);
	cJSON_AddNumberToObject(o, "reloads_rejected", (double)dm->reloads_rejected);
	ts = cJSON_AddArrayToObject(o, "targets");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	cJSON_AddItemToArray(ts, target_json(dm, dt));
	reply_ok(cl, o);
}

static void
req_reload(struct daemon *dm, struct control_client *cl)
{
	char who[CONTROL_WHO_MAX], words[CONTROL_WHO_MAX + 32];

	control_who(cl, who, sizeof(who));
	snprintf(words, sizeof(words), "reload asked by %s", who);
	log_warnx("%s", words);
	log_all(dm, "reload-asked", words);
	want_reload(dm, cl); /* the reply comes when the worker is done */
}

static void
req_rule(struct daemon *dm, struct control_client *cl, const cJSON *req, enum policy_action a)
{
	const cJSON *fs = cJSON_GetObjectItemCaseSensitive(req, "for");
	const char *rule = jstr(req, "rule");
	struct dtarget *dt = want_target(dm, cl, req);
	struct target_rule *r;
	struct target_revoked rv;
	char why[512], d[32] = "", who[CONTROL_WHO_MAX];

	if (!dt)
		return;
	control_who(cl, who, sizeof(who));
	if (!rule || strlen(rule) >= sizeof(r->text)) {
		reply_error(cl, "no rule, or one of %zu bytes or more", sizeof(r->text));
		return;
	}
	if (dt->nrules == DAEMON_MAX_RULES) {
		reply_error(cl, "target %s has %d runtime rules already", dt->spec.name,
			    DAEMON_MAX_RULES);
		return;
	}
	r = &dt->rules[dt->nrules];
	memset(r, 0, sizeof(*r));
	r->action = a;
	snprintf(r->text, sizeof(r->text), "%s", rule);
	if (cJSON_IsNumber(fs) && fs->valuedouble >= 1) {
		r->expires = now_s() + (uint64_t)fs->valuedouble;
		duration_format_secs((long)fs->valuedouble, d, sizeof(d));
	}
	dt->nrules++;
	if (dt->tg && target_add_rule(dt->tg, r, &rv, why, sizeof(why))) {
		dt->nrules--;
		reply_error(cl, "%s", why);
		return;
	}
	if (!dt->tg || dm->job) /* a policy being built lacks it: build again after */
		dt->rebuild_pending = true;
	dt_event(dt, a == POLICY_ALLOW ? "rule-allow" : "rule-deny",
		 "%s %s added at runtime%s%s; asked by %s", a == POLICY_ALLOW ? "allow" : "deny",
		 rule, d[0] ? " for " : "", d, who);
	reply_ok(cl, NULL);
}

static void
req_log(struct daemon *dm, struct control_client *cl, const cJSON *req)
{
	const char *x = jstr(req, "target");
	struct dtarget *dt = x ? find_target(dm, x) : NULL;
	unsigned int start = (dm->recent_at + RECENT_LINES - dm->nrecent) % RECENT_LINES;
	struct follower *f;

	if (x && !dt) {
		reply_error(cl, "no target %s", x);
		return;
	}
	for (unsigned int i = 0; i < dm->nrecent; i++) {
		unsigned int k = (start + i) % RECENT_LINES;

		if (!dt || dm->recent_cgid[k] == dt->cgid)
			control_send(cl, dm->recent[k]);
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "follow"))) {
		control_end(cl);
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		control_end(cl);
		return;
	}
	f->cl = cl;
	f->cgid = dt ? dt->cgid : 0;
	control_set_udata(cl, f);
	LIST_INSERT_HEAD(&dm->followers, f, entry);
}

static void
req_summary(struct daemon *dm, struct control_client *cl, const cJSON *req)
{
	struct dtarget *dt = want_target(dm, cl, req);
	const char *fmt = jstr(req, "format");
	enum summary_format sf = SUMMARY_TEXT;
	cJSON *o, *rules;
	char **list = NULL;
	size_t len = 0;
	char *text = NULL;
	FILE *f;
	int n;

	if (!dt)
		return;
	if (fmt && summary_format_parse(fmt, &sf)) {
		reply_error(cl, "--format %s: expected text, markdown or json", fmt);
		return;
	}
	if (!dt->tg) {
		reply_error(cl, "target %s is waiting for its cgroup: nothing to sum up",
			    dt->spec.name);
		return;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		reply_error(cl, "out of memory");
		return;
	}
	summary_write(target_summary(dt->tg), f, sf, dt->spec.o.audit, NULL);
	fclose(f);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "text", text ? text : "");
	free(text);
	/* what `summary --suggest-policy FILE` merges into FILE (target/suggest.h) */
	cJSON_AddItemToObject(o, "observed", suggest_observe(target_summary(dt->tg)));
	rules = cJSON_AddArrayToObject(o, "suggested_rules");
	n = summary_policy_rules(target_summary(dt->tg), &list);
	for (int i = 0; i < n; i++) {
		cJSON_AddItemToArray(rules, cJSON_CreateString(list[i]));
		free(list[i]);
	}
	free(list);
	reply_ok(cl, o);
}

static void
req_detach(struct daemon *dm, struct control_client *cl, const cJSON *req)
{
	bool all = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "all"));
	struct dtarget *dt, *tmp, *sel = NULL;
	char who[CONTROL_WHO_MAX];
	cJSON *o, *done;

	if (!all && !(sel = want_target(dm, cl, req)))
		return;
	control_who(cl, who, sizeof(who));
	o = cJSON_CreateObject();
	done = cJSON_AddArrayToObject(o, "detached");
	TAILQ_FOREACH_SAFE(dt, &dm->targets, entry, tmp)
	{
		if (!all && dt != sel)
			continue;
		dt_event(dt, "detach", "detached on request of %s: confinement lifted", who);
		cJSON_AddItemToArray(
			done, cJSON_CreateString(dt->cgpath[0] ? dt->cgpath : dt->spec.what));
		dt_free(dt, true);
	}
	reply_ok(cl, o);
}

static void
on_request(void *arg, struct control_client *cl, const void *reqp)
{
	struct daemon *dm = arg;
	const cJSON *req = reqp;
	const char *cmd = jstr(req, "cmd");

	if (!cmd)
		reply_error(cl, "no cmd");
	else if (!strcmp(cmd, "status"))
		req_status(dm, cl);
	else if (!strcmp(cmd, "reload"))
		req_reload(dm, cl);
	else if (!strcmp(cmd, "allow"))
		req_rule(dm, cl, req, POLICY_ALLOW);
	else if (!strcmp(cmd, "deny"))
		req_rule(dm, cl, req, POLICY_DENY);
	else if (!strcmp(cmd, "log"))
		req_log(dm, cl, req);
	else if (!strcmp(cmd, "summary"))
		req_summary(dm, cl, req);
	else if (!strcmp(cmd, "detach"))
		req_detach(dm, cl, req);
	else
		reply_error(cl, "unknown cmd %s", cmd);
}

static void
on_gone(void *arg, struct control_client *cl)
{
	struct follower *f = control_udata(cl);

	(void)arg;
	if (!f)
		return;
	LIST_REMOVE(f, entry);
	free(f);
}

/* ---- signals, start, stop ---- */

static void
on_signal(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *dm = arg;
	struct signalfd_siginfo ssi;
	(void)what;
	while (read(fd, &ssi, sizeof(ssi)) == (ssize_t)sizeof(ssi)) {
		if (ssi.ssi_signo == SIGHUP || ssi.ssi_signo == SIGUSR1) {
			struct dtarget *dt;

			/* --log FILE anew (logrotate's postrotate: reload) */
			TAILQ_FOREACH(dt, &dm->targets, entry)
			if (dt->tg)
				target_reopen_log(dt->tg);
			if (ssi.ssi_signo == SIGHUP)
				want_reload(dm, NULL);
			continue;
		}
		log_warnx("signal %u: stopping; the programs stay attached (fail closed) until the "
			  "daemon takes them over again or `egressctl detach` lifts them",
			  ssi.ssi_signo);
		dm->status = 0;
		event_base_loopexit(dm->base, NULL);
	}
}

static int
daemon_parse(int argc, char **argv, struct daemon_opts *o)
{
	struct opt rows[48];
	const struct opt_set sets[] = {{daemon_opt_table, o},
				       {daemon_target_rows(rows, 48), &o->t}};
	int first, rc;

	rc = opts_parse("daemon", sets, 2, argc, argv, false, &first);
	if (rc != OPTS_OK)
		return rc;
	if (first != argc) {
		log_warnx("daemon: unexpected argument %s (see egressctl daemon --help)",
			  argv[first]);
		return OPTS_USAGE;
	}
	if (o->config && o->nnamed) {
		log_warnx("daemon: name the targets in --config FILE or on the command line, "
			  "not both");
		return OPTS_USAGE;
	}
	return OPTS_OK;
}

static struct event_base *
new_base(void)
{
	struct event_config *cfg = event_config_new();
	struct event_base *base;

	if (cfg)
		event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	base = cfg ? event_base_new_with_config(cfg) : NULL;
	if (cfg)
		event_config_free(cfg);
	return base;
}

static int
setup_loop(struct daemon *dm)
{
	struct timeval second = {1, 0};
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGUSR1); /* --log FILE anew, no reload */
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	dm->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	dm->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	dm->base = new_base();
	if (dm->sfd < 0 || !dm->base)
		return -ENOMEM;
	dm->ev_sig = event_new(dm->base, dm->sfd, EV_READ | EV_PERSIST, on_signal, dm);
	dm->tick = event_new(dm->base, -1, EV_PERSIST, on_tick, dm);
	if (dm->ino_fd >= 0)
		dm->ev_ino = event_new(dm->base, dm->ino_fd, EV_READ | EV_PERSIST, on_inotify, dm);
	if (!dm->ev_sig || !dm->tick || event_add(dm->ev_sig, NULL) ||
	    event_add(dm->tick, &second) || (dm->ev_ino && event_add(dm->ev_ino, NULL)))
		return -ENOMEM;
	return 0;
}

/* Resolves every target (waiting ones keep an empty path), leaves them if
 * the daemon is inside one, and attaches them. */
static int
start(struct daemon *dm, char *errbuf, size_t errlen)
{
	struct policy *built[DCONFIG_MAX_TARGETS] = {0};
	struct dtarget *dt;
	int err, k = 0;

	/* every policy, before anything is attached (nothing serves yet) */
	err = build_all(&dm->cfg, NULL, 0, built, errbuf, errlen);
	if (err)
		return err;

	for (int i = 0; i < dm->cfg.n; i++) {
		char why[512];

		dt = dt_new(dm, &dm->cfg.specs[i]);
		if (!dt) {
			errf(errbuf, errlen, "out of memory");
			return -ENOMEM;
		}
		err = resolve(dm->mnt, &dt->spec, dt->cgpath, sizeof(dt->cgpath), why, sizeof(why));
		if (err && (err != -ENOENT || dt->spec.kind == DSPEC_PID)) {
			errf(errbuf, errlen, "%s", why);
			return err;
		}
		if (err)
			dt->cgpath[0] = 0;
	}
	err = check_overlap(dm, errbuf, errlen);
	if (!err)
		err = leave_targets(dm, errbuf, errlen);
	if (!err) {
		dm->ctl = control_open(dm->base, dm->cfg.control, on_request, on_gone, dm, errbuf,
				       errlen);
		if (!dm->ctl)
			err = -errno ? -errno : -EINVAL;
	}
	TAILQ_FOREACH(dt, &dm->targets, entry)
	{
		char why[512];
		struct policy *p = built[k];

		built[k++] = NULL;
		if (err) {
			policy_free(p);
			continue;
		}
		err = start_target(dt, p, why, sizeof(why));
		if (err)
			errf(errbuf, errlen, "%s%s", dt->label, why);
	}
	return err;
}

static void
stop(struct daemon *dm)
{
	struct dtarget *dt;
	struct follower *f;

	notify_send("STOPPING=1");
	if (dm->job) { /* its worker finishes its build; nothing applies it */
		pthread_join(dm->job->th, NULL);
		job_reply(dm->job, -ECANCELED, "the daemon stopped");
		job_free(dm->job);
		dm->job = NULL;
	}
	control_free(dm->ctl); /* followers go with their clients */
	while ((f = LIST_FIRST(&dm->followers))) {
		LIST_REMOVE(f, entry);
		free(f);
	}
	while ((dt = TAILQ_FIRST(&dm->targets)))
		dt_free(dt, false); /* pinned: still enforcing */
	dconfig_free(&dm->cfg);
	for (int i = 0; i < RECENT_LINES; i++)
		free(dm->recent[i]);
	if (dm->ev_sig)
		event_free(dm->ev_sig);
	if (dm->ev_ino)
		event_free(dm->ev_ino);
	if (dm->tick)
		event_free(dm->tick);
	if (dm->sfd >= 0)
		close(dm->sfd);
	if (dm->ino_fd >= 0)
		close(dm->ino_fd);
	if (dm->base)
		event_base_free(dm->base);
	ctr_names_free(dm->names);
	remove_own(dm);
}

int
daemon_main(int argc, char **argv)
{
	struct daemon_opts *o = calloc(1, sizeof(*o));
	struct daemon dm = {.sfd = -1, .ino_fd = -1, .status = EGR_EXIT_ERROR};
	struct rlimit nofile;
	char errbuf[1024], ready[128];
	int rc, err;

	if (!o)
		return EGR_EXIT_ERROR;
	rc = daemon_parse(argc, argv, o);
	if (rc != OPTS_OK) {
		if (rc == OPTS_HELP)
			daemon_usage(stdout);
		free(o);
		return rc == OPTS_HELP ? 0 : EGR_EXIT_USAGE;
	}
	dm.opts = o;
	TAILQ_INIT(&dm.targets);
	LIST_INIT(&dm.followers);
	dm.started = now_s();
	if (geteuid() != 0) {
		log_warnx("daemon needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN)");
		goto out;
	}
	err = quota_raise_nofile(&nofile);
	if (err)
		log_info("cannot raise the descriptor limit to the hard one: %s", strerror(-err));
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	err = cgroup_find_mount(dm.mnt, sizeof(dm.mnt));
	if (err) {
		log_warnx("no cgroup v2 hierarchy is mounted (%s): egressctl needs cgroup2",
			  strerror(-err));
		goto out;
	}
	if (load_config(&dm, &dm.cfg, errbuf, sizeof(errbuf))) {
		log_warnx("%s", errbuf);
		goto out;
	}
	dm.names = ctr_names_new(dm.mnt);
	if (!dm.names)
		log_warnx("cannot open %s: containers' decisions will not name their cgroups: %s",
			  dm.mnt, strerror(errno));
	if (setup_loop(&dm)) {
		log_warnx("cannot set up the event loop");
		goto out;
	}
	if (start(&dm, errbuf, sizeof(errbuf))) {
		log_warnx("%s", errbuf);
		goto out;
	}
	snprintf(ready, sizeof(ready), "READY=1\nSTATUS=confining %d target%s\nMAINPID=%d",
		 dm.cfg.n, dm.cfg.n == 1 ? "" : "s", (int)getpid());
	notify_send(ready);
	log_warnx("ready: %d target%s; control socket %s", dm.cfg.n, dm.cfg.n == 1 ? "" : "s",
		  dm.cfg.control);
	event_base_dispatch(dm.base);
out:
	stop(&dm);
	free(o);
	return dm.status;
}
