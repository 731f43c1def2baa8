// SPDX-License-Identifier: Apache-2.0
/* The seccomp filter CMD runs under (sandbox_install_seccomp): a
 * hand-written classic-BPF program against the bypasses that no cgroup
 * hook sees (socket families without a hook, namespaces, ptrace and its
 * kin, bpf(), mounts, modules, io_uring, typing into a terminal) and every
 * syscall newer than it. No libseccomp; x86_64 only. */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "sandbox/sandbox.h"

#ifndef __x86_64__
#error "seccomp.c: the seccomp filter below is written for x86_64 only"
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

/* The second filter of `egressctl sudo` (sandbox_opts.no_setid), stacked on
 * the first: a root inside must not make a program that gives root to a
 * process outside the sandbox -- the job's own user, which runs beside it
 * unsandboxed, would run it and be root with every capability. So no mode
 * with the setuid or setgid bit is set on a file: chmod, fchmod, fchmodat,
 * fchmodat2, and a file created by open, openat, creat, mknod or mknodat
 * with either bit. openat2 (its mode is in memory) is ENOSYS: glibc's
 * open() does not use it. File capabilities need CAP_SETFCAP, and a write
 * keeps a setuid bit only with CAP_FSETID: both are out of the bounding set
 * (privs.c). Only the low half of a mode is the kernel's (umode_t). */
#define SBX_NR_fchmodat2 452
#define SBX_NR_openat2	 437
#define SBX_SETID	 (S_ISUID | S_ISGID)
#define SBX_CREATES	 (O_CREAT | 020000000) /* O_TMPFILE without O_DIRECTORY */
/* the mode in argument m of syscall nr: refused with either bit (A: nr) */
#define NOSETID_MODE(nr, m)                                                                        \
	JEQ((nr), 0, 4), LD(ARG_LO(m)), JSET(SBX_SETID, 0, 1), RET(ERRNO(EPERM)), RET(ALLOW)
/* the same when the flags in argument f create a file */
#define NOSETID_CREAT(nr, f, m)                                                                    \
	JEQ((nr), 0, 6), LD(ARG_LO(f)), JSET(SBX_CREATES, 0, 3), LD(ARG_LO(m)),                    \
		JSET(SBX_SETID, 0, 1), RET(ERRNO(EPERM)), RET(ALLOW)

static const struct sock_filter nosetid_filter[] = {
	LD(offsetof(struct seccomp_data, nr)),
	/* a mode set */
	NOSETID_MODE(__NR_chmod, 1),
	NOSETID_MODE(__NR_fchmod, 1),
	NOSETID_MODE(__NR_fchmodat, 2),
	NOSETID_MODE(SBX_NR_fchmodat2, 2),
	/* a file made with a mode */
	NOSETID_MODE(__NR_creat, 1),
	NOSETID_MODE(__NR_mknod, 1),
	NOSETID_MODE(__NR_mknodat, 2),
	NOSETID_CREAT(__NR_open, 1, 2),
	NOSETID_CREAT(__NR_openat, 2, 3),
	DENY(SBX_NR_openat2, ERRNO(ENOSYS)),
	RET(ALLOW),
};

const struct sock_filter *
sandbox_nosetid_filter(size_t *len)
{
	*len = sizeof(nosetid_filter) / sizeof(nosetid_filter[0]);
	return nosetid_filter;
}

const struct sock_filter *
sandbox_seccomp_filter(size_t *len)
{
	*len = sizeof(sandbox_filter) / sizeof(sandbox_filter[0]);
	return sandbox_filter;
}

static int
install(const struct sock_filter *f, size_t len)
{
	struct sock_fprog prog = {
		.len = (unsigned short)len,
		.filter = (struct sock_filter *)f,
	};

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0)
		return 0;
	return -errno;
}

int
sandbox_install_seccomp(void)
{
	return install(sandbox_filter, sizeof(sandbox_filter) / sizeof(sandbox_filter[0]));
}

int
sandbox_install_nosetid(void)
{
	return install(nosetid_filter, sizeof(nosetid_filter) / sizeof(nosetid_filter[0]));
}
