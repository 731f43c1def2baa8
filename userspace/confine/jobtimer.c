// SPDX-License-Identifier: Apache-2.0
/* The job timer (see jobtimer.h): two libevent timers on run's loop. The
 * cgroup-wide TERM (by pidfd) and KILL (cgroup.kill) are kernel/cgroup.c's. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "kernel/cgroup.h"
#include "lib/duration.h"
#include "confine/jobtimer.h"
#include "lib/log.h"

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

static void
on_kill(evutil_socket_t fd, short what, void *arg)
{
	struct jobtimer *t = arg;
	char d[32];
	int err;

	(void)fd;
	(void)what;
	duration_format(t->kill_after_ns, d, sizeof(d));
	if (!t->quiet)
		log_warnx("--kill-after %s: still running %s after TERM: killing every process "
			  "of the cgroup",
			  d, d);
	err = cgroup_kill(t->cgpath);
	if (err)
		log_warnx("cannot kill the processes of %s: %s", t->cgpath, strerror(-err));
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
	n = cgroup_signal(t->cgpath, SIGTERM);
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
