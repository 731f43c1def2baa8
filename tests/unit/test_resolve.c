// SPDX-License-Identifier: Apache-2.0
/* dns/resolver.c: the address cache and the joining of lookups, against a fake
 * DNS server on 127.0.0.1 that counts the queries it gets and answers A
 * queries with one address and a chosen TTL (AAAA: no records); and raw
 * exchanges (resolver_send) through csock.c's kept socket: reused, then
 * replaced; a foreign answer ignored; a lost query asked again by c-ares. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <cmocka.h>

#include "dns/wire.h"
#include "dns/resolver.h"

struct fake {
	struct event_base *base;
	struct event *ev;
	struct resolver *res;
	int fd;
	uint32_t ttl;	  /* of the A record it answers */
	int queries_a;	  /* A queries received */
	int answers;	  /* callbacks seen */
	int last_status;  /* of the last callback */
	int last_naddrs;  /* of the last callback */
	uint32_t last_ip; /* first address of the last callback */
	/* raw exchanges */
	uint16_t ports[64]; /* source ports of the queries received */
	int nports;
	int drop;	 /* queries to leave unanswered */
	bool spoof;	 /* answer each with a wrong id (and 203.0.113.9) first */
	int raw_status;	 /* of the last raw callback */
	uint16_t raw_id; /* the id of the last raw answer */
	uint32_t raw_ip; /* its first A record */
};

static void
on_query(evutil_socket_t fd, short what, void *arg)
{
	struct fake *f = arg;
	uint8_t buf[512], out[512];
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	struct dns_query q;
	struct dns_rr rr;
	bool id_ok;
	ssize_t n;
	int len, nrr = 0;

	(void)what;
	n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
	if (n <= 0 || dns_parse_query(buf, (size_t)n, &q, &id_ok))
		return;
	if (f->nports < 64)
		f->ports[f->nports++] = ntohs(from.sin_port);
	if (f->drop > 0) {
		f->drop--;
		return;
	}
	if (f->spoof && q.qtype == DNS_T_A) {
		struct dns_query sq = q;

		memset(&rr, 0, sizeof(rr));
		rr.section = DNS_S_ANSWER;
		snprintf(rr.name, sizeof(rr.name), "%s", q.name);
		rr.type = DNS_T_A;
		rr.rclass = 1;
		rr.ttl = 300;
		rr.rdlen = 4;
		memcpy(rr.rdata, "\xcb\x00\x71\x09", 4); /* 203.0.113.9 */
		sq.id ^= 0x5a5a;
		len = dns_build_response(&sq, 0, &rr, 1, 512, out, sizeof(out));
		if (len > 0)
			sendto(fd, out, (size_t)len, 0, (struct sockaddr *)&from, flen);
	}
	if (q.qtype == DNS_T_A) {
		f->queries_a++;
		memset(&rr, 0, sizeof(rr));
		rr.section = DNS_S_ANSWER;
		snprintf(rr.name, sizeof(rr.name), "%s", q.name);
		rr.type = DNS_T_A;
		rr.rclass = 1;
		rr.ttl = f->ttl;
		rr.rdlen = 4;
		rr.rdata[0] = 198;
		rr.rdata[1] = 51;
		rr.rdata[2] = 100;
		rr.rdata[3] = (uint8_t)f->queries_a; /* a new address per answer */
		nrr = 1;
	}
	len = dns_build_response(&q, 0, &rr, nrr, 512, out, sizeof(out));
	if (len > 0)
		sendto(fd, out, (size_t)len, 0, (struct sockaddr *)&from, flen);
}

static void
on_answer(int status, const struct sockaddr_storage *addrs, int naddrs, void *arg)
{
	struct fake *f = arg;

	f->answers++;
	f->last_status = status;
	f->last_naddrs = naddrs;
	f->last_ip = naddrs ? ntohl(((const struct sockaddr_in *)&addrs[0])->sin_addr.s_addr) : 0;
}

static int
setup(void **state)
{
	static struct fake f;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	char servers[64], err[128];

	memset(&f, 0, sizeof(f));
	f.ttl = 300;
	f.base = event_base_new();
	assert_non_null(f.base);
	f.fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	assert_true(f.fd >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(f.fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(f.fd, (struct sockaddr *)&sin, &len), 0);
	f.ev = event_new(f.base, f.fd, EV_READ | EV_PERSIST, on_query, &f);
	event_add(f.ev, NULL);
	snprintf(servers, sizeof(servers), "127.0.0.1:%u", ntohs(sin.sin_port));
	f.res = resolver_new(f.base, servers, err, sizeof(err));
	assert_non_null(f.res);
	*state = &f;
	return 0;
}

static int
teardown(void **state)
{
	struct fake *f = *state;

	resolver_free(f->res);
	event_free(f->ev);
	close(f->fd);
	event_base_free(f->base);
	return 0;
}

/* runs the loop until n answers have arrived (or 3 s passed) */
static void
wait_answers(struct fake *f, int n)
{
	for (int i = 0; i < 300 && f->answers < n; i++) {
		struct timeval tv = {0, 10000};

		event_base_loopexit(f->base, &tv);
		event_base_dispatch(f->base);
	}
	assert_int_equal(f->answers, n);
}

static void
test_answer_is_cached_for_its_ttl(void **state)
{
	struct fake *f = *state;
	struct sockaddr_storage got[RESOLVE_MAX_ADDRS];
	struct resolver_stats st;

	assert_int_equal(resolver_cached(f->res, "a.test", got), 0);
	assert_non_null(resolver_query(f->res, "a.test", on_answer, f));
	wait_answers(f, 1);
	assert_int_equal(f->last_status, 0);
	assert_int_equal(f->last_naddrs, 1);
	assert_int_equal(f->last_ip, 0xc6336401); /* 198.51.100.1 */
	assert_int_equal(f->queries_a, 1);
	/* the same name, in another spelling: from the cache, no query */
	assert_int_equal(resolver_cached(f->res, "A.Test.", got), 1);
	assert_int_equal(got[0].ss_family, AF_INET);
	assert_int_equal(ntohl(((struct sockaddr_in *)&got[0])->sin_addr.s_addr), 0xc6336401);
	assert_int_equal(resolver_cached(f->res, "b.test", got), 0);
	assert_int_equal(f->queries_a, 1);
	resolver_get_stats(f->res, &st);
	assert_int_equal(st.queries, 1);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.misses, 2);
	assert_int_equal(st.cached, 1);
}

static void
test_zero_ttl_is_not_cached(void **state)
{
	struct fake *f = *state;
	struct sockaddr_storage got[RESOLVE_MAX_ADDRS];

	f->ttl = 0;
	assert_non_null(resolver_query(f->res, "zero.test", on_answer, f));
	wait_answers(f, 1);
	assert_int_equal(f->last_status, 0);
	assert_int_equal(resolver_cached(f->res, "zero.test", got), 0);
	assert_non_null(resolver_query(f->res, "zero.test", on_answer, f));
	wait_answers(f, 2);
	assert_int_equal(f->queries_a, 2);
	assert_int_equal(f->last_ip, 0xc6336402); /* asked again: a new answer */
}

static void
test_concurrent_lookups_join(void **state)
{
	struct fake *f = *state;
	struct resolve_req *q[3];
	struct resolver_stats st;

	for (int i = 0; i < 3; i++) {
		q[i] = resolver_query(f->res, i == 1 ? "JOIN.test" : "join.test", on_answer, f);
		assert_non_null(q[i]);
	}
	resolver_cancel(q[2]); /* a cancelled request is not called back */
	wait_answers(f, 2);
	assert_int_equal(f->queries_a, 1);
	assert_int_equal(f->last_status, 0);
	assert_int_equal(f->last_ip, 0xc6336401);
	resolver_get_stats(f->res, &st);
	assert_int_equal(st.queries, 1);
	assert_int_equal(st.joined, 2);
	/* and nothing arrives later */
	{
		struct timeval tv = {0, 50000};

		event_base_loopexit(f->base, &tv);
		event_base_dispatch(f->base);
	}
	assert_int_equal(f->answers, 2);
}

static void
on_raw_answer(int status, const unsigned char *answer, int alen, void *arg)
{
	struct fake *f = arg;
	struct dns_msg *m = malloc(sizeof(*m));

	f->answers++;
	f->raw_status = status;
	f->raw_id = 0;
	f->raw_ip = 0;
	assert_non_null(m);
	if (!status && !dns_parse_response(answer, (size_t)alen, m)) {
		f->raw_id = m->id;
		for (int i = 0; i < m->nrr; i++)
			if (m->rr[i].type == DNS_T_A && m->rr[i].rdlen == 4) {
				f->raw_ip = (uint32_t)m->rr[i].rdata[0] << 24 |
					    (uint32_t)m->rr[i].rdata[1] << 16 |
					    (uint32_t)m->rr[i].rdata[2] << 8 | m->rr[i].rdata[3];
				break;
			}
	}
	free(m);
}

/* a raw query for name (A) with id, answered into f->raw_* */
static void
raw_ask(struct fake *f, const char *name, uint16_t id)
{
	struct dns_query q = {.id = id, .qtype = DNS_T_A, .qclass = 1};
	uint8_t buf[512];
	int len;

	snprintf(q.name, sizeof(q.name), "%s", name);
	len = dns_build_query(&q, buf, sizeof(buf));
	assert_true(len > 0);
	assert_non_null(resolver_send(f->res, buf, (size_t)len, on_raw_answer, f));
}

static int
distinct_ports(const struct fake *f)
{
	int n = 0;

	for (int i = 0; i < f->nports; i++) {
		bool seen = false;

		for (int j = 0; j < i; j++)
			seen |= f->ports[j] == f->ports[i];
		n += !seen;
	}
	return n;
}

static void
test_raw_socket_kept_then_replaced(void **state)
{
	struct fake *f = *state;
	char name[64];

	/* one socket for CSOCK_REUSE queries, then a new one (a new port) */
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "r%d.test", i);
		raw_ask(f, name, (uint16_t)(1000 + i));
		wait_answers(f, i + 1);
		assert_int_equal(f->raw_status, 0);
		assert_int_equal(f->raw_id, 1000 + i);	    /* the caller's id, whatever went out */
		assert_int_equal(f->raw_ip >> 8, 0xc63364); /* 198.51.100.x */
	}
	assert_int_equal(f->nports, 40);
	assert_int_equal(distinct_ports(f), 2);
	for (int i = 1; i < 32; i++)
		assert_int_equal(f->ports[i], f->ports[0]);
	assert_int_not_equal(f->ports[32], f->ports[0]);
}

static void
test_raw_idle_socket_closed(void **state)
{
	struct fake *f = *state;
	struct timeval tv = {1, 300000};

	/* a socket idle for a second is closed: the next query, a new port */
	raw_ask(f, "idle1.test", 1);
	wait_answers(f, 1);
	raw_ask(f, "idle2.test", 2);
	wait_answers(f, 2);
	event_base_loopexit(f->base, &tv);
	event_base_dispatch(f->base);
	raw_ask(f, "idle3.test", 3);
	wait_answers(f, 3);
	assert_int_equal(f->raw_status, 0);
	assert_int_equal(f->nports, 3);
	assert_int_equal(f->ports[1], f->ports[0]);
	assert_int_not_equal(f->ports[2], f->ports[0]);
}

static void
test_raw_foreign_answer_ignored(void **state)
{
	struct fake *f = *state;

	/* an answer with another id (spoofed) comes first: not taken */
	f->spoof = true;
	raw_ask(f, "spoof.test", 7);
	wait_answers(f, 1);
	assert_int_equal(f->raw_status, 0);
	assert_int_equal(f->raw_id, 7);
	assert_int_equal(f->raw_ip, 0xc6336401);
	assert_int_equal(f->nports, 1);
}

static void
test_raw_lost_query_asked_again(void **state)
{
	struct fake *f = *state;

	/* csock's query is lost: after its 500 ms c-ares asks (its own socket) */
	f->drop = 1;
	raw_ask(f, "lost.test", 9);
	wait_answers(f, 1);
	assert_int_equal(f->raw_status, 0);
	assert_int_equal(f->raw_id, 9);
	assert_int_equal(f->nports, 2);
	assert_int_equal(distinct_ports(f), 2);
}

static void
test_overlong_name_is_not_cached(void **state)
{
	struct fake *f = *state;
	struct sockaddr_storage got[RESOLVE_MAX_ADDRS];
	char longname[300];

	/* a name longer than any DNS name is neither joined nor cached */
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(resolver_cached(f->res, longname, got), 0);
	assert_non_null(resolver_query(f->res, longname, on_answer, f));
	wait_answers(f, 1);
	assert_int_not_equal(f->last_status, 0);
	assert_int_equal(resolver_cached(f->res, longname, got), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_answer_is_cached_for_its_ttl, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_ttl_is_not_cached, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_lookups_join, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlong_name_is_not_cached, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_socket_kept_then_replaced, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_raw_idle_socket_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_foreign_answer_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_lost_query_asked_again, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
