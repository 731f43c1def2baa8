// SPDX-License-Identifier: Apache-2.0
/* What a run tried, gathered from every decision (the decision log's
 * sink, audit/audit.h): counts per destination, who tried the denied ones,
 * and the rule that would let each through. At exit: the table on stderr (and with --summary FILE in
 * the form --summary-format says), and with --suggest-policy the policy
 * that allows what the run did (suggest.c).
 *
 * One row per destination: a name's DNS answer and the connections to it
 * are one row ("a.example.test:80"), counted as connections, with the DNS
 * decision noted; a name that was only looked up is a row of its own
 * ("a.example.test"), counted as lookups. */
#ifndef SUMMARY_H
#define SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct audit_rec;
struct audit_stats;
struct summary;

struct summary *summary_new(void);
void summary_free(struct summary *s);

/* Counts one decision. A secret's leak attempt (r->secret) is counted
 * apart too, by where its placeholder was: "request" (a request to a host
 * not the secret's: its line, a header, the body), or in the name itself
 * ("dns" query, "sni", "connect" or "socks5" target, "host" header); the
 * placeholder in a name is written {NAME}, and no rule is suggested. */
void summary_add(struct summary *s, const struct audit_rec *r);

/* The run's secrets (policy/secret.h; NULL: none): the forms below list
 * each by name with the requests it was put into, per host, and its leak
 * attempts, and never hold a value or a placeholder. */
struct secrets;
void summary_set_secrets(struct summary *s, const struct secrets *sec);

/* Clients the proxy refused before any decision, and the limits. */
struct summary_refusals {
	uint64_t limit;	       /* at --max-conns */
	uint64_t per_process;  /* at --max-conns-per-process */
	uint64_t nofd;	       /* out of file descriptors */
	uint64_t closed_early; /* transparent connections closed before any data */
	int max_conns, max_conns_per_process;
};
void summary_set_refusals(struct summary *s, const struct summary_refusals *r);

/* The table: one line per destination, denied first; then the refusals
 * (when there were any); then, when the --log file misses lines (ls:
 * audit_get_stats(); NULL: no log), how many were lost to write errors
 * (which error, on which file) and how many dropped because its reader was
 * slow. */
void summary_print(const struct summary *s, FILE *f, bool audit_mode, const struct audit_stats *ls);

/* The same in other forms: markdown (a table for $GITHUB_STEP_SUMMARY;
 * names and commands escaped so they make no markdown of their own) and
 * JSON (schema SUMMARY_SCHEMA: allowed, denied, destinations[] with
 * destination, host, port, allowed, denied, would_deny, inspected (its
 * decisions on or inside inspected HTTPS), dns (a DNS
 * decision was made for it), dns_allowed, dns_denied, reason, suggest,
 * who[] of pid, comm and, for a container's, container; refused; log;
 * with secrets, secrets[] of name, used, used_at[] of host and requests,
 * used_other_hosts (past SECRET_USED_HOSTS), leaks, leak_attempts[] of
 * where, destination, count, who[] of pid and comm; secret_leaks_unlisted).
 * Schema 2: a name's lookups and its connections are one destination. */
#define SUMMARY_SCHEMA 2
enum summary_format {
	SUMMARY_TEXT = 0,
	SUMMARY_MARKDOWN = 1,
	SUMMARY_JSON = 2,
};
/* "text", "markdown" (or "md"), "json". Returns 0 or -EINVAL. */
int summary_format_parse(const char *s, enum summary_format *out);
void summary_write(const struct summary *s, FILE *f, enum summary_format fmt, bool audit_mode,
		   const struct audit_stats *ls);

/* summary_write() appended to path (created 0644 if missing, so that
 * $GITHUB_STEP_SUMMARY gains a section). Returns 0 or -errno. */
int summary_append_file(const struct summary *s, const char *path, enum summary_format fmt,
			bool audit_mode, const struct audit_stats *ls);

/* One destination's rule, for the suggested policy (suggest.c). */
struct summary_rule {
	const char *rule;	    /* the --allow rule that would permit it */
	uint64_t count;		    /* connections (lookups for a name only looked up) */
	uint64_t first_ms, last_ms; /* CLOCK_REALTIME, milliseconds */
	bool dns_only;		    /* a name looked up, never connected to */
	/* a secret's name: the destination's only denials were its leak
	 * attempts (a request to it carried the placeholder), and nothing
	 * else suggested a rule: for a human to review, never to allow */
	const char *leak;
};

/* Calls fn for each destination that has a rule (a name only looked up
 * is left out when another destination's rule names it), and for each
 * destination a request carried a secret's placeholder to, that nothing
 * else gave a rule (r->leak set; a name that carried the placeholder
 * itself is left out: no rule is worth a human's look). */
void summary_foreach_rule(const struct summary *s,
			  void (*fn)(void *arg, const struct summary_rule *r), void *arg);

#endif /* SUMMARY_H */
