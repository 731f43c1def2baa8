// SPDX-License-Identifier: Apache-2.0
/* The loader's own state and what its two files share: loader.c (open,
 * attach, the maps) and loader_adopt.c (taking over pinned programs).
 * Nothing else includes it: the rest of the tree has loader.h. */
#ifndef LOADER_PRIV_H
#define LOADER_PRIV_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/loader.h"

struct bpf_program;

struct loader {
	struct egress_bpf *skel;
	struct ring_buffer *rb;
	void (*on_event)(const struct egr_event *e, void *arg);
	void *arg;
	bool unix_hooks;
	bool attached;
	char pin_dir[PATH_MAX];
	struct bpf_link *kill_link; /* egr_kv_kill's iterator, pinned as link_kv_kill */
};

/* How a program is attached: the loader's table of programs (loader.c). */
enum loader_attach {
	LA_CGROUP,	 /* to the cgroup, the attach type its section names */
	LA_UNIX_CONNECT, /* ... as the kernel's BPF_CGROUP_UNIX_CONNECT */
	LA_UNIX_SENDMSG, /* ... as the kernel's BPF_CGROUP_UNIX_SENDMSG */
	LA_ITER,	 /* an iterator link (egr_kv_kill), kept in kill_link */
};

/* prog's row in the table: an enum loader_attach, or -ENOENT. */
int loader_prog_how(const struct bpf_program *prog);

/* The opening loader_open and loader_adopt share: the skeleton opened (not
 * loaded), every program checked against the table, the unix hooks left
 * out unless o->unix_hooks. NULL with errno and errbuf set. */
struct loader *loader_new(const struct loader_opts *o, char *errbuf, size_t errlen);

/* The ring buffer of egr_events, each event to on_event. 0 or -errno. */
int loader_open_ring(struct loader *ld, char *errbuf, size_t errlen);

/* The cookie of this process's network namespace, where the listeners
 * are (SO_NETNS_COOKIE, Linux 5.14). 0 with errbuf set. */
uint64_t loader_own_netns(char *errbuf, size_t errlen);

/* ld->pin_dir := <bpffs>/egressctl/<cgid> (bpffs mounted if need be).
 * 0 or -errno with errbuf set. */
int loader_set_pin_dir(struct loader *ld, uint64_t cgid, char *errbuf, size_t errlen);

/* out := dir/kind_name, name without its "egr_" (kind: "link", "map").
 * 0 or -ENAMETOOLONG. */
int loader_pin_path(char *out, size_t len, const char *dir, const char *kind, const char *name);

#endif /* LOADER_PRIV_H */
