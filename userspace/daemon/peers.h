// SPDX-License-Identifier: Apache-2.0
/* `daemon --docker`: a job's containers on a docker network they share
 * reach each other by their addresses and names there (peers.c). One
 * loop thread. */
#ifndef DAEMON_PEERS_H
#define DAEMON_PEERS_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;
struct dockerapi_ctr;

/* What is known of the job's containers kept from now on (dm->peers);
 * 0 or -ENOMEM. */
int peers_open(struct daemon *dm);
void peers_close(struct daemon *dm);

/* Job's start (or restart) of container c succeeded; cg its cgroup. */
void peers_started(struct daemon *dm, uint64_t job, const struct dockerapi_ctr *c, const char *cg);

/* Job asks dockerd to connect or disconnect a container: before a
 * disconnect goes (done false) its addresses are taken back; after
 * dockerd answered (done true) its containers are asked of dockerd anew. */
void peers_networks(struct daemon *dm, uint64_t job, bool done);

/* Once a second: containers whose cgroup is gone forgotten. */
void peers_tick(struct daemon *dm);

/* target_env.local_name for a job's target (arg its dtarget). */
int peers_local_name(void *arg, uint64_t netns, const char *name, int af, uint8_t (*addr)[16],
		     int max);

#endif /* DAEMON_PEERS_H */
