// SPDX-License-Identifier: Apache-2.0
/* The maps userspace reads and writes while the programs run (see
 * loader.h): the fast path (egr_fast), the kernel-verified path (egr_vdst,
 * egr_vname) and its iterator egr_kv_kill, the saved approvals for a
 * restarted daemon (egr_saved), the unix sockets' list (egr_unix_paths),
 * the proxy's connection index (egr_conns) and the event ring buffer. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "egress.skel.h"
#include "kernel/loader.h"
#include "kernel/loader_priv.h"
#include "kernel/unixsvc_list.h"
#include "lib/log.h"
#include "lib/sockaddr.h"

int
loader_unix_set(struct loader *ld, const struct unixsvc *s)
{
	int fd = bpf_map__fd(ld->skel->maps.egr_unix_paths);
	struct egr_unix_key k, next;
	int err = 0;

	/* deleting while walking: restart from the start after each delete */
	while (!bpf_map_get_next_key(fd, NULL, &next)) {
		k = next;
		if (bpf_map_delete_elem(fd, &k))
			return -errno;
	}
	for (int i = 0; s && i < s->n && !err; i++) {
		struct egr_unix_val v = {.index = (uint32_t)i,
					 .action = s->e[i].allow ? EGR_UNIX_ALLOW : EGR_UNIX_DENY};

		memset(&k, 0, sizeof(k));
		snprintf(k.path, sizeof(k.path), "%s", s->e[i].path);
		if (bpf_map_update_elem(fd, &k, &v, BPF_ANY))
			err = -errno;
	}
	return err;
}

int
loader_sockaddr_key(const struct sockaddr *sa, uint32_t addr[4])
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		addr[0] = 0;
		addr[1] = 0;
		addr[2] = htonl(0xffff);
		addr[3] = in->sin_addr.s_addr;
		return in->sin_port;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		memcpy(addr, &in6->sin6_addr, 16);
		return in6->sin6_port;
	}
	return -EAFNOSUPPORT;
}

static int
fast_key(const struct sockaddr *sa, uint8_t proto, struct egr_fast_key *k)
{
	int port;

	memset(k, 0, sizeof(*k));
	port = loader_sockaddr_key(sa, k->addr);
	if (port < 0)
		return port;
	k->port = (uint16_t)port;
	k->proto = proto;
	return 0;
}

int
loader_fast_add(struct loader *ld, const struct sockaddr *sa, uint8_t proto, uint64_t ttl_ns)
{
	struct egr_fast_val v = {};
	struct egr_fast_key k;
	struct timespec ts;
	int err;

	err = fast_key(sa, proto, &k);
	if (err)
		return err;
	if (ttl_ns) {
		clock_gettime(CLOCK_BOOTTIME, &ts);
		v.expires_ns = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec + ttl_ns;
	}
	if (bpf_map_update_elem(bpf_map__fd(ld->skel->maps.egr_fast), &k, &v, BPF_ANY))
		return -errno;
	return 0;
}

int
loader_fast_del(struct loader *ld, const struct sockaddr *sa, uint8_t proto)
{
	struct egr_fast_key k;
	int err;

	err = fast_key(sa, proto, &k);
	if (err)
		return err;
	if (bpf_map_delete_elem(bpf_map__fd(ld->skel->maps.egr_fast), &k))
		return -errno;
	return 0;
}

int
loader_saved_put(struct loader *ld, const struct egr_saved_key *k, const struct egr_saved_val *v)
{
	if (bpf_map_update_elem(bpf_map__fd(ld->skel->maps.egr_saved), k, v, BPF_ANY))
		return -errno;
	return 0;
}

int
loader_saved_del(struct loader *ld, const struct egr_saved_key *k)
{
	if (bpf_map_delete_elem(bpf_map__fd(ld->skel->maps.egr_saved), k))
		return -errno;
	return 0;
}

int
loader_saved_walk(struct loader *ld,
		  int (*fn)(void *arg, const struct egr_saved_key *k,
			    const struct egr_saved_val *v),
		  void *arg)
{
	int fd = bpf_map__fd(ld->skel->maps.egr_saved), n = 0;
	struct egr_saved_key k, next;
	struct egr_saved_val v;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue; /* deleted meanwhile */
		v.name[sizeof(v.name) - 1] = 0;
		n++;
		if (fn(arg, &k, &v))
			break;
	}
	return n;
}

int
loader_events_fd(struct loader *ld)
{
	return ring_buffer__epoll_fd(ld->rb);
}

int
loader_events_consume(struct loader *ld)
{
	return ring_buffer__consume(ld->rb);
}

int
loader_conns_fd(struct loader *ld)
{
	return bpf_map__fd(ld->skel->maps.egr_conns);
}

int
loader_socks_fd(struct loader *ld)
{
	return bpf_map__fd(ld->skel->maps.egr_socks);
}

int
loader_sk_fd(struct loader *ld)
{
	return bpf_map__fd(ld->skel->maps.egr_sk);
}

int
loader_conn_lookup(int conns_fd, const struct sockaddr *sa, int proto, struct egr_conn_val *out)
{
	struct egr_conn_key k = {};
	int port;

	port = loader_sockaddr_key(sa, k.addr);
	if (port < 0)
		return port;
	k.port = (uint16_t)port;
	k.proto = (uint16_t)proto;
	/* one system call for both (hash maps have it since Linux 5.14) */
	if (proto == IPPROTO_TCP ? bpf_map_lookup_and_delete_elem(conns_fd, &k, out)
				 : bpf_map_lookup_elem(conns_fd, &k, out))
		return -errno;
	return 0;
}

int
loader_fast_clear(struct loader *ld)
{
	int fd = bpf_map__fd(ld->skel->maps.egr_fast), n = 0;
	struct egr_fast_key k, next;
	void *prev = NULL;

	/* deleting while walking: restart from the start after each delete */
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		if (bpf_map_delete_elem(fd, &k))
			break;
		n++;
		prev = NULL;
	}
	return n;
}

bool
loader_is_refusal(const struct egr_event *e)
{
	if (e->hook != EGR_H_SKB || e->verdict != EGR_V_DENY)
		return false;
	if (e->reason == EGR_R_IPOPTS || e->reason == EGR_R_DIRECT_MOVED ||
	    e->reason == EGR_R_TUNNEL)
		return true;
	return e->reason > EGR_R_KV_OK && e->reason <= EGR_R_KV_LAST && e->reason != EGR_R_KV_BUSY;
}

/* The iterator of egr_kv_kill, created in the network namespace of the
 * file nsfd (-1: this thread's own): it walks the namespace of whoever
 * creates it. */
static int
kill_iter(struct loader *ld, int nsfd)
{
	int self = -1, fd, err = 0;

	if (nsfd >= 0) {
		self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		if (self < 0 || setns(nsfd, CLONE_NEWNET)) {
			err = -errno;
			if (self >= 0)
				close(self);
			return err;
		}
	}
	fd = bpf_iter_create(bpf_link__fd(ld->kill_link));
	if (fd < 0)
		err = -errno;
	if (self >= 0) {
		if (setns(self, CLONE_NEWNET)) {
			/* nothing may go on in another namespace */
			log_warn("cannot return to egressctl's network namespace");
			abort();
		}
		close(self);
	}
	return fd < 0 ? err : fd;
}

/* Runs egr_kv_kill in nsfd's network namespace (-1: ours). */
static int
kill_in(struct loader *ld, int nsfd)
{
	char buf[64];
	int fd = kill_iter(ld, nsfd), err = 0;
	ssize_t n;

	if (fd < 0) {
		log_warnx("cannot end refused connections: %s", strerror(-fd));
		return fd;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		; /* the program writes nothing: reading runs it */
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

int
loader_kv_kill(struct loader *ld, pid_t pid)
{
	struct stat mine, theirs;
	char path[64];
	int err, nsfd;

	if (!ld->kill_link) {
		log_warnx("cannot end refused connections: no iter/tcp link (pins of an older "
			  "egressctl): the kernel ends them by their timeout, ~200 ms");
		return -ENOENT;
	}
	err = kill_in(ld, -1);
	if (pid <= 0)
		return err;
	/* a container's socket is in its own network namespace: there too */
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		return err; /* gone, and its sockets with it, or never ours to see */
	if (!fstat(nsfd, &theirs) && !stat("/proc/thread-self/ns/net", &mine) &&
	    (theirs.st_ino != mine.st_ino || theirs.st_dev != mine.st_dev))
		err = kill_in(ld, nsfd);
	close(nsfd);
	return err;
}

/* The kernel-verified path's maps: (addr, port) in egr_vdst, (addr, port,
 * name) in egr_vname, both for ttl_ns. */
int
loader_kv_add(struct loader *ld, const struct sockaddr *sa, const char *name, uint32_t flags,
	      uint64_t ttl_ns)
{
	struct egr_vname_key nk = {};
	struct egr_vname_val nv = {.flags = flags};
	struct egr_fast_val v = {};
	struct egr_fast_key k;
	struct timespec ts;
	int err = fast_key(sa, IPPROTO_TCP, &k);

	if (err)
		return err;
	if (strlen(name) >= sizeof(nk.name))
		return -ENAMETOOLONG;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	v.expires_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ttl_ns;
	nv.expires_ns = v.expires_ns;
	memcpy(nk.addr, k.addr, sizeof(nk.addr));
	nk.port = k.port;
	memcpy(nk.name, name, strlen(name));
	/* the name first: a connect that finds the address finds its name */
	if (bpf_map_update_elem(bpf_map__fd(ld->skel->maps.egr_vname), &nk, &nv, BPF_ANY))
		return -errno;
	if (bpf_map_update_elem(bpf_map__fd(ld->skel->maps.egr_vdst), &k, &v, BPF_ANY))
		return -errno;
	return 0;
}

static int
map_clear(int fd, size_t ksize)
{
	char k[sizeof(struct egr_vname_key)], next[sizeof(struct egr_vname_key)];
	int n = 0;

	if (ksize > sizeof(k))
		return -EINVAL;
	while (!bpf_map_get_next_key(fd, NULL, next)) {
		memcpy(k, next, ksize);
		if (bpf_map_delete_elem(fd, k))
			break;
		n++;
	}
	return n;
}

int
loader_kv_walk(struct loader *ld,
	       int (*fn)(void *arg, const struct sockaddr_storage *ss, const char *name,
			 uint32_t flags, uint64_t ttl_ns),
	       void *arg)
{
	int fd = bpf_map__fd(ld->skel->maps.egr_vname), n = 0;
	struct egr_vname_key k, next;
	struct egr_vname_val v;
	struct timespec ts;
	uint64_t now;
	void *prev = NULL;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		struct sockaddr_storage ss;

		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v) || v.expires_ns <= now)
			continue;
		k.name[sizeof(k.name) - 1] = 0;
		sockaddr_from_key(k.addr, k.port, &ss);
		n++;
		if (fn(arg, &ss, k.name, v.flags, v.expires_ns - now))
			break;
	}
	return n;
}

int
loader_kv_clear(struct loader *ld)
{
	int n = map_clear(bpf_map__fd(ld->skel->maps.egr_vdst), sizeof(struct egr_fast_key));

	map_clear(bpf_map__fd(ld->skel->maps.egr_vname), sizeof(struct egr_vname_key));
	return n;
}

/* The map (values a u8 1) holds exactly the n keys of ksize bytes at want:
 * each put, then what else it holds (found by a walk that deletes nothing,
 * at most max of them) deleted. 0 or the first -errno. */
static int
map_keep_only(int fd, const void *want, int n, size_t ksize, int max)
{
	char *gone = malloc(ksize * (size_t)max), k[32], next[32]; /* the largest key: 24 */
	int ngone = 0, err = 0;
	uint8_t one = 1;

	if (!gone || ksize > sizeof(k)) {
		free(gone);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, (const char *)want + (size_t)i * ksize, &one,
					BPF_ANY) &&
		    !err)
			err = -errno;
	for (const void *prev = NULL; ngone < max && !bpf_map_get_next_key(fd, prev, next);
	     prev = k) {
		bool kept = false;

		memcpy(k, next, ksize);
		for (int i = 0; i < n && !kept; i++)
			kept = !memcmp((const char *)want + (size_t)i * ksize, k, ksize);
		if (!kept)
			memcpy(gone + (size_t)ngone++ * ksize, k, ksize);
	}
	for (int i = 0; i < ngone; i++)
		if (bpf_map_delete_elem(fd, gone + (size_t)i * ksize) && !err)
			err = -errno;
	free(gone);
	return err;
}

int
loader_fast_nets_sync(struct loader *ld, const uint32_t *net, const uint8_t *len, int n)
{
	struct egr_net_key k[EGR_FAST_NET_MAX];

	if (n > EGR_FAST_NET_MAX)
		return -E2BIG;
	memset(k, 0, sizeof(k));
	for (int i = 0; i < n; i++) {
		k[i].prefixlen = 96 + len[i];
		k[i].addr[2] = htonl(0xffff);
		k[i].addr[3] = net[i];
	}
	return map_keep_only(bpf_map__fd(ld->skel->maps.egr_fast_net), k, n, sizeof(k[0]),
			     EGR_FAST_NET_MAX);
}

int
loader_hostaddr_sync(struct loader *ld, const struct egr_hostaddr_key *a, int n)
{
	return map_keep_only(bpf_map__fd(ld->skel->maps.egr_hostaddr), a, n, sizeof(a[0]),
			     EGR_HOSTADDR_MAX);
}

int
loader_peer_sync(struct loader *ld, const struct egr_peer_key *k, int n)
{
	if (n > EGR_PEER_MAX)
		return -E2BIG;
	return map_keep_only(bpf_map__fd(ld->skel->maps.egr_peer), k, n, sizeof(k[0]),
			     EGR_PEER_MAX);
}

int
loader_set_ports(struct loader *ld, const uint64_t *bits, bool enforce)
{
	static struct egr_ports v; /* 8 KiB: not on the stack; one loop thread */
	uint32_t k = 0;

	v.enforce = enforce;
	memcpy(v.bits, bits, sizeof(v.bits));
	return bpf_map_update_elem(bpf_map__fd(ld->skel->maps.egr_ports), &k, &v, BPF_ANY) ? -errno
											   : 0;
}

int
loader_counters(struct loader *ld, uint64_t *out)
{
	int fd = bpf_map__fd(ld->skel->maps.egr_stats), ncpu = libbpf_num_possible_cpus();
	uint64_t vals[512];

	memset(out, 0, sizeof(uint64_t) * EGR_C_MAX);
	if (ncpu <= 0 || ncpu > 512)
		return -EINVAL;
	for (uint32_t k = 0; k < EGR_C_MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			return -errno;
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	return 0;
}

int
loader_fast_count(struct loader *ld)
{
	int fd = bpf_map__fd(ld->skel->maps.egr_fast), n = 0;
	struct egr_fast_key k, next;
	const struct egr_fast_key *prev = NULL;

	while (n < EGR_FAST_CAPACITY && !bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		n++;
	}
	return n;
}
