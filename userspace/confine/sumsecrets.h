// SPDX-License-Identifier: Apache-2.0
/* The summary's secrets (summary.h): per secret, by name, the requests it
 * was put into per host (the store's counts, policy/secret.h), and its
 * leak attempts by place, destination and who; in text, markdown and JSON.
 * Never a value, never a placeholder: one in a name is written {NAME}.
 * Private to summary.c. */
#ifndef SUMSECRETS_H
#define SUMSECRETS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "policy/secret.h"

struct audit_rec;

#define SUM_WHO	  4
#define SUM_LEAKS 64 /* rows of leak attempts (secret, where, destination) */

/* A secret's placeholder sent where it may not go: one row per secret,
 * place and destination (the placeholder in it replaced by {NAME}). */
struct leak {
	char secret[SECRET_NAME_MAX + 1];
	const char *where; /* "request", "dns", "sni", "connect", "socks5", "host" */
	char dest[320];
	uint64_t n;
	int nwho;
	struct {
		uint32_t pid;
		char comm[17];
	} who[SUM_WHO];
};

struct sum_secrets {
	const struct secrets *sec; /* names, placeholders (to hide), uses per host */
	struct leak leak[SUM_LEAKS];
	int nleak;
	uint64_t unlisted; /* attempts past SUM_LEAKS rows */
};

/* in, with every secret's placeholder (or its random part, in any case)
 * written {NAME}, into out; whether there was one. */
bool sumsec_redact(const struct secrets *sec, const char *in, char *out, size_t len);
/* Counts a leak attempt of r->secret at dest (written without the
 * placeholder); in_name: the name itself carried it. */
void sumsec_note_leak(struct sum_secrets *ss, const struct audit_rec *r, const char *dest,
		      bool in_name);
void sumsec_print(const struct sum_secrets *ss, FILE *f);
void sumsec_print_md(const struct sum_secrets *ss, FILE *f);
/* o["secrets"] (summary.h's fields), when there are secrets */
void sumsec_json(const struct sum_secrets *ss, json_t *o);

/* A markdown table cell or list item of untrusted words (summary.c). */
void summary_md_cell(FILE *f, const char *s);

#endif /* SUMSECRETS_H */
