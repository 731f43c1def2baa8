/* egressctl: argv -> command table. `run` confines a command: cgroup, BPF
 * programs, a sandboxed child started inside the cgroup, denial lines on
 * stderr, signal forwarding, cleanup, and the child's exit status. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <event2/event.h>

#include "cgroup.h"
#include "events.h"
#include "loader.h"
#include "log.h"
#include "sandbox.h"

#define MAX_ALLOWS 64

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct run_opts {
	const char *cgroup;
	const char *user;
	struct sockaddr_in allows[MAX_ALLOWS];
	int nallows;
	uint16_t tproxy_port;
	uint16_t dns_port;
	uint16_t proxy_ports[4];
	int nproxy;
	bool allow_abstract_unix;
	bool quiet;
	const char *skip_progs[8]; /* EGR_TESTING builds only */
	int nskip;
	char **argv;
};

struct run_state {
	struct run_opts *opts;
	struct loader *ld;
	struct event_base *base;
	pid_t pid;
	int pidfd;
	int status; /* exit status to return */
	bool exited;
	unsigned long denied;
};

static void
usage_run(FILE *f)
{
	fprintf(f,
		"usage: egressctl run [OPTIONS] -- CMD [ARG]...\n"
		"\n"
		"Runs CMD inside a cgroup v2 whose every socket is decided by BPF programs:\n"
		"TCP is redirected to egressctl's transparent listener, DNS (UDP and TCP port 53)\n"
		"to its DNS responder; IPv6, other UDP, raw/packet/ICMP sockets, SCTP, MPTCP,\n"
		"UDP-Lite, vsock and abstract unix sockets are denied; loopback reaches only\n"
		"servers of the same cgroup. Denials are printed on stderr.\n"
		"\n"
		"  --cgroup NAME|PATH     NAME: <cgroup2>/egressctl/NAME (created if missing);\n"
		"                         PATH: an existing path under the cgroup2 mount;\n"
		"                         default: a fresh cgroup, removed at exit\n"
		"  --user USER            run CMD as USER (default: the sudo caller; CMD never\n"
		"                         runs as root unless USER is root)\n"
		"  --allow ADDR:PORT      let TCP to the IPv4 ADDR:PORT through directly (kernel\n"
		"                         fast path); e.g. 127.0.0.1:5432 for a host database\n"
		"  --transparent-port P   redirect TCP to 127.0.0.1:P (default: refuse it)\n"
		"  --dns-port P           redirect DNS to 127.0.0.1:P (default: refuse it)\n"
		"  --proxy-port P         let CMD reach egressctl's proxy on 127.0.0.1:P (up to "
		"4)\n"
		"  --allow-abstract-unix  run on kernels without the unix socket hooks (< 6.7),\n"
		"                         leaving abstract unix sockets unconfined\n"
		"  -q, --quiet            do not print denials\n"
		"  -v, --verbose          more diagnostics (twice: libbpf and verifier output)\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: CMD's (128+N if killed by signal N); 125 egressctl failed;\n"
		"126 CMD not executable; 127 CMD not found.\n");
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: egressctl COMMAND [ARGS]\n"
		   "\n"
		   "commands:\n"
		   "  run [OPTIONS] -- CMD [ARG]...   run CMD with its egress confined\n"
		   "  help [COMMAND]                  show help\n"
		   "\n"
		   "`egressctl COMMAND --help` describes each command.\n");
}

static int
parse_port(const char *s, uint16_t *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > 65535)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

static int
parse_addr_port(const char *s, struct sockaddr_in *sin)
{
	char host[INET_ADDRSTRLEN];
	const char *colon = strrchr(s, ':');
	uint16_t port;

	if (!colon || (size_t)(colon - s) >= sizeof(host) || colon == s)
		return -EINVAL;
	memcpy(host, s, colon - s);
	host[colon - s] = 0;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return -EINVAL;
	if (parse_port(colon + 1, &port))
		return -EINVAL;
	sin->sin_port = htons(port);
	return 0;
}

static void
on_event(const struct egr_event *e, void *arg)
{
	struct run_state *st = arg;
	char line[512];

	if (e->verdict != EGR_V_DENY)
		return;
	st->denied++;
	if (st->opts->quiet)
		return;
	events_format(e, line, sizeof(line));
	fprintf(stderr, "egressctl: %s\n", line);
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
		st->status = si.si_status;
	} else {
		st->status = 128 + si.si_status;
	}
	st->exited = true;
	event_base_loopexit(st->base, NULL);
}

static void
on_signal(evutil_socket_t fd, short what, void *arg)
{
	struct run_state *st = arg;
	struct signalfd_siginfo ssi;

	(void)what;
	while (read(fd, &ssi, sizeof(ssi)) == (ssize_t)sizeof(ssi)) {
		/* A terminal's ^C already reached CMD (same process group);
		 * forward only what was sent to egressctl itself. */
		if (ssi.ssi_code == SI_KERNEL)
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

/* The child: between clone3() and execve(). Reports failure on errfd as
 * "<exit status> <message>". */
static __attribute__((noreturn)) void
child_exec(struct run_opts *o, const struct sandbox_user *u, int errfd)
{
	const char *what = "";
	char msg[512];
	sigset_t none;
	int err, status;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	err = sandbox_enter(u, errfd, &what);
	if (err) {
		snprintf(msg, sizeof(msg), "%d cannot confine the command (%s): %s", EGR_EXIT_ERROR,
			 what, strerror(-err));
		if (write(errfd, msg, strlen(msg)) < 0)
			_exit(EGR_EXIT_ERROR);
		_exit(EGR_EXIT_ERROR);
	}
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

/* Starts CMD directly inside the cgroup: no instruction of its own runs
 * outside it, and no socket made outside can follow it in. */
static int
spawn(struct run_state *st, int cg_fd, const struct sandbox_user *u)
{
	struct clone_args args;
	char msg[512];
	int pfd[2], pidfd = -1;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	memset(&args, 0, sizeof(args));
	args.flags = CLONE_INTO_CGROUP | CLONE_PIDFD;
	args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)cg_fd;
	fflush(NULL);
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid == -1) {
		int err = -errno;

		close(pfd[0]);
		close(pfd[1]);
		return err;
	}
	if (pid == 0) {
		close(pfd[0]);
		child_exec(st->opts, u, pfd[1]);
	}
	close(pfd[1]);
	st->pid = pid;
	st->pidfd = pidfd;
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
		return -ECHILD;
	}
	return 0;
}

static int
parse_run(int argc, char **argv, struct run_opts *o)
{
	enum {
		OPT_CGROUP = 256,
		OPT_USER,
		OPT_ALLOW,
		OPT_TPORT,
		OPT_DPORT,
		OPT_PPORT,
		OPT_AAU,
		OPT_SKIP,
	};
	static const struct option longopts[] = {
		{"cgroup", required_argument, NULL, OPT_CGROUP},
		{"user", required_argument, NULL, OPT_USER},
		{"allow", required_argument, NULL, OPT_ALLOW},
		{"transparent-port", required_argument, NULL, OPT_TPORT},
		{"dns-port", required_argument, NULL, OPT_DPORT},
		{"proxy-port", required_argument, NULL, OPT_PPORT},
		{"allow-abstract-unix", no_argument, NULL, OPT_AAU},
#ifdef EGR_TESTING
		/* leave one program out, to test the layers behind it */
		{"test-skip-prog", required_argument, NULL, OPT_SKIP},
#endif
		{"quiet", no_argument, NULL, 'q'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+qvh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CGROUP:
			o->cgroup = optarg;
			break;
		case OPT_USER:
			o->user = optarg;
			break;
		case OPT_ALLOW:
			if (o->nallows == MAX_ALLOWS) {
				log_warnx("run: at most %d --allow rules", MAX_ALLOWS);
				return -EINVAL;
			}
			if (parse_addr_port(optarg, &o->allows[o->nallows])) {
				log_warnx(
					"run: --allow %s: expected IPV4:PORT, e.g. 127.0.0.1:5432",
					optarg);
				return -EINVAL;
			}
			o->nallows++;
			break;
		case OPT_TPORT:
		case OPT_DPORT:
		case OPT_PPORT: {
			uint16_t p;

			if (parse_port(optarg, &p)) {
				log_warnx("run: %s %s: expected a port from 1 to 65535",
					  argv[optind - 1], optarg);
				return -EINVAL;
			}
			if (c == OPT_TPORT)
				o->tproxy_port = p;
			else if (c == OPT_DPORT)
				o->dns_port = p;
			else if (o->nproxy == 4) {
				log_warnx("run: at most 4 --proxy-port options");
				return -EINVAL;
			} else
				o->proxy_ports[o->nproxy++] = p;
			break;
		}
		case OPT_AAU:
			o->allow_abstract_unix = true;
			break;
		case OPT_SKIP:
			if (o->nskip == 8)
				return -EINVAL;
			o->skip_progs[o->nskip++] = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			log_verbose++;
			break;
		case 'h':
			usage_run(stdout);
			exit(0);
		case ':':
			log_warnx("run: option %s needs an argument", argv[optind - 1]);
			return -EINVAL;
		default:
			log_warnx("run: unknown option %s (see egressctl run --help)",
				  argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind >= argc) {
		log_warnx("run: no command given (egressctl run [OPTIONS] -- CMD [ARG]...)");
		return -EINVAL;
	}
	o->argv = argv + optind;
	return 0;
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

static int
cmd_run(int argc, char **argv)
{
	char mnt[PATH_MAX], cgpath[PATH_MAX], errbuf[512];
	struct event *ev_ring = NULL, *ev_child = NULL, *ev_sig = NULL;
	struct loader_opts lo = {0};
	struct run_opts o = {0};
	struct run_state st = {0};
	struct sandbox_user user;
	bool fresh = false, created = false;
	int cg_fd = -1, sfd = -1, err;
	sigset_t mask;
	uint64_t cgid;

	if (parse_run(argc, argv, &o))
		return EGR_EXIT_ERROR;
	st.opts = &o;
	st.pidfd = -1;
	st.status = EGR_EXIT_ERROR;
	if (geteuid() != 0) {
		log_warnx("run needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN): use sudo");
		return EGR_EXIT_ERROR;
	}
	if (sandbox_resolve_user(o.user, &user, errbuf, sizeof(errbuf))) {
		log_warnx("%s", errbuf);
		return EGR_EXIT_ERROR;
	}
	err = cgroup_find_mount(mnt, sizeof(mnt));
	if (err) {
		log_warnx("no cgroup v2 hierarchy is mounted (%s): egressctl needs cgroup2",
			  strerror(-err));
		return EGR_EXIT_ERROR;
	}
	err = cgroup_resolve(mnt, o.cgroup, getpid(), cgpath, sizeof(cgpath), &fresh);
	if (err) {
		log_warnx("--cgroup %s: not a NAME ([A-Za-z0-9._-]) nor a path below %s", o.cgroup,
			  mnt);
		return EGR_EXIT_ERROR;
	}
	err = cgroup_create(cgpath, &created);
	if (err) {
		log_warnx("cannot create cgroup %s: %s", cgpath, strerror(-err));
		return EGR_EXIT_ERROR;
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

	lo.tproxy_port = o.tproxy_port;
	lo.dns_port = o.dns_port;
	memcpy(lo.proxy_ports, o.proxy_ports, sizeof(lo.proxy_ports));
	lo.unix_hooks = !o.allow_abstract_unix;
	lo.emit_redirects = log_verbose > 0;
	memcpy(lo.skip_progs, o.skip_progs, sizeof(lo.skip_progs));
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
	for (int i = 0; i < o.nallows; i++) {
		err = loader_fast_add(st.ld, (struct sockaddr *)&o.allows[i], IPPROTO_TCP, 0);
		if (err) {
			log_warnx("cannot add --allow rule: %s", strerror(-err));
			goto out_detach;
		}
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	st.base = event_base_new();
	if (sfd == -1 || !st.base) {
		log_warn("cannot set up the event loop");
		goto out_detach;
	}

	err = spawn(&st, cg_fd, &user);
	if (err) {
		if (err != -ECHILD)
			log_warnx("cannot start %s: %s", o.argv[0], strerror(-err));
		goto out_loop;
	}
	log_info("started %s[%d] in %s", o.argv[0], st.pid, cgpath);

	ev_ring = event_new(st.base, loader_events_fd(st.ld), EV_READ | EV_PERSIST, on_ring, &st);
	ev_child = event_new(st.base, st.pidfd, EV_READ | EV_PERSIST, on_child, &st);
	ev_sig = event_new(st.base, sfd, EV_READ | EV_PERSIST, on_signal, &st);
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

out_loop:
	if (ev_ring)
		event_free(ev_ring);
	if (ev_child)
		event_free(ev_child);
	if (ev_sig)
		event_free(ev_sig);
	if (st.base)
		event_base_free(st.base);
	if (sfd != -1)
		close(sfd);
	if (st.pidfd != -1)
		close(st.pidfd);
	run_cleanup(&st, cgpath, created || fresh);
	loader_free(st.ld);
	close(cg_fd);
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
	return EGR_EXIT_ERROR;
}

int
main(int argc, char **argv)
{
	log_init("egressctl");
	if (argc < 2) {
		usage(stderr);
		return EGR_EXIT_ERROR;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		if (argc > 2 && !strcmp(argv[2], "run"))
			usage_run(stdout);
		else
			usage(stdout);
		return 0;
	}
	log_warnx("unknown command '%s' (see egressctl help)", argv[1]);
	return EGR_EXIT_ERROR;
}
