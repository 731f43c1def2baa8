// SPDX-License-Identifier: Apache-2.0
/* --policy FILE: a JSON policy file (schema in policy.h) read, checked and
 * fed rule by rule to policy_add(); parsed by lib/jsonx.h (jansson).
 * Checking is strict, because a typo in a security policy should stop the
 * daemon rather than be skipped: unknown or duplicate keys, wrong types,
 * an unknown "version", data after the JSON value, bytes that are not
 * UTF-8 and NUL characters are all errors, and each message starts with
 * the JSON path it is about ("allow[2].methods[0]: expected a string") or
 * the line and column; a document nested deeper than CONFIG_MAX_DEPTH says
 * so, not "syntax error". Files over CONFIG_MAX_SIZE are refused before
 * parsing. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>

#include "lib/fdread.h"
#include "lib/jsonx.h"
#include "policy/policy.h"
#include "policy/secret.h"

#define CONFIG_MAX_MSG	 512  /* room for one policy_add() message */
#define CONFIG_MAX_DEPTH 1000 /* nesting levels */

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

/* "\u0000" would be a NUL that cuts a rule short: refused, where it is. */
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
load_methods(const json_t *arr, const char *path, char **out, char *errbuf, size_t errlen)
{
	char msg[CONFIG_MAX_MSG], *list, *w;
	const char *name;
	size_t len = 0, i;
	json_t *m;
	uint32_t bits;
	int err;

	if (!json_is_array(arr))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.methods: expected an array of methods",
				path);
	json_array_foreach(arr, i, m) {
		name = json_string_value(m);
		if (!name)
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s.methods[%zu]: expected a string", path, i);
		if (!name[0])
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s.methods[%zu]: expected a method name", path, i);
		if (strchr(name, ','))
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s.methods[%zu]: expected one method, not a list", path,
					i);
		err = policy_methods_parse(name, &bits, msg, sizeof(msg));
		if (err)
			return cfg_fail(errbuf, errlen, err, "%s.methods[%zu]: %s", path, i, msg);
		len += strlen(name) + 1;
	}
	if (!json_array_size(arr))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.methods: expected at least one method",
				path);
	list = malloc(len);
	if (!list)
		return cfg_fail(errbuf, errlen, -ENOMEM, "%s.methods: out of memory", path);
	w = list;
	json_array_foreach(arr, i, m) {
		name = json_string_value(m);
		len = strlen(name);
		memcpy(w, name, len);
		w[len] = ',';
		w += len + 1;
	}
	w[-1] = '\0';
	*out = list;
	return 0;
}

/* "paths": an array of path patterns, pointed at (not copied) in o. */
static int
load_paths(json_t *arr, const char *path, struct policy_rule_opts *o, const char **v, char *errbuf,
	   size_t errlen)
{
	char msg[CONFIG_MAX_MSG];
	json_t *m;
	size_t i;

	if (!json_is_array(arr))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.paths: expected an array of paths",
				path);
	json_array_foreach(arr, i, m) {
		if (!json_is_string(m))
			return cfg_fail(errbuf, errlen, -EINVAL, "%s.paths[%zu]: expected a string",
					path, i);
		if (i == POLICY_MAX_PATHS)
			return cfg_fail(errbuf, errlen, -EINVAL, "%s.paths: at most %d paths", path,
					POLICY_MAX_PATHS);
		if (policy_path_check(json_string_value(m), msg, sizeof(msg)))
			return cfg_fail(errbuf, errlen, -EINVAL, "%s.paths[%zu]: %s", path, i, msg);
		v[i] = json_string_value(m);
	}
	if (!json_array_size(arr))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.paths: expected at least one path",
				path);
	o->paths = v;
	o->npaths = json_array_size(arr);
	return 0;
}

/* A rule's header hooks: "strip_headers": ["cookie"], "set_headers":
 * {"authorization": {"secret": "T", "prefix": "Bearer ",
 * "require_placeholder": true}}, pointed at (not copied) in h. */
struct hook_slots {
	struct policy_hooks h;
	const char *strip[POLICY_HOOK_MAX];
	struct policy_hook_set set[POLICY_HOOK_MAX];
};

static int
load_set(json_t *obj, const char *path, struct hook_slots *hs, char *errbuf, size_t errlen)
{
	const char *name, *key;
	json_t *def, *k;
	char nb[48], kb[48];

	if (!json_is_object(obj) || !json_object_size(obj))
		return cfg_fail(errbuf, errlen, -EINVAL,
				"%s.set_headers: expected an object {\"HEADER\": {\"secret\": "
				"\"NAME\", ...}}",
				path);
	if (json_object_size(obj) > POLICY_HOOK_MAX)
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.set_headers: at most %d headers", path,
				POLICY_HOOK_MAX);
	json_object_foreach(obj, name, def) {
		struct policy_hook_set *s = &hs->set[hs->h.nset++];

		show_key(name, nb, sizeof(nb));
		if (!json_is_object(def))
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s.set_headers.%s: expected {\"secret\": \"NAME\", "
					"\"prefix\": ..., \"require_placeholder\": ...}",
					path, nb);
		s->name = name;
		json_object_foreach(def, key, k) {
			if (!strcmp(key, "secret") && json_is_string(k))
				s->secret = json_string_value(k);
			else if (!strcmp(key, "prefix") && json_is_string(k))
				s->prefix = json_string_value(k);
			else if (!strcmp(key, "require_placeholder") && json_is_boolean(k))
				s->placeholder = json_is_true(k);
			else
				return cfg_fail(errbuf, errlen, -EINVAL,
						"%s.set_headers.%s: unknown key \"%s\" or not of "
						"its type (expected \"secret\" and \"prefix\", "
						"strings, \"require_placeholder\", true or false)",
						path, nb, show_key(key, kb, sizeof(kb)));
		}
		if (!s->secret)
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s.set_headers.%s: expected \"secret\": the secret whose "
					"value it carries",
					path, nb);
	}
	return 0;
}

static int
load_hooks(json_t *strip, json_t *set, const char *path, struct hook_slots *hs, char *errbuf,
	   size_t errlen)
{
	json_t *el;
	size_t i;

	if (strip) {
		if (!json_is_array(strip) || !json_array_size(strip))
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s.strip_headers: expected an array of header names",
					path);
		if (json_array_size(strip) > POLICY_HOOK_MAX)
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s.strip_headers: at most %d headers", path,
					POLICY_HOOK_MAX);
		json_array_foreach(strip, i, el) {
			if (!json_is_string(el))
				return cfg_fail(errbuf, errlen, -EINVAL,
						"%s.strip_headers[%zu]: expected a string", path,
						i);
			hs->strip[hs->h.nstrip++] = json_string_value(el);
		}
	}
	if (set) {
		int err = load_set(set, path, hs, errbuf, errlen);

		if (err)
			return err;
	}
	hs->h.strip = hs->strip;
	hs->h.set = hs->set;
	return 0;
}

/* The keys of a rule object into their slots (rule, methods, paths,
 * inspect, comment, strip_headers, set_headers; a key twice the parser
 * refused). */
#define RULE_KEYS 7
static int
rule_keys(json_t *el, json_t **slots, const char *path, char *errbuf, size_t errlen)
{
	static const char *const keys[RULE_KEYS] = {
		"rule", "methods", "paths", "inspect", "comment", "strip_headers", "set_headers"};
	const char *key;
	json_t *k;
	char kb[48];

	json_object_foreach(el, key, k) {
		size_t i = 0;

		while (i < RULE_KEYS && strcmp(key, keys[i]))
			i++;
		if (i == RULE_KEYS)
			return cfg_fail(errbuf, errlen, -EINVAL,
					"%s: unknown key \"%s\" (expected \"rule\", \"methods\", "
					"\"paths\", \"inspect\", \"strip_headers\", "
					"\"set_headers\" or \"comment\")",
					path, show_key(key, kb, sizeof(kb)));
		slots[i] = k;
	}
	if (!slots[0])
		return cfg_fail(errbuf, errlen, -EINVAL, "%s: missing \"rule\"", path);
	if (!json_is_string(slots[0]))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.rule: expected a string", path);
	if (slots[3] && !json_is_boolean(slots[3]))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.inspect: expected true or false",
				path);
	if (slots[4] && !json_is_string(slots[4]))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s.comment: expected a string", path);
	return 0;
}

/* One element of "allow" or "deny": a rule string or {"rule", "methods",
 * "paths", "inspect", "comment", "strip_headers", "set_headers"}. */
static int
load_rule(struct policy *p, enum policy_action action, json_t *el, const char *path,
	  const char *source, char *errbuf, size_t errlen)
{
	json_t *slots[RULE_KEYS] = {0}; /* rule_keys()'s order */
	const char *paths[POLICY_MAX_PATHS];
	struct hook_slots hs = {0};
	struct policy_rule_opts o = {0};
	char msg[CONFIG_MAX_MSG], *list = NULL;
	int err;

	if (json_is_string(el)) {
		slots[0] = el;
	} else if (json_is_object(el)) {
		err = rule_keys(el, slots, path, errbuf, errlen);
		if (!err && slots[2])
			err = load_paths(slots[2], path, &o, paths, errbuf, errlen);
		if (!err && (slots[5] || slots[6]))
			err = load_hooks(slots[5], slots[6], path, &hs, errbuf, errlen);
		if (!err && slots[1])
			err = load_methods(slots[1], path, &list, errbuf, errlen);
		if (err)
			return err;
		o.hooks = slots[5] || slots[6] ? &hs.h : NULL;
		o.methods = list;
		o.inspect = slots[3] && json_is_true(slots[3]);
	} else {
		return cfg_fail(errbuf, errlen, -EINVAL,
				"%s: expected a rule string or an object {\"rule\": ...}", path);
	}
	err = policy_add_opts(p, action, json_string_value(slots[0]), &o, source, msg, sizeof(msg));
	free(list);
	if (err)
		return cfg_fail(errbuf, errlen, err, "%s: %s", path, msg);
	err = slots[4] ? policy_set_comment(p, json_string_value(slots[4])) : 0;
	if (err == -ENOMEM)
		return cfg_fail(errbuf, errlen, err, "out of memory");
	if (err)
		return cfg_fail(errbuf, errlen, err,
				"%s.comment: at most %d bytes, no control characters", path,
				POLICY_COMMENT_MAX);
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
load_rules(struct policy *p, enum policy_action action, const json_t *arr, const char *source,
	   char *errbuf, size_t errlen)
{
	const char *key = action == POLICY_ALLOW ? "allow" : "deny";
	char path[32];
	json_t *el;
	size_t i;
	int err;

	if (!json_is_array(arr))
		return cfg_fail(errbuf, errlen, -EINVAL, "%s: expected an array of rules", key);
	json_array_foreach(arr, i, el) {
		rule_path(path, key, (int)i); /* once per rule of a big file: no snprintf */
		err = load_rule(p, action, el, path, source, errbuf, errlen);
		if (err)
			return err;
		policy_pace((unsigned int)i + 1);
	}
	return 0;
}

/* "secrets": {"NAME": {"from": "env:VAR", "hosts": ["api.example.com"]}}. */
static int
load_secrets(struct policy *p, json_t *obj, const char *source, char *errbuf, size_t errlen)
{
	const char *name, *key, *hosts[SECRET_MAX_HOSTS];
	char msg[CONFIG_MAX_MSG], nb[48], kb[48];
	json_t *def, *k, *from, *hl, *h;
	size_t i;
	int err;

	if (!json_is_object(obj))
		return cfg_fail(errbuf, errlen, -EINVAL,
				"secrets: expected an object {\"NAME\": {\"from\": ..., "
				"\"hosts\": [...]}}");
	json_object_foreach(obj, name, def) {
		show_key(name, nb, sizeof(nb));
		from = hl = NULL;
		if (!json_is_object(def))
			return cfg_fail(errbuf, errlen, -EINVAL,
					"secrets.%s: expected an object {\"from\": ..., "
					"\"hosts\": [...]}",
					nb);
		json_object_foreach(def, key, k) {
			if (!strcmp(key, "from"))
				from = k;
			else if (!strcmp(key, "hosts"))
				hl = k;
			else if (strcmp(key, "comment") || !json_is_string(k))
				return cfg_fail(errbuf, errlen, -EINVAL,
						"secrets.%s: unknown key \"%s\" (expected "
						"\"from\", \"hosts\" or \"comment\")",
						nb, show_key(key, kb, sizeof(kb)));
		}
		if (!from || !json_is_string(from))
			return cfg_fail(errbuf, errlen, -EINVAL,
					"secrets.%s.from: expected \"env:VAR\", "
					"\"file:/PATH\" or \"command:CMDLINE\"",
					nb);
		if (!hl || !json_is_array(hl) || !json_array_size(hl))
			return cfg_fail(errbuf, errlen, -EINVAL,
					"secrets.%s.hosts: expected an array of at least one host "
					"(where the secret may be sent)",
					nb);
		if (json_array_size(hl) > SECRET_MAX_HOSTS)
			return cfg_fail(errbuf, errlen, -EINVAL, "secrets.%s.hosts: at most %d", nb,
					SECRET_MAX_HOSTS);
		json_array_foreach(hl, i, h) {
			if (!json_is_string(h))
				return cfg_fail(errbuf, errlen, -EINVAL,
						"secrets.%s.hosts[%zu]: expected a string", nb, i);
			hosts[i] = json_string_value(h);
		}
		err = policy_add_secret(p, name, json_string_value(from), hosts,
					json_array_size(hl), source, msg, sizeof(msg));
		if (err)
			return cfg_fail(errbuf, errlen, err, "secrets.%s: %s", nb, msg);
	}
	return 0;
}

/* The top level (a key twice the parser refused). */
static int
load_root(struct policy *p, json_t *root, const char *source, char *errbuf, size_t errlen)
{
	json_t *version = NULL, *allow = NULL, *deny = NULL, *mode = NULL, *secrets = NULL, *k;
	const char *key;
	char kb[48];
	int err;

	if (!json_is_object(root))
		return cfg_fail(errbuf, errlen, -EINVAL, "expected a JSON object at the top level");
	json_object_foreach(root, key, k) {
		/* "observed": what --suggest-policy saw (confine/suggest.h), kept in
		 * the file it writes and ignored here by design; it decides nothing */
		/* "comment": the file's own words, for its readers */
		if (!strcmp(key, "comment")) {
			if (!json_is_string(k))
				return cfg_fail(errbuf, errlen, -EINVAL,
						"comment: expected a string");
		} else if (!strcmp(key, "observed")) {
			if (!json_is_object(k))
				return cfg_fail(errbuf, errlen, -EINVAL,
						"observed: expected an object (what "
						"--suggest-policy saw; ignored)");
		} else if (!strcmp(key, "version")) {
			version = k;
		} else if (!strcmp(key, "allow")) {
			allow = k;
		} else if (!strcmp(key, "deny")) {
			deny = k;
		} else if (!strcmp(key, "mode")) {
			mode = k;
		} else if (!strcmp(key, "secrets")) {
			secrets = k;
		} else {
			return cfg_fail(errbuf, errlen, -EINVAL,
					"unknown key \"%s\" (expected \"version\", \"mode\", "
					"\"allow\", \"deny\", \"secrets\", \"comment\" or "
					"\"observed\")",
					show_key(key, kb, sizeof(kb)));
		}
	}
	if (policy_expect(p, json_array_size(allow) + json_array_size(deny)))
		return cfg_fail(errbuf, errlen, -ENOMEM, "out of memory");
	if (version && (!json_is_number(version) || json_number_value(version) != 1.0))
		return cfg_fail(errbuf, errlen, -EINVAL, "version: expected 1");
	if (mode && (!json_is_string(mode) || (strcmp(json_string_value(mode), "limited") &&
					       strcmp(json_string_value(mode), "full"))))
		return cfg_fail(errbuf, errlen, -EINVAL, "mode: expected \"full\" or \"limited\"");
	if (mode && !strcmp(json_string_value(mode), "limited"))
		policy_set_limited(p, true);
	if (secrets) {
		err = load_secrets(p, secrets, source, errbuf, errlen);
		if (err)
			return err;
	}
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
	char why[CONFIG_MAX_MSG];
	const char *nul;
	unsigned int line, col;
	size_t off, end;
	json_t *root;
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
		jsonx_line_col(json, nul - json, &line, &col);
		return cfg_fail(errbuf, errlen, -EINVAL,
				"NUL character at line %u, column %u (byte offset %zu)", line, col,
				(size_t)(nul - json));
	}
	for (off = 0; off < len && is_space(json[off]); off++)
		;
	if (off >= len)
		return cfg_fail(errbuf, errlen, -EINVAL, "empty policy (expected a JSON object)");

	root = jsonx_parse(json, len, CONFIG_MAX_DEPTH, &end, why, sizeof(why));
	if (!root)
		return cfg_fail(errbuf, errlen, -EINVAL, "%s", why);
	for (off = end; off < len && is_space(json[off]); off++)
		;
	if (off < len) {
		jsonx_line_col(json, off, &line, &col);
		err = cfg_fail(errbuf, errlen, -EINVAL,
			       "unexpected data after the JSON value at line %u, column %u (byte "
			       "offset %zu)",
			       line, col, off);
		goto out_delete;
	}
	err = load_root(p, root, source, errbuf, errlen);
out_delete:
	json_decref(root);
	return err;
}

/* path, or fd:N (a descriptor the caller was given: the service's run
 * reads what the user opened, never a path of the user's as root). */
static int
open_policy(const char *path)
{
	char *end;
	long n;

	if (strncmp(path, "fd:", 3) || path[3] < '0' || path[3] > '9')
		return open(path, O_RDONLY | O_CLOEXEC);
	n = strtol(path + 3, &end, 10);
	if (*end || n > 1 << 20) {
		errno = EBADF;
		return -1;
	}
	return fcntl((int)n, F_DUPFD_CLOEXEC, 0);
}

int
config_load_file(struct policy *p, const char *path, char *errbuf, size_t errlen)
{
	char *buf = NULL, msg[CONFIG_MAX_MSG];
	struct stat st;
	ssize_t n;
	int fd, err;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!p || !path)
		return cfg_fail(errbuf, errlen, -EINVAL, "invalid arguments");
	fd = open_policy(path);
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
	n = fd_read_all(fd, CONFIG_MAX_SIZE, &buf);
	if (n == -EFBIG)
		goto out_big;
	if (n < 0) {
		err = (int)n;
		goto out_read;
	}
	err = config_load_buf(p, buf, (size_t)n, path, msg, sizeof(msg));
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
