// SPDX-License-Identifier: Apache-2.0
/* What runs in CMD's child between clone3() into the cgroup and exec:
 * run's spawn() (run.c) starts it. */
#ifndef CHILD_H
#define CHILD_H

#include <stdbool.h>

#include "sandbox/sandbox.h"

struct plimits;
struct rlimit;
struct trust;
struct secrets;

struct child_env {
	const char *cgroup;	      /* the cgroup, as /proc/self/cgroup shows it */
	const char *http;	      /* http://127.0.0.1:PORT */
	const char *socks;	      /* socks5h://127.0.0.1:PORT */
	const char *no_proxy;	      /* target_no_proxy() */
	const struct rlimit *nofile;  /* the descriptor limit CMD gets */
	char *const *masks;	      /* unix sockets to mask */
	int statfd;		      /* CMD's wait status goes here (pid 1) */
	char **argv;		      /* CMD and its arguments */
	char **environ;		      /* CMD's environment, or NULL: egressctl's */
	const struct plimits *limits; /* the service's caller's umask and rlimits, or NULL */
	bool allow_sudo;	      /* --allow-sudo */
	bool no_proxy_env;	      /* --no-proxy-env */
	/* HTTPS inspection: the CA to trust (trust.h), its directory made
	 * read-only in CMD's mount namespace; NULL when nothing inspects */
	const struct trust *trust;
	/* secrets (policy/secret.h): NAME=placeholder each; NULL: none */
	const struct secrets *secrets;
};

/* The walls (sandbox_enter_opts), then CMD. With --allow-sudo it is pid 1
 * of a new PID namespace and forks: the grandchild execs CMD, the child
 * stays as the namespace's init (sandbox_init), and CMD's wait status goes
 * to env->statfd. Reports failure on errfd as "<exit status> <message>". */
__attribute__((noreturn)) void child_exec(const struct sandbox_user *u,
					  const struct sandbox_term *term, int errfd,
					  const struct child_env *env);

#endif /* CHILD_H */
