// SPDX-License-Identifier: Apache-2.0
/* Secrets (secret.h): their definitions checked and kept in the policy,
 * and the run's store: placeholders, values in pages of their own
 * (MADV_DONTDUMP, MADV_DONTFORK, locked when the limit lets us, wiped and
 * unmapped when freed), the scan that finds a placeholder's random part
 * in any bytes, and the swap of a placeholder for its value in a request
 * head for one of the secret's hosts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "policy/engine.h"
#include "policy/secret.h"

/* ---- definitions ---- */

void
secret_defs_free(struct policy *p)
{
	for (unsigned int i = 0; i < p->nsecrets; i++) {
		struct policy_secret *s = &p->secrets[i];

		for (unsigned int h = 0; h < s->nhosts; h++)
			free(s->hosts[h]);
		free(s->hosts);
		free(s->name);
		free(s->from);
	}
	free(p->secrets);
	p->secrets = NULL;
	p->nsecrets = 0;
}

static bool
var_name_ok(const char *n, size_t len)
{
	if (!len || (n[0] >= '0' && n[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(n[i] == '_' || (n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') ||
		      (n[i] >= '0' && n[i] <= '9')))
			return false;
	return true;
}

/* One host of a secret: checked, normalised into out ("*." or "**." kept
 * in front of the name). */
static int
secret_host_check(const char *in, char *out, size_t outlen, char *errbuf, size_t errlen)
{
	size_t star = !strncmp(in, "**.", 3) ? 3 : !strncmp(in, "*.", 2) ? 2 : 0;
	char msg[200];

	if (strchr(in + star, '*') || strchr(in, '?'))
		return rule_fail(errbuf, errlen,
				 "host \"%.80s\": a name, *.name or **.name (no other pattern)",
				 in);
	if (strchr(in, ':'))
		return rule_fail(errbuf, errlen, "host \"%.80s\": a name without a port", in);
	memcpy(out, in, star);
	if (rule_host_check(in + star, strlen(in + star), false, out + star, outlen - star, msg,
			    sizeof(msg)))
		return rule_fail(errbuf, errlen, "host \"%.80s\": %s", in, msg);
	if (rule_numeric_tld(out + star, strlen(out + star)))
		return rule_fail(errbuf, errlen, "host \"%.80s\": a name, not an address", in);
	return 0;
}

static const char *const kind_prefix[] = {[SECRET_ENV] = "env:",
					  [SECRET_FILE] = "file:",
					  [SECRET_CMD] = "command:",
					  [SECRET_FD] = "fd:"};

const char *
secret_kind_prefix(enum secret_kind kind)
{
	return (unsigned)kind < sizeof(kind_prefix) / sizeof(kind_prefix[0]) ? kind_prefix[kind]
									     : "";
}

int
secret_from_parse(const char *from, enum secret_kind *kind, size_t *argoff, char *errbuf,
		  size_t errlen)
{
	const char *a;
	int k = -1;

	if (strlen(from) > SECRET_FROM_MAX)
		return rule_fail(errbuf, errlen, "source longer than %d bytes", SECRET_FROM_MAX);
	for (int i = 0; i < (int)(sizeof(kind_prefix) / sizeof(kind_prefix[0])); i++)
		if (!strncmp(from, kind_prefix[i], strlen(kind_prefix[i])))
			k = i;
	if (k < 0)
		return rule_fail(errbuf, errlen,
				 "unknown source \"%.40s\" (expected env:VAR, file:/PATH, "
				 "command:CMDLINE or fd:N)",
				 from);
	*kind = (enum secret_kind)k;
	a = from + strlen(kind_prefix[k]);
	if (k == SECRET_ENV && !var_name_ok(a, strlen(a)))
		return rule_fail(errbuf, errlen,
				 "env:VAR: expected an environment variable's name");
	if (k == SECRET_FILE && a[0] != '/')
		return rule_fail(errbuf, errlen, "file:PATH: expected an absolute path");
	if (k == SECRET_CMD && !a[strspn(a, " \t")])
		return rule_fail(errbuf, errlen, "command:CMDLINE: expected a command");
	if (k == SECRET_FD && (!a[0] || strspn(a, "0123456789") != strlen(a) || strlen(a) > 4))
		return rule_fail(errbuf, errlen, "fd:N: expected a descriptor's number");
	for (const char *c = a; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return rule_fail(errbuf, errlen, "a control character in the source");
	*argoff = (size_t)(a - from);
	return 0;
}

int
policy_add_secret(struct policy *p, const char *name, const char *from, const char *const *hosts,
		  size_t nhosts, const char *source, char *errbuf, size_t errlen)
{
	struct policy_secret s = {0}, *grown;
	char host[HOST_MAX + 4];
	size_t argoff = 0;
	int err;

	if (!name || !var_name_ok(name, strlen(name)) || strlen(name) > SECRET_NAME_MAX)
		return rule_fail(errbuf, errlen,
				 "a secret's name is an environment variable's: letters, digits "
				 "and '_', not a digit first, at most %d bytes",
				 SECRET_NAME_MAX);
	for (unsigned int i = 0; i < p->nsecrets; i++)
		if (!strcmp(p->secrets[i].name, name))
			return rule_fail(errbuf, errlen, "secret %s defined twice", name);
	if (p->nsecrets == SECRET_MAX)
		return rule_fail(errbuf, errlen, "at most %d secrets", SECRET_MAX);
	if (!from)
		return rule_fail(errbuf, errlen,
				 "no source (env:VAR, file:/PATH or command:CMDLINE)");
	err = secret_from_parse(from, &s.kind, &argoff, errbuf, errlen);
	if (err)
		return err;
	if (!nhosts)
		return rule_fail(errbuf, errlen,
				 "no hosts: a secret names the hosts it may be sent to");
	if (nhosts > SECRET_MAX_HOSTS)
		return rule_fail(errbuf, errlen, "at most %d hosts", SECRET_MAX_HOSTS);
	for (size_t h = 0; h < nhosts; h++) {
		err = secret_host_check(hosts[h], host, sizeof(host), errbuf, errlen);
		if (err)
			return err;
	}
	grown = realloc(p->secrets, (p->nsecrets + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	p->secrets = grown;
	s.name = strdup(name);
	s.from = strdup(from);
	s.hosts = calloc(nhosts, sizeof(*s.hosts));
	s.source = source;
	err = s.name && s.from && s.hosts ? 0 : -ENOMEM;
	for (size_t h = 0; !err && h < nhosts; h++) {
		secret_host_check(hosts[h], host, sizeof(host), NULL, 0);
		s.hosts[h] = strdup(host);
		err = s.hosts[h] ? 0 : -ENOMEM;
		s.nhosts = (unsigned int)h + 1;
	}
	if (err) {
		for (unsigned int h = 0; h < s.nhosts; h++)
			free(s.hosts[h]);
		free(s.hosts);
		free(s.name);
		free(s.from);
		return rule_fail(errbuf, errlen, "out of memory") ? -ENOMEM : -ENOMEM;
	}
	s.arg = s.from + argoff;
	p->secrets[p->nsecrets++] = s;
	return 0;
}

int
policy_secret_set_from(struct policy *p, const char *name, const char *from, char *errbuf,
		       size_t errlen)
{
	enum secret_kind kind;
	size_t argoff;
	char *copy;
	int err;

	for (unsigned int i = 0; i < p->nsecrets; i++) {
		struct policy_secret *s = &p->secrets[i];

		if (strcmp(s->name, name))
			continue;
		err = secret_from_parse(from, &kind, &argoff, errbuf, errlen);
		if (err)
			return err;
		copy = strdup(from);
		if (!copy)
			return -ENOMEM;
		free(s->from);
		s->from = copy;
		s->arg = copy + argoff;
		s->kind = kind;
		return 0;
	}
	return -ENOENT;
}

int
secret_arg_split(const char *arg, size_t *name_len, const char **from, size_t *from_len)
{
	const char *eq = strchr(arg, '='), *at = strrchr(arg, '@');

	if (!eq || !at || at < eq)
		return -EINVAL;
	*name_len = (size_t)(eq - arg);
	*from = eq + 1;
	*from_len = (size_t)(at - eq - 1);
	return 0;
}

int
policy_add_secret_arg(struct policy *p, const char *arg, char *errbuf, size_t errlen)
{
	char name[SECRET_NAME_MAX + 1], *from, *list, *save = NULL, *h;
	const char *hosts[SECRET_MAX_HOSTS + 1], *src;
	size_t n = 0, name_len, src_len;
	int err;

	if (secret_arg_split(arg, &name_len, &src, &src_len))
		return rule_fail(errbuf, errlen, "expected NAME=SOURCE@HOST[,HOST...]");
	if (name_len > SECRET_NAME_MAX)
		return rule_fail(errbuf, errlen, "a secret's name is at most %d bytes",
				 SECRET_NAME_MAX);
	memcpy(name, arg, name_len);
	name[name_len] = 0;
	from = strndup(src, src_len);
	list = strdup(src + src_len + 1);
	if (!from || !list) {
		free(from);
		free(list);
		return rule_fail(errbuf, errlen, "out of memory") ? -ENOMEM : -ENOMEM;
	}
	for (h = strtok_r(list, ",", &save); h && n <= SECRET_MAX_HOSTS;
	     h = strtok_r(NULL, ",", &save))
		hosts[n++] = h;
	err = policy_add_secret(p, name, from, hosts, n, "--secret", errbuf, errlen);
	free(from);
	free(list);
	return err;
}

unsigned int
policy_secret_count(const struct policy *p)
{
	return p ? p->nsecrets : 0;
}

const struct policy_secret *
policy_secret_at(const struct policy *p, unsigned int i)
{
	return p && i < p->nsecrets ? &p->secrets[i] : NULL;
}

/* Does pattern ("x", "*.x", "**.x", normalised) match name (normalised,
 * n bytes)? */
static bool
host_match(const char *pat, const char *name, size_t n)
{
	size_t star = !strncmp(pat, "**.", 3) ? 3 : !strncmp(pat, "*.", 2) ? 2 : 0;
	const char *sfx = pat + star;
	size_t sl = strlen(sfx);

	if (!star)
		return n == sl && !memcmp(name, sfx, n);
	if (n == sl && !memcmp(name, sfx, n))
		return star == 3;
	return n > sl + 1 && name[n - sl - 1] == '.' && !memcmp(name + n - sl, sfx, sl);
}

/* host normalised into out (HOST_MAX + 1 bytes); its length, or 0. */
static size_t
norm(const char *host, char *out)
{
	if (!host || !host[0] ||
	    rule_host_check(host, strlen(host), false, out, HOST_MAX + 1, NULL, 0))
		return 0;
	return strlen(out);
}

static bool
hosts_match(char *const *hosts, unsigned int n, const char *name, size_t len)
{
	for (unsigned int h = 0; h < n; h++)
		if (host_match(hosts[h], name, len))
			return true;
	return false;
}

bool
policy_secret_host(const struct policy_secret *s, const char *host)
{
	char name[HOST_MAX + 1];
	size_t n = norm(host, name);

	return n && s && hosts_match(s->hosts, s->nhosts, name, n);
}

bool
policy_secret_any_host(const struct policy *p, const char *host)
{
	char name[HOST_MAX + 1];
	size_t n;

	if (!p || !p->nsecrets)
		return false;
	n = norm(host, name);
	for (unsigned int i = 0; n && i < p->nsecrets; i++)
		if (hosts_match(p->secrets[i].hosts, p->secrets[i].nhosts, name, n))
			return true;
	return false;
}

/* ---- the store ---- */

struct secret_ent {
	char *name;
	enum secret_kind kind;
	char *arg;
	char **hosts;
	unsigned int nhosts;
	char ph[SECRET_PH_MAX]; /* the placeholder */
	size_t phlen;
	char rnd[SECRET_RAND_HEX]; /* its random part */
	char *val;		   /* a page of its own (mmap), or NULL */
	size_t vlen, vmap;
	uint64_t used, leaks;
	struct {
		char host[256];
		uint64_t n;
	} at[SECRET_USED_HOSTS]; /* requests per host it went to (the rest: other) */
	uint64_t at_other;
};

struct secrets {
	struct secret_ent *e;
	unsigned int n;
};

void
secrets_wipe_free(void *p, size_t len)
{
	if (!p)
		return;
	explicit_bzero(p, len);
	free(p);
}

static void
ent_clear_value(struct secret_ent *e)
{
	if (!e->val)
		return;
	explicit_bzero(e->val, e->vmap);
	munmap(e->val, e->vmap);
	e->val = NULL;
	e->vlen = e->vmap = 0;
}

void
secrets_free(struct secrets *s)
{
	if (!s)
		return;
	for (unsigned int i = 0; i < s->n; i++) {
		struct secret_ent *e = &s->e[i];

		ent_clear_value(e);
		for (unsigned int h = 0; h < e->nhosts; h++)
			free(e->hosts[h]);
		free(e->hosts);
		free(e->name);
		free(e->arg);
	}
	free(s->e);
	free(s);
}

struct secrets *
secrets_new(const struct policy *p)
{
	static const char hex[] = "0123456789abcdef";
	unsigned int n = policy_secret_count(p);
	struct secrets *s = calloc(1, sizeof(*s));
	uint8_t rnd[SECRET_RAND_HEX / 2];

	if (!s)
		return NULL;
	s->e = calloc(n ? n : 1, sizeof(*s->e));
	if (!s->e)
		goto fail;
	for (unsigned int i = 0; i < n; i++) {
		const struct policy_secret *d = &p->secrets[i];
		struct secret_ent *e = &s->e[i];

		s->n = i + 1;
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			goto fail;
		for (size_t k = 0; k < sizeof(rnd); k++) {
			e->rnd[2 * k] = hex[rnd[k] >> 4];
			e->rnd[2 * k + 1] = hex[rnd[k] & 15];
		}
		e->phlen = (size_t)snprintf(e->ph, sizeof(e->ph), SECRET_PH_PREFIX "%s_%.*s",
					    d->name, SECRET_RAND_HEX, e->rnd);
		e->name = strdup(d->name);
		e->arg = strdup(d->arg);
		e->kind = d->kind;
		e->hosts = calloc(d->nhosts, sizeof(*e->hosts));
		if (!e->name || !e->arg || !e->hosts)
			goto fail;
		for (unsigned int h = 0; h < d->nhosts; h++) {
			e->hosts[h] = strdup(d->hosts[h]);
			if (!e->hosts[h])
				goto fail;
			e->nhosts = h + 1;
		}
	}
	return s;
fail:
	secrets_free(s);
	return NULL;
}

unsigned int
secrets_count(const struct secrets *s)
{
	return s ? s->n : 0;
}

const char *
secrets_name(const struct secrets *s, unsigned int i)
{
	return s->e[i].name;
}

enum secret_kind
secrets_kind(const struct secrets *s, unsigned int i)
{
	return s->e[i].kind;
}

const char *
secrets_arg(const struct secrets *s, unsigned int i)
{
	return s->e[i].arg;
}

const char *
secrets_placeholder(const struct secrets *s, unsigned int i)
{
	return s->e[i].ph;
}

int
secrets_index(const struct secrets *s, const char *name)
{
	for (unsigned int i = 0; s && name && i < s->n; i++)
		if (!strcmp(s->e[i].name, name))
			return (int)i;
	return -1;
}

size_t
secrets_line_len(const struct secrets *s, unsigned int i, const char *name, const char *prefix)
{
	if (!s || i >= s->n || !s->e[i].val)
		return 0;
	return strlen(name) + 2 + strlen(prefix) + s->e[i].vlen + 2;
}

bool
secrets_put_line(const struct secrets *s, unsigned int i, const char *name, const char *prefix,
		 char *out, size_t *off)
{
	size_t n = *off, k;

	if (!s || i >= s->n || !s->e[i].val)
		return false;
	k = strlen(name);
	memcpy(out + n, name, k);
	n += k;
	memcpy(out + n, ": ", 2);
	n += 2;
	k = strlen(prefix);
	memcpy(out + n, prefix, k);
	n += k;
	memcpy(out + n, s->e[i].val, s->e[i].vlen);
	n += s->e[i].vlen;
	memcpy(out + n, "\r\n", 2);
	*off = n + 2;
	return true;
}

bool
secrets_host(const struct secrets *s, unsigned int i, const char *host)
{
	char name[HOST_MAX + 1];
	size_t n = norm(host, name);

	return n && i < s->n && hosts_match(s->e[i].hosts, s->e[i].nhosts, name, n);
}

bool
secrets_any_host(const struct secrets *s, const char *host)
{
	char name[HOST_MAX + 1];
	size_t n = s && s->n ? norm(host, name) : 0;

	for (unsigned int i = 0; n && i < s->n; i++)
		if (hosts_match(s->e[i].hosts, s->e[i].nhosts, name, n))
			return true;
	return false;
}

int
secrets_set_value(struct secrets *s, unsigned int i, const char *v, size_t len)
{
	struct secret_ent *e;
	size_t page = 4096;

	if (!s || i >= s->n || !len || len > SECRET_VALUE_MAX)
		return -EINVAL;
	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)v[k];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return -EINVAL;
	}
	e = &s->e[i];
	ent_clear_value(e);
	e->vmap = (len + page) & ~(page - 1);
	e->val = mmap(NULL, e->vmap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->val == MAP_FAILED) {
		e->val = NULL;
		return -ENOMEM;
	}
	/* no core dump, no child (CMD's clone before its exec) gets it */
	madvise(e->val, e->vmap, MADV_DONTDUMP);
	madvise(e->val, e->vmap, MADV_DONTFORK);
	mlock(e->val, e->vmap); /* best effort: never in swap */
	memcpy(e->val, v, len);
	e->vlen = len;
	return 0;
}

bool
secrets_has_value(const struct secrets *s, unsigned int i)
{
	return s && i < s->n && s->e[i].val;
}

/* ---- finding placeholders ---- */

static int
hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c;
	if (c >= 'a' && c <= 'f')
		return c;
	if (c >= 'A' && c <= 'F')
		return c + ('a' - 'A');
	return -1;
}

/* The secret (not one of host's) whose random part ends the ring at pos. */
static int
ring_match(const struct secrets *s, const struct secrets_scan *st, const char *host)
{
	uint32_t start = st->run % SECRET_RAND_HEX; /* the oldest digit's slot */
	char cur[SECRET_RAND_HEX];

	memcpy(cur, st->win + start, SECRET_RAND_HEX - start);
	memcpy(cur + SECRET_RAND_HEX - start, st->win, start);
	for (unsigned int i = 0; i < s->n; i++)
		if (!memcmp(cur, s->e[i].rnd, SECRET_RAND_HEX) &&
		    !(host && secrets_host(s, i, host)))
			return (int)i;
	return -1;
}

int
secrets_scan_feed(const struct secrets *s, struct secrets_scan *st, const char *host,
		  const void *buf, size_t len)
{
	const unsigned char *b = buf;

	if (!s || !s->n)
		return -1;
	for (size_t k = 0; k < len; k++) {
		int h = hexval(b[k]);

		if (h < 0) {
			st->run = 0;
			continue;
		}
		st->win[st->run % SECRET_RAND_HEX] = (char)h;
		st->run++;
		if (st->run >= SECRET_RAND_HEX) {
			int i = ring_match(s, st, host);

			if (i >= 0)
				return i;
			if (st->run >= 2 * SECRET_RAND_HEX)
				st->run -= SECRET_RAND_HEX; /* the ring's slots stay the same */
		}
	}
	return -1;
}

int
secrets_find(const struct secrets *s, const char *host, const void *buf, size_t len)
{
	struct secrets_scan st = {0};

	return secrets_scan_feed(s, &st, host, buf, len);
}

/* ---- the swap ---- */

/* The placeholders of host's secrets in buf (n bytes) from byte from on:
 * their values (secrets_substitute()'s result). */
static char *
substitute_from(const struct secrets *s, const char *host, char *head, size_t *len, size_t from,
		uint64_t *used)
{
	size_t need, n = *len;
	char *out, *w;
	bool any = false;

	need = n;
	for (unsigned int i = 0; i < s->n; i++) {
		const struct secret_ent *e = &s->e[i];

		if (!e->val || !secrets_host(s, i, host))
			continue;
		for (const char *p = head + from;
		     (p = memmem(p, n - (size_t)(p - head), e->ph, e->phlen)); p += e->phlen) {
			if (e->vlen > e->phlen)
				need += e->vlen - e->phlen;
			any = true;
		}
	}
	if (!any)
		return head;
	out = malloc(need + 1);
	if (!out) {
		secrets_wipe_free(head, n);
		return NULL;
	}
	memcpy(out, head, from);
	w = out + from;
	for (size_t k = from; k < n;) {
		bool hit = false;

		for (unsigned int i = 0; i < s->n && !hit; i++) {
			const struct secret_ent *e = &s->e[i];

			if (!e->val || n - k < e->phlen || memcmp(head + k, e->ph, e->phlen) ||
			    !secrets_host(s, i, host))
				continue;
			memcpy(w, e->val, e->vlen);
			w += e->vlen;
			k += e->phlen;
			if (used)
				*used |= 1ull << i;
			hit = true;
		}
		if (!hit)
			*w++ = head[k++];
	}
	*w = 0;
	secrets_wipe_free(head, n);
	*len = (size_t)(w - out);
	return out;
}

char *
secrets_substitute(const struct secrets *s, const char *host, char *head, size_t *len,
		   uint64_t *used)
{
	const char *eol;

	if (!s || !s->n || !head)
		return head;
	eol = memmem(head, *len, "\r\n", 2);
	/* the header lines only */
	return substitute_from(s, host, head, len, eol ? (size_t)(eol - head) + 2 : *len, used);
}

char *
secrets_substitute_body(const struct secrets *s, const char *host, char *body, size_t *len,
			uint64_t *used)
{
	if (!s || !s->n || !body)
		return body;
	return substitute_from(s, host, body, len, 0, used);
}

bool
secrets_any_value_for(const struct secrets *s, const char *host)
{
	for (unsigned int i = 0; s && i < s->n; i++)
		if (s->e[i].val && secrets_host(s, i, host))
			return true;
	return false;
}

void
secrets_note(struct secrets *s, unsigned int i, bool leak)
{
	if (!s || i >= s->n)
		return;
	if (leak)
		s->e[i].leaks++;
	else
		s->e[i].used++;
}

void
secrets_note_used(struct secrets *s, unsigned int i, const char *host)
{
	struct secret_ent *e;
	unsigned int k;

	if (!s || i >= s->n)
		return;
	e = &s->e[i];
	e->used++;
	for (k = 0; k < SECRET_USED_HOSTS && e->at[k].n; k++)
		if (!strcmp(e->at[k].host, host ? host : "")) {
			e->at[k].n++;
			return;
		}
	if (k == SECRET_USED_HOSTS) {
		e->at_other++;
		return;
	}
	snprintf(e->at[k].host, sizeof(e->at[k].host), "%s", host ? host : "");
	e->at[k].n = 1;
}

bool
secrets_used_at(const struct secrets *s, unsigned int i, unsigned int k, const char **host,
		uint64_t *n)
{
	const struct secret_ent *e = &s->e[i];
	unsigned int filled = 0;

	while (filled < SECRET_USED_HOSTS && e->at[filled].n)
		filled++;
	if (k < filled) {
		*host = e->at[k].host;
		*n = e->at[k].n;
		return true;
	}
	if (k == filled && e->at_other) {
		*host = NULL;
		*n = e->at_other;
		return true;
	}
	return false;
}

void
secrets_counts(const struct secrets *s, unsigned int i, uint64_t *used, uint64_t *leaks)
{
	*used = s->e[i].used;
	*leaks = s->e[i].leaks;
}
