// SPDX-License-Identifier: Apache-2.0
/* The hold on a selector's root (kernel/hold.h, bpf/hold.bpf.c): loaded,
 * seeded, attached and pinned, or taken over from its pins; the cgroups it
 * lets go, in its map and here with their paths. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "egress_abi.h"
#include "hold.skel.h"
#include "kernel/cgroup.h"
#include "kernel/hold.h"
#include "kernel/loader.h"

struct hold_entry {
	uint64_t cgid;
	char path[]; /* where it was passed */
};

struct hold {
	char root[PATH_MAX];
	char dir[PATH_MAX]; /* its pins */
	uint64_t root_id;
	int map_fd, bss_fd;
	void *passed; /* tsearch tree of struct hold_entry, by cgid */
	struct hold_entry *gone[64];
	int ngone;
};

static int
cmp_entry(const void *a, const void *b)
{
	uint64_t x = ((const struct hold_entry *)a)->cgid, y = ((const struct hold_entry *)b)->cgid;

	return x < y ? -1 : x > y;
}

static int
pin_dir_of(uint64_t cgid, char *out, size_t len)
{
	char root[PATH_MAX];
	int err = loader_pin_root(root, sizeof(root));

	if (err)
		return err;
	if ((size_t)snprintf(out, len, "%s/%s%llu", root, EGR_HOLD_PIN_PREFIX,
			     (unsigned long long)cgid) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static int
pin_path(char *out, size_t len, const char *dir, const char *name)
{
	return (size_t)snprintf(out, len, "%s/%s", dir, name) >= len ? -ENAMETOOLONG : 0;
}

/* Every cgroup at and below path, as it stands: EGR_HOLD_SELF. */
static int
seed(struct hold *h, const char *path, int depth)
{
	struct dirent *e;
	DIR *d;
	int err;

	err = hold_pass(h, path, cgroup_id_of(path), EGR_HOLD_SELF);
	if (err || depth >= EGR_HOLD_DEPTH)
		return err == -ENOENT ? 0 : err; /* removed meanwhile */
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (!err && (e = readdir(d))) {
		char sub[PATH_MAX];

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= sizeof(sub))
			continue;
		err = seed(h, sub, depth + 1);
	}
	closedir(d);
	return err;
}

/* The pins of an earlier daemon: all there, or none taken. */
static int
take_over(struct hold *h)
{
	static const char *const links[] = {"link_connect4", "link_connect6", "link_sendmsg4",
					    "link_sendmsg6", "link_skb"};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		int fd;

		if (pin_path(path, sizeof(path), h->dir, links[i]))
			return -ENAMETOOLONG;
		fd = bpf_obj_get(path);
		if (fd < 0)
			return -errno;
		close(fd); /* pinned: still attached */
	}
	if (pin_path(path, sizeof(path), h->dir, "map_pass"))
		return -ENAMETOOLONG;
	h->map_fd = bpf_obj_get(path);
	if (h->map_fd < 0)
		return -errno;
	if (pin_path(path, sizeof(path), h->dir, "map_bss"))
		return -ENAMETOOLONG;
	h->bss_fd = bpf_obj_get(path);
	return h->bss_fd < 0 ? -errno : 0;
}

static int
attach_new(struct hold *h, char *errbuf, size_t errlen)
{
	static const char *const names[] = {"connect4", "connect6", "sendmsg4", "sendmsg6", "skb"};
	struct hold_bpf *skel = hold_bpf__open_and_load();
	struct bpf_program *progs[5];
	char path[PATH_MAX];
	int err, cg_fd = -1;

	if (!skel) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot load the hold's programs: %s", strerror(-err));
		return err;
	}
	progs[0] = skel->progs.egr_hold_connect4;
	progs[1] = skel->progs.egr_hold_connect6;
	progs[2] = skel->progs.egr_hold_sendmsg4;
	progs[3] = skel->progs.egr_hold_sendmsg6;
	progs[4] = skel->progs.egr_hold_skb;
	h->map_fd = dup(bpf_map__fd(skel->maps.egr_hold_pass));
	h->bss_fd = dup(bpf_map__fd(skel->maps.bss));
	err = h->map_fd < 0 || h->bss_fd < 0 ? -errno : 0;
	if (!err)
		err = seed(h, h->root, 0);
	if (err) {
		snprintf(errbuf, errlen, "cannot pass the cgroups below %s: %s", h->root,
			 strerror(-err));
		goto out;
	}
	if (mkdir(h->dir, 0700) && errno != EEXIST) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot make %s: %s", h->dir, strerror(-err));
		goto out;
	}
	/* the maps first: a directory with its links has its map */
	if ((err = pin_path(path, sizeof(path), h->dir, "map_pass")) ||
	    (err = bpf_map__pin(skel->maps.egr_hold_pass, path)) ||
	    (err = pin_path(path, sizeof(path), h->dir, "map_bss")) ||
	    (err = bpf_map__pin(skel->maps.bss, path))) {
		snprintf(errbuf, errlen, "cannot pin the hold's maps in %s: %s", h->dir,
			 strerror(-err));
		goto out;
	}
	cg_fd = open(h->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg_fd < 0) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot open %s: %s", h->root, strerror(-err));
		goto out;
	}
	for (int i = 0; i < 5; i++) {
		struct bpf_link *l = bpf_program__attach_cgroup(progs[i], cg_fd);

		err = l ? 0 : -errno;
		if (!err) {
			char name[32];

			snprintf(name, sizeof(name), "link_%s", names[i]);
			err = pin_path(path, sizeof(path), h->dir, name);
			if (!err)
				err = bpf_link__pin(l, path);
			bpf_link__destroy(l); /* the pin holds it */
		}
		if (err) {
			snprintf(errbuf, errlen, "cannot attach the hold's %s to %s: %s", names[i],
				 h->root, strerror(-err));
			goto out;
		}
	}
out:
	if (cg_fd >= 0)
		close(cg_fd);
	if (err)
		loader_remove_pin_dir(h->dir); /* and the links with it */
	hold_bpf__destroy(skel);
	return err;
}

struct hold *
hold_open(const char *root, bool *fresh, char *errbuf, size_t errlen)
{
	struct hold *h = calloc(1, sizeof(*h));
	int err;

	if (!h) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	h->map_fd = h->bss_fd = -1;
	snprintf(h->root, sizeof(h->root), "%s", root);
	h->root_id = cgroup_id_of(root);
	if (!h->root_id) {
		snprintf(errbuf, errlen, "%s: %s", root, strerror(errno));
		goto fail;
	}
	err = pin_dir_of(h->root_id, h->dir, sizeof(h->dir));
	if (err) {
		snprintf(errbuf, errlen, "cannot set up bpffs pins: %s", strerror(-err));
		goto fail;
	}
	*fresh = false;
	if (!take_over(h))
		return h;
	if (h->map_fd >= 0)
		close(h->map_fd);
	h->map_fd = -1;
	loader_remove_pin_dir(h->dir); /* incomplete: made again */
	*fresh = true;
	if (!attach_new(h, errbuf, errlen))
		return h;
fail:
	hold_close(h);
	return NULL;
}

int
hold_pass(struct hold *h, const char *path, uint64_t cgid, uint32_t flags)
{
	size_t n = strlen(path) + 1;
	struct hold_entry *e, **found;

	if (!cgid)
		return -ENOENT;
	if (bpf_map_update_elem(h->map_fd, &cgid, &flags, BPF_ANY))
		return -errno;
	e = malloc(sizeof(*e) + n);
	if (!e)
		return -ENOMEM;
	e->cgid = cgid;
	memcpy(e->path, path, n);
	found = tsearch(e, &h->passed, cmp_entry);
	if (!found) {
		free(e);
		return -ENOMEM;
	}
	if (*found != e) { /* known: its path may have changed */
		free(*found);
		*found = e;
	}
	return 0;
}

int
hold_unpass(struct hold *h, uint64_t cgid)
{
	struct hold_entry key = {.cgid = cgid}, **found;
	int err = 0;

	if (bpf_map_delete_elem(h->map_fd, &cgid) && errno != ENOENT)
		err = -errno;
	found = tfind(&key, &h->passed, cmp_entry);
	if (found) {
		struct hold_entry *e = *found;

		tdelete(&key, &h->passed, cmp_entry);
		free(e);
	}
	return err;
}

/* twalk has no argument: the walk's hold, one walk at a time. */
static struct hold *walking;

static void
find_gone(const void *node, VISIT which, int depth)
{
	const struct hold_entry *e = *(struct hold_entry *const *)node;

	(void)depth;
	if ((which == postorder || which == leaf) && walking->ngone < 64 &&
	    cgroup_id_of(e->path) != e->cgid)
		walking->gone[walking->ngone++] = (struct hold_entry *)e;
}

void
hold_tick(struct hold *h)
{
	do {
		h->ngone = 0;
		walking = h;
		twalk(h->passed, find_gone);
		walking = NULL;
		for (int i = 0; i < h->ngone; i++)
			hold_unpass(h, h->gone[i]->cgid);
	} while (h->ngone == 64);
}

void
hold_sweep(struct hold *h)
{
	uint64_t key, next, *prev = NULL;

	while (!bpf_map_get_next_key(h->map_fd, prev, &next)) {
		struct hold_entry k = {.cgid = next};

		key = next;
		if (!tfind(&k, &h->passed, cmp_entry) && !bpf_map_delete_elem(h->map_fd, &key)) {
			prev = NULL; /* deleted: from the start again */
			continue;
		}
		prev = &key;
	}
}

const char *
hold_root(const struct hold *h)
{
	return h->root;
}

uint64_t
hold_root_id(const struct hold *h)
{
	return h->root_id;
}

uint64_t
hold_refused(const struct hold *h, int which)
{
	uint64_t v[EGR_HOLD_NSTATS] = {0};
	uint32_t zero = 0;

	if (which < 0 || which >= EGR_HOLD_NSTATS || bpf_map_lookup_elem(h->bss_fd, &zero, v))
		return 0;
	return v[which];
}

void
hold_close(struct hold *h)
{
	if (!h)
		return;
	tdestroy(h->passed, free);
	if (h->map_fd >= 0)
		close(h->map_fd);
	if (h->bss_fd >= 0)
		close(h->bss_fd);
	free(h);
}

int
hold_remove_pins(uint64_t cgid)
{
	char dir[PATH_MAX];
	struct stat st;
	int err = pin_dir_of(cgid, dir, sizeof(dir));

	if (err)
		return err;
	if (stat(dir, &st))
		return -errno;
	return loader_remove_pin_dir(dir);
}
