// SPDX-License-Identifier: Apache-2.0
/* Taking over pinned programs (loader_adopt, the daemon after a restart):
 * the links an egressctl that is gone left pinned under
 * <bpffs>/egressctl/<cgroup id>/, checked one by one (attached to that
 * cgroup, the same load, the tunables want asks for), their maps reused by
 * the skeleton, nothing loaded, detached or attached again, so enforcement
 * never stops and the link ids stay. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "egress.skel.h"
#include "kernel/loader.h"
#include "kernel/loader_priv.h"
#include "kernel/unixsvc_list.h"

/* The .rodata of the program behind a pinned link: its tunables as loaded. */
static int
pinned_rodata(int link_fd, void *out, size_t size, uint32_t *prog_id)
{
	struct bpf_link_info li = {};
	struct bpf_prog_info pi = {};
	uint32_t len = sizeof(li), ids[16], n;
	int fd, err = -ENOENT;

	if (bpf_obj_get_info_by_fd(link_fd, &li, &len))
		return -errno;
	*prog_id = li.prog_id;
	fd = bpf_prog_get_fd_by_id(li.prog_id);
	if (fd < 0)
		return -errno;
	len = sizeof(pi);
	pi.nr_map_ids = 16;
	pi.map_ids = (uint64_t)(uintptr_t)ids;
	if (bpf_obj_get_info_by_fd(fd, &pi, &len)) {
		err = -errno;
		close(fd);
		return err;
	}
	close(fd);
	n = pi.nr_map_ids < 16 ? pi.nr_map_ids : 16;
	for (uint32_t i = 0; i < n && err == -ENOENT; i++) {
		struct bpf_map_info mi = {};
		uint32_t mlen = sizeof(mi), zero = 0;
		int mfd = bpf_map_get_fd_by_id(ids[i]);

		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &mlen) && mi.type == BPF_MAP_TYPE_ARRAY &&
		    strstr(mi.name, ".rodata")) {
			if (mi.value_size != size)
				err = -ESTALE; /* another build's programs */
			else
				err = bpf_map_lookup_elem(mfd, &zero, out) ? -errno : 0;
		}
		close(mfd);
	}
	return err;
}

/* The pinned link of prog, checked: attached to cgid, running the program
 * the others run with the same tunables. */
static int
adopt_link(struct loader *ld, int i, uint64_t cgid, void *rodata, size_t size, uint32_t *prog_id,
	   char *errbuf, size_t errlen)
{
	const struct bpf_prog_skeleton *ps = &ld->skel->skeleton->progs[i];
	const char *name = ps->name;
	struct bpf_link_info li = {};
	uint32_t len = sizeof(li), id = 0;
	char path[PATH_MAX];
	struct bpf_link *link;
	void *ro;
	int err;

	if (loader_pin_path(path, sizeof(path), ld->pin_dir, "link", name)) {
		snprintf(errbuf, errlen, "pin path too long");
		return -ENAMETOOLONG;
	}
	link = bpf_link__open(path);
	if (!link) {
		err = -errno;
		snprintf(errbuf, errlen, "pinned link %s: %s", path, strerror(-err));
		return err;
	}
	*ps->link = link;
	if (bpf_obj_get_info_by_fd(bpf_link__fd(link), &li, &len)) {
		err = -errno;
		snprintf(errbuf, errlen, "pinned link %s: %s", path, strerror(-err));
		return err;
	}
	if (li.type != BPF_LINK_TYPE_CGROUP || li.cgroup.cgroup_id != cgid) {
		snprintf(errbuf, errlen, "pinned link %s is not attached to cgroup %llu", path,
			 (unsigned long long)cgid);
		return -ESTALE;
	}
	ro = *prog_id ? calloc(1, size) : rodata;
	if (!ro)
		return -ENOMEM;
	err = pinned_rodata(bpf_link__fd(link), ro, size, &id);
	if (!err && *prog_id && memcmp(ro, rodata, size))
		err = -ESTALE; /* links of two different loads */
	if (ro != rodata)
		free(ro);
	if (err) {
		snprintf(errbuf, errlen, "pinned link %s: %s", path,
			 err == -ESTALE ? "programs of another build or load" : strerror(-err));
		return err;
	}
	*prog_id = id;
	return 0;
}

static int
adopt_maps(struct loader *ld, char *errbuf, size_t errlen)
{
	struct bpf_map *map;
	char path[PATH_MAX];

	bpf_object__for_each_map(map, ld->skel->obj)
	{
		const char *name = bpf_map__name(map);
		int fd, err;

		if (bpf_map__is_internal(map)) /* .rodata: read from the programs */
			continue;
		if (loader_pin_path(path, sizeof(path), ld->pin_dir, "map", name)) {
			snprintf(errbuf, errlen, "pin path too long");
			return -ENAMETOOLONG;
		}
		fd = bpf_obj_get(path);
		if (fd < 0) {
			err = -errno;
			snprintf(errbuf, errlen, "pinned map %s: %s", path, strerror(-err));
			return err;
		}
		err = bpf_map__reuse_fd(map, fd);
		close(fd);
		if (err) {
			snprintf(errbuf, errlen, "pinned map %s: %s", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* The pinned iterator of egr_kv_kill (loader_attach). Pins of an egressctl
 * before it have none: then refused kernel-verified connections end by the
 * sockops backstop's timeout, and loader_kv_kill says so. */
static int
adopt_kill_link(struct loader *ld, char *errbuf, size_t errlen)
{
	char path[PATH_MAX];
	int err;

	if (loader_pin_path(path, sizeof(path), ld->pin_dir, "link",
			    bpf_program__name(ld->skel->progs.egr_kv_kill))) {
		snprintf(errbuf, errlen, "pin path too long");
		return -ENAMETOOLONG;
	}
	ld->kill_link = bpf_link__open(path);
	if (ld->kill_link)
		return 0;
	err = -errno;
	ld->kill_link = NULL;
	if (err == -ENOENT)
		return 0;
	snprintf(errbuf, errlen, "pinned link %s: %s", path, strerror(-err));
	return err;
}

/* The tunables the pinned programs were loaded with (read into the
 * skeleton's .rodata by adopt_link) against want's. */
static int
check_tunables(struct loader *ld, const struct loader_opts *want, uint64_t cgid, char *errbuf,
	       size_t errlen)
{
	if (ld->skel->rodata->sandbox_cgid != cgid ||
	    ld->skel->rodata->audit_mode != want->audit_mode ||
	    ld->skel->rodata->emit_redirects != want->emit_redirects ||
	    ld->skel->rodata->ns_ip4 != want->ns_ip4 || ld->skel->rodata->ipv6_on != want->ipv6 ||
	    ld->skel->rodata->local_udp_any != want->local_udp_any ||
	    ld->skel->rodata->fast_nets != want->fast_nets ||
	    ld->skel->rodata->peers_on != want->peers ||
	    ld->skel->rodata->host_netns != loader_own_netns(errbuf, errlen) ||
	    ld->skel->rodata->unix_root_len !=
		    (want->unix_svc ? (uint32_t)want->unix_svc->root_len : 0)) {
		/* (another network namespace: the listeners would be elsewhere) */
		snprintf(errbuf, errlen, "the pinned programs were loaded with other options");
		return -ESTALE;
	}
	return 0;
}

/* Every cgroup program's pinned link (the table's), their tunables into
 * the skeleton's .rodata, then the maps and the iterator. */
static int
adopt_pins(struct loader *ld, const struct loader_opts *want, uint64_t cgid, char *errbuf,
	   size_t errlen)
{
	uint32_t prog_id = 0;
	size_t size;
	int err;

	/* the section's size, which the map's value has: the skeleton's
	 * struct may have padding after its last field beyond it */
	size = bpf_map__value_size(ld->skel->maps.rodata);
	if (size > sizeof(*ld->skel->rodata)) {
		snprintf(errbuf, errlen, "the BPF object's .rodata is larger than its skeleton");
		return -ESTALE;
	}
	for (int i = 0; i < ld->skel->skeleton->prog_cnt; i++) {
		struct bpf_program *prog = *ld->skel->skeleton->progs[i].prog;

		if (!bpf_program__autoload(prog) || loader_prog_how(prog) == LA_ITER)
			continue;
		err = adopt_link(ld, i, cgid, (void *)ld->skel->rodata, size, &prog_id, errbuf,
				 errlen);
		if (err)
			return err;
	}
	err = check_tunables(ld, want, cgid, errbuf, errlen);
	if (!err)
		err = adopt_maps(ld, errbuf, errlen);
	if (!err)
		err = adopt_kill_link(ld, errbuf, errlen);
	return err;
}

struct loader *
loader_adopt(const struct loader_opts *want, uint64_t cgid, struct loader_opts *pinned,
	     char *errbuf, size_t errlen)
{
	struct loader *ld;
	struct stat st;
	int err;

	ld = loader_new(want, errbuf, errlen);
	if (!ld)
		return NULL;
	err = loader_set_pin_dir(ld, cgid, errbuf, errlen);
	if (err)
		goto out_destroy;
	if (stat(ld->pin_dir, &st)) {
		err = -errno;
		snprintf(errbuf, errlen, "no pins for cgroup %llu", (unsigned long long)cgid);
		goto out_destroy;
	}
	err = adopt_pins(ld, want, cgid, errbuf, errlen);
	if (err)
		goto out_destroy;
	/* the unix lists may have changed with the configuration */
	err = loader_unix_set(ld, want->unix_svc);
	if (err) {
		snprintf(errbuf, errlen, "cannot fill the unix socket maps: %s", strerror(-err));
		goto out_destroy;
	}
	err = loader_open_ring(ld, errbuf, errlen);
	if (err)
		goto out_destroy;
	*pinned = *want;
	pinned->tproxy_port = ld->skel->rodata->tproxy_port;
	pinned->dns_port = ld->skel->rodata->dns_port;
	memcpy(pinned->proxy_ports, (const void *)ld->skel->rodata->proxy_ports,
	       sizeof(pinned->proxy_ports));
	pinned->sandbox_cgid = cgid;
	ld->attached = true;
	return ld;

out_destroy:
	bpf_link__destroy(ld->kill_link);
	egress_bpf__destroy(ld->skel); /* opened links only close: pins stay */
	free(ld);
	errno = -err;
	return NULL;
}
