// SPDX-License-Identifier: Apache-2.0
/* The public suffix list (see psl.h). The rules live in one open-addressed
 * table keyed by the rule's name without its "*." or "!": each key carries
 * which forms of it the list has (plain, wildcard, exception), so a lookup
 * of a host walks its suffixes right to left with one probe each. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "parse/psl.h"

#define K_PLAIN 1u
#define K_WILD	2u /* "*.key" */
#define K_EXC	4u /* "!key" */

#define PSL_MAX_FILE   (16u << 20)
#define PSL_MAX_LABELS 128

struct slot {
	uint32_t off; /* into names; 0: empty slot (names[0] is unused) */
	uint16_t len;
	uint8_t kind;
};

struct psl {
	struct slot *slots;
	size_t cap, used; /* slots: a power of two; used: keys */
	char *names;
	size_t nlen, ncap;
	size_t rules, skipped;
};

static uint32_t
hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

static struct slot *
lookup(const struct psl *p, const char *s, size_t n)
{
	size_t i;

	if (!p || !p->cap)
		return NULL;
	for (i = hash(s, n) & (p->cap - 1);; i = (i + 1) & (p->cap - 1)) {
		struct slot *sl = &p->slots[i];

		if (!sl->off)
			return sl;
		if (sl->len == n && !memcmp(p->names + sl->off, s, n))
			return sl;
	}
}

static int
grow(struct psl *p)
{
	struct slot *old = p->slots;
	size_t oldcap = p->cap, cap = oldcap ? oldcap * 2 : 1024;

	p->slots = calloc(cap, sizeof(*p->slots));
	if (!p->slots) {
		p->slots = old;
		return -ENOMEM;
	}
	p->cap = cap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].off)
			*lookup(p, p->names + old[i].off, old[i].len) = old[i];
	free(old);
	return 0;
}

static int
add(struct psl *p, const char *s, size_t n, uint8_t kind)
{
	struct slot *sl;

	if ((p->used + 1) * 2 > p->cap && grow(p))
		return -ENOMEM;
	sl = lookup(p, s, n);
	if (sl->off) {
		sl->kind |= kind;
		return 0;
	}
	if (p->nlen + n + 1 > p->ncap) {
		size_t ncap = p->ncap ? p->ncap * 2 : 65536;
		char *nn;

		while (ncap < p->nlen + n + 1)
			ncap *= 2;
		nn = realloc(p->names, ncap);
		if (!nn)
			return -ENOMEM;
		p->names = nn;
		p->ncap = ncap;
	}
	memcpy(p->names + p->nlen, s, n);
	p->names[p->nlen + n] = 0;
	sl->off = (uint32_t)p->nlen;
	sl->len = (uint16_t)n;
	sl->kind = kind;
	p->nlen += n + 1;
	p->used++;
	return 0;
}

/* Lower-cases the rule in place; false if it is no ASCII name with
 * non-empty labels. */
static bool
rule_ok(char *s, size_t n)
{
	if (!n || s[0] == '.' || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			s[i] = (char)(c - 'A' + 'a');
		else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			   (c == '.' && s[i + 1] != '.')))
			return false;
	}
	return true;
}

/* One line: its first word is the rule. */
static int
parse_line(struct psl *p, const char *line, size_t n)
{
	char rule[PSL_MAX_RULE + 2];
	size_t w = 0;
	uint8_t kind = K_PLAIN;
	char *s = rule;

	while (w < n && line[w] != ' ' && line[w] != '\t' && line[w] != '\r')
		w++;
	if (!w || (w >= 2 && line[0] == '/' && line[1] == '/'))
		return 0;
	if (w > PSL_MAX_RULE + 1 || p->rules >= PSL_MAX_RULES) {
		p->skipped++;
		return 0;
	}
	memcpy(rule, line, w);
	rule[w] = 0;
	if (s[0] == '!') {
		kind = K_EXC;
		s++;
		w--;
	} else if (w >= 2 && s[0] == '*' && s[1] == '.') {
		kind = K_WILD;
		s += 2;
		w -= 2;
	}
	if (!rule_ok(s, w)) {
		p->skipped++;
		return 0;
	}
	p->rules++;
	return add(p, s, w, kind);
}

struct psl *
psl_parse(const char *buf, size_t len)
{
	struct psl *p = calloc(1, sizeof(*p));
	size_t i = 0;

	if (!p)
		return NULL;
	p->ncap = 65536;
	p->names = malloc(p->ncap);
	if (!p->names) {
		free(p);
		return NULL;
	}
	p->names[0] = 0;
	p->nlen = 1; /* offset 0 means an empty slot */
	while (i < len) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (buf + i)) : len - i;

		if (memchr(buf + i, 0, n)) {
			p->skipped++; /* a NUL: not a line of the format */
		} else if (parse_line(p, buf + i, n)) {
			psl_free(p);
			return NULL;
		}
		i += n + 1;
	}
	return p;
}

struct psl *
psl_load(const char *path, char *errbuf, size_t errlen)
{
	struct stat st;
	struct psl *p = NULL;
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd == -1 || fstat(fd, &st)) {
		snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size > PSL_MAX_FILE) {
		snprintf(errbuf, errlen, "%s: not a regular file of at most 16 MiB", path);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		snprintf(errbuf, errlen, "out of memory");
		goto out;
	}
	while (len < (size_t)st.st_size && (n = read(fd, buf + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)n;
	p = psl_parse(buf, len);
	if (!p)
		snprintf(errbuf, errlen, "out of memory");
out:
	free(buf);
	if (fd != -1)
		close(fd);
	return p;
}

void
psl_free(struct psl *p)
{
	if (!p)
		return;
	free(p->slots);
	free(p->names);
	free(p);
}

size_t
psl_rules(const struct psl *p)
{
	return p ? p->rules : 0;
}

size_t
psl_skipped(const struct psl *p)
{
	return p ? p->skipped : 0;
}

static uint8_t
kind_of(const struct psl *p, const char *s, size_t n)
{
	const struct slot *sl;

	if (!n)
		return 0;
	sl = lookup(p, s, n);
	return sl && sl->off ? sl->kind : 0;
}

const char *
psl_suffix(const struct psl *p, const char *host)
{
	size_t len = strlen(host), pos[PSL_MAX_LABELS + 1];
	int nl = 0, best = 1, exc = 0;

	if (!len || host[0] == '.' || host[len - 1] == '.')
		return NULL;
	/* pos[k]: where the suffix of k labels starts; pos[0]: the end */
	pos[0] = len;
	for (size_t i = len; i > 0 && nl < PSL_MAX_LABELS; i--) {
		if (host[i - 1] == '.') {
			if (i == pos[nl] - (nl ? 1 : 0))
				return NULL; /* an empty label */
			pos[++nl] = i;
		}
	}
	if (nl == PSL_MAX_LABELS)
		return NULL;
	pos[++nl] = 0;
	for (int k = 1; k <= nl; k++) {
		uint8_t here = kind_of(p, host + pos[k], len - pos[k]);

		if (here & K_EXC) {
			exc = k; /* an exception prevails over every other rule */
			break;
		}
		if (here & K_PLAIN)
			best = k;
		if (k >= 2 && (kind_of(p, host + pos[k - 1], len - pos[k - 1]) & K_WILD))
			best = k;
	}
	if (exc)
		return host + pos[exc - 1];
	return host + pos[best];
}

const char *
psl_registrable(const struct psl *p, const char *host)
{
	const char *suf = psl_suffix(p, host), *q;

	if (!suf || suf == host)
		return NULL; /* the name is a public suffix */
	q = suf - 1;	     /* the dot before the suffix (or the end, for an empty suffix) */
	if (*suf == 0)
		q = suf;
	while (q > host && q[-1] != '.')
		q--;
	return q;
}
