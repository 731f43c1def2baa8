// SPDX-License-Identifier: Apache-2.0
/* This network namespace's addresses, and a watch on their changes (see
 * hostaddr.h). getifaddrs() reads them (an rtnetlink dump, whole); the
 * watch is a socket in the IFADDR groups, whose messages only say that
 * something changed. */
#include <errno.h>
#include <ifaddrs.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "kernel/hostaddr.h"

int
hostaddr_watch_open(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK,
				 .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE), err;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

void
hostaddr_watch_drain(int fd)
{
	char buf[8192];

	/* ENOBUFS (messages lost) ends it too: the list is read whole anyway */
	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

int
hostaddr_list(struct egr_hostaddr_key *out, int max, int *total)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	*total = 0;
	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		struct egr_hostaddr_key k = {0};
		const struct sockaddr *sa = i->ifa_addr;

		if (!sa)
			continue;
		if (sa->sa_family == AF_INET) {
			k.addr[2] = htonl(0xffff);
			k.addr[3] = ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
		} else if (sa->sa_family == AF_INET6) {
			const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;

			/* every veth that comes up gets one: a container's start
			 * would change the list each time */
			if (IN6_IS_ADDR_LINKLOCAL(a6))
				continue;
			memcpy(k.addr, a6, 16);
		} else {
			continue;
		}
		(*total)++;
		if (n < max)
			out[n++] = k;
	}
	freeifaddrs(ifa);
	return n;
}
