/* Live approvals (--ask) on the controlling terminal: see ask.c. */
#ifndef ASK_H
#define ASK_H

#include <stddef.h>

struct event_base;
struct asker;
struct ask_req;

enum ask_answer {
	ASK_NO = 0,	/* no, or no answer in time */
	ASK_ONCE = 1,	/* this connection (or query) only */
	ASK_ALWAYS = 2, /* add the rule for the rest of the run */
};

typedef void (*ask_cb)(void *arg, enum ask_answer a);

/* Opens /dev/tty. NULL with errbuf set when there is no terminal. */
struct asker *asker_new(struct event_base *base, int timeout_s, char *errbuf, size_t errlen);

/* Queues a question ("allow api.example.test:443 for curl[1234]"); cb runs
 * exactly once with the answer, unless the request is cancelled first. */
struct ask_req *asker_ask(struct asker *k, const char *question, ask_cb cb, void *arg);
void asker_cancel(struct ask_req *r);
void asker_free(struct asker *k);

#endif /* ASK_H */
