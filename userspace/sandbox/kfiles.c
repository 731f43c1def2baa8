// SPDX-License-Identifier: Apache-2.0
/* The kernel's knobs in CMD's mount namespace, wherever they are mounted.
 * uid 0 without capabilities (--user root, or root through sudo with
 * --allow-sudo) still passes the owner check of every file root owns, and
 * /proc/sys/kernel/core_pattern and modprobe name programs the kernel runs
 * as real root outside every cgroup; per-netns sysctls answer to the netns
 * owner's uid 0; /proc/sysrq-trigger reboots; /sys/kernel/uevent_helper runs
 * a program on every uevent; binfmt_misc's register names interpreters for
 * every later exec, root's included. A second procfs or sysfs mount (a
 * chroot's, a build root's, a bind of /proc or of /proc/sys) reaches the
 * same files by another path, so the treatment is per mount, not per path:
 * this file reads mountinfo, plans a step per mount of each pseudo-filesystem
 * (kfiles_plan_in, pure and fuzzed: the fstype, and the mount's root inside
 * its filesystem to place a path of the list in it) and carries them out
 * (kfiles_protect). The lists are runc's defaults (libcontainer/specconv/
 * example.go: ReadonlyPaths and MaskedPaths) plus Docker's powercap. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "kernel/cgroup.h"
#include "sandbox/kfiles.h"

#define KF_N(a) (sizeof(a) / sizeof((a)[0]))

/* paths inside procfs: read-only (sysctls, reboot, IRQ affinity, PCI/USB
 * config writes, filesystem knobs) and masked (kernel memory, keys, timer
 * and scheduler internals, hardware knobs: /proc/scsi/scsi adds devices) */
static const char *const proc_ro[] = {"/sys", "/sysrq-trigger", "/bus", "/fs", "/irq"};
static const char *const proc_masked[] = {
	"/acpi",       "/asound",      "/kcore",       "/keys", "/latency_stats",
	"/timer_list", "/timer_stats", "/sched_debug", "/scsi",
};
/* inside sysfs, which is read-only as a whole: firmware tables, the TPM,
 * energy counters (a side channel) */
static const char *const sys_masked[] = {
	"/firmware",
	"/devices/virtual/tpm",
	"/devices/virtual/powercap",
};

struct kf_type {
	const char *fstype;
	int whole; /* enum kfiles_how for the whole mount, or -1: by the lists */
	const char *const *ro, *const *masked;
	size_t nro, nmasked;
};

/* debugfs and tracefs are hidden, not read-only: nothing a job needs is
 * there, a read-only mount still lets root read kernel internals (addresses,
 * trace buffers of every process) and run the read side of files that act
 * (trace_pipe consumes), and debugfs automounts tracefs at tracing/ on the
 * first lookup, a mount no seccomp rule sees being made. The rest is
 * read-only: securityfs (IMA policy, lockdown), configfs (its mkdir makes
 * kernel objects: netconsole sends the kernel log to any address),
 * binfmt_misc (register, status), pstore (unlink erases crash records),
 * efivarfs (firmware variables), fusectl (abort any FUSE connection),
 * selinuxfs and smackfs (policy), nfsd (server threads and ports). */
static const struct kf_type kf_types[] = {
	{"proc", -1, proc_ro, proc_masked, KF_N(proc_ro), KF_N(proc_masked)},
	{"sysfs", KFILES_RO, NULL, sys_masked, 0, KF_N(sys_masked)},
	{"debugfs", KFILES_HIDE, NULL, NULL, 0, 0},
	{"tracefs", KFILES_HIDE, NULL, NULL, 0, 0},
	{"securityfs", KFILES_RO, NULL, NULL, 0, 0},
	{"configfs", KFILES_RO, NULL, NULL, 0, 0},
	{"binfmt_misc", KFILES_RO, NULL, NULL, 0, 0},
	{"pstore", KFILES_RO, NULL, NULL, 0, 0},
	{"efivarfs", KFILES_RO, NULL, NULL, 0, 0},
	{"fusectl", KFILES_RO, NULL, NULL, 0, 0},
	{"selinuxfs", KFILES_RO, NULL, NULL, 0, 0},
	{"smackfs", KFILES_RO, NULL, NULL, 0, 0},
	{"nfsd", KFILES_RO, NULL, NULL, 0, 0},
};

/* ---- reading mountinfo ------------------------------------------------------------------- */

struct kf_mount {
	unsigned long long id;
	char *root, *point; /* unescaped */
	const struct kf_type *type;
};

/* The n-th space-separated field of line[0..len): its start, *flen its
 * length; NULL when the line has fewer. */
static const char *
kf_field(const char *line, size_t len, unsigned int n, size_t *flen)
{
	size_t i = 0, start;

	for (;;) {
		start = i;
		while (i < len && line[i] != ' ')
			i++;
		if (n-- == 0) {
			*flen = i - start;
			return line + start;
		}
		if (i >= len)
			return NULL;
		i++;
	}
}

/* A copy of s[0..len) with the kernel's \ooo escapes undone (a backslash
 * not followed by three octal digits worth 1..0377 stays). */
static char *
kf_unescape(const char *s, size_t len)
{
	char *o = malloc(len + 1);
	size_t i, j = 0;
	unsigned int v;

	if (!o)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] == '\\' && len - i >= 4 && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			v = (unsigned)(s[i + 1] - '0') << 6 | (unsigned)(s[i + 2] - '0') << 3 |
			    (unsigned)(s[i + 3] - '0');
			if (v) {
				o[j++] = (char)v;
				i += 3;
				continue;
			}
		}
		o[j++] = s[i];
	}
	o[j] = 0;
	return o;
}

static const struct kf_type *
kf_type_of(const char *s, size_t len)
{
	for (size_t i = 0; i < KF_N(kf_types); i++)
		if (strlen(kf_types[i].fstype) == len && !memcmp(kf_types[i].fstype, s, len))
			return &kf_types[i];
	return NULL;
}

/* One line: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE
 * SOURCE SUPER". 0 and m filled (a type of ours), 1 (skip: not ours, or
 * not readable), -ENOMEM. */
static int
kf_parse_line(const char *line, size_t len, struct kf_mount *m)
{
	const char *f, *root, *point;
	size_t flen = 0, rlen = 0, plen = 0;
	unsigned int i;
	char *end;

	memset(m, 0, sizeof(*m));
	f = kf_field(line, len, 0, &flen);
	if (!f || flen == 0 || flen > 20 || f[0] < '0' || f[0] > '9')
		return 1;
	errno = 0;
	m->id = strtoull(f, &end, 10);
	if (errno || end != f + flen)
		return 1;
	root = kf_field(line, len, 3, &rlen);
	point = kf_field(line, len, 4, &plen);
	if (!root || !point || rlen == 0 || plen == 0 || root[0] != '/' || point[0] != '/')
		return 1;
	for (i = 6; (f = kf_field(line, len, i, &flen)); i++)
		if (flen == 1 && f[0] == '-')
			break;
	if (!f || !(f = kf_field(line, len, i + 1, &flen)))
		return 1;
	m->type = kf_type_of(f, flen);
	if (!m->type)
		return 1;
	m->root = kf_unescape(root, rlen);
	m->point = kf_unescape(point, plen);
	if (!m->root || !m->point) {
		free(m->root);
		free(m->point);
		return -ENOMEM;
	}
	return 0;
}

/* ---- planning ------------------------------------------------------------------------------- */

/* Is p equal to dir or below it? ("/" is above everything) */
static bool
kf_under(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return true;
	return !strncmp(p, dir, n) && (p[n] == 0 || p[n] == '/');
}

static int
kf_add(struct kfiles_plan *p, size_t *cap, const struct kf_mount *m, enum kfiles_how how,
       const char *inside)
{
	struct kfiles_step *s;
	size_t plen = strlen(m->point), ilen;
	const char *rel;

	if (p->n == *cap) {
		size_t nc = *cap ? 2 * *cap : 16;

		s = realloc(p->step, nc * sizeof(*s));
		if (!s)
			return -ENOMEM;
		p->step = s;
		*cap = nc;
	}
	s = &p->step[p->n];
	memset(s, 0, sizeof(*s));
	s->how = how;
	s->whole = inside == NULL;
	s->mnt_id = m->id;
	s->seq = p->n;
	/* mountpoint + (inside - root) */
	rel = inside ? inside + (strcmp(m->root, "/") ? strlen(m->root) : 0) : "";
	ilen = strlen(rel);
	if (plen + ilen >= PATH_MAX)
		return -ENAMETOOLONG;
	s->point = strdup(m->point);
	s->path = malloc(plen + ilen + 1);
	if (!s->point || !s->path) {
		free(s->point);
		free(s->path);
		return -ENOMEM;
	}
	if (!strcmp(m->point, "/") && ilen)
		plen = 0; /* "/" + "/sys" is "/sys" */
	memcpy(s->path, m->point, plen);
	memcpy(s->path + plen, rel, ilen + 1);
	p->n++;
	return 0;
}

/* The steps of one mount of a type of ours. */
static int
kf_plan_mount(struct kfiles_plan *p, size_t *cap, const struct kf_mount *m)
{
	const struct kf_type *t = m->type;
	bool ro_whole = t->whole == KFILES_RO;
	size_t i;
	int err = 0;

	if (t->whole == KFILES_HIDE)
		return kf_add(p, cap, m, KFILES_HIDE, NULL);
	/* the mount's root is a masked path, or below one: masked as a whole */
	for (i = 0; i < t->nmasked; i++)
		if (kf_under(m->root, t->masked[i]))
			return kf_add(p, cap, m, KFILES_MASK, NULL);
	for (i = 0; i < t->nro && !ro_whole; i++)
		ro_whole = kf_under(m->root, t->ro[i]);
	if (ro_whole)
		err = kf_add(p, cap, m, KFILES_RO, NULL);
	for (i = 0; !ro_whole && !err && i < t->nro; i++)
		if (kf_under(t->ro[i], m->root))
			err = kf_add(p, cap, m, KFILES_RO, t->ro[i]);
	for (i = 0; !err && i < t->nmasked; i++)
		if (kf_under(t->masked[i], m->root))
			err = kf_add(p, cap, m, KFILES_MASK, t->masked[i]);
	return err;
}

/* longest path first; in the order found when as long */
static int
kf_cmp(const void *a, const void *b)
{
	const struct kfiles_step *x = a, *y = b;
	size_t lx = strlen(x->path), ly = strlen(y->path);

	if (lx != ly)
		return lx < ly ? 1 : -1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void
kfiles_plan_free(struct kfiles_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->step[i].point);
		free(p->step[i].path);
	}
	free(p->step);
	p->step = NULL;
	p->n = 0;
}

int
kfiles_plan_in(const char *mountinfo, struct kfiles_plan *out)
{
	const char *line = mountinfo, *nl;
	struct kf_mount m;
	size_t cap = 0, len;
	int err = 0, r;

	out->step = NULL;
	out->n = 0;
	while (line && *line && !err) {
		nl = strchr(line, '\n');
		len = nl ? (size_t)(nl - line) : strlen(line);
		r = kf_parse_line(line, len, &m);
		if (r < 0)
			err = r;
		else if (r == 0)
			err = kf_plan_mount(out, &cap, &m);
		if (r == 0) {
			free(m.root);
			free(m.point);
		}
		line = nl ? nl + 1 : NULL;
	}
	if (err) {
		kfiles_plan_free(out);
		return err;
	}
	if (out->n)
		qsort(out->step, out->n, sizeof(*out->step), kf_cmp);
	return 0;
}

/* ---- carrying the steps out ---------------------------------------------------------------- */

static int
kf_tmpfs(const char *path)
{
	if (mount("egressctl", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0555,size=4k"))
		return -errno;
	return 0;
}

int
kfiles_mask_path(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return kf_tmpfs(path);
	if (mount("/dev/null", path, NULL, MS_BIND, NULL))
		return -errno;
	return 0;
}

/* path (a mount) and every mount below it: read-only, nosuid, nodev,
 * noexec. Only in our mount namespace: the flags are per mount, and ours
 * are copies. */
static int
kf_readonly(const char *path)
{
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
			    MOUNT_ATTR_NOEXEC,
	};

	if (mount_setattr(AT_FDCWD, path, AT_RECURSIVE, &attr, sizeof(attr)))
		return -errno;
	return 0;
}

/* The mount with this id is what its mount point shows: 1; something else
 * is there, or the mount point cannot be reached: 0. */
static int
kf_visible(const struct kfiles_step *s)
{
	struct statx stx;

	if (statx(AT_FDCWD, s->point, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_MNT_ID, &stx)) {
		/* under a cover, or a mount point whose directory was removed
		 * (listed with " (deleted)"): no path reaches it */
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return -errno;
	}
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP; /* before 5.8; mount_setattr needs 5.12 anyway */
	return stx.stx_mnt_id == s->mnt_id;
}

static int
kf_apply(const struct kfiles_step *s)
{
	int err = kf_visible(s);

	if (err <= 0)
		return err;
	switch (s->how) {
	case KFILES_HIDE:
		return kf_tmpfs(s->path);
	case KFILES_MASK:
		err = kfiles_mask_path(s->path);
		break;
	case KFILES_RO:
		if (s->whole)
			return kf_readonly(s->path);
		if (mount(s->path, s->path, NULL, MS_BIND | MS_REC, NULL))
			err = -errno;
		else
			err = kf_readonly(s->path);
		break;
	}
	/* a path of the lists this kernel does not have */
	return err == -ENOENT && !s->whole ? 0 : err;
}

int
kfiles_protect(const char **what)
{
	static char desc[PATH_MAX + 32];
	static const char *const verb[] = {"hide", "mask", "read-only"};
	struct kfiles_plan p;
	char *mi = NULL;
	int err;

	*what = "read /proc/self/mountinfo";
	err = cgroup_read_mountinfo(&mi);
	if (err)
		return err;
	*what = "plan the kernel files' covers from /proc/self/mountinfo";
	err = kfiles_plan_in(mi, &p);
	free(mi);
	if (err)
		return err;
	for (size_t i = 0; i < p.n && !err; i++) {
		snprintf(desc, sizeof(desc), "%s %s", verb[p.step[i].how], p.step[i].path);
		*what = desc;
		err = kf_apply(&p.step[i]);
	}
	kfiles_plan_free(&p);
	return err;
}
