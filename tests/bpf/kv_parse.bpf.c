// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The first-bytes parser of the kernel-verified path (bpf/lib/kparse.h) in
 * a program of its own, for BPF_PROG_TEST_RUN (tests/bpf/test_kvparse.c):
 * a tc program, so that the test sees the parser's whole answer in the
 * return value. The packet is an Ethernet header and then the payload. */
#include "lib/common.h"
#include "lib/kparse.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The name the test expects (lower-case, NUL-padded). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, char[EGR_NAME_LEN]);
	__type(value, __u32);
} want SEC(".maps");

/* Returns the verdict (EGR_R_KV_*) | the kind (EGR_VN_*) << 8 | 0x10000
 * when the name found is the one in want. */
SEC("tc")
int
kv_parse_test(struct __sk_buff *skb)
{
	struct kv_scratch *s = kv_enter();
	__u32 r, len = skb->len;

	if (!s)
		return -1;
	r = kv_load_parse(skb, s, 14, len > 14 ? len - 14 : 0);
	if (r == EGR_R_KV_OK) {
		r |= s->kind << 8;
		if (bpf_map_lookup_elem(&want, s->key.name))
			r |= 0x10000;
	}
	kv_leave(s);
	return r;
}
