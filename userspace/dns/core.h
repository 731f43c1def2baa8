// SPDX-License-Identifier: Apache-2.0
/* The DNS responder's own state (see responder.h), shared by its files:
 * responder.c (the API, the sockets, TCP clients, sending) over answer.c
 * (what a query becomes: judged, asked, answered from the cache or
 * upstream, its addresses learned; its replies go out through the
 * waiter's send) over kpaths.c (the kernel paths). Only dns/ includes it. */
#ifndef DNS_CORE_H
#define DNS_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "dns/kpaths.h"
#include "dns/responder.h"
#include "dns/wire.h"
#include "egress_abi.h"

/* glibc's sys/queue.h lacks the _SAFE iterators (the BSDs have them) */
#ifndef LIST_FOREACH_SAFE
#define LIST_FOREACH_SAFE(var, head, field, tvar)                                                  \
	for ((var) = LIST_FIRST((head)); (var) && ((tvar) = LIST_NEXT((var), field), 1);           \
	     (var) = (tvar))
#endif
#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)                                                 \
	for ((var) = TAILQ_FIRST((head)); (var) && ((tvar) = TAILQ_NEXT((var), field), 1);         \
	     (var) = (tvar))
#endif

#define CACHE_BUCKETS 1024
#define LEARN_BUCKETS 1024

struct waiter {
	/* sends a reply to this client (responder.c: UDP or TCP) */
	void (*send)(struct dns_server *d, struct waiter *w, const uint8_t *msg, int len);
	TAILQ_ENTRY(waiter) entry;
	struct dns_query q;
	struct sockaddr_storage from; /* UDP client */
	int ufd;		      /* ... and the socket it wrote to */
	struct tcp_client *tcp;	      /* or a TCP client (NULL for UDP) */
	struct egr_conn_val who;
};
TAILQ_HEAD(waiter_list, waiter);

/* An upstream query in flight; identical queries join it. */
struct inflight {
	LIST_ENTRY(inflight) entry;
	struct dns_server *d;
	char name[DNS_MAX_NAME + 1];
	uint16_t qtype;
	struct resolve_req *rq;
	struct waiter_list waiters;
};

struct cache_entry {
	LIST_ENTRY(cache_entry) entry;
	char name[DNS_MAX_NAME + 1];
	uint16_t qtype;
	int rcode;
	uint64_t expires; /* monotonic seconds */
	uint64_t stored;  /* when it was stored, to age TTLs */
	int nrr;
	struct dns_rr *rrs;
};
LIST_HEAD(cache_bucket, cache_entry);

struct learned {
	LIST_ENTRY(learned) entry;
	struct sockaddr_storage addr;
	char name[DNS_MAX_NAME + 1];
	uint64_t expires;
};
LIST_HEAD(learn_bucket, learned);

struct tcp_client {
	LIST_ENTRY(tcp_client) entry;
	struct dns_server *d;
	int fd;
	struct event rev, wev, timer;
	struct egr_conn_val who;
	uint8_t in[2 + 65535];
	size_t inlen;
	uint8_t *out;
	size_t outlen, outoff;
	int pending; /* waiters not yet answered */
	bool closing;
	bool in_read; /* inside on_tcp_read: failures mark dead, freed there */
	bool dead;
};

/* --ask: a name no rule allows waits for an answer on the terminal. */
struct dns_ask {
	LIST_ENTRY(dns_ask) entry;
	struct dns_server *d;
	struct waiter *w;
	struct ask_req *req;
	char name[DNS_MAX_NAME + 1];
};

struct dns_server {
	struct event_base *base;
	struct dns_opts o;
	int conns_fd;
	int ufd, tfd;
	int ufd_ns, tfd_ns; /* on o.ns_ip4 (containers); -1: none */
	uint16_t port;
	struct event *uev, *tev, *sweep, *uev_ns, *tev_ns;
	LIST_HEAD(, inflight) inflight;
	struct cache_bucket cache[CACHE_BUCKETS];
	int ncache;
	struct learn_bucket learn[LEARN_BUCKETS];
	int nlearn;
	struct dns_kpaths paths; /* the answers' kernel paths (kpaths.c) */
	LIST_HEAD(, tcp_client) tcp;
	LIST_HEAD(, dns_ask) asks; /* questions on the terminal (--ask) */
	int ntcp;
	struct dns_stats st;
	/* an upstream answer being read (answer.c): kept from one answer to
	 * the next, as they are 84 KiB each (DNS_MAX_RRS records) */
	struct dns_msg *up_msg;
	struct dns_rr *up_kept;
};

/* ---- answer.c ---- */

/* Replies to w (through w->send: a UDP client, or a TCP client's next
 * message). */
void dns_reply_rcode(struct dns_server *d, struct waiter *w, int rcode);
void dns_reply_rrs(struct dns_server *d, struct waiter *w, int rcode, const struct dns_rr *rrs,
		   int nrr);

/* One query (w, owned from now on) of an attributed client. */
void dns_answer(struct dns_server *d, struct waiter *w);
/* A TCP client goes: its queries waiting upstream or on the terminal are
 * dropped (their answers must not reach a freed client). */
void dns_answer_forget_client(struct dns_server *d, const struct tcp_client *tc);
/* A new policy p (in d->o already): the cache emptied, the fast-path
 * approvals (*fast) and learned names (*names) p no longer allows removed. */
void dns_answer_set_policy(struct dns_server *d, const struct policy *p, uint64_t *fast,
			   uint64_t *names);
/* Every query in flight or asked about, the cache and the learned names,
 * freed (dns_free). */
void dns_answer_free(struct dns_server *d);

#endif /* DNS_CORE_H */
