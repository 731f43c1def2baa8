// SPDX-License-Identifier: Apache-2.0
/* An inspected TLS session (inspect.h), its two TLS ends: the inspector
 * (the CA and the two contexts), the client's TLS ended with a leaf of the
 * CA for the name the policy judged (HTTP/1.1 by ALPN, or none: a client
 * that offers only other protocols, h2 alone, gets a no_application_protocol
 * alert), the upstream's TLS to that name, verified (the system's store or
 * --upstream-ca, the name checked, TLS 1.2 at least; a failure is a 502
 * upstream-tls-failed, never plain text), the proxy's replies inside the
 * session, timeouts and the close with a close_notify. Both ends are
 * libevent bufferevent_openssl filters over socket bufferevents, so that
 * the bytes the proxy read before handing the client over (a ClientHello
 * the stream judge parsed) are the TLS layer's first input; their
 * watermarks keep what is buffered bounded (core.h: IX_HIGH). The
 * requests inside are exchange.c's. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "inspect/core.h"
#include "lib/log.h"

static const unsigned char alpn_h1[] = "\x08http/1.1";

/* The TLS filters free their SSL and socket bufferevent with them, and
 * call back from the loop, never from inside a call of ours: a handshake
 * may fail (and the session close) inside bufferevent_enable(). */
#define IX_BEV_OPTS (BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS)

/* The client's ALPN offer: HTTP/1.1, or the handshake fails. */
static int
alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
	    unsigned int inlen, void *arg)
{
	unsigned char *sel;

	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto(&sel, outlen, alpn_h1, sizeof(alpn_h1) - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

/* The two contexts; 0 or -EINVAL with errbuf set. */
static int
contexts(struct inspector *in, const struct inspect_opts *o, char *errbuf, size_t errlen)
{
	in->server = SSL_CTX_new(TLS_server_method());
	in->client = SSL_CTX_new(TLS_client_method());
	if (!in->server || !in->client ||
	    !SSL_CTX_set_min_proto_version(in->server, TLS1_2_VERSION) ||
	    !SSL_CTX_set_min_proto_version(in->client, TLS1_2_VERSION) ||
	    SSL_CTX_set_alpn_protos(in->client, alpn_h1, sizeof(alpn_h1) - 1)) {
		snprintf(errbuf, errlen, "cannot make the inspection's TLS contexts");
		return -EINVAL;
	}
	SSL_CTX_set_options(in->server, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_options(in->client, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_alpn_select_cb(in->server, alpn_select, NULL);
	SSL_CTX_set_verify(in->client, SSL_VERIFY_PEER, NULL);
	if (o->upstream_ca ? SSL_CTX_load_verify_locations(in->client, o->upstream_ca, NULL) != 1
			   : SSL_CTX_set_default_verify_paths(in->client) != 1) {
		unsigned long e = ERR_get_error();

		snprintf(errbuf, errlen, "%s%s: %s", o->upstream_ca ? "--upstream-ca " : "",
			 o->upstream_ca ? o->upstream_ca : "the system's certificate store",
			 e ? ERR_reason_error_string(e) : "cannot be read");
		ERR_clear_error();
		return -EINVAL;
	}
	return 0;
}

struct inspector *
inspector_new(const struct inspect_opts *o, char *errbuf, size_t errlen)
{
	struct inspector *in = calloc(1, sizeof(*in));

	if (!in) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	TAILQ_INIT(&in->pool);
	in->pool_max = o->pool_max;
	in->ca = inspect_ca_new(o->ca_cert, o->ca_key, errbuf, errlen);
	if (!in->ca || contexts(in, o, errbuf, errlen)) {
		inspector_free(in);
		return NULL;
	}
	return in;
}

void
inspector_free(struct inspector *in)
{
	if (!in)
		return;
	ix_pool_free(in);
	SSL_CTX_free(in->server);
	SSL_CTX_free(in->client);
	inspect_ca_free(in->ca);
	free(in);
}

char *
inspector_ca_pem(const struct inspector *in, size_t *len)
{
	return inspect_ca_pem(in->ca, len);
}

void
inspector_stats(const struct inspector *in, struct inspect_stats *st)
{
	unsigned int cached;

	*st = in->st;
	inspect_ca_counts(in->ca, &st->minted, &cached);
}

/* The words of what OpenSSL said last on bev (and the verify result). */
static void
tls_words(struct bufferevent *bev, char *buf, size_t len)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	unsigned long e, last = 0;

	while ((e = bufferevent_get_openssl_error(bev)))
		last = e;
	if (v != X509_V_OK)
		snprintf(buf, len, "certificate verify failed: %s",
			 X509_verify_cert_error_string(v));
	else if (last)
		snprintf(buf, len, "%s",
			 ERR_reason_error_string(last) ? ERR_reason_error_string(last)
						       : "TLS error");
	else
		snprintf(buf, len, "the connection closed during the handshake");
	ERR_clear_error();
}

/* ---- the close ---- */

static void
on_cu_drained(struct bufferevent *bev, void *arg)
{
	struct isess *s = arg;

	if (!evbuffer_get_length(bufferevent_get_output(bev)))
		conn_close(s->c, "inspected session done");
}

static void
on_cu_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	conn_close(((struct isess *)arg)->c, "client closed");
}

/* Everything owed is in the TLS layer: a close_notify after it, and the
 * close once the socket's bufferevent has sent it all. */
static void
close_now(struct isess *s)
{
	SSL *ssl = bufferevent_openssl_get_ssl(s->cb);

	bufferevent_disable(s->cb, EV_READ | EV_WRITE);
	SSL_shutdown(ssl);
	ERR_clear_error();
	/* the filter is done with its socket's bufferevent: its callbacks
	 * are ours from here */
	bufferevent_setcb(s->cu, NULL, on_cu_drained, on_cu_event, s);
	bufferevent_setwatermark(s->cu, EV_WRITE, 0, 0);
	bufferevent_enable(s->cu, EV_WRITE);
	on_cu_drained(s->cu, s);
}

void
ix_finish(struct isess *s)
{
	struct conn *c = s->c;

	s->phase = IX_CLOSING;
	ix_upstream_close(s);
	bufferevent_disable(s->cb, EV_READ);
	bufferevent_setwatermark(s->cb, EV_WRITE, 0, 0);
	c->state = CS_REPLY; /* a client that does not read goes at the head timeout */
	conn_timer(c, conn_head_timeout(c));
	if (!evbuffer_get_length(bufferevent_get_output(s->cb)))
		close_now(s);
}

void
ix_client_write(struct bufferevent *bev, void *arg)
{
	struct isess *s = arg;

	if (s->phase == IX_CLOSING) {
		if (!evbuffer_get_length(bufferevent_get_output(bev)))
			close_now(s);
		return;
	}
	if (!s->ub || (s->phase != IX_TUNNEL && (s->phase != IX_EXCHANGE || s->resp_done)))
		return;
	/* the client took some: the upstream may send more, and what waits
	 * in its input goes now (no read event will come for it) */
	bufferevent_enable(s->ub, EV_READ);
	if (!evbuffer_get_length(bufferevent_get_input(s->ub)))
		return;
	if (s->phase == IX_TUNNEL)
		ix_upstream_read(s->ub, s);
	else
		ix_pump_response(s);
}

void
ix_reply(struct isess *s, int status, const char *phrase, const char *perr, bool keep,
	 const char *fmt, ...)
{
	struct evbuffer *out = bufferevent_get_output(s->cb);
	char body[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(body, sizeof(body) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > (int)sizeof(body) - 2)
		n = (int)sizeof(body) - 2;
	body[n++] = '\n';
	body[n] = 0;
	evbuffer_add_printf(out,
			    "HTTP/1.1 %d %s\r\n%s%s%sContent-Type: text/plain; charset=utf-8\r\n"
			    "Content-Length: %d\r\nConnection: %s\r\n\r\n%s",
			    status, phrase, perr ? "x-proxy-error: " : "", perr ? perr : "",
			    perr ? "\r\n" : "", n, keep ? "keep-alive" : "close", body);
	if (!keep)
		ix_finish(s);
}

/* ---- the client's TLS ---- */

/* What the TLS layer wrote last (an alert) sent at once, as far as the
 * socket takes it: the close follows. A bufferevent's output is drained
 * by it alone (its front is frozen). */
static void
flush_alert(struct isess *s)
{
	struct evbuffer *out = bufferevent_get_output(s->cu);

	evbuffer_unfreeze(out, 1);
	evbuffer_write(out, s->c->cfd);
	evbuffer_freeze(out, 1);
}

static void
on_client_event(struct bufferevent *bev, short what, void *arg)
{
	struct isess *s = arg;
	char words[256];

	if (what & BEV_EVENT_CONNECTED) {
		ix_next_request(s);
		return;
	}
	if (s->phase == IX_HANDSHAKE) {
		tls_words(bev, words, sizeof(words));
		log_info("conn %llu: %s:%u: the client's TLS handshake failed: %s",
			 (unsigned long long)s->c->id, s->c->host, s->c->port, words);
		/* the alert that says why (no_application_protocol to an
		 * h2-only client) goes out before the close */
		flush_alert(s);
		conn_close(s->c, "client TLS handshake failed");
		return;
	}
	conn_close(s->c, (what & BEV_EVENT_EOF) ? "client closed" : "client TLS error");
}

static void
inspect_free(struct conn *c)
{
	struct isess *s = c->pstate;

	if (!s)
		return;
	ix_request_free(s);
	if (s->ub)
		bufferevent_free(s->ub); /* c->ufd is closed by the core */
	if (s->cb)
		bufferevent_free(s->cb); /* and its socket's bufferevent, and the SSL */
	else if (s->cu)
		bufferevent_free(s->cu);
	free(s->req);
	free(s);
	c->pstate = NULL;
}

static void
inspect_timeout(struct conn *c)
{
	struct isess *s = c->pstate;

	switch (s->phase) {
	case IX_UPSTREAM:
		ix_reply(s, 504, "Gateway Timeout", "upstream-connect-timeout", false,
			 "egressctl: %s:%u did not finish its TLS handshake in time", c->host,
			 c->port);
		return;
	case IX_EXCHANGE:
		ix_response_timeout(s);
		return;
	default:
		conn_close(c, s->phase == IX_HEAD && s->requested ? "idle" : "client head timeout");
		return;
	}
}

static const struct proto_ops inspect_ops = {
	.name = "inspect",
	.timeout = inspect_timeout,
	.free = inspect_free,
};

/* A socket bufferevent's input takes bytes only from its socket (its end
 * is frozen): these are put in front of what it reads. */
static int
prefill(struct evbuffer *in, const char *data, size_t len)
{
	int err;

	if (!len)
		return 0;
	evbuffer_unfreeze(in, 0);
	err = evbuffer_add(in, data, len);
	evbuffer_freeze(in, 0);
	return err;
}

/* The client's end: c's socket, with the bytes read already in front. */
static int
client_end(struct isess *s, SSL *ssl)
{
	struct conn *c = s->c;
	struct event_base *base = event_get_base(&c->timer);

	s->cu = bufferevent_socket_new(base, c->cfd, 0);
	if (!s->cu || prefill(bufferevent_get_input(s->cu), c->in, c->inlen))
		return -ENOMEM;
	conn_drop_input(c, c->inlen);
	s->cb = bufferevent_openssl_filter_new(base, s->cu, ssl, BUFFEREVENT_SSL_ACCEPTING,
					       IX_BEV_OPTS);
	if (!s->cb)
		return -ENOMEM;
	bufferevent_openssl_set_allow_dirty_shutdown(s->cb, 1);
	bufferevent_setwatermark(s->cu, EV_READ, 0, IX_LOW);
	bufferevent_setwatermark(s->cu, EV_WRITE, 0, IX_LOW);
	bufferevent_setwatermark(s->cb, EV_READ, 0, IX_HIGH);
	bufferevent_setwatermark(s->cb, EV_WRITE, IX_LOW, 0);
	bufferevent_setcb(s->cb, ix_client_read, ix_client_write, on_client_event, s);
	return 0;
}

void
inspect_start(void *arg, struct conn *c)
{
	struct inspector *ins = arg;
	struct isess *s;
	SSL *ssl;
	char err[256];

	if (!ins) {
		conn_abort(c, "no inspector");
		return;
	}
	s = calloc(1, sizeof(*s));
	ssl = SSL_new(ins->server);
	event_del(&c->cev_r);
	event_del(&c->cev_w);
	evtimer_del(&c->timer);
	if (!s || !ssl || !(s->req = malloc(sizeof(*s->req)))) {
		SSL_free(ssl);
		free(s);
		conn_close(c, "out of memory");
		return;
	}
	s->ins = ins;
	s->c = c;
	if (inspect_ca_use(ins->ca, ssl, c->host, err, sizeof(err))) {
		log_warnx("conn %llu: %s: %s", (unsigned long long)c->id, c->host, err);
		SSL_free(ssl);
		free(s->req);
		free(s);
		conn_abort(c, "no certificate");
		return;
	}
	conn_set_proto(c, &inspect_ops, s); /* from here conn_close frees s */
	c->inspected = true;
	ins->st.sessions++;
	if (client_end(s, ssl)) {
		if (!s->cb)
			SSL_free(ssl);
		conn_close(c, "cannot make the client's TLS bufferevents");
		return;
	}
	s->phase = IX_HANDSHAKE;
	c->state = CS_HEAD;
	conn_timer(c, conn_head_timeout(c));
	bufferevent_enable(s->cb, EV_READ | EV_WRITE);
	/* the bytes already there: no read event will come for them */
	bufferevent_trigger(s->cu, EV_READ, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

/* ---- the upstream's TLS ---- */

void
ix_upstream_close(struct isess *s)
{
	if (s->ub)
		bufferevent_free(s->ub);
	else if (s->uu)
		bufferevent_free(s->uu);
	s->ub = s->uu = NULL;
	if (s->c->ufd != -1)
		close(s->c->ufd);
	s->c->ufd = -1;
}

static void
on_upstream_handshake(struct bufferevent *bev, short what, void *arg)
{
	struct isess *s = arg;
	struct conn *c = s->c;
	const unsigned char *proto = NULL;
	unsigned int plen = 0;
	char words[256];

	if (what & BEV_EVENT_CONNECTED) {
		SSL_get0_alpn_selected(bufferevent_openssl_get_ssl(bev), &proto, &plen);
		if (!plen || (plen == 8 && !memcmp(proto, "http/1.1", 8))) {
			bufferevent_setcb(bev, ix_upstream_read, ix_upstream_write,
					  ix_upstream_event, s);
			ix_upstream_up(s);
			return;
		}
		snprintf(words, sizeof(words), "the server chose a protocol other than http/1.1");
	} else {
		tls_words(bev, words, sizeof(words));
	}
	s->ins->st.upstream_failed++;
	log_info("conn %llu: %s:%u: upstream TLS failed: %s", (unsigned long long)c->id, c->host,
		 c->port, words);
	ix_reply(s, 502, "Bad Gateway", "upstream-tls-failed", false,
		 "egressctl: TLS to %s:%u failed: %s", c->host, c->port, words);
}

/* Checks the server's certificate for c->host: a name, or an address. */
static int
verify_name(SSL *ssl, const char *host)
{
	X509_VERIFY_PARAM *pm = SSL_get0_param(ssl);
	unsigned char ip[16];

	if (inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1)
		return X509_VERIFY_PARAM_set1_ip_asc(pm, host) == 1 ? 0 : -1;
	X509_VERIFY_PARAM_set_hostflags(pm, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (SSL_set_tlsext_host_name(ssl, host) != 1 ||
	    X509_VERIFY_PARAM_set1_host(pm, host, 0) != 1)
		return -1;
	return 0;
}

void
ix_upstream_tls(struct isess *s)
{
	struct conn *c = s->c;
	struct event_base *base = event_get_base(&c->timer);
	SSL *ssl = SSL_new(s->ins->client);

	if (!ssl || verify_name(ssl, c->host) ||
	    !(s->uu = bufferevent_socket_new(base, c->ufd, 0)) ||
	    !(s->ub = bufferevent_openssl_filter_new(base, s->uu, ssl, BUFFEREVENT_SSL_CONNECTING,
						     IX_BEV_OPTS))) {
		if (!s->ub)
			SSL_free(ssl);
		ix_reply(s, 502, "Bad Gateway", "upstream-tls-failed", false,
			 "egressctl: TLS to %s:%u could not start", c->host, c->port);
		return;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(s->ub, 1);
	bufferevent_setwatermark(s->uu, EV_READ, 0, IX_LOW);
	bufferevent_setwatermark(s->uu, EV_WRITE, 0, IX_LOW);
	bufferevent_setwatermark(s->ub, EV_READ, 0, IX_HIGH);
	bufferevent_setwatermark(s->ub, EV_WRITE, 0, 0);
	bufferevent_setcb(s->ub, NULL, NULL, on_upstream_handshake, s);
	s->phase = IX_UPSTREAM;
	c->state = CS_RESPONSE;
	conn_timer(c, conn_connect_timeout(c));
	bufferevent_enable(s->ub, EV_READ | EV_WRITE);
}
