// SPDX-License-Identifier: Apache-2.0
/* A container's OCI bundle as selectors see it (oci.c): the annotations of
 * its config.json (the kubelet's runtime writes a pod's namespace, name and
 * container type there: io.kubernetes.cri.sandbox-namespace,
 * io.kubernetes.pod.name, io.kubernetes.cri.container-type, ...), found by
 * the container id its cgroup carries in the bundle directories the config
 * names; and the labels of a docker container (dockerd's config.v2.json,
 * "Config": {"Labels"}: what `docker run --label` gave it), found the same
 * way in dockerd's containers directory. The parsers take untrusted bytes
 * (a container's runtime writes the file, a tenant chooses the annotations
 * and labels): fuzzed (fuzz_oci). */
#ifndef DAEMON_OCI_H
#define DAEMON_OCI_H

#include <stdbool.h>
#include <stddef.h>

#define OCI_MAX_ANNOTATIONS 128
#define OCI_MAX_BYTES	    (4 << 20) /* a config.json larger is refused */

struct oci_info {
	char *keys[OCI_MAX_ANNOTATIONS], *vals[OCI_MAX_ANNOTATIONS];
	int n;
};

/* The annotations of config.json's text (NUL-free strings only; past
 * OCI_MAX_ANNOTATIONS, refused). 0, or -EINVAL with err set and *out
 * empty. */
int oci_parse(const char *text, size_t len, struct oci_info *out, char *err, size_t errlen);
/* The same of config.v2.json's "Config": {"Labels"} (null: none). */
int oci_parse_docker(const char *text, size_t len, struct oci_info *out, char *err, size_t errlen);
void oci_free(struct oci_info *in);
/* The value of key, or NULL. */
const char *oci_get(const struct oci_info *in, const char *key);

/* The bundle of the container whose cgroup is cgpath: each of dirs with
 * "{id}" replaced by the container id the path carries, the first with a
 * config.json, parsed into *out. 0, -ENOENT (no id, no bundle) or -EINVAL
 * with err set. */
int oci_read_bundle(const char *cgpath, const char *const *dirs, int ndirs, struct oci_info *out,
		    char *err, size_t errlen);
/* The same of dockerd's config.v2.json in each of dirs (its containers
 * directory, "{id}" in it): the container's labels. */
int oci_read_docker(const char *cgpath, const char *const *dirs, int ndirs, struct oci_info *out,
		    char *err, size_t errlen);

/* Where a runtime keeps the bundles when the config names none:
 * containerd's (the CRI's namespace k8s.io, and default), CRI-O's and
 * podman's. */
extern const char *const oci_default_dirs[];
extern const int oci_ndefault_dirs;
/* dockerd's, when the config names none: /var/lib/docker/containers/{id} */
extern const char *const oci_default_docker_dirs[];
extern const int oci_ndefault_docker_dirs;

#endif /* DAEMON_OCI_H */
