// SPDX-License-Identifier: Apache-2.0
/* A decision in words: the HTTP header and the sentence of each reason,
 * and untrusted strings made safe to print. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/engine.h"
#include "policy/policy.h"

const char *
policy_reason_header(enum policy_reason r)
{
	switch (r) {
	case POLICY_R_ALLOWED:
		return "";
	case POLICY_R_NO_RULE:
		return "blocked-by-allowlist";
	case POLICY_R_DENY_RULE:
		return "blocked-by-denylist";
	case POLICY_R_METHOD:
	case POLICY_R_LIMITED:
		return "blocked-by-method-policy";
	case POLICY_R_PATH:
		return "blocked-by-path-policy";
	case POLICY_R_SECRET:
		return "blocked-by-secret-policy";
	case POLICY_R_HOOK:
		return "blocked-by-header-policy";
	case POLICY_R_LOCAL:
	case POLICY_R_V4_IN_V6:
	case POLICY_R_NO_IPV6:
		break;
	}
	return "blocked-by-policy";
}

/* Why a header hook refused, in words (the secret named, never its value). */
static const char *
hook_words(const struct policy_decision *d, char b[160])
{
	const char *s = d->secret ? d->secret : "?";

	switch (d->hook_fail) {
	case POLICY_HOOK_NO_SECRET:
		snprintf(b, 160, "secret %s has no value for this host", s);
		break;
	case POLICY_HOOK_PLAIN:
		snprintf(b, 160, "secret %s goes only inside inspected HTTPS, not plain HTTP", s);
		break;
	case POLICY_HOOK_MISSING:
		snprintf(b, 160, "the placeholder of secret %s is required and was not sent", s);
		break;
	case POLICY_HOOK_MISMATCH:
		snprintf(b, 160, "it holds something else than the placeholder of secret %s", s);
		break;
	case POLICY_HOOK_TWICE:
		snprintf(b, 160, "sent more than once (the placeholder of secret %s goes once)", s);
		break;
	default:
		snprintf(b, 160, "refused");
		break;
	}
	return b;
}

const char *
policy_reason_words(const struct policy_decision *d, const char *method, char *buf, size_t len)
{
	unsigned int index = d->rule ? d->rule->index : 0;
	const char *text = d->rule ? d->rule->text : "";

	switch (d->reason) {
	case POLICY_R_ALLOWED:
		snprintf(buf, len, "rule %u \"%s\"", index, text);
		break;
	case POLICY_R_DENY_RULE:
		snprintf(buf, len, "denied by rule %u \"%s\"", index, text);
		break;
	case POLICY_R_METHOD:
		if (method)
			snprintf(buf, len, "method %s not allowed for it", method);
		else
			snprintf(buf, len, "method not allowed for this host");
		break;
	case POLICY_R_PATH:
		snprintf(buf, len, "path not allowed for it by rule %u \"%s\"", index, text);
		break;
	case POLICY_R_LIMITED:
		snprintf(buf, len, "method %s not allowed: read-only (limited mode)",
			 method ? method : "?");
		break;
	case POLICY_R_LOCAL:
		snprintf(buf, len, "local or private address");
		break;
	case POLICY_R_V4_IN_V6:
		snprintf(buf, len, "IPv4 carried in IPv6 (NAT64, 6to4, Teredo) is refused");
		break;
	case POLICY_R_NO_IPV6:
		snprintf(buf, len, "IPv6 is denied (use --ipv6)");
		break;
	case POLICY_R_SECRET:
		snprintf(buf, len,
			 "the placeholder of secret %s, which may not go there: an exfiltration "
			 "attempt",
			 d->secret ? d->secret : "?");
		break;
	case POLICY_R_HOOK: {
		char why[160];

		snprintf(buf, len, "header %s: %s (rule %u \"%s\")", d->header ? d->header : "?",
			 hook_words(d, why), index, text);
		break;
	}
	default:
		snprintf(buf, len, "no rule allows it");
		break;
	}
	return buf;
}

const char *
policy_safe_str(const char *in, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n && in[i] && o + 1 < outlen; i++) {
		unsigned char c = (unsigned char)in[i];

		out[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (outlen)
		out[o] = 0;
	return out;
}

void
policy_safe_comm(const char comm[16], char out[17])
{
	policy_safe_str(comm, 16, out, 17);
}
