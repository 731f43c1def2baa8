// SPDX-License-Identifier: Apache-2.0
/* The daemon's configuration file (see dconfig.h), read by lib/jsonx.h
 * (jansson; a key twice is an error): every key
 * of a target is an option of `run` (the target table of confine/target.c),
 * set through the same rows as the command line, so the file and the
 * command line cannot mean different things. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "daemon/containers.h"
#include "daemon/dconfig.h"
#include "lib/jsonx.h"
#include "policy/policy.h"

#define DCONFIG_MAX_BYTES (16 << 20)
#define DCONFIG_MAX_DEPTH 1000 /* nesting levels */

static char *
read_file(const char *path, size_t *lenp, char *errbuf, size_t errlen)
{
	struct stat st;
	char *buf;
	ssize_t n;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd == -1 || fstat(fd, &st)) {
		snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > DCONFIG_MAX_BYTES) {
		snprintf(errbuf, errlen, "%s: not a regular file of at most 16 MiB", path);
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		snprintf(errbuf, errlen, "out of memory");
		close(fd);
		return NULL;
	}
	while ((n = read(fd, buf + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = 0;
	*lenp = len;
	return buf;
}

/* Checks one rule the way the policy will take it. */
static int
check_rule(enum policy_action a, const char *text, char *err, size_t errlen)
{
	struct policy *p = policy_new();
	int rc;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = policy_add(p, a, text, NULL, "config", err, errlen) ? -EINVAL : 0;
	policy_free(p);
	return rc;
}

static int
set_rules(struct dspec *s, const json_t *v, const char *key, char *errbuf, size_t errlen)
{
	const struct opt_set set = {target_opt_table, &s->o};
	const char *text;
	json_t *r;
	char err[400];
	size_t i;

	if (!json_is_array(v) && !json_is_string(v)) {
		snprintf(errbuf, errlen, "%s.%s: expected a rule or a list of rules", s->where,
			 key);
		return -EINVAL;
	}
	if (json_is_string(v)) {
		text = json_string_value(v);
		if (check_rule(strcmp(key, "allow") ? POLICY_DENY : POLICY_ALLOW, text, err,
			       sizeof(err)) ||
		    opts_set(&set, 1, key, text, err, sizeof(err))) {
			snprintf(errbuf, errlen, "%s.%s: %s", s->where, key, err);
			return -EINVAL;
		}
		return 0;
	}
	json_array_foreach(v, i, r) {
		text = json_string_value(r);
		if (!text) {
			snprintf(errbuf, errlen, "%s.%s[%zu]: expected a string", s->where, key, i);
			return -EINVAL;
		}
		if (check_rule(strcmp(key, "allow") ? POLICY_DENY : POLICY_ALLOW, text, err,
			       sizeof(err)) ||
		    opts_set(&set, 1, key, text, err, sizeof(err))) {
			snprintf(errbuf, errlen, "%s.%s[%zu]: %s", s->where, key, i, err);
			return -EINVAL;
		}
	}
	return 0;
}

/* One key of a target: its kind, its name, or an option of run's. */
static int
set_key(struct dspec *s, const char *key, const json_t *v, char *num, size_t numlen, char *errbuf,
	size_t errlen)
{
	const struct opt_set set = {target_opt_table, &s->o};
	const char *arg;
	char err[400];
	int takes;

	if (!strcmp(key, "allow") || !strcmp(key, "deny"))
		return set_rules(s, v, key, errbuf, errlen);
	if (!strcmp(key, "kill_existing") || !strcmp(key, "kill-existing")) {
		if (!json_is_boolean(v))
			goto bad_bool;
		s->kill_existing = json_is_true(v);
		return 0;
	}
	if (!strcmp(key, "annotations") || !strcmp(key, "labels")) {
		const char *k;
		json_t *g;

		if (!s->selector || !json_is_object(v) || !json_object_size(v)) {
			snprintf(errbuf, errlen, "%s.%s: %s", s->where, key,
				 s->selector
					 ? "expected an object of KEY: GLOB"
					 : "only with a selector (a \"cgroup\" or \"unit\" glob)");
			return -EINVAL;
		}
		json_object_foreach((json_t *)v, k, g) {
			if (!json_is_string(g)) {
				snprintf(errbuf, errlen, "%s.%s.%s: expected a glob", s->where, key,
					 k);
				return -EINVAL;
			}
		}
		if (key[0] == 'a')
			s->annotations = v;
		else
			s->labels = v;
		return 0;
	}
	if (!strcmp(key, "containers")) { /* the daemon's --containers ADDR */
		const char *a = json_string_value(v);

		/* "env:NAME": a DaemonSet's node address (the downward API's
		 * status.hostIP), which one file for every node cannot name */
		if (a && !strncmp(a, "env:", 4) && !getenv(a + 4)) {
			snprintf(errbuf, errlen, "%s.%s: %s: the environment has no %s", s->where,
				 key, a, a + 4);
			return -EINVAL;
		}
		if (a && !strncmp(a, "env:", 4))
			a = getenv(a + 4);
		if (!a || ctr_parse_addr(a, &s->o.containers_ip4, err, sizeof(err))) {
			snprintf(errbuf, errlen, "%s.%s: %s", s->where, key,
				 json_is_string(v) ? err : "expected an IPv4 address");
			return -EINVAL;
		}
		return 0;
	}
	takes = opts_takes_arg(&set, 1, key);
	/* the daemon writes no policy at exit: `egressctl summary --suggest-policy` does */
	if (takes < 0 || !strcmp(key, "suggest_policy") || !strcmp(key, "suggest-policy")) {
		snprintf(errbuf, errlen, "%s.%s: unknown key", s->where, key);
		return -EINVAL;
	}
	if (!takes) {
		if (!json_is_boolean(v))
			goto bad_bool;
		if (json_is_false(v))
			return 0;
		arg = NULL;
	} else if (json_is_string(v)) {
		arg = json_string_value(v);
	} else if (json_is_number(v) &&
		   json_number_value(v) == (double)(long long)json_number_value(v)) {
		snprintf(num, numlen, "%lld", (long long)json_number_value(v));
		arg = num;
	} else {
		snprintf(errbuf, errlen, "%s.%s: expected a string or a whole number", s->where,
			 key);
		return -EINVAL;
	}
	if (opts_set(&set, 1, key, arg, err, sizeof(err))) {
		snprintf(errbuf, errlen, "%s.%s: %s", s->where, key, err);
		return -EINVAL;
	}
	return 0;
bad_bool:
	snprintf(errbuf, errlen, "%s.%s: expected true or false", s->where, key);
	return -EINVAL;
}

static const char *
kind_key(enum dspec_kind k)
{
	return k == DSPEC_CGROUP ? "cgroup" : k == DSPEC_UNIT ? "unit" : "pid";
}

/* A unit pattern's type: one that holds processes, or a slice of them. */
static bool
unit_suffix_ok(const char *pat)
{
	static const char *const types[] = {".service", ".scope", ".slice"};
	size_t n = strlen(pat);

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t k = strlen(types[i]);

		if (n > k && !strcmp(pat + n - k, types[i]) && !strpbrk(pat + n - k, "*?["))
			return true;
	}
	return false;
}

/* The cgroup path of systemd's slice name ("a-b.slice": /a.slice/a-b.slice,
 * "-.slice": the root, ""), or -1 for a name that is not a slice's. */
static int
slice_path(const char *slice, char *out, size_t outlen)
{
	size_t n = strlen(slice), at = 0, len;

	out[0] = 0;
	if (!strcmp(slice, "-.slice"))
		return 0;
	if (n <= 6 || strcmp(slice + n - 6, ".slice") || slice[0] == '-' ||
	    strspn(slice, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789:_.\\-") !=
		    n ||
	    slice[n - 7] == '-' || strstr(slice, "--"))
		return -1;
	for (size_t i = 0; i <= n - 6; i++) {
		if (i < n - 6 && slice[i] != '-')
			continue;
		len = (size_t)snprintf(out + at, outlen - at, "/%.*s.slice", (int)i, slice);
		if (len >= outlen - at)
			return -1;
		at += len;
	}
	return 0;
}

/* "unit": a glob of unit names ("ci-*.service") in "slice" (default
 * system.slice): a selector of the cgroups systemd makes for them, the
 * glob <slice's path>/<pattern> into buf. */
static int
unit_selector(struct dspec *s, const json_t *t, const char *pat, char *buf, size_t buflen,
	      char *errbuf, size_t errlen)
{
	const json_t *v = json_object_get(t, "slice");
	const char *slice = v ? json_string_value(v) : "system.slice";
	char path[PATH_MAX];

	if (strchr(pat, '/') || !unit_suffix_ok(pat)) {
		snprintf(errbuf, errlen,
			 "%s.unit: %s: a pattern of unit names, ending in .service, .scope or "
			 ".slice (\"ci-*.service\"; the slice apart, \"slice\")",
			 s->where, pat);
		return -EINVAL;
	}
	if (!slice || slice_path(slice, path, sizeof(path))) {
		snprintf(errbuf, errlen,
			 "%s.slice: expected the name of a slice (\"ci.slice\", "
			 "\"system.slice\", \"-.slice\" for the root)",
			 s->where);
		return -EINVAL;
	}
	if ((size_t)snprintf(buf, buflen, "%s/%s", path, pat) >= buflen) {
		snprintf(errbuf, errlen, "%s.unit: too long", s->where);
		return -ENAMETOOLONG;
	}
	s->what = buf;
	s->unit = pat;
	s->selector = true;
	return 0;
}

/* A target's kind and what from its "cgroup", "unit" or "pid" key. */
static int
set_kind(struct dspec *s, const json_t *t, char *pidbuf, size_t pidlen, char *globbuf,
	 size_t globlen, char *errbuf, size_t errlen)
{
	int found = 0;

	for (int k = DSPEC_CGROUP; k <= DSPEC_PID; k++) {
		const json_t *v = json_object_get(t, kind_key(k));
		double n = json_number_value(v);
		const char *str = json_string_value(v);

		if (!v)
			continue;
		found++;
		s->kind = (enum dspec_kind)k;
		if (k == DSPEC_PID && json_is_number(v) && n >= 1 && n <= 4194304 &&
		    n == (double)(int)n) {
			snprintf(pidbuf, pidlen, "%d", (int)n);
			s->what = pidbuf;
		} else if (k == DSPEC_UNIT && str && strpbrk(str, "*?[")) {
			int err = unit_selector(s, t, str, globbuf, globlen, errbuf, errlen);

			if (err)
				return err;
		} else if (k != DSPEC_PID && str && str[0]) {
			s->what = str;
			s->selector = k == DSPEC_CGROUP && strpbrk(str, "*?[");
			if (s->selector && str[0] != '/') {
				snprintf(errbuf, errlen,
					 "%s.cgroup: %s: a selector is a glob of absolute paths "
					 "(\"/kubepods.slice/**\")",
					 s->where, str);
				return -EINVAL;
			}
		} else {
			snprintf(errbuf, errlen, "%s.%s: expected %s", s->where, kind_key(k),
				 k == DSPEC_PID ? "a process id" : "a non-empty string");
			return -EINVAL;
		}
	}
	if (found != 1) {
		snprintf(errbuf, errlen, "%s: name exactly one of \"cgroup\", \"unit\", \"pid\"",
			 s->where);
		return -EINVAL;
	}
	if (json_object_get(t, "slice") && !s->unit) {
		snprintf(errbuf, errlen,
			 "%s.slice: only with a pattern of units (a \"unit\" with *)", s->where);
		return -EINVAL;
	}
	return 0;
}

/* Numbers given as text live as long as the config: one buffer each. */
struct nums {
	char pid[DCONFIG_MAX_TARGETS][16];
	char val[DCONFIG_MAX_TARGETS][24][24];
	char policy[DCONFIG_MAX_TARGETS][PATH_MAX]; /* <policy_dir>/NAME.json */
	char glob[DCONFIG_MAX_TARGETS][PATH_MAX];   /* a unit pattern's cgroup glob */
};

/* A policy of policy_dir named: [A-Za-z0-9][A-Za-z0-9._-]*, as a
 * ConfigMap's key is (no "..": the kubelet's own entries start with it). */
static bool
policy_name_ok(const char *n)
{
	size_t len = strlen(n);

	return len && len < 200 && isalnum((unsigned char)n[0]) &&
	       strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
		       len;
}

/* "policy": NAME (no '/') with a policy_dir is <policy_dir>/NAME.json;
 * a path stays a path. */
static int
set_policy_name(const struct dconfig *c, struct dspec *s, char *buf, size_t len, char *errbuf,
		size_t errlen)
{
	const char *n = s->o.policy_file;
	size_t l;

	if (!c->policy_dir || !n || strchr(n, '/'))
		return 0;
	l = strlen(n);
	if (l > 5 && !strcmp(n + l - 5, ".json"))
		l -= 5; /* "ci.json" names ci too */
	if ((size_t)snprintf(buf, len, "%.*s", (int)l, n) >= len || !policy_name_ok(buf)) {
		snprintf(errbuf, errlen,
			 "%s.policy: %s: a policy's name is [A-Za-z0-9][A-Za-z0-9._-]* (a file "
			 "NAME.json of policy_dir), or give a path",
			 s->where, n);
		return -EINVAL;
	}
	/* buf holds the name until the path is written after it */
	s->policy_name = buf;
	l = strlen(buf) + 1;
	if ((size_t)snprintf(buf + l, len - l, "%s/%.*s.json", c->policy_dir, (int)(l - 1), n) >=
	    len - l) {
		snprintf(errbuf, errlen, "%s.policy: %s: name too long", s->where, n);
		return -ENAMETOOLONG;
	}
	s->o.policy_file = buf + l;
	return 0;
}

static int
load_target(struct dconfig *c, json_t *t, int i, struct nums *nums, char *errbuf, size_t errlen)
{
	struct dspec *s = &c->specs[i];
	const char *key, *name;
	json_t *v;
	char err_opts[200];
	int k = 0, err;

	snprintf(s->where, sizeof(s->where), "targets[%d]", i);
	if (!json_is_object(t)) {
		snprintf(errbuf, errlen, "%s: expected an object", s->where);
		return -EINVAL;
	}
	err = set_kind(s, t, nums->pid[i], sizeof(nums->pid[i]), nums->glob[i],
		       sizeof(nums->glob[i]), errbuf, errlen);
	if (err)
		return err;
	v = json_object_get(t, "name");
	name = json_string_value(v);
	if (v && (!name || !name[0])) {
		snprintf(errbuf, errlen, "%s.name: expected a non-empty string", s->where);
		return -EINVAL;
	}
	json_object_foreach(t, key, v) {
		if (!strcmp(key, "name") || !strcmp(key, kind_key(s->kind)) ||
		    (s->unit && !strcmp(key, "slice")))
			continue;
		if (k == 24) {
			snprintf(errbuf, errlen, "%s: too many keys", s->where);
			return -EINVAL;
		}
		err = set_key(s, key, v, nums->val[i][k], sizeof(nums->val[i][k]), errbuf, errlen);
		if (err)
			return err;
		k++;
	}
	err = set_policy_name(c, s, nums->policy[i], sizeof(nums->policy[i]), errbuf, errlen);
	if (err)
		return err;
	if (target_opts_check(&s->o, err_opts, sizeof(err_opts))) {
		snprintf(errbuf, errlen, "%s: %s", s->where, err_opts);
		return -EINVAL;
	}
	if (name)
		s->name = name;
	else {
		snprintf(c->names[i], sizeof(c->names[i]), "%s", s->what);
		s->name = c->names[i];
	}
	return 0;
}

/* The file's document, or NULL with errbuf set. */
static json_t *
parse_file(const char *path, char *errbuf, size_t errlen)
{
	char why[300];
	size_t len, end;
	json_t *doc;
	char *text = read_file(path, &len, errbuf, errlen);

	if (!text)
		return NULL;
	doc = jsonx_parse(text, len, DCONFIG_MAX_DEPTH, &end, why, sizeof(why));
	if (doc && (!json_is_object(doc) || text[end + strspn(text + end, " \t\r\n")])) {
		json_decref(doc);
		doc = NULL;
		snprintf(why, sizeof(why), "not a JSON object");
	}
	free(text);
	if (!doc)
		snprintf(errbuf, errlen, "%s: %s", path, why);
	return doc;
}

/* The configuration's keys besides "targets" (doc: its object), into c. */
static int
load_top(struct dconfig *c, json_t *doc, char *errbuf, size_t errlen)
{
	const char *key, *ctl;
	json_t *v;

	json_object_foreach(doc, key, v) {
		if (!strcmp(key, "targets"))
			continue;
		ctl = json_string_value(v);
		if (!strcmp(key, "control") && ctl && ctl[0] == '/') {
			c->control = ctl;
			continue;
		}
		if (!strcmp(key, "policy_dir") && ctl && ctl[0] == '/') {
			c->policy_dir = ctl;
			continue;
		}
		if ((!strcmp(key, "oci_bundles") || !strcmp(key, "docker_containers")) &&
		    json_is_array(v) && json_array_size(v) <= 8) {
			bool oci = key[0] == 'o';
			json_t *d;
			size_t k;

			json_array_foreach(v, k, d) {
				const char *dir = json_string_value(d);

				if (!dir || dir[0] != '/' || !strstr(dir, "{id}")) {
					snprintf(errbuf, errlen,
						 "%s[%zu]: expected an absolute path with {id}",
						 key, k);
					return -EINVAL;
				}
				if (oci)
					c->bundle_dirs[c->nbundle_dirs++] = dir;
				else
					c->docker_dirs[c->ndocker_dirs++] = dir;
			}
			continue;
		}
		if (!strcmp(key, "metrics") && ctl && ctl[0]) {
			c->metrics = ctl;
			continue;
		}
		if (!strcmp(key, "default") && ctl &&
		    (!strcmp(ctl, "deny") || !strcmp(ctl, "unconfined"))) {
			c->dflt =
				!strcmp(ctl, "deny") ? DCONFIG_DFLT_DENY : DCONFIG_DFLT_UNCONFINED;
			continue;
		}
		if (!strcmp(key, "default")) {
			snprintf(errbuf, errlen, "default: expected \"deny\" or \"unconfined\"");
			return -EINVAL;
		}
		snprintf(errbuf, errlen, "%s: %s", key,
			 !strcmp(key, "metrics") ? "expected an address"
			 : strcmp(key, "control") && strcmp(key, "policy_dir")
				 ? "unknown key"
				 : "expected an absolute path");
		return -EINVAL;
	}
	return 0;
}

int
dconfig_load(const char *path, struct dconfig *c, char *errbuf, size_t errlen)
{
	json_t *targets, *t, *doc;
	struct nums *nums;
	size_t i;
	int err;

	memset(c, 0, sizeof(*c));
	doc = parse_file(path, errbuf, errlen);
	if (!doc)
		return -EINVAL;
	nums = calloc(1, sizeof(*nums));
	if (!nums) {
		json_decref(doc);
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	c->doc = doc;
	c->path = path;
	c->control = DCONFIG_CONTROL;
	err = load_top(c, doc, errbuf, errlen);
	if (err)
		goto fail;
	targets = json_object_get(doc, "targets");
	if (!json_is_array(targets) || !json_array_size(targets)) {
		snprintf(errbuf, errlen, "targets: expected a list of at least one target");
		err = -EINVAL;
		goto fail;
	}
	json_array_foreach(targets, i, t) {
		if (c->n == DCONFIG_MAX_TARGETS) {
			snprintf(errbuf, errlen, "targets: at most %d", DCONFIG_MAX_TARGETS);
			err = -EINVAL;
			goto fail;
		}
		err = load_target(c, t, c->n, nums, errbuf, errlen);
		if (err)
			goto fail;
		c->nselectors += c->specs[c->n].selector;
		c->n++;
	}
	if (c->nselectors && !c->dflt) {
		snprintf(errbuf, errlen,
			 "default: required with selectors: \"deny\" or \"unconfined\", for a "
			 "cgroup below them that no selector matches");
		err = -EINVAL;
		goto fail;
	}
	if (!c->nselectors && c->dflt) {
		snprintf(errbuf, errlen,
			 "default: only with selectors (a \"cgroup\" or \"unit\" with *, ? or "
			 "[...])");
		err = -EINVAL;
		goto fail;
	}
	c->deny.kind = DSPEC_CGROUP;
	c->deny.what = "(default)";
	c->deny.name = "default";
	snprintf(c->deny.where, sizeof(c->deny.where), "default");
	c->nums = nums;
	return 0;
fail:
	free(nums);
	json_decref(doc);
	memset(c, 0, sizeof(*c));
	return err;
}

/* One component of p (at *p, after its slashes): its start and length,
 * or 0 at the end. */
static size_t
component(const char **p, const char **start)
{
	size_t n;

	*p += strspn(*p, "/");
	*start = *p;
	n = strcspn(*p, "/");
	*p += n;
	return n;
}

static enum dsel_match
match_from(const char *g, const char *p, int depth)
{
	const char *gc, *pc, *g2 = g, *p2 = p;
	size_t gl = component(&g2, &gc), pl;
	char gbuf[256], pbuf[256];
	enum dsel_match r, best;

	if (depth > 64)
		return DSEL_NONE;
	pl = component(&p2, &pc);
	if (!gl)
		return pl ? DSEL_NONE : DSEL_MATCH;
	if (!pl)
		return DSEL_BELOW;
	if (gl == 2 && !memcmp(gc, "**", 2)) {
		const char *g3 = g2, *x;

		if (!component(&g3, &x))
			return DSEL_MATCH;	     /* a trailing ** and one component or more */
		best = match_from(g2, p, depth + 1); /* ** as nothing */
		if (best == DSEL_MATCH)
			return best;
		r = match_from(g, p2, depth + 1); /* ** takes this component */
		return r > best ? r : best;
	}
	if (gl >= sizeof(gbuf) || pl >= sizeof(pbuf))
		return DSEL_NONE;
	memcpy(gbuf, gc, gl);
	gbuf[gl] = 0;
	memcpy(pbuf, pc, pl);
	pbuf[pl] = 0;
	if (fnmatch(gbuf, pbuf, FNM_PERIOD))
		return DSEL_NONE;
	return match_from(g2, p2, depth + 1);
}

enum dsel_match
dsel_match(const char *glob, const char *path)
{
	return match_from(glob, path, 0);
}

const char *
dsel_rel(const char *mnt, const char *glob)
{
	size_t n = strlen(mnt);

	if (n > 1 && !strncmp(glob, mnt, n) && glob[n] == '/')
		return glob + n;
	return glob;
}

int
dconfig_add(struct dconfig *c, enum dspec_kind kind, const char *what, const struct target_opts *o,
	    bool kill_existing, char *errbuf, size_t errlen)
{
	struct dspec *s;

	if (target_opts_check(o, errbuf, errlen))
		return -EINVAL;
	if (c->n == DCONFIG_MAX_TARGETS) {
		snprintf(errbuf, errlen, "at most %d targets", DCONFIG_MAX_TARGETS);
		return -E2BIG;
	}
	if (!c->control)
		c->control = DCONFIG_CONTROL;
	s = &c->specs[c->n];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->what = what;
	s->o = *o;
	s->kill_existing = kill_existing;
	snprintf(c->names[c->n], sizeof(c->names[c->n]), "%s", what);
	s->name = c->names[c->n];
	snprintf(s->where, sizeof(s->where), "--%s %s", kind_key(kind), what);
	c->n++;
	return 0;
}

void
dconfig_free(struct dconfig *c)
{
	json_decref(c->doc);
	free(c->nums);
	memset(c, 0, sizeof(*c));
}

bool
dspec_same_target(const struct dspec *a, const struct dspec *b)
{
	return a->kind == b->kind && !strcmp(a->what, b->what);
}

static bool
same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool
same_strs(const char *const *a, int na, const char *const *b, int nb)
{
	for (int i = 0; na == nb && i < na; i++)
		if (!same_str(a[i], b[i]))
			return false;
	return na == nb;
}

/* Every option of a target but its rules and policy file is compared: one
 * missed here is a reload that keeps the old value silently (a log_format
 * changed alone kept writing the old format and said "policy reloaded").
 * The size below changes with every field added to struct target_opts:
 * compare the new field, then update it. */
#if defined(__LP64__)
_Static_assert(sizeof(struct target_opts) == 5816,
	       "a field was added to struct target_opts: compare it in dspec_same_but_policy()");
#endif

bool
dspec_same_but_policy(const struct dspec *a, const struct dspec *b)
{
	const struct target_opts *x = &a->o, *y = &b->o;

	return same_str(x->log_file, y->log_file) && x->log_format == y->log_format &&
	       same_strs(x->log_headers, x->nlog_headers, y->log_headers, y->nlog_headers) &&
	       same_str(x->log_ca, y->log_ca) && x->ipv6 == y->ipv6 &&
	       x->no_kverify == y->no_kverify && x->limited == y->limited &&
	       same_str(x->unix_root, y->unix_root) &&
	       same_strs(x->skip_progs, x->nskip, y->skip_progs, y->nskip) &&
	       x->socks_max == y->socks_max && x->log_buffer == y->log_buffer &&
	       x->pipes_max == y->pipes_max && same_str(x->dns_upstream, y->dns_upstream) &&
	       same_str(x->upstream_proxy, y->upstream_proxy) &&
	       same_str(x->upstream_auth, y->upstream_auth) &&
	       same_str(x->upstream_no_proxy, y->upstream_no_proxy) && same_str(x->ca, y->ca) &&
	       same_str(x->upstream_ca, y->upstream_ca) &&
	       same_str(x->suggest_policy, y->suggest_policy) &&
	       same_str(x->summary_file, y->summary_file) &&
	       x->summary_format == y->summary_format && x->tproxy_port == y->tproxy_port &&
	       x->dns_port == y->dns_port && x->nproxy == y->nproxy &&
	       !memcmp(x->proxy_ports, y->proxy_ports, sizeof(x->proxy_ports)) &&
	       x->audit == y->audit && x->allow_abstract_unix == y->allow_abstract_unix &&
	       same_strs(x->allow_unix, x->nallow_unix, y->allow_unix, y->nallow_unix) &&
	       same_strs(x->deny_unix, x->ndeny_unix, y->deny_unix, y->ndeny_unix) &&
	       x->max_conns == y->max_conns && x->map_entries == y->map_entries &&
	       x->max_conns_per_process == y->max_conns_per_process &&
	       x->idle_timeout == y->idle_timeout && x->head_timeout == y->head_timeout &&
	       x->connect_timeout == y->connect_timeout &&
	       x->response_timeout == y->response_timeout && a->kill_existing == b->kill_existing &&
	       x->containers_ip4 == y->containers_ip4 &&
	       same_strs(x->secrets, x->nsecrets, y->secrets, y->nsecrets) &&
	       same_str(x->secret_placeholders, y->secret_placeholders) &&
	       x->local_udp_any == y->local_udp_any && x->peers == y->peers &&
	       same_strs(x->direct_nets, x->ndirect_nets, y->direct_nets, y->ndirect_nets) &&
	       !strcmp(a->name, b->name);
}
