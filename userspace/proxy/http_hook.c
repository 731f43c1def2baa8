// SPDX-License-Identifier: Apache-2.0
/* A rule's header hooks on one request (http_hook.h): judged with the
 * request, applied in the copy of its head that goes to the server. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/secret.h"
#include "proxy/http_fwd.h"
#include "proxy/http_hook.h"

static bool
named(const struct http_header *h, const char *name)
{
	return h->name_len == strlen(name) && !strncasecmp(h->name, name, h->name_len);
}

/* Set header k of h for req: can it be? */
static enum policy_hook_fail
judge_set(const struct policy_hook_set *set, const struct secrets *s, const char *host, bool tls,
	  const struct http_request *req)
{
	const struct http_header *got = NULL;
	const char *ph;
	size_t pl, phl;
	int i = secrets_index(s, set->secret);

	if (!tls)
		return POLICY_HOOK_PLAIN;
	if (i < 0 || !secrets_has_value(s, (unsigned int)i) ||
	    !secrets_host(s, (unsigned int)i, host))
		return POLICY_HOOK_NO_SECRET;
	if (!set->placeholder)
		return POLICY_HOOK_OK;
	for (size_t k = 0; k < req->nheaders; k++) {
		if (!named(&req->headers[k], set->name))
			continue;
		if (got)
			return POLICY_HOOK_TWICE;
		got = &req->headers[k];
	}
	if (!got)
		return POLICY_HOOK_MISSING;
	ph = secrets_placeholder(s, (unsigned int)i);
	pl = strlen(set->prefix);
	phl = strlen(ph);
	if (got->value_len != pl + phl || memcmp(got->value, set->prefix, pl) ||
	    memcmp(got->value + pl, ph, phl))
		return POLICY_HOOK_MISMATCH;
	return POLICY_HOOK_OK;
}

enum policy_hook_fail
http_hook_judge(const struct policy_hooks *h, const struct secrets *s, const char *host, bool tls,
		const struct http_request *req, unsigned int *which)
{
	for (unsigned int k = 0; h && k < h->nset; k++) {
		enum policy_hook_fail f = judge_set(&h->set[k], s, host, tls, req);

		if (f != POLICY_HOOK_OK) {
			*which = k;
			return f;
		}
	}
	return POLICY_HOOK_OK;
}

char *
http_hook_head(const struct http_request *req, bool websocket, const struct policy_hooks *h,
	       const struct secrets *s, const char *host, bool tls, size_t *len, uint64_t *used)
{
	bool skip[HTTP_MAX_HEADERS] = {0};
	int idx[POLICY_HOOK_MAX]; /* the secret of each header set, or -1: not set */
	size_t extralen = 0, off = 0;
	char *extra, *out;
	int e;

	if (!h)
		return http_fwd_head(req, websocket, len);
	for (size_t k = 0; k < req->nheaders; k++) {
		for (unsigned int i = 0; i < h->nstrip && !skip[k]; i++)
			skip[k] = named(&req->headers[k], h->strip[i]);
		for (unsigned int i = 0; i < h->nset && !skip[k]; i++)
			skip[k] = named(&req->headers[k], h->set[i].name);
	}
	for (unsigned int k = 0; k < h->nset; k++) {
		idx[k] = judge_set(&h->set[k], s, host, tls, req) == POLICY_HOOK_OK
				 ? secrets_index(s, h->set[k].secret)
				 : -1;
		if (idx[k] >= 0)
			extralen += secrets_line_len(s, (unsigned int)idx[k], h->set[k].name,
						     h->set[k].prefix);
	}
	extra = malloc(extralen + 1);
	if (!extra) {
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned int k = 0; k < h->nset; k++)
		if (idx[k] >= 0 &&
		    secrets_put_line(s, (unsigned int)idx[k], h->set[k].name, h->set[k].prefix,
				     extra, &off) &&
		    used)
			*used |= 1ull << idx[k];
	out = http_fwd_head_edit(req, websocket, skip, extra, off, len);
	e = errno;
	secrets_wipe_free(extra, extralen + 1);
	errno = e;
	return out;
}
