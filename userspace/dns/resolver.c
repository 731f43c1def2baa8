// SPDX-License-Identifier: Apache-2.0
/* c-ares on libevent (see dns/resolver.h): the socket-state callback keeps one
 * event per c-ares socket, one timer follows ares_timeout(). Requests can be
 * cancelled by their owner (a connection that closed) without touching
 * c-ares: the request stays allocated until c-ares calls back.
 *
 * Address lookups (resolver_query) are cached for their DNS TTL and joined
 * while one is in flight: a proxy that opens thousands of connections to
 * the same host asks once per TTL, not once per connection (hosts-file
 * answers carry no TTL and are not cached).
 *
 * Raw exchanges (resolver_send, the DNS responder's upstream path) go
 * first to the first server over csock.c's kept UDP socket; what that
 * cannot settle (no answer within CSOCK_TIMEOUT_MS, a truncated answer, a
 * socket error) is sent again through c-ares, with its tries, its other
 * servers and TCP. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <netinet/in.h>
#include <ares.h>
#include <event2/event.h>

#include "lib/clock.h"
#include "lib/hash.h"
#include "dns/csock.h"
#include "dns/resolver.h"

#define RESOLVE_MAX_SOCKS 16
#define CACHE_BUCKETS	  1024
#define CACHE_MAX	  4096 /* names; beyond it the cache starts over */
#define CACHE_MAX_TTL	  3600 /* seconds, whatever the answer says */
#define HOST_MAX	  256
/* csock's one try before c-ares' own (2 s, then 4 s): an upstream that
 * never answers is still SERVFAIL within 6.5 s */
#define CSOCK_TIMEOUT_MS  500

struct resolve_req;

/* One lookup in flight for a name; the requests that asked for it meanwhile. */
struct lookup {
	LIST_ENTRY(lookup) entry;
	struct resolver *r;
	struct resolve_req *reqs; /* chained through resolve_req.next */
	char host[HOST_MAX];
};

struct cached {
	LIST_ENTRY(cached) entry;
	uint64_t expires; /* monotonic seconds */
	int naddrs;
	struct sockaddr_storage addrs[RESOLVE_MAX_ADDRS];
	char host[HOST_MAX];
};

LIST_HEAD(cache_bucket, cached);

struct resolver {
	struct event_base *base;
	ares_channel channel;
	struct event *timer;
	struct {
		ares_socket_t fd;
		struct event *ev;
	} socks[RESOLVE_MAX_SOCKS];
	LIST_HEAD(, lookup) lookups;
	struct csock *cs; /* raw exchanges with the first server; NULL: c-ares only */
	struct cache_bucket cache[CACHE_BUCKETS];
	int ncache;
	struct resolver_stats st;
};

struct resolve_req {
	struct resolver *r;
	resolve_cb cb;
	resolve_raw_cb raw_cb; /* resolver_send(): raw answer instead */
	unsigned char *answer;
	int alen;
	unsigned char *query; /* resolver_send()'s, while csock has it */
	size_t qlen;
	void *arg;
	struct resolve_req *next; /* the other requests of its lookup */
	bool cancelled;
	bool starting; /* inside ares_getaddrinfo(): answers must wait */
	bool done;     /* answered while starting; delivered from the loop */
	int status;
	int naddrs;
	struct sockaddr_storage addrs[RESOLVE_MAX_ADDRS];
};

/* Lower-cases host into out without a trailing dot; false if it does not fit. */
static bool
host_key(const char *host, char *out)
{
	size_t n = strlen(host);

	if (n && host[n - 1] == '.')
		n--;
	if (!n || n >= HOST_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)host[i]);
	out[n] = '\0';
	return true;
}

static struct cache_bucket *
bucket(struct resolver *r, const char *key)
{
	return &r->cache[fnv1a_str(FNV1A_BASIS, key) % CACHE_BUCKETS];
}

static void
cache_clear(struct resolver *r)
{
	for (int i = 0; i < CACHE_BUCKETS; i++) {
		struct cached *e;

		while ((e = LIST_FIRST(&r->cache[i]))) {
			LIST_REMOVE(e, entry);
			free(e);
		}
	}
	r->ncache = 0;
}

/* The live entry for key; expired ones met on the way are dropped. */
static struct cached *
cache_find(struct resolver *r, const char *key, uint64_t now)
{
	struct cached *e, *tmp;

	for (e = LIST_FIRST(bucket(r, key)); e; e = tmp) {
		tmp = LIST_NEXT(e, entry);
		if (e->expires <= now) {
			LIST_REMOVE(e, entry);
			free(e);
			r->ncache--;
			continue;
		}
		if (!strcmp(e->host, key))
			return e;
	}
	return NULL;
}

static void
cache_store(struct resolver *r, const char *key, const struct sockaddr_storage *addrs, int n,
	    uint32_t ttl)
{
	uint64_t now = now_s();
	struct cached *e;

	if (!ttl || n <= 0)
		return;
	if (ttl > CACHE_MAX_TTL)
		ttl = CACHE_MAX_TTL;
	e = cache_find(r, key, now);
	if (!e) {
		if (r->ncache >= CACHE_MAX)
			cache_clear(r); /* crude, bounded; misses ask again */
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		strcpy(e->host, key); /* fits: host_key() checked */
		LIST_INSERT_HEAD(bucket(r, key), e, entry);
		r->ncache++;
	}
	e->expires = now + ttl;
	e->naddrs = n;
	memcpy(e->addrs, addrs, sizeof(addrs[0]) * (size_t)n);
}

int
resolver_cached(struct resolver *r, const char *host, struct sockaddr_storage *addrs)
{
	char key[HOST_MAX];
	struct cached *e;

	if (!host_key(host, key))
		return 0;
	e = cache_find(r, key, now_s());
	if (!e) {
		r->st.misses++;
		return 0;
	}
	r->st.hits++;
	memcpy(addrs, e->addrs, sizeof(addrs[0]) * (size_t)e->naddrs);
	return e->naddrs;
}

void
resolver_get_stats(const struct resolver *r, struct resolver_stats *st)
{
	*st = r->st;
	st->cached = (uint64_t)r->ncache;
}

static void
arm_timer(struct resolver *r)
{
	struct timeval tv, *tvp;

	tvp = ares_timeout(r->channel, NULL, &tv);
	if (tvp)
		evtimer_add(r->timer, tvp);
	else
		evtimer_del(r->timer);
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct resolver *r = arg;

	(void)fd;
	(void)what;
	ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	arm_timer(r);
}

static void
on_sock(evutil_socket_t fd, short what, void *arg)
{
	struct resolver *r = arg;

	ares_process_fd(r->channel, (what & EV_READ) ? fd : ARES_SOCKET_BAD,
			(what & EV_WRITE) ? fd : ARES_SOCKET_BAD);
	arm_timer(r);
}

static void
sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct resolver *r = data;
	int i, slot = -1;

	for (i = 0; i < RESOLVE_MAX_SOCKS; i++) {
		if (r->socks[i].ev && r->socks[i].fd == fd) {
			slot = i;
			break;
		}
		if (!r->socks[i].ev && slot < 0)
			slot = i;
	}
	if (slot < 0)
		return; /* more sockets than we track: c-ares still times out */
	if (r->socks[slot].ev) {
		event_free(r->socks[slot].ev);
		r->socks[slot].ev = NULL;
	}
	if (!readable && !writable)
		return;
	r->socks[slot].fd = fd;
	r->socks[slot].ev = event_new(
		r->base, fd, (readable ? EV_READ : 0) | (writable ? EV_WRITE : 0) | EV_PERSIST,
		on_sock, r);
	if (r->socks[slot].ev)
		event_add(r->socks[slot].ev, NULL);
}

/* csock.c's client of c-ares' first server, or NULL (c-ares alone) */
static struct csock *
first_server_csock(struct resolver *r)
{
	struct ares_addr_port_node *list = NULL;
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	struct csock *cs = NULL;
	socklen_t len = 0;

	if (ares_get_servers_ports(r->channel, &list) != ARES_SUCCESS || !list)
		return NULL;
	memset(&ss, 0, sizeof(ss));
	if (list->family == AF_INET) {
		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, &list->addr.addr4, sizeof(in->sin_addr));
		in->sin_port = htons((uint16_t)(list->udp_port ? list->udp_port : 53));
		len = sizeof(*in);
	} else if (list->family == AF_INET6) {
		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, &list->addr.addr6, sizeof(in6->sin6_addr));
		in6->sin6_port = htons((uint16_t)(list->udp_port ? list->udp_port : 53));
		len = sizeof(*in6);
	}
	if (len)
		cs = csock_new(r->base, (struct sockaddr *)&ss, len, CSOCK_TIMEOUT_MS);
	ares_free_data(list);
	return cs;
}

struct resolver *
resolver_new(struct event_base *base, const char *servers, char *errbuf, size_t errlen)
{
	struct ares_options opts;
	struct resolver *r;
	int st;

	st = ares_library_init(ARES_LIB_INIT_ALL);
	if (st != ARES_SUCCESS) {
		snprintf(errbuf, errlen, "c-ares: %s", ares_strerror(st));
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	r->base = base;
	memset(&opts, 0, sizeof(opts));
	opts.sock_state_cb = sock_state;
	opts.sock_state_cb_data = r;
	opts.timeout = 2000; /* ms per try */
	opts.tries = 2;
	st = ares_init_options(&r->channel, &opts,
			       ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
	if (st != ARES_SUCCESS) {
		snprintf(errbuf, errlen, "c-ares: %s", ares_strerror(st));
		free(r);
		return NULL;
	}
	if (servers) {
		st = ares_set_servers_ports_csv(r->channel, servers);
		if (st != ARES_SUCCESS) {
			snprintf(errbuf, errlen, "DNS servers '%s': %s", servers,
				 ares_strerror(st));
			ares_destroy(r->channel);
			free(r);
			return NULL;
		}
	}
	r->timer = evtimer_new(base, on_timer, r);
	if (!r->timer) {
		snprintf(errbuf, errlen, "out of memory");
		ares_destroy(r->channel);
		free(r);
		return NULL;
	}
	r->cs = first_server_csock(r);
	return r;
}

void
resolver_free(struct resolver *r)
{
	if (!r)
		return;
	csock_free(r->cs);	  /* calls back its pending requests with -ECANCELED */
	ares_destroy(r->channel); /* calls back pending requests with ARES_EDESTRUCTION */
	cache_clear(r);
	for (int i = 0; i < RESOLVE_MAX_SOCKS; i++)
		if (r->socks[i].ev)
			event_free(r->socks[i].ev);
	event_free(r->timer);
	free(r);
}

static int
status_errno(int st)
{
	switch (st) {
	case ARES_SUCCESS:
		return 0;
	case ARES_ENOTFOUND:
	case ARES_ENODATA:
	case ARES_ENONAME:
		return -ENOENT;
	case ARES_ETIMEOUT:
		return -ETIMEDOUT;
	case ARES_ENOMEM:
		return -ENOMEM;
	case ARES_ECANCELLED:
	case ARES_EDESTRUCTION:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

static void
deliver(struct resolve_req *q)
{
	if (!q->cancelled) {
		if (q->raw_cb)
			q->raw_cb(q->status, q->answer, q->alen, q->arg);
		else
			q->cb(q->status, q->addrs, q->naddrs, q->arg);
	}
	free(q->answer);
	free(q->query);
	free(q);
}

static void
on_deferred(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	deliver(arg);
}

/* The answer of a lookup, for every request that joined it. */
static void
on_result(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct lookup *l = arg;
	struct sockaddr_storage addrs[RESOLVE_MAX_ADDRS];
	struct ares_addrinfo_node *n;
	struct resolve_req *q, *next;
	uint32_t ttl = UINT32_MAX;
	int count = 0, err;

	(void)timeouts;
	if (status == ARES_SUCCESS && res) {
		/* IPv4 first, then IPv6 */
		for (int fam = 0; fam < 2; fam++)
			for (n = res->nodes; n && count < RESOLVE_MAX_ADDRS; n = n->ai_next) {
				int want = fam ? AF_INET6 : AF_INET;

				if (n->ai_family != want ||
				    n->ai_addrlen > (ares_socklen_t)sizeof(addrs[0]))
					continue;
				memset(&addrs[count], 0, sizeof(addrs[count]));
				memcpy(&addrs[count], n->ai_addr, n->ai_addrlen);
				count++;
				/* the record that expires first bounds the set */
				if (n->ai_ttl < 0)
					ttl = 0;
				else if ((uint32_t)n->ai_ttl < ttl)
					ttl = (uint32_t)n->ai_ttl;
			}
		if (!count)
			status = ARES_ENODATA;
	}
	if (res)
		ares_freeaddrinfo(res);
	err = status_errno(status);
	if (!err && l->host[0])
		cache_store(l->r, l->host, addrs, count, ttl == UINT32_MAX ? 0 : ttl);
	LIST_REMOVE(l, entry);
	for (q = l->reqs; q; q = next) {
		next = q->next;
		q->next = NULL;
		q->status = err;
		q->naddrs = count;
		memcpy(q->addrs, addrs, sizeof(addrs[0]) * (size_t)count);
		if (q->starting) {
			q->done = true; /* resolver_query() hands it to the loop */
			continue;
		}
		deliver(q);
	}
	free(l);
}

static struct lookup *
lookup_find(struct resolver *r, const char *key)
{
	struct lookup *l;

	LIST_FOREACH(l, &r->lookups, entry)
	if (!strcmp(l->host, key))
		return l;
	return NULL;
}

struct resolve_req *
resolver_query(struct resolver *r, const char *host, resolve_cb cb, void *arg)
{
	struct ares_addrinfo_hints hints;
	struct resolve_req *q;
	struct lookup *l;
	char key[HOST_MAX];
	bool named = host_key(host, key); /* else too long to be a name */

	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->r = r;
	q->cb = cb;
	q->arg = arg;
	if (named && (l = lookup_find(r, key))) {
		/* the same name is being looked up: wait for that answer */
		q->next = l->reqs;
		l->reqs = q;
		r->st.joined++;
		return q;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		free(q);
		return NULL;
	}
	l->r = r;
	l->reqs = q;
	if (named)
		strcpy(l->host, key); /* else "": not joined, not cached */
	LIST_INSERT_HEAD(&r->lookups, l, entry);
	r->st.queries++;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	q->starting = true;
	ares_getaddrinfo(r->channel, host, NULL, &hints, on_result, l);
	q->starting = false;
	if (q->done) {
		/* answered at once (a literal, /etc/hosts): never call back from
		 * inside the caller */
		struct timeval now = {0, 0};

		if (event_base_once(r->base, -1, EV_TIMEOUT, on_deferred, q, &now)) {
			free(q);
			return NULL;
		}
		return q;
	}
	arm_timer(r);
	return q;
}

static void
on_raw(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
	struct resolve_req *q = arg;

	(void)timeouts;
	q->status = status_errno(status);
	if (status == ARES_SUCCESS && abuf && alen > 0) {
		q->answer = malloc((size_t)alen);
		if (q->answer) {
			memcpy(q->answer, abuf, (size_t)alen);
			q->alen = alen;
		} else {
			q->status = -ENOMEM;
		}
	} else if (!q->status) {
		q->status = -EIO;
	}
	if (q->starting) {
		q->done = true;
		return;
	}
	deliver(q);
}

/* c-ares sends q's query (a new request, or csock's answer handed back) */
static void
ares_fallback(struct resolve_req *q, const unsigned char *qbuf, size_t qlen)
{
	q->starting = true;
	ares_send(q->r->channel, qbuf, (int)qlen, on_raw, q);
	q->starting = false;
}

/* csock settled q: its answer, or c-ares asks again */
static void
on_csock(int status, const unsigned char *answer, size_t alen, void *arg)
{
	struct resolve_req *q = arg;

	if (status == -EAGAIN && !q->cancelled) {
		ares_fallback(q, q->query, q->qlen);
		free(q->query);
		q->query = NULL;
		if (q->done) /* answered within ares_send(): from the loop, as always */
			deliver(q);
		else
			arm_timer(q->r);
		return;
	}
	if (!q->cancelled)
		q->raw_cb(status, answer, (int)alen, q->arg);
	free(q->query);
	free(q);
}

struct resolve_req *
resolver_send(struct resolver *r, const unsigned char *qbuf, size_t qlen, resolve_raw_cb cb,
	      void *arg)
{
	struct resolve_req *q;

	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->r = r;
	q->raw_cb = cb;
	q->arg = arg;
	if (r->cs && (q->query = malloc(qlen))) {
		memcpy(q->query, qbuf, qlen);
		q->qlen = qlen;
		if (csock_send(r->cs, qbuf, qlen, on_csock, q) == 0)
			return q;
		free(q->query); /* not sent: c-ares at once */
		q->query = NULL;
	}
	ares_fallback(q, qbuf, qlen);
	if (q->done) {
		struct timeval now = {0, 0};

		if (event_base_once(r->base, -1, EV_TIMEOUT, on_deferred, q, &now)) {
			free(q->answer);
			free(q);
			return NULL;
		}
		return q;
	}
	arm_timer(r);
	return q;
}

void
resolver_cancel(struct resolve_req *q)
{
	if (q)
		q->cancelled = true;
}
