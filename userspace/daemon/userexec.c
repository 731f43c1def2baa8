// SPDX-License-Identifier: Apache-2.0
/* The user socket's plumbing (userexec.h): a message and the descriptors
 * that came with it, CMD's environment in a memfd, and the child of fork()
 * that becomes the service's run. Nothing here knows a run's state
 * (usersock.c). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "daemon/userexec.h"
#include "lib/log.h"

/* The descriptors of msg (any SCM_RIGHTS), into fds (at most max; the
 * rest closed). */
static int
take_fds(struct msghdr *msg, int *fds, int max)
{
	int n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		int k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

void
userexec_close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* One message and its descriptors: its length, 0 when the client is gone,
 * -EAGAIN, or -EMSGSIZE (cut short: bytes or descriptors). */
ssize_t
userexec_recv(int conn, char *buf, size_t len, int *fds, int *nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * USREQ_MAX_FDS)];
	struct iovec iov = {buf, len};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf)};
	ssize_t n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);

	*nfds = 0;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : 0;
	*nfds = take_fds(&msg, fds, USREQ_MAX_FDS);
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		userexec_close_fds(fds, *nfds);
		*nfds = 0;
		return -EMSGSIZE;
	}
	return n;
}

/* The environment CMD gets, NUL-separated, in a memfd at offset 0. */
int
userexec_env_memfd(const struct usreq *req)
{
	int fd = memfd_create("egressctl-env", MFD_CLOEXEC);

	for (int i = 0; fd >= 0 && i < req->nenv; i++) {
		size_t len = strlen(req->env[i]) + 1;

		if (write(fd, req->env[i], len) != (ssize_t)len) {
			close(fd);
			return -1;
		}
	}
	if (fd >= 0 && lseek(fd, 0, SEEK_SET))
		fd = (close(fd), -1);
	return fd;
}

/* A line on the client's stderr from the child of fork() (a threaded
 * daemon: nothing that may take a lock). */
static void
say(const char *line)
{
	if (write(2, line, strlen(line)) < 0)
		return;
}

/* In the child of fork(): the descriptors in their places (0-2 the
 * client's, the working directory entered, 3 CMD's environment, 4.. the
 * files, then the tap and the client's connection), nothing else open,
 * signals as a new process has them, a session of its own; then run,
 * which outlives the daemon (cli/svcrun.c). */
void
userexec_child(char **argv, int *fds, int nfds, int envfd, int tapfd, int connfd)
{
	char *const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	int hi[USREQ_MAX_FDS + 2];
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	setsid();
	for (int i = 0; i < nfds; i++)
		hi[i] = fcntl(i == 3 ? envfd : fds[i], F_DUPFD, USREQ_MAX_FDS + 2);
	hi[nfds] = fcntl(tapfd, F_DUPFD, USREQ_MAX_FDS + 2);	  /* --service-log-fd NFDS */
	hi[nfds + 1] = fcntl(connfd, F_DUPFD, USREQ_MAX_FDS + 2); /* --service-conn-fd NFDS+1 */
	for (int i = 0; i <= nfds + 1; i++)
		if (hi[i] < 0 || dup2(hi[i], i) != i)
			_exit(EGR_EXIT_ERROR);
	if (fchdir(fds[3])) {
		say("egressctl: the service cannot enter the working directory\n");
		_exit(EGR_EXIT_ERROR);
	}
	syscall(SYS_close_range, nfds + 2, ~0U, 0);
	execve("/proc/self/exe", argv, env);
	say("egressctl: the service cannot start run\n");
	_exit(EGR_EXIT_ERROR);
}
