// SPDX-License-Identifier: Apache-2.0
/* A process's umask and resource limits, as the service's run gives the
 * caller's to CMD (daemon/usersock.c, cli/client.c): read from the
 * client, carried to run as text (--service-limits), applied in CMD's
 * child before exec. Never more than the process applying them has: a
 * hard limit above its own is lowered to it. */
#ifndef PLIMITS_H
#define PLIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PLIMITS_N   16 /* RLIMIT_CPU to RLIMIT_RTTIME, Linux's numbering */
#define PLIMITS_INF UINT64_MAX

struct plimits {
	bool set; /* the rest holds something */
	mode_t umask;
	uint64_t cur[PLIMITS_N], max[PLIMITS_N]; /* PLIMITS_INF: unlimited */
};

/* This process's umask and limits. */
void plimits_get(struct plimits *l);

/* As text: "UMASK CUR:MAX ..." (octal umask, decimal limits, "-" for
 * unlimited), PLIMITS_N pairs. Returns 0, or -ENOSPC. */
int plimits_format(const struct plimits *l, char *buf, size_t len);

/* plimits_format's text back; a soft limit above its hard one, a umask
 * over 0777 or anything else is -EINVAL. */
int plimits_parse(const char *s, struct plimits *l);

/* The umask, then each limit lowered to this process's hard one (a soft
 * limit to the hard it gets). Returns 0, or -errno of the first that
 * failed with *which its resource number. */
int plimits_apply(const struct plimits *l, int *which);

#endif /* PLIMITS_H */
