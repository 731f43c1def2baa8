/* `egressctl run`: options as parsed by egressctl.c, and the command. */
#ifndef RUN_H
#define RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

#define RUN_MAX_RULES 256

struct rule_arg {
	enum policy_action action;
	const char *text;
};

struct run_opts {
	const char *cgroup;
	const char *user;
	struct rule_arg rules[RUN_MAX_RULES]; /* --allow/--deny, in order */
	int nrules;
	const char *policy_file;
	const char *log_file;
	const char *dns_upstream;
	uint16_t tproxy_port;	 /* an outside transparent listener instead of ours */
	uint16_t dns_port;	 /* DNS listener (until egressctl has its own) */
	uint16_t proxy_ports[2]; /* extra listeners CMD may reach */
	int nproxy;
	bool audit;		    /* record what would be denied, deny nothing */
	bool ask;		    /* ask on the terminal when no rule allows */
	int ask_timeout;	    /* seconds a question waits (default 60) */
	int max_conns;		    /* proxy connections at once (0: 4096, or what fits) */
	int idle_timeout;	    /* seconds a tunnel may be silent (0: 600) */
	int max_conns_per_process;  /* of them, one process's (0: a quarter) */
	int head_timeout;	    /* seconds for a client's head (0: 10) */
	int connect_timeout;	    /* seconds per upstream connect (0: 10) */
	int response_timeout;	    /* seconds for a plain-HTTP response head (0: 60) */
	uint64_t timeout_ns;	    /* --timeout: TERM to the cgroup after this (0: none) */
	uint64_t kill_after_ns;	    /* --kill-after: then KILL after this (0: never) */
	const char *suggest_policy; /* write the policy that allows what the run did */
	bool allow_abstract_unix;
	bool quiet;
	const char *skip_progs[8]; /* EGR_TESTING builds only */
	uint32_t socks_max;	   /* EGR_TESTING builds only */
	size_t log_buffer;	   /* EGR_TESTING builds only */
	int nskip;
	char **argv;
};

/* Builds the policy from --policy and the rules (file first, then the
 * command line). NULL with errbuf set on a bad rule or file. */
struct policy *run_build_policy(const char *policy_file, const struct rule_arg *rules, int n,
				char *errbuf, size_t errlen);

/* Runs the command; returns egressctl's exit status. */
int run_main(struct run_opts *o);

#endif /* RUN_H */
