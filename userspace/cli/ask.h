// SPDX-License-Identifier: Apache-2.0
/* Live approvals (--ask) on egressctl's terminal: see ask.c. */
#ifndef ASK_H
#define ASK_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/ask_hook.h"

struct event_base;
struct asker;
struct ask_req;
struct term;

/* Asks on t (term.h), which the asker does not own. NULL on no memory. */
struct asker *asker_new(struct event_base *base, struct term *t, int timeout_s);

/* Queues a question ("allow api.example.test:443 for curl[1234]"); cb runs
 * exactly once with the answer, unless the request is cancelled first.
 * Bytes outside printable ASCII in the question are shown as '?'. */
struct ask_req *asker_ask(struct asker *k, const char *question, ask_cb cb, void *arg);
void asker_cancel(struct ask_req *r);
void asker_free(struct asker *k);

/* The asker as the proxy and the responder take it (lib/ask_hook.h); k NULL:
 * no --ask. */
struct ask_hook asker_hook(struct asker *k);

/* ---- the pure parts, for the unit tests ---- */

/* One answer line as typed. */
struct ask_line {
	char buf[64];
	size_t len;
	bool tainted; /* a control byte, an escape sequence or a non-ASCII byte was typed */
};

enum ask_feed {
	ASK_F_MORE = 0,	  /* the line goes on */
	ASK_F_DONE = 1,	  /* Enter: ask_line_answer() says what it was */
	ASK_F_CANCEL = 2, /* ^C or ^D: no */
};

/* Feeds one typed byte. With echo, *echo gets what to write back for it
 * (raw mode echoes nothing by itself): the byte, or erasing for backspace
 * and ^U; otherwise *echo is "". echo must hold 8 bytes. */
enum ask_feed ask_line_feed(struct ask_line *l, unsigned char c, char *echo);

/* y or yes: once; a or always: always (any case, blanks around ignored);
 * anything else, and any tainted line: no. A terminal's answers to queries
 * CMD printed start with ESC, so they can only ever say no. */
enum ask_answer ask_line_answer(const struct ask_line *l);

/* Copies src to dst (dstlen > 0), every byte outside 0x20-0x7e as '?'. */
void ask_sanitize(char *dst, size_t dstlen, const char *src);

#endif /* ASK_H */
