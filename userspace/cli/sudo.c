// SPDX-License-Identifier: Apache-2.0
/* `egressctl sudo` (see sudo.h): what a confined CI job's sudo runs. The
 * job's user may run this one program as root (the CI integration's
 * sudoers rule, docs/ci.md); it runs CMD as root, or as --user, inside the
 * confinement the caller is in, with the walls of `run --allow-sudo`: a
 * PID namespace of its own whose pid 1 stays while anything CMD started
 * runs (a service outlives the command, as after sudo), its own mount
 * namespace with cgroupfs, bpffs and egressctl's sockets hidden and the
 * kernel's knobs read-only, the seccomp filter, the capability set sudo's
 * programs get under --allow-sudo; and, since the job's own user runs
 * beside it outside any sandbox, neither a setuid or setgid bit set on a
 * file nor the sudoers files changed (sandbox_opts.no_setid, .ro_paths).
 * It refuses to run where no egressctl program confines its cgroup. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/sched.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "cli/sudo.h"
#include "kernel/cgroup.h"
#include "kernel/peer.h"
#include "lib/log.h"
#include "lib/opts.h"
#include "sandbox/sandbox.h"
#include "sandbox/unixsvc.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define ENV_FILE_MAX (1 << 20)

struct sudo_opts {
	const char *user;
	const char *env_file;
	char **argv;
};

/* What the child gets: the walls' inputs and CMD's environment. */
struct sudo_state {
	struct sandbox_user user;
	char cgroup[PATH_MAX]; /* below the cgroup2 mount */
	char **masks;
	char *envbuf;  /* the --env-file's bytes, NUL-separated entries */
	size_t envlen; /* ... their length */
	char **argv;
};

#define SO(field) offsetof(struct sudo_opts, field)

static const struct opt sudo_opt_table[] = {
	{"user", 'u', OPT_T_STR, SO(user), "USER", "run CMD as USER (default: root)"},
	{"env-file", 0, OPT_T_STR, SO(env_file), "FILE",
	 "NAME=VALUE entries separated by NUL bytes, set for\n"
	 "CMD over the environment sudo gave (sudo -E through\n"
	 "the CI's sudo); a regular file of the sudo caller's"},
	{"help", 'h', OPT_T_HELP, 0, NULL, "this text"},
	{0},
};

/* Kept from being changed by what runs inside: the sudoers rules that
 * keep the job's own sudo confined, and sudo.conf, which names the file
 * those rules are read from. */
static const char *const sudo_ro_paths[] = {"/etc/sudoers", "/etc/sudoers.d", "/etc/sudo.conf",
					    NULL};

void
sudo_usage(FILE *f)
{
	const struct opt_set sets[] = {{sudo_opt_table, NULL}};

	fprintf(f, "usage: egressctl sudo [OPTIONS] -- CMD [ARG]...\n"
		   "\n"
		   "Runs CMD as root inside the egressctl confinement the caller is in: what a CI\n"
		   "job's sudo runs (sudo: confined in the GitHub Action), through sudo. CMD gets\n"
		   "what root gets under `run --allow-sudo`: its own PID and mount namespaces,\n"
		   "cgroupfs, bpffs and egressctl's sockets hidden, the kernel's knobs read-only,\n"
		   "the seccomp filter, the file capabilities (chown, write any file...) but\n"
		   "none that leads out; and it can set no setuid or setgid bit nor change the\n"
		   "sudoers files. What it starts in the background keeps running after it.\n"
		   "Refused where the caller's cgroup is not confined by egressctl.\n"
		   "\n");
	opts_help(f, sets, 1);
	fprintf(f, "\n"
		   "Exit status: CMD's (128+N if killed by signal N); 2 a usage error; 125\n"
		   "egressctl failed or refused; 126 CMD not executable; 127 CMD not found.\n");
}

/* The caller's cgroup (below the mount, into st->cgroup) must be one whose
 * connects egressctl's programs decide. */
static int
sudo_check_confined(struct sudo_state *st)
{
	char mnt[PATH_MAX], path[PATH_MAX];
	int fd, r;

	r = cgroup_find_mount(mnt, sizeof(mnt));
	if (r) {
		log_warnx("sudo: no cgroup v2 hierarchy is mounted (%s): nothing confines CMD",
			  strerror(-r));
		return r;
	}
	r = cgroup_of_pid(mnt, getpid(), path, sizeof(path));
	if (r) {
		log_warnx("sudo: cannot read this process's cgroup: %s", strerror(-r));
		return r;
	}
	snprintf(st->cgroup, sizeof(st->cgroup), "%s", path + strlen(mnt));
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = fd < 0 ? -errno : peer_cgroup_confined(fd);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		log_warnx("sudo: cannot ask the kernel what confines cgroup %s: %s", st->cgroup,
			  strerror(-r));
		return r;
	}
	if (r == 0) {
		log_warnx("sudo: cgroup %s is not confined by egressctl: CMD would run as root "
			  "outside confinement (refused)",
			  st->cgroup[0] ? st->cgroup : "/");
		return -EPERM;
	}
	return 0;
}

/* A variable's name: [A-Za-z_][A-Za-z0-9_]*, then '='. */
static bool
env_entry_ok(const char *e, size_t len)
{
	size_t i;

	if (!len || !(e[0] == '_' || (e[0] >= 'A' && e[0] <= 'Z') || (e[0] >= 'a' && e[0] <= 'z')))
		return false;
	for (i = 1; i < len && e[i] != '='; i++)
		if (!(e[i] == '_' || (e[i] >= 'A' && e[i] <= 'Z') || (e[i] >= 'a' && e[i] <= 'z') ||
		      (e[i] >= '0' && e[i] <= '9')))
			return false;
	return i < len;
}

/* --env-file: a regular file the sudo caller (SUDO_UID) owns, not followed
 * if a symlink, at most ENV_FILE_MAX bytes of NUL-separated NAME=VALUE. */
static int
sudo_read_env(const char *path, struct sudo_state *st)
{
	const char *uid_s = getenv("SUDO_UID");
	struct stat sb;
	size_t off;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb)) {
		log_warn("sudo: --env-file %s", path);
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	if (!S_ISREG(sb.st_mode) || !uid_s || sb.st_uid != (uid_t)strtoul(uid_s, NULL, 10) ||
	    sb.st_size > ENV_FILE_MAX) {
		log_warnx(
			"sudo: --env-file %s: not a regular file of the sudo caller's (uid %s) of "
			"at most %d bytes",
			path, uid_s ? uid_s : "?", ENV_FILE_MAX);
		close(fd);
		return -EINVAL;
	}
	st->envbuf = malloc((size_t)sb.st_size + 1);
	for (off = 0; st->envbuf && off < (size_t)sb.st_size; off += (size_t)n) {
		n = read(fd, st->envbuf + off, (size_t)sb.st_size - off);
		if (n <= 0)
			break;
	}
	close(fd);
	if (!st->envbuf || off != (size_t)sb.st_size) {
		log_warnx("sudo: --env-file %s: cannot read it whole", path);
		return -EIO;
	}
	st->envbuf[off] = 0;
	st->envlen = off;
	for (size_t i = 0; i < off; i += strlen(st->envbuf + i) + 1)
		if (!env_entry_ok(st->envbuf + i, strlen(st->envbuf + i))) {
			log_warnx("sudo: --env-file %s: an entry is not NAME=VALUE", path);
			return -EINVAL;
		}
	return 0;
}

/* The unix sockets of local services and egressctl's own, to mask (as
 * run does, with the default list). */
static int
sudo_masks(struct sudo_state *st)
{
	static struct unixsvc svc;
	char errbuf[512];
	char **exist;
	int err;

	if (unixsvc_build(&svc, NULL, NULL, 0, NULL, 0, errbuf, sizeof(errbuf))) {
		log_warnx("sudo: %s", errbuf);
		return -EINVAL;
	}
	exist = unixsvc_existing(&svc, NULL);
	if (exist && unixsvc_add_egressctl(UNIXSVC_EGR_DIR, &exist))
		exist = NULL;
	if (!exist) {
		log_warnx("sudo: cannot list the unix sockets to mask: out of memory");
		return -ENOMEM;
	}
	err = sandbox_unix_masks(exist, &st->masks, errbuf, sizeof(errbuf));
	unixsvc_free_list(exist);
	if (err)
		log_warnx("sudo: %s", errbuf);
	return err;
}

/* CMD's environment: sudo's, the user's identity, the --env-file's. */
static void
sudo_env(const struct sudo_state *st)
{
	const struct sandbox_user *u = &st->user;

	if (u->home[0])
		setenv("HOME", u->home, 1);
	if (u->name[0]) {
		setenv("USER", u->name, 1);
		setenv("LOGNAME", u->name, 1);
	}
	for (size_t i = 0; i < st->envlen; i += strlen(st->envbuf + i) + 1)
		putenv(st->envbuf + i);
	/* so that an egressctl run by CMD can say it is confined already */
	setenv("EGRESSCTL_CGROUP", st->cgroup, 1);
}

/* The child of clone3(CLONE_NEWPID): the walls, then pid 1 of the
 * namespace, and its child execs CMD. Failures go to errfd as "<exit
 * status> <message>". */
__attribute__((noreturn)) static void
sudo_child(const struct sudo_state *st, int errfd, int statfd)
{
	struct sandbox_opts so = {
		.keep_fd = errfd,
		.keep_fd2 = statfd,
		.unix_masks = st->masks,
		.own_proc = true,
		.allow_sudo = true,
		.no_setid = true,
		.ro_paths = sudo_ro_paths,
	};
	const char *what = "";
	char msg[512];
	sigset_t none;
	pid_t pid;
	int err, status;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	err = sandbox_enter_opts(&st->user, &so, &what);
	if (!err) {
		what = "fork";
		pid = fork();
		if (pid == -1)
			err = -errno;
		if (pid > 0) {
			close(errfd);
			sandbox_init(pid, statfd, true);
		}
	}
	if (err) {
		snprintf(msg, sizeof(msg), "%d cannot confine the command (%s): %s", EGR_EXIT_ERROR,
			 what, strerror(-err));
		if (write(errfd, msg, strlen(msg)) < 0)
			_exit(EGR_EXIT_ERROR);
		_exit(EGR_EXIT_ERROR);
	}
	close(statfd);
	sudo_env(st);
	execvp(st->argv[0], st->argv);
	err = errno;
	status = (err == ENOENT || err == ENOTDIR) ? EGR_EXIT_NOTFOUND : EGR_EXIT_NOEXEC;
	if (status == EGR_EXIT_NOTFOUND)
		snprintf(msg, sizeof(msg), "%d %s: command not found", status, st->argv[0]);
	else
		snprintf(msg, sizeof(msg), "%d %s: %s", status, st->argv[0], strerror(err));
	if (write(errfd, msg, strlen(msg)) < 0)
		_exit(status);
	_exit(status);
}

/* An exit status from a wait status. */
static int
exit_of(int ws)
{
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 1;
}

/* After the child started: what it wrote on errfd (nothing once CMD was
 * executed), then CMD's wait status from pid 1 on statfd, forwarding the
 * signals sudo passes on (from a process, not the terminal's, which
 * reached CMD's process group itself). Returns the exit status. */
static int
sudo_wait(int pidfd, int errfd, int statfd, int sfd)
{
	struct signalfd_siginfo ssi;
	siginfo_t si = {0};
	char msg[512], *sp;
	int ws;
	ssize_t n;

	do
		n = read(errfd, msg, sizeof(msg) - 1);
	while (n == -1 && errno == EINTR);
	if (n > 0) {
		msg[n] = 0;
		ws = (int)strtol(msg, &sp, 10);
		log_warnx("sudo: %s", *sp ? sp + 1 : msg);
		waitid(P_PIDFD, pidfd, &si, WEXITED);
		return ws;
	}
	for (;;) {
		struct pollfd p[2] = {{statfd, POLLIN, 0}, {sfd, POLLIN, 0}};

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_warn("sudo: poll");
			return EGR_EXIT_ERROR;
		}
		while (p[1].revents && read(sfd, &ssi, sizeof(ssi)) == (ssize_t)sizeof(ssi))
			if (ssi.ssi_code != SI_KERNEL)
				syscall(SYS_pidfd_send_signal, pidfd, ssi.ssi_signo, NULL, 0);
		if (!p[0].revents)
			continue;
		if (read(statfd, &ws, sizeof(ws)) == (ssize_t)sizeof(ws))
			return exit_of(ws); /* pid 1 stays for what CMD left running */
		/* pid 1 ended without a word: its own status */
		if (waitid(P_PIDFD, pidfd, &si, WEXITED))
			return EGR_EXIT_ERROR;
		return si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
	}
}

/* clone3() into a new PID namespace, in the caller's cgroup. */
static int
sudo_spawn(const struct sudo_state *st)
{
	struct clone_args args = {0};
	int efd[2], xfd[2], pidfd = -1, sfd, rc;
	sigset_t mask;
	pid_t pid;

	sigemptyset(&mask);
	for (int s = 1; s < SIGRTMIN; s++)
		if (s == SIGHUP || s == SIGINT || s == SIGQUIT || s == SIGTERM || s == SIGUSR1 ||
		    s == SIGUSR2 || s == SIGALRM)
			sigaddset(&mask, s);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0 || pipe2(efd, O_CLOEXEC) || pipe2(xfd, O_CLOEXEC)) {
		log_warn("sudo: cannot set up the command's pipes");
		return EGR_EXIT_ERROR;
	}
	args.flags = CLONE_NEWPID | CLONE_PIDFD;
	args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	args.exit_signal = SIGCHLD;
	fflush(NULL);
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid == -1) {
		log_warn("sudo: clone3(CLONE_NEWPID)");
		return EGR_EXIT_ERROR;
	}
	if (pid == 0) {
		close(efd[0]);
		close(xfd[0]);
		close(sfd);
		sudo_child(st, efd[1], xfd[1]);
	}
	close(efd[1]);
	close(xfd[1]);
	rc = sudo_wait(pidfd, efd[0], xfd[0], sfd);
	close(efd[0]);
	close(xfd[0]);
	close(sfd);
	close(pidfd);
	return rc;
}

int
sudo_main(int argc, char **argv)
{
	struct sudo_opts o = {0};
	const struct opt_set sets[] = {{sudo_opt_table, &o}};
	struct sudo_state st = {0};
	char errbuf[512];
	int first, rc;

	rc = opts_parse("sudo", sets, 1, argc, argv, true, &first);
	if (rc == OPTS_HELP) {
		sudo_usage(stdout);
		return 0;
	}
	if (rc != OPTS_OK)
		return EGR_EXIT_USAGE;
	if (first >= argc) {
		log_warnx("sudo: no command given (egressctl sudo [OPTIONS] -- CMD [ARG]...)");
		return EGR_EXIT_USAGE;
	}
	st.argv = argv + first;
	if (geteuid() != 0) {
		log_warnx("sudo: needs root: it is what a confined job runs through sudo");
		return EGR_EXIT_ERROR;
	}
	/* nothing outside reaches into this root process's memory */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (sudo_check_confined(&st))
		return EGR_EXIT_ERROR;
	if (sandbox_resolve_user(o.user ? o.user : "root", &st.user, errbuf, sizeof(errbuf))) {
		log_warnx("sudo: %s", errbuf);
		return EGR_EXIT_ERROR;
	}
	rc = EGR_EXIT_ERROR;
	if ((o.env_file && sudo_read_env(o.env_file, &st)) || sudo_masks(&st))
		goto out;
	rc = sudo_spawn(&st);
out:
	sandbox_free_masks(st.masks);
	free(st.envbuf);
	return rc;
}
