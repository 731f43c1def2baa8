// SPDX-License-Identifier: Apache-2.0
/* dockerd's socket taken over (see dockerapi.h): dockerd's own opened
 * first (a descriptor, reached as /proc/self/fd/N), egressctl's socket
 * made with the owner, group and mode of dockerd's and bind-mounted over
 * it, so that every way to name PATH (/var/run/docker.sock, a symbolic
 * link, a relative name) leads to egressctl's; the listener; dockerd
 * asked what it is at the start; at the end the mount removed, or left
 * (fail closed).
 *
 * A daemon killed leaves its mount, over a socket nobody serves. The next
 * one finds dockerd's socket below it (open_tree(2) of the directory's
 * mount alone, without the mounts over it) and mounts its own on top:
 * there is no moment when PATH is dockerd's. Mounts of egressctl's are
 * told by their root (mountinfo): a file DK_SOCK_PREFIX<pid>.sock, one
 * per daemon (the kernel mounts on no file that was unlinked: an earlier
 * daemon's stays until a mount of the next covers it). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <event2/listener.h>

#include "dockerapi/conn.h"
#include "dockerapi/core.h"
#include "dockerapi/json.h"
#include "kernel/cgroup.h"
#include "lib/log.h"
#include "parse/http_resp.h"

#define DK_SOCK_PREFIX "egressctl-docker-"
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif

static int open_real(struct dockerapi *d, bool say, char *err, size_t errlen);
static pid_t server_pid(const char *sock, const char *path, pid_t *peer);

int
dk_dial(struct dockerapi *d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->real_name);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static int
write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* GET target of the API server at sock (HTTP/1.0, 10 s at most): see dk_get() */
static int
get_at(const char *sock, const char *target, size_t max, int *status, char **body, size_t *len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {10, 0};
	struct http_response r;
	size_t got = 0, cap = max + DK_RESP_HEAD + 1, used;
	char req[512], *buf;
	int fd, err = 0;
	ssize_t n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	buf = malloc(cap);
	if (fd < 0 || !buf) {
		err = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: docker\r\n\r\n", target);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (err = write_all(fd, req, strlen(req)))) {
		err = err ? err : -errno;
		goto out;
	}
	while (got + 1 < cap && (n = read(fd, buf + got, cap - 1 - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto out;
		}
		got += (size_t)n;
	}
	if (got + 1 >= cap || http_parse_response(buf, got, got, false, &r, &used) != PARSE_DONE) {
		err = -EPROTO;
		goto out;
	}
	*status = r.status;
	memmove(buf, buf + used, got - used);
	buf[got - used] = 0;
	*len = got - used;
	*body = buf;
	buf = NULL;
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return err;
}

int
dk_get(struct dockerapi *d, const char *target, size_t max, int *status, char **body, size_t *len)
{
	return get_at(d->real_name, target, max, status, body, len);
}

/* Is pid a systemd (its comm)? */
static bool
is_systemd(pid_t pid)
{
	char p[64], comm[32] = "";
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
	f = fopen(p, "r");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	return !strcmp(comm, "systemd\n");
}

/* The process, not a systemd, that holds the listening unix socket bound
 * at path (in /proc/PID/net/unix of pid, which made it, or the daemon's
 * own if pid is gone; then every process's descriptors): a
 * socket-activated server's. -ESRCH if none. */
static pid_t
holder_pid(const char *path, pid_t pid)
{
	char line[PATH_MAX + 128], want[PATH_MAX], got[PATH_MAX], link[64];
	unsigned long inode = 0;
	FILE *f;
	glob_t g = {0};
	pid_t found = -ESRCH;

	snprintf(line, sizeof(line), "/proc/%d/net/unix", (int)pid);
	f = fopen(line, "r");
	if (!f)
		f = fopen("/proc/self/net/unix", "r");
	if (!f || !realpath(path, want)) {
		if (f)
			fclose(f);
		return -ESRCH;
	}
	while (!inode && fgets(line, sizeof(line), f)) {
		unsigned long flags, ino;
		char p[PATH_MAX];

		/* Num RefCount Protocol Flags Type St Inode Path; 0x10000 listening */
		if (sscanf(line, "%*s %*s %*s %lx %*s %*s %lu %4095s", &flags, &ino, p) == 3 &&
		    (flags & 0x10000) && realpath(p, got) && !strcmp(got, want))
			inode = ino;
	}
	fclose(f);
	if (!inode)
		return -ESRCH;
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	if (glob("/proc/[0-9]*/fd/*", GLOB_NOSORT, NULL, &g))
		return -ESRCH;
	for (size_t i = 0; i < g.gl_pathc && found < 0; i++) {
		ssize_t n = readlink(g.gl_pathv[i], link, sizeof(link) - 1);
		pid_t p = (pid_t)atoi(g.gl_pathv[i] + 6);

		if (n <= 0 || p == 1)
			continue;
		link[n] = 0;
		if (!strcmp(link, want) && !is_systemd(p))
			found = p;
	}
	globfree(&g);
	return found;
}

/* The server's process: the peer of a connection to sock (PATH reached),
 * or where systemd made PATH's socket (socket activation: PID 1, a
 * systemd, or a helper of its already gone) the process that holds it
 * besides. -errno (-ESRCH: none). */
static pid_t
server_pid(const char *sock, const char *path, pid_t *peer)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ucred cr = {0};
	socklen_t crlen = sizeof(cr);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) || cr.pid <= 0) {
		rc = errno ? -errno : -ESRCH;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	close(fd);
	if (peer)
		*peer = cr.pid;
	if (cr.pid == 1 || is_systemd(cr.pid) || kill(cr.pid, 0))
		return holder_pid(path, cr.pid);
	return cr.pid;
}

/* dockerd's own socket at path, also below a mount an egressctl left on
 * it: a dockerapi with real_name set (free: close_server), or NULL with
 * *rc and err set. */
static struct dockerapi *
open_server(const char *path, int *rc, char *err, size_t errlen)
{
	struct dockerapi *d = calloc(1, sizeof(*d));

	if (!d) {
		*rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->real_fd = -1;
	if (!realpath(path, d->path)) {
		*rc = -errno;
		snprintf(err, errlen, "--docker %s: %s", path, strerror(-*rc));
		free(d);
		return NULL;
	}
	*rc = open_real(d, false, err, errlen);
	if (*rc) {
		free(d);
		return NULL;
	}
	return d;
}

static void
close_server(struct dockerapi *d)
{
	close(d->real_fd);
	free(d);
}

int
dockerapi_server(const char *path, pid_t *pid, char (*nets)[64], int max, int *n, char *err,
		 size_t errlen)
{
	char *body = NULL, why[160];
	size_t len = 0;
	struct dj *doc;
	struct dockerapi *d;
	int status = 0, rc;

	*n = 0;
	d = open_server(path, &rc, err, errlen);
	if (!d)
		return rc;
	*pid = server_pid(d->real_name, path, NULL);
	if (*pid < 0) {
		rc = *pid;
		if (rc == -ESRCH)
			snprintf(err, errlen,
				 "%s was made by systemd (socket activation) and no other process "
				 "holds it: dockerd's own process cannot be told",
				 path);
		else
			snprintf(err, errlen, "dockerd does not answer at %s: %s", path,
				 strerror(-rc));
		goto out;
	}
	rc = get_at(d->real_name, "/networks", 4u << 20, &status, &body, &len);
	if (rc || status != 200) {
		free(body);
		snprintf(err, errlen, "dockerd's networks (GET /networks at %s): %s", path,
			 rc ? strerror(-rc) : "not 200");
		rc = rc ? rc : -EPROTO;
		goto out;
	}
	doc = dj_parse(body, len, why, sizeof(why));
	free(body);
	if (!doc || !dj_is_array(doc)) {
		snprintf(err, errlen, "dockerd's networks: %s", doc ? "not a list" : why);
		dj_free(doc);
		rc = -EPROTO;
		goto out;
	}
	for (int i = 0; i < dj_count(doc); i++) {
		const struct dj *cfg = dj_get(dj_get(dj_at(doc, i), "IPAM"), "Config");

		for (int k = 0; k < dj_count(cfg); k++) {
			const char *s = dj_str(dj_get(dj_at(cfg, k), "Subnet")), *slash;
			char a[INET6_ADDRSTRLEN];
			struct in6_addr x;

			slash = s ? strchr(s, '/') : NULL;
			if (!slash || (size_t)(slash - s) >= sizeof(a))
				continue;
			memcpy(a, s, (size_t)(slash - s));
			a[slash - s] = 0;
			if (*n == max) {
				snprintf(err, errlen, "dockerd has over %d subnets", max);
				dj_free(doc);
				rc = -E2BIG;
				goto out;
			}
			if (inet_pton(AF_INET6, a, &x) == 1)
				snprintf(nets[*n], 64, "[%s]%s", a, slash);
			else
				snprintf(nets[*n], 64, "%s", s);
			(*n)++;
		}
	}
	dj_free(doc);
	rc = 0;
out:
	close_server(d);
	return rc;
}

/* GET target (at most max bytes) as JSON: the document, or NULL with err
 * set; *status is the answer's (0 without one), which the caller checks. */
static struct dj *
get_json(struct dockerapi *d, const char *target, size_t max, int *status, char *err, size_t errlen)
{
	char *body = NULL, why[160];
	size_t len = 0;
	struct dj *doc;
	int rc;

	*status = 0;
	rc = dk_get(d, target, max, status, &body, &len);
	if (rc) {
		snprintf(err, errlen, "dockerd does not answer at %s (%s): %s", d->path, target,
			 strerror(-rc));
		return NULL;
	}
	doc = dj_parse(body, len, why, sizeof(why));
	free(body);
	if (!doc)
		snprintf(err, errlen, "dockerd's answer to %s: %s", target, why);
	return doc;
}

/* The TCP ports of NetworkSettings.Ports or HostConfig.PortBindings
 * ({"80/tcp": [{"HostIp": "0.0.0.0", "HostPort": "8080"}], ...}) published
 * on loopback or every address, added to out[0..*n) (at most max). */
static void
published_ports(const struct dj *ports, unsigned short *out, int max, int *n)
{
	for (int i = 0; i < dj_count(ports); i++) {
		const char *k = dj_key_at(ports, i);
		const struct dj *binds = k ? dj_get(ports, k) : NULL;
		size_t kl = k ? strlen(k) : 0;

		if (kl < 4 || strcmp(k + kl - 4, "/tcp"))
			continue;
		for (int b = 0; b < dj_count(binds); b++) {
			const char *ip = dj_str(dj_get(dj_at(binds, b), "HostIp"));
			const char *hp = dj_str(dj_get(dj_at(binds, b), "HostPort"));
			char *end;
			unsigned long p = hp ? strtoul(hp, &end, 10) : 0;
			bool dup = false;

			if (!hp || *end || !p || p > 65535 ||
			    (ip && ip[0] && strcmp(ip, "0.0.0.0") && strcmp(ip, "::") &&
			     strcmp(ip, "127.0.0.1")))
				continue;
			for (int j = 0; j < *n; j++)
				dup |= out[j] == p;
			if (!dup && *n < max)
				out[(*n)++] = (unsigned short)p;
		}
	}
}

/* A name n of a container's on a network, lower-cased into c's list once:
 * a host name's characters only, as docker's DNS answers them. */
static void
net_name(struct dockerapi_net *n, const char *name)
{
	char low[64];
	size_t len = name ? strlen(name) : 0;

	if (!len || len >= sizeof(low) || n->nnames == DOCKERAPI_NET_NAMES ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
		    len)
		return;
	for (size_t i = 0; i <= len; i++)
		low[i] = (char)tolower((unsigned char)name[i]);
	for (int i = 0; i < n->nnames; i++)
		if (!strcmp(n->names[i], low))
			return;
	memcpy(n->names[n->nnames++], low, len + 1);
}

/* Is network id one whose containers reach each other straight
 * (dockerapi_net.peers)? Asked of dockerd. */
static bool
peers_network(struct dockerapi *d, const char *id)
{
	char target[96], err[256];
	int status = 0;
	struct dj *doc;
	bool ok;

	if (strlen(id) != 64 || strspn(id, "0123456789abcdef") != 64)
		return false;
	snprintf(target, sizeof(target), "/networks/%s", id);
	doc = get_json(d, target, 1u << 20, &status, err, sizeof(err));
	ok = doc && status == 200 && dj_str(dj_get(doc, "Driver")) &&
	     !strcmp(dj_str(dj_get(doc, "Driver")), "bridge") &&
	     dj_is_null(dj_get(dj_get(doc, "Options"), "com.docker.network.bridge.name")) &&
	     !(dj_str(dj_get(doc, "Name")) && !strcmp(dj_str(dj_get(doc, "Name")), "bridge"));
	dj_free(doc);
	/* and the bridge is here under the name docker gives one it makes:
	 * nobody without NET_ADMIN here could have made br-<its id> before
	 * (a runtime that names its bridges otherwise, podman's, gets none) */
	snprintf(target, sizeof(target), "br-%.12s", id);
	return ok && if_nametoindex(target) != 0;
}

/* The container's networks (NetworkSettings.Networks) into c. */
static void
ctr_networks(struct dockerapi *d, const struct dj *doc, struct dockerapi_ctr *c)
{
	const struct dj *nets = dj_get(dj_get(doc, "NetworkSettings"), "Networks");
	const char *cname = dj_str(dj_get(doc, "Name"));

	for (int i = 0; i < dj_count(nets) && c->nnets < DOCKERAPI_NETS; i++) {
		const char *k = dj_key_at(nets, i);
		const struct dj *e = k ? dj_get(nets, k) : NULL;
		const char *nid = dj_str(dj_get(e, "NetworkID")),
			   *a4 = dj_str(dj_get(e, "IPAddress")),
			   *a6 = dj_str(dj_get(e, "GlobalIPv6Address"));
		struct dockerapi_net *n = &c->nets[c->nnets];

		if (!nid || strlen(nid) != 64)
			continue;
		memset(n, 0, sizeof(*n));
		memcpy(n->id, nid, 65);
		n->has4 = a4 && inet_pton(AF_INET, a4, n->ip4) == 1;
		n->has6 = a6 && inet_pton(AF_INET6, a6, n->ip6) == 1;
		if (!n->has4 && !n->has6)
			continue;
		net_name(n, cname ? cname + (cname[0] == '/') : NULL);
		for (int a = 0; a < dj_count(dj_get(e, "Aliases")); a++)
			net_name(n, dj_str(dj_at(dj_get(e, "Aliases"), a)));
		for (int a = 0; a < dj_count(dj_get(e, "DNSNames")); a++)
			net_name(n, dj_str(dj_at(dj_get(e, "DNSNames"), a)));
		n->peers = peers_network(d, nid);
		c->nnets++;
	}
}

int
dockerapi_inspect(struct dockerapi *d, const char *name, bool nets, struct dockerapi_ctr *c)
{
	char target[DK_ID_MAX + 32], err[256];
	int status = 0;
	struct dj *doc;
	const char *full;
	long long p = 0;

	memset(c, 0, sizeof(*c));
	/* an id, a prefix or a name: [a-zA-Z0-9_.-], nothing to escape */
	if (!name[0] ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") != strlen(name) ||
	    (size_t)snprintf(target, sizeof(target), "/containers/%s/json", name) >= sizeof(target))
		return -ENOENT;
	doc = get_json(d, target, 4u << 20, &status, err, sizeof(err));
	if (!doc || status != 200) {
		dj_free(doc);
		return status == 404 ? -ENOENT : -EPROTO;
	}
	full = dj_str(dj_get(doc, "Id"));
	if (!full || strlen(full) != 64 || !dj_is_true(dj_get(dj_get(doc, "State"), "Running")) ||
	    !dj_int(dj_get(dj_get(doc, "State"), "Pid"), &p) || p <= 0 || p > INT32_MAX) {
		dj_free(doc);
		return -ENOENT;
	}
	memcpy(c->id, full, 65);
	c->pid = (pid_t)p;
	/* what dockerd serves, and what was asked (without its userland proxy
	 * or iptables nothing is served, and Ports says so) */
	published_ports(dj_get(dj_get(doc, "NetworkSettings"), "Ports"), c->ports, DOCKERAPI_PORTS,
			&c->nports);
	published_ports(dj_get(dj_get(doc, "HostConfig"), "PortBindings"), c->ports,
			DOCKERAPI_PORTS, &c->nports);
	if (nets)
		ctr_networks(d, doc, c);
	dj_free(doc);
	return 0;
}

int
dockerapi_filter_check(const char *filter, char *err, size_t errlen)
{
	if ((!strncmp(filter, "network=", 8) && filter[8]) ||
	    (!strncmp(filter, "label=", 6) && filter[6] && filter[6] != '='))
		return 0;
	snprintf(err, errlen, "'%s': expected network=GLOB, label=KEY or label=KEY=VALUE", filter);
	return -EINVAL;
}

int
dockerapi_running(const char *path, const char *filter, struct dockerapi_svc *out, int max, int *n,
		  char *err, size_t errlen)
{
	struct dockerapi *d;
	struct dj *doc;
	int status, rc = dockerapi_filter_check(filter, err, errlen);

	*n = 0;
	if (rc)
		return rc;
	d = open_server(path, &rc, err, errlen);
	if (!d)
		return rc;
	doc = get_json(d, "/containers/json", 16u << 20, &status, err, errlen);
	if (!doc || status != 200 || !dj_is_array(doc)) {
		if (doc)
			snprintf(err, errlen, "GET /containers/json at %s: not a list", path);
		dj_free(doc);
		close_server(d);
		return -EPROTO;
	}
	for (int i = 0; i < dj_count(doc) && !rc; i++) {
		const struct dj *c = dj_at(doc, i);
		const char *id = dj_str(dj_get(c, "Id"));

		if (!id || strlen(id) != 64 || !dk_filter_selects(filter, c))
			continue;
		if (*n == max) {
			snprintf(err, errlen, "over %d running containers match %s", max, filter);
			rc = -E2BIG;
			break;
		}
		struct dockerapi_svc *sv = &out[*n];
		const char *name = dj_str(dj_at(dj_get(c, "Names"), 0));

		memset(sv, 0, sizeof(*sv));
		snprintf(sv->name, sizeof(sv->name), "%s", name ? name + (name[0] == '/') : id);
		rc = dockerapi_inspect(d, id, false, &sv->c);
		if (!rc)
			(*n)++;
		else if (rc == -ENOENT)
			rc = 0; /* it stopped meanwhile: nothing to confine */
		else
			snprintf(err, errlen, "container %s (%.12s): dockerd's answer unreadable",
				 sv->name, id);
	}
	dj_free(doc);
	close_server(d);
	return rc;
}

int
dockerapi_bridge_gateway(struct dockerapi *d, uint32_t *ip4)
{
	char err[256];
	int status = 0;
	struct dj *doc = get_json(d, "/networks/bridge", 1u << 20, &status, err, sizeof(err));
	const struct dj *cfg;
	int rc = -ENOENT;

	if (!doc)
		return status == 404 ? -ENOENT : -EPROTO;
	cfg = dj_get(dj_get(doc, "IPAM"), "Config");
	for (int i = 0; status == 200 && i < dj_count(cfg); i++) {
		const char *gw = dj_str(dj_get(dj_at(cfg, i), "Gateway"));
		struct in_addr a;

		if (gw && inet_pton(AF_INET, gw, &a) == 1) {
			*ip4 = a.s_addr;
			rc = 0;
			break;
		}
	}
	dj_free(doc);
	return rc;
}

const char *
dockerapi_path(const struct dockerapi *d)
{
	return d->path;
}

int
dk_host_path(void *arg, const char *path, bool ro, char *why, size_t whylen)
{
	struct dockerapi *d = arg;
	char real[PATH_MAX];
	int err = dk_resolve(path, real, sizeof(real));
	struct stat st;

	if (err) {
		snprintf(why, whylen, "%s cannot be resolved (%s)", path, strerror(-err));
		return -EPERM;
	}
	/* PATH itself: dockerd mounts what is on top of it, egressctl's
	 * socket (a container of the job talks to docker as the job does;
	 * docker's own container actions bind it) -- if dockerd sees the
	 * mount, in this mount namespace */
	if (!strcmp(real, d->path) && d->same_mntns)
		return 1;
	if (!stat(real, &st) && S_ISSOCK(st.st_mode)) {
		snprintf(why, whylen, "%s is a unix socket", real);
		return -EPERM;
	}
	return dk_paths_judge(&d->paths, real, ro, why, whylen);
}

int
dk_idmap(void *arg, const char *path, unsigned int uid, unsigned int gid, uint64_t job, char *out,
	 size_t outlen, char *why, size_t whylen)
{
	struct dockerapi *d = arg;
	char real[PATH_MAX], fdname[32], now[PATH_MAX];
	int err = dk_resolve(path, real, sizeof(real)), fd;
	ssize_t n;

	if (err) {
		snprintf(why, whylen, "it cannot be resolved (%s)", strerror(-err));
		return err;
	}
	fd = open(real, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot open it (%s)", strerror(-err));
		return err;
	}
	/* judged again as what was opened: a link changed since is seen */
	snprintf(fdname, sizeof(fdname), "/proc/self/fd/%d", fd);
	n = readlink(fdname, now, sizeof(now) - 1);
	if (n < 0 || (size_t)n >= sizeof(now) - 1) {
		err = n < 0 ? -errno : -ENAMETOOLONG;
		snprintf(why, whylen, "cannot tell what was opened (%s)", strerror(-err));
	} else {
		now[n] = 0;
		err = dk_paths_judge(&d->paths, now, false, why, whylen);
	}
	if (!err)
		err = dk_idmap_make(&d->idmaps, fd, uid, gid, job, out, outlen, why, whylen);
	close(fd);
	return err;
}

/* Is root (a mount's, in mountinfo) a socket of egressctl's? */
static int
count_ours(const char *root, void *arg)
{
	size_t n = strlen(root), del = strlen("//deleted");
	const char *base = strrchr(root, '/');
	bool *top = arg;

	if (n >= del && !strcmp(root + n - del, "//deleted"))
		n -= del;
	*top = base && !strncmp(base + 1, DK_SOCK_PREFIX, strlen(DK_SOCK_PREFIX)) && n > 5 &&
	       !strncmp(root + n - 5, ".sock", 5);
	return 0;
}

/* Is the mount on top of PATH one of egressctl's sockets? 1, 0, -errno */
static int
covered_by_ours(const char *path)
{
	char *mi = NULL;
	bool top = false;
	int n, err = cgroup_read_mountinfo(&mi);

	if (err)
		return err;
	n = cgroup_foreach_mount_at(mi, path, count_ours, &top);
	free(mi);
	return n < 0 ? n : n > 0 && top;
}

/* dockerd's socket: PATH itself, or the file below egressctl's mounts */
static int
open_real(struct dockerapi *d, bool say, char *err, size_t errlen)
{
	char dir[PATH_MAX], base[PATH_MAX];
	struct stat st;
	int ours = covered_by_ours(d->path), tfd;

	if (ours < 0) {
		snprintf(err, errlen, "cannot read the mount table: %s", strerror(-ours));
		return ours;
	}
	if (!ours) {
		d->real_fd = open(d->path, O_PATH | O_CLOEXEC);
	} else {
		snprintf(dir, sizeof(dir), "%s", d->path);
		snprintf(base, sizeof(base), "%s", d->path);
		tfd = (int)syscall(SYS_open_tree, AT_FDCWD, dirname(dir),
				   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		d->real_fd =
			tfd < 0 ? -1 : openat(tfd, basename(base), O_PATH | O_CLOEXEC | O_NOFOLLOW);
		if (tfd >= 0)
			close(tfd);
		if (say)
			log_warnx("docker: %s is covered by the socket of an egressctl that did "
				  "not stop: dockerd's is below it, and egressctl's goes on top",
				  d->path);
	}
	if (d->real_fd < 0 || fstat(d->real_fd, &st) || !S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s: %s", d->path,
			 d->real_fd < 0 ? strerror(errno) : "not a unix socket");
		return -EINVAL;
	}
	snprintf(d->real_name, sizeof(d->real_name), "/proc/self/fd/%d", d->real_fd);
	return 0;
}

/* dockerd's process (server_pid()), else the socket's peer (systemd for
 * docker.socket, whose mount and cgroup namespaces are the host's), or 0
 * when it cannot be told. */
static pid_t
listener_pid(struct dockerapi *d)
{
	pid_t peer = 0, pid = server_pid(d->real_name, d->path, &peer);

	return pid > 0 ? pid : peer > 0 && !kill(peer, 0) ? peer : 0;
}

/* Is process pid in our namespace of kind ns ("mnt", "cgroup")? 1, 0, or
 * -1 when it cannot be told. */
static int
same_ns(pid_t pid, const char *ns)
{
	char p[64], theirs[64] = "", ours[64] = "";
	ssize_t n;

	if (pid <= 0)
		return -1;
	snprintf(p, sizeof(p), "/proc/%d/ns/%s", (int)pid, ns);
	n = readlink(p, theirs, sizeof(theirs) - 1);
	theirs[n > 0 ? n : 0] = 0;
	snprintf(p, sizeof(p), "/proc/self/ns/%s", ns);
	n = readlink(p, ours, sizeof(ours) - 1);
	ours[n > 0 ? n : 0] = 0;
	if (!ours[0] || !theirs[0])
		return -1;
	return !strcmp(ours, theirs);
}

/* Does dockerd resolve a bind's source in our mount namespace, where PATH
 * is egressctl's socket? Asked of the process that listens on its socket. */
static bool
same_mntns(struct dockerapi *d, pid_t pid)
{
	bool same = same_ns(pid, "mnt") == 1;

	if (!same)
		log_warnx(
			"docker: dockerd is in another mount namespace (or cannot be told): a bind "
			"of %s into a job's container is refused (it would be dockerd's own socket "
			"there)",
			d->path);
	return same;
}

static int
last_root(const char *root, void *arg)
{
	snprintf(arg, PATH_MAX, "%s", root);
	return 0;
}

/* With systemd's driver, where systemd's slices begin: the root of the
 * cgroup2 mount in dockerd's mount namespace, as our cgroup namespace
 * sees it ("/" on a host; below it where dockerd and its systemd have a
 * cgroup namespace of their own). A root that is the mount's own in
 * another cgroup namespace than ours, or another in ours, is not trusted
 * (a slice named from the wrong root would be made outside the job's
 * cgroup): d->sd_known tells whether it was found and agrees. */
static void
find_sd_root(struct dockerapi *d, pid_t pid)
{
	char mnt[PATH_MAX], *mi = NULL;
	int err = pid > 0 ? cgroup_read_mountinfo_of(pid, &mi) : -ESRCH, same;

	if (!err)
		err = cgroup_find_mount_in(mi, mnt, sizeof(mnt));
	if (!err && cgroup_foreach_mount_at(mi, mnt, last_root, d->sd_root) <= 0)
		err = -ENOENT;
	free(mi);
	same = same_ns(pid, "cgroup");
	if (!err && (same < 0 || same != !strcmp(d->sd_root, "/")))
		err = -EXDEV;
	d->sd_known = !err;
	if (err == -EXDEV)
		log_warnx("docker: dockerd's cgroup driver is systemd, and the root of its cgroup2 "
			  "mount (%s) disagrees with its cgroup namespace (%s): the jobs' docker "
			  "run and docker build will be refused",
			  d->sd_root,
			  same < 0 ? "unknown"
			  : same   ? "the daemon's"
				   : "another than the daemon's");
	else if (err)
		log_warnx("docker: dockerd's cgroup driver is systemd and its cgroup2 mount "
			  "cannot be read (%s): the jobs' docker run and docker build will be "
			  "refused",
			  strerror(-err));
}

/* What dockerd is: its cgroup driver, its root directory. */
static int
ask_info(struct dockerapi *d, char *err, size_t errlen)
{
	int status = 0;
	struct dj *doc = get_json(d, "/info", 1u << 20, &status, err, errlen);
	const char *drv, *root;
	pid_t pid;

	if (!doc)
		return -EPROTO;
	drv = dj_str(dj_get(doc, "CgroupDriver"));
	root = dj_str(dj_get(doc, "DockerRootDir"));
	if (status != 200 || !drv || !root) {
		snprintf(err, errlen,
			 "dockerd at %s does not say its cgroup driver (GET /info: %d)", d->path,
			 status);
		dj_free(doc);
		return -EPROTO;
	}
	snprintf(d->driver, sizeof(d->driver), "%s", drv);
	snprintf(d->root_dir, sizeof(d->root_dir), "%s", root);
	pid = listener_pid(d);
	d->same_mntns = same_mntns(d, pid);
	dj_free(doc);
	if (!strcmp(d->driver, "systemd"))
		find_sd_root(d, pid);
	else if (strcmp(d->driver, "cgroupfs"))
		log_warnx(
			"docker: dockerd's cgroup driver is %s, which cannot put containers under "
			"a job's cgroup: the jobs' docker run and docker build will be refused",
			d->driver);
	return 0;
}

bool
dk_job_parent(const struct dockerapi *d, const char *cgroup, char *out, size_t outlen)
{
	bool place = false;

	if (!strcmp(d->driver, "cgroupfs"))
		place = true;
	else if (!strcmp(d->driver, "systemd") && d->sd_known)
		place = !dk_slice_of(cgroup, d->sd_root, out, outlen);
	if (!place || !strcmp(d->driver, "cgroupfs"))
		snprintf(out, outlen, "%s", cgroup);
	return place;
}

/* egressctl's socket, as dockerd's (owner, group, mode), listening */
static int
make_own(struct dockerapi *d, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/" DK_SOCK_PREFIX "%d.sock",
			     d->o.own, (int)getpid()) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: too long for a unix socket", d->o.own);
		return -ENAMETOOLONG;
	}
	snprintf(d->own, sizeof(d->own), "%s", sa.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || fstat(d->real_fd, &st) || (unlink(d->own) && errno != ENOENT) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chown(d->own, st.st_uid, st.st_gid) ||
	    chmod(d->own, st.st_mode & 07777) || listen(fd, 128)) {
		snprintf(err, errlen, "cannot make %s: %s", d->own, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	return fd;
}

/* The sockets of earlier daemons in the directory: under ours now. */
static void
forget_earlier(struct dockerapi *d)
{
	char pat[PATH_MAX];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/" DK_SOCK_PREFIX "*.sock", d->o.own);
	if (glob(pat, 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		if (strcmp(g.gl_pathv[i], d->own))
			unlink(g.gl_pathv[i]);
	globfree(&g);
}

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
	(void)l;
	(void)sa;
	(void)len;
	dk_conn_accept(arg, fd);
}

static int
init_paths(struct dockerapi *d)
{
	const char *never[] = {d->path, d->own, d->o.own, NULL};
	const char *rw[] = {d->root_dir, NULL};
	char *mi = NULL;
	int err = cgroup_read_mountinfo(&mi);

	if (!err)
		err = dk_paths_init(&d->paths, mi, never, rw);
	free(mi);
	return err;
}

struct dockerapi *
dockerapi_open(struct event_base *base, const struct dockerapi_opts *o, char *err, size_t errlen)
{
	struct dockerapi *d = calloc(1, sizeof(*d));
	int lfd = -1, rc;

	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->base = base;
	d->o = *o;
	d->real_fd = -1;
	LIST_INIT(&d->conns);
	dk_idmaps_init(&d->idmaps, o->own);
	snprintf(d->mnt, sizeof(d->mnt), "%s", o->mnt);
	if (!realpath(o->path, d->path)) {
		snprintf(err, errlen, "--docker %s: %s", o->path, strerror(errno));
		goto fail;
	}
	if (open_real(d, true, err, errlen) || ask_info(d, err, errlen))
		goto fail;
	lfd = make_own(d, err, errlen);
	if (lfd < 0)
		goto fail;
	rc = init_paths(d);
	if (rc) {
		snprintf(err, errlen, "cannot list the host's paths: %s", strerror(-rc));
		goto fail;
	}
	d->lis = evconnlistener_new(base, on_accept, d,
				    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, lfd);
	if (!d->lis) {
		snprintf(err, errlen, "cannot listen on %s", d->own);
		goto fail;
	}
	lfd = -1;
	if (mount(d->own, d->path, NULL, MS_BIND, NULL)) {
		snprintf(err, errlen, "cannot mount %s over %s: %s", d->own, d->path,
			 strerror(errno));
		goto fail;
	}
	d->mounted = true;
	forget_earlier(d);
	dk_idmaps_forget_earlier(&d->idmaps, d->o.own);
	return d;
fail:
	if (lfd >= 0)
		close(lfd);
	dockerapi_free(d, true);
	return NULL;
}

void
dockerapi_job_gone(struct dockerapi *d, uint64_t job)
{
	dk_idmaps_forget_job(&d->idmaps, job);
}

/* egressctl's mounts off PATH, the top first, while the top is one */
static void
uncover(struct dockerapi *d)
{
	for (int i = 0; i < 16 && covered_by_ours(d->path) == 1; i++)
		if (umount2(d->path, MNT_DETACH)) {
			log_warn("docker: cannot unmount %s", d->path);
			return;
		}
	if (covered_by_ours(d->path) == 1)
		log_warnx("docker: %s is still covered by egressctl's sockets", d->path);
}

void
dockerapi_free(struct dockerapi *d, bool uncover_path)
{
	if (!d)
		return;
	dk_conn_free_all(d);
	if (d->lis)
		evconnlistener_free(d->lis);
	if (d->mounted && uncover_path)
		uncover(d);
	else if (d->mounted) /* its file stays: the next daemon's mount goes over it */
		log_warnx(
			"docker: %s stays covered by egressctl's socket, which nothing serves now: "
			"docker is refused there (fail closed) until egressctl daemon --docker "
			"runs "
			"again, or umount %s",
			d->path, d->path);
	if (d->own[0] && (!d->mounted || uncover_path))
		unlink(d->own);
	if (d->real_fd >= 0)
		close(d->real_fd);
	dk_paths_free(&d->paths);
	dk_idmaps_free(&d->idmaps);
	free(d);
}
