// SPDX-License-Identifier: Apache-2.0
/* HTTPS inspection: the TLS connections the policy allows only inspected
 * (policy_decision.inspect: a host rule with methods, paths or "inspect",
 * a deny rule with methods or paths, a limited policy) are ended here with
 * a certificate of the run's CA (ca.h), and each HTTP/1.1 request inside
 * is judged on its own by the proxy's conn_decide() as plain HTTP is, then
 * sent to the real server over a TLS connection of its own, verified
 * against the system's store (or --upstream-ca). A layer over the proxy:
 * it takes connections the proxy hands it (proxy_opts.inspect, the hook
 * inspect_start()) and speaks through conn.h; the proxy knows nothing of
 * it. docs/inspection.md has the design, what is trusted and the limits. */
#ifndef INSPECT_H
#define INSPECT_H

#include <stddef.h>

struct conn;
struct inspector;

/* Upstream connections kept idle between requests (inspect/pool.c): per
 * name and port, in all, for how long. The proxy keeps IX_POOL_MAX
 * descriptors aside for them. */
#define IX_POOL_PER_HOST 32
#define IX_POOL_MAX	 128
#define IX_POOL_IDLE_S	 15

struct inspect_opts {
	const char *ca_cert, *ca_key; /* --ca CERT,KEY; NULL: a CA made now, in memory */
	const char *upstream_ca;      /* --upstream-ca FILE; NULL: the system's store */
	int pool_max; /* upstream connections kept idle, at most (IX_POOL_MAX; 0: none) */
};

/* The CA and the two TLS contexts (towards CMD, towards servers). NULL
 * with errbuf set. */
struct inspector *inspector_new(const struct inspect_opts *o, char *errbuf, size_t errlen);
void inspector_free(struct inspector *in);

/* The CA's certificate in PEM, for CMD to trust (malloc'd; NULL when out
 * of memory). */
char *inspector_ca_pem(const struct inspector *in, size_t *len);

/* The proxy's hook (proxy_opts.inspect.start, arg the inspector): takes
 * over c, whose TLS the policy allowed only inspected. */
void inspect_start(void *inspector, struct conn *c);

/* What was inspected, for the summary. */
struct inspect_stats {
	unsigned long sessions;	       /* client TLS sessions ended here */
	unsigned long requests;	       /* requests judged inside them */
	unsigned long upstream_failed; /* upstream TLS that failed (502 upstream-tls-failed) */
	unsigned long reused;	       /* requests sent on a kept upstream connection */
	unsigned long minted;	       /* leaf certificates made */
};
void inspector_stats(const struct inspector *in, struct inspect_stats *st);

#endif /* INSPECT_H */
