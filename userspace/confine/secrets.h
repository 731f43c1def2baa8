// SPDX-License-Identifier: Apache-2.0
/* The secrets' values, read once at start (secrets.c). */
#ifndef CONFINE_SECRETS_H
#define CONFINE_SECRETS_H

#include <stddef.h>

struct secrets;

/* Reads the value of every secret of s as its source says (env:VAR from
 * egressctl's environment, then removed from it; file:/PATH; command:
 * run by /bin/sh -c as the invoking user) into s. 0, or -errno with
 * errbuf naming the secret and why (never a byte of its value). */
int target_secrets_load(struct secrets *s, char *errbuf, size_t errlen);

/* --secret-placeholders PATH: NAME=PLACEHOLDER a line, every secret of s
 * (placeholders only: 0644, replaced whole, a symlink refused). 0, or
 * -EINVAL with errbuf saying why. */
int target_secrets_write(const struct secrets *s, const char *path, char *errbuf, size_t errlen);

#endif /* CONFINE_SECRETS_H */
