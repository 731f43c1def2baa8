// SPDX-License-Identifier: Apache-2.0
/* cgroup v2: finding the cgroup2 mount, resolving --cgroup (the pure text
 * parsers: cgpath.c), and on cgroupfs (cgroup.c) creating, entering,
 * signalling, killing, emptying and removing cgroups. No BPF here (loader.c
 * owns that). */
#ifndef CGROUP_H
#define CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Parses mountinfo text (the format of /proc/self/mountinfo) and writes the
 * mount point of the cgroup2 hierarchy to out: /sys/fs/cgroup when that is
 * cgroup2, else the first cgroup2 mount. Mount points are unescaped (\040).
 * Pure: no I/O. Returns 0, -ENOENT (no cgroup2 mount), -ENAMETOOLONG. */
int cgroup_find_mount_in(const char *mountinfo, char *out, size_t outlen);

/* The whole of /proc/self/mountinfo, NUL-terminated, in *out (free() it).
 * Returns 0 or -errno. */
int cgroup_read_mountinfo(char **out);
/* The same of process pid: its mount namespace's, the roots of cgroup
 * mounts as the caller's cgroup namespace sees them. 0 or -errno. */
int cgroup_read_mountinfo_of(pid_t pid, char **out);

/* Reads /proc/self/mountinfo, calls cgroup_find_mount_in() and confirms with
 * statfs() that the result is cgroup2. Returns 0 or -errno. */
int cgroup_find_mount(char *out, size_t outlen);

/* Calls fn(mountpoint, arg) for every mount in mountinfo whose fstype equals
 * fstype (e.g. "cgroup2", "bpf"), mount points unescaped. Pure. Returns the
 * number of matches, or the first negative value fn returned. */
int cgroup_foreach_mount_in(const char *mountinfo, const char *fstype,
			    int (*fn)(const char *mountpoint, void *arg), void *arg);

/* Calls fn(root, arg) for every mount in mountinfo whose mount point is
 * mountpoint, in the order listed (the last is the one on top), with the
 * mount's root in its filesystem (field 4), unescaped. Pure. Returns the
 * number of matches, or the first negative value fn returned. */
int cgroup_foreach_mount_at(const char *mountinfo, const char *mountpoint,
			    int (*fn)(const char *root, void *arg), void *arg);

/* Resolves a --cgroup argument against the cgroup2 mount point mnt:
 *   NULL            -> <mnt>/egressctl/run-<pid>     (*fresh = true)
 *   NAME (no '/')   -> <mnt>/egressctl/NAME          (NAME: [A-Za-z0-9._-], not . or ..)
 *   /absolute/path  -> the path itself, lexically normalised; it must lie
 *                      strictly below mnt (not mnt itself), no ".." escapes.
 * Anything else (relative paths with '/', empty) is -EINVAL. Pure.
 * Returns 0, -EINVAL, -ENAMETOOLONG. */
int cgroup_resolve(const char *mnt, const char *arg, pid_t pid, char *out, size_t outlen,
		   bool *fresh);

/* mkdir -p of path (mode 0755); *created says whether the last component was
 * created by this call. Returns 0 or -errno. */
int cgroup_create(const char *path, bool *created);

/* The cgroup id (the kernfs inode number that bpf_get_current_cgroup_id()
 * returns) of the cgroup directory at path; 0 on error with errno set. */
uint64_t cgroup_id_of(const char *path);

/* True when cgroup.events of path says "populated 1". */
bool cgroup_populated(const char *path);

/* Sends SIGKILL once to every pid in cgroup.procs (cgroup.threads in a
 * threaded cgroup) of path and of every cgroup below it: the fallback of
 * cgroup_kill_and_remove() where cgroup.kill is missing (before 5.14) or
 * refused (threaded cgroups). Returns the number signalled or -errno. */
int cgroup_kill_procs(const char *path);

/* SIGKILL to every process of the cgroup at path and below it:
 * cgroup.kill, or cgroup_kill_procs() where it is missing or refused.
 * Returns 0 or -errno. */
int cgroup_kill(const char *path);

/* Every pid of the cgroup whose directory is dfd and of the cgroups below
 * it (64 levels deep): cgroup.procs, or cgroup.threads in a threaded
 * cgroup; cgroups removed meanwhile are skipped. *v (free() it; NULL for
 * none) holds *n of them, unsorted. Returns 0 or -errno. */
int cgroup_pids_at(int dfd, pid_t **v, size_t *n);

/* Sends sig to every process in the cgroup at path and below it (64 levels
 * deep), each through a pidfd opened while the pid was listed and used only
 * if the pid is still listed afterwards (a pid reused by a process outside
 * the cgroup is never signalled). Returns the number signalled or -errno. */
int cgroup_signal(const char *path, int sig);

/* Moves process pid into the cgroup at path (its cgroup.procs). Returns 0
 * or -errno. */
int cgroup_enter(const char *path, pid_t pid);

/* Kills every process in the cgroup (cgroup.kill, SIGKILL via cgroup.procs as
 * a fallback), waits up to timeout_ms for it to be empty, then rmdir()s it and
 * every child cgroup below it. Returns 0 or -errno. */
int cgroup_kill_and_remove(const char *path, int timeout_ms);

/* The cgroup2 path of a process from its /proc/PID/cgroup text ("0::/a/b"
 * -> "/a/b"). Pure. Returns 0, -ENOENT (no cgroup2 line), -EINVAL,
 * -ENAMETOOLONG. */
int cgroup_of_pid_in(const char *text, char *out, size_t outlen);

/* <mnt><the cgroup2 path of pid>. Returns 0 or -errno (-ENOENT: no such
 * process). */
int cgroup_of_pid(const char *mnt, pid_t pid, char *out, size_t outlen);

/* The network namespace cookie (SO_NETNS_COOKIE) of a process of cgroup
 * path (<mnt>/...): the first of its cgroup.procs that is still in it when
 * a pidfd holds it. The calling thread enters that namespace for a moment
 * (a socket made there) and comes back, or the process aborts. 0 or
 * -errno (-ESRCH: no process there). */
int cgroup_netns_cookie(const char *mnt, const char *path, uint64_t *cookie);

/* The one cgroup directory below mnt called name (a systemd unit's:
 * "x.service" under its slice). Returns 0, -ENOENT (none), -EEXIST (more
 * than one: out has the first), -EINVAL (not a name). */
int cgroup_find_named(const char *mnt, const char *name, char *out, size_t outlen);

#endif /* CGROUP_H */
