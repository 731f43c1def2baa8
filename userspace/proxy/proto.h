// SPDX-License-Identifier: Apache-2.0
/* The proxy's protocols behind one table. The core (proxy.c, conn.c:
 * accept, timers, decisions, the upstream connect, close) calls a protocol
 * only through its struct proto_ops; a protocol calls the core's service
 * API of conn.h (read, reply, decide, connect upstream, relay). Each
 * listener has one protocol (proto.c: the table); a protocol may hand its
 * connection on to another (conn_set_proto()): SOCKS5 and the transparent
 * listener to the stream judge, the judge to the HTTP exchange. A
 * protocol's state lives behind c->pstate, owned by its ops. Adding one:
 * a file with its ops and handlers, a line in proto.c's table (and a
 * listener in proxy.h's enum if it listens on its own port). */
#ifndef PROXY_PROTO_H
#define PROXY_PROTO_H

#include <stdbool.h>

#include "proxy/proxy.h"

struct conn;

/* Where a decision came from: the decision log's "source" word
 * (conn_source_word()). */
enum conn_source {
	CONN_SRC_HTTP = 0,    /* a plain-HTTP request to the HTTP proxy */
	CONN_SRC_CONNECT,     /* CONNECT to the HTTP proxy */
	CONN_SRC_SOCKS5,      /* the SOCKS5 listener */
	CONN_SRC_TRANSPARENT, /* redirected by the kernel to the transparent listener */
	CONN_SRC_MAX,
};

struct proto_ops {
	const char *name; /* for log lines */
	/* A client accepted (c->cfd, c->who, c->over set; the head timeout
	 * runs): set c->source, read or reply through conn.h. Right after it
	 * the core reads what the client has sent already. 0, or -1 when it
	 * closed c. */
	int (*start)(struct conn *c);
	/* c->timer fired in a state the core does not own (CS_HEAD, CS_REPLY,
	 * CS_RESPONSE). NULL: conn_timed_out(). */
	void (*timeout)(struct conn *c);
	/* Frees c->pstate and what it holds; NULL when there is none. Called
	 * by conn_close() and when c is handed to another protocol. */
	void (*free)(struct conn *c);
	/* Over a connection limit: does the protocol answer (start() with
	 * c->over set, a connection kept for that), or is the client reset? */
	bool answers_over;
	/* Answers a client over a limit (or when descriptors run out) without
	 * a struct conn, from fd alone, if the answer can be written at once:
	 * true if it was. NULL, or false: the core resets the client. */
	bool (*refuse)(int fd, const char *why);
	/* The client closed before its first byte (a port probe such as nc -z,
	 * a wait-for-port loop): NULL, or conn_close() is the protocol's to
	 * call, after it has logged what the connection was. */
	void (*eof)(struct conn *c);
};

/* proto.c: the protocol of listener l, or NULL when o does not open l. */
const struct proto_ops *proto_of_listener(enum proxy_listener l, const struct proxy_opts *o);
/* proto.c: "http", "connect", "socks5", "transparent". */
const char *conn_source_word(enum conn_source s);

/* The protocols (one file each). */
extern const struct proto_ops http_proto_ops; /* http_proxy.c: HTTP proxy, CONNECT, HTTP streams */
extern const struct proto_ops socks5_proto_ops; /* socks_proxy.c: SOCKS5 */
extern const struct proto_ops tproxy_proto_ops; /* tproxy.c: the transparent listener */
extern const struct proto_ops judge_proto_ops;	/* judge.c: a stream's first bytes */

/* Hand-overs between protocols. */

/* judge.c: judges the stream by its first bytes (TLS SNI, an HTTP Host, or
 * neither), with c->orig as the destination the client asked for and
 * c->host the name it asked for ("" if none); a plain-HTTP stream goes on
 * to http_stream_start(). silence_ms: how long a client may say nothing
 * before it is plain TCP (a protocol where the server speaks first); 0:
 * the head timeout, counted from now. 0, or -1 when it closed c. */
int judge_start(struct conn *c, int silence_ms);

/* http_proxy.c: a transparent or SOCKS5 stream whose first bytes (c->in)
 * are an HTTP/1.x request head with a Host. From here on every request on
 * it is judged by its own Host, on c->port, and forwarded the way the
 * proxy forwards absolute-URI requests (fresh upstream each); a denied one
 * gets 403 and the connection closes. */
void http_stream_start(struct conn *c);

#endif /* PROXY_PROTO_H */
