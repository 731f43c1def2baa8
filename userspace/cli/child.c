// SPDX-License-Identifier: Apache-2.0
/* CMD's child (see child.h), from clone3() into the cgroup to exec: the
 * walls of the sandbox, the environment CMD gets, and the one line that
 * says why it could not start. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "cli/child.h"
#include "policy/secret.h"
#include "cli/trust.h"
#include "lib/plimits.h"
#include "lib/log.h"

/* Does a file named cmd exist in some directory of PATH? */
static bool
in_path(const char *cmd)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (!path)
		path = "/usr/local/bin:/bin:/usr/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? path : ".", cmd) <
			    (int)sizeof(buf) &&
		    access(buf, F_OK) == 0)
			return true;
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

/* The proxy variables proxy-aware clients (curl, git, pip, npm, python
 * urllib) follow: CONNECT through egressctl's HTTP proxy, except for the
 * names in NO_PROXY (the kernel-verified path's: target_no_proxy). */
static void
set_proxy_env(const struct child_env *env)
{
	setenv("HTTP_PROXY", env->http, 1);
	setenv("http_proxy", env->http, 1);
	setenv("HTTPS_PROXY", env->http, 1);
	setenv("https_proxy", env->http, 1);
	setenv("ALL_PROXY", env->socks, 1);
	setenv("all_proxy", env->socks, 1);
	setenv("NO_PROXY", env->no_proxy, 1);
	setenv("no_proxy", env->no_proxy, 1);
}

void
child_exec(const struct sandbox_user *u, const struct sandbox_term *term, int errfd,
	   const struct child_env *env)
{
	const char *what = "";
	char msg[512];
	sigset_t none;
	int err, status;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (env->nofile->rlim_max) /* egressctl raised its own limit, not CMD's */
		setrlimit(RLIMIT_NOFILE, env->nofile);
	struct sandbox_opts so = {
		.term = term,
		.keep_fd = errfd,
		.keep_fd2 = env->statfd,
		.unix_masks = env->masks,
		.own_proc = env->allow_sudo,
		.allow_sudo = env->allow_sudo,
		.ro_dir = env->trust ? env->trust->dir : NULL,
	};
	pid_t pid;

	err = sandbox_enter_opts(u, &so, &what);
	if (!err && env->allow_sudo) {
		what = "fork";
		pid = fork();
		if (pid == -1)
			err = -errno;
		if (pid > 0) {
			/* egressctl's read of errfd ends when CMD's exec closes the
			 * last copy */
			close(errfd);
			sandbox_init(pid, env->statfd, false);
		}
	}
	if (!err && env->statfd >= 0)
		close(env->statfd);
	if (err) {
		snprintf(msg, sizeof(msg), "%d cannot confine the command (%s): %s", EGR_EXIT_ERROR,
			 what, strerror(-err));
		if (write(errfd, msg, strlen(msg)) < 0)
			_exit(EGR_EXIT_ERROR);
		_exit(EGR_EXIT_ERROR);
	}
	if (env->environ) /* the service's run: the client's environment */
		environ = env->environ;
	/* and the client's umask and limits, lowered to ours (as the user now:
	 * a hard limit can only go down) */
	if (env->limits && (err = plimits_apply(env->limits, &status))) {
		snprintf(msg, sizeof(msg),
			 "%d cannot give the command your limits (resource %d): %s", EGR_EXIT_ERROR,
			 status, strerror(-err));
		if (write(errfd, msg, strlen(msg)) < 0)
			_exit(EGR_EXIT_ERROR);
		_exit(EGR_EXIT_ERROR);
	}
	if (u->home[0])
		setenv("HOME", u->home, 1);
	if (u->name[0]) {
		setenv("USER", u->name, 1);
		setenv("LOGNAME", u->name, 1);
	}
	/* so that an egressctl run by CMD can say it is confined already */
	setenv("EGRESSCTL_CGROUP", env->cgroup, 1);
	if (!env->no_proxy_env)
		set_proxy_env(env);
	trust_setenv(env->trust); /* HTTPS inspection's CA, whatever the proxy variables */
	/* secrets: placeholders only (their values' pages are not in this
	 * process: MADV_DONTFORK) */
	for (unsigned int i = 0; i < secrets_count(env->secrets); i++)
		setenv(secrets_name(env->secrets, i), secrets_placeholder(env->secrets, i), 1);
	execvp(env->argv[0], env->argv);
	err = errno;
	status = (err == ENOENT || err == ENOTDIR) ? EGR_EXIT_NOTFOUND : EGR_EXIT_NOEXEC;
	/* execvp says EACCES when a PATH directory was unreadable and the
	 * command exists nowhere: that is "not found", as the shell says */
	if (err == EACCES && !strchr(env->argv[0], '/') && !in_path(env->argv[0]))
		status = EGR_EXIT_NOTFOUND;
	if (status == EGR_EXIT_NOTFOUND)
		snprintf(msg, sizeof(msg), "%d %s: command not found", status, env->argv[0]);
	else
		snprintf(msg, sizeof(msg), "%d %s: %s", status, env->argv[0], strerror(err));
	if (write(errfd, msg, strlen(msg)) < 0)
		_exit(status);
	_exit(status);
}
