// SPDX-License-Identifier: Apache-2.0
/* struct conn: one client connection of the proxy, from accept() through
 * its protocol's handshake (proto.h: the protocols behind one table), the
 * policy decision, the upstream connect, to the splice relay (relay.c);
 * and the core's service API the protocols call (conn.c, relay.c).
 * Internal to the proxy. */
#ifndef CONN_H
#define CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "egress_abi.h"
#include "policy/policy.h"
#include "proxy/proto.h"
#include "proxy/proxy.h"
#include "proxy/quota.h"
#include "dns/resolver.h"

#define CONN_MAX_HEAD (64 * 1024) /* request head / handshake bytes */

enum conn_state {
	CS_HEAD = 0, /* reading the client's head or first bytes */
	CS_RESOLVE,  /* waiting for c-ares */
	CS_CONNECT,  /* upstream connect in flight */
	CS_REPLY,    /* writing a reply to the client, then next step */
	CS_RELAY,    /* both sides joined */
	CS_RESPONSE, /* request sent, waiting for the response head (the protocol's timeout) */
};

struct conn;
struct http_connect_reader;
typedef void (*conn_step)(struct conn *c);

/* Bytes per splice, and the pipes' size. 256 KiB moved a bulk stream 25-35 %
 * faster than 64 KiB (fewer wake-ups, splices and ACK rounds per byte); 1 MiB
 * was no faster. A pipe's pages exist only while bytes are in it. */
#define RELAY_CHUNK (1 << 18)
#define RELAY_WAKE  (1 << 20) /* bytes one direction moves per wake-up, at most */

/* One direction of the relay: bytes move src -> pipe -> dst with splice(2).
 * The pipe is leased from the proxy's bounded pool only while bytes move
 * (relay.c): an idle tunnel holds its two sockets and nothing else. */
struct relay_dir {
	int pipe[2];		     /* -1 while it holds none */
	size_t inpipe;		     /* bytes sitting in the pipe */
	bool eof;		     /* src said EOF */
	bool done;		     /* dst shut down for writing */
	bool waiting;		     /* in the proxy's queue for a pipe */
	TAILQ_ENTRY(relay_dir) wait; /* that queue */
	struct conn *owner;	     /* whose direction this is */
};

struct conn {
	TAILQ_ENTRY(conn) entry; /* proxy->conns */
	uint64_t id;
	struct proxy *px;
	const struct proto_ops *ops; /* the protocol now speaking (conn_set_proto()) */
	void *pstate;		     /* its state; ops->free() frees it */
	enum conn_state state;
	int cfd; /* client socket */
	int ufd; /* upstream socket; -1 until connecting */
	struct event cev_r, cev_w, uev_r, uev_w, timer;
	enum quota_hit over; /* not QUOTA_NONE: kept only to be refused */
	bool learned;	     /* host is the DNS responder's name for c->orig */
	bool closed_early;   /* the client closed before its first byte: logged so */

	/* handshake */
	char *in; /* client bytes read so far (not yet relayed) */
	size_t inlen, incap;
	void (*on_input)(struct conn *c); /* more client bytes arrived (CS_HEAD) */
	char *cout;			  /* reply bytes to the client */
	size_t coutlen, coutoff;
	conn_step after_reply; /* once cout is written; NULL = close */
	char *uout;	       /* bytes to send upstream before relaying */
	size_t uoutlen, uoutoff;

	/* who and where */
	struct egr_conn_val who;      /* from the BPF index */
	struct sockaddr_storage orig; /* transparent: the original destination */
	enum conn_source source;      /* for the decision log */
	char host[256];		      /* name being judged ("" if none) */
	uint16_t port;		      /* destination port, host order */
	char method[24];	      /* plain HTTP only */
	char *path; /* the request's normalised path (parse/path.h), NULL if none; owned */
	enum policy_proto proto;
	const struct policy_rule *rule; /* the allow rule that let it through */
	bool allowed;			/* judged and let through: re-judged on a policy change */
	bool inspect;	/* the last decision allows TLS only inspected (conn_inspect()) */
	bool inspected; /* an inspected session: its requests' decisions say so */
	/* 1 + the secret whose placeholder the request head carries where it
	 * may not go (conn_scan_secrets()); 0: none */
	int leak;
	/* the HTTP request being judged, for the deciding rule's header hooks
	 * (http_hook.h): set around conn_decide() by who parsed it; NULL
	 * otherwise */
	const struct http_request *hreq;

	/* upstream */
	struct resolve_req *rq;
	struct sockaddr_storage addrs[RESOLVE_MAX_ADDRS];
	int naddrs, ai;
	struct sockaddr_storage up_addr;
	int up_err;			     /* errno of the last failed connect */
	void (*on_upstream)(struct conn *c); /* connected (ufd set) or failed (ufd -1, up_err) */

	/* the upstream proxy (--upstream-proxy; upstream.c) */
	bool via_upstream; /* ufd goes (or went) to the upstream proxy: a failure is its */
	int up_status;	   /* the status it refused CONNECT with (up_err EPROTO), or 0 */
	void (*up_done)(struct conn *c);      /* the protocol's on_upstream meanwhile */
	struct http_connect_reader *up_reply; /* its reply to CONNECT, while it is read */

	/* --ask: a question on the terminal while the connection waits */
	struct ask_req *ask_req;
	void (*ask_cont)(struct conn *c, bool allowed);
	struct sockaddr_storage ask_addr;
	bool ask_has_addr;
	bool approved;	    /* approved once on the terminal */
	char ask_rule[300]; /* what "always" adds */

	/* relay */
	struct relay_dir d[2]; /* 0: client -> upstream, 1: upstream -> client */
	uint64_t bytes[2];
	uint64_t last_active; /* monotonic seconds */
};

/* conn.c: the connection's life */
void conn_close(struct conn *c, const char *why);
/* Closes c with a reset (SO_LINGER 0), so that the client sees an error
 * rather than an orderly end of the stream. */
void conn_abort(struct conn *c, const char *why);
/* Hands c to the protocol ops with its state (which ops->free() frees);
 * the state of the protocol that spoke so far is freed. */
void conn_set_proto(struct conn *c, const struct proto_ops *ops, void *pstate);
/* What the core does when c->timer fires in a protocol's state and the
 * protocol has nothing else to do: closes c ("client head timeout" in
 * CS_HEAD). */
void conn_timed_out(struct conn *c);
void conn_timer(struct conn *c, int seconds);
void conn_timer_ms(struct conn *c, int ms);
void conn_touch(struct conn *c);

/* conn.c: the client side of a handshake */
/* Reads the client into c->in (CS_HEAD); on_input(c) after each read. */
void conn_read_client(struct conn *c, void (*on_input)(struct conn *c));
void conn_drop_input(struct conn *c, size_t n);
/* Writes data to the client (CS_REPLY), then next(c); NULL: closes c. */
void conn_reply(struct conn *c, const char *data, size_t len, conn_step next);

/* conn.c: secrets (policy/secret.h) */
/* The proxy's secrets; NULL when there are none. */
struct secrets *conn_secrets(const struct conn *c);
/* Scans a request head (len bytes) for a placeholder of a secret that may
 * not go to c->host: c->leak, which the next conn_decide() denies
 * (POLICY_R_SECRET). A name that carries one is denied by conn_decide()
 * itself, whatever the secret's hosts. */
void conn_scan_secrets(struct conn *c, const char *buf, size_t len);

/* conn.c: decisions */
/* The policy query for c: c->host (NULL if ""), c->port, c->proto,
 * c->method (NULL if ""), addr. Without addr, a host that is an address
 * literal is judged as that address: q->addr then points at lit. */
void conn_query(const struct conn *c, const struct sockaddr *addr, struct policy_query *q,
		struct sockaddr_storage *lit);
/* Judges c (conn_query() with addr), logs the decision, counts it, and
 * fills d. Returns 1 if allowed (in audit mode, also what would be denied),
 * 0 if not. With cont and --ask, a denial for lack of a rule becomes a
 * question on the terminal: -1, and cont(c, allowed) runs with the answer
 * (from the event loop); c->in stays put meanwhile. */
int conn_decide(struct conn *c, const struct sockaddr *addr, struct policy_decision *d,
		void (*cont)(struct conn *c, bool allowed));

/* After a policy change: judges c again if it was let through (the same
 * query: name, port, protocol and the address it connected to). One the
 * new policy denies is closed with a reset and its denial logged ("the
 * policy changed"); in audit mode nothing is closed. Returns false when c
 * was closed. */
bool conn_rejudge(struct conn *c);

/* conn.c: HTTPS inspection. Hands c (TLS the policy allowed only
 * inspected: c->inspect; c->host the name it was judged for, c->in the
 * client's bytes read so far) to the inspector the proxy was given
 * (proxy_opts.inspect), which takes it over with conn_set_proto(). Without
 * one, c is reset. */
void conn_inspect(struct conn *c);
/* Replaces c->path (NULL: none). -ENOMEM when it cannot be copied. */
int conn_set_path(struct conn *c, const char *path, size_t len);

/* conn.c: the upstream */
/* Resolves c->host (or takes the literal / c->orig), keeps the addresses the
 * policy allows for c, connects to the first that answers; then
 * c->on_upstream(c). A destination the policy routes through the upstream
 * proxy is reached there instead (upstream.c: c->via_upstream), by name;
 * a failure of the upstream proxy is up_err ETIMEDOUT (no answer in
 * time), EPROTO with c->up_status (it refused CONNECT), EBADMSG (a reply
 * that is no HTTP), ECONNRESET (it closed before answering), or the
 * errno of its connect or lookup. */
void conn_connect_upstream(struct conn *c, void (*done)(struct conn *c));
/* Connects to c->addrs[0..c->naddrs), the first that answers within the
 * connect timeout; then done(c) (ufd set, or -1 with up_err). */
void conn_connect_addrs(struct conn *c, void (*done)(struct conn *c));
/* "http://HOST:PORT" of --upstream-proxy, or NULL without one. */
const char *conn_upstream_proxy(const struct conn *c);
/* A connection kept from an earlier request to c->host:c->port (fd, to
 * peer) taken for c's request, as conn_connect_upstream() would have made
 * one: peer must be an address it could have chosen (the client's
 * destination for a learned or no name, the literal, else the name's),
 * allowed by the policy in force for c, and not a destination routed
 * through the upstream proxy. true: c->ufd is fd; false: not taken. */
bool conn_reuse_upstream(struct conn *c, int fd, const struct sockaddr_storage *peer);

/* relay.c: joins cfd and ufd after writing c->in (client bytes read during
 * the handshake) upstream. */
void relay_start(struct conn *c);
/* Moves bytes of direction dir (0: client -> upstream, 1: upstream ->
 * client) through its pipe with splice(2): drains the pipe into the
 * destination, then reads the source, at most *left bytes more if left is
 * not NULL (and counts them off). Arms the events it waits on (c->cev_r /
 * c->uev_w for dir 0, c->uev_r / c->cev_w for dir 1; the caller assigns
 * their callbacks) and disarms both once it returns RELAY_EOF or
 * RELAY_LIMIT. */
enum relay_step {
	RELAY_BLOCKED, /* waiting for an armed event */
	RELAY_EOF,     /* the source said EOF; the pipe is empty */
	RELAY_LIMIT,   /* *left reached 0; the pipe is empty */
	RELAY_CLOSED,  /* an error: c was closed */
};
enum relay_step relay_move(struct conn *c, int dir, uint64_t *left);
/* Points dir's two events (source readable, destination writable) at
 * cb(c), not yet added: relay_move() adds what it waits on. */
void relay_arm(struct conn *c, int dir, event_callback_fn cb);
/* Gives both directions' pipes back (an empty one to the pool, for the
 * next in the queue) and leaves the queue: at c's close. */
void relay_pipes_drop(struct conn *c);

/* conn.c: helpers */
/* Why c is refused (c->over), in words with the limit, for the reply. */
void conn_over_words(const struct conn *c, char *buf, size_t len);
/* The name the DNS responder answered c->orig for, or NULL. */
const char *conn_learned_name(const struct conn *c);
const struct policy *conn_policy(const struct conn *c);
int conn_idle_timeout(const struct conn *c);
int conn_head_timeout(const struct conn *c);
int conn_connect_timeout(const struct conn *c);
/* Seconds a plain-HTTP response head may take once the request is sent:
 * --response-timeout, or the idle timeout if that is shorter. */
int conn_response_timeout(const struct conn *c);

#endif /* CONN_H */
