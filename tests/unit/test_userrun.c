// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the user socket's pure parts: daemon/usreq.c (a request
 * and a signal message: the shapes accepted, every refusal and its words),
 * daemon/usercfg.c (users.json's keys, defaults and refusals) and
 * cli/userrun.c's check of a user's arguments (what reaches beyond the
 * user is refused however it is spelled; fd:N only of the files sent;
 * the ceiling's --audit), and that the daemon's -v is left alone. */
#include <errno.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/userrun.h"
#include "daemon/usersock.h"
#include "daemon/usreq.h"
#include "lib/log.h"
#include "lib/plimits.h"

#define X4(x)	x "," x "," x "," x
#define RL16(x) "[" X4(x) "," X4(x) "," X4(x) "," X4(x) "]"
#define S4(x)	x " " x " " x " " x
#define PL16(x) S4(x) " " S4(x) " " S4(x) " " S4(x)

static int
parse(const char *text, struct usreq *r, char *err, size_t errlen)
{
	return usreq_parse(text, strlen(text), r, err, errlen);
}

static void
test_request_ok(void **state)
{
	struct usreq r;
	char err[256];

	(void)state;
	assert_int_equal(parse("{\"args\":[\"--allow\",\"a.test\",\"--\",\"id\"],"
			       "\"env\":[\"A=1\",\"B=\"],\"nfds\":5}\n",
			       &r, err, sizeof(err)),
			 0);
	assert_int_equal(r.nargs, 4);
	assert_string_equal(r.args[3], "id");
	assert_null(r.args[4]);
	assert_int_equal(r.nenv, 2);
	assert_string_equal(r.env[1], "B=");
	assert_null(r.env[2]);
	assert_int_equal(r.nfds, 5);
	usreq_free(&r);
	assert_int_equal(parse("{\"status\":true}", &r, err, sizeof(err)), 0);
	assert_true(r.status);
	assert_null(r.args);
	usreq_free(&r);
	assert_int_equal(parse("{\"log\":true}", &r, err, sizeof(err)), 0);
	assert_true(r.log && !r.follow);
	usreq_free(&r);
	assert_int_equal(parse("{\"follow\":true,\"log\":true}", &r, err, sizeof(err)), 0);
	assert_true(r.log && r.follow && !r.args);
	usreq_free(&r);
}

static void
test_request_refused(void **state)
{
	static const struct {
		const char *in, *msg;
	} c[] = {
		{"", "JSON"},
		{"{\"args\":[\"--\",\"id\"]", "JSON"},
		{"[1]", "one JSON object"},
		{"{\"args\":[\"id\"],\"env\":[],\"nfds\":4} {}", "one JSON object"},
		{"{\"args\":[\"id\"],\"env\":[],\"nfds\":3}", "nfds"},
		{"{\"args\":[\"id\"],\"env\":[],\"nfds\":46}", "nfds"},
		{"{\"args\":[\"id\"],\"env\":[],\"nfds\":\"4\"}", "nfds"},
		{"{\"args\":[],\"env\":[],\"nfds\":4}", "no command"},
		{"{\"args\":[1],\"env\":[],\"nfds\":4}", "args[0]"},
		{"{\"args\":\"id\",\"env\":[],\"nfds\":4}", "args: expected a list"},
		{"{\"args\":[\"id\"],\"env\":[\"NOEQ\"],\"nfds\":4}", "env[0]"},
		{"{\"args\":[\"id\"],\"nfds\":4}", "env: expected a list"},
		{"{\"args\":[\"id\"],\"env\":[],\"nfds\":4,\"uid\":0}", "unknown key"},
		{"{\"args\":[\"id\"],\"args\":[\"sh\"],\"env\":[],\"nfds\":4}", "duplicate"},
		{"{\"status\":true,\"args\":[\"id\"]}", "status"},
		{"{\"status\":false}", "status"},
		{"{\"status\":1}", "status"},
		{"{\"log\":true,\"follow\":1}", "log"},
		{"{\"log\":false}", "log"},
		{"{\"log\":true,\"args\":[\"id\"]}", "log"},
	};
	struct usreq r;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		err[0] = 0;
		if (parse(c[i].in, &r, err, sizeof(err)) != -EINVAL || r.args || r.env ||
		    !strstr(err, c[i].msg))
			fail_msg("%s: got \"%s\", want \"%s\"", c[i].in, err, c[i].msg);
	}
	/* a NUL inside a string (jansson refuses \u0000 as it is set up) */
	assert_int_equal(usreq_parse("{\"args\":[\"i\\u0000d\"],\"env\":[],\"nfds\":4}", 40, &r,
				     err, sizeof(err)),
			 -EINVAL);
}

static void
test_request_big(void **state)
{
	size_t n = USREQ_MAX_BYTES + 1;
	char *buf = malloc(n), err[256];
	struct usreq r;

	(void)state;
	assert_non_null(buf);
	memset(buf, ' ', n);
	assert_int_equal(usreq_parse(buf, n, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "longer than"));
	free(buf);
}

static void
test_signal(void **state)
{
	char err[256];
	int sig = 0;

	(void)state;
	assert_int_equal(usreq_parse_signal("{\"signal\":15}", 13, &sig, err, sizeof(err)), 0);
	assert_int_equal(sig, SIGTERM);
	assert_int_equal(usreq_parse_signal("{\"signal\":28}", 13, &sig, err, sizeof(err)), 0);
	assert_int_equal(sig, SIGWINCH); /* --ask's relay: the terminal's size */
	assert_int_equal(usreq_parse_signal("{\"signal\":9}", 12, &sig, err, sizeof(err)), -EINVAL);
	assert_int_equal(usreq_parse_signal("{\"signal\":2,\"pid\":1}", 20, &sig, err, sizeof(err)),
			 -EINVAL);
}

/* {"adopt": ...}: root's own run coming back to a new daemon; all three
 * keys, nothing else, bounded strings without NUL */
static void
test_adopt(void **state)
{
	struct usreq_adopt a;
	char err[256];
	static const char *const bad[] = {
		"{\"adopt\":{\"user\":\"a\",\"command\":\"x\"}}",
		"{\"adopt\":{\"user\":\"\",\"command\":\"x\",\"started\":1}}",
		"{\"adopt\":{\"user\":\"a\\u0000b\",\"command\":\"x\",\"started\":1}}",
		"{\"adopt\":{\"user\":\"a\",\"command\":\"x\",\"started\":-1}}",
		"{\"adopt\":{\"user\":\"a\",\"command\":\"x\",\"started\":1,\"uid\":0}}",
		"{\"adopt\":{\"user\":\"a\",\"command\":\"x\",\"started\":1},\"args\":[]}",
		"{\"adopt\":true}",
	};
	const char *ok = "{\"adopt\":{\"user\":\"alice\",\"command\":\"sleep 9\",\"started\":42}}";

	(void)state;
	assert_int_equal(usreq_parse_adopt(ok, strlen(ok), &a, err, sizeof(err)), 0);
	assert_string_equal(a.user, "alice");
	assert_string_equal(a.command, "sleep 9");
	assert_int_equal(a.started, 42);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (usreq_parse_adopt(bad[i], strlen(bad[i]), &a, err, sizeof(err)) != -EINVAL ||
		    !err[0] || a.user[0])
			fail_msg("%s: accepted", bad[i]);
	}
}

static void
test_usercfg(void **state)
{
	struct usercfg c;
	char err[256];
	const char *doc = "{\"groups\":[\"a\",\"b\"],\"max_runs_per_user\":2,\"audit\":false,"
			  "\"deny\":[\"x.test\"]}";

	(void)state;
	assert_int_equal(usercfg_parse("{}", 2, &c, err, sizeof(err)), 0);
	assert_int_equal(c.ngroups, 1);
	assert_string_equal(c.groups[0], "egressctl");
	assert_int_equal(c.max_runs, 4);
	assert_true(c.audit);
	assert_true(c.ask);
	assert_int_equal(c.ndeny, 0);
	usercfg_free(&c);
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), 0);
	assert_int_equal(c.ngroups, 2);
	assert_int_equal(c.max_runs, 2);
	assert_false(c.audit);
	assert_string_equal(c.deny[0], "x.test");
	usercfg_free(&c);
	assert_int_equal(usercfg_parse("{\"max_runs_per_user\":0}", 23, &c, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(usercfg_parse("{\"audit\":1}", 11, &c, err, sizeof(err)), -EINVAL);
	assert_int_equal(usercfg_parse("{\"users\":[]}", 12, &c, err, sizeof(err)), -EINVAL);
	assert_int_equal(usercfg_parse("{} x", 4, &c, err, sizeof(err)), -EINVAL);
	/* the ceiling: "allow" present (even empty) or not; max_conns_per_run */
	assert_int_equal(usercfg_parse("{}", 2, &c, err, sizeof(err)), 0);
	assert_false(c.has_allow);
	assert_int_equal(c.max_conns, 0);
	usercfg_free(&c);
	doc = "{\"allow\":[],\"max_conns_per_run\":9}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), 0);
	assert_true(c.has_allow);
	assert_int_equal(c.nallow, 0);
	assert_int_equal(c.max_conns, 9);
	usercfg_free(&c);
	doc = "{\"allow\":[\"**.x.test\",\"*:443\"]}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), 0);
	assert_int_equal(c.nallow, 2);
	assert_string_equal(c.allow[1], "*:443");
	usercfg_free(&c);
	doc = "{\"max_conns_per_run\":0}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), -EINVAL);
	doc = "{\"allow\":\"x.test\"}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), -EINVAL);
}

/* "allow_unix": what a user's --allow-unix may name; without the key,
 * anything only where the ceiling has no allow and no deny rules; a
 * "users" entry's list takes the place of the top level's */
static void
test_usercfg_unix(void **state)
{
	struct usercfg c, v;
	char err[256];
	const char *doc;

	(void)state;
	assert_int_equal(usercfg_parse("{}", 2, &c, err, sizeof(err)), 0);
	assert_false(c.has_allow_unix);
	assert_true(usercfg_unix_ok(&c, "/run/docker.sock"));
	usercfg_free(&c);
	doc = "{\"deny\":[]}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), 0);
	assert_true(usercfg_unix_ok(&c, "/run/docker.sock"));
	usercfg_free(&c);
	doc = "{\"deny\":[\"x.test\"]}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), 0);
	assert_false(usercfg_unix_ok(&c, "/run/docker.sock"));
	usercfg_free(&c);
	doc = "{\"allow\":[]}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), 0);
	assert_false(usercfg_unix_ok(&c, "/run/docker.sock"));
	usercfg_free(&c);
	doc = "{\"deny\":[\"x.test\"],\"allow_unix\":[\"/run/user/1000/bus\"],"
	      "\"users\":{\"a\":{\"allow_unix\":[]},\"b\":{}}}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), 0);
	assert_true(c.has_allow_unix);
	assert_true(usercfg_unix_ok(&c, "/run/user/1000/bus"));
	assert_false(usercfg_unix_ok(&c, "/run/user/1000/bus/"));
	assert_false(usercfg_unix_ok(&c, "/run/docker.sock"));
	usercfg_for(&c, "a", &v);
	assert_false(usercfg_unix_ok(&v, "/run/user/1000/bus"));
	usercfg_for(&c, "b", &v);
	assert_true(usercfg_unix_ok(&v, "/run/user/1000/bus"));
	usercfg_free(&c);
	doc = "{\"allow_unix\":[\"run/x.sock\"]}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "allow_unix[0]: expected an absolute path"));
	doc = "{\"allow_unix\":\"/run/x.sock\"}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), -EINVAL);
}

/* path's contents become text */
static int
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* users.json's allow rules are checked at load: one that does not parse
 * refuses the file, naming it */
static void
test_usercfg_load_allow(void **state)
{
	char path[] = "/tmp/egr-usercfg-XXXXXX", err[512];
	const char *doc = "{\"groups\":[\"root\"],\"allow\":[\"x.test\",\"*\"]}";
	struct usercfg c;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, doc, strlen(doc)), (int)strlen(doc));
	close(fd);
	assert_int_equal(usercfg_load(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "allow: *:"));
	unlink(path);
}

/* users.json's "users": entries by account name, each with the top
 * level's keys but groups and users; the keys an entry sets take the
 * top level's place for that account (deny and allow as whole lists),
 * the rest stay the top level's; an account with no entry gets the top
 * level's ceiling. Malformed entries are refused, named. */
static void
test_usercfg_users(void **state)
{
	static const char *const bad[] = {
		"{\"users\":[\"a\"]}",			    /* not an object */
		"{\"users\":{\"a\":true}}",		    /* an entry not an object */
		"{\"users\":{\"a\":{\"groups\":[\"g\"]}}}", /* groups: the top level's */
		"{\"users\":{\"a\":{\"users\":{}}}}",	    /* no nesting */
		"{\"users\":{\"a\":{\"max_runs_per_user\":65}}}",
		"{\"users\":{\"a\":{\"max_runs_per_user\":0}}}",
		"{\"users\":{\"a\":{\"audit\":\"yes\"}}}",
		"{\"users\":{\"a\":{\"deny\":\"x.test\"}}}",
		"{\"users\":{\"a\":{\"allow\":[1]}}}",
		"{\"users\":{\"a\":{\"max_conns_per_run\":0}}}",
		"{\"users\":{\"a\":{\"ask\":\"no\"}}}",
		"{\"users\":{\"a\":{\"questions\":true}}}",
		"{\"users\":{\"\":{}}}", /* not a name */
		"{\"users\":{\"a b\":{}}}",
		"{\"users\":{\"a:b\":{}}}",
		"{\"users\":{\"-a\":{}}}",
		"{\"users\":{\"../a\":{}}}",
		"{\"users\":{\"a\":{},\"a\":{}}}", /* twice */
		"{\"users\":{},\"users\":{}}",
	};
	const char *doc = "{\"groups\":[\"g\"],\"max_runs_per_user\":3,\"audit\":true,"
			  "\"deny\":[\"d.test\"],\"allow\":[\"**.test\"],\"max_conns_per_run\":50,"
			  "\"users\":{\"alice\":{\"max_runs_per_user\":1,\"allow\":[\"a.test\"]},"
			  "\"bob\":{\"audit\":false,\"deny\":[],\"max_conns_per_run\":5},"
			  "\"carol\":{}}}";
	const struct usercfg_user *u;
	struct usercfg c, v;
	char err[512];

	(void)state;
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), 0);
	assert_int_equal(c.ngroups, 1);
	assert_int_equal(c.nusers, 3);
	u = usercfg_user(&c, "alice");
	assert_non_null(u);
	assert_int_equal(u->set, USERCFG_SET_MAX_RUNS | USERCFG_SET_ALLOW);
	assert_null(usercfg_user(&c, "alic"));
	assert_null(usercfg_user(&c, "dave"));
	assert_null(usercfg_user(&c, NULL));
	assert_int_equal(usercfg_user(&c, "carol")->set, 0);
	/* alice: her max_runs and allow; the top level's audit, deny, max_conns */
	usercfg_for(&c, "alice", &v);
	assert_int_equal(v.max_runs, 1);
	assert_true(v.audit);
	assert_int_equal(v.ndeny, 1);
	assert_string_equal(v.deny[0], "d.test");
	assert_true(v.has_allow);
	assert_int_equal(v.nallow, 1);
	assert_string_equal(v.allow[0], "a.test");
	assert_int_equal(v.max_conns, 50);
	assert_null(v.users);
	assert_int_equal(v.nusers, 0);
	/* bob: his audit, max_conns and an empty deny in place of the top
	 * level's; its allow ceiling */
	usercfg_for(&c, "bob", &v);
	assert_int_equal(v.max_runs, 3);
	assert_false(v.audit);
	assert_int_equal(v.ndeny, 0);
	assert_int_equal(v.max_conns, 5);
	assert_true(v.has_allow);
	assert_string_equal(v.allow[0], "**.test");
	/* carol ({}) and an account with no entry: the top level's */
	usercfg_for(&c, "carol", &v);
	assert_int_equal(v.max_runs, 3);
	assert_int_equal(v.ndeny, 1);
	assert_int_equal(v.nallow, 1);
	usercfg_for(&c, "dave", &v);
	assert_int_equal(v.max_runs, 3);
	assert_true(v.audit);
	assert_int_equal(v.max_conns, 50);
	assert_string_equal(v.groups[0], "g");
	usercfg_free(&c);
	/* a user's "allow": [] lets them allow nothing; with no top-level
	 * allow, a user's is the only ceiling */
	doc = "{\"users\":{\"a\":{\"allow\":[]},\"b\":{\"allow\":[\"x.test\"]}}}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), 0);
	assert_false(c.has_allow);
	assert_string_equal(c.groups[0], "egressctl"); /* the default stays */
	usercfg_for(&c, "a", &v);
	assert_true(v.has_allow);
	assert_int_equal(v.nallow, 0);
	usercfg_for(&c, "b", &v);
	assert_true(v.has_allow);
	assert_int_equal(v.nallow, 1);
	usercfg_for(&c, "z", &v);
	assert_false(v.has_allow);
	/* the ceiling a check is given is the user's: audit refused for
	 * one, not for another */
	usercfg_free(&c);
	doc = "{\"audit\":true,\"users\":{\"a\":{\"audit\":false,\"ask\":false}}}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), 0);
	usercfg_for(&c, "a", &v);
	assert_false(v.audit);
	assert_false(v.ask);
	usercfg_for(&c, "b", &v);
	assert_true(v.audit);
	assert_true(v.ask); /* the default */
	usercfg_free(&c);
	/* the refusals name the entry and the key */
	doc = "{\"users\":{\"alice\":{\"max_runs_per_user\":99}}}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "users: alice: max_runs_per_user: unknown key, or not"));
	doc = "{\"users\":{\"alice\":{\"groups\":[\"g\"]}}}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "users: alice: groups: unknown key"));
	doc = "{\"users\":{\"alice\":{\"deny\":[\"\"]}}}";
	assert_int_equal(usercfg_parse(doc, strlen(doc), &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "users: alice: deny[0]: expected a string"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (usercfg_parse(bad[i], strlen(bad[i]), &c, err, sizeof(err)) != -EINVAL ||
		    !err[0] || c.users || c.nusers)
			fail_msg("%s: got \"%s\"", bad[i], err);
	}
	/* at most USERCFG_MAX_USERS entries */
	{
		char big[USERCFG_MAX_USERS * 16 + 64];
		size_t n = (size_t)snprintf(big, sizeof(big), "{\"users\":{");

		for (int i = 0; i <= USERCFG_MAX_USERS; i++)
			n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"u%d\":{}",
					      i ? "," : "", i);
		n += (size_t)snprintf(big + n, sizeof(big) - n, "}}");
		assert_int_equal(usercfg_parse(big, n, &c, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "users: expected an object of at most"));
	}
}

/* At load, each account "users" names must exist and not be root, and
 * its own rules parse: refused naming the entry otherwise */
static void
test_usercfg_load_users(void **state)
{
	char path[] = "/tmp/egr-usercfg-XXXXXX", err[512], doc[512];
	struct passwd *pw;
	char someone[64] = "";
	struct usercfg c;
	int fd;

	(void)state;
	setpwent();
	while ((pw = getpwent()))
		if (pw->pw_uid != 0 && strlen(pw->pw_name) < sizeof(someone)) {
			snprintf(someone, sizeof(someone), "%s", pw->pw_name);
			break;
		}
	endpwent();
	if (!someone[0])
		skip();
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	snprintf(doc, sizeof(doc),
		 "{\"groups\":[\"root\"],\"users\":{\"%s\":{\"max_runs_per_user\":1}}}", someone);
	assert_int_equal(write_file(path, doc), 0);
	assert_int_equal(usercfg_load(path, &c, err, sizeof(err)), 0);
	assert_int_equal(c.nusers, 1);
	usercfg_free(&c);
	snprintf(doc, sizeof(doc),
		 "{\"groups\":[\"root\"],\"users\":{\"%s\":{},\"egr-no-such-user-x\":{}}}",
		 someone);
	assert_int_equal(write_file(path, doc), 0);
	assert_int_equal(usercfg_load(path, &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "users: no user called egr-no-such-user-x"));
	assert_non_null(strstr(err, path));
	assert_int_equal(write_file(path, "{\"groups\":[\"root\"],\"users\":{\"root\":{}}}"), 0);
	assert_int_equal(usercfg_load(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "users: root: uid 0"));
	snprintf(doc, sizeof(doc), "{\"groups\":[\"root\"],\"users\":{\"%s\":{\"allow\":[\"*\"]}}}",
		 someone);
	assert_int_equal(write_file(path, doc), 0);
	assert_int_equal(usercfg_load(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "users: "));
	assert_non_null(strstr(err, ": allow: *:"));
	snprintf(doc, sizeof(doc),
		 "{\"groups\":[\"root\"],\"users\":{\"%s\":{\"deny\":[\"a b c\"]}}}", someone);
	assert_int_equal(write_file(path, doc), 0);
	assert_int_equal(usercfg_load(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ": deny: "));
	unlink(path);
}

/* args as the service gets them, in heap copies freed after each check */
static int
check(const struct usercfg *c, int nfds, char *err, size_t errlen, ...)
{
	char *args[32];
	int n = 0, rc;
	va_list ap;
	const char *a;

	va_start(ap, errlen);
	while ((a = va_arg(ap, const char *)) && n < 31)
		args[n++] = strdup(a);
	va_end(ap);
	args[n] = NULL;
	rc = userrun_check(args, n, nfds, c, err, errlen);
	for (int i = 0; i < n; i++)
		free(args[i]);
	return rc;
}

static void
test_check(void **state)
{
	struct usercfg c = {.max_runs = 4, .audit = true, .ask = true};
	char err[256];

	(void)state;
	assert_int_equal(check(&c, 4, err, sizeof(err), "--allow", "a.test", "--", "id", NULL), 0);
	assert_int_equal(check(&c, 5, err, sizeof(err), "--log=fd:4", "--", "id", NULL), 0);
	assert_int_equal(check(&c, 6, err, sizeof(err), "--policy", "fd:5", "--", "id", NULL), 0);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--audit", "--", "id", NULL), 0);
	assert_int_equal(check(&c, 5, err, sizeof(err), "--summary=fd:4", "--", "id", NULL), 0);
	assert_int_equal(
		check(&c, 5, err, sizeof(err), "--suggest-policy", "fd:4", "--", "id", NULL), 0);
	assert_int_equal(check(&c, 5, err, sizeof(err), "--suggest-policy=fd:5", "--", "id", NULL),
			 -EPERM);
	assert_int_equal(
		check(&c, 5, err, sizeof(err), "--suggest-policy", "fd:1", "--", "id", NULL),
		-EPERM);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--user", "root", "--", "id", NULL),
			 -EPERM);
	assert_non_null(strstr(err, "--user"));
	assert_int_equal(check(&c, 4, err, sizeof(err), "--us=root", "--", "id", NULL), -EPERM);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--cgroup=/", "--", "id", NULL), -EPERM);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--allow-sudo", "--", "id", NULL), -EPERM);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--service-env-fd", "3", "--", "id", NULL),
			 -EPERM);
	assert_int_equal(check(&c, 5, err, sizeof(err), "--log", "fd:5", "--", "id", NULL), -EPERM);
	assert_int_equal(check(&c, 5, err, sizeof(err), "--log", "fd:2", "--", "id", NULL), -EPERM);
	assert_int_equal(check(&c, 5, err, sizeof(err), "--log", "fd:04x", "--", "id", NULL),
			 -EPERM);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--log", "/tmp/x", "--", "id", NULL),
			 -EPERM);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--log", "syslog", "--", "id", NULL), 0);
	assert_int_equal(
		check(&c, 4, err, sizeof(err), "--log", "syslog:/run/x.sock", "--", "id", NULL),
		-EPERM);
	/* an OTLP collector: a connection the user could make; its CA a file
	 * the client opened */
	assert_int_equal(check(&c, 4, err, sizeof(err), "--log=otlp:http://127.0.0.1:1/v1/logs",
			       "--", "id", NULL),
			 0);
	assert_int_equal(check(&c, 5, err, sizeof(err), "--log=otlp:https://127.0.0.1:1/v1/logs",
			       "--log-ca", "fd:4", "--", "id", NULL),
			 0);
	assert_int_equal(check(&c, 5, err, sizeof(err), "--log=otlp:https://127.0.0.1:1/v1/logs",
			       "--log-ca", "/root/ca.pem", "--", "id", NULL),
			 -EPERM);
	assert_non_null(strstr(err, "--log-ca other than a file the client opened"));
	assert_int_equal(check(&c, 4, err, sizeof(err), "--policy", "/root/x", "--", "id", NULL),
			 -EPERM);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--summary", "s", "--", "id", NULL),
			 -EPERM);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--suggest-policy", "p", "--", "id", NULL),
			 -EPERM);
	assert_non_null(strstr(err, "--suggest-policy other than a file the client opened"));
	assert_int_equal(check(&c, 4, err, sizeof(err), "--log-ca", "ca", "--", "id", NULL),
			 -EPERM);
	/* a listener of the caller's own: where the ceiling has no rules (c's
	 * now), not where it has; files root would read */
	assert_int_equal(
		check(&c, 4, err, sizeof(err), "--transparent-port", "9000", "--", "id", NULL), 0);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--proxy-port", "9080", "--", "id", NULL),
			 0);
	c.deny[0] = "x.test";
	c.ndeny = 1;
	assert_int_equal(
		check(&c, 4, err, sizeof(err), "--transparent-port", "9000", "--", "id", NULL),
		-EPERM);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--dns-port", "9053", "--", "id", NULL),
			 -EPERM);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--proxy-port", "9080", "--", "id", NULL),
			 -EPERM);
	assert_non_null(strstr(err, "past users.json's allow and deny rules"));
	c.ndeny = 0;
	c.has_allow = true;
	assert_int_equal(check(&c, 4, err, sizeof(err), "--dns-port", "9053", "--", "id", NULL),
			 -EPERM);
	c.has_allow = false;
	assert_int_equal(
		check(&c, 4, err, sizeof(err), "--ca", "/root/c.pem,/root/k.pem", "--", "id", NULL),
		-EPERM);
	assert_int_equal(
		check(&c, 4, err, sizeof(err), "--upstream-ca", "/root/ca.pem", "--", "id", NULL),
		-EPERM);
	assert_non_null(strstr(err, "--upstream-ca other than a file the client opened"));
	assert_int_equal(check(&c, 6, err, sizeof(err), "--upstream-proxy", "http://p.test:3128",
			       "--upstream-proxy-auth", "/root/cred", "--", "id", NULL),
			 -EPERM);
	assert_non_null(strstr(err, "--upstream-proxy-auth other than a file the client opened"));
	/* ... as files the client opened: taken */
	assert_int_equal(check(&c, 6, err, sizeof(err), "--upstream-ca", "fd:4", "--upstream-proxy",
			       "http://p.test:3128", "--upstream-proxy-auth", "fd:5", "--", "id",
			       NULL),
			 0);
	assert_int_equal(check(&c, 6, err, sizeof(err), "--ca", "fd:4,fd:5", "--", "id", NULL), 0);
	/* not the client's: beyond nfds, stdio, half of a pair */
	assert_int_equal(check(&c, 6, err, sizeof(err), "--upstream-ca", "fd:6", "--", "id", NULL),
			 -EPERM);
	assert_int_equal(check(&c, 6, err, sizeof(err), "--ca", "fd:2,fd:5", "--", "id", NULL),
			 -EPERM);
	assert_int_equal(
		check(&c, 6, err, sizeof(err), "--ca", "fd:4,/root/k.pem", "--", "id", NULL),
		-EPERM);
	assert_non_null(strstr(err, "--ca other than two files the client opened"));
	/* --secret: fd:N of a value the client read, and no placeholder file */
	assert_int_equal(
		check(&c, 6, err, sizeof(err), "--secret", "T=fd:4@a.test", "--", "id", NULL), 0);
	assert_int_equal(
		check(&c, 6, err, sizeof(err), "--secret", "T=env:X@a.test", "--", "id", NULL),
		-EPERM);
	assert_int_equal(
		check(&c, 6, err, sizeof(err), "--secret", "T=fd:9@a.test", "--", "id", NULL),
		-EPERM);
	assert_non_null(strstr(err, "--secret other than NAME=fd:N@HOST"));
	assert_int_equal(check(&c, 6, err, sizeof(err), "--secret", "T=fd:4@a.test",
			       "--secret-placeholders", "/etc/x", "--", "id", NULL),
			 -EPERM);
	assert_non_null(strstr(err, "--secret-placeholders"));
	/* --deny-unix narrows; --allow-unix as users.json's "allow_unix" lets
	 * it: without the key, anything where the ceiling has no rules */
	assert_int_equal(check(&c, 4, err, sizeof(err), "--deny-unix", "/x", "--", "id", NULL), 0);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--allow-unix", "/run/docker.sock", "--",
			       "id", NULL),
			 0);
	c.deny[0] = "x.test";
	c.ndeny = 1;
	assert_int_equal(check(&c, 4, err, sizeof(err), "--allow-unix", "/run/docker.sock", "--",
			       "id", NULL),
			 -EPERM);
	assert_non_null(strstr(err, "--allow-unix /run/docker.sock (users.json: \"allow_unix\" is "
				    "not set, and the ceiling has allow or deny rules)"));
	c.allow_unix[0] = "/run/user/1000/bus";
	c.nallow_unix = 1;
	c.has_allow_unix = true;
	assert_int_equal(check(&c, 4, err, sizeof(err), "--allow-unix", "/run/user/1000/bus",
			       "--deny-unix", "/run/x.sock", "--", "id", NULL),
			 0);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--allow-unix", "/run/user/1000/bus",
			       "--allow-unix", "/run/docker.sock", "--", "id", NULL),
			 -EPERM);
	assert_non_null(strstr(err,
			       "--allow-unix /run/docker.sock (users.json: \"allow_unix\" does "
			       "not name it)"));
	c.ndeny = 0;
	c.nallow_unix = 0;
	c.has_allow_unix = false;
	/* the service's own options; --ask unless the ceiling says no;
	 * --max-conns within max_conns_per_run */
	assert_int_equal(
		check(&c, 4, err, sizeof(err), "--service-ceiling", "**.test", "--", "id", NULL),
		-EPERM);
	assert_int_equal(
		check(&c, 4, err, sizeof(err), "--service-limits", "022", "--", "id", NULL),
		-EPERM);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--ask", "--", "id", NULL), 0);
	c.ask = false;
	assert_int_equal(check(&c, 4, err, sizeof(err), "--ask", "--", "id", NULL), -EPERM);
	assert_non_null(strstr(err, "--ask (users.json: \"ask\": false)"));
	c.ask = true;
	assert_int_equal(check(&c, 4, err, sizeof(err), "--max-conns", "9", "--", "id", NULL), 0);
	c.max_conns = 8;
	assert_int_equal(check(&c, 4, err, sizeof(err), "--max-conns", "9", "--", "id", NULL),
			 -EPERM);
	assert_non_null(strstr(err, "max_conns_per_run"));
	assert_int_equal(check(&c, 4, err, sizeof(err), "--max-conns=8", "--", "id", NULL), 0);
	c.max_conns = 0;
	assert_int_equal(check(&c, 4, err, sizeof(err), "--test-unix-root", "/", "--", "id", NULL),
			 -EINVAL);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--", NULL), -EINVAL);
	c.audit = false;
	assert_int_equal(check(&c, 4, err, sizeof(err), "--audit", "--", "id", NULL), -EPERM);
	assert_non_null(strstr(err, "users.json"));
}

/* The daemon checked one request after another with getopt reset by
 * optind = 1: a parse that stopped inside a cluster of short options
 * ("-vZ") left glibc's getopt pointing into that request's argv, freed
 * since, and the next request's check went on from there ("unknown
 * option run"). Each check starts afresh; -v is the run's, not the
 * daemon's. */
static void
test_check_in_sequence(void **state)
{
	struct usercfg c = {.max_runs = 4, .audit = true, .ask = true};
	int verbose = log_verbose;
	char err[256];

	(void)state;
	assert_int_equal(check(&c, 4, err, sizeof(err), "-vZ", "--", "id", NULL), -EINVAL);
	assert_int_equal(check(&c, 4, err, sizeof(err), "-v", "--", "id", NULL), 0);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--", "sh", "-c", "true", NULL), 0);
	assert_int_equal(check(&c, 4, err, sizeof(err), "-vq", "--", "id", NULL), 0);
	assert_int_equal(check(&c, 4, err, sizeof(err), "--allow", "a.test", "--", "id", NULL), 0);
	assert_int_equal(log_verbose, verbose);
}

/* The caller's umask and rlimits: both keys or neither, each pair
 * [CUR, MAX] with -1 unlimited; the text run gets reads back the same. */
static void
test_limits(void **state)
{
	static const char *const bad[] = {
		"\"umask\":18", /* without rlimits */
		"\"umask\":512,\"rlimits\":" RL16("[1,2]"),
		"\"umask\":-1,\"rlimits\":" RL16("[1,2]"),
		"\"umask\":18,\"rlimits\":[[1,2]]",
		"\"umask\":18,\"rlimits\":" RL16("[3,2]"),
		"\"umask\":18,\"rlimits\":" RL16("[1,-2]"),
		"\"umask\":18,\"rlimits\":" RL16("[-1,5]"),
		"\"umask\":18,\"rlimits\":" RL16("[1]"),
		"\"umask\":18,\"rlimits\":" RL16("[1,\"2\"]"),
	};
	struct plimits l, back;
	struct usreq r;
	char text[1024], err[256];

	(void)state;
	assert_int_equal(parse("{\"args\":[\"id\"],\"env\":[],\"nfds\":4,\"umask\":18,"
			       "\"rlimits\":" RL16("[5,-1]") "}",
			       &r, err, sizeof(err)),
			 0);
	assert_true(r.limits.set);
	assert_int_equal(r.limits.umask, 022);
	assert_int_equal(r.limits.cur[7], 5);
	assert_true(r.limits.max[15] == PLIMITS_INF);
	assert_int_equal(plimits_format(&r.limits, text, sizeof(text)), 0);
	assert_int_equal(plimits_parse(text, &back), 0);
	assert_memory_equal(&back, &r.limits, sizeof(back));
	usreq_free(&r);
	assert_int_equal(parse("{\"args\":[\"id\"],\"env\":[],\"nfds\":4}", &r, err, sizeof(err)),
			 0);
	assert_false(r.limits.set);
	usreq_free(&r);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char in[1024];

		snprintf(in, sizeof(in), "{\"args\":[\"id\"],\"env\":[],\"nfds\":4,%s}", bad[i]);
		err[0] = 0;
		if (parse(in, &r, err, sizeof(err)) != -EINVAL || r.args ||
		    (!strstr(err, "umask") && !strstr(err, "rlimits")))
			fail_msg("%s: got \"%s\"", in, err);
	}
	plimits_get(&l);
	assert_int_equal(plimits_format(&l, text, sizeof(text)), 0);
	assert_int_equal(plimits_parse(text, &back), 0);
	assert_memory_equal(&back, &l, sizeof(back));
	assert_int_equal(plimits_format(&l, text, 40), -ENOSPC);
	assert_int_equal(plimits_parse("022 1:2", &back), -EINVAL); /* too few */
	assert_int_equal(plimits_parse("1000 " PL16("1:2"), &back), -EINVAL);
	assert_int_equal(plimits_parse("022 " PL16("3:2"), &back), -EINVAL);
	assert_int_equal(plimits_parse("022 " PL16("1:2") " 1:2", &back), -EINVAL);
	assert_int_equal(plimits_parse("022 " PL16("-:-"), &back), 0);
	assert_int_equal(plimits_parse("022 " PL16("1:x"), &back), -EINVAL);
	assert_int_equal(plimits_parse("022 " PL16("18446744073709551615:-"), &back), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_ok),
		cmocka_unit_test(test_request_refused),
		cmocka_unit_test(test_request_big),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_adopt),
		cmocka_unit_test(test_usercfg),
		cmocka_unit_test(test_usercfg_unix),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_check_in_sequence),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_usercfg_load_allow),
		cmocka_unit_test(test_usercfg_users),
		cmocka_unit_test(test_usercfg_load_users),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
