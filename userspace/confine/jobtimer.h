// SPDX-License-Identifier: Apache-2.0
/* --timeout and --kill-after of `egressctl run`, with the semantics of
 * coreutils timeout(1): when the timeout runs out, TERM goes to every
 * process of the run's cgroup; with a kill-after duration, whatever is
 * still there that long after the first TERM (the timeout's, or one that
 * egressctl forwarded from its own SIGTERM, SIGINT or SIGHUP) is killed
 * with SIGKILL through cgroup.kill. The run then exits 124 (timed out), or
 * 137 when CMD itself had to be killed, as timeout(1) does. */
#ifndef JOBTIMER_H
#define JOBTIMER_H

#include <stdbool.h>
#include <stdint.h>

struct event_base;
struct jobtimer;

/* Starts the timeout clock (timeout_ns 0: no timeout, kill_after_ns only
 * after a forwarded signal; both 0: NULL, nothing to do). cgpath is the
 * run's cgroup directory, kept by reference. NULL with errno set on error
 * (errno 0 when there is nothing to do). */
struct jobtimer *jobtimer_new(struct event_base *base, const char *cgpath, uint64_t timeout_ns,
			      uint64_t kill_after_ns, bool quiet);

/* egressctl forwarded a terminating signal to CMD: the kill-after clock
 * starts, once (later signals do not restart it). NULL-safe. */
void jobtimer_signalled(struct jobtimer *t);

/* egressctl's exit status for CMD's: status as run computes it (exit code,
 * or 128+N after signal N); killed: CMD ended by SIGKILL. 124 when the
 * timeout ran out, 137 when it ran out and CMD was killed. NULL-safe. */
int jobtimer_status(const struct jobtimer *t, int status, bool killed);

void jobtimer_free(struct jobtimer *t);

#endif /* JOBTIMER_H */
