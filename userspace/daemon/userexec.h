// SPDX-License-Identifier: Apache-2.0
/* The user socket's plumbing, for usersock.c: descriptors received with a
 * message, CMD's environment, the service's run started. */
#ifndef USEREXEC_H
#define USEREXEC_H

#include <sys/types.h>

#include "daemon/usreq.h"

/* One message and its descriptors (at most USREQ_MAX_FDS, the rest
 * closed): its length, 0 when the client is gone, -EAGAIN, or -EMSGSIZE
 * (cut short: bytes or descriptors; none kept then). */
ssize_t userexec_recv(int conn, char *buf, size_t len, int *fds, int *nfds);

void userexec_close_fds(int *fds, int n);

/* The environment CMD gets, NUL-separated, in a memfd at offset 0; -1 on
 * failure. */
int userexec_env_memfd(const struct usreq *req);

/* In the child of fork(): the descriptors in their places (0-2 the
 * client's, the working directory entered, 3 CMD's environment, 4.. the
 * files, then tapfd and connfd, the client's connection), nothing else
 * open, a session of its own, independent of the daemon (it goes on when
 * the daemon goes); then run as argv. Never returns. */
void userexec_child(char **argv, int *fds, int nfds, int envfd, int tapfd, int connfd)
	__attribute__((noreturn));

#endif
