// SPDX-License-Identifier: Apache-2.0
/* The options every target takes (see options.h): the rows, their
 * parsers, and the policy they build. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/record.h"
#include "lib/proxyurl.h"
#include "sandbox/unixsvc.h"
#include "confine/options.h"
#include "lib/log.h"
#include "confine/summary.h"
#include "policy/secret.h"

#define TO(field) offsetof(struct target_opts, field)

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
add_log_header(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct target_opts *t = dst;
	size_t max = sizeof(t->log_headers) / sizeof(t->log_headers[0]);

	(void)o;
	if ((size_t)t->nlog_headers == max) {
		snprintf(err, errlen, "at most %zu", max);
		return -EINVAL;
	}
	if (!strchr(arg, ':')) {
		snprintf(err, errlen, "expected NAME: VALUE"); /* not the value: a token */
		return -EINVAL;
	}
	t->log_headers[t->nlog_headers++] = arg;
	return 0;
}

static int
set_log_format(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct target_opts *t = dst;
	enum audit_fmt f;

	(void)o;
	if (audit_fmt_parse(arg, &f)) {
		snprintf(err, errlen, "expected json or ecs");
		return -EINVAL;
	}
	t->log_format = (int)f;
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

static int
set_upstream(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct target_opts *t = dst;
	struct proxyurl u;

	(void)o;
	if (proxyurl_parse(arg, &u, err, errlen))
		return -EINVAL;
	t->upstream_proxy = arg;
	return 0;
}

static int
set_no_proxy(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct target_opts *t = dst;

	(void)o;
	if (policy_noproxy_check(arg, err, errlen))
		return -EINVAL;
	t->upstream_no_proxy = arg;
	return 0;
}

static int
add_secret(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct target_opts *t = dst;
	struct policy *p = policy_new();
	int rc;

	(void)o;
	if (t->nsecrets == TARGET_MAX_SECRETS) {
		snprintf(err, errlen, "at most %d", TARGET_MAX_SECRETS);
		policy_free(p);
		return -EINVAL;
	}
	/* checked now, on its own, so that the error names the option */
	rc = p ? policy_add_secret_arg(p, arg, err, errlen) : -ENOMEM;
	policy_free(p);
	if (rc)
		return -EINVAL;
	t->secrets[t->nsecrets++] = arg;
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
	 "rules from a JSON policy file (egressctl-policy(5)),\n"
	 "or fd:N, a descriptor open for reading"},
	{"log", 0, OPT_T_STR, TO(log_file), "FILE",
	 "one JSON line per decision (kernel, proxy and DNS,\n"
	 "with pid, command, cgroup, run id, host, CI job) to\n"
	 "FILE (opened anew on SIGUSR1; the daemon: SIGHUP),\n"
	 "fd:N, syslog[:PATH] (to /dev/log, as journald reads it),\n"
	 "otlp:http[s]://HOST:PORT/v1/logs (OTLP/HTTP JSON), or\n"
	 "- (the daemon's stdout; run: use fd:N)"},
	{"log-header", 0, OPT_T_CALL, 0, "'NAME: VALUE'",
	 "a header of every OTLP request (repeatable; a token\n"
	 "is better in $OTEL_EXPORTER_OTLP_HEADERS, which\n"
	 "other users cannot read in the process list)",
	 .call = add_log_header},
	{"log-ca", 0, OPT_T_STR, TO(log_ca), "FILE",
	 "an https:// OTLP collector's CA (default: the\n"
	 "system's certificates)"},
	{"log-format", 0, OPT_T_CALL, 0, "F",
	 "the form of --log's lines: json (egressctl's, the\n"
	 "default) or ecs (Elastic Common Schema field names)",
	 .call = set_log_format},
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
	 "allowed everything the run did, or to descriptor N\n"
	 "(a regular file, read and write): fd:N"},
	{"summary", 0, OPT_T_STR, TO(summary_file), "FILE",
	 "at exit (a daemon target: when it is detached or the\n"
	 "daemon stops), append the summary to FILE (e.g.\n"
	 "$GITHUB_STEP_SUMMARY), or to descriptor N: fd:N"},
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
	{"map-entries", 0, OPT_T_INT, TO(map_entries), "N",
	 "room in the kernel maps of connections, answered\n"
	 "names and approvals (65536; the kernel holds their\n"
	 "memory from the start: 56 MiB at 65536, 5.4 MiB at\n"
	 "4096); past it the oldest names and approvals are\n"
	 "dropped, whose next connections go through the\n"
	 "proxy, judged there",
	 1024, 1 << 20},
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
	{"limited", 0, OPT_T_FLAG, TO(limited), NULL,
	 "every allowed host read-only: GET, HEAD and OPTIONS\n"
	 "only (other methods get 403 blocked-by-method-policy);\n"
	 "its HTTPS is inspected to see them (tcp:// rules and\n"
	 "plain TCP to addresses stay as they are)"},
	{"ca", 0, OPT_T_STR, TO(ca), "CERT,KEY",
	 "HTTPS inspection signs with this CA (PEM files; the\n"
	 "key unencrypted) instead of one made for the run in\n"
	 "memory"},
	{"secret", 0, OPT_T_CALL, 0, "NAME=SOURCE@HOST[,HOST]",
	 "CMD gets $NAME as a placeholder; egressctl reads the\n"
	 "value once from SOURCE (env:VAR, file:/PATH, or\n"
	 "command:CMDLINE run as the invoking user) and puts it\n"
	 "in request headers to HOST (name, *.name, **.name;\n"
	 "inspected) only; the placeholder anywhere else is\n"
	 "denied (repeatable)",
	 .call = add_secret},
	{"secret-placeholders", 0, OPT_T_STR, TO(secret_placeholders), "FILE",
	 "write the placeholders of --secret, NAME=PLACEHOLDER a\n"
	 "line, to FILE (0644) at start, for what hands them to\n"
	 "the confined processes (the daemon, which did not start\n"
	 "them: the GitHub Action's secrets input)"},
	{"upstream-ca", 0, OPT_T_STR, TO(upstream_ca), "FILE",
	 "inspected HTTPS: verify servers against the PEM\n"
	 "certificates in FILE instead of the system's store"},
	{"no-kernel-verify", 0, OPT_T_FLAG, TO(no_kverify), NULL,
	 "no kernel-verified path: connections to allowed names\n"
	 "go through the transparent proxy, even where the\n"
	 "kernel could check their SNI or Host and let them go\n"
	 "direct"},
	{"upstream-proxy", 0, OPT_T_CALL, 0, "URL",
	 "reach what the policy allows through the HTTP proxy\n"
	 "at URL, http://HOST:PORT (https:// is not supported):\n"
	 "CONNECT by name (it resolves names), plain HTTP in\n"
	 "absolute form; no direct path but for\n"
	 "--upstream-no-proxy",
	 .call = set_upstream, .flags = OPT_F_NOECHO},
	{"upstream-proxy-auth", 0, OPT_T_STR, TO(upstream_auth), "FILE",
	 "its credentials: one line user:password in FILE\n"
	 "(default: $" PROXYURL_ENV ")"},
	{"upstream-no-proxy", 0, OPT_T_CALL, 0, "LIST",
	 "what goes direct instead of through it: names (and\n"
	 "the names under them), addresses and CIDRs,\n"
	 "comma-separated (loopback and link-local always)",
	 .call = set_no_proxy},
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

const char *
target_file_path(const char *v, char *buf, size_t len)
{
	char *end;
	long n;

	if (!v || strncmp(v, "fd:", 3) || !isdigit((unsigned char)v[3]))
		return v;
	n = strtol(v + 3, &end, 10);
	if (*end || n > INT_MAX)
		return v;
	snprintf(buf, len, "/proc/self/fd/%ld", n);
	return buf;
}

int
target_opts_check(const struct target_opts *o, char *errbuf, size_t errlen)
{
	const char *comma = o->ca ? strchr(o->ca, ',') : NULL;

	if (o->ca && (!comma || comma == o->ca || !comma[1] || strchr(comma + 1, ','))) {
		snprintf(errbuf, errlen, "--ca %s: expected CERT,KEY (two PEM files)", o->ca);
		return -EINVAL;
	}
	if (!o->upstream_proxy && (o->upstream_auth || o->upstream_no_proxy)) {
		snprintf(errbuf, errlen, "%s needs --upstream-proxy",
			 o->upstream_auth ? "--upstream-proxy-auth" : "--upstream-no-proxy");
		return -EINVAL;
	}
	if (!o->ipv6 || !(o->containers_ip4 || o->tproxy_port || o->dns_port))
		return 0;
	snprintf(errbuf, errlen, "--ipv6 cannot be combined with %s",
		 o->containers_ip4 ? "--containers (the IPv6 listeners are on ::1 only)"
		 : o->tproxy_port  ? "--transparent-port (egressctl's listener serves IPv6)"
				   : "--dns-port (egressctl's responder serves IPv6)");
	return -EINVAL;
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
	if (p && target_policy_options(p, o, errbuf, errlen)) {
		policy_free(p);
		p = NULL;
	}
	/* the daemon's policies (this builds them, at start and on reloads):
	 * what it confines was not started by it, so only whoever started it
	 * can give it the placeholders (--secret-placeholders); a secret
	 * otherwise would be a rule that silently does nothing. And only
	 * --secret's: its values are read once, when a target is made, and a
	 * policy file's secrets would change on a reload under placeholders
	 * already handed out */
	for (unsigned int i = 0; p && i < policy_secret_count(p); i++) {
		const struct policy_secret *s = policy_secret_at(p, i);

		if (o->secret_placeholders && !strcmp(s->source, "--secret"))
			continue;
		snprintf(
			errbuf, errlen,
			o->secret_placeholders
				? "secret %s: the daemon takes secrets from --secret only (a "
				  "policy "
				  "file's would change on a reload under placeholders handed out)"
				: "secret %s: the daemon confines processes it did not start: give "
				  "--secret-placeholders FILE and hand them its placeholders "
				  "(docs/inspection.md)",
			s->name);
		policy_free(p);
		p = NULL;
	}
	return p;
}

int
target_policy_options(struct policy *p, const struct target_opts *o, char *errbuf, size_t errlen)
{
	const struct policy_rule *v6;
	unsigned int nv6;
	char err[300];

	policy_set_ipv6(p, o->ipv6);
	/* said, not silently void: a policy shared with hosts that give
	 * --ipv6 may have them, so they are no error */
	nv6 = o->ipv6 ? 0 : policy_allow_v6(p, &v6);
	if (nv6)
		log_warnx("%u IPv6 allow rule%s (%s, %s%s) allow%s nothing without --ipv6: IPv6 "
			  "is denied",
			  nv6, nv6 == 1 ? "" : "s", v6->text, v6->source ? v6->source : "policy",
			  nv6 > 1 ? ", ..." : "", nv6 == 1 ? "s" : "");
	for (int i = 0; i < o->nsecrets; i++) {
		const char *eq = strchr(o->secrets[i], '=');
		bool have = false;

		/* once: a policy given options twice (the daemon's) keeps its own */
		for (unsigned int k = 0; eq && k < policy_secret_count(p); k++) {
			const struct policy_secret *s = policy_secret_at(p, k);

			have |= !strcmp(s->source, "--secret") &&
				strlen(s->name) == (size_t)(eq - o->secrets[i]) &&
				!strncmp(s->name, o->secrets[i], strlen(s->name));
		}
		if (!have && policy_add_secret_arg(p, o->secrets[i], err, sizeof(err))) {
			snprintf(errbuf, errlen, "--secret %s: %s", o->secrets[i], err);
			return -EINVAL;
		}
	}
	if (policy_hooks_check(p, err, sizeof(err))) {
		snprintf(errbuf, errlen, "%s", err);
		return -EINVAL;
	}
	if (o->limited)
		policy_set_limited(p, true);
	if (policy_set_upstream(p, o->upstream_proxy != NULL, o->upstream_no_proxy, err,
				sizeof(err))) {
		snprintf(errbuf, errlen, "--upstream-no-proxy: %s", err);
		return -EINVAL;
	}
	return 0;
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
