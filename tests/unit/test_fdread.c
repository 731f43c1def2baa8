// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/lib/fdread.c: a descriptor read to its end
 * (NUL-terminated, bytes past a NUL kept), an empty one, and one past the
 * bound refused with -EFBIG and nothing returned. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "lib/fdread.h"

/* A memfd holding n bytes of text, at offset 0. */
static int
memfd_of(const char *text, size_t n)
{
	int fd = memfd_create("t", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static void
test_read_all(void **state)
{
	char *buf, *big;
	int fd;

	(void)state;
	fd = memfd_of("a\0b", 3);
	assert_int_equal(fd_read_all(fd, 16, &buf), 3);
	assert_memory_equal(buf, "a\0b", 4);
	free(buf);
	close(fd);
	fd = memfd_of("", 0);
	assert_int_equal(fd_read_all(fd, 16, &buf), 0);
	assert_string_equal(buf, "");
	free(buf);
	close(fd);
	/* 200,000 bytes: past one 64 KiB step; at the bound, and one past */
	big = malloc(200000);
	assert_non_null(big);
	memset(big, 'x', 200000);
	fd = memfd_of(big, 200000);
	assert_int_equal(fd_read_all(fd, 200000, &buf), 200000);
	assert_int_equal(buf[200000], 0);
	free(buf);
	close(fd);
	fd = memfd_of(big, 200000);
	assert_int_equal(fd_read_all(fd, 199999, &buf), -EFBIG);
	assert_null(buf);
	close(fd);
	free(big);
	assert_int_equal(fd_read_all(-1, 16, &buf), -EBADF);
	assert_null(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
