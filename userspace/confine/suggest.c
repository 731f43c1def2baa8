// SPDX-License-Identifier: Apache-2.0
/* --suggest-policy (see suggest.h): observations merged, rules marked or
 * allowed, names widened by registrable domain, the file written whole. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include "confine/suggest.h"
#include "lib/clock.h"
#include "lib/jsonx.h"
#include "confine/summary.h"
#include "parse/psl.h"
#include "policy/policy.h"

#define SUGGEST_MAX_FILE (16u << 20)

/* The host part of a rule: "tcp://", "*." and "**." and ":port" taken off,
 * brackets of an IPv6 address too. */
static void
rule_host(const char *rule, char *out, size_t len)
{
	const char *h = rule, *end;

	if (!strncmp(h, "tcp://", 6))
		h += 6;
	if (!strncmp(h, "**.", 3))
		h += 3;
	else if (!strncmp(h, "*.", 2))
		h += 2;
	if (*h == '[') {
		h++;
		end = strchr(h, ']');
	} else {
		end = strchr(h, ':');
	}
	if (!end)
		end = h + strlen(h);
	snprintf(out, len, "%.*s", (int)(end - h), h);
	out[strcspn(out, "/")] = 0; /* an address range: its first address */
}

static void
add_reason(char *buf, size_t len, const char *why)
{
	size_t n = strlen(buf);

	if (strstr(buf, why))
		return;
	snprintf(buf + n, len - n, "%s%s", n ? ", " : "", why);
}

bool
suggest_review(const char *rule, unsigned long long count, char *buf, size_t len)
{
	char host[300];
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	const struct sockaddr *sa = NULL;

	buf[0] = 0;
	rule_host(rule, host, sizeof(host));
	if (inet_pton(AF_INET, host, &s4.sin_addr) == 1)
		sa = (struct sockaddr *)&s4;
	else if (inet_pton(AF_INET6, host, &s6.sin6_addr) == 1)
		sa = (struct sockaddr *)&s6;
	if (sa) {
		switch (addr_classify(sa)) {
		case ADDR_PUBLIC:
			break;
		case ADDR_LOOPBACK:
			add_reason(buf, len, "loopback address");
			break;
		case ADDR_LINKLOCAL:
			add_reason(buf, len, "link-local address (cloud metadata)");
			break;
		default:
			add_reason(buf, len, "private or special address");
			break;
		}
	} else {
		for (const char *l = host; *l;) {
			size_t n = strcspn(l, ".");
			const char *why = policy_label_suspect(l, n);

			if (why)
				add_reason(buf, len, why);
			l += n;
			if (*l == '.')
				l++;
		}
	}
	if (count < SUGGEST_MIN_COUNT)
		add_reason(buf, len, "seen once");
	return buf[0] != 0;
}

/* ---- observations ---- */

static double
num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_number(v) && json_number_value(v) >= 0 ? json_number_value(v) : 0;
}

static const char *
str(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* o[k] = v: a key set again keeps its place */
static void
set_num(json_t *o, const char *k, double v)
{
	json_object_set_new(o, k, jsonx_number(v));
}

/* One observation of rule into rules: counts summed, first the earliest,
 * last the latest (ISO 8601 in UTC compares as text). */
static void
merge_one(json_t *rules, const char *rule, double count, double runs, const char *first,
	  const char *last)
{
	json_t *e = json_object_get(rules, rule);
	const char *f, *l;

	if (!json_is_object(e)) {
		json_object_del(rules, rule); /* what was there goes, and its place */
		e = jsonx_add_object(rules, rule);
		if (!e)
			return;
	}
	set_num(e, "count", num(e, "count") + count);
	set_num(e, "runs", num(e, "runs") + runs);
	f = str(e, "first_seen");
	l = str(e, "last_seen");
	if (first && (!f || strcmp(first, f) < 0))
		jsonx_set_str(e, "first_seen", first);
	if (last && (!l || strcmp(last, l) > 0))
		jsonx_set_str(e, "last_seen", last);
}

static void
observe_one(void *arg, const struct summary_rule *r)
{
	char first[40], last[40];

	rfc3339_ms(r->first_ms, first, sizeof(first));
	rfc3339_ms(r->last_ms, last, sizeof(last));
	merge_one(arg, r->rule, (double)r->count, 0, first, last);
	if (r->leak)
		jsonx_set_str(json_object_get(arg, r->rule), "secret_leak", r->leak);
}

json_t *
suggest_observe(const struct summary *s)
{
	json_t *rules = json_object(), *e;
	const char *k;

	if (!rules)
		return NULL;
	summary_foreach_rule(s, observe_one, rules);
	json_object_foreach(rules, k, e)
		set_num(e, "runs", 1);
	return rules;
}

/* ---- building the document ---- */

static bool
plain_name(const char *r)
{
	char host[300];

	if (!strncmp(r, "tcp://", 6) || r[0] == '[' || strchr(r, ':') || strchr(r, '/') ||
	    strchr(r, '*') || strchr(r, '?'))
		return false;
	rule_host(r, host, sizeof(host));
	return inet_pton(AF_INET, host, &(struct in_addr){0}) != 1;
}

/* The registrable domain of a name: the public suffix list's, or the
 * last two labels without one. */
static const char *
domain_of(const struct psl *psl, const char *name)
{
	const char *p;
	int dots = 0;

	if (psl)
		return psl_registrable(psl, name);
	for (p = name + strlen(name); p > name; p--)
		if (p[-1] == '.' && ++dots == 2)
			return p;
	return dots == 1 ? name : NULL;
}

static bool
in_list(const json_t *arr, const char *s)
{
	const json_t *e;
	size_t i;

	json_array_foreach(arr, i, e)
		if (json_is_string(e) && !strcmp(json_string_value(e), s))
			return true;
	return false;
}

static void
add_unique(json_t *arr, const char *s)
{
	if (!in_list(arr, s))
		json_array_append_new(arr, jsonx_string(s));
}

static int
cmp_item(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a),
		      json_string_value(*(json_t *const *)b));
}

/* The strings of arr sorted; its other items (rule objects) after them. */
static json_t *
sorted(json_t *arr)
{
	size_t n = json_array_size(arr), k = 0, i;
	json_t **items = calloc(n + 1, sizeof(*items)), *out = json_array(), *e;

	if (!items || !out) {
		free(items);
		json_decref(out);
		return arr;
	}
	json_array_foreach(arr, i, e)
		if (json_is_string(e))
			items[k++] = e;
	qsort(items, k, sizeof(*items), cmp_item);
	for (i = 0; i < k; i++)
		json_array_append(out, items[i]);
	json_array_foreach(arr, i, e)
		if (!json_is_string(e))
			json_array_append(out, e);
	free(items);
	json_decref(arr);
	return out;
}

/* Does "**.dom" cover name? */
static bool
under(const char *name, const char *dom)
{
	size_t n = strlen(name), d = strlen(dom);

	return !strcmp(name, dom) ||
	       (n > d && name[n - d - 1] == '.' && !strcmp(name + n - d, dom));
}

/* Each rule of rules not in oldallow: for a human to look at (into
 * review, with the reasons), or a candidate for "allow" (cand). */
static void
sort_rules(json_t *rules, const json_t *oldallow, json_t *review, json_t *cand)
{
	const char *rule;
	json_t *e;
	char why[256];

	json_object_foreach(rules, rule, e) {
		if (in_list(oldallow, rule))
			continue; /* allowed already: by a human, or by an earlier run */
		if (str(e, "secret_leak")) {
			/* a request to it carried a secret's placeholder: never allowed here */
			json_t *reasons = json_array();

			snprintf(why, sizeof(why),
				 "secret %s's placeholder sent to it: an exfiltration attempt",
				 str(e, "secret_leak"));
			json_array_append_new(reasons, jsonx_string(why));
			json_object_set_new(review, rule, reasons);
		} else if (suggest_review(rule, (unsigned long long)num(e, "count"), why,
					  sizeof(why))) {
			json_t *reasons = json_array();

			for (char *w = strtok(why, ","); w; w = strtok(NULL, ","))
				json_array_append_new(reasons, jsonx_string(w + (*w == ' ')));
			json_object_set_new(review, rule, reasons);
		} else {
			add_unique(cand, rule);
		}
	}
}

/* The candidates into allow: names of one registrable domain,
 * SUGGEST_WIDEN_AT or more, as "**.domain" (the domain into widened). */
static void
widen(const struct psl *psl, const json_t *cand, json_t *allow, json_t *widened)
{
	const json_t *e, *o;
	size_t i, j;

	json_array_foreach(cand, i, e) {
		const char *name = json_string_value(e);
		const char *dom = plain_name(name) ? domain_of(psl, name) : NULL;
		char wild[300];
		int n = 0;

		if (dom) {
			json_array_foreach(cand, j, o)
				if (plain_name(json_string_value(o)) &&
				    under(json_string_value(o), dom))
					n++;
		}
		if (n >= SUGGEST_WIDEN_AT) {
			snprintf(wild, sizeof(wild), "**.%s", dom);
			add_unique(allow, wild);
			add_unique(widened, dom);
		} else {
			add_unique(allow, name);
		}
	}
}

/* What the file allowed, into allow: kept, but for names a new "**."
 * covers that a run suggested (a human's own rules stay as they are). */
static void
keep_allowed(const json_t *oldallow, const json_t *rules, const json_t *widened, json_t *allow)
{
	const json_t *e, *w;
	size_t i, j;

	json_array_foreach(oldallow, i, e) {
		const char *name = json_string_value(e);
		bool drop = false;

		if (name && json_object_get(rules, name) && plain_name(name))
			json_array_foreach(widened, j, w)
				drop = drop || under(name, json_string_value(w));
		if (drop)
			continue;
		if (name)
			add_unique(allow, name);
		else
			json_array_append_new(allow, json_deep_copy(e));
	}
}

/* doc's "observed": what was seen (rules, owned from now on), what needs
 * a human (review, likewise), and how it was judged. */
static void
add_observed(json_t *doc, const struct psl *psl, json_t *rules, json_t *review)
{
	json_t *obs = jsonx_add_object(doc, "observed");
	char suffixes[96];

	if (!obs) {
		json_decref(rules);
		json_decref(review);
		return;
	}
	if (psl)
		snprintf(suffixes, sizeof(suffixes), "the public suffix list (%zu rules)",
			 psl_rules(psl));
	else
		snprintf(suffixes, sizeof(suffixes), "the last two labels (no public suffix list)");
	jsonx_set_str(obs, "about",
		      "what egressctl --suggest-policy saw; ignored by the policy "
		      "loader. observed.review: rules not allowed, for a human "
		      "to look at (move one to allow to allow it)");
	jsonx_set_int(obs, "widen_at", SUGGEST_WIDEN_AT);
	jsonx_set_int(obs, "min_count", SUGGEST_MIN_COUNT);
	jsonx_set_str(obs, "suffixes", suffixes);
	json_object_set_new(obs, "rules", rules);
	json_object_set_new(obs, "review", review);
}

json_t *
suggest_build(const json_t *old, const json_t *fresh, const struct psl *psl)
{
	const json_t *oldobs = json_object_get(old, "observed");
	const json_t *oldrules = json_object_get(oldobs, "rules");
	const json_t *oldallow = json_object_get(old, "allow");
	const json_t *olddeny = json_object_get(old, "deny");
	json_t *doc = json_object(), *rules, *review, *allow, *cand, *e, *widened;
	const char *rule;

	if (!doc)
		return NULL;
	/* json_object_foreach takes no const object: fresh is only read */
	rules = json_is_object(oldrules) ? json_deep_copy(oldrules) : json_object();
	review = json_object();
	allow = json_array();
	cand = json_array();
	widened = json_array();
	if (!rules || !review || !allow || !cand || !widened) {
		json_decref(rules);
		json_decref(review);
		json_decref(allow);
		json_decref(cand);
		json_decref(widened);
		json_decref(doc);
		return NULL;
	}
	json_object_foreach((json_t *)fresh, rule, e)
		if (json_is_object(e)) {
			merge_one(rules, rule, num(e, "count"), num(e, "runs"),
				  str(e, "first_seen"), str(e, "last_seen"));
			if (str(e, "secret_leak"))
				jsonx_set_str(json_object_get(rules, rule), "secret_leak",
					      str(e, "secret_leak"));
		}
	sort_rules(rules, oldallow, review, cand);
	widen(psl, cand, allow, widened);
	keep_allowed(oldallow, rules, widened, allow);
	json_decref(cand);
	json_decref(widened);
	jsonx_set_int(doc, "version", 1);
	json_object_set_new(doc, "allow", sorted(allow));
	if (olddeny)
		json_object_set_new(doc, "deny", json_deep_copy(olddeny));
	add_observed(doc, psl, rules, review);
	return doc;
}

/* ---- the file ---- */

/* The contents of fd from its start: NULL with *err -EINVAL when it is not
 * a regular file of at most SUGGEST_MAX_FILE bytes. */
static char *
read_fd(int fd, size_t *lenp, int *err)
{
	struct stat st;
	char *buf;
	size_t len = 0;
	ssize_t n = 0;

	*err = 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size > SUGGEST_MAX_FILE) {
		*err = -EINVAL;
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		*err = -ENOMEM;
		return NULL;
	}
	while (len < (size_t)st.st_size &&
	       (n = pread(fd, buf + len, (size_t)st.st_size - len, (off_t)len)) > 0)
		len += (size_t)n;
	if (n < 0 && len < (size_t)st.st_size) {
		*err = -errno;
		free(buf);
		return NULL;
	}
	buf[len] = 0;
	*lenp = len;
	return buf;
}

static char *
read_all(const char *path, size_t *lenp, int *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf;

	if (fd == -1) {
		*err = -errno;
		return NULL;
	}
	buf = read_fd(fd, lenp, err);
	close(fd);
	return buf;
}

/* N of "fd:N" (a descriptor given: the service's run, whose client opened
 * FILE as the user, read and write), -1 for a path, -2 for fd: and no
 * number. */
static int
given_fd(const char *path)
{
	char *end;
	long n;

	if (strncmp(path, "fd:", 3) || path[3] < '0' || path[3] > '9')
		return -1;
	n = strtol(path + 3, &end, 10);
	return *end || n > 1 << 20 ? -2 : (int)n;
}

/* out (len bytes) as the whole contents of fd, a regular file read by
 * read_fd() (so never a pipe or terminal a write could block on for
 * ever): truncated and written from its start. */
static int
write_given(int fd, const char *out, size_t len)
{
	size_t done = 0;
	ssize_t n;

	if (ftruncate(fd, 0))
		return -errno;
	while (done < len) {
		n = pwrite(fd, out + done, len - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return fsync(fd) ? -errno : 0;
}

/* Does text load as a policy? errbuf says why not. */
static int
loads(const char *text, size_t len, const char *path, char *errbuf, size_t errlen)
{
	struct policy *p = policy_new();
	int err;

	if (!p) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	err = config_load_buf(p, text, len, path, errbuf, errlen);
	policy_free(p);
	return err;
}

/* out (len bytes) as path's contents: a temporary file renamed over it. */
static int
write_path(const char *path, const char *out, size_t len, char *errbuf, size_t errlen)
{
	char tmp[4200];
	int err = 0, fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd == -1) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot write %s: %s", tmp, strerror(-err));
		return err;
	}
	fchmod(fd, 0644);
	if (write(fd, out, len) != (ssize_t)len || fsync(fd))
		err = errno ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(-err));
	}
	return err;
}

int
suggest_write_file(const char *path, const json_t *fresh, char *errbuf, size_t errlen)
{
	char why[600];
	json_t *old = NULL, *doc = NULL;
	struct psl *psl;
	char *text = NULL, *out = NULL;
	size_t len = 0;
	int err, fd = given_fd(path);

	if (fd == -2) {
		snprintf(errbuf, errlen, "%s: expected fd:N, N a descriptor", path);
		return -EBADF;
	}
	text = fd >= 0 ? read_fd(fd, &len, &err) : read_all(path, &len, &err);
	if (text && !len) { /* empty: nobody's policy (the service's client creates it) */
		free(text);
		text = NULL;
		err = -ENOENT;
	}
	if (text) {
		err = loads(text, len, path, why, sizeof(why));
		if (!err && !(old = json_loadb(text, len, 0, NULL)))
			err = -EINVAL;
		if (err) {
			snprintf(errbuf, errlen,
				 "%s holds no policy to merge with (%s): left as it is", path,
				 err == -EINVAL ? why : strerror(-err));
			free(text);
			return -EINVAL;
		}
	} else if (err != -ENOENT) {
		snprintf(errbuf, errlen, "cannot read %s: %s", path,
			 err == -EINVAL ? "not a regular file of at most 16 MiB" : strerror(-err));
		return err;
	}
	free(text);
	psl = psl_load(PSL_DEFAULT_PATH, why, sizeof(why)); /* NULL: the two-label guess */
	doc = suggest_build(old, fresh, psl);
	psl_free(psl);
	json_decref(old);
	out = doc ? jsonx_pretty(doc) : NULL;
	json_decref(doc);
	if (!out) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	err = loads(out, strlen(out), path, why, sizeof(why));
	if (err) { /* a rule of ours the loader refuses: a bug, said */
		snprintf(errbuf, errlen, "the suggested policy does not load (%s): not written",
			 why);
		free(out);
		return err;
	}
	len = strlen(out);
	out[len] = '\n'; /* the terminator becomes the newline */
	if (fd < 0) {
		err = write_path(path, out, len + 1, errbuf, errlen);
	} else if ((err = write_given(fd, out, len + 1))) {
		snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(-err));
	}
	free(out);
	return err;
}

int
summary_write_policy(const struct summary *s, const char *path, char *errbuf, size_t errlen)
{
	json_t *fresh = suggest_observe(s);
	int err;

	if (!fresh) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	err = suggest_write_file(path, fresh, errbuf, errlen);
	json_decref(fresh);
	return err;
}

int
summary_policy_rules(const struct summary *s, char ***rules)
{
	char why[256];
	json_t *fresh = suggest_observe(s), *doc, *allow, *e;
	struct psl *psl = psl_load(PSL_DEFAULT_PATH, why, sizeof(why));
	char **out = NULL;
	size_t i;
	int n = 0;

	*rules = NULL;
	doc = fresh ? suggest_build(NULL, fresh, psl) : NULL;
	psl_free(psl);
	json_decref(fresh);
	if (!doc)
		return -ENOMEM;
	allow = json_object_get(doc, "allow");
	out = calloc(json_array_size(allow) + 1, sizeof(*out));
	if (!out) {
		json_decref(doc);
		return -ENOMEM;
	}
	json_array_foreach(allow, i, e)
		if (json_is_string(e))
			out[n++] = strdup(json_string_value(e));
	json_decref(doc);
	*rules = out;
	return n;
}
