// SPDX-License-Identifier: Apache-2.0
/* Where the decision log goes besides a file or a descriptor (audit.c):
 *   syslog[:PATH]  one message per record, a datagram to the local syslog
 *                  socket (/dev/log, or PATH) framed as journald and rsyslog
 *                  read it, the record's JSON as MSG; facility daemon,
 *                  severity by decision
 *   otlp:URL       OTLP/HTTP logs with the JSON encoding, POSTed to URL
 *                  (http[s]://HOST[:PORT][/PATH]; 4318 and /v1/logs by
 *                  default; headers and the CA as struct logsink_opts say)
 *                  in batches: one request at a time, at most
 *                  LOGSINK_BATCH records each, sent when that many wait or
 *                  a second after the first; LOGSINK_QUEUE records wait at
 *                  most, beyond that they are dropped and counted.
 * Neither ever blocks the loop: a datagram the socket cannot take now, or
 * a record the queue cannot hold, is counted, never waited for. */
#ifndef LOGSINK_H
#define LOGSINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct audit_rec;
struct logsink;

#define LOGSINK_SYSLOG_PATH "/dev/log"
#define LOGSINK_BATCH	    256
#define LOGSINK_QUEUE	    4096
#define LOGSINK_TIMEOUT_S   5 /* per OTLP request */

/* Is spec one of the forms above ("syslog", "syslog:/PATH", "otlp:...")? */
bool logsink_is_spec(const char *spec);

/* What an OTLP sink's requests carry besides the records. */
struct logsink_opts {
	const char *const *headers; /* "Name: value" (--log-header) */
	int nheaders;
	const char *ca_file; /* https: the collector's CA (NULL: the system's) */
	/* OTLP: resource attributes besides audit_identity()'s, as key, value
	 * pairs (the daemon's: a pod's container.id, k8s.namespace.name, ...) */
	const char *const *resource;
	int nresource; /* pairs */
};

/* Opens the sink spec names (OTLP's resource attributes are
 * audit_identity()'s, record.h); o may be NULL. NULL with errbuf set. */
struct logsink *logsink_open(struct event_base *base, const char *spec,
			     const struct logsink_opts *o, char *errbuf, size_t errlen);

/* One record: r for its severity and attributes, line its JSON (as the
 * decision log has it), time_ms its time. */
void logsink_write(struct logsink *s, const struct audit_rec *r, const char *line, size_t len,
		   uint64_t time_ms);

struct logsink_stats {
	const char *what; /* "syslog /dev/log", "otlp http://..." */
	uint64_t sent;	  /* records the socket took / the collector acknowledged */
	uint64_t dropped; /* not sent: the socket or the queue was full */
	uint64_t lost;	  /* not sent: the socket or the collector failed */
	char last_err[96];
};
void logsink_get_stats(const struct logsink *s, struct logsink_stats *st);

/* What is queued, sent within 2 s (blocking: at exit or detach, when the
 * loop may not run again); the rest counts as lost. */
void logsink_finish(struct logsink *s);
void logsink_free(struct logsink *s);

#endif /* LOGSINK_H */
