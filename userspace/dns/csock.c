// SPDX-License-Identifier: Apache-2.0
/* The responder's upstream UDP client (see csock.h). A socket per query
 * cost each uncached query socket(), three fcntl(), connect(), an epoll
 * add, close() and an epoll delete on the closed descriptor (c-ares 1.18
 * closes an idle UDP socket, and has no per-socket query limit to keep
 * one for a while); here a socket serves CSOCK_REUSE queries, then is
 * retired and closed once its last pending query is settled, so source
 * ports still change every few dozen queries; a socket with nothing
 * pending for CSOCK_IDLE_MS is closed too. Transaction ids come from a
 * buffer of getrandom() bytes (one system call per 128 ids). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "dns/csock.h"

#define CSOCK_BUF     65536 /* an answer datagram, whatever its EDNS size */
#define DNS_HDR	      12
#define DNS_QR	      0x80 /* in byte 2 */
#define DNS_TC	      0x02 /* in byte 2 */
#define CSOCK_QSIZE   600  /* a query message: one question, an OPT record */
#define CSOCK_IDLE_MS 1000 /* a socket with nothing pending this long is closed */

struct cs_sock;

struct cs_req {
	TAILQ_ENTRY(cs_req) entry; /* its socket's pending queries */
	struct cs_sock *s;
	struct event timer;
	csock_cb cb;
	void *arg;
	uint16_t id;	  /* the id it went out with */
	uint16_t orig_id; /* the caller's, given back with the answer */
	size_t qlen;
	unsigned char q[CSOCK_QSIZE];
};

struct cs_sock {
	LIST_ENTRY(cs_sock) entry;
	struct csock *cs;
	int fd;
	struct event ev;
	struct event idle; /* nothing pending for CSOCK_IDLE_MS: closed */
	int sent;	   /* queries sent on it; CSOCK_REUSE retires it */
	bool retired;	   /* takes no new query; closed when none is pending */
	bool reading;	   /* in on_readable(): a close waits for its end */
	bool dead;	   /* closed while reading */
	TAILQ_HEAD(, cs_req) pending;
};

struct csock {
	struct event_base *base;
	struct sockaddr_storage server;
	socklen_t slen;
	int timeout_ms;
	struct cs_sock *cur; /* the socket new queries go out on, or NULL */
	LIST_HEAD(, cs_sock) socks;
	unsigned char rnd[256];
	size_t rndoff;
	unsigned char *buf; /* CSOCK_BUF: the datagram being read */
	struct csock_stats st;
};

static void on_readable(evutil_socket_t fd, short what, void *arg);
static void sock_retire(struct cs_sock *s);

static void
on_idle(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	sock_retire(arg); /* nothing is pending: closed */
}

/* Two random bytes; the buffer refilled with getrandom() when used up
 * (if that fails, random() keeps ids unpredictable enough to stay apart,
 * not against an attacker: said here, not expected on Linux >= 3.17). */
static uint16_t
rand16(struct csock *cs)
{
	if (cs->rndoff + 2 > sizeof(cs->rnd)) {
		if (getrandom(cs->rnd, sizeof(cs->rnd), 0) != (ssize_t)sizeof(cs->rnd))
			for (size_t i = 0; i < sizeof(cs->rnd); i++)
				cs->rnd[i] = (unsigned char)random();
		cs->rndoff = 0;
	}
	cs->rndoff += 2;
	return (uint16_t)(cs->rnd[cs->rndoff - 2] << 8 | cs->rnd[cs->rndoff - 1]);
}

/* The end of the question section of a message we built: header, one
 * name (labels, no compression), type and class. 0 if malformed. */
static size_t
question_end(const unsigned char *m, size_t len)
{
	size_t o = DNS_HDR;

	if (len < DNS_HDR || m[4] != 0 || m[5] != 1)
		return 0;
	while (o < len && m[o]) {
		if (m[o] > 63)
			return 0;
		o += 1 + m[o];
	}
	if (o + 5 > len)
		return 0;
	return o + 5;
}

static unsigned char
lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

bool
csock_match(const unsigned char *q, size_t qlen, const unsigned char *a, size_t alen)
{
	size_t end = question_end(q, qlen);

	if (!end || alen < end || !(a[2] & DNS_QR) || a[0] != q[0] || a[1] != q[1] ||
	    a[4] != q[4] || a[5] != q[5])
		return false;
	/* label lengths are below 64, so lower() leaves them as they are */
	for (size_t i = DNS_HDR; i < end; i++)
		if (lower(a[i]) != lower(q[i]))
			return false;
	return true;
}

static void
sock_close(struct cs_sock *s)
{
	struct csock *cs = s->cs;

	if (cs->cur == s)
		cs->cur = NULL;
	if (s->reading) {
		s->dead = true;
		return;
	}
	evtimer_del(&s->idle);
	event_del(&s->ev);
	close(s->fd);
	LIST_REMOVE(s, entry);
	free(s);
}

/* r is settled: off its socket (closed if retired and now idle), its
 * callback run, freed. */
static void
settle(struct cs_req *r, int status, const unsigned char *answer, size_t alen)
{
	struct cs_sock *s = r->s;
	struct csock *cs = s->cs;

	evtimer_del(&r->timer);
	TAILQ_REMOVE(&s->pending, r, entry);
	if (s->retired && TAILQ_EMPTY(&s->pending)) {
		sock_close(s);
	} else if (TAILQ_EMPTY(&s->pending)) {
		/* an idle socket is not kept: an idle responder holds no
		 * descriptor for it, and its next query gets a new port */
		struct timeval tv = {CSOCK_IDLE_MS / 1000, (CSOCK_IDLE_MS % 1000) * 1000};

		evtimer_add(&s->idle, &tv);
	}
	if (status == 0)
		cs->st.answered++;
	else if (status == -EAGAIN)
		cs->st.handed++;
	r->cb(status, answer, alen, r->arg);
	free(r);
}

/* s takes no new query; closed now if none is pending on it. */
static void
sock_retire(struct cs_sock *s)
{
	if (s->cs->cur == s)
		s->cs->cur = NULL;
	s->retired = true;
	if (TAILQ_EMPTY(&s->pending))
		sock_close(s);
}

/* The socket is broken (an ICMP error, say): everything on it is asked
 * again elsewhere. */
static void
sock_fail(struct cs_sock *s)
{
	struct cs_req *r;

	if (s->cs->cur == s)
		s->cs->cur = NULL;
	s->retired = true;
	while ((r = TAILQ_FIRST(&s->pending)))
		settle(r, -EAGAIN, NULL, 0); /* the last closes s */
}

static struct cs_sock *
sock_open(struct csock *cs)
{
	struct cs_sock *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->fd = socket(cs->server.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd == -1) {
		free(s);
		return NULL;
	}
	/* the kernel binds a random ephemeral port here */
	if (connect(s->fd, (const struct sockaddr *)&cs->server, cs->slen)) {
		int e = errno;

		close(s->fd);
		free(s);
		errno = e;
		return NULL;
	}
	s->cs = cs;
	TAILQ_INIT(&s->pending);
	evtimer_assign(&s->idle, cs->base, on_idle, s);
	event_assign(&s->ev, cs->base, s->fd, EV_READ | EV_PERSIST, on_readable, s);
	if (event_add(&s->ev, NULL)) {
		close(s->fd);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	LIST_INSERT_HEAD(&cs->socks, s, entry);
	cs->st.sockets++;
	return s;
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	settle(arg, -EAGAIN, NULL, 0);
}

static void
on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct cs_sock *s = arg;
	struct csock *cs = s->cs;
	unsigned char *b = cs->buf;

	(void)what;
	s->reading = true;
	/* until EAGAIN, or nothing is pending: a datagram then answers
	 * nothing, and the next wake-up reads it (no read to hear EAGAIN
	 * after the one answer a lone query waits for) */
	while (!s->dead && !TAILQ_EMPTY(&s->pending)) {
		ssize_t n = recv(fd, b, CSOCK_BUF, 0);
		struct cs_req *r;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				sock_fail(s); /* ECONNREFUSED and the like */
			break;
		}
		TAILQ_FOREACH(r, &s->pending, entry)
		if (csock_match(r->q, r->qlen, b, (size_t)n))
			break;
		if (!r) {
			cs->st.ignored++;
			continue;
		}
		if (b[2] & DNS_TC) { /* too long for UDP: the full resolver asks over TCP */
			settle(r, -EAGAIN, NULL, 0);
		} else {
			b[0] = (unsigned char)(r->orig_id >> 8);
			b[1] = (unsigned char)r->orig_id;
			settle(r, 0, b, (size_t)n);
		}
	}
	s->reading = false;
	if (s->dead)
		sock_close(s);
}

struct csock *
csock_new(struct event_base *base, const struct sockaddr *sa, socklen_t salen, int timeout_ms)
{
	struct csock *cs;

	if (salen > sizeof(cs->server) || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)) {
		errno = EAFNOSUPPORT;
		return NULL;
	}
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return NULL;
	cs->buf = malloc(CSOCK_BUF);
	if (!cs->buf) {
		free(cs);
		return NULL;
	}
	cs->base = base;
	memcpy(&cs->server, sa, salen);
	cs->slen = salen;
	cs->timeout_ms = timeout_ms;
	cs->rndoff = sizeof(cs->rnd); /* filled at the first use */
	LIST_INIT(&cs->socks);
	return cs;
}

void
csock_free(struct csock *cs)
{
	struct cs_sock *s;

	if (!cs)
		return;
	while ((s = LIST_FIRST(&cs->socks))) {
		struct cs_req *r;

		s->retired = true;
		if (TAILQ_EMPTY(&s->pending)) {
			sock_close(s);
			continue;
		}
		while ((r = TAILQ_FIRST(&s->pending)))
			settle(r, -ECANCELED, NULL, 0); /* the last closes s */
	}
	free(cs->buf);
	free(cs);
}

/* An id for a query on s that none pending there has. */
static uint16_t
fresh_id(struct csock *cs, struct cs_sock *s)
{
	for (;;) {
		uint16_t id = rand16(cs);
		struct cs_req *r;

		TAILQ_FOREACH(r, &s->pending, entry)
		if (r->id == id)
			break;
		if (!r)
			return id;
	}
}

int
csock_send(struct csock *cs, const unsigned char *q, size_t qlen, csock_cb cb, void *arg)
{
	struct timeval tv = {cs->timeout_ms / 1000, (cs->timeout_ms % 1000) * 1000};
	struct cs_sock *s;
	struct cs_req *r;

	if (qlen > CSOCK_QSIZE || !question_end(q, qlen)) {
		errno = EINVAL;
		return -1;
	}
	if (!cs->cur && !(cs->cur = sock_open(cs)))
		return -1;
	s = cs->cur;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -1;
	memcpy(r->q, q, qlen);
	r->qlen = qlen;
	r->orig_id = (uint16_t)(q[0] << 8 | q[1]);
	r->id = fresh_id(cs, s);
	r->q[0] = (unsigned char)(r->id >> 8);
	r->q[1] = (unsigned char)r->id;
	if (send(s->fd, r->q, qlen, MSG_NOSIGNAL) != (ssize_t)qlen) {
		int e = errno;

		free(r);
		sock_retire(s); /* the next query tries a new socket */
		errno = e;
		return -1;
	}
	evtimer_del(&s->idle);
	r->s = s;
	r->cb = cb;
	r->arg = arg;
	evtimer_assign(&r->timer, cs->base, on_timeout, r);
	evtimer_add(&r->timer, &tv);
	TAILQ_INSERT_TAIL(&s->pending, r, entry);
	cs->st.sent++;
	if (++s->sent >= CSOCK_REUSE)
		sock_retire(s);
	return 0;
}

void
csock_get_stats(const struct csock *cs, struct csock_stats *st)
{
	*st = cs->st;
}
