// SPDX-License-Identifier: Apache-2.0
/* The rule engine: allow/deny rules, deny wins, default deny. Pure matching
 * (no I/O, no libevent): hosts in a hash, wildcards by label suffix,
 * addresses by prefix, so a decision costs a handful of hash lookups however
 * many rules there are. Rule syntax: README.md "Policy". */
#ifndef POLICY_H
#define POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

enum policy_action {
	POLICY_ALLOW = 0,
	POLICY_DENY = 1,
};

/* Why a decision came out the way it did; maps 1:1 to x-proxy-error. */
enum policy_reason {
	POLICY_R_ALLOWED = 0,	/* an allow rule matched and nothing denied */
	POLICY_R_NO_RULE = 1,	/* no rule allows it: blocked-by-allowlist */
	POLICY_R_DENY_RULE = 2, /* a deny rule matched: blocked-by-denylist */
	POLICY_R_METHOD = 3,	/* allowed host, method not listed: blocked-by-method-policy */
	POLICY_R_LOCAL = 4,	/* loopback/private/link-local/... address: blocked-by-policy */
	POLICY_R_V4_IN_V6 = 5,	/* IPv4 carried in IPv6 (NAT64, 6to4, ...): blocked-by-policy */
	POLICY_R_NO_IPV6 = 6,	/* an IPv6 address without --ipv6: blocked-by-policy */
	POLICY_R_PATH = 7,	/* allowed host, path not listed: blocked-by-path-policy */
	POLICY_R_LIMITED =
		8, /* --limited: a method that is not read-only: blocked-by-method-policy */
	/* a secret's placeholder where that secret may not go (policy/secret.h):
	 * blocked-by-secret-policy */
	POLICY_R_SECRET = 9,
	/* a rule's header hook could not be applied to the request (below,
	 * struct policy_hooks): blocked-by-header-policy */
	POLICY_R_HOOK = 10,
};

/* Why a rule's header hook refused a request (POLICY_R_HOOK). */
enum policy_hook_fail {
	POLICY_HOOK_OK = 0,
	POLICY_HOOK_NO_SECRET, /* the secret has no value, or may not go to this host */
	POLICY_HOOK_PLAIN,     /* plain HTTP: a secret goes only inside inspected TLS */
	POLICY_HOOK_MISSING,   /* the placeholder was required and the header is absent */
	POLICY_HOOK_MISMATCH,  /* ... the header holds something else */
	POLICY_HOOK_TWICE,     /* ... the header came more than once */
};

/* What kind of traffic is being judged. Host rules (`example.com`) apply to
 * HTTP and TLS whose name is known; `tcp://` and address rules to anything. */
enum policy_proto {
	POLICY_P_HTTP = 0, /* plain HTTP request (method known) */
	POLICY_P_TLS = 1,  /* CONNECT, or a tunnel/transparent stream that is TLS for host */
	POLICY_P_TCP = 2,  /* any other TCP stream (SOCKS5/transparent, not HTTP/TLS) */
};

/* Address classes that are denied unless a rule names the address. */
enum addr_class {
	ADDR_PUBLIC = 0,
	ADDR_LOOPBACK,	/* 127/8, ::1 */
	ADDR_PRIVATE,	/* 10/8, 172.16/12, 192.168/16 */
	ADDR_LINKLOCAL, /* 169.254/16 (cloud metadata), fe80::/10 */
	ADDR_CGNAT,	/* 100.64/10 */
	ADDR_ULA,	/* fc00::/7 */
	ADDR_MULTICAST, /* 224/4, ff00::/8 */
	ADDR_UNSPEC,	/* 0.0.0.0/8, ::, broadcast 255.255.255.255 */
	/* IPv6 that carries IPv4: NAT64 64:ff9b::/32 (RFC 6052, 8215), 6to4
	 * 2002::/16, Teredo 2001::/32, IPv4-compatible ::/96, SIIT
	 * ::ffff:0:0:0/96. Refused whatever the rules say: judged as IPv6
	 * it would be a way around the IPv4 rules */
	ADDR_V4_IN_V6,
};

struct policy_rule {
	unsigned int index;	   /* 1-based, in the order rules were added */
	enum policy_action action; /* allow or deny */
	char *text;		   /* the rule as written (for messages) */
	const char *source;	   /* where it came from ("--allow", a file name); not owned */
	char *comment;		   /* its policy-file entry's "comment", or NULL */
	/* parsed form; internal to policy.c but readable */
	uint32_t methods; /* bit set of POLICY_M_*; 0 = any method */
	uint16_t port;	  /* 0 = any port */
	bool tcp;	  /* tcp://host:port */
	/* path patterns (policy_path_match()); NULL and 0 = any path */
	char **paths;
	unsigned int npaths;
	bool inspect;			  /* "inspect": true (an allow host rule) */
	const struct policy_hooks *hooks; /* its header hooks (an allow host rule); NULL: none */
};

/* Header hooks of an allow host rule (docs/inspection.md "Header hooks"):
 * applied to each request the rule allows, in the copy of its head that
 * goes to the server. Headers named in strip are removed; each of set
 * replaces every header of its name with "NAME: PREFIX VALUE", the value
 * a secret's (only inside inspected TLS, only to the secret's hosts); with
 * placeholder, only when the client sent that header exactly once as
 * PREFIX and the secret's placeholder, and a request that did not is
 * refused (POLICY_R_HOOK). Names are compared without case. */
#define POLICY_HOOK_MAX	       16 /* headers a rule strips, and headers it sets */
#define POLICY_HOOK_NAME_MAX   64 /* a header name's bytes */
#define POLICY_HOOK_PREFIX_MAX 64 /* a prefix's bytes */
struct policy_hook_set {
	const char *name;   /* the header, as written */
	const char *secret; /* the secret whose value it carries */
	const char *prefix; /* before the value ("Bearer "); "" for none */
	bool placeholder;   /* "require_placeholder": true */
};
struct policy_hooks {
	const char *const *strip;
	unsigned int nstrip;
	const struct policy_hook_set *set;
	unsigned int nset;
};

/* Does an HTTPS connection that r decides get inspected: a host rule with
 * methods, paths, "inspect" or header hooks? */
static inline bool
policy_rule_inspects(const struct policy_rule *r)
{
	return !r->tcp && (r->methods || r->npaths || r->inspect || r->hooks);
}

/* Method bits for policy_rule.methods. */
#define POLICY_M_GET	 (1u << 0)
#define POLICY_M_HEAD	 (1u << 1)
#define POLICY_M_POST	 (1u << 2)
#define POLICY_M_PUT	 (1u << 3)
#define POLICY_M_DELETE	 (1u << 4)
#define POLICY_M_PATCH	 (1u << 5)
#define POLICY_M_OPTIONS (1u << 6)
#define POLICY_M_CONNECT (1u << 7)
#define POLICY_M_TRACE	 (1u << 8)
#define POLICY_M_OTHER	 (1u << 9) /* any method not named above */

struct policy_query {
	const char *host; /* name from the client (Host, SNI, CONNECT, SOCKS); NULL if none */
	const struct sockaddr
		*addr; /* destination address if known (resolved or original); NULL if none */
	uint16_t port; /* destination port (host order) */
	enum policy_proto proto;
	const char *method; /* HTTP method for POLICY_P_HTTP ("GET"...); NULL otherwise */
	/* the request's path for POLICY_P_HTTP, normalised (parse/path.h),
	 * without the query; NULL when not known (then a path rule fails) */
	const char *path;
};

struct policy_decision {
	enum policy_action action;
	enum policy_reason reason;
	const struct policy_rule
		*rule; /* the deciding rule; NULL for "no rule" and local addresses */
	/* TLS allowed only inspected (HTTPS inspection): its requests are
	 * judged one by one as POLICY_P_HTTP. Set when the deciding allow rule
	 * inspects (policy_rule_inspects()), a deny rule with methods or paths
	 * matches the name, or the policy is limited (not for tcp:// rules),
	 * or the name is a secret's host */
	bool inspect;
	const char
		*secret; /* POLICY_R_SECRET, POLICY_R_HOOK: the secret's name (never its value) */
	const char *header;		 /* POLICY_R_HOOK: the header the hook could not set */
	enum policy_hook_fail hook_fail; /* POLICY_R_HOOK: why */
};

struct policy;

/* A hook for this thread's long walks: config_load_*() call it every
 * POLICY_PACE_EVERY rules of a file, policy_free() every as many rules it
 * frees, fn(arg), until it is set to NULL. The daemon's builder and
 * retirer pause there, so that a 100,000-rule reload leaves the machine to
 * the event loop. Other threads (every thread until it sets one) run
 * without pauses. policy_pace(i) is the call (i: the walk's counter). */
#define POLICY_PACE_EVERY 64
void policy_set_pace(void (*fn)(void *), void *arg);
void policy_pace(unsigned int i);

/* An empty policy (denies everything). NULL with errno set on failure. */
struct policy *policy_new(void);
void policy_free(struct policy *p);

/* Room for about n more rules (a policy file knows how many it holds):
 * what policy_add() would grow step by step, grown once. Only a hint:
 * policy_add() grows past it. Returns 0 or -ENOMEM. */
int policy_expect(struct policy *p, size_t n);

/* Adds one rule. rule: the syntax of README.md "Policy" ("example.com", "*.x",
 * "**.x", "api?.x", "host:443", "*:443", "tcp://host:22", "203.0.113.0/24",
 * "[2001:db8::1]:443", "2001:db8::/32", ...). methods: NULL, or a
 * comma-separated list ("GET,HEAD"), case-insensitive. source: kept by
 * pointer for messages. A bare "*", an empty or malformed rule, a port
 * outside 1-65535, "tcp://" without a port, or a method list on a tcp:// or
 * address rule is -EINVAL with errbuf saying why (no rule prefix: the caller
 * adds "rules[3]: " or "--allow X: "). Returns 0 or -errno. */
/* Gives the rule policy_add() added last a comment (copied; at most
 * POLICY_COMMENT_MAX bytes, printable ASCII and UTF-8, no control
 * characters). Returns 0, -EINVAL (no rule, or a bad comment) or -ENOMEM. */
#define POLICY_COMMENT_MAX 512
int policy_set_comment(struct policy *p, const char *comment);

int policy_add(struct policy *p, enum policy_action action, const char *rule, const char *methods,
	       const char *source, char *errbuf, size_t errlen);

/* What a rule may carry besides its text (the policy file's object form). */
struct policy_rule_opts {
	const char *methods;	  /* comma-separated, as policy_add()'s; NULL: any */
	const char *const *paths; /* npaths path patterns; NULL: any path */
	size_t npaths;
	bool inspect;			  /* allow rules only: HTTPS to it is inspected */
	const struct policy_hooks *hooks; /* allow host rules only: copied; NULL: none */
};

/* policy_add() with o (NULL: none). Paths, inspect and hooks, like methods,
 * only on host rules; inspect and hooks only on allow rules (a deny rule
 * with methods or paths inspects already); at most POLICY_MAX_PATHS
 * patterns, each checked by policy_path_check(); hooks checked by
 * policy_hooks_check_def(). Returns 0 or -errno with errbuf set. */
#define POLICY_MAX_PATHS 64
int policy_add_opts(struct policy *p, enum policy_action action, const char *rule,
		    const struct policy_rule_opts *o, const char *source, char *errbuf,
		    size_t errlen);

/* A path pattern as rules take it: '/' first, then visible ASCII without
 * '?', '#', ';', '\\'; in the normal form requests are judged in (no "//",
 * no "." or ".." segment, '%' only before two upper-case hex digits of a
 * byte that is not unreserved); '*' (any run of bytes within one segment),
 * never two in a row; at most 1024 bytes. 0 or -EINVAL with errbuf set. */
int policy_path_check(const char *pattern, char *errbuf, size_t errlen);

/* Does pattern match path (normalised, without query)? It matches the
 * path it names and every path under it ("/a" matches "/a", "/a/" and
 * "/a/b", not "/ab"; "/a/" all but "/a"); '*' matches any run of bytes
 * within one segment; each segment of path is compared up to its first
 * ';' (parameters, which some servers strip before routing). */
bool policy_path_match(const char *pattern, const char *path);

/* A rule's hooks as written: at most POLICY_HOOK_MAX names each way, each
 * an HTTP token of at most POLICY_HOOK_NAME_MAX bytes, none twice, none
 * both stripped and set, none of the headers that route or frame a
 * request (Host, Content-Length, Transfer-Encoding, Connection, Upgrade,
 * Keep-Alive, TE, Trailer, Expect, Proxy-*); a set's secret a secret's
 * name (defined or not: policy_hooks_check()), its prefix visible ASCII
 * and blanks, at most POLICY_HOOK_PREFIX_MAX bytes. 0 or -EINVAL with
 * errbuf set. */
int policy_hooks_check_def(const struct policy_hooks *h, char *errbuf, size_t errlen);

/* Once every rule and secret is in p: each hook's secret is defined, and
 * every name its rule allows is one of the secret's hosts (a '?' pattern
 * cannot set one). 0 or -EINVAL with errbuf naming the rule. */
int policy_hooks_check(const struct policy *p, char *errbuf, size_t errlen);

/* Parses a comma-separated method list ("GET, head"; case-insensitive,
 * blanks around names ignored) into POLICY_M_* bits. An empty list, an empty
 * name or an unknown name is -EINVAL with errbuf saying why (the unknown
 * name and the known ones). config.c uses it to check each "methods" entry.
 * Returns 0 or -EINVAL. */
int policy_methods_parse(const char *list, uint32_t *bits, char *errbuf, size_t errlen);

/* Number of rules added. */
unsigned int policy_count(const struct policy *p);

/* The TCP ports the allow rules name, a bit each into bits (port p:
 * bits[p / 64] bit p % 64); false when some allow rule takes any port, so
 * that no port can be ruled out, or when there is no allow rule (a
 * deny-all policy: its listeners log what each attempt said). */
bool policy_allow_port_bits(const struct policy *p, uint64_t bits[1024]);

/* Does allow rule b (the administrator's ceiling, users.json's "allow")
 * allow everything allow rule a allows, whatever the query? Names by
 * containment ("a.x.test" and "*.x.test" within "**.x.test", "x.test"
 * within "**.x.test" but not "*.x.test"; a '?' of a's only where b has
 * one, or below b's suffix), ports (b without one takes any), addresses
 * by prefix (and a local range only when b names it as specifically as
 * the policy needs: 10.0.0.0/8 is not within 0.0.0.0/0), "*:PORT" takes
 * any host on PORT; a tcp:// or address rule (any protocol) only within
 * tcp:// or address rules; a name never within an address. Conservative:
 * what cannot be shown contained is not. Returns 1, 0, or -EINVAL with
 * errbuf saying which rule does not parse. */
int policy_rule_within(const char *a, const char *b, char *errbuf, size_t errlen);

/* The first allow rule of p within none of the n ceiling rules (allow
 * rules' syntax, at most POLICY_CEILING_MAX), or NULL: all are within, or
 * errbuf[0] set: a ceiling rule does not parse. */
#define POLICY_CEILING_MAX 64
const struct policy_rule *policy_outside(const struct policy *p, const char *const *ceiling, int n,
					 char *errbuf, size_t errlen);

/* Judges q. Deny wins over allow; without a matching allow rule the answer
 * is deny (POLICY_R_NO_RULE). A destination address in a class other than
 * ADDR_PUBLIC is denied (POLICY_R_LOCAL) unless an allow address rule that
 * contains it is at least as specific as that class's range (10.0.0.0/8
 * names 10.1.2.3; 0.0.0.0/0 does not). Hosts compare case-insensitively
 * (ASCII), a trailing dot ignored. Returns 0, or -EINVAL for a query with
 * neither host nor addr. */
int policy_decide(const struct policy *p, const struct policy_query *q, struct policy_decision *d);

/* --limited (or "mode": "limited"): every host an allow rule other than
 * tcp:// allows is read-only: a plain-HTTP request with a method other
 * than GET, HEAD or OPTIONS is denied (POLICY_R_LIMITED), and TLS to it is
 * allowed only inspected (d->inspect), so that its requests are judged
 * the same way. */
void policy_set_limited(struct policy *p, bool on);
bool policy_limited(const struct policy *p);

/* Does some decision of p inspect HTTPS (a limited policy, or a host rule
 * with methods, paths or inspect)? Then CMD is given the CA to trust. */
bool policy_inspects(const struct policy *p);

/* Does some rule of p have paths? Then requests are judged, and sent on,
 * with their path in its normal form (parse/path.h), and one that has
 * none is refused. */
bool policy_has_paths(const struct policy *p);

/* Whether IPv6 addresses are judged by the rules (on, the default of
 * policy_new()) or all denied (off: POLICY_R_NO_IPV6, whatever the rules:
 * what the kernel does without --ipv6, so every path says the same). */
void policy_set_ipv6(struct policy *p, bool on);

/* The upstream proxy's routes (route.c). With on, every destination goes
 * through the upstream proxy (--upstream-proxy), never direct, but for the
 * exceptions in no_proxy (NULL: none): a comma-separated list of names
 * (each with every name under it; a leading '.' means the same),
 * addresses and CIDRs (IPv6 bare or in brackets), blanks around entries
 * ignored; and but for loopback and link-local addresses and localhost,
 * always direct. Off: everything may go direct (the default of
 * policy_new()). A bad list is -EINVAL with errbuf naming the entry and
 * why; -ENOMEM; 0. */
int policy_set_upstream(struct policy *p, bool on, const char *no_proxy, char *errbuf,
			size_t errlen);

/* Checks a list as policy_set_upstream() takes it: 0 or -EINVAL (errbuf). */
int policy_noproxy_check(const char *no_proxy, char *errbuf, size_t errlen);

/* Is an upstream proxy set? */
bool policy_upstream(const struct policy *p);

/* Must a connection to host (a normalised name or an address literal;
 * NULL: none) or addr (NULL: none; its port is not looked at) go through
 * the upstream proxy? False without one, and when an exception names host
 * or contains addr (either is enough: a transparent connection's name and
 * the address it connected to). A name is never resolved to be matched
 * against the exceptions' addresses. */
bool policy_via_upstream(const struct policy *p, const char *host, const struct sockaddr *addr);

/* Does a deny rule match by address alone (an address, a CIDR, or *:port),
 * so that a connection known only by its address can be denied by name of
 * a rule? */
bool policy_denies_addresses(const struct policy *p);

/* How many of p's allow rules name IPv6 addresses (not v4-mapped: those
 * are IPv4's), and the first of them in *first (NULL when none): without
 * --ipv6 they allow nothing, IPv6 being denied whatever the rules. */
unsigned int policy_allow_v6(const struct policy *p, const struct policy_rule **first);

/* Could any allow rule match this host on some port and protocol (the DNS
 * responder answers only such names)? False when a deny host rule without a
 * port matches it. Does not look at addresses. */
bool policy_host_possible(const struct policy *p, const char *host);

/* Both in one walk: returns policy_host_possible(); *denied: does a deny
 * host rule without port or method limit match host (the reason it is
 * false, when it is not "no rule")? */
bool policy_host_judge(const struct policy *p, const char *host, bool *denied);

/* The exact IPv4 ADDR:PORT allow rules (no range, a port, no method
 * limit), and with v6 the exact [ADDR6]:PORT ones, wherever they came from
 * (command line, policy file, runtime), as addresses (sockaddr_in or
 * sockaddr_in6): the kernel fast path's candidates (deny rules are not
 * looked at: judge each with policy_decide()). Returns how many were
 * written to out (at most max). */
int policy_exact_addrs(const struct policy *p, struct sockaddr_storage *out, int max, bool v6);

/* The IPv4 network allow rules without a port (ADDR/LEN, ADDR; no method
 * or path limit) that no deny rule overlaps (an address deny rule that
 * shares an address with it, or any "*:PORT" one), as networks (network
 * order) and prefix lengths: what a target with TCP to its networks
 * direct (dockerd's) opens. Returns how many were written (at most max). */
int policy_allow_nets4(const struct policy *p, uint32_t *net, uint8_t *len, int max);

/* Does some allow tcp:// rule match host on port (for the kernel fast path)? */
bool policy_tcp_rule(const struct policy *p, const char *host, uint16_t port);

/* The ports of the allow tcp:// rules that match host (and that no deny
 * rule overrides): the DNS responder opens the kernel fast path for them.
 * Returns how many were written to ports (at most max). */
int policy_tcp_ports(const struct policy *p, const char *host, uint16_t *ports, int max);

/* The kernel-verified path's ports for host: 443 when an allow host rule
 * that does not inspect (no methods, paths or inspect) matches it there
 * (without a port, or with 443; not tcp://, not address rules); none in a
 * limited policy; other ports, and plain HTTP, keep the proxy, which
 * judges every request. Deny rules are not looked at: judge
 * each address and port with policy_decide(). Returns how many were
 * written to ports (0 or 1, at most max). */
int policy_kv_ports(const struct policy *p, const char *host, uint16_t *ports, int max);

/* The names a proxy-aware client may reach without the proxy, for
 * NO_PROXY: the allow host rules the kernel-verified path serves (as
 * policy_kv_ports: not inspecting, no port or 443, not tcp://, no '?';
 * none in a limited policy), in rule order, "x" for "x" and "**.x", ".x"
 * for "*.x". A client takes a NO_PROXY name's subdomains too: a name with
 * a deny host rule or an inspecting allow host rule at, under or above it
 * is left out (the proxy's 403 says why, or the proxy inspects it), and so
 * is one that goes through the upstream proxy (policy_via_upstream()). Appended
 * comma-separated to the string in buf (len bytes), at most max of them
 * and only whole ones. Returns how many were added (0 also when out of
 * memory). */
int policy_noproxy_names(const struct policy *p, char *buf, size_t len, int max);

/* Does an allow address rule name sa (contain it at least as specifically
 * as the special range it falls in), on any port, with no port-less deny
 * address rule against it? The DNS responder keeps such local addresses in
 * answers; all other local addresses are stripped. */
bool policy_addr_named(const struct policy *p, const struct sockaddr *sa);

/* The class of an IPv4 or IPv6 address (v4-mapped IPv6 judged as IPv4). */
enum addr_class addr_classify(const struct sockaddr *sa);

/* "blocked-by-allowlist" etc. for x-proxy-error ("blocked-by-method-policy"
 * for POLICY_R_METHOD and POLICY_R_LIMITED, "blocked-by-path-policy" for
 * POLICY_R_PATH, "blocked-by-secret-policy" for POLICY_R_SECRET,
 * "blocked-by-header-policy" for POLICY_R_HOOK); "" for
 * POLICY_R_ALLOWED. */
const char *policy_reason_header(enum policy_reason r);

/* The reason of d in words, the one wording every message uses (the
 * decision log, denial lines, `check`, a 403's body): "rule 2 \"x\"", "no
 * rule allows it", "denied by rule 3 \"y\"", "local or private address",
 * and for a method: "method POST not allowed for it" (method given) or
 * "method not allowed for this host" (NULL); "path not allowed for it by
 * rule 4 \"z\"", "method POST not allowed: read-only (limited mode)",
 * "header Authorization: its placeholder of secret T is missing (rule 2
 * \"x\")". Returns buf. */
const char *policy_reason_words(const struct policy_decision *d, const char *method, char *buf,
				size_t len);

/* Bytes from outside (a name, a key, a comm) as a string fit for a terminal
 * or a log: at most n of in, up to a NUL, as many as fit in out (outlen
 * bytes, NUL included); bytes outside printable ASCII become '?'. Returns
 * out. */
const char *policy_safe_str(const char *in, size_t n, char *out, size_t outlen);

/* A task's comm (16 bytes, the process chooses them), the same way. */
void policy_safe_comm(const char comm[16], char out[17]);

/* The shape of a name (shape.c): a label that looks like data sent out in
 * DNS names rather than a name somebody chose. */
#define POLICY_LONG_LABEL   40	 /* a label this long is marked, whatever it looks like */
#define POLICY_CODED_MIN    8	 /* from this length, letters and digits with no vowel */
#define POLICY_ENTROPY_MIN  16	 /* labels at least this long are judged for randomness */
#define POLICY_ENTROPY_BITS 3.8	 /* Shannon entropy per byte */
#define POLICY_DIGITS_MIN   0.15 /* share of digits */
#define POLICY_RUN_MIN	    7	 /* letters and digits in a row without a vowel */

/* Why a label (len bytes) looks like encoded data, or NULL. */
const char *policy_label_suspect(const char *label, size_t len);

/* The first label of a normalised name that does, its reason; or NULL. */
const char *policy_name_suspect(const char *name);

/* Normalises a hostname into out: lower-case ASCII, trailing dot removed.
 * Rejects empty names, empty labels, names over 253 bytes, labels over 63,
 * and bytes outside [a-z0-9-_.] (so no NUL, space, '/', ':', non-ASCII:
 * IDNs arrive as punycode); with pattern, '*' and '?' are accepted too.
 * Returns 0 or -EINVAL. */
int policy_host_normalize(const char *in, bool pattern, char *out, size_t outlen);

/* --policy FILE: a JSON policy (config.c):
 *   { "mode": "limited",
 *     "allow": [ "github.com", "tcp://github.com:22",
 *                { "rule": "api.example.test", "methods": ["GET", "HEAD"],
 *                  "paths": ["/v1"] },
 *                { "rule": "dl.example.test", "inspect": true } ],
 *     "deny":  [ "gist.github.com" ] }
 * ("mode" optional: "full" or "limited", policy_set_limited())
 * Unknown keys are errors. On error errbuf names the JSON path:
 * "allow[2].methods[0]: expected a string". Rules are added to p with the
 * file name as source; on error p may hold some of them: callers load into
 * a fresh policy and keep the old one on failure. Returns 0 or -errno. */
#define CONFIG_MAX_SIZE (16u << 20) /* 16 MiB: larger policy files are refused */
int config_load_file(struct policy *p, const char *path, char *errbuf, size_t errlen);
int config_load_buf(struct policy *p, const char *json, size_t len, const char *source,
		    char *errbuf, size_t errlen);

#endif /* POLICY_H */
