// SPDX-License-Identifier: Apache-2.0
/* The daemon's control requests (see core.h), JSON in and out: status,
 * reload, allow and deny (runtime rules, each logged with who asked), log
 * (the recent lines, and -f: every line as it is logged), summary, detach.
 * The socket, and who may ask, are control.c's. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "daemon/control.h"
#include "daemon/core.h"
#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/jsonx.h"
#include "lib/log.h"
#include "confine/status.h"
#include "confine/suggest.h"
#include "confine/summary.h"

static void
reply(struct control_client *cl, json_t *o)
{
	char *out = jsonx_line(o);

	if (out)
		control_send(cl, out);
	free(out);
	json_decref(o);
}

static void reply_error(struct control_client *cl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
reply_error(struct control_client *cl, const char *fmt, ...)
{
	json_t *o = json_object();
	char words[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(words, sizeof(words), fmt, ap);
	va_end(ap);
	jsonx_set_bool(o, "ok", false);
	jsonx_set_str(o, "error", words);
	reply(cl, o);
	control_end(cl);
}

static void
reply_ok(struct control_client *cl, json_t *o)
{
	if (!o)
		o = json_object();
	jsonx_set_bool(o, "ok", true);
	reply(cl, o);
	control_end(cl);
}

/* The target `--cgroup X` means: its name, its cgroup (absolute, or
 * relative to the mount), or its cgroup id. */
static struct dtarget *
find_target(struct daemon *dm, const char *x)
{
	struct dtarget *dt;
	char *end;
	unsigned long long id = x ? strtoull(x, &end, 10) : 0;

	if (!x)
		return NULL;
	TAILQ_FOREACH(dt, &dm->targets, entry)
	{
		size_t n = strlen(dm->mnt);

		if (!strcmp(dt->spec.name, x) || !strcmp(dt->spec.what, x) ||
		    (dt->cgpath[0] && !strcmp(dt->cgpath, x)) ||
		    (dt->cgpath[0] && !strncmp(dt->cgpath, dm->mnt, n) &&
		     !strcmp(dt->cgpath + n + (x[0] != '/'), x)) ||
		    (!*end && id && id == dt->cgid))
			return dt;
	}
	return NULL;
}

static struct dtarget *
want_target(struct daemon *dm, struct control_client *cl, const json_t *req)
{
	const char *x = jsonx_get_str(req, "target");
	struct dtarget *dt;

	if (!x) {
		/* one target: it needs no naming */
		dt = TAILQ_FIRST(&dm->targets);
		if (dt && !TAILQ_NEXT(dt, entry))
			return dt;
		reply_error(cl, "name the target (--cgroup NAME|PATH): the daemon has %s",
			    dt ? "several" : "none");
		return NULL;
	}
	dt = find_target(dm, x);
	if (!dt)
		reply_error(cl, "no target %s", x);
	return dt;
}

static json_t *
dt_json(const struct daemon *dm, const struct dtarget *dt)
{
	static const char *const kinds[] = {"cgroup", "unit", "pid"};
	json_t *o = json_object(), *rules, *links;
	uint64_t now = now_s();

	jsonx_set_str(o, "name", dt->spec.name);
	jsonx_set_str(o, "kind", kinds[dt->spec.kind]);
	jsonx_set_str(o, "what", dt->spec.what);
	jsonx_set_str(o, "state", dt->tg ? "confined" : "waiting");
	if (dt->cgpath[0])
		jsonx_set_str(o, "cgroup", dt->cgpath);
	jsonx_set_int(o, "cgroup_id", (long long)dt->cgid);
	if (dt->spec.o.policy_file)
		jsonx_set_str(o, "policy_file", dt->spec.o.policy_file);
	if (dt->spec.o.log_file)
		jsonx_set_str(o, "log", dt->spec.o.log_file);
	jsonx_set_bool(o, "audit", dt->spec.o.audit);
	rules = jsonx_add_array(o, "runtime_rules");
	for (int i = 0; i < dt->nrules; i++) {
		json_t *r = json_object();

		jsonx_set_str(r, "action", dt->rules[i].action == POLICY_ALLOW ? "allow" : "deny");
		jsonx_set_str(r, "rule", dt->rules[i].text);
		if (dt->rules[i].expires)
			jsonx_set_int(r, "expires_in", (long long)(dt->rules[i].expires - now));
		json_array_append_new(rules, r);
	}
	if (dt->tg) {
		struct status_info si;
		uint32_t ids[24];
		int n;
		char *doc;

		jsonx_set_bool(o, "adopted", target_adopted(dt->tg));
		jsonx_set_int(o, "uptime", (long long)(now - dt->since));
		links = jsonx_add_array(o, "links");
		target_link_ids(dt->tg, ids, 24, &n);
		for (int i = 0; i < n; i++)
			json_array_append_new(links, json_integer(ids[i]));
		target_status(dt->tg, &si);
		doc = status_render(&si);
		if (doc)
			json_object_set_new(o, "run", json_loads(doc, 0, NULL));
		free(doc);
	}
	(void)dm;
	return o;
}

static void
req_status(struct daemon *dm, struct control_client *cl)
{
	json_t *o = json_object(), *ts;
	struct dtarget *dt;

	jsonx_set_int(o, "pid", getpid());
	jsonx_set_int(o, "uptime", (long long)(now_s() - dm->started));
	if (dm->cfg.path)
		jsonx_set_str(o, "config", dm->cfg.path);
	jsonx_set_int(o, "reloads", (long long)dm->reloads);
	jsonx_set_int(o, "reloads_rejected", (long long)dm->reloads_rejected);
	ts = jsonx_add_array(o, "targets");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	json_array_append_new(ts, dt_json(dm, dt));
	reply_ok(cl, o);
}

static void
req_reload(struct daemon *dm, struct control_client *cl)
{
	char who[CONTROL_WHO_MAX], words[CONTROL_WHO_MAX + 32];

	control_who(cl, who, sizeof(who));
	snprintf(words, sizeof(words), "reload asked by %s", who);
	log_warnx("%s", words);
	targets_log_all(dm, "reload-asked", words);
	reload_want(dm, cl); /* the reply comes when the worker is done */
}

int
requests_add_rule(struct dtarget *dt, enum policy_action a, const char *rule, uint64_t expires,
		  char *why, size_t whylen)
{
	struct target_rule *r;
	struct target_revoked rv;

	if (dt->nrules == DAEMON_MAX_RULES) {
		snprintf(why, whylen, "target %s has %d runtime rules already", dt->spec.name,
			 DAEMON_MAX_RULES);
		return -E2BIG;
	}
	r = &dt->rules[dt->nrules];
	memset(r, 0, sizeof(*r));
	r->action = a;
	snprintf(r->text, sizeof(r->text), "%s", rule);
	r->expires = expires;
	dt->nrules++;
	if (dt->tg && target_add_rule(dt->tg, r, &rv, why, whylen)) {
		dt->nrules--;
		return -EINVAL;
	}
	if (!dt->tg || dt->dm->job) /* a policy being built lacks it: build again after */
		dt->rebuild_pending = true;
	return 0;
}

static void
req_rule(struct daemon *dm, struct control_client *cl, const json_t *req, enum policy_action a)
{
	const json_t *fs = json_object_get(req, "for");
	const char *rule = jsonx_get_str(req, "rule");
	struct dtarget *dt = want_target(dm, cl, req);
	char why[512], d[32] = "", who[CONTROL_WHO_MAX];
	uint64_t expires = 0;

	if (!dt)
		return;
	control_who(cl, who, sizeof(who));
	if (!rule || strlen(rule) >= sizeof(dt->rules[0].text)) {
		reply_error(cl, "no rule, or one of %zu bytes or more", sizeof(dt->rules[0].text));
		return;
	}
	if (json_is_number(fs) && json_number_value(fs) >= 1) {
		expires = now_s() + (uint64_t)json_number_value(fs);
		duration_format_secs((long)json_number_value(fs), d, sizeof(d));
	}
	if (requests_add_rule(dt, a, rule, expires, why, sizeof(why))) {
		reply_error(cl, "%s", why);
		return;
	}
	dt_event(dt, a == POLICY_ALLOW ? "rule-allow" : "rule-deny",
		 "%s %s added at runtime%s%s; asked by %s", a == POLICY_ALLOW ? "allow" : "deny",
		 rule, d[0] ? " for " : "", d, who);
	reply_ok(cl, NULL);
}

static void
req_log(struct daemon *dm, struct control_client *cl, const json_t *req)
{
	const char *x = jsonx_get_str(req, "target");
	struct dtarget *dt = x ? find_target(dm, x) : NULL;
	unsigned int start = (dm->recent_at + RECENT_LINES - dm->nrecent) % RECENT_LINES;
	struct follower *f;

	if (x && !dt) {
		reply_error(cl, "no target %s", x);
		return;
	}
	for (unsigned int i = 0; i < dm->nrecent; i++) {
		unsigned int k = (start + i) % RECENT_LINES;

		if (!dt || dm->recent_cgid[k] == dt->cgid)
			control_send(cl, dm->recent[k]);
	}
	if (!jsonx_get_true(req, "follow")) {
		control_end(cl);
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		control_end(cl);
		return;
	}
	f->cl = cl;
	f->cgid = dt ? dt->cgid : 0;
	control_set_udata(cl, f);
	LIST_INSERT_HEAD(&dm->followers, f, entry);
}

static void
req_summary(struct daemon *dm, struct control_client *cl, const json_t *req)
{
	struct dtarget *dt = want_target(dm, cl, req);
	const char *fmt = jsonx_get_str(req, "format");
	enum summary_format sf = SUMMARY_TEXT;
	json_t *o, *rules;
	char **list = NULL;
	size_t len = 0;
	char *text = NULL;
	FILE *f;
	int n;

	if (!dt)
		return;
	if (fmt && summary_format_parse(fmt, &sf)) {
		reply_error(cl, "--format %s: expected text, markdown or json", fmt);
		return;
	}
	if (!dt->tg) {
		reply_error(cl, "target %s is waiting for its cgroup: nothing to sum up",
			    dt->spec.name);
		return;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		reply_error(cl, "out of memory");
		return;
	}
	summary_write(target_summary(dt->tg), f, sf, dt->spec.o.audit, NULL);
	fclose(f);
	o = json_object();
	jsonx_set_str(o, "text", text ? text : "");
	free(text);
	/* what `summary --suggest-policy FILE` merges into FILE (confine/suggest.h) */
	json_object_set_new(o, "observed", suggest_observe(target_summary(dt->tg)));
	rules = jsonx_add_array(o, "suggested_rules");
	n = summary_policy_rules(target_summary(dt->tg), &list);
	for (int i = 0; i < n; i++) {
		json_array_append_new(rules, jsonx_string(list[i]));
		free(list[i]);
	}
	free(list);
	reply_ok(cl, o);
}

static void
req_detach(struct daemon *dm, struct control_client *cl, const json_t *req)
{
	bool all = jsonx_get_true(req, "all");
	struct dtarget *dt, *tmp, *sel = NULL;
	char who[CONTROL_WHO_MAX];
	json_t *o, *done;

	if (!all && !(sel = want_target(dm, cl, req)))
		return;
	control_who(cl, who, sizeof(who));
	o = json_object();
	done = jsonx_add_array(o, "detached");
	TAILQ_FOREACH_SAFE(dt, &dm->targets, entry, tmp)
	{
		if (!all && dt != sel)
			continue;
		dt_event(dt, "detach", "detached on request of %s: confinement lifted", who);
		json_array_append_new(done,
				      jsonx_string(dt->cgpath[0] ? dt->cgpath : dt->spec.what));
		dt_free(dt, true);
	}
	reply_ok(cl, o);
}

void
requests_on_request(void *arg, struct control_client *cl, const void *reqp)
{
	struct daemon *dm = arg;
	const json_t *req = reqp;
	const char *cmd = jsonx_get_str(req, "cmd");

	if (!cmd)
		reply_error(cl, "no cmd");
	else if (!strcmp(cmd, "status"))
		req_status(dm, cl);
	else if (!strcmp(cmd, "reload"))
		req_reload(dm, cl);
	else if (!strcmp(cmd, "allow"))
		req_rule(dm, cl, req, POLICY_ALLOW);
	else if (!strcmp(cmd, "deny"))
		req_rule(dm, cl, req, POLICY_DENY);
	else if (!strcmp(cmd, "log"))
		req_log(dm, cl, req);
	else if (!strcmp(cmd, "summary"))
		req_summary(dm, cl, req);
	else if (!strcmp(cmd, "detach"))
		req_detach(dm, cl, req);
	else
		reply_error(cl, "unknown cmd %s", cmd);
}

void
requests_on_gone(void *arg, struct control_client *cl)
{
	struct follower *f = control_udata(cl);

	reload_forget(arg, cl); /* a `reload` it was waiting for answers nobody */
	if (!f)
		return;
	LIST_REMOVE(f, entry);
	free(f);
}
