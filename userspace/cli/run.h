// SPDX-License-Identifier: Apache-2.0
/* `egressctl run`: its options (the target's, plus the command's own) and
 * the confined run of CMD from start to summary. */
#ifndef RUN_H
#define RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "confine/target.h"
#include "policy/secret.h" /* SECRET_MAX */
#include "lib/plimits.h"

struct run_opts {
	struct target_opts t; /* policy, log, timeouts, limits */
	const char *cgroup;
	const char *user;
	bool ask;		/* ask on the terminal when no rule allows */
	int ask_timeout;	/* whole seconds a question waits (default 60) */
	uint64_t timeout_ns;	/* --timeout: TERM to the cgroup after this (0: none) */
	uint64_t kill_after_ns; /* --kill-after: then KILL after this (0: never) */
	bool quiet;
	bool allow_sudo;   /* setuid programs work in CMD (sudo), kept in the walls */
	bool no_proxy_env; /* CMD gets no HTTP(S)_PROXY/ALL_PROXY (kernel-verified path) */
	char **argv;
	int env_fd;		 /* --service-env-fd: CMD's environment comes on it (0: none) */
	char **environ;		 /* read from env_fd */
	char *env_buf;		 /* what environ points into */
	const char *limits_text; /* --service-limits: the caller's umask and rlimits */
	struct plimits limits;	 /* parsed from it (.set) */
	/* --service-ceiling: users.json's "allow", one rule a line; every
	 * allow rule of the policy must be within one (NULL: no ceiling) */
	const char *ceiling_text;
	int log_tap; /* --service-log-fd: every record's line, one message each (0: none) */
	/* --service-conn-fd: the client's connection (cli/svcrun.c: its
	 * signals, its going, CMD's exit status); 0: none */
	int conn_fd;
	/* --service-socket: the user socket, where the tap is taken up again
	 * with the daemon that comes after the one gone */
	const char *service_socket;
	/* --client-secret NAME=fd:N: a policy file's secret's value, read by
	 * the client of the service as the user (cli/client.c) */
	const char *client_secrets[SECRET_MAX];
	int nclient_secrets;
	/* --client-policy-name PATH: --policy's file as the user named it
	 * (status shows it in place of fd:N) */
	const char *client_policy_name;
};

/* --help of run. */
void run_usage(FILE *f);

/* Parses run's options and CMD; extra: more target rows, or NULL (the
 * test build's). Returns OPTS_OK, OPTS_HELP or OPTS_USAGE (said on
 * stderr). */
int run_parse(int argc, char **argv, struct run_opts *o, const struct opt *extra);

/* Runs the command; returns egressctl's exit status. */
int run_main(struct run_opts *o);

#endif /* RUN_H */
