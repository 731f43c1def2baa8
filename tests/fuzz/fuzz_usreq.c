// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for the user socket's messages (daemon/usreq.c): the
 * bytes a user in the group sends the root service. Invariants: a request
 * that parses has 1 to USREQ_MAX_ARGS arguments and at most USREQ_MAX_ENV
 * environment entries, each a NUL-free string (an entry holds '='), both
 * lists NULL-terminated, nfds within its bounds, and the caller's limits,
 * if they came, a umask up to 0777 and no soft limit over its hard one; a
 * failed parse leaves nothing allocated and says why; a parsed signal is
 * INT, TERM, HUP, QUIT or WINCH; a parsed adopt names a user, within its
 * bounds. The same bytes as users.json (daemon/usercfg.c, root's file, its
 * "users" entries the newest part): parsed, 1 to USERCFG_MAX_GROUPS
 * groups, the bounds of each key, each user's view within them and its
 * keys the entry's where it set them; refused, nothing kept and why said. */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/usersock.h"
#include "daemon/usreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_ceiling(const struct usercfg *c)
{
	if (c->max_runs < 1 || c->max_runs > 64 || c->max_conns < 0 || c->max_conns > 1000000 ||
	    c->ndeny < 0 || c->ndeny > USERCFG_MAX_DENY || c->nallow < 0 ||
	    c->nallow > USERCFG_MAX_ALLOW || (c->nallow && !c->has_allow))
		abort();
	for (int i = 0; i < c->ndeny; i++)
		if (!c->deny[i] || !c->deny[i][0])
			abort();
	for (int i = 0; i < c->nallow; i++)
		if (!c->allow[i] || !c->allow[i][0])
			abort();
}

static void
fuzz_usercfg(const uint8_t *data, size_t size)
{
	struct usercfg c, v;
	char err[512] = "";

	if (usercfg_parse((const char *)data, size, &c, err, sizeof(err))) {
		if (!err[0] || c.users || c.nusers || c.ngroups)
			abort();
		return;
	}
	if (c.ngroups < 1 || c.ngroups > USERCFG_MAX_GROUPS || c.nusers < 0 ||
	    c.nusers > USERCFG_MAX_USERS || (c.nusers && !c.users))
		abort();
	check_ceiling(&c);
	for (int i = 0; i < c.nusers; i++) {
		const struct usercfg_user *u = &c.users[i];

		if (!u->name || !u->name[0] || strlen(u->name) > 63 || u->c.ngroups ||
		    u->c.nusers || (u->set & ~0x3fu) || usercfg_user(&c, u->name) != u)
			abort();
		usercfg_for(&c, u->name, &v);
		check_ceiling(&v);
		if (v.users || v.nusers || v.ngroups != c.ngroups ||
		    ((u->set & USERCFG_SET_MAX_RUNS) && v.max_runs != u->c.max_runs) ||
		    (!(u->set & USERCFG_SET_MAX_RUNS) && v.max_runs != c.max_runs) ||
		    ((u->set & USERCFG_SET_DENY) && v.ndeny != u->c.ndeny) ||
		    (!(u->set & USERCFG_SET_DENY) && v.ndeny != c.ndeny) ||
		    ((u->set & USERCFG_SET_ALLOW) && !v.has_allow) ||
		    v.ask != ((u->set & USERCFG_SET_ASK) ? u->c.ask : c.ask) ||
		    v.audit != ((u->set & USERCFG_SET_AUDIT) ? u->c.audit : c.audit) ||
		    (!(u->set & USERCFG_SET_ALLOW) && v.has_allow != c.has_allow))
			abort();
	}
	usercfg_free(&c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usreq r;
	char err[256] = "";
	int sig = 0, rc = usreq_parse((const char *)data, size, &r, err, sizeof(err));
	struct usreq_adopt a;

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
		if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP && sig != SIGQUIT &&
		    sig != SIGWINCH)
			abort();
	} else if (!err[0]) {
		abort();
	}
	err[0] = 0;
	if (usreq_parse_adopt((const char *)data, size, &a, err, sizeof(err)) == 0) {
		if (!a.user[0] || strnlen(a.user, sizeof(a.user)) == sizeof(a.user) ||
		    strnlen(a.command, sizeof(a.command)) == sizeof(a.command) || a.started < 0)
			abort();
	} else if (!err[0] || a.user[0] || a.command[0] || a.started) {
		abort();
	}
	fuzz_usercfg(data, size);
	return 0;
}
