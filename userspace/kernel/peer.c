// SPDX-License-Identifier: Apache-2.0
/* The peer of a unix stream socket, and whether it may command egressctl
 * (see peer.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "kernel/cgroup.h"
#include "kernel/loader.h" /* EGR_LINUX_* */
#include "kernel/peer.h"

#define PEER_CAP_SYS_ADMIN 21

/* How a confined process is told apart: by what the kernel runs for its
 * sockets, not by where pins are. Every egressctl, `run` or daemon, of any
 * version, attaches its connect4 program under this name (bpf/sock_addr.c,
 * the same since the first one), and the effective list of a cgroup holds
 * the programs of every ancestor too: a process in a cgroup below a target,
 * in a `run` of another egressctl, of a build whose pins live on another
 * bpffs, or whose pins were removed while its links still hold, is seen.
 * Pins under bpffs egressctl/<cgroup id>/ would miss the last three, and
 * the cgroup's id and its ancestors' would have to be walked by hand. A
 * program of another loader that took the name makes its cgroup's
 * processes refused, never admitted: the check fails closed. */
#define PEER_CONNECT4_NAME "egr_connect4"

/* The file name under dirfd into buf (NUL-terminated). Bytes read, or -errno. */
static ssize_t
read_at(int dirfd, const char *name, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		got += (size_t)n;
	}
	buf[got] = 0;
	close(fd);
	return (ssize_t)got;
}

/* The pid a pidfd names ("Pid:" of its fdinfo): -1 once the process is
 * gone, or -errno. */
static int
pidfd_pid(int pidfd)
{
	char name[64], text[1024], *p;
	ssize_t n;

	snprintf(name, sizeof(name), "/proc/self/fdinfo/%d", pidfd);
	n = read_at(AT_FDCWD, name, text, sizeof(text));
	if (n < 0)
		return (int)n;
	p = strstr(text, "\nPid:\t");
	if (!p && !strncmp(text, "Pid:\t", 5))
		p = text - 1;
	if (!p)
		return -ENOTSUP;
	return atoi(p + 6);
}

static bool
pidfd_alive(int pidfd)
{
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

int
peer_parse_status(const char *text, uint64_t *cap_eff)
{
	const char *p = text;
	char *end;

	while (p && *p) {
		if (!strncmp(p, "CapEff:", 7)) {
			p += 7;
			while (*p == '\t' || *p == ' ')
				p++;
			errno = 0;
			*cap_eff = strtoull(p, &end, 16);
			if (end == p || errno || (*end && *end != '\n'))
				return -EINVAL;
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -EINVAL;
}

int
peer_cgroup_confined(int cg_fd)
{
	__u32 cnt = 0, *ids = NULL;
	int err, found = 0;

	for (int tries = 0; tries < 4; tries++) {
		__u32 cap = cnt + 16, *n = realloc(ids, cap * sizeof(*ids));

		if (!n) {
			free(ids);
			return -ENOMEM;
		}
		ids = n;
		cnt = cap;
		err = bpf_prog_query(cg_fd, BPF_CGROUP_INET4_CONNECT, BPF_F_QUERY_EFFECTIVE, NULL,
				     ids, &cnt);
		if (err != -ENOSPC)
			break;
	}
	if (err) {
		free(ids);
		return err < 0 ? err : -EIO;
	}
	for (__u32 i = 0; i < cnt && !found; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(ids[i]);

		if (fd < 0)
			continue; /* gone since the query */
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
		    !strncmp(info.name, PEER_CONNECT4_NAME, sizeof(info.name)))
			found = 1;
		close(fd);
	}
	free(ids);
	return found;
}

/* Is the process at procfd in our user namespace? */
static int
same_userns(int procfd, bool *same)
{
	struct stat a, b;

	if (fstatat(procfd, "ns/user", &a, 0) || stat("/proc/self/ns/user", &b))
		return -errno;
	*same = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	return 0;
}

/* Its cgroup, and whether egressctl's programs run there. */
static int
read_cgroup(int procfd, const char *mnt, struct peer *p, char *why, size_t whylen)
{
	char text[4096], path[PATH_MAX + PEER_CGROUP_MAX];
	ssize_t n = read_at(procfd, "cgroup", text, sizeof(text));
	int fd, err;

	err = n < 0 ? (int)n : cgroup_of_pid_in(text, p->cgroup, sizeof(p->cgroup));
	if (err) {
		p->cgroup[0] = 0;
		snprintf(why, whylen, "cannot read its cgroup: %s", strerror(-err));
		return err;
	}
	snprintf(path, sizeof(path), "%s%s", mnt, p->cgroup);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	err = fd < 0 ? -errno : peer_cgroup_confined(fd);
	if (fd >= 0)
		close(fd);
	if (err < 0) {
		snprintf(why, whylen, "cannot tell whether egressctl confines its cgroup %s: %s",
			 p->cgroup, strerror(-err));
		return err;
	}
	p->confined = err == 1;
	return 0;
}

/* What /proc/PID (procfd) says of the peer. */
static int
read_facts(int procfd, const char *mnt, struct peer *p, char *why, size_t whylen)
{
	char text[4096];
	ssize_t n;
	int err;

	n = read_at(procfd, "comm", text, sizeof(text));
	if (n > 0) {
		text[strcspn(text, "\n")] = 0;
		text[sizeof(p->comm) - 1] = 0;
		memcpy(p->comm, text, sizeof(p->comm));
	}
	n = read_at(procfd, "status", text, sizeof(text));
	err = n < 0 ? (int)n : peer_parse_status(text, &p->cap_eff);
	if (err) {
		snprintf(why, whylen, "cannot read its capabilities: %s", strerror(-err));
		return err;
	}
	err = same_userns(procfd, &p->same_userns);
	if (err) {
		snprintf(why, whylen, "cannot read its user namespace: %s", strerror(-err));
		return err;
	}
	return read_cgroup(procfd, mnt, p, why, whylen);
}

int
peer_identify(int fd, const char *mnt, struct peer *p, char *why, size_t whylen)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	char path[32];
	int pidfd = -1, procfd, err;

	memset(p, 0, sizeof(*p));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len)) {
		err = -errno;
		snprintf(why, whylen, "cannot read its credentials: %s", strerror(-err));
		return err;
	}
	p->pid = cr.pid;
	p->uid = cr.uid;
	p->gid = cr.gid;
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len)) {
		err = -errno;
		snprintf(why, whylen,
			 "cannot take a pidfd of it (SO_PEERPIDFD, Linux " EGR_LINUX_DAEMON "): %s",
			 strerror(-err));
		return err;
	}
	if (cr.pid <= 0 || pidfd_pid(pidfd) != cr.pid) {
		close(pidfd);
		snprintf(why, whylen, "it is gone, or in a PID namespace egressctl cannot see");
		return -ESRCH;
	}
	snprintf(path, sizeof(path), "/proc/%d", (int)cr.pid);
	procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot open %s: %s", path, strerror(-err));
	} else {
		err = read_facts(procfd, mnt, p, why, whylen);
		close(procfd);
	}
	/* alive now: the pid was its own all along, and so was what it said */
	if (!err && !pidfd_alive(pidfd)) {
		snprintf(why, whylen, "it is gone");
		err = -ESRCH;
	}
	close(pidfd);
	return err;
}

int
peer_refusal(const struct peer *p, char *why, size_t whylen)
{
	if (p->confined)
		snprintf(why, whylen,
			 "egressctl confines its cgroup: a confined process cannot command "
			 "egressctl");
	else if (p->uid != 0)
		snprintf(why, whylen, "it runs as uid %u: only root commands egressctl",
			 (unsigned)p->uid);
	else if (!p->same_userns)
		snprintf(why, whylen,
			 "it is in another user namespace than egressctl's: its capabilities do "
			 "not count in egressctl's");
	else if (!(p->cap_eff & (UINT64_C(1) << PEER_CAP_SYS_ADMIN)))
		snprintf(why, whylen,
			 "it lacks CAP_SYS_ADMIN: only an administrator commands egressctl (uid 0 "
			 "alone is not one)");
	else
		return 0;
	return -EPERM;
}
