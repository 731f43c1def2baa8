// SPDX-License-Identifier: Apache-2.0
/* The hold (bpf/hold.bpf.c) on a selector's root: every cgroup below it is
 * refused everything until passed. Attached as links, pinned under
 * <bpffs>/egressctl/hold-<root's cgroup id>/ with its map: it stays when
 * the daemon stops (a cgroup made meanwhile is held, not free) and a
 * restarted daemon takes it over. */
#ifndef KERNEL_HOLD_H
#define KERNEL_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hold;

/* The hold of the cgroup directory root: the one pinned there (taken
 * over: *fresh false), or a new one (*fresh true) whose map is given every
 * cgroup at and below root, as EGR_HOLD_SELF, before it is attached: what
 * stood there before goes on as it was; only what is made later waits to
 * be passed. NULL with errbuf on failure, nothing attached. */
struct hold *hold_open(const char *root, bool *fresh, char *errbuf, size_t errlen);

/* cgroup cgid (at path) passed with flags (EGR_HOLD_SELF, EGR_HOLD_TREE),
 * or held again. Remembered with its path: hold_tick forgets it once the
 * path names another cgroup or none. 0 or -errno. */
int hold_pass(struct hold *h, const char *path, uint64_t cgid, uint32_t flags);
int hold_unpass(struct hold *h, uint64_t cgid);
/* Every cgroup passed whose path is gone is forgotten. */
void hold_tick(struct hold *h);
/* Every entry of the map not passed by this process since hold_open (an
 * earlier daemon's, of cgroups gone since) is removed. */
void hold_sweep(struct hold *h);

const char *hold_root(const struct hold *h);
uint64_t hold_root_id(const struct hold *h);
/* What the programs refused so far (EGR_HOLD_CONNECT, _SENDMSG, _SKB). */
uint64_t hold_refused(const struct hold *h, int which);

/* Closed, the pins kept: the programs still hold. */
void hold_close(struct hold *h);
/* The pins of the hold on cgroup cgid removed: its links go with the last
 * reference (hold_close of whoever still has it). 0, -ENOENT (none), -errno. */
int hold_remove_pins(uint64_t cgid);

#endif /* KERNEL_HOLD_H */
