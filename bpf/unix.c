// SPDX-License-Identifier: GPL-2.0
/* Abstract unix addresses (sun_path[0] == 0) are a network of their own in a
 * shared netns: refuse them; filesystem sockets are left to file modes.
 * Loaded as BPF_CGROUP_UNIX_CONNECT/SENDMSG by the loader (libbpf 1.1 does
 * not know these sections), and only on a kernel that has them (6.7).
 *
 * A piece of the egress object, included by egress.bpf.c. */
#include "lib/common.h"
#include "lib/events.h"
#include "lib/tunables.h"

static __always_inline int
unix_check(struct bpf_sock_addr *ctx, __u8 hook)
{
	struct bpf_sock_addr_kern *k;
	struct sockaddr_un *sun;
	__be32 name[4] = {};
	__u32 len;

	if (!bpf_cast_to_kern_ctx || !bpf_rdonly_cast)
		return SYS_REJECT;
	k = bpf_cast_to_kern_ctx(ctx);
	len = k->uaddrlen;
	if (len <= 2) /* unnamed (autobind) */
		return SYS_PROCEED;
	sun = bpf_rdonly_cast(k->uaddr, bpf_core_type_id_kernel(struct sockaddr_un));
	if (sun->sun_path[0] != 0)
		return SYS_PROCEED;
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
