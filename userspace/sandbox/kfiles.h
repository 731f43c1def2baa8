// SPDX-License-Identifier: Apache-2.0
/* The kernel's own files in CMD's mount namespace: every mount of a kernel
 * pseudo-filesystem, wherever it is (a chroot's /proc, a build root's /sys,
 * a bind of /proc/sys, a container's own procfs), found in mountinfo by its
 * type and root, gets what /proc and /sys get: the sysctls and other knobs
 * read-only, a few files masked, debugfs and tracefs hidden. Runs in the
 * sandbox's child, in its fresh mount namespace, while it still has
 * CAP_SYS_ADMIN (sandbox/sandbox.c calls kfiles_protect()). */
#ifndef KFILES_H
#define KFILES_H

#include <stdbool.h>
#include <stddef.h>

enum kfiles_how {
	KFILES_HIDE, /* an empty read-only tmpfs over the mount */
	KFILES_MASK, /* a directory gets an empty read-only tmpfs, a file /dev/null */
	KFILES_RO,   /* read-only, nosuid, nodev, noexec, with every mount below it */
};

struct kfiles_step {
	enum kfiles_how how;
	bool whole;		   /* the mount itself (path is its mount point) */
	unsigned long long mnt_id; /* mountinfo's first field: the mount treated */
	char *point;		   /* its mount point, unescaped */
	char *path;		   /* what is treated: the mount point, or a path below it */
	size_t seq;		   /* order found, to keep the sort stable */
};

struct kfiles_plan {
	struct kfiles_step *step; /* longest path first: a cover never hides a later step */
	size_t n;
};

/* The steps for mountinfo text (the format of /proc/self/mountinfo). Per
 * mount, by fstype:
 *   proc: each of the read-only paths (/sys, /sysrq-trigger, /bus, /fs,
 *     /irq) and masked paths (/kcore, /keys, /timer_list, /acpi, ...) is
 *     reached at mountpoint + (path - root) when it lies below the mount's
 *     root; when the root lies below one (a bind of /proc/sys: root /sys),
 *     the whole mount is read-only (or masked);
 *   sysfs: the whole mount read-only, plus its masks (/firmware,
 *     /devices/virtual/tpm, /devices/virtual/powercap) the same way;
 *   debugfs, tracefs: hidden;
 *   securityfs, configfs, binfmt_misc, pstore, efivarfs, fusectl, selinuxfs,
 *   smackfs, nfsd: the whole mount read-only.
 * Lines it cannot read, and mounts with a relative root or mount point, are
 * skipped. Pure (fuzzed). Returns 0, -ENOMEM, -ENAMETOOLONG (a path past
 * PATH_MAX); *out is empty on error. */
int kfiles_plan_in(const char *mountinfo, struct kfiles_plan *out);
void kfiles_plan_free(struct kfiles_plan *p);

/* Reads /proc/self/mountinfo and carries out kfiles_plan_in()'s steps. A
 * step whose mount point no longer shows that mount (another mount on top,
 * or under a cover made earlier) is skipped: what is on top is a mount of
 * its own, with its own steps. A path below a mount point that does not
 * exist (this kernel has no such file) is skipped. Needs CAP_SYS_ADMIN in
 * a private mount namespace. Returns 0 or -errno; *what names what failed
 * (valid until the next call). */
int kfiles_protect(const char **what);

/* An empty read-only tmpfs over a directory, /dev/null over anything else.
 * Returns 0 or -errno (-ENOENT: nothing there). */
int kfiles_mask_path(const char *path);

#endif /* KFILES_H */
