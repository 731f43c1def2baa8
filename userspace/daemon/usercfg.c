// SPDX-License-Identifier: Apache-2.0
/* users.json (see usersock.h): who may use the user socket (members of
 * its groups, and the accounts its "users" names), how many runs each may
 * have at once, whether --audit and --ask are theirs, the deny rules every run of
 * theirs gets and the allow rules theirs must be within; a "users" entry's
 * keys take the place of the top level's for that account. Unknown keys,
 * groups and users are refused, as everywhere. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confine/options.h"
#include "daemon/usersock.h"
#include "lib/jsonx.h"
#include "policy/policy.h"
#include "kernel/unixsvc_list.h" /* UNIXSVC_PATH_MAX */

static int
str_array(json_t *a, char **out, int max, int *n, const char *key, char *errbuf, size_t errlen)
{
	size_t i;
	json_t *v;

	if (!json_is_array(a) || json_array_size(a) > (size_t)max) {
		snprintf(errbuf, errlen, "%s: expected a list of at most %d strings", key, max);
		return -EINVAL;
	}
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);

		if (!s || !s[0] || strlen(s) != json_string_length(v)) {
			snprintf(errbuf, errlen, "%s[%zu]: expected a string", key, i);
			return -EINVAL;
		}
		out[(*n)++] = strdup(s);
		if (!out[*n - 1]) {
			snprintf(errbuf, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	return 0;
}

/* c's deny and allow rules parse (where: "" or "users: NAME: "). */
static int
check_rules(const struct usercfg *c, const char *where, char *errbuf, size_t errlen)
{
	struct rule_arg rules[USERCFG_MAX_DENY];
	struct policy *p;
	char err[300];

	for (int i = 0; i < c->ndeny; i++)
		rules[i] = (struct rule_arg){.action = POLICY_DENY, .text = c->deny[i]};
	p = target_build_policy(NULL, rules, c->ndeny, err, sizeof(err));
	if (!p) {
		snprintf(errbuf, errlen, "%sdeny: %.300s", where, err);
		return -EINVAL;
	}
	policy_free(p);
	for (int i = 0; i < c->nallow; i++) {
		/* a rule is within itself, or does not parse */
		if (policy_rule_within(c->allow[i], c->allow[i], err, sizeof(err)) < 0) {
			snprintf(errbuf, errlen, "%sallow: %s: %.300s", where, c->allow[i], err);
			return -EINVAL;
		}
		if (strchr(c->allow[i], '\n')) {
			snprintf(errbuf, errlen, "%sallow[%d]: a line break", where, i);
			return -EINVAL;
		}
	}
	return 0;
}

/* The groups and the users exist (a user not root); every deny and allow
 * rule parses. */
static int
usercfg_check(const struct usercfg *c, char *errbuf, size_t errlen)
{
	char where[128];
	int rc;

	for (int i = 0; i < c->ngroups; i++)
		if (!getgrnam(c->groups[i])) {
			snprintf(errbuf, errlen, "groups: no group called %s", c->groups[i]);
			return -ENOENT;
		}
	rc = check_rules(c, "", errbuf, errlen);
	for (int i = 0; !rc && i < c->nusers; i++) {
		const struct usercfg_user *u = &c->users[i];
		struct passwd *pw = getpwnam(u->name);

		if (!pw) {
			snprintf(errbuf, errlen, "users: no user called %s", u->name);
			return -ENOENT;
		}
		if (pw->pw_uid == 0) {
			snprintf(errbuf, errlen,
				 "users: %s: uid 0 (root runs egressctl run itself, not through "
				 "the service)",
				 u->name);
			return -EINVAL;
		}
		snprintf(where, sizeof(where), "users: %s: ", u->name);
		rc = check_rules(&u->c, where, errbuf, errlen);
	}
	return rc;
}

/* The keys of an object of users.json into c, *set the ones it has: the
 * top level's (top), or a "users" entry's (where "users: NAME: "), which
 * has the same but groups and users. */
static int parse_users(json_t *v, struct usercfg *c, char *errbuf, size_t errlen);

static int
parse_keys(json_t *doc, struct usercfg *c, unsigned int *set, bool top, const char *where,
	   char *errbuf, size_t errlen)
{
	const char *key;
	char label[160];
	json_t *v;
	int rc = 0;

	json_object_foreach(doc, key, v) {
		snprintf(label, sizeof(label), "%s%s", where, key);
		if (top && !strcmp(key, "groups")) {
			rc = str_array(v, c->groups, USERCFG_MAX_GROUPS, &c->ngroups, label, errbuf,
				       errlen);
		} else if (top && !strcmp(key, "users")) {
			rc = parse_users(v, c, errbuf, errlen);
		} else if (!strcmp(key, "allow")) {
			c->has_allow = true;
			*set |= USERCFG_SET_ALLOW;
			rc = str_array(v, c->allow, USERCFG_MAX_ALLOW, &c->nallow, label, errbuf,
				       errlen);
		} else if (!strcmp(key, "allow_unix")) {
			c->has_allow_unix = true;
			*set |= USERCFG_SET_ALLOW_UNIX;
			rc = str_array(v, c->allow_unix, USERCFG_MAX_UNIX, &c->nallow_unix, label,
				       errbuf, errlen);
			for (int i = 0; !rc && i < c->nallow_unix; i++)
				if (c->allow_unix[i][0] != '/' ||
				    strlen(c->allow_unix[i]) >= UNIXSVC_PATH_MAX) {
					snprintf(errbuf, errlen,
						 "%s[%d]: expected an absolute path of at most %d "
						 "bytes",
						 label, i, UNIXSVC_PATH_MAX - 1);
					rc = -EINVAL;
				}
		} else if (!strcmp(key, "max_conns_per_run") && json_is_integer(v) &&
			   json_integer_value(v) >= 1 && json_integer_value(v) <= 1000000) {
			c->max_conns = (int)json_integer_value(v);
			*set |= USERCFG_SET_MAX_CONNS;
		} else if (!strcmp(key, "deny")) {
			*set |= USERCFG_SET_DENY;
			rc = str_array(v, c->deny, USERCFG_MAX_DENY, &c->ndeny, label, errbuf,
				       errlen);
		} else if (!strcmp(key, "audit") && json_is_boolean(v)) {
			c->audit = json_is_true(v);
			*set |= USERCFG_SET_AUDIT;
		} else if (!strcmp(key, "ask") && json_is_boolean(v)) {
			c->ask = json_is_true(v);
			*set |= USERCFG_SET_ASK;
		} else if (!strcmp(key, "max_runs_per_user") && json_is_integer(v) &&
			   json_integer_value(v) >= 1 && json_integer_value(v) <= 64) {
			c->max_runs = (int)json_integer_value(v);
			*set |= USERCFG_SET_MAX_RUNS;
		} else {
			snprintf(errbuf, errlen,
				 "%s: unknown key, or not of its type (%smax_runs_per_user: 1 to "
				 "64, max_conns_per_run: 1 to 1000000, audit: true/false, ask: "
				 "true/false, allow: "
				 "[rules], deny: [rules], allow_unix: [paths])",
				 label,
				 top ? "groups: [names], users: {NAME: {these keys but groups and "
				       "users}}, "
				     : "");
			rc = -EINVAL;
		}
		if (rc)
			break;
	}
	return rc;
}

/* An account's name as users.json may give it: what getpwnam takes and
 * the daemon's log can print. */
static bool
name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= 64 || s[0] == '-')
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == ':' || *s == '/' || *s == '\\' || *s == 0x7f)
			return false;
	return true;
}

/* "users": {"NAME": {keys}, ...}. */
static int
parse_users(json_t *v, struct usercfg *c, char *errbuf, size_t errlen)
{
	const char *name;
	char where[128];
	json_t *e;

	if (!json_is_object(v) || json_object_size(v) > USERCFG_MAX_USERS) {
		snprintf(errbuf, errlen,
			 "users: expected an object of at most %d entries, each an account's "
			 "name and an object of its keys",
			 USERCFG_MAX_USERS);
		return -EINVAL;
	}
	if (c->users) {
		snprintf(errbuf, errlen, "users: given twice");
		return -EINVAL;
	}
	c->users = calloc(json_object_size(v) + 1, sizeof(*c->users));
	if (!c->users) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	json_object_foreach(v, name, e) {
		struct usercfg_user *u = &c->users[c->nusers];
		int rc;

		if (!name_ok(name)) {
			snprintf(errbuf, errlen,
				 "users: \"%.64s\": not an account's name (1 to 63 bytes, no "
				 "spaces, control characters, ':', '/' or '\\', not starting with "
				 "'-')",
				 name);
			return -EINVAL;
		}
		snprintf(where, sizeof(where), "users: %s: ", name);
		if (!json_is_object(e)) {
			snprintf(errbuf, errlen,
				 "%sexpected an object of keys ({} for the top level's)", where);
			return -EINVAL;
		}
		u->name = strdup(name);
		c->nusers++;
		if (!u->name) {
			snprintf(errbuf, errlen, "out of memory");
			return -ENOMEM;
		}
		rc = parse_keys(e, &u->c, &u->set, false, where, errbuf, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

int
usercfg_parse(const char *buf, size_t len, struct usercfg *c, char *errbuf, size_t errlen)
{
	unsigned int set = 0;
	size_t end = 0;
	json_t *doc;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	c->max_runs = 4;
	c->audit = true;
	c->ask = true;
	doc = jsonx_parse(buf, len, 8, &end, errbuf, errlen);
	if (!doc)
		return -EINVAL;
	while (end < len && buf[end] && strchr(" \t\r\n", buf[end]))
		end++;
	if (!json_is_object(doc) || end != len) {
		snprintf(errbuf, errlen, "expected a JSON object");
		rc = -EINVAL;
	}
	if (!rc)
		rc = parse_keys(doc, c, &set, true, "", errbuf, errlen);
	json_decref(doc);
	if (!rc && !c->ngroups && !(c->groups[c->ngroups++] = strdup("egressctl")))
		rc = -ENOMEM;
	if (rc)
		usercfg_free(c);
	return rc;
}

int
usercfg_load(const char *path, struct usercfg *c, char *errbuf, size_t errlen)
{
	char buf[65536], err[512];
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;
	ssize_t n;

	if (fd < 0 && errno == ENOENT) {
		n = 2;
		memcpy(buf, "{}", 2);
	} else if (fd < 0) {
		snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	} else {
		n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n < 0 || n == (ssize_t)sizeof(buf)) {
			snprintf(errbuf, errlen, "%s: %s", path,
				 n < 0 ? strerror(errno) : "larger than 64 KiB");
			return -EINVAL;
		}
	}
	rc = usercfg_parse(buf, (size_t)n, c, err, sizeof(err));
	if (!rc) {
		rc = usercfg_check(c, err, sizeof(err));
		if (rc)
			usercfg_free(c);
	}
	if (rc)
		snprintf(errbuf, errlen, "%s: %s", path, err);
	return rc;
}

void
usercfg_free(struct usercfg *c)
{
	for (int i = 0; i < c->ngroups; i++)
		free(c->groups[i]);
	for (int i = 0; i < c->ndeny; i++)
		free(c->deny[i]);
	for (int i = 0; i < c->nallow; i++)
		free(c->allow[i]);
	for (int i = 0; i < c->nallow_unix; i++)
		free(c->allow_unix[i]);
	for (int i = 0; i < c->nusers; i++) {
		free(c->users[i].name);
		usercfg_free(&c->users[i].c);
	}
	free(c->users);
	memset(c, 0, sizeof(*c));
}

const struct usercfg_user *
usercfg_user(const struct usercfg *c, const char *name)
{
	for (int i = 0; name && i < c->nusers; i++)
		if (!strcmp(c->users[i].name, name))
			return &c->users[i];
	return NULL;
}

void
usercfg_for(const struct usercfg *c, const char *name, struct usercfg *view)
{
	const struct usercfg_user *u = usercfg_user(c, name);

	*view = *c;
	view->users = NULL;
	view->nusers = 0;
	if (!u)
		return;
	if (u->set & USERCFG_SET_MAX_RUNS)
		view->max_runs = u->c.max_runs;
	if (u->set & USERCFG_SET_AUDIT)
		view->audit = u->c.audit;
	if (u->set & USERCFG_SET_ASK)
		view->ask = u->c.ask;
	if (u->set & USERCFG_SET_MAX_CONNS)
		view->max_conns = u->c.max_conns;
	if (u->set & USERCFG_SET_DENY) {
		memcpy(view->deny, u->c.deny, sizeof(view->deny));
		view->ndeny = u->c.ndeny;
	}
	if (u->set & USERCFG_SET_ALLOW) {
		memcpy(view->allow, u->c.allow, sizeof(view->allow));
		view->nallow = u->c.nallow;
		view->has_allow = true;
	}
	if (u->set & USERCFG_SET_ALLOW_UNIX) {
		memcpy(view->allow_unix, u->c.allow_unix, sizeof(view->allow_unix));
		view->nallow_unix = u->c.nallow_unix;
		view->has_allow_unix = true;
	}
}

bool
usercfg_open(const struct usercfg *c)
{
	return !c->has_allow && !c->ndeny;
}

bool
usercfg_unix_ok(const struct usercfg *c, const char *path)
{
	if (!c->has_allow_unix)
		return usercfg_open(c);
	for (int i = 0; i < c->nallow_unix; i++)
		if (!strcmp(c->allow_unix[i], path))
			return true;
	return false;
}
