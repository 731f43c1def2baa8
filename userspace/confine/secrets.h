// SPDX-License-Identifier: Apache-2.0
/* The secrets' values, read once at start (secrets.c). */
#ifndef CONFINE_SECRETS_H
#define CONFINE_SECRETS_H

#include <stddef.h>
#include <sys/types.h>

struct secrets;

/* One value, from its source (kind: policy/secret.h's enum secret_kind,
 * arg: what follows its colon): env:VAR from this process's environment,
 * then removed from it; file:/PATH; command: run by /bin/sh -c as the
 * invoking user; fd:N read to its end, then closed. A trailing newline
 * dropped. The length, or -errno with why said (never a byte of the
 * value); buf holds cap bytes and is the caller's to wipe. */
ssize_t secret_source_read(int kind, const char *arg, char *buf, size_t cap, char *why,
			   size_t whylen);

/* Reads the value of every secret of s as its source says into s. 0, or
 * -errno with errbuf naming the secret and why (never a byte of its
 * value). */
int target_secrets_load(struct secrets *s, char *errbuf, size_t errlen);

/* --secret-placeholders PATH: NAME=PLACEHOLDER a line, every secret of s
 * (placeholders only: 0644, replaced whole, a symlink refused). 0, or
 * -EINVAL with errbuf saying why. */
int target_secrets_write(const struct secrets *s, const char *path, char *errbuf, size_t errlen);

#endif /* CONFINE_SECRETS_H */
