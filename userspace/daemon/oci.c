// SPDX-License-Identifier: Apache-2.0
/* OCI bundles' annotations and docker's containers' labels for selectors
 * (see oci.h), read with jansson (lib/jsonx.h: depth-limited, a key twice
 * refused). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "daemon/containers.h"
#include "daemon/oci.h"
#include "lib/jsonx.h"

const char *const oci_default_dirs[] = {
	"/run/containerd/io.containerd.runtime.v2.task/k8s.io/{id}",
	"/run/containerd/io.containerd.runtime.v2.task/default/{id}",
	"/run/containers/storage/overlay-containers/{id}/userdata",
	"/var/lib/containers/storage/overlay-containers/{id}/userdata",
};
const int oci_ndefault_dirs = sizeof(oci_default_dirs) / sizeof(oci_default_dirs[0]);
const char *const oci_default_docker_dirs[] = {"/var/lib/docker/containers/{id}"};
const int oci_ndefault_docker_dirs =
	sizeof(oci_default_docker_dirs) / sizeof(oci_default_docker_dirs[0]);

/* Where each kind of file keeps its strings: config.json's "annotations",
 * config.v2.json's "Config": {"Labels"}. */
struct kv_file {
	const char *name, *outer, *inner, *what;
};
static const struct kv_file oci_file = {"config.json", "annotations", NULL, "annotations"};
static const struct kv_file docker_file = {"config.v2.json", "Config", "Labels", "labels"};

void
oci_free(struct oci_info *in)
{
	for (int i = 0; i < in->n; i++) {
		free(in->keys[i]);
		free(in->vals[i]);
	}
	memset(in, 0, sizeof(*in));
}

const char *
oci_get(const struct oci_info *in, const char *key)
{
	for (int i = 0; i < in->n; i++)
		if (!strcmp(in->keys[i], key))
			return in->vals[i];
	return NULL;
}

/* s as a C string, or NULL when it holds a NUL (it would compare as
 * another, shorter value). */
static char *
dup_str(const json_t *s)
{
	size_t len = json_string_length(s);
	const char *v = json_string_value(s);

	if (!v || strlen(v) != len)
		return NULL;
	return strdup(v);
}

/* The strings of f's object (f->outer, or f->outer's f->inner) in text. */
static int
parse_kv(const struct kv_file *f, const char *text, size_t len, struct oci_info *out, char *err,
	 size_t errlen)
{
	char why[300];
	json_t *doc, *ann, *v;
	const char *key;
	size_t end;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (len > OCI_MAX_BYTES) {
		snprintf(err, errlen, "%s larger than %d bytes", f->name, OCI_MAX_BYTES);
		return -EINVAL;
	}
	doc = jsonx_parse(text, len, 64, &end, why, sizeof(why));
	if (!doc) {
		snprintf(err, errlen, "%s: %s", f->name, why);
		return -EINVAL;
	}
	if (!json_is_object(doc)) {
		snprintf(err, errlen, "%s: not a JSON object", f->name);
		rc = -EINVAL;
		goto out;
	}
	ann = json_object_get(doc, f->outer);
	if (ann && f->inner) {
		if (!json_is_object(ann)) {
			snprintf(err, errlen, "%s: %s: not an object", f->name, f->outer);
			rc = -EINVAL;
			goto out;
		}
		ann = json_object_get(ann, f->inner);
		if (json_is_null(ann)) /* docker's "Labels": null */
			ann = NULL;
	}
	if (ann && !json_is_object(ann)) {
		snprintf(err, errlen, "%s: %s: not an object", f->name, f->what);
		rc = -EINVAL;
		goto out;
	}
	json_object_foreach(ann, key, v) {
		if (out->n == OCI_MAX_ANNOTATIONS) {
			snprintf(err, errlen, "%s: more than %d %s", f->name, OCI_MAX_ANNOTATIONS,
				 f->what);
			rc = -EINVAL;
			break;
		}
		if (!json_is_string(v) || strlen(key) == 0) {
			snprintf(err, errlen, "%s: %s: a value not a string", f->name, f->what);
			rc = -EINVAL;
			break;
		}
		out->keys[out->n] = strdup(key);
		out->vals[out->n] = dup_str(v);
		if (!out->keys[out->n] || !out->vals[out->n]) {
			free(out->keys[out->n]);
			free(out->vals[out->n]);
			snprintf(err, errlen, "%s: %s: %s: a NUL in its value", f->name, f->what,
				 key);
			rc = -EINVAL;
			break;
		}
		out->n++;
	}
out:
	json_decref(doc);
	if (rc)
		oci_free(out);
	return rc;
}

int
oci_parse(const char *text, size_t len, struct oci_info *out, char *err, size_t errlen)
{
	return parse_kv(&oci_file, text, len, out, err, errlen);
}

int
oci_parse_docker(const char *text, size_t len, struct oci_info *out, char *err, size_t errlen)
{
	return parse_kv(&docker_file, text, len, out, err, errlen);
}

static char *
read_small(const char *path, size_t *lenp)
{
	struct stat st;
	size_t len = 0;
	ssize_t n;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > OCI_MAX_BYTES) {
		close(fd);
		errno = EFBIG;
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && (n = read(fd, buf + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (buf)
		buf[len] = 0;
	*lenp = len;
	return buf;
}

static int
read_kv(const struct kv_file *f, const char *cgpath, const char *const *dirs, int ndirs,
	struct oci_info *out, char *err, size_t errlen)
{
	char id[80];

	memset(out, 0, sizeof(*out));
	if (!ctr_id_of_path(cgpath, id, sizeof(id))) {
		snprintf(err, errlen, "%s: no container id", cgpath);
		return -ENOENT;
	}
	for (int i = 0; i < ndirs; i++) {
		const char *at = strstr(dirs[i], "{id}");
		char path[PATH_MAX];
		size_t len;
		char *text;
		int rc;

		if (!at || (size_t)snprintf(path, sizeof(path), "%.*s%s%s/%s", (int)(at - dirs[i]),
					    dirs[i], id, at + 4, f->name) >= sizeof(path))
			continue;
		text = read_small(path, &len);
		if (!text)
			continue;
		rc = parse_kv(f, text, len, out, err, errlen);
		free(text);
		return rc;
	}
	snprintf(err, errlen, "container %.12s: no %s found", id, f->name);
	return -ENOENT;
}

int
oci_read_bundle(const char *cgpath, const char *const *dirs, int ndirs, struct oci_info *out,
		char *err, size_t errlen)
{
	return read_kv(&oci_file, cgpath, dirs, ndirs, out, err, errlen);
}

int
oci_read_docker(const char *cgpath, const char *const *dirs, int ndirs, struct oci_info *out,
		char *err, size_t errlen)
{
	return read_kv(&docker_file, cgpath, dirs, ndirs, out, err, errlen);
}
