// SPDX-License-Identifier: Apache-2.0
/* The OTLP sink's way to its collector (otlp_conn.c): plain HTTP or HTTPS
 * (OpenSSL, the certificate and name checked), and the headers of every
 * request. Private to audit/. */
#ifndef AUDIT_OTLP_CONN_H
#define AUDIT_OTLP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit/logsink.h"

struct event_base;
struct evhttp_connection;
struct evkeyvalq;
struct bufferevent;
typedef struct ssl_ctx_st SSL_CTX;

#define OTLP_MAX_HEADERS 16

struct otlp_conn {
	SSL_CTX *ctx;		 /* NULL: plain HTTP */
	char host[256];		 /* for SNI and the certificate's name */
	struct bufferevent *bev; /* the TLS connection last made, for its error */
	char err[96];		 /* why the last blocking exchange failed, or "" */
	struct {
		char *name, *value; /* the value may be a secret: never logged */
	} hdr[OTLP_MAX_HEADERS];
	int nhdr;
};

/* tls: https://; host as the URL names it; o: --log-header, --log-ca (NULL:
 * none). The OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_LOGS_HEADERS
 * variables are read here. 0, or -errno with errbuf set (naming a header,
 * never its value). */
int otlp_conn_init(struct otlp_conn *x, bool tls, const char *host, const struct logsink_opts *o,
		   char *errbuf, size_t errlen);
void otlp_conn_free(struct otlp_conn *x);

/* A connection to ip:port, TLS when x has a context; NULL on failure. */
struct evhttp_connection *otlp_conn_connect(struct otlp_conn *x, struct event_base *base,
					    const char *ip, uint16_t port);

/* The TLS error of the last connection ("TLS: ..."), or NULL; asked once
 * per connection, from its request's callback (it is freed after). */
const char *otlp_conn_error(struct otlp_conn *x, char *buf, size_t len);

/* The headers onto a request / as "Name: value\r\n" lines into buf
 * (returns the length, at most len). */
void otlp_conn_add_headers(const struct otlp_conn *x, struct evkeyvalq *h);
size_t otlp_conn_header_text(const struct otlp_conn *x, char *buf, size_t len);

/* One TLS exchange on connected fd (non-blocking): req written, the first
 * bytes of the answer read into resp (NUL-terminated). left_ms(arg) says
 * how long it may still take. Returns the bytes read, or -EIO. */
int otlp_conn_exchange_tls(struct otlp_conn *x, int fd, const void *req, size_t len, char *resp,
			   size_t resplen, int (*left_ms)(void *), void *arg);

#endif /* AUDIT_OTLP_CONN_H */
