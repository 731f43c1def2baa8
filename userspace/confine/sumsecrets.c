// SPDX-License-Identifier: Apache-2.0
/* The summary's secrets (see sumsecrets.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "audit/audit.h"
#include "lib/jsonx.h"
#include "confine/sumsecrets.h"

/* in, with every secret's placeholder (or its random part, in any case)
 * written {NAME}, into out; whether there was one. */
bool
sumsec_redact(const struct secrets *sec, const char *in, char *out, size_t len)
{
	size_t o = 0;
	bool hit = false;

	while (*in && o + 1 < len) {
		size_t skip = 0;
		unsigned int i;

		for (i = 0; !skip && i < secrets_count(sec); i++) {
			const char *ph = secrets_placeholder(sec, i);
			size_t phlen = strlen(ph);
			const char *rnd = ph + phlen - SECRET_RAND_HEX;

			if (!strncasecmp(in, ph, phlen))
				skip = phlen;
			else if (!strncasecmp(in, rnd, SECRET_RAND_HEX))
				skip = SECRET_RAND_HEX;
		}
		if (skip) {
			int n = snprintf(out + o, len - o, "{%s}", secrets_name(sec, i - 1));

			o = n < 0 || (size_t)n >= len - o ? len - 1 : o + (size_t)n;
			in += skip;
			hit = true;
		} else {
			out[o++] = *in++;
		}
	}
	out[o] = 0;
	return hit;
}

/* Counts a leak attempt of r->secret; where: what carried the placeholder. */
void
sumsec_note_leak(struct sum_secrets *ss, const struct audit_rec *r, const char *dest, bool in_name)
{
	static const char *const name_where[][2] = {
		{"dns", "dns"},
		{"transparent", "sni"},
		{"connect", "connect"},
		{"socks5", "socks5"},
	};
	const char *where = in_name ? "host" : "request";
	struct leak *l = NULL;

	for (size_t i = 0; in_name && i < sizeof(name_where) / sizeof(name_where[0]); i++)
		if (!strcmp(r->source, name_where[i][0]))
			where = name_where[i][1];
	for (int i = 0; !l && i < ss->nleak; i++)
		if (!strcmp(ss->leak[i].secret, r->secret) && ss->leak[i].where == where &&
		    !strcmp(ss->leak[i].dest, dest))
			l = &ss->leak[i];
	if (!l && ss->nleak == SUM_LEAKS) {
		ss->unlisted++;
		return;
	}
	if (!l) {
		l = &ss->leak[ss->nleak++];
		snprintf(l->secret, sizeof(l->secret), "%s", r->secret);
		l->where = where;
		snprintf(l->dest, sizeof(l->dest), "%s", dest);
	}
	l->n++;
	for (int i = 0; i < l->nwho; i++)
		if (l->who[i].pid == r->pid)
			return;
	if (l->nwho < SUM_WHO) {
		l->who[l->nwho].pid = r->pid;
		snprintf(l->who[l->nwho].comm, sizeof(l->who[0].comm), "%s",
			 r->comm ? r->comm : "?");
		l->nwho++;
	}
}

static void
leak_who(const struct leak *l, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; i < l->nwho && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s[%u]", i ? ", " : "", l->who[i].comm,
				      l->who[i].pid);
}

/* "secret TOK: put into 3 requests, 2 attempts to send it elsewhere denied",
 * then a line per host it went to and per leak attempt's place. */
void
sumsec_print(const struct sum_secrets *ss, FILE *f)
{
	const struct secrets *sec = ss->sec;

	for (unsigned int i = 0; i < secrets_count(sec); i++) {
		const char *name = secrets_name(sec, i), *host;
		uint64_t used, leaks, n;

		secrets_counts(sec, i, &used, &leaks);
		fprintf(f,
			"secret %s: put into %llu request%s, %llu attempt%s to send it elsewhere "
			"denied\n",
			name, (unsigned long long)used, used == 1 ? "" : "s",
			(unsigned long long)leaks, leaks == 1 ? "" : "s");
		for (unsigned int k = 0; secrets_used_at(sec, i, k, &host, &n); k++)
			fprintf(f, "  secret %s: %llu request%s to %s\n", name,
				(unsigned long long)n, n == 1 ? "" : "s",
				host ? host : "other hosts");
		for (int k = 0; k < ss->nleak; k++) {
			const struct leak *l = &ss->leak[k];
			char who[160];

			if (strcmp(l->secret, name))
				continue;
			leak_who(l, who, sizeof(who));
			fprintf(f, "  secret %s: leak attempt%s denied %llu: %s %s by %s\n", name,
				l->n == 1 ? "" : "s", (unsigned long long)l->n, l->where, l->dest,
				who);
		}
	}
	if (ss->unlisted)
		fprintf(f, "  (%llu more leak attempts, past %d places)\n",
			(unsigned long long)ss->unlisted, SUM_LEAKS);
}

void
sumsec_print_md(const struct sum_secrets *ss, FILE *f)
{
	const struct secrets *sec = ss->sec;

	if (!secrets_count(sec))
		return;
	fprintf(f, "\n#### Secrets\n\n");
	for (unsigned int i = 0; i < secrets_count(sec); i++) {
		const char *name = secrets_name(sec, i), *host;
		uint64_t used, leaks, n;

		secrets_counts(sec, i, &used, &leaks);
		fprintf(f, "- **");
		summary_md_cell(f, name);
		fprintf(f, "**: put into %llu request%s", (unsigned long long)used,
			used == 1 ? "" : "s");
		for (unsigned int k = 0; secrets_used_at(sec, i, k, &host, &n); k++) {
			fprintf(f, "%s", k ? ", " : " (");
			summary_md_cell(f, host ? host : "other hosts");
			fprintf(f, ": %llu", (unsigned long long)n);
		}
		fprintf(f, "%s; %llu leak attempt%s denied\n", used ? ")" : "",
			(unsigned long long)leaks, leaks == 1 ? "" : "s");
		for (int k = 0; k < ss->nleak; k++) {
			const struct leak *l = &ss->leak[k];
			char who[160];

			if (strcmp(l->secret, name))
				continue;
			leak_who(l, who, sizeof(who));
			fprintf(f, "  - %s ", l->where);
			summary_md_cell(f, l->dest);
			fprintf(f, ": %llu, by ", (unsigned long long)l->n);
			summary_md_cell(f, who);
			fprintf(f, "\n");
		}
	}
	if (ss->unlisted)
		fprintf(f, "- %llu more leak attempts, past %d places\n",
			(unsigned long long)ss->unlisted, SUM_LEAKS);
}

/* "secrets": [{name, used, used_at[] of host and requests, used_other_hosts,
 * leaks, leak_attempts[] of where, destination, count, who[] of pid and
 * comm}] */
void
sumsec_json(const struct sum_secrets *ss, json_t *o)
{
	const struct secrets *sec = ss->sec;
	json_t *arr;

	if (!secrets_count(sec))
		return;
	arr = jsonx_add_array(o, "secrets");
	for (unsigned int i = 0; arr && i < secrets_count(sec); i++) {
		const char *name = secrets_name(sec, i), *host;
		json_t *e = json_object(), *at, *la;
		uint64_t used, leaks, n;

		if (!e)
			break;
		secrets_counts(sec, i, &used, &leaks);
		jsonx_set_str(e, "name", name);
		jsonx_set_int(e, "used", (long long)used);
		at = jsonx_add_array(e, "used_at");
		for (unsigned int k = 0; at && secrets_used_at(sec, i, k, &host, &n); k++) {
			json_t *h;

			if (!host) {
				jsonx_set_int(e, "used_other_hosts", (long long)n);
				continue;
			}
			h = json_object();
			if (!h)
				break;
			jsonx_set_str(h, "host", host);
			jsonx_set_int(h, "requests", (long long)n);
			json_array_append_new(at, h);
		}
		jsonx_set_int(e, "leaks", (long long)leaks);
		la = jsonx_add_array(e, "leak_attempts");
		for (int k = 0; la && k < ss->nleak; k++) {
			const struct leak *l = &ss->leak[k];
			json_t *a, *who;

			if (strcmp(l->secret, name) || !(a = json_object()))
				continue;
			jsonx_set_str(a, "where", l->where);
			jsonx_set_str(a, "destination", l->dest);
			jsonx_set_int(a, "count", (long long)l->n);
			who = jsonx_add_array(a, "who");
			for (int w = 0; who && w < l->nwho; w++) {
				json_t *wo = json_object();

				if (!wo)
					break;
				jsonx_set_int(wo, "pid", l->who[w].pid);
				jsonx_set_str(wo, "comm", l->who[w].comm);
				json_array_append_new(who, wo);
			}
			json_array_append_new(la, a);
		}
		json_array_append_new(arr, e);
	}
	if (ss->unlisted)
		jsonx_set_int(o, "secret_leaks_unlisted", (long long)ss->unlisted);
}
