// SPDX-License-Identifier: Apache-2.0
/* Unit tests for events.c: kernel events in words. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "kernel/events.h"

static struct egr_event
ev4(const char *ip, unsigned int port)
{
	struct egr_event e;

	memset(&e, 0, sizeof(e));
	e.addr[2] = htonl(0xffff);
	inet_pton(AF_INET, ip, &e.addr[3]);
	e.port = htons((uint16_t)port);
	e.family = AF_INET;
	e.tgid = 1234;
	e.verdict = EGR_V_DENY;
	memcpy(e.comm, "curl", 4);
	return e;
}

static void
test_ipv4_deny(void **state)
{
	struct egr_event e = ev4("198.51.100.7", 80);
	char buf[256];

	(void)state;
	e.reason = EGR_R_UDP;
	events_format(&e, buf, sizeof(buf));
	assert_string_equal(buf,
			    "denied curl[1234] \u2192 198.51.100.7:80 (udp other than dns denied)");
}

static void
test_ipv6_deny(void **state)
{
	struct egr_event e = ev4("0.0.0.0", 443);
	char buf[256];

	(void)state;
	inet_pton(AF_INET6, "2001:db8::1", e.addr);
	e.family = AF_INET6;
	e.reason = EGR_R_IPV6;
	events_format(&e, buf, sizeof(buf));
	assert_string_equal(buf, "denied curl[1234] \u2192 [2001:db8::1]:443 (ipv6 denied)");
}

static void
test_redirect(void **state)
{
	struct egr_event e = ev4("203.0.113.10", 443);
	char buf[256];

	(void)state;
	e.verdict = EGR_V_REDIRECT;
	e.reason = EGR_R_TRANSPARENT;
	events_format(&e, buf, sizeof(buf));
	assert_string_equal(
		buf, "redirected curl[1234] \u2192 203.0.113.10:443 (to the transparent proxy)");
}

static void
test_would_deny(void **state)
{
	struct egr_event e = ev4("0.0.0.0", 443);
	char buf[256];

	(void)state;
	inet_pton(AF_INET6, "2001:db8::1", e.addr);
	e.family = AF_INET6;
	e.verdict = EGR_V_WOULD_DENY;
	e.reason = EGR_R_IPV6;
	events_format(&e, buf, sizeof(buf));
	assert_string_equal(buf, "would deny curl[1234] \u2192 [2001:db8::1]:443 (ipv6 denied)");
}

static void
test_sock_create(void **state)
{
	struct egr_event e = ev4("0.0.0.0", 0);
	char buf[256];

	(void)state;
	e.hook = EGR_H_SOCK_CREATE;
	e.reason = EGR_R_RAW;
	e.type = 3;
	e.protocol = 1;
	events_format(&e, buf, sizeof(buf));
	assert_string_equal(buf, "denied curl[1234] raw IPv4 socket (type 3, protocol 1) "
				 "(raw sockets denied)");
}

static void
test_abstract_unix(void **state)
{
	struct egr_event e = ev4("0.0.0.0", 0);
	char buf[256];

	(void)state;
	memset(e.addr, 0, sizeof(e.addr));
	memcpy(e.addr, "egr\x01test", 8);
	e.port = htons(8);
	e.family = AF_UNIX;
	e.reason = EGR_R_ABSTRACT_UNIX;
	events_format(&e, buf, sizeof(buf));
	assert_string_equal(buf, "denied curl[1234] \u2192 @egr?test (abstract unix) "
				 "(abstract unix sockets denied)");
	/* a long name is cut at 16 bytes and says so */
	memcpy(e.addr, "0123456789abcdef", 16);
	e.port = htons(40);
	events_format(&e, buf, sizeof(buf));
	assert_non_null(strstr(buf, "@0123456789abcdef... (abstract unix)"));
}

static void
test_hostile_comm(void **state)
{
	struct egr_event e = ev4("192.0.2.1", 1);
	char buf[256];

	(void)state;
	memcpy(e.comm,
	       "a\nb\x1b[31m\xff\xfe"
	       "1234567",
	       16); /* no NUL: all 16 bytes */
	e.reason = EGR_R_LOOPBACK;
	events_format(&e, buf, sizeof(buf));
	assert_null(strchr(buf, '\n'));
	assert_null(strchr(buf, '\x1b'));
	assert_non_null(strstr(buf, "a?b?[31m??123456[1234]"));
}

static void
test_skb_unknown_task(void **state)
{
	struct egr_event e = ev4("198.18.0.1", 9);
	char buf[256];

	(void)state;
	e.tgid = 0;
	memset(e.comm, 0, sizeof(e.comm));
	e.cgroup_id = 77;
	e.reason = EGR_R_SKB_DROP;
	e.hook = EGR_H_SKB;
	events_format(&e, buf, sizeof(buf));
	assert_string_equal(buf, "denied a socket of cgroup 77 \u2192 198.18.0.1:9 "
				 "(dropped by the catch-all)");
}

static void
test_reasons_named(void **state)
{
	(void)state;
	for (unsigned int r = 0; r < EGR_R_MAX; r++)
		assert_string_not_equal(events_reason(r), "?");
	assert_string_equal(events_reason(EGR_R_MAX), "?");
	assert_string_equal(events_reason(1000), "?");
}

/* a loopback allow (the sandbox's own server) reaches the decision log as
 * "allow", every other verdict keeps its word */
static void
test_decision_words(void **state)
{
	struct egr_event e = ev4("127.0.0.1", 6001);
	char buf[256];

	(void)state;
	e.verdict = EGR_V_ALLOW;
	e.reason = EGR_R_LOCAL;
	assert_string_equal(events_decision(&e), "allow");
	events_format(&e, buf, sizeof(buf));
	assert_non_null(strstr(buf, "allowed "));
	assert_non_null(strstr(buf, "127.0.0.1:6001 (loopback socket of this sandbox)"));
	e.verdict = EGR_V_DENY;
	assert_string_equal(events_decision(&e), "deny");
	e.verdict = EGR_V_WOULD_DENY;
	assert_string_equal(events_decision(&e), "would-deny");
	e.verdict = EGR_V_REDIRECT;
	assert_string_equal(events_decision(&e), "redirect");
}

static void
test_truncation(void **state)
{
	struct egr_event e = ev4("198.51.100.7", 80);
	char buf[8];
	int n;

	(void)state;
	e.reason = EGR_R_UDP;
	n = events_format(&e, buf, sizeof(buf));
	assert_true(n > (int)sizeof(buf));
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_deny),     cmocka_unit_test(test_ipv6_deny),
		cmocka_unit_test(test_redirect),      cmocka_unit_test(test_would_deny),
		cmocka_unit_test(test_sock_create),   cmocka_unit_test(test_abstract_unix),
		cmocka_unit_test(test_hostile_comm),  cmocka_unit_test(test_skb_unknown_task),
		cmocka_unit_test(test_reasons_named), cmocka_unit_test(test_decision_words),
		cmocka_unit_test(test_truncation),
	};

	return cmocka_run_group_tests_name("events", tests, NULL, NULL);
}
