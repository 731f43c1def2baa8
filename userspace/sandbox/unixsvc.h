// SPDX-License-Identifier: Apache-2.0
/* The filesystem unix sockets of local services that start work outside
 * the sandbox's cgroup: container runtimes (docker, containerd, podman,
 * buildkit, CRI-O), the service manager (systemd's private sockets) and the
 * D-Bus system and session buses (`systemd-run --user`, `busctl call ...
 * StartTransientUnit`). Denied by default for every target (bpf/unix.c);
 * --allow-unix PATH lets one through, --deny-unix PATH adds one. This file
 * builds the list the BPF maps get, matches names as the programs do (for
 * the tests and the sandbox's masks) and names the entries in lines.
 *
 * It also knows where egressctl's own sockets are, for `run` to mask them
 * from CMD: its directory in /run (the daemon's default control socket,
 * the status sockets) and every daemon's control socket wherever
 * `--control PATH` put it, which each daemon registers in
 * <dir>/controls/<its pid> (a symlink to the socket) while it listens. */
#ifndef UNIXSVC_H
#define UNIXSVC_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel/unixsvc_list.h" /* struct unixsvc: the list itself */
#include "paths.h"		 /* generated: EGR_RUNDIR */

/* The default list, NULL-terminated: "/run/..." names (each also gets its
 * "/var/run/..." twin: servers bind either). */
extern const char *const unixsvc_defaults[];

/* s := the defaults (under root, a test build's directory; NULL: "/"),
 * then every --deny-unix added, then every --allow-unix: an allow of an
 * entry (or its twin) turns it off, any other path is added as an
 * exception (e.g. /run/user/1000/bus beside /run/user/ * /bus). Paths must be
 * absolute and fit sun_path. Returns 0 or -EINVAL with err set. */
int unixsvc_build(struct unixsvc *s, const char *root, const char *const *allow, int nallow,
		  const char *const *deny, int ndeny, char *err, size_t errlen);

/* The entry name matches as bpf/unix.c looks it up: exactly, then with
 * the uid of a "/run/user/<uid>/" component (after the root) replaced by
 * '*' (uid, if not NULL, gets the digits). -1 when none. */
int unixsvc_match(const struct unixsvc *s, const char *name, char *uid, size_t uidlen);

/* Is name denied (an entry matches and it is no allow)? */
bool unixsvc_denied(const struct unixsvc *s, const char *name);

/* Entry idx as a path, its '*' replaced by uid when given. */
void unixsvc_name(const struct unixsvc *s, int idx, const char *uid, char *buf, size_t len);

/* The denied sockets that exist now, "*" entries expanded over the
 * directories there are (for inode entries and for run's masks): a
 * NULL-terminated array of malloc'd paths (free with unixsvc_free_list),
 * idx[i] the entry of each when idx is not NULL (malloc'd too). */
char **unixsvc_existing(const struct unixsvc *s, int **idx);
void unixsvc_free_list(char **list);

/* egressctl's directory of sockets: status sockets, the daemon's default
 * control socket, the registry of control sockets (mode 0700, root's). */
#define UNIXSVC_EGR_DIR EGR_RUNDIR

/* Registers path as this process's control socket in dir/controls/<pid>
 * (dir and it made 0700 when missing), dropping the entries of processes
 * that are gone. Returns 0 or -errno with err set. */
int unixsvc_control_register(const char *dir, const char *path, char *err, size_t errlen);
/* Drops this process's entry. */
void unixsvc_control_unregister(const char *dir);

/* Appends to *list (NULL-terminated, as unixsvc_existing() made it) what
 * of egressctl's there is to mask: dir itself (and its /var/run twin)
 * when it is a directory, and every registered control socket that is a
 * socket now. Returns 0 or -ENOMEM (*list is then freed and NULL). */
int unixsvc_add_egressctl(const char *dir, char ***list);

#endif /* UNIXSVC_H */
