// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/dns/wire.c. The vectors at the top are real:
 * queries that dig, glibc's and musl's getaddrinfo and Go's resolver sent,
 * and dnsmasq's answers, captured on 127.0.0.1 inside a throw-away network
 * namespace (dnsmasq 2.90 --no-resolv with --address, --host-record,
 * --cname, --mx-host, --srv-host, --txt-record, --ptr-record, --dns-rr and
 * --auth-zone; nothing left the namespace). Each must parse to what the
 * tool asked or dnsmasq said, and every proper prefix of it must fail.
 * dnsmasq compresses owner names only, so the responses with pointers inside
 * rdata (CNAME, MX, SRV, SOA in authority), the pointer abuse (self, cycle,
 * forward, past the end, into the header, too many jumps) and the size
 * limits are built by hand with the small writer below. Then building:
 * header, OPT, the 0x20 question echo, truncation and TC, and every built
 * message parsed back. Inputs are copied into exact-size heap buffers so
 * that ASan flags any read past len. */
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

#include "dns/wire.h"

/* dig 9.18.49 @127.0.0.1 www.addr.x.test A: RD+AD, EDNS 1232 with a COOKIE option */
static const uint8_t q_dig_a[] = {
	0x9a, 0x87, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x77,
	0x77, 0x77, 0x04, 0x61, 0x64, 0x64, 0x72, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74,
	0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x0c, 0x00, 0x0a, 0x00, 0x08, 0x4c, 0xa5, 0xff, 0x1f, 0xf1, 0x70, 0xcd, 0x50,
};

/* dig +noedns www.addr.x.test A */
static const uint8_t q_dig_noedns[] = {
	0x04, 0xf8, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x03, 0x77, 0x77, 0x77, 0x04, 0x61, 0x64, 0x64, 0x72, 0x01,
	0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x01, 0x00, 0x01,
};

/* dig +dnssec +nocookie www.addr.x.test AAAA: EDNS 1232, DO */
static const uint8_t q_dig_do[] = {
	0x26, 0x7e, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x77, 0x77,
	0x77, 0x04, 0x61, 0x64, 0x64, 0x72, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00,
	0x1c, 0x00, 0x01, 0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00,
};

/* dig +noedns WwW.aDDr.X.TeSt A: mixed case, as 0x20 randomisation sends it */
static const uint8_t q_dig_0x20[] = {
	0xb6, 0xa9, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x03, 0x57, 0x77, 0x57, 0x04, 0x61, 0x44, 0x44, 0x72, 0x01,
	0x58, 0x04, 0x54, 0x65, 0x53, 0x74, 0x00, 0x00, 0x01, 0x00, 0x01,
};

/* glibc 2.36 getaddrinfo("host.addr.x.test", AF_INET) */
static const uint8_t q_glibc_a[] = {
	0x7a, 0x6c, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x04, 0x68, 0x6f, 0x73, 0x74, 0x04, 0x61, 0x64, 0x64, 0x72, 0x01, 0x78,
	0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x01, 0x00, 0x01,
};

/* glibc 2.36 getaddrinfo("target.x.test", AF_INET6) */
static const uint8_t q_glibc_aaaa[] = {
	0x22, 0xb0, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x06, 0x74, 0x61, 0x72, 0x67, 0x65, 0x74, 0x01, 0x78, 0x04,
	0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x1c, 0x00, 0x01,
};

/* the same A query with "options edns0" in resolv.conf: EDNS 1200 */
static const uint8_t q_glibc_edns_a[] = {
	0xec, 0x30, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x04, 0x68, 0x6f,
	0x73, 0x74, 0x04, 0x61, 0x64, 0x64, 0x72, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00,
	0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x29, 0x04, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/* the same AAAA query with "options edns0" */
static const uint8_t q_glibc_edns_aaaa[] = {
	0x5a, 0x78, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x06, 0x74,
	0x61, 0x72, 0x67, 0x65, 0x74, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00,
	0x1c, 0x00, 0x01, 0x00, 0x00, 0x29, 0x04, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/* musl 1.2.3 getaddrinfo("target.x.test", AF_UNSPEC): its A query */
static const uint8_t q_musl_a[] = {
	0xa6, 0x14, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x06, 0x74, 0x61, 0x72, 0x67, 0x65, 0x74, 0x01, 0x78, 0x04,
	0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x01, 0x00, 0x01,
};

/* ... and its AAAA query, sent alongside */
static const uint8_t q_musl_aaaa[] = {
	0xa9, 0x0e, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x06, 0x74, 0x61, 0x72, 0x67, 0x65, 0x74, 0x01, 0x78, 0x04,
	0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x1c, 0x00, 0x01,
};

/* Go 1.19 net.Resolver{PreferGo: true}.LookupHost("target.x.test"): A, EDNS 1232 */
static const uint8_t q_go_a[] = {
	0xc1, 0x7d, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x06, 0x74,
	0x61, 0x72, 0x67, 0x65, 0x74, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00,
	0x01, 0x00, 0x01, 0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/* ... and its AAAA query */
static const uint8_t q_go_aaaa[] = {
	0xcc, 0xd1, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x06, 0x74,
	0x61, 0x72, 0x67, 0x65, 0x74, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00,
	0x1c, 0x00, 0x01, 0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/* dnsmasq 2.90 answering q_dig_a: A 192.0.2.1, OPT */
static const uint8_t r_dig_a[] = {
	0x9a, 0x87, 0x85, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x03, 0x77, 0x77,
	0x77, 0x04, 0x61, 0x64, 0x64, 0x72, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00,
	0x01, 0x00, 0x01, 0xc0, 0x0c, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04,
	0xc0, 0x00, 0x02, 0x01, 0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/* dnsmasq answering q_dig_do: REFUSED, OPT with DO and an EDE option (RFC 8914) */
static const uint8_t r_dig_do[] = {
	0x26, 0x7e, 0x81, 0x85, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03,
	0x77, 0x77, 0x77, 0x04, 0x61, 0x64, 0x64, 0x72, 0x01, 0x78, 0x04, 0x74, 0x65,
	0x73, 0x74, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x29, 0x04, 0xd0, 0x00,
	0x00, 0x80, 0x00, 0x00, 0x06, 0x00, 0x0f, 0x00, 0x02, 0x00, 0x0e,
};

/* dnsmasq answering q_dig_0x20: the question echoed in its case */
static const uint8_t r_dig_0x20[] = {
	0xb6, 0xa9, 0x85, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x03,
	0x57, 0x77, 0x57, 0x04, 0x61, 0x44, 0x44, 0x72, 0x01, 0x58, 0x04, 0x54, 0x65,
	0x53, 0x74, 0x00, 0x00, 0x01, 0x00, 0x01, 0xc0, 0x0c, 0x00, 0x01, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xc0, 0x00, 0x02, 0x01,
};

/* dnsmasq answering q_glibc_edns_aaaa: AAAA 2001:db8::2, OPT */
static const uint8_t r_aaaa_edns[] = {
	0x5a, 0x78, 0x85, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x06, 0x74,
	0x61, 0x72, 0x67, 0x65, 0x74, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00,
	0x1c, 0x00, 0x01, 0xc0, 0x0c, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x10, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x02, 0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/* dnsmasq: alias.x.test A -> CNAME mid.x.test -> CNAME target.x.test -> A
 * 192.0.2.2; owners compressed into the rdata before them */
static const uint8_t r_cname_chain[] = {
	0x1e, 0xd7, 0x85, 0x80, 0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x05, 0x61,
	0x6c, 0x69, 0x61, 0x73, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x01,
	0x00, 0x01, 0xc0, 0x0c, 0x00, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c,
	0x03, 0x6d, 0x69, 0x64, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0xc0, 0x2a,
	0x00, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x06, 0x74, 0x61, 0x72,
	0x67, 0x65, 0x74, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0xc0, 0x42, 0x00,
	0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xc0, 0x00, 0x02, 0x02,
};

/* dnsmasq: x.test MX 10 mail.x.test, A of mail.x.test in additional */
static const uint8_t r_mx[] = {
	0x11, 0x68, 0x85, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x78,
	0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x0f, 0x00, 0x01, 0xc0, 0x0c, 0x00, 0x0f,
	0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x00, 0x0a, 0x04, 0x6d, 0x61, 0x69,
	0x6c, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0xc0, 0x26, 0x00, 0x01, 0x00,
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xc0, 0x00, 0x02, 0x19,
};

/* dnsmasq: _http._tcp.x.test SRV 1 5 8080 target.x.test, A and AAAA in additional */
static const uint8_t r_srv[] = {
	0x88, 0xeb, 0x85, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x05, 0x5f,
	0x68, 0x74, 0x74, 0x70, 0x04, 0x5f, 0x74, 0x63, 0x70, 0x01, 0x78, 0x04, 0x74, 0x65,
	0x73, 0x74, 0x00, 0x00, 0x21, 0x00, 0x01, 0xc0, 0x0c, 0x00, 0x21, 0x00, 0x01, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x15, 0x00, 0x01, 0x00, 0x05, 0x1f, 0x90, 0x06, 0x74, 0x61,
	0x72, 0x67, 0x65, 0x74, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0xc0, 0x35,
	0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xc0, 0x00, 0x02, 0x02,
	0xc0, 0x35, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x20, 0x01,
	0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
};

/* dnsmasq: txt.x.test TXT "v=spf1 -all" "second string" */
static const uint8_t r_txt[] = {
	0xf5, 0x2b, 0x85, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x03, 0x74,
	0x78, 0x74, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x10, 0x00, 0x01,
	0xc0, 0x0c, 0x00, 0x10, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1a, 0x0b, 0x76,
	0x3d, 0x73, 0x70, 0x66, 0x31, 0x20, 0x2d, 0x61, 0x6c, 0x6c, 0x0d, 0x73, 0x65, 0x63,
	0x6f, 0x6e, 0x64, 0x20, 0x73, 0x74, 0x72, 0x69, 0x6e, 0x67,
};

/* dnsmasq: 2.2.0.192.in-addr.arpa PTR target.x.test */
static const uint8_t r_ptr[] = {
	0xd8, 0xfd, 0x85, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x32,
	0x01, 0x32, 0x01, 0x30, 0x03, 0x31, 0x39, 0x32, 0x07, 0x69, 0x6e, 0x2d, 0x61, 0x64,
	0x64, 0x72, 0x04, 0x61, 0x72, 0x70, 0x61, 0x00, 0x00, 0x0c, 0x00, 0x01, 0xc0, 0x0c,
	0x00, 0x0c, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x06, 0x74, 0x61, 0x72,
	0x67, 0x65, 0x74, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00,
};

/* dnsmasq --dns-rr: https.x.test HTTPS 1 . alpn=h2 */
static const uint8_t r_https[] = {
	0x25, 0x83, 0x85, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x05,
	0x68, 0x74, 0x74, 0x70, 0x73, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00,
	0x00, 0x41, 0x00, 0x01, 0xc0, 0x0c, 0x00, 0x41, 0x00, 0x01, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x0a, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x03, 0x02, 0x68, 0x32,
};

/* dnsmasq --dns-rr: unk.x.test TYPE65280 \# 4 deadbeef */
static const uint8_t r_unknown[] = {
	0xf3, 0xd3, 0x85, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x03, 0x75, 0x6e,
	0x6b, 0x01, 0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0xff, 0x00, 0x00, 0x01, 0xc0, 0x0c,
	0xff, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xde, 0xad, 0xbe, 0xef,
};

/* dnsmasq --auth-zone: auth.test SOA, NS in authority */
static const uint8_t r_soa[] = {
	0xb0, 0xb0, 0x85, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x04, 0x61, 0x75,
	0x74, 0x68, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x06, 0x00, 0x01, 0x04, 0x61, 0x75,
	0x74, 0x68, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x06, 0x00, 0x01, 0x00, 0x00, 0x02,
	0x58, 0x00, 0x38, 0x02, 0x6e, 0x73, 0x04, 0x61, 0x75, 0x74, 0x68, 0x04, 0x74, 0x65, 0x73,
	0x74, 0x00, 0x0a, 0x68, 0x6f, 0x73, 0x74, 0x6d, 0x61, 0x73, 0x74, 0x65, 0x72, 0x04, 0x61,
	0x75, 0x74, 0x68, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x78, 0xa3, 0xf1, 0x75, 0x00, 0x00,
	0x04, 0xb0, 0x00, 0x00, 0x00, 0xb4, 0x00, 0x12, 0x75, 0x00, 0x00, 0x00, 0x02, 0x58, 0xc0,
	0x1b, 0x00, 0x02, 0x00, 0x01, 0x00, 0x00, 0x02, 0x58, 0x00, 0x0e, 0x02, 0x6e, 0x73, 0x04,
	0x61, 0x75, 0x74, 0x68, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00,
};

/* dnsmasq --auth-zone: nope.auth.test A, NXDOMAIN, no records */
static const uint8_t r_nxdomain[] = {
	0xd9, 0xd8, 0x81, 0x83, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x04, 0x6e, 0x6f, 0x70, 0x65, 0x04, 0x61, 0x75, 0x74, 0x68,
	0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x01, 0x00, 0x01,
};

#define RAW(a) a, sizeof(a)

static struct dns_msg msg, msg2; /* 80 KiB each: not on the stack */

static int
parse_query(const uint8_t *raw, size_t n, struct dns_query *q, bool *id_ok)
{
	uint8_t *p = dup_exact(raw, n);
	int r = dns_parse_query(p, n, q, id_ok);

	free(p);
	return r;
}

static int
parse_response(const uint8_t *raw, size_t n, struct dns_msg *m)
{
	uint8_t *p = dup_exact(raw, n);
	int r = dns_parse_response(p, n, m);

	free(p);
	return r;
}

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
hex(const uint8_t *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = '\0';
}

/* ---- a small message writer for the hand-built cases ---- */

struct mb {
	uint8_t b[8192];
	size_t n;
};

static void
mb_u8(struct mb *m, unsigned int v)
{
	assert_true(m->n < sizeof(m->b));
	m->b[m->n++] = (uint8_t)v;
}

static void
mb_u16(struct mb *m, unsigned int v)
{
	mb_u8(m, v >> 8 & 0xff);
	mb_u8(m, v & 0xff);
}

static void
mb_u32(struct mb *m, uint32_t v)
{
	mb_u16(m, v >> 16);
	mb_u16(m, v & 0xffff);
}

static void
mb_raw(struct mb *m, const void *p, size_t n)
{
	assert_true(n <= sizeof(m->b) - m->n);
	if (n)
		memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void
mb_hdr(struct mb *m, uint16_t flags, int qd, int an, int ns, int ar)
{
	m->n = 0;
	mb_u16(m, 0x4242);
	mb_u16(m, flags);
	mb_u16(m, qd);
	mb_u16(m, an);
	mb_u16(m, ns);
	mb_u16(m, ar);
}

/* The labels of dotted ("" for none; no escapes), then a pointer to ptr,
 * or the root label when ptr < 0. Returns where the name starts. */
static size_t
mb_name(struct mb *m, const char *dotted, int ptr)
{
	size_t at = m->n;
	const char *s = dotted, *dot;
	size_t l;

	while (*s) {
		dot = strchr(s, '.');
		l = dot ? (size_t)(dot - s) : strlen(s);
		mb_u8(m, l);
		mb_raw(m, s, l);
		s += l + (dot ? 1 : 0);
	}
	if (ptr >= 0)
		mb_u16(m, 0xc000 | ptr);
	else
		mb_u8(m, 0);
	return at;
}

/* A label of n bytes of c. */
static void
mb_label(struct mb *m, size_t n, uint8_t c)
{
	mb_u8(m, n);
	while (n--)
		mb_u8(m, c);
}

/* The fixed part of a class IN record with rdlength 0; returns where its
 * rdata starts, for mb_rr_end() to patch rdlength. */
static size_t
mb_rr(struct mb *m, uint16_t type, uint32_t ttl)
{
	mb_u16(m, type);
	mb_u16(m, DNS_C_IN);
	mb_u32(m, ttl);
	mb_u16(m, 0);
	return m->n;
}

static void
mb_rr_end(struct mb *m, size_t rd)
{
	m->b[rd - 2] = (uint8_t)((m->n - rd) >> 8);
	m->b[rd - 1] = (uint8_t)(m->n - rd);
}

static void
mb_question(struct mb *m, const char *name, uint16_t qtype)
{
	mb_name(m, name, -1);
	mb_u16(m, qtype);
	mb_u16(m, DNS_C_IN);
}

/* A response header and question; the question name starts at 12. */
static void
mb_resp(struct mb *m, uint16_t flags, const char *qname, uint16_t qtype, int an, int ns, int ar)
{
	mb_hdr(m, flags, 1, an, ns, ar);
	mb_question(m, qname, qtype);
}

static void
mb_a(struct mb *m, uint8_t last)
{
	size_t rd = mb_rr(m, DNS_T_A, 300);

	mb_raw(m, (const uint8_t[]){192, 0, 2, last}, 4);
	mb_rr_end(m, rd);
}

static void
mb_opt(struct mb *m, uint16_t size, uint32_t ttl)
{
	mb_u8(m, 0);
	mb_u16(m, DNS_T_OPT);
	mb_u16(m, size);
	mb_u32(m, ttl);
	mb_u16(m, 0);
}

/* ---- queries from real tools ---- */

struct real_query_case {
	const char *name;
	const uint8_t *raw;
	size_t len;
	const char *qname;
	uint16_t qtype;
	uint16_t flags;
	bool edns;
	uint16_t edns_size;
	bool edns_do;
};

static const struct real_query_case real_queries[] = {
	{"dig", RAW(q_dig_a), "www.addr.x.test", DNS_T_A, 0x0120, true, 1232, false},
	{"dig-noedns", RAW(q_dig_noedns), "www.addr.x.test", DNS_T_A, 0x0120, false, 512, false},
	{"dig-dnssec", RAW(q_dig_do), "www.addr.x.test", DNS_T_AAAA, 0x0120, true, 1232, true},
	{"dig-0x20", RAW(q_dig_0x20), "www.addr.x.test", DNS_T_A, 0x0120, false, 512, false},
	{"glibc-a", RAW(q_glibc_a), "host.addr.x.test", DNS_T_A, 0x0100, false, 512, false},
	{"glibc-aaaa", RAW(q_glibc_aaaa), "target.x.test", DNS_T_AAAA, 0x0100, false, 512, false},
	{"glibc-edns0-a", RAW(q_glibc_edns_a), "host.addr.x.test", DNS_T_A, 0x0100, true, 1200,
	 false},
	{"glibc-edns0-aaaa", RAW(q_glibc_edns_aaaa), "target.x.test", DNS_T_AAAA, 0x0100, true,
	 1200, false},
	{"musl-a", RAW(q_musl_a), "target.x.test", DNS_T_A, 0x0100, false, 512, false},
	{"musl-aaaa", RAW(q_musl_aaaa), "target.x.test", DNS_T_AAAA, 0x0100, false, 512, false},
	{"go-a", RAW(q_go_a), "target.x.test", DNS_T_A, 0x0100, true, 1232, false},
	{"go-aaaa", RAW(q_go_aaaa), "target.x.test", DNS_T_AAAA, 0x0100, true, 1232, false},
};

static void
run_real_query(void **state)
{
	const struct real_query_case *c = *state;
	struct dns_query q;
	bool id_ok;
	size_t i;

	assert_int_equal(parse_query(c->raw, c->len, &q, &id_ok), 0);
	assert_true(id_ok);
	assert_int_equal(q.id, rd16(c->raw));
	assert_int_equal(q.flags, c->flags);
	assert_string_equal(q.name, c->qname);
	assert_int_equal(q.qtype, c->qtype);
	assert_int_equal(q.qclass, DNS_C_IN);
	assert_int_equal(q.edns, c->edns);
	assert_int_equal(q.edns_size, c->edns_size);
	assert_int_equal(q.edns_do, c->edns_do);
	assert_false(q.no_question);
	/* the name as sent, case and all */
	assert_int_equal(q.name_wire_len, strlen(c->qname) + 2);
	assert_memory_equal(q.name_wire, c->raw + 12, q.name_wire_len);
	for (i = 0; i < c->len; i++) {
		assert_int_equal(parse_query(c->raw, i, &q, &id_ok), DNS_R_FORMERR);
		assert_int_equal(id_ok, i >= 12);
	}
}

/* ---- queries built by hand ---- */

#define QHDR(qd, an, ns, ar) 0x12, 0x34, 0x01, 0x00, 0, qd, 0, an, 0, ns, 0, ar
#define X_TEST		     0x01, 'x', 0x04, 't', 'e', 's', 't', 0x00 /* x.test */
#define IN_A		     0x00, 0x01, 0x00, 0x01
#define OPT_RR(sz, v, flags) 0x00, 0x00, 0x29, (sz) >> 8, (sz)&0xff, 0x00, v, (flags) >> 8, 0x00

struct query_case {
	const char *name;
	const uint8_t *raw;
	size_t len;
	void (*build)(struct mb *m); /* instead of raw */
	int want;
	bool id_ok;
	const char *qname; /* NULL: no question read */
	bool edns;
	uint16_t edns_size;
};

static void
qb_label63(struct mb *m)
{
	mb_hdr(m, 0x0100, 1, 0, 0, 0);
	mb_label(m, 63, 'a');
	mb_name(m, "test", -1);
	mb_u32(m, 0x00010001);
}

static void
qb_label64(struct mb *m)
{
	mb_hdr(m, 0x0100, 1, 0, 0, 0);
	mb_label(m, 64, 'a');
	mb_name(m, "test", -1);
	mb_u32(m, 0x00010001);
}

/* 63 + 63 + 63 + extra bytes of labels, then the root */
static void
qb_long(struct mb *m, size_t last, uint8_t c)
{
	mb_hdr(m, 0x0100, 1, 0, 0, 0);
	mb_label(m, 63, c == 'b' ? 'a' : c);
	mb_label(m, 63, c == 'b' ? 'a' : c);
	mb_label(m, 63, c == 'b' ? 'a' : c);
	mb_label(m, last, c);
	mb_u8(m, 0);
	mb_u32(m, 0x00010001);
}

static void
qb_name255(struct mb *m)
{
	qb_long(m, 61, 'b'); /* 3 * 64 + 62 + 1 = 255 wire bytes */
}

static void
qb_name256(struct mb *m)
{
	qb_long(m, 62, 'b');
}

static void
qb_name255_escaped(struct mb *m)
{
	qb_long(m, 61, 0x01); /* 255 wire bytes, but over 900 in \DDD form */
}

#define NAME63	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define NAME255 /* what qb_name255 reads as */                                                     \
	NAME63 "." NAME63 "." NAME63                                                               \
	       ".bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static const struct query_case queries[] = {
	{"minimal", MSG(QHDR(1, 0, 0, 0), X_TEST, IN_A), NULL, 0, true, "x.test", false, 512},
	{"root-ns", MSG(QHDR(1, 0, 0, 0), 0x00, 0x00, 0x02, 0x00, 0x01), NULL, 0, true, "", false,
	 512},
	{"empty", (const uint8_t *)"", 0, NULL, DNS_R_FORMERR, false, NULL},
	{"header-11", MSG(0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0), NULL, DNS_R_FORMERR, false,
	 NULL},
	{"qr-set", MSG(0x12, 0x34, 0x81, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, X_TEST, IN_A), NULL,
	 DNS_R_FORMERR, true, NULL},
	{"opcode-status", MSG(0x12, 0x34, 0x10, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, X_TEST, IN_A), NULL,
	 DNS_R_NOTIMP, true, NULL},
	{"opcode-notify", MSG(0x12, 0x34, 0x20, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, X_TEST, IN_A), NULL,
	 DNS_R_NOTIMP, true, NULL},
	{"opcode-update", MSG(0x12, 0x34, 0x28, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, X_TEST, IN_A), NULL,
	 DNS_R_NOTIMP, true, NULL},
	{"qdcount-0", MSG(QHDR(0, 0, 0, 0)), NULL, DNS_R_FORMERR, true, NULL},
	{"qdcount-2", MSG(QHDR(2, 0, 0, 0), X_TEST, IN_A, X_TEST, IN_A), NULL, DNS_R_FORMERR, true,
	 NULL},
	{"ancount-1",
	 MSG(QHDR(1, 1, 0, 0), X_TEST, IN_A, 0xc0, 0x0c, IN_A, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4), NULL,
	 DNS_R_FORMERR, true, NULL},
	{"nscount-1",
	 MSG(QHDR(1, 0, 1, 0), X_TEST, IN_A, 0xc0, 0x0c, IN_A, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4), NULL,
	 DNS_R_FORMERR, true, NULL},
	{"name-cut", MSG(QHDR(1, 0, 0, 0), 0x01, 'x', 0x04, 't', 'e'), NULL, DNS_R_FORMERR, true,
	 NULL},
	{"no-root-label", MSG(QHDR(1, 0, 0, 0), 0x01, 'x'), NULL, DNS_R_FORMERR, true, NULL},
	{"qclass-cut", MSG(QHDR(1, 0, 0, 0), X_TEST, 0x00, 0x01, 0x00), NULL, DNS_R_FORMERR, true,
	 NULL},
	{"trailing-byte", MSG(QHDR(1, 0, 0, 0), X_TEST, IN_A, 0x00), NULL, DNS_R_FORMERR, true,
	 "x.test"},
	{"label-type-01", MSG(QHDR(1, 0, 0, 0), 0x41, 'x', 0x00, IN_A), NULL, DNS_R_FORMERR, true,
	 NULL},
	{"label-type-10", MSG(QHDR(1, 0, 0, 0), 0x81, 'x', 0x00, IN_A), NULL, DNS_R_FORMERR, true,
	 NULL},
	{"self-pointer", MSG(QHDR(1, 0, 0, 0), 0xc0, 0x0c, IN_A), NULL, DNS_R_FORMERR, true, NULL},
	{"pointer-into-header", MSG(QHDR(1, 0, 0, 0), 0xc0, 0x04, IN_A), NULL, DNS_R_FORMERR, true,
	 NULL},
	{"pointer-forward", MSG(QHDR(1, 0, 0, 0), 0xc0, 0x12, IN_A, X_TEST), NULL, DNS_R_FORMERR,
	 true, NULL},
	{"pointer-cut", MSG(QHDR(1, 0, 0, 0), 0x01, 'x', 0xc0), NULL, DNS_R_FORMERR, true, NULL},
	{"label63", NULL, 0, qb_label63, 0, true, NAME63 ".test", false, 512},
	{"label64", NULL, 0, qb_label64, DNS_R_FORMERR, true, NULL},
	{"name-255-bytes", NULL, 0, qb_name255, 0, true, NAME255, false, 512},
	{"name-256-bytes", NULL, 0, qb_name256, DNS_R_FORMERR, true, NULL},
	{"name-escapes-too-long", NULL, 0, qb_name255_escaped, DNS_R_FORMERR, true, NULL},
	/* presentation form: a dot or an odd byte inside a label is \DDD */
	{"label-with-dot",
	 MSG(QHDR(1, 0, 0, 0), 0x03, 'a', '.', 'b', 0x04, 't', 'e', 's', 't', 0, IN_A), NULL, 0,
	 true, "a\\046b.test", false, 512},
	{"upper-nul-high", MSG(QHDR(1, 0, 0, 0), 0x03, 'A', 0x00, 0xff, X_TEST, IN_A), NULL, 0,
	 true, "a\\000\\255.x.test", false, 512},
	{"backslash-star-space",
	 MSG(QHDR(1, 0, 0, 0), 0x01, '*', 0x03, 'a', '\\', ' ', X_TEST, IN_A), NULL, 0, true,
	 "\\042.a\\092\\032.x.test", false, 512},
	{"underscore-hyphen", MSG(QHDR(1, 0, 0, 0), 0x04, '_', 'S', '-', '9', X_TEST, IN_A), NULL,
	 0, true, "_s-9.x.test", false, 512},
	/* EDNS (RFC 6891) */
	{"opt", MSG(QHDR(1, 0, 0, 1), X_TEST, IN_A, OPT_RR(4096, 0, 0), 0, 0), NULL, 0, true,
	 "x.test", true, 4096},
	{"opt-size-below-512", MSG(QHDR(1, 0, 0, 1), X_TEST, IN_A, OPT_RR(100, 0, 0), 0, 0), NULL,
	 0, true, "x.test", true, 512},
	{"opt-duplicated",
	 MSG(QHDR(1, 0, 0, 2), X_TEST, IN_A, OPT_RR(1232, 0, 0), 0, 0, OPT_RR(1232, 0, 0), 0, 0),
	 NULL, DNS_R_FORMERR, true, "x.test", true, 1232},
	{"opt-owner-not-root",
	 MSG(QHDR(1, 0, 0, 1), X_TEST, IN_A, 0xc0, 0x0c, 0x00, 0x29, 0x04, 0xd0, 0, 0, 0, 0, 0, 0),
	 NULL, DNS_R_FORMERR, true, "x.test", false, 512},
	{"opt-option-overruns",
	 MSG(QHDR(1, 0, 0, 1), X_TEST, IN_A, OPT_RR(1232, 0, 0), 0, 6, 0, 10, 0, 5, 1, 2), NULL,
	 DNS_R_FORMERR, true, "x.test", false, 512},
	{"opt-options-ok",
	 MSG(QHDR(1, 0, 0, 1), X_TEST, IN_A, OPT_RR(1232, 0, 0), 0, 10, 0, 10, 0, 2, 1, 2, 0, 12, 0,
	     0),
	 NULL, 0, true, "x.test", true, 1232},
	{"opt-rdata-past-end", MSG(QHDR(1, 0, 0, 1), X_TEST, IN_A, OPT_RR(1232, 0, 0), 0, 6, 0, 10),
	 NULL, DNS_R_FORMERR, true, "x.test", false, 512},
	{"opt-version-1", MSG(QHDR(1, 0, 0, 1), X_TEST, IN_A, OPT_RR(1232, 1, 0), 0, 0), NULL,
	 DNS_R_BADVERS, true, "x.test", true, 1232},
	{"opt-cut", MSG(QHDR(1, 0, 0, 1), X_TEST, IN_A, OPT_RR(1232, 0, 0)), NULL, DNS_R_FORMERR,
	 true, "x.test", false, 512},
	{"additional-a-ignored",
	 MSG(QHDR(1, 0, 0, 2), X_TEST, IN_A, 0xc0, 0x0c, IN_A, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4,
	     OPT_RR(1232, 0, 0x80), 0, 0),
	 NULL, 0, true, "x.test", true, 1232},
	{"additional-missing", MSG(QHDR(1, 0, 0, 1), X_TEST, IN_A), NULL, DNS_R_FORMERR, true,
	 "x.test", false, 512},
};

static void
run_query(void **state)
{
	const struct query_case *c = *state;
	const uint8_t *raw = c->raw;
	size_t len = c->len;
	struct dns_query q;
	struct mb m;
	bool id_ok;

	if (c->build) {
		c->build(&m);
		raw = m.b;
		len = m.n;
	}
	assert_int_equal(parse_query(raw, len, &q, &id_ok), c->want);
	assert_int_equal(id_ok, c->id_ok);
	if (id_ok)
		assert_int_equal(q.id, rd16(raw));
	assert_int_equal(q.no_question, c->qname == NULL);
	if (c->qname) {
		assert_string_equal(q.name, c->qname);
		assert_int_equal(q.edns, c->edns);
		assert_int_equal(q.edns_size, c->edns_size ? c->edns_size : 512);
	}
}

/* ---- responses ---- */

struct rr_want {
	enum dns_section section;
	const char *owner;
	uint16_t type;
	uint32_t ttl;
	const char *rdata;  /* expanded rdata in hex */
	const char *target; /* dns_rdata_name(), or NULL when it must fail */
};

struct resp_case {
	const char *name;
	const uint8_t *raw;
	size_t len;
	void (*build)(struct mb *m); /* instead of raw */
	int want;		     /* 0 or -1 */
	const char *qname;
	uint16_t qtype;
	int rcode;
	bool edns;
	bool edns_do;
	int nrr;
	struct rr_want rr[4];
};

#define ANS	     DNS_S_ANSWER
#define AUT	     DNS_S_AUTHORITY
#define ADD	     DNS_S_ADDITIONAL
#define X_TEST_HEX   "0178047465737400"
#define TARGET_HEX   "06746172676574" X_TEST_HEX
#define AAAA_HEX     "20010db8000000000000000000000002"
#define EXAMPLE_HEX  "076578616d706c65047465737400"
#define SOA_NUMS_HEX "78a3f17500001c2000000e10001275000000012c"

/* www.example.test CNAME cdn (+ptr into the question) CNAME edge (+ptr to
 * the previous rdata), owners pointing into rdata: how BIND compresses */
static void
rb_cname_ptrs(struct mb *m)
{
	size_t cdn, edge, rd;

	mb_resp(m, 0x8180, "www.example.test", DNS_T_A, 3, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, DNS_T_CNAME, 300);
	cdn = mb_name(m, "cdn", 16);
	mb_rr_end(m, rd);
	mb_name(m, "", (int)cdn);
	rd = mb_rr(m, DNS_T_CNAME, 300);
	edge = mb_name(m, "edge", (int)cdn);
	mb_rr_end(m, rd);
	mb_name(m, "", (int)edge);
	mb_a(m, 7);
}

static void
rb_mx_ptrs(struct mb *m)
{
	size_t rd;

	mb_resp(m, 0x8180, "example.test", DNS_T_MX, 1, 0, 1);
	mb_name(m, "", 12);
	rd = mb_rr(m, DNS_T_MX, 300);
	mb_u16(m, 10);
	mb_name(m, "mail", 12);
	mb_rr_end(m, rd);
	mb_name(m, "", (int)rd + 2);
	mb_a(m, 25);
}

/* RFC 2782 forbids compressing the SRV target; servers do it anyway */
static void
rb_srv_ptrs(struct mb *m)
{
	size_t rd;

	mb_resp(m, 0x8180, "_sip._udp.example.test", DNS_T_SRV, 1, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, DNS_T_SRV, 300);
	mb_u16(m, 0);
	mb_u16(m, 10);
	mb_u16(m, 5060);
	mb_name(m, "sip", 22);
	mb_rr_end(m, rd);
}

static void
mb_soa_nums(struct mb *m)
{
	mb_u32(m, 2024010101);
	mb_u32(m, 7200);
	mb_u32(m, 3600);
	mb_u32(m, 1209600);
	mb_u32(m, 300);
}

/* NXDOMAIN with the zone's SOA in authority, every name compressed */
static void
rb_soa_authority(struct mb *m)
{
	size_t rd;

	mb_resp(m, 0x8183, "nope.example.test", DNS_T_A, 0, 1, 0);
	mb_name(m, "", 17);
	rd = mb_rr(m, DNS_T_SOA, 300);
	mb_name(m, "ns1", 17);
	mb_name(m, "hostmaster", 17);
	mb_soa_nums(m);
	mb_rr_end(m, rd);
}

/* the SOA rname points into the mname of the same rdata */
static void
rb_soa_inner_ptr(struct mb *m)
{
	size_t rd;

	mb_resp(m, 0x8180, "example.test", DNS_T_SOA, 1, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, DNS_T_SOA, 300);
	mb_name(m, "ns1.example.test", -1);
	mb_name(m, "hostmaster", (int)rd + 4);
	mb_soa_nums(m);
	mb_rr_end(m, rd);
}

/* A TYPE65280 record whose rdata is n pointers, each to the one before
 * (the first to the question), then an A record whose owner points to the
 * last: n + 1 jumps to read that owner. */
static void
rb_chain(struct mb *m, int n)
{
	size_t rd, prev = 12;
	int i;

	mb_resp(m, 0x8180, "x.test", DNS_T_A, 2, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, 65280, 300);
	for (i = 0; i < n; i++) {
		size_t at = m->n;

		mb_u16(m, 0xc000 | prev);
		prev = at;
	}
	mb_rr_end(m, rd);
	mb_name(m, "", (int)prev);
	mb_a(m, 1);
}

static void
rb_jumps64(struct mb *m)
{
	rb_chain(m, 63);
}

static void
rb_jumps65(struct mb *m)
{
	rb_chain(m, 64);
}

/* a CNAME target of 3 labels of 63, one of last, then a pointer to x.test */
static void
rb_long_target(struct mb *m, size_t last)
{
	size_t rd;

	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, DNS_T_CNAME, 300);
	mb_label(m, 63, 'a');
	mb_label(m, 63, 'a');
	mb_label(m, 63, 'a');
	mb_label(m, last, 'a');
	mb_u16(m, 0xc00c);
	mb_rr_end(m, rd);
}

static void
rb_target255(struct mb *m)
{
	rb_long_target(m, 54); /* 3 * 64 + 55 + 8 = 255 */
}

static void
rb_target256(struct mb *m)
{
	rb_long_target(m, 55);
}

/* 255 wire bytes again, the last label in bytes that \DDD quadruples */
static void
rb_target_escapes(struct mb *m)
{
	size_t rd;

	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, DNS_T_SOA, 300);
	mb_label(m, 63, 'a');
	mb_label(m, 63, 'a');
	mb_label(m, 63, 'a');
	mb_label(m, 54, '&');
	mb_u16(m, 0xc00c);
	mb_u16(m, 0xc00c);
	mb_soa_nums(m);
	mb_rr_end(m, rd);
}

static void
rb_dot_in_owner(struct mb *m)
{
	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_raw(m, MSG(3, 'a', '.', 'b'));
	mb_u16(m, 0xc00c);
	mb_a(m, 1);
}

static void
rb_ttl_high(struct mb *m)
{
	size_t rd;

	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, DNS_T_A, 0x80000000);
	mb_u32(m, 0xc0000201);
	mb_rr_end(m, rd);
}

static void
rb_records(struct mb *m, int n)
{
	int i;

	mb_resp(m, 0x8180, "x.test", DNS_T_A, n, 0, 0);
	for (i = 0; i < n; i++) {
		mb_name(m, "", 12);
		mb_a(m, (uint8_t)i);
	}
}

static void
rb_records64(struct mb *m)
{
	rb_records(m, DNS_MAX_RRS);
}

static void
rb_records65(struct mb *m)
{
	rb_records(m, DNS_MAX_RRS + 1);
}

static void
rb_unknown_len(struct mb *m, size_t n)
{
	size_t rd;

	mb_resp(m, 0x8180, "x.test", 65280, 1, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, 65280, 300);
	while (n--)
		mb_u8(m, 0xee);
	mb_rr_end(m, rd);
}

static void
rb_rdata1024(struct mb *m)
{
	rb_unknown_len(m, DNS_MAX_RDATA);
}

static void
rb_rdata1025(struct mb *m)
{
	rb_unknown_len(m, DNS_MAX_RDATA + 1);
}

static void
rb_opt_v1(struct mb *m)
{
	mb_resp(m, 0x8180, "x.test", DNS_T_A, 0, 0, 1);
	mb_opt(m, 4096, 0x00018000);
}

/* ---- malformed responses, built ---- */

static void
rb_self_pointer(struct mb *m)
{
	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_u16(m, 0xc000 | m->n);
	mb_a(m, 1);
}

/* owner -> a pointer in earlier rdata -> back to the owner */
static void
rb_cycle(struct mb *m)
{
	size_t rd, y, x;

	mb_resp(m, 0x8180, "x.test", DNS_T_A, 2, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, 65280, 300);
	y = m->n;
	mb_u16(m, 0xc000); /* patched below to point at x */
	mb_rr_end(m, rd);
	x = m->n;
	m->b[y] = (uint8_t)(0xc0 | x >> 8);
	m->b[y + 1] = (uint8_t)x;
	mb_u16(m, 0xc000 | y);
	mb_a(m, 1);
}

/* owner -> "\1a" followed by a pointer back to that label */
static void
rb_label_loop(struct mb *m)
{
	size_t rd, y;

	mb_resp(m, 0x8180, "x.test", DNS_T_A, 2, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, 65280, 300);
	y = m->n;
	mb_raw(m, MSG(1, 'a'));
	mb_u16(m, 0xc000 | y);
	mb_rr_end(m, rd);
	mb_u16(m, 0xc000 | y);
	mb_a(m, 1);
}

static void
rb_forward_pointer(struct mb *m)
{
	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_u16(m, 0xc000 | (m->n + 2)); /* to the type field just after */
	mb_a(m, 1);
}

static void
rb_pointer_past_end(struct mb *m)
{
	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_u16(m, 0xffff);
	mb_a(m, 1);
}

static void
rb_pointer_into_header(struct mb *m)
{
	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_u16(m, 0xc006);
	mb_a(m, 1);
}

static void
rb_label_type_01(struct mb *m)
{
	size_t rd;

	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, DNS_T_CNAME, 300);
	mb_label(m, 0x41, 'a'); /* a "label of 65", all there: type bits 01 */
	mb_u16(m, 0xc00c);
	mb_rr_end(m, rd);
}

static void
rb_label_type_10(struct mb *m)
{
	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_raw(m, MSG(0x81, 'a'));
	mb_u16(m, 0xc00c);
	mb_a(m, 1);
}

/* one record of type with rdata as given */
static void
rb_rdata(struct mb *m, uint16_t type, const void *p, size_t n)
{
	size_t rd;

	mb_resp(m, 0x8180, "x.test", type, 1, 0, 0);
	mb_name(m, "", 12);
	rd = mb_rr(m, type, 300);
	mb_raw(m, p, n);
	mb_rr_end(m, rd);
}

static void
rb_a5(struct mb *m)
{
	rb_rdata(m, DNS_T_A, MSG(192, 0, 2, 1, 0));
}

static void
rb_aaaa4(struct mb *m)
{
	rb_rdata(m, DNS_T_AAAA, MSG(0x20, 0x01, 0x0d, 0xb8));
}

static void
rb_cname_trailing(struct mb *m)
{
	rb_rdata(m, DNS_T_CNAME, MSG(1, 'a', 0xc0, 0x0c, 0));
}

static void
rb_cname_cut(struct mb *m)
{
	rb_rdata(m, DNS_T_CNAME, MSG(1, 'a', 0xc0));
}

static void
rb_mx1(struct mb *m)
{
	rb_rdata(m, DNS_T_MX, MSG(0));
}

static void
rb_srv_short(struct mb *m)
{
	rb_rdata(m, DNS_T_SRV, MSG(0, 1, 0, 2, 0));
}

static void
rb_soa_short(struct mb *m)
{
	rb_rdata(m, DNS_T_SOA,
		 MSG(0xc0, 0x0c, 0xc0, 0x0c, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4));
}

static void
rb_txt_overrun(struct mb *m)
{
	rb_rdata(m, DNS_T_TXT, MSG(2, 'a', 'b', 5, 'c', 'd'));
}

static void
rb_txt_empty(struct mb *m)
{
	rb_rdata(m, DNS_T_TXT, NULL, 0);
}

static void
rb_rdlen_past_end(struct mb *m)
{
	rb_rdata(m, DNS_T_A, MSG(192, 0, 2, 1));
	m->b[m->n - 5] = 5;
}

static void
rb_record_cut(struct mb *m)
{
	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_name(m, "", 12);
	mb_u16(m, DNS_T_A);
	mb_u16(m, DNS_C_IN);
	mb_u16(m, 0); /* half a TTL */
}

static void
rb_opt_dup(struct mb *m)
{
	mb_resp(m, 0x8180, "x.test", DNS_T_A, 0, 0, 2);
	mb_opt(m, 1232, 0);
	mb_opt(m, 1232, 0);
}

static void
rb_opt_in_answer(struct mb *m)
{
	mb_resp(m, 0x8180, "x.test", DNS_T_A, 1, 0, 0);
	mb_opt(m, 1232, 0);
}

static void
rb_opt_owner(struct mb *m)
{
	mb_resp(m, 0x8180, "x.test", DNS_T_A, 0, 0, 1);
	mb_u16(m, 0xc00c);
	mb_opt(m, 1232, 0);
	memmove(m->b + m->n - 11, m->b + m->n - 10, 10); /* drop opt's root byte */
	m->n--;
}

static void
rb_qr_clear(struct mb *m)
{
	rb_records(m, 1);
	m->b[2] &= 0x7f;
}

static void
rb_opcode_notify(struct mb *m)
{
	rb_records(m, 1);
	m->b[2] |= 0x20;
}

static void
rb_qd0(struct mb *m)
{
	mb_hdr(m, 0x8180, 0, 0, 0, 0);
}

static void
rb_qd2(struct mb *m)
{
	mb_hdr(m, 0x8180, 2, 0, 0, 0);
	mb_question(m, "x.test", DNS_T_A);
	mb_question(m, "y.test", DNS_T_A);
}

static void
rb_trailing(struct mb *m)
{
	rb_records(m, 1);
	mb_u8(m, 0);
}

static void
rb_header11(struct mb *m)
{
	rb_records(m, 1);
	m->n = 11;
}

static const struct resp_case responses[] = {
	/* dnsmasq, captured */
	{"dnsmasq-a-edns",
	 RAW(r_dig_a),
	 NULL,
	 0,
	 "www.addr.x.test",
	 DNS_T_A,
	 0,
	 true,
	 false,
	 1,
	 {{ANS, "www.addr.x.test", DNS_T_A, 0, "c0000201", NULL}}},
	{"dnsmasq-refused-ede", RAW(r_dig_do), NULL, 0, "www.addr.x.test", DNS_T_AAAA,
	 DNS_R_REFUSED, true, true, 0},
	{"dnsmasq-0x20",
	 RAW(r_dig_0x20),
	 NULL,
	 0,
	 "www.addr.x.test",
	 DNS_T_A,
	 0,
	 false,
	 false,
	 1,
	 {{ANS, "www.addr.x.test", DNS_T_A, 0, "c0000201", NULL}}},
	{"dnsmasq-aaaa-edns",
	 RAW(r_aaaa_edns),
	 NULL,
	 0,
	 "target.x.test",
	 DNS_T_AAAA,
	 0,
	 true,
	 false,
	 1,
	 {{ANS, "target.x.test", DNS_T_AAAA, 0, AAAA_HEX, NULL}}},
	{"dnsmasq-cname-chain",
	 RAW(r_cname_chain),
	 NULL,
	 0,
	 "alias.x.test",
	 DNS_T_A,
	 0,
	 false,
	 false,
	 3,
	 {{ANS, "alias.x.test", DNS_T_CNAME, 0, "036d6964" X_TEST_HEX, "mid.x.test"},
	  {ANS, "mid.x.test", DNS_T_CNAME, 0, TARGET_HEX, "target.x.test"},
	  {ANS, "target.x.test", DNS_T_A, 0, "c0000202", NULL}}},
	{"dnsmasq-mx",
	 RAW(r_mx),
	 NULL,
	 0,
	 "x.test",
	 DNS_T_MX,
	 0,
	 false,
	 false,
	 2,
	 {{ANS, "x.test", DNS_T_MX, 0, "000a046d61696c" X_TEST_HEX, "mail.x.test"},
	  {ADD, "mail.x.test", DNS_T_A, 0, "c0000219", NULL}}},
	{"dnsmasq-srv",
	 RAW(r_srv),
	 NULL,
	 0,
	 "_http._tcp.x.test",
	 DNS_T_SRV,
	 0,
	 false,
	 false,
	 3,
	 {{ANS, "_http._tcp.x.test", DNS_T_SRV, 0, "000100051f90" TARGET_HEX, "target.x.test"},
	  {ADD, "target.x.test", DNS_T_A, 0, "c0000202", NULL},
	  {ADD, "target.x.test", DNS_T_AAAA, 0, AAAA_HEX, NULL}}},
	{"dnsmasq-txt-two-strings",
	 RAW(r_txt),
	 NULL,
	 0,
	 "txt.x.test",
	 DNS_T_TXT,
	 0,
	 false,
	 false,
	 1,
	 {{ANS, "txt.x.test", DNS_T_TXT, 0, "0b763d73706631202d616c6c0d7365636f6e6420737472696e67",
	   NULL}}},
	{"dnsmasq-ptr",
	 RAW(r_ptr),
	 NULL,
	 0,
	 "2.2.0.192.in-addr.arpa",
	 DNS_T_PTR,
	 0,
	 false,
	 false,
	 1,
	 {{ANS, "2.2.0.192.in-addr.arpa", DNS_T_PTR, 0, TARGET_HEX, "target.x.test"}}},
	{"dnsmasq-https",
	 RAW(r_https),
	 NULL,
	 0,
	 "https.x.test",
	 DNS_T_HTTPS,
	 0,
	 false,
	 false,
	 1,
	 {{ANS, "https.x.test", DNS_T_HTTPS, 0, "00010000010003026832", NULL}}},
	{"dnsmasq-unknown-type",
	 RAW(r_unknown),
	 NULL,
	 0,
	 "unk.x.test",
	 65280,
	 0,
	 false,
	 false,
	 1,
	 {{ANS, "unk.x.test", 65280, 0, "deadbeef", NULL}}},
	{"dnsmasq-soa-ns",
	 RAW(r_soa),
	 NULL,
	 0,
	 "auth.test",
	 DNS_T_SOA,
	 0,
	 false,
	 false,
	 2,
	 {{ANS, "auth.test", DNS_T_SOA, 600,
	   "026e730461757468047465737400"
	   "0a686f73746d61737465720461757468047465737400"
	   "78a3f175000004b0000000b40012750000000258",
	   "ns.auth.test"},
	  {AUT, "auth.test", DNS_T_NS, 600, "026e730461757468047465737400", "ns.auth.test"}}},
	{"dnsmasq-nxdomain", RAW(r_nxdomain), NULL, 0, "nope.auth.test", DNS_T_A, DNS_R_NXDOMAIN,
	 false, false, 0},
	/* compression inside rdata, built */
	{"cname-chain-compressed",
	 NULL,
	 0,
	 rb_cname_ptrs,
	 0,
	 "www.example.test",
	 DNS_T_A,
	 0,
	 false,
	 false,
	 3,
	 {{ANS, "www.example.test", DNS_T_CNAME, 300, "0363646e" EXAMPLE_HEX, "cdn.example.test"},
	  {ANS, "cdn.example.test", DNS_T_CNAME, 300, "04656467650363646e" EXAMPLE_HEX,
	   "edge.cdn.example.test"},
	  {ANS, "edge.cdn.example.test", DNS_T_A, 300, "c0000207", NULL}}},
	{"mx-compressed",
	 NULL,
	 0,
	 rb_mx_ptrs,
	 0,
	 "example.test",
	 DNS_T_MX,
	 0,
	 false,
	 false,
	 2,
	 {{ANS, "example.test", DNS_T_MX, 300, "000a046d61696c" EXAMPLE_HEX, "mail.example.test"},
	  {ADD, "mail.example.test", DNS_T_A, 300, "c0000219", NULL}}},
	{"srv-compressed",
	 NULL,
	 0,
	 rb_srv_ptrs,
	 0,
	 "_sip._udp.example.test",
	 DNS_T_SRV,
	 0,
	 false,
	 false,
	 1,
	 {{ANS, "_sip._udp.example.test", DNS_T_SRV, 300, "0000000a13c403736970" EXAMPLE_HEX,
	   "sip.example.test"}}},
	{"soa-in-authority",
	 NULL,
	 0,
	 rb_soa_authority,
	 0,
	 "nope.example.test",
	 DNS_T_A,
	 DNS_R_NXDOMAIN,
	 false,
	 false,
	 1,
	 {{AUT, "example.test", DNS_T_SOA, 300,
	   "036e7331" EXAMPLE_HEX "0a686f73746d6173746572" EXAMPLE_HEX SOA_NUMS_HEX,
	   "ns1.example.test"}}},
	{"soa-pointer-within-rdata",
	 NULL,
	 0,
	 rb_soa_inner_ptr,
	 0,
	 "example.test",
	 DNS_T_SOA,
	 0,
	 false,
	 false,
	 1,
	 {{ANS, "example.test", DNS_T_SOA, 300,
	   "036e7331" EXAMPLE_HEX "0a686f73746d6173746572" EXAMPLE_HEX SOA_NUMS_HEX,
	   "ns1.example.test"}}},
	{"pointer-chain-64-jumps",
	 NULL,
	 0,
	 rb_jumps64,
	 0,
	 "x.test",
	 DNS_T_A,
	 0,
	 false,
	 false,
	 2,
	 {{ANS, "x.test", 65280, 300, NULL, NULL}, {ANS, "x.test", DNS_T_A, 300, "c0000201"}}},
	{"target-255-bytes",
	 NULL,
	 0,
	 rb_target255,
	 0,
	 "x.test",
	 DNS_T_A,
	 0,
	 false,
	 false,
	 1,
	 {{ANS, "x.test", DNS_T_CNAME, 300, NULL,
	   NAME63 "." NAME63 "." NAME63 "."
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.x.test"}}},
	{"dot-inside-owner-label",
	 NULL,
	 0,
	 rb_dot_in_owner,
	 0,
	 "x.test",
	 DNS_T_A,
	 0,
	 false,
	 false,
	 1,
	 {{ANS, "a\\046b.x.test", DNS_T_A, 300, "c0000201"}}},
	{"ttl-above-2^31-is-0",
	 NULL,
	 0,
	 rb_ttl_high,
	 0,
	 "x.test",
	 DNS_T_A,
	 0,
	 false,
	 false,
	 1,
	 {{ANS, "x.test", DNS_T_A, 0, "c0000201"}}},
	{"64-records", NULL, 0, rb_records64, 0, "x.test", DNS_T_A, 0, false, false, DNS_MAX_RRS},
	{"rdata-1024", NULL, 0, rb_rdata1024, 0, "x.test", 65280, 0, false, false, 1},
	{"opt-version-1", NULL, 0, rb_opt_v1, 0, "x.test", DNS_T_A, 0, true, true, 0},
	/* malformed */
	{"self-pointer", NULL, 0, rb_self_pointer, -1},
	{"two-pointer-cycle", NULL, 0, rb_cycle, -1},
	{"label-then-pointer-back", NULL, 0, rb_label_loop, -1},
	{"forward-pointer", NULL, 0, rb_forward_pointer, -1},
	{"pointer-past-end", NULL, 0, rb_pointer_past_end, -1},
	{"pointer-into-header", NULL, 0, rb_pointer_into_header, -1},
	{"pointer-chain-65-jumps", NULL, 0, rb_jumps65, -1},
	{"label-type-01-in-rdata", NULL, 0, rb_label_type_01, -1},
	{"label-type-10-in-owner", NULL, 0, rb_label_type_10, -1},
	{"target-256-bytes", NULL, 0, rb_target256, -1},
	{"soa-mname-escapes-too-long", NULL, 0, rb_target_escapes, -1},
	{"a-rdlen-5", NULL, 0, rb_a5, -1},
	{"aaaa-rdlen-4", NULL, 0, rb_aaaa4, -1},
	{"cname-byte-after-name", NULL, 0, rb_cname_trailing, -1},
	{"cname-pointer-cut-by-rdlen", NULL, 0, rb_cname_cut, -1},
	{"mx-rdlen-1", NULL, 0, rb_mx1, -1},
	{"srv-rdlen-5", NULL, 0, rb_srv_short, -1},
	{"soa-numbers-short", NULL, 0, rb_soa_short, -1},
	{"txt-string-overruns", NULL, 0, rb_txt_overrun, -1},
	{"txt-empty", NULL, 0, rb_txt_empty, -1},
	{"rdlen-past-end", NULL, 0, rb_rdlen_past_end, -1},
	{"record-cut", NULL, 0, rb_record_cut, -1},
	{"rdata-1025", NULL, 0, rb_rdata1025, -1},
	{"65-records", NULL, 0, rb_records65, -1},
	{"opt-duplicated", NULL, 0, rb_opt_dup, -1},
	{"opt-in-answer", NULL, 0, rb_opt_in_answer, -1},
	{"opt-owner-not-root", NULL, 0, rb_opt_owner, -1},
	{"qr-clear", NULL, 0, rb_qr_clear, -1},
	{"opcode-notify", NULL, 0, rb_opcode_notify, -1},
	{"qdcount-0", NULL, 0, rb_qd0, -1},
	{"qdcount-2", NULL, 0, rb_qd2, -1},
	{"trailing-byte", NULL, 0, rb_trailing, -1},
	{"header-11", NULL, 0, rb_header11, -1},
};

static void
assert_same_rrs(const struct dns_msg *a, const struct dns_msg *b)
{
	int i;

	assert_int_equal(a->nrr, b->nrr);
	for (i = 0; i < a->nrr; i++) {
		assert_int_equal(a->rr[i].section, b->rr[i].section);
		assert_string_equal(a->rr[i].name, b->rr[i].name);
		assert_int_equal(a->rr[i].type, b->rr[i].type);
		assert_int_equal(a->rr[i].rclass, b->rr[i].rclass);
		assert_int_equal(a->rr[i].ttl, b->rr[i].ttl);
		assert_int_equal(a->rr[i].rdlen, b->rr[i].rdlen);
		assert_memory_equal(a->rr[i].rdata, b->rr[i].rdata, a->rr[i].rdlen);
	}
}

/* Built from what m parsed to, then parsed again: the same message. */
static void
assert_round_trip(const struct dns_msg *m)
{
	static uint8_t out[65535];
	int n;

	n = dns_build_response(&m->q, m->rcode, m->rr, m->nrr, sizeof(out), out, sizeof(out));
	assert_true(n > 0);
	assert_int_equal(parse_response(out, (size_t)n, &msg2), 0);
	assert_false(msg2.flags & DNS_F_TC);
	assert_string_equal(msg2.q.name, m->q.name);
	assert_int_equal(msg2.q.name_wire_len, m->q.name_wire_len);
	assert_memory_equal(msg2.q.name_wire, m->q.name_wire, m->q.name_wire_len);
	assert_int_equal(msg2.q.qtype, m->q.qtype);
	assert_int_equal(msg2.rcode, m->rcode);
	assert_int_equal(msg2.q.edns, m->q.edns);
	assert_int_equal(msg2.q.edns_do, m->q.edns_do);
	assert_same_rrs(m, &msg2);
}

static void
run_response(void **state)
{
	const struct resp_case *c = *state;
	const uint8_t *raw = c->raw;
	size_t len = c->len, i;
	char h[2 * DNS_MAX_RDATA + 1], target[1024];
	static struct mb mbuf;
	const struct dns_rr *rr;
	int j;

	if (c->build) {
		c->build(&mbuf);
		raw = mbuf.b;
		len = mbuf.n;
	}
	assert_int_equal(parse_response(raw, len, &msg), c->want);
	if (c->want)
		return;
	assert_int_equal(msg.id, rd16(raw));
	assert_string_equal(msg.q.name, c->qname);
	assert_int_equal(msg.q.qtype, c->qtype);
	assert_int_equal(msg.rcode, c->rcode);
	assert_int_equal(msg.q.edns, c->edns);
	assert_int_equal(msg.q.edns_do, c->edns_do);
	assert_int_equal(msg.nrr, c->nrr);
	for (j = 0; j < c->nrr && j < (int)NCASES(c->rr) && c->rr[j].owner; j++) {
		rr = &msg.rr[j];
		assert_int_equal(rr->section, c->rr[j].section);
		assert_string_equal(rr->name, c->rr[j].owner);
		assert_int_equal(rr->type, c->rr[j].type);
		assert_int_equal(rr->rclass, DNS_C_IN);
		assert_int_equal(rr->ttl, c->rr[j].ttl);
		if (c->rr[j].rdata) {
			hex(rr->rdata, rr->rdlen, h);
			assert_string_equal(h, c->rr[j].rdata);
		}
		if (c->rr[j].target) {
			assert_int_equal(dns_rdata_name(rr, target, sizeof(target)), 0);
			assert_string_equal(target, c->rr[j].target);
		} else {
			assert_int_equal(dns_rdata_name(rr, target, sizeof(target)), -1);
		}
	}
	assert_round_trip(&msg);
	for (i = 0; i < len; i++)
		assert_int_equal(parse_response(raw, i, &msg2), -1);
}

/* ---- building ---- */

static void
make_a(struct dns_rr *rr, enum dns_section s, const char *name, uint8_t last)
{
	memset(rr, 0, sizeof(*rr));
	rr->section = s;
	snprintf(rr->name, sizeof(rr->name), "%s", name);
	rr->type = DNS_T_A;
	rr->rclass = DNS_C_IN;
	rr->ttl = 60;
	rr->rdlen = 4;
	memcpy(rr->rdata, (const uint8_t[]){192, 0, 2, last}, 4);
}

static void
query_of(const uint8_t *raw, size_t len, struct dns_query *q)
{
	bool id_ok;

	assert_int_equal(parse_query(raw, len, q, &id_ok), 0);
}

/* dig's query with EDNS: header, the question as sent, the owner
 * compressed to it, our OPT; AD is not copied (we validate nothing). */
static void
test_build_answer(void **state)
{
	static const uint8_t want[] = {
		0x9a,
		0x87,
		0x81,
		0x80,
		0,
		1,
		0,
		1,
		0,
		0,
		0,
		1,
		/* question: 21 bytes of q_dig_a from offset 12 */
		0x03,
		'w',
		'w',
		'w',
		0x04,
		'a',
		'd',
		'd',
		'r',
		0x01,
		'x',
		0x04,
		't',
		'e',
		's',
		't',
		0,
		0,
		1,
		0,
		1,
		0xc0,
		0x0c,
		0,
		1,
		0,
		1,
		0,
		0,
		0,
		60,
		0,
		4,
		192,
		0,
		2,
		1,
		0,
		0,
		0x29,
		0x04,
		0xd0,
		0,
		0,
		0,
		0,
		0,
		0,
	};
	struct dns_query q;
	struct dns_rr rr;
	uint8_t out[1232];
	int n;

	(void)state;
	query_of(RAW(q_dig_a), &q);
	make_a(&rr, DNS_S_ANSWER, q.name, 1);
	n = dns_build_response(&q, DNS_R_NOERROR, &rr, 1, dns_udp_max(&q), out, sizeof(out));
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(out, want, sizeof(want));
	assert_int_equal(parse_response(out, (size_t)n, &msg), 0);
	assert_int_equal(msg.nrr, 1);
	assert_true(msg.q.edns);
	assert_int_equal(msg.q.edns_size, DNS_EDNS_SIZE);
}

static void
test_build_do_echoed(void **state)
{
	struct dns_query q;
	uint8_t out[512];
	int n;

	(void)state;
	query_of(RAW(q_dig_do), &q);
	n = dns_build_response(&q, DNS_R_NXDOMAIN, NULL, 0, 512, out, sizeof(out));
	assert_true(n > 11);
	assert_int_equal(rd16(out + 2), 0x8183);
	assert_memory_equal(out + n - 11,
			    ((const uint8_t[]){0, 0, 0x29, 0x04, 0xd0, 0, 0, 0x80, 0}), 9);
	assert_int_equal(parse_response(out, (size_t)n, &msg), 0);
	assert_true(msg.q.edns_do);
	assert_int_equal(msg.rcode, DNS_R_NXDOMAIN);
}

/* The client's own case comes back in the question (0x20 randomisation);
 * the owner, compressed to it, reads in that case too. A name the caller
 * changed is no longer spelled by the client's bytes: then it goes out as
 * written, lower-case. */
static void
test_build_0x20_echo(void **state)
{
	struct dns_query q;
	struct dns_rr rr;
	uint8_t out[512];
	int n;

	(void)state;
	query_of(RAW(q_dig_0x20), &q);
	assert_string_equal(q.name, "www.addr.x.test");
	make_a(&rr, DNS_S_ANSWER, "www.addr.x.test", 1);
	n = dns_build_response(&q, 0, &rr, 1, 512, out, sizeof(out));
	assert_int_equal(n, sizeof(q_dig_0x20) + 16);
	assert_memory_equal(out + 12, q_dig_0x20 + 12, sizeof(q_dig_0x20) - 12);
	assert_int_equal(rd16(out + sizeof(q_dig_0x20)), 0xc00c);
	assert_int_equal(parse_response(out, (size_t)n, &msg), 0);
	assert_string_equal(msg.q.name, "www.addr.x.test");

	snprintf(q.name, sizeof(q.name), "other.test");
	n = dns_build_response(&q, 0, NULL, 0, 512, out, sizeof(out));
	assert_int_equal(n, 12 + 12 + 4);
	assert_memory_equal(out + 12, "\x05other\x04test", 12);
}

/* 40 answers of 16 bytes after 33 bytes of header and question: 29 fit in
 * 512; TC says the answer is partial. */
static void
test_build_truncates(void **state)
{
	static struct dns_rr rrs[60];
	struct dns_query q;
	uint8_t out[1232];
	int n, i;

	(void)state;
	query_of(RAW(q_dig_noedns), &q);
	for (i = 0; i < 40; i++)
		make_a(&rrs[i], DNS_S_ANSWER, q.name, (uint8_t)i);
	n = dns_build_response(&q, 0, rrs, 40, dns_udp_max(&q), out, sizeof(out));
	assert_int_equal(n, 33 + 29 * 16);
	assert_true(rd16(out + 2) & DNS_F_TC);
	assert_int_equal(rd16(out + 6), 29);
	assert_int_equal(parse_response(out, (size_t)n, &msg), 0);
	assert_int_equal(msg.nrr, 29);
	assert_memory_equal(msg.rr[28].rdata, ((const uint8_t[]){192, 0, 2, 28}), 4);

	/* the same over TCP: everything, no TC */
	n = dns_build_response(&q, 0, rrs, 40, 65535, out, sizeof(out));
	assert_int_equal(n, 33 + 40 * 16);
	assert_false(rd16(out + 2) & DNS_F_TC);

	/* with EDNS the OPT stays: 42 AAAA answers of 28 bytes fit in 1232 */
	query_of(RAW(q_dig_a), &q);
	for (i = 0; i < 60; i++) {
		make_a(&rrs[i], DNS_S_ANSWER, q.name, (uint8_t)i);
		rrs[i].type = DNS_T_AAAA;
		rrs[i].rdlen = 16;
	}
	n = dns_build_response(&q, 0, rrs, 60, dns_udp_max(&q), out, sizeof(out));
	assert_int_equal(n, 33 + 42 * 28 + 11);
	assert_true(rd16(out + 2) & DNS_F_TC);
	assert_int_equal(rd16(out + 6), 42);
	assert_int_equal(rd16(out + 10), 1);
	assert_int_equal(parse_response(out, (size_t)n, &msg), 0);
	assert_true(msg.q.edns);
	assert_int_equal(msg.nrr, 42);
}

/* Only additional records left out: no TC (RFC 2181 §9). Records given
 * out of section order go out in section order. */
static void
test_build_drops_additional_quietly(void **state)
{
	static struct dns_rr rrs[40];
	struct dns_query q;
	uint8_t out[512];
	int n, i;

	(void)state;
	query_of(RAW(q_dig_noedns), &q);
	for (i = 0; i < 40; i++)
		make_a(&rrs[i], i % 2 ? DNS_S_ANSWER : DNS_S_ADDITIONAL,
		       i % 2 ? q.name : "ns.x.test", (uint8_t)i);
	n = dns_build_response(&q, 0, rrs, 40, 512, out, sizeof(out));
	assert_true(n > 0 && n <= 512);
	assert_false(rd16(out + 2) & DNS_F_TC);
	assert_int_equal(rd16(out + 6), 20);
	assert_true(rd16(out + 10) > 0 && rd16(out + 10) < 20);
	assert_int_equal(parse_response(out, (size_t)n, &msg), 0);
	for (i = 0; i < msg.nrr; i++)
		assert_int_equal(msg.rr[i].section, i < 20 ? DNS_S_ANSWER : DNS_S_ADDITIONAL);
	assert_int_equal(msg.rr[0].rdata[3], 1);
	assert_int_equal(msg.rr[20].rdata[3], 0);
}

/* Errors: a query whose question could not be read gets none back, but its
 * opcode and RD (UPDATE, no RD: 0xa8); one that failed later gets its
 * question; BADVERS goes in the OPT. */
static void
test_build_errors(void **state)
{
	struct dns_query q;
	uint8_t out[512];
	bool id_ok;
	int n;

	(void)state;
	assert_int_equal(
		parse_query(MSG(0x12, 0x34, 0x28, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, X_TEST, IN_A), &q,
			    &id_ok),
		DNS_R_NOTIMP);
	n = dns_build_response(&q, DNS_R_NOTIMP, NULL, 0, 512, out, sizeof(out));
	assert_int_equal(n, 12);
	assert_memory_equal(
		out, ((const uint8_t[]){0x12, 0x34, 0xa8, 0x84, 0, 0, 0, 0, 0, 0, 0, 0}), 12);

	assert_int_equal(parse_query(MSG(QHDR(1, 0, 0, 2), X_TEST, IN_A, OPT_RR(1232, 0, 0), 0, 0,
					 OPT_RR(1232, 0, 0), 0, 0),
				     &q, &id_ok),
			 DNS_R_FORMERR);
	n = dns_build_response(&q, DNS_R_FORMERR, NULL, 0, 512, out, sizeof(out));
	assert_int_equal(n, 12 + 12 + 11);
	assert_int_equal(rd16(out + 2), 0x8181);
	assert_int_equal(rd16(out + 4), 1);

	assert_int_equal(parse_query(MSG(QHDR(1, 0, 0, 1), X_TEST, IN_A, OPT_RR(1232, 1, 0), 0, 0),
				     &q, &id_ok),
			 DNS_R_BADVERS);
	n = dns_build_response(&q, DNS_R_BADVERS, NULL, 0, 512, out, sizeof(out));
	assert_int_equal(n, 12 + 12 + 11);
	assert_int_equal(rd16(out + 2), 0x8180); /* low bits 0 ... */
	assert_int_equal(out[n - 6], 1);	 /* ... high bits 1: 16 */
	assert_int_equal(out[n - 5], 0);	 /* version 0 */
	q.edns = false;				 /* cannot be said without EDNS */
	n = dns_build_response(&q, DNS_R_BADVERS, NULL, 0, 512, out, sizeof(out));
	assert_int_equal(rd16(out + 2), 0x8182);
}

static void
test_build_limits(void **state)
{
	struct dns_query q;
	struct dns_rr rr;
	uint8_t out[512];

	(void)state;
	query_of(RAW(q_dig_a), &q);
	assert_int_equal(dns_build_response(&q, 0, NULL, 0, 512, out, 20), -1);
	assert_int_equal(dns_build_response(&q, 0, NULL, 0, 40, out, sizeof(out)), -1);
	assert_int_equal(dns_build_response(&q, 0, NULL, 0, 44, out, sizeof(out)), 44);
	assert_int_equal(dns_build_response(&q, -1, NULL, 0, 512, out, sizeof(out)), -1);
	assert_int_equal(dns_build_response(&q, 0, NULL, 1, 512, out, sizeof(out)), -1);
	make_a(&rr, DNS_S_ANSWER, "a..b", 1);
	assert_int_equal(dns_build_response(&q, 0, &rr, 1, 512, out, sizeof(out)), -1);
	make_a(&rr, DNS_S_ANSWER, "ok.test", 1);
	rr.section = (enum dns_section)7;
	assert_int_equal(dns_build_response(&q, 0, &rr, 1, 512, out, sizeof(out)), -1);
	make_a(&rr, DNS_S_ANSWER, "ok.test", 1);
	rr.rdlen = DNS_MAX_RDATA + 1;
	assert_int_equal(dns_build_response(&q, 0, &rr, 1, 512, out, sizeof(out)), -1);
}

/* HTTPS and unknown types go out byte for byte, escaped names as the
 * bytes they stand for. */
static void
test_build_pass_through(void **state)
{
	struct dns_rr rr[2];
	struct dns_query q;
	uint8_t out[512];
	int n;

	(void)state;
	assert_int_equal(parse_response(RAW(r_https), &msg), 0);
	rr[0] = msg.rr[0];
	assert_int_equal(parse_response(RAW(r_unknown), &msg), 0);
	rr[1] = msg.rr[0];
	snprintf(rr[1].name, sizeof(rr[1].name), "a\\046b.x.test");
	query_of(RAW(q_dig_noedns), &q);
	n = dns_build_response(&q, 0, rr, 2, 512, out, sizeof(out));
	assert_true(n > 0);
	assert_non_null(memmem(out, (size_t)n, "\x05https\x01x\x04test\x00\x00\x41\x00\x01", 17));
	assert_non_null(memmem(out, (size_t)n, "\x00\x0a\x00\x01\x00\x00\x01\x00\x03\x02h2", 12));
	assert_non_null(
		memmem(out, (size_t)n,
		       MSG(3, 'a', '.', 'b', 1, 'x', 4, 't', 'e', 's', 't', 0, 0xff, 0x00)));
	assert_non_null(memmem(out, (size_t)n, "\x00\x04\xde\xad\xbe\xef", 6));
	assert_int_equal(parse_response(out, (size_t)n, &msg), 0);
	assert_string_equal(msg.rr[1].name, "a\\046b.x.test");
}

/* dns_build_query writes what Go and glibc send, byte for byte. */
static void
test_build_query(void **state)
{
	static const uint8_t lower_wire[] = {3, 'w', 'w', 'w', 4,   'a', 'd', 'd', 'r',
					     1, 'x', 4,	  't', 'e', 's', 't', 0};
	struct dns_query q, q2;
	uint8_t out[512];
	bool id_ok;
	int n;

	(void)state;
	query_of(RAW(q_go_a), &q);
	n = dns_build_query(&q, out, sizeof(out));
	assert_int_equal(n, sizeof(q_go_a));
	assert_memory_equal(out, q_go_a, sizeof(q_go_a));
	query_of(RAW(q_glibc_aaaa), &q);
	n = dns_build_query(&q, out, sizeof(out));
	assert_int_equal(n, sizeof(q_glibc_aaaa));
	assert_memory_equal(out, q_glibc_aaaa, sizeof(q_glibc_aaaa));
	assert_int_equal(dns_build_query(&q, out, sizeof(q_glibc_aaaa) - 1), -1);

	/* DO is not asked upstream; case goes out lower */
	query_of(RAW(q_dig_0x20), &q);
	q.edns = q.edns_do = true;
	n = dns_build_query(&q, out, sizeof(out));
	assert_int_equal(parse_query(out, (size_t)n, &q2, &id_ok), 0);
	assert_true(q2.edns);
	assert_false(q2.edns_do);
	assert_int_equal(q2.edns_size, DNS_EDNS_SIZE);
	assert_int_equal(q2.name_wire_len, sizeof(lower_wire));
	assert_memory_equal(q2.name_wire, lower_wire, sizeof(lower_wire));
}

struct name_case {
	const char *name;
	const char *in;
	int wire_len;	  /* -1: refused */
	const char *back; /* as it parses back */
};

static const struct name_case names[] = {
	{"root-empty", "", 1, ""},
	{"root-dot", ".", 1, ""},
	{"trailing-dot", "x.test.", 8, "x.test"},
	{"upper", "X.Test", 8, "x.test"},
	{"escaped-dot", "a\\046b.test", 10, "a\\046b.test"},
	{"escaped-char", "a\\.b\\\\.test", 11, "a\\046b\\092.test"},
	{"label63", NAME63 ".test", 70, NAME63 ".test"},
	{"label64", NAME63 "a.test", -1},
	{"name-255", NAME255, 255, NAME255},
	{"name-256", NAME255 "b", -1},
	{"empty-label", "a..b", -1},
	{"leading-dot", ".a", -1},
	{"two-dots", "..", -1},
	{"dangling-backslash", "a\\", -1},
	{"short-escape", "a\\04", -1},
	{"escape-256", "a\\256", -1},
};

static void
run_name(void **state)
{
	const struct name_case *c = *state;
	struct dns_query q = {.id = 7, .qtype = DNS_T_A, .qclass = DNS_C_IN};
	struct dns_query q2;
	uint8_t out[512];
	bool id_ok;
	int n;

	snprintf(q.name, sizeof(q.name), "%s", c->in);
	n = dns_build_query(&q, out, sizeof(out));
	if (c->wire_len < 0) {
		assert_int_equal(n, -1);
		return;
	}
	assert_int_equal(n, 12 + c->wire_len + 4);
	assert_int_equal(parse_query(out, (size_t)n, &q2, &id_ok), 0);
	assert_string_equal(q2.name, c->back);
}

static void
test_rdata_name(void **state)
{
	struct dns_rr rr = {.type = DNS_T_MX, .rdlen = 9};
	char out[64];

	(void)state;
	memcpy(rr.rdata, "\x00\x0a\x01x\x04test\x00", 9);
	rr.rdlen = 10;
	memcpy(rr.rdata, "\x00\x0a\x01x\x04test\x00", 10);
	assert_int_equal(dns_rdata_name(&rr, out, sizeof(out)), 0);
	assert_string_equal(out, "x.test");
	assert_int_equal(dns_rdata_name(&rr, out, 6), -1); /* "x.test" needs 7 */
	assert_int_equal(dns_rdata_name(&rr, out, 7), 0);
	rr.rdlen = 9; /* root label missing */
	assert_int_equal(dns_rdata_name(&rr, out, sizeof(out)), -1);
	rr.rdlen = 2;
	assert_int_equal(dns_rdata_name(&rr, out, sizeof(out)), -1);
	rr.type = DNS_T_CNAME; /* a pointer in expanded rdata is malformed */
	rr.rdlen = 2;
	memcpy(rr.rdata, "\xc0\x0c", 2);
	assert_int_equal(dns_rdata_name(&rr, out, sizeof(out)), -1);
	rr.type = DNS_T_A;
	rr.rdlen = 4;
	assert_int_equal(dns_rdata_name(&rr, out, sizeof(out)), -1);
}

/* An HTTPS record's ech parameter goes, the others stay, in order; what
 * does not parse is left as it is. */
static void
test_svcb_strip_ech(void **state)
{
	/* priority 1, target ".", alpn "h2", ech (4 bytes), port 443 */
	static const uint8_t in[] = {0, 1, 0, 0, 1, 0, 3, 2, 'h', '2', 0, 5,
				     0, 4, 1, 2, 3, 4, 0, 3, 0,	  2,   1, 0xbb};
	static const uint8_t out[] = {0, 1, 0, 0, 1, 0, 3, 2, 'h', '2', 0, 3, 0, 2, 1, 0xbb};
	/* target "a.test", ech only */
	static const uint8_t in2[] = {0, 1, 1, 'a', 4, 't', 'e', 's', 't', 0, 0, 5, 0, 1, 9};
	uint8_t b[64];
	uint16_t n;

	(void)state;
	memcpy(b, in, sizeof(in));
	n = sizeof(in);
	assert_int_equal(dns_svcb_strip_ech(b, &n), 1);
	assert_int_equal(n, sizeof(out));
	assert_memory_equal(b, out, sizeof(out));
	assert_int_equal(dns_svcb_strip_ech(b, &n), 0); /* none left */
	assert_int_equal(n, sizeof(out));
	memcpy(b, in2, sizeof(in2));
	n = sizeof(in2);
	assert_int_equal(dns_svcb_strip_ech(b, &n), 1);
	assert_int_equal(n, 10);
	/* a parameter longer than the rdata, a label past the end: untouched */
	memcpy(b, in, sizeof(in));
	n = 14;
	assert_int_equal(dns_svcb_strip_ech(b, &n), 0);
	assert_int_equal(n, 14);
	b[2] = 0x40;
	n = sizeof(in);
	assert_int_equal(dns_svcb_strip_ech(b, &n), 0);
	n = 2;
	assert_int_equal(dns_svcb_strip_ech(b, &n), 0);
}

static void
test_udp_max(void **state)
{
	struct dns_query q = {0};

	(void)state;
	q.edns_size = 4096;
	assert_int_equal(dns_udp_max(&q), 512);
	q.edns = true;
	assert_int_equal(dns_udp_max(&q), 1232);
	q.edns_size = 1200;
	assert_int_equal(dns_udp_max(&q), 1200);
	q.edns_size = 100;
	assert_int_equal(dns_udp_max(&q), 512);
}

int
main(void)
{
	const struct CMUnitTest build[] = {
		cmocka_unit_test(test_build_answer),
		cmocka_unit_test(test_build_do_echoed),
		cmocka_unit_test(test_build_0x20_echo),
		cmocka_unit_test(test_build_truncates),
		cmocka_unit_test(test_build_drops_additional_quietly),
		cmocka_unit_test(test_build_errors),
		cmocka_unit_test(test_build_limits),
		cmocka_unit_test(test_build_pass_through),
		cmocka_unit_test(test_build_query),
		cmocka_unit_test(test_rdata_name),
		cmocka_unit_test(test_udp_max),
		cmocka_unit_test(test_svcb_strip_ech),
	};
	int failed = 0;

	failed += RUN_TABLE("dns_real_queries", real_queries, run_real_query);
	failed += RUN_TABLE("dns_queries", queries, run_query);
	failed += RUN_TABLE("dns_responses", responses, run_response);
	failed += RUN_TABLE("dns_names", names, run_name);
	failed += cmocka_run_group_tests_name("dns_build", build, NULL, NULL);
	return failed ? 1 : 0;
}
