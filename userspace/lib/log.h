// SPDX-License-Identifier: Apache-2.0
/* Diagnostics on stderr: log_warn() appends strerror(errno), log_warnx()
 * does not; log_info() with -v, log_debug() with -vv. */
#ifndef LOG_H
#define LOG_H

#include <stdbool.h>

#define EGR_EXIT_ERROR	  125 /* egressctl's own failure, as env(1) and timeout(1) */
#define EGR_EXIT_NOEXEC	  126 /* CMD found but not executable */
#define EGR_EXIT_NOTFOUND 127 /* CMD not found */

extern int log_verbose; /* 0 normal, 1 -v, 2 -vv (libbpf debug) */

void log_init(const char *progname);
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* LOG_H */
