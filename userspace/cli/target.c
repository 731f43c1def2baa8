// SPDX-License-Identifier: Apache-2.0
/* One confined cgroup (see target.h): the options every target takes, the
 * policy, the decision log and its sink (summary, denial lines), the proxy
 * and DNS listeners, the programs attached to the cgroup with their ring
 * buffer and fast path, and the status socket. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/event.h>

#include "cli/revoke.h"
#include "cli/status.h"
#include "cli/suggest.h"
#include "cli/summary.h"
#include "cli/target.h"
#include "dns/responder.h"
#include "kernel/events.h"
#include "kernel/existing.h"
#include "kernel/loader.h"
#include "sandbox/unixsvc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "policy/audit.h"
#include "proxy/conn.h"
#include "proxy/proxy.h"

#define TO(field)	offsetof(struct target_opts, field)
#define TARGET_MAX_FAST 64 /* exact-address rules opened on the fast path */

static int
add_rule(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct target_opts *t = dst;

	if (t->nrules == TARGET_MAX_RULES) {
		snprintf(err, errlen, "at most %d --allow/--deny rules (use --policy FILE)",
			 TARGET_MAX_RULES);
		return -EINVAL;
	}
	t->rules[t->nrules].action = !strcmp(o->name, "allow") ? POLICY_ALLOW : POLICY_DENY;
	t->rules[t->nrules].text = arg;
	t->nrules++;
	return 0;
}

static int
set_summary_format(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct target_opts *t = dst;
	enum summary_format f;

	(void)o;
	if (summary_format_parse(arg, &f)) {
		snprintf(err, errlen, "expected text, markdown or json");
		return -EINVAL;
	}
	t->summary_format = (int)f;
	return 0;
}

static int
add_proxy_port(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct target_opts *t = dst;
	char *end;
	long v;

	(void)o;
	if (t->nproxy == 2) {
		snprintf(err, errlen, "at most 2 --proxy-port options");
		return -EINVAL;
	}
	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 1 || v > 65535) {
		snprintf(err, errlen, "expected a port from 1 to 65535");
		return -EINVAL;
	}
	t->proxy_ports[t->nproxy++] = (uint16_t)v;
	return 0;
}

static int
add_unix(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct target_opts *t = dst;
	bool allow = !strcmp(o->name, "allow-unix");
	int *n = allow ? &t->nallow_unix : &t->ndeny_unix;

	if (*n == TARGET_MAX_UNIX) {
		snprintf(err, errlen, "at most %d", TARGET_MAX_UNIX);
		return -EINVAL;
	}
	if (arg[0] != '/' || strlen(arg) >= UNIXSVC_PATH_MAX) {
		snprintf(err, errlen, "expected an absolute path of at most %d bytes",
			 UNIXSVC_PATH_MAX - 1);
		return -EINVAL;
	}
	(allow ? t->allow_unix : t->deny_unix)[(*n)++] = arg;
	return 0;
}

const struct opt target_opt_table[] = {
	{"allow", 0, OPT_T_CALL, 0, "RULE",
	 "allow RULE: host, *.host, **.host, host:port, *:port,\n"
	 "tcp://host:port, ADDR[/LEN][:PORT], [ADDR6]:PORT; an\n"
	 "IPv4 ADDR:PORT also opens the kernel fast path\n"
	 "(e.g. 127.0.0.1:5432 for a database on the host)",
	 .call = add_rule},
	{"deny", 0, OPT_T_CALL, 0, "RULE", "deny RULE (deny wins over allow)", .call = add_rule},
	{"policy", 0, OPT_T_STR, TO(policy_file), "FILE",
	 "rules from a JSON policy file (egressctl-policy(5))"},
	{"log", 0, OPT_T_STR, TO(log_file), "FILE",
	 "one JSON line per decision (kernel, proxy and DNS,\n"
	 "with pid, command, cgroup, run id, host, CI job) to\n"
	 "FILE (opened anew on SIGUSR1; the daemon: SIGHUP),\n"
	 "fd:N, syslog[:PATH] (RFC 5424 to /dev/log),\n"
	 "otlp:http://HOST:PORT/v1/logs (OTLP/HTTP JSON), or\n"
	 "- (the daemon's stdout; run: use fd:N)"},
	{"audit", 0, OPT_T_FLAG, TO(audit), NULL,
	 "deny nothing: record what the policy would deny\n"
	 "(\"would-deny\") and let it through"},
	{"ipv6", 0, OPT_T_FLAG, TO(ipv6), NULL,
	 "IPv6 too: native IPv6 TCP and DNS go to egressctl's\n"
	 "listeners on [::1] and are judged like IPv4 (AAAA\n"
	 "answers for allowed names; IPv4 carried in IPv6 is\n"
	 "refused); without it IPv6 is denied"},
	{"suggest-policy", 0, OPT_T_STR, TO(suggest_policy), "FILE",
	 "at exit, write the policy (JSON) that would have\n"
	 "allowed everything the run did"},
	{"summary", 0, OPT_T_STR, TO(summary_file), "FILE",
	 "at exit (a daemon target: when it is detached or the\n"
	 "daemon stops), append the summary to FILE (e.g.\n"
	 "$GITHUB_STEP_SUMMARY)"},
	{"summary-format", 0, OPT_T_CALL, 0, "F",
	 "the form of --summary FILE: text (default),\n"
	 "markdown or json",
	 .call = set_summary_format},
	{"max-conns", 0, OPT_T_INT, TO(max_conns), "N",
	 "proxy connections open at once (4096, or as many as\n"
	 "the descriptor limit allows); beyond it new ones\n"
	 "are refused (HTTP 503, SOCKS5 0x01, transparent:\n"
	 "a reset), open ones go on",
	 1, 1000000},
	{"max-conns-per-process", 0, OPT_T_INT, TO(max_conns_per_process), "N",
	 "of them, one process's (a quarter of them,\n"
	 "but at least 64)",
	 1, 1000000},
	{"head-timeout", 0, OPT_T_SECS, TO(head_timeout), "D",
	 "a client's request or handshake must come within D\n"
	 "(10s); D is 30, 30s, 1.5m, 2m, 1h30m...",
	 1, 86400},
	{"connect-timeout", 0, OPT_T_SECS, TO(connect_timeout), "D",
	 "per upstream address tried (10s; then 504)", 1, 86400},
	{"response-timeout", 0, OPT_T_SECS, TO(response_timeout), "D",
	 "plain HTTP: the response head must come within D of\n"
	 "the request (60s; then 504)",
	 1, 86400},
	{"idle-timeout", 0, OPT_T_SECS, TO(idle_timeout), "D",
	 "close a connection silent for D (10m)", 1, 86400},
	{"dns-upstream", 0, OPT_T_STR, TO(dns_upstream), "ADDR",
	 "resolver the proxy uses (default: /etc/resolv.conf)"},
	{"dns-port", 0, OPT_T_PORT, TO(dns_port), "P",
	 "redirect CMD's DNS to your own resolver on\n"
	 "127.0.0.1:P instead of egressctl's responder"},
	{"transparent-port", 0, OPT_T_PORT, TO(tproxy_port), "P",
	 "redirect TCP to your own listener on 127.0.0.1:P\n"
	 "instead of egressctl's"},
	{"proxy-port", 0, OPT_T_CALL, 0, "P",
	 "also let CMD reach a listener on 127.0.0.1:P (up to 2)", .call = add_proxy_port},
	{"no-kernel-verify", 0, OPT_T_FLAG, TO(no_kverify), NULL,
	 "no kernel-verified path: connections to allowed names\n"
	 "go through the transparent proxy, even where the\n"
	 "kernel could check their SNI or Host and let them go\n"
	 "direct"},
	{"allow-abstract-unix", 0, OPT_T_FLAG, TO(allow_abstract_unix), NULL,
	 "run on kernels without the unix socket hooks (< 6.7),\n"
	 "leaving abstract unix sockets unconfined"},
	{"allow-unix", 0, OPT_T_CALL, 0, "PATH",
	 "let CMD use the unix socket PATH of a service that\n"
	 "starts work outside the sandbox (denied by default:\n"
	 "docker, containerd, podman, buildkit, CRI-O, systemd's\n"
	 "private sockets, the D-Bus system and session buses)",
	 .call = add_unix},
	{"deny-unix", 0, OPT_T_CALL, 0, "PATH", "deny the unix socket PATH too (as those above)",
	 .call = add_unix},
	{0},
};

struct target {
	const struct target_opts *o;
	const struct target_env *env;
	struct event_base *base;
	struct policy *policy;
	struct audit *audit;
	struct summary *summary;
	struct proxy *px;
	struct loader *ld;
	struct revoker *rk;	 /* env->revoke_direct: the direct connections' revoke pass */
	struct unixsvc unix_svc; /* the unix sockets denied, by entry index */
	struct event *ev_ring, *ev_status;
	struct event *ev_drain; /* the kernel-verified path's allow events: no wakeup each */
	int status_fd;
	char status_path[128];
	const char *cgpath;
	uint64_t cgid;
	char http_url[64], socks_url[64];
	bool adopted;					/* took over pinned programs */
	int restored_names, restored_fast, restored_kv; /* taken back, when adopted */
	bool saved_warned;				/* egr_saved could not take one */
	struct sockaddr_storage fast[TARGET_MAX_FAST];	/* exact-address rules in egr_fast */
	int nfast;
	double tokens, last_refill; /* denial line rate limit */
	unsigned long suppressed;
	bool finished;
};

struct policy *
target_build_policy(const char *policy_file, const struct rule_arg *rules, int n, char *errbuf,
		    size_t errlen)
{
	char err[512];
	struct policy *p = policy_new();

	if (!p) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	if (policy_file && config_load_file(p, policy_file, err, sizeof(err))) {
		snprintf(errbuf, errlen, "--policy %s: %s", policy_file, err);
		policy_free(p);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		const char *opt = rules[i].action == POLICY_ALLOW ? "--allow" : "--deny";

		if (policy_add(p, rules[i].action, rules[i].text, NULL, opt, err, sizeof(err))) {
			snprintf(errbuf, errlen, "%s %s: %s", opt, rules[i].text, err);
			policy_free(p);
			return NULL;
		}
	}
	return p;
}

/* Denial lines on stderr, at most DENIAL_BURST at once and DENIAL_RATE a
 * second after that; the rest are counted and said once (the summary has
 * them all). */
#define DENIAL_RATE  10
#define DENIAL_BURST 20

/* Names in a denial line come from CMD: none of their control bytes (C0,
 * DEL, and C1 raw or UTF-8 encoded) may reach the terminal through
 * egressctl's own lines. Printable ASCII and our arrow stay. */
static void
sanitize_line(char *line)
{
	static const char arrow[] = "\u2192";
	unsigned char *c = (unsigned char *)line;

	while (*c) {
		if (!strncmp((char *)c, arrow, sizeof(arrow) - 1)) {
			c += sizeof(arrow) - 1;
			continue;
		}
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
		c++;
	}
}

static void
say_suppressed(struct target *t)
{
	if (!t->suppressed)
		return;
	fprintf(stderr, "egressctl: %s%lu more denials not shown (the summary has them)\n",
		t->env->label, t->suppressed);
	t->suppressed = 0;
}

static void
denial_line(struct target *t, char *line)
{
	struct timespec ts;
	double now;

	if (!t->env->denial_lines)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	t->tokens += (now - t->last_refill) * DENIAL_RATE;
	if (t->tokens > DENIAL_BURST)
		t->tokens = DENIAL_BURST;
	t->last_refill = now;
	if (t->tokens < 1) {
		t->suppressed++;
		return;
	}
	t->tokens -= 1;
	say_suppressed(t);
	sanitize_line(line);
	fprintf(stderr, "egressctl: %s%s\n", t->env->label, line);
}

/* Every decision of the proxy and the DNS responder, and the kernel's. */
static void
on_decision(void *arg, const struct audit_rec *r)
{
	struct target *t = arg;
	char line[800];

	if (t->env->on_record)
		t->env->on_record(t->env->record_arg, r);
	if (r->event)
		return; /* the daemon's own: not a decision */
	if (!strcmp(r->decision, "redirect"))
		return; /* not a decision: the proxy decides next */
	summary_add(t->summary, r);
	if (!strcmp(r->decision, "allow") || !strcmp(r->source, "bpf") ||
	    !strcmp(r->source, "kernel"))
		return; /* kernel lines are printed by on_event */
	snprintf(line, sizeof(line), "%s %s[%u] \u2192 %s (%s, %s)",
		 strcmp(r->decision, "deny") ? "would deny" : "denied", r->comm ? r->comm : "?",
		 r->pid,
		 r->dest   ? r->dest
		 : r->host ? r->host
			   : "?",
		 r->reason, r->source);
	denial_line(t, line);
}

/* e's destination as a socket address; false for unix and socket-creation
 * events, which have none. */
static bool
event_addr(const struct egr_event *e, struct sockaddr_storage *ss)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(ss, 0, sizeof(*ss));
	if (e->family == AF_UNIX || e->hook == EGR_H_SOCK_CREATE)
		return false;
	if (!memcmp(e->addr, mapped, 12)) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, &e->addr[3], 4);
		in->sin_port = e->port;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, e->addr, 16);
		in6->sin6_port = e->port;
	}
	return true;
}

static void
on_event(const struct egr_event *e, void *arg)
{
	struct target *t = arg;
	struct sockaddr_storage ss;
	struct audit_rec r = {0};
	char line[512], dest[160], comm[17], suggest[160] = "", why[320], name[65];

	if (e->family == AF_UNIX && e->reason == EGR_R_UNIX_SERVICE) {
		char uid[17], path[UNIXSVC_PATH_MAX + 16];

		memcpy(uid, e->addr, 16);
		uid[16] = 0;
		unixsvc_name(&t->unix_svc, (int)e->port, uid, path, sizeof(path));
		snprintf(dest, sizeof(dest), "unix:%s", path);
	} else {
		events_dest(e, dest, sizeof(dest));
	}
	policy_safe_comm(e->comm, comm);
	if (event_addr(e, &ss)) {
		r.ip = (struct sockaddr *)&ss;
		r.port = ntohs(e->port);
	}
	/* a loopback port opens with an address rule; nothing else here can */
	if (e->reason == EGR_R_LOOPBACK && ss.ss_family == AF_INET)
		snprintf(suggest, sizeof(suggest), "%s", dest);
	r.decision = events_decision(e);
	r.reason = events_reason(e->reason);
	if (e->family == AF_UNIX && e->reason == EGR_R_UNIX_SERVICE) {
		/* the record names the socket and the way to allow it */
		snprintf(why, sizeof(why), "%s (--allow-unix %s allows it)", r.reason, dest + 5);
		r.reason = why;
		r.host = dest;
	}
	r.source = "bpf";
	if (events_is_kv(e)) { /* the kernel-verified path's judgment */
		r.source = "kernel";
		policy_safe_str(e->name, sizeof(e->name), name, sizeof(name));
		if (name[0]) { /* the summary's row: the name, as the proxy's are */
			r.host = name;
			snprintf(dest, sizeof(dest), "%s:%u", name, (unsigned)ntohs(e->port));
		}
	}
	r.pid = e->tgid;
	r.comm = comm;
	r.cgroup = e->cgroup_id;
	r.dest = dest;
	r.suggest = suggest[0] ? suggest : NULL;
	audit_write(t->audit, &r);
	if (e->verdict == EGR_V_REDIRECT || e->verdict == EGR_V_ALLOW)
		return;
	events_format_dest(e, dest, line, sizeof(line));
	denial_line(t, line);
}

#define DRAIN_US 100000 /* how late a kernel-verified allow's decision line may be */

static void
on_ring(evutil_socket_t fd, short what, void *arg)
{
	struct target *t = arg;

	(void)fd;
	(void)what;
	loader_events_consume(t->ld);
}

void
target_status(const struct target *t, struct status_info *si)
{
	struct proxy_stats ps = {0};
	struct dns_stats ds = {0};

	memset(si, 0, sizeof(*si));
	if (t->px) {
		proxy_get_stats(t->px, &ps);
		proxy_get_dns_stats(t->px, &ds);
		si->http_port = proxy_port(t->px, PROXY_L_HTTP);
		si->socks_port = proxy_port(t->px, PROXY_L_SOCKS);
		si->tproxy_port = proxy_port(t->px, PROXY_L_TPROXY);
		si->dns_port = proxy_dns_port(t->px);
	}
	si->pid = getpid();
	si->cgroup_id = t->cgid;
	si->cgroup = t->cgpath;
	si->command = t->env->command;
	si->policy_file = t->o->policy_file;
	si->rules = policy_count(t->policy);
	si->audit = t->o->audit;
	si->ipv6 = t->o->ipv6;
	si->proxy_accepted = ps.accepted;
	si->proxy_allowed = ps.allowed;
	si->proxy_denied = ps.denied;
	si->proxy_unattributed = ps.refused_unattributed;
	si->dns_queries = ds.queries;
	si->dns_refused = ds.refused;
	si->dns_cached = ds.cached;
	si->dns_upstream = ds.upstream;
	si->dns_servfail = ds.servfail;
	si->dns_fast = ds.fast_path;
}

/* One status request: the document, then close. */
static void
on_status(evutil_socket_t lfd, short what, void *arg)
{
	struct target *t = arg;
	struct status_info si;
	char *doc;
	int fd;

	(void)what;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	target_status(t, &si);
	doc = status_render(&si);
	if (doc && send(fd, doc, strlen(doc), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("status: %s", strerror(errno));
	free(doc);
	close(fd);
}

int
target_opts_check(const struct target_opts *o, char *errbuf, size_t errlen)
{
	if (!o->ipv6 || !(o->containers_ip4 || o->tproxy_port || o->dns_port))
		return 0;
	snprintf(errbuf, errlen, "--ipv6 cannot be combined with %s",
		 o->containers_ip4 ? "--containers (the IPv6 listeners are on ::1 only)"
		 : o->tproxy_port  ? "--transparent-port (egressctl's listener serves IPv6)"
				   : "--dns-port (egressctl's responder serves IPv6)");
	return -EINVAL;
}

struct target *
target_new(struct event_base *base, const struct target_opts *o, const struct target_env *env,
	   struct policy *policy, char *errbuf, size_t errlen)
{
	struct target *t = calloc(1, sizeof(*t));

	if (!t) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	t->o = o;
	t->env = env;
	t->base = base;
	t->status_fd = -1;
	t->tokens = DENIAL_BURST;
	if (target_opts_check(o, errbuf, errlen)) {
		policy_free(policy);
		goto fail;
	}
	t->policy =
		policy ? policy
		       : target_build_policy(o->policy_file, o->rules, o->nrules, errbuf, errlen);
	if (!t->policy)
		goto fail;
	policy_set_ipv6(t->policy, o->ipv6); /* the proxy says what the kernel does */
	t->summary = summary_new();
	if (!t->summary) {
		snprintf(errbuf, errlen, "out of memory");
		goto fail;
	}
	t->audit = audit_open(base, o->log_file, errbuf, errlen);
	if (!t->audit)
		goto fail;
	audit_set_sink(t->audit, on_decision, t);
	if (env->name_cgroup)
		audit_set_namer(t->audit, env->name_cgroup, env->name_arg);
	audit_set_limit(t->audit, o->log_buffer);
	if (unixsvc_build(&t->unix_svc, o->unix_root, o->allow_unix, o->nallow_unix, o->deny_unix,
			  o->ndeny_unix, errbuf, errlen))
		goto fail;
	return t;
fail:
	target_free(t);
	return NULL;
}

/* The proxy and DNS listeners: on the ports pinned programs redirect to
 * (pinned), or on free ones. */
static int
open_proxy(struct target *t, const struct loader_opts *pinned, char *errbuf, size_t errlen)
{
	const struct target_opts *o = t->o;
	struct proxy_opts po = {0};

	if (pinned) {
		po.ports[PROXY_L_HTTP] = pinned->proxy_ports[0];
		po.ports[PROXY_L_SOCKS] = pinned->proxy_ports[1];
		po.ports[PROXY_L_TPROXY] = o->tproxy_port ? 0 : pinned->tproxy_port;
		po.dns_port = o->dns_port ? 0 : pinned->dns_port;
	}
	po.policy = t->policy;
	po.audit = t->audit;
	po.dns_upstream = o->dns_upstream;
	po.tproxy = !o->tproxy_port;
	po.dns = !o->dns_port;
	po.audit_mode = o->audit;
	po.max_conns = o->max_conns;
	po.max_conns_per_process = o->max_conns_per_process;
	po.header_timeout_s = o->head_timeout;
	po.connect_timeout_s = o->connect_timeout;
	po.response_timeout_s = o->response_timeout;
	po.idle_timeout_s = o->idle_timeout;
	po.asker = t->env->asker;
	po.policy_rw = t->policy;
	po.ns_ip4 = o->containers_ip4;
	po.ipv6 = o->ipv6;
	t->px = proxy_new(t->base, &po, errbuf, errlen);
	if (!t->px)
		return -EADDRINUSE;
	snprintf(t->http_url, sizeof(t->http_url), "http://127.0.0.1:%u",
		 proxy_port(t->px, PROXY_L_HTTP));
	snprintf(t->socks_url, sizeof(t->socks_url), "socks5h://127.0.0.1:%u",
		 proxy_port(t->px, PROXY_L_SOCKS));
	return 0;
}

/* ---- what the responder learned, kept in the pins (egr_saved) ---- */

static void
saved_key(const struct dns_saved *s, struct egr_saved_key *k)
{
	int port;

	memset(k, 0, sizeof(*k));
	port = loader_sockaddr_key((const struct sockaddr *)&s->addr, k->addr);
	k->kind = (uint8_t)s->kind;
	if (s->kind == DNS_SAVED_FAST) {
		k->port = port < 0 ? 0 : (uint16_t)port;
		k->name_hash = fnv1a_str(FNV1A_BASIS, s->name);
	}
}

static void
store_put(void *arg, const struct dns_saved *s)
{
	struct target *t = arg;
	struct egr_saved_key k;
	struct egr_saved_val v = {.expires_s = s->expires};
	int err;

	saved_key(s, &k);
	snprintf(v.name, sizeof(v.name), "%s", s->name);
	err = loader_saved_put(t->ld, &k, &v);
	if (err && !t->saved_warned) {
		log_warnx("%scannot keep what DNS answered for a restart (%s): a restarted "
			  "daemon judges some of these addresses without their names",
			  t->env->label, strerror(-err));
		t->saved_warned = true;
	}
}

static void
store_del(void *arg, const struct dns_saved *s)
{
	struct target *t = arg;
	struct egr_saved_key k;

	saved_key(s, &k);
	loader_saved_del(t->ld, &k);
}

struct restore_walk {
	struct target *t;
	int kind;		    /* EGR_SAVED_*: this pass's */
	struct egr_saved_key *drop; /* entries the responder did not take back */
	int ndrop, cap, err;
};

static int
restore_one(void *arg, const struct egr_saved_key *k, const struct egr_saved_val *v)
{
	struct restore_walk *w = arg;
	struct dns_saved s = {.kind = k->kind, .expires = v->expires_s, .name = v->name};
	int r;

	if (k->kind != w->kind)
		return 0;
	sockaddr_from_key(k->addr, k->port, &s.addr);
	r = proxy_restore(w->t->px, &s);
	if (r < 0) {
		w->err = r;
		return 1;
	}
	if (r > 0) {
		if (k->kind == EGR_SAVED_FAST)
			w->t->restored_fast++;
		else
			w->t->restored_names++;
		return 0;
	}
	if (w->ndrop == w->cap) {
		int cap = w->cap ? 2 * w->cap : 64;
		struct egr_saved_key *d = realloc(w->drop, sizeof(*d) * (size_t)cap);

		if (!d)
			return 0; /* kept in the map: the next restart judges it again */
		w->drop = d;
		w->cap = cap;
	}
	w->drop[w->ndrop++] = *k;
	return 0;
}

struct kv_saved {
	struct sockaddr_storage ss;
	uint64_t ttl_ns;
	char name[256];
};

struct kv_walk {
	struct kv_saved *v;
	size_t n, cap;
};

static int
kv_collect(void *arg, const struct sockaddr_storage *ss, const char *name, uint32_t flags,
	   uint64_t ttl_ns)
{
	struct kv_walk *w = arg;

	(void)flags; /* judged again by the policy in force */
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct kv_saved *v = realloc(w->v, sizeof(*v) * cap);

		if (!v)
			return 1; /* the rest are not taken back: DNS answers open them */
		w->v = v;
		w->cap = cap;
	}
	w->v[w->n].ss = *ss;
	w->v[w->n].ttl_ns = ttl_ns;
	snprintf(w->v[w->n].name, sizeof(w->v[w->n].name), "%s", name);
	w->n++;
	return 0;
}

/* A take-over: the kernel-verified approvals of the daemon before, those
 * the policy in force still allows, written again (and told to the
 * revoker, so a later policy change still ends their connections); the
 * rest are gone. */
static void
restore_kv(struct target *t)
{
	struct kv_walk w = {0};

	loader_kv_walk(t->ld, kv_collect, &w);
	loader_kv_clear(t->ld);
	for (size_t i = 0; !t->o->no_kverify && i < w.n; i++)
		if (proxy_kv_restore(t->px, &w.v[i].ss, w.v[i].name, w.v[i].ttl_ns) > 0)
			t->restored_kv++;
	free(w.v);
}

/* A restarted daemon: the learned names and fast-path approvals of the one
 * before it, those the policy in force still allows (the rest dropped). The
 * fast path is emptied first, so no approval outlives the judgement; names
 * come back before approvals, so the revoker learns what each is for. */
static int
restore_saved(struct target *t, char *errbuf, size_t errlen)
{
	struct restore_walk w = {.t = t, .kind = EGR_SAVED_NAME};

	loader_fast_clear(t->ld);
	loader_saved_walk(t->ld, restore_one, &w);
	w.kind = EGR_SAVED_FAST;
	loader_saved_walk(t->ld, restore_one, &w);
	for (int i = 0; i < w.ndrop; i++)
		loader_saved_del(t->ld, &w.drop[i]);
	free(w.drop);
	if (w.err) {
		snprintf(errbuf, errlen,
			 "cannot open the fast path again for what DNS answered: %s",
			 strerror(-w.err));
		return w.err;
	}
	return 0;
}

/* The responder's (and --ask's) fast-path approvals; the revoker learns
 * what each one is for. */
static int
fast_add(void *arg, const struct sockaddr *sa, uint64_t ttl_ns)
{
	struct target *t = arg;
	int err = loader_fast_add(t->ld, sa, IPPROTO_TCP, ttl_ns);

	if (!err && t->rk)
		revoker_answered(t->rk, sa, proxy_learned_name(t->px, sa), ttl_ns, false);
	return err;
}

static int
kv_add(void *arg, const struct sockaddr *sa, const char *name, uint32_t flags, uint64_t ttl_ns)
{
	struct target *t = arg;
	int err = loader_kv_add(t->ld, sa, name, flags, ttl_ns);

	if (!err && t->rk) /* a policy change that denies name ends its connections */
		revoker_answered(t->rk, sa, name, ttl_ns, true);
	return err;
}

static int
kv_clear(void *arg)
{
	struct target *t = arg;

	return loader_kv_clear(t->ld);
}

static int
fast_del(void *arg, const struct sockaddr *sa)
{
	struct target *t = arg;

	return loader_fast_del(t->ld, sa, IPPROTO_TCP);
}

static bool
fast_allowed(const struct policy *p, const struct sockaddr_storage *ss)
{
	struct policy_query q = {
		.addr = (const struct sockaddr *)ss,
		.port = ntohs(((const struct sockaddr_in *)ss)->sin_port), /* sin6_port alike */
		.proto = POLICY_P_TCP,
	};
	struct policy_decision d;

	return !policy_decide(p, &q, &d) && d.action == POLICY_ALLOW;
}

/* The exact-address allow rules of p (the command line's, the policy
 * file's, the runtime ones) that p allows, deny rules weighed: fast-path
 * targets; IPv6 ones with --ipv6 only. */
static int
fast_set(const struct policy *p, bool v6, struct sockaddr_storage *out, int max)
{
	struct sockaddr_storage cand[TARGET_MAX_FAST];
	int n = policy_exact_addrs(p, cand, TARGET_MAX_FAST, v6), k = 0;

	for (int i = 0; i < n && k < max; i++)
		if (fast_allowed(p, &cand[i]))
			out[k++] = cand[i];
	return k;
}

static bool
in_set(const struct sockaddr_storage *set, int n, const struct sockaddr_storage *ss)
{
	for (int i = 0; i < n; i++)
		if (sockaddr_same_ip(&set[i], ss) &&
		    ((const struct sockaddr_in *)&set[i])->sin_port ==
			    ((const struct sockaddr_in *)ss)->sin_port)
			return true;
	return false;
}

bool
target_fast_rule(const struct policy *p, bool v6, const struct sockaddr *sa)
{
	struct sockaddr_storage set[TARGET_MAX_FAST], ss = {0};
	int n = fast_set(p, v6, set, TARGET_MAX_FAST);

	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return false;
	memcpy(&ss, sa,
	       sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	return in_set(set, n, &ss);
}

/* The fast path for exactly the exact-address rules of o and extra: new
 * ones opened, those no rule names any more closed. */
static int
sync_fast_rules(struct target *t, char *errbuf, size_t errlen)
{
	struct sockaddr_storage want[TARGET_MAX_FAST];
	int n = fast_set(t->policy, t->o->ipv6, want, TARGET_MAX_FAST), err;

	for (int i = 0; i < t->nfast; i++)
		if (!in_set(want, n, &t->fast[i]))
			loader_fast_del(t->ld, (struct sockaddr *)&t->fast[i], IPPROTO_TCP);
	for (int i = 0; i < n; i++) {
		err = loader_fast_add(t->ld, (struct sockaddr *)&want[i], IPPROTO_TCP, 0);
		if (err) {
			char a[INET6_ADDRSTRLEN + 8];

			conn_format_addr((struct sockaddr *)&want[i], a, sizeof(a));
			snprintf(errbuf, errlen, "cannot open the fast path for %s: %s", a,
				 strerror(-err));
			return err;
		}
	}
	memcpy(t->fast, want, sizeof(want[0]) * (size_t)n);
	t->nfast = n;
	revoker_rules(t->rk, t->fast, t->nfast);
	return 0;
}

/* The status socket; a run without one still runs (said once). */
static void
open_status(struct target *t)
{
	t->status_fd = status_listen(t->cgid, t->status_path, sizeof(t->status_path));
	if (t->status_fd < 0) {
		log_warnx("%sno status socket: %s", t->env->label, strerror(-t->status_fd));
		return;
	}
	t->ev_status = event_new(t->base, t->status_fd, EV_READ | EV_PERSIST, on_status, t);
	if (!t->ev_status || event_add(t->ev_status, NULL))
		log_warnx("%sno status socket: cannot watch it", t->env->label);
}

static void
loader_options(const struct target *t, uint64_t cgid, struct loader_opts *lo)
{
	const struct target_opts *o = t->o;

	memset(lo, 0, sizeof(*lo));
	if (t->px) {
		lo->tproxy_port =
			o->tproxy_port ? o->tproxy_port : proxy_port(t->px, PROXY_L_TPROXY);
		lo->dns_port = o->dns_port ? o->dns_port : proxy_dns_port(t->px);
		lo->proxy_ports[0] = proxy_port(t->px, PROXY_L_HTTP);
		lo->proxy_ports[1] = proxy_port(t->px, PROXY_L_SOCKS);
	}
	lo->proxy_ports[2] = o->proxy_ports[0];
	lo->proxy_ports[3] = o->proxy_ports[1];
	lo->unix_hooks = !o->allow_abstract_unix;
	lo->emit_redirects = t->env->emit_redirects;
	lo->audit_mode = o->audit;
	lo->sandbox_cgid = cgid;
	lo->unix_svc = &t->unix_svc;
	lo->ns_ip4 = o->containers_ip4;
	lo->ipv6 = o->ipv6;
	memcpy(lo->skip_progs, o->skip_progs, sizeof(lo->skip_progs));
	lo->socks_max = o->socks_max;
	lo->on_event = on_event;
	lo->arg = (void *)t;
}

/* Takes over the programs pinned for cgid, and opens the listeners on
 * the ports they redirect to. -errno with errbuf set when they cannot be
 * taken over as they are (then attach afresh: no gap either). */
static int
adopt(struct target *t, uint64_t cgid, char *errbuf, size_t errlen)
{
	const struct target_opts *o = t->o;
	struct loader_opts want, pinned;
	struct loader *ld;
	int err;

	loader_options(t, cgid, &want);
	ld = loader_adopt(&want, cgid, &pinned, errbuf, errlen);
	if (!ld)
		return -errno;
	if ((o->tproxy_port && pinned.tproxy_port != o->tproxy_port) ||
	    (o->dns_port && pinned.dns_port != o->dns_port) ||
	    pinned.proxy_ports[2] != o->proxy_ports[0] ||
	    pinned.proxy_ports[3] != o->proxy_ports[1]) {
		snprintf(errbuf, errlen, "the pinned programs redirect to other ports");
		err = -ESTALE;
		goto fail;
	}
	err = open_proxy(t, &pinned, errbuf, errlen);
	if (err)
		goto fail;
	t->ld = ld;
	return 0;
fail:
	loader_free(ld); /* the pins stay: they go on enforcing */
	return err;
}

/* Whether the target ends the direct connections a policy change denies
 * (audit mode denies nothing). */
static bool
revoking(const struct target *t)
{
	return t->env->revoke_direct && !t->o->audit;
}

/* The iterators of the pre-existing and the revoke passes, sharing the
 * programs' socket maps (50-70 ms: before the attach, or at a take-over). */
static struct existing *
open_iterators(struct target *t, const char *cgpath, uint64_t cgid, char *errbuf, size_t errlen)
{
	struct existing_opts eo = {
		.socks_fd = loader_socks_fd(t->ld),
		.sk_fd = loader_sk_fd(t->ld),
		.cgid = cgid,
		.cg_path = cgpath,
		.kill = t->env->kill_existing,
		.revoke = revoking(t),
	};

	return existing_open(&eo, errbuf, errlen);
}

/* The connections the cgroup had before the attach: listed and left open,
 * or ended (env->kill_existing), for env->on_existing. */
static void
existing_pass(struct target *t, struct existing *ex)
{
	struct existing_conn *v = NULL;
	struct existing_stats st = {0};
	char why[512];
	size_t n = 0;

	if (existing_run(ex, &v, &n, &st, why, sizeof(why)))
		t->env->on_existing(t->env->record_arg, NULL, 0, &st, why);
	else
		t->env->on_existing(t->env->record_arg, v, n, &st, NULL);
	free(v);
}

/* The listeners on free ports, and programs loaded for them and attached
 * (links first, then any stale pins replaced: no gap); the iterators kept
 * for the revoke pass. */
static int
attach_fresh(struct target *t, int cg_fd, const char *cgpath, uint64_t cgid, char *errbuf,
	     size_t errlen)
{
	struct existing *ex = NULL;
	struct loader_opts lo;
	int err;

	err = open_proxy(t, NULL, errbuf, errlen);
	if (err)
		return err;
	loader_options(t, cgid, &lo);
	t->ld = loader_open(&lo, errbuf, errlen);
	if (!t->ld)
		return errno ? -errno : -EINVAL;
	if (t->env->existing_pass || revoking(t)) {
		/* loaded now: after the attach it only has to run */
		ex = open_iterators(t, cgpath, cgid, errbuf, errlen);
		if (!ex) {
			err = errno ? -errno : -ENOTSUP;
			goto fail;
		}
	}
	err = loader_attach(t->ld, cg_fd, cgid, errbuf, errlen);
	if (err)
		goto fail;
	if (ex && t->env->existing_pass)
		existing_pass(t, ex);
	if (ex && revoking(t)) { /* kept: a reload must not pay the load */
		t->rk = revoker_new(ex);
		if (!t->rk) {
			snprintf(errbuf, errlen, "out of memory");
			loader_detach(t->ld);
			err = -ENOMEM;
			ex = NULL;
			goto fail;
		}
	} else {
		existing_free(ex);
	}
	return 0;
fail:
	existing_free(ex);
	loader_free(t->ld);
	t->ld = NULL;
	return err;
}

int
target_attach(struct target *t, const char *cgpath, int cg_fd, uint64_t cgid, bool take_over,
	      char *errbuf, size_t errlen)
{
	char why[512];
	int err;

	t->adopted = false;
	if (take_over) {
		err = adopt(t, cgid, why, sizeof(why));
		if (!err)
			t->adopted = true;
		else if (err != -ENOENT)
			log_warnx("%scannot take over the programs pinned on %s (%s): attaching "
				  "afresh",
				  t->env->label, cgpath, why);
	}
	if (!t->adopted) {
		err = attach_fresh(t, cg_fd, cgpath, cgid, errbuf, errlen);
		if (err)
			goto out_proxy;
	} else if (revoking(t)) {
		struct existing *ex = open_iterators(t, cgpath, cgid, errbuf, errlen);

		t->rk = ex ? revoker_new(ex) : NULL;
		if (!t->rk) {
			if (ex)
				snprintf(errbuf, errlen, "out of memory");
			err = ex ? -ENOMEM : errno ? -errno : -ENOTSUP;
			goto out_detach;
		}
	}
	t->cgid = cgid;
	t->cgpath = cgpath;
	proxy_set_index(t->px, loader_conns_fd(t->ld));
	proxy_set_fastpath(t->px, fast_add, fast_del, t);
	proxy_set_store(t->px, store_put, store_del, t);
	if (!t->o->no_kverify)
		proxy_set_kvpath(t->px, kv_add, kv_clear);
	if (t->adopted) {
		restore_kv(t);
		err = restore_saved(t, errbuf, errlen);
		if (err)
			goto out_detach;
	}
	err = sync_fast_rules(t, errbuf, errlen);
	if (err)
		goto out_detach;
	/* what is left to open: the command's own descriptors, the status socket */
	if (proxy_size_limits(t->px, errbuf, errlen)) {
		err = -EMFILE;
		goto out_detach;
	}
	t->ev_ring = event_new(t->base, loader_events_fd(t->ld), EV_READ | EV_PERSIST, on_ring, t);
	/* the kernel submits its kernel-verified allows without a wakeup
	 * (one per connection would cost each handshake a context switch):
	 * they are taken with the next event, or by this timer */
	t->ev_drain = event_new(t->base, -1, EV_PERSIST, on_ring, t);
	if (!t->ev_ring || event_add(t->ev_ring, NULL) || !t->ev_drain ||
	    event_add(t->ev_drain, &(struct timeval){.tv_usec = DRAIN_US})) {
		snprintf(errbuf, errlen, "cannot watch the event ring buffer");
		err = -ENOMEM;
		goto out_detach;
	}
	open_status(t);
	return 0;

out_detach:
	revoker_free(t->rk);
	t->rk = NULL;
	if (!t->adopted) /* what we attached; taken-over pins go on enforcing */
		loader_detach(t->ld);
	if (t->ev_ring)
		event_free(t->ev_ring);
	t->ev_ring = NULL;
	if (t->ev_drain)
		event_free(t->ev_drain);
	t->ev_drain = NULL;
	loader_free(t->ld);
	t->ld = NULL;
out_proxy:
	proxy_free(t->px);
	t->px = NULL;
	return err;
}

bool
target_adopted(const struct target *t)
{
	return t->adopted;
}

void
target_restored(const struct target *t, int *names, int *fast, int *kv)
{
	*names = t->restored_names;
	*fast = t->restored_fast;
	*kv = t->restored_kv;
}

const char *
target_http_url(const struct target *t)
{
	return t->http_url;
}

void
target_no_proxy(const struct target *t, char *buf, size_t len)
{
	snprintf(buf, len, "localhost,127.0.0.1,::1");
	if (!t->o->no_kverify && !t->o->audit)
		policy_noproxy_names(t->policy, buf, len, TARGET_NOPROXY_MAX);
}

const char *
target_socks_url(const struct target *t)
{
	return t->socks_url;
}

const struct unixsvc *
target_unix_svc(const struct target *t)
{
	return &t->unix_svc;
}

const char *
target_pin_dir(const struct target *t)
{
	return t->ld ? loader_pin_dir(t->ld) : "";
}

struct summary *
target_summary(const struct target *t)
{
	return t->summary;
}

static void
close_status(struct target *t)
{
	if (t->ev_status)
		event_free(t->ev_status);
	t->ev_status = NULL;
	if (t->status_fd >= 0) {
		close(t->status_fd);
		unlink(t->status_path);
	}
	t->status_fd = -1;
}

void
target_finish(struct target *t)
{
	struct proxy_stats ps;
	struct summary_refusals sr = {0};

	if (t->finished)
		return;
	t->finished = true;
	close_status(t);
	if (t->ld)
		loader_events_consume(t->ld); /* what the last moments produced */
	if (t->px) {
		proxy_get_stats(t->px, &ps);
		sr.limit = ps.refused_limit;
		sr.per_process = ps.refused_per_process;
		sr.nofd = ps.refused_nofd;
		sr.max_conns = ps.max_conns;
		sr.max_conns_per_process = ps.max_conns_per_process;
		summary_set_refusals(t->summary, &sr);
		proxy_free(t->px); /* closes connections: their last decisions are in */
		t->px = NULL;
	}
	audit_finish(t->audit); /* so that the summary can say what was dropped */
}

void
target_print_summary(struct target *t, bool audit_mode)
{
	struct audit_stats ls;

	say_suppressed(t);
	audit_get_stats(t->audit, &ls);
	summary_print(t->summary, stderr, audit_mode, &ls);
}

void
target_write_suggestion(const struct target *t)
{
	char errbuf[1024];

	if (!t->o->suggest_policy)
		return;
	if (summary_write_policy(t->summary, t->o->suggest_policy, errbuf, sizeof(errbuf)))
		log_warnx("--suggest-policy: %s", errbuf);
	else
		log_warnx("suggested policy written to %s", t->o->suggest_policy);
}

void
target_reopen_log(struct target *t)
{
	audit_reopen(t->audit);
}

void
target_write_summary_file(struct target *t)
{
	struct audit_stats ls;
	int err;

	if (!t->o->summary_file)
		return;
	audit_get_stats(t->audit, &ls);
	err = summary_append_file(t->summary, t->o->summary_file,
				  (enum summary_format)t->o->summary_format, t->o->audit, &ls);
	if (err)
		log_warnx("%s--summary %s: %s", t->env->label, t->o->summary_file, strerror(-err));
}

void
target_detach(struct target *t)
{
	if (t->ld)
		loader_detach(t->ld);
}

void
target_free(struct target *t)
{
	if (!t)
		return;
	close_status(t);
	if (t->ev_ring)
		event_free(t->ev_ring);
	if (t->ev_drain)
		event_free(t->ev_drain);
	revoker_free(t->rk);
	loader_free(t->ld);
	proxy_free(t->px);
	summary_free(t->summary);
	audit_close(t->audit);
	policy_free(t->policy);
	free(t);
}

struct policy *
target_policy_build(const struct target_opts *o, const struct target_rule *extra, int nextra,
		    char *errbuf, size_t errlen)
{
	struct policy *p = target_build_policy(o->policy_file, o->rules, o->nrules, errbuf, errlen);
	char err[400];

	for (int i = 0; p && i < nextra; i++) {
		const char *opt = extra[i].action == POLICY_ALLOW ? "allow" : "deny";

		if (policy_add(p, extra[i].action, extra[i].text, NULL, "runtime", err,
			       sizeof(err))) {
			snprintf(errbuf, errlen, "%s %s: %s", opt, extra[i].text, err);
			policy_free(p);
			p = NULL;
		}
	}
	if (p)
		policy_set_ipv6(p, o->ipv6);
	return p;
}

/* One connection the revoke pass ended (or could not): a decision line
 * (source bpf: the kernel carried it), and a line on stderr. */
static void
on_revoked(void *arg, const struct existing_conn *c, const char *host,
	   const struct policy_decision *d)
{
	struct target *t = arg;
	struct sockaddr_storage ss = {0};
	struct audit_rec r = {0};
	char words[400], reason[1024], peer[64], local[64], dest[320];

	policy_reason_words(d, NULL, words, sizeof(words));
	existing_addr(c->raddr, c->rport, peer, sizeof(peer));
	existing_addr(c->laddr, c->lport, local, sizeof(local));
	if (!memcmp(c->raddr, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, &c->raddr[3], 4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, c->raddr, 16);
	}
	if (host)
		snprintf(dest, sizeof(dest), "%s:%u (%s)", host, c->rport, peer);
	else
		snprintf(dest, sizeof(dest), "%s", peer);
	r.host = host;
	r.port = c->rport;
	r.ip = (const struct sockaddr *)&ss;
	r.pid = (uint32_t)c->pid;
	r.comm = c->comm[0] ? c->comm : NULL;
	r.cgroup = c->cgroup_id;
	r.rule = d->rule ? d->rule->text : NULL;
	r.dest = dest;
	r.proto = c->protocol == IPPROTO_UDP ? "udp" : "tcp";
	if (c->action == EGR_PRE_FAILED) {
		snprintf(reason, sizeof(reason),
			 "a direct connection of %s[%d] %s \u2192 %s that the new policy denies "
			 "(%s) "
			 "could not be ended: %s",
			 c->comm[0] ? c->comm : "?", (int)c->pid, local, dest, words,
			 strerror(-c->err));
		r.event = "revoke-failed";
		r.reason = reason;
		log_warnx("%s%s", t->env->label, reason);
		target_log_event(t, &r);
		return;
	}
	snprintf(reason, sizeof(reason), "%s; the policy changed", words);
	r.decision = "deny";
	r.reason = reason;
	r.source = "bpf";
	audit_write(t->audit, &r);
	log_warnx("%sended %s[%d] %s %s \u2192 %s %s, direct: %s", t->env->label,
		  c->comm[0] ? c->comm : "?", (int)c->pid, r.proto, local, dest,
		  existing_state_word(c->protocol, c->state), reason);
}

/* After a change of the policy: the connections that went direct to a
 * destination it denies are ended (counted in rv->conns). */
static void
revoke_direct(struct target *t, struct proxy_revoked *rv)
{
	struct revoke_stats st;
	char why[512];

	if (!t->rk)
		return;
	if (revoker_run(t->rk, t->policy, on_revoked, t, &st, why, sizeof(why))) {
		struct audit_rec r = {.event = "revoke-failed", .reason = why};

		log_warnx("%scannot end the direct connections the new policy denies: %s",
			  t->env->label, why);
		target_log_event(t, &r);
		return;
	}
	rv->conns += st.revoked;
	if (!st.passes) {
		log_info("%srevoke pass: not needed (no destination known to have gone direct is "
			 "denied now, and no rule denies by address); %zu destinations remembered",
			 t->env->label, st.dests);
		return;
	}
	log_info("%srevoke pass: %u direct connections, %u ended, %u not ended; %u pass%s in %.2f "
		 "ms; %zu destinations remembered",
		 t->env->label, st.direct, st.revoked, st.failed, st.passes,
		 st.passes == 1 ? "" : "es", (double)st.ns / 1e6, st.dests);
}

int
target_swap_policy(struct target *t, const struct target_opts *o, struct policy *p,
		   struct proxy_revoked *rv, struct policy **oldp, char *errbuf, size_t errlen)
{
	struct policy *old = t->policy;
	int err;

	memset(rv, 0, sizeof(*rv));
	t->policy = p;
	t->o = o;
	if (t->px)
		proxy_set_policy(t->px, p, p, rv);
	if (oldp)
		*oldp = old;
	else
		policy_free(old);
	err = t->ld ? sync_fast_rules(t, errbuf, errlen) : 0;
	revoke_direct(t, rv);
	return err;
}

int
target_set_policy(struct target *t, const struct target_opts *o, const struct target_rule *extra,
		  int nextra, struct proxy_revoked *rv, char *errbuf, size_t errlen)
{
	struct policy *p = target_policy_build(o, extra, nextra, errbuf, errlen);

	memset(rv, 0, sizeof(*rv));
	if (!p)
		return -EINVAL;
	return target_swap_policy(t, o, p, rv, NULL, errbuf, errlen);
}

int
target_add_rule(struct target *t, const struct target_rule *r, struct proxy_revoked *rv,
		char *errbuf, size_t errlen)
{
	char why[400];
	int err;

	memset(rv, 0, sizeof(*rv));
	if (policy_add(t->policy, r->action, r->text, NULL, "runtime", why, sizeof(why))) {
		snprintf(errbuf, errlen, "%s", why);
		return -EINVAL;
	}
	if (t->px && r->action == POLICY_DENY) /* what it denies is revoked */
		proxy_set_policy(t->px, t->policy, t->policy, rv);
	err = t->ld ? sync_fast_rules(t, errbuf, errlen) : 0;
	if (r->action == POLICY_DENY)
		revoke_direct(t, rv);
	return err;
}

unsigned int
target_rule_count(const struct target *t)
{
	return policy_count(t->policy);
}

void
target_log_event(struct target *t, const struct audit_rec *r)
{
	struct audit_rec e = *r;

	e.source = "daemon";
	if (!e.cgroup)
		e.cgroup = t->cgid;
	audit_write(t->audit, &e);
}

uint64_t
target_cgid(const struct target *t)
{
	return t->cgid;
}

void
target_link_ids(const struct target *t, uint32_t *ids, int max, int *n)
{
	*n = 0;
	if (t->ld)
		loader_link_ids(t->ld, ids, max, n);
}

void
target_env_defaults(struct target_opts *o)
{
	const char *policy = getenv("EGRESSCTL_POLICY"), *log = getenv("EGRESSCTL_LOG");

	if (!o->policy_file && policy && policy[0])
		o->policy_file = policy;
	if (!o->log_file && log && log[0])
		o->log_file = log;
}
