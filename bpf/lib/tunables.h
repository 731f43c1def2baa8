// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Tunables, set by the loader before load and read-only after it (.rodata:
 * the verifier knows their values and drops the code they switch off). Host
 * byte order; 0 = none. */
#ifndef EGR_TUNABLES_H
#define EGR_TUNABLES_H

#include "lib/common.h"

const volatile __u16 tproxy_port = 0;	  /* transparent TCP listener on 127.0.0.1 */
const volatile __u16 dns_port = 0;	  /* DNS responder (UDP and TCP) on 127.0.0.1 */
const volatile __u16 proxy_ports[4] = {}; /* HTTP/SOCKS listeners on 127.0.0.1 */
const volatile __u8 emit_redirects = 1;	  /* report redirects, not only denies */
const volatile __u8 audit_mode = 0;	  /* record what would be denied, deny nothing */
const volatile __u64 sandbox_cgid = 0;	  /* the cgroup attached to; 0: nothing is ours */
/* Other network namespaces (containers): the listeners are on 127.0.0.1 of
 * host_netns, egressctl's own; sockets of any other namespace reach them
 * at ns_ip4 (network order), an address of the host their routes lead to
 * (a bridge's gateway: `daemon --containers ADDR`), or nowhere (0: their
 * redirects are refused). host_netns 0: every namespace counts as ours. */
const volatile __u64 host_netns = 0;
const volatile __u32 ns_ip4 = 0;
/* --ipv6: native IPv6 TCP and DNS go to the same listeners' ports on ::1
 * (egressctl's own network namespace only: --containers refuses --ipv6);
 * 0: native IPv6 is denied but for the fast path and own loopback. */
const volatile __u8 ipv6_on = 0;
/* UDP to a local address whatever socket receives it (not only the
 * sandbox's own): dockerd's target alone (daemon --docker), whose embedded
 * DNS server answers root's containers on their loopback. */
const volatile __u8 local_udp_any = 0;
/* TCP to a network of egr_fast_net goes direct: dockerd's target alone,
 * whose userland proxy reaches containers on its networks (their plain
 * HTTP judged by its Host would be refused: "localhost:8080") */
const volatile __u8 fast_nets = 0;
/* egr_peer is looked up (a job's containers to each other): the targets of
 * a daemon that follows dockerd alone; for any other, every connect and
 * send would pay a lookup in an empty map */
const volatile __u8 peers_on = 0;

/* One of egressctl's listeners (port in network order). */
static __always_inline int
is_own_port(__u16 port_be)
{
	__u16 p = bpf_ntohs(port_be);

	if (!p)
		return 0;
	if (p == tproxy_port || p == dns_port)
		return 1;
#pragma unroll
	for (int i = 0; i < 4; i++)
		if (proxy_ports[i] && p == proxy_ports[i])
			return 1;
	return 0;
}

/* Where the listeners are for a socket of network namespace netns:
 * 127.0.0.1 in egressctl's own, ns_ip4 in any other (0: none there). */
static __always_inline __be32
listen_ip4(__u64 netns)
{
	if (!host_netns || netns == host_netns)
		return bpf_htonl(LOOPBACK4);
	return ns_ip4;
}

/* Where the IPv6 listeners are for a socket of network namespace netns:
 * 1 for ::1 (--ipv6, egressctl's own namespace), 0 for none. */
static __always_inline int
listen_ip6(__u64 netns)
{
	return ipv6_on && (!host_netns || netns == host_netns);
}

/* ::1 and one of the redirect targets (transparent listener, responder):
 * a redirected IPv6 socket's peer now (lip6: listen_ip6). */
static __always_inline int
is_redirect_src6(const __be32 *a, __be16 port, int lip6)
{
	__u16 p = bpf_ntohs(port);

	return lip6 && a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == bpf_htonl(1) && p &&
	       (p == dns_port || p == tproxy_port);
}

/* The address a redirected socket's peer has now: the transparent listener
 * or the DNS responder, at lip (listen_ip4). */
static __always_inline int
is_redirect_src(__be32 ip4, __be16 port, __be32 lip)
{
	__u16 p = bpf_ntohs(port);

	return lip && ip4 == lip && p && (p == dns_port || p == tproxy_port);
}

#endif /* EGR_TUNABLES_H */
