// SPDX-License-Identifier: Apache-2.0
/* The BPF side's lifecycle (see loader.h): skeleton open/load with tunables,
 * the table of programs and how each is attached (unix hooks typed by
 * number from the running kernel's BTF: libbpf 1.1 does not know them),
 * bpf_link attachment and pinning, the fast-path and kernel-verified maps,
 * the ring buffer and the connection index lookup. Taking over pinned
 * programs is loader_adopt.c's. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "egress.skel.h"
#include "kernel/cgroup.h"
#include "kernel/loader.h"
#include "kernel/loader_priv.h"
#include "kernel/unixsvc_list.h"

#define BPF_FS_MAGIC_NR 0xcafe4a11
#define DEFAULT_BPFFS	"/sys/fs/bpf"

/* Every program of egress.bpf.o and how it is attached (loader_attach):
 * to the cgroup as a link, with the attach type its section names, or for
 * the unix hooks the running kernel's number (Debian's libbpf predates
 * them: loader_unix_attach_types); or egr_kv_kill, an iterator link that
 * userspace runs (loader_kv_kill). Each link is pinned as link_<name less
 * "egr_">. A program without a row is refused at open: a new hook gets
 * one here. */
static const struct loader_prog {
	const char *name;
	enum loader_attach how;
} prog_table[] = {
	{"egr_connect4", LA_CGROUP},
	{"egr_connect6", LA_CGROUP},
	{"egr_sendmsg4", LA_CGROUP},
	{"egr_sendmsg6", LA_CGROUP},
	{"egr_recvmsg4", LA_CGROUP},
	{"egr_recvmsg6", LA_CGROUP},
	{"egr_getpeername4", LA_CGROUP},
	{"egr_getpeername6", LA_CGROUP},
	{"egr_bind4", LA_CGROUP},
	{"egr_bind6", LA_CGROUP},
	{"egr_sockops", LA_CGROUP},
	{"egr_sock_create", LA_CGROUP},
	{"egr_sock_release", LA_CGROUP},
	{"egr_connect_unix", LA_UNIX_CONNECT},
	{"egr_sendmsg_unix", LA_UNIX_SENDMSG},
	{"egr_skb_egress", LA_CGROUP},
	{"egr_kv_kill", LA_ITER},
};

int
loader_prog_how(const struct bpf_program *prog)
{
	const char *name = bpf_program__name(prog);

	for (size_t i = 0; i < sizeof(prog_table) / sizeof(prog_table[0]); i++)
		if (!strcmp(prog_table[i].name, name))
			return (int)prog_table[i].how;
	return -ENOENT;
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

int
loader_pin_root(char *out, size_t outlen)
{
	char mnt[PATH_MAX] = "";
	char *info = NULL;
	struct statfs sfs;
	int err;

	err = cgroup_read_mountinfo(&info);
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

int
loader_open_ring(struct loader *ld, char *errbuf, size_t errlen)
{
	ld->rb = ring_buffer__new(bpf_map__fd(ld->skel->maps.egr_events), on_ring, ld, NULL);
	if (ld->rb)
		return 0;
	snprintf(errbuf, errlen, "cannot open the event ring buffer: %s", strerror(errno));
	return -errno;
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
			 "this kernel lacks the bpf_rdonly_cast kfunc (Linux " EGR_LINUX_MIN
			 "), needed to tell "
			 "the sandbox's own loopback sockets from the host's");
		return -ENOTSUP;
	}
	return 0;
}

/* The cookie of this process's network namespace, where the listeners
 * are (SO_NETNS_COOKIE, Linux 5.14). 0 with errbuf set. */
uint64_t
loader_own_netns(char *errbuf, size_t errlen)
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
loader_new(const struct loader_opts *o, char *errbuf, size_t errlen)
{
	struct loader *ld;
	int err = 0;

	ld = calloc(1, sizeof(*ld));
	if (!ld) {
		snprintf(errbuf, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	ld->on_event = o->on_event;
	ld->arg = o->arg;
	ld->unix_hooks = o->unix_hooks;
	ld->skel = egress_bpf__open();
	if (!ld->skel) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot open the BPF object: %s", strerror(-err));
		free(ld);
		errno = -err;
		return NULL;
	}
	for (int i = 0; i < ld->skel->skeleton->prog_cnt && !err; i++) {
		struct bpf_program *prog = *ld->skel->skeleton->progs[i].prog;
		int how = loader_prog_how(prog);

		if (how < 0) {
			err = -EINVAL;
			snprintf(errbuf, errlen,
				 "program %s has no row in the loader's table (a bug)",
				 bpf_program__name(prog));
		} else if ((how == LA_UNIX_CONNECT || how == LA_UNIX_SENDMSG) && !o->unix_hooks) {
			bpf_program__set_autoload(prog, false);
		}
	}
	if (err) {
		egress_bpf__destroy(ld->skel);
		free(ld);
		errno = -err;
		return NULL;
	}
	return ld;
}

/* The tunables (.rodata), set before load. */
static int
set_tunables(struct loader *ld, const struct loader_opts *o, char *errbuf, size_t errlen)
{
	ld->skel->rodata->tproxy_port = o->tproxy_port;
	ld->skel->rodata->dns_port = o->dns_port;
	memcpy((void *)ld->skel->rodata->proxy_ports, o->proxy_ports, sizeof(o->proxy_ports));
	ld->skel->rodata->emit_redirects = o->emit_redirects;
	ld->skel->rodata->audit_mode = o->audit_mode;
	ld->skel->rodata->sandbox_cgid = o->sandbox_cgid;
	ld->skel->rodata->unix_root_len = o->unix_svc ? (uint32_t)o->unix_svc->root_len : 0;
	ld->skel->rodata->ns_ip4 = o->ns_ip4;
	ld->skel->rodata->ipv6_on = o->ipv6;
	ld->skel->rodata->local_udp_any = o->local_udp_any;
	ld->skel->rodata->fast_nets = o->fast_nets;
	ld->skel->rodata->peers_on = o->peers;
	ld->skel->rodata->host_netns = loader_own_netns(errbuf, errlen);
	return ld->skel->rodata->host_netns ? 0 : -ENOTSUP;
}

/* The unix hooks' types, by the running kernel's numbers; the programs
 * --test-skip-prog names left out. */
static int
type_progs(struct loader *ld, const struct loader_opts *o, char *errbuf, size_t errlen)
{
	int type[LA_ITER + 1] = {0}, err;

	if (o->unix_hooks &&
	    (err = loader_unix_attach_types(&type[LA_UNIX_CONNECT], &type[LA_UNIX_SENDMSG]))) {
		snprintf(errbuf, errlen,
			 "this kernel has no cgroup unix socket hooks (they came in 6.7), "
			 "so abstract unix sockets cannot be confined; "
			 "pass --allow-abstract-unix to run anyway");
		return err;
	}
	for (int i = 0; o->unix_hooks && i < ld->skel->skeleton->prog_cnt; i++) {
		struct bpf_program *prog = *ld->skel->skeleton->progs[i].prog;
		int how = loader_prog_how(prog);

		if (how != LA_UNIX_CONNECT && how != LA_UNIX_SENDMSG)
			continue;
		bpf_program__set_type(prog, BPF_PROG_TYPE_CGROUP_SOCK_ADDR);
		bpf_program__set_expected_attach_type(prog, type[how]);
	}
	for (int i = 0; i < 8 && o->skip_progs[i]; i++) {
		struct bpf_program *prog;
		char name[64];

		snprintf(name, sizeof(name), "egr_%s", o->skip_progs[i]);
		prog = bpf_object__find_program_by_name(ld->skel->obj, name);
		if (!prog) {
			snprintf(errbuf, errlen, "no program %s to skip", name);
			return -ENOENT;
		}
		bpf_program__set_autoload(prog, false);
	}
	return 0;
}

/* The maps whose room scales with o->map_entries (a fleet's many targets:
 * the kernel holds a preallocated map's memory from the start: egr_saved's
 * buckets too), and egr_socks' own for the tests. */
static int
set_map_sizes(struct loader *ld, const struct loader_opts *o, char *errbuf, size_t errlen)
{
	uint32_t n = o->map_entries;
	const struct {
		struct bpf_map *map;
		uint32_t entries; /* 0: as built */
	} sizes[] = {
		{ld->skel->maps.egr_conns, n},
		{ld->skel->maps.egr_fast, n},
		{ld->skel->maps.egr_vdst, n},
		{ld->skel->maps.egr_vname, n},
		{ld->skel->maps.egr_saved, n ? EGR_SAVED_NAMES + n : 0},
		{ld->skel->maps.egr_socks, o->socks_max ? o->socks_max : n / 2},
	};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int err = sizes[i].entries
				  ? bpf_map__set_max_entries(sizes[i].map, sizes[i].entries)
				  : 0;

		if (err) {
			snprintf(errbuf, errlen, "%s: %s", bpf_map__name(sizes[i].map),
				 strerror(-err));
			return err;
		}
	}
	return 0;
}

struct loader *
loader_open(const struct loader_opts *o, char *errbuf, size_t errlen)
{
	struct loader *ld;
	int err;

	err = loader_check_kernel(errbuf, errlen);
	if (err) {
		errno = -err;
		return NULL;
	}
	ld = loader_new(o, errbuf, errlen);
	if (!ld)
		return NULL;
	err = set_tunables(ld, o, errbuf, errlen);
	if (!err)
		err = type_progs(ld, o, errbuf, errlen);
	if (err)
		goto out_destroy;
	err = set_map_sizes(ld, o, errbuf, errlen);
	if (err)
		goto out_destroy;
	err = egress_bpf__load(ld->skel);
	if (err) {
		snprintf(errbuf, errlen,
			 "cannot load the BPF programs: %s (run with -vv for the verifier log)",
			 strerror(-err));
		goto out_destroy;
	}
	err = loader_open_ring(ld, errbuf, errlen);
	if (err)
		goto out_destroy;
	err = loader_unix_set(ld, o->unix_svc);
	if (err) {
		snprintf(errbuf, errlen, "cannot fill the unix socket maps: %s", strerror(-err));
		goto out_destroy;
	}
	return ld;

out_destroy:
	ring_buffer__free(ld->rb);
	egress_bpf__destroy(ld->skel);
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

int
loader_pin_dir_of(uint64_t cgid, char *out, size_t len)
{
	char root[PATH_MAX];
	int err = loader_pin_root(root, sizeof(root));

	if (err)
		return err;
	if ((size_t)snprintf(out, len, "%s/%llu", root, (unsigned long long)cgid) >= len) {
		out[0] = 0;
		return -ENAMETOOLONG;
	}
	return 0;
}

int
loader_set_pin_dir(struct loader *ld, uint64_t cgid, char *errbuf, size_t errlen)
{
	/* (a cut path could name another run's pins: loader_detach must not
	 * remove them; loader_pin_dir_of leaves it empty then) */
	int err = loader_pin_dir_of(cgid, ld->pin_dir, sizeof(ld->pin_dir));

	if (err == -ENAMETOOLONG)
		snprintf(errbuf, errlen, "the pin directory of cgroup %llu is too long",
			 (unsigned long long)cgid);
	else if (err)
		snprintf(errbuf, errlen, "cannot set up bpffs pins: %s", strerror(-err));
	return err;
}

int
loader_pin_path(char *out, size_t len, const char *dir, const char *kind, const char *name)
{
	if (!strncmp(name, "egr_", 4))
		name += 4;
	if ((size_t)snprintf(out, len, "%s/%s_%s", dir, kind, name) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int
loader_pinned_map(uint64_t cgid, const char *name)
{
	char dir[PATH_MAX], path[PATH_MAX];
	int err = loader_pin_dir_of(cgid, dir, sizeof(dir)), fd;

	if (!err && !dir[0])
		err = -ENOENT;
	if (!err)
		err = loader_pin_path(path, sizeof(path), dir, "map", name);
	if (err)
		return err;
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

/* Every program the table names to the cgroup (or, egr_kv_kill, as an
 * iterator), in the skeleton's order. */
static int
attach_progs(struct loader *ld, int cg_fd, char *errbuf, size_t errlen)
{
	for (int i = 0; i < ld->skel->skeleton->prog_cnt; i++) {
		struct bpf_program *prog = *ld->skel->skeleton->progs[i].prog;
		struct bpf_link **slot = ld->skel->skeleton->progs[i].link;
		int err;

		if (!bpf_program__autoload(prog))
			continue;
		if (loader_prog_how(prog) == LA_ITER) {
			/* pinned too: a daemon that takes the pins over loads no
			 * program, and would have none to end refused
			 * connections with (left out only by --test-skip-prog
			 * kv_kill, a test of the sockops backstop behind it) */
			ld->kill_link = bpf_program__attach_iter(prog, NULL);
			if (ld->kill_link)
				continue;
			err = -errno;
			snprintf(errbuf, errlen,
				 "cannot make the iter/tcp link that ends refused connections: %s",
				 strerror(-err));
			return err;
		}
		*slot = bpf_program__attach_cgroup(prog, cg_fd);
		if (!*slot) {
			err = -errno;
			snprintf(errbuf, errlen, "cannot attach %s to the cgroup: %s",
				 bpf_program__name(prog), strerror(-err));
			return err;
		}
	}
	return 0;
}

/* Every link as link_<name>, every map but .rodata as map_<name>. */
static int
pin_all(struct loader *ld)
{
	char path[PATH_MAX];
	struct bpf_map *map;
	int err;

	for (int i = 0; i < ld->skel->skeleton->prog_cnt; i++) {
		struct bpf_program *prog = *ld->skel->skeleton->progs[i].prog;
		struct bpf_link *link = loader_prog_how(prog) == LA_ITER
						? ld->kill_link
						: *ld->skel->skeleton->progs[i].link;

		if (!link)
			continue;
		err = loader_pin_path(path, sizeof(path), ld->pin_dir, "link",
				      ld->skel->skeleton->progs[i].name);
		if (err || (err = bpf_link__pin(link, path)))
			return err;
	}
	bpf_object__for_each_map(map, ld->skel->obj)
	{
		if (bpf_map__is_internal(map)) /* .rodata: read from the programs */
			continue;
		err = loader_pin_path(path, sizeof(path), ld->pin_dir, "map", bpf_map__name(map));
		if (err || (err = bpf_map__pin(map, path)))
			return err;
	}
	return 0;
}

int
loader_attach(struct loader *ld, int cg_fd, uint64_t cgid, char *errbuf, size_t errlen)
{
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
	err = loader_set_pin_dir(ld, cgid, errbuf, errlen);
	if (err)
		return err;

	/* Attach first: stale links of a killed run keep enforcing until ours are in. */
	err = attach_progs(ld, cg_fd, errbuf, errlen);
	if (err)
		goto out_detach;
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
	err = pin_all(ld);
	if (err) {
		snprintf(errbuf, errlen, "cannot pin in %s: %s", ld->pin_dir, strerror(-err));
		goto out_detach;
	}
	return 0;

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

const char *
loader_pin_dir(struct loader *ld)
{
	return ld->pin_dir;
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
