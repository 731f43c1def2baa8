// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for the mountinfo parsers in userspace/kernel/cgroup.c and
 * kfiles.c: arbitrary bytes, NUL-terminated, go to cgroup_find_mount_in()
 * with roomy and tight output buffers, to cgroup_foreach_mount_in() and to
 * kfiles_plan_in(). Besides memory errors (ASan) it checks that results are
 * consistent: every mount point is absolute, fits its buffer, and the chosen
 * cgroup2 mount is one that foreach reports, the mounts on one mount point
 * are counted as visited; every step of the kernel files'
 * plan is an absolute path inside its mount point (the mount point itself
 * for a whole-mount step), shorter than PATH_MAX, longest first. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/cgroup.h"
#include "sandbox/kfiles.h"

struct check {
	const char *want; /* cgroup_find_mount_in() result to look for */
	bool found;
	int calls;
	int fail_at; /* return -EIO on this call; 0: never */
};

static int
visit(const char *mountpoint, void *arg)
{
	struct check *c = arg;

	if (mountpoint[0] != '/')
		abort();
	if (c->want && !strcmp(mountpoint, c->want))
		c->found = true;
	if (++c->calls == c->fail_at)
		return -EIO;
	return 0;
}

static int
visit_root(const char *root, void *arg)
{
	struct check *c = arg;

	if (!root)
		abort();
	c->calls++;
	return 0;
}

static void
check_plan(const char *text)
{
	struct kfiles_plan p;
	size_t i, len, prev = PATH_MAX;
	int err;

	err = kfiles_plan_in(text, &p);
	if (err && err != -ENOMEM && err != -ENAMETOOLONG)
		abort();
	if (err && (p.n || p.step))
		abort();
	for (i = 0; i < p.n; i++) {
		const struct kfiles_step *s = &p.step[i];

		len = strlen(s->path);
		if (s->path[0] != '/' || s->point[0] != '/' || len >= PATH_MAX || len > prev ||
		    strncmp(s->path, s->point, strlen(s->point)) ||
		    (s->whole && strcmp(s->path, s->point)) || s->how > KFILES_RO)
			abort();
		prev = len;
	}
	kfiles_plan_free(&p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char big[4096], small[16], *text;
	struct check c = {0};
	int err, n;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	err = cgroup_find_mount_in(text, big, sizeof(big));
	if (err && err != -ENOENT && err != -ENAMETOOLONG)
		abort();
	if (!err && (big[0] != '/' || strlen(big) >= sizeof(big)))
		abort();
	/* A tight buffer fails or agrees. */
	n = cgroup_find_mount_in(text, small, sizeof(small));
	if (!n && (err || strcmp(small, big)))
		abort();

	c.want = err ? NULL : big;
	n = cgroup_foreach_mount_in(text, "cgroup2", visit, &c);
	if (n < 0 || n != c.calls || (c.want && !c.found))
		abort();
	if (cgroup_foreach_mount_in(text, "cgroup2", NULL, NULL) != n)
		abort();

	/* A failing callback stops the walk with its error. */
	c = (struct check){.fail_at = 1 + (size ? data[0] % 3 : 0)};
	n = cgroup_foreach_mount_in(text, "bpf", visit, &c);
	if (n < 0 ? n != -EIO || c.calls != c.fail_at : n != c.calls)
		abort();

	/* the mounts on a mount point: never more than the lines */
	c = (struct check){0};
	n = cgroup_foreach_mount_at(text, "/run/docker.sock", visit_root, &c);
	if (n < 0 || n != c.calls)
		abort();

	check_plan(text);
	free(text);
	return 0;
}
