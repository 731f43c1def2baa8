// SPDX-License-Identifier: Apache-2.0
/* The service's run (`run --service-env-fd`, started by the daemon's user
 * socket, daemon/usersock.c) on its own: the client's connection
 * (--service-conn-fd) read by run itself, its signals forwarded, its
 * going away ending CMD, its exit status written by run; and the tap of
 * decision lines (--service-log-fd) taken up again, as {"adopt": ...} on
 * --service-socket, with a daemon started after the one that is gone. So
 * a run outlives a restart of the service. Private to cli/. */
#ifndef CLI_SVCRUN_H
#define CLI_SVCRUN_H

#include <stddef.h>

struct run_state;
struct run_opts;
struct svcrun;

/* Watches the client's connection and the tap on st's event base, as
 * st->opts names them. NULL when out of memory. */
struct svcrun *svcrun_open(struct run_state *st);
void svcrun_free(struct svcrun *s);
/* Run's teardown: no more of the client's messages nor of the tap's
 * going; svcrun_tap still takes the last records (freed after them). */
void svcrun_quiet(struct svcrun *s);

/* A decision line (its JSON) for the daemon's `egressctl log`: sent on
 * the tap, or, while no daemon is there, kept (the last SVCRUN_QUEUE) and
 * sent to the next daemon once it has taken the run up. */
#define SVCRUN_QUEUE 256
void svcrun_tap(struct svcrun *s, const char *line, size_t len);

/* Until the run has a cgroup, a thread watches the client's connection
 * (conn_fd): the client gone, run exits at once, even while it is blocked
 * reading a file the client passed (an --upstream-ca pipe nobody writes) and
 * with no daemon there to kill it. NULL when it cannot be started (errno).
 * svcrun_watch_done() stops it, before the cgroup is made. */
struct svcrun_watch;
struct svcrun_watch *svcrun_watch_setup(int conn_fd);
void svcrun_watch_done(struct svcrun_watch *w);

/* {"exit": status} to the client, last (after the summary). */
void svcrun_exit(const struct run_opts *o, int status);

#endif /* CLI_SVCRUN_H */
