// SPDX-License-Identifier: Apache-2.0
/* A target's status socket and document (see status.h): JSON with cJSON,
 * one document per connection, then close. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <cJSON.h>

#include "confine/status.h"

char *
status_render(const struct status_info *si)
{
	cJSON *o = cJSON_CreateObject(), *px, *dns;
	char *out = NULL;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "pid", si->pid);
	cJSON_AddNumberToObject(o, "cgroup_id", (double)si->cgroup_id);
	cJSON_AddStringToObject(o, "cgroup", si->cgroup);
	cJSON_AddStringToObject(o, "command", si->command);
	if (si->policy_file)
		cJSON_AddStringToObject(o, "policy_file", si->policy_file);
	cJSON_AddNumberToObject(o, "rules", si->rules);
	cJSON_AddBoolToObject(o, "audit", si->audit);
	cJSON_AddBoolToObject(o, "ipv6", si->ipv6);
	px = cJSON_AddObjectToObject(o, "proxy");
	if (px) {
		cJSON_AddNumberToObject(px, "http_port", si->http_port);
		cJSON_AddNumberToObject(px, "socks_port", si->socks_port);
		cJSON_AddNumberToObject(px, "transparent_port", si->tproxy_port);
		cJSON_AddNumberToObject(px, "accepted", (double)si->proxy_accepted);
		cJSON_AddNumberToObject(px, "allowed", (double)si->proxy_allowed);
		cJSON_AddNumberToObject(px, "denied", (double)si->proxy_denied);
		cJSON_AddNumberToObject(px, "unattributed", (double)si->proxy_unattributed);
	}
	dns = cJSON_AddObjectToObject(o, "dns");
	if (dns) {
		cJSON_AddNumberToObject(dns, "port", si->dns_port);
		cJSON_AddNumberToObject(dns, "queries", (double)si->dns_queries);
		cJSON_AddNumberToObject(dns, "refused", (double)si->dns_refused);
		cJSON_AddNumberToObject(dns, "cached", (double)si->dns_cached);
		cJSON_AddNumberToObject(dns, "upstream", (double)si->dns_upstream);
		cJSON_AddNumberToObject(dns, "servfail", (double)si->dns_servfail);
		cJSON_AddNumberToObject(dns, "fast_path_approvals", (double)si->dns_fast);
	}
	out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
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
