// SPDX-License-Identifier: Apache-2.0
/* cgroup v2 on the filesystem (see cgroup.h): the cgroup2 mount confirmed,
 * mkdir -p of sandbox cgroups, their ids (the kernfs inode that
 * bpf_get_current_cgroup_id() returns), whether they are populated, moving
 * a process in, signalling every process of one (by pidfd: between reading
 * cgroup.procs and kill() a pid can exit and be reused by any process of
 * the host), killing them all (cgroup.kill: the whole subtree at once,
 * forks included), emptying and removing them. One walker goes through a
 * cgroup's children for all of it. Everything here that writes to cgroupfs
 * is privileged work; the text parsers are cgpath.c's, BPF attachment is
 * loader.c's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "kernel/cgroup.h"

#define CGROUP_POLL_MS 50 /* re-check cgroup.events at least this often */

/* The whole of a (proc or cgroupfs) file, NUL-terminated, in *bufp. */
static int
read_file_at(int dirfd, const char *name, char **bufp)
{
	size_t cap = 4096, len = 0;
	char *buf, *tmp;
	ssize_t n;
	int fd, err;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out_close;
	}
	for (;;) {
		if (cap - len < 2) {
			tmp = realloc(buf, cap * 2);
			if (!tmp) {
				err = -ENOMEM;
				goto out_free;
			}
			buf = tmp;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out_free;
		}
		if (n == 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	*bufp = buf;
	close(fd);
	return 0;
out_free:
	free(buf);
out_close:
	close(fd);
	return err;
}

int
cgroup_read_mountinfo(char **out)
{
	return read_file_at(AT_FDCWD, "/proc/self/mountinfo", out);
}

int
cgroup_read_mountinfo_of(pid_t pid, char **out)
{
	char p[48];

	snprintf(p, sizeof(p), "/proc/%d/mountinfo", (int)pid);
	return read_file_at(AT_FDCWD, p, out);
}

int
cgroup_find_mount(char *out, size_t outlen)
{
	struct statfs sfs;
	char *mi;
	int err;

	err = cgroup_read_mountinfo(&mi);
	if (err)
		return err;
	err = cgroup_find_mount_in(mi, out, outlen);
	free(mi);
	if (err)
		return err;
	if (statfs(out, &sfs) == -1)
		return -errno;
	/* Listed but shadowed by a later mount on top of it. */
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return -ENOENT;
	return 0;
}

static int
mkdir_existing_ok(const char *path)
{
	struct stat st;

	if (mkdir(path, 0755) == 0)
		return 1;
	if (errno != EEXIST)
		return -errno;
	if (stat(path, &st) == -1)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int
cgroup_create(const char *path, bool *created)
{
	char *dup, *s;
	size_t len;
	int ret;

	if (created)
		*created = false;
	if (!path || !path[0])
		return -EINVAL;
	dup = strdup(path);
	if (!dup)
		return -ENOMEM;
	/* mkdir("a/b/") would answer EEXIST for the parent's sake below. */
	len = strlen(dup);
	while (len > 1 && dup[len - 1] == '/')
		dup[--len] = '\0';

	ret = mkdir_existing_ok(dup);
	if (ret == -ENOENT) {
		for (s = strchr(dup + 1, '/'); s; s = strchr(s + 1, '/')) {
			*s = '\0';
			ret = mkdir_existing_ok(dup);
			*s = '/';
			if (ret < 0)
				goto out_free;
		}
		ret = mkdir_existing_ok(dup);
	}
	if (ret > 0 && created)
		*created = true;
out_free:
	free(dup);
	return ret < 0 ? ret : 0;
}

uint64_t
cgroup_id_of(const char *path)
{
	struct stat st;

	if (stat(path, &st) == -1)
		return 0;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return 0;
	}
	return st.st_ino;
}

/* 1 if cgroup.events (open as fd) says "populated 1", 0 for "populated 0",
 * -EINVAL without a populated line. Read from offset 0 each time: kernfs
 * regenerates the text, and reading re-arms poll(). */
static int
events_populated(int fd)
{
	static const char key[] = "populated ";
	char buf[256], *p = buf;
	ssize_t n;

	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n == -1)
		return -errno;
	buf[n] = '\0';
	while (*p) {
		if (!strncmp(p, key, sizeof(key) - 1)) {
			p += sizeof(key) - 1;
			if ((*p == '0' || *p == '1') && (p[1] == '\n' || p[1] == '\0'))
				return *p == '1';
			return -EINVAL;
		}
		p = strchrnul(p, '\n');
		if (*p)
			p++;
	}
	return -EINVAL;
}

bool
cgroup_populated(const char *path)
{
	int dfd, fd, ret;

	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1)
		return false;
	fd = openat(dfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	close(dfd);
	if (fd == -1)
		return false;
	ret = events_populated(fd);
	close(fd);
	return ret == 1;
}

static bool
is_subdir(int dfd, const struct dirent *de)
{
	struct stat st;

	if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
		return false;
	if (de->d_type != DT_UNKNOWN)
		return de->d_type == DT_DIR;
	return !fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
}

/* Calls fn(dfd, child_fd, name, arg) for each child cgroup of dfd (the
 * only directories in a cgroup directory). Children that vanish meanwhile
 * are skipped. Returns the sum of fn's results, or the first error. The
 * directory is read through a descriptor of its own: a dup() of dfd would
 * share its offset, and a second walk of dfd would find no child. */
static int
walk_children(int dfd, int (*fn)(int dfd, int cfd, const char *name, void *arg), void *arg)
{
	int cfd, sum = 0, err = 0, ret;
	struct dirent *de;
	DIR *dir;

	cfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cfd == -1)
		return -errno;
	dir = fdopendir(cfd);
	if (!dir) {
		err = -errno;
		close(cfd);
		return err;
	}
	while ((de = readdir(dir))) {
		if (!is_subdir(dfd, de))
			continue;
		cfd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cfd == -1) {
			if (errno != ENOENT && !err)
				err = -errno;
			continue;
		}
		ret = fn(dfd, cfd, de->d_name, arg);
		close(cfd);
		if (ret < 0 && !err)
			err = ret;
		else if (ret > 0)
			sum += ret;
	}
	closedir(dir);
	return err ? err : sum;
}

/* Calls fn(arg, pid) for every pid in cfd's cgroup.procs (cgroup.threads
 * in a threaded cgroup, whose tids kill() reaches). Returns the sum of
 * fn's results, or -errno; a cgroup removed meanwhile has none. */
static int
for_each_pid(int cfd, int (*fn)(void *arg, pid_t pid), void *arg)
{
	char *procs, *p, *end;
	int n = 0, ret, err;
	long pid;

	err = read_file_at(cfd, "cgroup.procs", &procs);
	if (err == -EOPNOTSUPP)
		err = read_file_at(cfd, "cgroup.threads", &procs);
	if (err) /* a cgroup removed meanwhile */
		return err == -ENOENT || err == -ENODEV ? 0 : err;
	for (p = procs; *p; p = end) {
		errno = 0;
		pid = strtol(p, &end, 10);
		if (end == p) {
			end = p + 1;
			continue;
		}
		if (errno || pid <= 0 || pid > INT_MAX)
			continue;
		ret = fn(arg, (pid_t)pid);
		if (ret < 0) {
			free(procs);
			return ret;
		}
		n += ret;
	}
	free(procs);
	return n;
}

static int
kill_one(void *arg, pid_t pid)
{
	(void)arg;
	return kill(pid, SIGKILL) == 0;
}

/* SIGKILL for every pid in cfd's cgroup and in its descendants'. Pids can
 * be reused between reading and kill(); this is only the fallback for
 * kernels without cgroup.kill. */
static int
kill_procs_at(int dfd, int cfd, const char *name, void *arg)
{
	int n, err;

	(void)dfd;
	(void)name;
	n = for_each_pid(cfd, kill_one, NULL);
	if (n < 0)
		return n;
	err = walk_children(cfd, kill_procs_at, arg);
	return err < 0 ? err : n + err;
}

int
cgroup_kill_procs(const char *path)
{
	int dfd, ret;

	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1)
		return -errno;
	ret = kill_procs_at(AT_FDCWD, dfd, path, NULL);
	close(dfd);
	return ret;
}

/* rmdir of cfd's child cgroups, deepest first, then of cfd itself. */
static int
remove_at(int dfd, int cfd, const char *name, void *arg)
{
	int err = walk_children(cfd, remove_at, arg);

	if (err < 0)
		return err;
	if (unlinkat(dfd, name, AT_REMOVEDIR) == -1 && errno != ENOENT)
		return -errno;
	return 0;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before deadline (-1: none), at most CGROUP_POLL_MS. */
static int
poll_budget(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return CGROUP_POLL_MS;
	left = deadline - now_ms();
	if (left <= 0)
		return 0;
	return left < CGROUP_POLL_MS ? (int)left : CGROUP_POLL_MS;
}

/* Refuses anything but a non-root cgroup2 directory: killing "everything in
 * the cgroup" at a mount root would mean the whole host (or container). */
static int
check_removable(int dfd)
{
	struct stat st, parent;
	struct statfs sfs;

	if (fstatfs(dfd, &sfs) == -1)
		return -errno;
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return -EINVAL;
	if (fstat(dfd, &st) == -1 || fstatat(dfd, "..", &parent, 0) == -1)
		return -errno;
	if (st.st_dev != parent.st_dev || st.st_ino == parent.st_ino)
		return -EBUSY;
	return 0;
}

/* Writes "1" to dfd's cgroup.kill: 0 or -errno. */
static int
write_kill_file(int dfd)
{
	int fd = openat(dfd, "cgroup.kill", O_WRONLY | O_CLOEXEC), err = 0;

	if (fd == -1 || write(fd, "1", 1) != 1)
		err = -errno;
	if (fd != -1)
		close(fd);
	return err;
}

/* Kills with cgroup.kill (5.14+: the kernel kills the whole subtree and
 * races with fork for us) or, without it, SIGKILL to every listed pid,
 * repeated while waiting. Negative timeout_ms waits without a limit.
 * Returns -EINVAL for a path that is not on cgroup2, -EBUSY for a mount
 * root, -ETIMEDOUT when the cgroup did not empty in time. */
int
cgroup_kill_and_remove(const char *path, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	struct pollfd pfd = {.events = POLLPRI};
	bool use_kill_file = true;
	int dfd, err, ret;

	if (!path || !path[0])
		return -EINVAL;
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1)
		return errno == ENOENT ? 0 : -errno;
	err = check_removable(dfd);
	if (err)
		goto out_close;

	err = write_kill_file(dfd);
	if (err) { /* absent before 5.14, EOPNOTSUPP in threaded cgroups */
		if (err != -ENOENT && err != -EOPNOTSUPP)
			goto out_close;
		err = 0;
		use_kill_file = false;
	}

	pfd.fd = openat(dfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	if (pfd.fd == -1) {
		err = -errno;
		goto out_close;
	}
	for (;;) {
		if (!use_kill_file) {
			ret = kill_procs_at(AT_FDCWD, dfd, path, NULL);
			if (ret < 0) {
				err = ret;
				goto out_events;
			}
		}
		ret = events_populated(pfd.fd);
		if (ret < 0) {
			err = ret;
			goto out_events;
		}
		if (!ret)
			break;
		if (deadline >= 0 && now_ms() >= deadline) {
			err = -ETIMEDOUT;
			goto out_events;
		}
		/* kernfs signals POLLPRI on change; the cap covers missed ones. */
		if (poll(&pfd, 1, poll_budget(deadline)) == -1 && errno != EINTR) {
			err = -errno;
			goto out_events;
		}
	}

	for (;;) {
		err = remove_at(AT_FDCWD, dfd, path, NULL);
		if (!err)
			break;
		/* Exiting tasks can keep a cgroup busy for a moment. */
		if (err != -EBUSY || (deadline >= 0 && now_ms() >= deadline))
			goto out_events;
		usleep(10 * 1000);
	}
	err = 0;
out_events:
	close(pfd.fd);
out_close:
	close(dfd);
	return err;
}

int
cgroup_kill(const char *path)
{
	int dfd, err, n;

	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1)
		return -errno;
	err = write_kill_file(dfd);
	close(dfd);
	/* before 5.14, or a threaded cgroup: one SIGKILL per listed pid */
	if (err == -ENOENT || err == -EOPNOTSUPP) {
		n = cgroup_kill_procs(path);
		err = n < 0 ? n : 0;
	}
	return err;
}

int
cgroup_enter(const char *path, pid_t pid)
{
	char procs[PATH_MAX], text[16];
	int fd, err = 0;

	if ((size_t)snprintf(procs, sizeof(procs), "%s/cgroup.procs", path) >= sizeof(procs))
		return -ENAMETOOLONG;
	snprintf(text, sizeof(text), "%d", (int)pid);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		err = -errno;
	if (fd >= 0)
		close(fd);
	return err;
}

/* ---- listing, and signalling every process by pidfd ---- */

#define SIG_BATCH 512 /* pidfds open at once while signalling a cgroup */
#define MAX_DEPTH 64  /* child cgroups followed this deep when listing pids */

struct pids {
	pid_t *v;
	size_t n, cap;
	int depth;
};

static int
pids_add(void *arg, pid_t pid)
{
	struct pids *p = arg;

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		pid_t *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = pid;
	return 0;
}

static int
cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Every pid of cfd's cgroup and of the cgroups below it, MAX_DEPTH deep. */
static int
collect_at(int dfd, int cfd, const char *name, void *arg)
{
	struct pids *p = arg;
	int err;

	(void)dfd;
	(void)name;
	err = for_each_pid(cfd, pids_add, p);
	if (err < 0 || p->depth >= MAX_DEPTH)
		return err < 0 ? err : 0;
	p->depth++;
	err = walk_children(cfd, collect_at, p);
	p->depth--;
	return err < 0 ? err : 0;
}

int
cgroup_pids_at(int dfd, pid_t **v, size_t *n)
{
	struct pids p = {0};
	int err = collect_at(AT_FDCWD, dfd, NULL, &p);

	if (err) {
		free(p.v);
		return err;
	}
	*v = p.v;
	*n = p.n;
	return 0;
}

/* sig to the pids of first.v[base..base+n) still listed in dfd's subtree
 * after their pidfds were opened; returns how many got it, or -errno. */
static int
signal_batch(int dfd, const struct pids *first, size_t base, size_t n, struct pids *again, int sig)
{
	int pidfd[SIG_BATCH], err, sent = 0;

	for (size_t i = 0; i < n; i++) {
		pidfd[i] = (int)syscall(SYS_pidfd_open, first->v[base + i], 0);
		if (pidfd[i] < 0)
			pidfd[i] = -errno;
	}
	/* a pid still listed now is the process its pidfd refers to */
	again->n = 0;
	err = collect_at(AT_FDCWD, dfd, NULL, again);
	if (!err)
		qsort(again->v, again->n, sizeof(*again->v), cmp_pid);
	for (size_t i = 0; i < n; i++) {
		pid_t pid = first->v[base + i];

		if (!err && again->n && bsearch(&pid, again->v, again->n, sizeof(pid), cmp_pid)) {
			if (pidfd[i] >= 0 &&
			    !syscall(SYS_pidfd_send_signal, pidfd[i], sig, NULL, 0))
				sent++;
			/* a non-leader thread (threaded cgroup) has no pidfd
			 * before 6.9: kill() of the listed tid is what is left */
			else if (pidfd[i] == -EINVAL && !kill(pid, sig))
				sent++;
		}
		if (pidfd[i] >= 0)
			close(pidfd[i]);
	}
	return err ? err : sent;
}

int
cgroup_signal(const char *path, int sig)
{
	struct pids first = {0}, again = {0};
	int dfd, err, sent = 0;

	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1)
		return -errno;
	err = collect_at(AT_FDCWD, dfd, NULL, &first);
	for (size_t base = 0; !err && base < first.n; base += SIG_BATCH) {
		size_t n = first.n - base < SIG_BATCH ? first.n - base : SIG_BATCH;
		int r = signal_batch(dfd, &first, base, n, &again, sig);

		if (r < 0)
			err = r;
		else
			sent += r;
	}
	free(first.v);
	free(again.v);
	close(dfd);
	return err ? err : sent;
}

int
cgroup_of_pid(const char *mnt, pid_t pid, char *out, size_t outlen)
{
	char path[64], rel[PATH_MAX], *text;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	err = read_file_at(AT_FDCWD, path, &text);
	if (err)
		return err;
	err = cgroup_of_pid_in(text, rel, sizeof(rel));
	free(text);
	if (err)
		return err;
	if ((size_t)snprintf(out, outlen, "%s%s", mnt, strcmp(rel, "/") ? rel : "") >= outlen)
		return -ENAMETOOLONG;
	return 0;
}

struct find_named {
	const char *name;
	char *out;
	size_t outlen;
	int found;
};

static int
find_named_in(const char *dir, struct find_named *f, int depth)
{
	struct dirent *de;
	DIR *d;

	if (depth > 16)
		return 0;
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[PATH_MAX];

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		if (!strcmp(de->d_name, f->name)) {
			if (!f->found++)
				snprintf(f->out, f->outlen, "%s", path);
			continue; /* a unit's cgroup holds no other unit of that name */
		}
		find_named_in(path, f, depth + 1);
	}
	closedir(d);
	return 0;
}

int
cgroup_find_named(const char *mnt, const char *name, char *out, size_t outlen)
{
	struct find_named f = {name, out, outlen, 0};

	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	find_named_in(mnt, &f, 0);
	return f.found == 1 ? 0 : f.found ? -EEXIST : -ENOENT;
}

/* SO_NETNS_COOKIE of a socket made in the namespace of pidfd. */
static int
netns_cookie_in(int pidfd, uint64_t *cookie)
{
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC), fd, err = 0;
	socklen_t len = sizeof(*cookie);

	if (self < 0)
		return -errno;
	if (setns(pidfd, CLONE_NEWNET)) {
		err = -errno;
		close(self);
		return err;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &len))
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (setns(self, CLONE_NEWNET)) {
		/* nothing may go on in another namespace */
		fprintf(stderr, "egressctl: cannot return to its own network namespace\n");
		abort();
	}
	close(self);
	return err;
}

int
cgroup_netns_cookie(const char *mnt, const char *path, uint64_t *cookie)
{
	char procs[PATH_MAX + 16], cg[PATH_MAX];
	int pid, err = -ESRCH;
	FILE *f;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
	f = fopen(procs, "re");
	if (!f)
		return -errno;
	while (err == -ESRCH && fscanf(f, "%d", &pid) == 1) {
		int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

		if (pidfd < 0)
			continue;
		/* the pid is the pidfd's process while it lives */
		if (!cgroup_of_pid(mnt, pid, cg, sizeof(cg)) && !strcmp(cg, path))
			err = netns_cookie_in(pidfd, cookie);
		close(pidfd);
	}
	fclose(f);
	return err;
}
