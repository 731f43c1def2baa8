// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The ABI between the BPF programs (bpf/) and userspace: map keys and values,
 * event records, verdicts and reasons. Both compilers check the layouts.
 * Addresses are always 16 bytes: IPv4 is stored v4-mapped (::ffff:a.b.c.d),
 * so one key type serves both families. Byte order lives in the field type. */
#ifndef EGRESS_ABI_H
#define EGRESS_ABI_H

#ifndef __VMLINUX_H__ /* BPF side gets the types from vmlinux.h */
#include <linux/types.h>
#endif

#define EGR_ABI_VERSION 18 /* bump on any change below; never reuse a value */

/* Verdicts carried by events. */
enum egr_verdict {
	EGR_V_ALLOW = 0,      /* let through unchanged (fast path, own loopback) */
	EGR_V_DENY = 1,	      /* refused with an errno */
	EGR_V_REDIRECT = 2,   /* rewritten to one of egressctl's listeners */
	EGR_V_WOULD_DENY = 3, /* audit mode: recorded, let through */
};

/* Why a verdict was taken; userspace turns these into words (events.c). */
enum egr_reason {
	EGR_R_NONE = 0,
	EGR_R_TRANSPARENT = 1,	  /* TCP redirected to the transparent listener */
	EGR_R_DNS = 2,		  /* port 53 redirected to the DNS responder */
	EGR_R_FASTPATH = 3,	  /* approved target, connected directly */
	EGR_R_LOCAL = 4,	  /* loopback socket of this sandbox receives it */
	EGR_R_PROXY = 5,	  /* connection to egressctl's own proxy listener */
	EGR_R_IPV6 = 6,		  /* native IPv6 */
	EGR_R_UDP = 7,		  /* UDP other than DNS */
	EGR_R_UDPLITE = 8,	  /* UDP-Lite (protocol 136) */
	EGR_R_RAW = 9,		  /* SOCK_RAW */
	EGR_R_PING = 10,	  /* ICMP "ping" datagram socket */
	EGR_R_SCTP = 11,	  /* SCTP (132) */
	EGR_R_MPTCP = 12,	  /* MPTCP (262) */
	EGR_R_PROTO = 13,	  /* any other protocol at socket creation */
	EGR_R_LOOPBACK = 14,	  /* loopback socket outside this sandbox receives it */
	EGR_R_ABSTRACT_UNIX = 15, /* abstract unix socket address */
	EGR_R_NO_LISTENER = 16,	  /* redirect target not configured */
	EGR_R_BIND_PROXY = 17,	  /* bind to one of egressctl's listener ports */
	EGR_R_SKB_DROP = 18,	  /* catch-all: packet not to loopback or approved */
	EGR_R_BIND_FOREIGN = 19,  /* bind where a socket outside this sandbox is bound */
	EGR_R_UNIX_SERVICE = 20,  /* unix socket of a service that starts work outside */
	EGR_R_NETNS = 21,	  /* another network namespace, with no listener for it */
	EGR_R_V4_IN_V6 = 22,	  /* IPv6 that carries IPv4 (NAT64, 6to4, Teredo, ...) */
	/* the kernel-verified path (bpf/lib/kverify.h): a direct connect to an
	 * address the DNS responder answered for an allowed name, judged by
	 * its first payload segment */
	EGR_R_KVERIFY = 23,   /* connect: direct, its first bytes to be checked */
	EGR_R_KV_OK = 24,     /* first bytes name an answered, allowed name */
	EGR_R_KV_NAME = 25,   /* SNI/Host not answered with this address, or not allowed */
	EGR_R_KV_NONAME = 26, /* a ClientHello without SNI, a request without one Host */
	EGR_R_KV_SPLIT = 27,  /* ClientHello or header block not whole in the first segment */
	EGR_R_KV_PROTO = 28,  /* neither a TLS ClientHello nor an HTTP/1.x request */
	EGR_R_KV_H2C = 29,    /* HTTP/2 prior knowledge (the PRI preface) */
	EGR_R_KV_ECH = 30,    /* encrypted_client_hello: the real name is hidden */
	EGR_R_KV_BUSY = 31,   /* no scratch buffer free (nested run): dropped, retried */
	EGR_R_KV_PLAIN = 32,  /* plain HTTP: its name answered, but not allowed as HTTP */
	EGR_R_KV_SHARED = 33, /* payload in pages the sender may still change (sendfile,
			       * splice, MSG_ZEROCOPY): what was read may not be what is sent */
	EGR_R_KV_EXTHDR = 34, /* not emitted since ABI 13: EGR_R_IPOPTS, for every direct socket */
	EGR_R_KV_LAST = EGR_R_KV_EXTHDR,
	/* every packet of a direct socket (fast path, kernel-verified) goes
	 * only where connect approved it (bpf/lib/direct.h): */
	EGR_R_IPOPTS = 35,	 /* IPv4 options or an IPv6 extension header (source
				  * routing, destination options, IPsec) */
	EGR_R_DIRECT_MOVED = 36, /* to another address, port or protocol than approved
				  * (encapsulated, re-routed) */
	EGR_R_TUNNEL = 37,	 /* another network namespace's packet leaving through a
				  * device that wraps it for another host (skb.c) */
	EGR_R_NO_PORT = 38,	 /* TCP to a port no allow rule names (egr_ports) */
	EGR_R_PEER = 39,	 /* a container of the same target's on a docker network
				  * both are on (egr_peer), connected directly */
	EGR_R_MAX,
};

/* Which hook emitted an event. */
enum egr_hook {
	EGR_H_CONNECT4 = 0,
	EGR_H_CONNECT6 = 1,
	EGR_H_SENDMSG4 = 2,
	EGR_H_SENDMSG6 = 3,
	EGR_H_SOCK_CREATE = 4,
	EGR_H_BIND4 = 5,
	EGR_H_BIND6 = 6,
	EGR_H_CONNECT_UNIX = 7,
	EGR_H_SENDMSG_UNIX = 8,
	EGR_H_SKB = 9,
	EGR_H_MAX,
};

/* Per-socket flags in struct egr_sk_orig.flags. */
#define EGR_SK_REDIRECTED 0x01	/* connect rewritten to a listener: translate back */
#define EGR_SK_DNS	  0x02	/* datagrams to port 53 rewritten: translate replies */
#define EGR_SK_DIRECT	  0x04	/* fast-path target: skb catch-all lets it pass */
#define EGR_SK_INDEX	  0x08	/* index by local address at TCP_CONNECT_CB */
#define EGR_SK_BOUND	  0x10	/* reserved: unused since ABI 5 (was: counted in egr_binds) */
#define EGR_SK_LOCAL	  0x20	/* reserved: unused since ABI 4 */
#define EGR_SK_SKB_SEEN	  0x40	/* catch-all drop already reported for this socket */
#define EGR_SK_CLOSE_CB	  0x80	/* TCP in egr_socks: sockops sees TCP_CLOSE and frees it */
#define EGR_SK_KEYED	  0x100 /* UDP: egr_conns entry `key` is this socket's; removed at release */
#define EGR_SK_SEEN_LOCAL 0x200 /* sendmsg: a local allow to seen_addr:seen_port was reported */

/* In egr_sk, always with EGR_SK_DIRECT (which the catch-all passes): the
 * socket was connected before the attach and is left open unconfined by the
 * pre-existing pass (bpf/existing.bpf.c). Never set by egress.bpf.c. */
#define EGR_SK_PREEXISTING 0x400

/* In egr_socks/egr_sk, with EGR_SK_DIRECT: a connect of the kernel-verified
 * path. EGR_SK_VERIFY: its first payload segment is still to be judged
 * (the catch-all parses it, then clears the flag on a match); EGR_SK_KREJECT:
 * it was refused; nothing with payload passes, and the iter/tcp program
 * egr_kv_kill ends it. */
#define EGR_SK_VERIFY  0x800
#define EGR_SK_KREJECT 0x1000
#define EGR_SK_KARMED  0x2000 /* sockops set its TCP_USER_TIMEOUT backstop */

/* With EGR_SK_DIRECT|EGR_SK_KREJECT: a packet of the socket went elsewhere
 * than connect approved (EGR_R_IPOPTS, EGR_R_DIRECT_MOVED): no packet of it
 * passes any more, with or without payload, and egr_kv_kill ends it. */
#define EGR_SK_DREJECT 0x4000

/* In egr_sk: a connection a listener of the sandbox accepted from an
 * address of egressctl's own network namespace (egr_hostaddr, looked up by
 * sockops at PASSIVE_ESTABLISHED): the catch-all lets its TCP packets to
 * such an address pass. */
#define EGR_SK_PASSIVE 0x8000

/* struct egr_sk_orig.life: who is done with an egr_socks record of a TCP
 * socket that outlives its file (FIN, retransmits); the second frees it. */
#define EGR_LIFE_RELEASED 0x01 /* sock_release ran: no file refers to it */
#define EGR_LIFE_CLOSED	  0x02 /* the TCP state became TCP_CLOSE */

/* Map egr_conns (LRU hash): the proxy's view of an accepted connection.
 * Key: the client's local address and port as the proxy's accept() reports
 * them (the peer address of the accepted socket). */
struct egr_conn_key {
	__be32 addr[4]; /* client's local address, v4-mapped for IPv4 */
	__be16 port;	/* client's local port, network order */
	__u16 proto;	/* IPPROTO_TCP or IPPROTO_UDP (DNS datagrams) */
};
_Static_assert(sizeof(struct egr_conn_key) == 20, "egr_conn_key layout");

struct egr_conn_val {
	__u64 cookie;	 /* socket cookie of the client socket */
	__u64 cgroup_id; /* cgroup the connecting task was in */
	__be32 addr[4];	 /* original destination, v4-mapped for IPv4 */
	__be16 port;	 /* original destination port */
	__u8 reason;	 /* EGR_R_TRANSPARENT, EGR_R_DNS or EGR_R_PROXY */
	__u8 flags;	 /* EGR_CONN_* */
	__u32 pid;	 /* thread id of the connecting task */
	__u32 tgid;	 /* process id of the connecting task */
	__u32 uid;	 /* uid of the connecting task */
	char comm[16];	 /* command name of the connecting task */
	__u64 netns;	 /* network namespace cookie of the client socket */
};
_Static_assert(sizeof(struct egr_conn_val) == 72, "egr_conn_val layout");

/* struct egr_conn_val.flags. Containers (other network namespaces) may
 * have the same address and port as another socket: when the entry a new
 * one replaces was a live socket's that no accept took yet, the entry says
 * so, and the proxy and the responder refuse it rather than guess whose. */
#define EGR_CONN_AMBIGUOUS 0x01

/* What connect/sendmsg saw, per socket: the value of map egr_socks (hash by
 * socket cookie; connect/sendmsg records) and of map egr_sk (sk_storage;
 * catch-all reports, audit-mode passes, and connect/sendmsg records when
 * egr_socks is full). */
struct egr_sk_orig {
	__be32 addr[4];		 /* original destination, v4-mapped for IPv4 */
	__be16 port;		 /* original destination port */
	__u16 flags;		 /* EGR_SK_* */
	__u32 life;		 /* EGR_LIFE_*, changed atomically (egr_socks only) */
	struct egr_conn_key key; /* with EGR_SK_KEYED: the egr_conns entry the
				  * catch-all made for this UDP socket */
	__u32 pad;		 /* always zero */
	struct egr_conn_val who; /* with EGR_SK_INDEX: who.reason; for UDP the
				  * whole record for egr_conns (TCP: sockops
				  * fills it in the connecting task) */
	__be32 seen_addr[4];	 /* with EGR_SK_SEEN_LOCAL: the loopback destination */
	__be16 seen_port;	 /* ... and port of the last local allow reported */
	__u16 pad2;		 /* always zero */
	__u32 pad3;		 /* always zero */
};
_Static_assert(sizeof(struct egr_sk_orig) == 144, "egr_sk_orig layout");

/* Map egr_ports (array, one entry): the TCP ports some allow rule names,
 * one bit each (port p: bits[p / 64] bit p % 64). While enforce is set, a
 * TCP connect that would go to the transparent listener on a port without
 * its bit is refused at connect() (EGR_R_NO_PORT): no rule could allow it,
 * and a probe (nc -z) would otherwise take the port for open. enforce is
 * 0 while any port may be allowed: a rule without a port, --ask, audit. */
#define EGR_PORT_WORDS 1024
struct egr_ports {
	__u64 enforce;
	__u64 bits[EGR_PORT_WORDS];
};
_Static_assert(sizeof(struct egr_ports) == 8200, "egr_ports layout");

/* Map egr_fast (hash): approved direct targets, and explicit loopback allows. */
struct egr_fast_key {
	__be32 addr[4]; /* destination, v4-mapped for IPv4 */
	__be16 port;	/* destination port, network order */
	__u8 proto;	/* IPPROTO_TCP or IPPROTO_UDP */
	__u8 pad;	/* always zero */
};
_Static_assert(sizeof(struct egr_fast_key) == 20, "egr_fast_key layout");

/* Map egr_hostaddr (hash): the addresses of egressctl's own network
 * namespace (the host's, a bridge's gateway), kept by userspace as they
 * come and go. A TCP connection a listener of the sandbox accepted may
 * answer a peer at one of them, and a listener may send it its SYN-ACK
 * (bpf/skb.c): a process of this machine, docker's userland proxy or
 * egressctl's own proxy reaches a confined server; nobody outside does. */
#define EGR_HOSTADDR_MAX 1024
struct egr_hostaddr_key {
	__be32 addr[4]; /* v4-mapped for IPv4 */
};
_Static_assert(sizeof(struct egr_hostaddr_key) == 16, "egr_hostaddr_key layout");

/* Map egr_peer (hash): a job's containers that share a docker network
 * (a compose project's services), kept by the daemon (daemon/peers.c): a
 * socket of network namespace netns (a container's, where docker made the
 * routes and the container may change none) reaches addr direct, TCP and
 * UDP, any port, and a socket there may answer addr. Keyed by the
 * namespace, not the cgroup: a socket made elsewhere (the host's, passed
 * into the container) is routed by another table, and gets nothing here. */
#define EGR_PEER_MAX 4096
struct egr_peer_key {
	__u64 netns;	/* the socket's network namespace cookie */
	__be32 addr[4]; /* the peer's address on that network, v4-mapped for IPv4 */
};
_Static_assert(sizeof(struct egr_peer_key) == 24, "egr_peer_key layout");

/* Map egr_fast_net (LPM trie): IPv4 networks a TCP connect goes to direct,
 * any port, as the fast path's exact entries do: the allow network rules of
 * a target with tunable fast_nets (dockerd's: its networks' subnets, where
 * its userland proxy reaches the containers). prefixlen counts the 96 bits
 * of the v4-mapped prefix. */
#define EGR_FAST_NET_MAX 256
struct egr_net_key {
	__u32 prefixlen;
	__be32 addr[4]; /* v4-mapped */
};
_Static_assert(sizeof(struct egr_net_key) == 20, "egr_net_key layout");

struct egr_fast_val {
	__u64 expires_ns; /* CLOCK_BOOTTIME deadline; 0 = until removed */
	__u64 hits;	  /* connects that took this entry (not atomic: a hint) */
};
_Static_assert(sizeof(struct egr_fast_val) == 16, "egr_fast_val layout");

/* The learned names the responder keeps (dns/answer.c), and so egr_saved
 * holds beside as many fast-path approvals as egr_fast (bpf/lib/maps.h,
 * kernel/loader.c's --map-entries). */
#define EGR_SAVED_NAMES 16384

/* Map egr_saved (hash, userspace only): what the DNS responder learned, kept
 * in the pins so a restarted daemon adopts it with the links: the name each
 * answered address was learned for (EGR_SAVED_NAME, port 0, name_hash 0) and
 * each fast-path approval with the name it was answered for
 * (EGR_SAVED_FAST). */
enum egr_saved_kind {
	EGR_SAVED_NAME = 1,
	EGR_SAVED_FAST = 2,
};

struct egr_saved_key {
	__be32 addr[4];	 /* the answered address, v4-mapped for IPv4 */
	__be16 port;	 /* EGR_SAVED_FAST: the approved port, network order */
	__u8 kind;	 /* enum egr_saved_kind */
	__u8 pad;	 /* always zero */
	__u32 name_hash; /* EGR_SAVED_FAST: FNV-1a of the name; 0 otherwise */
};
_Static_assert(sizeof(struct egr_saved_key) == 24, "egr_saved_key layout");

struct egr_saved_val {
	__u64 expires_s; /* CLOCK_MONOTONIC seconds (the daemon's clock) */
	char name[256];	 /* NUL-terminated */
};
_Static_assert(sizeof(struct egr_saved_val) == 264, "egr_saved_val layout");

/* The kernel-verified path. Map egr_vdst (LRU hash, key and value as
 * egr_fast's, proto IPPROTO_TCP): addresses and ports the DNS responder
 * answered for a name the policy allows there without the proxy; a connect
 * to one goes direct with EGR_SK_VERIFY. Map egr_vname (LRU hash): which
 * names were answered with that address, allowed on that port. The maps
 * belong to one sandbox's programs: learned names are per cgroup. */
#define EGR_NAME_LEN 256 /* a DNS name is at most 253 bytes */
struct egr_vname_key {
	__be32 addr[4];		 /* v4-mapped for IPv4 */
	__be16 port;		 /* network order */
	__u16 pad;		 /* always zero */
	char name[EGR_NAME_LEN]; /* lower-case, no trailing dot, NUL-padded */
};
_Static_assert(sizeof(struct egr_vname_key) == 276, "egr_vname_key layout");

#define EGR_VN_TLS 0x01 /* allowed as TLS (a ClientHello's SNI) */
#define EGR_VN_HTTP                                                                                \
	0x02 /* allowed as HTTP/1.x (Host); not granted by the
			  * responder: the proxy judges every plain-HTTP
			  * request, the kernel would see only the first */
struct egr_vname_val {
	__u64 expires_ns; /* CLOCK_BOOTTIME deadline */
	__u32 flags;	  /* EGR_VN_* */
	__u32 pad;	  /* always zero */
};
_Static_assert(sizeof(struct egr_vname_val) == 16, "egr_vname_val layout");

/* Ring buffer egr_events: one record per deny, redirect and loopback allow. */
struct egr_event {
	__u64 time_ns;	 /* CLOCK_BOOTTIME */
	__u64 cgroup_id; /* cgroup of the task (or of the socket, for skb) */
	__u32 pid;	 /* thread id; 0 when unknown (skb runs in softirq) */
	__u32 tgid;	 /* process id; 0 when unknown */
	__u32 uid;	 /* task uid; (u32)-1 when unknown */
	__u8 family;	 /* AF_INET, AF_INET6, AF_UNIX */
	__u8 type;	 /* SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, ... */
	__u16 protocol;	 /* IPPROTO_* (MPTCP is 262) */
	__u8 verdict;	 /* enum egr_verdict */
	__u8 reason;	 /* enum egr_reason */
	__u8 hook;	 /* enum egr_hook */
	__u8 pad;	 /* always zero */
	__s32 err;	 /* errno returned to the task, positive; 0 if none */
	__be32 addr[4];	 /* destination, v4-mapped for IPv4; for unix: name bytes */
	__be16 port;	 /* destination port, network order */
	__u16 addrlen;	 /* for unix: length of the name (without the leading NUL) */
	char comm[16];	 /* task command name; empty when unknown */
	__u32 pad2;	 /* always zero */
	char name[64];	 /* EGR_R_KV_*: the SNI or Host seen (cut, NUL-padded) */
};
_Static_assert(sizeof(struct egr_event) == 144, "egr_event layout");

/* Map egr_stats (per-CPU array): what the programs did, for `egressctl status`. */
enum egr_counter {
	EGR_C_REDIRECT = 0,   /* connects/sends rewritten to a listener */
	EGR_C_DENY = 1,	      /* denied (any hook) */
	EGR_C_FASTPATH = 2,   /* connects that took an approved fast-path entry */
	EGR_C_LOCAL = 3,      /* connects/sends to loopback sockets of the sandbox */
	EGR_C_WOULD_DENY = 4, /* audit mode: would have been denied */
	EGR_C_KVERIFIED = 5,  /* kernel-verified connections whose first bytes matched */
	EGR_C_KREJECTED = 6,  /* kernel-verified connections refused by their first bytes */
	EGR_C_MAX,
};

/* The pre-existing pass (bpf/existing.bpf.c, kernel/existing.c): right after
 * the attach, one record per socket of the cgroup (or below) connected
 * before it, written by the iter/tcp and iter/udp programs to their seq
 * files; the revoke pass after a policy change, one per socket the programs
 * let go direct (EGR_PRE_FAILED then means it could not be ended). What was
 * done to it: */
enum egr_pre_action {
	EGR_PRE_MARKED = 1,	   /* marked EGR_SK_PREEXISTING|EGR_SK_DIRECT in egr_sk now:
				    * the catch-all lets it pass, not confined */
	EGR_PRE_MARKED_BEFORE = 2, /* an earlier pass marked it (same maps) */
	EGR_PRE_KILLED = 3,	   /* ended with bpf_sock_destroy() (ECONNABORTED) */
	EGR_PRE_FAILED = 4,	   /* neither: err says why; its packets are dropped */
	/* the revoke pass after a policy change (a direct socket of the target): */
	EGR_PRE_REVOKED = 5, /* its destination revoked: ended with bpf_sock_destroy() */
	EGR_PRE_DIRECT = 6,  /* left open: its destination is not among the revoked */
};

struct egr_pre_rec {
	__u64 cookie;	 /* socket cookie */
	__u64 cgroup_id; /* the socket's cgroup (where it was created) */
	__u64 ino;	 /* inode of its file, socket:[ino] in /proc/PID/fd; 0: none (closed) */
	__be32 laddr[4]; /* local address, v4-mapped for IPv4 */
	__be32 raddr[4]; /* peer address, v4-mapped for IPv4 */
	__be16 lport;	 /* local port, network order */
	__be16 rport;	 /* peer port, network order */
	__u8 family;	 /* AF_INET, AF_INET6 */
	__u8 protocol;	 /* IPPROTO_TCP, IPPROTO_UDP */
	__u8 state;	 /* TCP state (TCP_ESTABLISHED = 1 ...); connected UDP: 1 */
	__u8 action;	 /* enum egr_pre_action */
	__s32 err;	 /* EGR_PRE_FAILED: -errno of what failed; else 0 */
	__u32 tgid;	 /* a revoke pass: who connected, from the programs' record
			  * (kernel-verified sockets; 0: not recorded); the holder
			  * is looked for after the end, and may be gone by then */
	char comm[16];	 /* its command name, with tgid */
};
_Static_assert(sizeof(struct egr_pre_rec) == 88, "egr_pre_rec layout");

/* Map egr_unix_paths (hash): the filesystem unix
 * sockets of local services that start work outside the cgroup (container
 * runtimes, the service manager, the D-Bus buses), and --allow-unix
 * exceptions. Path keys are the socket's name zero-padded; a component
 * "/run/user/<uid>/" (or "/var/run/user/<uid>/") is looked up a second time
 * with the uid replaced by one '*' (an entry for every user). Events of reason
 * EGR_R_UNIX_SERVICE carry the entry's index in port (host order) and, for a
 * '*' entry, the uid's digits in addr (NUL-terminated). */
#define EGR_UNIX_PATH_LEN 128 /* sun_path is 108 bytes; 128 keeps indexes masked */
struct egr_unix_key {
	char path[EGR_UNIX_PATH_LEN];
};
struct egr_unix_val {
	__u32 index; /* the entry, for userspace to name it */
	__u8 action; /* EGR_UNIX_DENY or EGR_UNIX_ALLOW */
	__u8 pad[3]; /* always zero */
};
#define EGR_UNIX_DENY  1
#define EGR_UNIX_ALLOW 2
_Static_assert(sizeof(struct egr_unix_val) == 8, "egr_unix_val layout");

/* Pin layout under the bpffs root: <root>/egressctl/<cgroup id>/{link_*,map_*};
 * a selector root's hold (hold.bpf.c): <root>/egressctl/hold-<cgroup id>/ */
#define EGR_PIN_DIR	    "egressctl"
#define EGR_HOLD_PIN_PREFIX "hold-"

/* The hold (bpf/hold.bpf.c): egr_hold_pass, cgroup id -> flags. A cgroup
 * below the hold's root is refused everything until it is passed: SELF
 * passes it alone, TREE it and every cgroup below it. The depth is the most
 * cgroup levels below the hierarchy's root the programs look up. */
#define EGR_HOLD_SELF	 1u
#define EGR_HOLD_TREE	 2u
#define EGR_HOLD_MAX	 65536
#define EGR_HOLD_DEPTH	 32
#define EGR_HOLD_CONNECT 0 /* egr_hold_refused[]: connect4/6 refused */
#define EGR_HOLD_SENDMSG 1 /* sendmsg4/6 refused */
#define EGR_HOLD_SKB	 2 /* packets dropped */
#define EGR_HOLD_NSTATS	 3

#endif /* EGRESS_ABI_H */
