// SPDX-License-Identifier: Apache-2.0
/* --policy FILE: a JSON policy file (schema in policy.h) read, checked and
 * fed rule by rule to policy_add(); the only file that includes cJSON.h.
 * Checking is strict, because a typo in a security policy should stop the
 * daemon rather than be skipped: unknown or duplicate keys, wrong types,
 * an unknown "version", data after the JSON value and NUL characters are all
 * errors, and each message starts with the JSON path it is about
 * ("allow[2].methods[0]: expected a string"); a document nested deeper than
 * cJSON parses (CJSON_NESTING_LIMIT) says so, not "syntax error". Files over CONFIG_MAX_SIZE are
 * refused before parsing. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cJSON.h>

#include "policy/policy.h"

#define CONFIG_MAX_SIZE (16u << 20) /* 16 MiB: larger policy files are refused */
#define CONFIG_MAX_MSG	512	    /* room for one policy_add() message */

static int __attribute__((format(printf, 4, 5)))
cfg_fail(char *errbuf, size_t errlen, int err, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* A key from the file, safe to print: at most 40 bytes, no control bytes. */
static const char *
show_key(const char *key, char *buf, size_t len)
{
	return policy_safe_str(key, 40, buf, len);
}

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* 1-based line and column of byte off. */
static void
line_col(const char *json, size_t off, unsigned int *line, unsigned int *col)
{
	size_t i;

	*line = 1;
	*col = 1;
	for (i = 0; i < off; i++) {
		if (json[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* Byte offset of the bracket that opens nesting level limit + 1 (strings
 * skipped), or -1. cJSON refuses such a document at exactly that bracket,
 * with no word of why: its parse error there is this. */
static long
too_deep_at(const char *json, size_t len, unsigned int limit)
{
	unsigned int depth = 0;
	bool in_str = false;

	for (size_t i = 0; i < len; i++) {
		char c = json[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '[' || c == '{') {
			if (++depth > limit)
				return (long)i;
		} else if ((c == ']' || c == '}') && depth) {
			depth--;
		}
	}
	return -1;
}

/* cJSON turns "\u0000" into a NUL that silently cuts the string short. */
static const char *
find_escaped_nul(const char *json, size_t len)
{
	size_t i, bs;

	for (i = 0; i + 6 <= len; i++) {
		if (json[i] != '\\' || strncasecmp(json + i + 1, "u0000", 5))
			continue;
		for (bs = 0; bs < i && json[i - 1 - bs] == '\\'; bs++)
			;
		if (bs % 2 == 0)
			return json + i;
	}
	return NULL;
}

static int
load_methods(const cJSON *arr, const char *path, char **out, char *errbuf, size_t errlen)
{
	char msg[CONFIG_MAX_MSG], *list, *w;
	const cJSON *m;
	uint32_t bits;
	size_t len = 0;
	int i = 0, err;

	if (!cJSON_IsArray(arr))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.methods: expected an array of methods",
				path);
	cJSON_ArrayForEach(m, arr)
	{
		if (!cJSON_IsString(m))
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s.methods[%d]: expected a string", path, i);
		if (!m->valuestring[0])
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s.methods[%d]: expected a method name", path, i);
		if (strchr(m->valuestring, ','))
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s.methods[%d]: expected one method, not a list", path, i);
		err = policy_methods_parse(m->valuestring, &bits, msg, sizeof(msg));
		if (err)
			return cfg_fail(errbuf, errlen, err, "%s.methods[%d]: %s", path, i, msg);
		len += strlen(m->valuestring) + 1;
		i++;
	}
	if (!i)
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.methods: expected at least one method",
				path);
	list = malloc(len);
	if (!list)
		return cfg_fail(errbuf, errlen, -ENOMEM, "%s.methods: out of memory", path);
	w = list;
	cJSON_ArrayForEach(m, arr)
	{
		len = strlen(m->valuestring);
		memcpy(w, m->valuestring, len);
		w[len] = ',';
		w += len + 1;
	}
	w[-1] = '\0';
	*out = list;
	return 0;
}

/* "paths": an array of path patterns, pointed at (not copied) in o. */
static int
load_paths(const cJSON *arr, const char *path, struct policy_rule_opts *o, const char **v,
	   char *errbuf, size_t errlen)
{
	char msg[CONFIG_MAX_MSG];
	const cJSON *m;
	int i = 0;

	if (!cJSON_IsArray(arr))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.paths: expected an array of paths",
				path);
	cJSON_ArrayForEach(m, arr)
	{
		if (!cJSON_IsString(m))
			return cfg_fail(errbuf, errlen, -EINVAL, "%s.paths[%d]: expected a string",
					path, i);
		if (i == POLICY_MAX_PATHS)
			return cfg_fail(errbuf, errlen, -EINVAL, "%s.paths: at most %d paths", path,
					POLICY_MAX_PATHS);
		if (policy_path_check(m->valuestring, msg, sizeof(msg)))
			return cfg_fail(errbuf, errlen, -EINVAL, "%s.paths[%d]: %s", path, i, msg);
		v[i++] = m->valuestring;
	}
	if (!i)
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.paths: expected at least one path",
				path);
	o->paths = v;
	o->npaths = (size_t)i;
	return 0;
}

/* The keys of a rule object into their slots (rule, methods, paths,
 * inspect), each at most once. */
static int
rule_keys(const cJSON *el, const cJSON **slots, const char *path, char *errbuf, size_t errlen)
{
	static const char *const keys[] = {"rule", "methods", "paths", "inspect"};
	const cJSON *k;
	char kb[48];

	cJSON_ArrayForEach(k, el)
	{
		size_t i = 0;

		while (i < 4 && strcmp(k->string, keys[i]))
			i++;
		if (i == 4)
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s: unknown key \"%s\" (expected \"rule\", \"methods\", "
					"\"paths\" or \"inspect\")",
					path, show_key(k->string, kb, sizeof(kb)));
		if (slots[i])
			return cfg_fail(errbuf, errlen, -EINVAL, "%s: duplicate key \"%s\"", path,
					k->string);
		slots[i] = k;
	}
	if (!slots[0])
		return cfg_fail(errbuf, errlen, -EINVAL, "%s: missing \"rule\"", path);
	if (!cJSON_IsString(slots[0]))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.rule: expected a string", path);
	if (slots[3] && !cJSON_IsBool(slots[3]))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.inspect: expected true or false",
				path);
	return 0;
}

/* One element of "allow" or "deny": a rule string or {"rule", "methods",
 * "paths", "inspect"}. */
static int
load_rule(struct policy *p, enum policy_action action, const cJSON *el, const char *path,
	  const char *source, char *errbuf, size_t errlen)
{
	const cJSON *slots[4] = {0}; /* rule, methods, paths, inspect */
	const char *paths[POLICY_MAX_PATHS];
	struct policy_rule_opts o = {0};
	char msg[CONFIG_MAX_MSG], *list = NULL;
	int err;

	if (cJSON_IsString(el)) {
		slots[0] = el;
	} else if (cJSON_IsObject(el)) {
		err = rule_keys(el, slots, path, errbuf, errlen);
		if (!err && slots[2])
			err = load_paths(slots[2], path, &o, paths, errbuf, errlen);
		if (!err && slots[1])
			err = load_methods(slots[1], path, &list, errbuf, errlen);
		if (err)
			return err;
		o.methods = list;
		o.inspect = slots[3] && cJSON_IsTrue(slots[3]);
	} else {
		return cfg_fail(errbuf, errlen, -EINVAL,
				"%s: expected a rule string or an object {\"rule\": ...}", path);
	}
	err = policy_add_opts(p, action, slots[0]->valuestring, &o, source, msg, sizeof(msg));
	free(list);
	if (err)
		return cfg_fail(errbuf, errlen, err, "%s: %s", path, msg);
	return 0;
}

/* "allow[12]" into path (32 bytes). */
static void
rule_path(char *path, const char *key, int i)
{
	char digits[12];
	size_t n = strlen(key), k = 0;

	memcpy(path, key, n);
	path[n++] = '[';
	do
		digits[k++] = (char)('0' + i % 10);
	while ((i /= 10) && k < sizeof(digits));
	while (k)
		path[n++] = digits[--k];
	path[n++] = ']';
	path[n] = 0;
}

static int
load_rules(struct policy *p, enum policy_action action, const cJSON *arr, const char *source,
	   char *errbuf, size_t errlen)
{
	const char *key = action == POLICY_ALLOW ? "allow" : "deny";
	char path[32];
	const cJSON *el;
	int i = 0, err;

	if (!cJSON_IsArray(arr))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s: expected an array of rules", key);
	cJSON_ArrayForEach(el, arr)
	{
		rule_path(path, key, i++); /* once per rule of a big file: no snprintf */
		err = load_rule(p, action, el, path, source, errbuf, errlen);
		if (err)
			return err;
		policy_pace((unsigned int)i);
	}
	return 0;
}

static int
load_root(struct policy *p, const cJSON *root, const char *source, char *errbuf, size_t errlen)
{
	const cJSON *version = NULL, *allow = NULL, *deny = NULL, *mode = NULL, *k;
	char kb[48];
	int err;

	if (!cJSON_IsObject(root))
		return cfg_fail(errbuf, errlen, -EINVAL, "expected a JSON object at the top level");
	cJSON_ArrayForEach(k, root)
	{
		/* "observed": what --suggest-policy saw (confine/suggest.h), kept in
		 * the file it writes and ignored here by design; it decides nothing */
		if (!strcmp(k->string, "observed")) {
			if (!cJSON_IsObject(k))
				return cfg_fail(errbuf, errlen, -EINVAL,
						"observed: expected an object (what "
						"--suggest-policy saw; ignored)");
			continue;
		}
		const cJSON **slot = !strcmp(k->string, "version") ? &version
				     : !strcmp(k->string, "allow") ? &allow
				     : !strcmp(k->string, "deny")  ? &deny
				     : !strcmp(k->string, "mode")  ? &mode
								   : NULL;

		if (!slot)
			return cfg_fail(errbuf, errlen, -EINVAL,
					"unknown key \"%s\" (expected \"version\", \"mode\", "
					"\"allow\", \"deny\" or \"observed\")",
					show_key(k->string, kb, sizeof(kb)));
		if (*slot)
			return cfg_fail(errbuf, errlen, -EINVAL, "duplicate key \"%s\"", k->string);
		*slot = k;
	}
	if (policy_expect(p, (size_t)cJSON_GetArraySize(allow) + (size_t)cJSON_GetArraySize(deny)))
		return cfg_fail(errbuf, errlen, -ENOMEM, "out of memory");
	if (version && (!cJSON_IsNumber(version) || version->valuedouble != 1.0))
		return cfg_fail(errbuf, errlen, -EINVAL, "version: expected 1");
	if (mode && (!cJSON_IsString(mode) ||
		     (strcmp(mode->valuestring, "limited") && strcmp(mode->valuestring, "full"))))
		return cfg_fail(errbuf, errlen, -EINVAL, "mode: expected \"full\" or \"limited\"");
	if (mode && !strcmp(mode->valuestring, "limited"))
		policy_set_limited(p, true);
	if (allow) {
		err = load_rules(p, POLICY_ALLOW, allow, source, errbuf, errlen);
		if (err)
			return err;
	}
	if (deny)
		return load_rules(p, POLICY_DENY, deny, source, errbuf, errlen);
	return 0;
}

int
config_load_buf(struct policy *p, const char *json, size_t len, const char *source, char *errbuf,
		size_t errlen)
{
	const char *end = NULL, *nul;
	unsigned int line, col;
	cJSON *root;
	size_t off;
	int err;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!p || (!json && len))
		return cfg_fail(errbuf, errlen, -EINVAL, "invalid arguments");
	if (len > CONFIG_MAX_SIZE)
		return cfg_fail(errbuf, errlen, -EFBIG, "policy larger than %u MiB",
				CONFIG_MAX_SIZE >> 20);
	nul = len ? memchr(json, '\0', len) : NULL;
	if (!nul)
		nul = find_escaped_nul(json, len);
	if (nul) {
		line_col(json, nul - json, &line, &col);
		return cfg_fail(errbuf, errlen, -EINVAL,
				"NUL character at line %u, column %u (byte offset %zu)", line, col,
				(size_t)(nul - json));
	}
	for (off = 0; off < len && is_space(json[off]); off++)
		;
	if (off >= len)
		return cfg_fail(errbuf, errlen, -EINVAL, "empty policy (expected a JSON object)");

	root = cJSON_ParseWithLengthOpts(json, len, &end, false);
	if (!root) {
		if (!end)
			end = cJSON_GetErrorPtr();
		off = end && end >= json && end <= json + len ? (size_t)(end - json) : len;
		line_col(json, off, &line, &col);
		if (too_deep_at(json, len, CJSON_NESTING_LIMIT) == (long)off)
			return cfg_fail(
				errbuf, errlen, -EINVAL,
				"JSON nesting too deep (limit %u) at line %u, column %u (byte "
				"offset %zu)",
				(unsigned int)CJSON_NESTING_LIMIT, line, col, off);
		return cfg_fail(errbuf, errlen, -EINVAL,
				"JSON syntax error at line %u, column %u (byte offset %zu)", line,
				col, off);
	}
	off = end - json;
	while (off < len && is_space(json[off]))
		off++;
	if (off < len) {
		line_col(json, off, &line, &col);
		err = cfg_fail(errbuf, errlen, -EINVAL,
			       "unexpected data after the JSON value at line %u, column %u (byte "
			       "offset %zu)",
			       line, col, off);
		goto out_delete;
	}
	err = load_root(p, root, source, errbuf, errlen);
out_delete:
	cJSON_Delete(root);
	return err;
}

int
config_load_file(struct policy *p, const char *path, char *errbuf, size_t errlen)
{
	char *buf = NULL, *nbuf, msg[CONFIG_MAX_MSG];
	size_t len = 0, cap = 0;
	struct stat st;
	ssize_t n;
	int fd, err;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!p || !path)
		return cfg_fail(errbuf, errlen, -EINVAL, "invalid arguments");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		err = -errno;
		return cfg_fail(errbuf, errlen, err, "cannot read %s: %s", path, strerror(-err));
	}
	if (fstat(fd, &st)) {
		err = -errno;
		goto out_read;
	}
	if (S_ISDIR(st.st_mode)) {
		err = -EISDIR;
		goto out_read;
	}
	if (S_ISREG(st.st_mode) && st.st_size > CONFIG_MAX_SIZE)
		goto out_big;
	for (;;) {
		if (len == cap) {
			if (cap > CONFIG_MAX_SIZE)
				goto out_big;
			cap = cap ? cap * 2 : 64 << 10;
			if (cap > CONFIG_MAX_SIZE + 1)
				cap = CONFIG_MAX_SIZE + 1;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				err = -ENOMEM;
				goto out_read;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto out_read;
		}
		if (!n)
			break;
		len += n;
	}
	if (len > CONFIG_MAX_SIZE)
		goto out_big;
	err = config_load_buf(p, buf, len, path, msg, sizeof(msg));
	if (err)
		cfg_fail(errbuf, errlen, err, "%s: %s", path, msg);
	goto out_close;
out_big:
	err = cfg_fail(errbuf, errlen, -EFBIG, "%s: larger than %u MiB, the limit for a policy",
		       path, CONFIG_MAX_SIZE >> 20);
	goto out_close;
out_read:
	cfg_fail(errbuf, errlen, err, "cannot read %s: %s", path, strerror(-err));
out_close:
	free(buf);
	close(fd);
	return err;
}
