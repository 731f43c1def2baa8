// SPDX-License-Identifier: Apache-2.0
/* The host paths a confined job's container may not bind (see
 * hostpath.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dockerapi/hostpath.h"
#include "kernel/cgroup.h"

static const char *const never_fixed[] = {"/", "/proc", "/sys", "/dev", "/run", NULL};
static const char *const rw_fixed[] = {"/etc",	   "/usr",	 "/bin",    "/sbin", "/lib",
				       "/lib32",   "/lib64",	 "/libx32", "/boot", "/root",
				       "/var/lib", "/var/spool", NULL};

static int
add(char **l, int *n, const char *s)
{
	char *c;

	if (!s || !*s)
		return 0;
	for (int i = 0; i < *n; i++)
		if (!strcmp(l[i], s))
			return 0;
	if (*n == DK_PATHS_MAX)
		return -E2BIG;
	c = strdup(s);
	if (!c)
		return -ENOMEM;
	l[(*n)++] = c;
	return 0;
}

static int
add_mount(const char *mountpoint, void *arg)
{
	struct dk_paths *p = arg;

	return add(p->never, &p->nnever, mountpoint);
}

int
dk_paths_init(struct dk_paths *p, const char *mountinfo, const char *const *never,
	      const char *const *rw)
{
	static const char *const fstypes[] = {"cgroup2", "cgroup", "bpf"};
	int err = 0;

	memset(p, 0, sizeof(*p));
	for (int i = 0; never_fixed[i] && !err; i++)
		err = add(p->never, &p->nnever, never_fixed[i]);
	for (int i = 0; never && never[i] && !err; i++)
		err = add(p->never, &p->nnever, never[i]);
	for (int i = 0; rw_fixed[i] && !err; i++)
		err = add(p->rw, &p->nrw, rw_fixed[i]);
	for (int i = 0; rw && rw[i] && !err; i++)
		err = add(p->rw, &p->nrw, rw[i]);
	for (size_t i = 0; mountinfo && i < sizeof(fstypes) / sizeof(fstypes[0]) && !err; i++) {
		int n = cgroup_foreach_mount_in(mountinfo, fstypes[i], add_mount, p);

		err = n < 0 ? n : 0;
	}
	if (err)
		dk_paths_free(p);
	return err;
}

void
dk_paths_free(struct dk_paths *p)
{
	for (int i = 0; i < p->nnever; i++)
		free(p->never[i]);
	for (int i = 0; i < p->nrw; i++)
		free(p->rw[i]);
	memset(p, 0, sizeof(*p));
}

/* Is a inside b, or b itself ("/" holds everything)? */
static bool
within(const char *a, const char *b)
{
	size_t n = strlen(b);

	if (!strcmp(b, "/"))
		return true;
	return !strncmp(a, b, n) && (a[n] == 0 || a[n] == '/');
}

static int
judge_list(char *const *l, int n, const char *path, const char *what, char *why, size_t whylen)
{
	for (int i = 0; i < n; i++) {
		const char *x = l[i];

		if (!strcmp(x, "/")) { /* only / itself: everything lies inside it */
			if (!strcmp(path, "/")) {
				snprintf(why, whylen, "it is the host's /");
				return -EPERM;
			}
			continue;
		}
		if (within(path, x)) {
			snprintf(why, whylen, "%s is %s%s", path, !strcmp(path, x) ? "" : "inside ",
				 x);
			snprintf(why + strlen(why), whylen - strlen(why), "%s", what);
			return -EPERM;
		}
		if (within(x, path)) {
			snprintf(why, whylen, "%s holds %s%s", path, x, what);
			return -EPERM;
		}
	}
	return 0;
}

int
dk_paths_judge(const struct dk_paths *p, const char *path, bool ro, char *why, size_t whylen)
{
	if (path[0] != '/') {
		snprintf(why, whylen, "%s is not an absolute path", path);
		return -EPERM;
	}
	if (judge_list(p->never, p->nnever, path, "", why, whylen))
		return -EPERM;
	if (!ro && judge_list(p->rw, p->nrw, path, " (bind it read-only: ro)", why, whylen))
		return -EPERM;
	return 0;
}

/* Does rest (the part of a path that does not exist) name a "." or ".."
 * component? Left unresolved, it would be read otherwise by the mount. */
static bool
dots(const char *rest)
{
	for (const char *s = rest; *s; s++)
		if (s[0] == '/' && s[1] == '.' &&
		    (s[2] == '/' || !s[2] || (s[2] == '.' && (s[3] == '/' || !s[3]))))
			return true;
	return false;
}

int
dk_resolve(const char *path, char *out, size_t outlen)
{
	char buf[PATH_MAX], real[PATH_MAX];
	size_t cut = strlen(path);
	const char *rest;

	if (path[0] != '/')
		return -EINVAL;
	if (cut >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, cut + 1);
	while (!realpath(buf, real)) {
		if (errno != ENOENT)
			return -errno;
		while (cut > 1 && buf[cut - 1] == '/')
			cut--;
		while (cut > 1 && buf[cut - 1] != '/')
			cut--;
		while (cut > 1 && buf[cut - 1] == '/')
			cut--;
		buf[cut] = 0;
	}
	rest = path + cut;
	if (dots(rest))
		return -EINVAL;
	if (!strcmp(real, "/") && *rest)
		real[0] = 0;
	if ((size_t)snprintf(out, outlen, "%s%s", real, rest) >= outlen)
		return -ENAMETOOLONG;
	return 0;
}
