// SPDX-License-Identifier: Apache-2.0
/* The messages of the user socket (daemon/usersock.c), as bytes a user
 * wrote: one request to run ({"args": [...], "env": [...], "nfds": N,
 * and the caller's "umask": M and "rlimits": [[CUR, MAX], ...] together,
 * -1 for unlimited}), of its runs ({"status": true}) or their decision
 * lines ({"log": true} and "follow": true or false),
 * then signals to forward ({"signal": N}); and root's own service's run
 * taken up by a daemon that did not start it ({"adopt": ...}). Pure parsing, fuzzed
 * (tests/fuzz/fuzz_usreq.c); whatever the bytes, a request comes out
 * whole and within the limits or not at all. */
#ifndef USREQ_H
#define USREQ_H

#include <stddef.h>

#include "lib/plimits.h"

#define USREQ_MAX_BYTES 131072 /* one message, the environment included */
#define USREQ_MAX_ARGS	4096
#define USREQ_MAX_ENV	4096
#define USREQ_MIN_FDS	4 /* stdin, stdout, stderr, the working directory */
/* and what the client opened (fd:N): --policy, --log, --summary,
 * --suggest-policy, --upstream-ca, --upstream-proxy-auth, --log-ca, --ca's
 * two, and a value for each of 32 secrets */
#define USREQ_MAX_FDS	45

struct usreq {
	char **args; /* run's arguments (options, "--", CMD...), NULL-terminated */
	int nargs;
	char **env; /* CMD's environment, "NAME=VALUE" each, NULL-terminated */
	int nenv;
	int nfds;	       /* descriptors sent with it */
	struct plimits limits; /* the caller's umask and rlimits (.set: they came) */
	bool status;	       /* {"status": true}: the caller's runs listed, nothing else */
	bool log, follow;      /* {"log": true, "follow": B}: the caller's runs' lines */
};

/* Parses one request of len bytes. Returns 0, or -EINVAL with err set
 * (nothing to free then). */
int usreq_parse(const char *buf, size_t len, struct usreq *r, char *err, size_t errlen);
void usreq_free(struct usreq *r);

/* Parses {"signal": N}: one of SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH
 * (--ask: the terminal's size changed) into *sig.
 * Returns 0 or -EINVAL with err set. */
int usreq_parse_signal(const char *buf, size_t len, int *sig, char *err, size_t errlen);

/* {"adopt": {"user": NAME, "command": TEXT, "started": SECONDS}}: a run
 * of the service's (cli/svcrun.c, connecting as root) that a daemon
 * started after its own is to list as NAME's, with its lines. */
struct usreq_adopt {
	char user[64];	   /* the account CMD runs as */
	char command[256]; /* for status (cut to fit) */
	long long started; /* its start, seconds since the epoch */
};

/* Parses {"adopt": ...}. Returns 0, or -EINVAL with err set (a zeroed). */
int usreq_parse_adopt(const char *buf, size_t len, struct usreq_adopt *a, char *err, size_t errlen);

#endif /* USREQ_H */
