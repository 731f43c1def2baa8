// SPDX-License-Identifier: Apache-2.0
/* A target's status socket and document (see status.h): JSON (lib/jsonx.h),
 * one document per connection, then close. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "lib/jsonx.h"
#include "confine/status.h"

char *
status_render(const struct status_info *si)
{
	json_t *o = json_object(), *px, *dns;
	char *out = NULL;

	if (!o)
		return NULL;
	jsonx_set_int(o, "pid", si->pid);
	jsonx_set_int(o, "cgroup_id", (long long)si->cgroup_id);
	jsonx_set_str(o, "cgroup", si->cgroup);
	jsonx_set_str(o, "command", si->command);
	if (si->policy_file)
		jsonx_set_str(o, "policy_file", si->policy_file);
	jsonx_set_int(o, "rules", si->rules);
	jsonx_set_bool(o, "audit", si->audit);
	jsonx_set_bool(o, "ipv6", si->ipv6);
	px = jsonx_add_object(o, "proxy");
	if (px) {
		jsonx_set_int(px, "http_port", si->http_port);
		jsonx_set_int(px, "socks_port", si->socks_port);
		jsonx_set_int(px, "transparent_port", si->tproxy_port);
		jsonx_set_int(px, "accepted", (long long)si->proxy_accepted);
		jsonx_set_int(px, "allowed", (long long)si->proxy_allowed);
		jsonx_set_int(px, "denied", (long long)si->proxy_denied);
		jsonx_set_int(px, "unattributed", (long long)si->proxy_unattributed);
	}
	dns = jsonx_add_object(o, "dns");
	if (dns) {
		jsonx_set_int(dns, "port", si->dns_port);
		jsonx_set_int(dns, "queries", (long long)si->dns_queries);
		jsonx_set_int(dns, "refused", (long long)si->dns_refused);
		jsonx_set_int(dns, "cached", (long long)si->dns_cached);
		jsonx_set_int(dns, "upstream", (long long)si->dns_upstream);
		jsonx_set_int(dns, "servfail", (long long)si->dns_servfail);
		jsonx_set_int(dns, "fast_path_approvals", (long long)si->dns_fast);
	}
	out = jsonx_line(o);
	json_decref(o);
	return out;
}

int
status_listen(uint64_t cgid, char *path, size_t pathlen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd, err;

	if (mkdir(STATUS_DIR, 0700) && errno != EEXIST)
		return -errno;
	if ((size_t)snprintf(path, pathlen, "%s/%llu.sock", STATUS_DIR, (unsigned long long)cgid) >=
		    pathlen ||
	    strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	unlink(path); /* a stale one: the cgroup's lock says no live run owns it */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) || chmod(path, 0600) || listen(fd, 8)) {
		err = -errno;
		close(fd);
		unlink(path);
		return err;
	}
	return fd;
}
