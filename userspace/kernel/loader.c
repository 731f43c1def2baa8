// SPDX-License-Identifier: Apache-2.0
/* The BPF side's lifecycle (see loader.h): skeleton open/load with tunables,
 * unix hooks typed by number from the running kernel's BTF (libbpf 1.1 does
 * not know them), bpf_link attachment and pinning, stale-pin recovery, the
 * fast-path map, the ring buffer and the connection index lookup. */
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
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "egress.skel.h"
#include "kernel/cgroup.h"
#include "kernel/loader.h"
#include "kernel/unixsvc.h"
#include "lib/log.h"
#include "lib/sockaddr.h"

#define BPF_FS_MAGIC_NR 0xcafe4a11
#define DEFAULT_BPFFS	"/sys/fs/bpf"

struct loader {
	struct egress_bpf *skel;
	struct ring_buffer *rb;
	void (*on_event)(const struct egr_event *e, void *arg);
	void *arg;
	bool unix_hooks;
	bool attached;
	char pin_dir[PATH_MAX];
	struct bpf_link *kill_link; /* egr_kv_kill's iterator, pinned (KILL_PIN) */
};

#define KILL_PIN "kv_kill" /* link_kv_kill: egr_kv_kill's iterator (loader_attach) */

/* The programs attached to the cgroup: all but the iterator egr_kv_kill. */
static bool
cgroup_prog(const struct bpf_program *prog)
{
	return bpf_program__autoload(prog) && bpf_program__type(prog) != BPF_PROG_TYPE_TRACING;
}

int
loader_unix_attach_types(int *connect_type, int *sendmsg_type)
{
	const struct btf_enum *m;
	const struct btf_type *t;
	struct btf *btf;
	int id, i, n;

	*connect_type = *sendmsg_type = -1;
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return -errno;
	id = btf__find_by_name_kind(btf, "bpf_attach_type", BTF_KIND_ENUM);
	if (id < 0) {
		btf__free(btf);
		return -ENOENT;
	}
	t = btf__type_by_id(btf, id);
	m = btf_enum(t);
	n = btf_vlen(t);
	for (i = 0; i < n; i++) {
		const char *name = btf__name_by_offset(btf, m[i].name_off);

		if (name && !strcmp(name, "BPF_CGROUP_UNIX_CONNECT"))
			*connect_type = m[i].val;
		else if (name && !strcmp(name, "BPF_CGROUP_UNIX_SENDMSG"))
			*sendmsg_type = m[i].val;
	}
	btf__free(btf);
	return *connect_type < 0 || *sendmsg_type < 0 ? -ENOENT : 0;
}

static int
find_bpffs(const char *mountpoint, void *arg)
{
	char *out = arg;

	if (out[0])
		return 0;
	if (strlen(mountpoint) >= PATH_MAX)
		return 0;
	strcpy(out, mountpoint);
	return 1;
}

static int
read_mountinfo(char **text)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = NULL, *nbuf;
	ssize_t n;
	int fd;

	fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	for (;;) {
		if (!buf || len + 1 >= cap) {
			cap *= 2;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			free(buf);
			close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = 0;
	*text = buf;
	return 0;
}

int
loader_pin_root(char *out, size_t outlen)
{
	char mnt[PATH_MAX] = "";
	char *info = NULL;
	struct statfs sfs;
	int err;

	err = read_mountinfo(&info);
	if (err)
		return err;
	cgroup_foreach_mount_in(info, "bpf", find_bpffs, mnt);
	free(info);
	if (!mnt[0]) {
		if (mkdir(DEFAULT_BPFFS, 0700) && errno != EEXIST)
			return -errno;
		if (mount("bpf", DEFAULT_BPFFS, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "mode=0700"))
			return -errno;
		strcpy(mnt, DEFAULT_BPFFS);
	}
	if (statfs(mnt, &sfs) || (unsigned long)sfs.f_type != BPF_FS_MAGIC_NR)
		return -ENOTSUP;
	if ((size_t)snprintf(out, outlen, "%s/%s", mnt, EGR_PIN_DIR) >= outlen)
		return -ENAMETOOLONG;
	if (mkdir(out, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

static int
on_ring(void *ctx, void *data, size_t size)
{
	struct loader *ld = ctx;

	if (size < sizeof(struct egr_event))
		return 0;
	if (loader_is_refusal(data)) /* first: the client's error comes sooner */
		loader_kv_kill(ld, (pid_t)((const struct egr_event *)data)->tgid);
	if (ld->on_event)
		ld->on_event(data, ld->arg);
	return 0;
}

/* What the programs need beyond the hooks themselves, so that a kernel
 * without it fails here, in words, not in the verifier: the receive
 * lookup (bpf_sk_lookup_tcp/udp in the sock_addr and skb programs), the
 * bpf_loop over a SO_REUSEPORT group and the bpf_rdonly_cast kfunc
 * (Linux 6.2) that reads the receiving socket's cgroup. */
static int
loader_check_kernel(char *errbuf, size_t errlen)
{
	static const struct {
		enum bpf_prog_type type;
		enum bpf_func_id func;
		const char *what;
	} need[] = {
		{BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_sk_lookup_tcp,
		 "bpf_sk_lookup_tcp in cgroup/connect"},
		{BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_sk_lookup_udp,
		 "bpf_sk_lookup_udp in cgroup/connect"},
		{BPF_PROG_TYPE_CGROUP_SKB, BPF_FUNC_sk_lookup_tcp,
		 "bpf_sk_lookup_tcp in cgroup_skb"},
		{BPF_PROG_TYPE_CGROUP_SKB, BPF_FUNC_sk_lookup_udp,
		 "bpf_sk_lookup_udp in cgroup_skb"},
		{BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_loop, "bpf_loop (Linux 5.17)"},
		/* containers: which network namespace a socket is in */
		{BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_get_netns_cookie,
		 "bpf_get_netns_cookie in cgroup/connect"},
		{BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_get_netns_cookie,
		 "bpf_get_netns_cookie in sockops"},
	};
	struct btf *btf;
	int id;

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (libbpf_probe_bpf_helper(need[i].type, need[i].func, NULL) != 1) {
			snprintf(errbuf, errlen,
				 "this kernel lacks %s, needed to tell the sandbox's own loopback "
				 "sockets from the host's and its network namespace from others",
				 need[i].what);
			return -ENOTSUP;
		}
	}
	btf = btf__load_vmlinux_btf();
	if (!btf) {
		snprintf(errbuf, errlen, "cannot read the kernel's BTF: %s", strerror(errno));
		return -ENOTSUP;
	}
	id = btf__find_by_name_kind(btf, "bpf_rdonly_cast", BTF_KIND_FUNC);
	btf__free(btf);
	if (id < 0) {
		snprintf(errbuf, errlen,
			 "this kernel lacks the bpf_rdonly_cast kfunc (Linux 6.2), needed to tell "
			 "the sandbox's own loopback sockets from the host's");
		return -ENOTSUP;
	}
	return 0;
}

int
loader_unix_set(struct loader *ld, const struct unixsvc *s)
{
	int fd = bpf_map__fd(ld->skel->maps.egr_unix_paths);
	struct egr_unix_key k, next;
	int err = 0;

	/* deleting while walking: restart from the start after each delete */
	while (!bpf_map_get_next_key(fd, NULL, &next)) {
		k = next;
		if (bpf_map_delete_elem(fd, &k))
			return -errno;
	}
	for (int i = 0; s && i < s->n && !err; i++) {
		struct egr_unix_val v = {.index = (uint32_t)i,
					 .action = s->e[i].allow ? EGR_UNIX_ALLOW : EGR_UNIX_DENY};

		memset(&k, 0, sizeof(k));
		snprintf(k.path, sizeof(k.path), "%s", s->e[i].path);
		if (bpf_map_update_elem(fd, &k, &v, BPF_ANY))
			err = -errno;
	}
	return err;
}

/* The cookie of this process's network namespace, where the listeners
 * are (SO_NETNS_COOKIE, Linux 5.14). 0 with errbuf set. */
static uint64_t
own_netns(char *errbuf, size_t errlen)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) || !cookie) {
		snprintf(errbuf, errlen,
			 "cannot read the network namespace's cookie (SO_NETNS_COOKIE, Linux "
			 "5.14): %s",
			 strerror(errno));
		cookie = 0;
	}
	if (fd >= 0)
		close(fd);
	return cookie;
}

struct loader *
loader_open(const struct loader_opts *o, char *errbuf, size_t errlen)
{
	struct loader *ld;
	int uconn, usend, err;

	ld = calloc(1, sizeof(*ld));
	if (!ld) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	ld->on_event = o->on_event;
	ld->arg = o->arg;
	ld->unix_hooks = o->unix_hooks;
	err = loader_check_kernel(errbuf, errlen);
	if (err)
		goto out_free;
	ld->skel = egress_bpf__open();
	if (!ld->skel) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot open the BPF object: %s", strerror(-err));
		goto out_free;
	}
	ld->skel->rodata->tproxy_port = o->tproxy_port;
	ld->skel->rodata->dns_port = o->dns_port;
	memcpy((void *)ld->skel->rodata->proxy_ports, o->proxy_ports, sizeof(o->proxy_ports));
	ld->skel->rodata->emit_redirects = o->emit_redirects;
	ld->skel->rodata->audit_mode = o->audit_mode;
	ld->skel->rodata->sandbox_cgid = o->sandbox_cgid;
	ld->skel->rodata->unix_root_len = o->unix_svc ? (uint32_t)o->unix_svc->root_len : 0;
	ld->skel->rodata->ns_ip4 = o->ns_ip4;
	ld->skel->rodata->ipv6_on = o->ipv6;
	ld->skel->rodata->host_netns = own_netns(errbuf, errlen);
	if (!ld->skel->rodata->host_netns) {
		err = -ENOTSUP;
		goto out_destroy;
	}

	if (o->unix_hooks) {
		err = loader_unix_attach_types(&uconn, &usend);
		if (err) {
			snprintf(errbuf, errlen,
				 "this kernel has no cgroup unix socket hooks (they came in 6.7), "
				 "so abstract unix sockets cannot be confined; "
				 "pass --allow-abstract-unix to run anyway");
			goto out_destroy;
		}
		bpf_program__set_type(ld->skel->progs.egr_connect_unix,
				      BPF_PROG_TYPE_CGROUP_SOCK_ADDR);
		bpf_program__set_expected_attach_type(ld->skel->progs.egr_connect_unix, uconn);
		bpf_program__set_type(ld->skel->progs.egr_sendmsg_unix,
				      BPF_PROG_TYPE_CGROUP_SOCK_ADDR);
		bpf_program__set_expected_attach_type(ld->skel->progs.egr_sendmsg_unix, usend);
	} else {
		bpf_program__set_autoload(ld->skel->progs.egr_connect_unix, false);
		bpf_program__set_autoload(ld->skel->progs.egr_sendmsg_unix, false);
	}

	for (int i = 0; i < 8 && o->skip_progs[i]; i++) {
		struct bpf_program *prog;
		char name[64];

		snprintf(name, sizeof(name), "egr_%s", o->skip_progs[i]);
		prog = bpf_object__find_program_by_name(ld->skel->obj, name);
		if (!prog) {
			err = -ENOENT;
			snprintf(errbuf, errlen, "no program %s to skip", name);
			goto out_destroy;
		}
		bpf_program__set_autoload(prog, false);
	}
	if (o->socks_max &&
	    (err = bpf_map__set_max_entries(ld->skel->maps.egr_socks, o->socks_max))) {
		snprintf(errbuf, errlen, "egr_socks: %s", strerror(-err));
		goto out_destroy;
	}
	err = egress_bpf__load(ld->skel);
	if (err) {
		snprintf(errbuf, errlen,
			 "cannot load the BPF programs: %s (run with -vv for the verifier log)",
			 strerror(-err));
		goto out_destroy;
	}
	ld->rb = ring_buffer__new(bpf_map__fd(ld->skel->maps.egr_events), on_ring, ld, NULL);
	if (!ld->rb) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot open the event ring buffer: %s", strerror(-err));
		goto out_destroy;
	}
	err = loader_unix_set(ld, o->unix_svc);
	if (err) {
		snprintf(errbuf, errlen, "cannot fill the unix socket maps: %s", strerror(-err));
		goto out_destroy;
	}
	return ld;

out_destroy:
	egress_bpf__destroy(ld->skel);
out_free:
	free(ld);
	errno = -err;
	return NULL;
}

int
loader_remove_pin_dir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int err = 0;

	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		if (unlink(path) && errno != ENOENT && !err)
			err = -errno;
	}
	closedir(d);
	if (rmdir(dir) && errno != ENOENT && !err)
		err = -errno;
	return err;
}

static int
pin_one(const char *dir, const char *prefix, const char *name, int (*pin)(void *, const char *),
	void *obj)
{
	char path[PATH_MAX];

	if (!strncmp(name, "egr_", 4))
		name += 4;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s_%s", dir, prefix, name) >= sizeof(path))
		return -ENAMETOOLONG;
	return pin(obj, path);
}

static int
pin_link(void *link, const char *path)
{
	return bpf_link__pin(link, path);
}

static int
pin_map(void *map, const char *path)
{
	return bpf_map__pin(map, path);
}

int
loader_attach(struct loader *ld, int cg_fd, uint64_t cgid, char *errbuf, size_t errlen)
{
	struct bpf_map *map;
	char root[PATH_MAX];
	int err;

	if (!cgid || cgid != ld->skel->rodata->sandbox_cgid) {
		/* the programs would take sockets of another cgroup (or none)
		 * for the sandbox's own loopback servers */
		snprintf(errbuf, errlen,
			 "the BPF programs were loaded for cgroup %llu, not %llu (a bug)",
			 (unsigned long long)ld->skel->rodata->sandbox_cgid,
			 (unsigned long long)cgid);
		return -EINVAL;
	}
	err = loader_pin_root(root, sizeof(root));
	if (err) {
		snprintf(errbuf, errlen, "cannot set up bpffs pins: %s", strerror(-err));
		return err;
	}
	if ((size_t)snprintf(ld->pin_dir, sizeof(ld->pin_dir), "%s/%llu", root,
			     (unsigned long long)cgid) >= sizeof(ld->pin_dir)) {
		/* a cut path could name another run's pins: loader_detach
		 * must not remove them */
		ld->pin_dir[0] = 0;
		snprintf(errbuf, errlen, "the pin directory under %s is too long", root);
		return -ENAMETOOLONG;
	}

	/* Attach first: stale links of a killed run keep enforcing until ours are in. */
	for (int i = 0; i < ld->skel->skeleton->prog_cnt; i++) {
		struct bpf_program *prog = *ld->skel->skeleton->progs[i].prog;
		struct bpf_link **slot = ld->skel->skeleton->progs[i].link;

		if (!cgroup_prog(prog))
			continue;
		*slot = bpf_program__attach_cgroup(prog, cg_fd);
		if (!*slot) {
			err = -errno;
			snprintf(errbuf, errlen, "cannot attach %s to the cgroup: %s",
				 bpf_program__name(prog), strerror(-err));
			goto out_detach;
		}
	}
	ld->attached = true;

	err = loader_remove_pin_dir(ld->pin_dir);
	if (err) {
		snprintf(errbuf, errlen, "cannot remove stale pins in %s: %s", ld->pin_dir,
			 strerror(-err));
		goto out_detach;
	}
	if (mkdir(ld->pin_dir, 0700)) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot create %s: %s", ld->pin_dir, strerror(-err));
		goto out_detach;
	}
	for (int i = 0; i < ld->skel->skeleton->prog_cnt; i++) {
		struct bpf_link *link = *ld->skel->skeleton->progs[i].link;

		if (!link)
			continue;
		err = pin_one(ld->pin_dir, "link", ld->skel->skeleton->progs[i].name, pin_link,
			      link);
		if (err)
			goto out_pin;
	}
	bpf_object__for_each_map(map, ld->skel->obj)
	{
		if (bpf_map__type(map) == BPF_MAP_TYPE_ARRAY) /* .rodata */
			continue;
		err = pin_one(ld->pin_dir, "map", bpf_map__name(map), pin_map, map);
		if (err)
			goto out_pin;
	}
	/* egr_kv_kill's iterator, pinned too: a daemon that takes the pins
	 * over loads no program, and would have none to end refused
	 * connections with (left out only by --test-skip-prog kv_kill, a
	 * test of the sockops backstop behind it) */
	if (!bpf_program__autoload(ld->skel->progs.egr_kv_kill))
		return 0;
	ld->kill_link = bpf_program__attach_iter(ld->skel->progs.egr_kv_kill, NULL);
	if (!ld->kill_link) {
		err = -errno;
		snprintf(errbuf, errlen,
			 "cannot make the iter/tcp link that ends refused connections: %s",
			 strerror(-err));
		goto out_detach;
	}
	err = pin_one(ld->pin_dir, "link", KILL_PIN, pin_link, ld->kill_link);
	if (err)
		goto out_pin;
	return 0;

out_pin:
	snprintf(errbuf, errlen, "cannot pin in %s: %s", ld->pin_dir, strerror(-err));
out_detach:
	loader_detach(ld);
	return err;
}

void
loader_detach(struct loader *ld)
{
	if (!ld)
		return;
	for (int i = 0; i < ld->skel->skeleton->prog_cnt; i++) {
		struct bpf_link **slot = ld->skel->skeleton->progs[i].link;

		if (*slot) {
			bpf_link__unpin(*slot);
			bpf_link__destroy(*slot);
			*slot = NULL;
		}
	}
	if (ld->pin_dir[0])
		loader_remove_pin_dir(ld->pin_dir);
	ld->attached = false;
}

void
loader_free(struct loader *ld)
{
	if (!ld)
		return;
	ring_buffer__free(ld->rb);
	bpf_link__destroy(ld->kill_link);
	/* pinned links survive their fds: enforcement outlives us */
	egress_bpf__destroy(ld->skel);
	free(ld);
}

int
loader_sockaddr_key(const struct sockaddr *sa, uint32_t addr[4])
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		addr[0] = 0;
		addr[1] = 0;
		addr[2] = htonl(0xffff);
		addr[3] = in->sin_addr.s_addr;
		return in->sin_port;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		memcpy(addr, &in6->sin6_addr, 16);
		return in6->sin6_port;
	}
	return -EAFNOSUPPORT;
}

static int
fast_key(const struct sockaddr *sa, uint8_t proto, struct egr_fast_key *k)
{
	int port;

	memset(k, 0, sizeof(*k));
	port = loader_sockaddr_key(sa, k->addr);
	if (port < 0)
		return port;
	k->port = (uint16_t)port;
	k->proto = proto;
	return 0;
}

int
loader_fast_add(struct loader *ld, const struct sockaddr *sa, uint8_t proto, uint64_t ttl_ns)
{
	struct egr_fast_val v = {};
	struct egr_fast_key k;
	struct timespec ts;
	int err;

	err = fast_key(sa, proto, &k);
	if (err)
		return err;
	if (ttl_ns) {
		clock_gettime(CLOCK_BOOTTIME, &ts);
		v.expires_ns = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec + ttl_ns;
	}
	if (bpf_map_update_elem(bpf_map__fd(ld->skel->maps.egr_fast), &k, &v, BPF_ANY))
		return -errno;
	return 0;
}

int
loader_fast_del(struct loader *ld, const struct sockaddr *sa, uint8_t proto)
{
	struct egr_fast_key k;
	int err;

	err = fast_key(sa, proto, &k);
	if (err)
		return err;
	if (bpf_map_delete_elem(bpf_map__fd(ld->skel->maps.egr_fast), &k))
		return -errno;
	return 0;
}

int
loader_saved_put(struct loader *ld, const struct egr_saved_key *k, const struct egr_saved_val *v)
{
	if (bpf_map_update_elem(bpf_map__fd(ld->skel->maps.egr_saved), k, v, BPF_ANY))
		return -errno;
	return 0;
}

int
loader_saved_del(struct loader *ld, const struct egr_saved_key *k)
{
	if (bpf_map_delete_elem(bpf_map__fd(ld->skel->maps.egr_saved), k))
		return -errno;
	return 0;
}

int
loader_saved_walk(struct loader *ld,
		  int (*fn)(void *arg, const struct egr_saved_key *k,
			    const struct egr_saved_val *v),
		  void *arg)
{
	int fd = bpf_map__fd(ld->skel->maps.egr_saved), n = 0;
	struct egr_saved_key k, next;
	struct egr_saved_val v;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue; /* deleted meanwhile */
		v.name[sizeof(v.name) - 1] = 0;
		n++;
		if (fn(arg, &k, &v))
			break;
	}
	return n;
}

int
loader_events_fd(struct loader *ld)
{
	return ring_buffer__epoll_fd(ld->rb);
}

int
loader_events_consume(struct loader *ld)
{
	return ring_buffer__consume(ld->rb);
}

int
loader_conns_fd(struct loader *ld)
{
	return bpf_map__fd(ld->skel->maps.egr_conns);
}

int
loader_socks_fd(struct loader *ld)
{
	return bpf_map__fd(ld->skel->maps.egr_socks);
}

int
loader_sk_fd(struct loader *ld)
{
	return bpf_map__fd(ld->skel->maps.egr_sk);
}

const char *
loader_pin_dir(struct loader *ld)
{
	return ld->pin_dir;
}

int
loader_conn_lookup(int conns_fd, const struct sockaddr *sa, int proto, struct egr_conn_val *out)
{
	struct egr_conn_key k = {};
	int port;

	port = loader_sockaddr_key(sa, k.addr);
	if (port < 0)
		return port;
	k.port = (uint16_t)port;
	k.proto = (uint16_t)proto;
	/* one system call for both (hash maps have it since Linux 5.14) */
	if (proto == IPPROTO_TCP ? bpf_map_lookup_and_delete_elem(conns_fd, &k, out)
				 : bpf_map_lookup_elem(conns_fd, &k, out))
		return -errno;
	return 0;
}

/* ---- taking over pinned programs (the daemon after a restart) ---- */

/* The .rodata of the program behind a pinned link: its tunables as loaded. */
static int
pinned_rodata(int link_fd, void *out, size_t size, uint32_t *prog_id)
{
	struct bpf_link_info li = {};
	struct bpf_prog_info pi = {};
	uint32_t len = sizeof(li), ids[16], n;
	int fd, err = -ENOENT;

	if (bpf_obj_get_info_by_fd(link_fd, &li, &len))
		return -errno;
	*prog_id = li.prog_id;
	fd = bpf_prog_get_fd_by_id(li.prog_id);
	if (fd < 0)
		return -errno;
	len = sizeof(pi);
	pi.nr_map_ids = 16;
	pi.map_ids = (uint64_t)(uintptr_t)ids;
	if (bpf_obj_get_info_by_fd(fd, &pi, &len)) {
		err = -errno;
		close(fd);
		return err;
	}
	close(fd);
	n = pi.nr_map_ids < 16 ? pi.nr_map_ids : 16;
	for (uint32_t i = 0; i < n && err == -ENOENT; i++) {
		struct bpf_map_info mi = {};
		uint32_t mlen = sizeof(mi), zero = 0;
		int mfd = bpf_map_get_fd_by_id(ids[i]);

		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &mlen) && mi.type == BPF_MAP_TYPE_ARRAY &&
		    strstr(mi.name, ".rodata")) {
			if (mi.value_size != size)
				err = -ESTALE; /* another build's programs */
			else
				err = bpf_map_lookup_elem(mfd, &zero, out) ? -errno : 0;
		}
		close(mfd);
	}
	return err;
}

/* The pinned link of prog, checked: attached to cgid, running the program
 * the others run with the same tunables. */
static int
adopt_link(struct loader *ld, int i, uint64_t cgid, void *rodata, size_t size, uint32_t *prog_id,
	   char *errbuf, size_t errlen)
{
	const struct bpf_prog_skeleton *ps = &ld->skel->skeleton->progs[i];
	const char *name = ps->name;
	struct bpf_link_info li = {};
	uint32_t len = sizeof(li), id = 0;
	char path[PATH_MAX];
	struct bpf_link *link;
	void *ro;
	int err;

	if (!strncmp(name, "egr_", 4))
		name += 4;
	if ((size_t)snprintf(path, sizeof(path), "%s/link_%s", ld->pin_dir, name) >= sizeof(path)) {
		snprintf(errbuf, errlen, "pin path too long");
		return -ENAMETOOLONG;
	}
	link = bpf_link__open(path);
	if (!link) {
		err = -errno;
		snprintf(errbuf, errlen, "pinned link %s: %s", path, strerror(-err));
		return err;
	}
	*ps->link = link;
	if (bpf_obj_get_info_by_fd(bpf_link__fd(link), &li, &len)) {
		err = -errno;
		snprintf(errbuf, errlen, "pinned link %s: %s", path, strerror(-err));
		return err;
	}
	if (li.type != BPF_LINK_TYPE_CGROUP || li.cgroup.cgroup_id != cgid) {
		snprintf(errbuf, errlen, "pinned link %s is not attached to cgroup %llu", path,
			 (unsigned long long)cgid);
		return -ESTALE;
	}
	ro = *prog_id ? calloc(1, size) : rodata;
	if (!ro)
		return -ENOMEM;
	err = pinned_rodata(bpf_link__fd(link), ro, size, &id);
	if (!err && *prog_id && memcmp(ro, rodata, size))
		err = -ESTALE; /* links of two different loads */
	if (ro != rodata)
		free(ro);
	if (err) {
		snprintf(errbuf, errlen, "pinned link %s: %s", path,
			 err == -ESTALE ? "programs of another build or load" : strerror(-err));
		return err;
	}
	*prog_id = id;
	return 0;
}

static int
adopt_maps(struct loader *ld, char *errbuf, size_t errlen)
{
	struct bpf_map *map;
	char path[PATH_MAX];

	bpf_object__for_each_map(map, ld->skel->obj)
	{
		const char *name = bpf_map__name(map);
		int fd, err;

		if (bpf_map__type(map) == BPF_MAP_TYPE_ARRAY) /* .rodata: read from the programs */
			continue;
		if (!strncmp(name, "egr_", 4))
			name += 4;
		if ((size_t)snprintf(path, sizeof(path), "%s/map_%s", ld->pin_dir, name) >=
		    sizeof(path)) {
			snprintf(errbuf, errlen, "pin path too long");
			return -ENAMETOOLONG;
		}
		fd = bpf_obj_get(path);
		if (fd < 0) {
			err = -errno;
			snprintf(errbuf, errlen, "pinned map %s: %s", path, strerror(-err));
			return err;
		}
		err = bpf_map__reuse_fd(map, fd);
		close(fd);
		if (err) {
			snprintf(errbuf, errlen, "pinned map %s: %s", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* The pinned iterator of egr_kv_kill (loader_attach). Pins of an egressctl
 * before it have none: then refused kernel-verified connections end by the
 * sockops backstop's timeout, and loader_kv_kill says so. */
static int
adopt_kill_link(struct loader *ld, char *errbuf, size_t errlen)
{
	char path[PATH_MAX];
	int err;

	if ((size_t)snprintf(path, sizeof(path), "%s/link_%s", ld->pin_dir, KILL_PIN) >=
	    sizeof(path)) {
		snprintf(errbuf, errlen, "pin path too long");
		return -ENAMETOOLONG;
	}
	ld->kill_link = bpf_link__open(path);
	if (ld->kill_link)
		return 0;
	err = -errno;
	ld->kill_link = NULL;
	if (err == -ENOENT)
		return 0;
	snprintf(errbuf, errlen, "pinned link %s: %s", path, strerror(-err));
	return err;
}

struct loader *
loader_adopt(const struct loader_opts *want, uint64_t cgid, struct loader_opts *pinned,
	     char *errbuf, size_t errlen)
{
	size_t size;
	uint32_t prog_id = 0;
	char root[PATH_MAX];
	struct loader *ld;
	struct stat st;
	int err;

	ld = calloc(1, sizeof(*ld));
	if (!ld) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	ld->on_event = want->on_event;
	ld->arg = want->arg;
	ld->unix_hooks = want->unix_hooks;
	err = loader_pin_root(root, sizeof(root));
	if (err) {
		snprintf(errbuf, errlen, "cannot open bpffs: %s", strerror(-err));
		goto out_free;
	}
	if ((size_t)snprintf(ld->pin_dir, sizeof(ld->pin_dir), "%s/%llu", root,
			     (unsigned long long)cgid) >= sizeof(ld->pin_dir)) {
		err = -ENAMETOOLONG;
		snprintf(errbuf, errlen, "pin path too long");
		goto out_free;
	}
	if (stat(ld->pin_dir, &st)) {
		err = -errno;
		snprintf(errbuf, errlen, "no pins for cgroup %llu", (unsigned long long)cgid);
		goto out_free;
	}
	ld->skel = egress_bpf__open();
	if (!ld->skel) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot open the BPF object: %s", strerror(-err));
		goto out_free;
	}
	if (!want->unix_hooks) {
		bpf_program__set_autoload(ld->skel->progs.egr_connect_unix, false);
		bpf_program__set_autoload(ld->skel->progs.egr_sendmsg_unix, false);
	}
	/* the section's size, which the map's value has: the skeleton's
	 * struct may have padding after its last field beyond it */
	size = bpf_map__value_size(ld->skel->maps.rodata);
	if (size > sizeof(*ld->skel->rodata)) {
		err = -ESTALE;
		snprintf(errbuf, errlen, "the BPF object's .rodata is larger than its skeleton");
		goto out_destroy;
	}
	for (int i = 0; i < ld->skel->skeleton->prog_cnt; i++) {
		if (!cgroup_prog(*ld->skel->skeleton->progs[i].prog))
			continue;
		err = adopt_link(ld, i, cgid, (void *)ld->skel->rodata, size, &prog_id, errbuf,
				 errlen);
		if (err)
			goto out_destroy;
	}
	if (ld->skel->rodata->sandbox_cgid != cgid ||
	    ld->skel->rodata->audit_mode != want->audit_mode ||
	    ld->skel->rodata->emit_redirects != want->emit_redirects ||
	    ld->skel->rodata->ns_ip4 != want->ns_ip4 || ld->skel->rodata->ipv6_on != want->ipv6 ||
	    ld->skel->rodata->host_netns != own_netns(errbuf, errlen)) {
		/* (another network namespace: the listeners would be elsewhere) */
		snprintf(errbuf, errlen, "the pinned programs were loaded with other options");
		err = -ESTALE;
		goto out_destroy;
	}
	if (ld->skel->rodata->unix_root_len !=
	    (want->unix_svc ? (uint32_t)want->unix_svc->root_len : 0)) {
		snprintf(errbuf, errlen, "the pinned programs were loaded with other options");
		err = -ESTALE;
		goto out_destroy;
	}
	err = adopt_maps(ld, errbuf, errlen);
	if (err)
		goto out_destroy;
	err = adopt_kill_link(ld, errbuf, errlen);
	if (err)
		goto out_destroy;
	/* the unix lists may have changed with the configuration */
	err = loader_unix_set(ld, want->unix_svc);
	if (err) {
		snprintf(errbuf, errlen, "cannot fill the unix socket maps: %s", strerror(-err));
		goto out_destroy;
	}
	ld->rb = ring_buffer__new(bpf_map__fd(ld->skel->maps.egr_events), on_ring, ld, NULL);
	if (!ld->rb) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot open the event ring buffer: %s", strerror(-err));
		goto out_destroy;
	}
	*pinned = *want;
	pinned->tproxy_port = ld->skel->rodata->tproxy_port;
	pinned->dns_port = ld->skel->rodata->dns_port;
	memcpy(pinned->proxy_ports, (const void *)ld->skel->rodata->proxy_ports,
	       sizeof(pinned->proxy_ports));
	pinned->sandbox_cgid = cgid;
	ld->attached = true;
	return ld;

out_destroy:
	egress_bpf__destroy(ld->skel); /* opened links only close: pins stay */
out_free:
	free(ld);
	errno = -err;
	return NULL;
}

void
loader_link_ids(struct loader *ld, uint32_t *ids, int max, int *n)
{
	*n = 0;
	for (int i = 0; i < ld->skel->skeleton->prog_cnt && *n < max; i++) {
		struct bpf_link *link = *ld->skel->skeleton->progs[i].link;
		struct bpf_link_info li = {};
		uint32_t len = sizeof(li);

		if (link && !bpf_obj_get_info_by_fd(bpf_link__fd(link), &li, &len))
			ids[(*n)++] = li.id;
	}
}

int
loader_fast_clear(struct loader *ld)
{
	int fd = bpf_map__fd(ld->skel->maps.egr_fast), n = 0;
	struct egr_fast_key k, next;
	void *prev = NULL;

	/* deleting while walking: restart from the start after each delete */
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		if (bpf_map_delete_elem(fd, &k))
			break;
		n++;
		prev = NULL;
	}
	return n;
}

bool
loader_is_refusal(const struct egr_event *e)
{
	if (e->hook != EGR_H_SKB || e->verdict != EGR_V_DENY)
		return false;
	if (e->reason == EGR_R_IPOPTS || e->reason == EGR_R_DIRECT_MOVED ||
	    e->reason == EGR_R_TUNNEL)
		return true;
	return e->reason > EGR_R_KV_OK && e->reason <= EGR_R_KV_LAST && e->reason != EGR_R_KV_BUSY;
}

/* The iterator of egr_kv_kill, created in the network namespace of the
 * file nsfd (-1: this thread's own): it walks the namespace of whoever
 * creates it. */
static int
kill_iter(struct loader *ld, int nsfd)
{
	int self = -1, fd, err = 0;

	if (nsfd >= 0) {
		self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		if (self < 0 || setns(nsfd, CLONE_NEWNET)) {
			err = -errno;
			if (self >= 0)
				close(self);
			return err;
		}
	}
	fd = bpf_iter_create(bpf_link__fd(ld->kill_link));
	if (fd < 0)
		err = -errno;
	if (self >= 0) {
		if (setns(self, CLONE_NEWNET)) {
			/* nothing may go on in another namespace */
			log_warn("cannot return to egressctl's network namespace");
			abort();
		}
		close(self);
	}
	return fd < 0 ? err : fd;
}

/* Runs egr_kv_kill in nsfd's network namespace (-1: ours). */
static int
kill_in(struct loader *ld, int nsfd)
{
	char buf[64];
	int fd = kill_iter(ld, nsfd), err = 0;
	ssize_t n;

	if (fd < 0) {
		log_warnx("cannot end refused connections: %s", strerror(-fd));
		return fd;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		; /* the program writes nothing: reading runs it */
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

int
loader_kv_kill(struct loader *ld, pid_t pid)
{
	struct stat mine, theirs;
	char path[64];
	int err, nsfd;

	if (!ld->kill_link) {
		log_warnx("cannot end refused connections: no iter/tcp link (pins of an older "
			  "egressctl): the kernel ends them by their timeout, ~200 ms");
		return -ENOENT;
	}
	err = kill_in(ld, -1);
	if (pid <= 0)
		return err;
	/* a container's socket is in its own network namespace: there too */
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		return err; /* gone, and its sockets with it, or never ours to see */
	if (!fstat(nsfd, &theirs) && !stat("/proc/thread-self/ns/net", &mine) &&
	    (theirs.st_ino != mine.st_ino || theirs.st_dev != mine.st_dev))
		err = kill_in(ld, nsfd);
	close(nsfd);
	return err;
}

/* The kernel-verified path's maps: (addr, port) in egr_vdst, (addr, port,
 * name) in egr_vname, both for ttl_ns. */
int
loader_kv_add(struct loader *ld, const struct sockaddr *sa, const char *name, uint32_t flags,
	      uint64_t ttl_ns)
{
	struct egr_vname_key nk = {};
	struct egr_vname_val nv = {.flags = flags};
	struct egr_fast_val v = {};
	struct egr_fast_key k;
	struct timespec ts;
	int err = fast_key(sa, IPPROTO_TCP, &k);

	if (err)
		return err;
	if (strlen(name) >= sizeof(nk.name))
		return -ENAMETOOLONG;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	v.expires_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ttl_ns;
	nv.expires_ns = v.expires_ns;
	memcpy(nk.addr, k.addr, sizeof(nk.addr));
	nk.port = k.port;
	memcpy(nk.name, name, strlen(name));
	/* the name first: a connect that finds the address finds its name */
	if (bpf_map_update_elem(bpf_map__fd(ld->skel->maps.egr_vname), &nk, &nv, BPF_ANY))
		return -errno;
	if (bpf_map_update_elem(bpf_map__fd(ld->skel->maps.egr_vdst), &k, &v, BPF_ANY))
		return -errno;
	return 0;
}

static int
map_clear(int fd, size_t ksize)
{
	char k[sizeof(struct egr_vname_key)], next[sizeof(struct egr_vname_key)];
	int n = 0;

	if (ksize > sizeof(k))
		return -EINVAL;
	while (!bpf_map_get_next_key(fd, NULL, next)) {
		memcpy(k, next, ksize);
		if (bpf_map_delete_elem(fd, k))
			break;
		n++;
	}
	return n;
}

int
loader_kv_walk(struct loader *ld,
	       int (*fn)(void *arg, const struct sockaddr_storage *ss, const char *name,
			 uint32_t flags, uint64_t ttl_ns),
	       void *arg)
{
	int fd = bpf_map__fd(ld->skel->maps.egr_vname), n = 0;
	struct egr_vname_key k, next;
	struct egr_vname_val v;
	struct timespec ts;
	uint64_t now;
	void *prev = NULL;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		struct sockaddr_storage ss;

		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v) || v.expires_ns <= now)
			continue;
		k.name[sizeof(k.name) - 1] = 0;
		sockaddr_from_key(k.addr, k.port, &ss);
		n++;
		if (fn(arg, &ss, k.name, v.flags, v.expires_ns - now))
			break;
	}
	return n;
}

int
loader_kv_clear(struct loader *ld)
{
	int n = map_clear(bpf_map__fd(ld->skel->maps.egr_vdst), sizeof(struct egr_fast_key));

	map_clear(bpf_map__fd(ld->skel->maps.egr_vname), sizeof(struct egr_vname_key));
	return n;
}
