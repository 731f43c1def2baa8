// SPDX-License-Identifier: Apache-2.0
/* Test stand-in for the transparent proxy: listens on 127.0.0.1:PORT and, for
 * every accepted connection, looks its peer up in PINDIR/map_conns (the
 * index the sockops program fills) and answers one line:
 *   ORIG <ip>:<port> pid=<tgid> comm=<comm> reason=<transparent|dns|proxy>
 * or "ORIG none", to the client and to stdout, then closes.
 * usage: tlisten PINDIR PORT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <bpf/bpf.h>

#include "egress_abi.h"
#include "kernel/loader.h"

static const char *
reason_word(unsigned int r)
{
	switch (r) {
	case EGR_R_TRANSPARENT:
		return "transparent";
	case EGR_R_DNS:
		return "dns";
	case EGR_R_PROXY:
		return "proxy";
	default:
		return "other";
	}
}

static void
describe(const char *pindir, const struct sockaddr_in *peer, char *line, size_t len)
{
	struct egr_conn_val v;
	char path[4096], ip[INET6_ADDRSTRLEN], comm[17];
	int fd, err;

	snprintf(path, sizeof(path), "%s/map_conns", pindir);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		snprintf(line, len, "ORIG none (no map: %s)\n", strerror(errno));
		return;
	}
	err = loader_conn_lookup(fd, (const struct sockaddr *)peer, IPPROTO_TCP, &v);
	close(fd);
	if (err) {
		snprintf(line, len, "ORIG none\n");
		return;
	}
	if (v.addr[0] == 0 && v.addr[1] == 0 && v.addr[2] == htonl(0xffff))
		inet_ntop(AF_INET, &v.addr[3], ip, sizeof(ip));
	else
		inet_ntop(AF_INET6, v.addr, ip, sizeof(ip));
	memcpy(comm, v.comm, 16);
	comm[16] = 0;
	snprintf(line, len, "ORIG %s:%u pid=%u comm=%s reason=%s\n", ip, ntohs(v.port), v.tgid,
		 comm, reason_word(v.reason));
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	int lfd, one = 1;
	long port;

	if (argc != 3 || (port = strtol(argv[2], NULL, 10)) < 1 || port > 65535) {
		fprintf(stderr, "usage: tlisten PINDIR PORT\n");
		return 2;
	}
	sin.sin_port = htons((unsigned short)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 128)) {
		perror("tlisten");
		return 1;
	}
	printf("READY\n");
	fflush(stdout);
	for (;;) {
		struct sockaddr_in peer;
		socklen_t plen = sizeof(peer);
		char line[256];
		int c;

		c = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR)
				continue;
			perror("accept");
			return 1;
		}
		describe(argv[1], &peer, line, sizeof(line));
		if (write(c, line, strlen(line)) < 0)
			perror("write");
		fputs(line, stdout);
		fflush(stdout);
		/* let the client's bytes in before closing: closing with unread
		 * data sends a RST, which races the client's getpeername() */
		shutdown(c, SHUT_WR);
		for (;;) {
			struct pollfd pfd = {.fd = c, .events = POLLIN};
			char sink[4096];

			if (poll(&pfd, 1, 500) <= 0 || read(c, sink, sizeof(sink)) <= 0)
				break;
		}
		close(c);
	}
}
