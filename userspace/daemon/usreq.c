// SPDX-License-Identifier: Apache-2.0
/* The user socket's messages parsed (see usreq.h): JSON through jsonx,
 * every string checked to hold no NUL (jansson allows \u0000), every list
 * bounded, no key but those known. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/usreq.h"
#include "lib/jsonx.h"

/* A JSON array of strings (each without NUL; with need_eq, holding '=')
 * as a NULL-terminated copy of at most max. */
static int
str_list(const json_t *a, int max, bool need_eq, char ***out, int *n, const char *what, char *err,
	 size_t errlen)
{
	size_t i, len = json_is_array(a) ? json_array_size(a) : 0;
	json_t *v;
	char **l;

	if (!json_is_array(a) || len > (size_t)max) {
		snprintf(err, errlen, "%s: expected a list of at most %d strings", what, max);
		return -EINVAL;
	}
	l = calloc(len + 1, sizeof(*l));
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);

		if (!s || strlen(s) != json_string_length(v) || (need_eq && !strchr(s, '=')) ||
		    !(l[i] = strdup(s))) {
			snprintf(err, errlen, "%s[%zu]: expected a string without NUL%s", what, i,
				 need_eq ? " of the form NAME=VALUE" : "");
			for (size_t k = 0; k < i; k++)
				free(l[k]);
			free(l);
			return -EINVAL;
		}
	}
	*out = l;
	*n = (int)len;
	return 0;
}

/* "umask": 0 to 0777 and "rlimits": PLIMITS_N pairs [CUR, MAX], each a
 * whole number or -1 (unlimited), CUR at most MAX; both or neither. */
static int
parse_limits(const json_t *doc, struct plimits *l, char *err, size_t errlen)
{
	const json_t *um = json_object_get(doc, "umask"), *rl = json_object_get(doc, "rlimits");
	size_t i;
	json_t *v;

	if (!um && !rl)
		return 0;
	if (!json_is_integer(um) || json_integer_value(um) < 0 || json_integer_value(um) > 0777) {
		snprintf(err, errlen, "umask: expected 0 to 0777, with rlimits");
		return -EINVAL;
	}
	if (!json_is_array(rl) || json_array_size(rl) != PLIMITS_N) {
		snprintf(err, errlen, "rlimits: expected %d pairs [CUR, MAX], with umask",
			 PLIMITS_N);
		return -EINVAL;
	}
	l->umask = (mode_t)json_integer_value(um);
	json_array_foreach(rl, i, v) {
		json_t *c = json_array_get(v, 0), *m = json_array_get(v, 1);
		json_int_t cv = json_is_integer(c) ? json_integer_value(c) : -2;
		json_int_t mv = json_is_integer(m) ? json_integer_value(m) : -2;

		l->cur[i] = cv == -1 ? PLIMITS_INF : (uint64_t)cv;
		l->max[i] = mv == -1 ? PLIMITS_INF : (uint64_t)mv;
		if (!json_is_array(v) || json_array_size(v) != 2 || cv < -1 || mv < -1 ||
		    l->cur[i] > l->max[i]) {
			snprintf(err, errlen,
				 "rlimits[%zu]: expected [CUR, MAX], whole numbers or -1, CUR at "
				 "most MAX",
				 i);
			return -EINVAL;
		}
	}
	l->set = true;
	return 0;
}

static json_t *
parse_object(const char *buf, size_t len, char *err, size_t errlen)
{
	char why[256];
	size_t end = 0;
	json_t *doc;

	if (len > USREQ_MAX_BYTES) {
		snprintf(err, errlen, "message longer than %d bytes", USREQ_MAX_BYTES);
		return NULL;
	}
	doc = jsonx_parse(buf, len, 4, &end, why, sizeof(why));
	if (!doc) {
		snprintf(err, errlen, "%s", why);
		return NULL;
	}
	while (end < len && (buf[end] == ' ' || buf[end] == '\n'))
		end++;
	if (!json_is_object(doc) || end != len) {
		snprintf(err, errlen, "expected one JSON object");
		json_decref(doc);
		return NULL;
	}
	return doc;
}

int
usreq_parse(const char *buf, size_t len, struct usreq *r, char *err, size_t errlen)
{
	json_t *doc = parse_object(buf, len, err, errlen), *v, *nf;
	const char *key;
	json_int_t nfds;
	int rc = -EINVAL;

	memset(r, 0, sizeof(*r));
	if (!doc)
		return -EINVAL;
	if (json_object_get(doc, "log")) {
		v = json_object_get(doc, "follow");
		if (!json_is_true(json_object_get(doc, "log")) || (v && !json_is_boolean(v)) ||
		    json_object_size(doc) != 1u + !!v) {
			snprintf(err, errlen, "expected {\"log\": true, \"follow\": true|false}");
			goto out;
		}
		r->log = true;
		r->follow = json_is_true(v);
		rc = 0;
		goto out;
	}
	if (json_object_get(doc, "status")) {
		if (!json_is_true(json_object_get(doc, "status")) || json_object_size(doc) != 1) {
			snprintf(err, errlen, "expected {\"status\": true} alone");
			goto out;
		}
		r->status = true;
		rc = 0;
		goto out;
	}
	json_object_foreach(doc, key, v) {
		if (strcmp(key, "args") && strcmp(key, "env") && strcmp(key, "nfds") &&
		    strcmp(key, "umask") && strcmp(key, "rlimits")) {
			snprintf(err, errlen, "unknown key \"%.40s\"", key);
			goto out;
		}
	}
	nf = json_object_get(doc, "nfds");
	nfds = json_is_integer(nf) ? json_integer_value(nf) : -1;
	if (nfds < USREQ_MIN_FDS || nfds > USREQ_MAX_FDS) {
		snprintf(err, errlen, "nfds: expected %d to %d descriptors", USREQ_MIN_FDS,
			 USREQ_MAX_FDS);
		goto out;
	}
	r->nfds = (int)nfds;
	rc = parse_limits(doc, &r->limits, err, errlen);
	if (rc) {
		usreq_free(r);
		goto out;
	}
	rc = str_list(json_object_get(doc, "args"), USREQ_MAX_ARGS, false, &r->args, &r->nargs,
		      "args", err, errlen);
	if (!rc && !r->nargs) {
		snprintf(err, errlen, "args: no command given");
		rc = -EINVAL;
	}
	if (!rc)
		rc = str_list(json_object_get(doc, "env"), USREQ_MAX_ENV, true, &r->env, &r->nenv,
			      "env", err, errlen);
	if (rc)
		usreq_free(r);
out:
	json_decref(doc);
	return rc;
}

void
usreq_free(struct usreq *r)
{
	for (int i = 0; r->args && i < r->nargs; i++)
		free(r->args[i]);
	for (int i = 0; r->env && i < r->nenv; i++)
		free(r->env[i]);
	free(r->args);
	free(r->env);
	memset(r, 0, sizeof(*r));
}

int
usreq_parse_signal(const char *buf, size_t len, int *sig, char *err, size_t errlen)
{
	json_t *doc = parse_object(buf, len, err, errlen), *v;
	json_int_t s;

	if (!doc)
		return -EINVAL;
	v = json_object_get(doc, "signal");
	s = json_is_integer(v) && json_object_size(doc) == 1 ? json_integer_value(v) : 0;
	json_decref(doc);
	if (s != SIGINT && s != SIGTERM && s != SIGHUP && s != SIGQUIT && s != SIGWINCH) {
		snprintf(err, errlen,
			 "expected {\"signal\": N}, N one of INT, TERM, HUP, QUIT, WINCH");
		return -EINVAL;
	}
	*sig = (int)s;
	return 0;
}

/* A string of v without NUL, at most max - 1 bytes, into out. */
static bool
str_into(const json_t *v, char *out, size_t max)
{
	const char *s = json_string_value(v);

	if (!s || strlen(s) != json_string_length(v) || strlen(s) >= max)
		return false;
	memcpy(out, s, strlen(s) + 1);
	return true;
}

int
usreq_parse_adopt(const char *buf, size_t len, struct usreq_adopt *a, char *err, size_t errlen)
{
	json_t *doc = parse_object(buf, len, err, errlen), *o, *st;
	int rc = -EINVAL;

	memset(a, 0, sizeof(*a));
	if (!doc)
		return -EINVAL;
	o = json_object_get(doc, "adopt");
	st = json_object_get(o, "started");
	if (json_object_size(doc) != 1 || !json_is_object(o) || json_object_size(o) != 3 ||
	    !str_into(json_object_get(o, "user"), a->user, sizeof(a->user)) || !a->user[0] ||
	    !str_into(json_object_get(o, "command"), a->command, sizeof(a->command)) ||
	    !json_is_integer(st) || json_integer_value(st) < 0)
		snprintf(err, errlen,
			 "expected {\"adopt\": {\"user\": NAME, \"command\": TEXT, \"started\": "
			 "SECONDS}}");
	else
		rc = 0;
	if (!rc)
		a->started = (long long)json_integer_value(st);
	json_decref(doc);
	if (rc)
		memset(a, 0, sizeof(*a));
	return rc;
}
