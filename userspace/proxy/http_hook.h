// SPDX-License-Identifier: Apache-2.0
/* A rule's header hooks (policy.h, struct policy_hooks) applied to one
 * request: whether they can be (judged with the request, so that a
 * request they cannot be applied to is a denial with its decision line),
 * and the head that goes to the server with them applied (http_fwd.h).
 * docs/inspection.md "Header hooks". */
#ifndef HTTP_HOOK_H
#define HTTP_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse/parse.h"
#include "policy/policy.h"

struct secrets;

/* Can h be applied to req for host, inside inspected TLS (tls) or in
 * plain HTTP? POLICY_HOOK_OK, or why not with *which the index of the
 * set header that cannot be set: a set header needs TLS, a secret with a
 * value whose hosts include host, and when it requires the placeholder,
 * exactly one header of its name whose value is its prefix and the
 * secret's placeholder. Strip never fails. */
enum policy_hook_fail http_hook_judge(const struct policy_hooks *h, const struct secrets *s,
				      const char *host, bool tls, const struct http_request *req,
				      unsigned int *which);

/* http_fwd_head() for req with h applied (h NULL: none): the headers h
 * strips or sets left out, and each set header http_hook_judge() would
 * accept added as "Name: PREFIXVALUE" (one it would not is left out: an
 * --audit run lets such a request through, without the value). The
 * secrets put in are or'ed into *used (bit i; used may be NULL). A
 * malloc'd buffer of *len bytes that may hold a secret's value: free it
 * with secrets_wipe_free(). NULL with errno ENOMEM. */
char *http_hook_head(const struct http_request *req, bool websocket, const struct policy_hooks *h,
		     const struct secrets *s, const char *host, bool tls, size_t *len,
		     uint64_t *used);

#endif /* HTTP_HOOK_H */
