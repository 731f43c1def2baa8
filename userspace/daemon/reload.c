// SPDX-License-Identifier: Apache-2.0
/* The daemon's policy builds off the event loop (see core.h): a reload
 * (the config file and every policy read again, all or nothing) or the
 * rebuild of one target's policy (a runtime rule expired), built in a
 * worker thread and applied on the loop; one at a time, what is asked
 * meanwhile queued; old policies freed off the loop too. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>

#include "daemon/control.h"
#include "daemon/metrics.h"
#include "daemon/core.h"
#include "daemon/notify.h"
#include "lib/clock.h"
#include "lib/jsonx.h"
#include "lib/log.h"

/* Runtime rules by target, copied for a worker. */
struct rules_of {
	enum dspec_kind kind;
	char what[PATH_MAX];
	struct target_rule rules[DAEMON_MAX_RULES];
	int n;
	/* a selector's cgroup (dtarget.dyn): a reload matches it again and
	 * builds its policy; why not, for a policy_dir file that broke */
	bool dyn;
	int sel;
	struct policy *built;
	char kept[400];
};

/* A policy build off the event loop: a reload (the config file and every
 * policy read again) or the rebuild of one target's policy (a runtime
 * rule expired). The worker touches only its job; the loop applies what
 * it built when its eventfd fires, so decisions never wait for a build.
 * One job at a time: what is asked meanwhile is queued. */
struct job {
	struct daemon *dm;
	bool reload;
	struct dconfig cfg; /* a reload's: read by the worker */
	/* a rebuild's: its target's options, copied (the target may go
	 * meanwhile; it is found again by ro[0]'s kind and what) */
	struct target_opts o;
	struct rules_of *ro; /* runtime rules at the start */
	int nro;
	struct policy *built[DCONFIG_MAX_TARGETS];
	/* a reload's: why the file of a policy_dir policy did not build (its
	 * targets keep the policy they have); empty for the others */
	char kept[DCONFIG_MAX_TARGETS][400];
	int err;
	char errbuf[768];
	pthread_t th;
	int efd;
	struct event *ev;
	struct control_client *waiters[16];
	int nwait;
	uint64_t t_start, t_built; /* CLOCK_MONOTONIC ns: asked, built */
};

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
int
reload_load_config(const struct daemon *dm, struct dconfig *c, char *errbuf, size_t errlen)
{
	const struct daemon_opts *o = dm->opts;
	int err;

	/* --user-socket alone: a daemon for users' runs, no target */
	if (o->config || (!o->nnamed && !o->user_socket)) {
		const char *path = o->config ? o->config : DCONFIG_DEFAULT;

		if (!o->config && access(path, F_OK)) {
			daemon_errf(
				errbuf, errlen,
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
	if (!c->control)
		c->control = DCONFIG_CONTROL;
	set_default_policy(c);
	err = docker_server_spec(dm, c, errbuf, errlen);
	if (!err)
		err = docker_services_spec(dm, c, errbuf, errlen);
	if (err)
		return err;
	docker_amend(dm, c);
	return 0;
}

/* Every target's policy for c, with its runtime rules; all or nothing.
 * Pure (files and memory): runs in the worker, or before the loop. */
static int
build_all(const struct dconfig *c, const struct rules_of *ro, int nro, struct policy **built,
	  char (*kept)[400], char *errbuf, size_t errlen)
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
		if (!built[i] && kept && c->specs[i].policy_name) {
			/* one broken file of policy_dir: its targets keep theirs */
			snprintf(kept[i], sizeof(kept[i]), "%.399s", why);
			continue;
		}
		if (!built[i]) {
			daemon_errf(errbuf, errlen, "%s: %s", c->specs[i].where, why);
			while (i-- > 0) {
				policy_free(built[i]);
				built[i] = NULL;
			}
			return -EINVAL;
		}
	}
	return 0;
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
	uint64_t *since = arg, now = now_ns();
	struct timespec ts = {0, BUILD_PAUSE_NS};

	if (now - *since < BUILD_WORK_NS)
		return;
	nanosleep(&ts, NULL);
	*since = now_ns();
}

/* A worker thread (the builder, the retirer) takes what the event loop
 * leaves, paced by build_pace from now on; since: the pace's state, on the
 * worker's stack. */
static void
worker_background(uint64_t *since)
{
	struct sched_param none = {0};

	pthread_setschedparam(pthread_self(), SCHED_IDLE, &none);
	*since = now_ns();
	policy_set_pace(build_pace, since);
}

/* A reload's policies for the selectors' cgroups, each matched again
 * against the new config (the worker's). */
static void
build_dyn(struct job *j)
{
	for (int k = 0; k < j->nro; k++) {
		struct rules_of *r = &j->ro[k];
		const struct dspec *s;
		enum dsel_match best;
		char why[512];

		if (!r->dyn)
			continue;
		r->sel = sel_choose(&j->cfg, j->dm->mnt, r->what, &best);
		if (best != DSEL_MATCH && r->sel >= 0)
			r->sel = SEL_DEFAULT_DENY;
		if (r->sel == SEL_UNCONFINED)
			continue;
		s = r->sel >= 0 ? &j->cfg.specs[r->sel] : &j->cfg.deny;
		r->built = target_policy_build(&s->o, r->rules, r->n, why, sizeof(why));
		if (!r->built)
			snprintf(r->kept, sizeof(r->kept), "%.399s", why);
	}
}

static void *
job_run(void *arg)
{
	struct job *j = arg;
	uint64_t one = 1, since;

	worker_background(&since); /* decisions first */
	if (j->reload) {
		j->err = reload_load_config(j->dm, &j->cfg, j->errbuf, sizeof(j->errbuf));
		if (!j->err)
			j->err = build_all(&j->cfg, j->ro, j->nro, j->built, j->kept, j->errbuf,
					   sizeof(j->errbuf));
		if (!j->err)
			build_dyn(j);
	} else {
		j->built[0] = target_policy_build(&j->o, j->ro[0].rules, j->ro[0].n, j->errbuf,
						  sizeof(j->errbuf));
		j->err = j->built[0] ? 0 : -EINVAL;
	}
	j->t_built = now_ns();
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
		json_t *o = json_object();
		char *out;

		jsonx_set_bool(o, "ok", !err);
		if (err)
			jsonx_set_str(o, "error", errbuf);
		out = jsonx_line(o);
		if (out)
			control_send(j->waiters[i], out);
		free(out);
		json_decref(o);
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
	j->t_start = now_ns();
	j->reload = !dt;
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
		j->ro[j->nro].dyn = t->dyn;
		j->ro[j->nro].kind = t->spec.kind;
		snprintf(j->ro[j->nro].what, sizeof(j->ro[j->nro].what), "%s", t->spec.what);
		memcpy(j->ro[j->nro].rules, t->rules, sizeof(t->rules));
		j->ro[j->nro].n = t->nrules;
		j->nro++;
	}
	if (dt)
		j->o = dt->spec.o;
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

/* A reload whose file for s's policy (policy_dir's) did not build: dt, if
 * attached with the same options, keeps the policy it has (and says so);
 * otherwise nothing is attached for s until a reload builds it (a target
 * attached before stays pinned: its new connections are refused). */
static void
kept_policy(struct daemon *dm, struct dtarget *dt, const struct dspec *s, const char *why)
{
	if (dt && dt->tg && dspec_same_but_policy(&dt->spec, s)) {
		dt->spec = *s; /* the same options, in the new config's strings */
		dm->policies_kept++;
		dt_event(dt, "policy-kept",
			 "policy %s (%s) not reloaded, the previous one stays: %s", s->policy_name,
			 s->o.policy_file, why);
		return;
	}
	if (!dt)
		dt = dt_new(dm, s);
	if (!dt) {
		log_warnx("%s: out of memory", s->where);
		return;
	}
	dt_release(dt, false); /* pinned: fail closed */
	dt->spec = *s;
	dt->held = true;
	snprintf(dt->label, sizeof(dt->label), "target %s: ", s->name);
	log_warnx("%spolicy %s (%s) does not build and the target had no policy to keep with "
		  "these options: not attached (pinned programs, if any, refuse its connections) "
		  "until it builds: %s",
		  dt->label, s->policy_name, s->o.policy_file, why);
}

/* dt's policy from now on is p (built for its options, which stay). */
static void
swap_to(struct dtarget *dt, struct policy *p)
{
	struct target_revoked rv;
	struct policy *old = NULL;
	char why[512];

	if (target_swap_policy(dt->tg, &dt->spec.o, p, &rv, &old, why, sizeof(why)))
		dt_event(dt, "reload", "the fast path does not follow: %s", why);
	dt_event(dt, "reload",
		 "policy reloaded: %u rules; revoked %llu connections, %llu fast-path entries, "
		 "%llu learned names",
		 target_rule_count(dt->tg), (unsigned long long)rv.conns,
		 (unsigned long long)rv.fast, (unsigned long long)rv.names);
	retire_policy(old);
}

/* The selectors' cgroups after a reload: each with the selector that
 * matches it now (its policy built by the worker), the default's, or
 * detached (the default is unconfined). */
static void
reload_dyn(struct daemon *dm, struct job *j)
{
	struct dtarget *dt, *tmp;
	char why[512];

	TAILQ_FOREACH_SAFE(dt, &dm->targets, entry, tmp)
	{
		struct rules_of *r = NULL;
		struct policy *p = NULL;
		struct dspec before;
		enum dsel_match best;
		int sel;

		if (!dt->dyn)
			continue;
		for (int k = 0; k < j->nro && !r; k++)
			if (j->ro[k].dyn && !strcmp(j->ro[k].what, dt->dyn_what))
				r = &j->ro[k];
		if (r) {
			sel = r->sel;
			p = r->built;
			r->built = NULL;
		} else { /* made while the job ran: built below, on the loop */
			sel = sel_choose(&j->cfg, dm->mnt, dt->dyn_what, &best);
			if (best != DSEL_MATCH && sel >= 0)
				sel = SEL_DEFAULT_DENY;
		}
		if (sel == SEL_UNCONFINED) {
			dt_event(dt, "detach",
				 "no selector matches it now and the default is unconfined: "
				 "detached");
			dt_free(dt, true);
			continue;
		}
		before = dt->spec;
		sel_fill(dt, sel >= 0 ? &j->cfg.specs[sel] : &j->cfg.deny, sel);
		if (r && !p && r->kept[0] && dt->tg && dspec_same_but_policy(&before, &dt->spec)) {
			dm->policies_kept++;
			dt_event(dt, "policy-kept",
				 "policy %s (%s) not reloaded, the previous one stays: %s",
				 dt->spec.policy_name ? dt->spec.policy_name : "-",
				 dt->spec.o.policy_file ? dt->spec.o.policy_file : "-", r->kept);
			continue;
		}
		if (p && dt->tg && dspec_same_but_policy(&before, &dt->spec)) {
			swap_to(dt, p);
			continue;
		}
		/* another selector's options, or waiting: attach again (pinned
		 * meanwhile: fail closed) */
		dt_release(dt, false);
		dt->held = false;
		if (dt_start(dt, p, why, sizeof(why)))
			log_warnx("%s%s", dt->label, why);
	}
}

/* The config's "metrics" changed on a reload: the new endpoint opened first
 * (one that cannot be is said, and the one in force stays), then the old
 * closed; "metrics" gone closes it. The command line's --metrics is never
 * the config's to change. */
static void
reload_metrics(struct daemon *dm, const char *was, const char *now)
{
	struct metrics *m = NULL;
	char err[400];

	if (dm->opts->metrics || (!was && !now) || (was && now && !strcmp(was, now)))
		return;
	if (now) {
		m = metrics_open(dm, now, err, sizeof(err));
		if (!m) {
			log_warnx("metrics %s: %s; %s stays", now, err, was ? was : "none");
			return;
		}
	}
	metrics_free(dm->metrics);
	dm->metrics = m;
	log_warnx("metrics: %s (was %s)", now ? now : "none", was ? was : "none");
}

/* A reload's result: targets the config no longer names are detached, new
 * ones attached, the rest get their new policy (or, when other options
 * changed, attach again). */
static void
apply_reload(struct daemon *dm, struct job *j)
{
	struct dtarget *dt, *tmp;
	char why[512], *was;

	dm->reloads++;
	TAILQ_FOREACH_SAFE(dt, &dm->targets, entry, tmp)
	{
		bool named = false;

		if (dt->dyn)
			continue; /* matched again below */
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
		if (s->selector) { /* built to be checked; its cgroups have theirs */
			policy_free(p);
			continue;
		}
		TAILQ_FOREACH(dt, &dm->targets, entry)
		if (dspec_same_target(&dt->spec, s))
			break;
		if (!p && j->kept[i][0]) {
			kept_policy(dm, dt, s, j->kept[i]);
			continue;
		}
		if (!dt) {
			dt = dt_new(dm, s);
			if (!dt || dt_start(dt, p, why, sizeof(why))) {
				log_warnx("%s: %s", s->where, dt ? why : "out of memory");
				if (dt)
					dt_free(dt, false);
				else
					policy_free(p);
			}
			continue;
		}
		if (dt->tg && dspec_same_but_policy(&dt->spec, s)) {
			dt->spec = *s;
			swap_to(dt, p);
			continue;
		}
		/* other options changed (or it was waiting): attach again */
		dt_release(dt, false);
		dt->held = false;
		dt->spec = *s;
		dt->env.kill_existing = s->kill_existing;
		dt_name_containers(dt);
		snprintf(dt->label, sizeof(dt->label), "target %s: ", s->name);
		if (dt_start(dt, p, why, sizeof(why)))
			log_warnx("%s%s", dt->label, why);
	}
	reload_dyn(dm, j);
	/* the metrics endpoint the new config names (was: the old's, kept
	 * across the free below) */
	was = dm->cfg.metrics ? strdup(dm->cfg.metrics) : NULL;
	/* every target now points into the new config */
	dconfig_free(&dm->cfg);
	dm->cfg = j->cfg;
	memset(&j->cfg, 0, sizeof(j->cfg));
	/* names made up from the target (no "name" key) live in the dconfig
	 * itself, which moved from the job (freed next) to the daemon */
	for (int i = 0; i < dm->cfg.n; i++)
		dm->cfg.specs[i].name = cfg_name(j, dm, dm->cfg.specs[i].name);
	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (!dt->dyn)
		dt->spec.name = cfg_name(j, dm, dt->spec.name);
	/* the selectors' directories as the new config has them */
	sel_free(dm);
	if (dm->cfg.nselectors)
		sel_discover(dm);
	reload_metrics(dm, was, dm->cfg.metrics);
	free(was);
}

static void
job_free(struct job *j)
{
	for (int k = 0; k < j->nro; k++)
		policy_free(j->ro[k].built);
	for (int i = 0; i < DCONFIG_MAX_TARGETS; i++)
		policy_free(j->built[i]);
	dconfig_free(&j->cfg);
	event_free(j->ev);
	close(j->efd);
	free(j->ro);
	free(j);
}

/* A rebuild's result, for its target if it is still there (found by kind
 * and what: a detach may have freed it meanwhile): its policy from now on,
 * or the one it waits with for its cgroup. */
static void
rebuild_done(struct daemon *dm, struct job *j)
{
	struct target_revoked rv;
	struct dtarget *dt;
	char why[512];

	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->spec.kind == j->ro[0].kind && !strcmp(dt->spec.what, j->ro[0].what))
		break;
	if (!dt)
		return;
	if (j->err) {
		dt_event(dt, "reload-rejected", "policy after a rule expired rejected: %s",
			 j->errbuf);
	} else if (dt->tg) {
		struct policy *old = NULL;

		target_swap_policy(dt->tg, &dt->spec.o, j->built[0], &rv, &old, why, sizeof(why));
		j->built[0] = NULL;
		retire_policy(old);
	} else {
		policy_free(dt->waiting_policy);
		dt->waiting_policy = j->built[0];
		j->built[0] = NULL;
	}
}

static void
job_done(evutil_socket_t fd, short what, void *arg)
{
	struct job *j = arg;
	struct daemon *dm = j->dm;

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
		targets_log_all(dm, "reload-rejected", words);
		notify_send("READY=1\nSTATUS=reload rejected");
	} else if (j->reload) {
		apply_reload(dm, j);
		reload_watch_policy_dir(dm);
		log_warnx("reloaded: policies built in %.1f ms off the event loop, applied in %.2f "
			  "ms",
			  (double)(j->t_built - j->t_start) / 1e6,
			  (double)(now_ns() - j->t_built) / 1e6);
		notify_send("READY=1\nSTATUS=reloaded");
	} else {
		rebuild_done(dm, j);
	}
	job_reply(j, j->reload ? j->err : 0, j->errbuf);
	job_free(j);
	reload_next(dm);
}

/* What was asked while a job ran. */
void
reload_next(struct daemon *dm)
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

/* cl is gone (closed or half-closed before its answer): out of every list
 * of clients waiting for a reload's answer, which would be sent to it
 * after it was freed. */
static void
drop_waiter(struct control_client **list, int *n, const struct control_client *cl)
{
	int k = 0;

	for (int i = 0; i < *n; i++)
		if (list[i] != cl)
			list[k++] = list[i];
	*n = k;
}

void
reload_forget(struct daemon *dm, const struct control_client *cl)
{
	drop_waiter(dm->pending_waiters, &dm->npending, cl);
	if (dm->job)
		drop_waiter(dm->job->waiters, &dm->job->nwait, cl);
}

/* A reload asked for (SIGHUP, or `egressctl reload` from cl). */
void
reload_want(struct daemon *dm, struct control_client *cl)
{
	if (cl && dm->npending < 16)
		dm->pending_waiters[dm->npending++] = cl;
	else if (cl) {
		control_send(cl, "{\"ok\":false,\"error\":\"too many reloads waiting\"}");
		control_end(cl);
	}
	dm->reload_pending = true;
	reload_next(dm);
}

int
reload_build_all(const struct dconfig *c, struct policy **built, char *errbuf, size_t errlen)
{
	return build_all(c, NULL, 0, built, NULL, errbuf, errlen);
}

void
reload_stop(struct daemon *dm)
{
	if (!dm->job)
		return;
	pthread_join(dm->job->th, NULL); /* its worker finishes its build; nothing applies it */
	job_reply(dm->job, -ECANCELED, "the daemon stopped");
	job_free(dm->job);
	dm->job = NULL;
}

void
reload_expire_rules(struct dtarget *dt, uint64_t now)
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
		reload_next(dt->dm);
	}
}

void
reload_watch_policy_dir(struct daemon *dm)
{
	const char *dir = dm->cfg.policy_dir;

	if (dm->policy_wd >= 0 && dir && !strcmp(dir, dm->policy_dir))
		return;
	if (dm->policy_wd >= 0)
		inotify_rm_watch(dm->ino_fd, dm->policy_wd);
	dm->policy_wd = -1;
	dm->policy_dir[0] = 0;
	if (!dir || dm->ino_fd < 0)
		return;
	/* a file written in place, or moved in, made or removed; the kubelet's
	 * update of a ConfigMap volume is a new ..TIMESTAMP directory and the
	 * ..data symlink renamed over (IN_MOVED_TO ..data) */
	dm->policy_wd = inotify_add_watch(dm->ino_fd, dir,
					  IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |
						  IN_DELETE | IN_ONLYDIR);
	if (dm->policy_wd < 0) {
		log_warnx("policy_dir %s: cannot watch it (%s): changes are read at SIGHUP or "
			  "`egressctl reload` only",
			  dir, strerror(errno));
		return;
	}
	snprintf(dm->policy_dir, sizeof(dm->policy_dir), "%s", dir);
}

static void
on_policy_soon(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *dm = arg;

	(void)fd;
	(void)what;
	log_warnx("policy_dir %s changed: reloading", dm->policy_dir);
	reload_want(dm, NULL);
}

void
reload_policy_dir_changed(struct daemon *dm, const char *name)
{
	struct timeval soon = {0, 100000};

	log_debug("policy_dir %s: %s changed", dm->policy_dir, name);
	if (!dm->policy_soon)
		dm->policy_soon = evtimer_new(dm->base, on_policy_soon, dm);
	if (dm->policy_soon && !evtimer_pending(dm->policy_soon, NULL))
		evtimer_add(dm->policy_soon, &soon);
}
