// SPDX-License-Identifier: Apache-2.0
/* The policy's word on a direct path (see kpath.h), and the upstream
 * proxy's routes: a destination that goes through it has none. */
#include <string.h>

#include "kernel/kpath.h"
#include "lib/sockaddr.h"

bool
kpath_allows(const struct policy *p, const struct sockaddr_storage *ss, const char *name,
	     enum policy_proto proto, struct policy_decision *d)
{
	struct policy_query q = {
		.host = name,
		.addr = (const struct sockaddr *)ss,
		.port = sockaddr_port(ss),
		.proto = proto,
	};
	struct policy_decision mine;

	if (!d)
		d = &mine;
	if (policy_decide(p, &q, d)) {
		memset(d, 0, sizeof(*d));
		d->action = POLICY_DENY;
		d->reason = POLICY_R_NO_RULE;
	}
	/* an inspected destination is the proxy's: its requests are judged
	 * inside TLS, which no direct path can do; with an upstream proxy, only
	 * its exceptions have a direct route */
	return d->action == POLICY_ALLOW && !d->inspect &&
	       !policy_via_upstream(p, name, (const struct sockaddr *)ss);
}
