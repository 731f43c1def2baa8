// SPDX-License-Identifier: Apache-2.0
/* `egressctl status` (see status.h): enumerates the pin directories under
 * <bpffs>/egressctl/, finds each cgroup by its id, sums the per-CPU kernel
 * counters of map_stats, and asks the run's status socket for the rest.
 * JSON (lib/jsonx.h) both ways. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lib/jsonx.h"
#include "kernel/cgroup.h"
#include "egress_abi.h"
#include "kernel/loader.h"
#include "lib/log.h"
#include "cli/ctl.h"
#include "lib/opts.h"
#include "cli/status.h"
#include "cli/userrun.h"
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
num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : 0;
}

/* Text status, written through term_safe (lib/log.h): commands, names and
 * paths are CMD's and other users' bytes, never escape sequences for the
 * reader's terminal (root's status lists every user's runs). */
static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	term_safe(buf, (size_t)n);
	fwrite(buf, 1, (size_t)n, stdout);
}

static const char *
str(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
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
	json_t *run;	      /* what its egressctl said; NULL if none is alive */
	const json_t *daemon; /* its target in the daemon's status; NULL if none */
	const json_t *user;   /* a user's run through the service: the service's entry */
};

/* Takes e->run into the object. */
static json_t *
entry_json(struct status_entry *e)
{
	json_t *o = json_object(), *k;

	if (!o)
		return NULL;
	jsonx_set_int(o, "cgroup_id", (long long)e->cgid);
	if (e->cgpath)
		jsonx_set_str(o, "cgroup", e->cgpath);
	else
		jsonx_set_null(o, "cgroup");
	jsonx_set_str(o, "pins", e->pins);
	jsonx_set_int(o, "programs", e->nlinks);
	k = jsonx_add_object(o, "kernel");
	if (k) {
		jsonx_set_int(k, "redirected", (long long)e->c[EGR_C_REDIRECT]);
		jsonx_set_int(k, "denied", (long long)e->c[EGR_C_DENY]);
		jsonx_set_int(k, "would_deny", (long long)e->c[EGR_C_WOULD_DENY]);
		jsonx_set_int(k, "fast_path", (long long)e->c[EGR_C_FASTPATH]);
		jsonx_set_int(k, "loopback_local", (long long)e->c[EGR_C_LOCAL]);
		jsonx_set_int(k, "kernel_verified", (long long)e->c[EGR_C_KVERIFIED]);
		jsonx_set_int(k, "kernel_rejected", (long long)e->c[EGR_C_KREJECTED]);
	}
	if (e->run)
		json_object_set_new(o, "run", e->run);
	else
		jsonx_set_null(o, "run");
	e->run = NULL;
	if (e->daemon)
		json_object_set_new(o, "daemon", json_deep_copy(e->daemon));
	else
		jsonx_set_null(o, "daemon");
	if (e->user)
		json_object_set_new(o, "user", json_deep_copy(e->user));
	else
		jsonx_set_null(o, "user");
	return o;
}

static void
entry_print(const struct status_entry *e)
{
	const json_t *run = e->run;

	say("cgroup %s (id %llu)\n", e->cgpath ? e->cgpath : "(removed)",
	    (unsigned long long)e->cgid);
	if (e->user)
		say("  user:    %s (uid %.0f), through the service\n",
		    str(e->user, "user") ? str(e->user, "user") : "?", num(e->user, "uid"));
	if (run) {
		const json_t *px = json_object_get(run, "proxy");
		const json_t *dn = json_object_get(run, "dns");

		say("  run:     egressctl[%.0f]%s -- %s\n", num(run, "pid"),
		    json_is_true(json_object_get(run, "audit")) ? " (audit mode)" : "",
		    str(run, "command") ? str(run, "command") : "?");
		say("  policy:  %.0f rules%s%s\n", num(run, "rules"),
		    str(run, "policy_file") ? " from " : "",
		    str(run, "policy_file") ? str(run, "policy_file") : " (command line)");
		say("  proxy:   %.0f allowed, %.0f denied, %.0f unattributed refused "
		    "(http 127.0.0.1:%.0f, socks 127.0.0.1:%.0f%s)\n",
		    num(px, "allowed"), num(px, "denied"), num(px, "unattributed"),
		    num(px, "http_port"), num(px, "socks_port"),
		    json_is_true(json_object_get(run, "ipv6")) ? "; the same ports on [::1]" : "");
		say("  dns:     %.0f queries, %.0f refused, %.0f cached, %.0f fast-path "
		    "approvals\n",
		    num(dn, "queries"), num(dn, "refused"), num(dn, "cached"),
		    num(dn, "fast_path_approvals"));
	} else {
		say("  run:     none alive (programs stay attached: fail closed; the next "
		    "`egressctl run --cgroup` on it takes over)\n");
	}
	say("  kernel:  %llu redirected, %llu denied, %llu fast-path, %llu loopback, "
	    "%llu kernel-verified, %llu kernel-rejected%s\n",
	    (unsigned long long)e->c[EGR_C_REDIRECT], (unsigned long long)e->c[EGR_C_DENY],
	    (unsigned long long)e->c[EGR_C_FASTPATH], (unsigned long long)e->c[EGR_C_LOCAL],
	    (unsigned long long)e->c[EGR_C_KVERIFIED], (unsigned long long)e->c[EGR_C_KREJECTED],
	    e->c[EGR_C_WOULD_DENY] ? " (and would-deny in audit mode)" : "");
	say("  programs: %d attached: %s\n", e->nlinks, e->progs);
	if (e->daemon) {
		const json_t *rr = json_object_get(e->daemon, "runtime_rules");

		say("  daemon:  target %s%s, up %.0f s, %zu runtime rule%s\n",
		    str(e->daemon, "name") ? str(e->daemon, "name") : "?",
		    json_is_true(json_object_get(e->daemon, "adopted"))
			    ? " (taken over after a restart)"
			    : "",
		    num(e->daemon, "uptime"), json_array_size(rr),
		    json_array_size(rr) == 1 ? "" : "s");
	}
}

/* The daemon's entry for cgroup cgid in its status document. */
static const json_t *
daemon_target(const json_t *doc, uint64_t cgid)
{
	const json_t *t;
	size_t i;

	json_array_foreach(json_object_get(doc, "targets"), i, t)
		if (num(t, "cgroup_id") == (double)cgid)
			return t;
	return NULL;
}

/* The service's run (runs: its status answer) in the cgroup at cgpath
 * below mnt, marked seen; NULL when none is. */
static const json_t *
service_run(const json_t *runs, bool *seen, const char *mnt, const char *cgpath)
{
	size_t i, n = strlen(mnt);
	const json_t *x;

	if (!cgpath || !n || strncmp(cgpath, mnt, n))
		return NULL;
	json_array_foreach(runs, i, x)
		if (str(x, "cgroup") && !strcmp(cgpath + n, str(x, "cgroup"))) {
			seen[i] = true;
			return x;
		}
	return NULL;
}

/* The service's runs no confined cgroup showed (not there yet: run is
 * setting it up, or waits for its policy). */
static int
service_rest(const json_t *runs, const bool *seen, json_t *all)
{
	size_t i;
	const json_t *x;
	int shown = 0;

	json_array_foreach(runs, i, x) {
		json_t *o;

		if (seen[i])
			continue;
		shown++;
		if (!all) {
			say("run[%.0f] of %s (uid %.0f), through the service: %s, up %.0f s, "
			    "cgroup %s not confined yet\n",
			    num(x, "pid"), str(x, "user") ? str(x, "user") : "?", num(x, "uid"),
			    str(x, "command") ? str(x, "command") : "?", num(x, "uptime"),
			    str(x, "cgroup") ? str(x, "cgroup") : "?");
			continue;
		}
		o = json_object();
		if (o && !jsonx_set_int(o, "cgroup_id", 0) && !jsonx_set_null(o, "cgroup") &&
		    !jsonx_set_null(o, "pins") && !jsonx_set_int(o, "programs", 0) &&
		    !jsonx_set_null(o, "kernel") && !jsonx_set_null(o, "run") &&
		    !jsonx_set_null(o, "daemon") &&
		    !json_object_set_new(o, "user", json_deep_copy(x)))
			json_array_append_new(all, o);
		else
			json_decref(o);
	}
	return shown;
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
		e->run = json_loads(reply, 0, NULL);
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
		   "command, policy, proxy and DNS counters; a user's run through the\n"
		   "service (egressctl-users.service) says whose. Needs root; a user lists\n"
		   "their own runs through the service.\n"
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
	json_t *all = NULL, *ddoc = NULL, *uruns = NULL;
	bool *useen = NULL;
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
	if (geteuid() != 0 && userrun_service()) /* your runs, through the service */
		return userrun_status(json);
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
	all = json ? json_array() : NULL;
	if (!ctl_status_json(control, &dtext))
		ddoc = json_loads(dtext, 0, NULL);
	free(dtext);
	/* users' runs through the service: whose each is (root sees all) */
	if (userrun_service() && (uruns = userrun_runs()))
		useen = calloc(json_array_size(uruns) + 1, sizeof(*useen));
	if (ddoc && !json)
		say("daemon: egressctl[%.0f], up %.0f s, %zu target%s%s%s\n", num(ddoc, "pid"),
		    num(ddoc, "uptime"), json_array_size(json_object_get(ddoc, "targets")),
		    json_array_size(json_object_get(ddoc, "targets")) == 1 ? "" : "s",
		    str(ddoc, "config") ? ", config " : "",
		    str(ddoc, "config") ? str(ddoc, "config") : "");
	while ((de = readdir(d))) {
		struct status_entry e;

		if (!entry_read(root, mnt, de->d_name, dir, sizeof(dir), &e))
			continue;
		e.daemon = ddoc ? daemon_target(ddoc, e.cgid) : NULL;
		e.user = useen ? service_run(uruns, useen, mnt, e.cgpath) : NULL;
		shown++;
		if (json)
			json_array_append_new(all, entry_json(&e));
		else
			entry_print(&e);
		json_decref(e.run);
	}
	closedir(d);
	if (useen)
		shown += service_rest(uruns, useen, all);
	free(useen);
	json_decref(uruns);
	json_decref(ddoc);
	if (json) {
		char *out = jsonx_pretty_ascii(all); /* users' commands: no C1 */

		if (out)
			printf("%s\n", out);
		free(out);
		json_decref(all);
	} else if (!shown) {
		printf("no confined cgroups\n");
	}
	return 0;
}
