// SPDX-License-Identifier: Apache-2.0
/* The BPF side's lifecycle: open the skeleton, set its tunables, load,
 * attach every program to a cgroup as a bpf_link, pin links and maps under
 * <bpffs>/egressctl/<cgroup id>/, feed the fast-path map, read events,
 * detach. The only files (with cgroup.c) doing privileged BPF work:
 * loader.c (open, attach, the table of programs), loader_maps.c (the maps
 * while the programs run), loader_adopt.c (taking pinned programs over). */
#ifndef LOADER_H
#define LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "egress_abi.h"

struct loader;
struct unixsvc;

/* The kernels egressctl needs, named in its errors and by `egressctl
 * version`; the README, the man page, debian/control and action.yml say
 * the same (tests/e2e/package.sh compares them). */
#define EGR_LINUX_MIN	 "6.2" /* bpf_rdonly_cast: every command that confines */
#define EGR_LINUX_DAEMON "6.5" /* bpf_sock_destroy, SO_PEERPIDFD: the daemon */
#define EGR_LINUX_UNIX	 "6.7" /* the cgroup unix socket hooks */

struct loader_opts {
	uint16_t tproxy_port;	 /* transparent TCP listener; 0 = deny instead */
	uint16_t dns_port;	 /* DNS responder (UDP+TCP); 0 = deny DNS */
	uint16_t proxy_ports[4]; /* proxy listeners that clients may reach */
	bool unix_hooks;	 /* deny abstract unix sockets (needs EGR_LINUX_UNIX) */
	bool emit_redirects;	 /* report redirects on the ring buffer too */
	bool audit_mode;	 /* record would-deny events, deny nothing */
	bool local_udp_any;	 /* UDP to any local socket (dockerd's target) */
	bool fast_nets;		 /* TCP to egr_fast_net's networks direct (dockerd's target) */
	bool peers;		 /* egr_peer looked up (a daemon following dockerd) */
	/* the cgroup the programs will be attached to (loader_attach's cgid):
	 * loopback sockets created in it or below are the sandbox's own */
	uint64_t sandbox_cgid;
	/* containers (daemon --containers): sockets of other network
	 * namespaces are redirected to the listeners at this IPv4 address
	 * (network order) instead of 127.0.0.1; 0: their redirects are
	 * refused. The loader's own namespace is the listeners'. */
	uint32_t ns_ip4;
	/* --ipv6: native IPv6 TCP and DNS are redirected to the listeners'
	 * ports on ::1 and judged like IPv4; false: native IPv6 is denied
	 * but for the fast path and the sandbox's own loopback sockets */
	bool ipv6;
	/* programs not to load, by name without "egr_" (tests of the layers
	 * behind them; only the EGR_TESTING build exposes this) */
	const char *skip_progs[8];
	/* room in egr_socks if not 0 (tests of its fallback; EGR_TESTING) */
	uint32_t socks_max;
	/* room in egr_conns, egr_fast, egr_vdst and egr_vname, half of it in
	 * egr_socks and 16384 more in egr_saved, if not 0 (bpf/lib/maps.h's
	 * 65536, 32768 and 81920) */
	uint32_t map_entries;
	/* the unix sockets of services that start work outside
	 * (kernel/unixsvc_list.h; built by sandbox/unixsvc.c): their names
	 * go to egr_unix_paths (loader_unix_set); NULL: none */
	const struct unixsvc *unix_svc;
	/* called for every event read from the ring buffer */
	void (*on_event)(const struct egr_event *e, void *arg);
	void *arg;
};

/* Reads BPF_CGROUP_UNIX_CONNECT/SENDMSG from the running kernel's BTF.
 * Returns 0, or -ENOENT when the kernel predates the unix hooks (< 6.7). */
int loader_unix_attach_types(int *connect_type, int *sendmsg_type);

/* Puts s's names into egr_unix_paths, replacing what it held (a daemon's
 * reloaded configuration, a take-over). Returns 0 or -errno. */
int loader_unix_set(struct loader *ld, const struct unixsvc *s);

/* Mounts bpffs at /sys/fs/bpf if no bpffs is mounted; writes
 * "<bpffs>/egressctl" to out. Returns 0 or -errno. */
int loader_pin_root(char *out, size_t outlen);

/* Opens and loads the programs. NULL on error, with errbuf set. */
struct loader *loader_open(const struct loader_opts *o, char *errbuf, size_t errlen);

/* Attaches every program to the cgroup (fd of its directory) as bpf_links
 * and pins links and maps under <pin root>/<cgid>/. Stale pins left there
 * by an egressctl that was killed are replaced only after the new links are
 * attached, so enforcement has no gap. cgid must be the sandbox_cgid the
 * programs were loaded with (-EINVAL otherwise). Returns 0 or -errno
 * (errbuf set). */
int loader_attach(struct loader *ld, int cg_fd, uint64_t cgid, char *errbuf, size_t errlen);

/* Takes over the programs an egressctl that is gone left pinned for cgid
 * (the daemon after a restart): links, maps and tunables as they are,
 * nothing detached or re-attached, so the link ids stay and enforcement
 * never stops. *pinned gets want with the ports the programs redirect to
 * (the listeners must open exactly those). NULL with errno and errbuf set:
 * ENOENT (no pins), ESTALE (pins of another build, of another load, or
 * loaded with other options than want's: attach afresh instead). */
struct loader *loader_adopt(const struct loader_opts *want, uint64_t cgid,
			    struct loader_opts *pinned, char *errbuf, size_t errlen);

/* The ids of the links (for status and tests: they survive a take-over). */
void loader_link_ids(struct loader *ld, uint32_t *ids, int max, int *n);

/* Unpins and detaches everything loader_attach() made. */
void loader_detach(struct loader *ld);

/* Closes fds and frees; pinned links stay attached (fail closed). */
void loader_free(struct loader *ld);

/* The kernel's counters (egr_stats, summed over CPUs), by enum egr_counter
 * (out: EGR_C_MAX of them); 0 or -errno. */
int loader_counters(struct loader *ld, uint64_t *out);

/* Entries of the fast path (egr_fast) now, of EGR_FAST_CAPACITY. */
#define EGR_FAST_CAPACITY 65536
int loader_fast_count(struct loader *ld);

/* egr_fast_net := exactly the n IPv4 networks net[i]/len[i] (network
 * order): TCP to them goes direct where loader_opts.fast_nets. 0 or
 * -errno. */
int loader_fast_nets_sync(struct loader *ld, const uint32_t *net, const uint8_t *len, int n);

/* egr_hostaddr := exactly the n addresses a (kernel/hostaddr.h): whom a
 * connection a confined listener accepted may answer. 0 or -errno. */
int loader_hostaddr_sync(struct loader *ld, const struct egr_hostaddr_key *a, int n);

/* egr_peer := exactly the n keys k: a job's containers on a docker
 * network they share, whom a socket of each one's network namespace
 * reaches direct (daemon/peers.c). 0 or -errno (-E2BIG: over
 * EGR_PEER_MAX). */
int loader_peer_sync(struct loader *ld, const struct egr_peer_key *k, int n);

/* The TCP ports the policy names (egr_ports): with enforce, a connect to
 * the transparent listener on any other port is refused at once. */
int loader_set_ports(struct loader *ld, const uint64_t *bits, bool enforce);

/* Fast path: approve (addr, port, proto) for direct connects for ttl_ns
 * (0: until removed). sa is a sockaddr_in or sockaddr_in6. */
int loader_fast_add(struct loader *ld, const struct sockaddr *sa, uint8_t proto, uint64_t ttl_ns);
int loader_fast_del(struct loader *ld, const struct sockaddr *sa, uint8_t proto);
/* Empties the fast path (taking over programs whose approvals were made
 * under a policy that may have changed). Returns how many were removed. */
int loader_fast_clear(struct loader *ld);

/* egr_saved: the responder's learned names and fast-path approvals, kept in
 * the pins for a restarted daemon. put and del return 0 or -errno (del of
 * what is not there: -ENOENT); walk calls fn for each entry until fn
 * returns non-zero, and returns the number of entries seen. */
int loader_saved_put(struct loader *ld, const struct egr_saved_key *k,
		     const struct egr_saved_val *v);
int loader_saved_del(struct loader *ld, const struct egr_saved_key *k);
int loader_saved_walk(struct loader *ld,
		      int (*fn)(void *arg, const struct egr_saved_key *k,
				const struct egr_saved_val *v),
		      void *arg);

/* The kernel-verified path (bpf/lib/kverify.h): the DNS responder answered
 * name with sa (its port: where the policy allows name without the proxy)
 * for ttl_ns; flags EGR_VN_TLS and/or EGR_VN_HTTP say as what. Returns 0 or
 * -errno. loader_kv_clear empties both maps (a new policy), returning how
 * many addresses went. */
int loader_kv_add(struct loader *ld, const struct sockaddr *sa, const char *name, uint32_t flags,
		  uint64_t ttl_ns);
int loader_kv_clear(struct loader *ld);
/* The kernel-verified approvals in the maps (a take-over's): fn for each
 * one not expired (IPv4 or IPv6), with what is left of its TTL, until fn
 * returns non-zero. Returns how many were seen. */
int loader_kv_walk(struct loader *ld,
		   int (*fn)(void *arg, const struct sockaddr_storage *ss, const char *name,
			     uint32_t flags, uint64_t ttl_ns),
		   void *arg);

/* Ends the refused direct connections (EGR_SK_KREJECT: the kernel-verified
 * path's, and any whose packets went elsewhere) in this network namespace
 * and, when pid (who connected; 0: unknown) is in another (a container),
 * in that one too: the iter/tcp program egr_kv_kill. The ring buffer's
 * consumer calls it on each refusal's event. 0 or -errno (logged). */
int loader_kv_kill(struct loader *ld, pid_t pid);

/* Is e the catch-all's refusal of a direct connection (a kernel-verified
 * one's first bytes, a packet sent elsewhere), which is to be ended? */
bool loader_is_refusal(const struct egr_event *e);

/* The ring buffer's epoll fd (for the event loop) and its drain. */
int loader_events_fd(struct loader *ld);
int loader_events_consume(struct loader *ld);

/* Map fds for the proxy. */
int loader_conns_fd(struct loader *ld);
/* ... and for the pre-existing pass (kernel/existing.h), valid after
 * loader_open(): it shares them before loader_attach(). */
int loader_socks_fd(struct loader *ld);
int loader_sk_fd(struct loader *ld);
const char *loader_pin_dir(struct loader *ld);

/* Looks up the connection whose client address (the peer of an accepted
 * socket, or of a datagram) is sa in an egr_conns map. A TCP entry names
 * one connection, accepted once: it is deleted as it is read. A UDP entry
 * names a socket that may send again: it stays (the programs free it with
 * the socket). Returns 0, -ENOENT or -errno. */
int loader_conn_lookup(int conns_fd, const struct sockaddr *sa, int proto,
		       struct egr_conn_val *out);

/* Fills a v4-mapped (IPv4) or plain IPv6 address from a sockaddr. Returns
 * the port (network order) or -EAFNOSUPPORT. */
int loader_sockaddr_key(const struct sockaddr *sa, uint32_t addr[4]);

/* The pin directory of the programs attached to cgroup cgid
 * (<bpffs>/egressctl/<cgid>) into out; 0 or -errno (-ENAMETOOLONG: a cut
 * path could name another cgroup's pins). */
int loader_pin_dir_of(uint64_t cgid, char *out, size_t len);

/* The map egr_NAME pinned for cgid ("socks" for egr_socks), opened: its
 * fd, or -errno (-ENOENT: none pinned). */
int loader_pinned_map(uint64_t cgid, const char *name);

/* Removes a pin directory left behind (all its entries, then the dir). */
int loader_remove_pin_dir(const char *dir);

#endif /* LOADER_H */
