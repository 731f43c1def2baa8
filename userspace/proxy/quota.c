// SPDX-License-Identifier: Apache-2.0
/* The proxy's connection limits (see quota.h). Each connection holds
 * QUOTA_FDS_PER_CONN descriptors, its client and upstream sockets; relay
 * pipes are leased from a pool of their own (relay.c: a direction holds
 * one only while bytes move), budgeted here as max_pipes of two
 * descriptors each, so the limit counts what idle tunnels really hold.
 * Processes are few (a fork storm: thousands), so
 * a chained hash of their counts, an entry only while a process has a
 * connection open, is plenty. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/quota.h"

struct quota_proc {
	struct quota_proc *next; /* hash chain */
	uint32_t tgid;
	int n; /* connections open, > 0 */
};

int
quota_per_process_default(int max_conns)
{
	/* a quarter: no legitimate client comes near it at the defaults (1024
	 * of 4096), and a process that leaks or floods connections leaves
	 * three quarters to the others; a small --max-conns, set on purpose,
	 * is not split further */
	int floor = max_conns < QUOTA_PER_PROCESS_MIN ? max_conns : QUOTA_PER_PROCESS_MIN;

	return max_conns / 4 > floor ? max_conns / 4 : floor;
}

void
quota_init(struct quota *q, int max_conns, int max_per_process)
{
	memset(q, 0, sizeof(*q));
	q->max_explicit = max_conns > 0;
	q->per_explicit = max_per_process > 0;
	q->max_conns = max_conns > 0 ? max_conns : QUOTA_DEF_MAX_CONNS;
	q->max_per_process =
		max_per_process > 0 ? max_per_process : quota_per_process_default(q->max_conns);
	q->max_refusing = QUOTA_REFUSING_MAX;
}

void
quota_free(struct quota *q)
{
	for (int i = 0; i < QUOTA_BUCKETS; i++) {
		struct quota_proc *pc, *next;

		for (pc = q->procs[i]; pc; pc = next) {
			next = pc->next;
			free(pc);
		}
		q->procs[i] = NULL;
	}
}

long
quota_fit(long nofile, long open_now, long reserve, long *refusing, long *pipes)
{
	long avail = nofile - open_now - reserve, r, np;

	/* a sixteenth of the room, between 1 and QUOTA_REFUSING_MAX */
	r = avail / QUOTA_FDS_PER_CONN / 16;
	r = r < 1 ? 1 : r > QUOTA_REFUSING_MAX ? QUOTA_REFUSING_MAX : r;
	*refusing = r;
	np = avail / QUOTA_PIPE_SHARE;
	np = np < QUOTA_PIPES_MIN ? QUOTA_PIPES_MIN : np > QUOTA_PIPES_MAX ? QUOTA_PIPES_MAX : np;
	*pipes = np;
	if (avail - r - 2 * np < QUOTA_FDS_PER_CONN)
		return 0;
	return (avail - r - 2 * np) / QUOTA_FDS_PER_CONN;
}

int
quota_size(struct quota *q, long nofile, long open_now, long reserve, bool *lowered, char *errbuf,
	   size_t errlen)
{
	long refusing, pipes, fit = quota_fit(nofile, open_now, reserve, &refusing, &pipes);

	*lowered = false;
	if (fit < 1) {
		snprintf(errbuf, errlen,
			 "the descriptor limit (%ld, ulimit -Hn) leaves no room for proxy "
			 "connections: %ld descriptors are open and %ld kept for DNS and the "
			 "resolver; raise it",
			 nofile, open_now, reserve);
		return -1;
	}
	if (fit > QUOTA_MAX)
		fit = QUOTA_MAX;
	if (q->max_conns > fit) {
		if (q->max_explicit) {
			snprintf(errbuf, errlen,
				 "--max-conns %d needs %ld file descriptors (%d per connection and "
				 "%ld for relay pipes) and the limit is %ld with %ld open: at most "
				 "%ld connections fit; raise the hard limit (ulimit -Hn) or lower "
				 "--max-conns",
				 q->max_conns,
				 (long)q->max_conns * QUOTA_FDS_PER_CONN + open_now + reserve +
					 refusing + 2 * pipes,
				 QUOTA_FDS_PER_CONN, 2 * pipes, nofile, open_now, fit);
			return -1;
		}
		q->max_conns = (int)fit;
		*lowered = true;
	}
	if (!q->per_explicit)
		q->max_per_process = quota_per_process_default(q->max_conns);
	else if (q->max_per_process > q->max_conns)
		q->max_per_process = q->max_conns; /* never binds before the total */
	q->max_refusing = (int)refusing;
	q->max_pipes = (int)pipes;
	return 0;
}

static struct quota_proc **
slot(struct quota *q, uint32_t tgid)
{
	/* Fibonacci hashing: the top 10 bits of tgid * 2^32/phi */
	struct quota_proc **pp = &q->procs[(tgid * 2654435761u) >> 22];

	while (*pp && (*pp)->tgid != tgid)
		pp = &(*pp)->next;
	return pp;
}

int
quota_of(const struct quota *q, uint32_t tgid)
{
	const struct quota_proc *pc = *slot((struct quota *)q, tgid);

	return pc ? pc->n : 0;
}

enum quota_hit
quota_check(struct quota *q, uint32_t tgid)
{
	if (q->nconns >= q->max_conns) {
		q->hit_total++;
		return QUOTA_TOTAL;
	}
	if (quota_of(q, tgid) >= q->max_per_process) {
		q->hit_process++;
		return QUOTA_PROCESS;
	}
	return QUOTA_NONE;
}

int
quota_add(struct quota *q, uint32_t tgid)
{
	struct quota_proc **pp = slot(q, tgid);

	if (!*pp) {
		*pp = calloc(1, sizeof(**pp));
		if (!*pp)
			return -ENOMEM;
		(*pp)->tgid = tgid;
	}
	(*pp)->n++;
	q->nconns++;
	return 0;
}

void
quota_del(struct quota *q, uint32_t tgid)
{
	struct quota_proc **pp = slot(q, tgid), *pc = *pp;

	if (!pc)
		return;
	q->nconns--;
	if (--pc->n > 0)
		return;
	*pp = pc->next;
	free(pc);
}

void
quota_words(const struct quota *q, enum quota_hit hit, char *buf, size_t len)
{
	if (hit == QUOTA_PROCESS)
		snprintf(buf, len,
			 "too many connections from this process (--max-conns-per-process %d)",
			 q->max_per_process);
	else
		snprintf(buf, len, "too many connections (--max-conns %d)", q->max_conns);
}

int
quota_raise_nofile(struct rlimit *orig)
{
	unsigned long nr_open = 0;
	struct rlimit rl;
	FILE *f;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	*orig = rl;
	if (rl.rlim_cur >= rl.rlim_max)
		return 0;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		return 0;
	/* a hard limit above fs.nr_open (unlimited): the most the kernel takes */
	f = fopen("/proc/sys/fs/nr_open", "re");
	if (!f || fscanf(f, "%lu", &nr_open) != 1 || nr_open <= orig->rlim_cur) {
		if (f)
			fclose(f);
		return -EPERM;
	}
	fclose(f);
	rl.rlim_cur = nr_open < rl.rlim_max ? nr_open : rl.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &rl) ? -errno : 0;
}
