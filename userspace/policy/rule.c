// SPDX-License-Identifier: Apache-2.0
/* One rule's text parsed (README.md "Policy"): a host name or pattern
 * checked and normalised, an address or CIDR, a port, tcp://, a method
 * list, path patterns and inspect; the words of every refusal. The same host check normalises the
 * names queries carry (match.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/engine.h"
#include "policy/policy.h"

static const char *const method_names[] = {
	"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE",
};

int __attribute__((format(printf, 3, 4)))
rule_fail(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *
show_byte(unsigned char c, char *buf, size_t len)
{
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, len, "'%c'", c);
	else
		snprintf(buf, len, "byte 0x%02x", c);
	return buf;
}

/* How rule_host_check() treats each byte. */
enum hbyte {
	HB_BAD = 0,
	HB_OK = 1,	/* a-z 0-9 - _ */
	HB_UPPER = 2,	/* A-Z, lowered */
	HB_DOT = 3,	/* label separator */
	HB_PATTERN = 4, /* '*' and '?', in rules only */
};

static const uint8_t hbyte[256] = {
	['a' ... 'z'] = HB_OK,	  ['0' ... '9'] = HB_OK, ['-'] = HB_OK,	     ['_'] = HB_OK,
	['A' ... 'Z'] = HB_UPPER, ['.'] = HB_DOT,	 ['*'] = HB_PATTERN, ['?'] = HB_PATTERN,
};

/* policy_host_normalize() with a reason. in need not be NUL-terminated. */
int
rule_host_check(const char *in, size_t len, bool pattern, char *out, size_t outlen, char *errbuf,
		size_t errlen)
{
	size_t i, label = 0;
	char b[16];

	if (len && in[len - 1] == '.')
		len--;
	if (!len)
		return rule_fail(errbuf, errlen, "empty host name");
	if (len > HOST_MAX)
		return rule_fail(errbuf, errlen, "host name longer than %d bytes", HOST_MAX);
	if (len >= outlen)
		return rule_fail(errbuf, errlen, "host name too long");
	for (i = 0; i < len; i++) {
		unsigned char c = in[i];

		switch (hbyte[c]) {
		case HB_UPPER:
			c += 'a' - 'A';
			break;
		case HB_DOT:
			if (!label)
				return rule_fail(errbuf, errlen, "empty label in host name");
			label = 0;
			out[i] = c;
			continue;
		case HB_PATTERN:
			if (pattern)
				break;
			/* fall through */
		case HB_BAD:
			return rule_fail(errbuf, errlen, "invalid %s in host name",
					 show_byte(c, b, sizeof(b)));
		}
		if (++label > LABEL_MAX)
			return rule_fail(errbuf, errlen, "label longer than %d bytes in host name",
					 LABEL_MAX);
		out[i] = c;
	}
	if (!label)
		return rule_fail(errbuf, errlen, "empty label in host name");
	out[len] = '\0';
	return 0;
}

int
policy_host_normalize(const char *in, bool pattern, char *out, size_t outlen)
{
	if (!in || !out)
		return -EINVAL;
	return rule_host_check(in, strlen(in), pattern, out, outlen, NULL, 0);
}

int
policy_methods_parse(const char *list, uint32_t *bits, char *errbuf, size_t errlen)
{
	const char *s = list, *e;
	uint32_t set = 0;
	size_t n, i;

	if (!list || !bits)
		return rule_fail(errbuf, errlen, "no method list");
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strcspn(s, ",");
		n = e - s;
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (!n)
			return rule_fail(errbuf, errlen,
					 *list ? "empty method name" : "empty method list");
		for (i = 0; i < sizeof(method_names) / sizeof(method_names[0]); i++) {
			if (strlen(method_names[i]) == n && !strncasecmp(s, method_names[i], n))
				break;
		}
		if (i == sizeof(method_names) / sizeof(method_names[0]))
			return rule_fail(
				errbuf, errlen,
				"unknown method '%.*s' (known: GET, HEAD, POST, PUT, DELETE, "
				"PATCH, OPTIONS, CONNECT, TRACE)",
				(int)(n > 32 ? 32 : n), s);
		set |= 1u << i;
		if (!*e)
			break;
		s = e + 1;
	}
	*bits = set;
	return 0;
}

/* The bit of an HTTP method as sent; methods are case-sensitive (RFC 9110). */
uint32_t
rule_method_bit(const char *m)
{
	size_t i;

	for (i = 0; i < sizeof(method_names) / sizeof(method_names[0]); i++) {
		if (!strcmp(m, method_names[i]))
			return 1u << i;
	}
	return POLICY_M_OTHER;
}

static int
parse_port(const char *s, size_t n, uint16_t *port, char *errbuf, size_t errlen)
{
	unsigned long v = 0;
	size_t i;

	for (i = 0; i < n && i < 6; i++) {
		if (s[i] < '0' || s[i] > '9')
			break;
		v = v * 10 + (s[i] - '0');
	}
	if (!n || i != n || !v || v > 65535)
		return rule_fail(errbuf, errlen, "expected 1-65535 for the port");
	*port = v;
	return 0;
}

/* out = the first plen bits of in (n bytes), the rest zero. */
void
rule_mask_addr(const uint8_t *in, unsigned int plen, uint8_t *out, size_t n)
{
	size_t full = plen / 8;

	memcpy(out, in, full);
	if (full < n) {
		out[full] = in[full] & (0xff00 >> (plen % 8));
		memset(out + full + 1, 0, n - full - 1);
	}
}

bool
rule_is_v4_mapped(const uint8_t *b)
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(b, pfx, sizeof(pfx));
}

/* "203.0.113.0/24", "2001:db8::1", ...: s[0..n) with an optional
 * "/len" in s or in plen_s[0..plen_n) (the "[v6]/len" form). */
static int
parse_addr(struct rule *r, const char *s, size_t n, const char *plen_s, size_t plen_n, char *errbuf,
	   size_t errlen)
{
	char text[INET6_ADDRSTRLEN + 8], net[INET6_ADDRSTRLEN];
	const char *slash = memchr(s, '/', n);
	unsigned int max, plen, i;
	uint8_t m[16];

	if (slash) {
		if (plen_s)
			return rule_fail(errbuf, errlen, "two prefix lengths");
		plen_s = slash + 1;
		plen_n = s + n - plen_s;
		n = slash - s;
	}
	if (n >= sizeof(text))
		return rule_fail(errbuf, errlen, "invalid address");
	memcpy(text, s, n);
	text[n] = '\0';
	if (inet_pton(AF_INET, text, r->addr) == 1) {
		r->family = 4;
	} else if (inet_pton(AF_INET6, text, r->addr) == 1) {
		r->family = 6;
	} else {
		return rule_fail(errbuf, errlen,
				 memchr(s, ':', n) ? "invalid IPv6 address"
						   : "invalid IPv4 address");
	}
	max = r->family == 4 ? 32 : 128;
	plen = max;
	if (plen_s) {
		for (i = 0, plen = 0; i < plen_n && i < 4 && plen_s[i] >= '0' && plen_s[i] <= '9';
		     i++)
			plen = plen * 10 + (plen_s[i] - '0');
		if (!plen_n || i != plen_n || plen > max)
			return rule_fail(errbuf, errlen, "expected 0-%u for the prefix length",
					 max);
	}
	rule_mask_addr(r->addr, plen, m, max / 8);
	if (memcmp(m, r->addr, max / 8)) {
		inet_ntop(r->family == 4 ? AF_INET : AF_INET6, m, net, sizeof(net));
		return rule_fail(errbuf, errlen,
				 "host bits set in the address (the network is %s/%u)", net, plen);
	}
	r->plen = plen;
	if (r->family == 6 && plen >= 96 && rule_is_v4_mapped(r->addr)) {
		memmove(r->addr, r->addr + 12, 4);
		memset(r->addr + 4, 0, 12);
		r->family = 4;
		r->plen = plen - 96;
	}
	r->kind = RK_ADDR;
	return 0;
}

/* Is the last label of a normalised name numeric ("1", "0x7f")? Such names
 * are addresses to getaddrinfo() ("127.1", "2130706433"), never host names. */
bool
rule_numeric_tld(const char *name, size_t n)
{
	const char *last = name + n;
	size_t i = 0, len;

	while (last > name && last[-1] != '.')
		last--;
	len = name + n - last;
	if (len > 2 && last[0] == '0' && last[1] == 'x')
		i = 2;
	for (; i < len; i++) {
		if (!(last[i] >= '0' && last[i] <= '9') &&
		    !(i > 1 && last[1] == 'x' && last[i] >= 'a' && last[i] <= 'f'))
			return false;
	}
	return true;
}

/* A host name or pattern; name receives the normalised form, star removed. */
static int
parse_host(struct rule *r, const char *s, size_t n, char *name, char *errbuf, size_t errlen)
{
	int err;

	err = rule_host_check(s, n, true, name, HOST_MAX + 1, errbuf, errlen);
	if (err)
		return err;
	if (!strncmp(name, "**.", 3))
		r->star = 2;
	else if (!strncmp(name, "*.", 2))
		r->star = 1;
	if (r->star)
		memmove(name, name + r->star + 1, strlen(name) - r->star);
	if (strchr(name, '*'))
		return rule_fail(errbuf, errlen,
				 "'*' must be a whole leading label ('*.example.com')");
	if (rule_numeric_tld(name, strlen(name)))
		return rule_fail(errbuf, errlen,
				 "not a host name (numeric last label) nor an address");
	r->kind = strchr(name, '?') ? RK_QMARK : r->star ? RK_WILD : RK_EXACT;
	return 0;
}

/* Fills r (text and name not yet copied; name goes to the caller's buffer). */
int
rule_parse(struct rule *r, const char *rule, const char *methods, char *name, char *errbuf,
	   size_t errlen)
{
	const char *s = rule, *host, *port = NULL, *plen = NULL, *close, *colon, *sep;
	size_t hn, pn = 0, plen_n = 0, len = strlen(rule);
	bool bracket = false;
	int err;

	name[0] = '\0';
	if (!len)
		return rule_fail(errbuf, errlen, "empty rule");
	if (len > RULE_MAX)
		return rule_fail(errbuf, errlen, "rule longer than %d bytes", RULE_MAX);
	if (!strncasecmp(s, "tcp://", 6)) {
		r->pub.tcp = true;
		s += 6;
	} else if ((sep = strstr(s, "://"))) {
		return rule_fail(errbuf, errlen,
				 "unknown scheme '%.*s://' (only tcp:// is supported)",
				 (int)(sep - s > 16 ? 16 : sep - s), s);
	}
	host = s;
	hn = strlen(s);
	if (*s == '[') {
		close = strchr(s, ']');
		if (!close)
			return rule_fail(errbuf, errlen, "missing ']' after an IPv6 address");
		bracket = true;
		host = s + 1;
		hn = close - host;
		s = close + 1;
		if (*s == '/') {
			plen = s + 1;
			plen_n = strcspn(plen, ":");
			s = plen + plen_n;
		}
		if (*s == ':') {
			port = s + 1;
			pn = strlen(port);
		} else if (*s) {
			return rule_fail(errbuf, errlen, "unexpected text after ']'");
		}
	} else if ((colon = strchr(s, ':')) && !strchr(colon + 1, ':')) {
		hn = colon - s;
		port = colon + 1;
		pn = strlen(port);
	}
	if (port) {
		err = parse_port(port, pn, &r->pub.port, errbuf, errlen);
		if (err)
			return err;
	}
	if (bracket) {
		err = parse_addr(r, host, hn, plen, plen_n, errbuf, errlen);
		if (err && !memchr(host, ':', hn) && !memchr(host, '/', hn))
			return rule_fail(errbuf, errlen, "brackets are only for IPv6 addresses");
	} else if (memchr(host, ':', hn)) {
		err = parse_addr(r, host, hn, NULL, 0, errbuf, errlen);
		if (err && !memchr(host, '/', hn))
			rule_fail(errbuf, errlen,
				  "invalid IPv6 address (with a port: [2001:db8::1]:443)");
	} else if (memchr(host, '/', hn)) {
		err = parse_addr(r, host, hn, NULL, 0, errbuf, errlen);
		if (err && r->family == 0)
			rule_fail(errbuf, errlen,
				  "'/' may only follow an address ('203.0.113.0/24')");
	} else if (hn == 1 && *host == '*') {
		if (!r->pub.port)
			return rule_fail(
				errbuf, errlen,
				"a bare '*' would match every host; use '*:PORT' for any host "
				"on one port");
		r->kind = RK_ANY;
		err = 0;
	} else {
		err = parse_addr(r, host, hn, NULL, 0, NULL, 0);
		if (err)
			err = parse_host(r, host, hn, name, errbuf, errlen);
	}
	if (err)
		return err;
	if (r->pub.tcp && !r->pub.port)
		return rule_fail(errbuf, errlen, "tcp:// rules need a port (tcp://HOST:PORT)");
	if (methods) {
		if (r->pub.tcp)
			return rule_fail(errbuf, errlen,
					 "methods apply only to host rules, not tcp://");
		if (r->kind == RK_ADDR)
			return rule_fail(errbuf, errlen,
					 "methods apply only to host rules, not addresses");
		err = policy_methods_parse(methods, &r->pub.methods, errbuf, errlen);
		if (err)
			return err;
	}
	return 0;
}

/* '%' followed by two upper-case hex digits of a byte that is not
 * unreserved: the only escapes a normalised path keeps. */
static bool
path_escape_ok(const char *s)
{
	int v = 0;

	for (int k = 1; k <= 2; k++) {
		char c = s[k];

		if (c >= '0' && c <= '9')
			v = v * 16 + (c - '0');
		else if (c >= 'A' && c <= 'F')
			v = v * 16 + (c - 'A' + 10);
		else
			return false;
	}
	return v && !((v >= 'A' && v <= 'Z') || (v >= 'a' && v <= 'z') || (v >= '0' && v <= '9') ||
		      v == '-' || v == '.' || v == '_' || v == '~' || v == '\\');
}

int
policy_path_check(const char *pat, char *errbuf, size_t errlen)
{
	size_t n = pat ? strlen(pat) : 0, seg = 1;
	char b[16];

	if (!n || pat[0] != '/')
		return rule_fail(errbuf, errlen, "a path starts with '/'");
	if (n > RULE_MAX)
		return rule_fail(errbuf, errlen, "path longer than %d bytes", RULE_MAX);
	for (size_t i = 1; i <= n; i++) {
		unsigned char c = (unsigned char)pat[i];

		if (c == '/' || !c) {
			if (i - seg == 0 && c == '/')
				return rule_fail(errbuf, errlen,
						 "empty segment ('//') in the path");
			if ((i - seg == 1 && pat[seg] == '.') ||
			    (i - seg == 2 && pat[seg] == '.' && pat[seg + 1] == '.'))
				return rule_fail(errbuf, errlen,
						 "'.' or '..' segment in the path (requests are "
						 "judged with them resolved)");
			seg = i + 1;
			continue;
		}
		if (c < 0x21 || c > 0x7e || strchr("?#;\\", c))
			return rule_fail(errbuf, errlen, "invalid %s in the path",
					 show_byte(c, b, sizeof(b)));
		if (c == '*' && pat[i + 1] == '*')
			return rule_fail(errbuf, errlen,
					 "'**' in the path ('*' matches within one segment)");
		if (c == '%' && (i + 2 >= n || !path_escape_ok(pat + i)))
			return rule_fail(errbuf, errlen,
					 "'%%' in the path must start an upper-case escape of a "
					 "reserved byte (%%20, %%2F...; requests are judged with "
					 "unreserved ones decoded)");
	}
	return 0;
}

int
rule_opts_check(const struct rule *r, enum policy_action action, const struct policy_rule_opts *o,
		char *errbuf, size_t errlen)
{
	char msg[256];
	int err;

	if (!o || (!o->npaths && !o->inspect && !o->hooks))
		return 0;
	if (r->pub.tcp || r->kind == RK_ADDR)
		return rule_fail(errbuf, errlen, "%s only to host rules, not %s",
				 o->npaths    ? "paths apply"
				 : o->inspect ? "inspect applies"
					      : "header hooks apply",
				 r->pub.tcp ? "tcp://" : "addresses");
	if (o->inspect && action != POLICY_ALLOW)
		return rule_fail(errbuf, errlen,
				 "inspect applies to allow rules (a deny rule with methods or "
				 "paths inspects already)");
	if (o->hooks && action != POLICY_ALLOW)
		return rule_fail(errbuf, errlen,
				 "header hooks apply to allow rules (what a deny rule matches "
				 "goes nowhere)");
	if (o->hooks) {
		err = policy_hooks_check_def(o->hooks, errbuf, errlen);
		if (err)
			return err;
	}
	if (o->npaths > POLICY_MAX_PATHS)
		return rule_fail(errbuf, errlen, "at most %d paths", POLICY_MAX_PATHS);
	for (size_t i = 0; i < o->npaths; i++) {
		err = policy_path_check(o->paths[i], msg, sizeof(msg));
		if (err)
			return rule_fail(errbuf, errlen, "path %zu: %s", i + 1, msg);
	}
	return 0;
}
