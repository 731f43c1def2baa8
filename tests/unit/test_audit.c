// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the decision log's writer (audit.c) when writing fails:
 * /dev/full (ENOSPC on every write), a file under RLIMIT_FSIZE (EFBIG past
 * the limit, with a line cut short at the limit, then writes that work
 * again when the limit is raised), a pipe whose reader is gone (EPIPE) and
 * one whose reader reads nothing (the slow reader, counted apart). Each
 * asserts the warning on stderr (once, naming the file and the errno), the
 * counts (lost vs dropped), that every line in the file is whole, and
 * summary_print()'s words for them. No root, no network. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <event2/event.h>
#include <cmocka.h>

#include "audit/audit.h"
#include "confine/summary.h"

struct fixture {
	struct event_base *base;
	char dir[64];
	char errpath[96]; /* stderr while the test runs */
	int saved_stderr;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->base = event_base_new();
	assert_non_null(f->base);
	snprintf(f->dir, sizeof(f->dir), "/tmp/egr-test-audit-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->errpath, sizeof(f->errpath), "%s/stderr", f->dir);
	fflush(stderr);
	f->saved_stderr = dup(2);
	int fd = open(f->errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	dup2(fd, 2);
	close(fd);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	fflush(stderr);
	dup2(f->saved_stderr, 2);
	close(f->saved_stderr);
	event_base_free(f->base);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", f->dir);
	free(f);
	return 0;
}

static void
write_n(struct audit *a, int n)
{
	for (int i = 0; i < n; i++) {
		char host[32];
		struct audit_rec r = {
			.decision = "deny",
			.reason = "no rule allows it",
			.source = "http",
			.host = host,
			.port = 80,
			.pid = 4242,
			.comm = "curl",
			.cgroup = 77,
		};

		snprintf(host, sizeof(host), "host%d.example.test", i);
		audit_write(a, &r);
	}
}

/* What the code under test said on stderr so far. */
static char *
said(struct fixture *f)
{
	static char buf[8192];
	ssize_t n;
	int fd;

	fflush(stderr);
	fd = open(f->errpath, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static int
count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* Lines in path; fails unless each one is a whole JSON object line. */
static int
whole_lines(const char *path)
{
	char line[4096];
	int n = 0;
	FILE *fp = fopen(path, "r");

	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		size_t len = strlen(line);

		if (len < 3 || line[0] != '{' || line[len - 1] != '\n' || line[len - 2] != '}')
			fail_msg("%s line %d is not a whole JSON line: \"%s\"", path, n + 1, line);
		n++;
	}
	fclose(fp);
	return n;
}

static void
summary_text(const struct audit_stats *ls, char *buf, size_t len)
{
	FILE *m = fmemopen(buf, len, "w");

	assert_non_null(m);
	summary_print(NULL, m, false, ls);
	fclose(m);
}

/* Every write to /dev/full fails with ENOSPC: one warning, every line
 * counted as lost, none as dropped, and the summary names the error. */
static void
test_dev_full(void **state)
{
	struct fixture *f = *state;
	struct audit_stats ls;
	char err[256], sum[1024];
	struct audit *a = audit_open(f->base, "/dev/full", NULL, err, sizeof(err));

	assert_non_null(a);
	write_n(a, 5);
	/* the retry timer fires while the loop runs: still failing, still once */
	for (int i = 0; i < 3; i++) {
		struct timeval tv = {0, 600000};

		event_base_loopexit(f->base, &tv);
		event_base_dispatch(f->base);
	}
	write_n(a, 2);
	audit_finish(a);
	audit_get_stats(a, &ls);
	assert_int_equal(ls.lost, 7);
	assert_int_equal(ls.dropped, 0);
	assert_int_equal(ls.last_err, ENOSPC);
	assert_true(ls.failing);
	assert_string_equal(ls.path, "/dev/full");
	assert_int_equal(count_of(said(f), "log /dev/full: cannot write: No space left on device "
					   "(ENOSPC)"),
			 1);
	assert_int_equal(count_of(said(f), "writing again"), 0);
	summary_text(&ls, sum, sizeof(sum));
	assert_string_equal(sum, "egressctl: summary: no network attempts\n"
				 "egressctl: 7 log lines lost: write error ENOSPC (No space left "
				 "on device) on /dev/full\n");
	audit_close(a);
}

/* Beyond the buffer, lines that wait for a failing disk are lost at once,
 * not "dropped" as for a slow reader. */
static void
test_dev_full_buffer(void **state)
{
	struct fixture *f = *state;
	struct audit_stats ls;
	char err[256];
	struct audit *a = audit_open(f->base, "/dev/full", NULL, err, sizeof(err));

	assert_non_null(a);
	audit_set_limit(a, 1000); /* four or five lines */
	write_n(a, 50);
	audit_get_stats(a, &ls);
	assert_true(ls.lost >= 45 && ls.lost < 50);
	assert_int_equal(ls.dropped, 0);
	audit_finish(a);
	audit_get_stats(a, &ls);
	assert_int_equal(ls.lost, 50);
	assert_int_equal(ls.dropped, 0);
	audit_close(a);
}

static void
set_fsize(rlim_t n)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = n;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

static rlim_t
max_fsize(void)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &rl), 0);
	return rl.rlim_max;
}

/* A file that cannot grow (EFBIG past RLIMIT_FSIZE, as ENOSPC past a full
 * disk): the line at the limit is cut short; when the file can grow again
 * the retry completes it and writes the rest, says so once, and nothing
 * was lost while the buffer held the lines. */
static void
test_resume(void **state)
{
	struct fixture *f = *state;
	struct audit_stats ls;
	char path[128], err[256];
	struct audit *a;
	struct stat st;
	rlim_t hard = max_fsize();
	int i;

	snprintf(path, sizeof(path), "%s/log.jsonl", f->dir);
	a = audit_open(f->base, path, NULL, err, sizeof(err));
	assert_non_null(a);
	set_fsize(1000); /* not a multiple of a line: one is cut short */
	write_n(a, 20);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 1000);
	assert_int_equal(count_of(said(f), "cannot write: File too large (EFBIG)"), 1);
	set_fsize(hard);
	for (i = 0; i < 50 && !strstr(said(f), "writing again"); i++) {
		struct timeval tv = {0, 100000};

		event_base_loopexit(f->base, &tv);
		event_base_dispatch(f->base);
	}
	/* two lines on stderr: the error and the recovery, both naming the file */
	assert_int_equal(count_of(said(f), "\n"), 2);
	assert_int_equal(count_of(said(f), path), 2);
	assert_int_equal(count_of(said(f), ": writing again after EFBIG; 0 lines lost meanwhile"),
			 1);
	assert_int_equal(whole_lines(path), 20);
	write_n(a, 1); /* and the next line goes straight out */
	assert_int_equal(whole_lines(path), 21);
	audit_finish(a);
	audit_get_stats(a, &ls);
	assert_int_equal(ls.lost, 0);
	assert_int_equal(ls.dropped, 0);
	assert_int_equal(ls.last_err, EFBIG);
	assert_false(ls.failing);
	audit_close(a);
}

/* Still failing at exit: what waits is lost, and the line cut short at
 * the limit is cut off the file, which ends with a whole line. Lines in
 * the file + lines lost = lines written. */
static void
test_cut_at_exit(void **state)
{
	struct fixture *f = *state;
	struct audit_stats ls;
	char path[128], err[256], sum[1024], want[512];
	struct audit *a;
	int in_file;

	snprintf(path, sizeof(path), "%s/cut.jsonl", f->dir);
	a = audit_open(f->base, path, NULL, err, sizeof(err));
	assert_non_null(a);
	set_fsize(1000);
	write_n(a, 20);
	audit_finish(a);
	set_fsize(max_fsize());
	audit_get_stats(a, &ls);
	in_file = whole_lines(path);
	assert_true(in_file > 0 && in_file < 20);
	assert_int_equal(in_file + (int)ls.lost, 20);
	assert_int_equal(ls.dropped, 0);
	assert_true(ls.failing);
	assert_int_equal(count_of(said(f), "cannot write"), 1);
	summary_text(&ls, sum, sizeof(sum));
	snprintf(want, sizeof(want),
		 "egressctl: summary: no network attempts\n"
		 "egressctl: %d log lines lost: write error EFBIG (File too large) on %s\n",
		 20 - in_file, path);
	assert_string_equal(sum, want);
	audit_close(a);
}

/* The reader of a pipe is gone: EPIPE, said once; that never heals, so
 * every later line is lost without a write. */
static void
test_epipe(void **state)
{
	struct fixture *f = *state;
	struct audit_stats ls;
	char path[64], err[256];
	struct audit *a;
	int p[2];

	assert_int_equal(pipe(p), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[1]);
	a = audit_open(f->base, path, NULL, err, sizeof(err));
	assert_non_null(a);
	close(p[1]);
	close(p[0]);
	write_n(a, 3);
	audit_finish(a);
	audit_get_stats(a, &ls);
	assert_int_equal(ls.lost, 3);
	assert_int_equal(ls.dropped, 0);
	assert_int_equal(ls.last_err, EPIPE);
	assert_true(ls.failing);
	assert_int_equal(count_of(said(f), "the reader is gone (EPIPE)"), 1);
	audit_close(a);
}

/* A reader that reads nothing is slow, not an error: no warning, what
 * does not fit is dropped, and the summary says so in its own words. */
static void
test_slow_reader(void **state)
{
	struct fixture *f = *state;
	struct audit_stats ls;
	char path[64], err[256], sum[1024];
	struct audit *a;
	int p[2];

	assert_int_equal(pipe(p), 0);
	assert_true(fcntl(p[0], F_SETPIPE_SZ, 4096) >= 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[1]);
	a = audit_open(f->base, path, NULL, err, sizeof(err));
	assert_non_null(a);
	close(p[1]);
	audit_set_limit(a, 2000);
	write_n(a, 60);
	audit_get_stats(a, &ls);
	assert_true(ls.dropped > 0);
	assert_int_equal(ls.lost, 0);
	assert_int_equal(ls.last_err, 0);
	assert_string_equal(said(f), "");
	summary_text(&ls, sum, sizeof(sum));
	assert_non_null(strstr(sum, "egressctl: the log's reader was too slow: "));
	assert_null(strstr(sum, "lost"));
	close(p[0]); /* now the reader is gone: the last try fails with EPIPE */
	audit_close(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dev_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dev_full_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_at_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epipe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_reader, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
