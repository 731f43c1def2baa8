/* Live approvals (--ask): questions asked one at a time on the controlling
 * terminal, answered with a line (y: once, a: always this run, anything
 * else or silence until the timeout: no). The connection that asked waits;
 * if it goes away, its question is withdrawn. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/queue.h>
#include <event2/event.h>

#include "ask.h"

struct ask_req {
	TAILQ_ENTRY(ask_req) entry;
	struct asker *k;
	char question[512];
	ask_cb cb;
	void *arg;
};

struct asker {
	int fd;
	int timeout_s;
	struct event *rev, *timer;
	TAILQ_HEAD(, ask_req) queue; /* the first is on the screen */
	char line[128];
	size_t linelen;
};

static void
say(struct asker *k, const char *s)
{
	if (write(k->fd, s, strlen(s)) < 0)
		return; /* the terminal went away; the timeout still answers */
}

static void
prompt(struct asker *k)
{
	struct ask_req *r = TAILQ_FIRST(&k->queue);
	struct timeval tv = {k->timeout_s, 0};
	char buf[700];

	if (!r)
		return;
	snprintf(buf, sizeof(buf),
		 "\r\negressctl: %s? [y]es once / [a]lways this run / [N]o (%d s) ", r->question,
		 k->timeout_s);
	say(k, buf);
	k->linelen = 0;
	evtimer_add(k->timer, &tv);
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
	prompt(k);
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct asker *k = arg;

	(void)fd;
	(void)what;
	say(k, "\r\negressctl: no answer: denied\r\n");
	answer(k, ASK_NO);
}

static void
on_tty(evutil_socket_t fd, short what, void *arg)
{
	struct asker *k = arg;
	char buf[64];
	ssize_t n;

	(void)what;
	n = read(fd, buf, sizeof(buf));
	if (n <= 0)
		return;
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] != '\n' && buf[i] != '\r') {
			if (k->linelen < sizeof(k->line) - 1)
				k->line[k->linelen++] = buf[i];
			continue;
		}
		k->line[k->linelen] = 0;
		if (TAILQ_EMPTY(&k->queue)) {
			k->linelen = 0;
			continue; /* typed with no question on the screen */
		}
		switch (k->line[0]) {
		case 'y':
		case 'Y':
			answer(k, ASK_ONCE);
			break;
		case 'a':
		case 'A':
			answer(k, ASK_ALWAYS);
			break;
		default:
			answer(k, ASK_NO);
			break;
		}
	}
}

struct asker *
asker_new(struct event_base *base, int timeout_s, char *errbuf, size_t errlen)
{
	struct asker *k = calloc(1, sizeof(*k));

	if (!k) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	k->timeout_s = timeout_s > 0 ? timeout_s : 60;
	TAILQ_INIT(&k->queue);
	k->fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (k->fd < 0) {
		snprintf(errbuf, errlen,
			 "--ask needs a terminal to ask on, and this run has none (%s)",
			 strerror(errno));
		free(k);
		return NULL;
	}
	k->rev = event_new(base, k->fd, EV_READ | EV_PERSIST, on_tty, k);
	k->timer = evtimer_new(base, on_timeout, k);
	if (!k->rev || !k->timer || event_add(k->rev, NULL)) {
		snprintf(errbuf, errlen, "out of memory");
		asker_free(k);
		return NULL;
	}
	return k;
}

struct ask_req *
asker_ask(struct asker *k, const char *question, ask_cb cb, void *arg)
{
	struct ask_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->k = k;
	snprintf(r->question, sizeof(r->question), "%s", question);
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
		say(k, "\r\negressctl: (the connection is gone)\r\n");
		TAILQ_REMOVE(&k->queue, r, entry);
		evtimer_del(k->timer);
		free(r);
		prompt(k);
		return;
	}
	TAILQ_REMOVE(&k->queue, r, entry);
	free(r);
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
	if (k->rev)
		event_free(k->rev);
	if (k->timer)
		event_free(k->timer);
	close(k->fd);
	free(k);
}
