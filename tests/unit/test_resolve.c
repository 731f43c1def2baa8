// SPDX-License-Identifier: Apache-2.0
/* dns/resolver.c: the address cache and the joining of lookups, against a fake
 * DNS server on 127.0.0.1 that counts the queries it gets and answers A
 * queries with one address and a chosen TTL (AAAA: no records). */
#include <setjmp.h>
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
