// SPDX-License-Identifier: Apache-2.0
/* The decision log. Every decision of the kernel, the proxy and the DNS
 * responder (a struct audit_rec, record.h) goes through audit_write(): one
 * JSON object per line to --log
 * FILE (or "-" for stdout), and the run's sink (summary, denial lines).
 * Writing never blocks the data path: lines wait in a bounded buffer
 * drained when the file is writable; when it is full, lines are dropped
 * and counted. A write error (a full disk) is said once on stderr, lines
 * wait and are retried, and those that cannot wait are counted apart from
 * the slow reader's. No URL paths, query strings or bodies are ever
 * passed in. */
#ifndef AUDIT_H
#define AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "audit/record.h"

struct event_base;

typedef void (*audit_sink)(void *arg, const struct audit_rec *r);

struct audit;

/* path: where the lines go, or NULL for nowhere (the sink only):
 *   FILE            appended to; audit_reopen() opens it anew (logrotate)
 *   -               standard output (the daemon; run refuses it: CMD's
 *                   output goes there too)
 *   fd:N            descriptor N, open for writing (its own file description,
 *                   where /proc/self/fd allows, so O_NONBLOCK stays ours)
 *   syslog[:PATH]   datagrams to /dev/log or PATH (audit/logsink.h)
 *   otlp:URL        OTLP/HTTP(S) JSON logs, batched (audit/logsink.h), with
 *                   the headers and CA of lo (NULL: none)
 * The writer needs an event base to drain its buffer. NULL with errbuf set
 * on failure. */
struct logsink_opts;
struct audit *audit_open(struct event_base *base, const char *path, const struct logsink_opts *lo,
			 char *errbuf, size_t errlen);
void audit_set_sink(struct audit *a, audit_sink fn, void *arg);
/* Names the cgroup of every record that has one and no names yet (the
 * pointers need to live only until fn is called again). */
typedef void (*audit_namer)(void *arg, uint64_t cgroup, const char **path, const char **container);
void audit_set_namer(struct audit *a, audit_namer fn, void *arg);
void audit_write(struct audit *a, const struct audit_rec *r);

struct audit_stats {
	uint64_t dropped; /* lines: the reader was too slow (the buffer was full) */
	/* a syslog or OTLP log (NULL sink: neither): its records */
	const char *sink; /* "syslog /dev/log", "otlp http://..." */
	uint64_t sink_sent, sink_dropped, sink_lost;
	char sink_err[96];
	uint64_t lost;	  /* lines: writing failed (ENOSPC, EIO, EPIPE...) */
	int last_err;	  /* errno of the last write error; 0: none */
	bool failing;	  /* writes were still failing when the log was finished */
	const char *path; /* the log ("stdout" for "-"); NULL without one */
};

/* What became of the lines: complete after audit_finish(). */
void audit_get_stats(const struct audit *a, struct audit_stats *st);

/* Bytes the buffer may hold (AUDIT_BUF_MAX, 4 MiB, by default); for tests. */
void audit_set_limit(struct audit *a, size_t bytes);

/* The form of the lines written (record.h: AUDIT_FMT_JSON by default). */
void audit_set_format(struct audit *a, int fmt);
/* Writes what it can of the buffer within 2 s; what is left counts as
 * dropped, or lost when writing failed (audit_get_stats()). */
void audit_finish(struct audit *a);
/* audit_finish(), then closes. */
void audit_close(struct audit *a);

/* Opens a file log anew (after logrotate moved it: SIGHUP for the daemon,
 * SIGUSR1 for run). A line half written goes to the old file first. 0, or
 * -errno (said on stderr; the old file stays in use); 0 for other kinds. */
int audit_reopen(struct audit *a);

#endif /* AUDIT_H */
