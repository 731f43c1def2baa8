// SPDX-License-Identifier: Apache-2.0
/* The upstream proxy (--upstream-proxy, upstream.h): where the proxy's
 * core sends an allowed connection that the policy's routes do not let go
 * direct (policy_via_upstream()). The decision is taken before: nothing
 * of a denied connection ever reaches the upstream proxy. Here its
 * address is resolved and connected to (conn_connect_addrs(), the connect
 * timeout per address), and then either
 *  - a tunnel is asked for: CONNECT host:port with the name, not an
 *    address it resolves to here (the network may have no resolver for
 *    it: the upstream proxy resolves it), and the reply is read exactly to
 *    the end of its head (parse/http_resp.h), so that the tunnel's first
 *    bytes stay in the socket for the relay. A 2xx reply is a connected
 *    upstream for the protocol; anything else is a failure with its status
 *    kept (c->up_status). TLS, SOCKS5 and transparent streams, tcp://, and
 *    a WebSocket upgrade go this way; or
 *  - a plain-HTTP request is sent as it is, in absolute form
 *    (http_fwd_absolute()): proxies take that for any port, where CONNECT
 *    is commonly limited to 443 (squid's default configuration).
 * Proxy-Authorization goes with each, and nowhere else. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <event2/event.h>

#include "lib/log.h"
#include "lib/sockaddr.h"
#include "parse/http_resp.h"
#include "proxy/conn.h"
#include "proxy/core.h"
#include "proxy/http_fwd.h"
#include "proxy/upstream.h"

bool
upstream_wanted(const struct conn *c)
{
	const struct proxy_opts *o = &c->px->opts;

	return o->upstream.host[0] &&
	       policy_via_upstream(o->policy, c->host[0] ? c->host : NULL,
				   c->orig.ss_family ? (const struct sockaddr *)&c->orig : NULL);
}

const struct sockaddr *
upstream_judged_addr(const struct conn *c)
{
	return (!c->host[0] || c->learned) && c->orig.ss_family ? (const struct sockaddr *)&c->orig
								: NULL;
}

/* The destination as the upstream proxy is asked for it: HOST:PORT by
 * name when c has one, else by the address it is known by; for plain
 * HTTP (absolute) the port is left out when it is 80. -EINVAL for a name
 * that is not one (every name here was normalised before it was judged:
 * this keeps a stray byte out of the request line all the same). */
static int
dest(const struct conn *c, bool absolute, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "";
	const char *h = c->host;

	for (const char *p = h; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_' || *p == ':'))
			return -EINVAL;
	if (!h[0]) {
		if (c->orig.ss_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)&c->orig)->sin_addr, a,
				  sizeof(a));
		else if (c->orig.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&c->orig)->sin6_addr, a,
				  sizeof(a));
		else
			return -EINVAL;
		h = a;
	}
	if (absolute && c->port == 80)
		snprintf(buf, len, strchr(h, ':') ? "[%s]" : "%s", h);
	else
		snprintf(buf, len, strchr(h, ':') ? "[%s]:%u" : "%s:%u", h, c->port);
	return 0;
}

/* The upstream proxy answered, refused or failed: the protocol's turn. */
static void
finish(struct conn *c)
{
	free(c->up_reply);
	c->up_reply = NULL;
	if (c->ufd == -1 && c->up_status)
		log_info("conn %llu: upstream proxy %s refused CONNECT for %s:%u: %d",
			 (unsigned long long)c->id, c->px->opts.upstream.text,
			 c->host[0] ? c->host : "(an address)", c->port, c->up_status);
	else if (c->ufd == -1)
		log_info("conn %llu: upstream proxy %s for %s:%u: %s", (unsigned long long)c->id,
			 c->px->opts.upstream.text, c->host[0] ? c->host : "(an address)", c->port,
			 strerror(c->up_err));
	c->on_upstream = c->up_done;
	c->up_done(c);
}

static void
fail(struct conn *c, int err)
{
	event_del(&c->uev_w);
	evtimer_del(&c->timer);
	if (c->ufd != -1)
		close(c->ufd);
	c->ufd = -1;
	c->up_err = err;
	finish(c);
}

/* The reply to CONNECT: peeked, and only the bytes of its head taken. */
static void
on_reply(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	char buf[HTTP_CONNECT_HEAD_MAX];
	size_t room = sizeof(buf) - c->up_reply->len, take = 0;
	enum parse_result r;
	int status = 0;
	ssize_t n;

	(void)what;
	n = recv(fd, buf, room ? room : 1, MSG_PEEK);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		fail(c, n ? errno : ECONNRESET);
		return;
	}
	r = http_connect_feed(c->up_reply, buf, (size_t)n, &take, &status);
	if (take && recv(fd, buf, take, 0) != (ssize_t)take) {
		fail(c, EIO);
		return;
	}
	if (r == PARSE_MORE)
		return;
	if (r != PARSE_DONE) {
		fail(c, EBADMSG);
		return;
	}
	if (status / 100 != 2) {
		c->up_status = status;
		fail(c, EPROTO);
		return;
	}
	event_del(&c->uev_w);
	evtimer_del(&c->timer);
	finish(c);
}

/* Connected to the upstream proxy: CONNECT, its reply awaited within the
 * connect timeout (a proxy answers once it reached the destination). */
static void
ask_tunnel(struct conn *c)
{
	const char *auth = c->px->opts.upstream_auth;
	char req[PROXYURL_AUTH_MAX + 700], to[300];
	ssize_t w;
	int n;

	if (dest(c, false, to, sizeof(to))) {
		fail(c, EINVAL);
		return;
	}
	n = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s%s%s\r\n", to, to,
		     auth[0] ? "Proxy-Authorization: " : "", auth, auth[0] ? "\r\n" : "");
	w = send(c->ufd, req, (size_t)n, MSG_NOSIGNAL);
	explicit_bzero(req, sizeof(req));
	/* a fresh connection's send buffer takes a head this small at once */
	if (w != n) {
		fail(c, w < 0 ? errno : EIO);
		return;
	}
	c->up_reply = calloc(1, sizeof(*c->up_reply));
	if (!c->up_reply) {
		fail(c, ENOMEM);
		return;
	}
	c->state = CS_CONNECT; /* conn.c's timer: ETIMEDOUT, the socket closed */
	event_assign(&c->uev_w, c->px->base, c->ufd, EV_READ | EV_PERSIST, on_reply, c);
	event_add(&c->uev_w, NULL);
	conn_timer(c, c->px->opts.connect_timeout_s);
}

/* A plain-HTTP request (not a WebSocket upgrade) goes to the upstream
 * proxy in absolute form, with its credentials. */
static void
send_absolute(struct conn *c)
{
	char authority[300];
	size_t len;
	char *head;

	if (dest(c, true, authority, sizeof(authority))) {
		fail(c, EINVAL);
		return;
	}
	head = http_fwd_absolute(c->uout, c->uoutlen, authority, c->px->opts.upstream_auth, &len);
	if (!head) {
		fail(c, ENOMEM);
		return;
	}
	free(c->uout);
	c->uout = head;
	c->uoutlen = len;
	c->uoutoff = 0;
	finish(c);
}

/* Connected to the upstream proxy, or not (ufd -1, up_err): also what the
 * core's timer calls (c->on_upstream) when the lookup, the connect or the
 * reply took too long. */
static void
on_proxy(struct conn *c)
{
	if (c->ufd == -1) {
		fail(c, c->up_err ? c->up_err : EHOSTUNREACH);
		return;
	}
	if (c->proto == POLICY_P_HTTP && c->uout && !http_fwd_upgrades(c->uout, c->uoutlen)) {
		send_absolute(c);
		return;
	}
	ask_tunnel(c);
}

static void
on_proxy_resolved(int status, const struct sockaddr_storage *addrs, int naddrs, void *arg)
{
	struct conn *c = arg;

	c->rq = NULL;
	if (status || naddrs <= 0) {
		c->up_err = status == -ETIMEDOUT ? ETIMEDOUT : ENOENT;
		on_proxy(c);
		return;
	}
	if (naddrs > RESOLVE_MAX_ADDRS)
		naddrs = RESOLVE_MAX_ADDRS;
	for (int i = 0; i < naddrs; i++) {
		c->addrs[i] = addrs[i];
		sockaddr_set_port(&c->addrs[i], c->px->opts.upstream.port);
	}
	c->naddrs = naddrs;
	conn_connect_addrs(c, on_proxy);
}

void
upstream_connect(struct conn *c, void (*done)(struct conn *c))
{
	const struct proxyurl *u = &c->px->opts.upstream;
	struct sockaddr_storage cached[RESOLVE_MAX_ADDRS];
	struct sockaddr_in *in = (struct sockaddr_in *)&c->addrs[0];
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&c->addrs[0];
	int n;

	c->via_upstream = true;
	c->up_status = 0;
	c->up_done = done;
	c->on_upstream = on_proxy; /* the core's timer during the lookup */
	memset(&c->addrs[0], 0, sizeof(c->addrs[0]));
	if (inet_pton(AF_INET, u->host, &in->sin_addr) == 1 ||
	    inet_pton(AF_INET6, u->host, &in6->sin6_addr) == 1) {
		c->addrs[0].ss_family = strchr(u->host, ':') ? AF_INET6 : AF_INET;
		sockaddr_set_port(&c->addrs[0], u->port);
		c->naddrs = 1;
		conn_connect_addrs(c, on_proxy);
		return;
	}
	n = resolver_cached(c->px->opts.res, u->host, cached);
	if (n > 0) {
		on_proxy_resolved(0, cached, n, c);
		return;
	}
	c->state = CS_RESOLVE;
	conn_timer(c, c->px->opts.connect_timeout_s);
	c->rq = resolver_query(c->px->opts.res, u->host, on_proxy_resolved, c);
	if (!c->rq) {
		c->up_err = ENOMEM;
		on_proxy(c);
	}
}
