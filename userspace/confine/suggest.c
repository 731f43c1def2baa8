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
#include <cJSON.h>

#include "confine/suggest.h"
#include "lib/clock.h"
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
num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) && v->valuedouble >= 0 ? v->valuedouble : 0;
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void
set_str(cJSON *o, const char *k, const char *v)
{
	cJSON *n = cJSON_CreateString(v);

	if (n && !cJSON_ReplaceItemInObjectCaseSensitive(o, k, n) &&
	    !cJSON_AddItemToObject(o, k, n))
		cJSON_Delete(n);
}

static void
set_num(cJSON *o, const char *k, double v)
{
	cJSON *n = cJSON_CreateNumber(v);

	if (n && !cJSON_ReplaceItemInObjectCaseSensitive(o, k, n) &&
	    !cJSON_AddItemToObject(o, k, n))
		cJSON_Delete(n);
}

/* One observation of rule into rules: counts summed, first the earliest,
 * last the latest (ISO 8601 in UTC compares as text). */
static void
merge_one(cJSON *rules, const char *rule, double count, double runs, const char *first,
	  const char *last)
{
	cJSON *e = cJSON_GetObjectItemCaseSensitive(rules, rule);
	const char *f, *l;

	if (!cJSON_IsObject(e)) {
		cJSON_DeleteItemFromObjectCaseSensitive(rules, rule);
		e = cJSON_AddObjectToObject(rules, rule);
		if (!e)
			return;
	}
	set_num(e, "count", num(e, "count") + count);
	set_num(e, "runs", num(e, "runs") + runs);
	f = str(e, "first_seen");
	l = str(e, "last_seen");
	if (first && (!f || strcmp(first, f) < 0))
		set_str(e, "first_seen", first);
	if (last && (!l || strcmp(last, l) > 0))
		set_str(e, "last_seen", last);
}

static void
observe_one(void *arg, const struct summary_rule *r)
{
	char first[40], last[40];

	rfc3339_ms(r->first_ms, first, sizeof(first));
	rfc3339_ms(r->last_ms, last, sizeof(last));
	merge_one(arg, r->rule, (double)r->count, 0, first, last);
}

cJSON *
suggest_observe(const struct summary *s)
{
	cJSON *rules = cJSON_CreateObject(), *e;

	if (!rules)
		return NULL;
	summary_foreach_rule(s, observe_one, rules);
	cJSON_ArrayForEach(e, rules) set_num(e, "runs", 1);
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
in_list(const cJSON *arr, const char *s)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, arr) if (cJSON_IsString(e) && !strcmp(e->valuestring, s)) return true;
	return false;
}

static void
add_unique(cJSON *arr, const char *s)
{
	if (!in_list(arr, s))
		cJSON_AddItemToArray(arr, cJSON_CreateString(s));
}

static int
cmp_item(const void *a, const void *b)
{
	return strcmp((*(cJSON *const *)a)->valuestring, (*(cJSON *const *)b)->valuestring);
}

/* The strings of arr sorted; its other items (rule objects) after them. */
static cJSON *
sorted(cJSON *arr)
{
	int n = cJSON_GetArraySize(arr), k = 0;
	cJSON **items = calloc((size_t)n + 1, sizeof(*items)), *out = cJSON_CreateArray(), *e;

	if (!items || !out) {
		free(items);
		cJSON_Delete(out);
		return arr;
	}
	cJSON_ArrayForEach(e, arr) if (cJSON_IsString(e)) items[k++] = e;
	qsort(items, (size_t)k, sizeof(*items), cmp_item);
	for (int i = 0; i < k; i++)
		cJSON_AddItemToArray(out, cJSON_CreateString(items[i]->valuestring));
	cJSON_ArrayForEach(e, arr) if (!cJSON_IsString(e))
		cJSON_AddItemToArray(out, cJSON_Duplicate(e, 1));
	free(items);
	cJSON_Delete(arr);
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
sort_rules(const cJSON *rules, const cJSON *oldallow, cJSON *review, cJSON *cand)
{
	const cJSON *e;
	char why[256];

	cJSON_ArrayForEach(e, rules)
	{
		if (in_list(oldallow, e->string))
			continue; /* allowed already: by a human, or by an earlier run */
		if (suggest_review(e->string, (unsigned long long)num(e, "count"), why,
				   sizeof(why))) {
			cJSON *reasons = cJSON_CreateArray();

			for (char *w = strtok(why, ","); w; w = strtok(NULL, ","))
				cJSON_AddItemToArray(reasons, cJSON_CreateString(w + (*w == ' ')));
			cJSON_AddItemToObject(review, e->string, reasons);
		} else {
			add_unique(cand, e->string);
		}
	}
}

/* The candidates into allow: names of one registrable domain,
 * SUGGEST_WIDEN_AT or more, as "**.domain" (the domain into widened). */
static void
widen(const struct psl *psl, const cJSON *cand, cJSON *allow, cJSON *widened)
{
	const cJSON *e, *o;

	cJSON_ArrayForEach(e, cand)
	{
		const char *dom =
			plain_name(e->valuestring) ? domain_of(psl, e->valuestring) : NULL;
		char wild[300];
		int n = 0;

		if (dom) {
			cJSON_ArrayForEach(o, cand) if (plain_name(o->valuestring) &&
							under(o->valuestring, dom)) n++;
		}
		if (n >= SUGGEST_WIDEN_AT) {
			snprintf(wild, sizeof(wild), "**.%s", dom);
			add_unique(allow, wild);
			add_unique(widened, dom);
		} else {
			add_unique(allow, e->valuestring);
		}
	}
}

/* What the file allowed, into allow: kept, but for names a new "**."
 * covers that a run suggested (a human's own rules stay as they are). */
static void
keep_allowed(const cJSON *oldallow, const cJSON *rules, const cJSON *widened, cJSON *allow)
{
	const cJSON *e, *w;

	cJSON_ArrayForEach(e, oldallow)
	{
		bool drop = false;

		if (cJSON_IsString(e) && cJSON_GetObjectItemCaseSensitive(rules, e->valuestring) &&
		    plain_name(e->valuestring))
			cJSON_ArrayForEach(w, widened) drop =
				drop || under(e->valuestring, w->valuestring);
		if (drop)
			continue;
		if (cJSON_IsString(e))
			add_unique(allow, e->valuestring);
		else
			cJSON_AddItemToArray(allow, cJSON_Duplicate(e, 1));
	}
}

/* doc's "observed": what was seen (rules, owned from now on), what needs
 * a human (review, likewise), and how it was judged. */
static void
add_observed(cJSON *doc, const struct psl *psl, cJSON *rules, cJSON *review)
{
	cJSON *obs = cJSON_AddObjectToObject(doc, "observed");
	char suffixes[96];

	if (!obs) {
		cJSON_Delete(rules);
		cJSON_Delete(review);
		return;
	}
	if (psl)
		snprintf(suffixes, sizeof(suffixes), "the public suffix list (%zu rules)",
			 psl_rules(psl));
	else
		snprintf(suffixes, sizeof(suffixes), "the last two labels (no public suffix list)");
	cJSON_AddStringToObject(obs, "about",
				"what egressctl --suggest-policy saw; ignored by the policy "
				"loader. observed.review: rules not allowed, for a human "
				"to look at (move one to allow to allow it)");
	cJSON_AddNumberToObject(obs, "widen_at", SUGGEST_WIDEN_AT);
	cJSON_AddNumberToObject(obs, "min_count", SUGGEST_MIN_COUNT);
	cJSON_AddStringToObject(obs, "suffixes", suffixes);
	cJSON_AddItemToObject(obs, "rules", rules);
	cJSON_AddItemToObject(obs, "review", review);
}

cJSON *
suggest_build(const cJSON *old, const cJSON *fresh, const struct psl *psl)
{
	const cJSON *oldobs = cJSON_GetObjectItemCaseSensitive(old, "observed");
	const cJSON *oldrules = cJSON_GetObjectItemCaseSensitive(oldobs, "rules");
	const cJSON *oldallow = cJSON_GetObjectItemCaseSensitive(old, "allow");
	const cJSON *olddeny = cJSON_GetObjectItemCaseSensitive(old, "deny");
	cJSON *doc = cJSON_CreateObject(), *rules, *review, *allow, *cand, *e, *widened;

	if (!doc)
		return NULL;
	rules = cJSON_IsObject(oldrules) ? cJSON_Duplicate(oldrules, 1) : cJSON_CreateObject();
	review = cJSON_CreateObject();
	allow = cJSON_CreateArray();
	cand = cJSON_CreateArray();
	widened = cJSON_CreateArray();
	if (!rules || !review || !allow || !cand || !widened) {
		cJSON_Delete(rules);
		cJSON_Delete(review);
		cJSON_Delete(allow);
		cJSON_Delete(cand);
		cJSON_Delete(widened);
		cJSON_Delete(doc);
		return NULL;
	}
	cJSON_ArrayForEach(e, fresh) if (cJSON_IsObject(e))
		merge_one(rules, e->string, num(e, "count"), num(e, "runs"), str(e, "first_seen"),
			  str(e, "last_seen"));
	sort_rules(rules, oldallow, review, cand);
	widen(psl, cand, allow, widened);
	keep_allowed(oldallow, rules, widened, allow);
	cJSON_Delete(cand);
	cJSON_Delete(widened);
	cJSON_AddNumberToObject(doc, "version", 1);
	cJSON_AddItemToObject(doc, "allow", sorted(allow));
	if (olddeny)
		cJSON_AddItemToObject(doc, "deny", cJSON_Duplicate(olddeny, 1));
	add_observed(doc, psl, rules, review);
	return doc;
}

/* ---- the file ---- */

static char *
read_all(const char *path, size_t *lenp, int *err)
{
	struct stat st;
	char *buf;
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*err = 0;
	if (fd == -1) {
		*err = -errno;
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size > SUGGEST_MAX_FILE) {
		*err = -EINVAL;
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		*err = -ENOMEM;
		close(fd);
		return NULL;
	}
	while (len < (size_t)st.st_size && (n = read(fd, buf + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = 0;
	*lenp = len;
	return buf;
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

int
suggest_write_file(const char *path, const cJSON *fresh, char *errbuf, size_t errlen)
{
	char why[600], tmp[4200];
	cJSON *old = NULL, *doc = NULL;
	struct psl *psl;
	char *text = NULL, *out = NULL;
	size_t len = 0;
	int err, fd;

	text = read_all(path, &len, &err);
	if (text) {
		err = loads(text, len, path, why, sizeof(why));
		if (!err && !(old = cJSON_ParseWithLength(text, len)))
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
	cJSON_Delete(old);
	out = doc ? cJSON_Print(doc) : NULL;
	cJSON_Delete(doc);
	if (!out) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	err = loads(out, strlen(out), path, why, sizeof(why));
	if (err) { /* a rule of ours the loader refuses: a bug, said */
		snprintf(errbuf, errlen, "the suggested policy does not load (%s): not written",
			 why);
		cJSON_free(out);
		return err;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd == -1) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot write %s: %s", tmp, strerror(-err));
		cJSON_free(out);
		return err;
	}
	fchmod(fd, 0644);
	len = strlen(out);
	out[len] = '\n'; /* cJSON_Print's terminator becomes the newline */
	if (write(fd, out, len + 1) != (ssize_t)(len + 1) || fsync(fd))
		err = errno ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	cJSON_free(out);
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		snprintf(errbuf, errlen, "cannot write %s: %s", path, strerror(-err));
	}
	return err;
}

int
summary_write_policy(const struct summary *s, const char *path, char *errbuf, size_t errlen)
{
	cJSON *fresh = suggest_observe(s);
	int err;

	if (!fresh) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	err = suggest_write_file(path, fresh, errbuf, errlen);
	cJSON_Delete(fresh);
	return err;
}

int
summary_policy_rules(const struct summary *s, char ***rules)
{
	char why[256];
	cJSON *fresh = suggest_observe(s), *doc, *e;
	struct psl *psl = psl_load(PSL_DEFAULT_PATH, why, sizeof(why));
	char **out = NULL;
	int n = 0;

	*rules = NULL;
	doc = fresh ? suggest_build(NULL, fresh, psl) : NULL;
	psl_free(psl);
	cJSON_Delete(fresh);
	if (!doc)
		return -ENOMEM;
	out = calloc((size_t)cJSON_GetArraySize(cJSON_GetObjectItem(doc, "allow")) + 1,
		     sizeof(*out));
	if (!out) {
		cJSON_Delete(doc);
		return -ENOMEM;
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "allow")) if (cJSON_IsString(e)) out[n++] =
		strdup(e->valuestring);
	cJSON_Delete(doc);
	*rules = out;
	return n;
}
