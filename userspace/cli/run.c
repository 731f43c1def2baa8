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
#include "policy/audit.h"
#include "kernel/cgroup.h"
#include "dns/responder.h"
#include "kernel/events.h"
#include "cli/jobtimer.h"
#include "kernel/loader.h"
#include "lib/log.h"
#include "policy/policy.h"
#include "proxy/proxy.h"
#include "proxy/quota.h"
#include "cli/run.h"
#include "kernel/sandbox.h"
#include "cli/status.h"
#include "cli/summary.h"
#include "cli/term.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct run_state {
	struct run_opts *opts;
	struct loader *ld;
	struct proxy *px;
	struct policy *policy;
	struct audit *audit;
	struct event_base *base;
	pid_t pid;
	int pidfd;
	int status; /* exit status to return */
	char env_http[64], env_socks[64];
	struct summary *summary;
	struct term *term; /* --ask: egressctl's terminal */
	struct asker *asker;
	struct jobtimer *jt; /* --timeout, --kill-after */
	const char *cgpath;
	uint64_t cgid;
	char status_path[128];
	double tokens, last_refill; /* denial line rate limit */
	unsigned long suppressed;
	struct rlimit nofile; /* as egressctl was started: CMD gets it back */
};

struct policy *
run_build_policy(const char *policy_file, const struct rule_arg *rules, int n, char *errbuf,
		 size_t errlen)
{
	char err[512];
	struct policy *p = policy_new();

	if (!p) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	if (policy_file && config_load_file(p, policy_file, err, sizeof(err))) {
		snprintf(errbuf, errlen, "--policy %s: %s", policy_file, err);
		policy_free(p);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		const char *opt = rules[i].action == POLICY_ALLOW ? "--allow" : "--deny";

		if (policy_add(p, rules[i].action, rules[i].text, NULL, opt, err, sizeof(err))) {
			snprintf(errbuf, errlen, "%s %s: %s", opt, rules[i].text, err);
			policy_free(p);
			return NULL;
		}
	}
	return p;
}

static int
fast_add(void *arg, const struct sockaddr *sa, uint64_t ttl_ns)
{
	return loader_fast_add(arg, sa, IPPROTO_TCP, ttl_ns);
}

static int
fast_del(void *arg, const struct sockaddr *sa)
{
	return loader_fast_del(arg, sa, IPPROTO_TCP);
}

/* An exact IPv4 ADDR:PORT allow rule also opens the kernel fast path: the
 * policy allows any TCP to it, so the proxy hop would add nothing (and for
 * loopback it is the only way through). */
static bool
fast_path_rule(const char *s, struct sockaddr_in *sin)
{
	char host[INET_ADDRSTRLEN];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (!strncmp(s, "tcp://", 6))
		s += 6;
	colon = strrchr(s, ':');
	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return false;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return false;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535)
		return false;
	sin->sin_port = htons((uint16_t)port);
	return true;
}

/* Denial lines on stderr, at most DENIAL_BURST at once and DENIAL_RATE a
 * second after that; the rest are counted and said once (the summary has
 * them all). */
#define DENIAL_RATE  10
#define DENIAL_BURST 20

/* Names in a denial line come from CMD: none of their control bytes (C0,
 * DEL, and C1 raw or UTF-8 encoded) may reach the terminal through
 * egressctl's own lines. Printable ASCII and our arrow stay. */
static void
sanitize_line(char *line)
{
	static const char arrow[] = "\u2192";
	unsigned char *c = (unsigned char *)line;

	while (*c) {
		if (!strncmp((char *)c, arrow, sizeof(arrow) - 1)) {
			c += sizeof(arrow) - 1;
			continue;
		}
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
		c++;
	}
}

static void
denial_line(struct run_state *st, char *line)
{
	struct timespec ts;
	double now;

	if (st->opts->quiet)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	st->tokens += (now - st->last_refill) * DENIAL_RATE;
	if (st->tokens > DENIAL_BURST)
		st->tokens = DENIAL_BURST;
	st->last_refill = now;
	if (st->tokens < 1) {
		st->suppressed++;
		return;
	}
	st->tokens -= 1;
	if (st->suppressed) {
		fprintf(stderr, "egressctl: %lu more denials not shown (the summary has them)\n",
			st->suppressed);
		st->suppressed = 0;
	}
	sanitize_line(line);
	fprintf(stderr, "egressctl: %s\n", line);
}

/* Every decision of the proxy and the DNS responder, and the kernel's. */
static void
on_decision(void *arg, const struct audit_rec *r)
{
	struct run_state *st = arg;
	char line[800];

	if (!strcmp(r->decision, "redirect"))
		return; /* not a decision: the proxy decides next */
	summary_add(st->summary, r);
	if (!strcmp(r->decision, "allow") || !strcmp(r->source, "bpf"))
		return; /* kernel lines are printed by on_event */
	snprintf(line, sizeof(line), "%s %s[%u] \u2192 %s (%s, %s)",
		 strcmp(r->decision, "deny") ? "would deny" : "denied", r->comm ? r->comm : "?",
		 r->pid,
		 r->dest   ? r->dest
		 : r->host ? r->host
			   : "?",
		 r->reason, r->source);
	denial_line(st, line);
}

static void
on_event(const struct egr_event *e, void *arg)
{
	struct run_state *st = arg;
	struct sockaddr_storage ss = {0};
	struct audit_rec r = {0};
	char line[512], dest[160], comm[17], suggest[160] = "";
	unsigned int port = ntohs(e->port);

	events_dest(e, dest, sizeof(dest));
	policy_safe_comm(e->comm, comm);
	if (e->family != AF_UNIX && e->hook != EGR_H_SOCK_CREATE) {
		static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

		if (!memcmp(e->addr, mapped, 12)) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;

			in->sin_family = AF_INET;
			memcpy(&in->sin_addr, &e->addr[3], 4);
			in->sin_port = e->port;
		} else {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

			in6->sin6_family = AF_INET6;
			memcpy(&in6->sin6_addr, e->addr, 16);
			in6->sin6_port = e->port;
		}
		r.ip = (struct sockaddr *)&ss;
		r.port = (uint16_t)port;
	}
	/* a loopback port opens with an address rule; nothing else here can */
	if (e->reason == EGR_R_LOOPBACK && ss.ss_family == AF_INET)
		snprintf(suggest, sizeof(suggest), "%s", dest);
	r.decision = events_decision(e);
	r.reason = events_reason(e->reason);
	r.source = "bpf";
	r.pid = e->tgid;
	r.comm = comm;
	r.cgroup = e->cgroup_id;
	r.dest = dest;
	r.suggest = suggest[0] ? suggest : NULL;
	audit_write(st->audit, &r);
	if (e->verdict == EGR_V_REDIRECT || e->verdict == EGR_V_ALLOW)
		return;
	events_format(e, line, sizeof(line));
	denial_line(st, line);
}

/* One status request: the document, then close. */
static void
on_status(evutil_socket_t lfd, short what, void *arg)
{
	struct run_state *st = arg;
	struct status_info si = {0};
	struct proxy_stats ps;
	struct dns_stats ds;
	char cmd[512];
	size_t n = 0;
	char *doc;
	int fd;

	(void)what;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	for (char **a = st->opts->argv; *a && n < sizeof(cmd); a++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s%s", n ? " " : "", *a);
	proxy_get_stats(st->px, &ps);
	proxy_get_dns_stats(st->px, &ds);
	si.pid = getpid();
	si.cgroup_id = st->cgid;
	si.cgroup = st->cgpath;
	si.command = cmd;
	si.policy_file = st->opts->policy_file;
	si.rules = policy_count(st->policy);
	si.audit = st->opts->audit;
	si.http_port = proxy_port(st->px, PROXY_L_HTTP);
	si.socks_port = proxy_port(st->px, PROXY_L_SOCKS);
	si.tproxy_port = proxy_port(st->px, PROXY_L_TPROXY);
	si.dns_port = proxy_dns_port(st->px);
	si.proxy_accepted = ps.accepted;
	si.proxy_allowed = ps.allowed;
	si.proxy_denied = ps.denied;
	si.proxy_unattributed = ps.refused_unattributed;
	si.dns_queries = ds.queries;
	si.dns_refused = ds.refused;
	si.dns_cached = ds.cached;
	si.dns_upstream = ds.upstream;
	si.dns_servfail = ds.servfail;
	si.dns_fast = ds.fast_path;
	doc = status_render(&si);
	if (doc && send(fd, doc, strlen(doc), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("status: %s", strerror(errno));
	free(doc);
	close(fd);
}

static void
on_ring(evutil_socket_t fd, short what, void *arg)
{
	struct run_state *st = arg;

	(void)fd;
	(void)what;
	loader_events_consume(st->ld);
}

static void
on_child(evutil_socket_t fd, short what, void *arg)
{
	struct run_state *st = arg;
	siginfo_t si;

	(void)what;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, fd, &si, WEXITED | WNOHANG) == -1) {
		log_warn("waitid");
		st->status = EGR_EXIT_ERROR;
	} else if (si.si_pid == 0) {
		return; /* spurious */
	} else if (si.si_code == CLD_EXITED) {
		st->status = jobtimer_status(st->jt, si.si_status, false);
	} else {
		st->status = jobtimer_status(st->jt, 128 + si.si_status, si.si_status == SIGKILL);
	}
	event_base_loopexit(st->base, NULL);
}

static void
on_signal(evutil_socket_t fd, short what, void *arg)
{
	struct run_state *st = arg;
	struct signalfd_siginfo ssi;

	(void)what;
	while (read(fd, &ssi, sizeof(ssi)) == (ssize_t)sizeof(ssi)) {
		if (ssi.ssi_signo == SIGWINCH) {
			if (st->term)
				term_winch(st->term); /* the pty tells CMD */
			continue;
		}
		jobtimer_signalled(st->jt); /* --kill-after counts from here */
		/* A terminal's ^C already reached CMD (same process group);
		 * forward only what was sent to egressctl itself. With --ask
		 * CMD has a session of its own: the terminal reaches it only
		 * through egressctl. */
		if (ssi.ssi_code == SI_KERNEL && !st->term)
			continue;
		if (syscall(SYS_pidfd_send_signal, st->pidfd, ssi.ssi_signo, NULL, 0) == -1 &&
		    errno != ESRCH)
			log_warn("forwarding signal %u", ssi.ssi_signo);
	}
}

/* Does a file named cmd exist in some directory of PATH? */
static bool
in_path(const char *cmd)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (!path)
		path = "/usr/local/bin:/bin:/usr/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? path : ".", cmd) <
			    (int)sizeof(buf) &&
		    access(buf, F_OK) == 0)
			return true;
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

struct child_env {
	const char *http;	     /* http://127.0.0.1:PORT */
	const char *socks;	     /* socks5h://127.0.0.1:PORT */
	const struct rlimit *nofile; /* the descriptor limit CMD gets */
};

/* The child: between clone3() and execve(). Reports failure on errfd as
 * "<exit status> <message>". */
static __attribute__((noreturn)) void
child_exec(struct run_opts *o, const struct sandbox_user *u, const struct sandbox_term *term,
	   int errfd, const struct child_env *env)
{
	const char *what = "";
	char msg[512];
	sigset_t none;
	int err, status;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (env->nofile->rlim_max) /* egressctl raised its own limit, not CMD's */
		setrlimit(RLIMIT_NOFILE, env->nofile);
	err = sandbox_enter(u, term, errfd, &what);
	if (err) {
		snprintf(msg, sizeof(msg), "%d cannot confine the command (%s): %s", EGR_EXIT_ERROR,
			 what, strerror(-err));
		if (write(errfd, msg, strlen(msg)) < 0)
			_exit(EGR_EXIT_ERROR);
		_exit(EGR_EXIT_ERROR);
	}
	if (u->home[0])
		setenv("HOME", u->home, 1);
	if (u->name[0]) {
		setenv("USER", u->name, 1);
		setenv("LOGNAME", u->name, 1);
	}
	setenv("HTTP_PROXY", env->http, 1);
	setenv("http_proxy", env->http, 1);
	setenv("HTTPS_PROXY", env->http, 1);
	setenv("https_proxy", env->http, 1);
	setenv("ALL_PROXY", env->socks, 1);
	setenv("all_proxy", env->socks, 1);
	setenv("NO_PROXY", "localhost,127.0.0.1,::1", 1);
	setenv("no_proxy", "localhost,127.0.0.1,::1", 1);
	execvp(o->argv[0], o->argv);
	err = errno;
	status = (err == ENOENT || err == ENOTDIR) ? EGR_EXIT_NOTFOUND : EGR_EXIT_NOEXEC;
	/* execvp says EACCES when a PATH directory was unreadable and the
	 * command exists nowhere: that is "not found", as the shell says */
	if (err == EACCES && !strchr(o->argv[0], '/') && !in_path(o->argv[0]))
		status = EGR_EXIT_NOTFOUND;
	if (status == EGR_EXIT_NOTFOUND)
		snprintf(msg, sizeof(msg), "%d %s: command not found", status, o->argv[0]);
	else
		snprintf(msg, sizeof(msg), "%d %s: %s", status, o->argv[0], strerror(err));
	if (write(errfd, msg, strlen(msg)) < 0)
		_exit(status);
	_exit(status);
}

/* The pty's master, sent by the child (sandbox.c make_pty). -1 when the
 * child ended before it sent one (its error comes through the pipe). */
static int
recv_master(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte;
	struct iovec iov = {&byte, 1};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	ssize_t n;
	int fd;

	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	c = n == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* Starts CMD directly inside the cgroup: no instruction of its own runs
 * outside it, and no socket made outside can follow it in. With --ask, the
 * child makes CMD's pty and sends its master back for the relay. */
static int
spawn(struct run_state *st, int cg_fd, const struct sandbox_user *u)
{
	struct sandbox_term term, *tp = NULL;
	struct clone_args args;
	char msg[512];
	int pfd[2], sv[2] = {-1, -1}, pidfd = -1, master = -1, err;
	ssize_t n;
	pid_t pid;

	if (st->term) {
		memset(&term, 0, sizeof(term));
		term.tty = term_rdev(st->term);
		term.stdio = term_stdio(st->term);
		term.pty_sock = -1;
		term_modes(st->term, &term.tios, &term.ws);
		if (term.stdio && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
			return -errno;
		term.pty_sock = sv[1];
		tp = &term;
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		err = -errno;
		goto out_sv;
	}
	memset(&args, 0, sizeof(args));
	args.flags = CLONE_INTO_CGROUP | CLONE_PIDFD;
	args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)cg_fd;
	fflush(NULL);
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid == -1) {
		err = -errno;
		close(pfd[0]);
		close(pfd[1]);
		goto out_sv;
	}
	if (pid == 0) {
		close(pfd[0]);
		if (sv[0] != -1)
			close(sv[0]);
		struct child_env env = {st->env_http, st->env_socks, &st->nofile};

		child_exec(st->opts, u, tp, pfd[1], &env);
	}
	close(pfd[1]);
	st->pid = pid;
	st->pidfd = pidfd;
	if (sv[1] != -1) {
		close(sv[1]);
		sv[1] = -1;
		master = recv_master(sv[0]);
	}
	do
		n = read(pfd[0], msg, sizeof(msg) - 1);
	while (n == -1 && errno == EINTR);
	close(pfd[0]);
	if (n > 0) {
		char *sp;

		msg[n] = 0;
		st->status = (int)strtol(msg, &sp, 10);
		log_warnx("%s", *sp ? sp + 1 : msg);
		waitid(P_PIDFD, pidfd, &(siginfo_t){0}, WEXITED);
		err = -ECHILD;
		goto out_master;
	}
	err = 0;
	if (sv[0] != -1) {
		if (master == -1) {
			log_warnx("the command's terminal never arrived");
			err = -EIO;
		} else {
			err = term_attach_pty(st->term, master);
			if (!err)
				master = -1; /* the relay owns it */
		}
		if (err) {
			kill(pid, SIGKILL);
			waitid(P_PIDFD, pidfd, &(siginfo_t){0}, WEXITED);
			st->status = EGR_EXIT_ERROR;
			err = -ECHILD;
		}
	}
out_master:
	if (master != -1)
		close(master);
out_sv:
	if (sv[0] != -1)
		close(sv[0]);
	if (sv[1] != -1)
		close(sv[1]);
	return err;
}

/* Gives back what run set up. Processes left in a cgroup egressctl did not
 * create keep it confined: the links stay pinned rather than let them out. */
static void
run_cleanup(struct run_state *st, const char *cgpath, bool created)
{
	if (created) {
		int err = cgroup_kill_and_remove(cgpath, 5000);

		if (err)
			log_warnx("cannot remove cgroup %s: %s", cgpath, strerror(-err));
		loader_detach(st->ld);
		return;
	}
	if (cgroup_populated(cgpath)) {
		log_warnx("cgroup %s still has processes: its programs stay attached (pinned in "
			  "%s)",
			  cgpath, loader_pin_dir(st->ld));
		return;
	}
	loader_detach(st->ld);
}

/* The asker, then the terminal (its modes and stderr back as they were).
 * After proxy_free(): connections withdraw their questions. */
static void
release_term(struct run_state *st)
{
	asker_free(st->asker);
	st->asker = NULL;
	term_free(st->term);
	st->term = NULL;
}

static void
run_free(struct run_state *st)
{
	proxy_free(st->px); /* before the asker: connections withdraw their questions */
	st->px = NULL;
	release_term(st);
	summary_free(st->summary);
	st->summary = NULL;
	proxy_free(st->px);
	st->px = NULL;
	audit_close(st->audit);
	st->audit = NULL;
	policy_free(st->policy);
	st->policy = NULL;
	if (st->base)
		event_base_free(st->base);
	st->base = NULL;
}

int
run_main(struct run_opts *o)
{
	char mnt[PATH_MAX], cgpath[PATH_MAX], errbuf[512];
	struct event *ev_ring = NULL, *ev_child = NULL, *ev_sig = NULL, *ev_status = NULL;
	int status_fd = -1;
	struct loader_opts lo = {0};
	struct proxy_opts po = {0};
	struct run_state st = {0};
	struct sandbox_user user;
	bool fresh = false, created = false;
	int cg_fd = -1, sfd = -1, err;
	sigset_t mask;
	uint64_t cgid;

	st.opts = o;
	st.pidfd = -1;
	st.status = EGR_EXIT_ERROR;
	if (geteuid() != 0) {
		log_warnx("run needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN): use sudo");
		return EGR_EXIT_ERROR;
	}
	err = quota_raise_nofile(&st.nofile);
	if (err)
		log_info("cannot raise the descriptor limit to the hard one: %s", strerror(-err));
	/* No process without CAP_SYS_PTRACE reaches into ours (/proc/PID/fd,
	 * mem, environ), whatever its uid; no core dump carries our memory. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (sandbox_resolve_user(o->user, &user, errbuf, sizeof(errbuf))) {
		log_warnx("%s", errbuf);
		return EGR_EXIT_ERROR;
	}
	st.policy = run_build_policy(o->policy_file, o->rules, o->nrules, errbuf, sizeof(errbuf));
	if (!st.policy) {
		log_warnx("%s", errbuf);
		return EGR_EXIT_ERROR;
	}
	signal(SIGPIPE, SIG_IGN);
	{
		/* epoll changes are batched into the next epoll_wait: a
		 * connection's event_del/event_add pairs cost no system call */
		struct event_config *cfg = event_config_new();

		if (cfg)
			event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
		st.base = cfg ? event_base_new_with_config(cfg) : NULL;
		if (cfg)
			event_config_free(cfg);
	}
	st.summary = summary_new();
	if (!st.base || !st.summary) {
		log_warnx("cannot set up the event loop");
		goto out_state;
	}
	if (o->ask) {
		struct stat so;
		int abi = sandbox_landlock_abi();

		/* Without Landlock a process of CMD's user outside the sandbox
		 * (the user's shell) hands it the terminal: /proc/PID/fd/0. */
		if (abi < 1) {
			log_warnx("--ask needs Landlock (CMD could reach the terminal through "
				  "/proc/PID/fd of the user's other processes): %s",
				  strerror(-abi));
			goto out_state;
		}
		st.term = term_open(st.base, errbuf, sizeof(errbuf));
		if (!st.term) {
			log_warnx("%s", errbuf);
			goto out_state;
		}
		if (o->log_file && !strcmp(o->log_file, "-") && !fstat(1, &so) &&
		    S_ISCHR(so.st_mode) && so.st_rdev == term_rdev(st.term)) {
			log_warnx("--log - would write to the terminal the questions are asked on: "
				  "give --log a file");
			goto out_state;
		}
	}
	st.audit = audit_open(st.base, o->log_file, errbuf, sizeof(errbuf));
	if (!st.audit) {
		log_warnx("%s", errbuf);
		goto out_state;
	}
	audit_set_sink(st.audit, on_decision, &st);
	audit_set_limit(st.audit, o->log_buffer);
	if (o->ask) {
		st.asker = asker_new(st.base, st.term, o->ask_timeout);
		if (!st.asker) {
			log_warnx("cannot set up --ask: out of memory");
			goto out_state;
		}
	}
	st.tokens = DENIAL_BURST;
	po.policy = st.policy;
	po.audit = st.audit;
	po.dns_upstream = o->dns_upstream;
	po.tproxy = !o->tproxy_port;
	po.dns = !o->dns_port;
	po.audit_mode = o->audit;
	po.max_conns = o->max_conns;
	po.max_conns_per_process = o->max_conns_per_process;
	po.header_timeout_s = o->head_timeout;
	po.connect_timeout_s = o->connect_timeout;
	po.response_timeout_s = o->response_timeout;
	po.idle_timeout_s = o->idle_timeout;
	po.asker = st.asker;
	po.policy_rw = st.policy;
	st.px = proxy_new(st.base, &po, errbuf, sizeof(errbuf));
	if (!st.px) {
		log_warnx("%s", errbuf);
		goto out_state;
	}
	snprintf(st.env_http, sizeof(st.env_http), "http://127.0.0.1:%u",
		 proxy_port(st.px, PROXY_L_HTTP));
	snprintf(st.env_socks, sizeof(st.env_socks), "socks5h://127.0.0.1:%u",
		 proxy_port(st.px, PROXY_L_SOCKS));

	err = cgroup_find_mount(mnt, sizeof(mnt));
	if (err) {
		log_warnx("no cgroup v2 hierarchy is mounted (%s): egressctl needs cgroup2",
			  strerror(-err));
		goto out_state;
	}
	err = cgroup_resolve(mnt, o->cgroup, getpid(), cgpath, sizeof(cgpath), &fresh);
	if (err) {
		log_warnx("--cgroup %s: not a NAME ([A-Za-z0-9._-]) nor a path below %s", o->cgroup,
			  mnt);
		goto out_state;
	}
	err = cgroup_create(cgpath, &created);
	if (err) {
		log_warnx("cannot create cgroup %s: %s", cgpath, strerror(-err));
		goto out_state;
	}
	cg_fd = open(cgpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg_fd == -1) {
		log_warn("cannot open cgroup %s", cgpath);
		goto out_rmdir;
	}
	if (flock(cg_fd, LOCK_EX | LOCK_NB)) {
		log_warnx("cgroup %s is in use by another egressctl run", cgpath);
		goto out_rmdir;
	}
	cgid = cgroup_id_of(cgpath);
	if (!cgid) {
		log_warn("cannot read the id of cgroup %s", cgpath);
		goto out_rmdir;
	}

	lo.tproxy_port = o->tproxy_port ? o->tproxy_port : proxy_port(st.px, PROXY_L_TPROXY);
	lo.dns_port = o->dns_port ? o->dns_port : proxy_dns_port(st.px);
	lo.proxy_ports[0] = proxy_port(st.px, PROXY_L_HTTP);
	lo.proxy_ports[1] = proxy_port(st.px, PROXY_L_SOCKS);
	lo.proxy_ports[2] = o->proxy_ports[0];
	lo.proxy_ports[3] = o->proxy_ports[1];
	lo.unix_hooks = !o->allow_abstract_unix;
	lo.emit_redirects = o->log_file || log_verbose > 0; /* only when someone reads them */
	lo.audit_mode = o->audit;
	lo.sandbox_cgid = cgid;
	memcpy(lo.skip_progs, o->skip_progs, sizeof(lo.skip_progs));
	lo.socks_max = o->socks_max;
	lo.on_event = on_event;
	lo.arg = &st;
	st.ld = loader_open(&lo, errbuf, sizeof(errbuf));
	if (!st.ld) {
		log_warnx("%s", errbuf);
		goto out_rmdir;
	}
	err = loader_attach(st.ld, cg_fd, cgid, errbuf, sizeof(errbuf));
	if (err) {
		log_warnx("%s", errbuf);
		goto out_free;
	}
	proxy_set_index(st.px, loader_conns_fd(st.ld));
	st.cgid = cgid;
	st.cgpath = cgpath;
	proxy_set_fastpath(st.px, fast_add, fast_del, st.ld);
	for (int i = 0; i < o->nrules; i++) {
		struct sockaddr_in sin;

		if (o->rules[i].action != POLICY_ALLOW || !fast_path_rule(o->rules[i].text, &sin))
			continue;
		err = loader_fast_add(st.ld, (struct sockaddr *)&sin, IPPROTO_TCP, 0);
		if (err) {
			log_warnx("cannot open the fast path for %s: %s", o->rules[i].text,
				  strerror(-err));
			goto out_detach;
		}
	}

	/* what is left to open: the signalfd, CMD's pidfd, the status socket */
	if (proxy_size_limits(st.px, errbuf, sizeof(errbuf))) {
		log_warnx("%s", errbuf);
		goto out_detach;
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	if (st.term)
		sigaddset(&mask, SIGWINCH);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd == -1) {
		log_warn("cannot set up signal handling");
		goto out_detach;
	}

	err = spawn(&st, cg_fd, &user);
	if (err) {
		if (err != -ECHILD)
			log_warnx("cannot start %s: %s", o->argv[0], strerror(-err));
		goto out_loop;
	}
	log_info("started %s[%d] in %s; proxy %s, socks %s", o->argv[0], st.pid, cgpath,
		 st.env_http, st.env_socks);
	st.jt = jobtimer_new(st.base, cgpath, o->timeout_ns, o->kill_after_ns, o->quiet);
	if (!st.jt && errno) {
		log_warnx("cannot set up --timeout: %s", strerror(errno));
		kill(st.pid, SIGKILL);
		waitid(P_PIDFD, st.pidfd, &(siginfo_t){0}, WEXITED);
		st.status = EGR_EXIT_ERROR;
		goto out_loop;
	}

	ev_ring = event_new(st.base, loader_events_fd(st.ld), EV_READ | EV_PERSIST, on_ring, &st);
	ev_child = event_new(st.base, st.pidfd, EV_READ | EV_PERSIST, on_child, &st);
	ev_sig = event_new(st.base, sfd, EV_READ | EV_PERSIST, on_signal, &st);
	status_fd = status_listen(cgid, st.status_path, sizeof(st.status_path));
	if (status_fd < 0)
		log_warnx("no status socket: %s", strerror(-status_fd));
	else if (!(ev_status =
			   event_new(st.base, status_fd, EV_READ | EV_PERSIST, on_status, &st)) ||
		 event_add(ev_status, NULL))
		log_warnx("no status socket: cannot watch it");
	if (!ev_ring || !ev_child || !ev_sig || event_add(ev_ring, NULL) ||
	    event_add(ev_child, NULL) || event_add(ev_sig, NULL)) {
		log_warnx("cannot set up the event loop");
		kill(st.pid, SIGKILL);
		waitid(P_PIDFD, st.pidfd, &(siginfo_t){0}, WEXITED);
		st.status = EGR_EXIT_ERROR;
		goto out_loop;
	}
	event_base_dispatch(st.base);
	loader_events_consume(st.ld); /* what the last moments produced */
	if (st.term)
		term_drain(st.term); /* what CMD wrote last */

out_loop:
	if (ev_ring)
		event_free(ev_ring);
	if (ev_child)
		event_free(ev_child);
	if (ev_sig)
		event_free(ev_sig);
	if (ev_status)
		event_free(ev_status);
	jobtimer_free(st.jt);
	st.jt = NULL;
	if (status_fd >= 0) {
		close(status_fd);
		unlink(st.status_path);
	}
	if (sfd != -1)
		close(sfd);
	if (st.pidfd != -1)
		close(st.pidfd);
	run_cleanup(&st, cgpath, created || fresh);
	loader_free(st.ld);
	close(cg_fd);
	{
		struct proxy_stats ps;
		struct summary_refusals sr = {0};

		proxy_get_stats(st.px, &ps);
		sr.limit = ps.refused_limit;
		sr.per_process = ps.refused_per_process;
		sr.nofd = ps.refused_nofd;
		sr.max_conns = ps.max_conns;
		sr.max_conns_per_process = ps.max_conns_per_process;
		summary_set_refusals(st.summary, &sr);
	}
	proxy_free(st.px); /* closes connections: their last decisions are in */
	st.px = NULL;
	release_term(&st); /* the summary goes to the terminal as the user left it */
	if (st.suppressed && !o->quiet)
		fprintf(stderr, "egressctl: %lu more denials not shown (the summary has them)\n",
			st.suppressed);
	audit_finish(st.audit); /* so that the summary can say what was dropped */
	if (!o->quiet) {
		struct audit_stats ls;

		audit_get_stats(st.audit, &ls);
		summary_print(st.summary, stderr, o->audit, &ls);
	}
	if (o->suggest_policy) {
		err = summary_write_policy(st.summary, o->suggest_policy);
		if (err)
			log_warnx("cannot write %s: %s", o->suggest_policy, strerror(-err));
		else
			log_warnx("suggested policy written to %s", o->suggest_policy);
	}
	run_free(&st);
	return st.status;

out_detach:
	loader_detach(st.ld);
out_free:
	loader_free(st.ld);
out_rmdir:
	if (cg_fd != -1)
		close(cg_fd);
	if (created || fresh)
		cgroup_kill_and_remove(cgpath, 1000);
out_state:
	run_free(&st);
	return EGR_EXIT_ERROR;
}
