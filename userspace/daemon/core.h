// SPDX-License-Identifier: Apache-2.0
/* The daemon's own state (see daemon.h), shared by the files that make it:
 * daemon.c (options, the loop, signals, start and stop), targets.c (each
 * target resolved to its cgroup, attached or taken over, watched), reload.c
 * (policies built in a worker thread and applied: reloads, rebuilds) and
 * requests.c (the control socket's requests, and the lines `log` serves).
 * Only these include it. */
#ifndef DAEMON_CORE_H
#define DAEMON_CORE_H

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/queue.h>
#include <event2/event.h>

#include "daemon/dconfig.h"
#include "confine/target.h"

#define DAEMON_MAX_RULES 64  /* runtime rules per target */
#define RECENT_LINES	 512 /* what `egressctl log` shows without -f */
#define DT_REASONS	 24  /* reasons a target's metrics tell apart; then "other" */
#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)                                                 \
	for ((var) = TAILQ_FIRST((head)); (var) && ((tvar) = TAILQ_NEXT((var), field), 1);         \
	     (var) = (tvar))
#endif

struct daemon;
struct dockerapi;
struct job;
struct control_client;
struct hold;

#define SEL_MAX_ROOTS 16 /* selectors' roots held (selectors.c) */

/* One target: what the config named, and what it is now. */
struct dtarget {
	TAILQ_ENTRY(dtarget) entry;
	struct daemon *dm;
	struct dspec spec;
	char label[PATH_MAX + 80]; /* "target NAME: ": a selector's NAME holds a cgroup path */
	char command[PATH_MAX + 80];
	struct target_env env;
	struct target *tg; /* NULL while its cgroup does not exist */
	char cgpath[PATH_MAX];
	uint64_t cgid;
	int cg_fd;
	int wd; /* inotify: the parent directory, while waiting for the cgroup */
	struct target_rule rules[DAEMON_MAX_RULES];
	int nrules;
	bool rebuild_pending; /* its policy is to be built again (a rule expired) */
	bool held;	      /* its policy_dir file does not build: not attached until a reload */
	/* a cgroup a selector matched (selectors.c): its path and name, and the
	 * selector's index in the config (SEL_DEFAULT_DENY: the default's) */
	bool dyn;
	int sel;
	char dyn_what[PATH_MAX];
	char dyn_name[PATH_MAX + 64]; /* "SELECTOR:/path", whole: names must not collide */
	/* a container's identity from its OCI bundle, for OTLP's resource
	 * (env.resource: pairs pointing into res_text) */
	char res_text[4][256];
	const char *res[8];
	/* its decisions by verdict, source and reason (metrics.c) */
	struct dt_reason {
		char verdict[12], source[12], reason[48];
		uint64_t n;
	} reasons[DT_REASONS];
	int nreasons;
	struct policy *waiting_policy; /* built, for when its cgroup comes */
	struct existing *ahead;	       /* a take-over's iterators, loaded at start (daemon.c) */
	uint64_t since;		       /* monotonic seconds: attached */
	/* a selector's target while a worker loads its programs (targets.c,
	 * dt_load_*): the target, not dt->tg until attached */
	struct target *loading;
	struct target_load *load;
	pthread_t load_th;
	int load_efd;
	struct event *load_ev;
	bool load_queued; /* waiting for a worker (dm->load_queue) */
	TAILQ_ENTRY(dtarget) load_entry;
};

/* A `log -f` reader. */
struct follower {
	LIST_ENTRY(follower) entry;
	struct control_client *cl;
	uint64_t cgid; /* 0: every target */
};

#define DOCKER_MAX_SERVICES  16	 /* --docker-services: containers confined */
#define DOCKER_MAX_PUBLISHED 128 /* a job's containers' published ports allowed */

struct daemon_opts {
	struct target_opts t; /* for the targets the command line names */
	const char *config;
	const char *control;
	const char *metrics;		 /* --metrics ADDR, or NULL */
	const char *docker;		 /* --docker PATH: dockerd's socket, kept for the targets */
	const char *docker_egress;	 /* --docker-egress confined|open (NULL: confined) */
	const char *docker_services;	 /* --docker-services FILTER, or NULL */
	const char *user_socket, *users; /* --user-socket PATH, --users FILE */
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
	/* selectors' loads: as many workers at once as CPUs, the rest queued */
	TAILQ_HEAD(, dtarget) load_queue;
	int loads_running;
	struct control *ctl;
	struct metrics *metrics; /* --metrics: GET /metrics, or NULL */
	struct usersock *usock;	 /* --user-socket, or NULL */
	int sfd, ino_fd;
	struct event *ev_sig, *ev_ino, *tick;
	int policy_wd;		     /* inotify: the config's policy_dir (-1: none) */
	char policy_dir[PATH_MAX];   /* what policy_wd watches */
	struct event *policy_soon;   /* a reload shortly after policy_dir changed */
	struct sel_watch *sw;	     /* selectors.c: the directories watched */
	struct sel_pending *pending; /* selectors.c: matches inotify found, to attach */
	struct event *ev_pending;    /* attaches the first of them, one per turn of the loop */
	struct hold *holds[SEL_MAX_ROOTS];    /* selectors.c: one per selector's root */
	bool swept[SEL_MAX_ROOTS];	      /* its first walk done: what it did not pass, gone */
	uint64_t held_said[SEL_MAX_ROOTS][3]; /* what each refused, as last said */
	int nholds;
	int nsw, capsw;
	char self_cg[PATH_MAX]; /* the daemon's own cgroup (selectors.c), once read */
	LIST_HEAD(, follower) followers;
	char *recent[RECENT_LINES];
	uint64_t recent_cgid[RECENT_LINES];
	unsigned int nrecent, recent_at;
	char mnt[PATH_MAX];
	bool moved;		 /* it left a target for <mnt>/egressctl/daemon (targets_leave) */
	struct ctr_names *names; /* the cgroups of the containers' decisions */
	uint64_t started;
	bool looping; /* the loop runs: a target's programs load in a worker from now on */
	uint64_t reloads, reloads_rejected;
	uint64_t policies_kept; /* a policy_dir file that did not build, per target */
	int status;
	struct job *job; /* a policy build in a worker thread */
	bool reload_pending;
	struct control_client *pending_waiters[16]; /* `reload`s waiting for the next one */
	int npending;
	struct dockerapi *docker;    /* --docker */
	const char *docker_names[2]; /* PATH as given and resolved: the targets may connect */
	int ndocker_names;
	uint32_t docker_gw;	/* dockerd's bridge's gateway: the containers' address */
	struct pktguard *guard; /* --docker: the targets' AF_PACKET frames dropped */
	uint64_t guard_said;	/* what it dropped, as last said */
	/* --docker: dockerd's own cgroup, a target of the command line's
	 * policy (docker_server_spec), and its networks' subnets, allowed to
	 * it (its userland proxy reaches the containers); "" with
	 * --docker-egress open. Found at start, kept by reloads. */
	char docker_cg[PATH_MAX];
	char docker_nets[64][64];
	int ndocker_nets;
	/* --docker-services: the containers running at the start that the
	 * filter selects (a CI job's services), each a target of the command
	 * line's policy (docker_services_spec); their published TCP ports on
	 * 127.0.0.1, allowed to the command line's targets (svc_rules). */
	struct {
		char cg[PATH_MAX];
		char name[64];
		char id[16];
	} svc[DOCKER_MAX_SERVICES];
	int nsvc;
	char svc_rules[DOCKER_MAX_SERVICES * 4][24];
	int nsvc_rules;
	/* a job's container's ports published on this host, allowed to the
	 * job on 127.0.0.1 while its cgroup stands (docker_tick) */
	struct {
		uint64_t job; /* the job's dtarget's cgid */
		uint64_t ccg; /* the container's cgroup's id */
		char cg[PATH_MAX];
		char rule[24]; /* "127.0.0.1:PORT" */
		char cid[13];
	} pub[DOCKER_MAX_PUBLISHED];
	int npub;
	/* a job's containers on the docker networks they share (peers.c) */
	struct peers *peers;
};

/* An error message; one cut short is still the message. */
static inline void daemon_errf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline void
daemon_errf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* ---- targets.c ---- */

/* An event of the daemon's own, in the target's log and on stderr. */
void dt_event(struct dtarget *dt, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The cgroup directory a target names, checked to exist. */
int dt_resolve(const char *mnt, const struct dspec *s, char *out, size_t outlen, char *errbuf,
	       size_t errlen);
struct dtarget *dt_new(struct daemon *dm, const struct dspec *s);
void dt_free(struct dtarget *dt, bool detach);
/* Its target finished, its summary written, freed (detached with detach);
 * the cgroup let go. */
void dt_release(struct dtarget *dt, bool detach);
/* --containers, --docker: every decision names its cgroup and container. */
void dt_name_containers(struct dtarget *dt);
/* Attaches dt, or leaves it waiting for its cgroup (a unit that is not
 * running yet; its policy waits with it). p: its policy, owned from now on
 * (NULL: build it). Errors other than a missing cgroup are the caller's. */
int dt_start(struct dtarget *dt, struct policy *p, char *errbuf, size_t errlen);
/* Two targets where one holds the other would run two sets of programs
 * on the same sockets. */
int targets_check_overlap(const struct daemon *dm, char *errbuf, size_t errlen);
/* The daemon is never confined by itself: inside a target, it moves to a
 * cgroup of its own (<cgroup2>/egressctl/daemon) before opening a socket. */
int targets_leave(struct daemon *dm, char *errbuf, size_t errlen);
/* At exit: the cgroup targets_leave made goes with the daemon. */
void targets_remove_own(struct daemon *dm);
/* One of the daemon's events in every attached target's log. */
void targets_log_all(struct daemon *dm, const char *event, const char *words);
/* Once a second, and when a directory comes (inotify): a target whose
 * cgroup went is let go (one of a process is freed), one waiting for its
 * cgroup attached if it came; the --containers address kept. */
void dt_check(struct dtarget *dt);

/* ---- reload.c ---- */

/* The configuration: the file, or the targets of the command line. Reads
 * only dm->opts: a worker thread may call it. */
int reload_load_config(const struct daemon *dm, struct dconfig *c, char *errbuf, size_t errlen);
/* Every target's policy for c (with no runtime rules), all or nothing. */
int reload_build_all(const struct dconfig *c, struct policy **built, char *errbuf, size_t errlen);
/* A reload asked for (SIGHUP, or `egressctl reload` from cl, who gets the
 * reply when it is done). */
void reload_want(struct daemon *dm, struct control_client *cl);
/* cl is gone: no reload's answer is sent to it. */
void reload_forget(struct daemon *dm, const struct control_client *cl);
/* Starts what was asked while a job ran (a reload, rebuilds). */
void reload_next(struct daemon *dm);
/* dt's runtime rules that ran out by now (now_s()) go: its policy is
 * built again. */
void reload_expire_rules(struct dtarget *dt, uint64_t now);
/* At stop: a running build finishes and is dropped; its waiters are told. */
void reload_stop(struct daemon *dm);
/* The config's policy_dir watched (inotify), the one before not; called at
 * start and after each reload. */
void reload_watch_policy_dir(struct daemon *dm);
/* An inotify event of policy_wd: a reload in 100 ms (the kubelet's
 * update of a ConfigMap is several events). */
void reload_policy_dir_changed(struct daemon *dm, const char *name);

/* ---- selectors.c ---- */

#define SEL_DEFAULT_DENY (-1)
#define SEL_UNCONFINED	 (-2)
struct inotify_event;
/* The selector of c that matches the cgroup at path (below mnt), or what
 * the default makes of it (SEL_DEFAULT_DENY, SEL_UNCONFINED); *best says
 * whether one matched, or may below it. Pure: a worker may call it. */
int sel_choose(const struct dconfig *c, const char *mnt, const char *path, enum dsel_match *best);
/* dt (a matched cgroup) takes s's options: its spec, name and label. */
void sel_fill(struct dtarget *dt, const struct dspec *s, int sel);
/* Every selector's root walked: its matches made targets, the directories
 * where one may come watched. At start, after a reload, once a second for
 * a root that does not exist yet. */
void sel_discover(struct daemon *dm);
/* Every selector's root that exists held (kernel/hold.h), the daemon's own
 * cgroup passed; the holds of roots no selector has any more lifted. At
 * start (an error stops it) and from sel_discover (said). */
int sel_hold_roots(struct daemon *dm, char *errbuf, size_t errlen);
/* The cgroup cgid at path passed (EGR_HOLD_SELF, _TREE) by every hold
 * above it, or held again. */
void sel_pass(struct daemon *dm, const char *path, uint64_t cgid, uint32_t flags);
void sel_unpass(struct daemon *dm, uint64_t cgid);
/* Once a second: the cgroups passed that are gone forgotten, what the holds
 * refused said. */
void sel_holds_tick(struct daemon *dm);
/* At stop: the holds closed, their pins kept. */
void sel_holds_close(struct daemon *dm);
/* An inotify event of a watched directory (true), or not one of ours. */
bool sel_event(struct daemon *dm, const struct inotify_event *ev);
void sel_free(struct daemon *dm);

/* ---- docker.c ---- */

/* The target whose cgroup's id is cgid (a job's: dockerapi's id), or NULL. */
struct dtarget *docker_target(struct daemon *dm, uint64_t cgid);
/* fn(arg, its path, the container's id) for each directory one level below
 * under whose name carries a container's id, and two levels below where
 * the first does not (a slice of systemd's): a job's containers' cgroups.
 * true when fn said stop (by returning true). */
bool docker_ctr_dirs(const char *under, bool (*fn)(void *arg, const char *path, const char *id),
		     void *arg);

/* --docker PATH: dockerd's socket taken over (dockerapi/), and the
 * targets' options amended (docker_amend). 0 or -errno with errbuf set. */
int docker_start(struct daemon *dm, char *errbuf, size_t errlen);
/* What --docker adds to the targets' options: PATH allowed to their
 * connect_unix hook, the containers' address (dockerd's bridge's gateway)
 * where none is named. Reads only what docker_start() set: a worker
 * thread may call it. */
void docker_amend(const struct daemon *dm, struct dconfig *c);
/* --docker: a target's cgroup (cgid) guarded from AF_PACKET frames, or
 * not any more (kernel/pktguard.h); nothing without --docker. */
void docker_guard(struct daemon *dm, uint64_t cgid, bool on);

/* --docker: once a second, what the guard dropped said when it changed. */
void docker_tick(struct daemon *dm);

/* --docker: dockerd's own process found (before its socket is taken) and
 * its cgroup checked: not the root, holding no cgroup, not the daemon's
 * (dm->docker_cg, dm->docker_nets). Nothing with --docker-egress open.
 * 0, or -errno with errbuf set. */
int docker_server_find(struct daemon *dm, char *errbuf, size_t errlen);

/* dockerd's cgroup added to c as a target ("dockerd", spec.server) with
 * the command line's policy and its networks' subnets allowed: what
 * dockerd fetches itself (its pulls, a build's FROM and ADD of a URL) is
 * judged as the job's connections are. No unix hooks (dockerd talks to
 * containerd), no secrets, summary or suggested policy (the job's). */
int docker_server_spec(const struct daemon *dm, struct dconfig *c, char *errbuf, size_t errlen);
/* --docker-services: the running containers the filter selects found
 * (before dockerd's socket is taken), each one's cgroup checked (not the
 * root, not the daemon's, not dockerd's, holding no cgroup), its published
 * TCP ports added to the command line's rules as 127.0.0.1:PORT
 * (dm->svc, dm->svc_rules). 0, or -errno with errbuf set. */
int docker_services_find(struct daemon *dm, char *errbuf, size_t errlen);

/* Each of those containers' cgroups added to c as a target of the command
 * line's policy ("svc-NAME", spec.server: detached when the daemon
 * stops), its connections from before ended. */
int docker_services_spec(const struct daemon *dm, struct dconfig *c, char *errbuf, size_t errlen);

/* The socket given back to dockerd, or left covered (fail closed) while
 * a target stays attached. */
void docker_stop(struct daemon *dm);

/* ---- requests.c ---- */

/* A runtime rule added to dt (as `egressctl allow` does; expires: now_s()
 * seconds, 0 none): in force at once where dt is attached. 0, or -errno
 * with why set. */
int requests_add_rule(struct dtarget *dt, enum policy_action a, const char *rule, uint64_t expires,
		      char *why, size_t whylen);

/* One request of the control socket, and a client gone. */
void requests_on_request(void *arg, struct control_client *cl, const void *req);
void requests_on_gone(void *arg, struct control_client *cl);

#endif /* DAEMON_CORE_H */
