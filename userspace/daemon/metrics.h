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

struct dtarget;
struct audit_rec;
/* One decision of dt's (r->decision set), counted by verdict, source and
 * reason (the reason's words before any quoted name or number). */
void metrics_count(struct dtarget *dt, const struct audit_rec *r);

#endif /* DAEMON_METRICS_H */
