// SPDX-License-Identifier: Apache-2.0
/* --metrics ADDR: the daemon's counters in the Prometheus text format
 * (version 0.0.4) on GET /metrics, for fleet dashboards. ADDR is
 * unix:PATH (a socket of mode 0600) or a loopback address and port
 * (127.0.0.1:9464, [::1]:9464): the counters name targets and cgroups, so
 * they are never served beyond this host unless an operator forwards them.
 * Served on the daemon's loop by libevent's HTTP server; a scrape reads
 * counters only (the fast-path map is walked for its fill). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <event2/buffer.h>
#include <event2/http.h>

#include "audit/record.h"
#include "daemon/core.h"
#include "daemon/metrics.h"
#include "egress_abi.h"
#include "kernel/hold.h"
#include "lib/log.h"

struct metrics {
	struct evhttp *http;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* unix: removed at the end */
};

/* A label value as the text format wants it: \\, \" and \n escaped. */
static void
label(struct evbuffer *b, const char *v)
{
	for (; v && *v; v++) {
		if (*v == '\\' || *v == '"')
			evbuffer_add_printf(b, "\\%c", *v);
		else if (*v == '\n')
			evbuffer_add(b, "\\n", 2);
		else
			evbuffer_add(b, v, 1);
	}
}

static void
head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{target="...",cgroup="..."[,k="v"]} value */
static void
sample(struct evbuffer *b, const char *name, const struct dtarget *dt, const char *k, const char *v,
       unsigned long long value)
{
	evbuffer_add_printf(b, "%s{target=\"", name);
	label(b, dt->spec.what);
	evbuffer_add(b, "\",cgroup=\"", 10);
	label(b, dt->cgpath);
	if (k) {
		evbuffer_add_printf(b, "\",%s=\"", k);
		label(b, v);
	}
	evbuffer_add_printf(b, "\"} %llu\n", value);
}

#define ADD(b, lit) evbuffer_add(b, lit, sizeof(lit) - 1)

/* A reason's class: its words up to a quote, a parenthesis, a colon or a
 * digit ("rule 2 \"x\"" is "rule", "no rule allows this name" stays), so
 * that names and numbers never become label values. */
static void
reason_class(const char *reason, char *out, size_t len)
{
	size_t n = reason ? strcspn(reason, "\"(:;0123456789'") : 0;

	while (n && reason[n - 1] == ' ')
		n--;
	if (!n)
		snprintf(out, len, "%s", reason && reason[0] ? "other" : "none");
	else
		snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), reason);
}

void
metrics_count(struct dtarget *dt, const struct audit_rec *r)
{
	char cls[sizeof(dt->reasons[0].reason)];
	const char *src = r->source ? r->source : "";
	struct dt_reason *e;
	int i;

	reason_class(r->rule ? "rule" : r->reason, cls, sizeof(cls));
	for (i = 0; i < dt->nreasons; i++) {
		e = &dt->reasons[i];
		if (!strcmp(e->reason, cls) &&
		    !strncmp(e->verdict, r->decision, sizeof(e->verdict) - 1) &&
		    !strncmp(e->source, src, sizeof(e->source) - 1))
			break;
	}
	if (i == dt->nreasons) {
		if (i == DT_REASONS)
			i = DT_REASONS - 1; /* the last row counts the rest */
		else
			dt->nreasons++;
		e = &dt->reasons[i];
		if (!e->n) {
			snprintf(e->verdict, sizeof(e->verdict), "%s", r->decision);
			snprintf(e->source, sizeof(e->source), "%s", src);
			snprintf(e->reason, sizeof(e->reason), "%s",
				 i == DT_REASONS - 1 ? "other" : cls);
		}
	}
	dt->reasons[i].n++;
}

/* The policy a target has, as a label: policy_dir's name, the file's
 * path, or "inline" (rules in the config or on the command line). */
static const char *
policy_label(const struct dtarget *dt)
{
	if (dt->spec.policy_name)
		return dt->spec.policy_name;
	if (dt->spec.o.policy_file)
		return dt->spec.o.policy_file;
	return dt->spec.kind == DSPEC_CGROUP && !strcmp(dt->spec.what, "(default)") ? "default"
	       : dt->sel == SEL_DEFAULT_DENY && dt->dyn				    ? "default"
										    : "inline";
}

static void
reason_samples(struct evbuffer *b, const struct daemon *dm)
{
	const struct dtarget *dt;

	head(b, "egressctl_target_info", "gauge",
	     "1 per target, with its policy (policy_dir's name, the file, inline, default) and "
	     "selector");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	{
		ADD(b, "egressctl_target_info{target=\"");
		label(b, dt->spec.what);
		ADD(b, "\",cgroup=\"");
		label(b, dt->cgpath);
		ADD(b, "\",name=\"");
		label(b, dt->spec.name);
		ADD(b, "\",policy=\"");
		label(b, policy_label(dt));
		ADD(b, "\",selector=\"");
		label(b, !dt->dyn ? "" : dt->sel >= 0 ? dm->cfg.specs[dt->sel].what : "(default)");
		evbuffer_add_printf(b, "\"} %d\n", 1);
	}
	head(b, "egressctl_decisions_by_reason_total", "counter",
	     "decisions logged, by verdict, source and reason (its words without names or "
	     "numbers; past 24 kinds per target, \"other\")");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	for (int i = 0; i < dt->nreasons; i++) {
		const struct dt_reason *e = &dt->reasons[i];

		ADD(b, "egressctl_decisions_by_reason_total{target=\"");
		label(b, dt->spec.what);
		ADD(b, "\",cgroup=\"");
		label(b, dt->cgpath);
		ADD(b, "\",policy=\"");
		label(b, policy_label(dt));
		ADD(b, "\",verdict=\"");
		label(b, e->verdict);
		ADD(b, "\",source=\"");
		label(b, e->source);
		ADD(b, "\",reason=\"");
		label(b, e->reason);
		evbuffer_add_printf(b, "\"} %llu\n", (unsigned long long)e->n);
	}
}

static void
dns_samples(struct evbuffer *b, const struct daemon *dm)
{
	static const char *const name = "egressctl_dns_queries_total";
	const struct dtarget *dt;

	head(b, name, "counter",
	     "the DNS responder's queries, by result (refused by the policy, answered, from "
	     "the cache, asked upstream, servfail) and all of them");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->tg) {
		struct target_counters c;

		target_counters(dt->tg, &c);
		sample(b, name, dt, "result", "all", c.dns.queries);
		sample(b, name, dt, "result", "refused", c.dns.refused);
		sample(b, name, dt, "result", "answered", c.dns.answered);
		sample(b, name, dt, "result", "cached", c.dns.cached);
		sample(b, name, dt, "result", "upstream", c.dns.upstream);
		sample(b, name, dt, "result", "servfail", c.dns.servfail);
	}
	head(b, "egressctl_dns_fast_path_total", "counter",
	     "answers that opened the fast path or the kernel-verified path, by path");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->tg) {
		struct target_counters c;

		target_counters(dt->tg, &c);
		sample(b, "egressctl_dns_fast_path_total", dt, "path", "fast_path",
		       c.dns.fast_path);
		sample(b, "egressctl_dns_fast_path_total", dt, "path", "kernel_verified",
		       c.dns.kv_path);
	}
}

static const struct {
	int counter;
	const char *event;
} kernel_events[] = {
	{EGR_C_REDIRECT, "redirect"},	      {EGR_C_DENY, "deny"},
	{EGR_C_WOULD_DENY, "would_deny"},     {EGR_C_FASTPATH, "fast_path"},
	{EGR_C_LOCAL, "loopback_local"},      {EGR_C_KVERIFIED, "kernel_verified"},
	{EGR_C_KREJECTED, "kernel_rejected"},
};

static void
target_samples(struct evbuffer *b, const struct daemon *dm)
{
	const struct dtarget *dt;

	head(b, "egressctl_target_attached", "gauge", "1 while the target's cgroup is confined");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	sample(b, "egressctl_target_attached", dt, NULL, NULL, dt->tg != NULL);
	head(b, "egressctl_decisions_total", "counter",
	     "the proxy's decisions on connections and requests, by verdict");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	{
		struct target_counters c;

		if (!dt->tg)
			continue;
		target_counters(dt->tg, &c);
		sample(b, "egressctl_decisions_total", dt, "verdict", "allow", c.proxy.allowed);
		sample(b, "egressctl_decisions_total", dt, "verdict", "deny", c.proxy.denied);
	}
	head(b, "egressctl_kernel_events_total", "counter",
	     "what the BPF programs did with connects and datagrams, by event");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	{
		struct target_counters c;

		if (!dt->tg)
			continue;
		target_counters(dt->tg, &c);
		for (size_t i = 0; i < sizeof(kernel_events) / sizeof(kernel_events[0]); i++)
			sample(b, "egressctl_kernel_events_total", dt, "event",
			       kernel_events[i].event, c.kernel[kernel_events[i].counter]);
	}
}

static void
proxy_samples(struct evbuffer *b, const struct daemon *dm)
{
	const struct dtarget *dt;
	static const char *const names[] = {"egressctl_proxy_open_connections",
					    "egressctl_proxy_refused_total",
					    "egressctl_fast_path_entries"};
	struct target_counters c;

	head(b, names[0], "gauge", "connections the proxy holds open now");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->tg) {
		target_counters(dt->tg, &c);
		sample(b, names[0], dt, NULL, NULL, (unsigned long long)c.proxy.open);
	}
	head(b, names[1], "counter", "clients refused before any decision, by the limit hit");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->tg) {
		target_counters(dt->tg, &c);
		sample(b, names[1], dt, "limit", "max_conns", c.proxy.refused_limit);
		sample(b, names[1], dt, "limit", "max_conns_per_process",
		       c.proxy.refused_per_process);
		sample(b, names[1], dt, "limit", "descriptors", c.proxy.refused_nofd);
		sample(b, names[1], dt, "limit", "unattributed", c.proxy.refused_unattributed);
	}
	head(b, names[2], "gauge", "entries of the fast-path map (its capacity: 65536)");
	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->tg) {
		target_counters(dt->tg, &c);
		sample(b, names[2], dt, NULL, NULL, (unsigned long long)c.fast_entries);
	}
}

/* What each selector's root held (kernel/hold.h) refused. */
static void
hold_samples(struct evbuffer *b, const struct daemon *dm)
{
	static const char *const what[EGR_HOLD_NSTATS] = {"connect", "sendmsg", "packet"};

	if (!dm->nholds)
		return;
	head(b, "egressctl_held_total", "counter",
	     "connects and sends refused, packets dropped, of cgroups below a selector's root "
	     "not yet confined");
	for (int i = 0; i < dm->nholds; i++)
		for (int k = 0; k < EGR_HOLD_NSTATS; k++) {
			evbuffer_add(b, "egressctl_held_total{root=\"", 27);
			label(b, hold_root(dm->holds[i]));
			evbuffer_add_printf(b, "\",what=\"%s\"} %llu\n", what[k],
					    (unsigned long long)hold_refused(dm->holds[i], k));
		}
}

static void
on_request(struct evhttp_request *req, void *arg)
{
	const struct daemon *dm = arg;
	struct evbuffer *b;
	const struct dtarget *dt;
	unsigned long long n = 0;

	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET ||
	    strcmp(evhttp_request_get_uri(req), "/metrics")) {
		evhttp_send_error(req, HTTP_NOTFOUND, "GET /metrics");
		return;
	}
	b = evbuffer_new();
	if (!b) {
		evhttp_send_error(req, HTTP_INTERNAL, "out of memory");
		return;
	}
	TAILQ_FOREACH(dt, &dm->targets, entry)
	n += dt->tg != NULL;
	head(b, "egressctl_targets", "gauge", "targets confined now");
	evbuffer_add_printf(b, "egressctl_targets %llu\n", n);
	head(b, "egressctl_reloads_total", "counter", "reloads of the policies, by result");
	/* dm->reloads counts the applied ones only (apply_reload) */
	evbuffer_add_printf(b, "egressctl_reloads_total{result=\"applied\"} %llu\n",
			    (unsigned long long)dm->reloads);
	evbuffer_add_printf(b, "egressctl_reloads_total{result=\"rejected\"} %llu\n",
			    (unsigned long long)dm->reloads_rejected);
	head(b, "egressctl_policies_kept_total", "counter",
	     "a policy_dir file that did not build at a reload, per target that kept its policy");
	evbuffer_add_printf(b, "egressctl_policies_kept_total %llu\n",
			    (unsigned long long)dm->policies_kept);
	hold_samples(b, dm);
	target_samples(b, dm);
	proxy_samples(b, dm);
	reason_samples(b, dm);
	dns_samples(b, dm);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, HTTP_OK, "OK", b);
	evbuffer_free(b);
}

/* addr as a loopback socket address: 0, -EINVAL (not such an address) or
 * -EPERM (an address, not loopback). */
static int
parse_inet(const char *addr, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	const char *colon = strrchr(addr, ':');
	char host[64];
	size_t hl;
	int port;

	if (!colon || colon == addr || strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -EINVAL;
	port = atoi(colon + 1);
	hl = (size_t)(colon - addr);
	if (port < 1 || port > 65535 || hl >= sizeof(host))
		return -EINVAL;
	if (addr[0] == '[' && addr[hl - 1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)hl - 2, addr + 1);
	else
		snprintf(host, sizeof(host), "%.*s", (int)hl, addr);
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*len = sizeof(*in);
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127 ? 0 : -EPERM;
	}
	if (addr[0] == '[' && inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ? 0 : -EPERM;
	}
	return -EINVAL;
}

/* A listening socket for addr: unix:PATH, IP:PORT or [IP6]:PORT, loopback
 * only. The fd, or -errno with errbuf set. */
static int
listen_on(struct metrics *m, const char *addr, char *errbuf, size_t errlen)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_un *un = (struct sockaddr_un *)&ss;
	socklen_t len = sizeof(*un);
	int fd, err;

	if (!strncmp(addr, "unix:", 5)) {
		if (addr[5] != '/' || strlen(addr + 5) >= sizeof(un->sun_path))
			goto bad;
		un->sun_family = AF_UNIX;
		snprintf(un->sun_path, sizeof(un->sun_path), "%s", addr + 5);
		snprintf(m->path, sizeof(m->path), "%s", addr + 5);
		unlink(m->path);
	} else if ((err = parse_inet(addr, &ss, &len)) == -EPERM) {
		snprintf(errbuf, errlen,
			 "--metrics %s: not a loopback address: the counters name this host's "
			 "targets (serve them on 127.0.0.1:PORT, [::1]:PORT or unix:PATH)",
			 addr);
		return -EINVAL;
	} else if (err) {
		goto bad;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    (ss.ss_family != AF_UNIX &&
	     setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int))) ||
	    bind(fd, (struct sockaddr *)&ss, len) ||
	    (ss.ss_family == AF_UNIX && chmod(m->path, 0600)) || listen(fd, 64)) {
		err = -errno;
		snprintf(errbuf, errlen, "--metrics %s: %s", addr, strerror(-err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd;
bad:
	snprintf(errbuf, errlen, "--metrics %s: expected unix:PATH, 127.0.0.1:PORT or [::1]:PORT",
		 addr);
	return -EINVAL;
}

struct metrics *
metrics_open(struct daemon *dm, const char *addr, char *errbuf, size_t errlen)
{
	struct metrics *m = calloc(1, sizeof(*m));
	int fd;

	if (!m) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	fd = listen_on(m, addr, errbuf, errlen);
	if (fd < 0) {
		free(m);
		return NULL;
	}
	m->http = evhttp_new(dm->base);
	if (!m->http || evhttp_accept_socket(m->http, fd)) {
		snprintf(errbuf, errlen, "--metrics %s: cannot serve it", addr);
		close(fd);
		metrics_free(m);
		return NULL;
	}
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET);
	evhttp_set_timeout(m->http, 10);
	evhttp_set_gencb(m->http, on_request, dm);
	log_info("metrics on %s (GET /metrics)", addr);
	return m;
}

void
metrics_free(struct metrics *m)
{
	if (!m)
		return;
	if (m->http)
		evhttp_free(m->http); /* closes the listening socket */
	if (m->path[0])
		unlink(m->path);
	free(m);
}
