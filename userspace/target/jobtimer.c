// SPDX-License-Identifier: Apache-2.0
/* The job timer (see jobtimer.h): two libevent timers on run's loop, and
 * the cgroup-wide signal. Signals go to processes by pidfd, never by a pid
 * read earlier: between reading cgroup.procs and kill() a pid can exit and
 * be reused by any process of the host. SIGKILL needs none of that: the
 * kernel's cgroup.kill kills the whole subtree at once, forks included. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <event2/event.h>

#include "kernel/cgroup.h"
#include "lib/duration.h"
#include "target/jobtimer.h"
#include "lib/log.h"

#define SIG_BATCH 512 /* pidfds open at once while signalling a cgroup */
#define MAX_DEPTH 32  /* child cgroups followed this deep */

struct jobtimer {
	struct event *tev; /* the timeout */
	struct event *kev; /* the kill-after, armed by the first TERM */
	const char *cgpath;
	uint64_t kill_after_ns;
	char timeout_text[32];
	bool timed_out;
	bool kill_armed;
	bool quiet;
};

struct pids {
	pid_t *v;
	size_t n, cap;
};

static int
pids_add(struct pids *p, pid_t pid)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		pid_t *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = pid;
	return 0;
}

static int
cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* The pids in cgroup.procs (cgroup.threads in a threaded cgroup) of dfd. */
static int
read_procs(int dfd, struct pids *out)
{
	char buf[4096], part[16];
	size_t plen = 0;
	ssize_t n;
	int fd, err = 0;

	fd = openat(dfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 0 : -errno; /* removed meanwhile */
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			err = -errno;
			if (err == -EOPNOTSUPP) { /* threaded cgroup */
				close(fd);
				fd = openat(dfd, "cgroup.threads", O_RDONLY | O_CLOEXEC);
				if (fd == -1)
					return -errno;
				err = 0;
				continue;
			}
			break;
		}
		for (ssize_t i = 0; i < n && !err; i++) {
			if (buf[i] != '\n') {
				if (plen + 1 < sizeof(part))
					part[plen++] = buf[i];
				continue;
			}
			part[plen] = 0;
			if (plen)
				err = pids_add(out, (pid_t)strtol(part, NULL, 10));
			plen = 0;
		}
	}
	close(fd);
	return err;
}

/* Every pid of dfd's cgroup and of the cgroups below it. */
static int
collect(int dfd, struct pids *out, int depth)
{
	struct dirent *de;
	int err, cfd;
	DIR *dir;

	err = read_procs(dfd, out);
	if (err || depth >= MAX_DEPTH)
		return err;
	cfd = dup(dfd);
	if (cfd == -1)
		return -errno;
	dir = fdopendir(cfd);
	if (!dir) {
		err = -errno;
		close(cfd);
		return err;
	}
	while (!err && (de = readdir(dir))) {
		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		cfd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cfd == -1)
			continue; /* removed meanwhile */
		err = collect(cfd, out, depth + 1);
		close(cfd);
	}
	closedir(dir);
	return err;
}

int
jobtimer_signal_cgroup(const char *path, int sig)
{
	struct pids first = {0}, again = {0};
	int pidfd[SIG_BATCH], dfd, err, sent = 0;

	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1)
		return -errno;
	err = collect(dfd, &first, 0);
	for (size_t base = 0; !err && base < first.n; base += SIG_BATCH) {
		size_t n = first.n - base < SIG_BATCH ? first.n - base : SIG_BATCH;

		for (size_t i = 0; i < n; i++) {
			pidfd[i] = (int)syscall(SYS_pidfd_open, first.v[base + i], 0);
			if (pidfd[i] < 0)
				pidfd[i] = -errno;
		}
		/* a pid still listed now is the process its pidfd refers to */
		again.n = 0;
		err = collect(dfd, &again, 0);
		if (!err)
			qsort(again.v, again.n, sizeof(*again.v), cmp_pid);
		for (size_t i = 0; i < n; i++) {
			pid_t pid = first.v[base + i];

			if (!err && again.n &&
			    bsearch(&pid, again.v, again.n, sizeof(pid), cmp_pid)) {
				if (pidfd[i] >= 0 &&
				    !syscall(SYS_pidfd_send_signal, pidfd[i], sig, NULL, 0))
					sent++;
				/* a non-leader thread (threaded cgroup) has no pidfd
				 * before 6.9: kill() of the listed tid is what is left */
				else if (pidfd[i] == -EINVAL && !kill(pid, sig))
					sent++;
			}
			if (pidfd[i] >= 0)
				close(pidfd[i]);
		}
	}
	free(first.v);
	free(again.v);
	close(dfd);
	return err ? err : sent;
}

static void
kill_cgroup(struct jobtimer *t)
{
	int fd, err = 0;

	fd = open(t->cgpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		int kfd = openat(fd, "cgroup.kill", O_WRONLY | O_CLOEXEC);

		if (kfd == -1 || write(kfd, "1", 1) != 1)
			err = -errno;
		if (kfd >= 0)
			close(kfd);
		close(fd);
	} else {
		err = -errno;
	}
	/* before 5.14, or a threaded cgroup: one SIGKILL per listed pid */
	if (err == -ENOENT || err == -EOPNOTSUPP) {
		int n = cgroup_kill_procs(t->cgpath);

		err = n < 0 ? n : 0;
	}
	if (err)
		log_warnx("cannot kill the processes of %s: %s", t->cgpath, strerror(-err));
}

static void
on_kill(evutil_socket_t fd, short what, void *arg)
{
	struct jobtimer *t = arg;
	char d[32];

	(void)fd;
	(void)what;
	duration_format(t->kill_after_ns, d, sizeof(d));
	if (!t->quiet)
		log_warnx("--kill-after %s: still running %s after TERM: killing every process "
			  "of the cgroup",
			  d, d);
	kill_cgroup(t);
}

static void
arm_kill(struct jobtimer *t)
{
	struct timeval tv = {(time_t)(t->kill_after_ns / 1000000000ull),
			     (suseconds_t)(t->kill_after_ns % 1000000000ull + 999) / 1000};

	if (!t->kill_after_ns || t->kill_armed)
		return;
	t->kill_armed = true;
	if (event_add(t->kev, &tv))
		log_warnx("cannot arm --kill-after: the command will not be killed");
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct jobtimer *t = arg;
	int n;

	(void)fd;
	(void)what;
	t->timed_out = true;
	arm_kill(t); /* first: a slow walk of a big cgroup counts against it */
	n = jobtimer_signal_cgroup(t->cgpath, SIGTERM);
	if (n < 0)
		log_warnx("--timeout %s: cannot signal the processes of %s: %s", t->timeout_text,
			  t->cgpath, strerror(-n));
	else if (!t->quiet)
		log_warnx("--timeout %s: the command ran out of time: TERM sent to %d process%s",
			  t->timeout_text, n, n == 1 ? "" : "es");
}

struct jobtimer *
jobtimer_new(struct event_base *base, const char *cgpath, uint64_t timeout_ns,
	     uint64_t kill_after_ns, bool quiet)
{
	struct timeval tv = {(time_t)(timeout_ns / 1000000000ull),
			     (suseconds_t)(timeout_ns % 1000000000ull + 999) / 1000};
	struct jobtimer *t;

	errno = 0;
	if (!timeout_ns && !kill_after_ns)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->cgpath = cgpath;
	t->kill_after_ns = kill_after_ns;
	t->quiet = quiet;
	duration_format(timeout_ns, t->timeout_text, sizeof(t->timeout_text));
	t->tev = evtimer_new(base, on_timeout, t);
	t->kev = evtimer_new(base, on_kill, t);
	if (!t->tev || !t->kev || (timeout_ns && evtimer_add(t->tev, &tv))) {
		jobtimer_free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void
jobtimer_signalled(struct jobtimer *t)
{
	if (t)
		arm_kill(t);
}

int
jobtimer_status(const struct jobtimer *t, int status, bool killed)
{
	if (!t || !t->timed_out)
		return status;
	return killed ? 128 + SIGKILL : 124;
}

void
jobtimer_free(struct jobtimer *t)
{
	if (!t)
		return;
	if (t->tev)
		event_free(t->tev);
	if (t->kev)
		event_free(t->kev);
	free(t);
}
