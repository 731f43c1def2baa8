// SPDX-License-Identifier: Apache-2.0
/* What the BPF tests (tests/bpf/test_*.c) share: a network namespace of
 * their own with lo up, its cookie, cgroups made for the run
 * (<cgroup2>/egressctl-bpftest-PID/{sbx,sbx/in,out}, removed at exit) and
 * sockets created in one of them. Include after <cmocka.h>, in one file of
 * a test binary. */
#ifndef BPFTEST_H
#define BPFTEST_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "kernel/cgroup.h"

/* lo up in the test's own network namespace (127.0.0.1 and ::1 exist). */
static int
netns_setup(void)
{
	struct ifreq ifr = {0};
	int s, err = -1;

	if (unshare(CLONE_NEWNET))
		return -1;
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (!ioctl(s, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		err = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return err;
}

/* The cookie of the test's network namespace, which the test run's packets
 * are routed in (its loopback device). */
static uint64_t
own_netns(void)
{
	uint64_t c = 0;
	socklen_t len = sizeof(c);
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(s >= 0);
	assert_int_equal(getsockopt(s, SOL_SOCKET, SO_NETNS_COOKIE, &c, &len), 0);
	close(s);
	return c;
}

/* <cgroup2>/egressctl-bpftest-PID/{sbx,sbx/in,out}: the sandbox, a cgroup
 * below it, one beside it. */
static char cg_base[PATH_MAX], cg_sbx[PATH_MAX], cg_in[PATH_MAX], cg_out[PATH_MAX];
static uint64_t sbx_id;

static void
cg_cleanup(void)
{
	if (!cg_base[0])
		return;
	rmdir(cg_in);
	rmdir(cg_sbx);
	rmdir(cg_out);
	rmdir(cg_base);
}

static int
cg_setup(void)
{
	char mnt[PATH_MAX];
	bool created;

	if (cgroup_find_mount(mnt, sizeof(mnt)))
		return -1;
	if ((size_t)snprintf(cg_base, sizeof(cg_base), "%s/egressctl-bpftest-%d", mnt,
			     (int)getpid()) >= sizeof(cg_base) - 8) {
		cg_base[0] = 0;
		errno = ENAMETOOLONG;
		return -1;
	}
	strcat(strcpy(cg_sbx, cg_base), "/sbx");
	strcat(strcpy(cg_in, cg_base), "/sbx/in");
	strcat(strcpy(cg_out, cg_base), "/out");
	atexit(cg_cleanup);
	if (cgroup_create(cg_in, &created) || cgroup_create(cg_out, &created))
		return -1;
	sbx_id = cgroup_id_of(cg_sbx);
	return sbx_id ? 0 : -1;
}

/* The socket address of addr (IPv4 or IPv6) and port. */
static struct sockaddr_storage
sa(const char *addr, uint16_t port)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
	} else {
		assert_int_equal(inet_pton(AF_INET6, addr, &in6->sin6_addr), 1);
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
	}
	return ss;
}

/* A socket bound to addr:port (listening, for TCP) and created by a process
 * in the cgroup cg (NULL: this process's), passed here: its cgroup is the
 * one it was created in. */
static int
sock_in(const char *cg, int type, const char *addr, uint16_t port, bool reuseport)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0}, byte = 0, path[PATH_MAX + 16];
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = cbuf,
			   .msg_controllen = sizeof(cbuf)};
	struct sockaddr_storage ss = sa(addr, port);
	int sv[2], fd = -1, status, one = 1;
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int s, cfd;

		if (cg) {
			snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
			cfd = open(path, O_WRONLY);
			if (cfd < 0 || write(cfd, "0", 1) != 1)
				_exit(1);
			close(cfd);
		}
		s = socket(ss.ss_family, type, 0);
		if (s < 0 ||
		    (reuseport && setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) ||
		    bind(s, (struct sockaddr *)&ss, sizeof(ss)) ||
		    (type == SOCK_STREAM && listen(s, 8)))
			_exit(2);
		*(struct cmsghdr *)cbuf = (struct cmsghdr){.cmsg_len = CMSG_LEN(sizeof(int)),
							   .cmsg_level = SOL_SOCKET,
							   .cmsg_type = SCM_RIGHTS};
		memcpy(CMSG_DATA((struct cmsghdr *)cbuf), &s, sizeof(int));
		_exit(sendmsg(sv[1], &m, 0) == 1 ? 0 : 3);
	}
	close(sv[1]);
	if (recvmsg(sv[0], &m, 0) == 1 && m.msg_controllen >= CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA((struct cmsghdr *)cbuf), sizeof(int));
	close(sv[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(fd >= 0);
	return fd;
}

#endif /* BPFTEST_H */
