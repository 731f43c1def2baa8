// SPDX-License-Identifier: Apache-2.0
/* The public suffix list (publicsuffix.org; Debian's package publicsuffix:
 * /usr/share/publicsuffix/public_suffix_list.dat): which part of a host
 * name is a registry's ("co.uk", "github.io") and so which part one owner
 * holds (the registrable domain, "example.co.uk"). --suggest-policy uses it
 * to decide what "**.domain" may widen to. The file is read at run time,
 * from outside the project: it is parsed as untrusted bytes (fuzzed:
 * tests/fuzz/fuzz_psl.c). Pure: no I/O but psl_load(). */
#ifndef PSL_H
#define PSL_H

#include <stddef.h>

#define PSL_DEFAULT_PATH "/usr/share/publicsuffix/public_suffix_list.dat"
#define PSL_MAX_RULES	 200000 /* more rules than this are not read */
#define PSL_MAX_RULE	 253	/* a longer rule is skipped */

struct psl;

/* The rules of a list in the file's format: one rule per line, its first
 * word; "//" comments and empty lines skipped; "*.x" a wildcard, "!x" an
 * exception. Rules with bytes outside [a-z0-9.-] after lower-casing (the
 * file's Unicode rules: host names here are ASCII, IDNs in punycode) or an
 * empty label are skipped and counted. NULL only when out of memory. */
struct psl *psl_parse(const char *buf, size_t len);

/* psl_parse() of a file of at most 16 MiB. NULL with errbuf set. */
struct psl *psl_load(const char *path, char *errbuf, size_t errlen);

void psl_free(struct psl *p);

/* Rules read, and rules skipped. */
size_t psl_rules(const struct psl *p);
size_t psl_skipped(const struct psl *p);

/* The public suffix of host (lower-case ASCII, no trailing dot) by the
 * list's algorithm: the longest matching rule, an exception rule before
 * any, "*" (the last label) when none matches. Returns a pointer into
 * host, or NULL for an empty name or one with an empty label. */
const char *psl_suffix(const struct psl *p, const char *host);

/* The registrable domain: the public suffix and one label more. NULL when
 * host is a public suffix itself (or malformed). A pointer into host. */
const char *psl_registrable(const struct psl *p, const char *host);

#endif /* PSL_H */
