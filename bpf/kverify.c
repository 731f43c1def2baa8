// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* egr_kv_kill, iter/tcp: ends the direct connections the catch-all refused
 * (EGR_SK_KREJECT: a kernel-verified one's first bytes, lib/kverify.h; a
 * packet sent elsewhere than approved, lib/direct.h) with
 * bpf_sock_destroy(): the process sees ECONNABORTED at once instead of
 * waiting on a segment that is never sent. Userspace runs it on the
 * refusal's event (kernel/loader.c), in its own network namespace; the
 * reset the kernel sends carries no payload and passes the catch-all (but
 * for EGR_SK_DREJECT: it would go where the refused packet went). Not
 * attached to the cgroup.
 *
 * A piece of the egress object, included by egress.bpf.c. */
#include "lib/common.h"
#include "lib/maps.h"

extern int bpf_sock_destroy(struct sock_common *sk) __ksym __weak;

__u64 kv_killed = 0; /* sockets ended, for the log */

SEC("iter/tcp")
int
egr_kv_kill(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct egr_sk_orig *o;
	struct tcp_sock *tp;
	__u64 cookie;

	if (!skc)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc); /* full sockets only */
	if (!tp)
		return 0;
	cookie = bpf_get_socket_cookie(tp);
	o = bpf_map_lookup_elem(&egr_socks, &cookie);
	if (!o)
		o = bpf_sk_storage_get(&egr_sk, tp, 0, 0);
	if (!o || !(o->flags & EGR_SK_KREJECT) || !bpf_sock_destroy)
		return 0;
	if (!bpf_sock_destroy(skc))
		kv_killed++;
	return 0;
}
