// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* What every piece of the egress object includes: the kernel's types, the
 * libbpf helpers, the ABI shared with userspace, the constants vmlinux.h
 * lacks, the kfuncs, and the one way the programs read their context. */
#ifndef EGR_COMMON_H
#define EGR_COMMON_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "egress_abi.h"
#include "lib/net.h"

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;
extern void *bpf_rdonly_cast(void *obj, __u32 btf_id) __ksym __weak;

/* clang 14 may compute a context (or socket) pointer plus a field's offset
 * in one branch and load through it in another, which the verifier refuses
 * ("dereference of modified ctx ptr"). So a program reads the context and
 * socket fields it needs into locals first, each once at its fixed offset
 * and before any branch, and then says ctx_loaded(): no load moves below
 * it, and none is done again after it. */
#define ctx_loaded() asm volatile("" ::: "memory")

#endif /* EGR_COMMON_H */
