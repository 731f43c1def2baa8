// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* What the programs tell userspace: counters (egr_stats) and events
 * (egr_events, one struct egr_event each). */
#ifndef EGR_EVENTS_H
#define EGR_EVENTS_H

#include "lib/common.h"
#include "lib/addr.h"
#include "lib/maps.h"
#include "lib/tunables.h"

static __always_inline void
count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&egr_stats, &idx);

	if (v)
		*v += 1;
}

/* A refusal: denied, or in audit mode only recorded. */
static __always_inline void
count_deny(void)
{
	count(audit_mode ? EGR_C_WOULD_DENY : EGR_C_DENY);
}

static __always_inline __u8
deny_verdict(void)
{
	return audit_mode ? EGR_V_WOULD_DENY : EGR_V_DENY;
}

/* What a program returns for a refusal (connect, send, packet). */
static __always_inline int
deny_ret(void)
{
	return audit_mode ? SYS_PROCEED : SYS_REJECT;
}

/* A new event with what every hook knows; addr may be NULL. The caller adds
 * who it is about (emit, emit_skb) and submits it. */
static __always_inline struct egr_event *
events_new(__u8 hook, __u8 verdict, __u8 reason, int err, __u8 family, __u8 type, __u16 proto,
	   const __be32 *addr, __be16 port)
{
	struct egr_event *e;

	e = bpf_ringbuf_reserve(&egr_events, sizeof(*e), 0);
	if (!e)
		return NULL;
	__builtin_memset(e, 0, sizeof(*e));
	e->time_ns = bpf_ktime_get_boot_ns();
	e->family = family;
	e->type = type;
	e->protocol = proto;
	e->verdict = verdict;
	e->reason = reason;
	e->hook = hook;
	e->err = err;
	if (addr)
		addr_copy(e->addr, addr);
	e->port = port;
	return e;
}

/* An event about the current task (every hook but the catch-all);
 * rbflags: BPF_RB_NO_WAKEUP for an event nobody waits for. */
static __always_inline void
emit_task(__u8 hook, __u8 verdict, __u8 reason, int err, __u8 family, __u8 type, __u16 proto,
	  const __be32 *addr, __be16 port, __u64 rbflags)
{
	struct egr_event *e =
		events_new(hook, verdict, reason, err, family, type, proto, addr, port);
	__u64 id;

	if (!e)
		return;
	e->cgroup_id = bpf_get_current_cgroup_id();
	id = bpf_get_current_pid_tgid();
	e->pid = (__u32)id;
	e->tgid = id >> 32;
	e->uid = (__u32)bpf_get_current_uid_gid();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, rbflags);
}

static __always_inline void
emit(__u8 hook, __u8 verdict, __u8 reason, int err, __u8 family, __u8 type, __u16 proto,
     const __be32 *addr, __be16 port)
{
	emit_task(hook, verdict, reason, err, family, type, proto, addr, port, 0);
}

/* An event of the catch-all, which runs in softirq for some packets: the
 * cgroup is the packet's socket's, the task the one the socket's record
 * names (who connected: connect or TCP_CONNECT_CB wrote it, in the task),
 * else unknown (pid 0, uid -1). name: the SNI or Host a kernel-verified
 * judgment saw, or NULL. A refusal wakes userspace at once (it may have a
 * connection to end); an allow waits for the next wake-up or the drain
 * timer (target.c). */
static __always_inline void
emit_rec(struct __sk_buff *skb, struct bpf_sock *sk, const struct egr_conn_val *who, __u8 verdict,
	 __u8 reason, int err, const __be32 *addr, __be16 port, const char *name)
{
	struct egr_event *e;

	e = events_new(EGR_H_SKB, verdict, reason, err, sk->family, sk->type, sk->protocol, addr,
		       port);
	if (!e)
		return;
	e->cgroup_id = bpf_skb_cgroup_id(skb);
	e->uid = (__u32)-1;
	if (who && who->tgid) {
		e->pid = who->pid;
		e->tgid = who->tgid;
		e->uid = who->uid;
		__builtin_memcpy(e->comm, who->comm, sizeof(e->comm));
	}
	if (name)
		__builtin_memcpy(e->name, name, sizeof(e->name) - 1);
	bpf_ringbuf_submit(e, verdict == EGR_V_ALLOW ? BPF_RB_NO_WAKEUP : 0);
}

#endif /* EGR_EVENTS_H */
