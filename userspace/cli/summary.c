/* What a run tried (see summary.h). Destinations are few (hundreds), so a
 * small chained hash keyed by the destination's words is plenty; the
 * suggested policy is built from the rules each decision said would allow
 * it (audit_rec.suggest), with host names folded into "**.domain" where
 * several names under one registrable domain were used. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <cJSON.h>

#include "policy/audit.h"
#include "lib/hash.h"
#include "policy/policy.h"
#include "cli/summary.h"

#define SUM_BUCKETS 256
#define SUM_WHO	    4

struct dest {
	struct dest *next;  /* hash chain */
	struct dest *order; /* insertion order */
	char key[320];
	char suggest[320];
	char reason[160];
	uint64_t allowed, denied;
	bool would; /* denials were audit-mode would-denies */
	bool dns;   /* a name the DNS responder was asked for */
	int nwho;
	struct {
		uint32_t pid;
		char comm[17];
		char ctr[13]; /* the container (its id's first 12 digits), or "" */
	} who[SUM_WHO];
};

struct summary {
	struct dest *bucket[SUM_BUCKETS];
	struct dest *first, *last;
	int ndest;
	uint64_t allowed, denied;
	struct summary_refusals refused;
};

static uint32_t
hash_key(const char *s)
{
	return fnv1a_str(FNV1A_BASIS, s) % SUM_BUCKETS;
}

struct summary *
summary_new(void)
{
	return calloc(1, sizeof(struct summary));
}

void
summary_free(struct summary *s)
{
	struct dest *d, *n;

	if (!s)
		return;
	for (d = s->first; d; d = n) {
		n = d->order;
		free(d);
	}
	free(s);
}

void
summary_add(struct summary *s, const struct audit_rec *r)
{
	bool allow = !strcmp(r->decision, "allow");
	const char *key = r->dest ? r->dest : r->host ? r->host : "?";
	struct dest *d;
	uint32_t h;

	if (!s)
		return;
	h = hash_key(key);
	for (d = s->bucket[h]; d; d = d->next)
		if (!strcmp(d->key, key))
			break;
	if (!d) {
		if (s->ndest >= 4096)
			return; /* bounded: a scanner does not get to fill memory */
		d = calloc(1, sizeof(*d));
		if (!d)
			return;
		snprintf(d->key, sizeof(d->key), "%s", key);
		d->next = s->bucket[h];
		s->bucket[h] = d;
		if (s->last)
			s->last->order = d;
		else
			s->first = d;
		s->last = d;
		s->ndest++;
	}
	if (r->suggest && !d->suggest[0])
		snprintf(d->suggest, sizeof(d->suggest), "%s", r->suggest);
	if (!strcmp(r->source, "dns"))
		d->dns = true;
	if (allow) {
		d->allowed++;
		s->allowed++;
		return;
	}
	d->denied++;
	s->denied++;
	d->would = !strcmp(r->decision, "would-deny");
	snprintf(d->reason, sizeof(d->reason), "%s", r->reason ? r->reason : "");
	for (int i = 0; i < d->nwho; i++)
		if (d->who[i].pid == r->pid)
			return;
	if (d->nwho < SUM_WHO) {
		d->who[d->nwho].pid = r->pid;
		snprintf(d->who[d->nwho].comm, sizeof(d->who[0].comm), "%s",
			 r->comm ? r->comm : "?");
		snprintf(d->who[d->nwho].ctr, sizeof(d->who[0].ctr), "%s",
			 r->container ? r->container : "");
		d->nwho++;
	}
}

/* What became of the --log lines that are not in the file: a slow reader
 * and a failing disk are told apart, each with its own count. */
static void
print_log_stats(FILE *f, const struct audit_stats *ls)
{
	if (!ls)
		return;
	if (ls->lost)
		fprintf(f, "egressctl: %llu log line%s lost: write error %s (%s) on %s%s\n",
			(unsigned long long)ls->lost, ls->lost == 1 ? "" : "s",
			strerrorname_np(ls->last_err) ? strerrorname_np(ls->last_err) : "?",
			strerror(ls->last_err), ls->path ? ls->path : "the log",
			ls->failing ? "" : " (writing resumed)");
	else if (ls->last_err)
		fprintf(f,
			"egressctl: no log line lost: writes to %s failed (%s) and were retried\n",
			ls->path ? ls->path : "the log",
			strerrorname_np(ls->last_err) ? strerrorname_np(ls->last_err) : "?");
	if (ls->dropped)
		fprintf(f, "egressctl: the log's reader was too slow: %llu lines dropped\n",
			(unsigned long long)ls->dropped);
}

void
summary_set_refusals(struct summary *s, const struct summary_refusals *r)
{
	if (s)
		s->refused = *r;
}

/* "egressctl: proxy refused 5 connections: 3 at --max-conns 2, ..." */
static void
print_refusals(const struct summary_refusals *r, FILE *f)
{
	const char *sep = "";

	if (!r->limit && !r->per_process && !r->nofd)
		return;
	fprintf(f, "egressctl: the proxy refused %" PRIu64 " connection%s: ",
		r->limit + r->per_process + r->nofd,
		r->limit + r->per_process + r->nofd == 1 ? "" : "s");
	if (r->limit) {
		fprintf(f, "%" PRIu64 " at the limit (--max-conns %d)", r->limit, r->max_conns);
		sep = ", ";
	}
	if (r->per_process) {
		fprintf(f,
			"%s%" PRIu64 " over the limit of one process (--max-conns-per-process %d)",
			sep, r->per_process, r->max_conns_per_process);
		sep = ", ";
	}
	if (r->nofd)
		fprintf(f, "%s%" PRIu64 " out of file descriptors", sep, r->nofd);
	fprintf(f, "\n");
}

void
summary_print(const struct summary *s, FILE *f, bool audit_mode, const struct audit_stats *ls)
{
	const char *denied_word = audit_mode ? "would deny" : "denied";

	if (!s || (!s->allowed && !s->denied)) {
		if (s && (s->refused.limit || s->refused.per_process || s->refused.nofd))
			print_refusals(&s->refused, f); /* attempts, refused before any decision */
		else
			fprintf(f, "egressctl: summary: no network attempts\n");
		print_log_stats(f, ls);
		return;
	}
	fprintf(f, "egressctl: summary: %llu allowed, %llu %s, %d destinations\n",
		(unsigned long long)s->allowed, (unsigned long long)s->denied, denied_word,
		s->ndest);
	/* denied first: they are what the user has to act on */
	for (int pass = 0; pass < 2; pass++) {
		for (const struct dest *d = s->first; d; d = d->order) {
			char who[160] = "";
			size_t n = 0;

			if (pass == 0 ? !d->denied : !!d->denied)
				continue;
			for (int i = 0; i < d->nwho && n < sizeof(who); i++)
				n += (size_t)snprintf(who + n, sizeof(who) - n, "%s%s[%u]%s%s",
						      i ? ", " : "", d->who[i].comm, d->who[i].pid,
						      d->who[i].ctr[0] ? "@" : "", d->who[i].ctr);
			if (pass == 0)
				fprintf(f, "  %-10s %5llu  %-36s %s  %s%s%s\n", denied_word,
					(unsigned long long)d->denied, d->key, who,
					d->suggest[0] ? "--allow " : "(",
					d->suggest[0] ? d->suggest : d->reason,
					d->suggest[0] ? "" : ")");
			else
				fprintf(f, "  %-10s %5llu  %s\n", "allowed",
					(unsigned long long)d->allowed, d->key);
		}
	}
	print_refusals(&s->refused, f);
	print_log_stats(f, ls);
}

/* Does a rule other than a DNS name's own name host (host, host:port,
 * tcp://host:port)? Then the name needs no rule of its own: any rule that
 * names it lets the responder answer it. */
static bool
covered(const struct summary *s, const struct dest *dd)
{
	size_t n = strlen(dd->suggest);

	for (const struct dest *o = s->first; o; o = o->order) {
		const char *r = o->suggest;

		if (o == dd || o->dns || !r[0])
			continue;
		if (!strncmp(r, "tcp://", 6))
			r += 6;
		if (!strncmp(r, dd->suggest, n) && (r[n] == 0 || r[n] == ':'))
			return true;
	}
	return false;
}

/* The registrable domain of a host name, by the common shape of public
 * suffixes: the last two labels, or three where the second-level label is
 * a generic one under a two-letter country code (example.co.uk). Without a
 * public suffix list this is a heuristic, and it only ever widens a rule
 * to names the run itself used several of. */
static const char *
registrable(const char *host)
{
	const char *p = host + strlen(host), *labels[3] = {NULL, NULL, NULL};
	int n = 0;

	while (p > host && n < 3) {
		p--;
		if (*p == '.' || p == host)
			labels[n++] = *p == '.' ? p + 1 : p;
	}
	if (n < 2)
		return NULL;
	if (n == 3 && strlen(labels[0]) == 2) {
		static const char *const generic[] = {"co.", "com.", "org.", "net.",
						      "ac.", "gov.", "edu."};

		for (size_t i = 0; i < sizeof(generic) / sizeof(generic[0]); i++)
			if (!strncmp(labels[1], generic[i], strlen(generic[i])))
				return labels[2];
	}
	return labels[1];
}

static bool
is_plain_host(const char *r)
{
	if (!strncmp(r, "tcp://", 6) || r[0] == '[' || strchr(r, ':') || strchr(r, '/'))
		return false;
	for (const char *p = r; *p; p++)
		if ((*p < '0' || *p > '9') && *p != '.')
			return true;
	return false; /* an address */
}

static int
add_unique(char ***list, int *n, const char *rule)
{
	char **nl;

	for (int i = 0; i < *n; i++)
		if (!strcmp((*list)[i], rule))
			return 0;
	nl = realloc(*list, sizeof(*nl) * (size_t)(*n + 1));
	if (!nl)
		return -ENOMEM;
	*list = nl;
	nl[*n] = strdup(rule);
	if (!nl[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
summary_policy_rules(const struct summary *s, char ***rules)
{
	char **out = NULL;
	int n = 0, err = 0;

	*rules = NULL;
	for (const struct dest *d = s->first; d && !err; d = d->order) {
		const char *dom;
		char wild[300];
		int same = 0;

		if (!d->suggest[0] || (d->dns && covered(s, d)))
			continue;
		if (!is_plain_host(d->suggest) || !(dom = registrable(d->suggest))) {
			err = add_unique(&out, &n, d->suggest);
			continue;
		}
		/* several names under one registrable domain: one "**." rule */
		for (const struct dest *o = s->first; o && !same; o = o->order)
			if (o->suggest[0] && is_plain_host(o->suggest) && registrable(o->suggest) &&
			    !strcmp(registrable(o->suggest), dom) && strcmp(o->suggest, d->suggest))
				same = 1;
		if (same) {
			snprintf(wild, sizeof(wild), "**.%s", dom);
			err = add_unique(&out, &n, wild);
		} else {
			err = add_unique(&out, &n, d->suggest);
		}
	}
	if (err) {
		for (int i = 0; i < n; i++)
			free(out[i]);
		free(out);
		return err;
	}
	if (n)
		qsort(out, (size_t)n, sizeof(*out), cmp_str);
	*rules = out;
	return n;
}

int
summary_write_policy(const struct summary *s, const char *path)
{
	char **rules;
	int n, err;

	n = summary_policy_rules(s, &rules);
	if (n < 0)
		return n;
	err = config_write_file(path, (const char *const *)rules, n);
	for (int i = 0; i < n; i++)
		free(rules[i]);
	free(rules);
	return err;
}

/* A table cell: names and commands come from CMD, so nothing in them may
 * make markdown (or the HTML it allows) of its own. */
static void
md_cell(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '|' || c == '<' || c == '>' || c == '&')
			fprintf(f, "&#%u;", c);
		else if (strchr("\\`*_[]()#!~", c))
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			fputc('?', f);
		else
			fputc(c, f);
	}
}

static void
who_text(const struct dest *d, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; i < d->nwho && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s[%u]%s%s", i ? ", " : "",
				      d->who[i].comm, d->who[i].pid, d->who[i].ctr[0] ? "@" : "",
				      d->who[i].ctr);
}

static void
print_markdown(const struct summary *s, FILE *f, bool audit_mode)
{
	const char *denied_word = audit_mode ? "would deny" : "denied";

	fprintf(f, "### egressctl: %llu allowed, %llu %s, %d destination%s\n\n",
		(unsigned long long)s->allowed, (unsigned long long)s->denied, denied_word,
		s->ndest, s->ndest == 1 ? "" : "s");
	if (!s->ndest) {
		fprintf(f, "No network attempts.\n");
		return;
	}
	fprintf(f, "| decision | count | destination | commands | rule that would allow it |\n"
		   "|---|---:|---|---|---|\n");
	for (int pass = 0; pass < 2; pass++)
		for (const struct dest *d = s->first; d; d = d->order) {
			char who[160];

			if (pass == 0 ? !d->denied : !!d->denied)
				continue;
			who_text(d, who, sizeof(who));
			fprintf(f, "| %s | %llu | ", pass ? "allowed" : denied_word,
				(unsigned long long)(pass ? d->allowed : d->denied));
			md_cell(f, d->key);
			fprintf(f, " | ");
			md_cell(f, who);
			fprintf(f, " | ");
			if (pass == 0 && d->suggest[0]) {
				fprintf(f, "--allow ");
				md_cell(f, d->suggest);
			} else if (pass == 0) {
				md_cell(f, d->reason);
			}
			fprintf(f, " |\n");
		}
}

static void
print_json(const struct summary *s, FILE *f, bool audit_mode, const struct audit_stats *ls)
{
	cJSON *o = cJSON_CreateObject(), *ds, *r;
	char *out;

	if (!o)
		return;
	cJSON_AddNumberToObject(o, "schema", SUMMARY_SCHEMA);
	cJSON_AddBoolToObject(o, "audit", audit_mode);
	cJSON_AddNumberToObject(o, "allowed", (double)s->allowed);
	cJSON_AddNumberToObject(o, "denied", (double)s->denied);
	ds = cJSON_AddArrayToObject(o, "destinations");
	for (const struct dest *d = s->first; ds && d; d = d->order) {
		cJSON *e = cJSON_CreateObject(), *who;

		if (!e)
			break;
		cJSON_AddStringToObject(e, "destination", d->key);
		cJSON_AddNumberToObject(e, "allowed", (double)d->allowed);
		cJSON_AddNumberToObject(e, "denied", (double)d->denied);
		cJSON_AddBoolToObject(e, "would_deny", d->would);
		cJSON_AddBoolToObject(e, "dns", d->dns);
		if (d->denied)
			cJSON_AddStringToObject(e, "reason", d->reason);
		if (d->suggest[0])
			cJSON_AddStringToObject(e, "suggest", d->suggest);
		who = cJSON_AddArrayToObject(e, "who");
		for (int i = 0; who && i < d->nwho; i++) {
			cJSON *w = cJSON_CreateObject();

			if (!w)
				break;
			cJSON_AddNumberToObject(w, "pid", d->who[i].pid);
			cJSON_AddStringToObject(w, "comm", d->who[i].comm);
			if (d->who[i].ctr[0])
				cJSON_AddStringToObject(w, "container", d->who[i].ctr);
			cJSON_AddItemToArray(who, w);
		}
		cJSON_AddItemToArray(ds, e);
	}
	r = cJSON_AddObjectToObject(o, "refused");
	if (r) {
		cJSON_AddNumberToObject(r, "limit", (double)s->refused.limit);
		cJSON_AddNumberToObject(r, "per_process", (double)s->refused.per_process);
		cJSON_AddNumberToObject(r, "no_descriptors", (double)s->refused.nofd);
	}
	if (ls && ls->path) {
		cJSON *l = cJSON_AddObjectToObject(o, "log");

		if (l) {
			cJSON_AddStringToObject(l, "path", ls->path);
			cJSON_AddNumberToObject(l, "lost", (double)ls->lost);
			cJSON_AddNumberToObject(l, "dropped", (double)ls->dropped);
		}
	}
	out = cJSON_PrintUnformatted(o);
	if (out)
		fprintf(f, "%s\n", out);
	cJSON_free(out);
	cJSON_Delete(o);
}

int
summary_format_parse(const char *s, enum summary_format *out)
{
	if (!strcmp(s, "text"))
		*out = SUMMARY_TEXT;
	else if (!strcmp(s, "markdown") || !strcmp(s, "md"))
		*out = SUMMARY_MARKDOWN;
	else if (!strcmp(s, "json"))
		*out = SUMMARY_JSON;
	else
		return -EINVAL;
	return 0;
}

void
summary_write(const struct summary *s, FILE *f, enum summary_format fmt, bool audit_mode,
	      const struct audit_stats *ls)
{
	static const struct summary empty;

	if (!s)
		s = &empty;
	if (fmt == SUMMARY_MARKDOWN)
		print_markdown(s, f, audit_mode);
	else if (fmt == SUMMARY_JSON)
		print_json(s, f, audit_mode, ls);
	else
		summary_print(s, f, audit_mode, ls);
}
