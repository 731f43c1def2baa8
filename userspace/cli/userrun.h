// SPDX-License-Identifier: Apache-2.0
/* `egressctl run` without sudo, both ends (userrun.c): the client a user's
 * run becomes when egressctl is not root, and the check of a user's
 * arguments the daemon's user socket is handed (daemon/usersock.h). */
#ifndef USERRUN_H
#define USERRUN_H

#include <stdbool.h>
#include <jansson.h>

#include "daemon/usersock.h"

/* The default user socket; EGRESSCTL_USER_SOCKET names another. */
#define USERRUN_SOCKET EGR_RUNDIR "-user.sock"

/* usersock_check_fn: run's options parsed as run parses them, then
 * refused where they reach beyond the user. */
int userrun_check(char **args, int nargs, int nfds, const struct usercfg *c, char *err,
		  size_t errlen);

/* The user socket's path, and whether something is there. */
const char *userrun_socket_path(void);
bool userrun_service(void);

/* run as a user that is not root: through the service, or one line on
 * how to get it. argv as run_parse takes it. Returns the exit status. */
int userrun_client(int argc, char **argv);

/* status as a user that is not root: the caller's runs through the
 * service (theirs only), as text or with json a JSON array. Returns the
 * exit status. */
int userrun_status(bool json);

/* log as a user that is not root: the decision lines of the caller's runs
 * the service kept, then with follow each new one until interrupted (the
 * service closing the connection then is EGR_EXIT_ERROR, said). Returns
 * the exit status. */
int userrun_log(bool follow);

/* The same lines, for root every user's (each with "user" and "uid"),
 * without a word when the socket does not connect: then *cerr is its
 * errno (else 0) and the status EGR_EXIT_ERROR. With stop (another
 * thread's, or NULL): the socket is published in stop->sock while open,
 * so that the other thread can shut it down, and once stop->stop is set
 * nothing more is read (userrun_log_stop). */
struct userrun_log_stop {
	int sock; /* -1: none open */
	int stop;
};
int userrun_log_lines(bool follow, int *cerr, struct userrun_log_stop *stop);
/* Ends a userrun_log_lines of another thread's (with s), which then returns
 * at once; call before joining it. */
void userrun_log_stop(struct userrun_log_stop *s);

/* The service's runs as its {"status": true} answers them (root: every
 * user's; each with pid, cgroup, command, uptime, user, uid), a new
 * reference; NULL when it does not answer so. */
json_t *userrun_runs(void);

#endif /* USERRUN_H */
