// SPDX-License-Identifier: Apache-2.0
/* What a target reports about itself: its status document (command,
 * policy, proxy and DNS counters) on its status socket,
 * /run/egressctl/<cgroup id>.sock (root only), which `egressctl status`
 * reads, and in the daemon's `status` reply. */
#ifndef CONFINE_STATUS_H
#define CONFINE_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "paths.h" /* generated: EGR_RUNDIR */

#define STATUS_DIR EGR_RUNDIR

struct status_info {
	int pid;
	uint64_t cgroup_id;
	const char *cgroup;
	const char *command;	 /* CMD and its arguments, space-separated */
	const char *policy_file; /* NULL if none */
	unsigned int rules;	 /* number of rules in force */
	bool audit;
	bool ipv6; /* --ipv6: the listeners are on [::1] too */
	uint16_t http_port, socks_port, tproxy_port, dns_port;
	uint64_t proxy_accepted, proxy_allowed, proxy_denied, proxy_unattributed;
	uint64_t dns_queries, dns_refused, dns_cached, dns_upstream, dns_servfail, dns_fast;
};

/* The JSON document a run serves on its status socket; malloc'd. */
char *status_render(const struct status_info *si);

/* Opens the status socket of cgroup cgid (replacing a stale one); returns
 * the listening fd or -errno. path receives its name. */
int status_listen(uint64_t cgid, char *path, size_t pathlen);

#endif /* CONFINE_STATUS_H */
