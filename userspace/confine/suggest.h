// SPDX-License-Identifier: Apache-2.0
/* --suggest-policy FILE: the policy that allows what runs did, merged with
 * what FILE holds already, marking rather than allowing what needs a
 * human. The file is a policy (egressctl-policy(5)) with one more key,
 * "observed", which the policy loader accepts and ignores by design:
 *
 *   { "version": 1,
 *     "allow": [ "a.example.test", "tcp://git.example.test:22" ],
 *     "observed": {
 *       "about": "...", "widen_at": 3, "min_count": 2, "suffixes": "...",
 *       "rules":  { "a.example.test": { "count": 4, "runs": 2,
 *                     "first_seen": "2026-...Z", "last_seen": "..." }, ... },
 *       "review": { "x7q...k2.evil.test": [ "high-entropy label", "seen once" ] } } }
 *
 * observed.rules holds every narrow rule a run suggested (a name, a
 * host:port, tcp://host:port, an address), with counts summed and first
 * and last seen kept across runs. A rule goes to "allow" unless it needs a
 * human, then to observed.review with the reasons:
 *   - a label that looks like data sent out in DNS names
 *     (policy_label_suspect(): very long; letters and digits without a
 *     vowel; or, from POLICY_ENTROPY_MIN bytes, digits, consonant runs or
 *     entropy);
 *   - a loopback, private, link-local (cloud metadata), CGNAT, ULA or
 *     multicast address;
 *   - fewer than SUGGEST_MIN_COUNT uses over every run merged ("seen once");
 *   - a request to it carried a secret's placeholder, and nothing else of
 *     the destination suggested a rule (observed.rules' "secret_leak":
 *     the secret's name, kept across runs).
 * Names of one registrable domain (public suffix list, else the last two
 * labels) become "**.domain" when SUGGEST_WIDEN_AT or more of them are
 * allowed. What "allow" held before is kept (a human may have moved a
 * reviewed rule there), as is "deny". */
#ifndef SUGGEST_H
#define SUGGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

struct summary;
struct psl;

#define SUGGEST_WIDEN_AT  3 /* allowed names of one domain before "**.domain" */
#define SUGGEST_MIN_COUNT 2 /* uses, over the runs merged, before a rule is allowed */

/* The reasons rule needs a human at count uses, joined by ", " into buf;
 * false when it needs none. */
bool suggest_review(const char *rule, unsigned long long count, char *buf, size_t len);

/* What one run observed: { rule: { count, runs, first_seen, last_seen } }. */
json_t *suggest_observe(const struct summary *s);

/* The policy document from old (a policy file's parsed document, or NULL)
 * and fresh (suggest_observe()); psl NULL: the last two labels. */
json_t *suggest_build(const json_t *old, const json_t *fresh, const struct psl *psl);

/* Reads path if it exists (a policy the loader takes, or an error: it is
 * never overwritten then; empty, nothing to merge), builds, writes path
 * anew (a temporary file renamed over it). path "fd:N": descriptor N, a
 * regular file open for reading and writing (the service's run: the
 * user's client opened FILE), read from its start, then truncated and
 * written. fresh: suggest_observe() or what the daemon sent.
 * Uses the system's public suffix list when it has one. Returns 0 or
 * -errno with errbuf set. */
int suggest_write_file(const char *path, const json_t *fresh, char *errbuf, size_t errlen);

/* suggest_write_file() of s's observations. */
int summary_write_policy(const struct summary *s, const char *path, char *errbuf, size_t errlen);

/* The "allow" rules of a fresh build (no file merged), for `summary`'s
 * suggested_rules and for tests. Returns n, or -errno. */
int summary_policy_rules(const struct summary *s, char ***rules);

#endif /* SUGGEST_H */
