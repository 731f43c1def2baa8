// SPDX-License-Identifier: Apache-2.0
/* egressctl: argv -> command table -> the command. Each command parses
 * its options from a table (opts.h) that also writes its --help; `run` is
 * carried out by run.c, `status` by status.c; `check` judges one target
 * against a policy and prints the decision with the rule that took it.
 * Exit status: usage errors 2 (EGR_EXIT_USAGE), runtime failures 125. No
 * policy logic here. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/libbpf.h>

#include "lib/jsonx.h"
#include "egress_abi.h"
#include "cli/ctl.h"
#include "lib/opts.h"
#include "cli/run.h"
#include "cli/status.h"
#include "cli/sudo.h"
#include "cli/userrun.h"
#include "confine/target.h"
#include "daemon/daemon.h"
#include "kernel/loader.h" /* EGR_LINUX_* */
#include "lib/log.h"
#include "lib/proxyurl.h"
#include "parse/path.h"
#include "policy/policy.h"
#include "policy/secret.h"

#ifndef EGR_VERSION
#define EGR_VERSION "unknown" /* the Makefile passes git describe's */
#endif

static int
parse_port(const char *s, uint16_t *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > 65535)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

/* A URL's authority as `check` reads it: "http://" and "https://" (any
 * case) give the protocol and the default port; the path, query and
 * fragment end it and are not judged (--path judges one); user info before
 * an '@' is dropped. *method is "GET" for http:// without --method; with
 * https:// and --method the request is judged as inside inspected TLS.
 * Returns the scheme's length (0: not a URL), or -EINVAL. */
static int
parse_url(const char *t, const char **method, char *buf, size_t buflen)
{
	size_t skip = !strncasecmp(t, "http://", 7) ? 7 : !strncasecmp(t, "https://", 8) ? 8 : 0;
	const char *auth = t + skip, *at;
	size_t len;

	if (!skip)
		return 0;
	if (skip == 7 && !*method)
		*method = "GET";
	len = strcspn(auth, "/?#");
	at = memrchr(auth, '@', len);
	if (at) {
		len -= (size_t)(at + 1 - auth);
		auth = at + 1;
	}
	if (!len || len >= buflen)
		return -EINVAL;
	memcpy(buf, auth, len);
	buf[len] = 0;
	return (int)skip;
}

/* TARGET of `check` -> query; *method may become "GET" (an http:// URL).
 * Returns 0 or -EINVAL. */
static int
parse_target(const char *t, const char **method, struct policy_query *q,
	     struct sockaddr_storage *ss, char *host, size_t hostlen)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	const char *colon, *name = t;
	char buf[300];
	uint16_t port;
	bool tcp = false;
	int url = parse_url(t, method, buf, sizeof(buf));

	if (url < 0)
		return url;
	/* a request (--method) is plain HTTP's, or inside an inspected https:// */
	port = url == 8 || (!url && !*method) ? 443 : 80;
	if (!strncmp(t, "tcp://", 6)) {
		tcp = true;
		name = t + 6;
	}
	if (!url && snprintf(buf, sizeof(buf), "%s", name) >= (int)sizeof(buf))
		return -EINVAL;
	if (buf[0] == '[') {
		char *close = strchr(buf, ']');

		if (!close)
			return -EINVAL;
		*close = 0;
		if (close[1] == ':') {
			if (parse_port(close + 2, &port))
				return -EINVAL;
		} else if (close[1]) {
			return -EINVAL;
		} else if (tcp) {
			return -EINVAL;
		}
		memmove(buf, buf + 1, strlen(buf + 1) + 1);
	} else if ((colon = strrchr(buf, ':')) && strchr(buf, ':') == colon) {
		if (parse_port(colon + 1, &port))
			return -EINVAL;
		buf[colon - buf] = 0;
	} else if (tcp) {
		return -EINVAL; /* tcp:// needs a port */
	}
	memset(ss, 0, sizeof(*ss));
	memset(q, 0, sizeof(*q));
	if (inet_pton(AF_INET, buf, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		q->addr = (struct sockaddr *)ss;
		if (snprintf(host, hostlen, "%s", buf) >= (int)hostlen)
			return -EINVAL;
	} else if (inet_pton(AF_INET6, buf, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		q->addr = (struct sockaddr *)ss;
		if (snprintf(host, hostlen, "[%s]", buf) >= (int)hostlen)
			return -EINVAL;
	} else {
		if (policy_host_normalize(buf, false, host, hostlen))
			return -EINVAL;
		q->host = host;
	}
	q->port = port;
	q->proto = tcp ? POLICY_P_TCP : *method ? POLICY_P_HTTP : POLICY_P_TLS;
	q->method = *method;
	return 0;
}

struct check_opts {
	struct target_opts t; /* only its rules, policy file, --ipv6 and --limited */
	const char *method;
	const char *path;
	bool json;
};

#define CO(field) offsetof(struct check_opts, field)

/* The target table's rule rows, then check's own. */
static const struct opt check_opt_table[] = {
	{"method", 0, OPT_T_STR, CO(method), "M",
	 "judge a plain-HTTP request with method M (port 80 if\n"
	 "TARGET has none), or one inside inspected HTTPS"},
	{"path", 0, OPT_T_STR, CO(path), "P",
	 "... for path P (as path rules see it: normalised;\n"
	 "with no --method, GET)"},
	{"json", 'j', OPT_T_FLAG, CO(json), NULL, "the decision as one JSON object"},
	{"help", 'h', OPT_T_HELP, 0, NULL, "this text"},
	{0},
};

/* check takes only the policy rows of the target options. */
static const struct opt *
check_policy_rows(struct opt *buf, size_t n)
{
	size_t k = 0;

	for (const struct opt *o = target_opt_table; o->name && k + 1 < n; o++)
		if (!strcmp(o->name, "allow") || !strcmp(o->name, "deny") ||
		    !strcmp(o->name, "policy") || !strcmp(o->name, "ipv6") ||
		    !strcmp(o->name, "upstream-proxy") || !strcmp(o->name, "upstream-no-proxy") ||
		    !strcmp(o->name, "limited") || !strcmp(o->name, "secret"))
			buf[k++] = *o;
	memset(&buf[k], 0, sizeof(buf[k]));
	return buf;
}

static void
usage_check(FILE *f)
{
	struct opt rows[10];
	struct check_opts o;
	const struct opt_set sets[] = {{check_policy_rows(rows, 10), &o.t}, {check_opt_table, &o}};

	fprintf(f, "usage: egressctl check [OPTIONS] TARGET\n"
		   "\n"
		   "Prints the decision for TARGET and the rule that took it.\n"
		   "TARGET: HOST[:PORT]      HTTPS/TLS or CONNECT to HOST (port 443 if omitted)\n"
		   "        https://HOST[:PORT][/PATH]  the same (the path is not judged)\n"
		   "        http://HOST[:PORT][/PATH]   a plain-HTTP request (port 80; GET\n"
		   "                         unless --method)\n"
		   "        tcp://HOST:PORT  any TCP\n"
		   "        ADDR[:PORT], [ADDR6]:PORT  an address (port 443 if omitted)\n"
		   "\n");
	opts_help(f, sets, 2);
	fprintf(f, "\nExit status: 0 allow, 1 deny, 2 bad input.\n");
}
/* The path an allowed q takes under `run`: "fast-path" (a tcp:// rule, or
 * an exact ADDR:PORT rule, IPv6 ones with --ipv6: direct, the address
 * alone), "kernel-verified" (TLS where policy_kv_ports says: direct, the
 * kernel checks the SNI; IPv4 answers), "proxy" (plain HTTP always:
 * judged per request), or "upstream-proxy" (with --upstream-proxy, what
 * its routes do not send direct: through egressctl's proxy, then the
 * upstream). */
static const char *
check_path(const struct policy *p, const struct policy_query *q, bool ipv6)
{
	struct policy_decision d;
	uint16_t ports[16];
	int n;

	if (policy_via_upstream(p, q->host, q->addr))
		return "upstream-proxy";
	if (!q->host)
		return target_fast_rule(p, ipv6, q->addr) ? "fast-path" : "proxy";
	if (policy_tcp_rule(p, q->host, q->port))
		return "fast-path";
	if (q->proto != POLICY_P_TLS || policy_decide(p, q, &d) || d.action != POLICY_ALLOW ||
	    d.inspect)
		return "proxy";
	n = policy_kv_ports(p, q->host, ports, 16);
	for (int i = 0; i < n; i++)
		if (ports[i] == q->port)
			return "kernel-verified";
	return "proxy";
}

static const char *
path_words(const char *path)
{
	if (!strcmp(path, "fast-path"))
		return "kernel fast path (direct; the address alone is checked)";
	if (!strcmp(path, "upstream-proxy"))
		return "upstream proxy (egressctl's proxy judges each connection or request, "
		       "then reaches it through --upstream-proxy, by name; no direct path)";
	if (!strcmp(path, "kernel-verified"))
		return "kernel-verified (direct once egressctl's DNS answered the name; the "
		       "kernel checks the TLS SNI; proxy-aware clients too where run's "
		       "NO_PROXY names the rule)";
	return "proxy (egressctl's proxy judges each connection or request)";
}

/* The deciding rule's header hooks, as check says them. */
static void
print_hooks(const struct policy_hooks *h)
{
	for (unsigned int i = 0; i < h->nstrip; i++)
		printf("  hook: strips %s\n", h->strip[i]);
	for (unsigned int i = 0; i < h->nset; i++)
		printf("  hook: sets \"%s: %s<value of secret %s>\"%s\n", h->set[i].name,
		       h->set[i].prefix, h->set[i].secret,
		       h->set[i].placeholder ? " (only when the request sends it as "
					       "its placeholder, once)"
					     : "");
}

static json_t *
hooks_json(const struct policy_hooks *h)
{
	json_t *o = json_object(), *strip = json_array(), *set = json_array();

	for (unsigned int i = 0; strip && i < h->nstrip; i++)
		json_array_append_new(strip, json_string(h->strip[i]));
	for (unsigned int i = 0; set && i < h->nset; i++) {
		json_t *e = json_object();

		if (!e)
			continue;
		jsonx_set_str(e, "header", h->set[i].name);
		jsonx_set_str(e, "secret", h->set[i].secret);
		jsonx_set_str(e, "prefix", h->set[i].prefix);
		jsonx_set_bool(e, "require_placeholder", h->set[i].placeholder);
		json_array_append_new(set, e);
	}
	if (o) {
		json_object_set_new(o, "strip_headers", strip ? strip : json_null());
		json_object_set_new(o, "set_headers", set ? set : json_null());
	} else {
		json_decref(strip);
		json_decref(set);
	}
	return o;
}

static void
print_check_json(const struct policy *p, const struct policy_decision *d,
		 const struct policy_query *q, const char *host, const char *words,
		 const char *path)
{
	json_t *o = json_object();
	char *out;

	if (!o)
		return;
	jsonx_set_str(o, "decision", d->action == POLICY_ALLOW ? "allow" : "deny");
	jsonx_set_str(o, "host", host);
	jsonx_set_int(o, "port", q->port);
	jsonx_set_str(o, "protocol",
		      q->proto == POLICY_P_TCP	  ? "tcp"
		      : q->proto == POLICY_P_HTTP ? "http"
						  : "tls");
	if (q->method)
		jsonx_set_str(o, "method", q->method);
	if (q->path)
		jsonx_set_str(o, "request_path", q->path);
	jsonx_set_str(o, "reason", words);
	if (d->rule)
		jsonx_set_str(o, "rule", d->rule->text);
	else
		jsonx_set_null(o, "rule");
	if (d->rule && d->rule->comment)
		jsonx_set_str(o, "comment", d->rule->comment);
	if (path)
		jsonx_set_str(o, "path", path);
	else
		jsonx_set_null(o, "path");
	jsonx_set_bool(o, "inspected", d->inspect);
	if (d->rule && d->rule->hooks)
		json_object_set_new(o, "hooks", hooks_json(d->rule->hooks));
	if (policy_secret_count(p)) {
		json_t *a = json_array();

		/* the secrets whose values an inspected request to it gets */
		for (unsigned int i = 0; a && i < policy_secret_count(p); i++)
			if (policy_secret_host(policy_secret_at(p, i), host))
				json_array_append_new(a, json_string(policy_secret_at(p, i)->name));
		if (a)
			json_object_set_new(o, "secrets", a);
	}
	out = jsonx_line(o);
	if (out)
		printf("%s\n", out);
	free(out);
	json_decref(o);
}

/* --path P as requests are judged: normalised, without its query. 0, or
 * -EINVAL (said). */
static int
check_request_path(const char *p, char *out, size_t len)
{
	size_t plen;

	if (http_path_normalize(p, out, len, &plen) != PARSE_DONE) {
		log_warnx("check: --path %s: expected a request path (/a/b)", p);
		return -EINVAL;
	}
	out[plen] = 0;
	return 0;
}

static int
cmd_check(int argc, char **argv)
{
	struct check_opts *o = calloc(1, sizeof(*o));
	struct opt rows[10];
	char npath[2048];
	struct sockaddr_storage ss;
	struct policy_decision d;
	struct policy_query q;
	struct policy *p = NULL;
	char errbuf[512], host[300], words[400];
	const char *path;
	int first, rc = EGR_EXIT_USAGE;

	if (!o)
		return EGR_EXIT_ERROR;
	{
		const struct opt_set sets[] = {{check_policy_rows(rows, 10), &o->t},
					       {check_opt_table, o}};

		switch (opts_parse("check", sets, 2, argc, argv, false, &first)) {
		case OPTS_HELP:
			usage_check(stdout);
			rc = 0;
			goto out;
		case OPTS_USAGE:
			goto out;
		}
	}
	if (first != argc - 1) {
		log_warnx("check: expected one TARGET (see egressctl check --help)");
		goto out;
	}
	target_env_defaults(&o->t);
	if (o->path && !o->method)
		o->method = "GET";
	if (parse_target(argv[first], &o->method, &q, &ss, host, sizeof(host))) {
		log_warnx("check: %s: expected HOST[:PORT], http(s)://HOST[:PORT][/PATH], "
			  "tcp://HOST:PORT or ADDR[:PORT]",
			  argv[first]);
		goto out;
	}
	p = target_build_policy(o->t.policy_file, o->t.rules, o->t.nrules, errbuf, sizeof(errbuf));
	if (!p) {
		log_warnx("check: %s", errbuf);
		goto out;
	}
	/* what run and the daemon do, rules or not: IPv6, the upstream's routes */
	if (target_opts_check(&o->t, errbuf, sizeof(errbuf)) ||
	    target_policy_options(p, &o->t, errbuf, sizeof(errbuf))) {
		log_warnx("check: %s", errbuf);
		goto out;
	}
	if (o->path && check_request_path(o->path, npath, sizeof(npath)))
		goto out;
	q.path = o->path ? npath : NULL;
	if (policy_decide(p, &q, &d)) {
		log_warnx("check: cannot judge %s", argv[first]);
		rc = EGR_EXIT_ERROR;
		goto out;
	}
	if (d.reason == POLICY_R_METHOD && !o->method)
		snprintf(words, sizeof(words),
			 "its rule allows only some plain-HTTP methods (try "
			 "--method)");
	else
		snprintf(words, sizeof(words), "%s%s",
			 policy_reason_words(&d, o->method, errbuf, sizeof(errbuf)),
			 d.reason == POLICY_R_LOCAL ? " (name it in a rule to allow it)" : "");
	path = d.action == POLICY_ALLOW ? check_path(p, &q, o->t.ipv6) : NULL;
	if (o->json)
		print_check_json(p, &d, &q, host, words, path);
	else
		printf("%s: %s%s:%u%s%s%s%s \u2014 %s\n",
		       d.action == POLICY_ALLOW ? "allow" : "deny",
		       q.proto == POLICY_P_TCP ? "tcp://" : "", host, q.port, o->method ? " " : "",
		       o->method ? o->method : "", q.path ? " " : "", q.path ? q.path : "", words);
	if (path && !o->json)
		printf("  path: %s\n", path_words(path));
	if (d.rule && d.rule->comment && !o->json)
		printf("  comment: %s\n", d.rule->comment);
	if (d.inspect && !o->json)
		printf("  inspected: HTTPS to it is ended by egressctl with the run's CA, and each "
		       "request inside is judged (check --method M --path P)\n");
	for (unsigned int i = 0; !o->json && i < policy_secret_count(p); i++) {
		const struct policy_secret *sec = policy_secret_at(p, i);

		if (policy_secret_host(sec, host))
			printf("  secret: %s (%s): its placeholder becomes the value in the "
			       "headers "
			       "of inspected requests to it\n",
			       sec->name, sec->from);
	}
	if (d.rule && d.rule->hooks && !o->json)
		print_hooks(d.rule->hooks);
	rc = d.action == POLICY_ALLOW ? 0 : 1;
out:
	policy_free(p);
	free(o);
	return rc;
}

#ifdef EGR_TESTING
/* Options of the test build (helpers/egressctl-test) only, for tests of
 * the layers behind each program and of what a failing disk loses. */
static int
add_skip(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct target_opts *t = dst;

	(void)o;
	if (t->nskip == 8) {
		snprintf(err, errlen, "at most 8");
		return -EINVAL;
	}
	t->skip_progs[t->nskip++] = arg;
	return 0;
}

static int
set_size(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct target_opts *t = dst;
	unsigned long v = strtoul(arg, NULL, 10);

	if (!v) {
		snprintf(err, errlen, "expected a positive number");
		return -EINVAL;
	}
	if (!strcmp(o->name, "test-socks-max"))
		t->socks_max = (uint32_t)v;
	else if (!strcmp(o->name, "test-pipes"))
		t->pipes_max = v > 1024 ? 1024 : (int)v;
	else
		t->log_buffer = v;
	return 0;
}

static const struct opt test_opt_table[] = {
	/* leave one program out, to test the layers behind it */
	{"test-skip-prog", 0, OPT_T_CALL, 0, "NAME", NULL, .call = add_skip, .flags = OPT_F_HIDDEN},
	/* shrink the socket-record map, to test its sk_storage fallback */
	{"test-socks-max", 0, OPT_T_CALL, 0, "N", NULL, .call = set_size, .flags = OPT_F_HIDDEN},
	/* fewer relay pipes than the descriptor budget, to test the queue */
	{"test-pipes", 0, OPT_T_CALL, 0, "N", NULL, .call = set_size, .flags = OPT_F_HIDDEN},
	/* shrink the --log buffer, to test what a failing disk loses */
	{"test-log-buffer", 0, OPT_T_CALL, 0, "BYTES", NULL, .call = set_size,
	 .flags = OPT_F_HIDDEN},
	/* the default unix service sockets under DIR (stand-ins of the tests) */
	{"test-unix-root", 0, OPT_T_STR, offsetof(struct target_opts, unix_root), "DIR", NULL,
	 .flags = OPT_F_HIDDEN},
	{0},
};
#define TEST_OPTS test_opt_table
#else
#define TEST_OPTS NULL
#endif

static int
cmd_run(int argc, char **argv)
{
	struct run_opts *o = calloc(1, sizeof(*o));
	int rc;

	if (!o)
		return EGR_EXIT_ERROR;
	if (geteuid() != 0 && userrun_service()) { /* through the service (cli/client.c) */
		free(o);
		return userrun_client(argc, argv);
	}
	switch (run_parse(argc, argv, o, TEST_OPTS)) {
	case OPTS_HELP:
		run_usage(stdout);
		rc = 0;
		break;
	case OPTS_USAGE:
		rc = EGR_EXIT_USAGE;
		break;
	default:
		target_env_defaults(&o->t);
		rc = run_main(o);
	}
	free(o);
	return rc;
}

/* The daemon, its user socket handed run's check (cli/userrun.c). */
static int
cmd_daemon(int argc, char **argv)
{
	usersock_set_check(userrun_check);
	return daemon_main(argc, argv);
}

static void usage_version(FILE *f);

static int
cmd_version(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage_version(stdout);
		return 0;
	}
	if (argc > 1) {
		log_warnx("version: %s %s: takes none (see egressctl version --help)",
			  argv[1][0] == '-' ? "unknown option" : "unexpected argument", argv[1]);
		return EGR_EXIT_USAGE;
	}
	printf("egressctl %s (BPF ABI %d, libbpf %u.%u)\n", EGR_VERSION, EGR_ABI_VERSION,
	       libbpf_major_version(), libbpf_minor_version());
	printf("needs Linux %s or later; %s for the daemon; %s for the unix socket hooks\n",
	       EGR_LINUX_MIN, EGR_LINUX_DAEMON, EGR_LINUX_UNIX);
	return 0;
}

static int cmd_help(int argc, char **argv);

struct command {
	const char *name;
	const char *synopsis; /* after the name, in the command list */
	const char *summary;
	int (*fn)(int argc, char **argv); /* argv[0] is the command's name */
	void (*usage)(FILE *f);		  /* its --help */
};

static void usage_help(FILE *f);
#define CTL_USAGE(name)                                                                            \
	static void usage_##name(FILE *f)                                                          \
	{                                                                                          \
		ctl_usage(#name, f);                                                               \
	}
CTL_USAGE(reload)
CTL_USAGE(allow)
CTL_USAGE(deny)
CTL_USAGE(log)
CTL_USAGE(summary)
CTL_USAGE(detach)

static const struct command commands[] = {
	{"run", "[OPTIONS] -- CMD [ARG]...", "run CMD with its egress confined", cmd_run,
	 run_usage},
	{"check", "[OPTIONS] TARGET", "judge TARGET against a policy", cmd_check, usage_check},
	{"daemon", "[--config FILE] [--cgroup|--unit|--pid X]...",
	 "confine running cgroups (CI runners), live reload", cmd_daemon, daemon_usage},
	{"sudo", "[--user USER] -- CMD [ARG]...",
	 "run CMD as root inside the caller's confinement (a CI job's sudo)", sudo_main,
	 sudo_usage},
	{"status", "[-j]", "confined cgroups, their programs and counters", status_main,
	 status_usage},
	{"reload", "", "make the daemon read its config and policies again", ctl_main,
	 usage_reload},
	{"allow", "[--cgroup X] [--for D] RULE", "add a rule to a daemon's target at runtime",
	 ctl_main, usage_allow},
	{"deny", "[--cgroup X] [--for D] RULE", "add a deny rule at runtime", ctl_main, usage_deny},
	{"log", "[-f] [--cgroup X]", "the daemon's decisions, live with -f", ctl_main, usage_log},
	{"summary", "[--cgroup X] [--format F]", "what a daemon's target tried (markdown, json)",
	 ctl_main, usage_summary},
	{"detach", "--cgroup X | --all", "lift confinement; nothing of egressctl's stays", ctl_main,
	 usage_detach},
	{"version", "", "egressctl's version, its BPF ABI and libbpf's", cmd_version,
	 usage_version},
	{"help", "[COMMAND]", "show help", cmd_help, usage_help},
	{0},
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: egressctl COMMAND [ARGS]\n"
		   "       egressctl --version | --help\n"
		   "\n"
		   "commands:\n");
	for (const struct command *c = commands; c->name; c++)
		fprintf(f, "  %-9s %s\n", c->name, c->summary);
	fprintf(f, "\n"
		   "`egressctl COMMAND --help` describes each command.\n"
		   "Exit status: 2 for a usage error, 125 when egressctl fails; run exits with\n"
		   "CMD's status, check with 0 (allow) or 1 (deny).\n");
}

static void
usage_version(FILE *f)
{
	fprintf(f, "usage: egressctl version\n"
		   "       egressctl --version\n"
		   "\n"
		   "Prints egressctl's version (git describe at build time), the version of the\n"
		   "BPF ABI between its programs and itself, and libbpf's; then the kernels it\n"
		   "needs.\n"
		   "\n"
		   "  -h, --help             this text\n");
}

static void
usage_help(FILE *f)
{
	fprintf(f, "usage: egressctl help [COMMAND]\n"
		   "\n"
		   "Without COMMAND, the list of commands; with one, its --help.\n");
}

static const struct command *
find_command(const char *name)
{
	for (const struct command *c = commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static int
cmd_help(int argc, char **argv)
{
	const struct command *c;

	if (argc == 1) {
		usage(stdout);
		return 0;
	}
	if (argc > 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		if (argc == 2) {
			usage_help(stdout);
			return 0;
		}
		log_warnx("help: expected at most one COMMAND");
		return EGR_EXIT_USAGE;
	}
	c = find_command(argv[1]);
	if (!c) {
		log_warnx("help: no command '%s' (see egressctl help)", argv[1]);
		return EGR_EXIT_USAGE;
	}
	c->usage(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	const struct command *c;

	/* credentials in the environment: kept here, out of every child's */
	proxyurl_take_env();
	log_init("egressctl");
	if (argc < 2) {
		usage(stderr);
		return EGR_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(1, argv + 1);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		return cmd_version(1, argv + 1);
	c = find_command(argv[1]);
	if (!c) {
		log_warnx("unknown command '%s' (see egressctl help)", argv[1]);
		return EGR_EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}
