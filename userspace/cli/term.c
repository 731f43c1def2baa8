// SPDX-License-Identifier: Apache-2.0
/* egressctl's terminal under --ask (see term.h). The questions are read from
 * this terminal, so the confined command must not be able to reach it: CMD
 * gets a pty of its own (made in its private devpts by sandbox.c), and term
 * relays between the two as script(1) does -- the terminal in raw mode,
 * typed bytes to the pty's master, the master's output to the terminal.
 * While a question is on the screen the relay holds CMD's output and
 * egressctl's own stderr (nothing can appear after, over or around the
 * question) and hands typed bytes to the asker instead of CMD. Plain
 * read()/write() on the event base through bounded buffers; a full buffer
 * pauses the side that fills it. When none of egressctl's stdio is the
 * terminal, CMD gets no terminal at all, and the terminal stays in cooked
 * mode for the questions alone. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "cli/term.h"

#define TERM_CHUNK    16384	  /* bytes per read() */
#define TERM_OUT_MAX  (64 * 1024) /* queued for the terminal: CMD's output waits beyond */
#define TERM_IN_MAX   (64 * 1024) /* queued for CMD: reading the keyboard waits beyond */
#define TERM_HELD_MAX (64 * 1024) /* egressctl's lines held during a question; the rest dropped */
#define TERM_FLUSH_MS 3000	  /* at the end, the terminal gets this long to take the rest */

struct term {
	struct event_base *base;
	int fd;		       /* the terminal: our own file description, O_NONBLOCK */
	dev_t rdev;	       /* its device */
	unsigned int stdio;    /* which of fds 0-2 it is */
	struct termios saved;  /* its modes as the user left them */
	struct winsize ws;     /* its size at the start */
	bool raw;	       /* we switched it to raw mode (relay) */
	bool tty_gone;	       /* hung up or broken: nothing more to read or write */
	int master;	       /* the pty's master, -1 before term_attach_pty or after a hang-up */
	bool pty_eof;	       /* every slave fd is closed: nothing more to read */
	bool hold;	       /* a question is on the screen */
	bool pty_paused;       /* not reading the master: held or out is full */
	bool tty_paused;       /* not reading the terminal: to_pty is full */
	struct evbuffer *out;  /* to the terminal: CMD's output, our lines, the questions */
	struct evbuffer *held; /* our stderr lines while held */
	size_t held_dropped;   /* ... and how many bytes did not fit */
	struct evbuffer *to_pty;		     /* typed, on its way to CMD */
	struct event *tty_r, *tty_w, *pty_r, *pty_w; /* tty_r persists; the rest on demand */
	void (*on_input)(void *arg, const unsigned char *buf, size_t n);
	void *input_arg;
	FILE *err, *orig_err; /* stderr through term, and the one it replaced */
};

/* ---- the terminal's modes on every way out ------------------------------------------- */

/* For the signal handlers: async-signal-safe copies. */
static int sig_fd = -1;
static struct termios sig_saved, sig_raw;
static volatile sig_atomic_t sig_active;

/* Signals whose default ends the process and that reach egressctl as such
 * (SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGUSR1 go to run.c's signalfd
 * instead). */
static const int fatal_signals[] = {
	SIGABRT, SIGALRM, SIGBUS,  SIGFPE,  SIGILL,    SIGIO,	SIGPROF, SIGPWR,
	SIGSEGV, SIGSYS,  SIGTRAP, SIGUSR2, SIGVTALRM, SIGXCPU, SIGXFSZ, SIGSTKFLT,
};

static void
on_fatal(int sig)
{
	int saved_errno = errno;

	if (sig_active)
		tcsetattr(sig_fd, TCSANOW, &sig_saved);
	/* SA_RESETHAND put the default back: the signal ends us on return */
	raise(sig);
	errno = saved_errno;
}

/* kill -TSTP (the keyboard sends none in raw mode): stop with the terminal
 * as the user left it, and take it back when continued in the foreground. */
static void
on_tstp(int sig)
{
	int saved_errno = errno;

	(void)sig;
	if (sig_active)
		tcsetattr(sig_fd, TCSANOW, &sig_saved);
	raise(SIGSTOP);
	if (sig_active && tcgetpgrp(sig_fd) == getpgrp())
		tcsetattr(sig_fd, TCSANOW, &sig_raw);
	errno = saved_errno;
}

static void
set_handlers(bool on)
{
	struct sigaction sa;
	size_t i;
	int s;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on ? on_fatal : SIG_DFL;
	sa.sa_flags = on ? SA_RESETHAND : 0;
	for (i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		sigaction(fatal_signals[i], &sa, NULL);
	for (s = SIGRTMIN; s <= SIGRTMAX; s++)
		sigaction(s, &sa, NULL);
	sa.sa_handler = on ? on_tstp : SIG_DFL;
	sa.sa_flags = on ? SA_RESTART : 0;
	sigaction(SIGTSTP, &sa, NULL);
}

/* ---- writing to the terminal --------------------------------------------------------- */

static void pty_resume(struct term *t);

/* Writes what out holds until the terminal would block. */
static void
tty_flush(struct term *t)
{
	while (evbuffer_get_length(t->out) && !t->tty_gone) {
		int n = evbuffer_write(t->out, t->fd);

		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			event_add(t->tty_w, NULL);
			return;
		}
		t->tty_gone = true; /* EIO: hung up */
		evbuffer_drain(t->out, evbuffer_get_length(t->out));
	}
	event_del(t->tty_w);
	pty_resume(t);
}

static void
on_tty_writable(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	tty_flush(arg);
}

/* stderr through term: \n becomes \r\n (raw mode does not translate), and
 * while a question is on the screen the lines wait in held. */
static ssize_t
err_write(void *cookie, const char *buf, size_t n)
{
	struct term *t = cookie;
	struct evbuffer *dst = t->hold ? t->held : t->out;
	size_t i, start = 0;

	if (t->hold && evbuffer_get_length(t->held) + n > TERM_HELD_MAX) {
		t->held_dropped += n;
		return (ssize_t)n;
	}
	for (i = 0; i < n; i++) {
		if (buf[i] != '\n')
			continue;
		evbuffer_add(dst, buf + start, i - start);
		evbuffer_add(dst, "\r\n", 2);
		start = i + 1;
	}
	evbuffer_add(dst, buf + start, n - start);
	if (!t->hold)
		tty_flush(t);
	return (ssize_t)n;
}

/* ---- the pty ------------------------------------------------------------------------- */

static void
pty_close(struct term *t)
{
	if (t->master < 0)
		return;
	event_del(t->pty_r);
	event_del(t->pty_w);
	close(t->master);
	t->master = -1;
	evbuffer_drain(t->to_pty, evbuffer_get_length(t->to_pty));
}

/* Reads the master again, unless a question holds it or out is full. */
static void
pty_resume(struct term *t)
{
	if (t->master < 0 || t->pty_eof || t->hold || !t->pty_paused ||
	    evbuffer_get_length(t->out) >= TERM_OUT_MAX)
		return;
	t->pty_paused = false;
	event_add(t->pty_r, NULL);
}

static void
on_pty_readable(evutil_socket_t fd, short what, void *arg)
{
	struct term *t = arg;
	ssize_t n;

	(void)what;
	if (t->hold) {
		t->pty_paused = true;
		event_del(t->pty_r);
		return;
	}
	n = evbuffer_read(t->out, fd, TERM_CHUNK);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* EIO: every slave fd is closed, CMD and its children are gone
		 * (or closed the terminal); a new open could revive it, but
		 * CMD's exit ends the run anyway */
		t->pty_eof = true;
		t->pty_paused = true;
		event_del(t->pty_r);
		return;
	}
	if (evbuffer_get_length(t->out) >= TERM_OUT_MAX) {
		t->pty_paused = true;
		event_del(t->pty_r);
	}
	tty_flush(t);
}

static void
pty_write(struct term *t)
{
	while (evbuffer_get_length(t->to_pty) && t->master >= 0) {
		int n = evbuffer_write(t->to_pty, t->master);

		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			event_add(t->pty_w, NULL);
			return;
		}
		evbuffer_drain(t->to_pty, evbuffer_get_length(t->to_pty));
	}
	event_del(t->pty_w);
	if (t->tty_paused && !t->tty_gone) {
		t->tty_paused = false;
		event_add(t->tty_r, NULL);
	}
}

static void
on_pty_writable(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pty_write(arg);
}

/* ---- reading the terminal ------------------------------------------------------------ */

static void
on_tty_readable(evutil_socket_t fd, short what, void *arg)
{
	struct term *t = arg;
	unsigned char buf[4096];
	ssize_t n;

	(void)what;
	n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == 0 && !t->raw) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		/* cooked mode: ^D on an empty line reads as 0 bytes too */
		if (poll(&p, 1, 0) >= 0 && !(p.revents & (POLLHUP | POLLERR))) {
			buf[0] = 0x04;
			n = 1;
		}
	}
	if (n <= 0) {
		/* hung up: CMD's pty hangs up too (SIGHUP to its session) */
		t->tty_gone = true;
		event_del(t->tty_r);
		pty_close(t);
		return;
	}
	if (!t->raw || t->hold) {
		if (t->on_input)
			t->on_input(t->input_arg, buf, (size_t)n);
		return;
	}
	if (t->master < 0)
		return;
	evbuffer_add(t->to_pty, buf, (size_t)n);
	pty_write(t);
	if (evbuffer_get_length(t->to_pty) >= TERM_IN_MAX) {
		t->tty_paused = true;
		event_del(t->tty_r);
	}
}

/* ---- the interface ------------------------------------------------------------------- */

/* The controlling terminal's device: fstat() of an fd opened through
 * /dev/tty says 5,0, not which terminal it is. /proc/self/stat's tty_nr
 * does (field 7; major in bits 8-15, minor in bits 0-7 and 20-31). */
static dev_t
ctty_rdev(void)
{
	char buf[1024], *p;
	unsigned long tty_nr;
	ssize_t n;
	int fd;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold anything, ')' included */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %lu", &tty_nr) != 1)
		return 0;
	return makedev((tty_nr >> 8) & 0xfff, (tty_nr & 0xff) | ((tty_nr >> 12) & 0xfff00));
}

/* The first of fds 0-2 that is a terminal, opened anew (a file
 * description of our own: O_NONBLOCK would be the client's too), and its
 * device in *rdev; -1 with errno set when none is. O_NOCTTY: a session
 * leader would make it its controlling terminal. */
static int
stdio_tty(dev_t *rdev)
{
	char path[32];
	struct stat st;

	for (int fd = 0; fd < 3; fd++) {
		dev_t want;
		int t;

		if (fstat(fd, &st) || !S_ISCHR(st.st_mode) || !isatty(fd))
			continue;
		want = st.st_rdev;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		t = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (t >= 0 && (fstat(t, &st) || st.st_rdev != want || !isatty(t))) {
			close(t);
			errno = ENOTTY;
			return -1;
		}
		if (t >= 0)
			*rdev = st.st_rdev;
		return t;
	}
	errno = ENOTTY;
	return -1;
}

struct term *
term_open(struct event_base *base, bool from_stdio, char *errbuf, size_t errlen)
{
	cookie_io_functions_t io = {.write = err_write};
	struct term *t = calloc(1, sizeof(*t));
	struct stat st;
	int fd;

	if (!t) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	t->base = base;
	t->master = -1;
	t->fd = from_stdio ? stdio_tty(&t->rdev)
			   : open("/dev/tty", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (t->fd < 0) {
		snprintf(errbuf, errlen,
			 "--ask needs a terminal to ask on, and this run has none (%s)",
			 strerror(errno));
		free(t);
		return NULL;
	}
	if (tcgetattr(t->fd, &t->saved)) {
		snprintf(errbuf, errlen, "--ask: cannot read the terminal's modes: %s",
			 strerror(errno));
		goto out_free;
	}
	if (!from_stdio)
		t->rdev = ctty_rdev();
	if (!t->rdev) {
		snprintf(errbuf, errlen, "--ask: cannot tell which terminal /dev/tty is");
		goto out_free;
	}
	if (ioctl(t->fd, TIOCGWINSZ, &t->ws))
		memset(&t->ws, 0, sizeof(t->ws));
	for (fd = 0; fd < 3; fd++)
		if (!fstat(fd, &st) && S_ISCHR(st.st_mode) && st.st_rdev == t->rdev)
			t->stdio |= 1U << fd;
	t->out = evbuffer_new();
	t->held = evbuffer_new();
	t->to_pty = evbuffer_new();
	t->tty_r = event_new(base, t->fd, EV_READ | EV_PERSIST, on_tty_readable, t);
	t->tty_w = event_new(base, t->fd, EV_WRITE, on_tty_writable, t);
	if (!t->out || !t->held || !t->to_pty || !t->tty_r || !t->tty_w ||
	    event_add(t->tty_r, NULL)) {
		snprintf(errbuf, errlen, "out of memory");
		goto out_free;
	}
	if (!t->stdio)
		return t; /* questions only: the terminal stays as it is */

	sig_fd = t->fd;
	sig_saved = t->saved;
	sig_raw = t->saved;
	cfmakeraw(&sig_raw);
	sig_active = 1;
	set_handlers(true);
	if (tcsetattr(t->fd, TCSADRAIN, &sig_raw)) {
		snprintf(errbuf, errlen, "--ask: cannot switch the terminal to raw mode: %s",
			 strerror(errno));
		sig_active = 0;
		set_handlers(false);
		goto out_free;
	}
	t->raw = true;
	if (t->stdio & 4) {
		t->err = fopencookie(t, "w", io);
		if (t->err) {
			setvbuf(t->err, NULL, _IONBF, 0);
			fflush(stderr);
			t->orig_err = stderr;
			stderr = t->err;
		}
	}
	return t;
out_free:
	term_free(t);
	return NULL;
}

unsigned int
term_stdio(const struct term *t)
{
	return t->stdio;
}

dev_t
term_rdev(const struct term *t)
{
	return t->rdev;
}

void
term_modes(const struct term *t, struct termios *tios, struct winsize *ws)
{
	*tios = t->saved;
	*ws = t->ws;
}

bool
term_is_raw(const struct term *t)
{
	return t->raw;
}

int
term_attach_pty(struct term *t, int master)
{
	int fl = fcntl(master, F_GETFL);

	if (fl == -1 || fcntl(master, F_SETFL, fl | O_NONBLOCK))
		return -errno;
	t->pty_r = event_new(t->base, master, EV_READ | EV_PERSIST, on_pty_readable, t);
	t->pty_w = event_new(t->base, master, EV_WRITE, on_pty_writable, t);
	if (!t->pty_r || !t->pty_w || event_add(t->pty_r, NULL))
		return -ENOMEM;
	t->master = master;
	return 0;
}

void
term_hold(struct term *t, bool hold)
{
	unsigned char buf[4096];
	ssize_t n;

	if (hold == t->hold)
		return;
	if (!hold) {
		t->hold = false;
		evbuffer_add_buffer(t->out, t->held);
		if (t->held_dropped) {
			char note[96];

			snprintf(note, sizeof(note),
				 "egressctl: %zu bytes of messages dropped during a question\r\n",
				 t->held_dropped);
			evbuffer_add(t->out, note, strlen(note));
			t->held_dropped = 0;
		}
		tty_flush(t);
		return;
	}
	/* what was typed before the question was meant for CMD */
	while (t->raw && t->master >= 0 && !t->tty_paused &&
	       (n = read(t->fd, buf, sizeof(buf))) > 0) {
		evbuffer_add(t->to_pty, buf, (size_t)n);
		if (evbuffer_get_length(t->to_pty) >= TERM_IN_MAX)
			break;
	}
	pty_write(t);
	t->hold = true;
	if (t->master >= 0 && !t->pty_paused) {
		t->pty_paused = true;
		event_del(t->pty_r);
	}
}

void
term_set_input(struct term *t, void (*cb)(void *arg, const unsigned char *buf, size_t n), void *arg)
{
	t->on_input = cb;
	t->input_arg = arg;
}

void
term_say(struct term *t, const char *s)
{
	evbuffer_add(t->out, s, strlen(s));
	tty_flush(t);
}

void
term_flush_input(struct term *t)
{
	tcflush(t->fd, TCIFLUSH);
}

void
term_winch(struct term *t)
{
	struct winsize ws;

	if (t->master >= 0 && !ioctl(t->fd, TIOCGWINSZ, &ws))
		ioctl(t->master, TIOCSWINSZ, &ws);
}

void
term_drain(struct term *t)
{
	size_t total = 0;
	int n;

	/* what CMD wrote last, bounded: a grandchild may still be writing */
	while (t->master >= 0 && !t->pty_eof && total < 16 * TERM_OUT_MAX &&
	       (n = evbuffer_read(t->out, t->master, TERM_CHUNK)) > 0)
		total += (size_t)n;
}

/* Blocking, for at most TERM_FLUSH_MS: the run is over. */
static void
flush_now(struct term *t)
{
	struct timespec start, now;
	struct pollfd p = {.fd = t->fd, .events = POLLOUT};
	long left;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (evbuffer_get_length(t->out) && !t->tty_gone) {
		int n = evbuffer_write(t->out, t->fd);

		if (n > 0)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = TERM_FLUSH_MS - ((now.tv_sec - start.tv_sec) * 1000 +
					(now.tv_nsec - start.tv_nsec) / 1000000);
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
	}
}

void
term_free(struct term *t)
{
	if (!t)
		return;
	if (t->err) {
		stderr = t->orig_err;
		fclose(t->err);
		t->err = NULL;
	}
	if (t->out && t->held) {
		t->hold = false;
		evbuffer_add_buffer(t->out, t->held);
		flush_now(t);
	}
	if (t->raw) {
		tcsetattr(t->fd, TCSADRAIN, &t->saved);
		sig_active = 0;
		set_handlers(false);
		t->raw = false;
	}
	if (t->pty_r)
		event_free(t->pty_r);
	if (t->pty_w)
		event_free(t->pty_w);
	if (t->master >= 0)
		close(t->master);
	if (t->tty_r)
		event_free(t->tty_r);
	if (t->tty_w)
		event_free(t->tty_w);
	if (t->out)
		evbuffer_free(t->out);
	if (t->held)
		evbuffer_free(t->held);
	if (t->to_pty)
		evbuffer_free(t->to_pty);
	if (t->fd >= 0)
		close(t->fd);
	free(t);
}
