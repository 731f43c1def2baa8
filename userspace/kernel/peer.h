// SPDX-License-Identifier: Apache-2.0
/* Who is at the other end of a unix stream socket, told race-free, and
 * whether that process may command egressctl (the daemon's control socket,
 * daemon/control.c). The process is the one the kernel recorded at
 * connect(): SO_PEERCRED for its pid and uid, SO_PEERPIDFD (6.5) for a
 * pidfd of it. What /proc/PID says of it (capabilities, user namespace,
 * cgroup, command) is read first and believed only if the pidfd still
 * names a live process afterwards: while it lives, its pid is not another
 * process's. Its cgroup is then asked whether egressctl's programs run for
 * its sockets (BPF_PROG_QUERY with BPF_F_QUERY_EFFECTIVE). */
#ifndef PEER_H
#define PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PEER_CGROUP_MAX 512

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* asm-generic/socket.h, Linux 6.5 */
#endif

struct peer {
	pid_t pid;		      /* in our PID namespace; 0: not known */
	uid_t uid;		      /* at connect() */
	gid_t gid;		      /* its group then */
	char comm[16];		      /* NUL-terminated; escape it before printing */
	char cgroup[PEER_CGROUP_MAX]; /* below the cgroup2 mount ("/a/b"); "" not known */
	uint64_t cap_eff;	      /* effective capabilities (CapEff) */
	bool same_userns;	      /* in the user namespace egressctl runs in */
	bool confined;		      /* egressctl's programs are effective on its cgroup */
};

/* Fills p for the peer of the connected unix socket fd; mnt is the cgroup2
 * mount. Returns 0, or -errno with why set (the peer is gone, is in a PID
 * namespace we cannot see, its cgroup cannot be read); p->pid and p->uid
 * are set whenever SO_PEERCRED gave them. */
int peer_identify(int fd, const char *mnt, struct peer *p, char *why, size_t whylen);

/* May p command egressctl? Only uid 0 outside every cgroup egressctl
 * confines, in egressctl's user namespace, with CAP_SYS_ADMIN effective.
 * Pure. Returns 0, or -EPERM with why set (one line, the first reason). */
int peer_refusal(const struct peer *p, char *why, size_t whylen);

/* Parses /proc/PID/status text: CapEff into *cap_eff. Pure. Returns 0 or
 * -EINVAL (no CapEff line at the start of a line). */
int peer_parse_status(const char *text, uint64_t *cap_eff);

/* Is a program called egressctl's connect4 program (bpf/sock_addr.c) among
 * the effective BPF_CGROUP_INET4_CONNECT programs of the cgroup open at
 * cg_fd? Returns 1, 0, or -errno. */
int peer_cgroup_confined(int cg_fd);

#endif /* PEER_H */
