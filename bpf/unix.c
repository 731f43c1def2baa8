// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Unix sockets. Abstract addresses (sun_path[0] == 0) are a network of their
 * own in a shared netns: refused. Filesystem sockets are left to file modes,
 * except those of local services that start work outside the cgroup
 * (container runtimes, the service manager, the D-Bus buses: the paths in
 * egr_unix_paths, filled by userspace from its default list and the
 * --allow-unix/--deny-unix options).
 *
 * connect_unix/sendmsg_unix (BPF_CGROUP_UNIX_*, kernel 6.7) run before the
 * path lookup (unix_stream_connect, unix_dgram_connect/sendmsg in
 * net/unix/af_unix.c): they see the address as CMD gave it, so a relative
 * name after chdir(), a symlink, /proc/PID/root/... or a hard link passes
 * them, and no inode can be compared here. What holds against those for
 * `run` is its mount namespace (sandbox/masks.c masks the sockets);
 * this check is the daemon's targets' only one, and gives every target the
 * denial line and record for the name as given. (The hooks that see the
 * socket after the lookup, lsm/unix_stream_connect and unix_may_send, need
 * BPF trampolines: docs/security-sandbox.md says why they are not used.)
 * Loaded as typed by number by the loader (libbpf 1.1 does not know these
 * sections), only on a kernel that has them.
 *
 * A piece of the egress object, included by egress.bpf.c. */
#include "lib/common.h"
#include "lib/events.h"
#include "lib/tunables.h"

/* The services' socket names (and --allow-unix exceptions). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct egr_unix_key);
	__type(value, struct egr_unix_val);
} egr_unix_paths SEC(".maps");

/* Test builds put every default under a directory of their own: the
 * "/run/user/" of a "*" entry comes after it. 0 otherwise. */
const volatile __u64 unix_root_len = 0; /* 64 bits: no tail padding in .rodata */

#define SUN_PATH_MAX 108
#define PATH_IDX(i)  ((i) & (EGR_UNIX_PATH_LEN - 1))

/* Does k hold "/run/user/" at off? Character by character: a string
 * constant would land in .rodata, whose size the loader checks against the
 * tunables' when it takes pinned programs over. */
static __always_inline int
run_user_at(const char *k, int off)
{
	return k[PATH_IDX(off)] == '/' && k[PATH_IDX(off + 1)] == 'r' &&
	       k[PATH_IDX(off + 2)] == 'u' && k[PATH_IDX(off + 3)] == 'n' &&
	       k[PATH_IDX(off + 4)] == '/' && k[PATH_IDX(off + 5)] == 'u' &&
	       k[PATH_IDX(off + 6)] == 's' && k[PATH_IDX(off + 7)] == 'e' &&
	       k[PATH_IDX(off + 8)] == 'r' && k[PATH_IDX(off + 9)] == '/';
}

/* ... or "/var" + "/run/user/" */
static __always_inline int
var_run_user_at(const char *k, int off)
{
	return k[PATH_IDX(off)] == '/' && k[PATH_IDX(off + 1)] == 'v' &&
	       k[PATH_IDX(off + 2)] == 'a' && k[PATH_IDX(off + 3)] == 'r' &&
	       run_user_at(k, off + 4);
}

/* The key being built, and the state of the loops over it: bpf_loop
 * callbacks (verified once, where a loop over the path's 128 bytes was
 * verified byte by byte, for every range of its start: 109,055
 * instructions each for connect_unix and sendmsg_unix, most of a target's
 * load time). */
struct unix_walk {
	struct egr_unix_key k;
	int n;	 /* unix_key_read: the name's length; then where it ended */
	int p;	 /* unix_lookup: the uid's first digit */
	int d;	 /* ... and its digits */
	int end; /* a NUL or the length was reached */
};

/* k.path[i]: zero from the first NUL or the length on */
static long
pad_one(__u32 i, void *arg)
{
	struct unix_walk *w = arg;
	int j = (int)(i & (EGR_UNIX_PATH_LEN - 1));

	if ((int)i >= w->n || w->k.path[j] == 0)
		w->end = 1;
	if (w->end)
		w->k.path[j] = 0;
	return 0;
}

/* k.path[p + 1 + i] := k.path[p + i + d] (the uid's digits cut down to
 * the '*' at p) */
static long
shift_one(__u32 i, void *arg)
{
	struct unix_walk *w = arg;
	int dst = w->p + 1 + (int)i, src = dst + w->d - 1;

	if (dst >= EGR_UNIX_PATH_LEN)
		return 1;
	w->k.path[PATH_IDX(dst)] = src < EGR_UNIX_PATH_LEN ? w->k.path[PATH_IDX(src)] : 0;
	return 0;
}

/* w->k.path holds a name, zero-padded. Its entry as it is, or else with
 * the uid of a "/run/user/<uid>/" or "/var/run/user/<uid>/" component
 * replaced by '*' (uid gets its digits, NUL-terminated); NULL for none.
 * w->k is rewritten by the second look-up. */
static __always_inline struct egr_unix_val *
unix_lookup(struct unix_walk *w, char *uid)
{
	struct egr_unix_key *k = &w->k;
	struct egr_unix_val *v;
	int p, d = 0, i;

	int r = (int)(unix_root_len & 63);

	v = bpf_map_lookup_elem(&egr_unix_paths, k);
	if (v)
		return v;
	if (run_user_at(k->path, r))
		p = r + 10;
	else if (var_run_user_at(k->path, r))
		p = r + 14;
	else
		return NULL;
	for (i = 0; i < 11; i++) {
		char c = k->path[PATH_IDX(p + i)];

		if (c < '0' || c > '9')
			break;
		uid[i & 15] = c;
		d++;
	}
	if (d == 0 || d > 10 || k->path[PATH_IDX(p + d)] != '/')
		return NULL;
	uid[d & 15] = 0;
	k->path[PATH_IDX(p)] = '*';
	w->p = p;
	w->d = d;
	bpf_loop(EGR_UNIX_PATH_LEN, shift_one, w, 0);
	return bpf_map_lookup_elem(&egr_unix_paths, k);
}

/* Reads n bytes of a kernel sun_path into w->k (zero-padded, cut at a
 * NUL). Returns 0, or -1 for an empty or abstract name. */
static __always_inline int
unix_key_read(struct unix_walk *w, const char *sun_path, int n)
{
	if (n < 1)
		return -1;
	if (n > SUN_PATH_MAX)
		n = SUN_PATH_MAX;
	if (bpf_probe_read_kernel(w->k.path, n & (EGR_UNIX_PATH_LEN - 1), sun_path))
		return -1;
	if (w->k.path[0] == 0)
		return -1;
	w->n = n;
	w->end = 0;
	bpf_loop(SUN_PATH_MAX, pad_one, w, 0);
	return 0;
}

/* A deny entry: reported, and refused unless in audit mode. */
static __always_inline void
unix_report(__u8 hook, __u8 type, const struct egr_unix_val *v, const char *uid)
{
	__be32 name[4] = {};

	__builtin_memcpy(name, uid, sizeof(name));
	emit(hook, deny_verdict(), EGR_R_UNIX_SERVICE, audit_mode ? 0 : EPERM, AF_UNIX, type, 0,
	     name, (__be16)v->index);
}

static __always_inline int
unix_check(struct bpf_sock_addr *ctx, __u8 hook)
{
	struct bpf_sock_addr_kern *k;
	struct unix_walk w = {};
	struct egr_unix_val *v;
	struct sockaddr_un *sun;
	char uid[16] = {};
	__be32 name[4] = {};
	__u32 len;

	if (!bpf_cast_to_kern_ctx || !bpf_rdonly_cast)
		return SYS_REJECT;
	k = bpf_cast_to_kern_ctx(ctx);
	len = k->uaddrlen;
	if (len <= 2) /* unnamed (autobind) */
		return SYS_PROCEED;
	sun = bpf_rdonly_cast(k->uaddr, bpf_core_type_id_kernel(struct sockaddr_un));
	if (sun->sun_path[0] != 0) {
		/* a filesystem name, as given */
		if (unix_key_read(&w, sun->sun_path, (int)len - 2))
			return SYS_PROCEED;
		v = unix_lookup(&w, uid);
		if (!v || v->action != EGR_UNIX_DENY)
			return SYS_PROCEED;
		unix_report(hook, ctx->type, v, uid);
		return deny_ret();
	}
	/* the first 16 bytes of the name; userspace trims to the length */
	bpf_probe_read_kernel(name, sizeof(name), &sun->sun_path[1]);
	emit(hook, deny_verdict(), EGR_R_ABSTRACT_UNIX, audit_mode ? 0 : EPERM, AF_UNIX, ctx->type,
	     0, name, bpf_htons((__u16)(k->uaddrlen - 3)));
	return deny_ret();
}

SEC("cgroup/connect_unix")
int
egr_connect_unix(struct bpf_sock_addr *ctx)
{
	return unix_check(ctx, EGR_H_CONNECT_UNIX);
}

SEC("cgroup/sendmsg_unix")
int
egr_sendmsg_unix(struct bpf_sock_addr *ctx)
{
	return unix_check(ctx, EGR_H_SENDMSG_UNIX);
}
