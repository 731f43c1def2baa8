// SPDX-License-Identifier: Apache-2.0
/* pktsend IFACE DST PORT [broadcast]: one UDP datagram ("pktsend") to the
 * IPv4 address DST, port PORT, written as a link-layer frame on an
 * AF_PACKET socket to IFACE's default gateway (its MAC from /proc/net/arp;
 * with "broadcast", to ff:ff:ff:ff:ff:ff: on a macvlan the frame is on the
 * host's wire whoever takes it, no forwarding needed): no IP socket is
 * made, so no connect, sendmsg or egress hook of a cgroup sees it, and the
 * host forwards it as it forwards the container's routed traffic. Built
 * static by the suite that puts it in a container image (docker.sh).
 * Says "sent N" (exit 0) or "socket: ERROR" / "...: ERROR" (exit 1). */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int
fail(const char *what)
{
	printf("%s: %s\n", what, strerror(errno));
	return 1;
}

static unsigned short
csum(const void *p, size_t n)
{
	const unsigned short *w = p;
	unsigned long s = 0;

	for (; n > 1; n -= 2)
		s += *w++;
	if (n)
		s += *(const unsigned char *)w;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (unsigned short)~s;
}

/* The default gateway of ifname (network order), or 0. */
static in_addr_t
gateway(const char *ifname)
{
	char line[256], ifc[64];
	unsigned long dst, gw;
	FILE *f = fopen("/proc/net/route", "r");
	in_addr_t r = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lx %lx", ifc, &dst, &gw) == 3 && !dst && gw &&
		    !strcmp(ifc, ifname))
			r = (in_addr_t)gw;
	if (f)
		fclose(f);
	return r;
}

/* The MAC /proc/net/arp has for ip on ifname, into mac; 0 or -1. */
static int
neigh(in_addr_t ip, const char *ifname, unsigned char mac[6])
{
	char line[256], a[64], m[64], ifc[64];
	unsigned int b[6];
	FILE *f = fopen("/proc/net/arp", "r");
	int r = -1;

	while (f && r && fgets(line, sizeof(line), f)) {
		struct in_addr x;

		if (sscanf(line, "%63s %*s %*s %63s %*s %63s", a, m, ifc) != 3 ||
		    strcmp(ifc, ifname) || !inet_aton(a, &x) || x.s_addr != ip ||
		    sscanf(m, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
			continue;
		for (int i = 0; i < 6; i++)
			mac[i] = (unsigned char)b[i];
		r = 0;
	}
	if (f)
		fclose(f);
	return r;
}

int
main(int argc, char **argv)
{
	unsigned char frame[128] = {0}, mac[6];
	struct iphdr *ip = (struct iphdr *)frame;
	struct udphdr *udp = (struct udphdr *)(frame + sizeof(*ip));
	const char payload[] = "pktsend";
	struct sockaddr_ll to = {0};
	struct ifreq ifr = {0};
	struct in_addr dst;
	in_addr_t gw;
	size_t len = sizeof(*ip) + sizeof(*udp) + sizeof(payload) - 1;
	ssize_t n;
	int fd;

	if (argc < 4 || argc > 5 || !inet_aton(argv[2], &dst) ||
	    (argc == 5 && strcmp(argv[4], "broadcast"))) {
		fprintf(stderr, "usage: pktsend IFACE DST-IPV4 PORT [broadcast]\n");
		return 2;
	}
	fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
	if (fd < 0)
		return fail("socket");
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", argv[1]);
	if (ioctl(fd, SIOCGIFINDEX, &ifr))
		return fail("SIOCGIFINDEX");
	to.sll_ifindex = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFADDR, &ifr))
		return fail("SIOCGIFADDR");
	gw = gateway(argv[1]);
	if (argc == 5)
		memset(mac, 0xff, sizeof(mac));
	else if (!gw || neigh(gw, argv[1], mac)) {
		errno = ENOENT;
		return fail("the gateway's MAC (/proc/net/arp)");
	}
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons((unsigned short)len);
	ip->saddr = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr.s_addr;
	ip->daddr = dst.s_addr;
	ip->check = csum(ip, sizeof(*ip));
	udp->source = htons(40000);
	udp->dest = htons((unsigned short)atoi(argv[3]));
	udp->len = htons((unsigned short)(sizeof(*udp) + sizeof(payload) - 1));
	memcpy(frame + sizeof(*ip) + sizeof(*udp), payload, sizeof(payload) - 1);
	to.sll_family = AF_PACKET;
	to.sll_protocol = htons(ETH_P_IP);
	to.sll_halen = 6;
	memcpy(to.sll_addr, mac, 6);
	n = sendto(fd, frame, len, 0, (struct sockaddr *)&to, sizeof(to));
	if (n < 0)
		return fail("sendto");
	printf("sent %zd\n", n);
	return 0;
}
