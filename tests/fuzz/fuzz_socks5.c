// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for userspace/parse/socks5.c. The input is a greeting and,
 * after it (or from the start if it did not parse), a request; both on
 * exactly sized buffers. Parsed messages must be consistent with their
 * bytes (consumed, host text against the address, NUL-terminated domain)
 * and be PARSE_MORE one byte short. Reply building gets an input-derived
 * code, family and port and must produce a 10- or 22-byte reply. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "parse/parse.h"

static void
check_request(const uint8_t *b, size_t n)
{
	struct socks5_request req, req2;
	size_t consumed = 0, c2;
	uint8_t a[16];
	enum parse_result r;

	r = socks5_parse_request(b, n, &req, &consumed);
	if (r == PARSE_ERROR && n >= 4 && b[0] == 5 && b[2] == 0 && req.atyp != b[3])
		abort(); /* the caller needs atyp to answer 0x08 */
	if (r != PARSE_DONE)
		return;
	if (consumed > n || consumed < 8 || !memchr(req.host, '\0', sizeof(req.host)))
		abort();
	if (req.cmd != b[1] || req.atyp != b[3] ||
	    req.port != (b[consumed - 2] << 8 | b[consumed - 1]))
		abort();
	switch (req.atyp) {
	case 1:
		if (consumed != 10 || inet_pton(AF_INET, req.host, a) != 1 || memcmp(a, b + 4, 4))
			abort();
		break;
	case 4:
		if (consumed != 22 || inet_pton(AF_INET6, req.host, a) != 1 || memcmp(a, b + 4, 16))
			abort();
		break;
	case 3:
		if (consumed != 7u + b[4] || strlen(req.host) != b[4] ||
		    memcmp(req.host, b + 5, b[4]))
			abort();
		break;
	default:
		abort();
	}
	if (socks5_parse_request(b, consumed - 1, &req2, &c2) != PARSE_MORE)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t consumed = 0, c2, off = 0, n;
	bool no_auth = false, na2;
	uint8_t out[22];
	enum parse_result r;

	r = socks5_parse_greeting(data, size, &no_auth, &consumed);
	if (r == PARSE_DONE) {
		if (consumed != 2u + data[1] || consumed > size)
			abort();
		if (no_auth != (memchr(data + 2, 0, data[1]) != NULL))
			abort();
		if (socks5_parse_greeting(data, consumed - 1, &na2, &c2) != PARSE_MORE)
			abort();
		off = consumed;
	}
	check_request(data + off, size - off);
	if (off)
		check_request(data, size);

	if (size >= 4) {
		static const int fam[] = {AF_INET, AF_INET6, AF_UNSPEC, AF_UNIX};
		const uint8_t *addr = data[0] & 4 ? NULL : data + 4;
		int f = fam[data[0] & 3];

		if (size < 20)
			addr = NULL;
		n = socks5_build_reply(data[1] % 9, addr, f, data[2] << 8 | data[3], out);
		if (n != (addr && f == AF_INET6 ? 22u : 10u) || out[0] != 5 || out[2] != 0)
			abort();
	}
	return 0;
}
