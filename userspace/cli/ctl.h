// SPDX-License-Identifier: Apache-2.0
/* The commands that talk to the daemon's control socket: reload, allow,
 * deny, log, summary, detach (detach also works without a daemon). */
#ifndef CTL_H
#define CTL_H

#include <stdio.h>

/* argv[0] is the command's name. Returns the exit status. */
int ctl_main(int argc, char **argv);
void ctl_usage(const char *name, FILE *f);

/* The daemon's status document (malloc'd JSON) in *out; 0, or nonzero
 * (quietly) when no daemon answers on control (NULL: the default). */
int ctl_status_json(const char *control, char **out);

#endif /* CTL_H */
