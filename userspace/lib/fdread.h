// SPDX-License-Identifier: Apache-2.0
/* A descriptor read to its end (fdread.c). */
#ifndef LIB_FDREAD_H
#define LIB_FDREAD_H

#include <stddef.h>
#include <sys/types.h>

/* Reads fd to its end (EINTR retried) into *out, malloc'd and
 * NUL-terminated (one byte past the length returned). -EFBIG when there
 * is more than max bytes, -ENOMEM, or read's -errno; *out NULL then. */
ssize_t fd_read_all(int fd, size_t max, char **out);

#endif /* LIB_FDREAD_H */
