// SPDX-License-Identifier: Apache-2.0
/* Unit tests for where the decision log goes (audit/audit.c, logsink.c):
 * every line carries schema, run_id and hostname, and the CI job when the
 * environment names one; --log fd:N takes a writable descriptor only; a
 * syslog record is one RFC 5424 datagram; OTLP URLs that cannot be spoken
 * are refused at open. No root, no network: a unix socket in /tmp. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <event2/event.h>
#include <cmocka.h>

#include "audit/audit.h"
#include "audit/logsink.h"

static const struct audit_rec deny = {
	.decision = "deny",
	.reason = "no rule allows it",
	.source = "http",
	.host = "blocked.test",
	.port = 80,
	.pid = 42,
	.comm = "curl",
	.cgroup = 7,
};

static void
test_identity(void **state)
{
	char line[2048], want[128];
	const struct audit_identity *id;

	(void)state;
	/* read once, before the first line: set the job first */
	setenv("GITHUB_ACTIONS", "true", 1);
	setenv("GITHUB_RUN_ID", "99", 1);
	setenv("GITHUB_JOB", "a\"b", 1);
	id = audit_identity();
	assert_int_equal(strlen(id->run_id), 32);
	assert_string_equal(id->ci_system, "github");
	audit_format(&deny, 1000, line, sizeof(line));
	snprintf(want, sizeof(want), ",\"schema\":2,\"run_id\":\"%s\",", id->run_id);
	assert_non_null(strstr(line, want));
	assert_non_null(strstr(
		line, "\"ci\":{\"system\":\"github\",\"run_id\":\"99\",\"job\":\"a\\\"b\"}"));
	{
		static const char head[] = "{\"time\":\"1970-01-01T00:00:01.000Z\",\"schema\":2,";

		assert_true(!strncmp(line, head, sizeof(head) - 1));
	}
	/* the same for the process's life */
	assert_ptr_equal(audit_identity(), id);
}

/* Strings in a line: UTF-8 kept as it is (2, 3 and 4 bytes), C0, DEL and
 * C1 (U+0085 as UTF-8) as \\u escapes of their code points, and bytes that
 * are no UTF-8 (a stray continuation, an overlong form, a surrogate, a
 * sequence cut short) as \\u00XX of each byte */
static void
test_utf8(void **state)
{
	struct audit_rec r = deny;
	char line[2048];

	(void)state;
	r.comm = "caf\xc3\xa9";
	r.reason = "na\xc3\xafve \xe2\x82\xac \xf0\x9f\x9a\x80 \x1b[1m \x7f \xc2\x85 end";
	audit_format(&r, 1000, line, sizeof(line));
	assert_non_null(strstr(line, "\"comm\":\"caf\xc3\xa9\""));
	assert_non_null(strstr(line, "\"reason\":\"na\xc3\xafve \xe2\x82\xac \xf0\x9f\x9a\x80 "
				     "\\u001b[1m \\u007f \\u0085 end\""));
	r.reason = "a\x80"
		   "b \xc0\xaf \xed\xa0\x80 \xe2\x82";
	audit_format(&r, 1000, line, sizeof(line));
	assert_non_null(strstr(line, "\"reason\":\"a\\u0080b \\u00c0\\u00af "
				     "\\u00ed\\u00a0\\u0080 \\u00e2\\u0082\""));
}

/* An inspected request's line: its method, path (escaped) and
 * "inspected": true; a line without them has neither key. */
static void
test_inspected(void **state)
{
	struct audit_rec r = deny;
	char line[2048];

	(void)state;
	r.method = "GET";
	r.path = "/a\"b";
	r.inspected = true;
	audit_format(&r, 1000, line, sizeof(line));
	assert_non_null(
		strstr(line, ",\"method\":\"GET\",\"path\":\"/a\\\"b\",\"inspected\":true,"));
	audit_format(&deny, 1000, line, sizeof(line));
	assert_null(strstr(line, "\"path\""));
	assert_null(strstr(line, "\"inspected\""));
}

static void
test_fd(void **state)
{
	struct event_base *base = event_base_new();
	char err[256], spec[32];
	struct audit *a;
	int ro = open("/dev/null", O_RDONLY);

	(void)state;
	snprintf(spec, sizeof(spec), "fd:%d", ro);
	assert_null(audit_open(base, spec, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "is not open for writing"));
	assert_null(audit_open(base, "fd:x", NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "expected fd:N"));
	assert_null(audit_open(base, "fd:999", NULL, err, sizeof(err)));
	close(ro);
	a = audit_open(base, "fd:2", NULL, err, sizeof(err));
	assert_non_null(a);
	audit_close(a);
	event_base_free(base);
}

static void
test_syslog(void **state)
{
	struct event_base *base = event_base_new();
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	char err[256], spec[128], got[4096];
	struct audit *a;
	struct audit_stats st;
	ssize_t n;
	int s = socket(AF_UNIX, SOCK_DGRAM, 0);

	(void)state;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/tmp/egr-test-syslog-%d", (int)getpid());
	unlink(sun.sun_path);
	assert_int_equal(bind(s, (struct sockaddr *)&sun, sizeof(sun)), 0);
	snprintf(spec, sizeof(spec), "syslog:%s", sun.sun_path);
	a = audit_open(base, spec, NULL, err, sizeof(err));
	assert_non_null(a);
	audit_write(a, &deny);
	n = recv(s, got, sizeof(got) - 1, MSG_DONTWAIT);
	assert_true(n > 0);
	got[n] = 0;
	/* facility daemon (3), severity warning (4): <28> */
	{
		char want[64];

		snprintf(want, sizeof(want), "<28>egressctl[%d]: {\"time\":", (int)getpid());
		assert_true(!strncmp(got, want, strlen(want)));
	}
	assert_non_null(strstr(got, "\"host\":\"blocked.test\""));
	audit_finish(a);
	audit_get_stats(a, &st);
	assert_non_null(st.sink);
	assert_int_equal(st.sink_sent, 1);
	audit_close(a);
	close(s);
	unlink(sun.sun_path);
	/* nobody there: refused at open */
	assert_null(audit_open(base, spec, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "cannot reach the syslog socket"));
	event_base_free(base);
}

static void
test_otlp_urls(void **state)
{
	static const char *const bad[] = {
		"otlp:https://",
		"otlp:http://",
		"otlp:http://127.0.0.1:0",
		"otlp:http://127.0.0.1:70000",
		"otlp:http://127.0.0.1:12x",
		"otlp:ftp://x",
		"otlp:http://[::1",
		"otlp:http://127.0.0.1?x",
	};
	struct event_base *base = event_base_new();
	char err[256];
	struct audit *a;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = audit_open(base, bad[i], NULL, err, sizeof(err));
		if (a)
			fail_msg("%s was taken", bad[i]);
		assert_non_null(strstr(err, "--log otlp:"));
	}
	a = audit_open(base, "otlp:http://127.0.0.1:9", NULL, err, sizeof(err));
	assert_non_null(a); /* nothing is sent before the first record */
	audit_close(a);
	a = audit_open(base, "otlp:http://[::1]:9/x", NULL, err, sizeof(err));
	assert_non_null(a);
	audit_close(a);
	a = audit_open(base, "otlp:https://127.0.0.1:9", NULL, err, sizeof(err));
	assert_non_null(a);
	audit_close(a);
	{
		/* headers: a bad one is refused by its name, its value never said */
		const char *good[] = {"authorization: Bearer tok-1", "x-team:egress"};
		const char *badname[] = {"bad header: tok-2"};
		const char *ctrl[] = {"authorization: tok-3\x01"};
		struct logsink_opts lo = {.headers = good, .nheaders = 2};

		a = audit_open(base, "otlp:http://127.0.0.1:9", &lo, err, sizeof(err));
		assert_non_null(a);
		audit_close(a);
		lo = (struct logsink_opts){.headers = badname, .nheaders = 1};
		assert_null(audit_open(base, "otlp:http://127.0.0.1:9", &lo, err, sizeof(err)));
		assert_non_null(strstr(err, "a header name is a token"));
		assert_null(strstr(err, "tok-2"));
		lo = (struct logsink_opts){.headers = ctrl, .nheaders = 1};
		assert_null(audit_open(base, "otlp:http://127.0.0.1:9", &lo, err, sizeof(err)));
		assert_non_null(strstr(err, "header authorization: no control characters"));
		assert_null(strstr(err, "tok-3"));
		/* the OTEL variable: k=v pairs, values percent-encoded */
		setenv("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x-a=1%2C2,=nokey", 1);
		assert_null(audit_open(base, "otlp:http://127.0.0.1:9", NULL, err, sizeof(err)));
		assert_non_null(
			strstr(err, "OTEL_EXPORTER_OTLP_LOGS_HEADERS: expected NAME=VALUE"));
		unsetenv("OTEL_EXPORTER_OTLP_LOGS_HEADERS");
		/* a CA for a plain-http collector is a mistake said out loud */
		lo = (struct logsink_opts){.ca_file = "/etc/ssl/certs/ca-certificates.crt"};
		assert_null(audit_open(base, "otlp:http://127.0.0.1:9", &lo, err, sizeof(err)));
		assert_non_null(strstr(err, "--log-ca"));
	}
	assert_true(logsink_is_spec("syslog") && logsink_is_spec("otlp:x"));
	assert_false(logsink_is_spec("syslogx") || logsink_is_spec("/var/log/x"));
	event_base_free(base);
}

/* A collector that never answers: the queue holds LOGSINK_QUEUE records
 * (the batch under way among them), the rest are dropped at once and
 * counted; at the end what waits is tried once more and counted lost. The
 * loop never runs here, so nothing is ever acknowledged. */
static void
test_otlp_queue_bounded(void **state)
{
	struct event_base *base = event_base_new();
	struct audit_stats st;
	char err[256];
	struct audit *a;
	int n = LOGSINK_QUEUE + 904;

	(void)state;
	a = audit_open(base, "otlp:http://127.0.0.1:9/v1/logs", NULL, err, sizeof(err));
	assert_non_null(a);
	for (int i = 0; i < n; i++)
		audit_write(a, &deny);
	audit_get_stats(a, &st);
	assert_int_equal(st.sink_dropped, 904);
	assert_int_equal(st.sink_sent, 0);
	audit_finish(a); /* port 9: refused, so the last try fails at once */
	audit_get_stats(a, &st);
	assert_int_equal(st.sink_lost, LOGSINK_QUEUE);
	assert_int_equal(st.sink_dropped + st.sink_lost + st.sink_sent, (uint64_t)n);
	assert_string_equal(st.sink_err, "no answer");
	audit_close(a);
	event_base_free(base);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_inspected),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_fd),
		cmocka_unit_test(test_syslog),
		cmocka_unit_test(test_otlp_urls),
		cmocka_unit_test(test_otlp_queue_bounded),
	};

	return cmocka_run_group_tests_name("logsink", tests, NULL, NULL) ? 1 : 0;
}
