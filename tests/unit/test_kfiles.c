// SPDX-License-Identifier: Apache-2.0
/* Unit tests for kfiles.c's planner (kfiles_plan_in): which mounts of the
 * kernel's pseudo-filesystems get which step, where a path of procfs's and
 * sysfs's lists lands inside a mount whose root is not the filesystem's
 * (a bind of /proc/sys, of /sys/devices), the whole mount when its root lies
 * below a listed path, the order (longest path first), mountinfo's escapes
 * and optional fields, and lines it must skip. Pure: no mount is made (the
 * steps carried out are sandbox_enter's, tests/unit/test_sandbox.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/kfiles.h"
#include "table.h"

/* Each step as "H|M|R[*] PATH #ID" (* the whole mount), one per line, in
 * the plan's order. */
static void
render(const struct kfiles_plan *p, char *out, size_t outlen)
{
	static const char how[] = {'H', 'M', 'R'};
	size_t off = 0;

	out[0] = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct kfiles_step *s = &p->step[i];

		off += (size_t)snprintf(out + off, outlen - off, "%c%s %s #%llu\n", how[s->how],
					s->whole ? "*" : "", s->path, s->mnt_id);
		assert_true(off < outlen);
		/* a step is always inside its mount */
		assert_int_equal(strncmp(s->path, s->point, strlen(s->point)), 0);
		if (s->whole)
			assert_string_equal(s->path, s->point);
	}
}

#define PROC_ROOT(at, id)                                                                          \
	"M " at "/latency_stats #" id "\n"                                                         \
	"M " at "/timer_stats #" id "\n"                                                           \
	"M " at "/sched_debug #" id "\n"                                                           \
	"M " at "/timer_list #" id "\n"                                                            \
	"M " at "/asound #" id "\n"                                                                \
	"M " at "/kcore #" id "\n"                                                                 \
	"M " at "/acpi #" id "\n"                                                                  \
	"M " at "/keys #" id "\n"                                                                  \
	"M " at "/scsi #" id "\n"

struct plan_case {
	const char *name;
	const char *mountinfo;
	int err;
	const char *want; /* render()'s text: as long paths in the order mountinfo lists them */
};

static const struct plan_case plan_cases[] = {
	{"empty", "", 0, ""},
	{"not_ours",
	 "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
	 "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
	 "50 27 0:50 / /tmp rw - tmpfs tmpfs rw\n"
	 "60 27 0:4 net:[4026531840] /run/netns/x rw - nsfs nsfs rw\n",
	 0, ""},
	{"sysfs_at_sys", "23 27 0:22 / /sys rw,relatime - sysfs sysfs rw\n", 0,
	 "M /sys/devices/virtual/powercap #23\n"
	 "M /sys/devices/virtual/tpm #23\n"
	 "M /sys/firmware #23\n"
	 "R* /sys #23\n"},
	/* a bind of /sys/devices: the masks below its root land inside it */
	{"sysfs_bind_devices", "70 27 0:22 /devices /srv/root/sys rw - sysfs sysfs rw\n", 0,
	 "M /srv/root/sys/virtual/powercap #70\n"
	 "M /srv/root/sys/virtual/tpm #70\n"
	 "R* /srv/root/sys #70\n"},
	/* a bind of /sys/firmware/acpi: below a masked path, masked as a whole */
	{"sysfs_bind_masked", "71 27 0:22 /firmware/acpi /mnt/acpi rw - sysfs sysfs rw\n", 0,
	 "M* /mnt/acpi #71\n"},
	{"proc_second_mount", "72 27 0:42 / /srv/chroot/proc rw - proc proc rw\n", 0,
	 "R /srv/chroot/proc/sysrq-trigger #72\n" PROC_ROOT("/srv/chroot/proc",
							    "72") "R /srv/chroot/proc/sys #72\n"
								  "R /srv/chroot/proc/bus #72\n"
								  "R /srv/chroot/proc/irq #72\n"
								  "R /srv/chroot/proc/fs #72\n"},
	/* a bind of /proc/sys: its root is a read-only path */
	{"proc_bind_sys", "73 27 0:21 /sys /w/procsys rw - proc proc rw\n", 0,
	 "R* /w/procsys #73\n"},
	/* ... of /proc/sys/net: below one */
	{"proc_bind_sys_net", "74 27 0:21 /sys/net /w/net rw - proc proc rw\n", 0,
	 "R* /w/net #74\n"},
	{"proc_bind_kcore", "75 27 0:21 /kcore /w/kcore rw - proc proc rw\n", 0,
	 "M* /w/kcore #75\n"},
	/* per-process files: nothing of the lists is there */
	{"proc_bind_pid", "76 27 0:21 /1234 /w/p rw - proc proc rw\n", 0, ""},
	/* "/system" is not below "/sys", nor "/sysx" */
	{"proc_prefix_not_path",
	 "77 27 0:21 /system /w/a rw - proc proc rw\n"
	 "78 27 0:21 /sysrq-triggerx /w/b rw - proc proc rw\n",
	 0, ""},
	{"hidden",
	 "80 23 0:8 / /sys/kernel/debug rw - debugfs debugfs rw\n"
	 "81 80 0:13 / /sys/kernel/debug/tracing rw - tracefs tracefs rw\n"
	 "82 27 0:13 /instances/x /w/t rw - tracefs none rw\n",
	 0,
	 "H* /sys/kernel/debug/tracing #81\n"
	 "H* /sys/kernel/debug #80\n"
	 "H* /w/t #82\n"},
	{"read_only_types",
	 "90 23 0:7 / /sys/kernel/security rw - securityfs securityfs rw\n"
	 "91 23 0:9 / /sys/kernel/config rw - configfs configfs rw\n"
	 "92 22 0:40 / /proc/sys/fs/binfmt_misc rw - binfmt_misc binfmt_misc rw\n"
	 "93 23 0:41 / /sys/fs/pstore rw - pstore pstore rw\n"
	 "94 23 0:43 / /sys/firmware/efi/efivars rw - efivarfs efivarfs rw\n"
	 "95 23 0:44 / /sys/fs/fuse/connections rw - fusectl fusectl rw\n"
	 "96 23 0:45 / /sys/fs/selinux rw - selinuxfs selinuxfs rw\n"
	 "97 23 0:46 / /sys/fs/smackfs rw - smackfs smackfs rw\n"
	 "98 22 0:47 / /proc/fs/nfsd rw - nfsd nfsd rw\n",
	 0,
	 "R* /sys/firmware/efi/efivars #94\n"
	 "R* /proc/sys/fs/binfmt_misc #92\n"
	 "R* /sys/fs/fuse/connections #95\n"
	 "R* /sys/kernel/security #90\n"
	 "R* /sys/kernel/config #91\n"
	 "R* /sys/fs/selinux #96\n"
	 "R* /sys/fs/smackfs #97\n"
	 "R* /sys/fs/pstore #93\n"
	 "R* /proc/fs/nfsd #98\n"},
	/* \040 in a mount point, optional fields before the separator */
	{"escapes_optional_fields",
	 "99 27 0:21 /sys /w/a\\040b rw,nosuid shared:5 master:1 - proc proc rw\n", 0,
	 "R* /w/a b #99\n"},
	/* a procfs mounted on / (a chroot's view) */
	{"proc_at_root", "5 1 0:21 /sys / rw - proc proc rw\n", 0, "R* / #5\n"},
	{"garbage",
	 "\n \n- - - - - -\nx 1 0:1 / /w rw - proc proc rw\n"
	 "1 2 0:1 / /w rw proc proc rw\n"
	 "1 2 0:1 / /w rw -\n"
	 "1 2 0:1 rel /w rw - proc proc rw\n"
	 "1 2 0:1 /sys rel rw - proc proc rw\n"
	 "99999999999999999999999 2 0:1 /sys /w rw - proc proc rw\n"
	 "7 2 0:1 /sys /w",
	 0, ""},
	{"no_final_newline", "7 2 0:1 /sys /w rw - proc proc rw", 0, "R* /w #7\n"},
};

static void
run_plan(void **state)
{
	const struct plan_case *c = *state;
	struct kfiles_plan p;
	char got[8192];

	assert_int_equal(kfiles_plan_in(c->mountinfo, &p), c->err);
	render(&p, got, sizeof(got));
	assert_string_equal(got, c->want);
	kfiles_plan_free(&p);
}

/* Longest path first, whatever order mountinfo lists them in: a cover made
 * early never sits over the mount point of a later step. */
static void
test_order(void **state)
{
	struct kfiles_plan p;

	(void)state;
	assert_int_equal(
		kfiles_plan_in("22 27 0:21 / /proc rw - proc proc rw\n"
			       "23 27 0:22 / /sys rw - sysfs sysfs rw\n"
			       "80 23 0:8 / /sys/kernel/debug rw - debugfs d rw\n"
			       "92 22 0:40 / /proc/sys/fs/binfmt_misc rw - binfmt_misc b rw\n",
			       &p),
		0);
	assert_true(p.n > 4);
	for (size_t i = 1; i < p.n; i++)
		assert_true(strlen(p.step[i - 1].path) >= strlen(p.step[i].path));
	assert_string_equal(p.step[0].path, "/sys/devices/virtual/powercap");
	assert_string_equal(p.step[p.n - 1].path, "/sys");
	kfiles_plan_free(&p);
}

/* A path past PATH_MAX fails the plan (and the run: nothing half done). */
static void
test_too_long(void **state)
{
	size_t n = PATH_MAX - 8, len;
	struct kfiles_plan p = {0};
	char *mi = malloc(n + 64);

	(void)state;
	assert_non_null(mi);
	len = (size_t)sprintf(mi, "7 2 0:1 / /");
	memset(mi + len, 'a', n);
	strcpy(mi + len + n, " rw - proc proc rw\n");
	assert_int_equal(kfiles_plan_in(mi, &p), -ENAMETOOLONG);
	assert_int_equal(p.n, 0);
	assert_null(p.step);
	free(mi);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_too_long),
	};
	int failed = 0;

	failed += RUN_TABLE("kfiles_plan", plan_cases, run_plan);
	failed += cmocka_run_group_tests(tests, NULL, NULL);
	return failed ? 1 : 0;
}
