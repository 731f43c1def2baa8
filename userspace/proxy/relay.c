// SPDX-License-Identifier: Apache-2.0
/* The relay: once a connection is decided, bytes move between the client
 * and upstream sockets with splice(2) through one pipe per direction, so
 * they never enter userspace. Back-pressure: a direction stops reading its
 * source while its pipe cannot drain into the destination. Half-close: EOF
 * from one side is passed on with shutdown(SHUT_WR) once its pipe is empty;
 * the connection closes when both directions are done. Bytes the handshake
 * already read from the client (c->in) and bytes the handler wants sent
 * upstream first (c->uout) are written before splicing starts.
 *
 * Pipes are leased: a direction takes one from the proxy's pool when its
 * source is readable and gives it back, empty, when the source is drained
 * for now (or at EOF), so an idle tunnel costs its two sockets alone. At
 * most pipes_max pipes exist (the descriptor budget, quota.h); a direction
 * that finds none waits in a queue, its source unread, and is woken with
 * the next pipe given back. A pipe with bytes stays with its direction
 * until the destination takes them. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "proxy/conn.h"
#include "proxy/core.h"
#include "lib/log.h"

static int
src_fd(struct conn *c, int dir)
{
	return dir == 0 ? c->cfd : c->ufd;
}

static int
dst_fd(struct conn *c, int dir)
{
	return dir == 0 ? c->ufd : c->cfd;
}

static struct event *
src_ev(struct conn *c, int dir)
{
	return dir == 0 ? &c->cev_r : &c->uev_r;
}

static struct event *
dst_ev(struct conn *c, int dir)
{
	return dir == 0 ? &c->uev_w : &c->cev_w;
}

/* Gives d a pipe: from the pool, else a new one while fewer than
 * pipes_max exist. 0; -EAGAIN: none now, d queued (woken by pipe_put());
 * -1 when a new one could not be made (errno). */
static int
pipe_get(struct proxy *p, struct relay_dir *d)
{
	if (p->npool) {
		p->npool--;
		d->pipe[0] = p->pool[p->npool][0];
		d->pipe[1] = p->pool[p->npool][1];
		return 0;
	}
	if (p->pipes_total >= p->pipes_max) {
		if (!d->waiting) {
			p->pipe_waits++;
			d->waiting = true;
			TAILQ_INSERT_TAIL(&p->pipe_waiters, d, wait);
		}
		return -EAGAIN;
	}
	if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC)) {
		if (!p->pipe_warned)
			log_warn("proxy: cannot make a relay pipe (%d of at most %d exist): "
				 "connections that need one are reset",
				 p->pipes_total, p->pipes_max);
		p->pipe_warned = true;
		return -1;
	}
	fcntl(d->pipe[1], F_SETPIPE_SZ, RELAY_CHUNK);
	p->pipes_total++;
	return 0;
}

/* d gives its pipe back: an empty one to the first direction waiting (woken
 * through its source event), else to the pool; one with bytes is closed. */
static void
pipe_put(struct proxy *p, struct relay_dir *d)
{
	struct relay_dir *w;

	if (d->pipe[0] == -1)
		return;
	if (d->inpipe) {
		close(d->pipe[0]);
		close(d->pipe[1]);
		p->pipes_total--;
	} else if ((w = TAILQ_FIRST(&p->pipe_waiters))) {
		TAILQ_REMOVE(&p->pipe_waiters, w, wait);
		w->waiting = false;
		w->pipe[0] = d->pipe[0];
		w->pipe[1] = d->pipe[1];
		event_active(src_ev(w->owner, w == &w->owner->d[0] ? 0 : 1), EV_READ, 0);
	} else {
		p->pool[p->npool][0] = d->pipe[0];
		p->pool[p->npool][1] = d->pipe[1];
		p->npool++;
	}
	d->pipe[0] = d->pipe[1] = -1;
	d->inpipe = 0;
}

void
relay_pipes_drop(struct conn *c)
{
	for (int i = 0; i < 2; i++) {
		struct relay_dir *d = &c->d[i];

		if (d->waiting) {
			TAILQ_REMOVE(&c->px->pipe_waiters, d, wait);
			d->waiting = false;
		}
		pipe_put(c->px, d);
	}
}

/* The source is read dry for now (or done): the pipe, empty, goes back. */
static enum relay_step
idle(struct conn *c, int dir, enum relay_step step)
{
	if (step == RELAY_BLOCKED)
		event_add(src_ev(c, dir), NULL);
	else
		event_del(src_ev(c, dir));
	pipe_put(c->px, &c->d[dir]);
	return step;
}

enum relay_step
relay_move(struct conn *c, int dir, uint64_t *left)
{
	struct relay_dir *d = &c->d[dir];
	/* chunks per wake-up, so one stream cannot starve the others */
	int budget = RELAY_WAKE / RELAY_CHUNK;
	bool drained = false;
	size_t want;
	ssize_t n;

	if (d->pipe[0] == -1) {
		if (d->eof || (left && !*left)) {
			event_del(dst_ev(c, dir));
			return idle(c, dir, d->eof ? RELAY_EOF : RELAY_LIMIT);
		}
		switch (pipe_get(c->px, d)) {
		case 0:
			break;
		case -EAGAIN:
			event_del(src_ev(c, dir)); /* woken when a pipe is given back */
			return RELAY_BLOCKED;
		default:
			/* out of descriptors: a reset, so that a body that ends
			 * with the connection is not taken for a complete one */
			conn_abort(c, "no relay pipe");
			return RELAY_CLOSED;
		}
	}
	for (;;) {
		/* drain the pipe first */
		while (d->inpipe) {
			n = splice(d->pipe[0], NULL, dst_fd(c, dir), NULL, d->inpipe,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->inpipe -= (size_t)n;
				c->bytes[dir] += (uint64_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				/* destination full: wait for it, stop reading source */
				event_del(src_ev(c, dir));
				event_add(dst_ev(c, dir), NULL);
				return RELAY_BLOCKED;
			}
			conn_close(c, "relay write error");
			return RELAY_CLOSED;
		}
		event_del(dst_ev(c, dir));
		if (d->eof || (left && !*left))
			return idle(c, dir, d->eof ? RELAY_EOF : RELAY_LIMIT);
		if (!budget--)
			return idle(c, dir, RELAY_BLOCKED); /* the next in line goes first */
		if (drained) {
			/* the last read took less than the pipe holds: the source
			 * is empty for now, and epoll (level-triggered) says when
			 * it is not; no read just to hear EAGAIN */
			return idle(c, dir, RELAY_BLOCKED);
		}
		want = left && *left < RELAY_CHUNK ? (size_t)*left : RELAY_CHUNK;
		n = splice(src_fd(c, dir), NULL, d->pipe[1], NULL, want,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			d->inpipe += (size_t)n;
			if (left)
				*left -= (uint64_t)n;
			drained = (size_t)n < want;
			continue;
		}
		if (n == 0) {
			d->eof = true;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			return idle(c, dir, RELAY_BLOCKED);
		if (errno == ECONNRESET || errno == EPIPE) {
			conn_close(c, "reset");
			return RELAY_CLOSED;
		}
		conn_close(c, "relay read error");
		return RELAY_CLOSED;
	}
}

/* One direction of a tunnel: EOF is passed on as shutdown(SHUT_WR). */
static void
pump(struct conn *c, int dir)
{
	struct relay_dir *d = &c->d[dir];

	conn_touch(c);
	if (relay_move(c, dir, NULL) != RELAY_EOF || d->done)
		return;
	d->done = true;
	if (c->d[!dir].done) {
		/* both sides said EOF: close() sends this FIN */
		conn_close(c, "relay done");
		return;
	}
	shutdown(dst_fd(c, dir), SHUT_WR);
}

void
relay_arm(struct conn *c, int dir, event_callback_fn cb)
{
	struct event_base *base = event_get_base(&c->timer);

	event_del(src_ev(c, dir));
	event_del(dst_ev(c, dir));
	event_assign(src_ev(c, dir), base, src_fd(c, dir), EV_READ | EV_PERSIST, cb, c);
	event_assign(dst_ev(c, dir), base, dst_fd(c, dir), EV_WRITE | EV_PERSIST, cb, c);
}

/* client readable or upstream writable */
static void
on_to_upstream(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pump(arg, 0);
}

/* upstream readable or client writable */
static void
on_to_client(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pump(arg, 1);
}

static void
start_splicing(struct conn *c)
{
	relay_arm(c, 0, on_to_upstream);
	relay_arm(c, 1, on_to_client);
	c->state = CS_RELAY;
	conn_timer(c, conn_idle_timeout(c));
	conn_touch(c);
	event_add(&c->cev_r, NULL);
	event_add(&c->uev_r, NULL);
}

/* Writes c->uout then c->in upstream (plain send: they are small). */
static void on_preamble_writable(evutil_socket_t fd, short what, void *arg);

static void
write_preamble(struct conn *c)
{
	while (c->uoutoff < c->uoutlen || c->inlen) {
		const char *buf;
		size_t len;
		ssize_t n;

		if (c->uoutoff < c->uoutlen) {
			buf = c->uout + c->uoutoff;
			len = c->uoutlen - c->uoutoff;
		} else {
			buf = c->in;
			len = c->inlen;
		}
		n = send(c->ufd, buf, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				event_del(&c->uev_w);
				event_assign(&c->uev_w, event_get_base(&c->timer), c->ufd, EV_WRITE,
					     on_preamble_writable, c);
				event_add(&c->uev_w, NULL);
				return;
			}
			conn_close(c, "upstream write error");
			return;
		}
		if (c->uoutoff < c->uoutlen)
			c->uoutoff += (size_t)n;
		else
			conn_drop_input(c, (size_t)n);
	}
	free(c->uout);
	c->uout = NULL;
	c->uoutlen = c->uoutoff = 0;
	free(c->in);
	c->in = NULL;
	c->inlen = c->incap = 0;
	start_splicing(c);
}

static void
on_preamble_writable(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	write_preamble(arg);
}

void
relay_start(struct conn *c)
{
	evtimer_del(&c->timer);
	write_preamble(c);
}
