/* What a run tried, gathered from every decision (audit.c's sink): counts
 * per destination, who tried the denied ones, and the rule that would let
 * each through. At exit: the table on stderr, and with --suggest-policy
 * the smallest sensible policy that allows everything the run did. */
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

/* Counts one decision. */
void summary_add(struct summary *s, const struct audit_rec *r);

/* Clients the proxy refused before any decision, and the limits. */
struct summary_refusals {
	uint64_t limit;	      /* at --max-conns */
	uint64_t per_process; /* at --max-conns-per-process */
	uint64_t nofd;	      /* out of file descriptors */
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
 * destination, allowed, denied, would_deny, dns, reason, suggest, who[]
 * of pid, comm and, for a container's, container; refused; log). */
#define SUMMARY_SCHEMA 1
enum summary_format {
	SUMMARY_TEXT = 0,
	SUMMARY_MARKDOWN = 1,
	SUMMARY_JSON = 2,
};
/* "text", "markdown" (or "md"), "json". Returns 0 or -EINVAL. */
int summary_format_parse(const char *s, enum summary_format *out);
void summary_write(const struct summary *s, FILE *f, enum summary_format fmt, bool audit_mode,
		   const struct audit_stats *ls);

/* Writes the suggested policy as JSON (the schema --policy reads): every
 * allowed and denied destination's rule, hostnames rather than addresses
 * where a name was known, "**.domain" where several names under one
 * registrable domain were used, tcp:// for plain TCP. Returns 0 or -errno. */
int summary_write_policy(const struct summary *s, const char *path);

/* The rules summary_write_policy() would write, one per line (for tests). */
int summary_policy_rules(const struct summary *s, char ***rules);

#endif /* SUMMARY_H */
