// SPDX-License-Identifier: Apache-2.0
/* The unix sockets of the services that start work outside the cgroup,
 * and egressctl's own (see unixsvc.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "sandbox/unixsvc.h"

/* Each is a way to have a process started outside the sandbox's cgroup,
 * where no hook sees its sockets: a container (docker run, ctr run, podman
 * run, buildctl build with RUN steps), a transient unit (systemd-run, also
 * --user), or a bus call that makes one (busctl call org.freedesktop.systemd1
 * ... StartTransientUnit, the session bus's systemd --user likewise). */
const char *const unixsvc_defaults[] = {
	"/run/docker.sock",			  /* dockerd */
	"/run/user/*/docker.sock",		  /* rootless dockerd */
	"/run/docker/containerd/containerd.sock", /* dockerd's own containerd (< 20.10) */
	"/run/containerd/containerd.sock",	  /* containerd (ctr, nerdctl) */
	"/run/containerd/containerd.sock.ttrpc",  /* its ttrpc twin */
	"/run/podman/podman.sock",		  /* podman system service */
	"/run/user/*/podman/podman.sock",	  /* rootless podman */
	"/run/buildkit/buildkitd.sock",		  /* buildkitd */
	"/run/user/*/buildkit/buildkitd.sock",	  /* rootless buildkitd */
	"/run/crio/crio.sock",			  /* CRI-O */
	"/run/systemd/private",			  /* systemd (systemctl, systemd-run as root) */
	"/run/user/*/systemd/private",		  /* systemd --user */
	"/run/dbus/system_bus_socket",		  /* the D-Bus system bus */
	"/run/user/*/bus",			  /* the D-Bus session bus */
	NULL,
};

static int
add(struct unixsvc *s, const char *path, bool allow, char *err, size_t errlen)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->e[i].path, path)) {
			s->e[i].allow = allow;
			return 0;
		}
	if (s->n == UNIXSVC_MAX) {
		snprintf(err, errlen, "at most %d unix socket entries", UNIXSVC_MAX);
		return -EINVAL;
	}
	snprintf(s->e[s->n].path, sizeof(s->e[s->n].path), "%s", path);
	s->e[s->n].allow = allow;
	s->n++;
	return 0;
}

/* path and, for "/run/..." or "/var/run/...", its twin */
static int
add_twins(struct unixsvc *s, const char *root, const char *path, bool allow, char *err,
	  size_t errlen)
{
	char buf[UNIXSVC_PATH_MAX + 16], twin[UNIXSVC_PATH_MAX + 16];
	size_t rl = strlen(root);
	const char *rest = path + rl;
	int rc;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= UNIXSVC_PATH_MAX) {
		snprintf(err, errlen, "%s: longer than a unix socket name (%d bytes)", path,
			 UNIXSVC_PATH_MAX - 1);
		return -EINVAL;
	}
	rc = add(s, buf, allow, err, errlen);
	if (rc)
		return rc;
	if (!strncmp(path, root, rl) && !strncmp(rest, "/run/", 5))
		snprintf(twin, sizeof(twin), "%s/var%s", root, rest);
	else if (!strncmp(path, root, rl) && !strncmp(rest, "/var/run/", 9))
		snprintf(twin, sizeof(twin), "%s%s", root, rest + 4);
	else
		return 0;
	if (strlen(twin) >= UNIXSVC_PATH_MAX)
		return 0;
	return add(s, twin, allow, err, errlen);
}

static int
check_path(const char *opt, const char *p, char *err, size_t errlen)
{
	if (p[0] != '/') {
		snprintf(err, errlen, "%s %s: not an absolute path", opt, p);
		return -EINVAL;
	}
	if (strlen(p) >= UNIXSVC_PATH_MAX) {
		snprintf(err, errlen, "%s %s: longer than a unix socket name (%d bytes)", opt, p,
			 UNIXSVC_PATH_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

int
unixsvc_build(struct unixsvc *s, const char *root, const char *const *allow, int nallow,
	      const char *const *deny, int ndeny, char *err, size_t errlen)
{
	char buf[UNIXSVC_PATH_MAX + 256];
	int rc;

	memset(s, 0, sizeof(*s));
	if (!root || !strcmp(root, "/"))
		root = "";
	s->root_len = strlen(root);
	for (int i = 0; unixsvc_defaults[i]; i++) {
		snprintf(buf, sizeof(buf), "%s%s", root, unixsvc_defaults[i]);
		rc = add_twins(s, root, buf, false, err, errlen);
		if (rc)
			return rc;
	}
	for (int i = 0; i < ndeny; i++) {
		rc = check_path("--deny-unix", deny[i], err, errlen);
		if (!rc)
			rc = add(s, deny[i], false, err, errlen);
		if (rc)
			return rc;
	}
	for (int i = 0; i < nallow; i++) {
		rc = check_path("--allow-unix", allow[i], err, errlen);
		if (!rc)
			rc = add_twins(s, root, allow[i], true, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static int
lookup(const struct unixsvc *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->e[i].path, name))
			return i;
	return -1;
}

int
unixsvc_match(const struct unixsvc *s, const char *name, char *uid, size_t uidlen)
{
	char key[UNIXSVC_PATH_MAX + 16];
	const char *rest = name + s->root_len;
	size_t p, d = 0;
	int i;

	if (uid && uidlen)
		uid[0] = 0;
	i = lookup(s, name);
	if (i >= 0 || strlen(name) < s->root_len)
		return i;
	if (!strncmp(rest, "/run/user/", 10))
		p = s->root_len + 10;
	else if (!strncmp(rest, "/var/run/user/", 14))
		p = s->root_len + 14;
	else
		return -1;
	while (name[p + d] >= '0' && name[p + d] <= '9')
		d++;
	if (d == 0 || d > 10 || name[p + d] != '/')
		return -1;
	if ((size_t)snprintf(key, sizeof(key), "%.*s*%s", (int)p, name, name + p + d) >=
	    UNIXSVC_PATH_MAX)
		return -1;
	i = lookup(s, key);
	if (i >= 0 && uid && uidlen)
		snprintf(uid, uidlen, "%.*s", (int)d, name + p);
	return i;
}

bool
unixsvc_denied(const struct unixsvc *s, const char *name)
{
	int i = unixsvc_match(s, name, NULL, 0);

	return i >= 0 && !s->e[i].allow;
}

void
unixsvc_name(const struct unixsvc *s, int idx, const char *uid, char *buf, size_t len)
{
	const char *p, *star;

	if (idx < 0 || idx >= s->n) {
		snprintf(buf, len, "?");
		return;
	}
	p = s->e[idx].path;
	star = strchr(p, '*');
	if (star && uid && *uid)
		snprintf(buf, len, "%.*s%s%s", (int)(star - p), p, uid, star + 1);
	else
		snprintf(buf, len, "%s", p);
}

static int
push(char ***list, int **idx, size_t *n, const char *path, int i)
{
	char **nl = realloc(*list, (*n + 2) * sizeof(**list));
	int *ni;

	if (!nl)
		return -ENOMEM;
	*list = nl;
	if (idx) {
		ni = realloc(*idx, (*n + 1) * sizeof(**idx));
		if (!ni)
			return -ENOMEM;
		*idx = ni;
		(*idx)[*n] = i;
	}
	nl[*n] = strdup(path);
	if (!nl[*n])
		return -ENOMEM;
	nl[++*n] = NULL;
	return 0;
}

char **
unixsvc_existing(const struct unixsvc *s, int **idx)
{
	char **list = calloc(1, sizeof(*list));
	size_t n = 0;
	struct stat st;

	if (idx)
		*idx = NULL;
	if (!list)
		return NULL;
	for (int i = 0; i < s->n; i++) {
		glob_t g;

		if (s->e[i].allow)
			continue;
		if (!strchr(s->e[i].path, '*')) {
			if (!stat(s->e[i].path, &st) && S_ISSOCK(st.st_mode) &&
			    push(&list, idx, &n, s->e[i].path, i))
				goto fail;
			continue;
		}
		if (glob(s->e[i].path, GLOB_NOSORT, NULL, &g))
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++) {
			/* an --allow-unix exception for this one */
			if (!unixsvc_denied(s, g.gl_pathv[j]))
				continue;
			if (!stat(g.gl_pathv[j], &st) && S_ISSOCK(st.st_mode) &&
			    push(&list, idx, &n, g.gl_pathv[j], i)) {
				globfree(&g);
				goto fail;
			}
		}
		globfree(&g);
	}
	return list;
fail:
	unixsvc_free_list(list);
	if (idx) {
		free(*idx);
		*idx = NULL;
	}
	return NULL;
}

void
unixsvc_free_list(char **list)
{
	if (!list)
		return;
	for (char **p = list; *p; p++)
		free(*p);
	free(list);
}

/* ---- egressctl's own sockets ---- */

static int
controls_dir(const char *dir, char *out, size_t len)
{
	if ((size_t)snprintf(out, len, "%s/controls", dir) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Entries of processes that are gone (a daemon killed -9). */
static void
prune_controls(int dfd)
{
	DIR *d = fdopendir(dup(dfd));
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (de->d_name[0] == '.' || *end || pid <= 0)
			continue;
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			unlinkat(dfd, de->d_name, 0);
	}
	closedir(d);
}

int
unixsvc_control_register(const char *dir, const char *path, char *err, size_t errlen)
{
	char reg[UNIXSVC_PATH_MAX + 32], name[16];
	int dfd = -1, rc;

	rc = controls_dir(dir, reg, sizeof(reg));
	if (!rc && mkdir(dir, 0700) && errno != EEXIST)
		rc = -errno;
	if (!rc && mkdir(reg, 0700) && errno != EEXIST)
		rc = -errno;
	if (!rc && (dfd = open(reg, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		rc = -errno;
	if (!rc) {
		prune_controls(dfd);
		snprintf(name, sizeof(name), "%d", (int)getpid());
		unlinkat(dfd, name, 0); /* a gone process's of the same pid */
		if (symlinkat(path, dfd, name))
			rc = -errno;
	}
	if (dfd >= 0)
		close(dfd);
	if (rc)
		snprintf(err, errlen, "cannot register the control socket in %s/controls: %s", dir,
			 strerror(-rc));
	return rc;
}

void
unixsvc_control_unregister(const char *dir)
{
	char reg[UNIXSVC_PATH_MAX + 48];

	if ((size_t)snprintf(reg, sizeof(reg), "%s/controls/%d", dir, (int)getpid()) < sizeof(reg))
		unlink(reg);
}

/* dir and its "/var/run" twin, where they are directories */
static int
add_dir(const char *dir, char ***list, size_t *n)
{
	char twin[UNIXSVC_PATH_MAX + 16];
	struct stat st;

	if (!stat(dir, &st) && S_ISDIR(st.st_mode) && push(list, NULL, n, dir, -1))
		return -ENOMEM;
	if (strncmp(dir, "/run/", 5) ||
	    (size_t)snprintf(twin, sizeof(twin), "/var%s", dir) >= sizeof(twin))
		return 0;
	if (!stat(twin, &st) && S_ISDIR(st.st_mode) && push(list, NULL, n, twin, -1))
		return -ENOMEM;
	return 0;
}

int
unixsvc_add_egressctl(const char *dir, char ***list)
{
	char reg[UNIXSVC_PATH_MAX + 32], target[PATH_MAX];
	struct dirent *de;
	struct stat st;
	size_t n = 0;
	DIR *d;

	while ((*list)[n])
		n++;
	if (add_dir(dir, list, &n))
		goto fail;
	if (controls_dir(dir, reg, sizeof(reg)) || !(d = opendir(reg)))
		return 0; /* no daemon registered one */
	while ((de = readdir(d))) {
		ssize_t len = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);

		if (len <= 0)
			continue;
		target[len] = 0;
		if (target[0] != '/' || stat(target, &st) || !S_ISSOCK(st.st_mode))
			continue; /* gone, or never was */
		if (push(list, NULL, &n, target, -1)) {
			closedir(d);
			goto fail;
		}
	}
	closedir(d);
	return 0;
fail:
	unixsvc_free_list(*list);
	*list = NULL;
	return -ENOMEM;
}
