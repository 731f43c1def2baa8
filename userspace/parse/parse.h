// SPDX-License-Identifier: Apache-2.0
/* Parsers of the bytes clients send to the proxy: HTTP/1.x request heads,
 * SOCKS5 (RFC 1928) handshakes, and the SNI of a TLS ClientHello. All pure:
 * (buffer, length) in, a struct out, nothing retained, never assuming that
 * one read is one message. Every one of them is fuzzed (tests/fuzz/). */
#ifndef PARSE_H
#define PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum parse_result {
	PARSE_DONE = 0,	   /* a complete message; *consumed says how many bytes */
	PARSE_MORE = 1,	   /* need more bytes (nothing consumed) */
	PARSE_ERROR = 2,   /* malformed */
	PARSE_TOO_LONG = 3 /* exceeds the limit given */
};

/* ---- HTTP/1.x request head (http.c) ---- */

#define HTTP_MAX_HEADERS 100

struct http_header {
	const char *name; /* points into the caller's buffer; not NUL-terminated */
	size_t name_len;
	const char *value; /* leading/trailing whitespace trimmed */
	size_t value_len;
};

enum http_body {
	HTTP_BODY_NONE = 0,   /* no body (no Content-Length, no chunked) */
	HTTP_BODY_LENGTH = 1, /* Content-Length: body_len bytes */
	HTTP_BODY_CHUNKED = 2 /* Transfer-Encoding: chunked (last coding) */
};

struct http_request {
	char method[24];   /* "GET", "CONNECT", ... (token chars only) */
	char host[256];	   /* lower-cased host, from the absolute URI, the CONNECT
			     * authority, or the Host header; brackets of an IPv6
			     * literal removed; trailing dot kept (policy strips it) */
	uint16_t port;	   /* explicit port, or 80 (http://), 443 (https:// or CONNECT needs one) */
	bool connect;	   /* CONNECT host:port */
	bool absolute;	   /* request-target was absolute-form (http://host/...) */
	char target[2048]; /* origin-form path+query to send upstream ("/x?y"); "" for CONNECT */
	const char *raw_target; /* the request-target as sent (points into the buffer) */
	size_t raw_target_len;
	int version_minor; /* 0 or 1 (HTTP/1.0 or HTTP/1.1) */
	bool keep_alive;   /* per version and Connection header */
	enum http_body body;
	uint64_t body_len; /* for HTTP_BODY_LENGTH */
	size_t nheaders;
	struct http_header headers[HTTP_MAX_HEADERS];
};

/* Parses one request head from buf (up to and including the blank line).
 * Absolute-form ("GET http://h:8080/p HTTP/1.1"), authority-form for
 * CONNECT ("CONNECT h:443 HTTP/1.1"), and origin-form with a Host header
 * (transparent plain HTTP) are accepted; https:// absolute URIs are an error
 * (clients use CONNECT). Rejects (PARSE_ERROR): bad request line, header
 * lines without ':', obs-fold, whitespace before ':', conflicting or invalid
 * Content-Length, both Content-Length and Transfer-Encoding, a
 * Transfer-Encoding whose last coding is not chunked, bare CR, NUL bytes,
 * absolute URI and Host naming different hosts is allowed (the URI wins),
 * more than HTTP_MAX_HEADERS headers. PARSE_TOO_LONG when no complete head
 * fits in max_head bytes. */
enum parse_result http_parse_request(const char *buf, size_t len, size_t max_head,
				     struct http_request *req, size_t *consumed);

/* The same for a server's API (dockerapi/: the Docker Engine API): an
 * origin-form target only, which may be longer than target holds (a
 * build's query: then target is "" and raw_target names it); the Host
 * header is not read, and may be empty or absent (docker sends "Host: "
 * for a hijacked request); host stays "". */
enum parse_result http_parse_api_request(const char *buf, size_t len, size_t max_head,
					 struct http_request *req, size_t *consumed);

/* Case-insensitive header lookup; NULL when absent. */
const struct http_header *http_find_header(const struct http_request *req, const char *name);

/* Does some header called name (any of them) list token among its
 * comma-separated elements (case-insensitive, OWS trimmed)? */
bool http_header_has_token(const struct http_request *req, const char *name, const char *token);

/* Is this header hop-by-hop (Connection, Keep-Alive, Proxy-Connection,
 * Proxy-Authorization, TE, Trailer, Transfer-Encoding, Upgrade), or named in
 * the request's Connection header? The proxy drops them upstream, except
 * Transfer-Encoding which it keeps for chunked bodies it relays as is. */
bool http_is_hop_header(const struct http_request *req, const struct http_header *h);

/* Chunked body framing, incrementally: feed bytes, learn how many belong to
 * the body (relay them as they are) and whether the body ended (after the
 * last-chunk and trailers). */
struct http_chunked {
	int state;	    /* internal */
	uint64_t remaining; /* internal */
	size_t line_len;    /* internal */
};
/* Consumes bytes of buf; *used = bytes that belong to the body (always all
 * of them up to the end of the body), returns PARSE_DONE at the end of the
 * body, PARSE_MORE if more is needed, PARSE_ERROR on bad framing,
 * PARSE_TOO_LONG for chunk-size/trailer lines over 4 KiB. */
enum parse_result http_chunked_feed(struct http_chunked *c, const char *buf, size_t len,
				    size_t *used);

/* A whole chunked body (len bytes from its first chunk-size line) decoded:
 * the chunks' data into out (room for len bytes: the data is never
 * longer), *outlen bytes; the trailers dropped. What http_chunked_feed()
 * returns for it in one piece, *used the same. */
enum parse_result http_chunked_decode(const char *buf, size_t len, char *out, size_t *outlen,
				      size_t *used);

/* ---- SOCKS5 (socks5.c) ---- */

enum socks5_reply {
	SOCKS5_SUCCEEDED = 0x00,
	SOCKS5_GENERAL_FAILURE = 0x01,
	SOCKS5_NOT_ALLOWED = 0x02,
	SOCKS5_NET_UNREACHABLE = 0x03,
	SOCKS5_HOST_UNREACHABLE = 0x04,
	SOCKS5_CONN_REFUSED = 0x05,
	SOCKS5_TTL_EXPIRED = 0x06,
	SOCKS5_CMD_NOT_SUPPORTED = 0x07,
	SOCKS5_ATYP_NOT_SUPPORTED = 0x08,
};

/* Greeting: VER=5, NMETHODS, METHODS. *no_auth says whether 0x00 was offered. */
enum parse_result socks5_parse_greeting(const uint8_t *buf, size_t len, bool *no_auth,
					size_t *consumed);

struct socks5_request {
	uint8_t cmd;	  /* 1 CONNECT, 2 BIND, 3 UDP ASSOCIATE */
	uint8_t atyp;	  /* 1 IPv4, 3 domain, 4 IPv6 */
	char host[256];	  /* domain (NUL-terminated, as sent) or the literal in text form */
	uint8_t addr[16]; /* IPv4 (4 bytes) or IPv6 (16) for atyp 1/4 */
	uint16_t port;	  /* host order */
};

/* Request: VER=5 CMD RSV=0 ATYP DST.ADDR DST.PORT. An unknown ATYP is
 * PARSE_ERROR with req->atyp set (the caller replies 0x08); a domain with a
 * NUL byte or zero length is PARSE_ERROR. */
enum parse_result socks5_parse_request(const uint8_t *buf, size_t len, struct socks5_request *req,
				       size_t *consumed);

/* Writes the 10- or 22-byte reply (BND.ADDR = addr/port given, or 0.0.0.0:0
 * when addr is NULL) into out; returns its length. */
size_t socks5_build_reply(enum socks5_reply rep, const uint8_t *addr, int family, uint16_t port,
			  uint8_t out[22]);

/* ---- TLS ClientHello SNI (sni.c) ---- */

/* Largest ClientHello handshake message (header included) tls_parse_sni()
 * reassembles, on its stack; a longer one is PARSE_TOO_LONG whatever
 * max_len says. Real ones are 0.2-2 KiB. */
#define TLS_HELLO_MAX 16384

/* Looks at the first bytes of a stream: PARSE_DONE with the server_name
 * (lower-cased host_name of the SNI extension; "" if the ClientHello has no
 * SNI) when buf holds a complete ClientHello (possibly spanning several TLS
 * records); PARSE_MORE when it is a TLS handshake still incomplete;
 * PARSE_ERROR when the bytes are not a TLS ClientHello, or malformed
 * (lengths that don't add up, a name with bytes outside [A-Za-z0-9.-_], or
 * several host_name entries). PARSE_TOO_LONG beyond max_len bytes. */
enum parse_result tls_parse_sni(const uint8_t *buf, size_t len, size_t max_len, char *name,
				size_t namelen);

/* Cheap first-bytes sniffing for the transparent path: 1 if buf starts like
 * a TLS handshake record (0x16 0x03 0x0[0-4]), 2 if like an HTTP request
 * line (an uppercase token then a space), 0 if neither, -1 if too short to
 * tell. */
int sniff_protocol(const uint8_t *buf, size_t len);

#endif /* PARSE_H */
