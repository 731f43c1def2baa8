// SPDX-License-Identifier: Apache-2.0
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
#include "cli/ctl.h"
#include "lib/opts.h"
#include "cli/status.h"
#include "confine/status.h"

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

/* One confined cgroup as status sees it: from its pins, its cgroup and
 * (when one is alive) its egressctl. */
struct status_entry {
	uint64_t cgid;
	const char *cgpath; /* NULL when the cgroup is gone */
	const char *pins;
	int nlinks;
	char progs[1024];
	uint64_t c[EGR_C_MAX];
	cJSON *run;	     /* what its egressctl said; NULL if none is alive */
	const cJSON *daemon; /* its target in the daemon's status; NULL if none */
};

/* Takes e->run into the object. */
static cJSON *
entry_json(struct status_entry *e)
{
	cJSON *o = cJSON_CreateObject(), *k;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "cgroup_id", (double)e->cgid);
	if (e->cgpath)
		cJSON_AddStringToObject(o, "cgroup", e->cgpath);
	else
		cJSON_AddNullToObject(o, "cgroup");
	cJSON_AddStringToObject(o, "pins", e->pins);
	cJSON_AddNumberToObject(o, "programs", e->nlinks);
	k = cJSON_AddObjectToObject(o, "kernel");
	if (k) {
		cJSON_AddNumberToObject(k, "redirected", (double)e->c[EGR_C_REDIRECT]);
		cJSON_AddNumberToObject(k, "denied", (double)e->c[EGR_C_DENY]);
		cJSON_AddNumberToObject(k, "would_deny", (double)e->c[EGR_C_WOULD_DENY]);
		cJSON_AddNumberToObject(k, "fast_path", (double)e->c[EGR_C_FASTPATH]);
		cJSON_AddNumberToObject(k, "loopback_local", (double)e->c[EGR_C_LOCAL]);
		cJSON_AddNumberToObject(k, "kernel_verified", (double)e->c[EGR_C_KVERIFIED]);
		cJSON_AddNumberToObject(k, "kernel_rejected", (double)e->c[EGR_C_KREJECTED]);
	}
	if (e->run)
		cJSON_AddItemToObject(o, "run", e->run);
	else
		cJSON_AddNullToObject(o, "run");
	e->run = NULL;
	if (e->daemon)
		cJSON_AddItemToObject(o, "daemon", cJSON_Duplicate(e->daemon, 1));
	else
		cJSON_AddNullToObject(o, "daemon");
	return o;
}

static void
entry_print(const struct status_entry *e)
{
	const cJSON *run = e->run;

	printf("cgroup %s (id %llu)\n", e->cgpath ? e->cgpath : "(removed)",
	       (unsigned long long)e->cgid);
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
		       str(run, "policy_file") ? str(run, "policy_file") : " (command line)");
		printf("  proxy:   %.0f allowed, %.0f denied, %.0f unattributed refused "
		       "(http 127.0.0.1:%.0f, socks 127.0.0.1:%.0f%s)\n",
		       num(px, "allowed"), num(px, "denied"), num(px, "unattributed"),
		       num(px, "http_port"), num(px, "socks_port"),
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(run, "ipv6"))
			       ? "; the same ports on [::1]"
			       : "");
		printf("  dns:     %.0f queries, %.0f refused, %.0f cached, %.0f fast-path "
		       "approvals\n",
		       num(dn, "queries"), num(dn, "refused"), num(dn, "cached"),
		       num(dn, "fast_path_approvals"));
	} else {
		printf("  run:     none alive (programs stay attached: fail closed; the next "
		       "`egressctl run --cgroup` on it takes over)\n");
	}
	printf("  kernel:  %llu redirected, %llu denied, %llu fast-path, %llu loopback, "
	       "%llu kernel-verified, %llu kernel-rejected%s\n",
	       (unsigned long long)e->c[EGR_C_REDIRECT], (unsigned long long)e->c[EGR_C_DENY],
	       (unsigned long long)e->c[EGR_C_FASTPATH], (unsigned long long)e->c[EGR_C_LOCAL],
	       (unsigned long long)e->c[EGR_C_KVERIFIED], (unsigned long long)e->c[EGR_C_KREJECTED],
	       e->c[EGR_C_WOULD_DENY] ? " (and would-deny in audit mode)" : "");
	printf("  programs: %d attached: %s\n", e->nlinks, e->progs);
	if (e->daemon) {
		const cJSON *rr = cJSON_GetObjectItemCaseSensitive(e->daemon, "runtime_rules");

		printf("  daemon:  target %s%s, up %.0f s, %d runtime rule%s\n",
		       str(e->daemon, "name") ? str(e->daemon, "name") : "?",
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e->daemon, "adopted"))
			       ? " (taken over after a restart)"
			       : "",
		       num(e->daemon, "uptime"), cJSON_GetArraySize(rr),
		       cJSON_GetArraySize(rr) == 1 ? "" : "s");
	}
}

/* The daemon's entry for cgroup cgid in its status document. */
static const cJSON *
daemon_target(const cJSON *doc, uint64_t cgid)
{
	const cJSON *t;

	cJSON_ArrayForEach(
		t, cJSON_GetObjectItemCaseSensitive(doc, "targets")) if (num(t, "cgroup_id") ==
									 (double)cgid) return t;
	return NULL;
}

/* The pin directory name under root -> an entry; false when it is not one
 * of a cgroup's (not a number). */
static bool
entry_read(const char *root, const char *mnt, const char *name, char *dir, size_t dirlen,
	   struct status_entry *e)
{
	char *end, *reply;

	memset(e, 0, sizeof(*e));
	e->cgid = strtoull(name, &end, 10);
	if (name[0] == '.' || *end || !e->cgid)
		return false;
	if ((size_t)snprintf(dir, dirlen, "%s/%s", root, name) >= dirlen)
		return false;
	e->pins = dir;
	e->nlinks = count_links(dir, e->progs, sizeof(e->progs));
	read_counters(dir, e->c);
	e->cgpath = mnt[0] ? cgroup_path_of(mnt, e->cgid) : NULL;
	reply = ask(e->cgid);
	if (reply)
		e->run = cJSON_Parse(reply);
	free(reply);
	return true;
}

void
status_usage(FILE *f)
{
	fprintf(f, "usage: egressctl status [-j|--json] [--control PATH]\n"
		   "\n"
		   "Lists the cgroups egressctl confines on this machine: the programs pinned\n"
		   "on each, the kernel's counters and, where its egressctl is alive, its\n"
		   "command, policy, proxy and DNS counters. Needs root.\n"
		   "\n"
		   "  -j, --json             one JSON array, an object per cgroup\n"
		   "  --control PATH         the daemon's control socket (default\n"
		   "                         " EGR_RUNDIR "/control, or $EGRESSCTL_CONTROL)\n"
		   "  -h, --help             this text\n");
}

int
status_main(int argc, char **argv)
{
	char root[PATH_MAX], mnt[PATH_MAX], dir[PATH_MAX + 32];
	bool json = false;
	cJSON *all = NULL, *ddoc = NULL;
	const char *control = NULL;
	char *dtext = NULL;
	struct dirent *de;
	int err, shown = 0;
	DIR *d;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--control") && i + 1 < argc) {
			control = argv[++i];
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			status_usage(stdout);
			return 0;
		} else {
			log_warnx("status: unknown %s %s (see egressctl status --help)",
				  argv[i][0] == '-' ? "option" : "argument", argv[i]);
			return EGR_EXIT_USAGE;
		}
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
	all = json ? cJSON_CreateArray() : NULL;
	if (!ctl_status_json(control, &dtext))
		ddoc = cJSON_Parse(dtext);
	free(dtext);
	if (ddoc && !json)
		printf("daemon: egressctl[%.0f], up %.0f s, %d target%s%s%s\n", num(ddoc, "pid"),
		       num(ddoc, "uptime"),
		       cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ddoc, "targets")),
		       cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ddoc, "targets")) == 1
			       ? ""
			       : "s",
		       str(ddoc, "config") ? ", config " : "",
		       str(ddoc, "config") ? str(ddoc, "config") : "");
	while ((de = readdir(d))) {
		struct status_entry e;

		if (!entry_read(root, mnt, de->d_name, dir, sizeof(dir), &e))
			continue;
		e.daemon = ddoc ? daemon_target(ddoc, e.cgid) : NULL;
		shown++;
		if (json)
			cJSON_AddItemToArray(all, entry_json(&e));
		else
			entry_print(&e);
		cJSON_Delete(e.run);
	}
	closedir(d);
	cJSON_Delete(ddoc);
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
