// SPDX-License-Identifier: Apache-2.0
/* A run's state, shared by run.c (its life) and spawn.c (CMD started in
 * the cgroup). Private to cli/. */
#ifndef CLI_RUNSTATE_H
#define CLI_RUNSTATE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "cli/run.h"
#include "cli/trust.h"
#include "confine/target.h"
#include "sandbox/sandbox.h"

struct term;
struct asker;
struct svcrun;
struct jobtimer;
struct event;
struct event_base;

struct run_state {
	struct run_opts *opts;
	struct target_env env;
	struct target *tg;
	struct event_base *base;
	struct sandbox_user user;
	pid_t pid; /* CMD, or with --allow-sudo pid 1 of its PID namespace */
	int pidfd;
	int statfd;	   /* --allow-sudo: CMD's wait status, from that pid 1 */
	char **masks;	   /* the unix sockets masked in CMD's mount namespace */
	int status;	   /* exit status to return */
	struct term *term; /* --ask: egressctl's terminal */
	struct asker *asker;
	struct jobtimer *jt; /* --timeout, --kill-after */
	char cgpath[PATH_MAX];
	const char *cgrel;   /* cgpath below the cgroup2 mount ("/egressctl/run-PID") */
	bool fresh, created; /* the cgroup is ours to remove */
	bool attached;	     /* the programs are on it */
	int cg_fd, sfd;
	struct event *ev_child, *ev_sig;
	char cmdline[512];
	char no_proxy[4096];  /* CMD's NO_PROXY */
	struct trust trust;   /* HTTPS inspection: the CA CMD trusts */
	struct rlimit nofile; /* as egressctl was started: CMD gets it back */
	struct svcrun *svc;   /* the service's run: its client and tap (svcrun.c) */
};

/* run.c: signal signo with si_code code, sent to run (or by the client of
 * the service's run, as SI_USER), done as run does it: forwarded to CMD,
 * or --ask's SIGWINCH, or --log anew. */
void run_signal(struct run_state *st, uint32_t signo, int32_t code);

/* spawn.c: CMD started in the cgroup (cg_fd) as u, in its sandbox; st->pid
 * and st->pidfd set. 0 or -errno (said on stderr). */
int run_spawn(struct run_state *st, int cg_fd, const struct sandbox_user *u);

#endif /* CLI_RUNSTATE_H */
