// SPDX-License-Identifier: Apache-2.0
/* A destination address as the rule engine judges it (struct naddr):
 * v4-mapped IPv6 taken as the IPv4 it carries, and its class (loopback,
 * private, link-local, IPv4 carried in IPv6, ...) with the prefix length of
 * the range it falls in; addr_classify() for the rest of the tree. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/engine.h"
#include "policy/policy.h"

static void
set_class(struct naddr *a, enum addr_class cls, unsigned int plen)
{
	a->cls = cls;
	a->cls_plen = plen;
}

/* ADDR_V4_IN_V6's prefixes (:: and ::1 are taken out before). */
static bool
is_v4_in_v6(const uint8_t *b)
{
	static const uint8_t nat64[4] = {0, 0x64, 0xff, 0x9b}, teredo[4] = {0x20, 0x01, 0, 0};
	static const uint8_t zero[10], siit[4] = {0xff, 0xff, 0, 0};

	if (!memcmp(b, nat64, 4) || !memcmp(b, teredo, 4) || (b[0] == 0x20 && b[1] == 0x02))
		return true;
	if (memcmp(b, zero, 8))
		return false;
	return !memcmp(b + 8, siit, 4) || !memcmp(b + 8, zero, 4);
}

/* The classes of policy.h, each with the prefix length of its range. */
static void
classify(struct naddr *a)
{
	const uint8_t *b = a->b;
	uint32_t v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	static const uint8_t zero[15];

	set_class(a, ADDR_PUBLIC, 0);
	if (a->family == 4) {
		if (v == 0xffffffff)
			set_class(a, ADDR_UNSPEC, 32);
		else if (v >> 24 == 0)
			set_class(a, ADDR_UNSPEC, 8);
		else if (v >> 24 == 127)
			set_class(a, ADDR_LOOPBACK, 8);
		else if (v >> 24 == 10)
			set_class(a, ADDR_PRIVATE, 8);
		else if (v >> 20 == 0xac1) /* 172.16/12 */
			set_class(a, ADDR_PRIVATE, 12);
		else if (v >> 16 == 0xc0a8) /* 192.168/16 */
			set_class(a, ADDR_PRIVATE, 16);
		else if (v >> 16 == 0xa9fe) /* 169.254/16 */
			set_class(a, ADDR_LINKLOCAL, 16);
		else if (v >> 22 == 0x64400000 >> 22) /* 100.64/10 */
			set_class(a, ADDR_CGNAT, 10);
		else if (v >> 28 == 0xe) /* 224/4 */
			set_class(a, ADDR_MULTICAST, 4);
	} else if (a->family == 6) {
		if (b[0] == 0xff)
			set_class(a, ADDR_MULTICAST, 8);
		else if ((b[0] & 0xfe) == 0xfc)
			set_class(a, ADDR_ULA, 7);
		else if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
			set_class(a, ADDR_LINKLOCAL, 10);
		else if (!memcmp(b, zero, 15) && b[15] <= 1)
			set_class(a, b[15] ? ADDR_LOOPBACK : ADDR_UNSPEC, 128);
		else if (is_v4_in_v6(b))
			set_class(a, ADDR_V4_IN_V6, 0);
	} else {
		set_class(a, ADDR_UNSPEC, 0); /* unknown family: no rule can name it */
	}
}

void
addr_from_sockaddr(struct naddr *a, const struct sockaddr *sa)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET) {
		a->family = 4;
		memcpy(a->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;

		a->family = rule_is_v4_mapped(b) ? 4 : 6;
		memcpy(a->b, a->family == 4 ? b + 12 : b, a->family == 4 ? 4 : 16);
	}
	classify(a);
}

/* A host that is an address literal ("203.0.113.7", "[2001:db8::1]", "::1"). */
bool
addr_from_literal(struct naddr *a, const char *host, size_t n)
{
	char text[INET6_ADDRSTRLEN + 2];

	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host++;
		n -= 2;
	} else if (n && host[n - 1] == '.') {
		n--; /* "127.0.0.1." */
	}
	if (!n || n >= sizeof(text))
		return false;
	/* Names are the common case: an IPv4 literal ends in a digit, an IPv6 one has a ':'. */
	if ((host[n - 1] < '0' || host[n - 1] > '9') && !memchr(host, ':', n))
		return false;
	memcpy(text, host, n);
	text[n] = '\0';
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, text, a->b) == 1) {
		a->family = 4;
	} else if (inet_pton(AF_INET6, text, a->b) == 1) {
		a->family = 6;
		if (rule_is_v4_mapped(a->b)) {
			memmove(a->b, a->b + 12, 4);
			memset(a->b + 4, 0, 12);
			a->family = 4;
		}
	} else {
		return false;
	}
	classify(a);
	return true;
}

enum addr_class
addr_classify(const struct sockaddr *sa)
{
	struct naddr a;

	if (!sa)
		return ADDR_UNSPEC;
	addr_from_sockaddr(&a, sa);
	return a.cls;
}
