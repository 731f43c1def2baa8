// SPDX-License-Identifier: Apache-2.0
/* Name resolution for the proxy: c-ares on the proxy's libevent loop (its
 * socket-state callback, not a thread). Addresses come back as checked
 * candidates; the proxy connects to exactly one of them, so there is no
 * second lookup and no rebinding window. */
#ifndef RESOLVE_H
#define RESOLVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define RESOLVE_MAX_ADDRS 8

struct event_base;
struct resolver;
struct resolve_req;

/* status: 0, or a negative errno-like code: -ENOENT (no such name),
 * -ETIMEDOUT, -EIO (server failure or other); addrs valid only during the
 * call (IPv4 first, then IPv6; at most RESOLVE_MAX_ADDRS). */
typedef void (*resolve_cb)(int status, const struct sockaddr_storage *addrs, int naddrs, void *arg);

/* servers: NULL for /etc/resolv.conf, or "ADDR[:PORT],..." (c-ares CSV
 * syntax, e.g. "198.18.0.1" or "[2001:db8::53]:53"). NULL with errbuf set
 * on failure. */
struct resolver *resolver_new(struct event_base *base, const char *servers, char *errbuf,
			      size_t errlen);
void resolver_free(struct resolver *r);

/* Starts a lookup of host (A and AAAA). The callback runs later, from the
 * event loop, exactly once unless the request is cancelled first. NULL on
 * allocation failure. */
struct resolve_req *resolver_query(struct resolver *r, const char *host, resolve_cb cb, void *arg);

/* A raw DNS exchange (the responder's upstream path): q is a complete
 * query message; the callback gets the complete answer message (status 0)
 * or a negative errno-like code (-ETIMEDOUT after c-ares' tries, -EIO).
 * Same calling rules as resolver_query(). */
typedef void (*resolve_raw_cb)(int status, const unsigned char *answer, int alen, void *arg);
struct resolve_req *resolver_send(struct resolver *r, const unsigned char *q, size_t qlen,
				  resolve_raw_cb cb, void *arg);

/* A cached answer for host (resolver_query() fills the cache, for the
 * answer's smallest TTL): the number of addresses copied into addrs
 * (RESOLVE_MAX_ADDRS of room), 0 if none is cached. */
int resolver_cached(struct resolver *r, const char *host, struct sockaddr_storage *addrs);

struct resolver_stats {
	uint64_t queries; /* lookups started with c-ares */
	uint64_t joined;  /* requests that waited for a lookup already running */
	uint64_t hits;	  /* resolver_cached() answers */
	uint64_t misses;  /* resolver_cached() calls without one */
	uint64_t cached;  /* names in the cache now */
};
void resolver_get_stats(const struct resolver *r, struct resolver_stats *st);

/* The callback will not run; the request is freed when c-ares is done. */
void resolver_cancel(struct resolve_req *q);

#endif /* RESOLVE_H */
