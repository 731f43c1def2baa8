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

struct run_state;
struct run_opts;
struct svcrun;

/* Watches the client's connection and the tap on st's event base, as
 * st->opts names them. NULL when out of memory. */
struct svcrun *svcrun_open(struct run_state *st);
void svcrun_free(struct svcrun *s);

/* {"exit": status} to the client, last (after the summary). */
void svcrun_exit(const struct run_opts *o, int status);

#endif /* CLI_SVCRUN_H */
