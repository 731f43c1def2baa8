// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The egress object: the enforcement programs attached to a sandbox cgroup.
 * One compilation unit, one skeleton; the programs live one file per hook
 * family, included here, over the helpers in lib/ (why one unit and not
 * objects linked by bpftool gen object: docs/kernel.md).
 *
 *   sock_addr.c  connect4/6 and sendmsg4/6 decide every TCP connect and UDP
 *                send: redirect to egressctl's listeners (transparent TCP,
 *                DNS), let through (fast path, the sandbox's own loopback
 *                sockets, the proxy), or deny with an errno; recvmsg4/6
 *                and getpeername4/6 translate redirected peers back;
 *                bind4/6 keep the sandbox off egressctl's ports and off
 *                addresses and ports that sockets outside it hold
 *   sockops.c    indexes redirected connections by local address for the
 *                proxy; frees fast-path records at TCP_CLOSE
 *   sock.c       sock_create refuses raw, ping, SCTP, UDP-Lite and MPTCP
 *                sockets; sock_release frees the per-socket records
 *   unix.c       connect_unix and sendmsg_unix refuse abstract addresses
 *   skb.c        cgroup_skb/egress drops whatever else would leave, and
 *                loopback packets that would reach a socket outside the
 *                sandbox; judges the first bytes of the kernel-verified
 *                path's connections (lib/kverify.h, lib/kparse.h)
 *   kverify.c    iter/tcp ends the connections that judgment refused
 *   lib/         the maps and tunables, addresses, the decision, the
 *                receiving socket, the per-socket records, events
 *
 * Every deny (and redirect, when asked, and loopback allow) is reported on
 * egr_events. IPv4 addresses are handled in v4-mapped form (::ffff:a.b.c.d)
 * throughout. */
#include "lib/common.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "sock_addr.c"
#include "sockops.c"
#include "sock.c"
#include "unix.c"
#include "skb.c"
#include "kverify.c"
