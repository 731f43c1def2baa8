// SPDX-License-Identifier: Apache-2.0
/* Idmapped binds (see idmap.h): a detached copy of the host path's mount
 * tree (open_tree(2), OPEN_TREE_CLONE), idmapped, nosuid and nodev
 * (mount_setattr(2), MOUNT_ATTR_IDMAP with a user namespace whose only
 * mapping is the job's uid and gid as 0), moved onto a mount point of
 * ours (move_mount(2)) that dockerd binds in the path's place. Through it
 * the container's root (fsuid 0) makes files the job user's on the disk,
 * can give away nothing (chown to an id but 0 is EOVERFLOW) and, as the
 * owner of nothing else there, write nothing but what the job user may:
 * files of other owners are unmapped, beyond its capabilities. A set-uid
 * file it leaves is set-uid to the job user.
 *
 * The user namespace is a child's (fork, unshare(CLONE_NEWUSER), maps
 * written by us, its ns file opened, the child gone): one per uid:gid,
 * kept. The mount points are below DIR/egressctl-idmap-<pid>/, mode 0700
 * (dockerd is root; nobody else needs them), numbered; a path asked for
 * again (the same file: device and inode, and uid:gid) gets its mount
 * again (the same job's: a job's go when it does). All are detached when
 * dockerapi stops (a container keeps its own copy), and those of an
 * earlier daemon that is gone at the start. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "dockerapi/idmap.h"
#include "lib/log.h"

#define IDMAP_PREFIX "egressctl-idmap-"

void
dk_idmaps_init(struct dk_idmaps *m, const char *dir)
{
	memset(m, 0, sizeof(*m));
	for (int i = 0; i < DK_IDMAP_USERS; i++)
		m->users[i].fd = -1;
	snprintf(m->dir, sizeof(m->dir), "%s/" IDMAP_PREFIX "%d", dir, (int)getpid());
}

/* A mount point detached and removed. */
static void
remove_point(const char *mp)
{
	struct stat st;

	if (umount2(mp, MNT_DETACH) && errno != EINVAL && errno != ENOENT)
		log_warn("docker: cannot unmount %s", mp);
	if (!lstat(mp, &st))
		S_ISDIR(st.st_mode) ? rmdir(mp) : unlink(mp);
}

/* Every mount point below dir detached and removed, then dir. */
static void
remove_dir(const char *dir)
{
	char pat[PATH_MAX + 8];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/*", dir);
	if (!glob(pat, 0, NULL, &g)) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			remove_point(g.gl_pathv[i]);
		globfree(&g);
	}
	if (rmdir(dir) && errno != ENOENT)
		log_warn("docker: cannot remove %s", dir);
}

void
dk_idmaps_forget_earlier(const struct dk_idmaps *m, const char *dir)
{
	char pat[PATH_MAX];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/" IDMAP_PREFIX "*", dir);
	if (glob(pat, 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *pid = strrchr(g.gl_pathv[i], '-') + 1;

		/* (a daemon still running keeps its own) */
		if (strcmp(g.gl_pathv[i], m->dir) && (kill(atoi(pid), 0) && errno == ESRCH))
			remove_dir(g.gl_pathv[i]);
	}
	globfree(&g);
}

void
dk_idmaps_free(struct dk_idmaps *m)
{
	for (int i = 0; i < DK_IDMAP_USERS; i++)
		if (m->users[i].fd >= 0)
			close(m->users[i].fd);
	if (m->made)
		remove_dir(m->dir);
	m->n = 0;
}

static int
write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err = 0;
	size_t n = strlen(s);

	if (fd < 0)
		return -errno;
	if (write(fd, s, n) != (ssize_t)n)
		err = errno ? -errno : -EIO;
	close(fd);
	return err;
}

/* A user namespace mapping uid and gid (on the disk) as 0: its ns file
 * opened (O_RDONLY), or -errno. */
static int
make_userns(unsigned int uid, unsigned int gid)
{
	int up[2], down[2], fd = -1, err = 0;
	char path[64], map[64], b = 0;
	pid_t pid;

	if (pipe2(up, O_CLOEXEC))
		return -errno;
	if (pipe2(down, O_CLOEXEC)) {
		err = -errno;
		close(up[0]);
		close(up[1]);
		return err;
	}
	pid = fork();
	if (pid == 0) { /* the child: in a namespace of its own, until told */
		char r;

		close(up[0]);
		close(down[1]); /* (its read ends when ours closes) */
		r = unshare(CLONE_NEWUSER) ? 1 : 0;
		if (write(up[1], &r, 1) == 1 && !r)
			(void)!read(down[0], &r, 1);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	if (pid < 0) {
		err = -errno;
		goto out;
	}
	if (read(up[0], &b, 1) != 1 || b) {
		err = -EPERM; /* no user namespace for the child */
		goto reap;
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "%u 0 1\n", uid);
	err = write_file(path, map);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof(map), "%u 0 1\n", gid);
	if (!err)
		err = write_file(path, map);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	if (!err && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		err = -errno;
reap:
	close(down[1]);
	down[1] = -1;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
out:
	close(up[0]);
	if (down[1] >= 0)
		close(down[1]);
	return err ? err : fd;
}

static int
userns_of(struct dk_idmaps *m, unsigned int uid, unsigned int gid)
{
	int i, fd;

	for (i = 0; i < DK_IDMAP_USERS && m->users[i].fd >= 0; i++)
		if (m->users[i].uid == uid && m->users[i].gid == gid)
			return m->users[i].fd;
	if (i == DK_IDMAP_USERS)
		return -ENOSPC;
	fd = make_userns(uid, gid);
	if (fd >= 0)
		m->users[i] = (struct dk_idmap_user){.uid = uid, .gid = gid, .fd = fd};
	return fd;
}

/* mp: a new mount point in m->dir of the type of st (a directory, a
 * file). 0 or -errno. */
static int
make_point(struct dk_idmaps *m, const struct stat *st, char *mp, size_t len)
{
	int fd;

	if (!m->made) {
		if (mkdir(m->dir, 0700) && errno != EEXIST)
			return -errno;
		m->made = true;
	}
	if ((size_t)snprintf(mp, len, "%s/%u", m->dir, m->seq++) >= len)
		return -ENAMETOOLONG;
	if (S_ISDIR(st->st_mode))
		return mkdir(mp, 0700) ? -errno : 0;
	fd = open(mp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int
idmapped(int tree, int ns)
{
	struct mount_attr a = {
		.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
		.userns_fd = (unsigned long long)ns,
	};

	return syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a))
		       ? -errno
		       : 0;
}

void
dk_idmaps_forget_job(struct dk_idmaps *m, uint64_t job)
{
	char mp[PATH_MAX + 16];
	int k = 0;

	for (int i = 0; i < m->n; i++) {
		if (m->maps[i].job != job) {
			m->maps[k++] = m->maps[i];
			continue;
		}
		snprintf(mp, sizeof(mp), "%s/%u", m->dir, m->maps[i].seq);
		remove_point(mp);
	}
	m->n = k;
}

int
dk_idmap_make(struct dk_idmaps *m, int fd, unsigned int uid, unsigned int gid, uint64_t job,
	      char *out, size_t outlen, char *why, size_t whylen)
{
	struct stat st;
	int ns, tree = -1, err;
	char mp[PATH_MAX];

	if (fstat(fd, &st)) {
		err = -errno;
		snprintf(why, whylen, "cannot stat it (%s)", strerror(-err));
		return err;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "it is neither a directory nor a file");
		return -EINVAL;
	}
	for (int i = 0; i < m->n; i++)
		if (m->maps[i].dev == st.st_dev && m->maps[i].ino == st.st_ino &&
		    m->maps[i].uid == uid && m->maps[i].gid == gid && m->maps[i].job == job) {
			snprintf(out, outlen, "%s/%u", m->dir, m->maps[i].seq);
			return 0;
		}
	if (m->n == DK_IDMAP_MAX) {
		snprintf(why, whylen, "egressctl has made %d idmapped binds already", DK_IDMAP_MAX);
		return -ENOSPC;
	}
	ns = userns_of(m, uid, gid);
	if (ns < 0) {
		snprintf(why, whylen, "no user namespace for its idmap (%s)", strerror(-ns));
		return ns;
	}
	tree = (int)syscall(SYS_open_tree, fd, "",
			    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (tree < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot copy its mount (open_tree: %s)", strerror(-err));
		return err;
	}
	err = idmapped(tree, ns);
	if (err) {
		snprintf(why, whylen,
			 "its file system cannot be idmapped (mount_setattr: %s; ext4, xfs, btrfs "
			 "can since Linux 5.12, tmpfs since 6.3)",
			 strerror(-err));
		close(tree);
		return err;
	}
	err = make_point(m, &st, mp, sizeof(mp));
	if (!err && syscall(SYS_move_mount, tree, "", AT_FDCWD, mp, MOVE_MOUNT_F_EMPTY_PATH))
		err = -errno;
	close(tree);
	if (err) {
		snprintf(why, whylen, "cannot mount its idmapped copy at %s (%s)", mp,
			 strerror(-err));
		return err;
	}
	m->maps[m->n++] = (struct dk_idmap){.dev = st.st_dev,
					    .ino = st.st_ino,
					    .uid = uid,
					    .gid = gid,
					    .job = job,
					    .seq = m->seq - 1};
	snprintf(out, outlen, "%s", mp);
	return 0;
}
