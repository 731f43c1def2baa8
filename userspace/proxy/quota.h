// SPDX-License-Identifier: Apache-2.0
/* The proxy's connection limits: how many connections the descriptor limit
 * allows, the total (--max-conns) and per-process (--max-conns-per-process)
 * limits, and the live connections of each process. Bookkeeping only: no
 * sockets, no event loop; the proxy asks before it takes a connection and
 * says when a counted one ends. */
#ifndef QUOTA_H
#define QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#define QUOTA_DEF_MAX_CONNS   4096
#define QUOTA_FDS_PER_CONN    2	   /* client and upstream: pipes are leased (relay.c) */
#define QUOTA_PIPE_SHARE      40   /* a pipe (two descriptors) per this many free ones */
#define QUOTA_PIPES_MIN	      4	   /* relay pipes at the least */
#define QUOTA_PIPES_MAX	      1024 /* and at the most: directions moving bytes at once */
#define QUOTA_PER_PROCESS_MIN 64   /* the default per-process limit's floor */
#define QUOTA_REFUSING_MAX    64   /* connections kept to refuse clients in their protocol */
#define QUOTA_MAX	      1000000
#define QUOTA_BUCKETS	      1024

enum quota_hit {
	QUOTA_NONE = 0,	   /* within the limits */
	QUOTA_TOTAL = 1,   /* --max-conns connections are open */
	QUOTA_PROCESS = 2, /* the process has --max-conns-per-process open */
};

struct quota_proc;

struct quota {
	int max_conns;			 /* in force */
	int max_per_process;		 /* in force */
	int max_refusing;		 /* connections kept to refuse clients, at most */
	int max_pipes;			 /* relay pipes that may exist at once */
	bool max_explicit;		 /* --max-conns given: an error if it does not fit */
	bool per_explicit;		 /* --max-conns-per-process given */
	int nconns;			 /* counted connections open */
	uint64_t hit_total, hit_process; /* refusals so far, by limit */
	struct quota_proc *procs[QUOTA_BUCKETS]; /* live connections per process */
};

/* max_conns, max_per_process: 0 for the defaults. */
void quota_init(struct quota *q, int max_conns, int max_per_process);
void quota_free(struct quota *q);

/* The default per-process limit for max_conns: a quarter, but at least
 * QUOTA_PER_PROCESS_MIN (all of them below that). */
int quota_per_process_default(int max_conns);

/* The descriptor arithmetic, pure: with nofile descriptors, open_now of
 * them open and reserve kept for the rest of the proxy (DNS, resolver),
 * how many connections fit at QUOTA_FDS_PER_CONN each (< 1: none), beside
 * *refusing connections kept to refuse clients (one descriptor each) and
 * *pipes relay pipes (two each; one per QUOTA_PIPE_SHARE free descriptors,
 * from QUOTA_PIPES_MIN to QUOTA_PIPES_MAX). */
long quota_fit(long nofile, long open_now, long reserve, long *refusing, long *pipes);

/* Sizes the limits by quota_fit(): a default max_conns above it is
 * lowered (*lowered set), an explicit one is an error (-1, errbuf says
 * what fits), as is no room at all; the per-process limit follows. */
int quota_size(struct quota *q, long nofile, long open_now, long reserve, bool *lowered,
	       char *errbuf, size_t errlen);

/* Would one more connection of process tgid be over a limit? A refusal is
 * counted (hit_total or hit_process). */
enum quota_hit quota_check(struct quota *q, uint32_t tgid);

/* A counted connection of tgid opens (0 or -ENOMEM) / closes. */
int quota_add(struct quota *q, uint32_t tgid);
void quota_del(struct quota *q, uint32_t tgid);

/* Live connections of tgid. */
int quota_of(const struct quota *q, uint32_t tgid);

/* Why a client is refused, in words with the limit, for its reply. */
void quota_words(const struct quota *q, enum quota_hit hit, char *buf, size_t len);

/* Raises the soft descriptor limit to the hard one (up to fs.nr_open);
 * *orig gets the limit as it was. 0 or -errno (then unchanged). */
int quota_raise_nofile(struct rlimit *orig);

#endif /* QUOTA_H */
