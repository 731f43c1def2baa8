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
#include <cJSON.h>

#include "audit/audit.h"
#include "daemon/control.h"
#include "daemon/core.h"
#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/log.h"
#include "confine/status.h"
#include "confine/suggest.h"
#include "confine/summary.h"

static const char *
jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void
reply(struct control_client *cl, cJSON *o)
{
	char *out = cJSON_PrintUnformatted(o);

	if (out)
		control_send(cl, out);
	cJSON_free(out);
	cJSON_Delete(o);
}

static void reply_error(struct control_client *cl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
reply_error(struct control_client *cl, const char *fmt, ...)
{
	cJSON *o = cJSON_CreateObject();
	char words[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(words, sizeof(words), fmt, ap);
	va_end(ap);
	cJSON_AddFalseToObject(o, "ok");
	cJSON_AddStringToObject(o, "error", words);
	reply(cl, o);
	control_end(cl);
}

static void
reply_ok(struct control_client *cl, cJSON *o)
{
	if (!o)
		o = cJSON_CreateObject();
	cJSON_AddTrueToObject(o, "ok");
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
want_target(struct daemon *dm, struct control_client *cl, const cJSON *req)
{
	const char *x = jstr(req, "target");
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

static cJSON *
dt_json(const struct daemon *dm, const struct dtarget *dt)
{
	static const char *const kinds[] = {"cgroup", "unit", "pid"};
	cJSON *o = cJSON_CreateObject(), *rules, *links;
	uint64_t now = now_s();

	cJSON_AddStringToObject(o, "name", dt->spec.name);
	cJSON_AddStringToObject(o, "kind", kinds[dt->spec.kind]);
	cJSON_AddStringToObject(o, "what", dt->spec.what);
	cJSON_AddStringToObject(o, "state", dt->tg ? "confined" : "waiting");
	if (dt->cgpath[0])
		cJSON_AddStringToObject(o, "cgroup", dt->cgpath);
	cJSON_AddNumberToObject(o, "cgroup_id", (double)dt->cgid);
	if (dt->spec.o.policy_file)
		cJSON_AddStringToObject(o, "policy_file", dt->spec.o.policy_file);
	if (dt->spec.o.log_file)
		cJSON_AddStringToObject(o, "log", dt->spec.o.log_file);
	cJSON_AddBoolToObject(o, "audit", dt->spec.o.audit);
	rules = cJSON_AddArrayToObject(o, "runtime_rules");
	for (int i = 0; i < dt->nrules; i++) {
		cJSON *r = cJSON_CreateObject();

		cJSON_AddStringToObject(r, "action",
					dt->rules[i].action == POLICY_ALLOW ? "allow" : "deny");
		cJSON_AddStringToObject(r, "rule", dt->rules[i].text);
		if (dt->rules[i].expires)
			cJSON_AddNumberToObject(r, "expires_in",
						(double)(dt->rules[i].expires - now));
		cJSON_AddItemToArray(rules, r);
	}
	if (dt->tg) {
		struct status_info si;
		uint32_t ids[24];
		int n;
		char *doc;

		cJSON_AddBoolToObject(o, "adopted", target_adopted(dt->tg));
		cJSON_AddNumberToObject(o, "uptime", (double)(now - dt->since));
		links = cJSON_AddArrayToObject(o, "links");
		target_link_ids(dt->tg, ids, 24, &n);
		for (int i = 0; i < n; i++)
			cJSON_AddItemToArray(links, cJSON_CreateNumber(ids[i]));
		target_status(dt->tg, &si);
		doc = status_render(&si);
		if (doc)
			cJSON_AddItemToObject(o, "run", cJSON_Parse(doc));
		free(doc);
	}
	(void)dm;
	return o;
}

static void
req_status(struct daemon *dm, struct control_client *cl)
{
	cJSON *o = cJSON_CreateObject(), *ts;
	struct dtarget *dt;

	cJSON_AddNumberToObject(o, "pid", getpid());
	cJSON_AddNumberToObject(o, "uptime", (double)(now_s() - dm->started));
	if (dm->cfg.path)
		cJSON_AddStringToObject(o, "config", dm->cfg.path);
	cJSON_AddNumberToObject(o, "reloads", (double)dm->reloads);
	cJSON_AddNumberToObject(o, "reloads_rejected", (double)dm->reloads_rejected);
	ts = cJSON_AddArrayToObject(o, "targets");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	cJSON_AddItemToArray(ts, dt_json(dm, dt));
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

static void
req_rule(struct daemon *dm, struct control_client *cl, const cJSON *req, enum policy_action a)
{
	const cJSON *fs = cJSON_GetObjectItemCaseSensitive(req, "for");
	const char *rule = jstr(req, "rule");
	struct dtarget *dt = want_target(dm, cl, req);
	struct target_rule *r;
	struct target_revoked rv;
	char why[512], d[32] = "", who[CONTROL_WHO_MAX];

	if (!dt)
		return;
	control_who(cl, who, sizeof(who));
	if (!rule || strlen(rule) >= sizeof(r->text)) {
		reply_error(cl, "no rule, or one of %zu bytes or more", sizeof(r->text));
		return;
	}
	if (dt->nrules == DAEMON_MAX_RULES) {
		reply_error(cl, "target %s has %d runtime rules already", dt->spec.name,
			    DAEMON_MAX_RULES);
		return;
	}
	r = &dt->rules[dt->nrules];
	memset(r, 0, sizeof(*r));
	r->action = a;
	snprintf(r->text, sizeof(r->text), "%s", rule);
	if (cJSON_IsNumber(fs) && fs->valuedouble >= 1) {
		r->expires = now_s() + (uint64_t)fs->valuedouble;
		duration_format_secs((long)fs->valuedouble, d, sizeof(d));
	}
	dt->nrules++;
	if (dt->tg && target_add_rule(dt->tg, r, &rv, why, sizeof(why))) {
		dt->nrules--;
		reply_error(cl, "%s", why);
		return;
	}
	if (!dt->tg || dm->job) /* a policy being built lacks it: build again after */
		dt->rebuild_pending = true;
	dt_event(dt, a == POLICY_ALLOW ? "rule-allow" : "rule-deny",
		 "%s %s added at runtime%s%s; asked by %s", a == POLICY_ALLOW ? "allow" : "deny",
		 rule, d[0] ? " for " : "", d, who);
	reply_ok(cl, NULL);
}

static void
req_log(struct daemon *dm, struct control_client *cl, const cJSON *req)
{
	const char *x = jstr(req, "target");
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
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "follow"))) {
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
req_summary(struct daemon *dm, struct control_client *cl, const cJSON *req)
{
	struct dtarget *dt = want_target(dm, cl, req);
	const char *fmt = jstr(req, "format");
	enum summary_format sf = SUMMARY_TEXT;
	cJSON *o, *rules;
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
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "text", text ? text : "");
	free(text);
	/* what `summary --suggest-policy FILE` merges into FILE (confine/suggest.h) */
	cJSON_AddItemToObject(o, "observed", suggest_observe(target_summary(dt->tg)));
	rules = cJSON_AddArrayToObject(o, "suggested_rules");
	n = summary_policy_rules(target_summary(dt->tg), &list);
	for (int i = 0; i < n; i++) {
		cJSON_AddItemToArray(rules, cJSON_CreateString(list[i]));
		free(list[i]);
	}
	free(list);
	reply_ok(cl, o);
}

static void
req_detach(struct daemon *dm, struct control_client *cl, const cJSON *req)
{
	bool all = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "all"));
	struct dtarget *dt, *tmp, *sel = NULL;
	char who[CONTROL_WHO_MAX];
	cJSON *o, *done;

	if (!all && !(sel = want_target(dm, cl, req)))
		return;
	control_who(cl, who, sizeof(who));
	o = cJSON_CreateObject();
	done = cJSON_AddArrayToObject(o, "detached");
	TAILQ_FOREACH_SAFE(dt, &dm->targets, entry, tmp)
	{
		if (!all && dt != sel)
			continue;
		dt_event(dt, "detach", "detached on request of %s: confinement lifted", who);
		cJSON_AddItemToArray(
			done, cJSON_CreateString(dt->cgpath[0] ? dt->cgpath : dt->spec.what));
		dt_free(dt, true);
	}
	reply_ok(cl, o);
}

void
requests_on_request(void *arg, struct control_client *cl, const void *reqp)
{
	struct daemon *dm = arg;
	const cJSON *req = reqp;
	const char *cmd = jstr(req, "cmd");

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

	(void)arg;
	if (!f)
		return;
	LIST_REMOVE(f, entry);
	free(f);
}
