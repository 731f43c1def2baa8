// SPDX-License-Identifier: Apache-2.0
/* Containers in a daemon target (see containers.h): a cgroup id is opened
 * as a file handle of the cgroup2 mount (kernfs handles are the cgroup
 * id, FILEID_KERNFS; open_by_handle_at needs CAP_DAC_READ_SEARCH), its
 * path read back from /proc/self/fd, the container id read off the path.
 * Names are kept in a small direct-mapped cache: cgroup ids are never
 * reused, so an entry is never wrong, only evicted. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "daemon/containers.h"

#define CTR_CACHE     256
#define FILEID_KERNFS 0xfe
#define CTR_ID_LEN    64

struct ctr_entry {
	uint64_t cgid; /* 0: empty */
	char path[256];
	char id[CTR_ID_LEN + 1];
	bool gone; /* no such cgroup when looked up */
};

struct ctr_names {
	int mnt_fd;
	size_t mntlen;
	char mnt[PATH_MAX];
	struct ctr_entry cache[CTR_CACHE];
};

static bool
is_hex_id(const char *s, size_t n)
{
	if (n != CTR_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return true;
}

/* One path component c (n bytes): the id it names, or NULL. */
static const char *
component_id(const char *c, size_t n)
{
	/* libpod-payload-: podman --cgroups=split, under the caller's cgroup */
	static const char *const prefixes[] = {"docker-", "libpod-payload-", "libpod-", "crio-",
					       "cri-containerd-"};
	static const char scope[] = ".scope";

	if (n >= sizeof(scope) - 1 &&
	    !memcmp(c + n - (sizeof(scope) - 1), scope, sizeof(scope) - 1))
		n -= sizeof(scope) - 1;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);

		if (n > pl && !memcmp(c, prefixes[i], pl)) {
			c += pl;
			n -= pl;
			break;
		}
	}
	return is_hex_id(c, n) ? c : NULL;
}

bool
ctr_id_of_path(const char *path, char *id, size_t idlen)
{
	size_t end = strlen(path);

	if (idlen)
		id[0] = 0;
	while (end > 0) {
		size_t start = end;
		const char *c;

		while (start > 0 && path[start - 1] != '/')
			start--;
		c = component_id(path + start, end - start);
		if (c && idlen > CTR_ID_LEN) {
			for (size_t i = 0; i < CTR_ID_LEN; i++)
				id[i] = (char)(c[i] >= 'A' && c[i] <= 'F' ? c[i] - 'A' + 'a'
									  : c[i]);
			id[CTR_ID_LEN] = 0;
			return true;
		}
		end = start ? start - 1 : 0;
	}
	return false;
}

int
ctr_parse_addr(const char *s, uint32_t *ip, char *err, size_t errlen)
{
	struct in_addr a;
	uint32_t h;

	if (inet_pton(AF_INET, s, &a) != 1) {
		snprintf(err, errlen, "expected an IPv4 address of this host (a bridge's gateway)");
		return -EINVAL;
	}
	h = ntohl(a.s_addr);
	if (!h || (h >> 24) == 127 || (h >> 28) == 14 || h == 0xffffffffu) {
		snprintf(err, errlen,
			 "%s cannot be where containers reach egressctl: an address of this host "
			 "on their bridge (its gateway) is",
			 s);
		return -EINVAL;
	}
	*ip = a.s_addr;
	return 0;
}

static bool
addr_is_local(uint32_t ip)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !found; i = i->ifa_next)
		found = i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == ip;
	freeifaddrs(ifa);
	return found;
}

int
ctr_addr_ensure(uint32_t ip, char *err, size_t errlen)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
		char attrs[2 * RTA_SPACE(4)];
	} req = {0};
	struct {
		struct nlmsghdr nh;
		struct nlmsgerr e;
	} ack;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct rtattr *rta;
	unsigned int lo;
	ssize_t n;
	int fd, e = 0;

	if (addr_is_local(ip))
		return 0;
	lo = if_nametoindex("lo");
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (!lo || fd < 0) {
		e = errno;
		goto out;
	}
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.ifa));
	req.nh.nlmsg_type = RTM_NEWADDR;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	req.ifa.ifa_family = AF_INET;
	req.ifa.ifa_prefixlen = 32;
	req.ifa.ifa_scope = RT_SCOPE_UNIVERSE;
	req.ifa.ifa_index = lo;
	for (int k = 0; k < 2; k++) {
		rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
		rta->rta_type = k ? IFA_ADDRESS : IFA_LOCAL;
		rta->rta_len = RTA_LENGTH(4);
		memcpy(RTA_DATA(rta), &ip, 4);
		req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_LENGTH(4);
	}
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		e = errno;
		goto out;
	}
	n = recv(fd, &ack, sizeof(ack), 0);
	if (n < 0)
		e = errno;
	else if ((size_t)n < sizeof(ack) || ack.nh.nlmsg_type != NLMSG_ERROR)
		e = EPROTO;
	else if (ack.e.error && ack.e.error != -EEXIST)
		e = -ack.e.error;
out:
	if (fd >= 0)
		close(fd);
	if (e) {
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &ip, a, sizeof(a));
		snprintf(err, errlen,
			 "%s is no address of this host, and adding it to lo failed: %s", a,
			 strerror(e));
		return -e;
	}
	return 1;
}

struct ctr_names *
ctr_names_new(const char *mnt)
{
	struct ctr_names *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->mntlen = strlen(mnt);
	if (n->mntlen >= sizeof(n->mnt)) {
		free(n);
		errno = ENAMETOOLONG;
		return NULL;
	}
	memcpy(n->mnt, mnt, n->mntlen + 1);
	n->mnt_fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (n->mnt_fd < 0) {
		free(n);
		return NULL;
	}
	return n;
}

void
ctr_names_free(struct ctr_names *n)
{
	if (!n)
		return;
	close(n->mnt_fd);
	free(n);
}

/* The path of cgroup cgid below the mount, or -errno. */
static int
path_of(struct ctr_names *n, uint64_t cgid, char *out, size_t outlen)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + sizeof(uint64_t)];
	} h;
	char link[64], target[PATH_MAX];
	ssize_t len;
	int fd;

	h.fh.handle_bytes = sizeof(uint64_t);
	h.fh.handle_type = FILEID_KERNFS;
	memcpy(h.fh.f_handle, &cgid, sizeof(cgid));
	fd = open_by_handle_at(n->mnt_fd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, target, sizeof(target) - 1);
	close(fd);
	if (len < 0)
		return -errno;
	target[len] = 0;
	if (strncmp(target, n->mnt, n->mntlen) || (target[n->mntlen] && target[n->mntlen] != '/'))
		return -EXDEV; /* not under the mount as this process sees it */
	snprintf(out, outlen, "%s", target[n->mntlen] ? target + n->mntlen : "/");
	return 0;
}

void
ctr_names_lookup(void *names, uint64_t cgid, const char **path, const char **id)
{
	struct ctr_names *n = names;
	struct ctr_entry *e = &n->cache[cgid % CTR_CACHE];

	*path = NULL;
	*id = NULL;
	if (!cgid)
		return;
	if (e->cgid != cgid) {
		e->cgid = cgid;
		e->gone = path_of(n, cgid, e->path, sizeof(e->path)) != 0;
		if (e->gone)
			e->path[0] = 0;
		ctr_id_of_path(e->path, e->id, sizeof(e->id));
	}
	if (e->gone)
		return;
	*path = e->path;
	*id = e->id[0] ? e->id : NULL;
}
