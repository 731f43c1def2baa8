// SPDX-License-Identifier: Apache-2.0
/* Diagnostics on stderr: log_warn() appends strerror(errno), log_warnx()
 * does not; log_info() with -v, log_debug() with -vv. */
#ifndef LOG_H
#define LOG_H

#include <stddef.h>

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

/* n bytes of s made fit for a terminal, in place: control characters (C0
 * but line breaks and tabs, DEL, and C1 as UTF-8 spells it) become '?'.
 * What others wrote (a user's command or path, a process's name) never
 * reaches a reader's terminal as an escape. The log lines above get it. */
void term_safe(char *s, size_t n);

#endif /* LOG_H */
