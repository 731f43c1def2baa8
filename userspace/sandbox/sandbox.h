// SPDX-License-Identifier: Apache-2.0
/* What the confined command gets besides the BPF hooks: its own mount
 * namespace with cgroupfs and bpffs hidden and the kernel's knobs read-only,
 * with --ask a terminal of its own, a target uid/gid, no capabilities,
 * no_new_privs, Landlock, a seccomp filter, no inherited descriptors.
 * Privileged work here happens in the child between clone3() and execve(). */
#ifndef SANDBOX_H
#define SANDBOX_H

#include <stdbool.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <sys/types.h>

struct sandbox_user {
	uid_t uid;
	gid_t gid;
	char name[64];	/* for initgroups(); empty: no supplementary groups */
	char home[256]; /* HOME to set; empty: leave HOME alone */
};

/* Decides whom CMD runs as:
 *   user != NULL      -> that user (name or numeric uid), "root" included
 *   SUDO_UID/SUDO_GID set (and not 0) -> the invoking user
 *   otherwise         -> -EPERM with errbuf explaining that --user is needed
 *                        (CMD never runs as root unless asked for).
 * Returns 0, -ENOENT (unknown user, errbuf says which), -EPERM, -EINVAL. */
int sandbox_resolve_user(const char *user, struct sandbox_user *out, char *errbuf, size_t errlen);

/* Installs the seccomp filter in the calling thread (needs no_new_privs):
 * socket()/socketpair() only for AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
 * (others -> EAFNOSUPPORT); clone/unshare with CLONE_NEWUSER -> EPERM;
 * clone3 -> ENOSYS (glibc falls back to clone); setns, bpf, ptrace,
 * process_vm_readv/writev, pidfd_getfd -> EPERM; io_uring_setup -> ENOSYS
 * (io_uring's IORING_OP_SOCKET would bypass the socket() filter); ioctl
 * TIOCSTI and TIOCLINUX (typing into a terminal) -> EPERM; mount,
 * umount2, pivot_root and the new mount API (open_tree, move_mount, fsopen,
 * fsconfig, fsmount, fspick, mount_setattr, open_tree_attr), modules,
 * kexec, open_by_handle_at, reboot, swap, acct -> EPERM; every number past
 * the last syscall of Linux 6.18 -> ENOSYS; non-x86_64 ABIs (i386, x32) ->
 * killed. Returns 0 or -errno. */
int sandbox_install_seccomp(void);

/* The filter sandbox_install_seccomp() installs (x86_64 classic BPF), for
 * the unit tests to run on every syscall number; *len instructions. */
struct sock_filter;
const struct sock_filter *sandbox_seccomp_filter(size_t *len);

/* `egressctl sudo`'s second filter, stacked on the first: no setuid or
 * setgid bit set on a file (chmod and its kin, and files created with one:
 * EPERM; openat2 ENOSYS). The filter itself for the unit tests. */
int sandbox_install_nosetid(void);
const struct sock_filter *sandbox_nosetid_filter(size_t *len);

/* The Landlock ABI version of the running kernel (>= 1), or -errno when
 * Landlock is missing or off (-ENOSYS, -EOPNOTSUPP). */
int sandbox_landlock_abi(void);

/* --ask: CMD gets no way back to egressctl's terminal. */
struct sandbox_term {
	dev_t tty;	     /* egressctl's terminal: its /dev nodes are covered (0: none) */
	int pty_sock;	     /* >= 0: a new pty's master is sent here (SCM_RIGHTS) */
	unsigned int stdio;  /* bit n set: fd n becomes the new pty's slave */
	struct termios tios; /* the slave starts with the terminal's modes ... */
	struct winsize ws;   /* ... and size */
};

/* Is /dev/NAME (a character device rdev) a way to egressctl's terminal tty
 * or into the input it reads? The terminal's own node, the console, input
 * injection (uinput, uhid), and on a VT the current VT (tty0) and the VT
 * screens (vcs*). Pure; for sandbox_enter's covers. */
bool sandbox_tty_alias(const char *name, dev_t rdev, dev_t tty);

/* Everything the child does between clone3(CLONE_INTO_CGROUP) and execve(),
 * in this order: new mount namespace (MS_REC|MS_PRIVATE); an empty
 * read-only tmpfs over every cgroup2, cgroup (v1) and bpf mount; every
 * mount of a kernel pseudo-filesystem treated by kfiles_protect() (sysfs
 * read-only with every mount below it, procfs's {bus,fs,irq,sys,
 * sysrq-trigger} read-only and {acpi,asound,kcore,keys,...} masked, debugfs
 * and tracefs hidden, securityfs, binfmt_misc, configfs, ... read-only,
 * wherever they are mounted: sandbox/kfiles.h). With term
 * (--ask): setsid(); every devpts mount covered and a private devpts
 * instance at /dev/pts; the terminal's aliases in /dev (sandbox_tty_alias)
 * and /dev/input covered; the tmux, screen and X11 socket directories
 * covered; with term->pty_sock, a pty from that devpts: its slave becomes
 * CMD's controlling terminal and the stdio fds in term->stdio, owned by u,
 * with the terminal's modes and size, and its master goes to
 * term->pty_sock. Then close every fd > 2 except keep_fd,
 * setgroups/setgid/setuid to u, empty capability bounding set, ambient and
 * inheritable sets, no capabilities left (also when u is root),
 * PR_SET_NO_NEW_PRIVS, Landlock (ptrace scope; signal scope on ABI >= 6),
 * seccomp. Returns 0 or -errno; on error *what names the step that failed
 * (a static string). */
int sandbox_enter(const struct sandbox_user *u, const struct sandbox_term *term, int keep_fd,
		  const char **what);

/* What sandbox_enter_opts() adds to that. */
struct sandbox_opts {
	const struct sandbox_term *term; /* --ask; NULL for none */
	int keep_fd, keep_fd2;		 /* the fds > 2 left open; -1 none */
	/* filesystem unix sockets to mask (/dev/null bound over each, right
	 * after the kernel files): sandbox_unix_masks()'s list; NULL none */
	char *const *unix_masks;
	/* the caller is pid 1 of a new PID namespace: mount its own /proc over
	 * /proc first (no process outside is there to name) */
	bool own_proc;
	/* --allow-sudo: setuid programs work. No no_new_privs; Landlock and the
	 * seccomp filter are installed while still privileged (CAP_SYS_ADMIN
	 * stands in for no_new_privs), before the capabilities go; the
	 * bounding set keeps what sandbox_sudo_cap() says and uid 0 by exec
	 * gets it (SECBIT_NOROOT off, locked). */
	bool allow_sudo;
	/* `egressctl sudo` (with allow_sudo): CMD is root beside a user outside
	 * the sandbox, who must not be able to run what it leaves: no setuid or
	 * setgid bit set (sandbox_install_nosetid) and neither CAP_FSETID nor
	 * CAP_SETFCAP in the bounding set */
	bool no_setid;
	/* paths bound read-only over themselves where they exist (after the
	 * masks), NULL-terminated; NULL none */
	const char *const *ro_paths;
	/* a directory bound read-only (nosuid, nodev, noexec) over itself
	 * right after the masks: HTTPS inspection's trust files, which uid 0
	 * in CMD could otherwise chmod and change (it owns root's files), and
	 * --allow-sudo's CAP_DAC_OVERRIDE write; NULL none */
	const char *ro_dir;
};
int sandbox_enter_opts(const struct sandbox_user *u, const struct sandbox_opts *o,
		       const char **what);

/* The capabilities a program sudo started keeps with --allow-sudo. */
bool sandbox_sudo_cap(int cap);

/* The paths to mask for the denied unix sockets that exist (sockets:
 * NULL-terminated, as unixsvc_existing() lists them; a directory, such as
 * egressctl's own in /run, is masked whole, with an empty tmpfs): each
 * one's real path, and the same socket through every other mount of its
 * filesystem (a bind mount of /run, or of the socket file). A socket with another hard link
 * is refused (-EMLINK, errbuf says which and how to go on): that name could
 * be anywhere, and no mask would cover it. *out: NULL-terminated, free with
 * sandbox_free_masks(). Returns 0 or -errno. */
int sandbox_unix_masks(char *const *sockets, char ***out, char *errbuf, size_t errlen);
/* The same, found as u (its groups, gid and uid, in a child process of
 * its own): only the names u can look up, which are all CMD running as u
 * can reach. For a run the service starts for a user: root never looks
 * up a path of the user's (--deny-unix) with root's rights, and CMD's
 * mount table shows no socket the user cannot see. */
int sandbox_unix_masks_as(const struct sandbox_user *u, char *const *sockets, char ***out,
			  char *errbuf, size_t errlen);
void sandbox_free_masks(char **masks);

/* Pid 1 of CMD's PID namespace, after sandbox_enter_opts() and a fork:
 * reaps every process whose parent is gone, forwards the signals it gets
 * from outside (not the terminal's: those reached CMD too) to child, and
 * when child ends writes its wait status (an int) to status_fd and exits
 * (the kernel then kills what is left in the namespace). With outlive it
 * stays instead, its stdio on /dev/null, reaping until no process is left
 * in the namespace (what CMD started in the background, a service, lives
 * on as it would after sudo). */
__attribute__((noreturn)) void sandbox_init(pid_t child, int status_fd, bool outlive);

#endif /* SANDBOX_H */
