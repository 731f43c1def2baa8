// SPDX-License-Identifier: Apache-2.0
/* A decision as its JSON line (see record.h): strings that come from
 * clients (host, comm, method, path) are escaped byte by byte, control
 * characters and other non-ASCII bytes as \u00XX (the log stays ASCII
 * whatever was sent); every line carries who wrote it, taken from the
 * environment once. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>

#include "audit/record.h"
#include "lib/clock.h"

struct out {
	char *buf;
	size_t len, pos;
};

static void
put(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (o->pos + 1 < o->len)
			o->buf[o->pos] = s[i];
		o->pos++;
	}
	if (o->len)
		o->buf[o->pos < o->len ? o->pos : o->len - 1] = 0;
}

static void
puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* The length of the well-formed UTF-8 sequence at s (at most n bytes) of
 * a character past ASCII, its code point in *cp; 0 when there is none
 * (a stray or overlong byte, a surrogate, past U+10FFFF, cut short). */
static size_t
utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len = s[0] >= 0xc2 && s[0] <= 0xdf   ? 2
		     : s[0] >= 0xe0 && s[0] <= 0xef ? 3
		     : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
						    : 0;
	unsigned char lo = 0x80, hi = 0xbf;

	if (!len || len > n)
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	*cp = s[0] & (0xff >> (len + 1));
	for (size_t k = 1; k < len; k++)
		*cp = *cp << 6 | (s[k] & 0x3f);
	return len;
}

/* A JSON string: UTF-8 kept as it is (a job's or a command's name may be
 * any language's), controls (C0, DEL, and C1, which some terminals take
 * as such) and bytes that are no UTF-8 as \u escapes: a line printed on
 * a terminal (`egressctl log`) carries no control of its own. */
static void
put_str(struct out *o, const char *key, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	char esc[8];
	size_t n = strnlen(s, max);

	puts_(o, ",\"");
	puts_(o, key);
	puts_(o, "\":\"");
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		uint32_t cp = c;
		size_t len = c < 0x80 ? 1 : utf8_seq(u + i, n - i, &cp);

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			put(o, esc, 2);
		} else if (!len || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
			snprintf(esc, sizeof(esc), "\\u%04x", len ? cp : c);
			puts_(o, esc);
		} else {
			put(o, s + i, len);
		}
		i += len ? len : 1;
	}
	puts_(o, "\"");
}

static void
put_num(struct out *o, const char *key, unsigned long long v)
{
	char num[32];

	snprintf(num, sizeof(num), "%llu", v);
	puts_(o, ",\"");
	puts_(o, key);
	puts_(o, "\":");
	puts_(o, num);
}

/* ---- who writes the log ---- */

static struct audit_identity ident;
static char ident_json[1200]; /* ,"schema":2,"run_id":...: what every line carries */

static void
ci_add(const char *key, const char *env)
{
	const char *v = getenv(env);

	if (v && v[0] && ident.nci < AUDIT_MAX_CI) {
		ident.ci[ident.nci].key = key;
		ident.ci[ident.nci].value = v;
		ident.nci++;
	}
}

static bool
env_true(const char *name)
{
	const char *v = getenv(name);

	return v && (!strcmp(v, "true") || !strcmp(v, "1"));
}

const struct audit_identity *
audit_identity(void)
{
	unsigned char rnd[16];
	struct out o = {ident_json, sizeof(ident_json), 0};
	char num[16];

	if (ident.run_id[0])
		return &ident;
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (unsigned char)((ts.tv_nsec >> (i % 4 * 8)) ^ (getpid() >> i) ^ i);
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(ident.run_id + 2 * i, 3, "%02x", rnd[i]);
	if (gethostname(ident.hostname, sizeof(ident.hostname) - 1))
		ident.hostname[0] = 0;
	if (env_true("GITHUB_ACTIONS")) {
		ident.ci_system = "github";
		ci_add("run_id", "GITHUB_RUN_ID");
		ci_add("run_attempt", "GITHUB_RUN_ATTEMPT");
		ci_add("job", "GITHUB_JOB");
		ci_add("workflow", "GITHUB_WORKFLOW");
		ci_add("repository", "GITHUB_REPOSITORY");
	} else if (env_true("GITLAB_CI")) {
		ident.ci_system = "gitlab";
		ci_add("job_id", "CI_JOB_ID");
		ci_add("job", "CI_JOB_NAME");
		ci_add("pipeline_id", "CI_PIPELINE_ID");
		ci_add("project", "CI_PROJECT_PATH");
	} else if (env_true("BUILDKITE")) {
		ident.ci_system = "buildkite";
		ci_add("job_id", "BUILDKITE_JOB_ID");
		ci_add("build_id", "BUILDKITE_BUILD_ID");
		ci_add("pipeline", "BUILDKITE_PIPELINE_SLUG");
		ci_add("step", "BUILDKITE_STEP_KEY");
	} else if (getenv("CI_JOB_ID")) {
		ident.ci_system = "ci";
		ci_add("job_id", "CI_JOB_ID");
	}
	snprintf(num, sizeof(num), "%d", AUDIT_SCHEMA);
	puts_(&o, ",\"schema\":");
	puts_(&o, num);
	put_str(&o, "run_id", ident.run_id, sizeof(ident.run_id));
	if (ident.hostname[0])
		put_str(&o, "hostname", ident.hostname, 255);
	if (ident.ci_system) {
		puts_(&o, ",\"ci\":{\"system\":\"");
		puts_(&o, ident.ci_system); /* one of ours */
		puts_(&o, "\"");
		for (int i = 0; i < ident.nci; i++)
			put_str(&o, ident.ci[i].key, ident.ci[i].value, 128);
		puts_(&o, "}");
	}
	if (o.pos >= sizeof(ident_json)) { /* cut short: only what always fits */
		o.pos = 0;
		puts_(&o, ",\"schema\":");
		puts_(&o, num);
		put_str(&o, "run_id", ident.run_id, sizeof(ident.run_id));
	}
	return &ident;
}

int
audit_format(const struct audit_rec *r, uint64_t time_ms, char *buf, size_t len)
{
	struct out o = {buf, len, 0};
	char ip[INET6_ADDRSTRLEN] = "";
	char ts[64];

	rfc3339_ms(time_ms, ts, sizeof(ts));
	audit_identity();
	puts_(&o, "{\"time\":\"");
	puts_(&o, ts);
	puts_(&o, "\"");
	puts_(&o, ident_json);
	if (r->event)
		put_str(&o, "event", r->event, 32);
	else
		put_str(&o, "decision", r->decision, 16);
	put_str(&o, "reason", r->reason ? r->reason : "", 256);
	put_str(&o, "source", r->source, 16);
	if (r->host && r->host[0])
		put_str(&o, "host", r->host, 255);
	if (r->port)
		put_num(&o, "port", r->port);
	if (r->ip) {
		if (r->ip->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)r->ip)->sin_addr, ip,
				  sizeof(ip));
		else if (r->ip->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)r->ip)->sin6_addr, ip,
				  sizeof(ip));
		if (ip[0])
			put_str(&o, "ip", ip, sizeof(ip));
	}
	if (r->method)
		put_str(&o, "method", r->method, 24);
	if (r->path)
		put_str(&o, "path", r->path, 256);
	if (r->inspected)
		puts_(&o, ",\"inspected\":true");
	if (r->pid)
		put_num(&o, "pid", r->pid);
	if (r->comm)
		put_str(&o, "comm", r->comm, 16);
	if (r->cgroup)
		put_num(&o, "cgroup", r->cgroup);
	if (r->rule)
		put_str(&o, "rule", r->rule, 512);
	if (r->cgroup_path)
		put_str(&o, "cgroup_path", r->cgroup_path, 256);
	if (r->container)
		put_str(&o, "container", r->container, 128);
	puts_(&o, "}");
	return (int)o.pos;
}

/* r with ECS field names, dotted (as Elasticsearch reads them): @timestamp,
 * ecs.version, event.* (action: the decision or the daemon's event;
 * outcome: success for an allow, failure for a deny, unknown else; reason),
 * rule.name, destination.domain/address/ip/port, network.transport,
 * http.request.method, process.pid/name, container.id, host.hostname,
 * labels (egressctl's run id and source, the CI job) and egressctl.cgroup. */
static int
format_ecs(const struct audit_rec *r, uint64_t time_ms, char *buf, size_t len)
{
	struct out o = {buf, len, 0};
	char ip[INET6_ADDRSTRLEN] = "", ts[64];
	const char *action = r->event ? r->event : r->decision;
	bool allow = !r->event && !strcmp(r->decision, "allow");
	bool deny = !r->event && !strcmp(r->decision, "deny");

	rfc3339_ms(time_ms, ts, sizeof(ts));
	audit_identity();
	puts_(&o, "{\"@timestamp\":\"");
	puts_(&o, ts);
	puts_(&o, "\",\"ecs.version\":\"" AUDIT_ECS_VERSION "\",\"event.kind\":\"event\"");
	puts_(&o, r->event ? ",\"event.category\":[\"process\"]"
			   : ",\"event.category\":[\"network\"],\"event.type\":[\"connection\"]");
	put_str(&o, "event.action", action, 32);
	put_str(&o, "event.outcome", allow ? "success" : deny ? "failure" : "unknown", 16);
	if (r->reason && r->reason[0])
		put_str(&o, "event.reason", r->reason, 256);
	put_str(&o, "event.provider", "egressctl", 16);
	if (r->rule)
		put_str(&o, "rule.name", r->rule, 512);
	if (r->ip) {
		if (r->ip->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)r->ip)->sin_addr, ip,
				  sizeof(ip));
		else if (r->ip->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)r->ip)->sin6_addr, ip,
				  sizeof(ip));
	}
	if (r->host && r->host[0]) {
		put_str(&o, "destination.address", r->host, 255);
		if (strcmp(r->host, ip) && r->host[0] != '[' && !strchr(r->host, ':') &&
		    strspn(r->host, "0123456789.") != strlen(r->host))
			put_str(&o, "destination.domain", r->host, 255);
	}
	if (ip[0])
		put_str(&o, "destination.ip", ip, sizeof(ip));
	if (r->port)
		put_num(&o, "destination.port", r->port);
	if (r->proto)
		put_str(&o, "network.transport", r->proto, 8);
	if (r->method)
		put_str(&o, "http.request.method", r->method, 24);
	if (r->pid)
		put_num(&o, "process.pid", r->pid);
	if (r->comm)
		put_str(&o, "process.name", r->comm, 16);
	if (r->container)
		put_str(&o, "container.id", r->container, 128);
	if (ident.hostname[0])
		put_str(&o, "host.hostname", ident.hostname, 255);
	put_str(&o, "labels.egressctl_run_id", ident.run_id, sizeof(ident.run_id));
	put_str(&o, "labels.egressctl_source", r->source, 16);
	if (ident.ci_system)
		put_str(&o, "labels.ci_system", ident.ci_system, 16);
	for (int i = 0; i < ident.nci; i++) {
		char key[48];

		snprintf(key, sizeof(key), "labels.ci_%s", ident.ci[i].key);
		put_str(&o, key, ident.ci[i].value, 128);
	}
	if (r->cgroup)
		put_num(&o, "egressctl.cgroup", r->cgroup);
	if (r->cgroup_path)
		put_str(&o, "egressctl.cgroup_path", r->cgroup_path, 256);
	puts_(&o, "}");
	return (int)o.pos;
}

int
audit_fmt_parse(const char *s, enum audit_fmt *out)
{
	if (!strcmp(s, "json"))
		*out = AUDIT_FMT_JSON;
	else if (!strcmp(s, "ecs"))
		*out = AUDIT_FMT_ECS;
	else
		return -EINVAL;
	return 0;
}

int
audit_format_as(enum audit_fmt fmt, const struct audit_rec *r, uint64_t time_ms, char *buf,
		size_t len)
{
	return fmt == AUDIT_FMT_ECS ? format_ecs(r, time_ms, buf, len)
				    : audit_format(r, time_ms, buf, len);
}
