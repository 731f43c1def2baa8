// SPDX-License-Identifier: Apache-2.0
/* How the OTLP sink reaches its collector (otlp_conn.h): plain HTTP, or
 * HTTPS with OpenSSL (the collector's certificate checked against the
 * system's store or --log-ca, its name or address checked, TLS 1.2 at the
 * least, never a silent fall back to plain), and the headers every request
 * carries (--log-header, OTEL_EXPORTER_OTLP_LOGS_HEADERS and
 * OTEL_EXPORTER_OTLP_HEADERS: tokens that must never be logged, so errors
 * name a header, never its value). An HTTPS request gets a connection of
 * its own (libevent cannot open a TLS connection again once it closed);
 * one request a second at most is sent, so the handshake is cheap. */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "audit/otlp_conn.h"

/* "name: value" (--log-header) or "name=value" (the OTEL variables, whose
 * values are percent-encoded) into x's list. */
static int
add_header(struct otlp_conn *x, const char *text, size_t len, char sep, bool pct, const char *from,
	   char *errbuf, size_t errlen)
{
	const char *eq;
	size_t nlen, vlen, k = 0;
	char *name, *value;

	while (len && isspace((unsigned char)*text))
		text++, len--;
	eq = memchr(text, sep, len);
	if (!eq || eq == text) {
		snprintf(errbuf, errlen, "%s: expected NAME%cVALUE", from, sep);
		return -EINVAL;
	}
	nlen = (size_t)(eq - text);
	while (nlen && isspace((unsigned char)text[nlen - 1]))
		nlen--;
	for (size_t i = 0; i < nlen; i++)
		if (!isalnum((unsigned char)text[i]) && !strchr("!#$%&'*+-.^_`|~", text[i])) {
			snprintf(errbuf, errlen, "%s: a header name is a token, not \"%.*s\"", from,
				 (int)nlen, text);
			return -EINVAL;
		}
	if (x->nhdr == OTLP_MAX_HEADERS) {
		snprintf(errbuf, errlen, "%s: at most %d headers", from, OTLP_MAX_HEADERS);
		return -EINVAL;
	}
	eq++;
	vlen = len - (size_t)(eq - text);
	while (vlen && isspace((unsigned char)*eq))
		eq++, vlen--;
	name = strndup(text, nlen);
	value = malloc(vlen + 1);
	if (!name || !value) {
		free(name);
		free(value);
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < vlen; i++) {
		if (pct && eq[i] == '%' && i + 2 < vlen && isxdigit((unsigned char)eq[i + 1]) &&
		    isxdigit((unsigned char)eq[i + 2])) {
			char hex[3] = {eq[i + 1], eq[i + 2], 0};

			value[k++] = (char)strtoul(hex, NULL, 16);
			i += 2;
		} else {
			value[k++] = eq[i];
		}
		if ((unsigned char)value[k - 1] < 0x20 || value[k - 1] == 0x7f) {
			/* the header's name only: its value may be a secret */
			snprintf(errbuf, errlen, "%s: header %s: no control characters in a value",
				 from, name);
			free(name);
			free(value);
			return -EINVAL;
		}
	}
	value[k] = 0;
	x->hdr[x->nhdr].name = name;
	x->hdr[x->nhdr].value = value;
	x->nhdr++;
	return 0;
}

/* "k=v,k2=v2" from an OTEL variable. */
static int
add_env_headers(struct otlp_conn *x, const char *var, char *errbuf, size_t errlen)
{
	const char *v = getenv(var), *p;

	for (p = v; p && *p;) {
		size_t n = strcspn(p, ",");

		if (n && add_header(x, p, n, '=', true, var, errbuf, errlen))
			return -EINVAL;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int
tls_init(struct otlp_conn *x, const char *ca_file, char *errbuf, size_t errlen)
{
	x->ctx = SSL_CTX_new(TLS_client_method());
	if (!x->ctx) {
		snprintf(errbuf, errlen, "TLS: cannot make a context");
		return -ENOMEM;
	}
	SSL_CTX_set_min_proto_version(x->ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(x->ctx, SSL_VERIFY_PEER, NULL);
	if (ca_file ? SSL_CTX_load_verify_locations(x->ctx, ca_file, NULL) != 1
		    : SSL_CTX_set_default_verify_paths(x->ctx) != 1) {
		char e[160];

		ERR_error_string_n(ERR_get_error(), e, sizeof(e));
		snprintf(errbuf, errlen, "TLS: cannot load %s: %s",
			 ca_file ? ca_file : "the system's certificates", e);
		return -EINVAL;
	}
	return 0;
}

int
otlp_conn_init(struct otlp_conn *x, bool tls, const char *host, const struct logsink_opts *o,
	       char *errbuf, size_t errlen)
{
	memset(x, 0, sizeof(*x));
	snprintf(x->host, sizeof(x->host), "%s", host);
	if (o && o->ca_file && !tls) {
		snprintf(errbuf, errlen,
			 "--log-ca: the collector is reached by http://, not https://");
		return -EINVAL;
	}
	if (tls && tls_init(x, o ? o->ca_file : NULL, errbuf, errlen))
		return -EINVAL;
	if (add_env_headers(x, "OTEL_EXPORTER_OTLP_HEADERS", errbuf, errlen) ||
	    add_env_headers(x, "OTEL_EXPORTER_OTLP_LOGS_HEADERS", errbuf, errlen))
		return -EINVAL;
	for (int i = 0; o && i < o->nheaders; i++)
		if (add_header(x, o->headers[i], strlen(o->headers[i]), ':', false, "--log-header",
			       errbuf, errlen))
			return -EINVAL;
	return 0;
}

void
otlp_conn_free(struct otlp_conn *x)
{
	for (int i = 0; i < x->nhdr; i++) {
		/* tokens: not left in freed memory */
		explicit_bzero(x->hdr[i].value, strlen(x->hdr[i].value));
		free(x->hdr[i].name);
		free(x->hdr[i].value);
	}
	x->nhdr = 0;
	if (x->ctx)
		SSL_CTX_free(x->ctx);
	x->ctx = NULL;
}

/* An SSL for one connection: SNI for a name, the certificate checked
 * against the name or the address. */
static SSL *
new_ssl(const struct otlp_conn *x)
{
	SSL *ssl = SSL_new(x->ctx);
	struct in6_addr a;

	if (!ssl)
		return NULL;
	if (inet_pton(AF_INET, x->host, &a) == 1 || inet_pton(AF_INET6, x->host, &a) == 1) {
		X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), x->host);
	} else {
		SSL_set_tlsext_host_name(ssl, x->host);
		SSL_set1_host(ssl, x->host);
	}
	return ssl;
}

struct evhttp_connection *
otlp_conn_connect(struct otlp_conn *x, struct event_base *base, const char *ip, uint16_t port)
{
	struct bufferevent *bev;
	struct evhttp_connection *conn;
	SSL *ssl;

	if (!x->ctx)
		return evhttp_connection_base_new(base, NULL, ip, port);
	ssl = new_ssl(x);
	if (!ssl)
		return NULL;
	bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
					     BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (!bev) {
		SSL_free(ssl);
		return NULL;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	x->bev = bev;
	conn = evhttp_connection_base_bufferevent_new(base, NULL, bev, ip, port);
	if (!conn)
		bufferevent_free(bev);
	return conn;
}

const char *
otlp_conn_error(struct otlp_conn *x, char *buf, size_t len)
{
	/* the connection is freed once its request completes: asked once */
	unsigned long e = x->bev ? bufferevent_get_openssl_error(x->bev) : 0;

	x->bev = NULL;
	if (!e && x->err[0]) {
		snprintf(buf, len, "%s", x->err);
		return buf;
	}
	if (!e)
		return NULL;
	snprintf(buf, len, "TLS: ");
	ERR_error_string_n(e, buf + 5, len - 5);
	return buf;
}

void
otlp_conn_add_headers(const struct otlp_conn *x, struct evkeyvalq *h)
{
	for (int i = 0; i < x->nhdr; i++)
		evhttp_add_header(h, x->hdr[i].name, x->hdr[i].value);
}

size_t
otlp_conn_header_text(const struct otlp_conn *x, char *buf, size_t len)
{
	size_t n = 0;

	for (int i = 0; i < x->nhdr && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s: %s\r\n", x->hdr[i].name,
				      x->hdr[i].value);
	return n < len ? n : len;
}

/* Waits at most ms for ev on fd: 0, or -1 when the time is up. */
static int
wait_fd(int fd, short ev, int ms)
{
	struct pollfd p = {.fd = fd, .events = ev};

	return ms > 0 && poll(&p, 1, ms) > 0 ? 0 : -1;
}

int
otlp_conn_exchange_tls(struct otlp_conn *x, int fd, const void *req, size_t len, char *resp,
		       size_t resplen, int (*left_ms)(void *), void *arg)
{
	SSL *ssl = new_ssl(x);
	size_t off = 0;
	int r = -EIO, n;

	x->err[0] = 0;
	if (!ssl || !SSL_set_fd(ssl, fd))
		goto out;
	for (;;) {
		n = SSL_connect(ssl);
		if (n == 1)
			break;
		n = SSL_get_error(ssl, n);
		if ((n != SSL_ERROR_WANT_READ && n != SSL_ERROR_WANT_WRITE) ||
		    wait_fd(fd, n == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, left_ms(arg)))
			goto out;
	}
	while (off < len) {
		n = SSL_write(ssl, (const char *)req + off, (int)(len - off));
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		n = SSL_get_error(ssl, n);
		if ((n != SSL_ERROR_WANT_READ && n != SSL_ERROR_WANT_WRITE) ||
		    wait_fd(fd, n == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, left_ms(arg)))
			goto out;
	}
	for (;;) {
		n = SSL_read(ssl, resp, (int)resplen - 1);
		if (n > 0) {
			resp[n] = 0;
			r = n;
			break;
		}
		n = SSL_get_error(ssl, n);
		if ((n != SSL_ERROR_WANT_READ && n != SSL_ERROR_WANT_WRITE) ||
		    wait_fd(fd, n == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, left_ms(arg)))
			goto out;
	}
out:
	if (r < 0) {
		long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
		unsigned long e = ERR_get_error();

		if (v != X509_V_OK)
			snprintf(x->err, sizeof(x->err), "TLS: certificate verify failed (%s)",
				 X509_verify_cert_error_string(v));
		else if (e)
			ERR_error_string_n(e, x->err + snprintf(x->err, sizeof(x->err), "TLS: "),
					   sizeof(x->err) - 5);
	}
	ERR_clear_error();
	SSL_free(ssl);
	return r;
}
