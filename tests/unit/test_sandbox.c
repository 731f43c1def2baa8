// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/sandbox/ (sandbox.c, seccomp.c, user.c, privs.c,
 * tty.c). The seccomp filter is exercised from forked
 * children (every rule, plus fork/threads/posix_spawn surviving it);
 * sandbox_resolve_user() against --user and SUDO_UID/SUDO_GID; and, when run
 * as root, what sandbox_enter() leaves behind for nobody, for uid 0 and for a
 * uid without passwd entry, what a sandboxed process can still reach of a
 * same-uid process outside, and that no cover leaks out of the sandbox's
 * mount namespace. Children report the first failed check through a
 * pipe and their exit status, so it shows up in cmocka. No network traffic:
 * sockets are created, never connected (least of all AF_VSOCK, the host
 * listens there). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <grp.h>
#include <pwd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/magic.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>

#include "sandbox/sandbox.h"

#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif

extern char **environ;

/* ---- forked children that report ------------------------------------------------------ */

static int child_msg_fd = -1;

__attribute__((format(printf, 2, 3), noreturn)) static void
child_failf(int line, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	va_end(ap);
	if (child_msg_fd >= 0 && write(child_msg_fd, msg, strlen(msg)) < 0)
		_exit(2);
	_exit(1);
}

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		int e_ = errno;                                                                    \
		if (!(cond))                                                                       \
			child_failf(__LINE__, "%s (errno %d: %s)", #cond, e_, strerror(e_));       \
	} while (0)

#define CHECKF(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond))                                                                       \
			child_failf(__LINE__, __VA_ARGS__);                                        \
	} while (0)

/* call must fail with errno want */
#define CHECK_ERR(call, want)                                                                      \
	do {                                                                                       \
		long r_ = (long)(call);                                                            \
		int e_ = errno;                                                                    \
		if (r_ != -1 || e_ != (want))                                                      \
			child_failf(__LINE__,                                                      \
				    "%s: returned %ld errno %d (%s), want errno %d (%s)", #call,   \
				    r_, r_ == -1 ? e_ : 0, r_ == -1 ? strerror(e_) : "-", (want),  \
				    strerror(want));                                               \
	} while (0)

struct child_result {
	int status;
	char msg[1024];
};

/* Runs fn(arg) in a forked child, under the seccomp filter when filtered.
 * The child exits 0 when fn returns. */
static void
run_child(void (*fn)(void *), void *arg, bool filtered, struct child_result *res)
{
	struct rlimit no_core = {0, 0};
	size_t len = 0;
	ssize_t n;
	pid_t pid;
	int p[2];

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child_msg_fd = p[1];
		/* cmocka's handlers would longjmp back into its runner */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGILL, SIG_DFL);
		signal(SIGFPE, SIG_DFL);
		signal(SIGSYS, SIG_DFL);
		/* SIGSYS from SECCOMP_RET_KILL_PROCESS would dump core */
		setrlimit(RLIMIT_CORE, &no_core);
		if (filtered) {
			CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
			CHECK(sandbox_install_seccomp() == 0);
		}
		fn(arg);
		_exit(0);
	}
	close(p[1]);
	while ((n = read(p[0], res->msg + len, sizeof(res->msg) - 1 - len)) > 0)
		len += n;
	res->msg[len] = '\0';
	close(p[0]);
	while (waitpid(pid, &res->status, 0) == -1)
		assert_int_equal(errno, EINTR);
}

static void
check_child(const struct child_result *res)
{
	if (!WIFEXITED(res->status) || WEXITSTATUS(res->status) != 0) {
		if (WIFSIGNALED(res->status))
			fail_msg("child killed by signal %d; %s", WTERMSIG(res->status), res->msg);
		fail_msg("child exited %d: %s", WEXITSTATUS(res->status), res->msg);
	}
}

static void
expect_child_ok(void (*fn)(void *), void *arg, bool filtered)
{
	struct child_result res;

	run_child(fn, arg, filtered, &res);
	check_child(&res);
}

/* A pid from raw clone/clone3 that should never have been created. */
static void
reap_unexpected(long pid, const char *what)
{
	if (pid == 0)
		_exit(0); /* the unexpected child itself */
	if (pid > 0) {
		waitpid(pid, NULL, 0);
		child_failf(__LINE__, "%s created process %ld", what, pid);
	}
}

/* ---- seccomp: socket families ------------------------------------------------------- */

struct family_case {
	const char *name;
	long domain; /* long: the upper half must not matter */
	int type;
	int proto;
};

static const struct family_case denied_families[] = {
	{"AF_PACKET raw", AF_PACKET, SOCK_RAW, 0},
	{"AF_PACKET dgram", AF_PACKET, SOCK_DGRAM, 0},
	{"AF_VSOCK stream", AF_VSOCK, SOCK_STREAM, 0}, /* created only, never connected */
	{"AF_XDP", AF_XDP, SOCK_RAW, 0},
	{"AF_CAN", AF_CAN, SOCK_RAW, 1},
	{"AF_BLUETOOTH", AF_BLUETOOTH, SOCK_RAW, 0},
	{"AF_TIPC", AF_TIPC, SOCK_RDM, 0},
	{"AF_KEY", AF_KEY, SOCK_RAW, 2},
	{"AF_ALG", AF_ALG, SOCK_SEQPACKET, 0},
	{"AF_UNSPEC", AF_UNSPEC, SOCK_STREAM, 0},
	{"AF_PACKET, upper half set", (1L << 32) | AF_PACKET, SOCK_RAW, 0},
	{"AF_VSOCK, upper half set", (1L << 32) | AF_VSOCK, SOCK_STREAM, 0},
	{"AF_PACKET + 1<<31", 0x80000000L | AF_PACKET, SOCK_RAW, 0},
};

static const struct family_case allowed_families[] = {
	{"AF_UNIX stream", AF_UNIX, SOCK_STREAM, 0},
	{"AF_UNIX dgram", AF_UNIX, SOCK_DGRAM, 0},
	{"AF_UNIX seqpacket", AF_UNIX, SOCK_SEQPACKET, 0},
	{"AF_INET stream", AF_INET, SOCK_STREAM, 0},
	{"AF_INET dgram", AF_INET, SOCK_DGRAM, 0},
	{"AF_INET6 stream", AF_INET6, SOCK_STREAM, 0},
	{"AF_INET6 dgram", AF_INET6, SOCK_DGRAM, 0},
	{"AF_NETLINK route", AF_NETLINK, SOCK_RAW, NETLINK_ROUTE},
	{"AF_INET, upper half set", (1L << 32) | AF_INET, SOCK_STREAM, 0},
};

static void
denied_families_child(void *arg)
{
	size_t i;
	int sv[2];

	(void)arg;
	for (i = 0; i < sizeof(denied_families) / sizeof(denied_families[0]); i++) {
		const struct family_case *c = &denied_families[i];
		long fd = syscall(SYS_socket, c->domain, c->type, c->proto);
		int e = errno;

		CHECKF(fd == -1 && e == EAFNOSUPPORT, "socket(%s): returned %ld errno %d (%s)",
		       c->name, fd, fd == -1 ? e : 0, strerror(e));
	}
	CHECK_ERR(socketpair(AF_PACKET, SOCK_RAW, 0, sv), EAFNOSUPPORT);
	CHECK_ERR(socketpair(AF_VSOCK, SOCK_STREAM, 0, sv), EAFNOSUPPORT);
	CHECK_ERR(syscall(SYS_socketpair, (1L << 32) | AF_PACKET, SOCK_DGRAM, 0, sv), EAFNOSUPPORT);
}

static void
test_seccomp_denied_families(void **state)
{
	(void)state;
	expect_child_ok(denied_families_child, NULL, true);
}

static void
packet_socket_child(void *arg)
{
	int fd = socket(AF_PACKET, SOCK_RAW, 0);

	(void)arg;
	CHECK(fd >= 0);
	close(fd);
}

/* Control: without the filter root does get an AF_PACKET socket, so the
 * EAFNOSUPPORT above comes from the filter, not from the kernel. */
static void
test_seccomp_packet_control(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	expect_child_ok(packet_socket_child, NULL, false);
}

static void
allowed_families_child(void *arg)
{
	bool have_inet6 = access("/proc/net/if_inet6", F_OK) == 0;
	size_t i;
	int sv[2];

	(void)arg;
	for (i = 0; i < sizeof(allowed_families) / sizeof(allowed_families[0]); i++) {
		const struct family_case *c = &allowed_families[i];
		long fd;
		int e;

		if (c->domain == AF_INET6 && !have_inet6)
			continue;
		fd = syscall(SYS_socket, c->domain, c->type, c->proto);
		e = errno;
		CHECKF(fd >= 0, "socket(%s): errno %d (%s)", c->name, e, strerror(e));
		close(fd);
	}
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	close(sv[0]);
	close(sv[1]);
	CHECK(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0);
	close(sv[0]);
	close(sv[1]);
	CHECK(syscall(SYS_socketpair, (1L << 32) | AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	close(sv[0]);
	close(sv[1]);
}

static void
test_seccomp_allowed_families(void **state)
{
	(void)state;
	expect_child_ok(allowed_families_child, NULL, true);
}

/* ---- seccomp: namespaces, clone3 ------------------------------------------------------ */

/* struct clone_args, version 0 (64 bytes); linux/sched.h clashes with sched.h */
struct clone_args0 {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static void
userns_child(void *arg)
{
	struct clone_args0 ca = {.exit_signal = SIGCHLD};
	long pid;
	int fd;

	(void)arg;
	CHECK_ERR(unshare(CLONE_NEWUSER), EPERM);
	CHECK_ERR(unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS), EPERM);
	CHECK_ERR(syscall(SYS_unshare, (1L << 32) | CLONE_NEWUSER), EPERM);
	CHECK(unshare(0) == 0); /* unshare itself stays allowed */

	pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	reap_unexpected(pid, "clone(CLONE_NEWUSER)");
	CHECK(pid == -1 && errno == EPERM);
	/* the kernel takes only the low 32 bits of clone's flags */
	pid = syscall(SYS_clone, (1L << 32) | CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	reap_unexpected(pid, "clone(1<<32|CLONE_NEWUSER)");
	CHECK(pid == -1 && errno == EPERM);

	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	reap_unexpected(pid, "clone3()");
	CHECK(pid == -1 && errno == ENOSYS);
	ca.flags = CLONE_NEWUSER;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	reap_unexpected(pid, "clone3(CLONE_NEWUSER)");
	CHECK(pid == -1 && errno == ENOSYS);

	/* the kernel says EINVAL for joining our own userns; EPERM is the filter */
	fd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_ERR(setns(fd, CLONE_NEWUSER), EPERM);
	CHECK_ERR(setns(fd, 0), EPERM);
	close(fd);
}

static void
test_seccomp_userns(void **state)
{
	(void)state;
	expect_child_ok(userns_child, NULL, true);
}

/* ---- seccomp: mounts, modules, kexec, file handles (what a root made by
 * sudo would use), as root with every capability: only the filter refuses */

static void
root_syscalls_child(void *arg)
{
	char dir[] = "/tmp/egr-sbx-mnt-XXXXXX", handle[64] = {0};
	long pid;
	int fd;

	(void)arg;
	CHECK(mkdtemp(dir) != NULL);
	CHECK_ERR(mount("none", dir, "tmpfs", 0, NULL), EPERM);
	CHECK_ERR(umount2("/sys/fs/cgroup", MNT_DETACH), EPERM);
	CHECK_ERR(syscall(SYS_pivot_root, "/", "/"), EPERM);
	CHECK_ERR(syscall(430 /* fsopen */, "tmpfs", 0), EPERM);
	CHECK_ERR(syscall(428 /* open_tree */, AT_FDCWD, "/", 1), EPERM);
	CHECK_ERR(syscall(442 /* mount_setattr */, AT_FDCWD, "/", 0, NULL, 0), EPERM);
	CHECK_ERR(syscall(429 /* move_mount */, -1, "", -1, "", 0), EPERM);
	/* the rest of the new mount API: each reaches the kernel unfiltered
	 * (EBADF, EINVAL, ENOENT), EPERM here */
	CHECK_ERR(syscall(431 /* fsconfig */, -1, 0, NULL, NULL, 0), EPERM);
	CHECK_ERR(syscall(432 /* fsmount */, -1, 0, 0), EPERM);
	CHECK_ERR(syscall(433 /* fspick */, AT_FDCWD, "/proc", 0), EPERM);
	CHECK_ERR(syscall(467 /* open_tree_attr */, AT_FDCWD, "/", 1, NULL, 0), EPERM);
	CHECK_ERR(unshare(CLONE_NEWNS), EPERM);
	CHECK_ERR(unshare(CLONE_NEWNET), EPERM);
	CHECK_ERR(unshare(CLONE_NEWPID), EPERM);
	CHECK_ERR(unshare(0x80 /* CLONE_NEWTIME */), EPERM);
	pid = syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
	reap_unexpected(pid, "clone(CLONE_NEWNET)");
	CHECK(pid == -1 && errno == EPERM);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_ERR(syscall(SYS_finit_module, fd, "", 0), EPERM);
	close(fd);
	CHECK_ERR(syscall(SYS_init_module, NULL, 0, ""), EPERM);
	CHECK_ERR(syscall(SYS_delete_module, "egr_none", 0), EPERM);
	CHECK_ERR(syscall(SYS_kexec_load, 0, 0, NULL, 0), EPERM);
	CHECK_ERR(syscall(SYS_kexec_file_load, -1, -1, 0, "", 0), EPERM);
	CHECK_ERR(syscall(SYS_open_by_handle_at, AT_FDCWD, handle, O_RDONLY), EPERM);
	CHECK_ERR(syscall(SYS_reboot, 0, 0, 0, NULL), EPERM);
	CHECK_ERR(syscall(SYS_acct, NULL), EPERM);
	CHECK_ERR(syscall(SYS_swapoff, "/nonexistent"), EPERM);
	rmdir(dir);
}

static void
test_seccomp_root_syscalls(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	expect_child_ok(root_syscalls_child, NULL, true);
}

/* ---- seccomp: the filter itself, on every syscall number --------------------------------- */

/* A classic-BPF interpreter for what the filter uses (LD W ABS, JEQ, JSET
 * and JGT with constants, RET): its answer for d. An instruction it does
 * not know fails the test. */
static uint32_t
prog_run(const struct sock_filter *f, size_t n, const struct seccomp_data *d)
{
	const struct sock_filter *i;
	size_t pc = 0;
	uint32_t a = 0;

	while (pc < n) {
		i = &f[pc++];
		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			assert_true(i->k % 4 == 0 && i->k + 4 <= sizeof(*d));
			memcpy(&a, (const char *)d + i->k, 4);
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += a == i->k ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
			pc += (a & i->k) ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JGT | BPF_K:
			pc += a > i->k ? i->jt : i->jf;
			break;
		case BPF_RET | BPF_K:
			return i->k;
		default:
			fail_msg("instruction %zu: code %#x", pc - 1, i->code);
		}
	}
	fail_msg("the filter ends without a verdict");
	return 0;
}

static uint32_t
filter_run(const struct seccomp_data *d)
{
	size_t n;
	const struct sock_filter *f = sandbox_seccomp_filter(&n);

	return prog_run(f, n, d);
}

/* `egressctl sudo`'s second filter: what root inside must not do to a
 * file, because the job's user outside would run it as root -- a mode with
 * the setuid or setgid bit, set or given at creation -- is EPERM, each
 * call with the mode where that call has it; a mode without them, a mode
 * argument an open without O_CREAT ignores, and every other call pass. */
static void
test_seccomp_nosetid(void **state)
{
	static const struct {
		unsigned int nr, mode_arg;
	} modes[] = {
		{SYS_chmod, 1}, {SYS_fchmod, 1}, {SYS_fchmodat, 2}, {452 /* fchmodat2 */, 2},
		{SYS_creat, 1}, {SYS_mknod, 1},	 {SYS_mknodat, 2},
	};
	const struct sock_filter *f;
	struct seccomp_data d;
	size_t n, i;
	const uint32_t eperm = SECCOMP_RET_ERRNO | EPERM;

	(void)state;
	f = sandbox_nosetid_filter(&n);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		memset(&d, 0, sizeof(d));
		d.arch = AUDIT_ARCH_X86_64;
		d.nr = (int)modes[i].nr;
		d.args[modes[i].mode_arg] = 04755;
		assert_int_equal(prog_run(f, n, &d), eperm);
		d.args[modes[i].mode_arg] = 02755;
		assert_int_equal(prog_run(f, n, &d), eperm);
		d.args[modes[i].mode_arg] = 0755;
		assert_int_equal(prog_run(f, n, &d), SECCOMP_RET_ALLOW);
	}
	memset(&d, 0, sizeof(d));
	d.arch = AUDIT_ARCH_X86_64;
	d.nr = SYS_open;
	d.args[1] = O_WRONLY | O_CREAT;
	d.args[2] = 04755;
	assert_int_equal(prog_run(f, n, &d), eperm);
	d.args[1] = O_RDONLY; /* no file made: the mode means nothing */
	assert_int_equal(prog_run(f, n, &d), SECCOMP_RET_ALLOW);
	d.nr = SYS_openat;
	d.args[2] = O_TMPFILE | O_WRONLY;
	d.args[3] = 02755;
	assert_int_equal(prog_run(f, n, &d), eperm);
	d.args[2] = O_DIRECTORY;
	assert_int_equal(prog_run(f, n, &d), SECCOMP_RET_ALLOW);
	d.args[2] = O_CREAT | O_WRONLY;
	d.args[3] = 0644;
	assert_int_equal(prog_run(f, n, &d), SECCOMP_RET_ALLOW);
	d.nr = 437; /* openat2: its mode is in memory */
	assert_int_equal(prog_run(f, n, &d), SECCOMP_RET_ERRNO | ENOSYS);
	d.nr = SYS_write;
	d.args[2] = 04755;
	assert_int_equal(prog_run(f, n, &d), SECCOMP_RET_ALLOW);
}

/* Every mount call of the old and the new API that Linux 6.18 has is EPERM;
 * every number past the last one it has is ENOSYS (a later kernel's new
 * call, mount-making or not, is never let through unread); the read-only
 * mount queries and the newest calls the filter knows pass. Run in this
 * process, no kernel involved: the numbers past 469 mean nothing to 6.18,
 * so only the filter's own answer can show the rule. */
static void
test_seccomp_numbers(void **state)
{
	static const unsigned int mounts[] = {
		SYS_mount,
		SYS_umount2,
		SYS_pivot_root,
		428 /* open_tree */,
		429 /* move_mount */,
		430 /* fsopen */,
		431 /* fsconfig */,
		432 /* fsmount */,
		433 /* fspick */,
		442 /* mount_setattr */,
		467 /* open_tree_attr */,
	};
	static const unsigned int newer[] = {470, 471, 472, 500, 1023, 0x3fffffff};
	static const unsigned int allowed[] = {
		SYS_read,
		SYS_openat,
		SYS_statx,
		SYS_chroot,
		457 /* statmount */,
		458 /* listmount */,
		468 /* file_getattr */,
		469 /* file_setattr */,
	};
	struct seccomp_data d = {.arch = AUDIT_ARCH_X86_64};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		d.nr = (int)mounts[i];
		if (filter_run(&d) != (SECCOMP_RET_ERRNO | EPERM))
			fail_msg("syscall %u: %#x, want EPERM", mounts[i], filter_run(&d));
	}
	for (i = 0; i < sizeof(newer) / sizeof(newer[0]); i++) {
		d.nr = (int)newer[i];
		if (filter_run(&d) != (SECCOMP_RET_ERRNO | ENOSYS))
			fail_msg("syscall %u: %#x, want ENOSYS", newer[i], filter_run(&d));
	}
	for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		d.nr = (int)allowed[i];
		if (filter_run(&d) != SECCOMP_RET_ALLOW)
			fail_msg("syscall %u: %#x, want allowed", allowed[i], filter_run(&d));
	}
}

/* ---- seccomp: other processes, bpf, io_uring ------------------------------------------ */

static void
cross_process_child(void *arg)
{
	char a[8] = "abcdefg", b[8] = {0};
	struct iovec lv = {b, sizeof(b)}, rv = {a, sizeof(a)};
	int pidfd;

	(void)arg;
	CHECK_ERR(ptrace(PTRACE_TRACEME, 0, NULL, NULL), EPERM);
	CHECK_ERR(ptrace(PTRACE_ATTACH, getppid(), NULL, NULL), EPERM);
	/* reading or writing our own memory always works without the filter */
	CHECK_ERR(process_vm_readv(getpid(), &lv, 1, &rv, 1, 0), EPERM);
	CHECK_ERR(process_vm_writev(getpid(), &rv, 1, &lv, 1, 0), EPERM);
	pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	CHECK(pidfd >= 0);
	CHECK_ERR(syscall(SYS_pidfd_getfd, pidfd, 0, 0), EPERM);
	close(pidfd);
}

static void
test_seccomp_cross_process(void **state)
{
	(void)state;
	expect_child_ok(cross_process_child, NULL, true);
}

static void
bpf_io_uring_child(void *arg)
{
	uint64_t attr[16] = {0};   /* union bpf_attr: all zero is EINVAL unfiltered */
	uint64_t params[16] = {0}; /* struct io_uring_params is 120 bytes */

	(void)arg;
	CHECK_ERR(syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, attr, sizeof(attr)), EPERM);
	CHECK_ERR(syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, attr, sizeof(attr)), EPERM);
	CHECK_ERR(syscall(SYS_io_uring_setup, 1, params), ENOSYS);
	/* no syscall number at all: the kernel's own ENOSYS, not a kill */
	CHECK_ERR(syscall(-1L), ENOSYS);
}

static void
test_seccomp_bpf_io_uring(void **state)
{
	(void)state;
	expect_child_ok(bpf_io_uring_child, NULL, true);
}

/* ---- seccomp: typing into a terminal --------------------------------------------------- */

/* A pty of the host's devpts: master and slave, or false. */
static bool
open_pty(int *master, int *slave)
{
	char name[64];

	*master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*master < 0 || grantpt(*master) || unlockpt(*master) ||
	    ptsname_r(*master, name, sizeof(name))) {
		if (*master >= 0)
			close(*master);
		return false;
	}
	*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0) {
		close(*master);
		return false;
	}
	return true;
}

static bool
legacy_tiocsti(void)
{
	char buf[8] = "";
	FILE *f = fopen("/proc/sys/dev/tty/legacy_tiocsti", "re");

	if (!f)
		return true; /* older kernels: always on */
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return buf[0] == '1';
}

static void
tiocsti_child(void *arg)
{
	bool filtered = arg != NULL;
	struct termios tio;
	struct winsize ws;
	char c = 'a', got = 0, sub = 3;
	int master, slave;

	CHECK(open_pty(&master, &slave));
	/* ordinary terminal ioctls stay allowed */
	CHECK(tcgetattr(slave, &tio) == 0);
	CHECK(ioctl(slave, TIOCGWINSZ, &ws) == 0);
	if (filtered) {
		CHECK_ERR(ioctl(slave, TIOCSTI, &c), EPERM);
		CHECK_ERR(ioctl(master, TIOCSTI, &c), EPERM);
		/* the kernel reads only the low half of the request */
		CHECK_ERR(syscall(SYS_ioctl, slave, (1L << 32) | TIOCSTI, &c), EPERM);
		CHECK_ERR(ioctl(slave, TIOCLINUX, &sub), EPERM);
		return;
	}
	/* control: root (CAP_SYS_ADMIN) types into a terminal that is not
	 * its own, and the terminal hands the byte to its reader */
	CHECK(ioctl(slave, TIOCSTI, &c) == 0);
	tio.c_lflag &= ~(tcflag_t)ICANON;
	CHECK(tcsetattr(slave, TCSANOW, &tio) == 0);
	CHECK(read(slave, &got, 1) == 1 && got == 'a');
}

/* TIOCSTI (and TIOCLINUX) refused: with dev.tty.legacy_tiocsti=1 a command
 * typed into the terminal egressctl asked its --ask questions on. */
static void
test_seccomp_tiocsti(void **state)
{
	(void)state;
	if (geteuid() == 0 && legacy_tiocsti())
		expect_child_ok(tiocsti_child, NULL, false);
	expect_child_ok(tiocsti_child, (void *)1, true);
}

/* ---- seccomp: process creation still works ------------------------------------------- */

static void *
thread_fn(void *arg)
{
	return (char *)arg + 1;
}

static void
spawn_child(void *arg)
{
	char *true_argv[] = {"true", NULL};
	char *sh_argv[] = {"sh", "-c", "exit 5", NULL};
	char token[2];
	pthread_t t;
	void *ret;
	pid_t pid;
	int st;

	(void)arg;
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(7);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 7);

	/* glibc tries clone3 first and falls back to clone on ENOSYS */
	CHECK(pthread_create(&t, NULL, thread_fn, token) == 0);
	CHECK(pthread_join(t, &ret) == 0 && ret == token + 1);

	CHECK(posix_spawn(&pid, "/bin/true", NULL, NULL, true_argv, environ) == 0);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(posix_spawnp(&pid, "sh", NULL, NULL, sh_argv, environ) == 0);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 5);
}

static void
test_seccomp_process_creation(void **state)
{
	(void)state;
	expect_child_ok(spawn_child, NULL, true);
}

static void
status_child(void *arg)
{
	char line[256];
	bool seen = false;
	FILE *f;

	(void)arg;
	f = fopen("/proc/self/status", "re");
	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (!strcmp(line, "Seccomp:\t2\n"))
			seen = true;
	fclose(f);
	CHECKF(seen, "Seccomp mode 2 not in /proc/self/status");
}

static void
test_seccomp_mode_filter(void **state)
{
	(void)state;
	expect_child_ok(status_child, NULL, true);
}

/* ---- seccomp: other ABIs are killed ------------------------------------------------- */

static void
x32_child(void *arg)
{
	(void)arg;
	syscall(__X32_SYSCALL_BIT | SYS_getpid);
	child_failf(__LINE__, "x32 getpid returned");
}

static void
x32_socket_child(void *arg)
{
	(void)arg;
	syscall(__X32_SYSCALL_BIT | SYS_socket, AF_PACKET, SOCK_RAW, 0);
	child_failf(__LINE__, "x32 socket returned");
}

static long
int80_getpid(void)
{
	long ret;

	/* i386 getpid is 20; int 0x80 zeroes r8-r11 */
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

static void
i386_child(void *arg)
{
	long pid = int80_getpid();

	CHECKF(!arg, "int 0x80 getpid returned %ld under the filter", pid);
	CHECKF(pid == getpid(), "int 0x80 getpid returned %ld, want %d", pid, getpid());
}

static void
expect_sigsys(void (*fn)(void *), void *arg)
{
	struct child_result res;

	run_child(fn, arg, true, &res);
	if (!WIFSIGNALED(res.status) || WTERMSIG(res.status) != SIGSYS)
		fail_msg("want SIGSYS, got status %#x: %s", res.status, res.msg);
}

static void
test_seccomp_x32_killed(void **state)
{
	(void)state;
	expect_sigsys(x32_child, NULL);
	expect_sigsys(x32_socket_child, NULL);
}

static void
test_seccomp_i386_killed(void **state)
{
	struct child_result res;

	(void)state;
	/* without IA32 emulation int 0x80 is a SIGSEGV, filter or not */
	run_child(i386_child, NULL, false, &res);
	if (!WIFEXITED(res.status) || WEXITSTATUS(res.status) != 0)
		skip();
	expect_sigsys(i386_child, (void *)1);
}

/* ---- sandbox_resolve_user ------------------------------------------------------------ */

static void
set_sudo(const char *uid, const char *gid)
{
	if (uid)
		assert_int_equal(setenv("SUDO_UID", uid, 1), 0);
	else
		assert_int_equal(unsetenv("SUDO_UID"), 0);
	if (gid)
		assert_int_equal(setenv("SUDO_GID", gid, 1), 0);
	else
		assert_int_equal(unsetenv("SUDO_GID"), 0);
}

struct resolve_case {
	const char *desc;
	const char *user;     /* --user */
	const char *sudo_uid; /* NULL: unset */
	const char *sudo_gid;
	int err;
	const char *pw;	     /* expect this passwd entry's uid, gid, name, home */
	long uid, gid;	     /* else these, name and home empty */
	const char *errpart; /* errbuf contains this */
};

#define ROOT_MSG                                                                                   \
	"CMD would run as root: pass --user USER (or --user root to accept that root can leave "   \
	"the cgroup)"

static const struct resolve_case resolve_cases[] = {
	{"no sudo, no --user", NULL, NULL, NULL, -EPERM, .errpart = ROOT_MSG},
	{"empty SUDO_UID", NULL, "", NULL, -EPERM, .errpart = ROOT_MSG},
	{"SUDO_UID=0", NULL, "0", "0", -EPERM, .errpart = ROOT_MSG},
	{"SUDO_UID=0 no gid", NULL, "0", NULL, -EPERM, .errpart = ROOT_MSG},
	{"SUDO_UID=00", NULL, "00", "0", -EPERM, .errpart = ROOT_MSG},
	{"sudo from nobody", NULL, "65534", "65534", 0, "nobody"},
	{"sudo, no SUDO_GID", NULL, "65534", NULL, 0, "nobody"},
	{"sudo, SUDO_GID wins", NULL, "65534", "4242", 0, "nobody", .gid = 4242},
	{"sudo, SUDO_GID=0", NULL, "65534", "0", -EPERM, .errpart = "SUDO_GID"},
	{"sudo, garbage SUDO_UID", NULL, "12x", "12", -EINVAL, .errpart = "SUDO_UID=12x"},
	{"sudo, negative SUDO_UID", NULL, "-1", "12", -EINVAL, .errpart = "SUDO_UID"},
	{"sudo, garbage SUDO_GID", NULL, "65534", "x", -EINVAL, .errpart = "SUDO_GID=x"},
	{"sudo from a uid without passwd", NULL, "4242420", "4242421", 0, NULL, 4242420, 4242421},
	{"sudo, unknown uid, no gid", NULL, "4242420", NULL, -ENOENT, .errpart = "4242420"},
	{"--user nobody", "nobody", NULL, NULL, 0, "nobody"},
	{"--user 65534", "65534", NULL, NULL, 0, "nobody"},
	{"--user root", "root", NULL, NULL, 0, "root"},
	{"--user 0", "0", NULL, NULL, 0, "root"},
	{"--user wins over sudo", "root", "65534", "65534", 0, "root"},
	{"--user nobody under sudo", "nobody", "1000", "1000", 0, "nobody"},
	{"--user unknown", "egressctl-no-such-user", NULL, NULL, -ENOENT,
	 .errpart = "egressctl-no-such-user"},
	{"--user unknown uid", "4242420", NULL, NULL, 0, NULL, 4242420, 4242420},
	{"--user -1", "-1", NULL, NULL, -ENOENT, .errpart = "-1"},
	{"--user (uid_t)-1", "4294967295", NULL, NULL, -ENOENT, .errpart = "4294967295"},
	{"--user 2^32", "4294967296", NULL, NULL, -ENOENT, .errpart = "4294967296"},
	{"--user ''", "", NULL, NULL, -EINVAL, .errpart = "empty"},
	{"--user ' 0'", " 0", NULL, NULL, -ENOENT, .errpart = " 0"},
};

static void
test_resolve_table(void **state)
{
	char errbuf[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(resolve_cases) / sizeof(resolve_cases[0]); i++) {
		const struct resolve_case *c = &resolve_cases[i];
		struct sandbox_user u;
		struct passwd *pw = NULL;
		int err;

		if (c->pw && !(pw = getpwnam(c->pw))) {
			print_message("[ SKIP     ] %s: no passwd entry %s\n", c->desc, c->pw);
			continue;
		}
		set_sudo(c->sudo_uid, c->sudo_gid);
		memset(&u, 0xa5, sizeof(u));
		strcpy(errbuf, "stale");
		err = sandbox_resolve_user(c->user, &u, errbuf, sizeof(errbuf));
		if (err != c->err)
			fail_msg("%s: got %d (%s), want %d", c->desc, err, errbuf, c->err);
		if (err) {
			if (!strstr(errbuf, c->errpart))
				fail_msg("%s: errbuf '%s' lacks '%s'", c->desc, errbuf, c->errpart);
			continue;
		}
		if (pw) {
			assert_int_equal(u.uid, pw->pw_uid);
			assert_int_equal(u.gid, c->gid ? (gid_t)c->gid : pw->pw_gid);
			assert_string_equal(u.name, pw->pw_name);
			assert_string_equal(u.home, pw->pw_dir);
		} else {
			assert_int_equal(u.uid, c->uid);
			assert_int_equal(u.gid, c->gid);
			assert_string_equal(u.name, "");
			assert_string_equal(u.home, "");
		}
	}
	set_sudo(NULL, NULL);
}

/* SUDO_UID=0 and no sudo at all are one error, word for word. */
static void
test_resolve_root_refusal_same(void **state)
{
	char e1[256], e2[256];
	struct sandbox_user u;

	(void)state;
	set_sudo(NULL, NULL);
	assert_int_equal(sandbox_resolve_user(NULL, &u, e1, sizeof(e1)), -EPERM);
	set_sudo("0", "0");
	assert_int_equal(sandbox_resolve_user(NULL, &u, e2, sizeof(e2)), -EPERM);
	assert_string_equal(e1, ROOT_MSG);
	assert_string_equal(e1, e2);
	set_sudo(NULL, NULL);
}

static void
test_resolve_args(void **state)
{
	struct sandbox_user u;
	char tiny[8];

	(void)state;
	set_sudo(NULL, NULL);
	assert_int_equal(sandbox_resolve_user("nobody", NULL, NULL, 0), -EINVAL);
	assert_int_equal(sandbox_resolve_user(NULL, &u, NULL, 0), -EPERM);
	assert_int_equal(sandbox_resolve_user("egressctl-no-such-user", &u, NULL, 0), -ENOENT);
	assert_int_equal(sandbox_resolve_user(NULL, &u, tiny, sizeof(tiny)), -EPERM);
	assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
	strcpy(tiny, "x");
	assert_int_equal(sandbox_resolve_user("root", &u, tiny, sizeof(tiny)), 0);
	assert_string_equal(tiny, "");
}

/* ---- sandbox_enter ------------------------------------------------------------------- */

#define MAX_MNT 16

/* Mount points of fstype, parsed here independently of cgroup.c. */
static int
mounts_of(const char *fstype, char paths[][PATH_MAX], int max)
{
	char *line = NULL, mnt[PATH_MAX], *sep, type[64];
	size_t cap = 0;
	int n = 0;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0 && n < max) {
		sep = strstr(line, " - ");
		if (!sep || sscanf(sep, " - %63s", type) != 1 || strcmp(type, fstype))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 || strchr(mnt, '\\'))
			continue;
		strcpy(paths[n++], mnt);
	}
	free(line);
	fclose(f);
	return n;
}

/* Covered: an empty directory on tmpfs, or gone from view because a cover
 * above it hides it. */
static bool
covered(const char *path)
{
	struct statfs sfs;
	struct dirent *de;
	int n = 0;
	DIR *d;

	if (access(path, F_OK) == -1 && errno == ENOENT)
		return true;
	if (statfs(path, &sfs) || sfs.f_type != TMPFS_MAGIC)
		return false;
	d = opendir(path);
	if (!d)
		return false;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n == 0;
}

static void
check_status_zero_caps(void)
{
	static const char *const zero[] = {
		"CapInh:\t0000000000000000\n",
		"CapPrm:\t0000000000000000\n",
		"CapEff:\t0000000000000000\n",
		"CapBnd:\t0000000000000000\n",
		"CapAmb:\t0000000000000000\n",
		"NoNewPrivs:\t1\n",
		"Seccomp:\t2\n",
	};
	bool seen[sizeof(zero) / sizeof(zero[0])] = {0};
	char line[256];
	size_t i;
	FILE *f;

	f = fopen("/proc/self/status", "re");
	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f))
		for (i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
			if (!strcmp(line, zero[i]))
				seen[i] = true;
	fclose(f);
	for (i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
		CHECKF(seen[i], "/proc/self/status lacks '%.*s'", (int)strlen(zero[i]) - 1,
		       zero[i]);
}

/* The kernel's knobs: files a uid 0 without capabilities could open for
 * writing (mode 0644/0200 root) before the sandbox, and must not after.
 * Only ever opened, never written. Not every kernel has each of them. */
static const char *const knob_files[] = {
	"/proc/sys/kernel/core_pattern",     /* a pipe here runs as real root */
	"/proc/sys/kernel/modprobe",	     /* the same, on the next module load */
	"/proc/sys/net/ipv4/ip_default_ttl", /* per netns: the netns owner's uid 0 */
	"/proc/sysrq-trigger",
	"/sys/kernel/uevent_helper",
	"/sys/kernel/mm/transparent_hugepage/enabled",
	"/sys/module/printk/parameters/time",
};
#define NKNOBS (sizeof(knob_files) / sizeof(knob_files[0]))

static const char *const masked_files[] = {"/proc/keys", "/proc/timer_list", "/proc/kcore",
					   "/proc/sched_debug"};
#define NMASKED (sizeof(masked_files) / sizeof(masked_files[0]))

/* The same files through other mounts of their filesystems, made in the
 * child's mount namespace under kfdir (kf_mount_aliases): a second procfs,
 * a bind of /proc, a bind of /proc/sys, a second sysfs. The bug this pins:
 * only /proc/... and /sys/... themselves were read-only, and a uid 0 CMD
 * opened core_pattern for writing through any of these. */
static const struct {
	const char *from, *to; /* a knob_files path starting with from is reached at kfdir/to... */
} aliases[] = {
	{"", ""}, /* the path itself */
	{"/proc/", "proc2/"},
	{"/proc/", "procbind/"},
	{"/proc/sys/", "procsys/"},
	{"/sys/", "sys2/"},
};
#define NALIAS (sizeof(aliases) / sizeof(aliases[0]))

struct knobs {
	const char *kfdir;
	bool knob[NKNOBS][NALIAS], masked[NMASKED][NALIAS], firmware[NALIAS], debugfs;
	char v1[MAX_MNT][PATH_MAX]; /* cgroup v1 hierarchies */
	int nv1;
};

/* file through alias a into out; false when the alias does not reach it */
static bool
alias_path(const struct knobs *k, size_t a, const char *file, char *out, size_t outlen)
{
	size_t n = strlen(aliases[a].from);

	if (a == 0)
		return (size_t)snprintf(out, outlen, "%s", file) < outlen;
	if (strncmp(file, aliases[a].from, n))
		return false;
	return (size_t)snprintf(out, outlen, "%s/%s%s", k->kfdir, aliases[a].to, file + n) < outlen;
}

/* In the child's own mount namespace: a tmpfs at kfdir holding the aliases'
 * mounts and a debugfs (where the kernel has one). */
static void
kf_mount_aliases(struct knobs *k)
{
	static const char *const dirs[] = {"proc2", "procbind", "procsys", "sys2", "dbg"};
	char p[PATH_MAX];
	size_t i;

	CHECK(mount("tmpfs", k->kfdir, "tmpfs", 0, "size=64k,mode=0755") == 0);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", k->kfdir, dirs[i]);
		CHECK(mkdir(p, 0755) == 0);
	}
	snprintf(p, sizeof(p), "%s/proc2", k->kfdir);
	CHECK(mount("proc", p, "proc", 0, NULL) == 0);
	snprintf(p, sizeof(p), "%s/procbind", k->kfdir);
	CHECK(mount("/proc", p, NULL, MS_BIND, NULL) == 0);
	snprintf(p, sizeof(p), "%s/procsys", k->kfdir);
	CHECK(mount("/proc/sys", p, NULL, MS_BIND, NULL) == 0);
	snprintf(p, sizeof(p), "%s/sys2", k->kfdir);
	CHECK(mount("sysfs", p, "sysfs", 0, NULL) == 0);
	snprintf(p, sizeof(p), "%s/dbg", k->kfdir);
	k->debugfs = mount("debugfs", p, "debugfs", 0, NULL) == 0;
	if (!k->debugfs)
		print_message("[   INFO   ] no debugfs: %s\n", strerror(errno));
}

/* Controls, as root with every capability: each file that exists opens for
 * writing (and is closed unwritten). */
static void
knobs_before(struct knobs *k)
{
	char p[PATH_MAX + 16];
	size_t i, a;
	int fd;

	kf_mount_aliases(k);
	for (i = 0; i < NKNOBS; i++)
		for (a = 0; a < NALIAS; a++) {
			if (!alias_path(k, a, knob_files[i], p, sizeof(p)))
				continue;
			fd = open(p, O_WRONLY | O_CLOEXEC);
			k->knob[i][a] = fd >= 0;
			if (fd >= 0)
				close(fd);
			/* core_pattern opens through every alias of /proc */
			CHECKF(i || fd >= 0, "control: cannot open %s for writing: %s", p,
			       strerror(errno));
		}
	for (i = 0; i < NMASKED; i++)
		for (a = 0; a < NALIAS; a++)
			k->masked[i][a] = alias_path(k, a, masked_files[i], p, sizeof(p)) &&
					  access(p, F_OK) == 0;
	for (a = 0; a < NALIAS; a++)
		k->firmware[a] =
			alias_path(k, a, "/sys/firmware", p, sizeof(p)) && access(p, F_OK) == 0;
	if (k->debugfs) {
		snprintf(p, sizeof(p), "%s/dbg", k->kfdir);
		CHECKF(!covered(p), "control: debugfs at %s looks empty", p);
	}
	k->nv1 = mounts_of("cgroup", k->v1, MAX_MNT);
	for (i = 0; i < (size_t)k->nv1; i++) {
		CHECK(snprintf(p, sizeof(p), "%s/tasks", k->v1[i]) < (int)sizeof(p));
		CHECK(access(p, F_OK) == 0);
	}
}

static void
knobs_after(const struct knobs *k, bool root)
{
	struct mount_attr attr = {.attr_clr = MOUNT_ATTR_RDONLY};
	char p[PATH_MAX + 16];
	struct stat st;
	size_t i, a;
	int fd, e;

	for (i = 0; i < NKNOBS; i++)
		for (a = 0; a < NALIAS; a++) {
			if (!k->knob[i][a] || !alias_path(k, a, knob_files[i], p, sizeof(p)))
				continue;
			fd = open(p, O_WRONLY | O_CLOEXEC);
			e = errno;
			if (fd >= 0)
				close(fd);
			/* EROFS: read-only mount; a non-root user meets EACCES first */
			CHECKF(fd == -1 && (e == EROFS || (!root && e == EACCES)),
			       "open %s for writing: fd %d, errno %d (%s)", p, fd, fd == -1 ? e : 0,
			       strerror(e));
		}
	for (i = 0; i < NMASKED; i++)
		for (a = 0; a < NALIAS; a++) {
			if (!k->masked[i][a] || !alias_path(k, a, masked_files[i], p, sizeof(p)))
				continue;
			CHECK(stat(p, &st) == 0);
			CHECKF(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3), "%s not masked",
			       p);
		}
	for (a = 0; a < NALIAS; a++)
		if (k->firmware[a] && alias_path(k, a, "/sys/firmware", p, sizeof(p)))
			CHECKF(covered(p), "%s not masked", p);
	if (k->debugfs) {
		snprintf(p, sizeof(p), "%s/dbg", k->kfdir);
		CHECKF(covered(p), "debugfs at %s not hidden", p);
	}
	for (i = 0; i < (size_t)k->nv1; i++) {
		CHECKF(covered(k->v1[i]), "cgroup v1 %s not covered", k->v1[i]);
		CHECK(snprintf(p, sizeof(p), "%s/tasks", k->v1[i]) < (int)sizeof(p));
		CHECK_ERR(access(p, F_OK), ENOENT);
	}
	/* nothing of it can be undone without CAP_SYS_ADMIN */
	CHECK_ERR(mount(NULL, "/proc/sys", NULL, MS_REMOUNT | MS_BIND, NULL), EPERM);
	CHECK_ERR(umount2("/proc/sys", MNT_DETACH), EPERM);
	CHECK_ERR(umount2("/sys", MNT_DETACH), EPERM);
	CHECK_ERR(mount_setattr(AT_FDCWD, "/sys", 0, &attr, sizeof(attr)), EPERM);
	CHECK_ERR(mount_setattr(AT_FDCWD, "/proc/sys", 0, &attr, sizeof(attr)), EPERM);
}

struct enter_case {
	struct sandbox_user u;
	const char *tmpdir; /* the child mounts bpffs here, cgroup2 at tmpdir/sub */
	const char *kfdir;  /* ... and the kernel files' aliases here (kf_mount_aliases) */
	bool no_exec;	    /* stop after the checks instead of exec'ing the shell check */
};

/* After exec, as the target user: still no capabilities, NNP, seccomp. */
static const char exec_check[] =
	"for l in 'CapInh:\t0000000000000000' 'CapPrm:\t0000000000000000' "
	"'CapEff:\t0000000000000000' 'CapBnd:\t0000000000000000' "
	"'CapAmb:\t0000000000000000' 'NoNewPrivs:\t1' 'Seccomp:\t2'; do "
	"grep -qxF \"$l\" /proc/self/status || { echo \"exec: no '$l'\" >&2; exit 10; }; done; "
	"[ \"$(id -u)\" = \"$1\" ] || exit 11";

static void
enter_child(void *arg)
{
	struct enter_case *c = arg;
	char cg[MAX_MNT][PATH_MAX], bpf[MAX_MNT][PATH_MAX], sub[PATH_MAX], sub2[PATH_MAX],
		p[PATH_MAX + 16];
	char uidstr[16];
	int keep, low_fd, high_fd, old_msg_fd, cg_dirfd, ncg, nbpf, i, err, bits;
	struct __user_cap_header_struct caphdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct capdata[_LINUX_CAPABILITY_U32S_3];
	gid_t groups[64], want_groups[64];
	int n, nwant, j;
	uid_t r, e, s;
	gid_t rg, eg, sg;
	const char *what = NULL;
	struct statfs sfs;
	struct knobs knobs = {0};

	/* keep_fd in the middle: fds below and above it must go */
	old_msg_fd = child_msg_fd;
	keep = fcntl(child_msg_fd, F_DUPFD_CLOEXEC, 100);
	CHECK(keep >= 100);
	child_msg_fd = keep;
	low_fd = open("/dev/null", O_RDONLY); /* no O_CLOEXEC: inheritable */
	CHECK(low_fd >= 3 && low_fd < keep);
	high_fd = dup2(low_fd, 200);
	CHECK(high_fd == 200);

	/* a bpffs with a cgroup2 mounted inside it, in a mount ns of our own */
	CHECK(unshare(CLONE_NEWNS) == 0);
	CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	CHECK(mount("bpf", c->tmpdir, "bpf", 0, NULL) == 0);
	snprintf(sub, sizeof(sub), "%s/sub", c->tmpdir);
	CHECK(mkdir(sub, 0755) == 0);
	CHECK(mount("cgroup2", sub, "cgroup2", 0, NULL) == 0);
	/* listed after its parent: covering in mountinfo order would cover the
	 * parent first and then fail to find this one */
	snprintf(sub2, sizeof(sub2), "%s/sub2", c->tmpdir);
	CHECK(mkdir(sub2, 0755) == 0);
	CHECK(mount("bpf", sub2, "bpf", 0, NULL) == 0);
	/* a cgroup v1 hierarchy of our own (named, no controller), so that
	 * hosts without v1 mounts test its cover too; where v1 is gone from
	 * the kernel there is nothing to cover */
	snprintf(p, sizeof(p), "%s/v1", c->tmpdir);
	CHECK(mkdir(p, 0755) == 0);
	if (mount("cgroup", p, "cgroup", 0, "none,name=egrtest"))
		print_message("[   INFO   ] no cgroup v1 hierarchy of our own: %s\n",
			      strerror(errno));
	/* supplementary groups that must not survive */
	CHECK(setgroups(3, (gid_t[]){0, 4, 27}) == 0);
	/* an ambient capability that must not survive either */
	CHECK(syscall(SYS_capget, &caphdr, capdata) == 0);
	capdata[0].inheritable |= 1U << CAP_NET_RAW;
	CHECK(syscall(SYS_capset, &caphdr, capdata) == 0);
	CHECK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_RAW, 0, 0) == 0);

	ncg = mounts_of("cgroup2", cg, MAX_MNT);
	nbpf = mounts_of("bpf", bpf, MAX_MNT);
	CHECKF(ncg >= 2 && nbpf >= 2, "mounts: %d cgroup2, %d bpf", ncg, nbpf);
	for (i = 0; i < ncg; i++) {
		CHECK(snprintf(p, sizeof(p), "%s/cgroup.procs", cg[i]) < (int)sizeof(p));
		CHECK(access(p, F_OK) == 0); /* control: visible before */
	}
	cg_dirfd = open(cg[0], O_PATH | O_DIRECTORY);
	CHECK(cg_dirfd >= 0 && cg_dirfd < keep);
	/* a cwd inside cgroupfs would reach ../cgroup.procs without a path */
	CHECK(chdir(cg[0]) == 0);

	/* what initgroups() will set: the group database's list, or nothing */
	nwant = 0;
	if (c->u.name[0]) {
		nwant = 64;
		CHECK(getgrouplist(c->u.name, c->u.gid, want_groups, &nwant) >= 0);
	}

	knobs.kfdir = c->kfdir;
	knobs_before(&knobs);
	err = sandbox_enter(&c->u, NULL, keep, &what);
	CHECKF(err == 0, "sandbox_enter: %s: %s", what ? what : "?", strerror(-err));
	knobs_after(&knobs, c->u.uid == 0);

	/* ids and groups */
	CHECK(getresuid(&r, &e, &s) == 0);
	CHECKF(r == c->u.uid && e == c->u.uid && s == c->u.uid, "uids %u %u %u", r, e, s);
	CHECK(getresgid(&rg, &eg, &sg) == 0);
	CHECKF(rg == c->u.gid && eg == c->u.gid && sg == c->u.gid, "gids %u %u %u", rg, eg, sg);
	n = getgroups(64, groups);
	CHECK(n >= 0);
	CHECKF(n == nwant, "%d supplementary groups, want %d", n, nwant);
	for (i = 0; i < n; i++) {
		for (j = 0; j < nwant && want_groups[j] != groups[i]; j++)
			;
		CHECKF(j < nwant, "supplementary group %u not in the group list", groups[i]);
	}

	/* capabilities, securebits, no_new_privs, seccomp */
	check_status_zero_caps();
	bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	CHECKF((bits & (SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
			SECBIT_NO_SETUID_FIXUP_LOCKED)) ==
		       (SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
			SECBIT_NO_SETUID_FIXUP_LOCKED),
	       "securebits %#x", bits);
	CHECKF(!(bits & (SECBIT_KEEP_CAPS | SECBIT_NO_SETUID_FIXUP)), "securebits %#x", bits);
	CHECK_ERR(socket(AF_PACKET, SOCK_RAW, 0), EAFNOSUPPORT);
	CHECK_ERR(setresuid(c->u.uid == 0 ? 1 : 0, -1, -1), EPERM);

	/* cgroupfs and bpffs: covered, empty, read-only, not removable */
	for (i = 0; i < ncg; i++) {
		CHECKF(covered(cg[i]), "%s not covered", cg[i]);
		CHECK(snprintf(p, sizeof(p), "%s/cgroup.procs", cg[i]) < (int)sizeof(p));
		CHECK_ERR(access(p, F_OK), ENOENT);
		CHECK(open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644) == -1);
		if (access(cg[i], F_OK) == 0)
			CHECK_ERR(umount2(cg[i], MNT_DETACH), EPERM);
	}
	for (i = 0; i < nbpf; i++)
		CHECKF(covered(bpf[i]), "%s not covered", bpf[i]);
	/* the outer cover is in place, so the inner one is out of sight */
	CHECK(statfs(c->tmpdir, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC);
	CHECK_ERR(access(sub, F_OK), ENOENT);
	CHECK_ERR(access(sub2, F_OK), ENOENT);
	CHECK_ERR(mount("none", c->tmpdir, "tmpfs", 0, NULL), EPERM);
	CHECK(statfs(".", &sfs) == 0 && sfs.f_type != CGROUP2_SUPER_MAGIC);
	CHECK(access("cgroup.procs", F_OK) == -1);
	CHECK(access("../cgroup.procs", F_OK) == -1);

	/* descriptors: 0-2 and keep_fd stay, everything else is gone */
	CHECK_ERR(fcntl(low_fd, F_GETFD), EBADF);
	CHECK_ERR(fcntl(high_fd, F_GETFD), EBADF);
	CHECK_ERR(fcntl(cg_dirfd, F_GETFD), EBADF);
	CHECK_ERR(fcntl(old_msg_fd, F_GETFD), EBADF);
	CHECK(fcntl(keep, F_GETFD) == FD_CLOEXEC);
	for (i = 0; i < 3; i++)
		CHECK(fcntl(i, F_GETFD) >= 0);

	if (c->no_exec)
		return;
	snprintf(uidstr, sizeof(uidstr), "%u", c->u.uid);
	execl("/bin/sh", "sh", "-c", exec_check, "sh", uidstr, (char *)NULL);
	child_failf(__LINE__, "execl: %s", strerror(errno));
}

static void
run_enter(const struct sandbox_user *u, bool no_exec)
{
	char tmpdir[] = "/tmp/egr-sb-XXXXXX", kfdir[] = "/tmp/egr-kf-XXXXXX";
	struct enter_case c = {.u = *u, .tmpdir = tmpdir, .kfdir = kfdir, .no_exec = no_exec};
	struct child_result res;

	assert_non_null(mkdtemp(tmpdir));
	assert_non_null(mkdtemp(kfdir));
	run_child(enter_child, &c, false, &res);
	rmdir(tmpdir);
	rmdir(kfdir);
	check_child(&res);
}

static void
test_enter_nobody(void **state)
{
	struct sandbox_user u;
	char errbuf[256];

	(void)state;
	if (geteuid() != 0 || !getpwnam("nobody"))
		skip();
	assert_int_equal(sandbox_resolve_user("nobody", &u, errbuf, sizeof(errbuf)), 0);
	run_enter(&u, false);
}

static void
test_enter_root(void **state)
{
	struct sandbox_user u;
	char errbuf[256];

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(sandbox_resolve_user("root", &u, errbuf, sizeof(errbuf)), 0);
	assert_int_equal(u.uid, 0);
	run_enter(&u, false);
}

static void
test_enter_uid_without_passwd(void **state)
{
	struct sandbox_user u = {.uid = 4242420, .gid = 4242421};

	(void)state;
	if (geteuid() != 0)
		skip();
	run_enter(&u, true);
}

static void
keep_none_child(void *arg)
{
	const char *what;

	if (sandbox_enter(arg, NULL, -1, &what))
		_exit(3);
	_exit(fcntl(child_msg_fd, F_GETFD) == -1 && errno == EBADF ? 0 : 4);
}

/* keep_fd -1: every fd from 3 up goes, the report pipe too. */
static void
test_enter_keep_none(void **state)
{
	struct sandbox_user u = {.uid = 65534, .gid = 65534};
	struct child_result res;

	(void)state;
	if (geteuid() != 0)
		skip();
	run_child(keep_none_child, &u, false, &res);
	assert_true(WIFEXITED(res.status));
	assert_int_equal(WEXITSTATUS(res.status), 0);
}

static void
bad_name_child(void *arg)
{
	struct sandbox_user u = {.uid = 65534, .gid = 65534};
	const char *what = NULL;
	int err;

	(void)arg;
	memset(u.name, 'x', sizeof(u.name)); /* no NUL */
	err = sandbox_enter(&u, NULL, child_msg_fd, &what);
	CHECKF(err == -EINVAL && what && !strcmp(what, "user name"), "got %d at %s", err,
	       what ? what : "?");
}

static void
unprivileged_child(void *arg)
{
	struct sandbox_user u = {.uid = 65534, .gid = 65534};
	const char *what = NULL;
	int err;

	(void)arg;
	if (geteuid() == 0)
		CHECK(setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0);
	err = sandbox_enter(&u, NULL, child_msg_fd, &what);
	CHECKF(err == -EPERM && what && !strcmp(what, "unshare(CLONE_NEWNS)"), "got %d at %s", err,
	       what ? what : "?");
}

/* Failures come back as -errno with the failing step named. */
static void
test_enter_errors(void **state)
{
	(void)state;
	expect_child_ok(unprivileged_child, NULL, false);
	if (geteuid() == 0)
		expect_child_ok(bad_name_child, NULL, false);
}

/* A same-uid process outside the sandbox (dumpable, with a user namespace,
 * as a login shell of the SUDO_UID user could be): from inside, neither its
 * memory (/proc/PID/mem: make it connect for us), nor its root (the host's
 * cgroupfs), nor its descriptors (/proc/PID/fd: the terminal --ask reads),
 * nor its user namespace (setns: capabilities) may be reachable, nor may it
 * be signalled. */
#define OUTSIDE_FD 50 /* a descriptor of the outside process: a pipe it made as nobody */

struct outside_case {
	pid_t pid;
	bool control; /* only become nobody: shows each vector is real */
};

static void
outside_child(void *arg)
{
	struct outside_case *c = arg;
	struct sandbox_user u = {.uid = 65534, .gid = 65534};
	const char *what = NULL;
	bool landlock;
	char path[64];
	int fd, err, landlock_abi;

	/* without Landlock (older kernels, lsm= without it) only seccomp's
	 * setns rule is left of this test */
	landlock_abi =
		syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	landlock = landlock_abi >= 1;
	if (c->control) {
		CHECK(setgroups(0, NULL) == 0 && setresgid(65534, 65534, 65534) == 0 &&
		      setresuid(65534, 65534, 65534) == 0);
	} else {
		err = sandbox_enter(&u, NULL, child_msg_fd, &what);
		CHECKF(err == 0, "sandbox_enter: %s: %s", what ? what : "?", strerror(-err));
	}

	snprintf(path, sizeof(path), "/proc/%d/mem", c->pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (c->control)
		CHECK(fd >= 0);
	else if (landlock)
		CHECKF(fd == -1 && errno == EACCES, "open %s O_RDWR: %d", path, fd);

	snprintf(path, sizeof(path), "/proc/%d/root/", c->pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->control)
		CHECK(fd >= 0);
	else if (landlock)
		CHECKF(fd == -1 && errno == EACCES, "open %s: %d", path, fd);

	/* its descriptors: the user's shell holds egressctl's terminal */
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", c->pid, OUTSIDE_FD);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (c->control)
		CHECK(fd >= 0);
	else if (landlock)
		CHECKF(fd == -1 && errno == EACCES, "open %s: %d", path, fd);

	/* signals: a same-uid signal needs no capability (uid 0 could stop
	 * egressctl); Landlock scopes them from ABI 6 on */
	if (c->control)
		CHECK(kill(c->pid, 0) == 0);
	else if (landlock_abi >= 6)
		CHECK_ERR(kill(c->pid, 0), EPERM);

	snprintf(path, sizeof(path), "/proc/%d/ns/user", c->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->control) {
		CHECK(fd >= 0);
		CHECK(setns(fd, CLONE_NEWUSER) == 0);
		return;
	}
	/* Landlock refuses the open, seccomp the setns */
	if (landlock) {
		CHECKF(fd == -1 && errno == EACCES, "open %s: %d", path, fd);
		fd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	}
	CHECK(fd >= 0);
	CHECK_ERR(setns(fd, CLONE_NEWUSER), EPERM);
}

static void
test_enter_outside_process(void **state)
{
	struct child_result ctl_res = {0}, res = {0};
	struct outside_case c = {0};
	int ready[2], own[2];
	char ok = 0;
	pid_t h;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	fflush(NULL);
	h = fork();
	assert_true(h >= 0);
	if (h == 0) {
		/* an unconfined nobody process with a user namespace */
		ok = prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0 && setgroups(0, NULL) == 0 &&
		     setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0 &&
		     prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0 && unshare(CLONE_NEWUSER) == 0 &&
		     pipe(own) == 0 && dup2(own[0], OUTSIDE_FD) == OUTSIDE_FD;
		if (write(ready[1], &ok, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	if (read(ready[0], &ok, 1) != 1)
		ok = 0;
	close(ready[0]);
	c.pid = h;
	if (ok) {
		c.control = true;
		run_child(outside_child, &c, false, &ctl_res);
		c.control = false;
		run_child(outside_child, &c, false, &res);
	}
	kill(h, SIGKILL);
	waitpid(h, NULL, 0);
	if (!ok)
		skip();
	if (!WIFEXITED(ctl_res.status) || WEXITSTATUS(ctl_res.status))
		print_message("[   INFO   ] control failed (%s): the kernel stops it already\n",
			      ctl_res.msg);
	check_child(&res);
}

/* ---- sandbox_enter with a terminal (--ask) ------------------------------------------- */

struct alias_case {
	const char *name;
	unsigned int maj, min;	 /* the /dev node */
	unsigned int tmaj, tmin; /* egressctl's terminal */
	bool alias;
};

static const struct alias_case alias_cases[] = {
	{"pts-like node of the terminal", 136, 3, 136, 3, true},
	{"another pty", 136, 4, 136, 3, false},
	{"console", 5, 1, 136, 3, true},
	{"uinput", 10, 223, 136, 3, true},
	{"uhid", 10, 239, 136, 3, true},
	{"null", 1, 3, 136, 3, false},
	{"tty", 5, 0, 136, 3, false}, /* /dev/tty is CMD's own terminal */
	{"tty0", 4, 0, 136, 3, false},
	{"tty0", 4, 0, 4, 2, true}, /* on a VT, the current VT */
	{"tty2", 4, 2, 4, 2, true},
	{"tty3", 4, 3, 4, 2, false},
	{"vcs2", 7, 2, 4, 2, true}, /* the VT's screen, readable and writable */
	{"vcsa", 7, 128, 4, 2, true},
	{"vcs2", 7, 2, 4, 64, false}, /* a serial terminal has no screen there */
	{"tty0", 4, 0, 4, 64, false},
	{"ttyS0", 4, 64, 4, 64, true},
};

static void
test_tty_alias(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(alias_cases) / sizeof(alias_cases[0]); i++) {
		const struct alias_case *c = &alias_cases[i];
		bool got = sandbox_tty_alias(c->name, makedev(c->maj, c->min),
					     makedev(c->tmaj, c->tmin));

		if (got != c->alias)
			fail_msg("%s (%u:%u, terminal %u:%u): got %d, want %d", c->name, c->maj,
				 c->min, c->tmaj, c->tmin, got, c->alias);
	}
}

struct term_case {
	int sock; /* the pty's master goes here */
	bool make_pty;
};

/* Inside: a session of its own, the new pty as controlling terminal and
 * stdio (ttyname() finds it), the pty outside (standing for egressctl's
 * terminal) out of reach by path, the console and every other host pty
 * hidden, /dev/ptmx giving ptys of the private instance. */
static void
term_child(void *arg)
{
	struct term_case *c = arg;
	struct sandbox_user u = {.uid = 65534, .gid = 65534};
	struct sandbox_term t = {.pty_sock = -1};
	struct stat outer, st, st0;
	char outer_name[64], name[64];
	const char *what = NULL;
	struct dirent *de;
	int omaster, oslave, fd, err, n = 0;
	pid_t sid;
	DIR *d;

	CHECK(open_pty(&omaster, &oslave));
	CHECK(ptsname_r(omaster, outer_name, sizeof(outer_name)) == 0);
	CHECK(fstat(oslave, &outer) == 0);
	/* control: the outer pty by path, before */
	CHECK(stat(outer_name, &st) == 0 && st.st_ino == outer.st_ino && st.st_dev == outer.st_dev);
	t.tty = outer.st_rdev;
	CHECK(tcgetattr(oslave, &t.tios) == 0);
	t.ws.ws_row = 33;
	t.ws.ws_col = 111;
	if (c->make_pty) {
		t.pty_sock = c->sock;
		t.stdio = 1U << 0 | 1U << 2; /* stdin and stderr; stdout stays */
	}
	CHECK(fstat(1, &st0) == 0);
	err = sandbox_enter(&u, &t, child_msg_fd, &what);
	CHECKF(err == 0, "sandbox_enter: %s: %s", what ? what : "?", strerror(-err));

	sid = getsid(0);
	CHECKF(sid == getpid(), "session %d, pid %d", sid, getpid());
	/* the outer pty is gone from /dev/pts (another may have its name) */
	if (stat(outer_name, &st) == 0)
		CHECKF(st.st_ino != outer.st_ino || st.st_dev != outer.st_dev,
		       "%s still reaches the outer pty", outer_name);
	else
		CHECK(errno == ENOENT);
	CHECK(stat("/dev/console", &st) == 0 && st.st_rdev == makedev(1, 3));
	d = opendir("/dev/pts");
	CHECK(d != NULL);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "ptmx"))
			n++;
	closedir(d);
	if (!c->make_pty) {
		CHECKF(n == 0, "%d ptys visible", n);
		CHECK_ERR(open("/dev/tty", O_RDWR), ENXIO); /* no controlling terminal */
		return;
	}
	CHECKF(n == 1, "%d ptys visible, want CMD's own", n);
	CHECK(isatty(0) && isatty(2));
	CHECK(fstat(1, &st) == 0 && st.st_ino == st0.st_ino && st.st_dev == st0.st_dev);
	CHECK(ttyname_r(0, name, sizeof(name)) == 0);
	CHECKF(!strcmp(name, "/dev/pts/0"), "ttyname %s", name);
	CHECK(fstat(0, &st0) == 0 && stat(name, &st) == 0 && st.st_ino == st0.st_ino);
	CHECKF(st.st_uid == u.uid, "the pty belongs to %u", st.st_uid);
	CHECK(ioctl(0, TIOCGSID, &sid) == 0 && sid == getpid()); /* our controlling terminal */
	{
		struct winsize ws;

		CHECK(ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_row == 33 && ws.ws_col == 111);
	}
	fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(ioctl(fd, TIOCGSID, &sid) == 0 && sid == getpid());
	close(fd);
	/* CMD's own ptys come from the private instance */
	fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	CHECK(fd >= 0 && grantpt(fd) == 0 && unlockpt(fd) == 0);
	CHECK(ptsname_r(fd, name, sizeof(name)) == 0 && stat(name, &st) == 0);
	CHECKF(!strcmp(name, "/dev/pts/1"), "a new pty is %s", name);
	close(fd);
	CHECK_ERR(ioctl(0, TIOCSTI, "x"), EPERM);
}

static void
run_term(bool make_pty)
{
	struct term_case c = {.make_pty = make_pty};
	char cbuf[CMSG_SPACE(sizeof(int))], byte;
	struct iovec iov = {&byte, 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf)};
	struct child_result res;
	struct cmsghdr *cm;
	struct stat st;
	int sv[2], master, ptn = -1;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	c.sock = sv[1];
	run_child(term_child, &c, false, &res);
	close(sv[1]);
	check_child(&res);
	if (!make_pty) {
		close(sv[0]);
		return;
	}
	/* the master arrived: a ptmx, of pty 0 (the first of its devpts) */
	assert_int_equal(recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC), 1);
	close(sv[0]);
	cm = CMSG_FIRSTHDR(&msg);
	assert_non_null(cm);
	assert_int_equal(cm->cmsg_type, SCM_RIGHTS);
	memcpy(&master, CMSG_DATA(cm), sizeof(int));
	assert_int_equal(fstat(master, &st), 0);
	assert_int_equal(st.st_rdev, makedev(5, 2));
	assert_int_equal(ioctl(master, TIOCGPTN, &ptn), 0);
	assert_int_equal(ptn, 0);
	close(master);
}

static void
test_enter_term_pty(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	run_term(true);
}

/* --ask without a terminal among CMD's stdio: no terminal at all. */
static void
test_enter_term_none(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	run_term(false);
}

/* The covers stay in the sandbox's mount namespace: with "/" shared (as
 * under systemd) they would otherwise propagate and hide the host's
 * cgroupfs. C1 builds a shared mount with a bpffs inside, C2 enters. */
static void
propagation_child(void *arg)
{
	struct sandbox_user u = {.uid = 65534, .gid = 65534};
	const char *tmpdir = arg, *what;
	char b[PATH_MAX];
	struct statfs sfs;
	pid_t pid;
	int st;

	CHECK(unshare(CLONE_NEWNS) == 0);
	CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	CHECK(mount("tmpfs", tmpdir, "tmpfs", 0, "size=16k") == 0);
	CHECK(mount(NULL, tmpdir, NULL, MS_SHARED, NULL) == 0);
	CHECK(snprintf(b, sizeof(b), "%s/b", tmpdir) < (int)sizeof(b));
	CHECK(mkdir(b, 0755) == 0);
	CHECK(mount("bpf", b, "bpf", 0, NULL) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (sandbox_enter(&u, NULL, -1, &what))
			_exit(3);
		_exit(statfs(b, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC ? 0 : 4);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sandboxed grandchild: status %#x", st);
	CHECK(statfs(b, &sfs) == 0);
	CHECKF(sfs.f_type == BPF_FS_MAGIC, "%s: cover propagated out of the sandbox", b);
}

static void
test_enter_no_propagation(void **state)
{
	char tmpdir[] = "/tmp/egr-sb-XXXXXX";
	struct child_result res;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(mkdtemp(tmpdir));
	run_child(propagation_child, tmpdir, false, &res);
	rmdir(tmpdir);
	check_child(&res);
}

/* ---- --allow-sudo and the unix masks ---------------------------------------------------- */

static unsigned long long
status_hex(const char *key)
{
	char line[256];
	unsigned long long v = ~0ULL;
	FILE *f = fopen("/proc/self/status", "r");
	size_t n = strlen(key);

	if (!f)
		return v;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			v = strtoull(line + n + 1, NULL, 16);
	fclose(f);
	return v;
}

static void
sudo_child(void *arg)
{
	struct sandbox_user u = {.uid = 65534, .gid = 65534};
	struct sandbox_opts o = {.keep_fd = child_msg_fd, .keep_fd2 = -1, .allow_sudo = true};
	unsigned long long want = 0, bnd;
	const char *what = NULL;
	int err;

	(void)arg;
	err = sandbox_enter_opts(&u, &o, &what);
	CHECKF(err == 0, "sandbox_enter_opts: %s: %s", what ? what : "?", strerror(-err));
	for (int cap = 0; cap < 64; cap++)
		if (sandbox_sudo_cap(cap))
			want |= 1ULL << cap;
	bnd = status_hex("CapBnd");
	CHECKF(bnd == want, "CapBnd %llx, want %llx", bnd, want);
	CHECK(status_hex("CapEff") == 0 && status_hex("CapPrm") == 0);
	CHECK(status_hex("NoNewPrivs") == 0); /* setuid programs work */
	CHECK(status_hex("Seccomp") == 2);    /* ... and the filter is on anyway */
	CHECK(prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) >= 0 &&
	      !(prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) & SECBIT_NOROOT));
	CHECK_ERR(unshare(CLONE_NEWNET), EPERM);
	CHECK_ERR(syscall(SYS_bpf, 0, NULL, 0), EPERM);
}

/* --allow-sudo: no no_new_privs, the filter installed while privileged,
 * the bounding set of sandbox_sudo_cap and none of the way-out ones. */
static void
test_enter_sudo(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	assert_false(sandbox_sudo_cap(CAP_SYS_ADMIN));
	assert_false(sandbox_sudo_cap(CAP_NET_ADMIN));
	assert_false(sandbox_sudo_cap(CAP_BPF));
	assert_false(sandbox_sudo_cap(CAP_SYS_MODULE));
	assert_false(sandbox_sudo_cap(CAP_SYS_PTRACE));
	assert_false(sandbox_sudo_cap(CAP_NET_RAW));
	assert_false(sandbox_sudo_cap(CAP_DAC_READ_SEARCH));
	assert_false(sandbox_sudo_cap(CAP_MKNOD));
	assert_true(sandbox_sudo_cap(CAP_SETUID));
	expect_child_ok(sudo_child, NULL, false);
}

static int
listen_at(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) || listen(fd, 1))
		return -1;
	return fd;
}

static bool
has(char **list, const char *p)
{
	for (; list && *list; list++)
		if (!strcmp(*list, p))
			return true;
	return false;
}

struct masks_arg {
	char dir[64];
};

static void
masks_child(void *arg)
{
	struct masks_arg *a = arg;
	char sock[128], alias[128], other[160], err[256], *in[2];
	char **m = NULL;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd;

	snprintf(sock, sizeof(sock), "%s/svc/docker.sock", a->dir);
	snprintf(alias, sizeof(alias), "%s/alias", a->dir);
	in[0] = sock;
	in[1] = NULL;
	CHECK(unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	/* the socket itself */
	CHECK(sandbox_unix_masks(in, &m, err, sizeof(err)) == 0);
	CHECKF(has(m, sock), "%s not masked", sock);
	sandbox_free_masks(m);
	/* and through a bind mount of its directory */
	snprintf(other, sizeof(other), "%s/svc", a->dir);
	CHECK(mkdir(alias, 0755) == 0 && mount(other, alias, NULL, MS_BIND, NULL) == 0);
	snprintf(other, sizeof(other), "%s/docker.sock", alias);
	CHECK(sandbox_unix_masks(in, &m, err, sizeof(err)) == 0);
	CHECKF(has(m, sock) && has(m, other), "the alias %s is not masked", other);
	sandbox_free_masks(m);
	/* a second hard link: refused, in words */
	snprintf(other, sizeof(other), "%s/hl.sock", a->dir);
	CHECK(link(sock, other) == 0);
	CHECK(sandbox_unix_masks(in, &m, err, sizeof(err)) == -EMLINK && !m);
	CHECKF(strstr(err, "hard link") && strstr(err, "--allow-unix"), "said: %s", err);
	unlink(other);
	/* a mask is ECONNREFUSED by any name */
	CHECK(sandbox_unix_masks(in, &m, err, sizeof(err)) == 0);
	for (char **p = m; *p; p++)
		CHECK(mount("/dev/null", *p, NULL, MS_BIND, NULL) == 0);
	sandbox_free_masks(m);
	CHECK(strlen(alias) + 13 < sizeof(sun.sun_path));
	memcpy(sun.sun_path, alias, strlen(alias));
	memcpy(sun.sun_path + strlen(alias), "/docker.sock", 13);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_ERR(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), ECONNREFUSED);
	close(fd);
}

static void
test_unix_masks(void **state)
{
	struct masks_arg a = {.dir = "/tmp/egr-sbx-unix-XXXXXX"};
	char svc[128], sock[160];
	int fd;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(mkdtemp(a.dir));
	snprintf(svc, sizeof(svc), "%s/svc", a.dir);
	assert_int_equal(mkdir(svc, 0755), 0);
	snprintf(sock, sizeof(sock), "%s/docker.sock", svc);
	fd = listen_at(sock);
	assert_true(fd >= 0);
	expect_child_ok(masks_child, &a, false);
	close(fd);
	unlink(sock);
	rmdir(svc);
	snprintf(svc, sizeof(svc), "%s/alias", a.dir);
	rmdir(svc);
	rmdir(a.dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seccomp_denied_families),
		cmocka_unit_test(test_seccomp_packet_control),
		cmocka_unit_test(test_seccomp_allowed_families),
		cmocka_unit_test(test_seccomp_userns),
		cmocka_unit_test(test_seccomp_root_syscalls),
		cmocka_unit_test(test_seccomp_numbers),
		cmocka_unit_test(test_seccomp_nosetid),
		cmocka_unit_test(test_seccomp_cross_process),
		cmocka_unit_test(test_seccomp_bpf_io_uring),
		cmocka_unit_test(test_seccomp_tiocsti),
		cmocka_unit_test(test_seccomp_process_creation),
		cmocka_unit_test(test_seccomp_mode_filter),
		cmocka_unit_test(test_seccomp_x32_killed),
		cmocka_unit_test(test_seccomp_i386_killed),
		cmocka_unit_test(test_resolve_table),
		cmocka_unit_test(test_resolve_root_refusal_same),
		cmocka_unit_test(test_resolve_args),
		cmocka_unit_test(test_enter_nobody),
		cmocka_unit_test(test_enter_root),
		cmocka_unit_test(test_enter_uid_without_passwd),
		cmocka_unit_test(test_enter_keep_none),
		cmocka_unit_test(test_enter_errors),
		cmocka_unit_test(test_enter_outside_process),
		cmocka_unit_test(test_enter_no_propagation),
		cmocka_unit_test(test_tty_alias),
		cmocka_unit_test(test_enter_term_pty),
		cmocka_unit_test(test_enter_term_none),
		cmocka_unit_test(test_enter_sudo),
		cmocka_unit_test(test_unix_masks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
