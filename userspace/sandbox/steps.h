// SPDX-License-Identifier: Apache-2.0
/* What sandbox_enter_opts() (sandbox.c) calls in the other files of this
 * folder, each the wall of its file, and the error words they share; not
 * for outside: the rest of the tree has sandbox.h. */
#ifndef SANDBOX_STEPS_H
#define SANDBOX_STEPS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "sandbox/sandbox.h"

/* errbuf := the formatted message (nothing when errbuf is NULL). */
__attribute__((format(printf, 3, 4))) static inline void
sandbox_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

/* --ask (tty.c): a session of its own, a private devpts at /dev/pts, the
 * terminal's aliases and /dev/input covered, the tmux, screen and X11
 * sockets hidden, and with t->pty_sock a new pty as CMD's terminal. After
 * every devpts mount was covered. 0 or -errno, *what the step. */
int tty_enter(const struct sandbox_user *u, const struct sandbox_term *t, const char **what);

/* /dev/null over each of masks (sandbox_unix_masks()'s list; a directory
 * gets an empty tmpfs) (masks.c). 0 or -errno, *what the path. */
int masks_apply(char *const *masks, const char **what);

/* The last step (privs.c): the capability bounding set (sudo_caps kept
 * with sudo, less CAP_FSETID and CAP_SETFCAP with no_setid), securebits,
 * the ambient set, u's ids, no capability left, then no_new_privs,
 * Landlock and the seccomp filter (with sudo: Landlock and seccomp first,
 * with no_setid the second filter too, while CAP_SYS_ADMIN stands in for
 * no_new_privs, and no no_new_privs). 0 or -errno, *what the step. */
int privs_drop(const struct sandbox_user *u, bool sudo, bool no_setid, const char **what);

/* u's groups (initgroups, or none when u has no name), gid and uid, real,
 * effective and saved, checked not to come back (privs.c). 0 or -errno,
 * *what the step. */
int privs_change_ids(const struct sandbox_user *u, const char **what);

#endif /* SANDBOX_STEPS_H */
