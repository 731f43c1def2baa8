// SPDX-License-Identifier: Apache-2.0
/* The proxy: HTTP (absolute-URI and CONNECT), SOCKS5 and transparent
 * listeners on 127.0.0.1, one libevent loop, every decision by the policy,
 * every client attributed through the BPF connection index. Names are
 * resolved by the resolver it shares with the DNS responder, its sibling;
 * what the responder learned comes through a callback (learned_name). */
#ifndef PROXY_H
#define PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/ask_hook.h"
#include "lib/proxyurl.h"

struct event_base;
struct conn;
struct policy;
struct audit;
struct resolver;
struct kpath;

enum proxy_listener {
	PROXY_L_HTTP = 0,
	PROXY_L_SOCKS = 1,
	PROXY_L_TPROXY = 2,
	PROXY_L_MAX,
};

/* Defaults of the timeouts (seconds); quota.h has the limits' */
#define PROXY_DEF_HEAD_TIMEOUT	   10
#define PROXY_DEF_CONNECT_TIMEOUT  10
#define PROXY_DEF_RESPONSE_TIMEOUT 60
#define PROXY_DEF_IDLE_TIMEOUT	   600

struct proxy_opts {
	const struct policy *policy; /* not owned; must outlive the proxy */
	struct audit *audit;	     /* decision log; NULL for none */
	struct resolver *res;	     /* upstream names; not owned */
	bool tproxy;		     /* open the transparent listener */
	bool audit_mode;	     /* --audit: record what would be denied, deny nothing */
	struct ask_hook ask;	     /* --ask: questions on the terminal; .ask NULL = none */
	struct policy *policy_rw;    /* the same policy, for rules approved with --ask */
	/* the name the DNS responder answered sa's address for (until its TTL
	 * runs out), or NULL: a transparent connection's name when its stream
	 * names none. NULL: no responder */
	const char *(*learned_name)(void *arg, const struct sockaddr *sa);
	void *learned_arg;
	/* descriptors others on the loop may need (the DNS responder's TCP
	 * clients): left out of the connection limit */
	int fd_reserve;
	int test_pipes_max; /* > 0: fewer relay pipes than the budget (tests) */
	/* 0 for the default of each; see the README's "Timeouts and limits" */
	int max_conns;		   /* client connections at once (4096, or what fits) */
	int max_conns_per_process; /* of them, one process's (a quarter, at least 64) */
	int header_timeout_s;	   /* client head / first bytes (10) */
	int connect_timeout_s;	   /* upstream connect, per address (10) */
	int response_timeout_s;	   /* plain HTTP: request sent -> response head (60) */
	int idle_timeout_s;	   /* relay without traffic (600) */
	/* the ports to listen on when taking over pinned programs (they
	 * redirect there); 0: any free one */
	uint16_t ports[PROXY_L_MAX];
	/* containers: every listener also on this IPv4 address
	 * (network order), the same port, for sockets of other network
	 * namespaces; bound with IP_FREEBIND, so a bridge that comes later
	 * brings it. 0: 127.0.0.1 only */
	uint32_t ns_ip4;
	/* --ipv6 (never with ns_ip4): every listener also on [::1], the same
	 * port; a host without IPv6 on lo fails here, at start-up */
	bool ipv6;
	/* --upstream-proxy (host "": none): what the policy routes through it
	 * (policy_via_upstream()) is reached there, by name; upstream_auth its
	 * Proxy-Authorization value ("": none), erased by proxy_free() */
	struct proxyurl upstream;
	char upstream_auth[PROXYURL_AUTH_MAX];
	/* secrets (policy/secret.h): their placeholders denied where they may
	 * not go, swapped for the values in inspected requests to their
	 * hosts; NULL: none. Not owned; must outlive the proxy */
	struct secrets *secrets;
	/* HTTPS inspection (inspect/inspect.h): a TLS connection the policy
	 * allows only inspected is handed to start(arg, c), which takes it
	 * over (conn.h: conn_inspect). NULL: such connections are reset */
	struct {
		void (*start)(void *arg, struct conn *c);
		void *arg;
	} inspect;
};

struct proxy;

/* Opens the listeners on 127.0.0.1 (ephemeral ports; and ns_ip4). NULL
 * with errbuf set on failure. */
struct proxy *proxy_new(struct event_base *base, const struct proxy_opts *o, char *errbuf,
			size_t errlen);

/* Sizes the connection limits by the descriptor limit (quota.c), given
 * the descriptors open now: call it once everything but the connections is
 * open (raise the limit first: quota_raise_nofile()). A default
 * --max-conns is lowered to what fits (said with -v); an explicit one that
 * does not fit is an error (-1, errbuf set). */
int proxy_size_limits(struct proxy *p, char *errbuf, size_t errlen);

/* The port of a listener (host order); 0 if not open. */
uint16_t proxy_port(const struct proxy *p, enum proxy_listener l);

/* The BPF connection index (egr_conns) to attribute clients with. Until it
 * is set, every client is refused. */
void proxy_set_index(struct proxy *p, int conns_fd);

/* The kernel paths (kernel/kpath.h), once the BPF maps exist: an --ask
 * "always" for a tcp:// destination opens the fast path. kp must outlive
 * the proxy. */
void proxy_set_kpath(struct proxy *p, const struct kpath *kp);

/* A new policy (a reload; both pointers to it, as in proxy_opts) for every
 * decision from now on. Connections it denies are closed and logged: their
 * number is returned. The old policy may be freed once this returns. */
uint64_t proxy_set_policy(struct proxy *p, const struct policy *pol, struct policy *rw);

/* Counters for the summary. */
struct proxy_stats {
	uint64_t accepted, refused_unattributed;
	uint64_t refused_limit;	      /* at --max-conns */
	uint64_t refused_per_process; /* at --max-conns-per-process */
	uint64_t refused_nofd;	      /* out of descriptors */
	uint64_t allowed, denied;
	uint64_t closed_early;		      /* transparent connections closed before a byte */
	int open;			      /* connections open now (counted ones) */
	int max_conns, max_conns_per_process; /* the limits in force */
};
void proxy_get_stats(const struct proxy *p, struct proxy_stats *st);

/* Closes every connection and listener. */
void proxy_free(struct proxy *p);

#endif /* PROXY_H */
