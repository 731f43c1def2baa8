// SPDX-License-Identifier: Apache-2.0
/* One decision (or one of the daemon's own events) as data: struct
 * audit_rec, who writes it (audit_identity()) and its JSON line
 * (audit_format()). What the writer (audit.c) and the syslog and OTLP
 * sinks (logsink.c) share; neither needs the other for it. Pure but for
 * the identity, taken from the environment once. */
#ifndef AUDIT_RECORD_H
#define AUDIT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct audit_rec {
	const char *decision;	   /* "allow", "deny" or "would-deny" (audit mode);
				    * NULL for an event */
	const char *event;	   /* the daemon's own events ("attach", "reload",
				    * "pre-existing", ...): written instead of a
				    * decision; NULL for decisions */
	const char *reason;	   /* short words: "no rule allows it", "rule 2 \"x\"" */
	const char *source;	   /* bpf, http, connect, socks5, transparent, dns */
	const char *host;	   /* NULL or "" when unknown */
	uint16_t port;		   /* 0 when unknown */
	const struct sockaddr *ip; /* NULL when unknown */
	const char *method;	   /* plain HTTP (or a request inside inspected TLS), else NULL */
	const char *path;	   /* ... its normalised path, when path rules may judge it */
	/* HTTPS inspection: TLS allowed only inspected, or a request judged
	 * inside an inspected session ("inspected": true) */
	bool inspected;
	uint32_t pid;
	const char *comm; /* task command name (escaped on output) */
	uint64_t cgroup;
	const char *rule; /* the deciding rule's text, NULL if none */
	/* containers (the daemon's audit_set_namer): the cgroup's path below
	 * the cgroup2 mount, and the container id it carries; NULL if none */
	const char *cgroup_path;
	const char *container;
	/* not logged; for the run's sink */
	const char *dest;    /* destination in words for the denial line */
	const char *suggest; /* the --allow rule that would permit it; NULL if none can */
	const char *comment; /* the deciding rule's "comment" in its policy file, or NULL */
	const char *proto;   /* "tcp", "udp", ... for kernel records; NULL otherwise */
	const char *secret;  /* a denial for a secret's placeholder where it may not go:
			      * the secret's name (the summary's "secrets"); NULL otherwise */
};

/* Who writes the log: in every record (schema AUDIT_SCHEMA: "schema",
 * "run_id", "hostname", "ci"), and the resource of OTLP records. Taken
 * from the environment once: the run id is random, the CI job's identity
 * is GitHub Actions' (GITHUB_RUN_ID, GITHUB_JOB, ...), GitLab's (CI_JOB_ID,
 * ...) or Buildkite's (BUILDKITE_JOB_ID, ...) when present. */
#define AUDIT_SCHEMA 2
#define AUDIT_MAX_CI 6
struct audit_identity {
	char run_id[33];
	char hostname[256];
	const char *ci_system; /* "github", "gitlab", "buildkite", "ci"; NULL: none */
	struct {
		const char *key, *value; /* "run_id", "job", ...: the environment's */
	} ci[AUDIT_MAX_CI];
	int nci;
};
const struct audit_identity *audit_identity(void);

/* The JSON line for r (without newline) into buf; returns the length it
 * needed (as snprintf). Pure but for audit_identity(), for tests. */
int audit_format(const struct audit_rec *r, uint64_t time_ms, char *buf, size_t len);

/* The forms of a log line: egressctl's own JSON (schema AUDIT_SCHEMA), or
 * the Elastic Common Schema's field names (ECS 8), for an index that takes
 * them as they are. */
enum audit_fmt {
	AUDIT_FMT_JSON = 0,
	AUDIT_FMT_ECS
};
#define AUDIT_ECS_VERSION "8.11.0"

/* "json" or "ecs" -> *out; 0 or -EINVAL. */
int audit_fmt_parse(const char *s, enum audit_fmt *out);

/* r as one line of fmt (ECS: audit_format_ecs()), as audit_format(). */
int audit_format_as(enum audit_fmt fmt, const struct audit_rec *r, uint64_t time_ms, char *buf,
		    size_t len);

#endif /* AUDIT_RECORD_H */
