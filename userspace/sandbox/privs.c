// SPDX-License-Identifier: Apache-2.0
/* What CMD may do as whom: its uid, gid and groups, no capability in any
 * set (bounding and ambient included, also for uid 0), locked securebits,
 * no_new_privs, and a Landlock domain that keeps it away from processes
 * outside (ptrace-like access, and signals from Landlock ABI 6); with
 * --allow-sudo the few capabilities a setuid program may still get
 * (sandbox_sudo_cap). privs_drop() is the last step of sandbox_enter_opts(),
 * the seccomp filter its very end. */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/securebits.h>

#include "sandbox/sandbox.h"
#include "sandbox/steps.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_restrict_self  446
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#define LANDLOCK_SCOPE_SIGNAL_ (1ULL << 1) /* ABI 6; the 6.1 uapi headers lack it */

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
drop_bounding_set(bool sudo, bool no_setid)
{
	int cap, last = cap_last_cap();
	bool keep;

	for (cap = 0; cap <= last; cap++) {
		keep = sudo && sandbox_sudo_cap(cap) &&
		       !(no_setid && (cap == CAP_FSETID || cap == CAP_SETFCAP));
		if (!keep && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0))
			return -errno;
	}
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

int
privs_change_ids(const struct sandbox_user *u, const char **what)
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
privs_drop(const struct sandbox_user *u, bool sudo, bool no_setid, const char **what)
{
	int err;

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
		*what = "seccomp (no setuid bits)";
		if (no_setid && (err = sandbox_install_nosetid()))
			return err;
	}
	*what = "PR_CAPBSET_DROP";
	err = drop_bounding_set(sudo, no_setid);
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

	err = privs_change_ids(u, what);
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
