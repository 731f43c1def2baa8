/* struct conn: one client connection of the proxy, from accept() through
 * the protocol handshake (http_proxy.c, socks_proxy.c, tproxy.c), the
 * policy decision, the upstream connect, to the splice relay (relay.c).
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
	CS_RESPONSE, /* plain HTTP: request sent, waiting for the response head */
};

struct conn;
struct http_ex;
typedef void (*conn_step)(struct conn *c);

/* Bytes per splice, and the pipes' size. 256 KiB moved a bulk stream 25-35 %
 * faster than 64 KiB (fewer wake-ups, splices and ACK rounds per byte); 1 MiB
 * was no faster. A pipe's pages exist only while bytes are in it. */
#define RELAY_CHUNK (1 << 18)
#define RELAY_WAKE  (1 << 20) /* bytes one direction moves per wake-up, at most */
#define PIPE_POOL   64	      /* empty pipes the proxy keeps for new relays */

/* One direction of the relay: bytes move src -> pipe -> dst with splice(2). */
struct relay_dir {
	int pipe[2];   /* -1 until first used */
	size_t inpipe; /* bytes sitting in the pipe */
	bool eof;      /* src said EOF */
	bool done;     /* dst shut down for writing */
};

struct conn {
	TAILQ_ENTRY(conn) entry; /* proxy->conns */
	uint64_t id;
	struct proxy *px;
	enum proxy_listener kind;
	enum conn_state state;
	int cfd; /* client socket */
	int ufd; /* upstream socket; -1 until connecting */
	struct event cev_r, cev_w, uev_r, uev_w, timer;
	enum quota_hit over; /* not QUOTA_NONE: kept only to be refused */
	bool judging;	     /* stream_judge() is waiting for first bytes */
	bool head_clock;     /* stream_judge(): the head timeout runs (from the first byte) */
	bool learned;	     /* host is the DNS responder's name for c->orig */
	bool http_stream;    /* transparent/SOCKS5 plain HTTP: each request judged */

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
	const char *source;	      /* "http", "connect", "socks5", "transparent" */
	char host[256];		      /* name being judged ("" if none) */
	uint16_t port;		      /* destination port, host order */
	char method[24];	      /* plain HTTP only */
	enum policy_proto proto;
	const struct policy_rule *rule; /* the allow rule that let it through */

	/* upstream */
	struct resolve_req *rq;
	struct sockaddr_storage addrs[RESOLVE_MAX_ADDRS];
	int naddrs, ai;
	struct sockaddr_storage up_addr;
	int up_err;			     /* errno of the last failed connect */
	void (*on_upstream)(struct conn *c); /* connected (ufd set) or failed (ufd -1, up_err) */

	/* --ask: a question on the terminal while the connection waits */
	struct ask_req *ask_req;
	void (*ask_cont)(struct conn *c, bool allowed);
	struct sockaddr_storage ask_addr;
	bool ask_has_addr;
	bool approved;	    /* approved once on the terminal */
	char ask_rule[300]; /* what "always" adds */
	void *req;	    /* a handler's parsed request, kept across the wait */
	size_t req_used;    /* bytes of c->in it took */

	/* plain-HTTP exchange (http_proxy.c); freed by conn_close */
	struct http_ex *ex;

	/* relay */
	struct relay_dir d[2]; /* 0: client -> upstream, 1: upstream -> client */
	uint64_t bytes[2];
	uint64_t last_active; /* monotonic seconds */
};

/* proxy.c */
void conn_close(struct conn *c, const char *why);
void conn_read_client(struct conn *c, void (*on_input)(struct conn *c));
void conn_reply(struct conn *c, const char *data, size_t len, conn_step next);
void conn_drop_input(struct conn *c, size_t n);
void conn_timer(struct conn *c, int seconds);

/* Judges c (host/port/proto/method/addr as set), logs, prints denials.
 * addr: destination address if known. Returns true if allowed; d filled. */
bool conn_decide(struct conn *c, const struct sockaddr *addr, struct policy_decision *d);

/* The same, but with --ask a denial for lack of a rule becomes a question on
 * the terminal: returns -1, and cont(c, allowed) runs with the answer (from
 * the event loop). Otherwise returns 1 or 0 at once and cont is not used. */
int conn_decide_ask(struct conn *c, const struct sockaddr *addr, struct policy_decision *d,
		    void (*cont)(struct conn *c, bool allowed));

/* Resolves c->host (or takes the literal / c->orig), keeps the addresses the
 * policy allows for c, connects to the first that answers; then
 * c->on_upstream(c). */
void conn_connect_upstream(struct conn *c, void (*done)(struct conn *c));

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
/* Gives c->d[dir] a pipe (a pooled one if there is one); -1 with errno. */
int conn_pipe_open(struct conn *c, int dir);

void conn_touch(struct conn *c);
/* Closes c with a reset (SO_LINGER 0), so that the client sees an error
 * rather than an orderly end of the stream. */
void conn_abort(struct conn *c, const char *why);
/* Why c is refused (c->over), in words with the limit, for the reply. */
void conn_over_words(const struct conn *c, char *buf, size_t len);
/* The name the DNS responder answered c->orig for, or NULL. */
const char *conn_learned_name(const struct conn *c);
void http_ex_free(struct conn *c);
/* CS_RESPONSE timed out: 504 to the client (http_proxy.c). */
void http_response_timeout(struct conn *c);

/* handlers */
void http_proxy_start(struct conn *c);
/* http_proxy.c: a transparent or SOCKS5 stream whose first bytes (c->in)
 * are an HTTP/1.x request head with a Host. From here on every request on
 * it is judged by its own Host, on c->port, and forwarded the way the
 * proxy forwards absolute-URI requests (fresh upstream each); a denied one
 * gets 403 and the connection closes. */
void http_stream_start(struct conn *c);
void socks_proxy_start(struct conn *c);
void tproxy_start(struct conn *c);

/* helpers */
int conn_sockaddr_port(const struct sockaddr_storage *ss);
void conn_format_addr(const struct sockaddr *sa, char *buf, size_t len);
const struct policy *conn_policy(const struct conn *c);
int conn_idle_timeout(const struct conn *c);
int conn_head_timeout(const struct conn *c);
/* Seconds a plain-HTTP response head may take once the request is sent:
 * --response-timeout, or the idle timeout if that is shorter. */
int conn_response_timeout(const struct conn *c);
int conn_first_bytes_ms(const struct conn *c);
void conn_timer_ms(struct conn *c, int ms);

/* tproxy.c: judge a stream by its first bytes in c->in (TLS SNI, HTTP Host,
 * or neither), with c->orig as the destination the client asked for and
 * c->host the name it asked for ("" if none). Used by the transparent and
 * SOCKS5 paths. Waits for more bytes while the protocol is incomplete. */
void stream_judge(struct conn *c, bool timed_out);

#endif /* CONN_H */
