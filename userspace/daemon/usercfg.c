// SPDX-License-Identifier: Apache-2.0
/* users.json (see usersock.h): who may use the user socket, how many runs
 * each may have at once, whether --audit is theirs, and the deny rules
 * every run of theirs gets. Unknown keys are refused, as everywhere. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confine/options.h"
#include "daemon/usersock.h"
#include "lib/jsonx.h"
#include "policy/policy.h"

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

/* The groups exist; the deny and allow rules parse. */
static int
usercfg_check(const struct usercfg *c, char *errbuf, size_t errlen)
{
	struct rule_arg rules[USERCFG_MAX_DENY];
	struct policy *p;
	char err[300];

	for (int i = 0; i < c->ngroups; i++)
		if (!getgrnam(c->groups[i])) {
			snprintf(errbuf, errlen, "groups: no group called %s", c->groups[i]);
			return -ENOENT;
		}
	for (int i = 0; i < c->ndeny; i++)
		rules[i] = (struct rule_arg){.action = POLICY_DENY, .text = c->deny[i]};
	p = target_build_policy(NULL, rules, c->ndeny, err, sizeof(err));
	if (!p) {
		snprintf(errbuf, errlen, "deny: %.300s", err);
		return -EINVAL;
	}
	policy_free(p);
	for (int i = 0; i < c->nallow; i++) {
		/* a rule is within itself, or does not parse */
		if (policy_rule_within(c->allow[i], c->allow[i], err, sizeof(err)) < 0) {
			snprintf(errbuf, errlen, "allow: %s: %.300s", c->allow[i], err);
			return -EINVAL;
		}
		if (strchr(c->allow[i], '\n')) {
			snprintf(errbuf, errlen, "allow[%d]: a line break", i);
			return -EINVAL;
		}
	}
	return 0;
}

int
usercfg_parse(const char *buf, size_t len, struct usercfg *c, char *errbuf, size_t errlen)
{
	json_t *doc, *v;
	const char *key;
	size_t end = 0;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	c->max_runs = 4;
	c->audit = true;
	doc = jsonx_parse(buf, len, 8, &end, errbuf, errlen);
	if (!doc)
		return -EINVAL;
	while (end < len && buf[end] && strchr(" \t\r\n", buf[end]))
		end++;
	if (!json_is_object(doc) || end != len) {
		snprintf(errbuf, errlen, "expected a JSON object");
		rc = -EINVAL;
	}
	json_object_foreach(doc, key, v) {
		if (rc)
			break;
		if (!strcmp(key, "groups")) {
			rc = str_array(v, c->groups, USERCFG_MAX_GROUPS, &c->ngroups, key, errbuf,
				       errlen);
		} else if (!strcmp(key, "allow")) {
			c->has_allow = true;
			rc = str_array(v, c->allow, USERCFG_MAX_ALLOW, &c->nallow, key, errbuf,
				       errlen);
		} else if (!strcmp(key, "max_conns_per_run") && json_is_integer(v) &&
			   json_integer_value(v) >= 1 && json_integer_value(v) <= 1000000) {
			c->max_conns = (int)json_integer_value(v);
		} else if (!strcmp(key, "deny")) {
			rc = str_array(v, c->deny, USERCFG_MAX_DENY, &c->ndeny, key, errbuf,
				       errlen);
		} else if (!strcmp(key, "audit") && json_is_boolean(v)) {
			c->audit = json_is_true(v);
		} else if (!strcmp(key, "max_runs_per_user") && json_is_integer(v) &&
			   json_integer_value(v) >= 1 && json_integer_value(v) <= 64) {
			c->max_runs = (int)json_integer_value(v);
		} else {
			snprintf(errbuf, errlen,
				 "%s: unknown key, or not of its type (groups: [names], "
				 "max_runs_per_user: 1 to 64, max_conns_per_run: 1 to 1000000, "
				 "audit: true/false, allow: [rules], deny: [rules])",
				 key);
			rc = -EINVAL;
		}
	}
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
	memset(c, 0, sizeof(*c));
}
