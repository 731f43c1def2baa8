// SPDX-License-Identifier: Apache-2.0
/* The DNS responder (see responder.h): one UDP socket and one TCP listener
 * on the same 127.0.0.1 port (and on the containers' address or [::1]);
 * every query attributed through the BPF index (an unattributed or
 * ambiguous sender is dropped), parsed (dns/wire.c) and handed to
 * answer.c; replies sent back, over TCP length-prefixed with a client's
 * head timeout per whole message. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "dns/core.h"
#include "kernel/loader.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/sockaddr.h"

#define FAST_SWEEP_S 1

/* ---- replies ---- */

static void tcp_client_free(struct tcp_client *tc);
static void tcp_flush(struct tcp_client *tc);

/* A TCP client that failed: freed now, or by on_tcp_read when it is the
 * caller further up the stack. */
static void
tcp_fail(struct tcp_client *tc)
{
	if (tc->in_read)
		tc->dead = true;
	else
		tcp_client_free(tc);
}

static void
send_reply(struct dns_server *d, struct waiter *w, const uint8_t *msg, int len)
{
	(void)d; /* a UDP answer leaves from the socket the query came to (w->ufd) */
	if (len < 0)
		return;
	if (!w->tcp) {
		socklen_t sl = w->from.ss_family == AF_INET ? sizeof(struct sockaddr_in)
							    : sizeof(struct sockaddr_in6);

		if (sendto(w->ufd, msg, (size_t)len, MSG_DONTWAIT, (struct sockaddr *)&w->from,
			   sl) < 0)
			log_debug("dns: sendto: %s", strerror(errno));
		return;
	}
	/* TCP: length-prefixed, appended to the client's output */
	{
		struct tcp_client *tc = w->tcp;
		uint8_t *nout;

		tc->pending--;
		if (tc->dead)
			return;
		nout = realloc(tc->out, tc->outlen + 2 + (size_t)len);
		if (!nout) {
			tcp_fail(tc);
			return;
		}
		tc->out = nout;
		tc->out[tc->outlen] = (uint8_t)(len >> 8);
		tc->out[tc->outlen + 1] = (uint8_t)len;
		memcpy(tc->out + tc->outlen + 2, msg, (size_t)len);
		tc->outlen += 2 + (size_t)len;
		tcp_flush(tc);
	}
}

static void
on_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct dns_server *d = arg;

	(void)fd;
	(void)what;
	kpaths_sweep(&d->paths, now_s());
}

static void
process_message(struct dns_server *d, const uint8_t *buf, size_t len,
		const struct sockaddr_storage *from, int ufd, struct tcp_client *tc,
		const struct egr_conn_val *who)
{
	struct waiter *w = calloc(1, sizeof(*w));
	bool id_ok = false;
	int rc;

	if (!w)
		return;
	w->who = *who;
	w->send = send_reply;
	w->ufd = ufd;
	w->tcp = tc;
	if (from)
		w->from = *from;
	if (tc)
		tc->pending++;
	rc = dns_parse_query(buf, len, &w->q, &id_ok);
	/* a response is never answered: two responders would bounce errors */
	if (rc && id_ok && !(len > 2 && (buf[2] & 0x80))) {
		dns_reply_rcode(d, w, rc); /* FORMERR, NOTIMP, BADVERS: dns/wire.c knows how */
		free(w);
		return;
	}
	if (rc) {
		if (tc)
			tc->pending--;
		free(w);
		return;
	}
	dns_answer(d, w);
}

/* ---- UDP ---- */

static void
on_udp(evutil_socket_t fd, short what, void *arg)
{
	struct dns_server *d = arg;
	uint8_t buf[4096];

	(void)what;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		struct egr_conn_val who;
		ssize_t n;

		n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (n < 0)
			return;
		if (d->conns_fd < 0 ||
		    loader_conn_lookup(d->conns_fd, (struct sockaddr *)&from, IPPROTO_UDP, &who)) {
			log_debug("dns: dropped an unattributed datagram");
			continue;
		}
		if (who.flags & EGR_CONN_AMBIGUOUS) {
			/* two sockets (network namespaces) share that address
			 * and port: whose query it is cannot be told */
			log_debug("dns: dropped a datagram of an ambiguous sender");
			continue;
		}
		process_message(d, buf, (size_t)n, &from, fd, NULL, &who);
	}
}

/* ---- TCP ---- */

static void
tcp_client_free(struct tcp_client *tc)
{
	struct dns_server *d = tc->d;

	dns_answer_forget_client(d, tc);
	event_del(&tc->rev);
	event_del(&tc->wev);
	event_del(&tc->timer);
	close(tc->fd);
	free(tc->out);
	LIST_REMOVE(tc, entry);
	d->ntcp--;
	free(tc);
}

static void
tcp_flush(struct tcp_client *tc)
{
	while (tc->outoff < tc->outlen) {
		ssize_t n = send(tc->fd, tc->out + tc->outoff, tc->outlen - tc->outoff,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				event_add(&tc->wev, NULL);
				return;
			}
			tcp_fail(tc);
			return;
		}
		tc->outoff += (size_t)n;
	}
	event_del(&tc->wev);
	free(tc->out);
	tc->out = NULL;
	tc->outlen = tc->outoff = 0;
	if (tc->closing && !tc->pending)
		tcp_fail(tc);
}

static void
on_tcp_write(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	tcp_flush(arg);
}

static void
on_tcp_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	tcp_client_free(arg);
}

static void
on_tcp_read(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_client *tc = arg;
	struct timeval idle = {tc->d->o.head_timeout_s, 0};
	ssize_t n;

	(void)what;
	n = recv(fd, tc->in + tc->inlen, sizeof(tc->in) - tc->inlen, MSG_DONTWAIT);
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		tc->closing = true;
		event_del(&tc->rev);
		if (!tc->pending && !tc->outlen)
			tcp_client_free(tc);
		return;
	}
	tc->inlen += (size_t)n;
	for (;;) {
		size_t mlen;

		if (tc->inlen < 2)
			return;
		mlen = ((size_t)tc->in[0] << 8) | tc->in[1];
		if (mlen == 0 || tc->inlen < 2 + mlen)
			break;
		tc->in_read = true;
		process_message(tc->d, tc->in + 2, mlen, NULL, -1, tc, &tc->who);
		tc->in_read = false;
		if (tc->dead) {
			tcp_client_free(tc);
			return;
		}
		memmove(tc->in, tc->in + 2 + mlen, tc->inlen - 2 - mlen);
		tc->inlen -= 2 + mlen;
		/* the clock restarts for each whole message, not for each
		 * byte: a message dribbled in is cut off the head timeout
		 * after the last whole one */
		evtimer_add(&tc->timer, &idle);
	}
	if (tc->inlen >= 2 && (((size_t)tc->in[0] << 8) | tc->in[1]) == 0)
		tcp_client_free(tc); /* a zero-length message: garbage */
}

static void
on_tcp_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct dns_server *d = arg;
	struct timeval idle = {d->o.head_timeout_s, 0};
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);
	struct egr_conn_val who;
	struct tcp_client *tc;
	int fd;

	(void)what;
	fd = accept4(lfd, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (d->conns_fd < 0 ||
	    loader_conn_lookup(d->conns_fd, (struct sockaddr *)&peer, IPPROTO_TCP, &who) ||
	    (who.flags & EGR_CONN_AMBIGUOUS) || d->ntcp >= DNS_TCP_MAX_CLIENTS) {
		close(fd);
		return;
	}
	tc = calloc(1, sizeof(*tc));
	if (!tc) {
		close(fd);
		return;
	}
	tc->d = d;
	tc->fd = fd;
	tc->who = who;
	event_assign(&tc->rev, d->base, fd, EV_READ | EV_PERSIST, on_tcp_read, tc);
	event_assign(&tc->wev, d->base, fd, EV_WRITE | EV_PERSIST, on_tcp_write, tc);
	evtimer_assign(&tc->timer, d->base, on_tcp_timer, tc);
	LIST_INSERT_HEAD(&d->tcp, tc, entry);
	d->ntcp++;
	event_add(&tc->rev, NULL);
	evtimer_add(&tc->timer, &idle);
}

/* ---- setup ---- */

/* A UDP socket and a TCP listener on ip:port (network order; port 0: the
 * UDP socket's), ip an IPv4 address or, with v6, ::1 (IPV6_V6ONLY), or -1
 * with errno. freebind: the address may come later (a container
 * runtime's bridge). */
static int
open_pair(uint32_t ip, bool v6, uint16_t port, bool freebind, int *ufd, int *tfd, uint16_t *bound)
{
	struct sockaddr_storage ss;
	socklen_t sl = sockaddr_listen_addr(&ss, ip, v6, port);
	int one = 1, e;

	*ufd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	*tfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (*ufd < 0 || *tfd < 0)
		goto fail;
	setsockopt(*tfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v6 && (setsockopt(*ufd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) ||
		   setsockopt(*tfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))))
		goto fail;
	if (freebind && (setsockopt(*ufd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) ||
			 setsockopt(*tfd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one))))
		goto fail;
	if (bind(*ufd, (struct sockaddr *)&ss, sl) ||
	    getsockname(*ufd, (struct sockaddr *)&ss, &sl))
		goto fail;
	/* the TCP listener on the same port; another socket may hold it */
	if (bind(*tfd, (struct sockaddr *)&ss, sl) || listen(*tfd, 128))
		goto fail;
	*bound = sockaddr_port(&ss);
	return 0;
fail:
	e = errno;
	if (*ufd >= 0)
		close(*ufd);
	if (*tfd >= 0)
		close(*tfd);
	*ufd = *tfd = -1;
	errno = e;
	return -1;
}

/* 127.0.0.1 and, on the same port, ns_ip4 (containers) or ::1 (--ipv6). */
static int
open_sockets(struct dns_server *d, char *errbuf, size_t errlen)
{
	char where[INET6_ADDRSTRLEN + 2] = "127.0.0.1";
	uint32_t ns = d->o.ns_ip4;
	bool v6 = d->o.ipv6;
	int e;

	for (int attempt = 0; attempt < 20; attempt++) {
		uint16_t port = 0;

		if (open_pair(htonl(INADDR_LOOPBACK), false, d->o.port, false, &d->ufd, &d->tfd,
			      &port)) {
			if (d->o.port)
				break; /* that port or none */
			continue;
		}
		if ((!ns && !v6) || !open_pair(ns, v6, port, !v6, &d->ufd_ns, &d->tfd_ns, &port)) {
			d->port = port;
			return 0;
		}
		e = errno;
		sockaddr_listen_where(ns, v6, where, sizeof(where));
		close(d->ufd);
		close(d->tfd);
		d->ufd = d->tfd = -1;
		errno = e;
		if (d->o.port || e != EADDRINUSE)
			break; /* that port or none */
	}
	snprintf(errbuf, errlen, "cannot open the DNS listeners on %s%s%.0u: %s%s", where,
		 d->o.port ? ":" : "", d->o.port, strerror(errno),
		 v6 && strchr(where, ':') ? " (--ipv6 needs IPv6 on the loopback device)" : "");
	return -1;
}

struct dns_server *
dns_new(struct event_base *base, const struct dns_opts *o, char *errbuf, size_t errlen)
{
	struct timeval sweep = {FAST_SWEEP_S, 0};
	struct dns_server *d = calloc(1, sizeof(*d));

	if (!d) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	d->base = base;
	d->o = *o;
	if (!d->o.ttl_min)
		d->o.ttl_min = 5;
	if (!d->o.ttl_max)
		d->o.ttl_max = 300;
	d->conns_fd = -1;
	d->ufd = d->tfd = d->ufd_ns = d->tfd_ns = -1;
	LIST_INIT(&d->inflight);
	kpaths_init(&d->paths, o->audit_mode);
	LIST_INIT(&d->tcp);
	LIST_INIT(&d->asks);
	if (open_sockets(d, errbuf, errlen))
		goto fail;
	d->uev = event_new(base, d->ufd, EV_READ | EV_PERSIST, on_udp, d);
	d->tev = event_new(base, d->tfd, EV_READ | EV_PERSIST, on_tcp_accept, d);
	d->sweep = event_new(base, -1, EV_PERSIST, on_sweep, d);
	if (!d->uev || !d->tev || !d->sweep || event_add(d->uev, NULL) || event_add(d->tev, NULL) ||
	    event_add(d->sweep, &sweep)) {
		snprintf(errbuf, errlen, "cannot watch the DNS listeners");
		goto fail;
	}
	if (d->ufd_ns >= 0) {
		d->uev_ns = event_new(base, d->ufd_ns, EV_READ | EV_PERSIST, on_udp, d);
		d->tev_ns = event_new(base, d->tfd_ns, EV_READ | EV_PERSIST, on_tcp_accept, d);
		if (!d->uev_ns || !d->tev_ns || event_add(d->uev_ns, NULL) ||
		    event_add(d->tev_ns, NULL)) {
			snprintf(errbuf, errlen, "cannot watch the DNS listeners");
			goto fail;
		}
	}
	return d;
fail:
	dns_free(d);
	return NULL;
}

uint16_t
dns_port(const struct dns_server *d)
{
	return d->port;
}

void
dns_set_index(struct dns_server *d, int conns_fd)
{
	d->conns_fd = conns_fd;
}

void
dns_set_kpath(struct dns_server *d, const struct kpath *kp)
{
	d->paths.kp = kp;
}

void
dns_set_policy(struct dns_server *d, const struct policy *p, struct policy *rw,
	       struct dns_revoked *rv)
{
	memset(rv, 0, sizeof(*rv));
	d->o.policy = p;
	d->o.policy_rw = rw;
	dns_answer_set_policy(d, p, &rv->fast, &rv->names);
}

void
dns_get_stats(const struct dns_server *d, struct dns_stats *st)
{
	*st = d->st;
	st->fast_path = d->paths.fast_path;
	st->kv_path = d->paths.kv_path;
}

void
dns_free(struct dns_server *d)
{
	struct tcp_client *tc;

	if (!d)
		return;
	while ((tc = LIST_FIRST(&d->tcp)))
		tcp_client_free(tc);
	dns_answer_free(d);
	kpaths_free(&d->paths);
	if (d->uev)
		event_free(d->uev);
	if (d->tev)
		event_free(d->tev);
	if (d->sweep)
		event_free(d->sweep);
	if (d->uev_ns)
		event_free(d->uev_ns);
	if (d->tev_ns)
		event_free(d->tev_ns);
	if (d->ufd >= 0)
		close(d->ufd);
	if (d->tfd >= 0)
		close(d->tfd);
	if (d->ufd_ns >= 0)
		close(d->ufd_ns);
	if (d->tfd_ns >= 0)
		close(d->tfd_ns);
	free(d);
}
