// SPDX-License-Identifier: Apache-2.0
/* The daemon's counters for Prometheus (metrics.c). */
#ifndef DAEMON_METRICS_H
#define DAEMON_METRICS_H

#include <stddef.h>

struct daemon;
struct metrics;

/* Serves GET /metrics on addr (unix:PATH, 127.0.0.1:PORT, [::1]:PORT) from
 * dm's loop. NULL with errbuf set. */
struct metrics *metrics_open(struct daemon *dm, const char *addr, char *errbuf, size_t errlen);
void metrics_free(struct metrics *m);

#endif /* DAEMON_METRICS_H */
