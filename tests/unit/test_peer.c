// SPDX-License-Identifier: Apache-2.0
/* Unit tests for peer.c: CapEff read from /proc/PID/status text, who may
 * command egressctl (each reason for a refusal, the administrator who may),
 * and, as root, this process identified at the other end of a socketpair. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "kernel/cgroup.h"
#include "kernel/peer.h"

static void
test_status(void **state)
{
	uint64_t cap = 0;

	(void)state;
	assert_int_equal(peer_parse_status("Name:\tx\nCapInh:\t0000000000000000\n"
					   "CapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n"
					   "CapBnd:\t0\n",
					   &cap),
			 0);
	assert_true(cap == 0x1ffffffffffULL);
	assert_int_equal(peer_parse_status("CapEff:\t0000000000000000\n", &cap), 0);
	assert_true(cap == 0);
	/* a command name is escaped by the kernel; a line must start with it */
	assert_int_equal(peer_parse_status("Name:\tx CapEff:\tffff\n", &cap), -EINVAL);
	assert_int_equal(peer_parse_status("Name:\tx\nCapEff:\tzz\n", &cap), -EINVAL);
	assert_int_equal(peer_parse_status("Name:\tx\nCapEff:\t12 3\n", &cap), -EINVAL);
	assert_int_equal(peer_parse_status("", &cap), -EINVAL);
}

static void
test_refusal(void **state)
{
	struct peer admin = {.pid = 7, .uid = 0, .same_userns = true, .cap_eff = 1ULL << 21};
	struct peer p;
	char why[256];

	(void)state;
	assert_int_equal(peer_refusal(&admin, why, sizeof(why)), 0);
	p = admin;
	p.confined = true; /* any uid, any capabilities */
	assert_int_equal(peer_refusal(&p, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "egressctl confines its cgroup"));
	p = admin;
	p.uid = 1000;
	assert_int_equal(peer_refusal(&p, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "uid 1000"));
	p = admin;
	p.same_userns = false;
	assert_int_equal(peer_refusal(&p, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "another user namespace"));
	p = admin;
	p.cap_eff = ~(1ULL << 21); /* every capability but the one */
	assert_int_equal(peer_refusal(&p, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "lacks CAP_SYS_ADMIN"));
}

/* Root: the other end of a socketpair is this process, not confined. */
static void
test_identify_self(void **state)
{
	char mnt[PATH_MAX], why[256], text[4096], self[PATH_MAX];
	FILE *f;
	size_t n;
	struct peer p;
	int sv[2];

	(void)state;
	if (geteuid() != 0 || cgroup_find_mount(mnt, sizeof(mnt))) {
		skip();
		return;
	}
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(peer_identify(sv[0], mnt, &p, why, sizeof(why)), 0);
	assert_int_equal(p.pid, getpid());
	assert_int_equal(p.uid, 0);
	assert_true(p.same_userns);
	assert_string_equal(p.comm, "test_peer");
	assert_false(p.confined);
	f = fopen("/proc/self/cgroup", "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	assert_int_equal(cgroup_of_pid_in(text, self, sizeof(self)), 0);
	assert_string_equal(p.cgroup, self);
	close(sv[0]);
	close(sv[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_refusal),
		cmocka_unit_test(test_identify_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
