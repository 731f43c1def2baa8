// SPDX-License-Identifier: Apache-2.0
/* The options every target takes (policy, log, limits, timeouts,
 * listeners, unix sockets): one table, shared by `run` and the daemon (its
 * config file's keys are the same names), and the policy they make. */
#ifndef CONFINE_OPTIONS_H
#define CONFINE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/opts.h"
#include "policy/policy.h"

#define TARGET_MAX_RULES       256
#define TARGET_MAX_UNIX	       32 /* --allow-unix, and --deny-unix */
#define TARGET_MAX_DIRECT_NETS 64 /* dockerd's networks, direct */
#define TARGET_MAX_SECRETS     32 /* --secret (SECRET_MAX in a policy) */

struct rule_arg {
	enum policy_action action;
	const char *text;
};

struct target_opts {
	struct rule_arg rules[TARGET_MAX_RULES]; /* --allow/--deny, in order */
	int nrules;
	const char *policy_file;
	const char *log_file;
	const char *dns_upstream;
	const char *suggest_policy;  /* write the policy that allows what was done */
	const char *summary_file;    /* --summary: the summary appended at exit / detach */
	int summary_format;	     /* --summary-format: enum summary_format */
	int log_format;		     /* --log-format: enum audit_fmt */
	const char *log_headers[16]; /* --log-header "Name: value" (OTLP) */
	int nlog_headers;
	const char *log_ca;	 /* --log-ca: the OTLP collector's CA */
	uint16_t tproxy_port;	 /* an outside transparent listener instead of ours */
	uint16_t dns_port;	 /* an outside DNS listener instead of ours */
	uint16_t proxy_ports[2]; /* extra listeners CMD may reach */
	int nproxy;
	bool audit;		  /* record what would be denied, deny nothing */
	bool ipv6;		  /* --ipv6: native IPv6 redirected to [::1] and judged */
	bool allow_abstract_unix; /* kernels without the unix hooks */
	bool no_kverify;	  /* no kernel-verified path: allowed names via the proxy */
	/* --upstream-proxy URL (lib/proxyurl.h), its credentials file, and the
	 * destinations that go direct instead (policy_set_upstream()) */
	const char *upstream_proxy;
	const char *upstream_auth;
	const char *upstream_no_proxy;
	bool limited;		 /* --limited: every allowed host read-only (the policy's) */
	const char *ca;		 /* --ca CERT,KEY: the inspection CA (NULL: one made per run) */
	const char *upstream_ca; /* --upstream-ca FILE: what inspected upstreams are verified by */
	/* unix sockets of services that start work outside (unixsvc.h) */
	const char *allow_unix[TARGET_MAX_UNIX];
	int nallow_unix;
	const char *deny_unix[TARGET_MAX_UNIX];
	int ndeny_unix;
	const char *unix_root;	   /* EGR_TESTING builds only: the defaults under it */
	int max_conns;		   /* proxy connections at once (0: 4096, or what fits) */
	int max_conns_per_process; /* of them, one process's (0: a quarter) */
	int idle_timeout;	   /* seconds a tunnel may be silent (0: 600) */
	int head_timeout;	   /* seconds for a client's head (0: 10) */
	int connect_timeout;	   /* seconds per upstream connect (0: 10) */
	int response_timeout;	   /* seconds for a plain-HTTP response head (0: 60) */
	uint32_t containers_ip4;   /* daemon --containers: other netns reach us here (0: off) */
	int map_entries;	   /* --map-entries: the per-connection maps' room (0: 65536) */
	const char *skip_progs[8]; /* EGR_TESTING builds only */
	int nskip;
	uint32_t socks_max; /* EGR_TESTING builds only */
	size_t log_buffer;  /* EGR_TESTING builds only */
	int pipes_max;	    /* EGR_TESTING builds only */
	/* --secret NAME=SOURCE@HOST[,HOST] (policy/secret.h), in order */
	const char *secrets[TARGET_MAX_SECRETS];
	int nsecrets;
	/* --secret-placeholders FILE: the secrets' placeholders written there
	 * at start, NAME=PLACEHOLDER a line, for whoever hands them to what is
	 * confined (the daemon's processes were not started by it) */
	const char *secret_placeholders;
	/* not an option: daemon --docker's dockerd target (docker.c), whose
	 * embedded DNS answers other cgroups' sockets on their loopback */
	bool local_udp_any;
	/* not an option: dockerd's target: of the IPv4 networks its allow
	 * rules name without a port, these ("198.19.6.0/24": its networks'
	 * subnets) go direct for TCP (egr_fast_net), not through the proxy,
	 * which judges plain HTTP by its Host ("localhost:8080" behind the
	 * userland proxy); not its other networks (a CDN's range is judged
	 * request by request, or a forged Host would go along) */
	const char *direct_nets[TARGET_MAX_DIRECT_NETS];
	int ndirect_nets;
	/* not an option: the targets of a daemon that follows dockerd
	 * (docker.c), whose job's containers may reach each other (egr_peer
	 * looked up: daemon/peers.c) */
	bool peers;
};

/* A file option's value as the path its reader opens: fd:N (a descriptor
 * given, as the service's run holds the files its client opened) is
 * /proc/self/fd/N, the same file; any other value as it is. */
const char *target_file_path(const char *v, char *buf, size_t len);

/* Options that cannot go together (--ipv6 with --containers,
 * --transparent-port or --dns-port; --upstream-proxy-auth or
 * --upstream-no-proxy without --upstream-proxy), or that do not parse (--ca
 * without its comma): -EINVAL with errbuf set, else 0. */
int target_opts_check(const struct target_opts *o, char *errbuf, size_t errlen);

/* The rows of every target option, offsets into struct target_opts. */
extern const struct opt target_opt_table[];

/* $EGRESSCTL_POLICY for --policy and $EGRESSCTL_LOG for --log, where the
 * command line gave none. */
void target_env_defaults(struct target_opts *o);

/* Builds the policy from --policy and the rules (file first, then the
 * command line). NULL with errbuf set on a bad rule or file. */
struct policy *target_build_policy(const char *policy_file, const struct rule_arg *rules, int n,
				   char *errbuf, size_t errlen);

/* What the options say to a policy besides its rules: --ipv6, and the
 * upstream proxy's routes (policy_set_upstream()). 0, or -errno with
 * errbuf set. */
int target_policy_options(struct policy *p, const struct target_opts *o, char *errbuf,
			  size_t errlen);

/* A rule added at runtime (egressctl allow --cgroup X --for D RULE). */
struct target_rule {
	enum policy_action action;
	char text[300];
	uint64_t expires; /* CLOCK_MONOTONIC seconds; 0: until the daemon stops */
};

/* The policy of o (its file, then its rules) and the runtime rules extra.
 * Pure: touches nothing but the files, so a thread may build it while the
 * event loop serves (a 100,000-rule policy takes tens of milliseconds).
 * The daemon's: a policy with secrets is refused. NULL with errbuf set. */
struct policy *target_policy_build(const struct target_opts *o, const struct target_rule *extra,
				   int nextra, char *errbuf, size_t errlen);

#endif /* CONFINE_OPTIONS_H */
