// SPDX-License-Identifier: Apache-2.0
/* Secrets CMD never holds (docs/inspection.md "Secrets"): the policy's
 * "secrets" and --secret NAME=SOURCE@HOST[,HOST] (their definitions, kept
 * in the policy: what they are read from and the hosts they may go to),
 * and the run's store of them (struct secrets): each secret's value, read
 * once at start (confine/secrets.c), in a page of its own that no core
 * dump and no child process gets and that is wiped when freed; the
 * placeholder CMD gets instead, random per run; what finds a placeholder
 * in bytes (a name, a request head, a body streamed in pieces) and what
 * swaps it for the value in a request head for one of the secret's hosts.
 * No I/O. */
#ifndef POLICY_SECRET_H
#define POLICY_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

#define SECRET_MAX	 32   /* secrets in a policy */
#define SECRET_MAX_HOSTS 16   /* hosts of one secret */
#define SECRET_NAME_MAX	 64   /* an environment variable's name */
#define SECRET_FROM_MAX	 1024 /* "env:VAR", "file:/PATH", "command:CMDLINE", "fd:N" */
#define SECRET_VALUE_MAX 8192 /* a value's bytes */
#define SECRET_RAND_HEX	 32   /* the random part of a placeholder: 128 bits */
/* "EGRESSCTL_SECRET_" NAME "_" and the random hex */
#define SECRET_PH_PREFIX "EGRESSCTL_SECRET_"
#define SECRET_PH_MAX	 (sizeof(SECRET_PH_PREFIX) + SECRET_NAME_MAX + 1 + SECRET_RAND_HEX + 1)

enum secret_kind {
	SECRET_ENV = 0,	 /* env:VAR, egressctl's environment */
	SECRET_FILE = 1, /* file:/PATH */
	SECRET_CMD = 2,	 /* command:CMDLINE, run by /bin/sh -c as the invoking user */
	SECRET_FD = 3,	 /* fd:N, read from descriptor N (the service's run: the
			  * value its client read as the user) */
};

/* One definition, as the policy holds it. */
struct policy_secret {
	char *name; /* the variable CMD gets the placeholder in */
	enum secret_kind kind;
	char *from;   /* as written: "env:VAR" ... */
	char *arg;    /* what follows the kind's colon, in from */
	char **hosts; /* normalised: "x", "*.x" (under x), "**.x" (x and under) */
	unsigned int nhosts;
	const char *source; /* "--secret", a file's name; not owned */
};

/* Adds a secret to p. name: [A-Za-z_][A-Za-z0-9_]* (at most
 * SECRET_NAME_MAX bytes), once per policy; from: env:VAR, file:/ABSOLUTE,
 * command:CMDLINE or fd:N; hosts: 1 to SECRET_MAX_HOSTS names, "*.name" or
 * "**.name" (no '?', no port). -EINVAL with errbuf saying why (no prefix:
 * the caller adds where), -ENOMEM; 0. */
int policy_add_secret(struct policy *p, const char *name, const char *from,
		      const char *const *hosts, size_t nhosts, const char *source, char *errbuf,
		      size_t errlen);

/* The source of p's secret called name becomes from (as policy_add_secret
 * takes it; its hosts and where it was defined stay): a run the service
 * starts takes a policy file's secrets from values its client read.
 * -ENOENT when p has no such secret, -EINVAL (errbuf says why), 0. */
int policy_secret_set_from(struct policy *p, const char *name, const char *from, char *errbuf,
			   size_t errlen);

/* --secret NAME=SOURCE@HOST[,HOST...] (the last '@' ends SOURCE). */
int policy_add_secret_arg(struct policy *p, const char *arg, char *errbuf, size_t errlen);

/* The parts of such an argument, in it: NAME is its first name_len bytes,
 * SOURCE from_len bytes at from, '@' after it. 0, or -EINVAL when it has
 * not that shape. */
int secret_arg_split(const char *arg, size_t *name_len, const char **from, size_t *from_len);

/* SOURCE's kind, and where what follows the kind's colon starts; -EINVAL
 * with errbuf saying why (no prefix: the caller adds where). */
int secret_from_parse(const char *from, enum secret_kind *kind, size_t *argoff, char *errbuf,
		      size_t errlen);

/* "env:", "file:", "command:", "fd:". */
const char *secret_kind_prefix(enum secret_kind kind);

unsigned int policy_secret_count(const struct policy *p);
const struct policy_secret *policy_secret_at(const struct policy *p, unsigned int i);

/* Is host (any case, a trailing dot ignored) one of s's hosts? */
bool policy_secret_host(const struct policy_secret *s, const char *host);

/* Is host one of some secret's hosts (then its TLS is inspected)? */
bool policy_secret_any_host(const struct policy *p, const char *host);

/* ---- the run's store ---- */

struct secrets;

/* A store for p's secrets: names, hosts and placeholders copied, random
 * (getrandom) per call; no values yet. NULL with errno set (ENOMEM, or
 * what getrandom said). */
struct secrets *secrets_new(const struct policy *p);
/* Wipes the values, unmaps them. NULL-safe. */
void secrets_free(struct secrets *s);

unsigned int secrets_count(const struct secrets *s);
const char *secrets_name(const struct secrets *s, unsigned int i);
enum secret_kind secrets_kind(const struct secrets *s, unsigned int i);
const char *secrets_arg(const struct secrets *s, unsigned int i);
const char *secrets_placeholder(const struct secrets *s, unsigned int i);
/* Is host one of secret i's hosts? */
bool secrets_host(const struct secrets *s, unsigned int i, const char *host);
/* Is host one of any secret's hosts? */
bool secrets_any_host(const struct secrets *s, const char *host);

/* The index of the secret named name; -1 when there is none. */
int secrets_index(const struct secrets *s, const char *name);

/* Appends "NAME: PREFIXVALUE\r\n" (secret i's value) to out, which has
 * room for *off + the line's bytes (secrets_line_len()). false when i
 * has no value. A header hook's line (proxy/http_hook.c): wipe out. */
size_t secrets_line_len(const struct secrets *s, unsigned int i, const char *name,
			const char *prefix);
bool secrets_put_line(const struct secrets *s, unsigned int i, const char *name, const char *prefix,
		      char *out, size_t *off);

/* Sets secret i's value (len bytes, copied into its page; the caller
 * wipes its own copy). A value is 1 to SECRET_VALUE_MAX bytes, visible
 * ASCII, blanks and bytes >= 0x80, nothing that could end a header line
 * (CR, LF, NUL, other control bytes): -EINVAL; -ENOMEM; 0. */
int secrets_set_value(struct secrets *s, unsigned int i, const char *v, size_t len);
bool secrets_has_value(const struct secrets *s, unsigned int i);

/* A scan of bytes that come in pieces: the placeholders' random parts,
 * any case, found across the pieces' boundaries. Zero it to start. */
struct secrets_scan {
	char win[SECRET_RAND_HEX]; /* the last hex digits seen, lower-cased, a ring */
	uint32_t run;		   /* hex digits in a row, up to the last byte */
};

/* Feeds len bytes: the index of the first secret whose placeholder they
 * (with the bytes fed before) complete, but for secrets whose hosts
 * include host (NULL: none is skipped); -1 when none. */
int secrets_scan_feed(const struct secrets *s, struct secrets_scan *st, const char *host,
		      const void *buf, size_t len);

/* secrets_scan_feed() of one piece. */
int secrets_find(const struct secrets *s, const char *host, const void *buf, size_t len);

/* A request head (malloc'd, *len bytes, its first line the request line)
 * for host: every placeholder, exactly as CMD was given it, of a secret
 * whose hosts include host in a header line is replaced by the value. The
 * result is a new buffer (the old one wiped and freed) or head itself when
 * nothing was replaced; NULL when out of memory (head freed, wiped). The
 * secrets replaced are or'ed into *used (bit i). Wipe the result before
 * freeing it: secrets_wipe_free(). */
char *secrets_substitute(const struct secrets *s, const char *host, char *head, size_t *len,
			 uint64_t *used);

/* secrets_substitute() over all of body (malloc'd, *len bytes): a request
 * body of a text type to host. */
char *secrets_substitute_body(const struct secrets *s, const char *host, char *body, size_t *len,
			      uint64_t *used);

/* Has some secret whose hosts include host a value (then a request body
 * to host is worth holding for secrets_substitute_body())? */
bool secrets_any_value_for(const struct secrets *s, const char *host);

/* explicit_bzero, then free. */
void secrets_wipe_free(void *p, size_t len);

/* What the summary says (names only): per secret, requests it was put
 * into, and attempts to send its placeholder elsewhere. */
void secrets_note(struct secrets *s, unsigned int i, bool leak);
void secrets_counts(const struct secrets *s, unsigned int i, uint64_t *used, uint64_t *leaks);
/* A request to host got secret i's value: counted (secrets_note(), not
 * leak) and per host, for the first SECRET_USED_HOSTS hosts; the rest
 * together. */
#define SECRET_USED_HOSTS 16
void secrets_note_used(struct secrets *s, unsigned int i, const char *host);
/* The k-th (from 0) host secret i went to and its requests; host NULL for
 * the rest together (the last). false past the end. */
bool secrets_used_at(const struct secrets *s, unsigned int i, unsigned int k, const char **host,
		     uint64_t *n);

#endif /* POLICY_SECRET_H */
