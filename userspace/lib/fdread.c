// SPDX-License-Identifier: Apache-2.0
/* A descriptor read to its end: a memfd or pipe of the service's or the
 * client's (CMD's environment, a policy file, a helper's answer). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/fdread.h"

ssize_t
fd_read_all(int fd, size_t max, char **out)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nb;
	ssize_t k, err;

	for (;;) {
		if (len == cap) {
			if (cap > max) {
				err = -EFBIG;
				goto fail;
			}
			cap = cap ? 2 * cap : 65536;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				err = -ENOMEM;
				goto fail;
			}
			buf = nb;
		}
		k = read(fd, buf + len, cap - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			err = -errno;
			goto fail;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	if (len > max) {
		err = -EFBIG;
		goto fail;
	}
	buf[len] = 0;
	*out = buf;
	return (ssize_t)len;
fail:
	free(buf);
	*out = NULL;
	return err;
}
