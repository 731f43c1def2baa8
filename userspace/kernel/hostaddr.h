// SPDX-License-Identifier: Apache-2.0
/* The addresses of this process's network namespace (egressctl's own), as
 * rtnetlink says they come and go: whom a connection a confined listener
 * accepted may answer (egr_hostaddr, include/egress_abi.h). A target keeps
 * its map in step with them (confine/target.c). */
#ifndef KERNEL_HOSTADDR_H
#define KERNEL_HOSTADDR_H

#include "egress_abi.h"

/* A non-blocking rtnetlink socket that becomes readable when an IPv4 or
 * IPv6 address is added or removed here; -errno. */
int hostaddr_watch_open(void);

/* Reads what the watch socket holds (its content is not needed: the list
 * is read again whole). */
void hostaddr_watch_drain(int fd);

/* Every address of every interface here but IPv6 link-local ones (each
 * veth has one), v4-mapped for IPv4, at most max
 * of them (the rest are not written: *total says how many there were).
 * Returns the number written, or -errno. */
int hostaddr_list(struct egr_hostaddr_key *out, int max, int *total);

#endif /* KERNEL_HOSTADDR_H */
