// SPDX-License-Identifier: Apache-2.0
/* Test tool for the pre-existing pass (kernel/existing.h): loads and attaches
 * the enforcement programs to a cgroup that already has processes, as `run`
 * does (loader_open, loader_attach; pinned), runs the pass, prints one JSON
 * line per connection found and one summary line, then detaches and exits.
 *
 *   existing_scan [--kill] [--no-pass] [--hold] [--tproxy-port N]
 *                 [--dns-port N] CGROUP_DIR
 *
 * --kill: end the connections instead of leaving them open.
 * --no-pass: attach only (the control: what happens without the pass).
 * --hold: stay attached, reading commands from stdin until it closes:
 *     scan                  another pass (with the same --kill)
 *     fast ADDR PORT        approve ADDR:PORT (TCP) for direct connects
 *     revoke [ADDR PORT]    a revoke pass: end the direct connections to
 *                           ADDR:PORT (TCP); without them, only list
 *     events                print the kernel events read so far
 *     quit                  detach and exit (as at the end of stdin)
 * Ports: 0 (the default) makes redirected connections refuse
 * (ECONNREFUSED); a port where nothing listens makes them fail too.
 *
 * Lines: {"pass":N,"proto":"tcp","peer":"203.0.113.5:7000","pid":123,...}
 * per connection, {"pass":N,"done":true,"n":...,"pass_ns":...} after each
 * pass, {"event":"denied ..."} per kernel event, {"detached":true} last. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "kernel/cgroup.h"
#include "kernel/events.h"
#include "kernel/existing.h"
#include "kernel/loader.h"
#include "lib/log.h"

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *
action_word(unsigned int a)
{
	switch (a) {
	case EGR_PRE_MARKED:
		return "marked";
	case EGR_PRE_MARKED_BEFORE:
		return "marked-before";
	case EGR_PRE_KILLED:
		return "killed";
	case EGR_PRE_FAILED:
		return "failed";
	case EGR_PRE_REVOKED:
		return "revoked";
	case EGR_PRE_DIRECT:
		return "direct";
	default:
		return "?";
	}
}

/* s as a JSON string: control characters become '?'; UTF-8 (the arrow of
 * existing_format) passes; comm is sanitised already. */
static void
json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			putchar('\\');
		putchar(ch >= 0x20 && ch != 0x7f ? ch : '?');
	}
	putchar('"');
}

static void
print_conn(int pass, const struct existing_conn *c)
{
	char local[64], peer[64], line[512];

	existing_addr(c->laddr, c->lport, local, sizeof(local));
	existing_addr(c->raddr, c->rport, peer, sizeof(peer));
	existing_format(c, line, sizeof(line));
	printf("{\"pass\":%d,\"cookie\":%llu,\"proto\":\"%s\",\"family\":%d,\"state\":\"%s\","
	       "\"local\":\"%s\",\"peer\":\"%s\",\"pid\":%d,\"comm\":",
	       pass, (unsigned long long)c->cookie, c->protocol == IPPROTO_UDP ? "udp" : "tcp",
	       c->family == AF_INET6 ? 6 : 4, existing_state_word(c->protocol, c->state), local,
	       peer, (int)c->pid);
	json_str(c->comm);
	printf(",\"in_cgroup\":%s,\"action\":\"%s\",\"err\":", c->in_cgroup ? "true" : "false",
	       action_word(c->action));
	if (c->err)
		printf("\"%s\"", strerrorname_np(-c->err) ? strerrorname_np(-c->err) : "?");
	else
		printf("null");
	printf(",\"ino\":%llu,\"cgroup\":%llu,\"netns\":%llu,\"line\":", (unsigned long long)c->ino,
	       (unsigned long long)c->cgroup_id, (unsigned long long)c->netns);
	json_str(line);
	printf("}\n");
}

static void
on_event(const struct egr_event *e, void *arg)
{
	char line[256];

	(void)arg;
	events_format(e, line, sizeof(line));
	printf("{\"event\":");
	json_str(line);
	printf(",\"reason\":%u}\n", e->reason);
}

static uint64_t open_ns; /* existing_open(): check, load, links */

static int
pass(struct existing *ex, int n, uint64_t since_ns)
{
	struct existing_conn *c;
	struct existing_stats st;
	char errbuf[256];
	size_t cnt;
	int err;

	err = existing_run(ex, &c, &cnt, &st, errbuf, sizeof(errbuf));
	if (err) {
		fprintf(stderr, "existing_scan: %s\n", errbuf);
		return err;
	}
	for (size_t i = 0; i < cnt; i++)
		print_conn(n, &c[i]);
	printf("{\"pass\":%d,\"done\":true,\"n\":%zu,\"pass_ns\":%llu,\"total_ns\":%llu,"
	       "\"visited\":%llu,\"netns\":%u,\"procs\":%u,\"failures\":%u,\"window_ns\":%llu,"
	       "\"open_ns\":%llu}\n",
	       n, cnt, (unsigned long long)st.pass_ns, (unsigned long long)st.total_ns,
	       (unsigned long long)st.visited, st.netns, st.procs, st.failures,
	       since_ns ? (unsigned long long)(now_ns() - since_ns) : 0ull,
	       (unsigned long long)open_ns);
	free(c);
	return 0;
}

/* A revoke pass over the key of ADDR:PORT (TCP), or none (a = NULL). */
static int
revoke_pass(struct existing *ex, int n, const char *a, const char *p)
{
	struct egr_fast_key k = {.proto = IPPROTO_TCP};
	struct existing_conn *c;
	struct existing_stats st;
	struct in_addr in;
	char errbuf[256];
	size_t cnt, ended = 0;
	int err;

	if (a) {
		if (inet_pton(AF_INET, a, &in) != 1)
			return -EINVAL;
		k.addr[2] = htonl(0xffff);
		k.addr[3] = in.s_addr;
		k.port = htons((uint16_t)atoi(p));
	}
	err = existing_revoke(ex, &k, a ? 1 : 0, &c, &cnt, &st, errbuf, sizeof(errbuf));
	if (err) {
		fprintf(stderr, "existing_scan: %s\n", errbuf);
		return err;
	}
	for (size_t i = 0; i < cnt; i++) {
		ended += c[i].action == EGR_PRE_REVOKED;
		if (c[i].action != EGR_PRE_DIRECT)
			print_conn(n, &c[i]);
	}
	printf("{\"pass\":%d,\"revoke\":true,\"direct\":%zu,\"ended\":%zu,\"pass_ns\":%llu,"
	       "\"total_ns\":%llu,\"visited\":%llu,\"netns\":%u,\"procs\":%u}\n",
	       n, cnt, ended, (unsigned long long)st.pass_ns, (unsigned long long)st.total_ns,
	       (unsigned long long)st.visited, st.netns, st.procs);
	free(c);
	return 0;
}

static int
fast(struct loader *ld, const char *addr, const char *port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -EINVAL;
	sin.sin_port = htons((uint16_t)atoi(port));
	return loader_fast_add(ld, (struct sockaddr *)&sin, IPPROTO_TCP, 0);
}

int
main(int argc, char **argv)
{
	struct loader_opts lo = {0};
	struct existing_opts eo = {0};
	struct existing *ex = NULL;
	struct loader *ld;
	bool kill = false, no_pass = false, hold = false;
	char errbuf[256], line[256];
	const char *cg;
	uint64_t cgid, t_attach;
	int i, cg_fd, uc, us, err, n = 0, rc = 0;

	log_init(argv[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--kill"))
			kill = true;
		else if (!strcmp(argv[i], "--no-pass"))
			no_pass = true;
		else if (!strcmp(argv[i], "--hold"))
			hold = true;
		else if (!strcmp(argv[i], "--tproxy-port") && i + 1 < argc)
			lo.tproxy_port = (uint16_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dns-port") && i + 1 < argc)
			lo.dns_port = (uint16_t)atoi(argv[++i]);
		else
			break;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: existing_scan [--kill] [--no-pass] [--hold] "
				"[--tproxy-port N] [--dns-port N] CGROUP_DIR\n");
		return 2;
	}
	cg = argv[i];
	cgid = cgroup_id_of(cg);
	cg_fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!cgid || cg_fd == -1) {
		fprintf(stderr, "existing_scan: %s: %s\n", cg, strerror(errno));
		return 1;
	}
	lo.unix_hooks = loader_unix_attach_types(&uc, &us) == 0;
	lo.sandbox_cgid = cgid;
	lo.emit_redirects = true;
	lo.on_event = on_event;
	ld = loader_open(&lo, errbuf, sizeof(errbuf));
	if (!ld) {
		fprintf(stderr, "existing_scan: %s\n", errbuf);
		return 1;
	}
	if (!no_pass) {
		/* loaded before the attach, so that the pass only has to run */
		eo.socks_fd = loader_socks_fd(ld);
		eo.sk_fd = loader_sk_fd(ld);
		eo.cgid = cgid;
		eo.cg_path = cg;
		eo.kill = kill;
		eo.revoke = hold; /* the revoke command */
		t_attach = now_ns();
		ex = existing_open(&eo, errbuf, sizeof(errbuf));
		open_ns = now_ns() - t_attach;
		if (!ex) {
			fprintf(stderr, "existing_scan: %s\n", errbuf);
			loader_free(ld);
			return 1;
		}
	}
	t_attach = now_ns();
	err = loader_attach(ld, cg_fd, cgid, errbuf, sizeof(errbuf));
	if (err) {
		fprintf(stderr, "existing_scan: %s\n", errbuf);
		rc = 1;
		goto out;
	}
	if (no_pass)
		printf("{\"pass\":0,\"attached\":true,\"pins\":\"%s\"}\n", loader_pin_dir(ld));
	else if (pass(ex, ++n, t_attach))
		rc = 1;
	while (hold && !rc && fgets(line, sizeof(line), stdin)) {
		char a[64], p[16];

		loader_events_consume(ld);
		if (!strncmp(line, "scan", 4)) {
			if (!ex || pass(ex, ++n, 0))
				rc = 1;
		} else if (sscanf(line, "fast %63s %15s", a, p) == 2) {
			err = fast(ld, a, p);
			printf("{\"fast\":\"%s\"}\n", err ? strerror(-err) : "ok");
		} else if (!strncmp(line, "revoke", 6)) {
			int k = sscanf(line, "revoke %63s %15s", a, p);

			if (!ex || revoke_pass(ex, ++n, k == 2 ? a : NULL, p))
				rc = 1;
		} else if (!strncmp(line, "events", 6)) {
			printf("{\"events\":\"read\"}\n");
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	loader_events_consume(ld);
	loader_detach(ld);
	printf("{\"detached\":true}\n");
out:
	existing_free(ex);
	loader_free(ld);
	close(cg_fd);
	return rc;
}
