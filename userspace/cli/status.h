// SPDX-License-Identifier: Apache-2.0
/* `egressctl status`: the confined cgroups this machine has (their pinned
 * programs and kernel counters, read from bpffs), and for each one whose
 * egressctl is alive, what it reports on its status socket
 * (confine/status.h): command, policy, proxy and DNS counters. */
#ifndef STATUS_H
#define STATUS_H

#include <stdio.h>

/* egressctl status [-j]: returns the exit status. */
int status_main(int argc, char **argv);

/* --help of status. */
void status_usage(FILE *f);

#endif /* STATUS_H */
