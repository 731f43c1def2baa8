// SPDX-License-Identifier: Apache-2.0
/* OCI bundles' annotations for selectors (see oci.h), read with jansson
 * (lib/jsonx.h: depth-limited, a key twice refused). */
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

int
oci_parse(const char *text, size_t len, struct oci_info *out, char *err, size_t errlen)
{
	char why[300];
	json_t *doc, *ann, *v;
	const char *key;
	size_t end;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (len > OCI_MAX_BYTES) {
		snprintf(err, errlen, "config.json larger than %d bytes", OCI_MAX_BYTES);
		return -EINVAL;
	}
	doc = jsonx_parse(text, len, 64, &end, why, sizeof(why));
	if (!doc) {
		snprintf(err, errlen, "config.json: %s", why);
		return -EINVAL;
	}
	if (!json_is_object(doc)) {
		snprintf(err, errlen, "config.json: not a JSON object");
		rc = -EINVAL;
		goto out;
	}
	ann = json_object_get(doc, "annotations");
	if (ann && !json_is_object(ann)) {
		snprintf(err, errlen, "config.json: annotations: not an object");
		rc = -EINVAL;
		goto out;
	}
	json_object_foreach(ann, key, v) {
		if (out->n == OCI_MAX_ANNOTATIONS) {
			snprintf(err, errlen, "config.json: more than %d annotations",
				 OCI_MAX_ANNOTATIONS);
			rc = -EINVAL;
			break;
		}
		if (!json_is_string(v) || strlen(key) == 0) {
			snprintf(err, errlen, "config.json: annotations: a value not a string");
			rc = -EINVAL;
			break;
		}
		out->keys[out->n] = strdup(key);
		out->vals[out->n] = dup_str(v);
		if (!out->keys[out->n] || !out->vals[out->n]) {
			free(out->keys[out->n]);
			free(out->vals[out->n]);
			snprintf(err, errlen, "config.json: annotations: %s: a NUL in its value",
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

int
oci_read_bundle(const char *cgpath, const char *const *dirs, int ndirs, struct oci_info *out,
		char *err, size_t errlen)
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

		if (!at ||
		    (size_t)snprintf(path, sizeof(path), "%.*s%s%s/config.json",
				     (int)(at - dirs[i]), dirs[i], id, at + 4) >= sizeof(path))
			continue;
		text = read_small(path, &len);
		if (!text)
			continue;
		rc = oci_parse(text, len, out, err, errlen);
		free(text);
		return rc;
	}
	snprintf(err, errlen, "container %.12s: no bundle found", id);
	return -ENOENT;
}
