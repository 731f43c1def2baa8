// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/proxy/quota.c: the descriptor arithmetic (table), the
 * sizing of --max-conns and --max-conns-per-process by it, the per-process
 * counts (one process at its limit, others served; a fork storm held by the
 * total; hash collisions; counts freed at zero), and raising the soft
 * descriptor limit. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/resource.h>
#include <cmocka.h>
#include "table.h"

#include "proxy/quota.h"

/* ---- quota_fit ---------------------------------------------------------- */

struct fit_case {
	const char *name;
	long nofile, open_now, reserve;
	long want, refusing, pipes;
};

static const struct fit_case fit_cases[] = {
	/* (1024 - 61 - 288) = 675 free: 21 to refuse with, 16 pipes (32
	 * descriptors), (675 - 21 - 32) / 2 */
	{"ulimit-1024", 1024, 61, 288, 311, 21, 16},
	{"ulimit-4096", 4096, 61, 288, 1748, 64, 93},
	/* idle tunnels cost their two sockets: a 20,000 limit holds 9,000 */
	{"ulimit-20000-holds-9000", 20000, 61, 288, 9302, 64, 491},
	{"no-dns-reserve", 1024, 61, 32, 428, 29, 23},
	{"small", 400, 61, 288, 21, 1, 4},
	{"one-fits", 360, 61, 288, 1, 1, 4},
	{"none-fits", 359, 61, 288, 0, 1, 4},
	{"below-reserve", 256, 61, 288, 0, 1, 4},
	{"nr-open-pipes-capped", 1048576, 61, 288, 523057, 64, 1024},
};

static void
run_fit(void **state)
{
	const struct fit_case *c = *state;
	long refusing = -1, pipes = -1;

	assert_int_equal(quota_fit(c->nofile, c->open_now, c->reserve, &refusing, &pipes), c->want);
	assert_int_equal(refusing, c->refusing);
	assert_int_equal(pipes, c->pipes);
	if (c->want > 0) /* what it promises fits in what there is */
		assert_true(c->want * QUOTA_FDS_PER_CONN + refusing + 2 * pipes + c->open_now +
				    c->reserve <=
			    c->nofile);
}

/* ---- quota_size ---------------------------------------------------------- */

struct size_case {
	const char *name;
	int max_conns, per_process; /* as given: 0 for the default */
	long nofile;
	int want_rc;
	bool lowered;
	int max, per, refusing;
	const char *err; /* a part of errbuf */
};

static const struct size_case size_cases[] = {
	{"default-fits", 0, 0, 65536, 0, false, 4096, 1024, 64, NULL},
	{"default-lowered", 0, 0, 1024, 0, true, 311, 77, 21, NULL},
	{"default-lowered-small", 0, 0, 400, 0, true, 21, 21, 1, NULL},
	{"explicit-fits", 50, 0, 1024, 0, false, 50, 50, 21, NULL},
	{"explicit-exact", 311, 0, 1024, 0, false, 311, 77, 21, NULL},
	{"explicit-too-many", 312, 0, 1024, -1, false, 0, 0, 0,
	 "--max-conns 312 needs 1026 file descriptors (2 per connection and 32 for relay "
	 "pipes) and the limit is 1024 with 61 open: at most 311 connections fit"},
	{"explicit-per-process", 0, 5, 65536, 0, false, 4096, 5, 64, NULL},
	{"per-process-over-total", 0, 500, 1024, 0, true, 311, 311, 21, NULL},
	{"no-room", 0, 0, 300, -1, false, 0, 0, 0, "leaves no room for proxy connections"},
};

static void
run_size(void **state)
{
	const struct size_case *c = *state;
	struct quota q;
	char err[400] = "";
	bool lowered = !c->lowered;

	quota_init(&q, c->max_conns, c->per_process);
	assert_int_equal(quota_size(&q, c->nofile, 61, 288, &lowered, err, sizeof(err)),
			 c->want_rc);
	if (c->want_rc) {
		assert_non_null(strstr(err, c->err));
		quota_free(&q);
		return;
	}
	assert_int_equal(lowered, c->lowered);
	assert_int_equal(q.max_conns, c->max);
	assert_int_equal(q.max_per_process, c->per);
	assert_int_equal(q.max_refusing, c->refusing);
	quota_free(&q);
}

static void
test_per_process_default(void **state)
{
	(void)state;
	assert_int_equal(quota_per_process_default(4096), 1024);
	assert_int_equal(quota_per_process_default(1000000), 250000);
	assert_int_equal(quota_per_process_default(300), 75);
	assert_int_equal(quota_per_process_default(111), 64);
	assert_int_equal(quota_per_process_default(64), 64);
	assert_int_equal(quota_per_process_default(2), 2);
	assert_int_equal(quota_per_process_default(1), 1);
}

static void
test_init_defaults(void **state)
{
	struct quota q;

	(void)state;
	quota_init(&q, 0, 0);
	assert_int_equal(q.max_conns, QUOTA_DEF_MAX_CONNS);
	assert_int_equal(q.max_per_process, QUOTA_DEF_MAX_CONNS / 4);
	assert_false(q.max_explicit);
	quota_init(&q, 2, 0);
	assert_int_equal(q.max_per_process, 2); /* a small limit is not split */
	assert_true(q.max_explicit);
	assert_false(q.per_explicit);
}

/* ---- counting ---------------------------------------------------------- */

static void
test_one_process_at_its_limit(void **state)
{
	struct quota q;

	(void)state;
	quota_init(&q, 10, 2);
	assert_int_equal(quota_check(&q, 100), QUOTA_NONE);
	assert_int_equal(quota_add(&q, 100), 0);
	assert_int_equal(quota_check(&q, 100), QUOTA_NONE);
	assert_int_equal(quota_add(&q, 100), 0);
	assert_int_equal(quota_check(&q, 100), QUOTA_PROCESS);
	assert_int_equal(quota_check(&q, 100), QUOTA_PROCESS);
	assert_int_equal(q.hit_process, 2);
	/* another process still gets in */
	assert_int_equal(quota_check(&q, 200), QUOTA_NONE);
	assert_int_equal(quota_add(&q, 200), 0);
	assert_int_equal(quota_of(&q, 100), 2);
	assert_int_equal(quota_of(&q, 200), 1);
	assert_int_equal(q.nconns, 3);
	/* one closes: room again */
	quota_del(&q, 100);
	assert_int_equal(quota_of(&q, 100), 1);
	assert_int_equal(quota_check(&q, 100), QUOTA_NONE);
	quota_del(&q, 100);
	quota_del(&q, 200);
	assert_int_equal(q.nconns, 0);
	for (int i = 0; i < QUOTA_BUCKETS; i++)
		assert_null(q.procs[i]); /* no entry left for a process without connections */
	quota_del(&q, 300);		 /* unknown: ignored */
	assert_int_equal(q.nconns, 0);
	quota_free(&q);
}

static void
test_fork_storm_meets_the_total(void **state)
{
	struct quota q;
	int ok = 0;

	(void)state;
	quota_init(&q, 4, 2);
	for (uint32_t tgid = 1000; tgid < 1006; tgid++) {
		enum quota_hit h = quota_check(&q, tgid);

		if (h == QUOTA_NONE) {
			assert_int_equal(quota_add(&q, tgid), 0);
			ok++;
		} else {
			assert_int_equal(h, QUOTA_TOTAL);
		}
	}
	assert_int_equal(ok, 4);
	assert_int_equal(q.hit_total, 2);
	assert_int_equal(q.hit_process, 0);
	quota_free(&q); /* frees the entries still there (ASan: no leak) */
}

static void
test_collisions(void **state)
{
	struct quota q;
	uint32_t tgids[600];

	(void)state;
	quota_init(&q, 100000, 3);
	/* 600 processes in QUOTA_BUCKETS chains: some share one */
	for (uint32_t i = 0; i < 600; i++)
		tgids[i] = 1000 + i * 7919;
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 600; i++) {
			assert_int_equal(quota_check(&q, tgids[i]), QUOTA_NONE);
			assert_int_equal(quota_add(&q, tgids[i]), 0);
		}
	for (int i = 0; i < 600; i++) {
		assert_int_equal(quota_of(&q, tgids[i]), 3);
		assert_int_equal(quota_check(&q, tgids[i]), QUOTA_PROCESS);
	}
	for (int i = 0; i < 600; i += 2)
		quota_del(&q, tgids[i]);
	for (int i = 0; i < 600; i++)
		assert_int_equal(quota_of(&q, tgids[i]), i % 2 ? 3 : 2);
	assert_int_equal(q.nconns, 1800 - 300);
	quota_free(&q);
}

static void
test_words(void **state)
{
	struct quota q;
	char buf[200];

	(void)state;
	quota_init(&q, 7, 3);
	quota_words(&q, QUOTA_TOTAL, buf, sizeof(buf));
	assert_string_equal(buf, "too many connections (--max-conns 7)");
	quota_words(&q, QUOTA_PROCESS, buf, sizeof(buf));
	assert_string_equal(buf,
			    "too many connections from this process (--max-conns-per-process 3)");
}

static void
test_raise_nofile(void **state)
{
	struct rlimit was, orig, now;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
	if (was.rlim_max < 64)
		skip();
	now = was;
	now.rlim_cur = 32;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &now), 0);
	assert_int_equal(quota_raise_nofile(&orig), 0);
	assert_int_equal(orig.rlim_cur, 32);
	assert_int_equal(orig.rlim_max, was.rlim_max);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &now), 0);
	assert_true(now.rlim_cur == was.rlim_max || now.rlim_cur > 32); /* up to nr_open */
	assert_int_equal(now.rlim_max, was.rlim_max);
	/* already at the hard limit: nothing to do */
	assert_int_equal(quota_raise_nofile(&orig), 0);
	assert_int_equal(orig.rlim_cur, now.rlim_cur);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
}

int
main(void)
{
	const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_per_process_default),
		cmocka_unit_test(test_init_defaults),
		cmocka_unit_test(test_one_process_at_its_limit),
		cmocka_unit_test(test_fork_storm_meets_the_total),
		cmocka_unit_test(test_collisions),
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_raise_nofile),
	};
	int failed = 0;

	failed += RUN_TABLE("quota_fit", fit_cases, run_fit);
	failed += RUN_TABLE("quota_size", size_cases, run_size);
	failed += cmocka_run_group_tests_name("quota_misc", misc, NULL, NULL);
	return failed ? 1 : 0;
}
