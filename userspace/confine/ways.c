// SPDX-License-Identifier: Apache-2.0
/* How a target's proxy reaches beyond itself, set up when the target is
 * made: the upstream proxy and its credentials (--upstream-proxy), and the
 * HTTPS inspector with its CA (--ca, or one made for the run). Declared in
 * core.h; target.c calls them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "inspect/inspect.h"
#include "lib/log.h"
#include "confine/core.h"

/* --upstream-proxy and its credentials, read when the target is made (a
 * daemon reads them again when it attaches a target again: a changed
 * password, a reload that changes an upstream option). */
int
target_upstream_read(struct target *t, char *errbuf, size_t errlen)
{
	const char *from;
	char err[400], path[32];

	if (!t->o->upstream_proxy)
		return 0;
	if (proxyurl_parse(t->o->upstream_proxy, &t->upstream, err, sizeof(err)) ||
	    proxyurl_credentials(target_file_path(t->o->upstream_auth, path, sizeof(path)),
				 t->upstream_auth, sizeof(t->upstream_auth), &from, err,
				 sizeof(err))) {
		snprintf(errbuf, errlen, "--upstream-proxy: %s", err);
		return -EINVAL;
	}
	log_info("%supstream proxy %s, %s%s", t->env->label, t->upstream.text,
		 from ? "credentials from " : "", from ? from : "no credentials");
	return 0;
}

/* The inspector, with --ca's CA or one made now. 0 or -EINVAL with errbuf
 * set. */
int
target_open_inspector(struct target *t, char *errbuf, size_t errlen)
{
	/* the proxy keeps descriptors aside for the pool when it is made
	 * after the inspector (target.c), not for one a reload began */
	char cert[4096], *key, paths[3][32];
	struct inspect_opts io = {
		.upstream_ca = target_file_path(t->o->upstream_ca, paths[0], sizeof(paths[0])),
		.pool_max = t->px ? 0 : IX_POOL_MAX};

	if (t->o->ca) {
		snprintf(cert, sizeof(cert), "%s", t->o->ca);
		key = strchr(cert, ','); /* target_opts_check() saw it */
		*key++ = 0;
		io.ca_cert = target_file_path(cert, paths[1], sizeof(paths[1]));
		io.ca_key = target_file_path(key, paths[2], sizeof(paths[2]));
	}
	t->ins = inspector_new(&io, errbuf, errlen);
	return t->ins ? 0 : -EINVAL;
}

/* The proxy's HTTPS inspection hook: the inspector, made now if a change
 * of the policy began the inspection (nothing confined trusts a CA made
 * now: said once). */
void
target_inspect_hook(void *arg, struct conn *c)
{
	struct target *t = arg;
	char err[256];

	if (!t->ins) {
		if (target_open_inspector(t, err, sizeof(err)))
			log_warnx("%sHTTPS inspection: %s", t->env->label, err);
		else if (!t->o->ca)
			log_warnx(
				"%sHTTPS inspection began with a new policy: its CA was made now, "
				"and nothing confined trusts it (give the daemon --ca CERT,KEY)",
				t->env->label);
	}
	inspect_start(t->ins, c);
}
