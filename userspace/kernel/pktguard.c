// SPDX-License-Identifier: Apache-2.0
/* The packet guard (see pktguard.h): bpf/pktguard.bpf.c put on the ingress
 * of every veth that is a bridge's port, found by an rtnetlink dump at
 * start and by RTM_NEWLINK after. A port is guarded from the message that
 * says it has a master: dockerd makes a container's veth pair and enslaves
 * its host side before the container's namespace gets the other end (about
 * 260 ms before, measured for a build's RUN step), so the guard is there
 * before the container's process runs. The messages are read by a thread of
 * the guard's own, blocked in poll(): not by the daemon's loop, which a
 * target's connections keep busy (a job could otherwise slow the guard
 * down by loading its proxy). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "kernel/pktguard.h"
#include "lib/log.h"
#include "pktguard.skel.h"

#define GUARD_HANDLE   0xe9c1 /* our filter among a port's */
#define GUARD_PRIORITY 1
#define GUARD_MAX      4096 /* ports remembered to take it off again */

struct pktguard {
	struct pktguard_bpf *skel;
	int nl;		      /* RTMGRP_LINK */
	int stop[2];	      /* a pipe: its thread ends when it is closed */
	pthread_t th;	      /* reads nl (ports, nports are its while it runs) */
	bool running;	      /* th started */
	int ports[GUARD_MAX]; /* ifindexes it is on */
	int nports;
};

static bool
guarded(const struct pktguard *g, int ifindex)
{
	for (int i = 0; i < g->nports; i++)
		if (g->ports[i] == ifindex)
			return true;
	return false;
}

static void
forget(struct pktguard *g, int ifindex)
{
	for (int i = 0; i < g->nports; i++)
		if (g->ports[i] == ifindex) {
			g->ports[i] = g->ports[--g->nports];
			return;
		}
}

/* The guard on ifindex's ingress: 1 put on, 0 there already, -errno. */
static int
guard_port(struct pktguard *g, int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = GUARD_HANDLE, .priority = GUARD_PRIORITY,
			    .prog_fd = bpf_program__fd(g->skel->progs.egr_pktguard),
			    .flags = BPF_TC_F_REPLACE);
	int err;

	if (guarded(g, ifindex))
		return 0;
	if (g->nports == GUARD_MAX)
		return -E2BIG;
	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		return err;
	err = bpf_tc_attach(&hook, &opts);
	if (err)
		return err;
	g->ports[g->nports++] = ifindex;
	return 1;
}

static void
unguard_port(int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = GUARD_HANDLE, .priority = GUARD_PRIORITY);

	bpf_tc_detach(&hook, &opts); /* a port gone took it with it */
}

/* One RTM_NEWLINK/RTM_DELLINK: a veth with a master guarded, a port gone
 * forgotten. 1 if the guard was put on. */
static int
on_link(struct pktguard *g, const struct nlmsghdr *h)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	int len = (int)h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi));
	bool master = false, veth = false;
	const struct rtattr *a;
	int err;

	if (len < 0)
		return 0;
	if (h->nlmsg_type == RTM_DELLINK) {
		forget(g, ifi->ifi_index);
		return 0;
	}
	for (a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == IFLA_MASTER && RTA_PAYLOAD(a) >= 4 && *(const int *)RTA_DATA(a))
			master = true;
		if (a->rta_type == IFLA_LINKINFO) {
			const struct rtattr *k = RTA_DATA(a);
			int klen = (int)RTA_PAYLOAD(a);

			for (; RTA_OK(k, klen); k = RTA_NEXT(k, klen))
				if (k->rta_type == IFLA_INFO_KIND && RTA_PAYLOAD(k) >= 4 &&
				    !strncmp(RTA_DATA(k), "veth", 5))
					veth = true;
		}
	}
	if (!master || !veth)
		return 0;
	err = guard_port(g, ifi->ifi_index);
	if (err < 0)
		log_warnx("packet guard: cannot guard interface %d: %s (what an AF_PACKET "
			  "socket behind it writes is not stopped)",
			  ifi->ifi_index, strerror(-err));
	return err > 0;
}

/* The messages in fd now: each link handled. The ports guarded, or
 * -errno; stops at NLMSG_DONE (a dump's end) with done set. */
static int
read_links(struct pktguard *g, int fd, bool *done)
{
	char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	int n = 0;

	for (;;) {
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		int len = (int)r;

		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? n : -errno;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf;
		     len > 0 && NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				if (done)
					*done = true;
				return n;
			}
			if (h->nlmsg_type == NLMSG_ERROR)
				return -EIO;
			if (h->nlmsg_type == RTM_NEWLINK || h->nlmsg_type == RTM_DELLINK)
				n += on_link(g, h);
		}
		if (done && *done)
			return n;
	}
}

/* Every link there is now (an RTM_GETLINK dump on a socket of its own). */
static int
dump_links(struct pktguard *g)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = {
		.h = {.nlmsg_len = sizeof(req),
		      .nlmsg_type = RTM_GETLINK,
		      .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		      .nlmsg_seq = 1},
		.i = {.ifi_family = AF_UNSPEC},
	};
	bool done = false;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), n = 0, r = 0;

	if (fd < 0)
		return -errno;
	if (send(fd, &req, sizeof(req), 0) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	while (!done && (r = read_links(g, fd, &done)) >= 0)
		n += r;
	close(fd);
	return done ? n : r;
}

/* The guard's thread: what rtnetlink says, as it says it, until the stop
 * pipe's write end is closed. */
static void *
watch(void *arg)
{
	struct pktguard *g = arg;
	struct pollfd p[2] = {{.fd = g->nl, .events = POLLIN},
			      {.fd = g->stop[0], .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_warnx("packet guard: poll: %s (new bridge ports are not guarded)",
				  strerror(errno));
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		if (p[0].revents && read_links(g, g->nl, NULL) == -ENOBUFS) {
			/* messages lost: look at every link again */
			log_warnx("packet guard: rtnetlink lost messages: every interface looked "
				  "at again");
			dump_links(g);
		}
	}
}

struct pktguard *
pktguard_open(char *errbuf, size_t errlen)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK};
	struct pktguard *g = calloc(1, sizeof(*g));
	int err;

	if (!g) {
		snprintf(errbuf, errlen, "packet guard: out of memory");
		return NULL;
	}
	g->nl = g->stop[0] = g->stop[1] = -1;
	g->skel = pktguard_bpf__open_and_load();
	if (!g->skel) {
		snprintf(errbuf, errlen, "packet guard: cannot load its tc program: %s",
			 strerror(errno));
		free(g);
		return NULL;
	}
	/* the watch first: a port made during the dump is not missed */
	g->nl = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (g->nl < 0 || bind(g->nl, (struct sockaddr *)&sa, sizeof(sa))) {
		snprintf(errbuf, errlen, "packet guard: rtnetlink: %s", strerror(errno));
		pktguard_close(g, true);
		return NULL;
	}
	err = dump_links(g);
	if (err < 0) {
		snprintf(errbuf, errlen, "packet guard: the interfaces: %s", strerror(-err));
		pktguard_close(g, true);
		return NULL;
	}
	err = pipe2(g->stop, O_CLOEXEC);
	if (err || (err = pthread_create(&g->th, NULL, watch, g))) {
		snprintf(errbuf, errlen, "packet guard: its thread: %s",
			 strerror(err > 0 ? err : errno));
		pktguard_close(g, true);
		return NULL;
	}
	g->running = true;
	return g;
}

int
pktguard_add(struct pktguard *g, uint64_t cgid)
{
	uint32_t one = 1;

	return bpf_map_update_elem(bpf_map__fd(g->skel->maps.egr_guard_cg), &cgid, &one, BPF_ANY)
		       ? -errno
		       : 0;
}

int
pktguard_del(struct pktguard *g, uint64_t cgid)
{
	return bpf_map_delete_elem(bpf_map__fd(g->skel->maps.egr_guard_cg), &cgid) ? -errno : 0;
}

uint64_t
pktguard_dropped(const struct pktguard *g)
{
	return g->skel->bss->egr_guard_dropped;
}

void
pktguard_close(struct pktguard *g, bool off)
{
	if (!g)
		return;
	if (g->stop[1] >= 0)
		close(g->stop[1]); /* its thread ends */
	if (g->running)
		pthread_join(g->th, NULL);
	if (g->stop[0] >= 0)
		close(g->stop[0]);
	for (int i = 0; off && i < g->nports; i++)
		unguard_port(g->ports[i]);
	if (g->nl >= 0)
		close(g->nl);
	pktguard_bpf__destroy(g->skel);
	free(g);
}
