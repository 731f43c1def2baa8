// SPDX-License-Identifier: Apache-2.0
/* Header hooks of allow host rules (policy.h, struct policy_hooks;
 * docs/inspection.md "Header hooks"): their definitions checked, copied
 * into one allocation a rule owns, and checked against the secrets once
 * the policy is whole. Applying them to a request is the proxy's
 * (proxy/http_hook.c). No I/O. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/engine.h"
#include "policy/policy.h"
#include "policy/secret.h"

/* Headers that route or frame a request: what the proxy judged and what
 * keeps client, proxy and server agreeing where a request ends. Neither
 * set nor stripped by a hook. */
static const char *const routing[] = {
	"host",	      "content-length", "transfer-encoding",
	"connection", "upgrade",	"keep-alive",
	"te",	      "trailer",	"expect",
};

static bool
is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int
name_check(const char *what, unsigned int i, const char *n, char *errbuf, size_t errlen)
{
	size_t len = n ? strlen(n) : 0;

	if (!len || len > POLICY_HOOK_NAME_MAX)
		return rule_fail(errbuf, errlen, "%s[%u]: a header name of 1 to %d bytes", what, i,
				 POLICY_HOOK_NAME_MAX);
	for (size_t k = 0; k < len; k++)
		if (!is_tchar((unsigned char)n[k]))
			return rule_fail(errbuf, errlen,
					 "%s[%u]: \"%.64s\" is no header name (letters, digits "
					 "and !#$%%&'*+-.^_`|~)",
					 what, i, n);
	for (size_t k = 0; k < sizeof(routing) / sizeof(routing[0]); k++)
		if (!strcasecmp(n, routing[k]))
			return rule_fail(errbuf, errlen,
					 "%s[%u]: %s routes or frames the request: a hook "
					 "cannot change it",
					 what, i, n);
	if (!strncasecmp(n, "proxy-", 6))
		return rule_fail(errbuf, errlen,
				 "%s[%u]: %s is for proxies, never sent on: a hook cannot "
				 "change it",
				 what, i, n);
	return 0;
}

/* Is n among the first k names of v (stripped) or of s (set)? */
static bool
named_before(const char *n, const char *const *v, unsigned int kv, const struct policy_hook_set *s,
	     unsigned int ks)
{
	for (unsigned int i = 0; i < kv; i++)
		if (!strcasecmp(n, v[i]))
			return true;
	for (unsigned int i = 0; i < ks; i++)
		if (!strcasecmp(n, s[i].name))
			return true;
	return false;
}

int
policy_hooks_check_def(const struct policy_hooks *h, char *errbuf, size_t errlen)
{
	int err;

	if (!h->nstrip && !h->nset)
		return rule_fail(errbuf, errlen, "hooks: nothing to strip or set");
	if (h->nstrip > POLICY_HOOK_MAX || h->nset > POLICY_HOOK_MAX)
		return rule_fail(errbuf, errlen, "hooks: at most %d headers stripped and %d set",
				 POLICY_HOOK_MAX, POLICY_HOOK_MAX);
	for (unsigned int i = 0; i < h->nstrip; i++) {
		err = name_check("strip_headers", i, h->strip[i], errbuf, errlen);
		if (err)
			return err;
		if (named_before(h->strip[i], h->strip, i, NULL, 0))
			return rule_fail(errbuf, errlen, "strip_headers[%u]: %s twice", i,
					 h->strip[i]);
	}
	for (unsigned int i = 0; i < h->nset; i++) {
		const struct policy_hook_set *s = &h->set[i];
		size_t pl = s->prefix ? strlen(s->prefix) : 0;

		err = name_check("set_headers", i, s->name, errbuf, errlen);
		if (err)
			return err;
		if (named_before(s->name, h->strip, h->nstrip, h->set, i))
			return rule_fail(errbuf, errlen, "set_headers[%u]: %s is %s", i, s->name,
					 named_before(s->name, h->strip, h->nstrip, NULL, 0)
						 ? "stripped too"
						 : "set twice");
		if (!s->secret || !s->secret[0])
			return rule_fail(errbuf, errlen,
					 "set_headers[%u]: %s: expected the \"secret\" whose value "
					 "it carries",
					 i, s->name);
		if (strlen(s->secret) > SECRET_NAME_MAX)
			return rule_fail(errbuf, errlen, "set_headers[%u]: %s: no secret's name", i,
					 s->name);
		if (pl > POLICY_HOOK_PREFIX_MAX)
			return rule_fail(errbuf, errlen,
					 "set_headers[%u]: %s: prefix over %d bytes", i, s->name,
					 POLICY_HOOK_PREFIX_MAX);
		for (size_t k = 0; k < pl; k++)
			if ((unsigned char)s->prefix[k] < 0x20 ||
			    (unsigned char)s->prefix[k] > 0x7e)
				return rule_fail(errbuf, errlen,
						 "set_headers[%u]: %s: the prefix takes visible "
						 "ASCII and blanks only",
						 i, s->name);
	}
	return 0;
}

/* h in one allocation; NULL when out of memory. */
struct policy_hooks *
hooks_copy(const struct policy_hooks *h)
{
	size_t len = sizeof(*h) + h->nstrip * sizeof(char *) + h->nset * sizeof(*h->set);
	struct policy_hooks *c;
	struct policy_hook_set *set;
	const char **strip;
	char *w;

	for (unsigned int i = 0; i < h->nstrip; i++)
		len += strlen(h->strip[i]) + 1;
	for (unsigned int i = 0; i < h->nset; i++)
		len += strlen(h->set[i].name) + strlen(h->set[i].secret) +
		       strlen(h->set[i].prefix ? h->set[i].prefix : "") + 3;
	c = malloc(len);
	if (!c)
		return NULL;
	set = (struct policy_hook_set *)(c + 1);
	strip = (const char **)(set + h->nset);
	w = (char *)(strip + h->nstrip);
#define PUT(dst, s)                                                                                \
	do {                                                                                       \
		size_t n_ = strlen(s) + 1;                                                         \
		(dst) = memcpy(w, (s), n_);                                                        \
		w += n_;                                                                           \
	} while (0)
	for (unsigned int i = 0; i < h->nstrip; i++)
		PUT(strip[i], h->strip[i]);
	for (unsigned int i = 0; i < h->nset; i++) {
		PUT(set[i].name, h->set[i].name);
		PUT(set[i].secret, h->set[i].secret);
		PUT(set[i].prefix, h->set[i].prefix ? h->set[i].prefix : "");
		set[i].placeholder = h->set[i].placeholder;
	}
#undef PUT
	*c = (struct policy_hooks){
		.strip = strip, .nstrip = h->nstrip, .set = set, .nset = h->nset};
	return c;
}

/* Is x under y (a name of more labels ending in ".y")? */
static bool
under(const char *x, const char *y)
{
	size_t lx = strlen(x), ly = strlen(y);

	return lx > ly + 1 && x[lx - ly - 1] == '.' && !strcmp(x + lx - ly, y);
}

/* Is every name rule r allows one of s's hosts? */
static bool
covers(const struct policy_secret *s, const struct rule *r)
{
	for (unsigned int i = 0; i < s->nhosts; i++) {
		const char *h = s->hosts[i];
		int star = !strncmp(h, "**.", 3) ? 2 : !strncmp(h, "*.", 2) ? 1 : 0;
		const char *y = h + (star == 2 ? 3 : star == 1 ? 2 : 0);

		if (r->kind == RK_EXACT &&
		    (star ? under(r->name, y) || (star == 2 && !strcmp(r->name, y))
			  : !strcmp(r->name, y)))
			return true;
		/* "*.x" names x's subdomains, "**.x" x too */
		if (r->kind == RK_WILD && star &&
		    (under(r->name, y) || (!strcmp(r->name, y) && (star == 2 || r->star == 1))))
			return true;
	}
	return false;
}

int
policy_hooks_check(const struct policy *p, char *errbuf, size_t errlen)
{
	for (unsigned int i = 0; i < p->nrules; i++) {
		const struct rule *r = p->rules[i];
		const struct policy_hooks *h = r->pub.hooks;

		for (unsigned int k = 0; h && k < h->nset; k++) {
			const struct policy_secret *s = NULL;

			for (unsigned int j = 0; j < p->nsecrets && !s; j++)
				if (!strcmp(p->secrets[j].name, h->set[k].secret))
					s = &p->secrets[j];
			if (!s)
				return rule_fail(
					errbuf, errlen,
					"rule %u \"%s\": header %s: no secret %s (define it "
					"in \"secrets\" or with --secret)",
					r->pub.index, r->pub.text, h->set[k].name,
					h->set[k].secret);
			if (r->kind == RK_QMARK || !covers(s, r))
				return rule_fail(
					errbuf, errlen,
					"rule %u \"%s\": header %s: secret %s may not go to "
					"every name the rule allows (its hosts: %s%s)",
					r->pub.index, r->pub.text, h->set[k].name, s->name,
					s->hosts[0], s->nhosts > 1 ? ", ..." : "");
		}
	}
	return 0;
}
