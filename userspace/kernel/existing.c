// SPDX-License-Identifier: Apache-2.0
/* The pre-existing pass (see existing.h): load bpf/existing.bpf.c sharing
 * the attached programs' socket maps, run its iter/tcp and iter/udp links in
 * every network namespace the cgroup's processes use, read one struct
 * egr_pre_rec per connection from the seq files, and find a process holding
 * each socket by its inode in /proc/PID/fd. One idea in one file, past 800
 * lines: one pass from the cgroup tree's processes to their sockets and
 * back to who holds each, whose pieces share its arrays and serve nothing
 * else. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "existing.skel.h"
#include "kernel/cgroup.h"
#include "kernel/existing.h"
#include "kernel/loader.h" /* EGR_LINUX_* */
#include "policy/policy.h"

/* Records per read(). A bpf iterator's seq buffer holds 8 pages (32 KiB):
 * it stops showing sockets once a read's size is reached, and a record that
 * would overflow the buffer is dropped and its socket shown again (the
 * program run twice) at the next read. 368 records (32384 bytes) always fit.
 * Every read after the first resumes the walk of the hash table; this
 * kernel resumes by socket cookie, older ones by offset in the bucket
 * (a socket may then be shown twice or missed): few namespaces have more
 * than 368 pre-existing connections. */
#define REC_BATCH 368

/* revoke_mode of bpf/existing.bpf.c (its .bss) */
#define REVOKE_DIRECT	 1 /* direct sockets to egr_revoke's keys; loopback ones noted */
#define REVOKE_RECEIVERS 2 /* who receives the loopback ones noted */
#define REVOKE_LOOPBACK	 3 /* end those received outside the target */

struct existing {
	struct existing_bpf *skel;
	struct bpf_link *tcp, *udp;
	struct existing_opts o;
	char cg_path[PATH_MAX];
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether this kernel has what a pass needs: the TCP and UDP socket
 * iterators (iter/tcp, iter/udp, Linux 5.9) and, with kill (to end
 * pre-existing connections, or revoke passes: existing_open), the
 * bpf_sock_destroy() kfunc (6.5). Returns 0, or -ENOTSUP with errbuf set. */
static int
existing_check_kernel(bool kill, char *errbuf, size_t errlen)
{
	static const struct {
		const char *func;
		const char *what;
	} need[] = {
		/* the iterator targets: libbpf attaches SEC("iter/X") to the
		 * BTF function bpf_iter_X */
		{"bpf_iter_tcp", "the TCP socket iterator (iter/tcp, Linux 5.9)"},
		{"bpf_iter_udp", "the UDP socket iterator (iter/udp, Linux 5.9)"},
		{"bpf_sock_destroy", "the bpf_sock_destroy kfunc (Linux " EGR_LINUX_DAEMON ")"},
	};
	struct btf *btf;
	size_t n = sizeof(need) / sizeof(need[0]);

	btf = btf__load_vmlinux_btf();
	if (!btf) {
		snprintf(errbuf, errlen, "cannot read the kernel's BTF: %s", strerror(errno));
		return -ENOTSUP;
	}
	for (size_t i = 0; i < (kill ? n : n - 1); i++) {
		if (btf__find_by_name_kind(btf, need[i].func, BTF_KIND_FUNC) < 0) {
			btf__free(btf);
			if (i == 2)
				snprintf(errbuf, errlen,
					 "this kernel lacks %s, needed to end connections (those "
					 "the cgroup had before the attach, with kill; the direct "
					 "ones a policy change denies, in the daemon)",
					 need[i].what);
			else
				snprintf(errbuf, errlen,
					 "this kernel lacks %s, needed to find the connections the "
					 "cgroup had before the attach",
					 need[i].what);
			return -ENOTSUP;
		}
	}
	btf__free(btf);
	return 0;
}

/* fd must be the map bpf/lib/sk_maps.h declares: the iterators read and write its
 * values as struct egr_sk_orig. (bpf_map__reuse_fd takes any map.) */
static int
check_map(int fd, const char *name, enum bpf_map_type type, uint32_t key_size, char *errbuf,
	  size_t errlen)
{
	struct bpf_map_info info = {};
	uint32_t len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		snprintf(errbuf, errlen, "%s: not a BPF map: %s", name, strerror(errno));
		return -EINVAL;
	}
	if (info.type != type || info.key_size != key_size ||
	    info.value_size != sizeof(struct egr_sk_orig)) {
		snprintf(errbuf, errlen,
			 "%s: map of type %u, key %u, value %u bytes; want type %u, key %u, "
			 "value %zu (another ABI version?)",
			 name, info.type, info.key_size, info.value_size, type, key_size,
			 sizeof(struct egr_sk_orig));
		return -EINVAL;
	}
	return 0;
}

struct existing *
existing_open(const struct existing_opts *o, char *errbuf, size_t errlen)
{
	struct existing *ex;
	int err;

	if (!o->cgid || !o->cg_path || strlen(o->cg_path) >= PATH_MAX) {
		snprintf(errbuf, errlen, "no cgroup to scan (a bug)");
		errno = EINVAL;
		return NULL;
	}
	err = existing_check_kernel(o->kill || o->revoke, errbuf, errlen);
	if (err)
		goto out_errno;
	err = check_map(o->socks_fd, "egr_socks", BPF_MAP_TYPE_HASH, sizeof(__u64), errbuf, errlen);
	if (!err)
		err = check_map(o->sk_fd, "egr_sk", BPF_MAP_TYPE_SK_STORAGE, sizeof(int), errbuf,
				errlen);
	if (err)
		goto out_errno;
	ex = calloc(1, sizeof(*ex));
	if (!ex) {
		snprintf(errbuf, errlen, "out of memory");
		err = -ENOMEM;
		goto out_errno;
	}
	ex->o = *o;
	strcpy(ex->cg_path, o->cg_path);
	ex->o.cg_path = ex->cg_path;
	ex->skel = existing_bpf__open();
	if (!ex->skel) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot open the pre-existing pass's BPF object: %s",
			 strerror(-err));
		goto out_free;
	}
	ex->skel->rodata->target_cgid = o->cgid;
	ex->skel->rodata->kill_existing = o->kill;
	if ((err = bpf_map__reuse_fd(ex->skel->maps.egr_socks, o->socks_fd)) ||
	    (err = bpf_map__reuse_fd(ex->skel->maps.egr_sk, o->sk_fd))) {
		snprintf(errbuf, errlen, "cannot share the socket maps: %s", strerror(-err));
		goto out_destroy;
	}
	err = existing_bpf__load(ex->skel);
	if (err) {
		snprintf(errbuf, errlen,
			 "cannot load the pre-existing pass's iterators: %s (run with -vv for the "
			 "verifier log)",
			 strerror(-err));
		goto out_destroy;
	}
	ex->tcp = bpf_program__attach_iter(ex->skel->progs.egr_iter_tcp, NULL);
	if (!ex->tcp) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot attach the TCP socket iterator: %s",
			 strerror(-err));
		goto out_destroy;
	}
	ex->udp = bpf_program__attach_iter(ex->skel->progs.egr_iter_udp, NULL);
	if (!ex->udp) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot attach the UDP socket iterator: %s",
			 strerror(-err));
		goto out_destroy;
	}
	return ex;

out_destroy:
	bpf_link__destroy(ex->tcp);
	existing_bpf__destroy(ex->skel);
out_free:
	free(ex);
out_errno:
	errno = -err;
	return NULL;
}

/* The id of the map behind fd; 0 if it cannot be read. */
static uint32_t
map_id(int fd)
{
	struct bpf_map_info mi = {};
	uint32_t len = sizeof(mi);

	return fd >= 0 && !bpf_obj_get_info_by_fd(fd, &mi, &len) ? mi.id : 0;
}

bool
existing_matches(const struct existing *ex, const struct existing_opts *o)
{
	uint32_t socks = map_id(bpf_map__fd(ex->skel->maps.egr_socks));
	uint32_t sk = map_id(bpf_map__fd(ex->skel->maps.egr_sk));

	return ex->o.cgid == o->cgid && ex->o.kill == o->kill && ex->o.revoke == o->revoke &&
	       o->cg_path && !strcmp(ex->o.cg_path, o->cg_path) && socks &&
	       socks == map_id(o->socks_fd) && sk && sk == map_id(o->sk_fd);
}

void
existing_free(struct existing *ex)
{
	if (!ex)
		return;
	bpf_link__destroy(ex->udp);
	bpf_link__destroy(ex->tcp);
	existing_bpf__destroy(ex->skel);
	free(ex);
}

/* ---- growing arrays --------------------------------------------------- */

static int
grow(void **arr, size_t *cap, size_t n, size_t size)
{
	void *p;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	p = realloc(*arr, ncap * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

struct pids {
	pid_t *v;
	size_t n, cap;
};

static int
pids_add(struct pids *p, pid_t pid)
{
	if (grow((void **)&p->v, &p->cap, p->n, sizeof(*p->v)))
		return -ENOMEM;
	p->v[p->n++] = pid;
	return 0;
}

static int
cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return x < y ? -1 : x > y;
}

static bool
pids_has(const struct pids *p, pid_t pid)
{
	return p->n && bsearch(&pid, p->v, p->n, sizeof(*p->v), cmp_pid) != NULL;
}

/* ---- files ------------------------------------------------------------- */

/* The whole of a small file at dfd/name, NUL-terminated. */
static int
slurp_at(int dfd, const char *name, char **out)
{
	size_t len = 0, cap = 4096;
	char *buf = NULL, *nb;
	ssize_t r;
	int fd, err = 0;

	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	for (;;) {
		if (!buf || len + 1 >= cap) {
			cap = buf ? cap * 2 : cap;
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = 0;
	*out = buf;
	return 0;
}

/* ---- network namespaces ------------------------------------------------ */

struct netns {
	int fd;
	uint64_t ino;
};

struct netns_set {
	struct netns *v;
	size_t n, cap;
};

static int
netns_add(struct netns_set *s, int fd)
{
	struct stat st;

	if (fstat(fd, &st)) {
		close(fd);
		return 0;
	}
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].ino == (uint64_t)st.st_ino) {
			close(fd);
			return 0;
		}
	}
	if (grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v))) {
		close(fd);
		return -ENOMEM;
	}
	s->v[s->n].fd = fd;
	s->v[s->n].ino = st.st_ino;
	s->n++;
	return 0;
}

static void
netns_free(struct netns_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		close(s->v[i].fd);
	free(s->v);
}

/* This thread's namespace first, then each process's that differs. A
 * process that is gone has no namespace to search (its sockets went with
 * it, or another process holds them and brings their namespace). */
static int
netns_collect(const struct pids *p, struct netns_set *s)
{
	char path[64];
	int fd, err;

	fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	err = netns_add(s, fd);
	for (size_t i = 0; !err && i < p->n; i++) {
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)p->v[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd != -1)
			err = netns_add(s, fd);
	}
	return err;
}

/* ---- the iterators ------------------------------------------------------ */

struct conns {
	struct existing_conn *v;
	size_t n, cap;
	uint64_t *set; /* the cookies of v, open addressing (0: free; cookies start at 1) */
	size_t setcap; /* a power of two, at least twice n */
};

static size_t
slot(const uint64_t *set, size_t cap, uint64_t cookie)
{
	size_t i = (size_t)(cookie * 0x9e3779b97f4a7c15ull) & (cap - 1);

	while (set[i] && set[i] != cookie)
		i = (i + 1) & (cap - 1);
	return i;
}

/* Notes cookie; *fresh: it was not noted before. 0 or -ENOMEM. */
static int
note(struct conns *c, uint64_t cookie, bool *fresh)
{
	if ((c->n + 1) * 2 > c->setcap) {
		size_t cap = c->setcap ? c->setcap * 2 : 1024;
		uint64_t *set = calloc(cap, sizeof(*set));

		if (!set)
			return -ENOMEM;
		for (size_t i = 0; i < c->n; i++)
			set[slot(set, cap, c->v[i].cookie)] = c->v[i].cookie;
		free(c->set);
		c->set = set;
		c->setcap = cap;
	}
	size_t i = slot(c->set, c->setcap, cookie);

	*fresh = !c->set[i];
	c->set[i] = cookie;
	return 0;
}

static void
from_rec(const struct egr_pre_rec *r, uint64_t netns, struct existing_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->cookie = r->cookie;
	c->cgroup_id = r->cgroup_id;
	c->ino = r->ino;
	c->netns = netns;
	memcpy(c->laddr, r->laddr, sizeof(c->laddr));
	memcpy(c->raddr, r->raddr, sizeof(c->raddr));
	c->lport = ntohs(r->lport);
	c->rport = ntohs(r->rport);
	c->family = r->family;
	c->protocol = r->protocol;
	c->state = r->state;
	c->action = r->action;
	c->err = r->err;
	c->conn_tgid = (pid_t)r->tgid;
	memcpy(c->conn_comm, r->comm, sizeof(r->comm));
}

/* Reads an iterator's seq file to its end. */
static int
read_iter(int fd, uint64_t netns, struct conns *out)
{
	static struct egr_pre_rec recs[REC_BATCH];
	size_t have = 0;
	ssize_t r;

	_Static_assert(sizeof(recs) + sizeof(recs[0]) <= 32768, "one read fits the seq buffer");

	for (;;) {
		r = read(fd, (char *)recs + have, sizeof(recs) - have);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		have += (size_t)r;
		for (size_t i = 0; i < have / sizeof(recs[0]); i++) {
			bool fresh;

			if (note(out, recs[i].cookie, &fresh) ||
			    grow((void **)&out->v, &out->cap, out->n, sizeof(*out->v)))
				return -ENOMEM;
			if (!fresh)
				continue; /* shown again after a resume */
			from_rec(&recs[i], netns, &out->v[out->n++]);
		}
		/* a partial record stays for the next read */
		memmove(recs, (char *)recs + have / sizeof(recs[0]) * sizeof(recs[0]),
			have % sizeof(recs[0]));
		have %= sizeof(recs[0]);
	}
	return have ? -EPROTO : 0;
}

/* The iterators in namespace ns (the UDP one only with udp): an iterator
 * walks the namespace of the task that creates it. self is this thread's
 * own namespace. */
static int
iter_netns(struct existing *ex, const struct netns *ns, const struct netns *self, bool udp,
	   struct conns *out, char *errbuf, size_t errlen)
{
	struct bpf_link *links[2] = {ex->tcp, ex->udp};
	int fds[2] = {-1, -1}, err = 0, nit = udp ? 2 : 1;

	if (ns != self && setns(ns->fd, CLONE_NEWNET)) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot enter network namespace %llu: %s",
			 (unsigned long long)ns->ino, strerror(-err));
		return err;
	}
	for (int i = 0; i < nit && !err; i++) {
		fds[i] = bpf_iter_create(bpf_link__fd(links[i]));
		if (fds[i] < 0) {
			err = -errno;
			snprintf(errbuf, errlen, "cannot start the %s socket iterator: %s",
				 i ? "UDP" : "TCP", strerror(-err));
		}
	}
	if (ns != self && setns(self->fd, CLONE_NEWNET)) {
		/* nothing may go on in the wrong namespace */
		err = -errno;
		snprintf(errbuf, errlen, "cannot return to network namespace %llu: %s",
			 (unsigned long long)self->ino, strerror(-err));
	}
	for (int i = 0; i < 2; i++) {
		if (fds[i] < 0)
			continue;
		if (!err && (err = read_iter(fds[i], ns->ino, out)))
			snprintf(errbuf, errlen, "reading the %s socket iterator: %s",
				 i ? "UDP" : "TCP", strerror(-err));
		close(fds[i]);
	}
	return err;
}

/* ---- who holds each socket --------------------------------------------- */

static int
cmp_ino(const void *a, const void *b)
{
	const struct existing_conn *x = *(struct existing_conn *const *)a;
	const struct existing_conn *y = *(struct existing_conn *const *)b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* A socket file a process of the cgroup tree held before a pass that ends
 * connections: the pass's kill makes a holder close it or exit at once, so
 * after the pass it may hold nothing any more. */
struct held {
	uint64_t ino;
	pid_t pid;
	char comm[17];
};

struct helds {
	struct held *v;
	size_t n, cap;
};

static int
cmp_held(const void *a, const void *b)
{
	const struct held *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The socket files each process of tree holds, sorted by inode then pid
 * (a process gone or unreadable is skipped, as scan_fds skips it). */
static int
helds_scan(const struct pids *tree, struct helds *h)
{
	for (size_t i = 0; i < tree->n; i++) {
		char path[64], link[64], comm[16] = {0};
		unsigned long long ino;
		struct dirent *de;
		ssize_t len;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/fd", (int)tree->v[i]);
		if (!(d = opendir(path)))
			continue;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			len = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
			if (len <= 0)
				continue;
			link[len] = 0;
			if (sscanf(link, "socket:[%llu]", &ino) != 1)
				continue;
			if (h->n == h->cap) {
				size_t cap = h->cap ? 2 * h->cap : 64;
				struct held *v = reallocarray(h->v, cap, sizeof(*v));

				if (!v) {
					closedir(d);
					return -ENOMEM;
				}
				h->v = v;
				h->cap = cap;
			}
			if (!comm[0]) {
				char cpath[64], *text = NULL;

				snprintf(cpath, sizeof(cpath), "/proc/%d/comm", (int)tree->v[i]);
				if (!slurp_at(AT_FDCWD, cpath, &text)) {
					text[strcspn(text, "\n")] = 0;
					memcpy(comm, text, strnlen(text, sizeof(comm) - 1));
					free(text);
				}
			}
			h->v[h->n].ino = ino;
			h->v[h->n].pid = tree->v[i];
			policy_safe_comm(comm, h->v[h->n].comm);
			h->n++;
		}
		closedir(d);
	}
	if (h->n)
		qsort(h->v, h->n, sizeof(*h->v), cmp_held);
	return 0;
}

/* Gives pid to the connections whose socket it holds (and that have no pid
 * yet). by_ino: the connections with an inode, sorted by it. Returns how
 * many it named. */
static size_t
scan_fds(pid_t pid, bool in_cgroup, struct existing_conn **by_ino, size_t n)
{
	char path[64], link[64], comm[16] = {0};
	struct existing_conn key, *kp = &key, **hit;
	struct dirent *de;
	size_t named = 0;
	unsigned long long ino;
	ssize_t len;
	DIR *d;
	int dfd;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return 0; /* gone, or unreadable: its sockets keep pid 0 */
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		len = readlinkat(dfd, de->d_name, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		if (sscanf(link, "socket:[%llu]", &ino) != 1)
			continue;
		key.ino = ino;
		hit = bsearch(&kp, by_ino, n, sizeof(*by_ino), cmp_ino);
		if (!hit)
			continue;
		/* neighbours with the same inode: the same socket seen in two
		 * passes of a namespace cannot happen, but be exact */
		while (hit > by_ino && hit[-1]->ino == ino)
			hit--;
		for (; hit < by_ino + n && (*hit)->ino == ino; hit++) {
			if ((*hit)->pid)
				continue;
			if (!comm[0]) {
				char cpath[64], *text = NULL;

				snprintf(cpath, sizeof(cpath), "/proc/%d/comm", (int)pid);
				if (!slurp_at(AT_FDCWD, cpath, &text)) {
					text[strcspn(text, "\n")] = 0;
					memcpy(comm, text, strnlen(text, sizeof(comm) - 1));
					free(text);
				}
			}
			(*hit)->pid = pid;
			(*hit)->in_cgroup = in_cgroup;
			policy_safe_comm(comm, (*hit)->comm);
			named++;
		}
	}
	closedir(d);
	return named;
}

/* Names a holder of each socket (but those a revoke pass left open): the
 * lowest pid of the cgroup tree that has it open, else the lowest pid of
 * any other process. */
static int
name_holders(struct conns *c, const struct pids *tree, const struct helds *before)
{
	struct existing_conn **by_ino;
	size_t n = 0, left;
	struct dirent *de;
	DIR *d;

	by_ino = calloc(c->n ? c->n : 1, sizeof(*by_ino));
	if (!by_ino)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].ino && c->v[i].action != EGR_PRE_DIRECT)
			by_ino[n++] = &c->v[i];
	qsort(by_ino, n, sizeof(*by_ino), cmp_ino);
	left = n;
	/* who held it before the pass ended it (the lowest pid first) */
	for (size_t i = 0; i < n && before->n; i++) {
		struct held key = {.ino = by_ino[i]->ino}, *h;
		size_t lo = 0, hi = before->n;

		while (lo < hi) { /* the first entry with this inode */
			size_t mid = lo + (hi - lo) / 2;

			if (before->v[mid].ino < key.ino)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == before->n || before->v[lo].ino != key.ino || by_ino[i]->pid)
			continue;
		h = &before->v[lo];
		by_ino[i]->pid = h->pid;
		by_ino[i]->in_cgroup = true;
		memcpy(by_ino[i]->comm, h->comm, sizeof(h->comm));
		left--;
	}
	for (size_t i = 0; left && i < tree->n; i++)
		left -= scan_fds(tree->v[i], true, by_ino, n);
	if (left && (d = opendir("/proc"))) {
		/* passed out of the cgroup (SCM_RIGHTS, pidfd_getfd) */
		struct pids others = {};

		while ((de = readdir(d))) {
			char *end;
			long v = strtol(de->d_name, &end, 10);

			if (*end || v <= 0 || v > INT_MAX || pids_has(tree, (pid_t)v))
				continue;
			if (pids_add(&others, (pid_t)v))
				break;
		}
		closedir(d);
		if (others.n)
			qsort(others.v, others.n, sizeof(*others.v), cmp_pid);
		for (size_t i = 0; left && i < others.n; i++)
			left -= scan_fds(others.v[i], false, by_ino, n);
		free(others.v);
	}
	/* none holds it any more (it exited after the end): who connected */
	for (size_t i = 0; i < c->n; i++) {
		struct existing_conn *e = &c->v[i];

		if (e->pid || !e->conn_tgid || e->action == EGR_PRE_DIRECT)
			continue;
		e->pid = e->conn_tgid;
		e->in_cgroup = true;
		policy_safe_comm(e->conn_comm, e->comm);
	}
	free(by_ino);
	return 0;
}

/* A pass: the iterators (UDP too with udp) in every network namespace of
 * the cgroup tree, then the holders. */
static int
pass(struct existing *ex, bool udp, struct existing_conn **out, size_t *n,
     struct existing_stats *st, char *errbuf, size_t errlen)
{
	struct netns_set ns = {};
	struct pids tree = {};
	struct helds before = {};
	struct conns c = {};
	struct existing_stats s = {};
	uint64_t t0 = now_ns(), t1;
	int dfd, err;

	*out = NULL;
	*n = 0;
	dfd = open(ex->o.cg_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1) {
		err = -errno;
		snprintf(errbuf, errlen, "%s: %s", ex->o.cg_path, strerror(-err));
		return err;
	}
	err = cgroup_pids_at(dfd, &tree.v, &tree.n);
	close(dfd);
	if (err) {
		snprintf(errbuf, errlen, "reading the processes of %s: %s", ex->o.cg_path,
			 strerror(-err));
		goto out;
	}
	if (tree.n) /* an empty cgroup has no array (qsort wants one) */
		qsort(tree.v, tree.n, sizeof(*tree.v), cmp_pid);
	err = netns_collect(&tree, &ns);
	if (err) {
		snprintf(errbuf, errlen, "finding the network namespaces of %s: %s", ex->o.cg_path,
			 strerror(-err));
		goto out;
	}
	/* a pass that ends connections: their holders first */
	if ((ex->o.kill || ex->skel->bss->revoke_mode) && helds_scan(&tree, &before)) {
		err = -ENOMEM;
		snprintf(errbuf, errlen, "out of memory");
		goto out;
	}
	ex->skel->bss->visited = 0;
	ex->skel->bss->lo_found = 0;
	t1 = now_ns();
	for (size_t i = 0; i < ns.n && !err; i++)
		err = iter_netns(ex, &ns.v[i], &ns.v[0], udp, &c, errbuf, errlen);
	if (!err && ex->skel->bss->revoke_mode == REVOKE_DIRECT && ex->skel->bss->lo_found) {
		/* loopback connections to a revoked key: two more walks */
		for (int mode = REVOKE_RECEIVERS; mode <= REVOKE_LOOPBACK && !err; mode++) {
			ex->skel->bss->revoke_mode = (uint8_t)mode;
			for (size_t i = 0; i < ns.n && !err; i++)
				err = iter_netns(ex, &ns.v[i], &ns.v[0], false, &c, errbuf, errlen);
		}
		ex->skel->bss->revoke_mode = REVOKE_DIRECT;
	}
	s.pass_ns = now_ns() - t1;
	if (err)
		goto out;
	err = name_holders(&c, &tree, &before);
	if (err) {
		snprintf(errbuf, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < c.n; i++)
		s.failures += c.v[i].action == EGR_PRE_FAILED;
	s.visited = ex->skel->bss->visited;
	s.netns = (unsigned int)ns.n;
	s.procs = (unsigned int)tree.n;
	s.total_ns = now_ns() - t0;
	if (st)
		*st = s;
	*out = c.v;
	*n = c.n;
	c.v = NULL;
out:
	free(c.v);
	free(c.set);
	free(tree.v);
	free(before.v);
	netns_free(&ns);
	return err;
}

int
existing_run(struct existing *ex, struct existing_conn **out, size_t *n, struct existing_stats *st,
	     char *errbuf, size_t errlen)
{
	ex->skel->bss->revoke_mode = 0;
	return pass(ex, true, out, n, st, errbuf, errlen);
}

/* Empties a map of the revoke pass (what an interrupted pass may have
 * left too); keys of at most 64 bytes. */
static void
revoke_clear(int fd)
{
	unsigned char k[64];

	while (!bpf_map_get_next_key(fd, NULL, k))
		if (bpf_map_delete_elem(fd, k))
			break;
}

int
existing_revoke(struct existing *ex, const struct egr_fast_key *keys, size_t nkeys,
		struct existing_conn **out, size_t *n, struct existing_stats *st, char *errbuf,
		size_t errlen)
{
	int fd = bpf_map__fd(ex->skel->maps.egr_revoke), err = 0;
	int lo_fd = bpf_map__fd(ex->skel->maps.egr_revoke_lo);
	const uint8_t one = 1;
	bool udp = false;

	*out = NULL;
	*n = 0;
	if (!ex->o.revoke || nkeys > REVOKE_KEYS_MAX) {
		snprintf(errbuf, errlen, "%s",
			 nkeys > REVOKE_KEYS_MAX
				 ? "too many destinations to revoke at once"
				 : "the iterators were not opened for revoking (a bug)");
		return -EINVAL;
	}
	revoke_clear(fd);
	revoke_clear(lo_fd);
	for (size_t i = 0; i < nkeys && !err; i++) {
		udp |= keys[i].proto == IPPROTO_UDP;
		if (bpf_map_update_elem(fd, &keys[i], &one, BPF_ANY)) {
			err = -errno;
			snprintf(errbuf, errlen, "cannot fill the map of revoked destinations: %s",
				 strerror(-err));
		}
	}
	if (!err) {
		ex->skel->bss->revoke_mode = REVOKE_DIRECT;
		err = pass(ex, udp, out, n, st, errbuf, errlen);
		ex->skel->bss->revoke_mode = 0;
	}
	revoke_clear(fd);
	revoke_clear(lo_fd);
	return err;
}

int
existing_scan(const struct existing_opts *o, struct existing_conn **out, size_t *n,
	      struct existing_stats *st, char *errbuf, size_t errlen)
{
	struct existing *ex;
	int err;

	*out = NULL;
	*n = 0;
	ex = existing_open(o, errbuf, errlen);
	if (!ex)
		return -errno;
	err = existing_run(ex, out, n, st, errbuf, errlen);
	existing_free(ex);
	return err;
}

/* ---- words -------------------------------------------------------------- */

/* "pre-existing, not confined", "pre-existing, killed", ..., "revoked" and
 * "direct" for a revoke pass's; "?" otherwise. */
static const char *
existing_action_words(unsigned int action)
{
	switch (action) {
	case EGR_PRE_MARKED:
	case EGR_PRE_MARKED_BEFORE:
		return "pre-existing, not confined";
	case EGR_PRE_KILLED:
		return "pre-existing, killed";
	case EGR_PRE_FAILED:
		return "pre-existing, neither confined nor killed: its packets are dropped";
	case EGR_PRE_REVOKED:
		return "revoked: the policy changed";
	case EGR_PRE_DIRECT:
		return "direct, left open";
	default:
		return "?";
	}
}

const char *
existing_state_word(uint8_t protocol, uint8_t state)
{
	static const char *const tcp[] = {
		[1] = "established", [2] = "syn-sent",	[3] = "syn-recv", [4] = "fin-wait-1",
		[5] = "fin-wait-2",  [6] = "time-wait", [7] = "close",	  [8] = "close-wait",
		[9] = "last-ack",    [10] = "listen",	[11] = "closing", [12] = "new-syn-recv",
	};

	if (protocol == IPPROTO_UDP)
		return "connected";
	if (state < sizeof(tcp) / sizeof(tcp[0]) && tcp[state])
		return tcp[state];
	return "?";
}

void
existing_addr(const uint32_t a[4], uint16_t port, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (a[0] == 0 && a[1] == 0 && a[2] == htonl(0xffff)) {
		inet_ntop(AF_INET, &a[3], ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, port);
	} else {
		inet_ntop(AF_INET6, a, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, port);
	}
}

int
existing_format(const struct existing_conn *c, char *buf, size_t len)
{
	char who[64], local[64], peer[64];

	if (c->pid)
		snprintf(who, sizeof(who), "%s[%d]%s", c->comm[0] ? c->comm : "?", (int)c->pid,
			 c->in_cgroup ? "" : " (outside the cgroup)");
	else
		snprintf(who, sizeof(who), "a socket of cgroup %llu",
			 (unsigned long long)c->cgroup_id);
	existing_addr(c->laddr, c->lport, local, sizeof(local));
	existing_addr(c->raddr, c->rport, peer, sizeof(peer));
	if (c->action == EGR_PRE_FAILED)
		return snprintf(buf, len, "%s %s %s \u2192 %s %s: %s (%s)", who,
				c->protocol == IPPROTO_UDP ? "udp" : "tcp", local, peer,
				existing_state_word(c->protocol, c->state),
				existing_action_words(c->action), strerror(-c->err));
	return snprintf(buf, len, "%s %s %s \u2192 %s %s: %s", who,
			c->protocol == IPPROTO_UDP ? "udp" : "tcp", local, peer,
			existing_state_word(c->protocol, c->state),
			existing_action_words(c->action));
}
