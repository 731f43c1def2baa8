/* `egressctl status` (see status.h): enumerates the pin directories under
 * <bpffs>/egressctl/, finds each cgroup by its id, sums the per-CPU kernel
 * counters of map_stats, and asks the run's status socket for the rest.
 * JSON with cJSON (as config.c does) both ways. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cJSON.h>

#include "kernel/cgroup.h"
#include "egress_abi.h"
#include "kernel/loader.h"
#include "lib/log.h"
#include "cli/status.h"

char *
status_render(const struct status_info *si)
{
	cJSON *o = cJSON_CreateObject(), *px, *dns;
	char *out = NULL;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "pid", si->pid);
	cJSON_AddNumberToObject(o, "cgroup_id", (double)si->cgroup_id);
	cJSON_AddStringToObject(o, "cgroup", si->cgroup);
	cJSON_AddStringToObject(o, "command", si->command);
	if (si->policy_file)
		cJSON_AddStringToObject(o, "policy_file", si->policy_file);
	cJSON_AddNumberToObject(o, "rules", si->rules);
	cJSON_AddBoolToObject(o, "audit", si->audit);
	px = cJSON_AddObjectToObject(o, "proxy");
	if (px) {
		cJSON_AddNumberToObject(px, "http_port", si->http_port);
		cJSON_AddNumberToObject(px, "socks_port", si->socks_port);
		cJSON_AddNumberToObject(px, "transparent_port", si->tproxy_port);
		cJSON_AddNumberToObject(px, "accepted", (double)si->proxy_accepted);
		cJSON_AddNumberToObject(px, "allowed", (double)si->proxy_allowed);
		cJSON_AddNumberToObject(px, "denied", (double)si->proxy_denied);
		cJSON_AddNumberToObject(px, "unattributed", (double)si->proxy_unattributed);
	}
	dns = cJSON_AddObjectToObject(o, "dns");
	if (dns) {
		cJSON_AddNumberToObject(dns, "port", si->dns_port);
		cJSON_AddNumberToObject(dns, "queries", (double)si->dns_queries);
		cJSON_AddNumberToObject(dns, "refused", (double)si->dns_refused);
		cJSON_AddNumberToObject(dns, "cached", (double)si->dns_cached);
		cJSON_AddNumberToObject(dns, "upstream", (double)si->dns_upstream);
		cJSON_AddNumberToObject(dns, "servfail", (double)si->dns_servfail);
		cJSON_AddNumberToObject(dns, "fast_path_approvals", (double)si->dns_fast);
	}
	out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return out;
}

int
status_listen(uint64_t cgid, char *path, size_t pathlen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd, err;

	if (mkdir(STATUS_DIR, 0700) && errno != EEXIST)
		return -errno;
	if ((size_t)snprintf(path, pathlen, "%s/%llu.sock", STATUS_DIR, (unsigned long long)cgid) >=
		    pathlen ||
	    strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	unlink(path); /* a stale one: the cgroup's lock says no live run owns it */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) || chmod(path, 0600) || listen(fd, 8)) {
		err = -errno;
		close(fd);
		unlink(path);
		return err;
	}
	return fd;
}

/* ---- the client ---- */

static char *
ask(uint64_t cgid)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	size_t len = 0, cap = 4096;
	char *buf = NULL;
	int fd;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%llu.sock", STATUS_DIR,
		 (unsigned long long)cgid);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)))
		goto fail;
	buf = malloc(cap);
	if (!buf)
		goto fail;
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, 2000) <= 0)
			goto fail;
		if (len + 1 >= cap) {
			char *nb = cap < (1 << 20) ? realloc(buf, cap * 2) : NULL;

			if (!nb)
				goto fail;
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = 0;
	close(fd);
	return buf;
fail:
	free(buf);
	close(fd);
	return NULL;
}

static uint64_t find_cgid;
static char found_path[PATH_MAX];

static int
find_cb(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_D && (uint64_t)sb->st_ino == find_cgid) {
		snprintf(found_path, sizeof(found_path), "%s", path);
		return 1;
	}
	return 0;
}

/* The cgroup directory with this id, searched under the cgroup2 mount. */
static const char *
cgroup_path_of(const char *mnt, uint64_t cgid)
{
	find_cgid = cgid;
	found_path[0] = 0;
	nftw(mnt, find_cb, 32, FTW_PHYS | FTW_MOUNT);
	return found_path[0] ? found_path : NULL;
}

static int
read_counters(const char *dir, uint64_t out[EGR_C_MAX])
{
	char path[PATH_MAX];
	int fd, ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;

	memset(out, 0, sizeof(uint64_t) * EGR_C_MAX);
	if (ncpu <= 0)
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s/map_stats", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals) {
		close(fd);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < EGR_C_MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	close(fd);
	return 0;
}

static int
count_links(const char *dir, char *names, size_t len)
{
	struct dirent *de;
	size_t n = 0;
	int count = 0;
	DIR *d = opendir(dir);

	names[0] = 0;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "link_", 5))
			continue;
		count++;
		if (n < len)
			n += (size_t)snprintf(names + n, len - n, "%s%s", n ? " " : "",
					      de->d_name + 5);
	}
	closedir(d);
	return count;
}

static double
num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int
status_main(int argc, char **argv)
{
	char root[PATH_MAX], mnt[PATH_MAX], dir[PATH_MAX + 32], progs[1024];
	bool json = argc > 1 && (!strcmp(argv[1], "-j") || !strcmp(argv[1], "--json"));
	cJSON *all = json ? cJSON_CreateArray() : NULL;
	struct dirent *de;
	int err, shown = 0;
	DIR *d;

	if (argc > 1 && !json) {
		fprintf(argc > 1 && !strcmp(argv[1], "-h") ? stdout : stderr,
			"usage: egressctl status [-j|--json]\n");
		return strcmp(argv[1], "-h") ? EGR_EXIT_ERROR : 0;
	}
	if (geteuid() != 0) {
		log_warnx("status needs root (bpffs and the status sockets are root's)");
		return EGR_EXIT_ERROR;
	}
	err = loader_pin_root(root, sizeof(root));
	if (err) {
		log_warnx("cannot open bpffs: %s", strerror(-err));
		return EGR_EXIT_ERROR;
	}
	if (cgroup_find_mount(mnt, sizeof(mnt)))
		mnt[0] = 0;
	d = opendir(root);
	if (!d) {
		log_warn("cannot list %s", root);
		return EGR_EXIT_ERROR;
	}
	while ((de = readdir(d))) {
		uint64_t cgid, c[EGR_C_MAX];
		const char *cgpath;
		char *end, *reply;
		cJSON *run = NULL;
		int nlinks;

		cgid = strtoull(de->d_name, &end, 10);
		if (de->d_name[0] == '.' || *end || !cgid)
			continue;
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name) >= sizeof(dir))
			continue;
		nlinks = count_links(dir, progs, sizeof(progs));
		read_counters(dir, c);
		cgpath = mnt[0] ? cgroup_path_of(mnt, cgid) : NULL;
		reply = ask(cgid);
		if (reply)
			run = cJSON_Parse(reply);
		free(reply);
		shown++;
		if (json) {
			cJSON *o = cJSON_CreateObject(), *k;

			if (!o)
				continue;
			cJSON_AddNumberToObject(o, "cgroup_id", (double)cgid);
			if (cgpath)
				cJSON_AddStringToObject(o, "cgroup", cgpath);
			else
				cJSON_AddNullToObject(o, "cgroup");
			cJSON_AddStringToObject(o, "pins", dir);
			cJSON_AddNumberToObject(o, "programs", nlinks);
			k = cJSON_AddObjectToObject(o, "kernel");
			if (k) {
				cJSON_AddNumberToObject(k, "redirected", (double)c[EGR_C_REDIRECT]);
				cJSON_AddNumberToObject(k, "denied", (double)c[EGR_C_DENY]);
				cJSON_AddNumberToObject(k, "would_deny",
							(double)c[EGR_C_WOULD_DENY]);
				cJSON_AddNumberToObject(k, "fast_path", (double)c[EGR_C_FASTPATH]);
				cJSON_AddNumberToObject(k, "loopback_local",
							(double)c[EGR_C_LOCAL]);
			}
			if (run)
				cJSON_AddItemToObject(o, "run", run);
			else
				cJSON_AddNullToObject(o, "run");
			cJSON_AddItemToArray(all, o);
			continue;
		}
		printf("cgroup %s (id %llu)\n", cgpath ? cgpath : "(removed)",
		       (unsigned long long)cgid);
		if (run) {
			const cJSON *px = cJSON_GetObjectItemCaseSensitive(run, "proxy");
			const cJSON *dn = cJSON_GetObjectItemCaseSensitive(run, "dns");

			printf("  run:     egressctl[%.0f]%s -- %s\n", num(run, "pid"),
			       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(run, "audit"))
				       ? " (audit mode)"
				       : "",
			       str(run, "command") ? str(run, "command") : "?");
			printf("  policy:  %.0f rules%s%s\n", num(run, "rules"),
			       str(run, "policy_file") ? " from " : "",
			       str(run, "policy_file") ? str(run, "policy_file")
						       : " (command line)");
			printf("  proxy:   %.0f allowed, %.0f denied, %.0f unattributed refused "
			       "(http 127.0.0.1:%.0f, socks 127.0.0.1:%.0f)\n",
			       num(px, "allowed"), num(px, "denied"), num(px, "unattributed"),
			       num(px, "http_port"), num(px, "socks_port"));
			printf("  dns:     %.0f queries, %.0f refused, %.0f cached, %.0f fast-path "
			       "approvals\n",
			       num(dn, "queries"), num(dn, "refused"), num(dn, "cached"),
			       num(dn, "fast_path_approvals"));
			cJSON_Delete(run);
		} else {
			printf("  run:     none alive (programs stay attached: fail closed; the "
			       "next "
			       "`egressctl run --cgroup` on it takes over)\n");
		}
		printf("  kernel:  %llu redirected, %llu denied, %llu fast-path, %llu loopback%s\n",
		       (unsigned long long)c[EGR_C_REDIRECT], (unsigned long long)c[EGR_C_DENY],
		       (unsigned long long)c[EGR_C_FASTPATH], (unsigned long long)c[EGR_C_LOCAL],
		       c[EGR_C_WOULD_DENY] ? " (and would-deny in audit mode)" : "");
		printf("  programs: %d attached: %s\n", nlinks, progs);
	}
	closedir(d);
	if (json) {
		char *out = cJSON_Print(all);

		if (out)
			printf("%s\n", out);
		cJSON_free(out);
		cJSON_Delete(all);
	} else if (!shown) {
		printf("no confined cgroups\n");
	}
	return 0;
}
