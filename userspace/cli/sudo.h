// SPDX-License-Identifier: Apache-2.0
/* `egressctl sudo`: what a confined CI job's sudo runs (sudo.c). */
#ifndef CLI_SUDO_H
#define CLI_SUDO_H

#include <stdio.h>

/* egressctl sudo [OPTIONS] -- CMD [ARG]...: returns the exit status. */
int sudo_main(int argc, char **argv);

/* --help of sudo. */
void sudo_usage(FILE *f);

#endif /* CLI_SUDO_H */
