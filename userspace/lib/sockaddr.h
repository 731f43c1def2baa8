/* Comparing socket addresses: the proxy's resolved upstreams, the DNS
 * responder's learned names and fast-path entries. */
#ifndef SOCKADDR_H
#define SOCKADDR_H

#include <stdbool.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* Do a and b hold the same IPv4 or IPv6 address, ports aside? false for
 * any other family. */
static inline bool
sockaddr_same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return false;
}

#endif /* SOCKADDR_H */
