// SPDX-License-Identifier: Apache-2.0
/* `egressctl daemon`: runner mode. Confines cgroups that already exist (a
 * CI runner's service, a systemd unit, the cgroup of a process) for as
 * long as the daemon runs and beyond: the programs stay pinned when it
 * stops, so its targets fail closed, and a restarted daemon takes them
 * over as they are. Policies reload live (SIGHUP or `egressctl reload`);
 * a root-only control socket serves status, log, allow/deny, summary and
 * detach. One event loop; one target (confine/target.h) per confined
 * cgroup. */
#ifndef DAEMON_H
#define DAEMON_H

#include <stdio.h>

void daemon_usage(FILE *f);
int daemon_main(int argc, char **argv);

#endif /* DAEMON_H */
