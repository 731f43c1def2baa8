// SPDX-License-Identifier: Apache-2.0
/* DNS messages (RFC 1035, EDNS0 RFC 6891): parsing client queries and
 * upstream responses into plain structs with every name expanded, and
 * building responses from them. Pure: no I/O, no allocation beyond the
 * caller's structs. Every byte comes from a sandboxed client or from the
 * network: compression loops, pointers forward or out of range, truncated
 * records, over-long names and labels are errors, never crashes. Fuzzed
 * (tests/fuzz/fuzz_dnsmsg.c). */
#ifndef DNSMSG_H
#define DNSMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define DNS_MAX_NAME  255  /* presentation form, without the trailing dot */
#define DNS_MAX_RRS   64   /* per message, all sections together */
#define DNS_MAX_RDATA 1024 /* expanded rdata; larger records are an error */
#define DNS_MAX_WIRE  255  /* a name in wire form, root label included (RFC 1035 §2.3.4) */

/* Header flag bits (RFC 1035 §4.1.1, RFC 4035 §3.2 for AD and CD). */
#define DNS_F_QR     0x8000
#define DNS_F_OPCODE 0x7800
#define DNS_F_AA     0x0400
#define DNS_F_TC     0x0200
#define DNS_F_RD     0x0100
#define DNS_F_RA     0x0080
#define DNS_F_AD     0x0020
#define DNS_F_CD     0x0010
#define DNS_F_RCODE  0x000f

#define DNS_EDNS_SIZE 1232 /* UDP payload we advertise and answer within (DNS flag day 2020) */
#define DNS_C_IN      1

enum dns_type {
	DNS_T_A = 1,
	DNS_T_NS = 2,
	DNS_T_CNAME = 5,
	DNS_T_SOA = 6,
	DNS_T_PTR = 12,
	DNS_T_MX = 15,
	DNS_T_TXT = 16,
	DNS_T_AAAA = 28,
	DNS_T_SRV = 33,
	DNS_T_OPT = 41,
	DNS_T_SVCB = 64,
	DNS_T_HTTPS = 65,
	DNS_T_ANY = 255,
};

enum dns_rcode {
	DNS_R_NOERROR = 0,
	DNS_R_FORMERR = 1,
	DNS_R_SERVFAIL = 2,
	DNS_R_NXDOMAIN = 3,
	DNS_R_NOTIMP = 4,
	DNS_R_REFUSED = 5,
	DNS_R_BADVERS = 16, /* extended (RFC 6891 §6.1.3): only with an OPT record */
};

enum dns_section {
	DNS_S_ANSWER = 0,
	DNS_S_AUTHORITY = 1,
	DNS_S_ADDITIONAL = 2,
};

struct dns_query {
	uint16_t id;
	uint16_t flags;		     /* as received (RD etc.) */
	char name[DNS_MAX_NAME + 1]; /* lower-cased ASCII, no trailing dot; "" for the root */
	uint16_t qtype;
	uint16_t qclass;
	bool edns;	    /* an OPT record was present */
	uint16_t edns_size; /* its UDP payload size (512 if no EDNS) */
	bool edns_do;	    /* DNSSEC OK bit */
	/* Additions. The name as the client sent it, in uncompressed wire form
	 * and its own case: dns_build_response() echoes these bytes so that a
	 * client randomising case (0x20, draft-vixie-dnsext-dns0x20) sees its
	 * question back; it falls back to name when they do not spell name. */
	uint8_t name_wire[DNS_MAX_WIRE];
	uint8_t name_wire_len; /* root label included; 0 = unknown, use name */
	bool no_question;      /* set when the question could not be read: an
				* error reply then carries no question section */
};

struct dns_rr {
	enum dns_section section;
	char name[DNS_MAX_NAME + 1]; /* owner, lower-cased, no trailing dot */
	uint16_t type;
	uint16_t rclass;
	uint32_t ttl;
	/* rdata in canonical, uncompressed wire form: for NS, CNAME, PTR the
	 * name; for MX the preference then the name; for SRV priority, weight,
	 * port, then the name; for SOA both names then the 5 numbers; other
	 * types byte for byte as received */
	uint16_t rdlen;
	uint8_t rdata[DNS_MAX_RDATA];
};

struct dns_msg {
	uint16_t id;
	uint16_t flags;	    /* QR, opcode, AA, TC, RD, RA, rcode bits as received */
	uint8_t rcode;	    /* low 4 bits of flags */
	struct dns_query q; /* the question (exactly one required) */
	int nrr;
	struct dns_rr rr[DNS_MAX_RRS]; /* answer, authority, additional; OPT excluded */
};

/* Parses a query from a client. Requirements: QR = 0, opcode 0 (QUERY),
 * exactly one question, no answer/authority records, at most one OPT in
 * additional (others ignored). Returns 0 or a DNS rcode to answer with:
 * DNS_R_FORMERR for malformed input, DNS_R_NOTIMP for other opcodes.
 * When the header at least was readable, q->id is set so that the error
 * reply can carry it; *id_ok says whether it was. */
int dns_parse_query(const uint8_t *buf, size_t len, struct dns_query *q, bool *id_ok);

/* Parses a response from upstream (QR = 1, exactly one question). Returns
 * 0 or -1 on any malformation. */
int dns_parse_response(const uint8_t *buf, size_t len, struct dns_msg *m);

/* The most a UDP response to q may hold: 512 without EDNS, else its
 * advertised payload size (at least 512) capped at DNS_EDNS_SIZE. Addition. */
size_t dns_udp_max(const struct dns_query *q);

/* Builds a query for q (id, name, type, class; RD set; with an OPT record
 * advertising 1232 bytes when q->edns). Returns its length, or -1 if it
 * does not fit. */
int dns_build_query(const struct dns_query *q, uint8_t *out, size_t outlen);

/* Builds a response to q: id and RD copied from q, QR and RA set, rcode,
 * the question echoed, then the records of rrs (in order; nrr may be 0),
 * names compressed where they repeat the question name (or not compressed
 * at all — correctness first), and an OPT record when q->edns. If the
 * message would exceed max_len (512 without EDNS, else min(edns_size,
 * 1232) for UDP; 65535 for TCP), records are dropped from the end and TC
 * is set. Returns the length or -1. */
int dns_build_response(const struct dns_query *q, int rcode, const struct dns_rr *rrs, int nrr,
		       size_t max_len, uint8_t *out, size_t outlen);

/* A name from rdata of a name-bearing record (CNAME, NS, PTR: at offset 0;
 * MX: 2; SRV: 6) in presentation form. Returns 0 or -1. */
int dns_rdata_name(const struct dns_rr *rr, char *out, size_t outlen);

/* The address of an A or AAAA record (port 0) into ss; false for any
 * other record. */
bool dns_rr_addr(const struct dns_rr *rr, struct sockaddr_storage *ss);

/* An HTTPS or SVCB record's ech SvcParam (key 5, an ECH configuration):
 * removed from rdata in place (*rdlen shrinks), so a client sends its
 * ClientHello with the real name outside, where the kernel-verified path
 * reads it. Returns 1 when one was removed, 0 when there was none or the
 * rdata does not parse (then it is left as it is). */
#define DNS_SVC_ECH 5
int dns_svcb_strip_ech(uint8_t *rdata, uint16_t *rdlen);

#endif /* DNSMSG_H */
