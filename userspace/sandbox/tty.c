// SPDX-License-Identifier: Apache-2.0
/* --ask: CMD gets a terminal of its own and no way back to egressctl's
 * (sandbox_opts.term): a session of its own, a private devpts instance with
 * a fresh pty whose master egressctl relays, the terminal's aliases in /dev
 * and the input devices covered, and the sockets of tmux, screen and X11
 * (which type into the terminals they show) hidden. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <unistd.h>

#include "sandbox/kfiles.h"
#include "sandbox/sandbox.h"
#include "sandbox/steps.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

#define TTY_MAJOR_ 4 /* VTs (minor 1-63) and serial ports (64-255) */
#define VCS_MAJOR_ 7 /* vcs, vcsa, vcsu: the VT screens, readable and writable */

bool
sandbox_tty_alias(const char *name, dev_t rdev, dev_t tty)
{
	bool vt = major(tty) == TTY_MAJOR_ && minor(tty) >= 1 && minor(tty) <= 63;

	if (tty && rdev == tty)
		return true;
	if (!strcmp(name, "console") || !strcmp(name, "uinput") || !strcmp(name, "uhid"))
		return true;
	if (vt && major(rdev) == TTY_MAJOR_ && minor(rdev) == 0) /* tty0: the current VT */
		return true;
	return vt && major(rdev) == VCS_MAJOR_;
}

/* /dev/null over every alias of the terminal in /dev, an empty tmpfs over
 * /dev/input (writing an event device types on its keyboard). */
static int
cover_tty_aliases(dev_t tty)
{
	struct dirent *de;
	struct stat st;
	char path[PATH_MAX];
	int err = 0;
	DIR *d;

	d = opendir("/dev");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISCHR(st.st_mode) || !sandbox_tty_alias(de->d_name, st.st_rdev, tty))
			continue;
		if (snprintf(path, sizeof(path), "/dev/%s", de->d_name) >= (int)sizeof(path))
			continue;
		if (mount("/dev/null", path, NULL, MS_BIND, NULL)) {
			err = -errno;
			break;
		}
	}
	closedir(d);
	if (!err) {
		err = kfiles_mask_path("/dev/input");
		if (err == -ENOENT)
			err = 0;
	}
	return err;
}

/* Programs outside that take commands from CMD's uid and type into the
 * terminal they show: tmux (send-keys) and screen (stuff) servers, the X
 * server (XTEST). Their sockets' directories get an empty tmpfs. */
static int
cover_session_sockets(uid_t uid)
{
	const char *tmux_tmp = getenv("TMUX_TMPDIR");
	char tmux[PATH_MAX], tmux2[PATH_MAX];
	const char *dirs[] = {tmux, tmux2, "/run/screen", "/tmp/screens", "/tmp/.X11-unix"};
	struct stat st;
	size_t i;

	snprintf(tmux, sizeof(tmux), "/tmp/tmux-%u", (unsigned)uid);
	tmux2[0] = '\0';
	if (tmux_tmp && *tmux_tmp == '/')
		snprintf(tmux2, sizeof(tmux2), "%s/tmux-%u", tmux_tmp, (unsigned)uid);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (!dirs[i][0] || lstat(dirs[i], &st) || !S_ISDIR(st.st_mode))
			continue;
		if (mount("egressctl", dirs[i], "tmpfs",
			  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0555,size=4k"))
			return -errno;
	}
	return 0;
}

static int
send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	char byte = 'm';
	struct iovec iov = {&byte, 1};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != 1)
		return -errno;
	return 0;
}

/* A pty from the devpts at /dev/pts (ours): the slave is CMD's controlling
 * terminal and the stdio fds in t->stdio; the master goes to t->pty_sock. */
static int
make_pty(const struct sandbox_user *u, const struct sandbox_term *t, const char **what)
{
	int master, slave = -1, unlock = 0, fd, err = 0;

	*what = "open /dev/pts/ptmx";
	master = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master == -1)
		return -errno;
	*what = "unlock the pty";
	if (ioctl(master, TIOCSPTLCK, &unlock))
		goto out_errno;
	*what = "open the pty's slave";
	slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave == -1)
		goto out_errno;
	*what = "chown the pty";
	if (fchown(slave, u->uid, u->gid))
		goto out_errno;
	*what = "set the pty's modes";
	if (tcsetattr(slave, TCSANOW, &t->tios) || ioctl(slave, TIOCSWINSZ, &t->ws))
		goto out_errno;
	*what = "TIOCSCTTY";
	if (ioctl(slave, TIOCSCTTY, 0))
		goto out_errno;
	*what = "send the pty's master";
	err = send_fd(t->pty_sock, master);
	if (err)
		goto out_close;
	*what = "dup2 the pty";
	for (fd = 0; fd < 3; fd++)
		if ((t->stdio & (1U << fd)) && dup2(slave, fd) == -1)
			goto out_errno;
	goto out_close;
out_errno:
	err = -errno;
out_close:
	if (slave != -1)
		close(slave);
	close(master);
	return err;
}

int
tty_enter(const struct sandbox_user *u, const struct sandbox_term *t, const char **what)
{
	int err;

	/* no controlling terminal: /dev/tty is egressctl's no longer */
	*what = "setsid";
	if (setsid() == -1)
		return -errno;
	*what = "mount a private devpts on /dev/pts";
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0600"))
		return -errno;
	*what = "cover the terminal's aliases in /dev";
	err = cover_tty_aliases(t->tty);
	if (err)
		return err;
	*what = "cover the tmux, screen and X11 sockets";
	err = cover_session_sockets(u->uid);
	if (err)
		return err;
	if (t->pty_sock < 0)
		return 0;
	return make_pty(u, t, what);
}
