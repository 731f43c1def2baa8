// SPDX-License-Identifier: Apache-2.0
/* The user socket (see usersock.h). A SOCK_SEQPACKET socket of mode 0660
 * and users.json's first group, its other groups and the accounts its
 * "users" names let in by an access ACL. Per connection: who the peer is
 * (kernel/peer.c, race-free; a confined process is refused, root served
 * the status and log of every user's runs and nothing else), its account
 * named in users.json or its groups among users.json's, its runs at once
 * against its ceiling (users.json's, its "users" entry over it); then one
 * request (daemon/usreq.c: arguments, environment, the
 * number of descriptors that came with it: stdin, stdout, stderr, the
 * working directory, the files it opened for fd:N) whose arguments the
 * check run's table makes (cli/) accepts. The run is this binary as `run
 * --user NAME --service-env-fd 3` with the descriptors in their places, a
 * clean environment and users.json's deny rules, in a session of its own;
 * the service opens no path for the user. The connection is run's from
 * then on (cli/svcrun.c): the client's signals, its exit status; the
 * daemon only sees it close (the client gone: its cgroup killed, run
 * killed if stuck). A run goes on when the daemon stops or dies, and
 * comes back to the next one as root with {"adopt": ...} (usreq.h): listed
 * as its user's again, its lines kept, counted against the ceiling. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "daemon/sockacl.h"
#include "daemon/userexec.h"
#include "daemon/usersock.h"
#include "daemon/usreq.h"
#include "confine/status.h"
#include "kernel/cgroup.h"
#include "kernel/loader.h"
#include "kernel/peer.h"
#include "lib/jsonx.h"
#include "lib/log.h"
#include "lib/opts.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#define USERSOCK_MAX_CONNS 256
#define USERSOCK_RECENT	   256 /* decision lines kept for `log` */
#define USERSOCK_FOLLOWERS 4   /* `log -f` connections per user */
#define USERSOCK_PENDING   4   /* connections of a user not answered yet */

struct urun {
	LIST_ENTRY(urun) entry;
	struct usersock *us;
	int conn;	       /* -1 once the client is gone */
	struct event *ev_conn; /* its messages */
	uid_t uid;	       /* the peer's, at connect() */
	char name[64];	       /* its account */
	pid_t pid;	       /* the run, 0 before it starts */
	int pidfd;	       /* the run's */
	struct event *ev_child;
	struct event *ev_kill; /* the client gone: cgroup.kill each second until run ends */
	int ticks;
	char command[256]; /* CMD and its arguments, for status */
	time_t started;
	int tap; /* run's records (--service-log-fd), -1 none */
	struct event *ev_tap;
	bool follower; /* a `log -f` connection, not a run */
	bool admin;    /* root (peer_refusal's administrator): status and log of all */
	bool adopted;  /* a run another daemon started (no child of ours, no client) */
};

struct usersock {
	struct event_base *base;
	int fd;
	struct event *ev;
	char path[108];
	char cfgpath[PATH_MAX];
	char mnt[PATH_MAX];
	struct usercfg cfg;
	LIST_HEAD(, urun) runs;
	int nruns;
	char *recent[USERSOCK_RECENT]; /* the last decision lines of every run */
	uid_t recent_uid[USERSOCK_RECENT];
	char recent_name[USERSOCK_RECENT][64]; /* the account of the run's */
	int recent_at, nrecent;
};

static usersock_check_fn check_args;

void
usersock_set_check(usersock_check_fn fn)
{
	check_args = fn;
}

static void
urun_free(struct urun *r)
{
	if (r->ev_conn)
		event_free(r->ev_conn);
	if (r->ev_child)
		event_free(r->ev_child);
	if (r->ev_kill)
		event_free(r->ev_kill);
	if (r->ev_tap)
		event_free(r->ev_tap);
	if (r->tap >= 0)
		close(r->tap);
	if (r->conn >= 0)
		close(r->conn);
	if (r->pidfd >= 0)
		close(r->pidfd);
	LIST_REMOVE(r, entry);
	r->us->nruns--;
	free(r);
}

/* One JSON message to the client (best effort: it may be gone). */
static void
reply(int fd, const char *error, int status)
{
	json_t *o = json_object();
	char *line = NULL;

	if (o && (!error || !jsonx_set_str(o, "error", error)) && !jsonx_set_int(o, "exit", status))
		line = jsonx_line(o);
	if (line)
		send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
	free(line);
	json_decref(o);
}

/* Refuses the connection's request: said to the client and in the log. */
static void
refuse(struct urun *r, int status, const char *why)
{
	char buf[4096];
	int fds[USREQ_MAX_FDS], n;

	log_warnx("user socket: refused uid %u (%s): %s", (unsigned)r->uid,
		  r->name[0] ? r->name : "?", why);
	reply(r->conn, why, status);
	/* what the client sent is read off first: closed with it unread, the
	 * socket would hand the client ECONNRESET before the answer */
	for (int i = 0; i < 4 && userexec_recv(r->conn, buf, sizeof(buf), fds, &n) > 0; i++)
		userexec_close_fds(fds, n);
	urun_free(r);
}

/* cgroup.kill of the run's cgroup (run's <mnt>/egressctl/run-PID), if
 * it is there yet. */
static void
urun_kill_cgroup(struct urun *r)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/egressctl/run-%d/cgroup.kill", r->us->mnt, (int)r->pid);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1", 1) != 1)
			log_warn("user socket: %s", path);
		close(fd);
	}
}

/* Each second once the client is gone; after 10, run itself is killed.
 * A backstop: run ends itself when its client goes, before its cgroup
 * too (cli/svcrun.c's watch). */
static void
on_kill_tick(evutil_socket_t fd, short what, void *arg)
{
	struct urun *r = arg;

	(void)fd;
	(void)what;
	urun_kill_cgroup(r);
	if (++r->ticks == 10) {
		log_warnx("user socket: uid %u: run[%d] still there 10s after its client: killed",
			  (unsigned)r->uid, (int)r->pid);
		syscall(SYS_pidfd_send_signal, r->pidfd, SIGKILL, NULL, 0);
	}
}

/* The end of the run: its cgroup killed, and TERM to run itself, which
 * then tears down and exits. run holds the signal until it can forward it
 * (--service-env-fd), and a cgroup made after this is killed by the next
 * tick. */
static void
urun_stop(struct urun *r)
{
	struct timeval second = {1, 0};

	if (!r->pid)
		return;
	urun_kill_cgroup(r);
	syscall(SYS_pidfd_send_signal, r->pidfd, SIGTERM, NULL, 0);
	if (!r->ev_kill)
		r->ev_kill = event_new(r->us->base, -1, EV_PERSIST, on_kill_tick, r);
	if (r->ev_kill)
		event_add(r->ev_kill, &second);
}

/* A line of a run as root sees it: {"user": NAME, "uid": UID, ...the
 * line's keys}; a line that is no JSON object as it is. */
static void
send_admin(int fd, const char *name, uid_t uid, const char *line, size_t len)
{
	json_t *s = json_string(name);
	char *who = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
	char buf[2048 + 160];
	int n = -1;

	if (len > 1 && line[0] == '{' && line[1] == '"')
		n = snprintf(buf, sizeof(buf), "{%s%s%s\"uid\":%u,%.*s", who ? "\"user\":" : "",
			     who ? who : "", who ? "," : "", (unsigned)uid, (int)len - 1, line + 1);
	if (n > 0 && (size_t)n < sizeof(buf))
		send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	else
		send(fd, line, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	free(who);
	json_decref(s);
}

/* A line of r's run: kept, and sent to the followers of r's uid and to
 * root's. */
static void
keep_line(struct urun *r, const char *line, size_t len)
{
	struct usersock *us = r->us;
	struct urun *f;
	char *copy = strndup(line, len);

	if (!copy)
		return;
	free(us->recent[us->recent_at]);
	us->recent[us->recent_at] = copy;
	us->recent_uid[us->recent_at] = r->uid;
	snprintf(us->recent_name[us->recent_at], sizeof(us->recent_name[0]), "%s", r->name);
	us->recent_at = (us->recent_at + 1) % USERSOCK_RECENT;
	if (us->nrecent < USERSOCK_RECENT)
		us->nrecent++;
	LIST_FOREACH(f, &us->runs, entry)
	{
		if (!f->follower || f->conn < 0)
			continue;
		if (f->admin)
			send_admin(f->conn, r->name, r->uid, copy, len);
		else if (f->uid == r->uid)
			send(f->conn, copy, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
}

/* The run's records, one line a datagram. */
static void
on_tap(evutil_socket_t fd, short what, void *arg)
{
	struct urun *r = arg;
	char line[2048];
	ssize_t n;

	(void)what;
	while ((n = recv(fd, line, sizeof(line), MSG_DONTWAIT)) > 0)
		keep_line(r, line, (size_t)n);
	if (n == 0 && r->ev_tap) /* run closed it: exiting (its pidfd says) */
		event_del(r->ev_tap);
}

/* run gone: a cgroup of its still there (run killed, or crashed, before
 * removing it) holds a CMD nothing watches any more: killed and removed
 * (at most 200 ms on the loop; a run that ended well removed its own),
 * then the pins that kept its programs on it and its status socket. */
static void
urun_reap_cgroup(const struct urun *r)
{
	char path[PATH_MAX + 64], pins[PATH_MAX];
	uint64_t cgid;
	int err;

	snprintf(path, sizeof(path), "%s/egressctl/run-%d", r->us->mnt, (int)r->pid);
	if (access(path, F_OK))
		return;
	cgid = cgroup_id_of(path);
	err = cgroup_kill_and_remove(path, 200);
	log_warnx("user socket: uid %u: run[%d] gone, its cgroup left: %s", (unsigned)r->uid,
		  (int)r->pid, err ? strerror(-err) : "killed and removed");
	if (err || !cgid)
		return;
	if (!loader_pin_dir_of(cgid, pins, sizeof(pins)) && !access(pins, F_OK))
		loader_remove_pin_dir(pins);
	snprintf(pins, sizeof(pins), "%s/%llu.sock", STATUS_DIR, (unsigned long long)cgid);
	unlink(pins);
}

static void
on_child(evutil_socket_t fd, short what, void *arg)
{
	struct urun *r = arg;
	siginfo_t si = {0};
	int status;

	(void)what;
	if (r->adopted) { /* not our child: its pidfd readable is its end */
		if (r->tap >= 0)
			on_tap(r->tap, 0, r);
		log_info("user socket: uid %u: run[%d] (taken up from a daemon before) exited",
			 (unsigned)r->uid, (int)r->pid);
		urun_reap_cgroup(r);
		urun_free(r);
		return;
	}
	if (waitid(P_PIDFD, fd, &si, WEXITED | WNOHANG) || !si.si_pid)
		return;
	status = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
	if (r->tap >= 0)
		on_tap(r->tap, 0, r); /* its last lines */
	log_info("user socket: uid %u: run[%d] exited with status %d", (unsigned)r->uid,
		 (int)r->pid, status);
	urun_reap_cgroup(r);
	if (r->conn >= 0) /* run said it first, unless it was killed */
		reply(r->conn, NULL, status);
	urun_free(r);
}

/* Is the account of uid named in users.json's "users", or a member
 * (primary or supplementary, as the group database says now) of one of
 * its groups? Its name into r. */
static int
member_check(struct usersock *us, struct urun *r, char *why, size_t whylen)
{
	struct passwd pw, *pwr = NULL;
	char pbuf[16384];
	gid_t gids[1024];
	int n = 1024;

	if (getpwuid_r(r->uid, &pw, pbuf, sizeof(pbuf), &pwr) || !pwr ||
	    strlen(pw.pw_name) >= sizeof(r->name)) {
		snprintf(why, whylen, "uid %u has no account", (unsigned)r->uid);
		return -EPERM;
	}
	snprintf(r->name, sizeof(r->name), "%s", pw.pw_name);
	/* run --user NAME finds the account by name: it must be this one */
	pwr = NULL;
	if (getpwnam_r(r->name, &pw, pbuf, sizeof(pbuf), &pwr) || !pwr || pw.pw_uid != r->uid) {
		snprintf(why, whylen, "the account name of uid %u, %s, names another uid",
			 (unsigned)r->uid, r->name);
		return -EPERM;
	}
	if (usercfg_user(&us->cfg, r->name))
		return 0;
	if (getgrouplist(pw.pw_name, pw.pw_gid, gids, &n) < 0)
		n = 0;
	for (int g = 0; g < us->cfg.ngroups; g++) {
		struct group *gr = getgrnam(us->cfg.groups[g]);

		for (int i = 0; gr && i < n; i++)
			if (gids[i] == gr->gr_gid)
				return 0;
	}
	snprintf(why, whylen,
		 "%s is in none of the groups allowed to run (%s%s) and not one of users.json's "
		 "users",
		 r->name, us->cfg.groups[0], us->cfg.ngroups > 1 ? ", ..." : "");
	return -EPERM;
}

/* run's argument list: --user NAME, the environment's descriptor, the
 * client's umask and rlimits (or NULL), the user's allow ceiling (c's
 * rules as lines; or NULL: no ceiling), max_conns_per_run ("" none), the
 * ceiling's deny rules, then the client's. */
static char **
run_argv(const struct urun *r, const struct usercfg *c, const struct usreq *req, char *limits,
	 char *ceiling, char *maxconns, char *tapno, char *connno)
{
	char **a = calloc((size_t)(19 + 2 * c->ndeny + req->nargs), sizeof(*a));
	int k = 0;

	if (!a)
		return NULL;
	a[k++] = "egressctl";
	a[k++] = "run";
	a[k++] = "--user";
	a[k++] = (char *)r->name;
	a[k++] = "--service-env-fd";
	a[k++] = "3";
	if (limits) {
		a[k++] = "--service-limits";
		a[k++] = limits;
	}
	if (ceiling) {
		a[k++] = "--service-ceiling";
		a[k++] = ceiling;
	}
	if (maxconns[0]) { /* the user's own, after it, can only be lower (userrun.c) */
		a[k++] = "--max-conns";
		a[k++] = maxconns;
	}
	a[k++] = "--service-log-fd";
	a[k++] = tapno;
	a[k++] = "--service-conn-fd";
	a[k++] = connno;
	a[k++] = "--service-socket";
	a[k++] = (char *)r->us->path;
	for (int i = 0; i < c->ndeny; i++) {
		a[k++] = "--deny";
		a[k++] = c->deny[i];
	}
	for (int i = 0; i < req->nargs; i++)
		a[k++] = req->args[i];
	return a;
}

/* users.json's allow rules as --service-ceiling takes them: one a line
 * ("" when the list is empty: nothing may be allowed). */
static char *
ceiling_text(const struct usercfg *c)
{
	size_t len = 1;
	char *s;

	for (int i = 0; i < c->nallow; i++)
		len += strlen(c->allow[i]) + 1;
	s = calloc(1, len);
	for (int i = 0; s && i < c->nallow; i++) {
		strcat(s, c->allow[i]);
		if (i + 1 < c->nallow)
			strcat(s, "\n");
	}
	return s;
}

/* Starts the run of a checked request under the user's ceiling c; fds
 * are closed here. */
static int
spawn_run(struct urun *r, const struct usercfg *c, const struct usreq *req, int *fds, int nfds,
	  char *why, size_t whylen)
{
	char limits[PLIMITS_N * 44 + 8], maxconns[16] = "", tapno[16], connno[16];
	int tap[2] = {-1, -1};
	char *ceiling = c->has_allow ? ceiling_text(c) : NULL;
	bool lim = req->limits.set && !plimits_format(&req->limits, limits, sizeof(limits));
	char **argv = NULL;
	int envfd, err = 0;

	if (c->max_conns)
		snprintf(maxconns, sizeof(maxconns), "%d", c->max_conns);
	snprintf(tapno, sizeof(tapno), "%d", nfds);
	snprintf(connno, sizeof(connno), "%d", nfds + 1);
	if ((!c->has_allow || ceiling) &&
	    !socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, tap))
		argv = run_argv(r, c, req, lim ? limits : NULL, ceiling, maxconns, tapno, connno);
	envfd = userexec_env_memfd(req);
	pid_t pid = -1;

	if (argv && envfd >= 0)
		pid = fork();
	if (pid == 0)
		userexec_child(argv, fds, nfds, envfd, tap[1], r->conn);
	if (pid < 0)
		err = -errno ? -errno : -ENOMEM;
	userexec_close_fds(fds, nfds);
	if (envfd >= 0)
		close(envfd);
	free(argv);
	free(ceiling);
	if (tap[1] >= 0)
		close(tap[1]);
	if (err) {
		if (tap[0] >= 0)
			close(tap[0]);
		snprintf(why, whylen, "cannot start run: %s", strerror(-err));
		return err;
	}
	r->pid = pid;
	r->tap = tap[0];
	r->ev_tap = event_new(r->us->base, r->tap, EV_READ | EV_PERSIST, on_tap, r);
	if (r->ev_tap)
		event_add(r->ev_tap, NULL);
	r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	r->ev_child = r->pidfd >= 0
			      ? event_new(r->us->base, r->pidfd, EV_READ | EV_PERSIST, on_child, r)
			      : NULL;
	if (!r->ev_child || event_add(r->ev_child, NULL)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		r->pid = 0;
		snprintf(why, whylen, "cannot watch the run");
		return -ENOMEM;
	}
	log_warnx("user socket: uid %u (%s): run[%d] started", (unsigned)r->uid, r->name, (int)pid);
	return 0;
}

/* {"status": true}: the runs of the peer's uid (not another's), or for
 * root every user's; each its pid, cgroup, command, seconds up, and whose
 * it is (user, uid). */
static void
answer_status(struct urun *r)
{
	json_t *o = json_object(), *a = jsonx_add_array(o, "runs");
	time_t now = time(NULL);
	struct urun *x;
	char *line = NULL;
	int sz = 1 << 20;

	LIST_FOREACH(x, &r->us->runs, entry)
	{
		json_t *e;
		char cg[64];

		if ((x->uid != r->uid && !r->admin) || !x->pid || x->follower || !a)
			continue;
		snprintf(cg, sizeof(cg), "/egressctl/run-%d", (int)x->pid);
		e = json_object();
		if (!e || jsonx_set_int(e, "pid", x->pid) || jsonx_set_str(e, "cgroup", cg) ||
		    jsonx_set_str(e, "user", x->name) || jsonx_set_int(e, "uid", x->uid) ||
		    jsonx_set_str(e, "command", x->command) ||
		    jsonx_set_int(e, "uptime", (long long)(now - x->started)) ||
		    json_array_append_new(a, e))
			a = NULL;
	}
	if (a && !jsonx_set_int(o, "exit", 0))
		line = jsonx_line(o);
	if (line && r->admin) /* every user's runs: more than the default buffer */
		setsockopt(r->conn, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz));
	if (line)
		send(r->conn, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
	else
		reply(r->conn, "out of memory", EGR_EXIT_ERROR);
	free(line);
	json_decref(o);
	urun_free(r);
}

/* {"log": true}: the kept lines of the peer's uid's runs (root: of
 * every user's, each with "user" and "uid"), then, with follow, each new
 * one as it comes (the connection stays a follower: no run, not counted
 * as one; USERSOCK_FOLLOWERS a user); else the end. */
static void
answer_log(struct urun *r, bool follow)
{
	struct usersock *us = r->us;
	int start = (us->recent_at + USERSOCK_RECENT - us->nrecent) % USERSOCK_RECENT, n = 0;
	int sz = 1 << 20;
	struct urun *o;

	LIST_FOREACH(o, &us->runs, entry)
	n += o->follower && o->uid == r->uid;
	if (follow && n >= USERSOCK_FOLLOWERS) {
		refuse(r, EGR_EXIT_ERROR, "you follow the log on 4 connections already");
		return;
	}
	setsockopt(r->conn, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz));
	for (int i = 0; i < us->nrecent; i++) {
		int k = (start + i) % USERSOCK_RECENT;

		if (r->admin)
			send_admin(r->conn, us->recent_name[k], us->recent_uid[k], us->recent[k],
				   strlen(us->recent[k]));
		else if (us->recent_uid[k] == r->uid)
			send(r->conn, us->recent[k], strlen(us->recent[k]),
			     MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	if (follow)
		r->follower = true;
	else
		urun_free(r);
}

/* CMD's words after "--" (or the first that is not an option). */
static void
urun_command(struct urun *r, const struct usreq *req)
{
	size_t n = 0;
	int i = 0;

	while (i < req->nargs && strcmp(req->args[i], "--"))
		i++;
	i = i < req->nargs ? i + 1 : 0;
	for (; i < req->nargs && n < sizeof(r->command) - 1; i++)
		n += (size_t)snprintf(r->command + n, sizeof(r->command) - n, "%s%s", n ? " " : "",
				      req->args[i]);
	r->started = time(NULL);
}

/* The other runs and requests of r's uid. */
/* A run (started here or taken up), not a request nor a follower. */
static bool
is_run(const struct urun *o)
{
	return !o->follower && (o->pid > 0 || o->adopted);
}

/* The runs of r's uid: requests are answered one at a time, so a run
 * request counts every run started before it. */
static int
count_others(const struct urun *r)
{
	const struct urun *o;
	int n = 0;

	LIST_FOREACH(o, &r->us->runs, entry)
	n += o != r && o->uid == r->uid && is_run(o);
	return n;
}

static void on_conn(evutil_socket_t fd, short what, void *arg);

/* The client gone while its run goes on: its cgroup killed, run too if
 * it is stuck (urun_stop). */
static void
on_closed(evutil_socket_t fd, short what, void *arg)
{
	struct urun *r = arg;

	(void)fd;
	(void)what;
	event_free(r->ev_conn);
	r->ev_conn = NULL;
	close(r->conn);
	r->conn = -1;
	urun_stop(r);
}

/* The run reads the client's messages now (cli/svcrun.c): the daemon
 * watches only for the connection to close (EV_CLOSED), or, where the
 * event base cannot tell that without reading, leaves it to run. */
static void
watch_close(struct urun *r)
{
	bool early = event_base_get_features(r->us->base) & EV_FEATURE_EARLY_CLOSE;

	event_free(r->ev_conn);
	r->ev_conn = early ? event_new(r->us->base, r->conn, EV_CLOSED | EV_PERSIST, on_closed, r)
			   : NULL;
	if (!r->ev_conn || event_add(r->ev_conn, NULL)) {
		if (r->ev_conn)
			event_free(r->ev_conn);
		r->ev_conn = NULL;
		close(r->conn);
		r->conn = -1;
	}
}

/* {"adopt": ...} from root: a run of this service's a daemon before
 * this one started (cli/svcrun.c), coming back. It is the peer: its
 * pidfd (SO_PEERPIDFD) says when it ends, its user is listed with it,
 * and what it sends from now on are its lines. */
static void
adopt(struct urun *r, const struct usreq_adopt *a)
{
	struct passwd pw, *pwr = NULL;
	char pbuf[16384];
	socklen_t len = sizeof(r->pidfd);
	struct ucred cr;
	socklen_t crlen = sizeof(cr);

	if (getpwnam_r(a->user, &pw, pbuf, sizeof(pbuf), &pwr) || !pwr || !pw.pw_uid ||
	    getsockopt(r->conn, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) ||
	    getsockopt(r->conn, SOL_SOCKET, SO_PEERPIDFD, &r->pidfd, &len) || r->pidfd < 0) {
		refuse(r, EGR_EXIT_ERROR, "adopt: no such user, or the peer is gone");
		return;
	}
	r->admin = false;
	r->adopted = true;
	r->uid = pw.pw_uid;
	snprintf(r->name, sizeof(r->name), "%s", a->user);
	snprintf(r->command, sizeof(r->command), "%s", a->command);
	r->started = (time_t)a->started;
	r->pid = cr.pid;
	event_free(r->ev_conn);
	r->ev_conn = NULL;
	r->tap = r->conn; /* its lines come on it */
	r->conn = -1;
	r->ev_tap = event_new(r->us->base, r->tap, EV_READ | EV_PERSIST, on_tap, r);
	r->ev_child = event_new(r->us->base, r->pidfd, EV_READ | EV_PERSIST, on_child, r);
	if (!r->ev_tap || !r->ev_child || event_add(r->ev_tap, NULL) ||
	    event_add(r->ev_child, NULL)) {
		urun_free(r); /* it tries again */
		return;
	}
	log_warnx("user socket: uid %u (%s): run[%d] taken up from a daemon before",
		  (unsigned)r->uid, r->name, (int)r->pid);
}

/* The first message: the request, checked, then started under the
 * user's ceiling (users.json as it is now, with their "users" entry). */
static void
on_request(struct urun *r, char *buf, ssize_t n, int *fds, int nfds)
{
	char why[600], err[512];
	struct usreq_adopt a;
	struct usercfg c;
	struct usreq req;
	struct stat st;
	int status = EGR_EXIT_USAGE;

	if (n == -EMSGSIZE) {
		snprintf(why, sizeof(why),
			 "request cut short (at most %d bytes and %d descriptors)", USREQ_MAX_BYTES,
			 USREQ_MAX_FDS);
		refuse(r, status, why);
		return;
	}
	if (r->admin && n > 0 && !usreq_parse_adopt(buf, (size_t)n, &a, err, sizeof(err))) {
		userexec_close_fds(fds, nfds);
		adopt(r, &a);
		return;
	}
	if (usreq_parse(buf, (size_t)n, &req, err, sizeof(err))) {
		userexec_close_fds(fds, nfds);
		snprintf(why, sizeof(why), "malformed request: %s", err);
		refuse(r, status, why);
		return;
	}
	if (req.status || req.log) {
		bool want_status = req.status, follow = req.follow;

		userexec_close_fds(fds, nfds);
		usreq_free(&req);
		if (want_status)
			answer_status(r);
		else
			answer_log(r, follow);
		return;
	}
	usercfg_for(&r->us->cfg, r->name, &c);
	if (r->admin) {
		status = EGR_EXIT_ERROR;
		snprintf(why, sizeof(why),
			 "root runs `egressctl run` itself, not through the service (which "
			 "answers root's status and log)");
	} else if (member_check(r->us, r, why, sizeof(why))) {
		status = EGR_EXIT_ERROR; /* users.json read again since the connect */
	} else if (count_others(r) >= c.max_runs) {
		status = EGR_EXIT_ERROR;
		snprintf(why, sizeof(why),
			 "%s has %d runs already (users.json: max_runs_per_user %d%s)", r->name,
			 count_others(r), c.max_runs,
			 usercfg_user(&r->us->cfg, r->name) ? ", theirs" : "");
	} else if (nfds != req.nfds) {
		snprintf(why, sizeof(why), "the request names %d descriptors, %d came", req.nfds,
			 nfds);
	} else if (fstat(fds[3], &st) || !S_ISDIR(st.st_mode)) {
		snprintf(why, sizeof(why), "the fourth descriptor is not a directory");
	} else if (!check_args) {
		snprintf(why, sizeof(why), "no check of run's options");
	} else if (!check_args(req.args, req.nargs, nfds, &c, err, sizeof(err))) {
		urun_command(r, &req);
		if (!spawn_run(r, &c, &req, fds, nfds, why, sizeof(why)))
			why[0] = 0;
		if (!why[0])
			watch_close(r);
		nfds = 0;
		status = EGR_EXIT_ERROR;
	} else {
		snprintf(why, sizeof(why), "%s", err);
	}
	userexec_close_fds(fds, nfds);
	usreq_free(&req);
	if (why[0])
		refuse(r, status, why);
}

static void
on_conn(evutil_socket_t fd, short what, void *arg)
{
	struct urun *r = arg;
	char *buf = malloc(USREQ_MAX_BYTES + 1);
	int fds[USREQ_MAX_FDS], nfds;
	ssize_t n;

	(void)what;
	n = buf ? userexec_recv(fd, buf, USREQ_MAX_BYTES + 1, fds, &nfds) : -EAGAIN;
	if (n == -EAGAIN) {
		free(buf);
		return;
	}
	/* (once its run starts, the connection is run's: watch_close) */
	if (n == 0)
		urun_free(r); /* gone: a request never sent, or a follower's end */
	else if (r->follower)
		userexec_close_fds(fds, nfds); /* a follower says nothing more */
	else
		on_request(r, buf, n, fds, nfds); /* may free r */
	free(buf);
}

/* Who connected, and whether it may ask at all. */
static int
admit(struct usersock *us, struct urun *r, char *why, size_t whylen)
{
	struct peer p;
	struct urun *o;
	int n = 0;

	if (peer_identify(r->conn, us->mnt, &p, why, whylen))
		return -EPERM;
	r->uid = p.uid;
	if (p.uid == 0) { /* status and log of every user's runs (on_request) */
		if (peer_refusal(&p, why, whylen))
			return -EPERM;
		r->admin = true;
		snprintf(r->name, sizeof(r->name), "root");
		return 0;
	}
	if (p.confined) {
		snprintf(why, whylen,
			 "a process egressctl confines (cgroup %s) cannot start runs of its own",
			 p.cgroup);
		return -EPERM;
	}
	if (member_check(us, r, why, whylen))
		return -EPERM;
	/* a slow or silent client holds a connection: a few at once a user,
	 * beside their runs and followers (a run request is counted against
	 * max_runs_per_user in on_request, when it comes) */
	LIST_FOREACH(o, &us->runs, entry)
	n += o != r && o->uid == r->uid && !o->follower && !is_run(o);
	if (n >= USERSOCK_PENDING) {
		snprintf(why, whylen, "%s has %d requests waiting for an answer already", r->name,
			 n);
		return -EBUSY;
	}
	return 0;
}

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct usersock *us = arg;
	char why[PEER_CGROUP_MAX + 256];
	struct urun *r;
	int fd;

	(void)what;
	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (us->nruns >= USERSOCK_MAX_CONNS || !(r = calloc(1, sizeof(*r)))) {
		close(fd);
		return;
	}
	r->us = us;
	r->conn = fd;
	r->pidfd = -1;
	r->tap = -1;
	r->uid = (uid_t)-1;
	LIST_INSERT_HEAD(&us->runs, r, entry);
	us->nruns++;
	if (admit(us, r, why, sizeof(why))) {
		refuse(r, EGR_EXIT_ERROR, why);
		return;
	}
	r->ev_conn = event_new(us->base, fd, EV_READ | EV_PERSIST, on_conn, r);
	if (!r->ev_conn || event_add(r->ev_conn, NULL))
		urun_free(r);
}

static int
listen_on(struct usersock *us, char *errbuf, size_t errlen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	char err[PATH_MAX + 256];
	mode_t old;
	int rc;

	if (strlen(us->path) >= sizeof(sun.sun_path) || us->path[0] != '/') {
		snprintf(errbuf, errlen,
			 "--user-socket %s: expected an absolute path of at most %zu "
			 "bytes",
			 us->path, sizeof(sun.sun_path) - 1);
		return -EINVAL;
	}
	strcpy(sun.sun_path, us->path);
	us->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (us->fd < 0)
		goto fail;
	unlink(us->path);  /* stale: nobody answered on it */
	old = umask(0177); /* nobody else before the chown, chmod and ACL */
	rc = bind(us->fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc)
		goto fail;
	if (usersock_access(us->path, &us->cfg, err, sizeof(err))) {
		snprintf(errbuf, errlen, "--user-socket %s", err);
		return -EINVAL;
	}
	if (listen(us->fd, 64))
		goto fail;
	return 0;
fail:
	snprintf(errbuf, errlen, "--user-socket %s: %s", us->path, strerror(errno));
	return -EINVAL;
}

struct usersock *
usersock_open(struct event_base *base, const char *path, const char *cfgpath, char *errbuf,
	      size_t errlen)
{
	struct usersock *us = calloc(1, sizeof(*us));
	int err;

	if (!us) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	us->base = base;
	us->fd = -1;
	LIST_INIT(&us->runs);
	snprintf(us->path, sizeof(us->path), "%s", path);
	snprintf(us->cfgpath, sizeof(us->cfgpath), "%s", cfgpath);
	err = cgroup_find_mount(us->mnt, sizeof(us->mnt));
	if (err)
		snprintf(errbuf, errlen, "--user-socket: no cgroup2 mount: %s", strerror(-err));
	if (!err)
		err = usercfg_load(cfgpath, &us->cfg, errbuf, errlen);
	if (!err)
		err = listen_on(us, errbuf, errlen);
	if (!err) {
		us->ev = event_new(base, us->fd, EV_READ | EV_PERSIST, on_accept, us);
		if (!us->ev || event_add(us->ev, NULL)) {
			snprintf(errbuf, errlen, "--user-socket %s: cannot watch it", path);
			err = -ENOMEM;
		}
	}
	if (err) {
		usersock_free(us);
		return NULL;
	}
	return us;
}

void
usersock_reload(struct usersock *us)
{
	struct usercfg c;
	char err[PATH_MAX + 1024], users[32] = "";

	if (!us)
		return;
	if (usercfg_load(us->cfgpath, &c, err, sizeof(err))) {
		log_warnx("user socket: %s: the ceiling in force stays", err);
		return;
	}
	if (usersock_access(us->path, &c, err, sizeof(err))) {
		log_warnx("user socket: %s: the ceiling in force stays", err);
		usercfg_free(&c);
		if (usersock_access(us->path, &us->cfg, err, sizeof(err))) /* its own, again */
			log_warnx("user socket: %s", err);
		return;
	}
	usercfg_free(&us->cfg);
	us->cfg = c;
	if (c.nusers)
		snprintf(users, sizeof(users), ", %d user%s named", c.nusers,
			 c.nusers == 1 ? "" : "s");
	log_warnx("user socket: %s read again (groups %s%s, %d runs per user%s)", us->cfgpath,
		  c.groups[0], c.ngroups > 1 ? ", ..." : "", c.max_runs, users);
}

void
usersock_free(struct usersock *us)
{
	struct urun *r;

	if (!us)
		return;
	/* the runs go on (cli/svcrun.c): their lines to the next daemon */
	while ((r = LIST_FIRST(&us->runs)))
		urun_free(r);
	if (us->ev)
		event_free(us->ev);
	if (us->fd >= 0) {
		close(us->fd);
		unlink(us->path);
	}
	usercfg_free(&us->cfg);
	for (int i = 0; i < USERSOCK_RECENT; i++)
		free(us->recent[i]);
	free(us);
}
