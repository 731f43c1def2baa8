// SPDX-License-Identifier: Apache-2.0
/* `daemon --docker`: a job's containers on a docker network they share (a
 * compose project's services) reach each other as docker lets them, by
 * their addresses and names there.
 *
 * - Addresses: the job's egr_peer holds, for each of its containers' network
 *   namespaces, the addresses of its containers on the networks that one is
 *   on (bpf/lib/record.h peer_hit): TCP and UDP to them go direct, and
 *   their answers pass. Keyed by the namespace, where docker made the
 *   routes and a container (no NET_ADMIN: refused) changes none: there
 *   such an address is on a link of a bridge docker made for that network,
 *   whose ports are its containers' veths, so the packet reaches the
 *   container holding it and nothing else. Only networks whose bridge
 *   docker made (dockerapi_net.peers: not one named by
 *   com.docker.network.bridge.name, which may be a bridge of the host's
 *   with a LAN behind it), and never an address of this host's own (the
 *   host answers ARP for its addresses on every bridge).
 * - From this host: the job's processes here (its shell, its steps) reach
 *   its containers' addresses too, and dockerd's (its userland proxy) those
 *   of the containers that publish a port, each address only where this
 *   host routes it to its network's bridge on its link (RTM_GETROUTE): the
 *   job picks the subnet and the address, and a host route more specific
 *   than docker's would lead out. Checked again whenever this host's
 *   routes or addresses change (rtnetlink), every job's keys written anew.
 * - Names: the job's DNS responder answers a container's name, aliases (a
 *   compose service's) and DNSNames on a network the asking container is
 *   on with its address there (dns_opts.local_name), and nothing goes
 *   upstream for them.
 *
 * What the daemon knows of a container comes from dockerd when the job's
 * start (or restart) of it succeeds, when a name is asked from a
 * namespace it does not know yet (a container's first query may come
 * before dockerd answers the start), and after the job connects or
 * disconnects one, or removes or prunes networks (before any but a
 * connect goes, the job's and dockerd's keys are taken back). A container
 * whose cgroup is gone is forgotten within a tick. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <event2/event.h>

#include "daemon/core.h"
#include "daemon/peers.h"
#include "dockerapi/dockerapi.h"
#include "kernel/cgroup.h"
#include "kernel/hostaddr.h"
#include "lib/clock.h"
#include "lib/log.h"

#define PEERS_MAX  256 /* containers of all jobs known at once */
#define PEERS_MISS 16  /* namespaces recently asked about and not found */

struct peer {
	uint64_t job; /* the job's dtarget's cgid */
	uint64_t ccg; /* its cgroup's id, to see it gone or made anew */
	uint64_t netns;
	char cg[PATH_MAX];
	struct dockerapi_ctr c;
	bool said_route; /* this host routes an address of its elsewhere: said */
};

struct peers {
	uint64_t own_netns; /* the daemon's: the host's, no container's */
	int watch_fd;	    /* rtnetlink: this host's routes and addresses */
	struct event *ev_watch;
	struct peer p[PEERS_MAX];
	int n;
	struct {
		uint64_t netns, job, at_ms;
	} miss[PEERS_MISS];
	int nmiss;
	/* jobs whose keys were taken back for a network change: given back
	 * when dockerd answers, or at the next tick */
	uint64_t dirty[8];
	int ndirty;
	struct egr_peer_key keys[EGR_PEER_MAX];
	struct egr_hostaddr_key host[EGR_HOSTADDR_MAX];
};

/* This host's addresses into ps->host; how many. */
static int
host_addrs(struct peers *ps)
{
	int total, n = hostaddr_list(ps->host, EGR_HOSTADDR_MAX, &total);

	return n < 0 ? 0 : n;
}

static bool
is_host_addr(const struct peers *ps, int nhost, const __be32 *a)
{
	for (int i = 0; i < nhost; i++)
		if (!memcmp(ps->host[i].addr, a, 16))
			return true;
	return false;
}

/* key's address := where n puts the container (v4-mapped for IPv4). */
static void
net_addr(const struct dockerapi_net *n, bool v6, __be32 a[4])
{
	memset(a, 0, 16);
	if (v6) {
		memcpy(a, n->ip6, 16);
	} else {
		a[2] = htonl(0xffff);
		memcpy(&a[3], n->ip4, 4);
	}
}

/* Is nb (a container's place on a network) on a network a is on, one
 * that lets its containers reach each other straight? */
static bool
shares(const struct peer *a, const struct dockerapi_net *nb)
{
	for (int x = 0; x < a->c.nnets; x++)
		if (a->c.nets[x].peers && !strcmp(a->c.nets[x].id, nb->id))
			return true;
	return false;
}

/* Does this host route addr (a container's on network n) to n's bridge,
 * on its link? docker names a bridge it makes br-<the id's first 12>. */
static bool
routed_to_bridge(const struct dockerapi_net *n, const __be32 *addr)
{
	char br[16];
	int ifindex;
	bool onlink;
	unsigned int want;

	snprintf(br, sizeof(br), "br-%.12s", n->id);
	want = if_nametoindex(br);
	return want && !hostaddr_route(addr, &ifindex, &onlink) && onlink &&
	       (unsigned int)ifindex == want;
}

/* Keys of this host's namespace for p's addresses on its networks (those
 * docker made the bridge of; never an address of this host's), appended
 * at ps->keys[nk]: the new count. Only where this host routes the address
 * to that network's bridge, on its link: the job picks the subnet and the
 * address, and a route of the host's more specific than docker's would
 * take the connection out of the machine. One routed elsewhere is said in
 * its job's log, once. */
static int
host_keys(struct daemon *dm, struct peer *p, int nhost, int nk)
{
	struct peers *ps = dm->peers;

	for (int x = 0; x < p->c.nnets; x++) {
		const struct dockerapi_net *n = &p->c.nets[x];

		for (int v6 = 0; v6 < 2 && n->peers && nk < EGR_PEER_MAX; v6++) {
			struct egr_peer_key *k = &ps->keys[nk];

			if (!(v6 ? n->has6 : n->has4))
				continue;
			k->netns = ps->own_netns;
			net_addr(n, v6, k->addr);
			if (is_host_addr(ps, nhost, k->addr))
				continue;
			if (routed_to_bridge(n, k->addr)) {
				nk++;
				continue;
			}
			if (!p->said_route && docker_target(dm, p->job))
				dt_event(
					docker_target(dm, p->job), "docker",
					"container %.12s: this host does not route its address on "
					"network %.12s to that network's bridge: the job's "
					"processes here and dockerd's userland proxy reach it only "
					"through egressctl's proxy",
					p->c.id, n->id);
			p->said_route = true;
		}
	}
	return nk;
}

/* Were job's keys taken back for a network change dockerd has not
 * answered yet (peers_networks)? Then no sync gives them back. */
static bool
dirty(const struct peers *ps, uint64_t job)
{
	for (int i = 0; i < ps->ndirty; i++)
		if (ps->dirty[i] == job)
			return true;
	return false;
}

/* dockerd's target's egr_peer written anew: host_keys() of every job's
 * containers that publish a port, so that dockerd's userland proxy reaches
 * them on a network made after the daemon's start (not among dockerd's
 * networks). empty: taken back, before a job's network change goes to
 * dockerd (a network removed takes its route, and the address would be
 * routed elsewhere). */
static void
sync_server(struct daemon *dm, bool empty)
{
	struct peers *ps = dm->peers;
	struct dtarget *dt;
	int nk = 0, nhost, err;

	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dm->docker_cg[0] && !strcmp(dt->cgpath, dm->docker_cg))
		break;
	if (!dt || !dt->tg)
		return;
	nhost = empty ? 0 : host_addrs(ps);
	for (int i = 0; i < ps->n && !empty; i++)
		if (ps->p[i].c.nports && !dirty(ps, ps->p[i].job))
			nk = host_keys(dm, &ps->p[i], nhost, nk);
	err = target_peer_sync(dt->tg, ps->keys, nk);
	if (err)
		dt_event(dt, "docker", "the jobs' containers' addresses: %s", strerror(-err));
}

/* Job's egr_peer written anew from what is known (empty, or a dirty job:
 * taken back); not dockerd's (sync_job). */
static void
sync_job_keys(struct daemon *dm, uint64_t job, bool empty)
{
	struct peers *ps = dm->peers;
	struct dtarget *dt = docker_target(dm, job);
	bool none = empty || dirty(ps, job);
	int nk = 0, nhost, err;

	if (!dt || !dt->tg)
		return; /* the job gone: sync_server forgets its containers */
	nhost = none ? 0 : host_addrs(ps);
	for (int i = 0; i < ps->n && !none; i++) {
		const struct peer *a = &ps->p[i];

		if (a->job != job || !a->netns)
			continue;
		for (int j = 0; j < ps->n; j++)
			for (int y = 0; y < ps->p[j].c.nnets; y++) {
				const struct dockerapi_net *nb = &ps->p[j].c.nets[y];

				if (ps->p[j].job != job || !shares(a, nb))
					continue;
				for (int v6 = 0; v6 < 2; v6++) {
					struct egr_peer_key *k = &ps->keys[nk];

					if (!(v6 ? nb->has6 : nb->has4) || nk == EGR_PEER_MAX)
						continue;
					k->netns = a->netns;
					net_addr(nb, v6, k->addr);
					if (!is_host_addr(ps, nhost, k->addr))
						nk++;
				}
			}
	}
	/* the job's processes here (its shell, its steps) reach them too */
	for (int i = 0; i < ps->n && !none; i++)
		if (ps->p[i].job == job)
			nk = host_keys(dm, &ps->p[i], nhost, nk);
	err = target_peer_sync(dt->tg, ps->keys, nk);
	if (err)
		dt_event(dt, "docker", "its containers' addresses on their networks: %s",
			 strerror(-err));
}

/* Job's egr_peer and dockerd's written anew (empty: both taken back). */
static void
sync_job(struct daemon *dm, uint64_t job, bool empty)
{
	sync_job_keys(dm, job, empty);
	sync_server(dm, empty);
}

static struct peer *
find_id(struct peers *ps, const char *id)
{
	for (int i = 0; i < ps->n; i++)
		if (!strcmp(ps->p[i].c.id, id))
			return &ps->p[i];
	return NULL;
}

/* Container c of job, its cgroup cg: known from now on (again). false
 * when there is no room or no namespace to know it by. */
static bool
learn(struct daemon *dm, uint64_t job, const struct dockerapi_ctr *c, const char *cg)
{
	struct peers *ps = dm->peers;
	struct peer *p = find_id(ps, c->id);
	uint64_t netns = 0;
	int err = cgroup_netns_cookie(dm->mnt, cg, &netns);

	if (err) {
		if (err != -ESRCH && err != -ENOENT) /* else it has ended already */
			log_warnx("docker: container %.12s: its network namespace: %s", c->id,
				  strerror(-err));
		return false;
	}
	if (!p) {
		if (ps->n == PEERS_MAX) {
			log_warnx("docker: container %.12s: %d containers are known already: it "
				  "reaches the others of its job through egressctl's proxy",
				  c->id, PEERS_MAX);
			return false;
		}
		p = &ps->p[ps->n++];
	}
	p->job = job;
	p->netns = netns;
	p->ccg = cgroup_id_of(cg);
	snprintf(p->cg, sizeof(p->cg), "%s", cg);
	p->c = *c;
	p->said_route = false;
	return true;
}

void
peers_started(struct daemon *dm, uint64_t job, const struct dockerapi_ctr *c, const char *cg)
{
	if (dm->peers && learn(dm, job, c, cg))
		sync_job(dm, job, false);
}

struct refresh {
	struct daemon *dm;
	uint64_t job;
};

/* A container's cgroup below the job's: asked of dockerd when not known. */
static bool
refresh_dir(void *arg, const char *path, const char *id)
{
	struct refresh *r = arg;
	struct dockerapi_ctr c;

	if (!find_id(r->dm->peers, id) && !dockerapi_inspect(r->dm->docker, id, true, &c))
		learn(r->dm, r->job, &c, path);
	return false;
}

/* Job's containers asked of dockerd anew: with all those known, and any
 * below its cgroup not known yet. */
static void
refresh(struct daemon *dm, uint64_t job, bool all)
{
	struct peers *ps = dm->peers;
	struct dtarget *dt = docker_target(dm, job);
	struct refresh r = {.dm = dm, .job = job};
	struct dockerapi_ctr c;

	if (!dt || !dm->docker)
		return;
	for (int i = 0; i < ps->n && all; i++)
		if (ps->p[i].job == job &&
		    dockerapi_inspect(dm->docker, ps->p[i].c.id, true, &c) == 0)
			ps->p[i].c = c;
	docker_ctr_dirs(dt->cgpath, refresh_dir, &r);
	sync_job(dm, job, false);
}

void
peers_networks(struct daemon *dm, uint64_t job, bool done)
{
	struct peers *ps = dm->peers;

	if (!ps)
		return;
	if (!done) { /* dirty: no other sync (another job's, a route's) gives them back */
		if (ps->ndirty < (int)(sizeof(ps->dirty) / sizeof(ps->dirty[0]))) {
			ps->dirty[ps->ndirty++] = job;
			sync_job(dm, job, false);
		} else {
			sync_job(dm, job, true); /* dockerd's of every job's, too */
		}
		return;
	}
	for (int i = 0; i < ps->ndirty; i++)
		if (ps->dirty[i] == job)
			ps->dirty[i--] = ps->dirty[--ps->ndirty];
	refresh(dm, job, true);
}

void
peers_tick(struct daemon *dm)
{
	struct peers *ps = dm->peers;
	uint64_t changed[8];
	int nchanged = 0, k = 0;

	if (!ps)
		return;
	while (ps->ndirty)
		peers_networks(dm, ps->dirty[0], true);
	for (int i = 0; i < ps->n; i++) {
		struct peer *p = &ps->p[i];
		bool seen = false;

		if (docker_target(dm, p->job) && cgroup_id_of(p->cg) == p->ccg) {
			if (k != i)
				ps->p[k] = *p;
			k++;
			continue;
		}
		for (int j = 0; j < nchanged; j++)
			seen |= changed[j] == p->job;
		if (!seen && nchanged < (int)(sizeof(changed) / sizeof(changed[0])))
			changed[nchanged++] = p->job;
	}
	ps->n = k;
	for (int j = 0; j < nchanged; j++)
		sync_job_keys(dm, changed[j], false);
	if (nchanged)
		sync_server(dm, false);
}

/* The containers of job in network namespace netns, and their names
 * answered: how many addresses of af name has, -1 for none of theirs. */
static int
lookup(const struct peers *ps, uint64_t job, uint64_t netns, const char *name, int af,
       uint8_t (*addr)[16], int max, bool *asker)
{
	int found = -1;

	*asker = false;
	for (int i = 0; i < ps->n; i++) {
		const struct peer *a = &ps->p[i];

		if (a->job != job || a->netns != netns)
			continue;
		*asker = true;
		for (int j = 0; j < ps->n; j++)
			for (int y = 0; y < ps->p[j].c.nnets; y++) {
				const struct dockerapi_net *nb = &ps->p[j].c.nets[y];
				bool named = false;

				if (ps->p[j].job != job || !shares(a, nb))
					continue;
				for (int z = 0; z < nb->nnames && !named; z++)
					named = !strcmp(nb->names[z], name);
				if (!named)
					continue;
				if (found < 0)
					found = 0;
				if (af == AF_INET && nb->has4 && found < max)
					memcpy(addr[found++], nb->ip4, 4);
				else if (af == AF_INET6 && nb->has6 && found < max)
					memcpy(addr[found++], nb->ip6, 16);
			}
	}
	return found;
}

int
peers_local_name(void *arg, uint64_t netns, const char *name, int af, uint8_t (*addr)[16], int max)
{
	struct dtarget *dt = arg;
	struct daemon *dm = dt->dm;
	struct peers *ps = dm->peers;
	uint64_t now = now_ns() / 1000000;
	bool asker;
	int n;

	if (!ps || netns == ps->own_netns)
		return -1;
	n = lookup(ps, dt->cgid, netns, name, af, addr, max, &asker);
	if (asker)
		return n;
	/* a namespace not known: a container started, dockerd not done with
	 * the start yet; asked of dockerd once a second at most per
	 * namespace (the job's own, on the host, is never one) */
	for (int i = 0; i < ps->nmiss; i++)
		if (ps->miss[i].netns == netns && ps->miss[i].job == dt->cgid &&
		    now - ps->miss[i].at_ms < 1000)
			return -1;
	refresh(dm, dt->cgid, false);
	n = lookup(ps, dt->cgid, netns, name, af, addr, max, &asker);
	if (!asker) {
		int slot = ps->nmiss < PEERS_MISS ? ps->nmiss++ : (int)(now % PEERS_MISS);

		ps->miss[slot].netns = netns;
		ps->miss[slot].job = dt->cgid;
		ps->miss[slot].at_ms = now;
	}
	return n;
}

/* This host's routes or addresses changed: whether an address is routed
 * to its network's bridge, or is the host's, may have too. Every job's
 * keys written anew, and dockerd's once, checked again; the change took
 * effect before this runs, so a connect in between may still go by the
 * old key (the loop's latency, a few ms). */
static void
on_watch(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *dm = arg;
	struct peers *ps = dm->peers;
	uint64_t done[PEERS_MAX];
	int ndone = 0;

	(void)what;
	hostaddr_watch_drain(fd);
	for (int i = 0; i < ps->n; i++) {
		bool seen = false;

		for (int j = 0; j < ndone && !seen; j++)
			seen = done[j] == ps->p[i].job;
		if (seen)
			continue;
		done[ndone++] = ps->p[i].job;
		sync_job_keys(dm, ps->p[i].job, false);
	}
	sync_server(dm, false);
}

int
peers_open(struct daemon *dm)
{
	socklen_t len = sizeof(uint64_t);
	int fd, err = 0;

	dm->peers = calloc(1, sizeof(*dm->peers));
	if (!dm->peers)
		return -ENOMEM;
	dm->peers->watch_fd = -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &dm->peers->own_netns, &len))
		err = -errno;
	if (fd >= 0)
		close(fd);
	/* before any key: no change missed */
	if (!err)
		dm->peers->watch_fd = err = hostaddr_watch_open(true);
	if (err >= 0) {
		dm->peers->ev_watch = event_new(dm->base, dm->peers->watch_fd, EV_READ | EV_PERSIST,
						on_watch, dm);
		err = dm->peers->ev_watch && !event_add(dm->peers->ev_watch, NULL) ? 0 : -ENOMEM;
	}
	if (err)
		peers_close(dm);
	return err;
}

void
peers_close(struct daemon *dm)
{
	if (!dm->peers)
		return;
	if (dm->peers->ev_watch)
		event_free(dm->peers->ev_watch);
	if (dm->peers->watch_fd >= 0)
		close(dm->peers->watch_fd);
	free(dm->peers);
	dm->peers = NULL;
}
