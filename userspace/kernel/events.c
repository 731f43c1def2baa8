// SPDX-License-Identifier: Apache-2.0
/* Kernel events in words (see events.h). Every byte of comm and of abstract
 * unix names comes from the confined task, so both are escaped. */
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "kernel/events.h"
#include "policy/policy.h"

static const char *const reasons[EGR_R_MAX] = {
	[EGR_R_NONE] = "no reason",
	[EGR_R_TRANSPARENT] = "to the transparent proxy",
	[EGR_R_DNS] = "to the DNS responder",
	[EGR_R_FASTPATH] = "approved target",
	[EGR_R_LOCAL] = "loopback socket of this sandbox",
	[EGR_R_PROXY] = "egressctl proxy",
	[EGR_R_IPV6] = "ipv6 denied",
	[EGR_R_UDP] = "udp other than dns denied",
	[EGR_R_UDPLITE] = "udp-lite denied",
	[EGR_R_RAW] = "raw sockets denied",
	[EGR_R_PING] = "icmp sockets denied",
	[EGR_R_SCTP] = "sctp denied",
	[EGR_R_MPTCP] = "mptcp denied",
	[EGR_R_PROTO] = "protocol denied",
	[EGR_R_LOOPBACK] = "loopback port not served by this sandbox",
	[EGR_R_ABSTRACT_UNIX] = "abstract unix sockets denied",
	[EGR_R_NO_LISTENER] = "no egressctl listener for it",
	[EGR_R_BIND_PROXY] = "port reserved for egressctl",
	[EGR_R_SKB_DROP] = "dropped by the catch-all",
	[EGR_R_BIND_FOREIGN] = "address and port held outside the sandbox",
	[EGR_R_UNIX_SERVICE] = "a local service that starts work outside the sandbox",
	[EGR_R_NETNS] = "another network namespace: no listener there (daemon --containers)",
	[EGR_R_V4_IN_V6] = "ipv4 carried in ipv6 (nat64, 6to4, teredo) denied",
	[EGR_R_KVERIFY] = "kernel-verified path",
	[EGR_R_KV_OK] = "kernel-verified: the name was answered with this address and is allowed",
	[EGR_R_KV_NAME] = "kernel-verified: a name not answered with this address, or not allowed "
			  "on this port",
	[EGR_R_KV_NONAME] = "kernel-verified: no SNI or Host to check",
	[EGR_R_KV_SPLIT] = "kernel-verified: the ClientHello or request head is not whole in the "
			   "first segment",
	[EGR_R_KV_PROTO] = "kernel-verified: neither a TLS ClientHello nor an HTTP/1.x request",
	[EGR_R_KV_H2C] = "kernel-verified: HTTP/2 prior knowledge cannot be checked",
	[EGR_R_KV_ECH] = "kernel-verified: an encrypted ClientHello hides the name",
	[EGR_R_KV_BUSY] = "kernel-verified: no scratch space free; dropped, sent again",
	[EGR_R_KV_PLAIN] = "kernel-verified: plain HTTP on port 443 (the proxy judges plain HTTP, "
			   "request by request)",
	[EGR_R_KV_SHARED] = "kernel-verified: the first bytes are in pages the sender can still "
			    "change (sendfile, splice, MSG_ZEROCOPY)",
	[EGR_R_KV_EXTHDR] = "kernel-verified: an IPv6 extension header (a routing header) on the "
			    "connection",
	[EGR_R_IPOPTS] = "IP options or an IPv6 extension header (source routing) on a direct "
			 "connection",
	[EGR_R_DIRECT_MOVED] = "a direct connection's packet to another address, port or protocol "
			       "than approved (re-routed or encapsulated)",
	[EGR_R_TUNNEL] = "a container's packet leaving through a tunnel device (vxlan, gre, "
			 "wireguard...) that would carry it to another host",
	[EGR_R_NO_PORT] = "no rule allows this port (refused at connect)",
	[EGR_R_PEER] = "a container of the job's on a docker network both are on",
};

const char *
events_reason(unsigned int reason)
{
	if (reason >= EGR_R_MAX || !reasons[reason])
		return "?";
	return reasons[reason];
}

const char *
events_decision(const struct egr_event *e)
{
	switch (e->verdict) {
	case EGR_V_DENY:
		return "deny";
	case EGR_V_WOULD_DENY:
		return "would-deny";
	case EGR_V_REDIRECT:
		return "redirect";
	default:
		return "allow";
	}
}

static const char *
sock_name(const struct egr_event *e)
{
	switch (e->reason) {
	case EGR_R_RAW:
		return "raw";
	case EGR_R_PING:
		return "icmp";
	case EGR_R_SCTP:
		return "sctp";
	case EGR_R_UDPLITE:
		return "udp-lite";
	case EGR_R_MPTCP:
		return "mptcp";
	default:
		return "other";
	}
}

void
events_dest(const struct egr_event *e, char *buf, size_t len)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char a[INET6_ADDRSTRLEN];
	unsigned int port = ntohs(e->port);

	if (e->hook == EGR_H_SOCK_CREATE) {
		snprintf(buf, len, "%s %s socket (type %u, protocol %u)", sock_name(e),
			 e->family == AF_INET6 ? "IPv6" : "IPv4", e->type, e->protocol);
		return;
	}
	if (e->family == AF_UNIX && e->reason == EGR_R_UNIX_SERVICE) {
		/* the entry's path is the target's to tell (events_format_dest) */
		snprintf(buf, len, "unix socket entry %u", (unsigned)e->port);
		return;
	}
	if (e->family == AF_UNIX) {
		char name[4 * 16 + 1];
		size_t n = port; /* name length, carried in the port field */

		policy_safe_str((const char *)e->addr, n > 16 ? 16 : n, name, sizeof(name));
		/* abstract names may hold NULs: policy_safe_str() stops there; say so */
		snprintf(buf, len, "@%s%s (abstract unix)", name, n > 16 ? "..." : "");
		return;
	}
	if (!memcmp(e->addr, mapped, sizeof(mapped))) {
		inet_ntop(AF_INET, &e->addr[3], a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, port);
	} else {
		inet_ntop(AF_INET6, e->addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, port);
	}
}

int
events_format(const struct egr_event *e, char *buf, size_t len)
{
	char dest[128];

	events_dest(e, dest, sizeof(dest));
	return events_format_dest(e, dest, buf, len);
}

int
events_format_dest(const struct egr_event *e, const char *dest, char *buf, size_t len)
{
	const char *verdict;
	char comm[sizeof(e->comm) + 1];
	char who[64];

	switch (e->verdict) {
	case EGR_V_DENY:
		verdict = "denied";
		break;
	case EGR_V_REDIRECT:
		verdict = "redirected";
		break;
	case EGR_V_WOULD_DENY:
		verdict = "would deny";
		break;
	default:
		verdict = "allowed";
		break;
	}
	policy_safe_comm(e->comm, comm);
	if (e->tgid)
		snprintf(who, sizeof(who), "%s[%u]", comm[0] ? comm : "?", e->tgid);
	else
		snprintf(who, sizeof(who), "a socket of cgroup %llu",
			 (unsigned long long)e->cgroup_id);
	if (e->hook == EGR_H_SOCK_CREATE)
		return snprintf(buf, len, "%s %s %s (%s)", verdict, who, dest,
				events_reason(e->reason));
	if (e->reason == EGR_R_UNIX_SERVICE && !strncmp(dest, "unix:", 5))
		return snprintf(buf, len, "%s %s \u2192 %s (%s; --allow-unix %s allows it)",
				verdict, who, dest, events_reason(e->reason), dest + 5);
	if (events_is_kv(e) && e->name[0]) {
		char name[sizeof(e->name) + 1];

		policy_safe_str(e->name, sizeof(e->name), name, sizeof(name));
		return snprintf(buf, len, "%s %s \u2192 %s name %s (%s)", verdict, who, dest, name,
				events_reason(e->reason));
	}
	return snprintf(buf, len, "%s %s \u2192 %s (%s)", verdict, who, dest,
			events_reason(e->reason));
}

bool
events_is_kv(const struct egr_event *e)
{
	return e->hook == EGR_H_SKB && e->reason >= EGR_R_KV_OK && e->reason <= EGR_R_KV_LAST;
}
