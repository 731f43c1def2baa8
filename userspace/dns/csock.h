// SPDX-License-Identifier: Apache-2.0
/* The DNS responder's upstream UDP client (csock.c): raw queries to one
 * server over a connected UDP socket that is kept and reused for up to
 * CSOCK_REUSE queries, then replaced (a new socket, a new random source
 * port), instead of a socket opened and closed per query; one idle for a
 * second is closed. Each query gets
 * a random transaction id unique among those pending on its socket; an
 * answer is taken only from the server's address and port (the socket is
 * connected), with that id and the question as it was asked. What this
 * path cannot settle (no answer within its timeout, a truncated answer,
 * an error of the socket) is handed back, for the caller's full resolver
 * (c-ares: its retries, other servers, TCP) to ask again. */
#ifndef DNS_CSOCK_H
#define DNS_CSOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define CSOCK_REUSE 32 /* queries sent on one socket before it is replaced */

struct event_base;
struct csock;

/* status 0 with the answer (its id the query's own again), -EAGAIN: ask
 * again elsewhere (timeout, truncated, socket error), -ECANCELED: the
 * client is being freed. answer is valid only during the call. */
typedef void (*csock_cb)(int status, const unsigned char *answer, size_t alen, void *arg);

/* A client of the server at sa (IPv4 or IPv6); NULL when out of memory. */
struct csock *csock_new(struct event_base *base, const struct sockaddr *sa, socklen_t salen,
			int timeout_ms);
/* Every query still pending is called back with -ECANCELED. */
void csock_free(struct csock *cs);

/* Sends q (a complete query message, one question); cb runs exactly once,
 * later, from the event loop. -1 (errno) when it could not be sent: the
 * caller asks elsewhere at once. */
int csock_send(struct csock *cs, const unsigned char *q, size_t qlen, csock_cb cb, void *arg);

/* Is a the answer to q: QR set, q's id, and q's question (name compared
 * without regard to ASCII case, type and class)? */
bool csock_match(const unsigned char *q, size_t qlen, const unsigned char *a, size_t alen);

struct csock_stats {
	uint64_t sent;	   /* queries sent */
	uint64_t sockets;  /* sockets opened */
	uint64_t answered; /* answers delivered */
	uint64_t handed;   /* handed back: timeout, truncated, error */
	uint64_t ignored;  /* datagrams that answered nothing pending */
};
void csock_get_stats(const struct csock *cs, struct csock_stats *st);

#endif /* DNS_CSOCK_H */
