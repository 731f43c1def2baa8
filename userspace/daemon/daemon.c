// SPDX-License-Identifier: Apache-2.0
/* `egressctl daemon` (see daemon.h): its options, the event loop and its
 * signals, start (every policy built, the targets resolved, the daemon out
 * of them, the control socket, the targets attached) and stop. The targets
 * are targets.c's, reloads reload.c's, the control requests requests.c's
 * (core.h: their shared state). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <event2/event.h>

#include "daemon/containers.h"
#include "daemon/control.h"
#include "daemon/core.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "daemon/notify.h"
#include "daemon/usersock.h"
#include "kernel/cgroup.h"
#include "kernel/existing.h"
#include "kernel/loader.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/opts.h"
#include "proxy/quota.h"

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
	{
		"docker",
		0,
		OPT_T_STR,
		DO(docker),
		"PATH",
		"keep dockerd's socket (/run/docker.sock) for the\n"
		"targets: egressctl's socket is mounted over it; their\n"
		"containers and build steps run under their cgroups,\n"
		"what would take one out is refused; anybody else's\n"
		"requests pass untouched; dockerd's own connections\n"
		"(pulls, a build's FROM and ADD of a URL) are judged\n"
		"by the command line's policy",
	},
	{"docker-egress", 0, OPT_T_STR, DO(docker_egress), "MODE",
	 "confined (the default), or open: dockerd's own\n"
	 "connections unjudged (then a job can send what it\n"
	 "likes through a build's ADD)"},
	{"docker-services", 0, OPT_T_STR, DO(docker_services), "FILTER",
	 "the containers running at the start that FILTER\n"
	 "selects (network=GLOB, label=KEY[=VALUE]: a CI job's\n"
	 "services) confined by the command line's policy, each\n"
	 "a target of its own; their published TCP ports\n"
	 "allowed on 127.0.0.1"},
	{"control", 0, OPT_T_STR, DO(control), "PATH",
	 "the control socket (default " DCONFIG_CONTROL ")"},
	{"metrics", 0, OPT_T_STR, DO(metrics), "ADDR",
	 "serve counters for Prometheus on GET /metrics at\n"
	 "unix:PATH, 127.0.0.1:PORT or [::1]:PORT"},
	{"user-socket", 0, OPT_T_STR, DO(user_socket), "PATH",
	 "let users of the allowed groups `egressctl run`\n"
	 "without sudo through PATH (mode 0660; e.g.\n"
	 "/run/egressctl-user.sock)"},
	{"users", 0, OPT_T_STR, DO(users), "FILE",
	 "who may use --user-socket and within what (default\n" USERSOCK_CONFIG ")"},
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
		"keys (\"max_conns\": 100). The policy defaults to $EGRESSCTL_POLICY "
		"or\n" DCONFIG_POLICY ".\n"
		"\n");
	opts_help(f, sets, 2);
	fprintf(f, "\n"
		   "Exit status: 0 after SIGTERM/SIGINT; 2 a usage error; 125 egressctl failed.\n");
}

/* Once a second: expired runtime rules (reload.c), targets whose cgroup
 * went away (the kernel detached their programs with it) or came
 * (targets.c). */
static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *dm = arg;
	struct dtarget *dt, *tmp;
	uint64_t now = now_s();

	(void)fd;
	(void)what;
	TAILQ_FOREACH_SAFE(dt, &dm->targets, entry, tmp)
	{
		reload_expire_rules(dt, now);
		dt_check(dt); /* may free dt */
	}
	if ((what & EV_TIMEOUT) && dm->cfg.nselectors)
		sel_discover(dm); /* a root made since, or an event the queue dropped */
	if (what & EV_TIMEOUT) {
		sel_holds_tick(dm);
		docker_tick(dm);
	}
}

static void
on_inotify(evutil_socket_t fd, short what, void *arg)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct daemon *dm = arg;
	ssize_t n;

	(void)what;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (ev->wd == dm->policy_wd && dm->policy_wd >= 0)
				reload_policy_dir_changed(dm, ev->len ? ev->name : "");
			else
				sel_event(dm, ev);
			p += sizeof(*ev) + ev->len;
		}
	}
	on_tick(-1, 0, arg); /* a directory came: attach what waits for it */
}

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
			if (ssi.ssi_signo == SIGHUP) {
				reload_want(dm, NULL);
				usersock_reload(dm->usock); /* users.json */
			}
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

/* A restart's kernel work that needs no policy, done while the policies
 * build: the revoke pass's iterators of each named target whose programs
 * are pinned (target_iterators_ahead), on a thread of its own. */
struct ahead {
	struct existing *ex[DCONFIG_MAX_TARGETS];
	char cgpath[DCONFIG_MAX_TARGETS][PATH_MAX];
	uint64_t cgid[DCONFIG_MAX_TARGETS];
	bool kill[DCONFIG_MAX_TARGETS], revoke[DCONFIG_MAX_TARGETS];
	int n;
	pthread_t th;
	bool running;
};

static void *
ahead_run(void *arg)
{
	struct ahead *ah = arg;

	for (int i = 0; i < ah->n; i++) {
		char why[512];

		/* none loaded: the take-over loads them as before, and says why
		 * if it cannot either */
		if (ah->cgid[i])
			ah->ex[i] = target_iterators_ahead(ah->cgid[i], ah->cgpath[i], ah->kill[i],
							   ah->revoke[i], why, sizeof(why));
	}
	return NULL;
}

static void
ahead_begin(struct daemon *dm, struct ahead *ah)
{
	char why[512], pins[PATH_MAX];
	bool any = false;
	struct stat st;

	ah->n = dm->cfg.n;
	for (int i = 0; i < dm->cfg.n; i++) {
		const struct dspec *s = &dm->cfg.specs[i];

		if (s->selector ||
		    dt_resolve(dm->mnt, s, ah->cgpath[i], sizeof(ah->cgpath[i]), why, sizeof(why)))
			continue;
		ah->cgid[i] = cgroup_id_of(ah->cgpath[i]);
		if (!ah->cgid[i] || loader_pin_dir_of(ah->cgid[i], pins, sizeof(pins)) ||
		    !pins[0] || stat(pins, &st)) {
			ah->cgid[i] = 0; /* nothing to take over: a fresh attach loads them */
			continue;
		}
		ah->kill[i] = s->kill_existing;
		ah->revoke[i] = !s->o.audit; /* the daemon's targets revoke (targets.c) */
		any = true;
	}
	ah->running = any && !pthread_create(&ah->th, NULL, ahead_run, ah);
}

/* The thread joined; what it loaded stays in ah->ex for the targets. */
static void
ahead_end(struct ahead *ah)
{
	if (ah->running)
		pthread_join(ah->th, NULL);
	ah->running = false;
}

static void
ahead_free(struct ahead *ah)
{
	for (int i = 0; i < ah->n; i++)
		existing_free(ah->ex[i]);
	free(ah);
}

/* Resolves every target (waiting ones keep an empty path), leaves them if
 * the daemon is inside one, and attaches them. */
static int
start(struct daemon *dm, char *errbuf, size_t errlen)
{
	struct policy *built[DCONFIG_MAX_TARGETS] = {0};
	struct ahead *ah = calloc(1, sizeof(*ah));
	struct dtarget *dt;
	int err, k = 0;

	if (!ah) {
		daemon_errf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	ahead_begin(dm, ah);
	/* every policy, before anything is attached (nothing serves yet) */
	err = reload_build_all(&dm->cfg, built, errbuf, errlen);
	ahead_end(ah);
	if (err) {
		ahead_free(ah);
		return err;
	}

	for (int i = 0; i < dm->cfg.n; i++) {
		char why[512];

		if (dm->cfg.specs[i].selector) { /* built to be checked; its matches build theirs */
			policy_free(built[i]);
			built[i] = NULL;
			continue;
		}
		dt = dt_new(dm, &dm->cfg.specs[i]);
		if (!dt) {
			daemon_errf(errbuf, errlen, "out of memory");
			ahead_free(ah);
			return -ENOMEM;
		}
		dt->ahead = ah->ex[i];
		ah->ex[i] = NULL;
		err = dt_resolve(dm->mnt, &dt->spec, dt->cgpath, sizeof(dt->cgpath), why,
				 sizeof(why));
		if (err && (err != -ENOENT || dt->spec.kind == DSPEC_PID)) {
			daemon_errf(errbuf, errlen, "%s", why);
			ahead_free(ah);
			return err;
		}
		if (err)
			dt->cgpath[0] = 0;
	}
	ahead_free(ah); /* each named target holds its own now */
	err = targets_check_overlap(dm, errbuf, errlen);
	if (!err)
		err = targets_leave(dm, errbuf, errlen);
	if (!err) {
		dm->ctl = control_open(dm->base, dm->cfg.control, requests_on_request,
				       requests_on_gone, dm, errbuf, errlen);
		if (!dm->ctl)
			err = -errno ? -errno : -EINVAL;
	}
	if (!err && (dm->opts->metrics || dm->cfg.metrics)) {
		dm->metrics =
			metrics_open(dm, dm->opts->metrics ? dm->opts->metrics : dm->cfg.metrics,
				     errbuf, errlen);
		if (!dm->metrics)
			err = -EINVAL;
	}
	if (!err)
		err = docker_start(dm, errbuf, errlen);
	if (!err)
		reload_watch_policy_dir(dm);
	if (!err && dm->opts->user_socket) {
		dm->usock = usersock_open(dm->base, dm->opts->user_socket,
					  dm->opts->users ? dm->opts->users : USERSOCK_CONFIG,
					  errbuf, errlen);
		if (!dm->usock)
			err = -EINVAL;
	}
	if (!err && dm->cfg.nselectors) /* before any target: its pass needs them */
		err = sel_hold_roots(dm, errbuf, errlen);
	TAILQ_FOREACH(dt, &dm->targets, entry)
	{
		char why[512];
		struct policy *p;

		while (k < dm->cfg.n && dm->cfg.specs[k].selector)
			k++;
		p = built[k];
		built[k++] = NULL;
		if (err) {
			policy_free(p);
			continue;
		}
		err = dt_start(dt, p, why, sizeof(why));
		if (err)
			daemon_errf(errbuf, errlen, "%s%s", dt->label, why);
	}
	if (!err)
		sel_discover(dm); /* the selectors' cgroups, after the named targets */
	return err;
}

static void
stop(struct daemon *dm)
{
	struct dtarget *dt;
	struct follower *f;

	notify_send("STOPPING=1");
	reload_stop(dm);
	docker_stop(dm);
	control_free(dm->ctl); /* followers go with their clients */
	metrics_free(dm->metrics);
	usersock_free(dm->usock);
	while ((f = LIST_FIRST(&dm->followers))) {
		LIST_REMOVE(f, entry);
		free(f);
	}
	while ((dt = TAILQ_FIRST(&dm->targets)))
		dt_free(dt, dt->spec.server); /* pinned: still enforcing; dockerd's goes (with
						 no daemon the jobs reach no dockerd) */
	sel_free(dm);
	sel_holds_close(dm); /* pinned: still holding */
	dconfig_free(&dm->cfg);
	for (int i = 0; i < RECENT_LINES; i++)
		free(dm->recent[i]);
	if (dm->ev_sig)
		event_free(dm->ev_sig);
	if (dm->ev_ino)
		event_free(dm->ev_ino);
	if (dm->tick)
		event_free(dm->tick);
	if (dm->policy_soon)
		event_free(dm->policy_soon);
	if (dm->sfd >= 0)
		close(dm->sfd);
	if (dm->ino_fd >= 0)
		close(dm->ino_fd);
	if (dm->base)
		event_base_free(dm->base);
	ctr_names_free(dm->names);
	targets_remove_own(dm);
}

int
daemon_main(int argc, char **argv)
{
	struct daemon_opts *o = calloc(1, sizeof(*o));
	struct daemon dm = {.sfd = -1, .ino_fd = -1, .policy_wd = -1, .status = EGR_EXIT_ERROR};
	struct rlimit nofile;
	char errbuf[1024], ready[128];
	struct dtarget *dt;
	int rc, err, ntargets = 0;

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
	TAILQ_INIT(&dm.load_queue);
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
	if (o->docker && docker_server_find(&dm, errbuf, sizeof(errbuf))) {
		log_warnx("%s", errbuf);
		goto out;
	}
	if (docker_services_find(&dm, errbuf, sizeof(errbuf))) {
		log_warnx("%s", errbuf);
		goto out;
	}
	if (reload_load_config(&dm, &dm.cfg, errbuf, sizeof(errbuf))) {
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
	TAILQ_FOREACH(dt, &dm.targets, entry)
	ntargets++;
	snprintf(ready, sizeof(ready), "READY=1\nSTATUS=confining %d target%s\nMAINPID=%d",
		 ntargets, ntargets == 1 ? "" : "s", (int)getpid());
	notify_send(ready);
	log_warnx("ready: %d target%s%s; control socket %s", ntargets, ntargets == 1 ? "" : "s",
		  dm.cfg.nselectors ? " (selectors' included)" : "", dm.cfg.control);
	dm.looping = true;
	event_base_dispatch(dm.base);
out:
	stop(&dm);
	free(o);
	return dm.status;
}
