// SPDX-License-Identifier: Apache-2.0
/* --ask as the proxy and the DNS responder see it: a question put to a
 * human while a connection or a query waits, through callbacks the command
 * that owns the terminal hands down (run: cli/ask.c's asker, through
 * struct target_env). Neither knows where the question is shown. */
#ifndef LIB_ASK_HOOK_H
#define LIB_ASK_HOOK_H

enum ask_answer {
	ASK_NO = 0,	/* no, or no answer in time */
	ASK_ONCE = 1,	/* this connection (or query) only */
	ASK_ALWAYS = 2, /* add the rule for the rest of the run */
};

typedef void (*ask_cb)(void *arg, enum ask_answer a);

struct ask_req;

struct ask_hook {
	/* Queues question ("allow api.example.test:443 for curl[1234]"); cb
	 * runs exactly once with the answer unless cancel(request) runs
	 * first. NULL when it cannot be asked. ask NULL: no --ask. */
	struct ask_req *(*ask)(void *arg, const char *question, ask_cb cb, void *cb_arg);
	void (*cancel)(struct ask_req *r); /* NULL-safe */
	void *arg;
};

#endif /* LIB_ASK_HOOK_H */
