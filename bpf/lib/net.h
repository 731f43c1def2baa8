// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Constants that vmlinux.h lacks (it has enums, not the uapi macros). */
#ifndef EGR_NET_H
#define EGR_NET_H

#define AF_UNIX	 1
#define AF_INET	 2
#define AF_INET6 10

#define ETH_P_IP   0x0800
#define ETH_P_IPV6 0x86DD

#define SYS_REJECT  0
#define SYS_PROCEED 1

#define EPERM		1
#define ENOMEM		12
#define EACCES		13
#define EADDRINUSE	98
#define ENETUNREACH	101
#define EAFNOSUPPORT	97
#define EPROTONOSUPPORT 93
#define ECONNREFUSED	111
#define EOPNOTSUPP	95

#define IPPROTO_MPTCP_NR 262 /* vmlinux.h has the enum; name it plainly */
#define IPPROTO_ICMPV6	 58  /* a uapi macro, not in vmlinux.h */

#define LOOPBACK4 0x7f000001 /* 127.0.0.1, host order */

#endif /* EGR_NET_H */
