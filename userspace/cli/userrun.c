// SPDX-License-Identifier: Apache-2.0
/* What a user may ask the service's run for (see userrun.h): the
 * arguments parsed by run's own tables (so that no spelling, --opt=V,
 * abbreviation or order gets past), then every option that would have
 * root open a path, leave the sandbox or go beyond users.json refused.
 * Paths come only as fd:N, a descriptor the client opened as the user. */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/run.h"
#include "cli/userrun.h"
#include "kernel/unixsvc_list.h" /* UNIXSVC_PATH_MAX */
#include "lib/log.h"
#include "lib/opts.h"
#include "policy/secret.h"

/* NULL, or "fd:N" with N one of the files sent (4 to nfds-1). */
static bool
fd_ok(const char *v, int nfds)
{
	char *end;
	long n;

	if (!v)
		return true;
	if (strncmp(v, "fd:", 3) || !isdigit((unsigned char)v[3]))
		return false;
	n = strtol(v + 3, &end, 10);
	return !*end && n >= 4 && n < nfds;
}

/* --secret NAME=fd:N@HOSTS, N one of the files sent (the value the
 * client read). */
static bool
secret_fd_ok(const char *v, int nfds)
{
	const char *from;
	size_t name_len, from_len;
	char src[16];

	if (secret_arg_split(v, &name_len, &from, &from_len) || from_len >= sizeof(src))
		return false;
	snprintf(src, sizeof(src), "%.*s", (int)from_len, from);
	return fd_ok(src, nfds);
}

/* --ca's "fd:K,fd:L", each one of the files sent. */
static bool
ca_ok(const char *v, int nfds)
{
	const char *comma = strchr(v, ',');
	char cert[16];

	if (!comma || comma - v >= (ptrdiff_t)sizeof(cert))
		return false;
	snprintf(cert, sizeof(cert), "%.*s", (int)(comma - v), v);
	return fd_ok(cert, nfds) && fd_ok(comma + 1, nfds);
}

/* The first option of o a user may not have, or NULL. */
static const char *
refused_option(const struct run_opts *o, int nfds, const struct usercfg *c)
{
	static char unix_why[UNIXSVC_PATH_MAX + 128]; /* the daemon's loop: one at a time */
	if (o->user)
		return "--user (CMD runs as you)";
	if (o->cgroup)
		return "--cgroup (each run has a fresh cgroup of its own)";
	if (o->allow_sudo)
		return "--allow-sudo";
	if (o->env_fd || o->limits_text || o->ceiling_text || o->log_tap || o->conn_fd ||
	    o->service_socket)
		return "--service-env-fd, --service-limits, --service-ceiling, --service-log-fd, "
		       "--service-conn-fd and --service-socket (the service's own)";
	if (o->ask && !c->ask)
		return "--ask (users.json: \"ask\": false)";
	if (c->max_conns && o->t.max_conns > c->max_conns)
		return "--max-conns above users.json's max_conns_per_run";
	if (o->t.audit && !c->audit)
		return "--audit (users.json: \"audit\": false)";
	if (!fd_ok(o->t.policy_file, nfds))
		return "--policy other than a file the client opened (fd:N)";
	/* syslog: /dev/log, where anybody may write; not syslog:PATH; an
	 * OTLP collector: a connection the user could make themselves */
	if (!fd_ok(o->t.log_file, nfds) && strcmp(o->t.log_file, "syslog") &&
	    strncmp(o->t.log_file, "otlp:", 5))
		return "--log other than a file the client opened (fd:N), syslog or otlp:URL";
	if (!fd_ok(o->t.summary_file, nfds))
		return "--summary other than a file the client opened (fd:N)";
	if (!fd_ok(o->t.suggest_policy, nfds))
		return "--suggest-policy other than a file the client opened (fd:N)";
	if (!fd_ok(o->t.log_ca, nfds))
		return "--log-ca other than a file the client opened (fd:N)";
	/* --deny-unix only narrows (its masks are found as the user: run's
	 * sandbox_unix_masks_as); --allow-unix widens, as the ceiling lets it */
	for (int i = 0; i < o->t.nallow_unix; i++)
		if (!usercfg_unix_ok(c, o->t.allow_unix[i])) {
			snprintf(unix_why, sizeof(unix_why),
				 "--allow-unix %.*s (users.json: \"allow_unix\" %s)",
				 UNIXSVC_PATH_MAX, o->t.allow_unix[i],
				 c->has_allow_unix ? "does not name it"
						   : "is not set, and the ceiling has allow or "
						     "deny rules");
			return unix_why;
		}
	/* listeners of the caller's own would take CMD's connections past the
	 * ceiling's rules: theirs only where it has none */
	if ((o->t.tproxy_port || o->t.dns_port || o->t.proxy_ports[0]) && !usercfg_open(c))
		return "--transparent-port, --dns-port and --proxy-port (your own listeners would "
		       "take CMD's connections past users.json's allow and deny rules)";
	/* files root would open for the caller: the client's, as fd:N */
	if (!fd_ok(o->t.upstream_ca, nfds))
		return "--upstream-ca other than a file the client opened (fd:N)";
	if (!fd_ok(o->t.upstream_auth, nfds))
		return "--upstream-proxy-auth other than a file the client opened (fd:N)";
	if (o->t.ca && !ca_ok(o->t.ca, nfds))
		return "--ca other than two files the client opened (fd:K,fd:L)";
	/* a file root would create: CMD's environment has the placeholders */
	if (o->t.secret_placeholders)
		return "--secret-placeholders (a file root would write; CMD's environment has "
		       "them)";
	for (int i = 0; i < o->nclient_secrets; i++) {
		const char *eq = strchr(o->client_secrets[i], '=');

		if (!eq || !fd_ok(eq + 1, nfds))
			return "--client-secret other than NAME=fd:N with N a value the client "
			       "read";
	}
	for (int i = 0; i < o->t.nsecrets; i++)
		if (!secret_fd_ok(o->t.secrets[i], nfds))
			return "--secret other than NAME=fd:N@HOST with N a value the client read "
			       "(the client reads env:, file: and command: as you)";
	return NULL;
}

int
userrun_check(char **args, int nargs, int nfds, const struct usercfg *c, char *err, size_t errlen)
{
	char **argv = calloc((size_t)nargs + 2, sizeof(*argv));
	struct run_opts *o = calloc(1, sizeof(*o));
	int verbose = log_verbose, rc = -ENOMEM;
	const char *why;

	snprintf(err, errlen, "out of memory");
	if (!argv || !o)
		goto out;
	argv[0] = "run";
	memcpy(argv + 1, args, (size_t)nargs * sizeof(*argv));
	rc = run_parse(nargs + 1, argv, o, NULL);
	log_verbose = verbose; /* -v is the run's, not the daemon's */
	if (rc == OPTS_USAGE) {
		snprintf(err, errlen, "not options of run (see egressctl run --help)");
		rc = -EINVAL;
		goto out;
	}
	rc = 0;
	why = refused_option(o, nfds, c);
	if (why) {
		snprintf(err, errlen, "refused through the service: %s", why);
		rc = -EPERM;
	}
out:
	free(argv);
	free(o);
	return rc;
}
