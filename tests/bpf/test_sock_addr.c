// SPDX-License-Identifier: Apache-2.0
/* The sock_addr hooks (bpf/sock_addr.c: connect4/6, sendmsg4/6, recvmsg4,
 * getpeername4) and sockops' index of redirected connections, on real
 * sockets, as the kernel's selftests do for sock_addr programs
 * (tools/testing/selftests/bpf/prog_tests/sock_addr.c), with sockops and
 * the catch-all that index what they redirect: Linux has no
 * BPF_PROG_TEST_RUN for BPF_PROG_TYPE_CGROUP_SOCK_ADDR (6.18 answers
 * ENOTSUPP), so the programs are attached to a cgroup made here and a
 * child process placed in it makes the sockets, in a network namespace of
 * the test's own (lo up, 192.0.2.10 on it) from which nothing leaves. The
 * listeners stand outside the cgroup, in this process, as egressctl's do.
 * Each case asserts what the client sees (its connect's errno, the peer
 * getpeername() gives, the source of a reply) and where the connection or
 * datagram arrived (the transparent listener, the responder, the
 * destination itself), with the index entry the proxy reads. Needs root
 * (exit 77 otherwise). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <linux/ipv6.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "egress_abi.h"
#include "egress.skel.h"

#include "bpftest.h"

#define TPROXY_PORT  41001
#define DNS_PORT     41053
#define PROXY_PORT   41080
#define DIRECT_ADDR  "192.0.2.10"   /* on lo, outside loopback's range */
#define DIRECT_ADDR6 "2001:db8::10" /* the same for IPv6 */

static struct egress_bpf *skel;
static struct bpf_link *links[8];
static int nlinks;

/* ---- the programs, attached to the sandbox cgroup -------------------------- */

/* The sock_addr programs, sockops and the catch-all, loaded as the loader
 * would (the tunables of a run whose listeners are the ports above on
 * 127.0.0.1), attached to cg_sbx. */
static int
attach(void)
{
	struct bpf_program *want[7] = {NULL};
	struct bpf_program *p;
	int cg, i;

	skel = egress_bpf__open();
	if (!skel)
		return -1;
	skel->rodata->tproxy_port = TPROXY_PORT;
	skel->rodata->dns_port = DNS_PORT;
	((uint16_t *)skel->rodata->proxy_ports)[0] = PROXY_PORT;
	skel->rodata->emit_redirects = 1;
	skel->rodata->sandbox_cgid = sbx_id;
	skel->rodata->host_netns = own_netns();
	skel->rodata->fast_nets = 1; /* egr_fast_net stays empty but where a case fills it */
	skel->rodata->peers_on = 1;  /* egr_peer likewise (a daemon following dockerd) */
	want[0] = skel->progs.egr_connect4;
	want[1] = skel->progs.egr_connect6;
	want[2] = skel->progs.egr_sendmsg4;
	want[3] = skel->progs.egr_recvmsg4;
	want[4] = skel->progs.egr_getpeername4;
	want[5] = skel->progs.egr_sockops;
	want[6] = skel->progs.egr_skb_egress; /* indexes the DNS datagram as it leaves */
	bpf_object__for_each_program(p, skel->obj)
	{
		bool keep = false;

		for (i = 0; i < 7; i++)
			keep = keep || p == want[i];
		bpf_program__set_autoload(p, keep);
	}
	if (egress_bpf__load(skel))
		return -1;
	cg = open(cg_sbx, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0)
		return -1;
	for (i = 0; i < 7; i++) {
		links[nlinks] = bpf_program__attach_cgroup(want[i], cg);
		if (!links[nlinks]) {
			close(cg);
			return -1;
		}
		nlinks++;
	}
	close(cg);
	return 0;
}

static void
detach(void)
{
	while (nlinks > 0)
		bpf_link__destroy(links[--nlinks]);
	egress_bpf__destroy(skel);
}

/* ---- sockets ----------------------------------------------------------------- */

/* "ADDR:PORT" of an IPv4 socket address */
static const char *
str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
	char a[INET_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
	snprintf(buf, len, "%s:%u", a, ntohs(in->sin_port));
	return buf;
}

/* A listener (TCP) or bound socket (UDP) of this process, outside the
 * sandbox cgroup, as egressctl's are. */
static int
listener(int type, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss = sa(addr, port);
	int s = socket(ss.ss_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;

	assert_true(s >= 0);
	assert_int_equal(setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	assert_int_equal(bind(s, (struct sockaddr *)&ss, sizeof(ss)), 0);
	if (type == SOCK_STREAM)
		assert_int_equal(listen(s, 8), 0);
	return s;
}

/* Waits up to 2 s for s to be readable (a connection to accept, a
 * datagram). */
static bool
readable(int s)
{
	struct pollfd p = {.fd = s, .events = POLLIN};

	return poll(&p, 1, 2000) == 1;
}

/* ---- the client, in the sandbox cgroup ------------------------------------- */

struct result {
	int err;		       /* the connect's or send's errno; 0 */
	struct sockaddr_storage peer;  /* getpeername(), or a reply's source */
	struct sockaddr_storage local; /* the client's own address */
	char reply[16];		       /* what the reply said */
};

enum op {
	OP_CONNECT, /* TCP connect, then getpeername */
	OP_UDP,	    /* sendto, then the reply and its source */
};

/* Where the last datagram udp_server got came from (client()). */
static struct sockaddr_storage udp_from;

/* A child joins cg_sbx and does op towards dst; the parent answers a
 * datagram that reaches udp_server (>= 0) with "pong" (its source in
 * udp_from). Returns what the child saw. */
static struct result
client(enum op op, const struct sockaddr_storage *dst, int udp_server)
{
	struct result r = {0};
	int pfd[2], status;
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char path[PATH_MAX + 16];
		socklen_t len = sizeof(r.peer);
		struct timeval tv = {.tv_sec = 2};
		int cfd, s;

		close(pfd[0]);
		snprintf(path, sizeof(path), "%s/cgroup.procs", cg_sbx);
		cfd = open(path, O_WRONLY);
		if (cfd < 0 || write(cfd, "0", 1) != 1)
			_exit(1);
		close(cfd);
		s = socket(dst->ss_family, op == OP_CONNECT ? SOCK_STREAM : SOCK_DGRAM, 0);
		if (s < 0)
			_exit(2);
		if (op == OP_CONNECT) {
			if (connect(s, (const struct sockaddr *)dst, sizeof(*dst)))
				r.err = errno;
			else if (getpeername(s, (struct sockaddr *)&r.peer, &len))
				_exit(3);
		} else {
			setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			if (sendto(s, "ping", 4, 0, (const struct sockaddr *)dst, sizeof(*dst)) !=
			    4)
				r.err = errno;
			else if (recvfrom(s, r.reply, sizeof(r.reply) - 1, 0,
					  (struct sockaddr *)&r.peer, &len) < 0)
				r.err = errno;
		}
		len = sizeof(r.local);
		getsockname(s, (struct sockaddr *)&r.local, &len);
		_exit(write(pfd[1], &r, sizeof(r)) == sizeof(r) ? 0 : 4);
	}
	close(pfd[1]);
	if (udp_server >= 0 && readable(udp_server)) {
		socklen_t len = sizeof(udp_from);
		char buf[16];

		if (recvfrom(udp_server, buf, sizeof(buf), 0, (struct sockaddr *)&udp_from, &len) >
		    0)
			assert_int_equal(
				sendto(udp_server, "pong", 4, 0, (struct sockaddr *)&udp_from, len),
				4);
	}
	assert_int_equal(read(pfd[0], &r, sizeof(r)), sizeof(r));
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return r;
}

/* The proxy's lookup: who connected from client to where (egr_conns). */
static int
conn_entry(const struct sockaddr_storage *client_addr, int proto, struct egr_conn_val *out)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)client_addr;
	struct egr_conn_key k = {0};

	k.addr[2] = htonl(0xffff);
	k.addr[3] = in->sin_addr.s_addr;
	k.port = in->sin_port;
	k.proto = (uint16_t)proto;
	return bpf_map_lookup_elem(bpf_map__fd(skel->maps.egr_conns), &k, out) ? -errno : 0;
}

/* ---- the cases --------------------------------------------------------------- */

/* TCP to an address that is no listener of ours: connected to the
 * transparent listener, while the client's getpeername() says where it
 * asked to go; the index gives the proxy that destination and the pid. */
static void
test_connect4_redirected(void **state)
{
	struct sockaddr_storage dst = sa("203.0.113.7", 443);
	int tl = listener(SOCK_STREAM, "127.0.0.1", TPROXY_PORT);
	struct egr_conn_val v;
	struct result r;
	char buf[64];
	int a;

	(void)state;
	r = client(OP_CONNECT, &dst, -1);
	assert_int_equal(r.err, 0);
	assert_string_equal(str(&r.peer, buf, sizeof(buf)), "203.0.113.7:443");
	assert_true(readable(tl));
	a = accept(tl, NULL, NULL);
	assert_true(a >= 0);
	close(a);
	assert_int_equal(conn_entry(&r.local, IPPROTO_TCP, &v), 0);
	assert_int_equal(v.addr[3], inet_addr("203.0.113.7"));
	assert_int_equal(ntohs(v.port), 443);
	assert_int_equal(v.reason, EGR_R_TRANSPARENT);
	assert_int_equal(v.cgroup_id, sbx_id);
	close(tl);
}

/* A connect from the sandbox to DIRECT_ADDR:port: direct (the
 * destination's own listener gets it, the transparent one nothing), or
 * redirected (the other way round). The client's getpeername() says
 * DIRECT_ADDR:port either way. */
static void
connect_goes(uint16_t port, bool direct)
{
	struct sockaddr_storage dst = sa(DIRECT_ADDR, port);
	int tl = listener(SOCK_STREAM, "127.0.0.1", TPROXY_PORT);
	int dl = listener(SOCK_STREAM, DIRECT_ADDR, port);
	int got = direct ? dl : tl, other = direct ? tl : dl, a;
	struct result r = client(OP_CONNECT, &dst, -1);
	char buf[64], want[64];

	assert_int_equal(r.err, 0);
	snprintf(want, sizeof(want), "%s:%u", DIRECT_ADDR, port);
	assert_string_equal(str(&r.peer, buf, sizeof(buf)), want);
	assert_true(readable(got));
	a = accept(got, NULL, NULL);
	assert_true(a >= 0);
	close(a);
	assert_true(accept(other, NULL, NULL) < 0 && errno == EAGAIN);
	close(dl);
	close(tl);
}

/* An approved destination (egr_fast) goes direct; without the approval,
 * the same connect is redirected. */
static void
test_connect4_fast_path(void **state)
{
	struct egr_fast_key k = {.port = htons(8080), .proto = IPPROTO_TCP};
	struct egr_fast_val fv = {0};
	int fast = bpf_map__fd(skel->maps.egr_fast);

	(void)state;
	k.addr[2] = htonl(0xffff);
	k.addr[3] = inet_addr(DIRECT_ADDR);
	assert_int_equal(bpf_map_update_elem(fast, &k, &fv, BPF_ANY), 0);
	connect_goes(8080, true);
	assert_int_equal(bpf_map_delete_elem(fast, &k), 0);
	connect_goes(8080, false);
}

/* fast_nets (dockerd's target): TCP to a network of egr_fast_net goes
 * direct, any port; the network gone, it is redirected again. */
static void
test_connect4_fast_net(void **state)
{
	struct egr_net_key k = {.prefixlen = 96 + 24};
	int nets = bpf_map__fd(skel->maps.egr_fast_net);
	uint8_t one = 1;

	(void)state;
	k.addr[2] = htonl(0xffff);
	k.addr[3] = inet_addr("192.0.2.0");
	assert_int_equal(bpf_map_update_elem(nets, &k, &one, BPF_ANY), 0);
	connect_goes(8081, true);
	connect_goes(8082, true);
	assert_int_equal(bpf_map_delete_elem(nets, &k), 0);
	connect_goes(8081, false);
}

/* A connection from peer (outside the sandbox) to a listener of the
 * sandbox at DIRECT_ADDR:port: does it complete within a second, and does
 * what the accepted socket writes arrive? */
static bool
answered(uint16_t port)
{
	struct sockaddr_storage dst = sa(DIRECT_ADDR, port), src = sa(DIRECT_ADDR, 0);
	int l = sock_in(cg_sbx, SOCK_STREAM, DIRECT_ADDR, port, false);
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), a = -1;
	struct pollfd p = {.fd = c, .events = POLLIN};
	struct timeval tv = {.tv_sec = 1};
	bool ok = false;
	char b[4] = "";

	assert_true(l >= 0 && c >= 0);
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	assert_int_equal(bind(c, (struct sockaddr *)&src, sizeof(src)), 0);
	if (!connect(c, (struct sockaddr *)&dst, sizeof(dst))) {
		a = accept(l, NULL, NULL);
		ok = a >= 0 && write(a, "hi", 2) == 2 && poll(&p, 1, 1000) == 1 &&
		     read(c, b, sizeof(b)) == 2 && !memcmp(b, "hi", 2);
	}
	if (a >= 0)
		close(a);
	close(c);
	close(l);
	return ok;
}

/* A listener of the sandbox answers a peer at an address of the host
 * (egr_hostaddr: its SYN-ACK, and what the accepted socket sends), and
 * no peer that is not one (the catch-all drops its SYN-ACK). */
static void
test_accepted_answers_host(void **state)
{
	struct egr_hostaddr_key k = {0};
	int h = bpf_map__fd(skel->maps.egr_hostaddr);
	uint8_t one = 1;

	(void)state;
	assert_false(answered(41600));
	k.addr[2] = htonl(0xffff);
	k.addr[3] = inet_addr(DIRECT_ADDR);
	assert_int_equal(bpf_map_update_elem(h, &k, &one, BPF_ANY), 0);
	assert_true(answered(41601));
	assert_int_equal(bpf_map_delete_elem(h, &k), 0);
	assert_false(answered(41602));
}

/* egr_peer: a socket of the namespace a key names reaches its address
 * direct, TCP (any port) and UDP, and a listener of the sandbox answers a
 * peer there; the key of another namespace (a socket made elsewhere and
 * handed to the container) opens nothing, and once the key is gone TCP is
 * redirected, UDP refused and the listener silent again. */
static void
test_peer(void **state)
{
	struct egr_peer_key k = {.netns = own_netns()};
	struct sockaddr_storage udst = sa(DIRECT_ADDR, 9);
	int m = bpf_map__fd(skel->maps.egr_peer), u;
	uint8_t one = 1;
	struct result r;

	(void)state;
	k.addr[2] = htonl(0xffff);
	k.addr[3] = inet_addr(DIRECT_ADDR);
	k.netns++; /* not this namespace */
	assert_int_equal(bpf_map_update_elem(m, &k, &one, BPF_ANY), 0);
	connect_goes(8083, false);
	assert_false(answered(41603));
	assert_int_equal(bpf_map_delete_elem(m, &k), 0);
	k.netns--;
	assert_int_equal(bpf_map_update_elem(m, &k, &one, BPF_ANY), 0);
	connect_goes(8083, true);
	connect_goes(8084, true);
	assert_true(answered(41604));
	u = listener(SOCK_DGRAM, DIRECT_ADDR, 9);
	r = client(OP_UDP, &udst, u);
	assert_int_equal(r.err, 0);
	assert_string_equal(r.reply, "pong");
	close(u);
	assert_int_equal(bpf_map_delete_elem(m, &k), 0);
	connect_goes(8083, false);
	assert_false(answered(41605));
	u = listener(SOCK_DGRAM, DIRECT_ADDR, 9);
	r = client(OP_UDP, &udst, u);
	assert_int_equal(r.err, EPERM);
	close(u);
}

/* Our own listeners are reached as they are; a host service on loopback
 * (a socket made outside the sandbox cgroup) is refused; the sandbox's own
 * loopback server is reached. */
static void
test_connect4_loopback(void **state)
{
	struct sockaddr_storage proxy = sa("127.0.0.1", PROXY_PORT);
	struct sockaddr_storage host = sa("127.0.0.1", 41500);
	struct sockaddr_storage own = sa("127.0.0.1", 41501);
	int pl = listener(SOCK_STREAM, "127.0.0.1", PROXY_PORT);
	int hl = listener(SOCK_STREAM, "127.0.0.1", 41500);
	int ol = sock_in(cg_sbx, SOCK_STREAM, "127.0.0.1", 41501, false);
	struct result r;
	char buf[64];

	(void)state;
	r = client(OP_CONNECT, &proxy, -1);
	assert_int_equal(r.err, 0);
	assert_string_equal(str(&r.peer, buf, sizeof(buf)), "127.0.0.1:41080");
	r = client(OP_CONNECT, &host, -1);
	assert_int_equal(r.err, ECONNREFUSED);
	assert_true(accept(hl, NULL, NULL) < 0 && errno == EAGAIN);
	r = client(OP_CONNECT, &own, -1);
	assert_int_equal(r.err, 0);
	close(ol);
	close(hl);
	close(pl);
}

/* DNS to any resolver goes to the responder, and its reply comes from the
 * resolver the client asked (recvmsg4); the index names the resolver. */
static void
test_udp_dns_redirected(void **state)
{
	struct sockaddr_storage dst = sa("198.51.100.53", 53);
	int dns = listener(SOCK_DGRAM, "127.0.0.1", DNS_PORT);
	struct egr_conn_val v;
	struct result r;
	char buf[64];

	(void)state;
	r = client(OP_UDP, &dst, dns);
	assert_int_equal(r.err, 0);
	assert_string_equal(r.reply, "pong");
	assert_string_equal(str(&r.peer, buf, sizeof(buf)), "198.51.100.53:53");
	assert_int_equal(conn_entry(&udp_from, IPPROTO_UDP, &v), 0);
	assert_int_equal(v.addr[3], inet_addr("198.51.100.53"));
	assert_int_equal(ntohs(v.port), 53);
	assert_int_equal(v.reason, EGR_R_DNS);
	close(dns);
}

/* Other UDP is refused at the send, and nothing arrives. */
static void
test_udp_other_refused(void **state)
{
	struct sockaddr_storage dst = sa(DIRECT_ADDR, 9);
	int s = listener(SOCK_DGRAM, DIRECT_ADDR, 9);
	struct result r;

	(void)state;
	r = client(OP_UDP, &dst, -1);
	assert_int_equal(r.err, EPERM);
	assert_false(readable(s));
	close(s);
}

/* Native IPv6 without --ipv6: unreachable, though an address of the
 * namespace listens there. */
static void
test_connect6_refused(void **state)
{
	struct sockaddr_storage dst = sa(DIRECT_ADDR6, 443);
	int l = listener(SOCK_STREAM, DIRECT_ADDR6, 443);
	struct result r;

	(void)state;
	r = client(OP_CONNECT, &dst, -1);
	assert_int_equal(r.err, ENETUNREACH);
	assert_true(accept(l, NULL, NULL) < 0 && errno == EAGAIN);
	close(l);
}

/* ---- main ----------------------------------------------------------------- */

/* DIRECT_ADDR/32 (as lo:1) and DIRECT_ADDR6/128 on lo. */
static int
direct_addr(void)
{
	struct ifreq ifr = {0};
	struct in6_ifreq ifr6 = {.ifr6_prefixlen = 128};
	struct sockaddr_in *in = (struct sockaddr_in *)&ifr.ifr_addr;
	int s = socket(AF_INET, SOCK_DGRAM, 0), s6 = socket(AF_INET6, SOCK_DGRAM, 0), err = -1;

	if (s >= 0 && s6 >= 0) {
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo:1");
		in->sin_family = AF_INET;
		inet_pton(AF_INET, DIRECT_ADDR, &in->sin_addr);
		inet_pton(AF_INET6, DIRECT_ADDR6, &ifr6.ifr6_addr);
		ifr6.ifr6_ifindex = (int)if_nametoindex("lo");
		err = ioctl(s, SIOCSIFADDR, &ifr) || ioctl(s6, SIOCSIFADDR, &ifr6) ? -1 : 0;
	}
	if (s >= 0)
		close(s);
	if (s6 >= 0)
		close(s6);
	return err;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect4_redirected),
		cmocka_unit_test(test_connect4_fast_path),
		cmocka_unit_test(test_connect4_fast_net),
		cmocka_unit_test(test_accepted_answers_host),
		cmocka_unit_test(test_peer),
		cmocka_unit_test(test_connect4_loopback),
		cmocka_unit_test(test_udp_dns_redirected),
		cmocka_unit_test(test_udp_other_refused),
		cmocka_unit_test(test_connect6_refused),
	};
	int failed;

	if (geteuid() != 0) {
		printf("# skipped: attaching the BPF programs to a cgroup needs root\n");
		return 77;
	}
	if (netns_setup() || direct_addr()) {
		printf("# cannot make a network namespace with lo up: %s\n", strerror(errno));
		return 1;
	}
	if (cg_setup()) {
		printf("# cannot make the test's cgroups: %s\n", strerror(errno));
		return 1;
	}
	if (attach()) {
		printf("# cannot load and attach the sock_addr programs: %s\n", strerror(errno));
		detach();
		return 1;
	}
	failed = cmocka_run_group_tests_name("sock_addr", tests, NULL, NULL);
	detach();
	return failed;
}
