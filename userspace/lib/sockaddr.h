// SPDX-License-Identifier: Apache-2.0
/* Socket addresses of IPv4 and IPv6 alike: their port, comparing them (the
 * proxy's resolved upstreams, the DNS responder's learned names and
 * fast-path entries), BPF map keys and listeners' addresses. */
#ifndef SOCKADDR_H
#define SOCKADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
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

/* The port of an IPv4 or IPv6 address, host order; 0 for any other
 * family. */
static inline uint16_t
sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

/* Sets the port (host order) of an IPv4 or IPv6 address. */
static inline void
sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

/* The same address and port? */
static inline bool
sockaddr_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	return sockaddr_same_ip(a, b) && sockaddr_port(a) == sockaddr_port(b);
}

/* sa (IPv4 or IPv6) copied into a zeroed storage; false for any other
 * family. */
static inline bool
sockaddr_store(const struct sockaddr *sa, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (sa->sa_family == AF_INET)
		memcpy(ss, sa, sizeof(struct sockaddr_in));
	else if (sa->sa_family == AF_INET6)
		memcpy(ss, sa, sizeof(struct sockaddr_in6));
	else
		return false;
	return true;
}

/* "198.51.100.1:443" or "[2001:db8::1]:443"; "?" for any other family. */
static inline void
sockaddr_format(const struct sockaddr *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

/* The socket address of a BPF map key's address (IPv4 v4-mapped, as
 * loader_sockaddr_key writes it) and port (network order). */
static inline void
sockaddr_from_key(const uint32_t addr[4], uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (addr[0] == 0 && addr[1] == 0 && addr[2] == htonl(0xffff)) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = addr[3];
		in->sin_port = port;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, addr, 16);
		in6->sin6_port = port;
	}
}

/* A listener's address: ip:port (IPv4, network order) or, with v6,
 * [::1]:port (port in host order). Returns its length. */
static inline socklen_t
sockaddr_listen_addr(struct sockaddr_storage *ss, uint32_t ip, bool v6, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (v6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		in6->sin6_port = htons(port);
		return sizeof(*in6);
	}
	((struct sockaddr_in *)ss)->sin_family = AF_INET;
	((struct sockaddr_in *)ss)->sin_addr.s_addr = ip;
	((struct sockaddr_in *)ss)->sin_port = htons(port);
	return sizeof(struct sockaddr_in);
}

/* The same address in words, for an error: "198.51.100.1" or "[::1]". */
static inline void
sockaddr_listen_where(uint32_t ip, bool v6, char *out, size_t len)
{
	if (v6)
		snprintf(out, len, "[::1]");
	else
		inet_ntop(AF_INET, &ip, out, (socklen_t)len);
}

#endif /* SOCKADDR_H */
