// SPDX-License-Identifier: Apache-2.0
/* A connection core for the unit tests of the proxy's protocols
 * (test_proto.c): the services of conn.h that proxy.c, conn.c and relay.c
 * give a protocol, over one struct conn whose client is a bufferevent_pair.
 * The test writes the client's bytes into its end (fake.client); the
 * protocol reads them from the other end while it reads the client
 * (conn_read_client: as with a socket, bytes wait while it replies), and
 * its replies (conn_reply) come out at the test's end, gathered in
 * fake.out. No socket, no root. Decisions are the real rule engine's, on
 * fake.pol. The upstream connect is recorded and answered with fake.up_fd
 * (a descriptor that is no socket: /dev/null) or, when that is -1, with
 * the error fake.up_err; the relay is recorded, not run. Timers are
 * recorded, and fired by the test (fake_fire_timer). It defines the
 * functions it stands in for: include it in one test file, linked without
 * proxy.c, conn.c and relay.c. */
#ifndef CONN_FAKE_H
#define CONN_FAKE_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proxy/conn.h"

struct fake {
	struct event_base *base;
	struct bufferevent *client, *proxy; /* the pair: the test's end, the protocol's */
	struct evbuffer *out;		    /* every byte the client was sent */
	struct conn c;
	struct policy *pol;
	int up_fd; /* what a connect upstream gives: -1 fails with up_err */
	int up_err;
	const char *learned;  /* conn_learned_name() */
	const char *upstream; /* conn_upstream_proxy() */
	/* what the protocol did */
	int ndecided;	   /* conn_decide() calls */
	int allowed;	   /* the last decision: 1, 0; -1 none */
	bool up_called;	   /* conn_connect_upstream() */
	char up_host[256]; /* ... to c->host (or "" with c->orig) */
	uint16_t up_port;  /* ... and c->port */
	bool relayed;	   /* relay_start() */
	bool inspected;	   /* conn_inspect(): handed to the inspector */
	bool closed, aborted;
	char why[64];	       /* conn_close()'s or conn_abort()'s reason */
	int timer_s, timer_ms; /* the last conn_timer(), conn_timer_ms(); -1 none */
};

static struct fake fake;

static void
fake_on_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t n = evbuffer_get_length(in);

	if (c->inlen + n > c->incap) {
		c->incap = c->inlen + n;
		c->in = realloc(c->in, c->incap);
		assert_non_null(c->in);
	}
	evbuffer_remove(in, c->in + c->inlen, n);
	c->inlen += n;
	if (c->state == CS_HEAD && c->on_input && !fake.closed)
		c->on_input(c);
}

/* The reply is all with the client: what the protocol asked for next. */
static void
fake_on_written(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (c->state != CS_REPLY || fake.closed)
		return;
	c->state = CS_HEAD;
	if (!c->after_reply) {
		conn_close(c, "replied");
		return;
	}
	c->after_reply(c);
}

static void
fake_on_client(struct bufferevent *bev, void *arg)
{
	(void)arg;
	evbuffer_add_buffer(fake.out, bufferevent_get_input(bev));
}

static void
fake_nothing(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* A new connection for ops, its client bytes not sent yet; the policy
 * allows allow and denies deny (NULL: none). */
static void
fake_open(const char *const *allow, const char *const *deny)
{
	struct bufferevent *pair[2];
	char err[256];

	memset(&fake, 0, sizeof(fake));
	fake.base = event_base_new();
	assert_non_null(fake.base);
	assert_int_equal(bufferevent_pair_new(fake.base, BEV_OPT_DEFER_CALLBACKS, pair), 0);
	fake.client = pair[0];
	fake.proxy = pair[1];
	fake.out = evbuffer_new();
	fake.pol = policy_new();
	assert_non_null(fake.out);
	assert_non_null(fake.pol);
	for (int i = 0; allow && allow[i]; i++) {
		char rule[256], *bar; /* "rule|METHODS" */

		snprintf(rule, sizeof(rule), "%s", allow[i]);
		bar = strchr(rule, '|');
		if (bar)
			*bar++ = 0;
		assert_int_equal(
			policy_add(fake.pol, POLICY_ALLOW, rule, bar, "test", err, sizeof(err)), 0);
	}
	for (int i = 0; deny && deny[i]; i++)
		assert_int_equal(
			policy_add(fake.pol, POLICY_DENY, deny[i], NULL, "test", err, sizeof(err)),
			0);
	fake.up_fd = -1;
	fake.up_err = ECONNREFUSED;
	fake.allowed = -1;
	fake.timer_s = fake.timer_ms = -1;
	fake.c.cfd = -1;
	fake.c.ufd = -1;
	event_assign(&fake.c.timer, fake.base, -1, 0, fake_nothing, NULL);
	event_assign(&fake.c.cev_r, fake.base, -1, 0, fake_nothing, NULL);
	event_assign(&fake.c.cev_w, fake.base, -1, 0, fake_nothing, NULL);
	bufferevent_setcb(fake.proxy, fake_on_read, fake_on_written, NULL, &fake.c);
	bufferevent_setcb(fake.client, fake_on_client, NULL, NULL, NULL);
	bufferevent_enable(fake.client, EV_READ);
}

/* Runs the loop until nothing is left to do at once. */
static void
fake_run(void)
{
	for (int i = 0; i < 64; i++)
		event_base_loop(fake.base, EVLOOP_NONBLOCK);
}

/* The client sends n bytes; what they set off runs. */
static void
fake_send(const void *data, size_t n)
{
	assert_int_equal(bufferevent_write(fake.client, data, n), 0);
	fake_run();
}

/* The core's start of c with ops (conn_start()): the head timer, the
 * protocol's start, then what the client has sent. */
static void
fake_start(const struct proto_ops *ops)
{
	fake.c.ops = ops;
	fake.c.state = CS_HEAD;
	conn_timer(&fake.c, conn_head_timeout(&fake.c));
	if (ops->start)
		assert_int_equal(ops->start(&fake.c), 0);
	fake_run();
}

/* c->timer fired: the protocol's timeout, or the core's. */
static void
fake_fire_timer(void)
{
	if (fake.closed)
		return;
	if (fake.c.ops->timeout)
		fake.c.ops->timeout(&fake.c);
	else
		conn_timed_out(&fake.c);
	fake_run();
}

static void
fake_close(void)
{
	if (!fake.closed && fake.c.ops && fake.c.ops->free)
		fake.c.ops->free(&fake.c);
	if (fake.c.ufd >= 0)
		close(fake.c.ufd);
	if (fake.up_fd >= 0)
		close(fake.up_fd);
	free(fake.c.in);
	free(fake.c.uout);
	free(fake.c.path);
	event_del(&fake.c.timer);
	event_del(&fake.c.cev_r);
	bufferevent_free(fake.client);
	bufferevent_free(fake.proxy);
	evbuffer_free(fake.out);
	policy_free(fake.pol);
	event_base_free(fake.base);
}

/* ---- the core's services (conn.h) ------------------------------------------------- */

void
conn_close(struct conn *c, const char *why)
{
	if (fake.closed)
		return;
	if (c->ops && c->ops->free)
		c->ops->free(c);
	fake.closed = true;
	snprintf(fake.why, sizeof(fake.why), "%s", why);
	bufferevent_disable(fake.proxy, EV_READ | EV_WRITE);
}

void
conn_abort(struct conn *c, const char *why)
{
	conn_close(c, why);
	fake.aborted = true;
}

void
conn_set_proto(struct conn *c, const struct proto_ops *ops, void *pstate)
{
	if (c->ops->free)
		c->ops->free(c);
	c->ops = ops;
	c->pstate = pstate;
}

void
conn_inspect(struct conn *c)
{
	(void)c;
	fake.inspected = true; /* the inspector (inspect/) is not linked here */
}

int
conn_set_path(struct conn *c, const char *path, size_t len)
{
	free(c->path);
	c->path = path ? strndup(path, len) : NULL;
	return 0;
}

void
conn_timed_out(struct conn *c)
{
	conn_close(c, c->state == CS_HEAD ? "client head timeout" : "timeout");
}

void
conn_timer(struct conn *c, int seconds)
{
	(void)c;
	fake.timer_s = seconds;
	fake.timer_ms = -1;
}

void
conn_timer_ms(struct conn *c, int ms)
{
	(void)c;
	fake.timer_ms = ms;
	fake.timer_s = -1;
}

void
conn_touch(struct conn *c)
{
	(void)c;
}

void
conn_read_client(struct conn *c, void (*on_input)(struct conn *c))
{
	c->state = CS_HEAD;
	c->on_input = on_input;
	bufferevent_enable(fake.proxy, EV_READ);
}

void
conn_drop_input(struct conn *c, size_t n)
{
	if (n >= c->inlen) {
		c->inlen = 0;
		return;
	}
	memmove(c->in, c->in + n, c->inlen - n);
	c->inlen -= n;
}

void
conn_reply(struct conn *c, const char *data, size_t len, conn_step next)
{
	c->after_reply = next;
	c->state = CS_REPLY;
	bufferevent_disable(fake.proxy, EV_READ);
	bufferevent_enable(fake.proxy, EV_WRITE);
	assert_int_equal(bufferevent_write(fake.proxy, data, len), 0);
}

void
conn_query(const struct conn *c, const struct sockaddr *addr, struct policy_query *q,
	   struct sockaddr_storage *lit)
{
	struct sockaddr_in *in = (struct sockaddr_in *)lit;

	memset(q, 0, sizeof(*q));
	memset(lit, 0, sizeof(*lit));
	q->host = c->host[0] ? c->host : NULL;
	q->addr = addr;
	if (!addr && q->host && inet_pton(AF_INET, q->host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET; /* the tests' literals are IPv4 */
		in->sin_port = htons(c->port);
		q->addr = (const struct sockaddr *)lit;
		q->host = NULL;
	}
	q->port = c->port;
	q->proto = c->proto;
	q->method = c->method[0] ? c->method : NULL;
	q->path = c->path;
}

int
conn_decide(struct conn *c, const struct sockaddr *addr, struct policy_decision *d,
	    void (*cont)(struct conn *c, bool allowed))
{
	struct sockaddr_storage lit;
	struct policy_query q;

	(void)cont; /* no --ask here */
	conn_query(c, addr, &q, &lit);
	if (policy_decide(fake.pol, &q, d)) {
		memset(d, 0, sizeof(*d));
		d->action = POLICY_DENY;
		d->reason = POLICY_R_NO_RULE;
	}
	fake.ndecided++;
	fake.allowed = d->action == POLICY_ALLOW;
	c->allowed = fake.allowed;
	c->inspect = fake.allowed && c->proto == POLICY_P_TLS && d->inspect;
	c->rule = fake.allowed ? d->rule : NULL;
	return fake.allowed;
}

static void
fake_connected(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (fake.closed)
		return;
	c->ufd = fake.up_fd;
	fake.up_fd = -1; /* c's now */
	c->up_err = c->ufd == -1 ? fake.up_err : 0;
	c->on_upstream(c);
}

void
conn_connect_upstream(struct conn *c, void (*done)(struct conn *c))
{
	static const struct timeval now = {0, 0};

	fake.up_called = true;
	snprintf(fake.up_host, sizeof(fake.up_host), "%s", c->host);
	fake.up_port = c->port;
	c->on_upstream = done;
	c->state = CS_CONNECT;
	assert_int_equal(event_base_once(fake.base, -1, EV_TIMEOUT, fake_connected, c, &now), 0);
}

void
relay_start(struct conn *c)
{
	c->state = CS_RELAY;
	fake.relayed = true;
}

/* The relay's splice and the exchange's bufferevents need real sockets:
 * no test here gets that far. */
enum relay_step
relay_move(struct conn *c, int dir, uint64_t *left)
{
	(void)c;
	(void)dir;
	(void)left;
	fail_msg("relay_move: not part of these tests");
	return RELAY_CLOSED;
}

void
relay_arm(struct conn *c, int dir, event_callback_fn cb)
{
	(void)c;
	(void)dir;
	(void)cb;
	fail_msg("relay_arm: not part of these tests");
}

void
conn_over_words(const struct conn *c, char *buf, size_t len)
{
	(void)c;
	snprintf(buf, len, "over the test's limit");
}

const char *
conn_learned_name(const struct conn *c)
{
	(void)c;
	return fake.learned;
}

int
conn_sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

struct secrets *
conn_secrets(const struct conn *c)
{
	(void)c;
	return NULL;
}

void
conn_scan_secrets(struct conn *c, const char *buf, size_t len)
{
	(void)buf;
	(void)len;
	c->leak = 0;
}

const struct policy *
conn_policy(const struct conn *c)
{
	(void)c;
	return fake.pol;
}

int
conn_idle_timeout(const struct conn *c)
{
	(void)c;
	return 600;
}

int
conn_head_timeout(const struct conn *c)
{
	(void)c;
	return 10;
}

int
conn_response_timeout(const struct conn *c)
{
	(void)c;
	return 60;
}

const char *
conn_upstream_proxy(const struct conn *c)
{
	(void)c;
	return fake.upstream;
}

#endif /* CONN_FAKE_H */
