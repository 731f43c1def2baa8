// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for userspace/dns/wire.c: every input is read as a client
 * query and as an upstream response. A query that parses has a
 * presentation-form name and builds an upstream query that parses back to
 * it; any query whose id was readable gets an error or empty reply that
 * builds with its id, opcode and RD, and parses back when it carries the
 * question. A response that parses has presentation-form names, a name in
 * every name-bearing record, and rebuilt from its own records it parses
 * back to the same records (a prefix of them when the 65535-byte limit cut
 * it, with TC unless only additional records went), and within 512 bytes it
 * still parses. Every input is also matched, as an upstream answer, against
 * a query and as a query against an answer (dns/csock.c: csock_match). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dns/csock.h"
#include "dns/wire.h"

/* lower case, [a-z0-9_-] and dots, anything else as \DDD */
static void
check_name(const char *s)
{
	size_t n = strnlen(s, DNS_MAX_NAME + 1);

	if (n > DNS_MAX_NAME || (n && (s[0] == '.' || s[n - 1] == '.')))
		abort();
	for (; *s; s++) {
		if ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_')
			continue;
		if (*s == '.' && s[1] != '.')
			continue;
		if (*s == '\\' && s[1] >= '0' && s[1] <= '2' && s[2] >= '0' && s[2] <= '9' &&
		    s[3] >= '0' && s[3] <= '9') {
			s += 3;
			continue;
		}
		abort();
	}
}

static bool
same_rr(const struct dns_rr *a, const struct dns_rr *b)
{
	return a->section == b->section && !strcmp(a->name, b->name) && a->type == b->type &&
	       a->rclass == b->rclass && a->ttl == b->ttl && a->rdlen == b->rdlen &&
	       !memcmp(a->rdata, b->rdata, a->rdlen);
}

static bool
name_bearing(uint16_t type)
{
	return type == DNS_T_NS || type == DNS_T_CNAME || type == DNS_T_PTR || type == DNS_T_MX ||
	       type == DNS_T_SRV || type == DNS_T_SOA;
}

static void
fuzz_query(const uint8_t *data, size_t size)
{
	static struct dns_msg back;
	static uint8_t out[65535];
	struct dns_query q, q2;
	bool id_ok, id_ok2;
	int rc, n;

	rc = dns_parse_query(data, size, &q, &id_ok);
	if (id_ok != (size >= 12))
		abort();
	if (rc != 0 && rc != DNS_R_FORMERR && rc != DNS_R_NOTIMP && rc != DNS_R_BADVERS)
		abort();
	if (rc == DNS_R_BADVERS && !q.edns)
		abort();
	if (!id_ok)
		return;
	if (!q.no_question)
		check_name(q.name);
	n = dns_build_response(&q, rc, NULL, 0, dns_udp_max(&q), out, sizeof(out));
	if (n < 12 || (size_t)n > dns_udp_max(&q) || (out[0] << 8 | out[1]) != q.id ||
	    (out[2] & 0x79) != (data[2] & 0x79)) /* opcode and RD echoed */
		abort();
	if (!q.no_question) {
		if (dns_parse_response(out, (size_t)n, &back) || strcmp(back.q.name, q.name) ||
		    back.q.name_wire_len != q.name_wire_len ||
		    memcmp(back.q.name_wire, q.name_wire, q.name_wire_len) ||
		    back.q.edns != q.edns || back.nrr)
			abort();
	}
	if (rc)
		return;
	n = dns_build_query(&q, out, sizeof(out));
	if (n < 0 || dns_parse_query(out, (size_t)n, &q2, &id_ok2) || strcmp(q.name, q2.name) ||
	    q.qtype != q2.qtype || q.qclass != q2.qclass || q.edns != q2.edns)
		abort();
}

static void
fuzz_response(const uint8_t *data, size_t size)
{
	static struct dns_msg m, back;
	static uint8_t out[65535];
	char name[DNS_MAX_NAME + 1];
	bool tc;
	int i, n;

	if (dns_parse_response(data, size, &m))
		return;
	if (m.nrr < 0 || m.nrr > DNS_MAX_RRS)
		abort();
	check_name(m.q.name);
	for (i = 0; i < m.nrr; i++) {
		check_name(m.rr[i].name);
		if (m.rr[i].type == DNS_T_OPT || m.rr[i].rdlen > DNS_MAX_RDATA ||
		    (i && m.rr[i].section < m.rr[i - 1].section))
			abort();
		if (m.rr[i].type == DNS_T_A && m.rr[i].rdlen != 4)
			abort();
		if (m.rr[i].type == DNS_T_AAAA && m.rr[i].rdlen != 16)
			abort();
		if (name_bearing(m.rr[i].type)) {
			if (dns_rdata_name(&m.rr[i], name, sizeof(name)))
				abort();
			check_name(name);
		}
	}

	n = dns_build_response(&m.q, m.rcode, m.rr, m.nrr, sizeof(out), out, sizeof(out));
	if (n < 12 || dns_parse_response(out, (size_t)n, &back))
		abort();
	tc = back.flags & DNS_F_TC;
	if (back.nrr > m.nrr || (back.nrr == m.nrr && tc) || back.rcode != m.rcode ||
	    strcmp(back.q.name, m.q.name) || back.q.qtype != m.q.qtype || back.q.edns != m.q.edns ||
	    back.q.edns_do != m.q.edns_do)
		abort();
	if (back.nrr < m.nrr && !tc && m.rr[back.nrr].section != DNS_S_ADDITIONAL)
		abort();
	for (i = 0; i < back.nrr; i++)
		if (!same_rr(&m.rr[i], &back.rr[i]))
			abort();

	n = dns_build_response(&m.q, m.rcode, m.rr, m.nrr, 512, out, sizeof(out));
	if (n < 12 || n > 512 || dns_parse_response(out, (size_t)n, &back) || back.nrr > m.nrr)
		abort();
}

/* The input as HTTPS/SVCB rdata: a strip of the ech parameter shrinks it
 * by at least a parameter's header, and one that finds none leaves it as
 * it was. */
static void
fuzz_svcb(const uint8_t *data, size_t size)
{
	uint8_t b[DNS_MAX_RDATA];
	uint16_t n = (uint16_t)(size < sizeof(b) ? size : sizeof(b)), n0 = n;

	memcpy(b, data, n);
	if (dns_svcb_strip_ech(b, &n)) {
		if (n + 4 > n0)
			abort();
		if (dns_svcb_strip_ech(b, &n) && n + 4 > n0)
			abort();
	} else if (n != n0 || memcmp(b, data, n)) {
		abort();
	}
}

/* csock_match() reads no byte past either message (the input is copied
 * to exactly its size, for ASan) */
static void
fuzz_match(const uint8_t *data, size_t size)
{
	struct dns_query q = {.id = 0x1234, .qtype = 1, .qclass = 1, .edns = true};
	uint8_t qbuf[600], ans[600], *copy;
	int qlen, alen;

	snprintf(q.name, sizeof(q.name), "a.b.test");
	qlen = dns_build_query(&q, qbuf, sizeof(qbuf));
	alen = dns_build_response(&q, 0, NULL, 0, 512, ans, sizeof(ans));
	if (qlen <= 0 || alen <= 0 || !csock_match(qbuf, (size_t)qlen, ans, (size_t)alen))
		abort(); /* a query's own answer matches it */
	copy = malloc(size ? size : 1);
	if (!copy)
		return;
	memcpy(copy, data, size);
	(void)csock_match(qbuf, (size_t)qlen, copy, size);
	(void)csock_match(copy, size, qbuf, (size_t)qlen);
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_query(data, size);
	fuzz_response(data, size);
	fuzz_svcb(data, size);
	fuzz_match(data, size);
	return 0;
}
