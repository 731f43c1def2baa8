// SPDX-License-Identifier: Apache-2.0
/* The confined command's process-level walls, the layers besides the cgroup
 * BPF hooks (sandbox.h), in the order the child of clone3(CLONE_INTO_CGROUP)
 * builds them before execve() (sandbox_enter_opts): a private mount
 * namespace in which every cgroup2, cgroup (v1) and bpf mount is covered by
 * an empty read-only tmpfs (here), every mount of a kernel pseudo-filesystem
 * treated (kfiles.c), the unix sockets of services outside masked
 * (masks.c), a directory made read-only (here: HTTPS inspection's trust
 * files), with --ask a terminal of its own (tty.c); then no inherited
 * descriptors (here), and the uid, capabilities, Landlock and the seccomp
 * filter (privs.c, seccomp.c). Whom CMD runs as is user.c's; pid 1 of CMD's
 * PID namespace (sandbox_init) is here. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kernel/cgroup.h"
#include "sandbox/kfiles.h"
#include "sandbox/sandbox.h"
#include "sandbox/steps.h"

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

int
sandbox_enter(const struct sandbox_user *u, const struct sandbox_term *term, int keep_fd,
	      const char **what)
{
	struct sandbox_opts o = {.term = term, .keep_fd = keep_fd, .keep_fd2 = -1};

	return sandbox_enter_opts(u, &o, what);
}

/* Each of paths that exists bound read-only over itself. */
static int
bind_ro(const char *const *paths, const char **what)
{
	struct stat st;

	for (; paths && *paths; paths++) {
		if (lstat(*paths, &st))
			continue;
		*what = *paths;
		if (mount(*paths, *paths, NULL, MS_BIND | MS_REC, NULL) ||
		    mount(NULL, *paths, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, NULL))
			return -errno;
	}
	return 0;
}

/* dir bound read-only over itself. A bind mount takes its flags only on a
 * remount; the remount keeps nosuid, nodev and noexec with read-only. */
static int
ro_bind(const char *dir)
{
	if (mount(dir, dir, NULL, MS_BIND, NULL) ||
	    mount(NULL, dir, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return -errno;
	return 0;
}

/* The mount namespace CMD gets: its own, private, the covers and masks
 * made in it, a directory made read-only, and with --ask its terminal. */
static int
enter_mounts(const struct sandbox_user *u, const struct sandbox_opts *o, const char **what)
{
	static const char *const hidden[] = {"cgroup2", "bpf", "cgroup", "devpts"};
	int err;

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
	err = hide_mounts(hidden, o->term ? 4 : 3, what);
	if (err)
		return err;
	err = kfiles_protect(what);
	if (err)
		return err;
	err = masks_apply(o->unix_masks, what);
	if (err)
		return err;
	err = bind_ro(o->ro_paths, what);
	if (err)
		return err;
	*what = "bind the trust files' directory read-only";
	if (o->ro_dir && (err = ro_bind(o->ro_dir)))
		return err;
	return o->term ? tty_enter(u, o->term, what) : 0;
}

int
sandbox_enter_opts(const struct sandbox_user *u, const struct sandbox_opts *o, const char **what)
{
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
	err = enter_mounts(u, o, what);
	if (err)
		return err;
	*what = "chdir";
	err = rechdir(have_cwd ? cwd : NULL);
	if (err)
		return err;

	/* sockets created outside the cgroup are never filtered */
	*what = "close_range";
	err = close_fds(o->keep_fd, o->keep_fd2);
	if (err)
		return err;
	return privs_drop(u, o->allow_sudo, o->allow_sudo && o->no_setid, what);
}

/* ---- pid 1 of the PID namespace --------------------------------------------------------- */

/* With outlive, once CMD's status is out: no descriptor of the caller's
 * kept open (a CI step's output pipe would wait for this process). */
static void
init_detach(int status_fd)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (status_fd >= 0)
		close(status_fd);
	for (int i = 0; i < 3 && fd >= 0; i++)
		if (fd != i)
			dup2(fd, i);
	if (fd > 2)
		close(fd);
}

void
sandbox_init(pid_t child, int status_fd, bool outlive)
{
	sigset_t all;
	siginfo_t si;
	int status, sig;
	pid_t p;
	bool cmd_done = false;

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
			if (!outlive)
				_exit(WIFEXITED(status) ? WEXITSTATUS(status)
							: 128 + WTERMSIG(status));
			init_detach(status_fd);
			status_fd = -1;
			cmd_done = true;
		}
		if (p == -1 && errno == ECHILD)
			_exit(cmd_done ? 0 : EXIT_FAILURE); /* else cannot be: child is ours */
		sig = sigwaitinfo(&all, &si);
		if (sig <= 0 || sig == SIGCHLD)
			continue;
		/* the terminal's ^C, ^\\, ^Z, hang-up reached CMD's process group
		 * directly; what egressctl forwards (or --timeout sends) comes
		 * from a process */
		if (si.si_code == SI_KERNEL || cmd_done)
			continue;
		kill(child, sig);
	}
}
