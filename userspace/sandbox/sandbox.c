// SPDX-License-Identifier: Apache-2.0
/* The confined command's process-level walls, the layers besides the cgroup
 * BPF hooks: whom the command runs as (sandbox_resolve_user), and everything
 * the child does between clone3(CLONE_INTO_CGROUP) and execve()
 * (sandbox_enter): a private mount namespace in which every cgroup2, cgroup
 * (v1) and bpf mount is covered by an empty read-only tmpfs, and every
 * mount of procfs, sysfs and the other kernel pseudo-filesystems gets its
 * knobs read-only, a few files masked, debugfs and tracefs hidden
 * (sandbox/kfiles.c); with --ask, a session of its own, a private
 * devpts with a fresh pty (whose master egressctl relays) and no way back to
 * egressctl's terminal; no inherited descriptors, the target uid/gid/groups,
 * no capability in any set (bounding and ambient included, also for uid 0),
 * locked securebits, no_new_privs, a Landlock domain that keeps it away from
 * processes outside (ptrace-like access and signals), and a hand-written
 * classic-BPF seccomp filter (sandbox_install_seccomp) against the bypasses
 * that no cgroup hook sees. No libseccomp and no libcap; the filter is for
 * x86_64 only. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>

#include "kernel/cgroup.h"
#include "sandbox/kfiles.h"
#include "sandbox/sandbox.h"

#ifndef __x86_64__
#error "sandbox.c: the seccomp filter below is written for x86_64 only"
#endif

#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_restrict_self  446
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#define LANDLOCK_SCOPE_SIGNAL_ (1ULL << 1) /* ABI 6; the 6.1 uapi headers lack it */
#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif
/* x86_64 numbers of the new mount API (the 6.1 headers have most, not all) */
#define SBX_NR_open_tree      428
#define SBX_NR_move_mount     429
#define SBX_NR_fsopen	      430
#define SBX_NR_fsconfig	      431
#define SBX_NR_fsmount	      432
#define SBX_NR_fspick	      433
#define SBX_NR_mount_setattr  442
#define SBX_NR_open_tree_attr 467
/* the last syscall number of Linux 6.18 (file_setattr, 6.17; 6.18 added
 * none): the filter answers every later one ENOSYS */
#define SBX_NR_LAST_KNOWN     469
#define SBX_CLONE_NEW                                                                              \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |             \
	 CLONE_NEWPID | CLONE_NEWNET)
#define SBX_CLONE_NEWTIME 0x00000080
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif

#define ROOT_REFUSED                                                                               \
	"CMD would run as root: pass --user USER (or --user root to accept that root can leave "   \
	"the cgroup)"

/* ---- whom CMD runs as ------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void
set_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

/* A decimal id: digits only, no sign, no blanks, not (id_t)-1 which the
 * set*id() calls read as "leave unchanged". Returns 0 or -EINVAL. */
static int
parse_id(const char *s, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (!*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v >= UINT32_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

/* getpwnam_r (name != NULL) or getpwuid_r; fills out from the entry.
 * Returns 0, -ENOENT (no such entry), -EINVAL (name or home too long for
 * struct sandbox_user), -ENOMEM or another lookup error. */
static int
pw_lookup(const char *name, uid_t uid, struct sandbox_user *out)
{
	struct passwd pw, *res = NULL;
	size_t len = 16384;
	char *buf = NULL, *nbuf;
	int err;

	for (;;) {
		nbuf = realloc(buf, len);
		if (!nbuf) {
			err = -ENOMEM;
			goto out_free;
		}
		buf = nbuf;
		if (name)
			err = getpwnam_r(name, &pw, buf, len, &res);
		else
			err = getpwuid_r(uid, &pw, buf, len, &res);
		if (err != ERANGE || len >= (1U << 20))
			break;
		len *= 2;
	}
	if (!res) {
		/* "not found" comes back as 0 or, from some NSS modules,
		 * ENOENT/ESRCH/EBADF/EPERM (getpwnam(3)) */
		err = (err == 0 || err == ENOENT || err == ESRCH || err == EBADF || err == EPERM)
			      ? -ENOENT
			      : -err;
		goto out_free;
	}
	if (strlen(pw.pw_name) >= sizeof(out->name) || strlen(pw.pw_dir) >= sizeof(out->home)) {
		err = -EINVAL;
		goto out_free;
	}
	out->uid = pw.pw_uid;
	out->gid = pw.pw_gid;
	strcpy(out->name, pw.pw_name);
	strcpy(out->home, pw.pw_dir);
	err = 0;
out_free:
	free(buf);
	return err;
}

/* --user USER: a name first (as chown(1) does), then a numeric uid. A uid
 * with no passwd entry is accepted (a throwaway uid shares nothing with
 * other processes): gid = uid, no supplementary groups, HOME left alone. */
static int
resolve_named(const char *user, struct sandbox_user *out, char *errbuf, size_t errlen)
{
	uint32_t id;
	int err;

	if (!*user) {
		set_err(errbuf, errlen, "--user: empty user name");
		return -EINVAL;
	}
	err = pw_lookup(user, 0, out);
	if (err != -ENOENT)
		goto out;
	if (parse_id(user, &id)) {
		set_err(errbuf, errlen, "--user %s: no such user", user);
		return -ENOENT;
	}
	err = pw_lookup(NULL, id, out);
	if (err == -ENOENT) {
		out->uid = id;
		out->gid = id;
		return 0;
	}
out:
	if (err == -EINVAL)
		set_err(errbuf, errlen, "--user %s: name or home directory too long", user);
	else if (err)
		set_err(errbuf, errlen, "--user %s: passwd lookup failed", user);
	return err;
}

/* No --user: the user who ran sudo (SUDO_UID/SUDO_GID), never root. */
static int
resolve_sudo(struct sandbox_user *out, char *errbuf, size_t errlen)
{
	const char *s_uid = getenv("SUDO_UID"), *s_gid = getenv("SUDO_GID");
	uint32_t uid, gid;
	bool have_gid = false;
	int err;

	/* SUDO_UID=0 is root running sudo: nobody asked for a lesser user */
	if (!s_uid || !*s_uid || !strcmp(s_uid, "0")) {
		set_err(errbuf, errlen, "%s", ROOT_REFUSED);
		return -EPERM;
	}
	if (parse_id(s_uid, &uid)) {
		set_err(errbuf, errlen, "SUDO_UID=%s: not a uid", s_uid);
		return -EINVAL;
	}
	if (uid == 0) { /* "00" */
		set_err(errbuf, errlen, "%s", ROOT_REFUSED);
		return -EPERM;
	}
	if (s_gid && *s_gid) {
		if (parse_id(s_gid, &gid)) {
			set_err(errbuf, errlen, "SUDO_GID=%s: not a gid", s_gid);
			return -EINVAL;
		}
		if (gid == 0) {
			set_err(errbuf, errlen,
				"SUDO_GID is 0: pass --user USER to choose whom CMD runs as");
			return -EPERM;
		}
		have_gid = true;
	}
	err = pw_lookup(NULL, uid, out);
	if (err == -ENOENT && have_gid) {
		out->uid = uid; /* sudo from a uid without passwd entry */
	} else if (err == -ENOENT) {
		set_err(errbuf, errlen, "SUDO_UID=%s: no such user and no SUDO_GID", s_uid);
		return err;
	} else if (err) {
		set_err(errbuf, errlen, "SUDO_UID=%s: passwd lookup failed", s_uid);
		return err;
	}
	if (have_gid)
		out->gid = gid; /* the group sudo was run with wins over passwd */
	return 0;
}

int
sandbox_resolve_user(const char *user, struct sandbox_user *out, char *errbuf, size_t errlen)
{
	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (user)
		return resolve_named(user, out, errbuf, errlen);
	return resolve_sudo(out, errbuf, errlen);
}

/* ---- seccomp ---------------------------------------------------------------------------- */

/* The low 32 bits of argument n (x86_64 is little-endian). socket()'s domain
 * and unshare()/clone()'s flags are truncated to 32 bits by the kernel, so
 * comparing the high half would let 1 << 32 | AF_PACKET through. */
#define ARG_LO(n)     (offsetof(struct seccomp_data, args) + 8 * (n))
#define LD(off)	      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define JEQ(k, t, f)  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define JSET(k, t, f) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (k), (t), (f))
#define JGT(k, t, f)  BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, (k), (t), (f))
#define RET(v)	      BPF_STMT(BPF_RET | BPF_K, (v))
#define ERRNO(e)      (SECCOMP_RET_ERRNO | ((e)&SECCOMP_RET_DATA))
#define ALLOW	      SECCOMP_RET_ALLOW
/* Syscall nr (still in A) gets ret; two instructions, jumps stay local. */
#define DENY(nr, ret) JEQ((nr), 0, 1), RET(ret)

/* Jump offsets count instructions after the jump; each block ends in RET on
 * every path that has overwritten A, so later blocks still see the number. */
static const struct sock_filter sandbox_filter[] = {
	/* i386 (int 0x80) numbers its syscalls differently (socketcall is 102),
	 * so every check below would compare the wrong numbers. */
	LD(offsetof(struct seccomp_data, arch)),
	JEQ(AUDIT_ARCH_X86_64, 1, 0),
	RET(SECCOMP_RET_KILL_PROCESS),

	/* x32 shares AUDIT_ARCH_X86_64 but sets bit 30: its socket() is
	 * 0x40000029, not 41. nr -1 (also bit 30) is no syscall at all and
	 * gets the kernel's own answer. */
	LD(offsetof(struct seccomp_data, nr)),
	JSET(__X32_SYSCALL_BIT, 0, 3),
	JEQ(0xffffffffU, 0, 1),
	RET(ERRNO(ENOSYS)),
	RET(SECCOMP_RET_KILL_PROCESS),

	/* A syscall newer than this filter could be a new way to make a mount
	 * (the new mount API came as six calls at once, then mount_setattr,
	 * then open_tree_attr), a socket or a namespace that no rule below
	 * names. ENOSYS is what programs take for "this kernel has no such
	 * call" and fall back from (glibc does so for clone3). */
	JGT(SBX_NR_LAST_KNOWN, 0, 1),
	RET(ERRNO(ENOSYS)),

	/* socket()/socketpair(): the cgroup hooks run only for AF_INET/AF_INET6
	 * (sock_create, connect, sendmsg, skb) and AF_UNIX (connect_unix,
	 * sendmsg_unix). AF_PACKET sends frames past all of them, AF_VSOCK is a
	 * real exit to the host on this kind of VM, AF_XDP/AF_CAN/AF_BLUETOOTH/
	 * AF_TIPC... have no hook either. AF_NETLINK only talks to the kernel. */
	JEQ(__NR_socket, 1, 0),
	JEQ(__NR_socketpair, 0, 7),
	LD(ARG_LO(0)),
	JEQ(AF_UNIX, 3, 0),
	JEQ(AF_INET, 2, 0),
	JEQ(AF_INET6, 1, 0),
	JEQ(AF_NETLINK, 0, 1),
	RET(ALLOW),
	RET(ERRNO(EAFNOSUPPORT)),

	/* No new namespace of any kind. A user namespace gives back
	 * CAP_NET_ADMIN/CAP_SYS_ADMIN over new namespaces: a bpffs to mount,
	 * tunnels, and the legacy-program detach trick (docs/kernel.md); the
	 * other CLONE_NEW* flags need capabilities a plain run does not have,
	 * but a program sudo started (--allow-sudo) might: a network namespace
	 * of its own is out of the cgroup hooks' sight only in what it can
	 * reach, yet nothing in a job needs one. clone()'s low byte is the
	 * exit signal, so CLONE_NEWTIME (0x80) is unshare()'s only. */
	JEQ(__NR_clone, 0, 4),
	LD(ARG_LO(0)),
	JSET(SBX_CLONE_NEW, 0, 1),
	RET(ERRNO(EPERM)),
	RET(ALLOW),
	JEQ(__NR_unshare, 0, 4),
	LD(ARG_LO(0)),
	JSET(SBX_CLONE_NEW | SBX_CLONE_NEWTIME, 0, 1),
	RET(ERRNO(EPERM)),
	RET(ALLOW),

	/* clone3 passes its flags in memory, which seccomp cannot read. ENOSYS
	 * makes glibc (pthread_create, posix_spawn) fall back to clone(). */
	DENY(__NR_clone3, ERRNO(ENOSYS)),

	/* setns() into a user namespace that a same-uid process outside the
	 * sandbox created (via /proc/PID/ns/user) gives the same capabilities as
	 * creating one; the namespace type hides behind the fd, so all of setns
	 * goes. Joining any other namespace needs capabilities we do not have. */
	DENY(__NR_setns, ERRNO(EPERM)),

	/* Sockets created outside the cgroup are not filtered (the hooks use the
	 * socket's creation cgroup): ptrace or process_vm_writev into a same-uid
	 * process outside would make it connect for us, pidfd_getfd would copy
	 * its sockets in. process_vm_readv only reads, but goes with its twin. */
	DENY(__NR_ptrace, ERRNO(EPERM)),
	DENY(__NR_process_vm_readv, ERRNO(EPERM)),
	DENY(__NR_process_vm_writev, ERRNO(EPERM)),
	DENY(__NR_pidfd_getfd, ERRNO(EPERM)),

	/* bpf(): without capabilities little is left (unprivileged socket
	 * filters, BPF tokens), and nothing in it is needed to run a command;
	 * with them (a root that sudo made) it would detach the links. */
	DENY(__NR_bpf, ERRNO(EPERM)),

	/* What a root with capabilities (--allow-sudo) would undo the mount
	 * namespace's covers with, or leave the kernel's rules by: mounts (the
	 * old API and the new one), module loading, kexec, file handles (open
	 * any inode of a mounted filesystem, under the covers too), reboot,
	 * swap, process accounting. A plain run has no capability any of them
	 * needs; one filter serves both. */
	DENY(__NR_mount, ERRNO(EPERM)),
	DENY(__NR_umount2, ERRNO(EPERM)),
	DENY(__NR_pivot_root, ERRNO(EPERM)),
	DENY(SBX_NR_open_tree, ERRNO(EPERM)),
	DENY(SBX_NR_move_mount, ERRNO(EPERM)),
	DENY(SBX_NR_fsopen, ERRNO(EPERM)),
	DENY(SBX_NR_fsconfig, ERRNO(EPERM)),
	DENY(SBX_NR_fsmount, ERRNO(EPERM)),
	DENY(SBX_NR_fspick, ERRNO(EPERM)),
	DENY(SBX_NR_mount_setattr, ERRNO(EPERM)),
	DENY(SBX_NR_open_tree_attr, ERRNO(EPERM)),
	DENY(__NR_init_module, ERRNO(EPERM)),
	DENY(__NR_finit_module, ERRNO(EPERM)),
	DENY(__NR_delete_module, ERRNO(EPERM)),
	DENY(__NR_kexec_load, ERRNO(EPERM)),
	DENY(__NR_kexec_file_load, ERRNO(EPERM)),
	DENY(__NR_open_by_handle_at, ERRNO(EPERM)),
	DENY(__NR_reboot, ERRNO(EPERM)),
	DENY(__NR_swapon, ERRNO(EPERM)),
	DENY(__NR_swapoff, ERRNO(EPERM)),
	DENY(__NR_acct, ERRNO(EPERM)),

	/* io_uring's IORING_OP_SOCKET creates sockets without the socket()
	 * syscall, so the family check above never sees them. No ring, no ops:
	 * io_uring_enter/register need a ring fd, and every inherited fd is
	 * closed. ENOSYS is what programs already handle for "no io_uring". */
	DENY(__NR_io_uring_setup, ERRNO(ENOSYS)),

	/* TIOCSTI types bytes into a terminal's input queue and TIOCLINUX
	 * pastes a VT's selection into it: whoever reads that terminal next
	 * takes them as typed. A command that shares egressctl's terminal
	 * answered its own --ask question that way (dev.tty.legacy_tiocsti=1),
	 * and one that outlives egressctl could type into the user's shell.
	 * ioctl's request is an unsigned int: the low half is what the kernel
	 * reads. */
	JEQ(__NR_ioctl, 0, 5),
	LD(ARG_LO(1)),
	JEQ(TIOCSTI, 1, 0),
	JEQ(TIOCLINUX, 0, 1),
	RET(ERRNO(EPERM)),
	RET(ALLOW),

	RET(ALLOW),
};

const struct sock_filter *
sandbox_seccomp_filter(size_t *len)
{
	*len = sizeof(sandbox_filter) / sizeof(sandbox_filter[0]);
	return sandbox_filter;
}

int
sandbox_install_seccomp(void)
{
	struct sock_fprog prog = {
		.len = sizeof(sandbox_filter) / sizeof(sandbox_filter[0]),
		.filter = (struct sock_filter *)sandbox_filter,
	};

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0)
		return 0;
	return -errno;
}

/* ---- sandbox_enter ---------------------------------------------------------------------- */

struct mounts {
	char **path;
	size_t n;
	size_t cap;
};

static int
mounts_add(const char *mountpoint, void *arg)
{
	struct mounts *m = arg;
	char **np;

	if (m->n == m->cap) {
		np = realloc(m->path, (m->cap ? 2 * m->cap : 8) * sizeof(*np));
		if (!np)
			return -ENOMEM;
		m->path = np;
		m->cap = m->cap ? 2 * m->cap : 8;
	}
	m->path[m->n] = strdup(mountpoint);
	if (!m->path[m->n])
		return -ENOMEM;
	m->n++;
	return 0;
}

static void
mounts_free(struct mounts *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->path[i]);
	free(m->path);
	m->path = NULL;
	m->n = m->cap = 0;
}

/* Longest path first: a mount below another one must be covered while its
 * mount point is still reachable. */
static int
cmp_longer_first(const void *a, const void *b)
{
	size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);

	return la < lb ? 1 : la > lb ? -1 : 0;
}

/* An empty, read-only tmpfs over every mount of these filesystem types.
 * cgroup2: uid 0 with no capabilities can still write cgroup.procs (mode
 * 0644 root) and leave the cgroup; bpf: bpffs holds pinned links; cgroup
 * (v1, still mounted on hybrid hosts): its tasks and cgroup.procs files are
 * as writable for uid 0, and nothing in them is CMD's business; devpts
 * (--ask): the host's ptys, egressctl's terminal among them. Covering the
 * mount point hides the filesystem from path lookups; unmounting the cover
 * needs CAP_SYS_ADMIN. */
static int
hide_mounts(const char *const *fstypes, size_t ntypes, const char **what)
{
	struct mounts m = {0};
	char *mi = NULL;
	size_t i, plen;
	int err;

	*what = "read /proc/self/mountinfo";
	err = cgroup_read_mountinfo(&mi);
	if (err)
		return err;
	*what = "parse /proc/self/mountinfo";
	for (i = 0; i < ntypes; i++) {
		err = cgroup_foreach_mount_in(mi, fstypes[i], mounts_add, &m);
		if (err < 0)
			goto out_free;
	}
	qsort(m.path, m.n, sizeof(*m.path), cmp_longer_first);
	*what = "mount tmpfs over cgroup/bpf/devpts";
	err = 0;
	for (i = 0; i < m.n; i++) {
		if (!mount("egressctl", m.path[i], "tmpfs",
			   MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0555,size=4k"))
			continue;
		err = -errno;
		/* A mount point whose directory was removed is listed with
		 * " (deleted)" appended and cannot be reached by path. */
		plen = strlen(m.path[i]);
		if (err == -ENOENT && plen > 10 && !strcmp(m.path[i] + plen - 10, " (deleted)")) {
			err = 0;
			continue;
		}
		break;
	}
out_free:
	mounts_free(&m);
	free(mi);
	return err;
}

/* ---- --ask: a terminal of its own ---------------------------------------------------- */

#define TTY_MAJOR_ 4 /* VTs (minor 1-63) and serial ports (64-255) */
#define VCS_MAJOR_ 7 /* vcs, vcsa, vcsu: the VT screens, readable and writable */

bool
sandbox_tty_alias(const char *name, dev_t rdev, dev_t tty)
{
	bool vt = major(tty) == TTY_MAJOR_ && minor(tty) >= 1 && minor(tty) <= 63;

	if (tty && rdev == tty)
		return true;
	if (!strcmp(name, "console") || !strcmp(name, "uinput") || !strcmp(name, "uhid"))
		return true;
	if (vt && major(rdev) == TTY_MAJOR_ && minor(rdev) == 0) /* tty0: the current VT */
		return true;
	return vt && major(rdev) == VCS_MAJOR_;
}

/* /dev/null over every alias of the terminal in /dev, an empty tmpfs over
 * /dev/input (writing an event device types on its keyboard). */
static int
cover_tty_aliases(dev_t tty)
{
	struct dirent *de;
	struct stat st;
	char path[PATH_MAX];
	int err = 0;
	DIR *d;

	d = opendir("/dev");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISCHR(st.st_mode) || !sandbox_tty_alias(de->d_name, st.st_rdev, tty))
			continue;
		if (snprintf(path, sizeof(path), "/dev/%s", de->d_name) >= (int)sizeof(path))
			continue;
		if (mount("/dev/null", path, NULL, MS_BIND, NULL)) {
			err = -errno;
			break;
		}
	}
	closedir(d);
	if (!err) {
		err = kfiles_mask_path("/dev/input");
		if (err == -ENOENT)
			err = 0;
	}
	return err;
}

/* Programs outside that take commands from CMD's uid and type into the
 * terminal they show: tmux (send-keys) and screen (stuff) servers, the X
 * server (XTEST). Their sockets' directories get an empty tmpfs. */
static int
cover_session_sockets(uid_t uid)
{
	const char *tmux_tmp = getenv("TMUX_TMPDIR");
	char tmux[PATH_MAX], tmux2[PATH_MAX];
	const char *dirs[] = {tmux, tmux2, "/run/screen", "/tmp/screens", "/tmp/.X11-unix"};
	struct stat st;
	size_t i;

	snprintf(tmux, sizeof(tmux), "/tmp/tmux-%u", (unsigned)uid);
	tmux2[0] = '\0';
	if (tmux_tmp && *tmux_tmp == '/')
		snprintf(tmux2, sizeof(tmux2), "%s/tmux-%u", tmux_tmp, (unsigned)uid);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (!dirs[i][0] || lstat(dirs[i], &st) || !S_ISDIR(st.st_mode))
			continue;
		if (mount("egressctl", dirs[i], "tmpfs",
			  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0555,size=4k"))
			return -errno;
	}
	return 0;
}

static int
send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	char byte = 'm';
	struct iovec iov = {&byte, 1};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != 1)
		return -errno;
	return 0;
}

/* A pty from the devpts at /dev/pts (ours): the slave is CMD's controlling
 * terminal and the stdio fds in t->stdio; the master goes to t->pty_sock. */
static int
make_pty(const struct sandbox_user *u, const struct sandbox_term *t, const char **what)
{
	int master, slave = -1, unlock = 0, fd, err = 0;

	*what = "open /dev/pts/ptmx";
	master = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master == -1)
		return -errno;
	*what = "unlock the pty";
	if (ioctl(master, TIOCSPTLCK, &unlock))
		goto out_errno;
	*what = "open the pty's slave";
	slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave == -1)
		goto out_errno;
	*what = "chown the pty";
	if (fchown(slave, u->uid, u->gid))
		goto out_errno;
	*what = "set the pty's modes";
	if (tcsetattr(slave, TCSANOW, &t->tios) || ioctl(slave, TIOCSWINSZ, &t->ws))
		goto out_errno;
	*what = "TIOCSCTTY";
	if (ioctl(slave, TIOCSCTTY, 0))
		goto out_errno;
	*what = "send the pty's master";
	err = send_fd(t->pty_sock, master);
	if (err)
		goto out_close;
	*what = "dup2 the pty";
	for (fd = 0; fd < 3; fd++)
		if ((t->stdio & (1U << fd)) && dup2(slave, fd) == -1)
			goto out_errno;
	goto out_close;
out_errno:
	err = -errno;
out_close:
	if (slave != -1)
		close(slave);
	close(master);
	return err;
}

/* After hide_mounts() has covered every devpts mount. */
static int
enter_term(const struct sandbox_user *u, const struct sandbox_term *t, const char **what)
{
	int err;

	/* no controlling terminal: /dev/tty is egressctl's no longer */
	*what = "setsid";
	if (setsid() == -1)
		return -errno;
	*what = "mount a private devpts on /dev/pts";
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0600"))
		return -errno;
	*what = "cover the terminal's aliases in /dev";
	err = cover_tty_aliases(t->tty);
	if (err)
		return err;
	*what = "cover the tmux, screen and X11 sockets";
	err = cover_session_sockets(u->uid);
	if (err)
		return err;
	if (t->pty_sock < 0)
		return 0;
	return make_pty(u, t, what);
}

/* A working directory inside a covered filesystem would still reach its
 * cgroup.procs through relative paths ("../cgroup.procs"): look the
 * directory up again by name, through the covers; "/" if it is gone. */
static int
rechdir(const char *cwd)
{
	if (cwd && chdir(cwd) == 0)
		return 0;
	if (chdir("/") == 0)
		return 0;
	return -errno;
}

/* Every fd > 2 but keep_fd and keep_fd2 (each -1 for none). */
static int
close_fds(int keep_fd, int keep_fd2)
{
	int keep[2] = {keep_fd, keep_fd2}, from = 3, t;

	if (keep[0] > keep[1]) {
		t = keep[0];
		keep[0] = keep[1];
		keep[1] = t;
	}
	for (int i = 0; i < 2; i++) {
		if (keep[i] < from)
			continue;
		if (keep[i] > from && close_range((unsigned)from, (unsigned)keep[i] - 1, 0))
			return -errno;
		from = keep[i] + 1;
	}
	return close_range((unsigned)from, ~0U, 0) ? -errno : 0;
}

static int
cap_last_cap(void)
{
	char buf[16] = {0};
	ssize_t r;
	int fd, cap;

	fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd != -1) {
		r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r > 0 && sscanf(buf, "%d", &cap) == 1 && cap >= 0 && cap < 64)
			return cap;
	}
	/* no /proc/sys: ask the kernel cap by cap */
	for (cap = 0; cap < 64 && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		;
	return cap - 1;
}

/* Needs CAP_SETPCAP, so it comes before setresuid() takes it away. With
 * sudo (--allow-sudo), the capabilities of sudo_caps stay: a setuid-root
 * program gets those and no more. */
static int
drop_bounding_set(bool sudo)
{
	int cap, last = cap_last_cap();

	for (cap = 0; cap <= last; cap++)
		if (!(sudo && sandbox_sudo_cap(cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0))
			return -errno;
	return 0;
}

/* NOROOT: execve() as uid 0 grants no capabilities. KEEP_CAPS cleared and
 * NO_SETUID_FIXUP left clear, both locked: leaving uid 0 drops permitted and
 * effective, and the command cannot change that. NO_CAP_AMBIENT_RAISE: no
 * ambient set to carry capabilities over execve(). Needs CAP_SETPCAP. */
static int
lock_securebits(bool sudo)
{
	unsigned long want = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED |
			     SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
			     SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
	int cur;

	/* --allow-sudo: uid 0 by a setuid bit gets the bounding set (NOROOT
	 * off, and locked so) */
	if (sudo)
		want &= ~(unsigned long)SECBIT_NOROOT;

	cur = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (cur == -1)
		return -errno;
	if (sudo)
		cur &= ~SECBIT_NOROOT;
	if (prctl(PR_SET_SECUREBITS, (cur | want) & ~(unsigned long)SECBIT_KEEP_CAPS, 0, 0, 0))
		return -errno;
	return 0;
}

/* All-zero effective, permitted and inheritable. setresuid() to a non-zero
 * uid has already cleared the first two; for uid 0 this is what does it. */
static int
drop_all_caps(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	int i;

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	/* trust, but verify */
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	for (i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		if (data[i].effective || data[i].permitted || data[i].inheritable)
			return -EPERM;
	return 0;
}

static int
change_ids(const struct sandbox_user *u, const char **what)
{
	if (memchr(u->name, '\0', sizeof(u->name)) == NULL) {
		*what = "user name";
		return -EINVAL;
	}
	if (u->name[0]) {
		*what = "initgroups";
		if (initgroups(u->name, u->gid))
			return -errno;
	} else {
		*what = "setgroups";
		if (setgroups(0, NULL))
			return -errno;
	}
	*what = "setresgid";
	if (setresgid(u->gid, u->gid, u->gid))
		return -errno;
	*what = "setresuid";
	if (setresuid(u->uid, u->uid, u->uid))
		return -errno;
	/* a uid drop that can be undone is no drop */
	*what = "verify setresuid";
	if (u->uid != 0 && (setuid(0) != -1 || seteuid(0) != -1))
		return -EPERM;
	return 0;
}

int
sandbox_landlock_abi(void)
{
	int abi = (int)syscall(__NR_landlock_create_ruleset, NULL, 0,
			       LANDLOCK_CREATE_RULESET_VERSION);

	return abi >= 1 ? abi : -errno;
}

/* struct landlock_ruleset_attr as of ABI 6 (the 6.1 uapi headers stop at
 * handled_access_fs) */
struct ruleset_attr6 {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

/* A Landlock domain of our own, for its ptrace rule: a process in a domain
 * can reach only processes in the same or a nested one. Seccomp cannot see
 * paths, and the same uid may open /proc/PID/mem (write into a process
 * outside the cgroup and let it connect), /proc/PID/root (the host's
 * cgroupfs), /proc/PID/ns/user or /proc/PID/fd/N (the user's shell holds
 * egressctl's terminal) of any dumpable process outside; Landlock answers
 * EACCES to all of them. From ABI 6 on, the domain also scopes signals: a
 * uid 0 CMD could otherwise kill or stop egressctl and every other process
 * of uid 0 (a same-uid signal needs no capability). MAKE_BLOCK is the one
 * handled file access because a ruleset must handle something (ABI 1), and
 * mknod of a block device needs CAP_MKNOD anyway. Best effort: kernels
 * without Landlock (or with it off) keep the other layers, and --ask refuses
 * to start there (run.c). Needs no_new_privs. */
static int
landlock_scope(void)
{
	struct ruleset_attr6 attr = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_BLOCK,
	};
	size_t size = sizeof(attr.handled_access_fs);
	int abi, fd, err = 0;

	abi = sandbox_landlock_abi();
	if (abi < 0)
		return abi == -ENOSYS || abi == -EOPNOTSUPP ? 0 : abi;
	if (abi >= 6) {
		attr.scoped = LANDLOCK_SCOPE_SIGNAL_;
		size = sizeof(attr);
	}
	fd = syscall(__NR_landlock_create_ruleset, &attr, size, 0);
	if (fd == -1)
		return -errno;
	if (syscall(__NR_landlock_restrict_self, fd, 0))
		err = -errno;
	close(fd);
	return err;
}

/* ---- unix sockets of services outside -------------------------------------------------- */

struct mnt_ent {
	unsigned int maj, min;
	char root[PATH_MAX];
	char point[PATH_MAX];
};

/* mountinfo's octal escapes (\040 for a blank...) undone in place */
static void
unescape(char *p)
{
	char *o = p;

	while (*p) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 4;
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
}

static int
parse_mounts(struct mnt_ent **out, size_t *n)
{
	char *mi = NULL, *line, *save = NULL;
	struct mnt_ent *v = NULL, *nv;
	size_t cap = 0;
	int err;

	*n = 0;
	err = cgroup_read_mountinfo(&mi);
	if (err)
		return err;
	for (line = strtok_r(mi, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct mnt_ent e;
		char root[PATH_MAX], point[PATH_MAX];

		if (sscanf(line, "%*d %*d %u:%u %4095s %4095s", &e.maj, &e.min, root, point) != 4)
			continue;
		unescape(root);
		unescape(point);
		snprintf(e.root, sizeof(e.root), "%s", root);
		snprintf(e.point, sizeof(e.point), "%s", point);
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				free(mi);
				return -ENOMEM;
			}
			v = nv;
		}
		v[(*n)++] = e;
	}
	free(mi);
	*out = v;
	return 0;
}

/* Is p equal to dir or below it? ("/" is above everything) */
static bool
path_under(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return true;
	return !strncmp(p, dir, n) && (p[n] == 0 || p[n] == '/');
}

static int
list_add(char ***list, size_t *n, const char *path)
{
	char **nl;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*list)[i], path))
			return 0;
	nl = realloc(*list, (*n + 2) * sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	*list = nl;
	nl[*n] = strdup(path);
	if (!nl[*n])
		return -ENOMEM;
	nl[++*n] = NULL;
	return 0;
}

void
sandbox_free_masks(char **masks)
{
	if (!masks)
		return;
	for (char **p = masks; *p; p++)
		free(*p);
	free(masks);
}

int
sandbox_unix_masks(char *const *sockets, char ***out, char *errbuf, size_t errlen)
{
	struct mnt_ent *m = NULL;
	char **list = NULL, real[PATH_MAX], cand[2 * PATH_MAX];
	size_t nm = 0, n = 0;
	int err;

	*out = NULL;
	if (errbuf && errlen)
		errbuf[0] = 0;
	err = parse_mounts(&m, &nm);
	if (err) {
		set_err(errbuf, errlen, "cannot read the mount table: %s", strerror(-err));
		return err;
	}
	err = list_add(&list, &n, "/dev/null") ? -ENOMEM : 0; /* placeholder, dropped below */
	for (size_t i = 0; !err && sockets && sockets[i]; i++) {
		struct stat st, cs;
		const struct mnt_ent *home = NULL;
		const char *rel;

		if (stat(sockets[i], &st) || !(S_ISSOCK(st.st_mode) || S_ISDIR(st.st_mode)) ||
		    !realpath(sockets[i], real))
			continue; /* gone since it was listed */
		if (S_ISSOCK(st.st_mode) && st.st_nlink > 1) {
			/* a name of it that no mask covers, wherever it is */
			set_err(errbuf, errlen,
				"%s has %ju other hard link(s): a way around its mask in "
				"CMD's mount namespace (remove them, or --allow-unix %s)",
				sockets[i], (uintmax_t)(st.st_nlink - 1), sockets[i]);
			err = -EMLINK;
			break;
		}
		err = list_add(&list, &n, real);
		/* the mount it was found through: the longest mount point above it
		 * on its device (the last one listed wins: mounted on top) */
		for (size_t j = 0; j < nm; j++)
			if (makedev(m[j].maj, m[j].min) == st.st_dev &&
			    path_under(real, m[j].point) &&
			    (!home || strlen(m[j].point) >= strlen(home->point)))
				home = &m[j];
		if (err || !home)
			continue;
		/* its path inside the filesystem, then through every other mount of
		 * the same filesystem (a bind mount of /run, of the socket itself) */
		rel = real + (strcmp(home->point, "/") ? strlen(home->point) : 0);
		if ((size_t)snprintf(cand, sizeof(cand), "%s%s",
				     strcmp(home->root, "/") ? home->root : "",
				     rel) >= sizeof(real))
			continue;
		memcpy(real, cand, strlen(cand) + 1); /* real := path in the filesystem */
		for (size_t j = 0; !err && j < nm; j++) {
			const char *tail;

			if (makedev(m[j].maj, m[j].min) != st.st_dev ||
			    !path_under(real, m[j].root))
				continue;
			tail = real + (strcmp(m[j].root, "/") ? strlen(m[j].root) : 0);
			if ((size_t)snprintf(cand, sizeof(cand), "%s%s",
					     strcmp(m[j].point, "/") ? m[j].point : "",
					     *tail ? tail : "") >= PATH_MAX ||
			    !cand[0])
				continue;
			if (!lstat(cand, &cs) && ((cs.st_mode ^ st.st_mode) & S_IFMT) == 0 &&
			    cs.st_ino == st.st_ino && cs.st_dev == st.st_dev)
				err = list_add(&list, &n, cand);
		}
	}
	free(m);
	if (err) {
		if (err == -ENOMEM)
			set_err(errbuf, errlen, "out of memory");
		sandbox_free_masks(list);
		return err;
	}
	/* drop the placeholder */
	free(list[0]);
	memmove(list, list + 1, n * sizeof(*list));
	*out = list;
	return 0;
}

/* /dev/null over each socket (a directory gets an empty tmpfs): connect()
 * there is ECONNREFUSED (no socket), and every way of naming it (relative,
 * through a symlink, /proc/self/root) resolves into the mask. Taking a
 * mask off needs CAP_SYS_ADMIN and umount2(): neither is left. */
static int
mask_unix(char *const *masks, const char **what)
{
	for (size_t i = 0; masks && masks[i]; i++) {
		int err = kfiles_mask_path(masks[i]);

		*what = masks[i];
		if (err && err != -ENOENT) /* gone, or under a directory masked before */
			return err;
	}
	return 0;
}

/* The caller is pid 1 of a new PID namespace: a /proc of that namespace
 * over the old one (and whatever was mounted below it), so no process
 * outside is there to name: /proc/PID/root, mem, fd, environ, ns. */
static int
mount_own_proc(void)
{
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return -errno;
	return 0;
}

/* --allow-sudo: what setuid programs started in the sandbox may hold --
 * Docker's default set less CAP_MKNOD (no device cgroup here) and
 * CAP_NET_RAW (raw sockets are refused anyway). Enough for sudo, apt-get,
 * dpkg, useradd, chown; nothing that reaches the kernel's network
 * configuration (CAP_NET_ADMIN), BPF, mounts (CAP_SYS_ADMIN), modules,
 * raw I/O, ptrace, the clock, the audit rules, file handles
 * (CAP_DAC_READ_SEARCH) or other processes' resources. */
static const int sudo_caps[] = {
	CAP_CHOWN,	 CAP_DAC_OVERRIDE, CAP_FOWNER,	CAP_FSETID,	      CAP_KILL,
	CAP_SETGID,	 CAP_SETUID,	   CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT,
	CAP_AUDIT_WRITE, CAP_SETFCAP,
};

bool
sandbox_sudo_cap(int cap)
{
	for (size_t i = 0; i < sizeof(sudo_caps) / sizeof(sudo_caps[0]); i++)
		if (sudo_caps[i] == cap)
			return true;
	return false;
}

int
sandbox_enter(const struct sandbox_user *u, const struct sandbox_term *term, int keep_fd,
	      const char **what)
{
	struct sandbox_opts o = {.term = term, .keep_fd = keep_fd, .keep_fd2 = -1};

	return sandbox_enter_opts(u, &o, what);
}

int
sandbox_enter_opts(const struct sandbox_user *u, const struct sandbox_opts *o, const char **what)
{
	static const char *const hidden[] = {"cgroup2", "bpf", "cgroup", "devpts"};
	const struct sandbox_term *term = o ? o->term : NULL;
	int keep_fd = o ? o->keep_fd : -1;
	bool sudo = o && o->allow_sudo;
	char cwd[PATH_MAX];
	bool have_cwd;
	const char *dummy;
	int err;

	if (!what)
		what = &dummy;
	*what = "arguments";
	if (!u || !o)
		return -EINVAL;

	have_cwd = getcwd(cwd, sizeof(cwd)) != NULL && cwd[0] == '/';
	*what = "unshare(CLONE_NEWNS)";
	if (unshare(CLONE_NEWNS))
		return -errno;
	/* our covers must not propagate back to the host, nor host mounts in */
	*what = "make / rprivate";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	if (o->own_proc) {
		*what = "mount /proc of the PID namespace";
		err = mount_own_proc();
		if (err)
			return err;
	}
	/* devpts only with --ask: without it CMD's stdio may be a host pty,
	 * and ttyname() would no longer find it */
	err = hide_mounts(hidden, term ? 4 : 3, what);
	if (err)
		return err;
	err = kfiles_protect(what);
	if (err)
		return err;
	err = mask_unix(o->unix_masks, what);
	if (err)
		return err;
	if (term) {
		err = enter_term(u, term, what);
		if (err)
			return err;
	}
	*what = "chdir";
	err = rechdir(have_cwd ? cwd : NULL);
	if (err)
		return err;

	/* sockets created outside the cgroup are never filtered */
	*what = "close_range";
	err = close_fds(keep_fd, o->keep_fd2);
	if (err)
		return err;

	if (sudo) {
		/* No no_new_privs, so sudo's setuid bit works: Landlock and
		 * seccomp need CAP_SYS_ADMIN instead, which goes right after. */
		*what = "landlock";
		err = landlock_scope();
		if (err)
			return err;
		*what = "seccomp";
		err = sandbox_install_seccomp();
		if (err)
			return err;
	}
	*what = "PR_CAPBSET_DROP";
	err = drop_bounding_set(sudo);
	if (err)
		return err;
	*what = "PR_SET_SECUREBITS";
	err = lock_securebits(sudo);
	if (err)
		return err;
	*what = "PR_CAP_AMBIENT_CLEAR_ALL";
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)) {
		err = -errno;
		if (err != -EINVAL) /* pre-4.3 kernel: there is no ambient set */
			return err;
	}

	err = change_ids(u, what);
	if (err)
		return err;
	*what = "capset";
	err = drop_all_caps();
	if (err)
		return err;

	if (sudo)
		return 0;
	*what = "PR_SET_NO_NEW_PRIVS";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	*what = "landlock";
	err = landlock_scope();
	if (err)
		return err;
	*what = "seccomp";
	return sandbox_install_seccomp();
}

/* ---- pid 1 of the PID namespace --------------------------------------------------------- */

void
sandbox_init(pid_t child, int status_fd)
{
	sigset_t all;
	siginfo_t si;
	int status, sig;
	pid_t p;

	/* a namespace's init gets only the signals it has handlers for (or
	 * waits for): every one, here */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
			if (p != child)
				continue;
			if (status_fd >= 0 && write(status_fd, &status, sizeof(status)) < 0)
				_exit(EXIT_FAILURE);
			_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		}
		if (p == -1 && errno == ECHILD)
			_exit(EXIT_FAILURE); /* cannot be: child is ours */
		sig = sigwaitinfo(&all, &si);
		if (sig <= 0 || sig == SIGCHLD)
			continue;
		/* the terminal's ^C, ^\\, ^Z, hang-up reached CMD's process group
		 * directly; what egressctl forwards (or --timeout sends) comes
		 * from a process */
		if (si.si_code == SI_KERNEL)
			continue;
		kill(child, sig);
	}
}
