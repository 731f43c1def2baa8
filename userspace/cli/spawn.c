// SPDX-License-Identifier: Apache-2.0
/* CMD started for `egressctl run` (runstate.h): clone3 into the cgroup,
 * the sandbox entered in the child (child.c), with --ask its terminal's
 * master received over a socket pair, and what the child says when it
 * fails before exec. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "cli/child.h"
#include "cli/runstate.h"
#include "cli/term.h"
#include "lib/log.h"

/* The pty's master, sent by the child (sandbox.c make_pty). -1 when the
 * child ended before it sent one (its error comes through the pipe). */
static int
recv_master(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte;
	struct iovec iov = {&byte, 1};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	ssize_t n;
	int fd;

	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	c = n == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* --ask: CMD's terminal as the child makes it (sandbox.c make_pty), and
 * the socket pair its pty's master comes back on (sv). */
static int
spawn_term(struct run_state *st, struct sandbox_term *term, int sv[2])
{
	memset(term, 0, sizeof(*term));
	term->tty = term_rdev(st->term);
	term->stdio = term_stdio(st->term);
	term->pty_sock = -1;
	term_modes(st->term, &term->tios, &term->ws);
	if (term->stdio && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	term->pty_sock = sv[1];
	return 0;
}

/* In the parent, once CMD's child runs: with --ask the pty's master it
 * sends (on sv0), then what it wrote on errfd (closed here): nothing when
 * CMD was executed, else "<exit status> <message>". With --ask the master
 * goes to the relay. 0, or -ECHILD when CMD did not start (st->status
 * set, the child reaped). */
static int
spawn_started(struct run_state *st, int errfd, int sv0)
{
	int master = sv0 != -1 ? recv_master(sv0) : -1, err = 0;
	char msg[512];
	ssize_t n;

	do
		n = read(errfd, msg, sizeof(msg) - 1);
	while (n == -1 && errno == EINTR);
	close(errfd);
	if (n > 0) {
		char *sp;

		msg[n] = 0;
		st->status = (int)strtol(msg, &sp, 10);
		log_warnx("%s", *sp ? sp + 1 : msg);
		waitid(P_PIDFD, st->pidfd, &(siginfo_t){0}, WEXITED);
		err = -ECHILD;
	} else if (sv0 != -1) {
		if (master == -1) {
			log_warnx("the command's terminal never arrived");
			err = -EIO;
		} else {
			err = term_attach_pty(st->term, master);
			if (!err)
				master = -1; /* the relay owns it */
		}
		if (err) {
			kill(st->pid, SIGKILL);
			waitid(P_PIDFD, st->pidfd, &(siginfo_t){0}, WEXITED);
			st->status = EGR_EXIT_ERROR;
			err = -ECHILD;
		}
	}
	if (master != -1)
		close(master);
	return err;
}

/* clone3() into the cgroup (with --allow-sudo, a PID namespace of its
 * own); the pidfd in *pidfd. */
static pid_t
spawn_clone(const struct run_state *st, int cg_fd, int *pidfd)
{
	struct clone_args args;

	memset(&args, 0, sizeof(args));
	args.flags = CLONE_INTO_CGROUP | CLONE_PIDFD;
	/* --allow-sudo: CMD's own PID namespace, where no process outside is
	 * there to name (/proc/PID/root, mem, fd, signals) whatever the
	 * capabilities sudo gives. Not for every run: the pids CMD sees would no
	 * longer be those the denial lines and the log name (docs/security-
	 * sandbox.md), and Landlock already refuses those /proc entries. */
	if (st->opts->allow_sudo)
		args.flags |= CLONE_NEWPID;
	args.pidfd = (uint64_t)(uintptr_t)pidfd;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)cg_fd;
	fflush(NULL);
	return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

static void
close_pair(int fd[2])
{
	for (int i = 0; i < 2; i++)
		if (fd[i] != -1)
			close(fd[i]);
	fd[0] = fd[1] = -1;
}

/* Starts CMD directly inside the cgroup: no instruction of its own runs
 * outside it, and no socket made outside can follow it in. With --ask, the
 * child makes CMD's pty and sends its master back for the relay. */
int
run_spawn(struct run_state *st, int cg_fd, const struct sandbox_user *u)
{
	struct sandbox_term term, *tp = NULL;
	int pfd[2] = {-1, -1}, sv[2] = {-1, -1}, xfd[2] = {-1, -1}, pidfd = -1, err;
	pid_t pid;

	if (st->term) {
		err = spawn_term(st, &term, sv);
		if (err)
			return err;
		tp = &term;
	}
	target_no_proxy(st->tg, st->no_proxy, sizeof(st->no_proxy));
	if ((st->opts->allow_sudo && pipe2(xfd, O_CLOEXEC | O_NONBLOCK)) || pipe2(pfd, O_CLOEXEC)) {
		err = -errno;
		goto out;
	}
	pid = spawn_clone(st, cg_fd, &pidfd);
	if (pid == -1) {
		err = -errno;
		close_pair(pfd);
		goto out;
	}
	if (pid == 0) {
		struct child_env env = {
			.cgroup = st->cgrel,
			.http = target_http_url(st->tg),
			.socks = target_socks_url(st->tg),
			.no_proxy = st->no_proxy,
			.nofile = &st->nofile,
			.masks = st->masks,
			.statfd = xfd[1],
			.argv = st->opts->argv,
			.environ = st->opts->environ,
			.limits = st->opts->limits.set ? &st->opts->limits : NULL,
			.allow_sudo = st->opts->allow_sudo,
			.no_proxy_env = st->opts->no_proxy_env,
			.trust = st->trust.dir[0] ? &st->trust : NULL,
			.secrets = target_secrets(st->tg),
		};

		close(pfd[0]);
		if (sv[0] != -1)
			close(sv[0]);
		if (xfd[0] != -1)
			close(xfd[0]);
		child_exec(u, tp, pfd[1], &env);
	}
	close(pfd[1]);
	if (xfd[1] != -1)
		close(xfd[1]);
	st->statfd = xfd[0];
	xfd[0] = xfd[1] = -1;
	st->pid = pid;
	st->pidfd = pidfd;
	if (sv[1] != -1) {
		close(sv[1]);
		sv[1] = -1;
	}
	err = spawn_started(st, pfd[0], sv[0]);
out:
	close_pair(xfd);
	close_pair(sv);
	return err;
}
