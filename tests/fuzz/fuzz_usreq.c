// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for the user socket's messages (daemon/usreq.c): the
 * bytes a user in the group sends the root service. Invariants: a request
 * that parses has 1 to USREQ_MAX_ARGS arguments and at most USREQ_MAX_ENV
 * environment entries, each a NUL-free string (an entry holds '='), both
 * lists NULL-terminated, nfds within its bounds, and the caller's limits,
 * if they came, a umask up to 0777 and no soft limit over its hard one; a failed parse leaves
 * nothing allocated and says why; a parsed signal is INT, TERM, HUP or
 * QUIT. */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/usreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usreq r;
	char err[256] = "";
	int sig = 0, rc = usreq_parse((const char *)data, size, &r, err, sizeof(err));

	if (rc == 0 && (r.status || r.log)) { /* {"status": true}, {"log": true}: no run */
		if (r.args || r.env || r.nargs || r.nenv || r.nfds || (r.follow && !r.log) ||
		    (r.status && r.log))
			abort();
	} else if (rc == 0) {
		if (r.nargs < 1 || r.nargs > USREQ_MAX_ARGS || r.nenv > USREQ_MAX_ENV ||
		    r.args[r.nargs] || r.env[r.nenv] || r.nfds < USREQ_MIN_FDS ||
		    r.nfds > USREQ_MAX_FDS)
			abort();
		for (int i = 0; i < r.nargs; i++)
			(void)strlen(r.args[i]);
		if (r.limits.set && r.limits.umask > 0777)
			abort();
		for (int i = 0; r.limits.set && i < PLIMITS_N; i++)
			if (r.limits.cur[i] > r.limits.max[i])
				abort();
		for (int i = 0; i < r.nenv; i++)
			if (!strchr(r.env[i], '='))
				abort();
		usreq_free(&r);
	} else if (!err[0] || r.args || r.env) {
		abort();
	}
	err[0] = 0;
	if (usreq_parse_signal((const char *)data, size, &sig, err, sizeof(err)) == 0) {
		if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP && sig != SIGQUIT)
			abort();
	} else if (!err[0]) {
		abort();
	}
	return 0;
}
