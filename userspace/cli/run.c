// SPDX-License-Identifier: Apache-2.0
/* `egressctl run` (see run.h): the policy, the proxy's listeners, the
 * cgroup, the BPF programs, a sandboxed child started inside the cgroup
 * with the proxy variables set, denial lines on stderr, signal forwarding,
 * cleanup, and the child's exit status. With --ask, the terminal (term.c)
 * and the asker: CMD runs in a session of its own, on a pty egressctl
 * relays. One libevent loop serves the proxy, the ring buffer, the child's
 * pidfd, the signals and the terminal. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <event2/event.h>

#include "cli/ask.h"
#include "cli/child.h"
#include "kernel/cgroup.h"
#include "confine/jobtimer.h"
#include "lib/fdread.h"
#include "lib/log.h"
#include "policy/policy.h"
#include "proxy/quota.h"
#include "cli/run.h"
#include "cli/runstate.h"
#include "cli/svcrun.h"
#include "sandbox/sandbox.h"
#include "sandbox/unixsvc.h"
#include "cli/term.h"
#include "cli/trust.h"
#include "cli/userrun.h"
#include "audit/record.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define RO(field) offsetof(struct run_opts, field)

/* run's own rows; the target's (confine/options.c) come first in --help. */
static int
add_client_secret(void *dst, const struct opt *o, const char *arg, char *err, size_t errlen)
{
	struct run_opts *r = dst;

	(void)o;
	if (r->nclient_secrets == SECRET_MAX) {
		snprintf(err, errlen, "at most %d", SECRET_MAX);
		return -EINVAL;
	}
	r->client_secrets[r->nclient_secrets++] = arg;
	return 0;
}

static const struct opt run_opt_table[] = {
	{"ask", 0, OPT_T_FLAG, RO(ask), NULL,
	 "when no rule allows a destination, ask on the\n"
	 "terminal while it waits: [y]es once, [a]lways this\n"
	 "run, [N]o (never asked when a deny rule matched)"},
	{"ask-timeout", 0, OPT_T_SECS, RO(ask_timeout), "D",
	 "how long a question waits before it is a no\n"
	 "(60s; up to 1h)",
	 1, 3600},
	{"timeout", 0, OPT_T_NSEC, RO(timeout_ns), "D",
	 "as timeout(1): when CMD has run for D, send TERM\n"
	 "to every process of its cgroup and exit 124"},
	{"kill-after", 0, OPT_T_NSEC, RO(kill_after_ns), "D",
	 "as timeout -k: KILL every process of the cgroup\n"
	 "(cgroup.kill) if CMD still runs D after the\n"
	 "first TERM (the timeout's, or one egressctl got)"},
	{"cgroup", 0, OPT_T_STR, RO(cgroup), "NAME|PATH",
	 "NAME: <cgroup2>/egressctl/NAME (created if missing);\n"
	 "PATH: a path under the cgroup2 mount;\n"
	 "default: a fresh cgroup, removed at exit"},
	{"user", 0, OPT_T_STR, RO(user), "USER",
	 "run CMD as USER (default: the sudo caller; CMD never\n"
	 "runs as root unless USER is root)"},
	{"allow-sudo", 0, OPT_T_FLAG, RO(allow_sudo), NULL,
	 "let setuid programs (sudo) work in CMD: no\n"
	 "no_new_privs; what they run as root keeps the file\n"
	 "capabilities (chown, write any file...) but no way out\n"
	 "of the cgroup or the namespaces (mount, bpf, modules,\n"
	 "namespaces, ptrace, raw sockets and network\n"
	 "configuration stay refused)"},
	{"no-proxy-env", 0, OPT_T_FLAG, RO(no_proxy_env), NULL,
	 "do not set HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and\n"
	 "NO_PROXY for CMD (by default NO_PROXY lists the allowed\n"
	 "names the kernel checks: proxy-aware clients reach\n"
	 "them direct, the rest through the proxy and its 403);\n"
	 "without, a denial is a resolver or connection error"},
	{"quiet", 'q', OPT_T_FLAG, RO(quiet), NULL,
	 "print neither denials nor the summary at exit"},
	{"verbose", 'v', OPT_T_COUNT, 0, NULL,
	 "more diagnostics (twice: libbpf and verifier output)", .var = &log_verbose},
	{"help", 'h', OPT_T_HELP, 0, NULL, "this text"},
	/* the service's (daemon/usersock.c): CMD's environment, NUL-separated */
	{"service-env-fd", 0, OPT_T_INT, RO(env_fd), "N", NULL, 3, 1024, .flags = OPT_F_HIDDEN},
	/* and the caller's umask and rlimits, CMD's (lib/plimits.h) */
	{"service-limits", 0, OPT_T_STR, RO(limits_text), "TEXT", NULL, .flags = OPT_F_HIDDEN},
	/* and the administrator's ceiling, users.json's "allow" (one a line) */
	{"service-ceiling", 0, OPT_T_STR, RO(ceiling_text), "RULES", NULL, .flags = OPT_F_HIDDEN},
	/* and the daemon's end of a socket for each record's line (`log`) */
	{"service-log-fd", 0, OPT_T_INT, RO(log_tap), "N", NULL, 3, 1024, .flags = OPT_F_HIDDEN},
	/* the service's: the client's connection, and the user socket */
	{"service-conn-fd", 0, OPT_T_INT, RO(conn_fd), "N", NULL, 3, 1024, .flags = OPT_F_HIDDEN},
	{"service-socket", 0, OPT_T_STR, RO(service_socket), "PATH", NULL, .flags = OPT_F_HIDDEN},
	/* the client's (cli/client.c): a policy file's secret, its value read
	 * by the client as the user */
	{"client-secret", 0, OPT_T_CALL, 0, "NAME=fd:N", NULL, .call = add_client_secret,
	 .flags = OPT_F_HIDDEN},
	/* and --policy's file as the user named it, for status */
	{"client-policy-name", 0, OPT_T_STR, RO(client_policy_name), "PATH", NULL,
	 .flags = OPT_F_HIDDEN},
	{0},
};

void
run_usage(FILE *f)
{
	struct run_opts o;
	const struct opt_set sets[] = {{target_opt_table, &o.t}, {run_opt_table, &o}};

	fprintf(f, "usage: egressctl run [OPTIONS] -- CMD [ARG]...\n"
		   "\n"
		   "Runs CMD inside a cgroup v2 whose every socket is decided by BPF programs.\n"
		   "TCP goes through egressctl's proxy (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY are\n"
		   "set for CMD; clients that ignore them are redirected to its transparent\n"
		   "listener), where the policy decides. DNS (port 53, any resolver) goes to its\n"
		   "DNS responder, which answers only names a rule could allow. IPv6,\n"
		   "other UDP, raw/packet/ICMP sockets, SCTP, MPTCP, UDP-Lite, vsock and abstract\n"
		   "unix sockets are denied; loopback reaches only servers of the same cgroup.\n"
		   "Denials are printed on stderr. Without rules, everything is denied.\n"
		   "\n");
	opts_help(f, sets, 2);
	fprintf(f, "\n"
		   "Exit status: CMD's (128+N if killed by signal N); 124 --timeout ran out\n"
		   "(137 if CMD had to be killed); 2 a usage error (before CMD starts);\n"
		   "125 egressctl failed; 126 CMD not executable; 127 CMD not found.\n");
}

int
run_parse(int argc, char **argv, struct run_opts *o, const struct opt *extra)
{
	const struct opt_set sets[] = {
		{target_opt_table, &o->t}, {run_opt_table, o}, {extra, &o->t}};
	int first, rc;

	rc = opts_parse("run", sets, extra ? 3 : 2, argc, argv, true, &first);
	if (rc != OPTS_OK)
		return rc;
	if (first >= argc) {
		log_warnx("run: no command given (egressctl run [OPTIONS] -- CMD [ARG]...)");
		return OPTS_USAGE;
	}
	o->argv = argv + first;
	return OPTS_OK;
}

static void
on_child(evutil_socket_t fd, short what, void *arg)
{
	struct run_state *st = arg;
	siginfo_t si;
	int ws;

	(void)what;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, fd, &si, WEXITED | WNOHANG) == -1) {
		log_warn("waitid");
		st->status = EGR_EXIT_ERROR;
	} else if (si.si_pid == 0) {
		return; /* spurious */
	} else if (st->statfd != -1 && read(st->statfd, &ws, sizeof(ws)) == (ssize_t)sizeof(ws)) {
		/* CMD's own status, as its namespace's pid 1 saw it */
		if (WIFSIGNALED(ws))
			st->status = jobtimer_status(st->jt, 128 + WTERMSIG(ws),
						     WTERMSIG(ws) == SIGKILL);
		else
			st->status = jobtimer_status(st->jt, WEXITSTATUS(ws), false);
	} else if (si.si_code == CLD_EXITED) {
		st->status = jobtimer_status(st->jt, si.si_status, false);
	} else {
		st->status = jobtimer_status(st->jt, 128 + si.si_status, si.si_status == SIGKILL);
	}
	event_base_loopexit(st->base, NULL);
}

void
run_signal(struct run_state *st, uint32_t signo, int32_t code)
{
	if (signo == SIGWINCH) {
		if (st->term)
			term_winch(st->term); /* the pty tells CMD */
		return;
	}
	if (signo == SIGUSR1) { /* --log FILE anew (logrotate); not CMD's */
		target_reopen_log(st->tg);
		return;
	}
	jobtimer_signalled(st->jt); /* --kill-after counts from here */
	/* A terminal's ^C already reached CMD (same process group); forward
	 * only what was sent to egressctl itself. With --ask CMD has a
	 * session of its own: the terminal reaches it only through
	 * egressctl. */
	if (code == SI_KERNEL && !st->term)
		return;
	if (syscall(SYS_pidfd_send_signal, st->pidfd, signo, NULL, 0) == -1 && errno != ESRCH)
		log_warn("forwarding signal %u", signo);
}

static void
on_signal(evutil_socket_t fd, short what, void *arg)
{
	struct run_state *st = arg;
	struct signalfd_siginfo ssi;

	(void)what;
	while (read(fd, &ssi, sizeof(ssi)) == (ssize_t)sizeof(ssi))
		run_signal(st, ssi.ssi_signo, ssi.ssi_code);
}

/* --ask: egressctl's terminal, and the asker that puts questions on it. */
static int
run_prepare_ask(struct run_state *st)
{
	struct run_opts *o = st->opts;
	char errbuf[512];
	struct stat so;
	int abi = sandbox_landlock_abi();

	/* Without Landlock a process of CMD's user outside the sandbox
	 * (the user's shell) hands it the terminal: /proc/PID/fd/0. */
	if (abi < 1) {
		log_warnx("--ask needs Landlock (CMD could reach the terminal through "
			  "/proc/PID/fd of the user's other processes): %s",
			  strerror(-abi));
		return -ENOTSUP;
	}
	/* the service's run has no controlling terminal: the client's
	 * descriptors are its stdio */
	st->term = term_open(st->base, o->env_fd != 0, errbuf, sizeof(errbuf));
	if (!st->term) {
		log_warnx("%s", errbuf);
		return -ENOTTY;
	}
	if (o->t.log_file && !strcmp(o->t.log_file, "-") && !fstat(1, &so) && S_ISCHR(so.st_mode) &&
	    so.st_rdev == term_rdev(st->term)) {
		log_warnx("--log - would write to the terminal the questions are asked on: "
			  "give --log a file");
		return -EINVAL;
	}
	st->asker = asker_new(st->base, st->term, o->ask_timeout);
	if (!st->asker) {
		log_warnx("cannot set up --ask: out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Is this egressctl a confined command of another? Its CMD sees no
 * cgroupfs (the sandbox hides it) and no capabilities, so the run would
 * fail with "no cgroup v2 hierarchy" or "needs root": say what is going on
 * instead. Known by the process's own cgroup (/proc/self/cgroup: below
 * egressctl/, where run makes its cgroups, or below $EGRESSCTL_CGROUP,
 * which run sets for CMD). Writes the cgroup into out. */
static bool
confined_already(char *out, size_t outlen)
{
	const char *env = getenv("EGRESSCTL_CGROUP");
	char text[4096], *p;
	ssize_t n;
	size_t el;
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);

	if (fd == -1)
		return false;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return false;
	text[n] = 0;
	p = strstr(text, "0::"); /* the cgroup2 line */
	if (!p || (p != text && p[-1] != '\n'))
		return false;
	p += 3;
	p[strcspn(p, "\n")] = 0;
	snprintf(out, outlen, "%s", p);
	if (!strncmp(p, "/egressctl/", 11)) /* cgroup.c: named and run-PID cgroups */
		return true;
	el = env ? strlen(env) : 0;
	return el > 1 && env[0] == '/' && !strncmp(p, env, el) && (p[el] == 0 || p[el] == '/');
}

/* --service-env-fd: CMD's environment, NUL-separated strings up to the
 * end of the descriptor (the service's memfd), into o->environ. */
static int
run_read_env(struct run_opts *o)
{
	size_t n = 0;
	char *buf;
	ssize_t len = fd_read_all(o->env_fd, 1u << 22, &buf);

	close(o->env_fd);
	if (len < 0)
		return -1;
	for (ssize_t i = 0; i < len; i++)
		n += !buf[i];
	o->environ = calloc(n + 2, sizeof(char *)); /* a last one without NUL */
	if (!o->environ) {
		free(buf);
		return -1;
	}
	n = 0;
	for (size_t i = 0; i < (size_t)len; i += strlen(buf + i) + 1)
		o->environ[n++] = buf + i;
	o->env_buf = buf;
	return 0;
}

/* The service's run has the daemon's environment, not its client's: the
 * headers --log otlp: sends (tokens, audit/otlp_conn.c) are the client's,
 * taken from the environment it sent (which CMD gets, as root's run's CMD
 * gets root's). */
static void
run_env_otlp(const struct run_opts *o)
{
	static const char *const vars[] = {"OTEL_EXPORTER_OTLP_HEADERS",
					   "OTEL_EXPORTER_OTLP_LOGS_HEADERS"};

	for (size_t v = 0; v < sizeof(vars) / sizeof(vars[0]); v++) {
		size_t n = strlen(vars[v]);

		unsetenv(vars[v]);
		for (char **e = o->environ; *e; e++)
			if (!strncmp(*e, vars[v], n) && (*e)[n] == '=')
				setenv(vars[v], *e + n + 1, 1);
	}
}

/* Root, the descriptor limit, the user CMD runs as, the event loop and,
 * with --ask, the terminal and its asker. */
static int
run_prepare(struct run_state *st)
{
	struct run_opts *o = st->opts;
	char errbuf[512], cg[PATH_MAX];
	int err;

	if ((geteuid() != 0 || cgroup_find_mount(errbuf, sizeof(errbuf))) &&
	    confined_already(cg, sizeof(cg))) {
		log_warnx("already confined by egressctl in cgroup %s: a confined command cannot "
			  "confine another (cgroupfs and bpffs are hidden from it); give the outer "
			  "run the rules, or run this one outside it",
			  cg);
		return -EPERM;
	}
	/* --log: CMD's output is egressctl's stdout: decisions would mix in */
	if (o->t.log_file && !strcmp(o->t.log_file, "-")) {
		log_warnx("--log -: CMD writes to the same standard output; give a file, fd:N "
			  "(e.g. --log fd:3 3>&1 >/dev/tty), syslog or otlp:URL");
		return -EINVAL;
	}
	if (geteuid() != 0) {
		log_warnx("run needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN): use sudo, or "
			  "have the service run (egressctl daemon --user-socket %s) and join its "
			  "group (egressctl)",
			  userrun_socket_path());
		return -EPERM;
	}
	if (o->env_fd && run_read_env(o)) {
		log_warnx("cannot read the command's environment from descriptor %d", o->env_fd);
		return -EINVAL;
	}
	if (o->env_fd)
		run_env_otlp(o);
	if (o->nclient_secrets && !o->env_fd) {
		log_warnx("--client-secret: only in a run the service starts (the values its "
			  "client read)");
		return -EINVAL;
	}
	if (o->limits_text && plimits_parse(o->limits_text, &o->limits)) {
		log_warnx("--service-limits %s: not a umask and %d limits", o->limits_text,
			  PLIMITS_N);
		return -EINVAL;
	}
	err = quota_raise_nofile(&st->nofile);
	if (err)
		log_info("cannot raise the descriptor limit to the hard one: %s", strerror(-err));
	/* No process without CAP_SYS_PTRACE reaches into ours (/proc/PID/fd,
	 * mem, environ), whatever its uid; no core dump carries our memory. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (sandbox_resolve_user(o->user, &st->user, errbuf, sizeof(errbuf))) {
		log_warnx("%s", errbuf);
		return -EINVAL;
	}
	signal(SIGPIPE, SIG_IGN);
	{
		/* epoll changes are batched into the next epoll_wait: a
		 * connection's event_del/event_add pairs cost no system call */
		struct event_config *cfg = event_config_new();

		if (cfg)
			event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
		st->base = cfg ? event_base_new_with_config(cfg) : NULL;
		if (cfg)
			event_config_free(cfg);
	}
	if (!st->base) {
		log_warnx("cannot set up the event loop");
		return -ENOMEM;
	}
	return o->ask ? run_prepare_ask(st) : 0;
}

/* The cgroup CMD runs in: resolved, created if missing, locked against a
 * second run, its id read. */
static int
run_cgroup(struct run_state *st, uint64_t *cgid)
{
	const char *arg = st->opts->cgroup;
	char mnt[PATH_MAX];
	int err;

	err = cgroup_find_mount(mnt, sizeof(mnt));
	if (err) {
		log_warnx("no cgroup v2 hierarchy is mounted (%s): egressctl needs cgroup2",
			  strerror(-err));
		return err;
	}
	err = cgroup_resolve(mnt, arg, getpid(), st->cgpath, sizeof(st->cgpath), &st->fresh);
	if (err) {
		log_warnx("--cgroup %s: not a NAME ([A-Za-z0-9._-]) nor a path below %s", arg, mnt);
		return err;
	}
	st->cgrel = st->cgpath + strlen(mnt);
	err = cgroup_create(st->cgpath, &st->created);
	if (err) {
		log_warnx("cannot create cgroup %s: %s", st->cgpath, strerror(-err));
		return err;
	}
	st->cg_fd = open(st->cgpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->cg_fd == -1) {
		err = -errno;
		log_warn("cannot open cgroup %s", st->cgpath);
		return err;
	}
	if (flock(st->cg_fd, LOCK_EX | LOCK_NB)) {
		log_warnx("cgroup %s is in use by another egressctl run", st->cgpath);
		return -EBUSY;
	}
	*cgid = cgroup_id_of(st->cgpath);
	if (!*cgid) {
		err = -errno;
		log_warn("cannot read the id of cgroup %s", st->cgpath);
		return err;
	}
	return 0;
}

/* The denied unix sockets there are, and every other name of them through
 * the mount table: masked in CMD's mount namespace, which any way of
 * naming them resolves into (a relative path, a symlink, /proc/self/root).
 * A socket with a second hard link cannot be masked: refused, in words.
 * egressctl's own are masked too: its directory in /run (status sockets,
 * the daemon's default control socket) and every daemon's control socket
 * wherever it is. */
static int
run_unix_masks(struct run_state *st)
{
	char errbuf[512];
	char **exist;
	int err;

	exist = unixsvc_existing(target_unix_svc(st->tg), NULL);
	if (exist && unixsvc_add_egressctl(UNIXSVC_EGR_DIR, &exist))
		exist = NULL;
	if (!exist) {
		log_warnx("cannot list the unix sockets to mask: out of memory");
		return -ENOMEM;
	}
	/* the service's run: found as the user, whose --deny-unix paths
	 * they are (and what they cannot look up, CMD cannot reach) */
	if (st->opts->env_fd)
		err = sandbox_unix_masks_as(&st->user, exist, &st->masks, errbuf, sizeof(errbuf));
	else
		err = sandbox_unix_masks(exist, &st->masks, errbuf, sizeof(errbuf));
	unixsvc_free_list(exist);
	if (err)
		log_warnx("%s", errbuf);
	return err;
}

/* The signals egressctl takes (and forwards), as a signalfd. */
static int
run_signals(struct run_state *st)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGUSR1); /* --log FILE anew */
	if (st->term)
		sigaddset(&mask, SIGWINCH);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	st->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (st->sfd == -1) {
		log_warn("cannot set up signal handling");
		return -errno;
	}
	return 0;
}

/* Kills CMD when what watches it cannot be set up. */
static void
kill_child(struct run_state *st)
{
	kill(st->pid, SIGKILL);
	waitid(P_PIDFD, st->pidfd, &(siginfo_t){0}, WEXITED);
	st->status = EGR_EXIT_ERROR;
}

/* CMD started in the cgroup, and what watches it: its pidfd, the signals,
 * the job timer. */
static int
run_start(struct run_state *st)
{
	struct run_opts *o = st->opts;
	int err;

	err = run_spawn(st, st->cg_fd, &st->user);
	if (err) {
		if (err != -ECHILD)
			log_warnx("cannot start %s: %s", o->argv[0], strerror(-err));
		return err;
	}
	log_info("started %s[%d] in %s; proxy %s, socks %s", o->argv[0], st->pid, st->cgpath,
		 target_http_url(st->tg), target_socks_url(st->tg));
	st->jt = jobtimer_new(st->base, st->cgpath, o->timeout_ns, o->kill_after_ns, o->quiet);
	if (!st->jt && errno) {
		log_warnx("cannot set up --timeout: %s", strerror(errno));
		kill_child(st);
		return -ENOMEM;
	}
	st->ev_child = event_new(st->base, st->pidfd, EV_READ | EV_PERSIST, on_child, st);
	st->ev_sig = event_new(st->base, st->sfd, EV_READ | EV_PERSIST, on_signal, st);
	if (!st->ev_child || !st->ev_sig || event_add(st->ev_child, NULL) ||
	    event_add(st->ev_sig, NULL)) {
		log_warnx("cannot set up the event loop");
		kill_child(st);
		return -ENOMEM;
	}
	return 0;
}

/* Gives back what run set up, whatever got set up. A cgroup egressctl
 * made is emptied and removed; processes left in one it did not make
 * keep it confined: the programs stay pinned rather than let them out. */
static void
run_release_cgroup(struct run_state *st)
{
	int err;

	if (st->cg_fd == -1)
		return;
	if (st->created || st->fresh) {
		err = cgroup_kill_and_remove(st->cgpath, st->pid ? 5000 : 1000);
		if (err)
			log_warnx("cannot remove cgroup %s: %s", st->cgpath, strerror(-err));
		if (st->attached)
			target_detach(st->tg);
	} else if (st->attached && cgroup_populated(st->cgpath)) {
		log_warnx("cgroup %s still has processes: its programs stay attached (pinned in "
			  "%s)",
			  st->cgpath, target_pin_dir(st->tg));
	} else if (st->attached) {
		target_detach(st->tg);
	}
	close(st->cg_fd);
	st->cg_fd = -1;
}

static void
run_teardown(struct run_state *st)
{
	struct run_opts *o = st->opts;

	if (st->ev_child)
		event_free(st->ev_child);
	if (st->ev_sig)
		event_free(st->ev_sig);
	svcrun_quiet(st->svc); /* (the last records still go through it) */
	jobtimer_free(st->jt);
	if (st->sfd != -1)
		close(st->sfd);
	if (st->pidfd != -1)
		close(st->pidfd);
	if (st->statfd != -1)
		close(st->statfd);
	sandbox_free_masks(st->masks);
	run_release_cgroup(st);
	if (st->tg)
		target_finish(st->tg); /* before the asker: connections withdraw their questions */
	svcrun_free(st->svc);
	st->svc = NULL;
	asker_free(st->asker);
	term_free(st->term); /* the summary goes to the terminal as the user left it */
	if (st->tg && st->pid && !o->quiet)
		target_print_summary(st->tg, o->t.audit);
	if (st->tg && st->pid) {
		target_write_suggestion(st->tg);
		target_write_summary_file(st->tg); /* --summary FILE */
	}
	target_free(st->tg);
	trust_remove(&st->trust);
	if (st->base)
		event_base_free(st->base);
}

/* HTTPS inspection: the CA CMD is to trust, when the policy inspects. */
static int
run_trust(struct run_state *st)
{
	char errbuf[512];
	size_t len = 0;
	char *pem = target_ca_pem(st->tg, &len);
	int err;

	if (!pem)
		return 0;
	err = trust_write(&st->trust, pem, len, errbuf, sizeof(errbuf));
	free(pem);
	if (err)
		log_warnx("%s", errbuf);
	else
		log_info("HTTPS inspection: CMD trusts the CA in %s", st->trust.bundle);
	return err;
}

/* --service-log-fd: each record as its JSON line, one datagram, to the
 * daemon (the user's `egressctl log`); dropped when it cannot take it,
 * kept while no daemon is there (cli/svcrun.c). */
static void
run_tap(void *arg, const struct audit_rec *r)
{
	struct run_state *st = arg;
	struct timespec ts;
	char line[2048];
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = audit_format(r, (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000, line,
			 sizeof(line));
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	if (st->svc)
		svcrun_tap(st->svc, line, (size_t)n);
	else if (st->opts->log_tap >= 0)
		(void)!send(st->opts->log_tap, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* --service-ceiling: the first allow rule of the policy (options, file)
 * within none of users.json's "allow" refuses the run, named. */
static int
run_ceiling(struct run_state *st)
{
	const char *rules[POLICY_CEILING_MAX];
	const struct policy_rule *r;
	char *text = strdup(st->opts->ceiling_text), *save = NULL, errbuf[512];
	int n = 0;

	if (!text)
		return -ENOMEM;
	for (char *t = strtok_r(text, "\n", &save); t && n < POLICY_CEILING_MAX;
	     t = strtok_r(NULL, "\n", &save))
		rules[n++] = t;
	r = policy_outside(target_policy(st->tg), rules, n, errbuf, sizeof(errbuf));
	if (r)
		log_warnx("the allow rule %s (%s) is beyond what the administrator lets you allow "
			  "(users.json \"allow\": %s%s)",
			  r->text, r->source ? r->source : "policy", n ? rules[0] : "nothing",
			  n > 1 ? ", ..." : "");
	else if (errbuf[0])
		log_warnx("--service-ceiling: %s", errbuf);
	free(text);
	if (!r && !errbuf[0])
		return 0;
	st->status = EGR_EXIT_USAGE;
	return -EPERM;
}

int
run_main(struct run_opts *o)
{
	struct run_state st = {.opts = o, .pidfd = -1, .statfd = -1, .cg_fd = -1, .sfd = -1};
	struct svcrun_watch *watch = NULL;
	char errbuf[512];
	size_t n = 0;
	uint64_t cgid;

	st.status = EGR_EXIT_ERROR;
	if (o->env_fd) { /* the service's run: a stop held until it can be forwarded */
		sigset_t stop;

		sigemptyset(&stop);
		sigaddset(&stop, SIGINT);
		sigaddset(&stop, SIGTERM);
		sigaddset(&stop, SIGHUP);
		sigaddset(&stop, SIGQUIT);
		sigprocmask(SIG_BLOCK, &stop, NULL);
	}
	if (o->conn_fd && !(watch = svcrun_watch_setup(o->conn_fd))) {
		log_warn("cannot watch the client's connection");
		goto out;
	}
	for (char **a = o->argv; *a && n < sizeof(st.cmdline); a++)
		n += (size_t)snprintf(st.cmdline + n, sizeof(st.cmdline) - n, "%s%s", n ? " " : "",
				      *a);
	st.env.label = "";
	st.env.command = st.cmdline;
	st.env.denial_lines = !o->quiet;
	st.env.hands_ca = true; /* run_trust(): CMD's trust files */
	/* secrets: the service's run takes their values from its client only
	 * (fd:N: read as the user, cli/client.c), never as root for a user */
	st.env.hands_secrets = true;
	st.env.secrets_from_client = o->env_fd != 0;
	st.env.client_secrets = o->client_secrets;
	st.env.nclient_secrets = o->nclient_secrets;
	st.env.policy_name = o->env_fd && o->t.policy_file ? o->client_policy_name : NULL;
	st.env.emit_redirects = o->t.log_file || log_verbose > 0; /* only when someone reads them */
	if (run_prepare(&st))
		goto out;
	st.env.ask = asker_hook(st.asker);
	if (o->log_tap) {
		st.env.on_record = run_tap;
		st.env.record_arg = &st;
	}
	st.tg = target_new(st.base, &o->t, &st.env, NULL, errbuf, sizeof(errbuf));
	if (!st.tg) {
		log_warnx("%s", errbuf);
		goto out;
	}
	if (o->ceiling_text && run_ceiling(&st))
		goto out;
	svcrun_watch_done(watch); /* a client gone from now on: svcrun_open's */
	watch = NULL;
	if (run_cgroup(&st, &cgid))
		goto out;
	if (target_attach(st.tg, st.cgpath, st.cg_fd, cgid, false, errbuf, sizeof(errbuf))) {
		log_warnx("%s", errbuf);
		goto out;
	}
	st.attached = true;
	if (run_unix_masks(&st) || run_trust(&st))
		goto out;
	if (run_signals(&st) || run_start(&st))
		goto out;
	if ((o->conn_fd || o->log_tap) && !(st.svc = svcrun_open(&st))) {
		log_warnx("cannot watch the service's connections: out of memory");
		kill_child(&st);
		goto out;
	}
	event_base_dispatch(st.base);
	if (st.term)
		term_drain(st.term); /* what CMD wrote last */
out:
	svcrun_watch_done(watch);
	run_teardown(&st);
	svcrun_exit(o, st.status); /* after the summary: the client's prompt follows */
	free(o->environ);
	free(o->env_buf);
	return st.status;
}
