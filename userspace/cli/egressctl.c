/* egressctl: argv -> command table -> print. `run` is parsed here and
 * carried out by run.c; `check` judges one target against a policy and
 * prints the decision with the rule that took it. No policy logic here. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "lib/duration.h"
#include "lib/log.h"
#include "policy/policy.h"
#include "cli/run.h"
#include "cli/status.h"

static void
usage_run(FILE *f)
{
	fprintf(f,
		"usage: egressctl run [OPTIONS] -- CMD [ARG]...\n"
		"\n"
		"Runs CMD inside a cgroup v2 whose every socket is decided by BPF programs.\n"
		"TCP goes through egressctl's proxy (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY are\n"
		"set for CMD; clients that ignore them are redirected to its transparent\n"
		"listener), where the policy decides. DNS (port 53, any resolver) goes to its\n"
		"DNS responder, which answers only names a rule could allow. IPv6,\n"
		"other UDP, raw/packet/ICMP sockets, SCTP, MPTCP, UDP-Lite, vsock and abstract\n"
		"unix sockets are denied; loopback reaches only servers of the same cgroup.\n"
		"Denials are printed on stderr. Without rules, everything is denied.\n"
		"\n"
		"  --allow RULE           allow RULE: host, *.host, **.host, host:port, *:port,\n"
		"                         tcp://host:port, ADDR[/LEN][:PORT], [ADDR6]:PORT; an\n"
		"                         IPv4 ADDR:PORT also opens the kernel fast path\n"
		"                         (e.g. 127.0.0.1:5432 for a database on the host)\n"
		"  --deny RULE            deny RULE (deny wins over allow)\n"
		"  --policy FILE          rules from a JSON policy file (see the README)\n"
		"  --log FILE             one JSON line per decision (- for stdout): kernel,\n"
		"                         proxy and DNS, with pid, command and cgroup\n"
		"  --audit                deny nothing: record what the policy would deny\n"
		"                         (\"would-deny\") and let it through\n"
		"  --ask                  when no rule allows a destination, ask on the\n"
		"                         terminal while it waits: [y]es once, [a]lways this\n"
		"                         run, [N]o (never asked when a deny rule matched)\n"
		"  --ask-timeout S        seconds a question waits before it is a no (60)\n"
		"  --max-conns N          proxy connections open at once (4096, or as many as\n"
		"                         the descriptor limit allows); beyond it new ones\n"
		"                         are refused (HTTP 503, SOCKS5 0x01, transparent:\n"
		"                         a reset), open ones go on\n"
		"  --max-conns-per-process N  of them, one process's (a quarter of them,\n"
		"                         but at least 64)\n"
		"  --head-timeout D       a client's request or handshake must come within D\n"
		"                         (10s); D is 30, 30s, 1.5m, 2m, 1h30m...\n"
		"  --connect-timeout D    per upstream address tried (10s; then 504)\n"
		"  --response-timeout D   plain HTTP: the response head must come within D of\n"
		"                         the request (60s; then 504)\n"
		"  --idle-timeout D       close a connection silent for D (10m)\n"
		"  --timeout D            as timeout(1): when CMD has run for D, send TERM\n"
		"                         to every process of its cgroup and exit 124\n"
		"  --kill-after D         as timeout -k: KILL every process of the cgroup\n"
		"                         (cgroup.kill) if CMD still runs D after the\n"
		"                         first TERM (the timeout's, or one egressctl got)\n"
		"  --suggest-policy FILE  at exit, write the policy (JSON) that would have\n"
		"                         allowed everything the run did\n"
		"  --cgroup NAME|PATH     NAME: <cgroup2>/egressctl/NAME (created if missing);\n"
		"                         PATH: a path under the cgroup2 mount;\n"
		"                         default: a fresh cgroup, removed at exit\n"
		"  --user USER            run CMD as USER (default: the sudo caller; CMD never\n"
		"                         runs as root unless USER is root)\n"
		"  --dns-upstream ADDR    resolver the proxy uses (default: /etc/resolv.conf)\n"
		"  --dns-port P           redirect CMD's DNS to your own resolver on\n"
		"                         127.0.0.1:P instead of egressctl's responder\n"
		"  --transparent-port P   redirect TCP to your own listener on 127.0.0.1:P\n"
		"                         instead of egressctl's\n"
		"  --proxy-port P         also let CMD reach a listener on 127.0.0.1:P (up to 2)\n"
		"  --allow-abstract-unix  run on kernels without the unix socket hooks (< 6.7),\n"
		"                         leaving abstract unix sockets unconfined\n"
		"  -q, --quiet            print neither denials nor the summary at exit\n"
		"  -v, --verbose          more diagnostics (twice: libbpf and verifier output)\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: CMD's (128+N if killed by signal N); 124 --timeout ran out\n"
		"(137 if CMD had to be killed); 125 egressctl failed; 126 CMD not executable;\n"
		"127 CMD not found.\n");
}

static void
usage_check(FILE *f)
{
	fprintf(f, "usage: egressctl check [--policy FILE] [--allow RULE]... [--deny RULE]...\n"
		   "                       [--method M] TARGET\n"
		   "\n"
		   "Prints the decision for TARGET and the rule that took it.\n"
		   "TARGET: HOST[:PORT]      HTTPS/TLS or CONNECT to HOST (port 443 if omitted)\n"
		   "        tcp://HOST:PORT  any TCP\n"
		   "        ADDR[:PORT], [ADDR6]:PORT  an address (port 443 if omitted)\n"
		   "--method M judges a plain-HTTP request with method M (port 80 if omitted).\n"
		   "Exit status: 0 allow, 1 deny, 2 bad input.\n");
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: egressctl COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  run [OPTIONS] -- CMD [ARG]...   run CMD with its egress confined\n"
		"  check [OPTIONS] TARGET          judge TARGET against a policy\n"
		"  status [-j]                     confined cgroups, their programs and counters\n"
		"  help [COMMAND]                  show help\n"
		"\n"
		"`egressctl COMMAND --help` describes each command.\n");
}

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

enum {
	OPT_CGROUP = 256,
	OPT_USER,
	OPT_ALLOW,
	OPT_DENY,
	OPT_POLICY,
	OPT_LOG,
	OPT_DNS_UPSTREAM,
	OPT_TPORT,
	OPT_DPORT,
	OPT_PPORT,
	OPT_AAU,
	OPT_SKIP,
	OPT_SOCKS_MAX,
	OPT_METHOD,
	OPT_AUDIT,
	OPT_SUGGEST,
	OPT_ASK,
	OPT_ASK_TIMEOUT,
	OPT_MAX_CONNS,
	OPT_IDLE_TIMEOUT,
	OPT_MAX_PER_PROC,
	OPT_HEAD_TIMEOUT,
	OPT_CONNECT_TIMEOUT,
	OPT_RESPONSE_TIMEOUT,
	OPT_TIMEOUT,
	OPT_KILL_AFTER,
	OPT_LOG_BUFFER,
};

static int
add_rule(struct run_opts *o, enum policy_action a, const char *text, const char *cmd)
{
	if (o->nrules == RUN_MAX_RULES) {
		log_warnx("%s: at most %d --allow/--deny rules (use --policy FILE)", cmd,
			  RUN_MAX_RULES);
		return -EINVAL;
	}
	o->rules[o->nrules].action = a;
	o->rules[o->nrules].text = text;
	o->nrules++;
	return 0;
}

static int
parse_run(int argc, char **argv, struct run_opts *o)
{
	static const struct option longopts[] = {
		{"cgroup", required_argument, NULL, OPT_CGROUP},
		{"user", required_argument, NULL, OPT_USER},
		{"allow", required_argument, NULL, OPT_ALLOW},
		{"deny", required_argument, NULL, OPT_DENY},
		{"policy", required_argument, NULL, OPT_POLICY},
		{"log", required_argument, NULL, OPT_LOG},
		{"audit", no_argument, NULL, OPT_AUDIT},
		{"ask", no_argument, NULL, OPT_ASK},
		{"ask-timeout", required_argument, NULL, OPT_ASK_TIMEOUT},
		{"max-conns", required_argument, NULL, OPT_MAX_CONNS},
		{"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
		{"max-conns-per-process", required_argument, NULL, OPT_MAX_PER_PROC},
		{"head-timeout", required_argument, NULL, OPT_HEAD_TIMEOUT},
		{"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
		{"response-timeout", required_argument, NULL, OPT_RESPONSE_TIMEOUT},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"kill-after", required_argument, NULL, OPT_KILL_AFTER},
		{"suggest-policy", required_argument, NULL, OPT_SUGGEST},
		{"dns-upstream", required_argument, NULL, OPT_DNS_UPSTREAM},
		{"transparent-port", required_argument, NULL, OPT_TPORT},
		{"dns-port", required_argument, NULL, OPT_DPORT},
		{"proxy-port", required_argument, NULL, OPT_PPORT},
		{"allow-abstract-unix", no_argument, NULL, OPT_AAU},
#ifdef EGR_TESTING
		/* leave one program out, to test the layers behind it */
		{"test-skip-prog", required_argument, NULL, OPT_SKIP},
		/* shrink the socket-record map, to test its sk_storage fallback */
		{"test-socks-max", required_argument, NULL, OPT_SOCKS_MAX},
		/* shrink the --log buffer, to test what a failing disk loses */
		{"test-log-buffer", required_argument, NULL, OPT_LOG_BUFFER},
#endif
		{"quiet", no_argument, NULL, 'q'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CGROUP:
			o->cgroup = optarg;
			break;
		case OPT_USER:
			o->user = optarg;
			break;
		case OPT_ALLOW:
		case OPT_DENY:
			if (add_rule(o, c == OPT_ALLOW ? POLICY_ALLOW : POLICY_DENY, optarg, "run"))
				return -EINVAL;
			break;
		case OPT_POLICY:
			o->policy_file = optarg;
			break;
		case OPT_LOG:
			o->log_file = optarg;
			break;
		case OPT_AUDIT:
			o->audit = true;
			break;
		case OPT_ASK:
			o->ask = true;
			break;
		case OPT_ASK_TIMEOUT:
		case OPT_MAX_CONNS:
		case OPT_MAX_PER_PROC: {
			long max = c == OPT_ASK_TIMEOUT ? 3600 : 1000000;
			char *end;
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 || v > max) {
				log_warnx("run: --%s %s: expected a number from 1 to %ld",
					  c == OPT_MAX_CONNS	 ? "max-conns"
					  : c == OPT_ASK_TIMEOUT ? "ask-timeout"
								 : "max-conns-per-process",
					  optarg, max);
				return -EINVAL;
			}
			if (c == OPT_ASK_TIMEOUT)
				o->ask_timeout = (int)v;
			else if (c == OPT_MAX_CONNS)
				o->max_conns = (int)v;
			else
				o->max_conns_per_process = (int)v;
			break;
		}
		case OPT_IDLE_TIMEOUT:
		case OPT_HEAD_TIMEOUT:
		case OPT_CONNECT_TIMEOUT:
		case OPT_RESPONSE_TIMEOUT: {
			const char *name = c == OPT_IDLE_TIMEOUT      ? "idle-timeout"
					   : c == OPT_HEAD_TIMEOUT    ? "head-timeout"
					   : c == OPT_CONNECT_TIMEOUT ? "connect-timeout"
								      : "response-timeout";
			char err[200];
			long v;

			if (duration_parse_secs(optarg, 1, 86400, &v, err, sizeof(err))) {
				log_warnx("run: --%s %s", name, err);
				return -EINVAL;
			}
			if (c == OPT_IDLE_TIMEOUT)
				o->idle_timeout = (int)v;
			else if (c == OPT_HEAD_TIMEOUT)
				o->head_timeout = (int)v;
			else if (c == OPT_CONNECT_TIMEOUT)
				o->connect_timeout = (int)v;
			else
				o->response_timeout = (int)v;
			break;
		}
		case OPT_TIMEOUT:
		case OPT_KILL_AFTER: {
			char err[200];

			if (duration_parse(optarg,
					   c == OPT_TIMEOUT ? &o->timeout_ns : &o->kill_after_ns,
					   err, sizeof(err))) {
				log_warnx("run: --%s %s",
					  c == OPT_TIMEOUT ? "timeout" : "kill-after", err);
				return -EINVAL;
			}
			break;
		}
		case OPT_SUGGEST:
			o->suggest_policy = optarg;
			break;
		case OPT_DNS_UPSTREAM:
			o->dns_upstream = optarg;
			break;
		case OPT_TPORT:
		case OPT_DPORT:
		case OPT_PPORT: {
			uint16_t p;

			if (parse_port(optarg, &p)) {
				log_warnx("run: --%s %s: expected a port from 1 to 65535",
					  c == OPT_TPORT   ? "transparent-port"
					  : c == OPT_DPORT ? "dns-port"
							   : "proxy-port",
					  optarg);
				return -EINVAL;
			}
			if (c == OPT_TPORT) {
				o->tproxy_port = p;
			} else if (c == OPT_DPORT) {
				o->dns_port = p;
			} else if (o->nproxy == 2) {
				log_warnx("run: at most 2 --proxy-port options");
				return -EINVAL;
			} else {
				o->proxy_ports[o->nproxy++] = p;
			}
			break;
		}
		case OPT_AAU:
			o->allow_abstract_unix = true;
			break;
		case OPT_SKIP:
			if (o->nskip == 8)
				return -EINVAL;
			o->skip_progs[o->nskip++] = optarg;
			break;
		case OPT_LOG_BUFFER:
			o->log_buffer = strtoul(optarg, NULL, 10);
			if (!o->log_buffer)
				return -EINVAL;
			break;
		case OPT_SOCKS_MAX:
			o->socks_max = (uint32_t)strtoul(optarg, NULL, 10);
			if (!o->socks_max)
				return -EINVAL;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			log_verbose++;
			break;
		case 'h':
			usage_run(stdout);
			exit(0);
		case ':':
			log_warnx("run: option %s needs an argument", argv[optind - 1]);
			return -EINVAL;
		default:
			log_warnx("run: unknown option %s (see egressctl run --help)",
				  argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind >= argc) {
		log_warnx("run: no command given (egressctl run [OPTIONS] -- CMD [ARG]...)");
		return -EINVAL;
	}
	o->argv = argv + optind;
	return 0;
}

static int
cmd_run(int argc, char **argv)
{
	struct run_opts *o = calloc(1, sizeof(*o));
	int rc;

	if (!o)
		return EGR_EXIT_ERROR;
	if (parse_run(argc, argv, o)) {
		free(o);
		return EGR_EXIT_ERROR;
	}
	rc = run_main(o);
	free(o);
	return rc;
}

/* TARGET of `check` -> query. Returns 0 or -EINVAL. */
static int
parse_target(const char *t, const char *method, struct policy_query *q, struct sockaddr_storage *ss,
	     char *host, size_t hostlen)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	const char *colon, *name = t;
	char buf[300];
	uint16_t port = method ? 80 : 443;
	bool tcp = false;

	if (!strncmp(t, "tcp://", 6)) {
		tcp = true;
		name = t + 6;
	}
	if (snprintf(buf, sizeof(buf), "%s", name) >= (int)sizeof(buf))
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
	q->proto = tcp ? POLICY_P_TCP : method ? POLICY_P_HTTP : POLICY_P_TLS;
	q->method = method;
	return 0;
}

static int
cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"allow", required_argument, NULL, OPT_ALLOW},
		{"deny", required_argument, NULL, OPT_DENY},
		{"policy", required_argument, NULL, OPT_POLICY},
		{"method", required_argument, NULL, OPT_METHOD},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct run_opts *o = calloc(1, sizeof(*o));
	const char *method = NULL;
	struct sockaddr_storage ss;
	struct policy_decision d;
	struct policy_query q;
	struct policy *p = NULL;
	char errbuf[512], host[300], words[400];
	int c, rc = 2;

	if (!o)
		return 2;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ALLOW:
		case OPT_DENY:
			if (add_rule(o, c == OPT_ALLOW ? POLICY_ALLOW : POLICY_DENY, optarg,
				     "check"))
				goto out;
			break;
		case OPT_POLICY:
			o->policy_file = optarg;
			break;
		case OPT_METHOD:
			method = optarg;
			break;
		case 'h':
			usage_check(stdout);
			rc = 0;
			goto out;
		case ':':
			log_warnx("check: option %s needs an argument", argv[optind - 1]);
			goto out;
		default:
			log_warnx("check: unknown option %s (see egressctl check --help)",
				  argv[optind - 1]);
			goto out;
		}
	}
	if (optind != argc - 1) {
		log_warnx("check: expected one TARGET (see egressctl check --help)");
		goto out;
	}
	if (parse_target(argv[optind], method, &q, &ss, host, sizeof(host))) {
		log_warnx("check: %s: expected HOST[:PORT], tcp://HOST:PORT or ADDR[:PORT]",
			  argv[optind]);
		goto out;
	}
	p = run_build_policy(o->policy_file, o->rules, o->nrules, errbuf, sizeof(errbuf));
	if (!p) {
		log_warnx("check: %s", errbuf);
		goto out;
	}
	if (policy_decide(p, &q, &d)) {
		log_warnx("check: cannot judge %s", argv[optind]);
		goto out;
	}
	printf("%s: %s%s:%u%s%s \u2014 ", d.action == POLICY_ALLOW ? "allow" : "deny",
	       q.proto == POLICY_P_TCP ? "tcp://" : "", host, q.port, method ? " " : "",
	       method ? method : "");
	if (d.reason == POLICY_R_METHOD && !method)
		printf("its rule allows only some plain-HTTP methods (try --method)\n");
	else
		printf("%s%s\n", policy_reason_words(&d, method, words, sizeof(words)),
		       d.reason == POLICY_R_LOCAL ? " (name it in a rule to allow it)" : "");
	rc = d.action == POLICY_ALLOW ? 0 : 1;
out:
	policy_free(p);
	free(o);
	return rc;
}

int
main(int argc, char **argv)
{
	log_init("egressctl");
	if (argc < 2) {
		usage(stderr);
		return EGR_EXIT_ERROR;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "check"))
		return cmd_check(argc - 1, argv + 1);
	if (!strcmp(argv[1], "status"))
		return status_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		if (argc > 2 && !strcmp(argv[2], "run"))
			usage_run(stdout);
		else if (argc > 2 && !strcmp(argv[2], "check"))
			usage_check(stdout);
		else
			usage(stdout);
		return 0;
	}
	log_warnx("unknown command '%s' (see egressctl help)", argv[1]);
	return EGR_EXIT_ERROR;
}
