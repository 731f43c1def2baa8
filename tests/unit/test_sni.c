// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/parse/sni.c. The vectors are real: ClientHellos that
 * openssl s_client sent to a socket on 127.0.0.1 (see the comments above
 * them), checked whole, re-split over 2, 3 and one-byte records, cut at
 * every byte (each prefix must be PARSE_MORE) and mutated field by field;
 * hand-built ClientHellos cover what openssl does not send (several names,
 * no extensions, the size limits). Inputs are copied into exact-size heap
 * buffers so that ASan flags any read past len. Then sniff_protocol(). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include "exact.h"
#include "table.h"

#include "parse/parse.h"

#define BIG (1 << 20) /* max_len when the limit is not under test */

/* openssl s_client -connect 127.0.0.1:PORT -servername example.test (OpenSSL 3.0.19), captured on loopback: one record, TLS 1.3 ClientHello */
static const uint8_t hello_sni[] = {
	0x16, 0x03, 0x01, 0x01, 0x39, 0x01, 0x00, 0x01, 0x35, 0x03, 0x03, 0xe9, 0x7a, 0x7a, 0x32,
	0xbe, 0xcf, 0x5e, 0x3a, 0x82, 0xb0, 0x54, 0x11, 0x54, 0xc7, 0x9e, 0x39, 0xf2, 0x68, 0xd2,
	0x9a, 0x7f, 0x41, 0xa9, 0x46, 0x19, 0x59, 0xe8, 0x35, 0xdc, 0xe9, 0x37, 0x4e, 0x20, 0x4e,
	0x03, 0x2b, 0x0d, 0x50, 0xf5, 0x2f, 0xc2, 0x4e, 0xea, 0x66, 0x7c, 0x3a, 0x21, 0x70, 0x47,
	0xf1, 0x7f, 0x0d, 0x1d, 0x7a, 0x68, 0x2c, 0x17, 0x5d, 0xf2, 0xbf, 0x8d, 0x40, 0xa2, 0x3c,
	0xa2, 0x00, 0x3e, 0x13, 0x02, 0x13, 0x03, 0x13, 0x01, 0xc0, 0x2c, 0xc0, 0x30, 0x00, 0x9f,
	0xcc, 0xa9, 0xcc, 0xa8, 0xcc, 0xaa, 0xc0, 0x2b, 0xc0, 0x2f, 0x00, 0x9e, 0xc0, 0x24, 0xc0,
	0x28, 0x00, 0x6b, 0xc0, 0x23, 0xc0, 0x27, 0x00, 0x67, 0xc0, 0x0a, 0xc0, 0x14, 0x00, 0x39,
	0xc0, 0x09, 0xc0, 0x13, 0x00, 0x33, 0x00, 0x9d, 0x00, 0x9c, 0x00, 0x3d, 0x00, 0x3c, 0x00,
	0x35, 0x00, 0x2f, 0x00, 0xff, 0x01, 0x00, 0x00, 0xae, 0x00, 0x00, 0x00, 0x11, 0x00, 0x0f,
	0x00, 0x00, 0x0c, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x74, 0x65, 0x73, 0x74,
	0x00, 0x0b, 0x00, 0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x16, 0x00, 0x14, 0x00,
	0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00, 0x19, 0x00, 0x18, 0x01, 0x00, 0x01, 0x01, 0x01, 0x02,
	0x01, 0x03, 0x01, 0x04, 0x00, 0x23, 0x00, 0x00, 0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00,
	0x00, 0x00, 0x0d, 0x00, 0x2a, 0x00, 0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08, 0x07,
	0x08, 0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06, 0x04,
	0x01, 0x05, 0x01, 0x06, 0x01, 0x03, 0x03, 0x03, 0x01, 0x03, 0x02, 0x04, 0x02, 0x05, 0x02,
	0x06, 0x02, 0x00, 0x2b, 0x00, 0x09, 0x08, 0x03, 0x04, 0x03, 0x03, 0x03, 0x02, 0x03, 0x01,
	0x00, 0x2d, 0x00, 0x02, 0x01, 0x01, 0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00,
	0x20, 0x8b, 0x0c, 0x84, 0xe8, 0xdf, 0x41, 0x74, 0x4e, 0x36, 0x54, 0x43, 0xc1, 0x46, 0xc1,
	0x29, 0xad, 0x9a, 0xbf, 0x88, 0x21, 0xc3, 0xf3, 0xd7, 0xaf, 0xdd, 0x84, 0xae, 0xec, 0x4a,
	0x3f, 0xa5, 0x4a,
};

/* the same with -noservername: no server_name extension */
static const uint8_t hello_nosni[] = {
	0x16, 0x03, 0x01, 0x01, 0x24, 0x01, 0x00, 0x01, 0x20, 0x03, 0x03, 0xd0, 0x94, 0x53, 0x8c,
	0x83, 0x2e, 0x86, 0x35, 0x3d, 0x75, 0xb4, 0xe5, 0x63, 0xbb, 0x72, 0x64, 0x2b, 0xd0, 0x4e,
	0x47, 0x9d, 0x19, 0x17, 0x2e, 0xd7, 0xb1, 0x81, 0x60, 0x1b, 0x37, 0x9f, 0x7d, 0x20, 0x85,
	0x2a, 0x1f, 0x4d, 0x13, 0xb7, 0xaf, 0x53, 0x51, 0x1a, 0xb6, 0xac, 0x0c, 0x87, 0xd1, 0x75,
	0x37, 0xfa, 0x2d, 0x32, 0xc0, 0x0d, 0x7c, 0x23, 0x19, 0x16, 0x20, 0x4d, 0x26, 0x49, 0x80,
	0xb6, 0x00, 0x3e, 0x13, 0x02, 0x13, 0x03, 0x13, 0x01, 0xc0, 0x2c, 0xc0, 0x30, 0x00, 0x9f,
	0xcc, 0xa9, 0xcc, 0xa8, 0xcc, 0xaa, 0xc0, 0x2b, 0xc0, 0x2f, 0x00, 0x9e, 0xc0, 0x24, 0xc0,
	0x28, 0x00, 0x6b, 0xc0, 0x23, 0xc0, 0x27, 0x00, 0x67, 0xc0, 0x0a, 0xc0, 0x14, 0x00, 0x39,
	0xc0, 0x09, 0xc0, 0x13, 0x00, 0x33, 0x00, 0x9d, 0x00, 0x9c, 0x00, 0x3d, 0x00, 0x3c, 0x00,
	0x35, 0x00, 0x2f, 0x00, 0xff, 0x01, 0x00, 0x00, 0x99, 0x00, 0x0b, 0x00, 0x04, 0x03, 0x00,
	0x01, 0x02, 0x00, 0x0a, 0x00, 0x16, 0x00, 0x14, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00,
	0x19, 0x00, 0x18, 0x01, 0x00, 0x01, 0x01, 0x01, 0x02, 0x01, 0x03, 0x01, 0x04, 0x00, 0x23,
	0x00, 0x00, 0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x2a, 0x00,
	0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08, 0x07, 0x08, 0x08, 0x08, 0x09, 0x08, 0x0a,
	0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06, 0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x03,
	0x03, 0x03, 0x01, 0x03, 0x02, 0x04, 0x02, 0x05, 0x02, 0x06, 0x02, 0x00, 0x2b, 0x00, 0x09,
	0x08, 0x03, 0x04, 0x03, 0x03, 0x03, 0x02, 0x03, 0x01, 0x00, 0x2d, 0x00, 0x02, 0x01, 0x01,
	0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20, 0x5b, 0xc5, 0x1c, 0x40, 0x35,
	0x45, 0x79, 0x98, 0x21, 0x68, 0xaf, 0xfc, 0x4a, 0x74, 0xe8, 0xa9, 0x0a, 0x9a, 0x77, 0xae,
	0x65, 0x88, 0x7c, 0x5f, 0x39, 0x69, 0xaf, 0x49, 0xe5, 0xc3, 0xe5, 0x5e,
};

/* Where the fields of hello_sni are (checked by test_vector_layout). */
#define OFF_REC_LEN   3
#define OFF_HS_LEN    6
#define OFF_VERSION   9
#define OFF_SID_LEN   43
#define OFF_CS_LEN    76
#define OFF_COMP_LEN  140
#define OFF_EXTS_LEN  142
#define OFF_SNI_EXT   144 /* type 0, then its length */
#define OFF_SNI_LIST  148
#define OFF_NAME_TYPE 150
#define OFF_NAME_LEN  151
#define OFF_NAME      153
#define OFF_EXT2      165 /* ec_point_formats, after server_name */

static enum parse_result
sni_n(const uint8_t *s, size_t n, size_t max_len, char *name, size_t namelen)
{
	uint8_t *p = dup_exact(s, n);
	enum parse_result r;

	r = tls_parse_sni(p, n, max_len, name, namelen);
	free(p);
	return r;
}

/* Re-wraps the handshake bytes hs[0..n) in records of at most frag bytes
 * (the first one first_frag bytes) with record version ver. */
static size_t
wrap(uint8_t *out, size_t cap, const uint8_t *hs, size_t n, size_t first_frag, size_t frag,
     unsigned ver)
{
	size_t off = 0, len = 0;

	while (off < n) {
		size_t f = off ? frag : first_frag;

		if (f > n - off)
			f = n - off;
		assert_true(len + 5 + f <= cap);
		out[len++] = 0x16;
		out[len++] = ver >> 8;
		out[len++] = ver & 0xff;
		out[len++] = f >> 8;
		out[len++] = f & 0xff;
		memcpy(out + len, hs + off, f);
		len += f;
		off += f;
	}
	return len;
}

static void
test_vector_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(hello_sni), 5 + (hello_sni[3] << 8 | hello_sni[4]));
	assert_int_equal(sizeof(hello_nosni), 5 + (hello_nosni[3] << 8 | hello_nosni[4]));
	assert_int_equal(hello_sni[OFF_SID_LEN], 32);
	assert_int_equal(hello_sni[OFF_CS_LEN + 1], 62);
	assert_int_equal(hello_sni[OFF_COMP_LEN], 1);
	assert_int_equal(hello_sni[OFF_SNI_EXT + 3], 17);
	assert_int_equal(hello_sni[OFF_NAME_LEN + 1], 12);
	assert_memory_equal(hello_sni + OFF_NAME, "example.test", 12);
	assert_int_equal(OFF_NAME + 12, OFF_EXT2);
}

static void
test_real_whole(void **state)
{
	char name[256];

	(void)state;
	memset(name, 'x', sizeof(name));
	assert_int_equal(sni_n(hello_sni, sizeof(hello_sni), BIG, name, sizeof(name)), PARSE_DONE);
	assert_string_equal(name, "example.test");
	memset(name, 'x', sizeof(name));
	assert_int_equal(sni_n(hello_nosni, sizeof(hello_nosni), BIG, name, sizeof(name)),
			 PARSE_DONE);
	assert_string_equal(name, "");
	/* exactly as many bytes as allowed: fine; one fewer allowed: too long */
	assert_int_equal(sni_n(hello_sni, sizeof(hello_sni), sizeof(hello_sni), name, sizeof(name)),
			 PARSE_DONE);
	assert_int_equal(
		sni_n(hello_sni, sizeof(hello_sni), sizeof(hello_sni) - 1, name, sizeof(name)),
		PARSE_TOO_LONG);
	assert_int_equal(sni_n(hello_sni, 100, sizeof(hello_sni) - 1, name, sizeof(name)),
			 PARSE_TOO_LONG); /* the header already says it cannot fit */
	assert_int_equal(sni_n(hello_sni, 100, 120, name, sizeof(name)), PARSE_TOO_LONG);
	assert_int_equal(sni_n(hello_sni, 4, 4, name, sizeof(name)), PARSE_TOO_LONG);
	/* what follows the ClientHello (a second flight, junk) is not looked at */
	{
		uint8_t more[sizeof(hello_sni) + 6];

		memcpy(more, hello_sni, sizeof(hello_sni));
		memcpy(more + sizeof(hello_sni), "\x17\x03\x03\x00\x01\x00", 6);
		assert_int_equal(sni_n(more, sizeof(more), BIG, name, sizeof(name)), PARSE_DONE);
		assert_string_equal(name, "example.test");
	}
}

/* Every proper prefix, of every vector: more, and the name left empty. */
static void
check_prefixes(const uint8_t *v, size_t n)
{
	char name[256];
	size_t i;

	for (i = 0; i < n; i++) {
		enum parse_result r;

		name[0] = 'x';
		r = sni_n(v, i, BIG, name, sizeof(name));
		if (r != PARSE_MORE)
			fail_msg("prefix of %zu/%zu bytes: %d, not PARSE_MORE", i, n, r);
		assert_string_equal(name, "");
	}
}

static void
test_real_prefixes(void **state)
{
	(void)state;
	check_prefixes(hello_sni, sizeof(hello_sni));
	check_prefixes(hello_nosni, sizeof(hello_nosni));
}

/* The same handshake over two records, split at every byte; over three;
 * over one-byte records. */
static void
test_real_split(void **state)
{
	static uint8_t buf[8192];
	const uint8_t *hs = hello_sni + 5;
	size_t hsn = sizeof(hello_sni) - 5, k, n;
	char name[256];

	(void)state;
	for (k = 1; k < hsn; k++) {
		n = wrap(buf, sizeof(buf), hs, hsn, k, hsn, 0x0301);
		assert_int_equal(n, sizeof(hello_sni) + 5);
		name[0] = 'x';
		if (sni_n(buf, n, BIG, name, sizeof(name)) != PARSE_DONE)
			fail_msg("split at %zu: not PARSE_DONE", k);
		assert_string_equal(name, "example.test");
		/* cut just before the second record's last byte */
		assert_int_equal(sni_n(buf, n - 1, BIG, name, sizeof(name)), PARSE_MORE);
		/* the second record must be a handshake record too */
		buf[5 + k] = 0x17;
		assert_int_equal(sni_n(buf, n, BIG, name, sizeof(name)), PARSE_ERROR);
	}
	n = wrap(buf, sizeof(buf), hs, hsn, 110, 110, 0x0303);
	assert_int_equal(n, sizeof(hello_sni) + 10);
	assert_int_equal(sni_n(buf, n, BIG, name, sizeof(name)), PARSE_DONE);
	assert_string_equal(name, "example.test");
	check_prefixes(buf, n);
	n = wrap(buf, sizeof(buf), hs, hsn, 1, 1, 0x0301);
	assert_int_equal(n, hsn * 6);
	assert_int_equal(sni_n(buf, n, BIG, name, sizeof(name)), PARSE_DONE);
	assert_string_equal(name, "example.test");
	check_prefixes(buf, n);
	assert_int_equal(sni_n(buf, n, n - 1, name, sizeof(name)), PARSE_TOO_LONG);
	/* the version of a later record is checked as well */
	n = wrap(buf, sizeof(buf), hs, hsn, 100, 100, 0x0303);
	buf[105 + 2] = 0x00;
	assert_int_equal(sni_n(buf, n, BIG, name, sizeof(name)), PARSE_ERROR);
}

/* ---- mutations of hello_sni -------------------------------------------- */

struct mut_case {
	const char *name;
	size_t off;
	int width; /* 1, 2 or 3 bytes, big-endian */
	uint32_t val;
	enum parse_result want;
	const char *sni; /* on PARSE_DONE */
};

static const struct mut_case mut_cases[] = {
	{"unchanged", 0, 1, 0x16, PARSE_DONE, "example.test"},
	{"record-version-0302", 1, 2, 0x0302, PARSE_DONE, "example.test"},
	{"record-version-0303", 1, 2, 0x0303, PARSE_DONE, "example.test"},
	{"record-version-0304", 1, 2, 0x0304, PARSE_DONE, "example.test"},
	{"record-version-0300", 1, 2, 0x0300, PARSE_ERROR, NULL},
	{"record-version-0305", 1, 2, 0x0305, PARSE_ERROR, NULL},
	{"record-version-0201", 1, 2, 0x0201, PARSE_ERROR, NULL},
	{"record-version-0002", 1, 2, 0x0002, PARSE_ERROR, NULL},
	{"record-type-alert", 0, 1, 0x15, PARSE_ERROR, NULL},
	{"record-type-ccs", 0, 1, 0x14, PARSE_ERROR, NULL},
	{"record-type-appdata", 0, 1, 0x17, PARSE_ERROR, NULL},
	{"record-type-sslv2", 0, 1, 0x80, PARSE_ERROR, NULL},
	{"record-len-0", OFF_REC_LEN, 2, 0, PARSE_ERROR, NULL},
	{"record-len-16385", OFF_REC_LEN, 2, 16385, PARSE_ERROR, NULL},
	{"record-len-short", OFF_REC_LEN, 2, 0x138, PARSE_ERROR, NULL},
	{"record-len-long-hello-complete", OFF_REC_LEN, 2, 0x13a, PARSE_DONE, "example.test"},
	{"handshake-server-hello", 5, 1, 2, PARSE_ERROR, NULL},
	{"handshake-hello-request", 5, 1, 0, PARSE_ERROR, NULL},
	{"handshake-len-long", OFF_HS_LEN, 3, 0x136, PARSE_MORE, NULL},
	{"handshake-len-short", OFF_HS_LEN, 3, 0x134, PARSE_ERROR, NULL},
	{"handshake-len-tiny", OFF_HS_LEN, 3, 10, PARSE_ERROR, NULL},
	{"handshake-len-0", OFF_HS_LEN, 3, 0, PARSE_ERROR, NULL},
	{"handshake-len-16381", OFF_HS_LEN, 3, 16381, PARSE_TOO_LONG, NULL},
	{"handshake-len-huge", OFF_HS_LEN, 3, 0xffffff, PARSE_TOO_LONG, NULL},
	{"legacy-version-2", OFF_VERSION, 1, 2, PARSE_ERROR, NULL},
	{"sid-len-33", OFF_SID_LEN, 1, 33, PARSE_ERROR, NULL},
	{"sid-len-31", OFF_SID_LEN, 1, 31, PARSE_ERROR, NULL},
	{"sid-len-255", OFF_SID_LEN, 1, 255, PARSE_ERROR, NULL},
	{"cipher-suites-odd", OFF_CS_LEN, 2, 61, PARSE_ERROR, NULL},
	{"cipher-suites-0", OFF_CS_LEN, 2, 0, PARSE_ERROR, NULL},
	{"cipher-suites-huge", OFF_CS_LEN, 2, 0xfffe, PARSE_ERROR, NULL},
	{"compression-0", OFF_COMP_LEN, 1, 0, PARSE_ERROR, NULL},
	{"compression-2", OFF_COMP_LEN, 1, 2, PARSE_ERROR, NULL},
	{"extensions-len-plus-1", OFF_EXTS_LEN, 2, 175, PARSE_ERROR, NULL},
	{"extensions-len-minus-1", OFF_EXTS_LEN, 2, 173, PARSE_ERROR, NULL},
	{"extensions-len-0", OFF_EXTS_LEN, 2, 0, PARSE_ERROR, NULL},
	{"sni-ext-len-plus-1", OFF_SNI_EXT + 2, 2, 18, PARSE_ERROR, NULL},
	{"sni-ext-len-minus-1", OFF_SNI_EXT + 2, 2, 16, PARSE_ERROR, NULL},
	{"sni-ext-len-0", OFF_SNI_EXT + 2, 2, 0, PARSE_ERROR, NULL},
	{"sni-ext-len-huge", OFF_SNI_EXT + 2, 2, 0xffff, PARSE_ERROR, NULL},
	{"sni-list-len-plus-1", OFF_SNI_LIST, 2, 16, PARSE_ERROR, NULL},
	{"sni-list-len-minus-1", OFF_SNI_LIST, 2, 14, PARSE_ERROR, NULL},
	{"sni-list-len-0", OFF_SNI_LIST, 2, 0, PARSE_ERROR, NULL},
	{"sni-name-type-1", OFF_NAME_TYPE, 1, 1, PARSE_DONE, ""},
	{"sni-name-len-plus-1", OFF_NAME_LEN, 2, 13, PARSE_ERROR, NULL},
	{"sni-name-len-minus-1", OFF_NAME_LEN, 2, 11, PARSE_ERROR, NULL},
	{"sni-name-len-0", OFF_NAME_LEN, 2, 0, PARSE_ERROR, NULL},
	{"sni-upper-case", OFF_NAME, 2, 'E' << 8 | 'X', PARSE_DONE, "example.test"},
	{"sni-underscore-dash", OFF_NAME + 1, 2, '_' << 8 | '-', PARSE_DONE, "e_-mple.test"},
	{"sni-digits", OFF_NAME, 3, '0' << 16 | '1' << 8 | '9', PARSE_DONE, "019mple.test"},
	{"sni-trailing-dot", OFF_NAME + 11, 1, '.', PARSE_DONE, "example.tes."},
	{"sni-nul", OFF_NAME + 3, 1, 0, PARSE_ERROR, NULL},
	{"sni-slash", OFF_NAME + 3, 1, '/', PARSE_ERROR, NULL},
	{"sni-space", OFF_NAME + 3, 1, ' ', PARSE_ERROR, NULL},
	{"sni-colon", OFF_NAME + 3, 1, ':', PARSE_ERROR, NULL},
	{"sni-star", OFF_NAME, 1, '*', PARSE_ERROR, NULL},
	{"sni-at", OFF_NAME + 3, 1, '@', PARSE_ERROR, NULL},
	{"sni-backslash", OFF_NAME + 3, 1, '\\', PARSE_ERROR, NULL},
	{"sni-percent", OFF_NAME + 3, 1, '%', PARSE_ERROR, NULL},
	{"sni-del", OFF_NAME + 3, 1, 0x7f, PARSE_ERROR, NULL},
	{"sni-utf8", OFF_NAME + 3, 2, 0xc3a9, PARSE_ERROR, NULL},
	{"sni-newline", OFF_NAME + 11, 1, '\n', PARSE_ERROR, NULL},
	{"second-sni-ext", OFF_EXT2, 2, 0, PARSE_ERROR, NULL},
	{"ext-len-overruns", OFF_EXT2 + 2, 2, 0x100, PARSE_ERROR, NULL},
};

static void
run_mut(void **state)
{
	const struct mut_case *c = *state;
	uint8_t v[sizeof(hello_sni)];
	char name[256];
	int i;

	memcpy(v, hello_sni, sizeof(v));
	for (i = 0; i < c->width; i++)
		v[c->off + i] = c->val >> (8 * (c->width - 1 - i));
	memset(name, 'x', sizeof(name));
	assert_int_equal(sni_n(v, sizeof(v), BIG, name, sizeof(name)), c->want);
	if (c->want == PARSE_DONE)
		assert_string_equal(name, c->sni);
	else
		assert_string_equal(name, "");
}

/* ---- hand-built ClientHellos ------------------------------------------- */

/* A minimal TLS 1.2 ClientHello around exts (exts_len < 0: no extensions
 * block at all); the handshake message goes to hs, its length returned. */
static size_t
build_hello(uint8_t *hs, size_t cap, const uint8_t *exts, long exts_len)
{
	size_t n = 0, body;

	assert_true(cap >= 4 + 2 + 32 + 1 + 4 + 2 + 2 + (exts_len > 0 ? (size_t)exts_len : 0));
	hs[n++] = 1;
	n += 3; /* length, below */
	hs[n++] = 3;
	hs[n++] = 3;
	memset(hs + n, 0xab, 32);
	n += 32;
	hs[n++] = 0; /* session id */
	memcpy(hs + n, "\x00\x02\xc0\x2f", 4);
	n += 4;
	memcpy(hs + n, "\x01\x00", 2);
	n += 2;
	if (exts_len >= 0) {
		hs[n++] = exts_len >> 8;
		hs[n++] = exts_len & 0xff;
		if (exts_len)
			memcpy(hs + n, exts, exts_len);
		n += exts_len;
	}
	body = n - 4;
	hs[1] = body >> 16;
	hs[2] = body >> 8;
	hs[3] = body & 0xff;
	return n;
}

/* server_name extension with the given entries (type, name) */
static size_t
sni_ext(uint8_t *out, const char *const *names, const uint8_t *types, size_t count)
{
	size_t n = 6, i;

	for (i = 0; i < count; i++) {
		size_t l = strlen(names[i]);

		out[n++] = types[i];
		out[n++] = l >> 8;
		out[n++] = l & 0xff;
		memcpy(out + n, names[i], l);
		n += l;
	}
	out[0] = out[1] = 0;
	out[2] = (n - 4) >> 8;
	out[3] = (n - 4) & 0xff;
	out[4] = (n - 6) >> 8;
	out[5] = (n - 6) & 0xff;
	return n;
}

static enum parse_result
parse_built(const uint8_t *exts, long exts_len, size_t frag, char *name, size_t namelen)
{
	static uint8_t hs[20000], rec[21000];
	size_t hsn = build_hello(hs, sizeof(hs), exts, exts_len);
	size_t n = wrap(rec, sizeof(rec), hs, hsn, frag, frag, 0x0301);

	return sni_n(rec, n, BIG, name, namelen);
}

static void
test_built(void **state)
{
	static uint8_t ext[20000];
	static const uint8_t t00[] = {0, 0}, t10[] = {1, 0}, t0[] = {0};
	const char *two[] = {"a.example", "b.example"};
	const char *one[] = {"A.Example"};
	char name[256], n255[256], small[8];
	size_t n;

	(void)state;
	/* no extensions block at all (allowed before TLS 1.3) */
	assert_int_equal(parse_built(NULL, -1, 16384, name, sizeof(name)), PARSE_DONE);
	assert_string_equal(name, "");
	/* an empty one */
	assert_int_equal(parse_built(NULL, 0, 16384, name, sizeof(name)), PARSE_DONE);
	assert_string_equal(name, "");
	/* one name */
	n = sni_ext(ext, one, t0, 1);
	assert_int_equal(parse_built(ext, n, 16384, name, sizeof(name)), PARSE_DONE);
	assert_string_equal(name, "a.example");
	/* several host_name entries */
	n = sni_ext(ext, two, t00, 2);
	assert_int_equal(parse_built(ext, n, 16384, name, sizeof(name)), PARSE_ERROR);
	/* another name type first, then host_name: the host_name counts */
	n = sni_ext(ext, two, t10, 2);
	assert_int_equal(parse_built(ext, n, 16384, name, sizeof(name)), PARSE_DONE);
	assert_string_equal(name, "b.example");
	/* two server_name extensions */
	n = sni_ext(ext, one, t0, 1);
	memcpy(ext + n, ext, n);
	assert_int_equal(parse_built(ext, 2 * n, 16384, name, sizeof(name)), PARSE_ERROR);
	/* an extension header cut short */
	n = sni_ext(ext, one, t0, 1);
	memcpy(ext + n, "\x00\x0b\x00", 3);
	assert_int_equal(parse_built(ext, n + 3, 16384, name, sizeof(name)), PARSE_ERROR);

	/* a 255-byte name fits name[256], not name[255]; small buffers */
	memset(n255, 'n', 255);
	n255[255] = '\0';
	one[0] = n255;
	n = sni_ext(ext, one, t0, 1);
	assert_int_equal(parse_built(ext, n, 16384, name, sizeof(name)), PARSE_DONE);
	assert_string_equal(name, n255);
	assert_int_equal(parse_built(ext, n, 16384, name, 255), PARSE_TOO_LONG);
	one[0] = "1234567";
	n = sni_ext(ext, one, t0, 1);
	assert_int_equal(parse_built(ext, n, 16384, small, sizeof(small)), PARSE_DONE);
	assert_string_equal(small, "1234567");
	one[0] = "12345678";
	n = sni_ext(ext, one, t0, 1);
	assert_int_equal(parse_built(ext, n, 16384, small, sizeof(small)), PARSE_TOO_LONG);
	assert_string_equal(small, "");
	/* a name longer than 255 bytes is just as well-formed, if it fits */
	{
		static char n300[301];

		memset(n300, 'm', 300);
		one[0] = n300;
		n = sni_ext(ext, one, t0, 1);
		assert_int_equal(parse_built(ext, n, 16384, name, sizeof(name)), PARSE_TOO_LONG);
	}
}

/* The largest handshake that is reassembled, spanning two full records,
 * and one byte more. */
static void
test_built_size_limit(void **state)
{
	static uint8_t ext[TLS_HELLO_MAX];
	const char *one[] = {"big.example"};
	const uint8_t t0[] = {0};
	size_t n, pad;
	char name[256];

	(void)state;
	n = sni_ext(ext, one, t0, 1);
	/* padding extension (21) filling the handshake to TLS_HELLO_MAX */
	pad = TLS_HELLO_MAX - (4 + 2 + 32 + 1 + 4 + 2 + 2) - n - 4;
	ext[n] = 0;
	ext[n + 1] = 21;
	ext[n + 2] = pad >> 8;
	ext[n + 3] = pad & 0xff;
	memset(ext + n + 4, 0, pad);
	assert_int_equal(parse_built(ext, n + 4 + pad, 16384, name, sizeof(name)), PARSE_DONE);
	assert_string_equal(name, "big.example");
	assert_int_equal(parse_built(ext, n + 4 + pad, 1000, name, sizeof(name)), PARSE_DONE);
	assert_string_equal(name, "big.example");
	pad++;
	ext[n + 2] = pad >> 8;
	ext[n + 3] = pad & 0xff;
	assert_int_equal(parse_built(ext, n + 4 + pad, 16384, name, sizeof(name)), PARSE_TOO_LONG);
}

/* ---- not a ClientHello ------------------------------------------------- */

struct other_case {
	const char *name;
	const char *raw;
	size_t len;
	enum parse_result want;
};

#define RAW(s) s, sizeof(s) - 1

static const struct other_case other_cases[] = {
	{"empty", RAW(""), PARSE_MORE},
	{"http", RAW("GET / HTTP/1.1\r\nHost: example.test\r\n\r\n"), PARSE_ERROR},
	{"connect", RAW("CONNECT example.test:443 HTTP/1.1\r\n\r\n"), PARSE_ERROR},
	{"ssh", RAW("SSH-2.0-OpenSSH_9.6\r\n"), PARSE_ERROR},
	{"socks5", RAW("\x05\x01\x00"), PARSE_ERROR},
	{"sslv2-hello", RAW("\x80\x2e\x01\x00\x02\x00\x15\x00\x00\x00\x10"), PARSE_ERROR},
	{"nul", RAW("\x00"), PARSE_ERROR},
	{"handshake-byte", RAW("\x16"), PARSE_MORE},
	{"handshake-tls", RAW("\x16\x03"), PARSE_MORE},
	{"handshake-ssl3", RAW("\x16\x03\x00"), PARSE_ERROR},
	{"handshake-tls-1.0", RAW("\x16\x03\x01\x00"), PARSE_MORE},
	{"handshake-major-2", RAW("\x16\x02"), PARSE_ERROR},
	{"server-hello", RAW("\x16\x03\x03\x00\x04\x02\x00\x00\x00"), PARSE_ERROR},
	{"empty-record", RAW("\x16\x03\x01\x00\x00\x01\x00\x00\x00"), PARSE_ERROR},
	{"record-over-2-14", RAW("\x16\x03\x01\x40\x01\x01"), PARSE_ERROR},
	{"record-2-14-partial", RAW("\x16\x03\x01\x40\x00\x01\x00"), PARSE_MORE},
	{"hello-header-partial", RAW("\x16\x03\x01\x00\x04\x01\x00"), PARSE_MORE},
	{"tiny-hello", RAW("\x16\x03\x01\x00\x04\x01\x00\x00\x00"), PARSE_ERROR},
	{"hello-too-big", RAW("\x16\x03\x01\x00\x04\x01\x00\x40\x00"), PARSE_TOO_LONG},
};

static void
run_other(void **state)
{
	const struct other_case *c = *state;
	char name[256];

	name[0] = 'x';
	assert_int_equal(sni_n((const uint8_t *)c->raw, c->len, BIG, name, sizeof(name)), c->want);
	assert_string_equal(name, "");
}

/* ---- sniff_protocol ---------------------------------------------------- */

struct sniff_case {
	const char *name;
	const char *raw;
	size_t len;
	int want;
};

static const struct sniff_case sniff_cases[] = {
	{"empty", RAW(""), -1},
	{"tls-1-byte", RAW("\x16"), -1},
	{"tls-2-bytes", RAW("\x16\x03"), -1},
	{"tls-ssl3", RAW("\x16\x03\x00"), 1},
	{"tls-1.0", RAW("\x16\x03\x01"), 1},
	{"tls-1.3", RAW("\x16\x03\x04\x01\x00"), 1},
	{"tls-minor-5", RAW("\x16\x03\x05"), 0},
	{"tls-major-2", RAW("\x16\x02"), 0},
	{"tls-appdata", RAW("\x17\x03\x03"), 0},
	{"http-1-byte", RAW("G"), -1},
	{"http-token", RAW("GET"), -1},
	{"http-get", RAW("GET "), 2},
	{"http-get-line", RAW("GET / HTTP/1.1\r\n"), 2},
	{"http-connect", RAW("CONNECT h:443 HTTP/1.1\r\n"), 2},
	{"http-m-search", RAW("M-SEARCH * HTTP/1.1\r\n"), 2},
	{"http-23", RAW("ABCDEFGHIJKLMNOPQRSTUVW "), 2},
	{"http-23-pending", RAW("ABCDEFGHIJKLMNOPQRSTUVW"), -1},
	{"http-24", RAW("ABCDEFGHIJKLMNOPQRSTUVWX "), 0},
	{"lowercase", RAW("get / HTTP/1.1"), 0},
	{"leading-space", RAW(" GET"), 0},
	{"leading-dash", RAW("-X "), 0},
	{"digit", RAW("G3T "), 0},
	{"tab", RAW("GET\t/"), 0},
	{"crlf", RAW("\r\nGET /"), 0},
	{"ssh", RAW("SSH-2.0-OpenSSH"), 0},
	{"socks5", RAW("\x05\x01\x00"), 0},
	{"nul", RAW("\x00"), 0},
};

static void
run_sniff(void **state)
{
	const struct sniff_case *c = *state;
	uint8_t *p = dup_exact(c->raw, c->len);

	assert_int_equal(sniff_protocol(p, c->len), c->want);
	free(p);
}

static void
test_sniff_real(void **state)
{
	(void)state;
	assert_int_equal(sniff_protocol(hello_sni, sizeof(hello_sni)), 1);
	assert_int_equal(sniff_protocol(hello_nosni, 3), 1);
	assert_int_equal(sniff_protocol(hello_nosni, 2), -1);
}

/* ---- main ---------------------------------------------------------------- */

int
main(void)
{
	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_vector_layout), cmocka_unit_test(test_real_whole),
		cmocka_unit_test(test_real_prefixes), cmocka_unit_test(test_real_split),
		cmocka_unit_test(test_built),	      cmocka_unit_test(test_built_size_limit),
		cmocka_unit_test(test_sniff_real),
	};
	int failed = 0;

	failed += cmocka_run_group_tests_name("sni_real", real, NULL, NULL);
	failed += RUN_TABLE("sni_mutated", mut_cases, run_mut);
	failed += RUN_TABLE("sni_not_hello", other_cases, run_other);
	failed += RUN_TABLE("sniff_protocol", sniff_cases, run_sniff);
	return failed ? 1 : 0;
}
