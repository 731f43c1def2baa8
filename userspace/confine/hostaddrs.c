// SPDX-License-Identifier: Apache-2.0
/* Every target's egr_hostaddr kept as this network namespace's addresses
 * (see core.h): one rtnetlink watch for the process (kernel/hostaddr.h),
 * the list read again 20 ms after a change is said (a burst of them, as
 * containers start, is read once) and written to every target's map when
 * it differs from the one before. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <event2/event.h>

#include "kernel/hostaddr.h"
#include "kernel/loader.h"
#include "lib/log.h"
#include "confine/core.h"

#define SETTLE_US 20000

static struct {
	int fd; /* the watch; -1 none */
	struct event *ev, *soon;
	LIST_HEAD(, target) targets;
	struct egr_hostaddr_key a[EGR_HOSTADDR_MAX]; /* the list as last read */
	int n;
	bool read, warned;
} hw = {.fd = -1};

/* The list read again: 1 when it changed, 0 when not, -errno. */
static int
reread(void)
{
	static struct egr_hostaddr_key b[EGR_HOSTADDR_MAX];
	int total, n = hostaddr_list(b, EGR_HOSTADDR_MAX, &total);

	if (n < 0)
		return n;
	if (total > n && !hw.warned) {
		hw.warned = true;
		log_warnx("this host has %d addresses; confined servers answer only the first %d "
			  "of them",
			  total, n);
	}
	if (hw.read && n == hw.n && !memcmp(b, hw.a, sizeof(b[0]) * (size_t)n))
		return 0;
	memcpy(hw.a, b, sizeof(b[0]) * (size_t)n);
	hw.n = n;
	hw.read = true;
	return 1;
}

static void
sync_one(struct target *t)
{
	int err = loader_hostaddr_sync(t->ld, hw.a, hw.n);

	if (err)
		log_warnx("%sthis host's addresses into egr_hostaddr: %s", t->env->label,
			  strerror(-err));
}

static void
on_soon(evutil_socket_t fd, short what, void *arg)
{
	struct target *t;
	int r = reread();

	(void)fd;
	(void)what;
	(void)arg;
	if (r < 0)
		log_warnx("this host's addresses: %s (kept as they were)", strerror(-r));
	if (r <= 0)
		return;
	LIST_FOREACH(t, &hw.targets, addrs_entry)
	sync_one(t);
}

static void
on_watch(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	(void)arg;
	hostaddr_watch_drain(fd);
	if (!evtimer_pending(hw.soon, NULL))
		evtimer_add(hw.soon, &(struct timeval){.tv_usec = SETTLE_US});
}

static void
close_watch(void)
{
	if (hw.ev)
		event_free(hw.ev);
	if (hw.soon)
		event_free(hw.soon);
	if (hw.fd >= 0)
		close(hw.fd);
	hw.ev = hw.soon = NULL;
	hw.fd = -1;
	hw.read = false;
}

int
target_watch_hostaddrs(struct target *t, char *errbuf, size_t errlen)
{
	int r;

	if (t->addrs_watched) { /* attached again (a cgroup made anew) */
		sync_one(t);
		return 0;
	}
	if (hw.fd < 0) {
		LIST_INIT(&hw.targets);
		hw.fd = hostaddr_watch_open(false); /* the watch first: no change missed */
		if (hw.fd < 0) {
			r = hw.fd;
			hw.fd = -1;
			snprintf(errbuf, errlen, "cannot watch this host's addresses: %s",
				 strerror(-r));
			return r;
		}
		hw.ev = event_new(t->base, hw.fd, EV_READ | EV_PERSIST, on_watch, NULL);
		hw.soon = evtimer_new(t->base, on_soon, NULL);
		if (!hw.ev || !hw.soon || event_add(hw.ev, NULL)) {
			close_watch();
			snprintf(errbuf, errlen, "cannot watch this host's addresses");
			return -ENOMEM;
		}
	}
	if (!hw.read && (r = reread()) < 0) {
		if (LIST_EMPTY(&hw.targets))
			close_watch();
		snprintf(errbuf, errlen, "this host's addresses: %s", strerror(-r));
		return r;
	}
	LIST_INSERT_HEAD(&hw.targets, t, addrs_entry);
	t->addrs_watched = true;
	sync_one(t);
	return 0;
}

void
target_unwatch_hostaddrs(struct target *t)
{
	if (!t->addrs_watched)
		return;
	LIST_REMOVE(t, addrs_entry);
	t->addrs_watched = false;
	if (LIST_EMPTY(&hw.targets))
		close_watch();
}
