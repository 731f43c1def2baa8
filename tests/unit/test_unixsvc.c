// SPDX-License-Identifier: Apache-2.0
/* Unit tests for unixsvc.c: the default list of local services' unix
 * sockets, its /var/run twins, the "/run/user/<uid>/" entries for every
 * user, --allow-unix and --deny-unix, the test build's root, and the names
 * in lines. The same matching as bpf/unix.c's look-ups. And the registry of
 * control sockets that `run` masks from CMD. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "sandbox/unixsvc.h"

static struct unixsvc s;

static void
test_defaults(void **state)
{
	char uid[16], name[128];
	int i;

	(void)state;
	assert_int_equal(unixsvc_build(&s, NULL, NULL, 0, NULL, 0, name, sizeof(name)), 0);
	for (const char *const *d = unixsvc_defaults; *d; d++) {
		char twin[128];

		if (!strchr(*d, '*')) {
			assert_true(unixsvc_denied(&s, *d));
			snprintf(twin, sizeof(twin), "/var%s", *d);
			assert_true(unixsvc_denied(&s, twin));
		}
	}
	assert_true(unixsvc_denied(&s, "/run/docker.sock"));
	assert_true(unixsvc_denied(&s, "/run/systemd/private"));
	assert_true(unixsvc_denied(&s, "/run/dbus/system_bus_socket"));
	/* every user's session sockets */
	i = unixsvc_match(&s, "/run/user/1000/bus", uid, sizeof(uid));
	assert_true(i >= 0);
	assert_string_equal(uid, "1000");
	unixsvc_name(&s, i, uid, name, sizeof(name));
	assert_string_equal(name, "/run/user/1000/bus");
	assert_true(unixsvc_denied(&s, "/run/user/0/systemd/private"));
	assert_true(unixsvc_denied(&s, "/var/run/user/65534/podman/podman.sock"));
	assert_true(unixsvc_denied(&s, "/run/user/4294967294/docker.sock"));
	/* not a uid, not the place, not the name: left to file modes */
	assert_false(unixsvc_denied(&s, "/run/user/abc/bus"));
	assert_false(unixsvc_denied(&s, "/run/user//bus"));
	assert_false(unixsvc_denied(&s, "/run/user/12345678901/bus"));
	assert_false(unixsvc_denied(&s, "/run/user/1000/bus2"));
	assert_false(unixsvc_denied(&s, "/tmp/run/docker.sock"));
	assert_false(unixsvc_denied(&s, "docker.sock"));
	assert_false(unixsvc_denied(&s, "/run/docker.sock/"));
	assert_false(unixsvc_denied(&s, "/run/user/1000/pulse/native"));
}

static void
test_allow_deny(void **state)
{
	const char *allow[] = {"/run/docker.sock", "/run/user/1000/bus"};
	const char *deny[] = {"/srv/my.sock"};
	char err[256];

	(void)state;
	assert_int_equal(unixsvc_build(&s, NULL, allow, 2, deny, 1, err, sizeof(err)), 0);
	assert_false(unixsvc_denied(&s, "/run/docker.sock"));
	assert_false(unixsvc_denied(&s, "/var/run/docker.sock")); /* its twin */
	assert_false(unixsvc_denied(&s, "/run/user/1000/bus"));
	assert_true(unixsvc_denied(&s, "/run/user/1001/bus")); /* one user only */
	assert_true(unixsvc_denied(&s, "/run/containerd/containerd.sock"));
	assert_true(unixsvc_denied(&s, "/srv/my.sock"));
	/* bad paths */
	deny[0] = "relative.sock";
	assert_int_equal(unixsvc_build(&s, NULL, NULL, 0, deny, 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "absolute"));
	allow[0] = "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		   "aaaaaa"
		   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock";
	assert_int_equal(unixsvc_build(&s, NULL, allow, 1, NULL, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "longer"));
}

static void
test_root(void **state)
{
	char err[256], uid[16], name[128];
	int i;

	(void)state;
	assert_int_equal(unixsvc_build(&s, "/run/egr-test-1", NULL, 0, NULL, 0, err, sizeof(err)),
			 0);
	assert_int_equal(s.root_len, strlen("/run/egr-test-1"));
	assert_true(unixsvc_denied(&s, "/run/egr-test-1/run/docker.sock"));
	assert_true(unixsvc_denied(&s, "/run/egr-test-1/var/run/docker.sock"));
	assert_false(unixsvc_denied(&s, "/run/docker.sock"));
	i = unixsvc_match(&s, "/run/egr-test-1/run/user/7/bus", uid, sizeof(uid));
	assert_true(i >= 0);
	unixsvc_name(&s, i, uid, name, sizeof(name));
	assert_string_equal(name, "/run/egr-test-1/run/user/7/bus");
	unixsvc_name(&s, -1, NULL, name, sizeof(name));
	assert_string_equal(name, "?");
}

static bool
listed(char **list, const char *path)
{
	for (char **p = list; p && *p; p++)
		if (!strcmp(*p, path))
			return true;
	return false;
}

/* A daemon's control socket, wherever it is, is listed for the masks while
 * it is registered; a gone daemon's entry is dropped by the next one; the
 * directory itself is listed first. */
static void
test_registry(void **state)
{
	char dir[] = "/tmp/egr-unit-reg-XXXXXX", sock[64], stale[PATH_MAX], err[256];
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct stat st;
	char **list;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/ctl.sock", dir);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	/* nothing registered: the directory alone */
	list = calloc(1, sizeof(*list));
	assert_int_equal(unixsvc_add_egressctl(dir, &list), 0);
	assert_string_equal(list[0], dir);
	assert_null(list[1]);
	unixsvc_free_list(list);
	/* an entry of a pid that is no process, to a socket that is there */
	snprintf(stale, sizeof(stale), "%s/controls", dir);
	assert_int_equal(mkdir(stale, 0700), 0);
	snprintf(stale, sizeof(stale), "%s/controls/2147483646", dir);
	assert_int_equal(symlink(sock, stale), 0);
	assert_int_equal(unixsvc_control_register(dir, sock, err, sizeof(err)), 0);
	assert_int_equal(lstat(stale, &st), -1); /* pruned */
	list = calloc(2, sizeof(*list));
	list[0] = strdup("/run/x.sock"); /* what was there stays first */
	assert_int_equal(unixsvc_add_egressctl(dir, &list), 0);
	assert_string_equal(list[0], "/run/x.sock");
	assert_true(listed(list, dir));
	assert_true(listed(list, sock));
	unixsvc_free_list(list);
	/* unregistered: not listed; no socket there: not listed */
	unixsvc_control_unregister(dir);
	list = calloc(1, sizeof(*list));
	assert_int_equal(unixsvc_add_egressctl(dir, &list), 0);
	assert_false(listed(list, sock));
	unixsvc_free_list(list);
	assert_int_equal(unixsvc_control_register(dir, sock, err, sizeof(err)), 0);
	close(fd);
	unlink(sock);
	list = calloc(1, sizeof(*list));
	assert_int_equal(unixsvc_add_egressctl(dir, &list), 0);
	assert_false(listed(list, sock));
	unixsvc_free_list(list);
	unixsvc_control_unregister(dir);
	snprintf(stale, sizeof(stale), "%s/controls", dir);
	assert_int_equal(rmdir(stale), 0);
	assert_int_equal(rmdir(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_allow_deny),
		cmocka_unit_test(test_root),
		cmocka_unit_test(test_registry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
