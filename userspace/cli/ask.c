// SPDX-License-Identifier: Apache-2.0
/* Live approvals (--ask): questions asked one at a time on egressctl's
 * terminal (term.c), answered with a line (y: once, a: always this run,
 * anything else or silence until the timeout: no). The connection that
 * asked waits; if it goes away, its question is withdrawn. While a question
 * is on the screen, term holds CMD's output and hands what is typed to the
 * asker, which reads it byte by byte, echoes it (raw mode) and accepts only
 * a clean line: whatever CMD made the terminal send can only say no. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/queue.h>
#include <event2/event.h>

#include "cli/ask.h"
#include "cli/term.h"

struct ask_req {
	TAILQ_ENTRY(ask_req) entry;
	struct asker *k;
	char question[512];
	ask_cb cb;
	void *arg;
};

struct asker {
	struct term *t;
	int timeout_s;
	struct event *timer;
	TAILQ_HEAD(, ask_req) queue; /* the first is on the screen */
	struct ask_line line;
	bool held; /* a question is on the screen: term holds CMD */
};

/* ---- the pure parts ---------------------------------------------------------------------- */

#define CTRL_C	  0x03
#define CTRL_D	  0x04
#define BACKSPACE 0x08
#define DEL	  0x7f

enum ask_feed
ask_line_feed(struct ask_line *l, unsigned char c, char *echo)
{
	if (echo)
		echo[0] = '\0';
	if (c == '\r' || c == '\n')
		return ASK_F_DONE;
	if (c == CTRL_C || c == CTRL_D)
		return ASK_F_CANCEL;
	if (c == DEL || c == BACKSPACE) {
		if (l->len) {
			l->len--;
			if (echo)
				strcpy(echo, "\b \b");
		}
		return ASK_F_MORE;
	}
	if (c < 0x20 || c > 0x7e || l->len >= sizeof(l->buf) - 1) {
		/* ESC starts every key that is not a character (arrows, F
		 * keys) and every answer of the terminal to a query */
		l->tainted = true;
		return ASK_F_MORE;
	}
	l->buf[l->len++] = (char)c;
	if (echo) {
		echo[0] = (char)c;
		echo[1] = '\0';
	}
	return ASK_F_MORE;
}

enum ask_answer
ask_line_answer(const struct ask_line *l)
{
	size_t a = 0, b = l->len, n;
	char w[sizeof(l->buf)];

	if (l->tainted)
		return ASK_NO;
	while (a < b && l->buf[a] == ' ')
		a++;
	while (b > a && l->buf[b - 1] == ' ')
		b--;
	n = b - a;
	for (size_t i = 0; i < n; i++)
		w[i] = (char)tolower((unsigned char)l->buf[a + i]);
	w[n] = '\0';
	if (!strcmp(w, "y") || !strcmp(w, "yes"))
		return ASK_ONCE;
	if (!strcmp(w, "a") || !strcmp(w, "always"))
		return ASK_ALWAYS;
	return ASK_NO;
}

void
ask_sanitize(char *dst, size_t dstlen, const char *src)
{
	size_t i;

	for (i = 0; src[i] && i < dstlen - 1; i++)
		dst[i] =
			(unsigned char)src[i] < 0x20 || (unsigned char)src[i] > 0x7e ? '?' : src[i];
	dst[i] = '\0';
}

/* ---- on the terminal ----------------------------------------------------------------------- */

static void
prompt(struct asker *k)
{
	struct ask_req *r = TAILQ_FIRST(&k->queue);
	struct timeval tv = {k->timeout_s, 0};
	char buf[700];

	if (!r)
		return;
	/* Typed before this question was on the screen, it answers nothing:
	 * for CMD if the relay ran until now (term_hold hands it over),
	 * discarded if another question was showing, or without a relay. */
	if (term_is_raw(k->t) && !k->held)
		term_hold(k->t, true);
	else
		term_flush_input(k->t);
	k->held = true;
	/* attributes and character set as the terminal starts: what CMD set
	 * last cannot make the question invisible or unreadable */
	snprintf(
		buf, sizeof(buf),
		"\033[0m\017\033(B\r\negressctl: %s? [y]es once / [a]lways this run / [N]o (%d s) ",
		r->question, k->timeout_s);
	term_say(k->t, buf);
	memset(&k->line, 0, sizeof(k->line));
	evtimer_add(k->timer, &tv);
}

/* The next question, or back to CMD. */
static void
next(struct asker *k)
{
	if (!TAILQ_EMPTY(&k->queue)) {
		prompt(k);
		return;
	}
	term_hold(k->t, false);
	k->held = false;
}

/* Removes the first question and gives its answer. */
static void
answer(struct asker *k, enum ask_answer a)
{
	struct ask_req *r = TAILQ_FIRST(&k->queue);

	if (!r)
		return;
	TAILQ_REMOVE(&k->queue, r, entry);
	evtimer_del(k->timer);
	r->cb(r->arg, a);
	free(r);
	next(k);
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct asker *k = arg;

	(void)fd;
	(void)what;
	term_say(k->t, "\r\negressctl: no answer: denied\r\n");
	answer(k, ASK_NO);
}

static void
on_input(void *arg, const unsigned char *buf, size_t n)
{
	struct asker *k = arg;
	bool raw = term_is_raw(k->t);
	char echo[8];

	for (size_t i = 0; i < n; i++) {
		enum ask_feed f;

		if (TAILQ_EMPTY(&k->queue))
			return; /* typed with no question on the screen */
		f = ask_line_feed(&k->line, buf[i], raw ? echo : NULL);
		if (raw && echo[0])
			term_say(k->t, echo);
		if (f == ASK_F_MORE)
			continue;
		if (raw || f == ASK_F_CANCEL)
			term_say(k->t, "\r\n");
		answer(k, f == ASK_F_DONE ? ask_line_answer(&k->line) : ASK_NO);
		/* the rest arrived before the next question was shown */
		return;
	}
}

struct asker *
asker_new(struct event_base *base, struct term *t, int timeout_s)
{
	struct asker *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->t = t;
	k->timeout_s = timeout_s > 0 ? timeout_s : 60;
	TAILQ_INIT(&k->queue);
	k->timer = evtimer_new(base, on_timeout, k);
	if (!k->timer) {
		free(k);
		return NULL;
	}
	term_set_input(t, on_input, k);
	return k;
}

struct ask_req *
asker_ask(struct asker *k, const char *question, ask_cb cb, void *arg)
{
	struct ask_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->k = k;
	ask_sanitize(r->question, sizeof(r->question), question);
	r->cb = cb;
	r->arg = arg;
	TAILQ_INSERT_TAIL(&k->queue, r, entry);
	if (TAILQ_FIRST(&k->queue) == r)
		prompt(k);
	return r;
}

void
asker_cancel(struct ask_req *r)
{
	struct asker *k;

	if (!r)
		return;
	k = r->k;
	if (TAILQ_FIRST(&k->queue) == r) {
		term_say(k->t, "\r\negressctl: (the connection is gone)\r\n");
		TAILQ_REMOVE(&k->queue, r, entry);
		evtimer_del(k->timer);
		free(r);
		next(k);
		return;
	}
	TAILQ_REMOVE(&k->queue, r, entry);
	free(r);
}

static struct ask_req *
hook_ask(void *arg, const char *question, ask_cb cb, void *cb_arg)
{
	return asker_ask(arg, question, cb, cb_arg);
}

struct ask_hook
asker_hook(struct asker *k)
{
	struct ask_hook h = {0};

	if (k) {
		h.ask = hook_ask;
		h.cancel = asker_cancel;
		h.arg = k;
	}
	return h;
}

void
asker_free(struct asker *k)
{
	struct ask_req *r;

	if (!k)
		return;
	while ((r = TAILQ_FIRST(&k->queue))) {
		TAILQ_REMOVE(&k->queue, r, entry);
		free(r);
	}
	term_set_input(k->t, NULL, NULL);
	term_hold(k->t, false);
	k->held = false;
	if (k->timer)
		event_free(k->timer);
	free(k);
}
