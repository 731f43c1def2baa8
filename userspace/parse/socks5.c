// SPDX-License-Identifier: Apache-2.0
/* SOCKS5 wire format (RFC 1928) as the proxy reads it from untrusted
 * clients: the method-selection greeting, the CONNECT/BIND/UDP ASSOCIATE
 * request with its three address types, and the reply we send back. Pure
 * functions over (buffer, length) that return PARSE_MORE until a whole
 * message is there and flag a wrong version, reserved byte or address type
 * as soon as the byte that shows it arrives; the connection state machine
 * that calls them lives with the proxy. Declared in parse.h. */
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "parse/parse.h"

#define SOCKS5_VERSION	 5
#define SOCKS5_NO_AUTH	 0x00
#define SOCKS5_ATYP_IPV4 1
#define SOCKS5_ATYP_NAME 3
#define SOCKS5_ATYP_IPV6 4

enum parse_result
socks5_parse_greeting(const uint8_t *buf, size_t len, bool *no_auth, size_t *consumed)
{
	size_t i, n;

	if (len < 1)
		return PARSE_MORE;
	if (buf[0] != SOCKS5_VERSION)
		return PARSE_ERROR;
	if (len < 2)
		return PARSE_MORE;
	n = buf[1];
	if (!n)
		return PARSE_ERROR; /* NMETHODS is 1 to 255 */
	if (len < 2 + n)
		return PARSE_MORE;
	*no_auth = false;
	for (i = 0; i < n; i++)
		if (buf[2 + i] == SOCKS5_NO_AUTH)
			*no_auth = true;
	*consumed = 2 + n;
	return PARSE_DONE;
}

/* Any CMD byte is returned as sent: only 1 is served, and the caller answers
 * every other value with 0x07 (RFC 1928 §6), as it answers an unknown ATYP
 * with 0x08. A domain is copied as sent (no case folding) but it must be a
 * name: NUL, other control bytes, space and DEL never are, and would only
 * give policy and the resolver a string to disagree about. */
enum parse_result
socks5_parse_request(const uint8_t *buf, size_t len, struct socks5_request *req, size_t *consumed)
{
	size_t alen, off, i;

	req->cmd = req->atyp = 0; /* so an early error never leaves a stale atyp */
	if (len < 1)
		return PARSE_MORE;
	if (buf[0] != SOCKS5_VERSION)
		return PARSE_ERROR;
	if (len < 2)
		return PARSE_MORE;
	req->cmd = buf[1];
	if (len < 3)
		return PARSE_MORE;
	if (buf[2] != 0)
		return PARSE_ERROR;
	if (len < 4)
		return PARSE_MORE;
	req->atyp = buf[3];
	switch (req->atyp) {
	case SOCKS5_ATYP_IPV4:
		alen = 4;
		off = 4;
		break;
	case SOCKS5_ATYP_IPV6:
		alen = 16;
		off = 4;
		break;
	case SOCKS5_ATYP_NAME:
		if (len < 5)
			return PARSE_MORE;
		alen = buf[4];
		if (!alen)
			return PARSE_ERROR;
		off = 5;
		for (i = 0; i < alen && off + i < len; i++)
			if (buf[off + i] <= 0x20 || buf[off + i] == 0x7f)
				return PARSE_ERROR;
		break;
	default:
		return PARSE_ERROR;
	}
	if (len < off + alen + 2)
		return PARSE_MORE;

	memset(req->addr, 0, sizeof(req->addr));
	if (req->atyp == SOCKS5_ATYP_NAME) {
		memcpy(req->host, buf + off, alen); /* alen <= 255 < sizeof(host) */
		req->host[alen] = '\0';
	} else {
		memcpy(req->addr, buf + off, alen);
		if (!inet_ntop(alen == 4 ? AF_INET : AF_INET6, req->addr, req->host,
			       sizeof(req->host)))
			return PARSE_ERROR; /* cannot happen: host holds any literal */
	}
	req->port = (uint16_t)(buf[off + alen] << 8 | buf[off + alen + 1]);
	*consumed = off + alen + 2;
	return PARSE_DONE;
}

/* VER REP RSV ATYP BND.ADDR BND.PORT (RFC 1928 §6). A family other than
 * AF_INET/AF_INET6 is answered like a NULL addr: 0.0.0.0:0. */
size_t
socks5_build_reply(enum socks5_reply rep, const uint8_t *addr, int family, uint16_t port,
		   uint8_t out[22])
{
	size_t alen = 4;

	out[0] = SOCKS5_VERSION;
	out[1] = (uint8_t)rep;
	out[2] = 0;
	out[3] = SOCKS5_ATYP_IPV4;
	if (addr && family == AF_INET6) {
		alen = 16;
		out[3] = SOCKS5_ATYP_IPV6;
	}
	if (addr && (family == AF_INET || family == AF_INET6)) {
		memcpy(out + 4, addr, alen);
	} else {
		memset(out + 4, 0, alen);
		port = 0;
	}
	out[4 + alen] = port >> 8;
	out[5 + alen] = port & 0xff;
	return 6 + alen;
}
