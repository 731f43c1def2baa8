// SPDX-License-Identifier: Apache-2.0
/* cgroup v2 paths and lifecycle: finding the cgroup2 mount in mountinfo text,
 * resolving a --cgroup argument to a path strictly below that mount, mkdir -p
 * of sandbox cgroups, their ids (the kernfs inode that bpf_get_current_cgroup_id()
 * returns), and emptying and removing them. The mountinfo and path functions
 * are pure and must survive any input (they are fuzzed): every field is a
 * (pointer, length) span into the caller's string, nothing is copied into a
 * fixed-size buffer without a bound check. Everything here that writes to
 * cgroupfs is privileged work; BPF attachment stays in loader.c. */
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
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "kernel/cgroup.h"

#define CGROUP_DEFAULT_MNT "/sys/fs/cgroup"
#define CGROUP_SUBDIR	   "egressctl" /* parent of named and run-<pid> cgroups */
#define CGROUP_POLL_MS	   50	       /* re-check cgroup.events at least this often */

/* One parsed mountinfo line; spans point into the caller's text and are
 * still escaped (\ooo) as the kernel wrote them. */
struct mi_entry {
	const char *mnt; /* mount point (field 5) */
	size_t mnt_len;
	const char *fstype; /* first field after the " - " separator */
	size_t fstype_len;
};

/* The byte at raw[*i], decoding the kernel's \ooo escapes (it escapes space,
 * tab, newline and backslash). A backslash not followed by three octal digits
 * worth 1..0377 stays a literal backslash, so decoding never yields NUL. */
static unsigned char
mi_decode(const char *raw, size_t len, size_t *i)
{
	size_t k = *i;

	if (raw[k] == '\\' && len - k >= 4 && raw[k + 1] >= '0' && raw[k + 1] <= '3' &&
	    raw[k + 2] >= '0' && raw[k + 2] <= '7' && raw[k + 3] >= '0' && raw[k + 3] <= '7') {
		unsigned int v =
			(raw[k + 1] - '0') << 6 | (raw[k + 2] - '0') << 3 | (raw[k + 3] - '0');

		if (v) {
			*i = k + 4;
			return v;
		}
	}
	*i = k + 1;
	return raw[k];
}

/* Unescapes raw into out[outlen], NUL-terminated, or -ENAMETOOLONG. */
static int
mi_unescape(const char *raw, size_t len, char *out, size_t outlen)
{
	size_t i = 0, n = 0;

	while (i < len) {
		if (n + 1 >= outlen)
			return -ENAMETOOLONG;
		out[n++] = mi_decode(raw, len, &i);
	}
	if (!outlen)
		return -ENAMETOOLONG;
	out[n] = '\0';
	return 0;
}

/* Whether raw, unescaped, equals s. */
static bool
mi_eq(const char *raw, size_t len, const char *s)
{
	size_t i = 0;

	while (i < len) {
		if (*s == '\0' || mi_decode(raw, len, &i) != (unsigned char)*s)
			return false;
		s++;
	}
	return *s == '\0';
}

static bool
all_digits(const char *s, size_t len)
{
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* The next blank-separated token of line[0..len) at or after *pos. */
static bool
mi_token(const char *line, size_t len, size_t *pos, const char **tok, size_t *tok_len)
{
	size_t i = *pos, start;

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i == len)
		return false;
	start = i;
	while (i < len && line[i] != ' ' && line[i] != '\t')
		i++;
	*tok = line + start;
	*tok_len = i - start;
	*pos = i;
	return true;
}

/* Parses one line (without its newline):
 *   id parent maj:min root mountpoint opts [optional...] - fstype source superopts
 * Lines that do not have that shape are rejected, so garbage and lines cut
 * short are skipped rather than misread. root is not checked: it is not a
 * path for nsfs and differs from "/" inside cgroup namespaces. */
static bool
mi_parse_line(const char *line, size_t len, struct mi_entry *e)
{
	const char *tok, *colon;
	size_t pos = 0, tok_len;
	int field = 0, after_sep = -1;

	while (mi_token(line, len, &pos, &tok, &tok_len)) {
		switch (field) {
		case 0:
		case 1:
			if (!all_digits(tok, tok_len))
				return false;
			break;
		case 2:
			colon = memchr(tok, ':', tok_len);
			if (!colon || !all_digits(tok, colon - tok) ||
			    !all_digits(colon + 1, tok_len - (colon - tok) - 1))
				return false;
			break;
		case 3:
			break;
		case 4:
			if (tok[0] != '/')
				return false;
			e->mnt = tok;
			e->mnt_len = tok_len;
			break;
		case 5:
			break;
		default:
			if (after_sep < 0) {
				if (tok_len == 1 && tok[0] == '-')
					after_sep = 0;
				break;
			}
			if (++after_sep == 1) {
				e->fstype = tok;
				e->fstype_len = tok_len;
			}
			break;
		}
		field++;
	}
	return after_sep >= 3;
}

/* Walks the lines of text, returning the next well-formed entry in *e and
 * advancing *p; false at the end of the string. */
static bool
mi_next(const char **p, struct mi_entry *e)
{
	const char *line, *eol;

	while (**p) {
		line = *p;
		eol = strchrnul(line, '\n');
		*p = *eol ? eol + 1 : eol;
		if (mi_parse_line(line, eol - line, e))
			return true;
	}
	return false;
}

int
cgroup_find_mount_in(const char *mountinfo, char *out, size_t outlen)
{
	const char *p = mountinfo;
	struct mi_entry e, first = {0};
	bool default_is_cg2 = false;

	if (!mountinfo || !out)
		return -EINVAL;
	while (mi_next(&p, &e)) {
		bool cg2 = mi_eq(e.fstype, e.fstype_len, "cgroup2");

		/* The last mount on /sys/fs/cgroup is the visible one. */
		if (mi_eq(e.mnt, e.mnt_len, CGROUP_DEFAULT_MNT))
			default_is_cg2 = cg2;
		else if (cg2 && !first.mnt)
			first = e;
	}
	if (default_is_cg2) {
		if (outlen < sizeof(CGROUP_DEFAULT_MNT))
			return -ENAMETOOLONG;
		memcpy(out, CGROUP_DEFAULT_MNT, sizeof(CGROUP_DEFAULT_MNT));
		return 0;
	}
	if (!first.mnt)
		return -ENOENT;
	return mi_unescape(first.mnt, first.mnt_len, out, outlen);
}

int
cgroup_foreach_mount_in(const char *mountinfo, const char *fstype,
			int (*fn)(const char *mountpoint, void *arg), void *arg)
{
	const char *p = mountinfo;
	struct mi_entry e;
	char *buf = NULL;
	size_t buflen;
	int n = 0, err;

	if (!mountinfo || !fstype)
		return -EINVAL;
	buflen = strlen(mountinfo) + 1; /* no mount point is longer */
	while (mi_next(&p, &e)) {
		if (!mi_eq(e.fstype, e.fstype_len, fstype))
			continue;
		if (n == INT_MAX) {
			err = -EOVERFLOW;
			goto out_free;
		}
		n++;
		if (!fn)
			continue;
		if (!buf) {
			buf = malloc(buflen);
			if (!buf)
				return -ENOMEM;
		}
		mi_unescape(e.mnt, e.mnt_len, buf, buflen);
		err = fn(buf, arg);
		if (err < 0)
			goto out_free;
	}
	err = n;
out_free:
	free(buf);
	return err;
}

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

/* The next '/'-separated component of *p, skipping empty ones. */
static bool
path_next(const char **p, const char **comp, size_t *len)
{
	const char *s = *p;

	while (*s == '/')
		s++;
	if (*s == '\0') {
		*p = s;
		return false;
	}
	*comp = s;
	s = strchrnul(s, '/');
	*len = s - *comp;
	*p = s;
	return true;
}

static bool
comp_is(const char *comp, size_t len, const char *s)
{
	return strlen(s) == len && !memcmp(comp, s, len);
}

/* Appends "/comp" to out[0..*len), keeping it NUL-terminated. */
static int
path_push(char *out, size_t outlen, size_t *len, const char *comp, size_t clen)
{
	if (clen > NAME_MAX || clen + 2 > outlen - *len)
		return -ENAMETOOLONG;
	out[(*len)++] = '/';
	memcpy(out + *len, comp, clen);
	*len += clen;
	out[*len] = '\0';
	return 0;
}

/* Copies mnt into out with repeated and trailing slashes dropped; *depth is
 * its number of components. mnt comes from mountinfo, so "." and ".." in it
 * are refused rather than interpreted. */
static int
path_put_mnt(const char *mnt, char *out, size_t outlen, size_t *len, size_t *depth)
{
	const char *comp;
	size_t clen;
	int err;

	if (mnt[0] != '/')
		return -EINVAL;
	*len = 0;
	*depth = 0;
	out[0] = '\0';
	while (path_next(&mnt, &comp, &clen)) {
		if (comp_is(comp, clen, ".") || comp_is(comp, clen, ".."))
			return -EINVAL;
		err = path_push(out, outlen, len, comp, clen);
		if (err)
			return err;
		(*depth)++;
	}
	return 0;
}

/* NAME of --cgroup NAME: [A-Za-z0-9._-]+, neither "." nor "..". */
static int
name_check(const char *name)
{
	size_t i, len = strlen(name);

	if (!len || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return -EINVAL;
	}
	return len > NAME_MAX ? -ENAMETOOLONG : 0;
}

/* Lexically normalises the absolute path arg into out. A ".." may only
 * remove a component deeper than mnt_depth: the components that end up
 * compared against mnt are then never rewritten, so a path cannot leave mnt
 * and come back, nor climb above "/". */
static int
path_normalise(const char *arg, size_t mnt_depth, char *out, size_t outlen, size_t *depth)
{
	const char *comp;
	size_t clen, len = 0;
	int err;

	*depth = 0;
	out[0] = '\0';
	while (path_next(&arg, &comp, &clen)) {
		if (comp_is(comp, clen, "."))
			continue;
		if (comp_is(comp, clen, "..")) {
			if (*depth <= mnt_depth)
				return -EINVAL;
			while (out[--len] != '/')
				;
			out[len] = '\0';
			(*depth)--;
			continue;
		}
		err = path_push(out, outlen, &len, comp, clen);
		if (err)
			return err;
		(*depth)++;
	}
	return 0;
}

/* Whether the first components of the normalised path are those of mnt. */
static bool
path_has_prefix(const char *path, const char *mnt)
{
	const char *pc, *mc;
	size_t plen, mlen;

	while (path_next(&mnt, &mc, &mlen)) {
		if (!path_next(&path, &pc, &plen) || plen != mlen || memcmp(pc, mc, mlen))
			return false;
	}
	return true;
}

int
cgroup_resolve(const char *mnt, const char *arg, pid_t pid, char *out, size_t outlen, bool *fresh)
{
	char run[32];
	size_t len, depth, mnt_depth;
	int err;

	if (fresh)
		*fresh = false;
	if (!mnt || !out)
		return -EINVAL;
	if (outlen < 2)
		return -ENAMETOOLONG;

	if (arg && arg[0] == '/') {
		/* Count mnt's components, then normalise arg over it. */
		err = path_put_mnt(mnt, out, outlen, &len, &mnt_depth);
		if (err)
			return err;
		err = path_normalise(arg, mnt_depth, out, outlen, &depth);
		if (err)
			return err;
		if (depth <= mnt_depth || !path_has_prefix(out, mnt))
			return -EINVAL;
		return 0;
	}

	if (arg) {
		if (strchr(arg, '/'))
			return -EINVAL;
		err = name_check(arg);
		if (err)
			return err;
	} else {
		if (pid <= 0)
			return -EINVAL;
		snprintf(run, sizeof(run), "run-%d", (int)pid);
		arg = run;
	}
	err = path_put_mnt(mnt, out, outlen, &len, &mnt_depth);
	if (err)
		return err;
	err = path_push(out, outlen, &len, CGROUP_SUBDIR, strlen(CGROUP_SUBDIR));
	if (err)
		return err;
	err = path_push(out, outlen, &len, arg, strlen(arg));
	if (err)
		return err;
	if (fresh && arg == run)
		*fresh = true;
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

/* Calls fn(dfd, child_fd, name) for each child cgroup of dfd (the only
 * directories in a cgroup directory). Children that vanish meanwhile are
 * skipped. Returns the sum of fn's results, or the first error. */
static int
walk_children(int dfd, int (*fn)(int dfd, int cfd, const char *name))
{
	int cfd, sum = 0, err = 0, ret;
	struct dirent *de;
	DIR *dir;

	cfd = dup(dfd);
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
		ret = fn(dfd, cfd, de->d_name);
		close(cfd);
		if (ret < 0 && !err)
			err = ret;
		else if (ret > 0)
			sum += ret;
	}
	closedir(dir);
	return err ? err : sum;
}

/* SIGKILL for every pid in cfd's cgroup.procs (or cgroup.threads) and in
 * its descendants'. Pids can be reused between reading and kill(); this is
 * only the fallback for kernels without cgroup.kill. */
static int
kill_procs_at(int dfd, int cfd, const char *name)
{
	char *procs, *p, *end;
	int n = 0, err;
	long pid;

	(void)dfd;
	(void)name;
	err = read_file_at(cfd, "cgroup.procs", &procs);
	if (err == -EOPNOTSUPP) /* threaded cgroup: kill(tid) kills its process */
		err = read_file_at(cfd, "cgroup.threads", &procs);
	if (err)
		return err == -ENOENT ? 0 : err; /* removed meanwhile */
	for (p = procs; *p; p = end) {
		errno = 0;
		pid = strtol(p, &end, 10);
		if (end == p) {
			end = p + 1;
			continue;
		}
		if (!errno && pid > 0 && pid <= INT_MAX && kill((pid_t)pid, SIGKILL) == 0)
			n++;
	}
	free(procs);
	err = walk_children(cfd, kill_procs_at);
	return err < 0 ? err : n + err;
}

int
cgroup_kill_procs(const char *path)
{
	int dfd, ret;

	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1)
		return -errno;
	ret = kill_procs_at(AT_FDCWD, dfd, path);
	close(dfd);
	return ret;
}

/* rmdir of cfd's child cgroups, deepest first, then of cfd itself. */
static int
remove_at(int dfd, int cfd, const char *name)
{
	int err = walk_children(cfd, remove_at);

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
	int dfd, fd, err, ret;

	if (!path || !path[0])
		return -EINVAL;
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1)
		return errno == ENOENT ? 0 : -errno;
	err = check_removable(dfd);
	if (err)
		goto out_close;

	/* Absent before 5.14, EOPNOTSUPP in threaded cgroups. */
	fd = openat(dfd, "cgroup.kill", O_WRONLY | O_CLOEXEC);
	if (fd == -1 || write(fd, "1", 1) != 1) {
		err = -errno;
		if (fd != -1)
			close(fd);
		if (err != -ENOENT && err != -EOPNOTSUPP)
			goto out_close;
		err = 0;
		use_kill_file = false;
	} else {
		close(fd);
	}

	pfd.fd = openat(dfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	if (pfd.fd == -1) {
		err = -errno;
		goto out_close;
	}
	for (;;) {
		if (!use_kill_file) {
			ret = kill_procs_at(AT_FDCWD, dfd, path);
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
		err = remove_at(AT_FDCWD, dfd, path);
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
cgroup_of_pid_in(const char *text, char *out, size_t outlen)
{
	const char *line = text;

	/* cgroup v2's line is "0::/path" (hybrid hosts list v1 ones too) */
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (len >= 3 && !strncmp(line, "0::", 3)) {
			if (len - 3 >= outlen)
				return -ENAMETOOLONG;
			memcpy(out, line + 3, len - 3);
			out[len - 3] = 0;
			return out[0] == '/' ? 0 : -EINVAL;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
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
