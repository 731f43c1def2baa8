// SPDX-License-Identifier: Apache-2.0
/* The addresses of this process's network namespace (egressctl's own), as
 * rtnetlink says they come and go: whom a connection a confined listener
 * accepted may answer (egr_hostaddr, include/egress_abi.h). A target keeps
 * its map in step with them (confine/target.c). */
#ifndef KERNEL_HOSTADDR_H
#define KERNEL_HOSTADDR_H

#include <stdbool.h>
#include <stdint.h>

#include "egress_abi.h"

/* A non-blocking rtnetlink socket that becomes readable when an IPv4 or
 * IPv6 address is added or removed here, and with routes when a route
 * is too; -errno. */
int hostaddr_watch_open(bool routes);

/* Reads what the watch socket holds (its content is not needed: the list
 * is read again whole). */
void hostaddr_watch_drain(int fd);

/* Every address of every interface here but IPv6 link-local ones (each
 * veth has one), v4-mapped for IPv4, at most max
 * of them (the rest are not written: *total says how many there were).
 * Returns the number written, or -errno. */
int hostaddr_list(struct egr_hostaddr_key *out, int max, int *total);

/* How this namespace routes addr (16 bytes, v4-mapped for IPv4): 0 with
 * *ifindex the device it leaves by, *onlink true when no gateway is on
 * the way (the destination is on that device's link); -errno (-ENETUNREACH:
 * not a unicast route). One RTM_GETROUTE. */
int hostaddr_route(const uint32_t addr[4], int *ifindex, bool *onlink);

#endif /* KERNEL_HOSTADDR_H */
