// SPDX-License-Identifier: Apache-2.0
/* Containers in a daemon target (daemon/containers.c): the container id a
 * cgroup path carries, for each runtime's layout, and what is no id; the
 * address of --containers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "table.h"
#include "daemon/containers.h"

#define ID  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID2 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

struct id_case {
	const char *name;
	const char *path;
	const char *id; /* NULL: none */
};

static const struct id_case id_cases[] = {
	{"docker-systemd", "/egr.slice/docker-" ID ".scope", ID},
	{"docker-cgroupfs", "/egr/" ID, ID},
	{"podman-systemd", "/machine.slice/libpod-" ID ".scope", ID},
	{"podman-cgroupfs", "/egr/libpod-" ID, ID},
	{"podman-nested", "/egr/libpod-" ID ".scope/container", ID},
	{"podman-split", "/egr/job/libpod-payload-" ID, ID},
	{"podman-split-runtime", "/egr/job/runtime", NULL},
	{"crio", "/kubepods.slice/crio-" ID ".scope", ID},
	{"containerd-cri", "/k.slice/cri-containerd-" ID ".scope", ID},
	{"upper-case",
	 "/egr/docker-0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", ID},
	{"nearest-the-leaf", "/egr/" ID2 "/" ID, ID},
	{"conmon-is-none", "/egr/libpod-conmon-" ID, NULL},
	{"conmon-then-parent", "/" ID2 "/libpod-conmon-" ID, ID2},
	{"short", "/egr/docker-0123456789ab.scope", NULL},
	{"too-long", "/egr/" ID "0", NULL},
	{"not-hex", "/egr/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg",
	 NULL},
	{"plain-job", "/egr/job-7", NULL},
	{"root", "/", NULL},
	{"empty", "", NULL},
	{"only-prefix", "/egr/docker-.scope", NULL},
	{"slashes", "//" ID "//", ID},
};

static void
run_id(void **state)
{
	const struct id_case *c = *state;
	char id[65] = "x";
	bool got = ctr_id_of_path(c->path, id, sizeof(id));

	if (!c->id) {
		assert_false(got);
		assert_string_equal(id, "");
		return;
	}
	assert_true(got);
	assert_string_equal(id, c->id);
}

struct addr_case {
	const char *name;
	const char *text;
	const char *ip; /* NULL: refused */
};

static const struct addr_case addr_cases[] = {
	{"docker0", "172.17.0.1", "172.17.0.1"},
	{"podman", "10.88.0.1", "10.88.0.1"},
	{"unspecified", "0.0.0.0", NULL},
	{"loopback", "127.0.0.1", NULL},
	{"loopback-net", "127.3.2.1", NULL},
	{"multicast", "224.0.0.1", NULL},
	{"broadcast", "255.255.255.255", NULL},
	{"ipv6", "fd00::1", NULL},
	{"name", "gateway", NULL},
	{"trailing", "10.88.0.1 ", NULL},
};

static void
run_addr(void **state)
{
	const struct addr_case *c = *state;
	char err[200] = "";
	uint32_t ip = 0;
	int rc = ctr_parse_addr(c->text, &ip, err, sizeof(err));
	struct in_addr want;

	if (!c->ip) {
		assert_int_not_equal(rc, 0);
		assert_true(err[0]);
		return;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(inet_pton(AF_INET, c->ip, &want), 1);
	assert_int_equal(ip, want.s_addr);
}

/* A buffer too small for an id gets none, and no overflow. */
static void
test_small_buffer(void **state)
{
	char id[10] = "x";

	(void)state;
	assert_false(ctr_id_of_path("/egr/" ID, id, sizeof(id)));
	assert_string_equal(id, "");
}

int
main(void)
{
	const struct CMUnitTest misc[] = {cmocka_unit_test(test_small_buffer)};
	int failed = RUN_TABLE("ctr_id_of_path", id_cases, run_id);

	failed += RUN_TABLE("ctr_parse_addr", addr_cases, run_addr);
	failed += cmocka_run_group_tests_name("containers_misc", misc, NULL, NULL);
	return failed ? 1 : 0;
}
