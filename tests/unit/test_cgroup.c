// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/kernel/cgroup.c. The mountinfo parser and --cgroup
 * resolution are pure and table-driven, one cmocka test per row. The
 * lifecycle tests need root and a cgroup2 mount (found at run time, never
 * assumed) and skip otherwise; they work below <mnt>/egressctl-unit-<pid>,
 * and their teardown kills every helper child and removes that cgroup. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sched.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "table.h"

#include "kernel/cgroup.h"

#define M	 "/sys/fs/cgroup/unified" /* parser tables only */
#define BUF_SIZE (PATH_MAX + 64)
#define POISON	 0x5a
#define WAIT_MS	 5000

static const char hybrid_mi[] =
	"22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime - sysfs sysfs rw\n"
	"30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static const char unified_mi[] =
	"22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
	"30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:8 - cgroup2 cgroup2 "
	"rw,nsdelegate,memory_recursiveprot\n"
	"31 22 0:27 / /sys/fs/bpf rw,nosuid,nodev,noexec,relatime shared:9 - bpf bpf rw,mode=700\n";

/* An output buffer of BUF_SIZE + 16 bytes of POISON, so that a write past
 * the length a call was given shows. */
static char *
poisoned_buf(void)
{
	char *buf = malloc(BUF_SIZE + 16);

	assert_non_null(buf);
	memset(buf, POISON, BUF_SIZE + 16);
	return buf;
}

/* Nothing of buf from outlen on was written; frees it. */
static void
assert_poison_from(char *buf, size_t outlen)
{
	for (size_t i = outlen; i < BUF_SIZE + 16; i++)
		assert_int_equal((unsigned char)buf[i], POISON);
	free(buf);
}

/* ---- cgroup_find_mount_in ---------------------------------------------- */

struct find_case {
	const char *name;
	const char *mountinfo;
	size_t outlen; /* 0: BUF_SIZE */
	int err;
	const char *want;
};

static const struct find_case find_cases[] = {
	{"hybrid", hybrid_mi, 0, 0, M},
	{"unified", unified_mi, 0, 0, "/sys/fs/cgroup"},
	{"both-prefers-sys-fs-cgroup",
	 "40 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
	 "41 22 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
	 0, 0, "/sys/fs/cgroup"},
	{"first-of-several",
	 "40 30 0:37 / /a rw - cgroup2 cgroup2 rw\n"
	 "41 30 0:37 / /b rw - cgroup2 cgroup2 rw\n",
	 0, 0, "/a"},
	{"sys-fs-cgroup-overmounted",
	 "30 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
	 "31 30 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
	 "40 31 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
	 0, 0, M},
	{"no-cgroup2",
	 "30 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
	 "31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
	 0, -ENOENT, NULL},
	{"empty", "", 0, -ENOENT, NULL},
	{"newlines-only", "\n\n\n", 0, -ENOENT, NULL},
	{"fstype-prefix-only",
	 "40 30 0:37 / /x rw - cgroup2x cgroup2 rw\n"
	 "41 30 0:37 / /y rw - cgroup cgroup2 rw\n",
	 0, -ENOENT, NULL},
	{"optional-fields",
	 "40 30 0:37 / " M " rw,relatime shared:5 master:1 - cgroup2 cgroup2 rw\n", 0, 0, M},
	{"optional-propagate-unbindable",
	 "40 30 0:37 / /cg rw propagate_from:2 unbindable - cgroup2 none rw\n", 0, 0, "/cg"},
	{"root-not-slash-cgroupns", "40 30 0:37 /../.. /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", 0,
	 0, "/sys/fs/cgroup"},
	{"escaped-space-tab-nl-backslash",
	 "41 30 0:38 / /mnt/a\\040b\\011c\\012d\\134e rw - cgroup2 x rw\n", 0, 0,
	 "/mnt/a b\tc\nd\\e"},
	{"escaped-sys-fs-cgroup", "41 30 0:38 / /sys/fs/\\143group rw - cgroup2 x rw\n", 0, 0,
	 "/sys/fs/cgroup"},
	{"escape-nul-kept-literal", "41 30 0:38 / /a\\000b rw - cgroup2 x rw\n", 0, 0, "/a\\000b"},
	{"escape-bad-digits-literal", "41 30 0:38 / /a\\9b\\47 rw - cgroup2 x rw\n", 0, 0,
	 "/a\\9b\\47"},
	{"escape-over-0377-literal", "41 30 0:38 / /a\\477 rw - cgroup2 x rw\n", 0, 0, "/a\\477"},
	{"trailing-backslash", "41 30 0:38 / /a\\ rw - cgroup2 x rw\n", 0, 0, "/a\\"},
	{"garbage-lines-skipped",
	 "garbage\n"
	 "- cgroup2 cgroup2 rw\n"
	 "40 30 0:37 / /trunc1 rw - cgroup2\n"
	 "40 30 0:37 / /trunc2 rw - cgroup2 cgroup2\n"
	 "40 30 0:37 / /nosep rw cgroup2 cgroup2 rw\n"
	 "x0 30 0:37 / /badid rw - cgroup2 cgroup2 rw\n"
	 "40 -1 0:37 / /badparent rw - cgroup2 cgroup2 rw\n"
	 "40 30 037 / /nocolon rw - cgroup2 cgroup2 rw\n"
	 "40 30 0: / /nominor rw - cgroup2 cgroup2 rw\n"
	 "40 30 0:37 / relative rw - cgroup2 cgroup2 rw\n"
	 "40 30 0:37 / /sepasopts - cgroup2 cgroup2 rw\n"
	 "40 30 0:37 /\n"
	 "41 30 0:38 / /good rw - cgroup2 cgroup2 rw\n",
	 0, 0, "/good"},
	{"truncated-last-line",
	 "41 30 0:38 / /good rw - cgroup2 cgroup2 rw\n40 30 0:37 / /sys/fs/c", 0, 0, "/good"},
	{"no-final-newline", "41 30 0:38 / /good rw - cgroup2 cgroup2 rw", 0, 0, "/good"},
	{"crlf-superopts", "41 30 0:38 / /good rw - cgroup2 cgroup2 rw\r\n", 0, 0, "/good"},
	{"extra-blanks", "41  30\t0:38 /   /good rw -  cgroup2 cgroup2 rw  \n", 0, 0, "/good"},
	{"outlen-exact", hybrid_mi, sizeof(M), 0, M},
	{"outlen-one-short", hybrid_mi, sizeof(M) - 1, -ENAMETOOLONG, NULL},
	{"outlen-exact-default", unified_mi, sizeof("/sys/fs/cgroup"), 0, "/sys/fs/cgroup"},
	{"outlen-short-default", unified_mi, sizeof("/sys/fs/cgroup") - 1, -ENAMETOOLONG, NULL},
	{"outlen-exact-escaped", "41 30 0:38 / /a\\040b rw - cgroup2 x rw\n", 5, 0, "/a b"},
	{"outlen-escaped-short", "41 30 0:38 / /a\\040b rw - cgroup2 x rw\n", 4, -ENAMETOOLONG,
	 NULL},
};

static void
run_find_case(void **state)
{
	const struct find_case *c = *state;
	size_t outlen = c->outlen ? c->outlen : BUF_SIZE;
	char *buf = poisoned_buf();

	assert_int_equal(cgroup_find_mount_in(c->mountinfo, buf, outlen), c->err);
	if (!c->err)
		assert_string_equal(buf, c->want);
	assert_poison_from(buf, outlen);
}

static void
test_find_mount_in_null(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(cgroup_find_mount_in(NULL, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(cgroup_find_mount_in(hybrid_mi, NULL, 0), -EINVAL);
}

/* ---- cgroup_foreach_mount_in ------------------------------------------- */

struct foreach_case {
	const char *name;
	const char *mountinfo;
	const char *fstype;
	int fail_at; /* the callback returns -EIO on this match (1-based); 0: never */
	int ret;
	const char *seen; /* mount points passed to the callback, '|'-joined */
};

static const struct foreach_case foreach_cases[] = {
	{"bpf",
	 "50 22 0:40 / /sys/fs/bpf rw - bpf bpf rw\n"
	 "51 22 0:41 / /run/my\\040bpf rw shared:3 - bpf none rw,mode=700\n"
	 "52 22 0:42 / /bpfnot rw - bpffs bpf rw\n",
	 "bpf", 0, 2, "/sys/fs/bpf|/run/my bpf"},
	{"bpf-unified", unified_mi, "bpf", 0, 1, "/sys/fs/bpf"},
	{"cgroup2-hybrid", hybrid_mi, "cgroup2", 0, 1, M},
	{"cgroup-v1-hybrid", hybrid_mi, "cgroup", 0, 2,
	 "/sys/fs/cgroup/cpu|/sys/fs/cgroup/systemd"},
	{"cgroup2-several",
	 "40 30 0:37 / /a rw - cgroup2 cgroup2 rw\n"
	 "garbage line\n"
	 "41 30 0:37 / /b\\134c rw - cgroup2 cgroup2 rw\n"
	 "42 30 0:37 / /c rw - cgroup2 cgroup2 rw",
	 "cgroup2", 0, 3, "/a|/b\\c|/c"},
	{"none", hybrid_mi, "bpf", 0, 0, ""},
	{"empty-text", "", "cgroup2", 0, 0, ""},
	{"callback-error-first", unified_mi, "cgroup2", 1, -EIO, "/sys/fs/cgroup"},
	{"callback-error-second",
	 "40 30 0:37 / /a rw - cgroup2 cgroup2 rw\n"
	 "41 30 0:37 / /b rw - cgroup2 cgroup2 rw\n"
	 "42 30 0:37 / /c rw - cgroup2 cgroup2 rw\n",
	 "cgroup2", 2, -EIO, "/a|/b"},
};

struct seen {
	int calls;
	int fail_at;
	char buf[512];
};

static int
collect(const char *mountpoint, void *arg)
{
	struct seen *s = arg;
	size_t used = strlen(s->buf);

	snprintf(s->buf + used, sizeof(s->buf) - used, "%s%s", used ? "|" : "", mountpoint);
	if (++s->calls == s->fail_at)
		return -EIO;
	return 0;
}

static void
run_foreach_case(void **state)
{
	const struct foreach_case *c = *state;
	struct seen s = {.fail_at = c->fail_at};

	assert_int_equal(cgroup_foreach_mount_in(c->mountinfo, c->fstype, collect, &s), c->ret);
	assert_string_equal(s.buf, c->seen);
	/* Without a callback it only counts. */
	if (!c->fail_at)
		assert_int_equal(cgroup_foreach_mount_in(c->mountinfo, c->fstype, NULL, NULL),
				 c->ret);
}

static int
positive_is_not_error(const char *mountpoint, void *arg)
{
	(void)mountpoint;
	(void)arg;
	return 7;
}

static void
test_foreach_positive_callback(void **state)
{
	(void)state;
	assert_int_equal(cgroup_foreach_mount_in(hybrid_mi, "cgroup", positive_is_not_error, NULL),
			 2);
	assert_int_equal(cgroup_foreach_mount_in(NULL, "cgroup", NULL, NULL), -EINVAL);
	assert_int_equal(cgroup_foreach_mount_in(hybrid_mi, NULL, NULL, NULL), -EINVAL);
}

/* ---- cgroup_foreach_mount_at --------------------------------------------- */

static int
collect_roots(const char *root, void *arg)
{
	char *out = arg;

	strcat(out, root);
	strcat(out, "|");
	return 0;
}

/* The mounts on one mount point, in order, with their roots: a file bound
 * twice over a socket (the later on top), one of them of a file removed */
static void
test_foreach_mount_at(void **state)
{
	static const char mi[] = "24 1 254:0 / / rw - ext4 /dev/vda rw\n"
				 "30 24 0:26 /egressctl/egressctl-docker-7.sock//deleted "
				 "/run/docker.sock rw - tmpfs "
				 "tmpfs rw\n"
				 "31 24 0:27 / /run/docker rw - tmpfs tmpfs rw\n"
				 "32 30 0:26 /a\\040b/egressctl-docker-9.sock /run/docker.sock rw "
				 "- tmpfs tmpfs rw\n";
	char out[256] = "";

	(void)state;
	assert_int_equal(cgroup_foreach_mount_at(mi, "/run/docker.sock", collect_roots, out), 2);
	assert_string_equal(out, "/egressctl/egressctl-docker-7.sock//deleted|"
				 "/a b/egressctl-docker-9.sock|");
	assert_int_equal(cgroup_foreach_mount_at(mi, "/run", collect_roots, out), 0);
	assert_int_equal(
		cgroup_foreach_mount_at(mi, "/run/docker.sock", positive_is_not_error, NULL), 2);
	assert_int_equal(cgroup_foreach_mount_at(NULL, "/", collect_roots, out), -EINVAL);
}

/* ---- cgroup_resolve ------------------------------------------------------ */

struct resolve_case {
	const char *name;
	const char *mnt;
	const char *arg;
	pid_t pid;
	size_t outlen; /* 0: BUF_SIZE */
	int err;
	const char *want;
	bool fresh;
};

/* Filled by main(): names and paths around NAME_MAX and PATH_MAX. */
static char name_255[NAME_MAX + 1], name_256[NAME_MAX + 2];
static char want_255[sizeof(M "/egressctl/") + NAME_MAX];
static char abs_255[sizeof(M "/") + NAME_MAX], abs_256[sizeof(M "/") + NAME_MAX + 1];
static char abs_too_long[BUF_SIZE + 16];

static const struct resolve_case resolve_cases[] = {
	{"null-fresh", M, NULL, 1234, 0, 0, M "/egressctl/run-1234", true},
	{"null-pid-zero", M, NULL, 0, 0, -EINVAL, NULL, false},
	{"name", M, "web", 1, 0, 0, M "/egressctl/web", false},
	{"name-all-classes", M, "a.B_c-9", 1, 0, 0, M "/egressctl/a.B_c-9", false},
	{"name-dots-inside", M, "..a", 1, 0, 0, M "/egressctl/..a", false},
	{"name-slash", M, "a/b", 1, 0, -EINVAL, NULL, false},
	{"name-trailing-slash", M, "a/", 1, 0, -EINVAL, NULL, false},
	{"name-dotdot", M, "..", 1, 0, -EINVAL, NULL, false},
	{"name-dot", M, ".", 1, 0, -EINVAL, NULL, false},
	{"name-empty", M, "", 1, 0, -EINVAL, NULL, false},
	{"name-space", M, "a b", 1, 0, -EINVAL, NULL, false},
	{"name-newline", M, "a\n", 1, 0, -EINVAL, NULL, false},
	{"name-utf8", M, "caf\xc3\xa9", 1, 0, -EINVAL, NULL, false},
	{"relative-dotdot", M, "../x", 1, 0, -EINVAL, NULL, false},
	{"name-255", M, name_255, 1, 0, 0, want_255, false},
	{"name-256", M, name_256, 1, 0, -ENAMETOOLONG, NULL, false},
	{"abs-under", M, M "/x", 1, 0, 0, M "/x", false},
	{"abs-deep", M, M "/x/y/z", 1, 0, 0, M "/x/y/z", false},
	{"abs-is-mnt", M, M, 1, 0, -EINVAL, NULL, false},
	{"abs-is-mnt-slash", M, M "/", 1, 0, -EINVAL, NULL, false},
	{"abs-is-mnt-dot", M, M "/.", 1, 0, -EINVAL, NULL, false},
	{"abs-is-mnt-via-dotdot", M, M "/a/..", 1, 0, -EINVAL, NULL, false},
	{"abs-outside", M, "/sys/fs/cgroup/x", 1, 0, -EINVAL, NULL, false},
	{"abs-root", M, "/", 1, 0, -EINVAL, NULL, false},
	{"abs-etc", M, "/etc/passwd", 1, 0, -EINVAL, NULL, false},
	{"abs-sibling-prefix", M, "/sys/fs/cgroup/unified2/x", 1, 0, -EINVAL, NULL, false},
	{"abs-shorter-prefix", M, "/sys/fs/cgroup/unifie/x", 1, 0, -EINVAL, NULL, false},
	{"abs-above-mnt", M, "/sys/fs", 1, 0, -EINVAL, NULL, false},
	{"dotdot-inside", M, M "/a/../b", 1, 0, 0, M "/b", false},
	{"dotdot-deep-inside", M, M "/a/b/c/../../d", 1, 0, 0, M "/a/d", false},
	{"dotdot-escapes", M, M "/a/../../x", 1, 0, -EINVAL, NULL, false},
	{"dotdot-escapes-mnt", M, M "/..", 1, 0, -EINVAL, NULL, false},
	{"dotdot-out-and-back", M, M "/../unified/x", 1, 0, -EINVAL, NULL, false},
	{"dotdot-above-root", M, "/../" M "/x", 1, 0, -EINVAL, NULL, false},
	{"dotdot-before-mnt", M, "/etc/.." M "/x", 1, 0, -EINVAL, NULL, false},
	{"dot-components", M, M "/./a/./b/.", 1, 0, 0, M "/a/b", false},
	{"trailing-slashes", M, M "/a/b///", 1, 0, 0, M "/a/b", false},
	{"double-slashes", M, "//sys///fs/cgroup//unified//a//b", 1, 0, 0, M "/a/b", false},
	{"dotdot-name-component", M, M "/..a/b..", 1, 0, 0, M "/..a/b..", false},
	{"mnt-trailing-slash-name", M "/", "web", 1, 0, 0, M "/egressctl/web", false},
	{"mnt-trailing-slash-abs", M "//", M "/x", 1, 0, 0, M "/x", false},
	{"mnt-root-abs", "/", "/x", 1, 0, 0, "/x", false},
	{"mnt-root-is-root", "/", "/", 1, 0, -EINVAL, NULL, false},
	{"mnt-root-null", "/", NULL, 42, 0, 0, "/egressctl/run-42", true},
	{"mnt-relative", "sys/fs/cgroup", "web", 1, 0, -EINVAL, NULL, false},
	{"mnt-with-dotdot", "/sys/fs/cgroup/../x", M "/x", 1, 0, -EINVAL, NULL, false},
	{"mnt-null", NULL, "web", 1, 0, -EINVAL, NULL, false},
	{"abs-component-255", M, abs_255, 1, 0, 0, abs_255, false},
	{"abs-component-256", M, abs_256, 1, 0, -ENAMETOOLONG, NULL, false},
	{"abs-too-long", M, abs_too_long, 1, 0, -ENAMETOOLONG, NULL, false},
	{"outlen-exact", M, "web", 1, sizeof(M "/egressctl/web"), 0, M "/egressctl/web", false},
	{"outlen-one-short", M, "web", 1, sizeof(M "/egressctl/web") - 1, -ENAMETOOLONG, NULL,
	 false},
	{"outlen-null-short", M, NULL, 1234, 20, -ENAMETOOLONG, NULL, false},
	{"outlen-abs-exact", M, M "/x", 1, sizeof(M "/x"), 0, M "/x", false},
	{"outlen-abs-short", M, M "/x", 1, sizeof(M "/x") - 1, -ENAMETOOLONG, NULL, false},
	{"outlen-abs-dotdot-short", M, M "/x/../y", 1, sizeof(M "/x") - 1, -ENAMETOOLONG, NULL,
	 false},
	{"outlen-one", M, "web", 1, 1, -ENAMETOOLONG, NULL, false},
};

static void
run_resolve_case(void **state)
{
	const struct resolve_case *c = *state;
	size_t outlen = c->outlen ? c->outlen : BUF_SIZE;
	char *buf = poisoned_buf();
	bool fresh = !c->fresh;

	assert_int_equal(cgroup_resolve(c->mnt, c->arg, c->pid, buf, outlen, &fresh), c->err);
	assert_int_equal(fresh, c->err ? false : c->fresh);
	if (!c->err)
		assert_string_equal(buf, c->want);
	assert_poison_from(buf, outlen);
}

static void
test_resolve_fresh_optional(void **state)
{
	char buf[128];

	(void)state;
	assert_int_equal(cgroup_resolve(M, NULL, 5, buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, M "/egressctl/run-5");
	assert_int_equal(cgroup_resolve(M, "web", 5, NULL, 0, NULL), -EINVAL);
}

/* ---- filesystem helpers on a plain directory (no root needed) ----------- */

static char tmpdir[64];

static int
tmpdir_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/egressctl-unit-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int
tmpdir_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void
test_create_mkdir_p(void **state)
{
	char path[256], file[256];
	bool created = true;
	struct stat st;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/a/b/c/", tmpdir);
	assert_int_equal(cgroup_create(path, &created), 0);
	assert_true(created);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(cgroup_create(path, &created), 0);
	assert_false(created);
	snprintf(path, sizeof(path), "%s/a//b/d", tmpdir);
	assert_int_equal(cgroup_create(path, &created), 0);
	assert_true(created);
	assert_int_equal(cgroup_create(path, NULL), 0);

	snprintf(file, sizeof(file), "%s/file", tmpdir);
	fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(cgroup_create(file, &created), -ENOTDIR);
	assert_false(created);
	snprintf(path, sizeof(path), "%s/file/x/y", tmpdir);
	assert_int_equal(cgroup_create(path, &created), -ENOTDIR);
	assert_int_equal(cgroup_create("", &created), -EINVAL);
}

static void
test_id_populated_plain_dir(void **state)
{
	char path[256];
	struct stat st;

	(void)state;
	assert_int_equal(stat(tmpdir, &st), 0);
	assert_true(cgroup_id_of(tmpdir) == (uint64_t)st.st_ino);
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	errno = 0;
	assert_true(cgroup_id_of(path) == 0);
	assert_int_equal(errno, ENOENT);
	assert_false(cgroup_populated(tmpdir));
	assert_false(cgroup_populated(path));
}

static void
test_kill_refuses_non_cgroup(void **state)
{
	char path[256];
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/victim", tmpdir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(cgroup_kill_and_remove(path, 100), -EINVAL);
	assert_int_equal(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	assert_int_equal(cgroup_kill_and_remove(path, 100), 0);
	assert_int_equal(cgroup_kill_procs(path), -ENOENT);
	assert_int_equal(cgroup_kill_and_remove("", 100), -EINVAL);
}

/* ---- real cgroup2 (root) ------------------------------------------------- */

static char cg_mnt[1024];
static char cg_base[1100];
static pid_t children[4];

static void
need_cgroup2(void)
{
	if (geteuid() != 0 || !cg_mnt[0])
		skip();
}

/* A child that moves itself into cg (writing its pid to cgroup.procs), then
 * sleeps; it dies with us (PDEATHSIG) and after 30 s at the latest. */
static pid_t
spawn_in(const char *cg)
{
	char path[PATH_MAX + 16], ok = 'n';
	int pfd[2], fd;
	size_t i;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) == -1)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(30);
		snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0 && dprintf(fd, "%d\n", (int)getpid()) > 0)
			ok = 'y';
		if (write(pfd[1], &ok, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	if (pid > 0 && (read(pfd[0], &ok, 1) != 1 || ok != 'y')) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(pfd[0]);
	for (i = 0; pid > 0 && i < sizeof(children) / sizeof(children[0]); i++) {
		if (!children[i]) {
			children[i] = pid;
			break;
		}
	}
	return pid;
}

/* Reaps a child we expect cgroup code to have killed; 0 on SIGKILL. */
static int
reap_killed(pid_t pid)
{
	size_t i;
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	for (i = 0; i < sizeof(children) / sizeof(children[0]); i++)
		if (children[i] == pid)
			children[i] = 0;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : -1;
}

static int
real_teardown(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(children) / sizeof(children[0]); i++) {
		if (children[i] > 0) {
			kill(children[i], SIGKILL);
			waitpid(children[i], NULL, 0);
		}
		children[i] = 0;
	}
	if (cg_base[0] && cgroup_kill_and_remove(cg_base, WAIT_MS) && access(cg_base, F_OK) == 0)
		return -1;
	return 0;
}

/* The id a BPF program sees, as tools/testing/selftests/bpf cgroup_helpers.c
 * gets it: the kernfs file handle. */
static uint64_t
handle_id(const char *path)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = {.fh.handle_bytes = sizeof(uint64_t)};
	int mount_id;
	uint64_t id;

	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) == -1)
		return 0;
	memcpy(&id, h.fh.f_handle, sizeof(id));
	return id;
}

static int
on_cgroup2(const char *mountpoint, void *arg)
{
	if (!strcmp(mountpoint, arg))
		return -EEXIST;
	return 0;
}

static void
test_real_find_mount(void **state)
{
	char out[PATH_MAX], *mi = NULL;
	struct statfs sfs;
	size_t cap = 0;
	FILE *f;

	(void)state;
	if (!cg_mnt[0])
		skip();
	assert_int_equal(cgroup_find_mount(out, sizeof(out)), 0);
	assert_string_equal(out, cg_mnt);
	assert_int_equal(statfs(out, &sfs), 0);
	assert_true(sfs.f_type == CGROUP2_SUPER_MAGIC);
	assert_int_equal(cgroup_find_mount(out, 4), -ENAMETOOLONG);

	/* The chosen mount is one of the cgroup2 mounts foreach reports. */
	f = fopen("/proc/self/mountinfo", "re");
	assert_non_null(f);
	assert_true(getdelim(&mi, &cap, '\0', f) > 0);
	fclose(f);
	assert_int_equal(cgroup_foreach_mount_in(mi, "cgroup2", on_cgroup2, cg_mnt), -EEXIST);
	free(mi);
}

static void
test_real_lifecycle(void **state)
{
	char a[PATH_MAX], leaf[PATH_MAX];
	bool created = false;
	struct stat st;
	uint64_t id;
	pid_t pid;

	(void)state;
	need_cgroup2();
	snprintf(a, sizeof(a), "%s/a", cg_base);
	snprintf(leaf, sizeof(leaf), "%s/a/b/leaf", cg_base);

	assert_int_equal(cgroup_create(leaf, &created), 0);
	assert_true(created);
	assert_int_equal(cgroup_create(leaf, &created), 0);
	assert_false(created);

	id = cgroup_id_of(leaf);
	assert_true(id != 0);
	assert_int_equal(stat(leaf, &st), 0);
	assert_true(id == (uint64_t)st.st_ino);
	assert_true(id == handle_id(leaf));
	assert_true(id != cgroup_id_of(a));

	assert_false(cgroup_populated(leaf));
	pid = spawn_in(leaf);
	assert_true(pid > 0);
	assert_true(cgroup_populated(leaf));
	assert_true(cgroup_populated(a)); /* populated counts descendants */

	assert_int_equal(cgroup_kill_and_remove(a, WAIT_MS), 0);
	assert_int_equal(reap_killed(pid), 0);
	assert_int_equal(stat(a, &st), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(stat(cg_base, &st), 0);
	assert_false(cgroup_populated(cg_base));
	/* Gone already: still success. */
	assert_int_equal(cgroup_kill_and_remove(a, WAIT_MS), 0);
}

static void
test_real_empty_and_nested(void **state)
{
	char e[PATH_MAX], deep[PATH_MAX];
	struct stat st;

	(void)state;
	need_cgroup2();
	snprintf(e, sizeof(e), "%s/empty", cg_base);
	snprintf(deep, sizeof(deep), "%s/empty/x/y/z", cg_base);
	assert_int_equal(cgroup_create(deep, NULL), 0);
	snprintf(deep, sizeof(deep), "%s/empty/x/w", cg_base);
	assert_int_equal(cgroup_create(deep, NULL), 0);
	assert_int_equal(cgroup_kill_and_remove(e, WAIT_MS), 0);
	assert_int_equal(stat(e, &st), -1);
	assert_int_equal(errno, ENOENT);
}

/* The fallback used where cgroup.kill does not exist (before 5.14). */
static void
test_real_kill_procs(void **state)
{
	char f[PATH_MAX], sub[PATH_MAX];
	struct stat st;
	pid_t p1, p2;
	int i;

	(void)state;
	need_cgroup2();
	snprintf(f, sizeof(f), "%s/fallback", cg_base);
	snprintf(sub, sizeof(sub), "%s/fallback/sub", cg_base);
	assert_int_equal(cgroup_create(sub, NULL), 0);
	p1 = spawn_in(f);
	assert_true(p1 > 0);
	p2 = spawn_in(sub);
	assert_true(p2 > 0);
	assert_true(cgroup_populated(f));

	assert_int_equal(cgroup_kill_procs(f), 2);
	assert_int_equal(reap_killed(p1), 0);
	assert_int_equal(reap_killed(p2), 0);
	for (i = 0; i < WAIT_MS / 10 && cgroup_populated(f); i++)
		usleep(10 * 1000);
	assert_false(cgroup_populated(f));
	assert_int_equal(cgroup_kill_procs(f), 0);
	assert_int_equal(cgroup_kill_and_remove(f, WAIT_MS), 0);
	assert_int_equal(stat(f, &st), -1);
}

/* --timeout's TERM and --kill-after's KILL (cgroup_signal, cgroup_kill)
 * reach the processes of the cgroup, and the daemon's move out of a target
 * (cgroup_enter) puts a process in. */
static void
test_real_signal_kill_enter(void **state)
{
	char f[PATH_MAX], sub[PATH_MAX];
	pid_t p1, p3;
	int i;

	(void)state;
	need_cgroup2();
	snprintf(f, sizeof(f), "%s/signal", cg_base);
	snprintf(sub, sizeof(sub), "%s/signal/sub", cg_base);
	assert_int_equal(cgroup_create(sub, NULL), 0);
	p1 = spawn_in(f);
	assert_true(p1 > 0);
	assert_int_equal(cgroup_signal(f, SIGKILL), 1);
	assert_int_equal(reap_killed(p1), 0);
	for (i = 0; i < WAIT_MS / 10 && cgroup_populated(f); i++)
		usleep(10 * 1000);
	assert_int_equal(cgroup_signal(f, SIGKILL), 0);

	p3 = spawn_in(cg_base); /* outside f: only cgroup_enter puts it there */
	assert_true(p3 > 0);
	assert_false(cgroup_populated(f));
	assert_int_equal(cgroup_enter(sub, p3), 0);
	assert_true(cgroup_populated(f));
	assert_int_equal(cgroup_kill(f), 0);
	assert_int_equal(reap_killed(p3), 0);

	assert_int_equal(cgroup_kill_and_remove(f, WAIT_MS), 0);
	assert_int_equal(cgroup_signal(f, SIGTERM), -ENOENT);
	assert_int_equal(cgroup_kill(f), -ENOENT);
	assert_int_equal(cgroup_enter(f, p3), -ENOENT);
}

/* --timeout's TERM reached only the processes of the run's own cgroup, not
 * those of its child cgroups: cgroup_signal lists the pids twice (before
 * and after opening their pidfds), and the second listing read the same
 * directory through a dup() of the first one's descriptor, whose offset
 * was at the end, so it found no child cgroup and the pids there counted
 * as gone. The same walk, repeated, is cgroup_kill_and_remove's fallback
 * without cgroup.kill. */
static void
test_real_signal_children(void **state)
{
	char f[PATH_MAX], sub[PATH_MAX], deep[PATH_MAX];
	pid_t p1, p2, p3, *v = NULL, *v2 = NULL;
	size_t n = 0, n2 = 0;
	int dfd;

	(void)state;
	need_cgroup2();
	snprintf(f, sizeof(f), "%s/nested", cg_base);
	snprintf(sub, sizeof(sub), "%s/nested/sub", cg_base);
	snprintf(deep, sizeof(deep), "%s/nested/sub/deep", cg_base);
	assert_int_equal(cgroup_create(deep, NULL), 0);
	p1 = spawn_in(f);
	assert_true(p1 > 0);
	p2 = spawn_in(sub);
	assert_true(p2 > 0);
	p3 = spawn_in(deep);
	assert_true(p3 > 0);
	/* the pre-existing pass's listing walks the same way */
	dfd = open(f, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(cgroup_pids_at(dfd, &v, &n), 0);
	assert_int_equal(cgroup_pids_at(dfd, &v2, &n2), 0); /* again, on the same fd */
	close(dfd);
	assert_int_equal(n, 3);
	assert_int_equal(n2, 3);
	free(v);
	free(v2);
	assert_int_equal(cgroup_signal(f, SIGKILL), 3);
	assert_int_equal(reap_killed(p1), 0);
	assert_int_equal(reap_killed(p2), 0);
	assert_int_equal(reap_killed(p3), 0);
	assert_int_equal(cgroup_kill_and_remove(f, WAIT_MS), 0);
}

/* cgroup.kill answers EOPNOTSUPP in a threaded cgroup (and cgroup.procs
 * cannot be read there), so this runs the cgroup.threads fallback. */
static void
test_real_threaded_fallback(void **state)
{
	char t[PATH_MAX], th[PATH_MAX];
	struct stat st;
	pid_t pid;
	int fd;

	(void)state;
	need_cgroup2();
	snprintf(t, sizeof(t), "%s/threaded", cg_base);
	snprintf(th, sizeof(th), "%s/threaded/th", cg_base);
	assert_int_equal(cgroup_create(th, NULL), 0);
	snprintf(th, sizeof(th), "%s/threaded/th/cgroup.type", cg_base);
	fd = open(th, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	if (write(fd, "threaded", 8) != 8) {
		close(fd);
		skip(); /* no threaded cgroups (before 4.14) */
	}
	close(fd);
	pid = spawn_in(t);
	assert_true(pid > 0);
	snprintf(th, sizeof(th), "%s/threaded/th/cgroup.threads", cg_base);
	fd = open(th, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_true(dprintf(fd, "%d\n", (int)pid) > 0);
	close(fd);
	snprintf(th, sizeof(th), "%s/threaded/th", cg_base);
	assert_true(cgroup_populated(th));

	assert_int_equal(cgroup_kill_and_remove(th, WAIT_MS), 0);
	assert_int_equal(reap_killed(pid), 0);
	assert_int_equal(stat(th, &st), -1);
	assert_int_equal(cgroup_kill_and_remove(t, WAIT_MS), 0);
	assert_int_equal(stat(t, &st), -1);
}

/* A mount root must be refused before anything is killed. Done on a cgroup2
 * mount made in a child's own cgroup and mount namespaces, whose root is a
 * test cgroup holding only that child: were the check missing, the child
 * would kill itself, never the host. */
static void
test_real_refuses_mount_root(void **state)
{
	char ns[PATH_MAX], dir[] = "/tmp/egressctl-unit-mnt-XXXXXX";
	int status, ret;
	pid_t pid;

	(void)state;
	need_cgroup2();
	snprintf(ns, sizeof(ns), "%s/ns", cg_base);
	assert_int_equal(cgroup_create(ns, NULL), 0);
	assert_non_null(mkdtemp(dir));

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char procs[PATH_MAX + 16];
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(30);
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", ns);
		fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || dprintf(fd, "%d\n", (int)getpid()) <= 0)
			_exit(2);
		close(fd);
		if (unshare(CLONE_NEWCGROUP | CLONE_NEWNS) == -1 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1 ||
		    mount("cgroup2", dir, "cgroup2", 0, NULL) == -1)
			_exit(77);
		ret = cgroup_kill_and_remove(dir, 1000);
		_exit(ret == -EBUSY ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	rmdir(dir);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		skip();
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(cgroup_kill_and_remove(ns, WAIT_MS), 0);
}

static int
real_group_setup(void **state)
{
	(void)state;
	if (cgroup_find_mount(cg_mnt, sizeof(cg_mnt)))
		cg_mnt[0] = '\0';
	if (cg_mnt[0] && geteuid() == 0)
		snprintf(cg_base, sizeof(cg_base), "%s/egressctl-unit-%d", cg_mnt, (int)getpid());
	return 0;
}

static int
real_group_teardown(void **state)
{
	struct stat st;

	real_teardown(state);
	return cg_base[0] && stat(cg_base, &st) == 0 ? -1 : 0;
}

/* ---- main ---------------------------------------------------------------- */

static void
fill_long_names(void)
{
	memset(name_255, 'n', NAME_MAX);
	memset(name_256, 'n', NAME_MAX + 1);
	snprintf(want_255, sizeof(want_255), M "/egressctl/%s", name_255);
	snprintf(abs_255, sizeof(abs_255), M "/%s", name_255);
	snprintf(abs_256, sizeof(abs_256), M "/%s", name_256);
	memcpy(abs_too_long, M, strlen(M));
	for (size_t i = strlen(M); i + 2 < sizeof(abs_too_long); i += 2)
		memcpy(abs_too_long + i, "/x", 2);
}

int
main(void)
{
	const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_find_mount_in_null),
		cmocka_unit_test(test_foreach_positive_callback),
		cmocka_unit_test(test_foreach_mount_at),
		cmocka_unit_test(test_resolve_fresh_optional),
	};
	const struct CMUnitTest plain[] = {
		cmocka_unit_test(test_create_mkdir_p),
		cmocka_unit_test(test_id_populated_plain_dir),
		cmocka_unit_test(test_kill_refuses_non_cgroup),
	};
	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_real_find_mount),
		cmocka_unit_test_teardown(test_real_lifecycle, real_teardown),
		cmocka_unit_test_teardown(test_real_empty_and_nested, real_teardown),
		cmocka_unit_test_teardown(test_real_kill_procs, real_teardown),
		cmocka_unit_test_teardown(test_real_signal_kill_enter, real_teardown),
		cmocka_unit_test_teardown(test_real_signal_children, real_teardown),
		cmocka_unit_test_teardown(test_real_threaded_fallback, real_teardown),
		cmocka_unit_test_teardown(test_real_refuses_mount_root, real_teardown),
	};
	int failed = 0;

	fill_long_names();
	failed += RUN_TABLE("find_mount_in", find_cases, run_find_case);
	failed += RUN_TABLE("foreach_mount_in", foreach_cases, run_foreach_case);
	failed += RUN_TABLE("resolve", resolve_cases, run_resolve_case);
	failed += cmocka_run_group_tests_name("misc", misc, NULL, NULL);
	failed += cmocka_run_group_tests_name("plain_dir", plain, tmpdir_setup, tmpdir_teardown);
	failed += cmocka_run_group_tests_name("real_cgroup2", real, real_group_setup,
					      real_group_teardown);
	return failed ? 1 : 0;
}
