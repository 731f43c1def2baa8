// SPDX-License-Identifier: Apache-2.0
/* The secrets' values read once at start (target.h: target_new), each as
 * its source says (policy/secret.h): env:VAR from egressctl's environment,
 * then removed from it and its bytes wiped, so that CMD never inherits it;
 * file:/PATH read; command:CMDLINE run by /bin/sh -c as the invoking user
 * (SUDO_UID/SUDO_GID when set, with that user's HOME, USER and LOGNAME),
 * in egressctl's cgroup, before CMD exists, its standard output the value.
 * One trailing newline is dropped. Every buffer that held a value is wiped;
 * an error names the secret and its source, never a byte of the value. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "confine/secrets.h"
#include "policy/secret.h"

#define SECRET_CMD_TIMEOUT_MS 60000

extern char **environ;

/* Reads fd to its end (or SECRET_VALUE_MAX + 1 bytes) into buf; the length
 * or -errno. With deadline (ms; 0: none), -ETIMEDOUT past it. */
static ssize_t
read_all(int fd, char *buf, size_t cap, int deadline_ms)
{
	size_t n = 0;

	while (n < cap) {
		ssize_t r;

		if (deadline_ms) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			int pr = poll(&pfd, 1, deadline_ms);

			if (pr == 0)
				return -ETIMEDOUT;
			if (pr < 0 && errno != EINTR)
				return -errno;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			break;
		n += (size_t)r;
	}
	return (ssize_t)n;
}

/* The invoking user: SUDO_UID/SUDO_GID, else egressctl's own. */
static void
invoking_user(uid_t *uid, gid_t *gid)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	char *end;
	unsigned long v;

	*uid = getuid();
	*gid = getgid();
	if (u && *u) {
		v = strtoul(u, &end, 10);
		if (!*end)
			*uid = (uid_t)v;
	}
	if (g && *g) {
		v = strtoul(g, &end, 10);
		if (!*end)
			*gid = (gid_t)v;
	}
}

/* command: its standard output into buf, run as the invoking user. */
static ssize_t
run_command(const char *cmdline, char *buf, size_t cap, char *why, size_t whylen)
{
	char name[256] = "", home[4096] = "";
	struct passwd *pw;
	int pfd[2], status = 0;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	ssize_t n;

	invoking_user(&uid, &gid);
	/* the user's names looked up before the fork: the child only sets */
	pw = getpwuid(uid);
	if (pw) {
		snprintf(name, sizeof(name), "%s", pw->pw_name);
		snprintf(home, sizeof(home), "%s", pw->pw_dir);
	}
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(pfd[1], 1);
		if (uid != getuid() || gid != getgid()) {
			if ((name[0] ? initgroups(name, gid) : setgroups(0, NULL)) ||
			    setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
				_exit(126);
		}
		if (name[0]) {
			setenv("HOME", home, 1);
			setenv("USER", name, 1);
			setenv("LOGNAME", name, 1);
			if (chdir(home))
				(void)!chdir("/");
		}
		signal(SIGPIPE, SIG_DFL);
		execl("/bin/sh", "sh", "-c", cmdline, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	n = read_all(pfd[0], buf, cap, SECRET_CMD_TIMEOUT_MS);
	close(pfd[0]);
	if (n == -ETIMEDOUT)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n >= 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		if (WIFEXITED(status))
			snprintf(why, whylen, "the command exited with status %d",
				 WEXITSTATUS(status));
		else
			snprintf(why, whylen, "the command was killed by signal %d",
				 WTERMSIG(status));
		return -EIO;
	}
	return n;
}

/* env:VAR: its value, then gone from egressctl's environment (its bytes
 * wiped where they were). */
static ssize_t
take_env(const char *var, char *buf, size_t cap)
{
	char *v = getenv(var);
	size_t n;

	if (!v)
		return -ENOENT;
	n = strlen(v);
	if (n > cap)
		n = cap;
	memcpy(buf, v, n);
	explicit_bzero(v, strlen(v));
	unsetenv(var);
	return (ssize_t)n;
}

ssize_t
secret_source_read(int kind, const char *arg, char *buf, size_t cap, char *why, size_t whylen)
{
	ssize_t n = -EINVAL;
	int fd;

	why[0] = 0;
	switch (kind) {
	case SECRET_ENV:
		n = take_env(arg, buf, cap);
		if (n == -ENOENT)
			snprintf(
				why, whylen,
				"egressctl's environment has no %s (sudo drops it: sudo VAR=... or "
				"--preserve-env=VAR)",
				arg);
		break;
	case SECRET_FILE:
		fd = open(arg, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		n = fd < 0 ? -errno : read_all(fd, buf, cap, 0);
		if (fd >= 0)
			close(fd);
		break;
	case SECRET_CMD:
		n = run_command(arg, buf, cap, why, whylen);
		break;
	case SECRET_FD: /* read whole, then closed: nothing after it gets it */
		fd = atoi(arg);
		n = fcntl(fd, F_GETFD) < 0 ? -EBADF : read_all(fd, buf, cap, 0);
		if (n != -EBADF)
			close(fd);
		break;
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (n >= 0 && (size_t)n > SECRET_VALUE_MAX) {
		snprintf(why, whylen, "longer than %d bytes", SECRET_VALUE_MAX);
		n = -EINVAL;
	} else if (n == 0) {
		snprintf(why, whylen, "empty");
		n = -EINVAL;
	} else if (n < 0 && !why[0]) {
		snprintf(why, whylen, "%s", strerror((int)-n));
	}
	return n;
}

int
target_secrets_load(struct secrets *s, char *errbuf, size_t errlen)
{
	size_t cap = SECRET_VALUE_MAX + 1;
	char *buf = malloc(cap), why[200];
	int err = 0;

	if (!buf) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned int i = 0; !err && i < secrets_count(s); i++) {
		const char *arg = secrets_arg(s, i);
		enum secret_kind kind = secrets_kind(s, i);
		ssize_t n = secret_source_read(kind, arg, buf, cap, why, sizeof(why));

		if (n > 0 && secrets_set_value(s, i, buf, (size_t)n)) {
			n = -EINVAL;
			snprintf(why, sizeof(why),
				 "a byte a header cannot carry (a control character: CR, LF, "
				 "NUL...)");
		}
		if (n < 0) {
			snprintf(errbuf, errlen, "secret %s (%s%s): %s", secrets_name(s, i),
				 secret_kind_prefix(kind), arg, why);
			err = -EINVAL;
		}
		explicit_bzero(buf, cap);
	}
	free(buf);
	return err;
}

int
target_secrets_write(const struct secrets *s, const char *path, char *errbuf, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	bool bad;

	if (!f) {
		snprintf(errbuf, errlen, "--secret-placeholders %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	bad = fchmod(fd, 0644) != 0;
	for (unsigned int i = 0; i < secrets_count(s); i++)
		fprintf(f, "%s=%s\n", secrets_name(s, i), secrets_placeholder(s, i));
	bad |= fflush(f) != 0 || ferror(f);
	bad |= fclose(f) != 0;
	if (bad) {
		snprintf(errbuf, errlen, "--secret-placeholders %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	return 0;
}
