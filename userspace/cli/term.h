// SPDX-License-Identifier: Apache-2.0
/* egressctl's terminal under --ask: see term.c. */
#ifndef TERM_H
#define TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <sys/types.h>

struct event_base;
struct term;

/* Opens the controlling terminal (/dev/tty, a file description of our
 * own); from_stdio: the terminal that is the first of fds 0-2 to be one,
 * opened anew through /proc/self/fd (the service's run, which has no
 * controlling terminal: the client's descriptors are its stdio). When one of fds 0-2 is that terminal (term_stdio() != 0), the
 * terminal goes to raw mode -- restored by term_free() and on every signal
 * that stops or ends egressctl short of SIGKILL -- and stderr, if it is the
 * terminal, is written through term (so that the lines end in \r\n and wait
 * while a question is on the screen). NULL with errbuf set when there is no
 * terminal. */
struct term *term_open(struct event_base *base, bool from_stdio, char *errbuf, size_t errlen);

/* Which of fds 0-2 are this terminal (bit n: fd n): CMD gets a pty for
 * those, relayed by term (term_attach_pty). 0: CMD gets no terminal, and
 * this one is only for the questions (cooked mode, as the user left it). */
unsigned int term_stdio(const struct term *t);
dev_t term_rdev(const struct term *t);
/* The terminal's modes as the user left them, and its size. */
void term_modes(const struct term *t, struct termios *tios, struct winsize *ws);
/* Raw mode: input comes byte by byte, unechoed (the asker echoes). */
bool term_is_raw(const struct term *t);

/* Relays between the terminal and the pty whose master this is (term owns
 * it from now on): what is typed goes to CMD, what CMD writes goes to the
 * terminal, both through bounded buffers. */
int term_attach_pty(struct term *t, int master);

/* While a question is on the screen: CMD's output waits (it blocks when the
 * pty is full), so does egressctl's own stderr, and what is typed goes to
 * the input callback instead of CMD. term_hold(t, true) first hands to CMD
 * what was typed before. */
void term_hold(struct term *t, bool hold);
/* Typed bytes: while held (relay) or always (no relay). */
void term_set_input(struct term *t, void (*cb)(void *arg, const unsigned char *buf, size_t n),
		    void *arg);
/* Writes s to the terminal, after what is already queued, held or not. */
void term_say(struct term *t, const char *s);
/* Discards what was typed but not yet read (no relay: before a question). */
void term_flush_input(struct term *t);
/* SIGWINCH: the terminal's new size to the pty. */
void term_winch(struct term *t);
/* CMD has exited: what it wrote last goes to the terminal. */
void term_drain(struct term *t);

/* Flushes what is queued (for a few seconds at most), restores the
 * terminal's modes and stderr, closes the pty's master. */
void term_free(struct term *t);

#endif /* TERM_H */
