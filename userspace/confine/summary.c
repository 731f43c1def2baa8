// SPDX-License-Identifier: Apache-2.0
/* What a run tried (see summary.h). Destinations are usually few
 * (hundreds), but up to SUM_MAX are kept (a job that looks up a fresh name
 * per query fills them): chained hashes sized for that, one keyed by the
 * destination's words ("a.example.test:80"), one by its host name, so
 * that a name's DNS decision finds the row of its connection (and a
 * connection the row its lookup made) whichever came first. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/jsonx.h"
#include "audit/audit.h"
#include "lib/hash.h"
#include "policy/policy.h"
#include "policy/secret.h"
#include "confine/summary.h"
#include "confine/sumsecrets.h"

#define SUM_BUCKETS 1024 /* 256 had chains of 16 at SUM_MAX: 7% of a DNS query's CPU */
#define SUM_MAX	    4096 /* destinations: a scanner does not get to fill memory */

struct dest {
	struct dest *next;  /* chain of the key hash */
	struct dest *nnext; /* chain of the name hash */
	struct dest *order; /* insertion order */
	char key[320];	    /* "host:port", "host" (looked up only), "[addr]:port" */
	char host[256];	    /* the name (or address) the decisions named; "" if none */
	uint16_t port;
	char suggest[320];
	bool suggest_dns;    /* the rule came from a lookup: a connection's replaces it */
	const char *suspect; /* why the name looks like data sent out in it: not proposed */
	char comment[128];   /* the deciding rule's comment in the policy file, or "" */
	char reason[160];
	bool leak;			       /* a denial was a secret's leak attempt */
	char leak_secret[SECRET_NAME_MAX + 1]; /* ... in a request to this host: whose */
	char leak_rule[320];		       /* ... and the rule that names the host */
	uint64_t allowed, denied;	       /* connections (and requests) */
	uint64_t dns_allowed, dns_denied;      /* lookups of the name */
	uint64_t inspected;		       /* decisions inside (or on) inspected HTTPS */
	bool would, dns_would;		       /* denials were audit-mode would-denies */
	uint64_t first_ms, last_ms;
	int nwho;
	struct {
		uint32_t pid;
		char comm[17];
		char ctr[13]; /* the container (its id's first 12 digits), or "" */
	} who[SUM_WHO];
};

struct summary {
	struct dest *bucket[SUM_BUCKETS];
	struct dest *nbucket[SUM_BUCKETS];
	struct dest *first, *last;
	int ndest;
	struct summary_refusals refused;
	uint64_t kverified, krejected; /* the kernel-verified path's judgments */
	uint64_t inspected;	       /* decisions on and inside inspected HTTPS */
	struct sum_secrets sec;	       /* the secrets' uses and leak attempts */
};

static uint32_t
hash_key(const char *s)
{
	return fnv1a_str(FNV1A_BASIS, s) % SUM_BUCKETS;
}

/* A row's counts: its connections, or its lookups when it had none. */
static bool
has_conns(const struct dest *d)
{
	return d->allowed || d->denied;
}

static uint64_t
row_allowed(const struct dest *d)
{
	return has_conns(d) ? d->allowed : d->dns_allowed;
}

static uint64_t
row_denied(const struct dest *d)
{
	return has_conns(d) ? d->denied : d->dns_denied;
}

static bool
row_would(const struct dest *d)
{
	return has_conns(d) ? d->would : d->dns_would;
}

static void
totals(const struct summary *s, uint64_t *allowed, uint64_t *denied)
{
	*allowed = *denied = 0;
	for (const struct dest *d = s->first; d; d = d->order) {
		*allowed += row_allowed(d);
		*denied += row_denied(d);
	}
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

static struct dest *
find_key(const struct summary *s, const char *key)
{
	for (struct dest *d = s->bucket[hash_key(key)]; d; d = d->next)
		if (!strcmp(d->key, key))
			return d;
	return NULL;
}

static struct dest *
find_name(const struct summary *s, const char *host)
{
	struct dest *found = NULL;

	for (struct dest *d = s->nbucket[hash_key(host)]; d; d = d->nnext)
		if (!strcmp(d->host, host))
			found = d; /* the chain is newest first: the oldest row wins */
	return found;
}

static struct dest *
new_dest(struct summary *s, const char *key, const char *host, uint16_t port)
{
	struct dest *d;
	uint32_t h;

	if (s->ndest >= SUM_MAX)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	snprintf(d->key, sizeof(d->key), "%s", key);
	snprintf(d->host, sizeof(d->host), "%s", host ? host : "");
	d->port = port;
	h = hash_key(d->key);
	d->next = s->bucket[h];
	s->bucket[h] = d;
	if (d->host[0]) {
		h = hash_key(d->host);
		d->nnext = s->nbucket[h];
		s->nbucket[h] = d;
	}
	if (s->last)
		s->last->order = d;
	else
		s->first = d;
	s->last = d;
	s->ndest++;
	return d;
}

/* A name's row (made by its lookup) becomes its connection's: key "host:port". */
static void
rekey(struct summary *s, struct dest *d, const char *key, uint16_t port)
{
	struct dest **pp = &s->bucket[hash_key(d->key)];
	uint32_t h;

	while (*pp && *pp != d)
		pp = &(*pp)->next;
	if (*pp)
		*pp = d->next;
	snprintf(d->key, sizeof(d->key), "%s", key);
	d->port = port;
	h = hash_key(d->key);
	d->next = s->bucket[h];
	s->bucket[h] = d;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
summary_set_secrets(struct summary *s, const struct secrets *sec)
{
	if (s)
		s->sec.sec = sec;
}

void
summary_add(struct summary *s, const struct audit_rec *r)
{
	bool allow = !strcmp(r->decision, "allow");
	bool dns = !strcmp(r->source, "dns");
	const char *key = r->dest ? r->dest : r->host ? r->host : "?";
	const char *host = r->host && r->host[0] ? r->host : NULL;
	struct dest *d = NULL;
	uint64_t now = now_ms();
	char rkey[320], rhost[256];
	bool in_name = false;

	if (!s)
		return;
	if (r->secret) {
		/* a leak attempt: its row and its words without the placeholder */
		if (s->sec.sec) {
			sumsec_redact(s->sec.sec, key, rkey, sizeof(rkey));
			key = rkey;
			if (host) {
				in_name = sumsec_redact(s->sec.sec, host, rhost, sizeof(rhost));
				host = rhost;
			}
		}
		sumsec_note_leak(&s->sec, r, key, in_name);
	}
	if (!strcmp(r->source, "kernel")) {
		if (allow)
			s->kverified++;
		else
			s->krejected++;
	}
	if (dns && host) {
		d = find_name(s, host);
	} else {
		d = find_key(s, key);
		if (!d && host && (d = find_name(s, host)) && !has_conns(d) && !d->port)
			rekey(s, d, key, r->port); /* its lookup's row */
		else if (d && find_key(s, key) != d)
			d = NULL; /* the name has a row for another port already */
	}
	if (!d)
		d = new_dest(s, key, host, dns ? 0 : r->port);
	if (!d)
		return;
	if (!d->first_ms)
		d->first_ms = now;
	d->last_ms = now;
	if (r->inspected) {
		d->inspected++;
		s->inspected++;
	}
	if (r->secret) {
		d->leak = true;
		if (!in_name && host && !d->leak_secret[0] && strcmp(r->source, "dns")) {
			snprintf(d->leak_secret, sizeof(d->leak_secret), "%s", r->secret);
			snprintf(d->leak_rule, sizeof(d->leak_rule),
				 r->port == 443 || r->port == 80 ? "%s" : "%s:%u", host, r->port);
		}
	} else if (r->suggest && (!d->suggest[0] || (d->suggest_dns && !dns))) {
		snprintf(d->suggest, sizeof(d->suggest), "%s", r->suggest);
		d->suggest_dns = dns;
		d->suspect = d->host[0] ? policy_name_suspect(d->host) : NULL;
	}
	if (r->comment && !d->comment[0])
		snprintf(d->comment, sizeof(d->comment), "%s", r->comment);
	if (dns) {
		if (allow) {
			d->dns_allowed++;
			return;
		}
		d->dns_denied++;
		d->dns_would = !strcmp(r->decision, "would-deny");
	} else {
		if (allow) {
			d->allowed++;
			return;
		}
		d->denied++;
		d->would = !strcmp(r->decision, "would-deny");
	}
	if (!dns || !d->reason[0] || !has_conns(d))
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

/* " (dns: allowed)": the DNS decision of a row counted by its connections. */
static const char *
dns_note(const struct dest *d, bool audit_mode)
{
	if (!has_conns(d) || (!d->dns_allowed && !d->dns_denied))
		return "";
	if (d->dns_denied)
		return d->dns_would || audit_mode ? " (dns: would deny)" : " (dns: denied)";
	return " (dns: allowed)";
}

/* What became of the --log lines that are not in the file: a slow reader
 * and a failing disk are told apart, each with its own count. */
static void
print_log_stats(FILE *f, const struct audit_stats *ls)
{
	if (!ls)
		return;
	if (ls->sink && (ls->sink_dropped || ls->sink_lost))
		fprintf(f,
			"egressctl: log %s: %llu records sent, %llu dropped (the queue or socket "
			"was full), %llu lost%s%s%s\n",
			ls->sink, (unsigned long long)ls->sink_sent,
			(unsigned long long)ls->sink_dropped, (unsigned long long)ls->sink_lost,
			ls->sink_err[0] ? " (" : "", ls->sink_err, ls->sink_err[0] ? ")" : "");
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

	if (r->closed_early)
		fprintf(f,
			"egressctl: %" PRIu64 " connection%s closed before sending anything (a "
			"port probe such as nc -z: its connect() succeeds, at egressctl's "
			"transparent proxy; the decision it would have had is logged)\n",
			r->closed_early, r->closed_early == 1 ? "" : "s");
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

/* What a denied row tells the user to do: the rule that would allow it,
 * or, for a name shaped like data sent out in DNS labels, that it needs a
 * human and is not proposed; else why it was denied. */
static const char *
advice(const struct dest *d, char *buf, size_t len)
{
	if (d->comment[0]) /* a deny rule's words */
		snprintf(buf, len, "(%s: %s)", d->reason, d->comment);
	else if (d->suspect)
		snprintf(buf, len, "(review: %s; not suggested)", d->suspect);
	else if (d->suggest[0])
		snprintf(buf, len, "--allow %s", d->suggest);
	else
		snprintf(buf, len, "(%s)", d->reason);
	return buf;
}

void
summary_print(const struct summary *s, FILE *f, bool audit_mode, const struct audit_stats *ls)
{
	const char *denied_word = audit_mode ? "would deny" : "denied";
	uint64_t allowed = 0, denied = 0;

	if (s)
		totals(s, &allowed, &denied);
	if (!s || (!allowed && !denied)) {
		if (s && (s->refused.limit || s->refused.per_process || s->refused.nofd))
			print_refusals(&s->refused, f); /* attempts, refused before any decision */
		else
			fprintf(f, "egressctl: summary: no network attempts\n");
		print_log_stats(f, ls);
		if (s)
			sumsec_print(&s->sec, f);
		return;
	}
	fprintf(f, "egressctl: summary: %llu allowed, %llu %s, %d destinations\n",
		(unsigned long long)allowed, (unsigned long long)denied, denied_word, s->ndest);
	if (s->kverified || s->krejected)
		fprintf(f,
			"egressctl: summary: %llu kernel-verified, %llu kernel-rejected "
			"(direct connections whose SNI or Host the kernel checked)\n",
			(unsigned long long)s->kverified, (unsigned long long)s->krejected);
	if (s->inspected)
		fprintf(f,
			"egressctl: summary: %llu inspected (HTTPS sessions allowed inspected, and "
			"the requests judged inside them)\n",
			(unsigned long long)s->inspected);
	/* denied first: they are what the user has to act on */
	for (int pass = 0; pass < 2; pass++) {
		for (const struct dest *d = s->first; d; d = d->order) {
			char who[160] = "", dest[400], adv[400];
			size_t n = 0;

			if (pass == 0 ? !row_denied(d) : !!row_denied(d))
				continue;
			snprintf(dest, sizeof(dest), "%s%s%s", d->key, dns_note(d, audit_mode),
				 d->inspected ? " (inspected)" : "");
			for (int i = 0; i < d->nwho && n < sizeof(who); i++)
				n += (size_t)snprintf(who + n, sizeof(who) - n, "%s%s[%u]%s%s",
						      i ? ", " : "", d->who[i].comm, d->who[i].pid,
						      d->who[i].ctr[0] ? "@" : "", d->who[i].ctr);
			if (pass == 0)
				fprintf(f, "  %-10s %5llu  %-36s %s  %s\n", denied_word,
					(unsigned long long)row_denied(d), dest, who,
					advice(d, adv, sizeof(adv)));
			else
				fprintf(f, "  %-10s %5llu  %s%s%s\n", "allowed",
					(unsigned long long)row_allowed(d), dest,
					d->comment[0] ? "  # " : "", d->comment);
		}
	}
	print_refusals(&s->refused, f);
	print_log_stats(f, ls);
	sumsec_print(&s->sec, f);
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

		if (o == dd || !has_conns(o) || !r[0])
			continue;
		if (!strncmp(r, "tcp://", 6))
			r += 6;
		if (!strncmp(r, dd->suggest, n) && (r[n] == 0 || r[n] == ':'))
			return true;
	}
	return false;
}

void
summary_foreach_rule(const struct summary *s, void (*fn)(void *arg, const struct summary_rule *r),
		     void *arg)
{
	if (!s)
		return;
	for (const struct dest *d = s->first; d; d = d->order) {
		struct summary_rule r = {
			.rule = d->suggest,
			.count = row_allowed(d) + row_denied(d),
			.first_ms = d->first_ms,
			.last_ms = d->last_ms,
			.dns_only = !has_conns(d),
		};

		if (!d->suggest[0] && d->leak_rule[0]) {
			r.rule = d->leak_rule;
			r.leak = d->leak_secret;
		} else if (!d->suggest[0] || (r.dns_only && covered(s, d))) {
			continue;
		}
		fn(arg, &r);
	}
}

/* A table cell: names and commands come from CMD, so nothing in them may
 * make markdown (or the HTML it allows) of its own. */
void
summary_md_cell(FILE *f, const char *s)
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
print_markdown(const struct summary *s, FILE *f, bool audit_mode, const struct audit_stats *ls)
{
	const char *denied_word = audit_mode ? "would deny" : "denied";
	uint64_t allowed, denied;

	totals(s, &allowed, &denied);
	fprintf(f, "### egressctl: %llu allowed, %llu %s, %d destination%s\n\n",
		(unsigned long long)allowed, (unsigned long long)denied, denied_word, s->ndest,
		s->ndest == 1 ? "" : "s");
	if (s->kverified || s->krejected)
		fprintf(f,
			"%llu kernel-verified, %llu kernel-rejected (direct connections whose "
			"SNI or Host the kernel checked)\n\n",
			(unsigned long long)s->kverified, (unsigned long long)s->krejected);
	if (!s->ndest) {
		fprintf(f, "No network attempts.\n");
	} else {
		fprintf(f,
			"| decision | count | destination | commands | rule that would allow it |\n"
			"|---|---:|---|---|---|\n");
	}
	for (int pass = 0; pass < 2; pass++)
		for (const struct dest *d = s->first; d; d = d->order) {
			char who[160];

			if (pass == 0 ? !row_denied(d) : !!row_denied(d))
				continue;
			who_text(d, who, sizeof(who));
			fprintf(f, "| %s | %llu | ", pass ? "allowed" : denied_word,
				(unsigned long long)(pass ? row_allowed(d) : row_denied(d)));
			summary_md_cell(f, d->key);
			summary_md_cell(f, dns_note(d, audit_mode));
			fprintf(f, " | ");
			summary_md_cell(f, who);
			fprintf(f, " | ");
			if (pass == 0 && d->suspect) {
				fprintf(f, "review: %s; not suggested", d->suspect);
			} else if (pass == 0 && d->suggest[0]) {
				fprintf(f, "--allow ");
				summary_md_cell(f, d->suggest);
			} else if (pass == 0) {
				summary_md_cell(f, d->reason);
			}
			fprintf(f, " |\n");
		}
	if (s->refused.limit || s->refused.per_process || s->refused.nofd ||
	    (ls &&
	     (ls->lost || ls->dropped || ls->last_err || ls->sink_dropped || ls->sink_lost))) {
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);

		if (m) {
			print_refusals(&s->refused, m);
			print_log_stats(m, ls);
			fclose(m);
			fprintf(f, "\n");
			for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
				fprintf(f, "- ");
				summary_md_cell(f, line);
				fprintf(f, "\n");
			}
		}
		free(text);
	}
	sumsec_print_md(&s->sec, f);
}

static void
print_json(const struct summary *s, FILE *f, bool audit_mode, const struct audit_stats *ls)
{
	json_t *o = json_object(), *ds, *r;
	uint64_t allowed, denied;
	char *out;

	if (!o)
		return;
	totals(s, &allowed, &denied);
	jsonx_set_int(o, "schema", SUMMARY_SCHEMA);
	jsonx_set_bool(o, "audit", audit_mode);
	jsonx_set_int(o, "allowed", (long long)allowed);
	jsonx_set_int(o, "denied", (long long)denied);
	jsonx_set_int(o, "kernel_verified", (long long)s->kverified);
	jsonx_set_int(o, "kernel_rejected", (long long)s->krejected);
	ds = jsonx_add_array(o, "destinations");
	for (const struct dest *d = s->first; ds && d; d = d->order) {
		json_t *e = json_object(), *who;

		if (!e)
			break;
		jsonx_set_str(e, "destination", d->key);
		if (d->host[0])
			jsonx_set_str(e, "host", d->host);
		if (d->port)
			jsonx_set_int(e, "port", d->port);
		jsonx_set_int(e, "allowed", (long long)row_allowed(d));
		jsonx_set_int(e, "denied", (long long)row_denied(d));
		jsonx_set_bool(e, "would_deny", row_would(d));
		jsonx_set_int(e, "inspected", (long long)d->inspected);
		jsonx_set_bool(e, "dns", d->dns_allowed || d->dns_denied);
		jsonx_set_int(e, "dns_allowed", (long long)d->dns_allowed);
		jsonx_set_int(e, "dns_denied", (long long)d->dns_denied);
		if (row_denied(d) || d->dns_denied)
			jsonx_set_str(e, "reason", d->reason);
		if (d->comment[0])
			jsonx_set_str(e, "comment", d->comment);
		if (d->suspect)
			jsonx_set_str(e, "suspect", d->suspect);
		else if (d->suggest[0])
			jsonx_set_str(e, "suggest", d->suggest);
		who = jsonx_add_array(e, "who");
		for (int i = 0; who && i < d->nwho; i++) {
			json_t *w = json_object();

			if (!w)
				break;
			jsonx_set_int(w, "pid", d->who[i].pid);
			jsonx_set_str(w, "comm", d->who[i].comm);
			if (d->who[i].ctr[0])
				jsonx_set_str(w, "container", d->who[i].ctr);
			json_array_append_new(who, w);
		}
		json_array_append_new(ds, e);
	}
	r = jsonx_add_object(o, "refused");
	if (r) {
		jsonx_set_int(r, "limit", (long long)s->refused.limit);
		jsonx_set_int(r, "per_process", (long long)s->refused.per_process);
		jsonx_set_int(r, "no_descriptors", (long long)s->refused.nofd);
		jsonx_set_int(r, "closed_before_data", (long long)s->refused.closed_early);
	}
	if (ls && ls->sink) {
		json_t *l = jsonx_add_object(o, "log");

		if (l) {
			jsonx_set_str(l, "sink", ls->sink);
			jsonx_set_int(l, "sent", (long long)ls->sink_sent);
			jsonx_set_int(l, "dropped", (long long)ls->sink_dropped);
			jsonx_set_int(l, "lost", (long long)ls->sink_lost);
		}
	} else if (ls && ls->path) {
		json_t *l = jsonx_add_object(o, "log");

		if (l) {
			jsonx_set_str(l, "path", ls->path);
			jsonx_set_int(l, "lost", (long long)ls->lost);
			jsonx_set_int(l, "dropped", (long long)ls->dropped);
		}
	}
	sumsec_json(&s->sec, o);
	out = jsonx_line(o);
	if (out)
		fprintf(f, "%s\n", out);
	free(out);
	json_decref(o);
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
		print_markdown(s, f, audit_mode, ls);
	else if (fmt == SUMMARY_JSON)
		print_json(s, f, audit_mode, ls);
	else
		summary_print(s, f, audit_mode, ls);
}

int
summary_append_file(const struct summary *s, const char *path, enum summary_format fmt,
		    bool audit_mode, const struct audit_stats *ls)
{
	int fd, err = 0;
	FILE *f;

	if (!strncmp(path, "fd:", 3) && path[3] >= '0' && path[3] <= '9') {
		/* a descriptor given (the service's run: the user opened it) */
		char *end;
		long n = strtol(path + 3, &end, 10);

		if (*end || n > 1 << 20)
			return -EBADF;
		fd = fcntl((int)n, F_DUPFD_CLOEXEC, 0);
	} else {
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
	}
	if (fd == -1)
		return -errno;
	f = fdopen(fd, "a");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	summary_write(s, f, fmt, audit_mode, ls);
	if (fmt == SUMMARY_MARKDOWN)
		fputc('\n', f);
	if (ferror(f))
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}
