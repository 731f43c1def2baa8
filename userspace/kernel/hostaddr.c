// SPDX-License-Identifier: Apache-2.0
/* This network namespace's addresses, and a watch on their changes (see
 * hostaddr.h). getifaddrs() reads them (an rtnetlink dump, whole); the
 * watch is a socket in the IFADDR groups, whose messages only say that
 * something changed. */
#include <errno.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "kernel/hostaddr.h"

int
hostaddr_watch_open(bool routes)
{
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR |
			     (routes ? RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE : 0),
	};
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

int
hostaddr_route(const uint32_t addr[4], int *ifindex, bool *onlink)
{
	bool v4 = addr[0] == 0 && addr[1] == 0 && addr[2] == htonl(0xffff);
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		char attrs[64];
	} req = {0};
	struct sockaddr_nl to = {.nl_family = AF_NETLINK};
	struct rtattr *ra = (struct rtattr *)req.attrs;
	char buf[4096];
	int fd, err = 0;
	ssize_t n;

	*ifindex = 0;
	*onlink = false;
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.rt.rtm_family = v4 ? AF_INET : AF_INET6;
	req.rt.rtm_dst_len = v4 ? 32 : 128;
	ra->rta_type = RTA_DST;
	ra->rta_len = (unsigned short)RTA_LENGTH(v4 ? 4 : 16);
	memcpy(RTA_DATA(ra), v4 ? &addr[3] : addr, v4 ? 4 : 16);
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.rt)) + RTA_ALIGN(ra->rta_len);
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0 ||
	    (n = recv(fd, buf, sizeof(buf), 0)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	close(fd);
	for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; n > 0 && NLMSG_OK(nh, (size_t)n);
	     nh = NLMSG_NEXT(nh, n)) {
		struct rtmsg *rt = NLMSG_DATA(nh);
		int len = (int)RTM_PAYLOAD(nh);

		if (nh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nh);

			return e->error ? e->error : -EPROTO;
		}
		if (nh->nlmsg_type != RTM_NEWROUTE)
			continue;
		if (rt->rtm_type != RTN_UNICAST)
			return -ENETUNREACH;
		*onlink = true;
		for (struct rtattr *a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
			if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= sizeof(int))
				memcpy(ifindex, RTA_DATA(a), sizeof(int));
			else if (a->rta_type == RTA_GATEWAY || a->rta_type == RTA_VIA ||
				 a->rta_type == RTA_MULTIPATH)
				*onlink = false;
		}
		return *ifindex ? 0 : -ENETUNREACH;
	}
	return -EPROTO;
}
