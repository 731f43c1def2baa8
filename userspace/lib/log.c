// SPDX-License-Identifier: Apache-2.0
/* Diagnostics: one line per event on stderr, prefixed with the program name.
 * libbpf's own output is routed here one level quieter than ours. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "lib/log.h"

int log_verbose;
static const char *log_prog = "egressctl";

void
term_safe(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			s[i] = '?';
		else if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
			 (unsigned char)s[i + 1] <= 0x9f) /* C1, as UTF-8 spells it */
			s[i] = s[i + 1] = '?';
	}
}

static void __attribute__((format(printf, 1, 0))) vlog(const char *fmt, va_list ap, int errnum)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* a message may carry what others wrote (a user's option to the
	 * service, a path, a name) */
	term_safe(msg, strlen(msg));
	if (errnum)
		fprintf(stderr, "%s: %s: %s\n", log_prog, msg, strerror(errnum));
	else
		fprintf(stderr, "%s: %s\n", log_prog, msg);
}

static int __attribute__((format(printf, 2, 0)))
libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if ((level == LIBBPF_DEBUG && log_verbose < 2) || (level == LIBBPF_INFO && log_verbose < 1))
		return 0;
	if (level == LIBBPF_WARN && log_verbose < 1)
		return 0; /* we report failures ourselves, in one line */
	return vfprintf(stderr, fmt, ap);
}

void
log_init(const char *progname)
{
	const char *slash = strrchr(progname, '/');

	log_prog = slash ? slash + 1 : progname;
	libbpf_set_print(libbpf_print);
}

void
log_warn(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap, saved);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap, 0);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	if (log_verbose < 1)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap, 0);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_verbose < 2)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap, 0);
	va_end(ap);
}
