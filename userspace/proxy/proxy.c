// SPDX-License-Identifier: Apache-2.0
/* The proxy's core (see proxy.h): listeners and accept, attribution of
 * every client through the BPF connection index, the connection limit, and
 * the public API. Each listener speaks the protocol the table gives it
 * (proto.h, proto.c); a connection's life is conn.c, the relay relay.c.
 *
 * Limits: the connection limit is sized by the descriptor limit (raised to
 * the hard one at start), one process may hold a share of it, and a client
 * over a limit is refused in its protocol (its ops->answers_over) by a
 * connection kept only for that (a few at most); beyond, or for a protocol
 * that does not answer, the protocol's ops->refuse writes what fits at
 * once, or the client is reset. Out of descriptors, a spare one is given
 * up to accept and refuse each client at once, so that none waits in the
 * backlog. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <event2/event.h>

#include "kernel/loader.h"
#include "lib/duration.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "proxy/conn.h"
#include "proxy/core.h"
#include "proxy/proto.h"
#include "proxy/proxy.h"
#include "proxy/quota.h"

/* Descriptors the proxy may need beside its connections' own and what
 * others keep (opts.fd_reserve: the DNS responder's TCP clients): c-ares
 * sockets (dns/resolver.c watches at most 16), and a margin for the rest
 * (a status request, CMD's pidfd, the --suggest-policy file at exit). */
#define FD_RESOLVER 16
#define FD_MARGIN   16

/* Refuses a client without a struct conn: in its protocol if that can be
 * written at once, else a reset. */
static void
refuse_now(int fd, const struct proto_ops *ops, const char *why)
{
	struct linger lg = {1, 0};

	if (ops->refuse && ops->refuse(fd, why)) {
		close(fd);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* Listeners off for 100 ms: out of descriptors with none to give up. */
static void
accept_rest(struct proxy *p)
{
	struct timeval rest = {0, 100000};

	for (int i = 0; i < 2 * PROXY_L_MAX; i++)
		if (p->lev[i])
			event_del(p->lev[i]);
	evtimer_add(p->rest, &rest);
}

/* accept() said EMFILE or ENFILE: give up the spare descriptor to take one
 * pending client, refuse it at once, take the spare back. When that does
 * not help either (the whole system is out, ENFILE), rest instead of
 * spinning: the clients wait in the backlog then, as nothing else can be
 * done for them. */
static bool
accept_no_fd(struct proxy *p, int lfd, const struct proto_ops *ops)
{
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	struct egr_conn_val who;
	int fd, err;

	if (!p->fd_warned)
		log_warnx("proxy: out of file descriptors with %d connections open: refusing "
			  "new clients until some close (ulimit -Hn)",
			  p->quota.nconns);
	p->fd_warned = true;
	if (p->spare_fd == -1)
		p->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (p->spare_fd == -1) {
		accept_rest(p);
		return false;
	}
	close(p->spare_fd);
	fd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	err = errno;
	if (fd != -1) {
		p->st.accepted++;
		p->st.refused_nofd++;
		if (p->conns_fd >= 0) /* its index entry goes too */
			loader_conn_lookup(p->conns_fd, (struct sockaddr *)&peer, IPPROTO_TCP,
					   &who);
		refuse_now(fd, ops, "out of file descriptors");
	}
	p->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd == -1 && (err == EMFILE || err == ENFILE))
		accept_rest(p);
	return fd != -1;
}

/* Is a new connection of who over a limit? Says so once for each limit. */
static enum quota_hit
over_limit(struct proxy *p, const struct egr_conn_val *who)
{
	enum quota_hit hit = quota_check(&p->quota, who->tgid);
	char comm[17];

	if (hit == QUOTA_TOTAL && !p->limit_warned) {
		log_warnx("proxy: %d connections open, the limit (--max-conns): refusing new ones",
			  p->quota.max_conns);
		p->limit_warned = true;
	} else if (hit == QUOTA_PROCESS && !p->proc_warned) {
		policy_safe_comm(who->comm, comm);
		log_warnx("proxy: %s[%u] has %d connections open, the limit of one process "
			  "(--max-conns-per-process): refusing its new ones",
			  comm, who->tgid, quota_of(&p->quota, who->tgid));
		p->proc_warned = true;
	}
	return hit;
}

/* Is the client at peer one of the confined cgroup's (who filled in)?
 * Only its sockets are in the index: anyone else (another local user) is
 * refused, the proxy is no open relay. */
static bool
attributed(struct proxy *p, const struct sockaddr_storage *peer, struct egr_conn_val *who)
{
	char a[64];

	if (p->conns_fd >= 0 &&
	    loader_conn_lookup(p->conns_fd, (const struct sockaddr *)peer, IPPROTO_TCP, who) == 0) {
		if (!(who->flags & EGR_CONN_AMBIGUOUS))
			return true;
		sockaddr_format((const struct sockaddr *)peer, a, sizeof(a));
		log_warnx("refused a connection from %s: more than one socket connected from that "
			  "address and port (containers in network namespaces of their own?), "
			  "so whose it is cannot be told",
			  a);
		p->st.refused_unattributed++;
		return false;
	}
	sockaddr_format((const struct sockaddr *)peer, a, sizeof(a));
	log_info("refused unattributed connection from %s", a);
	p->st.refused_unattributed++;
	return false;
}

/* Takes one pending connection from lfd, whose protocol is ops; false
 * when there is none left to take now (or the proxy must rest). */
static bool
accept_one(struct proxy *p, int lfd, const struct proto_ops *ops)
{
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	struct egr_conn_val who;
	enum quota_hit over;
	struct conn *c;
	int fd;

	fd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd == -1) {
		if (errno == EMFILE || errno == ENFILE)
			return accept_no_fd(p, lfd, ops);
		if (errno == EINTR || errno == ECONNABORTED)
			return true;
		if (errno != EAGAIN)
			log_warn("accept");
		return false;
	}
	p->st.accepted++;
	if (!attributed(p, &peer, &who)) {
		close(fd);
		return true;
	}
	/* Over a limit: nothing changes for the connections already open. A
	 * protocol that answers in its own words does so on a connection kept
	 * for that (a few at most); other clients are refused now. */
	over = over_limit(p, &who);
	if (over && (!ops->answers_over || p->nrefusing >= p->quota.max_refusing)) {
		char why[160];

		quota_words(&p->quota, over, why, sizeof(why));
		refuse_now(fd, ops, why);
		return true;
	}
	if (!over && quota_add(&p->quota, who.tgid)) {
		close(fd);
		return true;
	}
	c = conn_new(p, fd, &who, over, ops);
	if (!c) {
		if (!over)
			quota_del(&p->quota, who.tgid);
		close(fd);
		return true;
	}
	conn_start(c);
	return true;
}

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct proxy *p = arg;
	const struct proto_ops *ops = NULL;

	(void)what;
	for (int i = 0; i < 2 * PROXY_L_MAX; i++)
		if (p->lfd[i] == lfd)
			ops = p->lops[i];
	/* a burst of clients costs one wakeup, not one each */
	for (int n = 0; ops && n < 32 && accept_one(p, lfd, ops); n++)
		;
}

static void
on_rested(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *p = arg;

	(void)fd;
	(void)what;
	for (int i = 0; i < 2 * PROXY_L_MAX; i++)
		if (p->lev[i])
			event_add(p->lev[i], NULL);
}

/* A TCP listener on ip:port (network order; port 0: any), ip an IPv4
 * address or, with v6, ::1 (IPV6_V6ONLY), or -1 with errno. freebind: the
 * address need not be there yet (a bridge a container runtime makes
 * later). */
static int
open_listener(uint32_t ip, bool v6, uint16_t port, bool freebind, uint16_t *bound)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_listen_addr(&ss, ip, v6, port);
	int fd, one = 1, e;

	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    (freebind && setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one))) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 1024) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len)) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	*bound = sockaddr_port(&ss);
	return fd;
}

static int
watch_listener(struct proxy *p, int i, int fd, const struct proto_ops *ops)
{
	p->lfd[i] = fd;
	p->lops[i] = ops;
	p->lev[i] = event_new(p->base, fd, EV_READ | EV_PERSIST, on_accept, p);
	return !p->lev[i] || event_add(p->lev[i], NULL) ? -1 : 0;
}

/* Listener l on 127.0.0.1 and, for containers, on the same port of
 * opts.ns_ip4, or with --ipv6 on the same port of ::1 (a free port on
 * both: tried again when the other address has it taken). */
static int
listen_on(struct proxy *p, enum proxy_listener l, const struct proto_ops *ops, char *errbuf,
	  size_t errlen)
{
	uint16_t want = p->opts.ports[l], port = 0;
	uint32_t ns = p->opts.ns_ip4;
	bool v6 = p->opts.ipv6;
	int fd = -1, fd_ns = -1;
	char where[INET6_ADDRSTRLEN + 2] = "127.0.0.1";

	for (int attempt = 0; attempt < 20; attempt++) {
		fd = open_listener(htonl(INADDR_LOOPBACK), false, want, false, &port);
		if (fd == -1 || (!ns && !v6))
			break;
		fd_ns = open_listener(ns, v6, port, !v6, &port);
		if (fd_ns != -1)
			break;
		sockaddr_listen_where(ns, v6, where, sizeof(where));
		close(fd);
		fd = -1;
		if (want || errno != EADDRINUSE)
			break; /* taking over: that port or none */
	}
	if (fd == -1) {
		snprintf(errbuf, errlen, "cannot open a proxy listener on %s%s%.0u: %s%s", where,
			 want ? ":" : "", want, strerror(errno),
			 v6 && strchr(where, ':') ? " (--ipv6 needs IPv6 on the loopback device)"
						  : "");
		return -1;
	}
	p->port[l] = port;
	p->lfd[PROXY_L_MAX + l] = fd_ns; /* freed with the proxy from now on */
	if (watch_listener(p, l, fd, ops) ||
	    (fd_ns != -1 && watch_listener(p, PROXY_L_MAX + l, fd_ns, ops))) {
		snprintf(errbuf, errlen, "cannot watch a proxy listener");
		return -1;
	}
	return 0;
}

struct proxy *
proxy_new(struct event_base *base, const struct proxy_opts *o, char *errbuf, size_t errlen)
{
	struct proxy *p = calloc(1, sizeof(*p));

	if (!p) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	p->base = base;
	p->opts = *o;
	quota_init(&p->quota, o->max_conns, o->max_conns_per_process);
	if (p->opts.header_timeout_s <= 0)
		p->opts.header_timeout_s = PROXY_DEF_HEAD_TIMEOUT;
	if (p->opts.connect_timeout_s <= 0)
		p->opts.connect_timeout_s = PROXY_DEF_CONNECT_TIMEOUT;
	if (p->opts.response_timeout_s <= 0)
		p->opts.response_timeout_s = PROXY_DEF_RESPONSE_TIMEOUT;
	if (p->opts.idle_timeout_s <= 0)
		p->opts.idle_timeout_s = PROXY_DEF_IDLE_TIMEOUT;
	p->conns_fd = -1;
	TAILQ_INIT(&p->conns);
	TAILQ_INIT(&p->pipe_waiters);
	for (int i = 0; i < 2 * PROXY_L_MAX; i++)
		p->lfd[i] = -1;
	p->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (p->spare_fd == -1) {
		snprintf(errbuf, errlen, "cannot open /dev/null: %s", strerror(errno));
		goto fail;
	}
	p->rest = evtimer_new(base, on_rested, p);
	if (!p->rest) {
		snprintf(errbuf, errlen, "out of memory");
		goto fail;
	}
	for (int l = 0; l < PROXY_L_MAX; l++) {
		const struct proto_ops *ops = proto_of_listener((enum proxy_listener)l, o);

		if (ops && listen_on(p, (enum proxy_listener)l, ops, errbuf, errlen))
			goto fail;
	}
	return p;
fail:
	proxy_free(p);
	return NULL;
}

/* Descriptors open now, or -errno. */
static int
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

/* The pool of relay pipes, for at most n (relay.c leases them). */
static int
pipes_size(struct proxy *p, int n, char *errbuf, size_t errlen)
{
	int(*pool)[2];

	if (p->opts.test_pipes_max > 0 && p->opts.test_pipes_max < n)
		n = p->opts.test_pipes_max;
	if (p->pipes_total > n || p->npool > n) {
		snprintf(errbuf, errlen, "relay pipes: %d exist, more than %d", p->pipes_total, n);
		return -1;
	}
	pool = realloc(p->pool, (size_t)n * sizeof(*pool));
	if (!pool) {
		snprintf(errbuf, errlen, "out of memory");
		return -1;
	}
	p->pool = pool;
	p->pipes_max = n;
	return 0;
}

int
proxy_size_limits(struct proxy *p, char *errbuf, size_t errlen)
{
	long nofile, reserve, was = p->quota.max_conns;
	struct rlimit rl;
	bool lowered;
	char t[4][16];
	int open_now;

	open_now = open_fds();
	if (open_now < 0) {
		snprintf(errbuf, errlen, "cannot count open descriptors (/proc/self/fd): %s",
			 strerror(-open_now));
		return -1;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		snprintf(errbuf, errlen, "cannot read the descriptor limit: %s", strerror(errno));
		return -1;
	}
	nofile = rl.rlim_cur > INT_MAX ? INT_MAX : (long)rl.rlim_cur;
	reserve = FD_RESOLVER + FD_MARGIN + p->opts.fd_reserve;
	if (quota_size(&p->quota, nofile, open_now, reserve, &lowered, errbuf, errlen))
		return -1;
	if (pipes_size(p, p->quota.max_pipes, errbuf, errlen))
		return -1;
	if (lowered)
		log_info("proxy: at most %d connections, not %ld: the descriptor limit is %ld (%d "
			 "per connection, %d for relay pipes, %d open, %ld kept for DNS and the "
			 "resolver)",
			 p->quota.max_conns, was, nofile, QUOTA_FDS_PER_CONN, 2 * p->pipes_max,
			 open_now, reserve);
	duration_format_secs(p->opts.header_timeout_s, t[0], sizeof(t[0]));
	duration_format_secs(p->opts.connect_timeout_s, t[1], sizeof(t[1]));
	duration_format_secs(p->opts.response_timeout_s, t[2], sizeof(t[2]));
	duration_format_secs(p->opts.idle_timeout_s, t[3], sizeof(t[3]));
	log_info("proxy: at most %d connections, %d per process, %d relay pipes (descriptor "
		 "limit %ld); timeouts: client head %s, connect %s, response %s, idle %s",
		 p->quota.max_conns, p->quota.max_per_process, p->pipes_max, nofile, t[0], t[1],
		 t[2], t[3]);
	return 0;
}

uint16_t
proxy_port(const struct proxy *p, enum proxy_listener l)
{
	return p->port[l];
}

void
proxy_set_index(struct proxy *p, int conns_fd)
{
	p->conns_fd = conns_fd;
}

void
proxy_set_kpath(struct proxy *p, const struct kpath *kp)
{
	p->kp = kp;
}

uint64_t
proxy_set_policy(struct proxy *p, const struct policy *pol, struct policy *rw)
{
	struct conn *c, *next;
	uint64_t closed = 0;

	p->opts.policy = pol;
	p->opts.policy_rw = rw;
	for (c = TAILQ_FIRST(&p->conns); c; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (!conn_rejudge(c))
			closed++;
	}
	return closed;
}

void
proxy_get_stats(const struct proxy *p, struct proxy_stats *st)
{
	*st = p->st;
	st->open = p->quota.nconns;
	st->refused_limit = p->quota.hit_total;
	st->refused_per_process = p->quota.hit_process;
	st->max_conns = p->quota.max_conns;
	st->max_conns_per_process = p->quota.max_per_process;
}

void
proxy_free(struct proxy *p)
{
	struct conn *c;

	if (!p)
		return;
	if (p->pipe_waits)
		log_info("proxy: %llu times a relay direction waited for one of the %d pipes",
			 (unsigned long long)p->pipe_waits, p->pipes_max);
	while ((c = TAILQ_FIRST(&p->conns)))
		conn_close(c, "shutdown");
	for (int i = 0; i < 2 * PROXY_L_MAX; i++) {
		if (p->lev[i])
			event_free(p->lev[i]);
		if (p->lfd[i] != -1)
			close(p->lfd[i]);
	}
	if (p->rest)
		event_free(p->rest);
	for (int i = 0; i < p->npool; i++) {
		close(p->pool[i][0]);
		close(p->pool[i][1]);
	}
	free(p->pool);
	quota_free(&p->quota);
	if (p->spare_fd != -1)
		close(p->spare_fd);
	explicit_bzero(p->opts.upstream_auth, sizeof(p->opts.upstream_auth));
	free(p);
}
