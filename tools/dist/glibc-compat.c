// SPDX-License-Identifier: Apache-2.0
/* What lets the release binary (`make dist`), built on Debian 12's glibc
 * 2.36, run on glibc 2.31 and later: linked into that binary only, it
 * stands in for every function whose only version is newer than
 * GLIBC_2.31, for egressctl and for the libraries linked in statically
 * (libelf, libevent, ...) alike, since a definition in the executable wins
 * over libc's at link time. tools/dist/glibc-check.sh then fails the build
 * on any symbol version above 2.31 that is left.
 *
 * - __libc_start_main: crt1.o of glibc 2.34+ calls the GLIBC_2.34 one;
 *   this calls the GLIBC_2.2.5 one, which every glibc has, with an init
 *   function that runs the executable's constructors as 2.31's
 *   __libc_csu_init did (2.34+ call it as a program's legacy init).
 * - pthread_create, pthread_join, and the pthread_once, thread-specific
 *   key and rwlock functions OpenSSL's libcrypto calls: the GLIBC_2.2.5
 *   versions (2.31 has them in libpthread.so.0, which the binary therefore
 *   names as NEEDED); dlopen, dlsym, dlclose, dlerror, dladdr (libcrypto's
 *   too): the GLIBC_2.2.5 ones of libdl.so.2, named as NEEDED as well.
 * - stat, fstat, lstat, fstatat (2.33), close_range (2.34),
 *   mount_setattr (2.36): the system calls themselves (x86-64's struct
 *   stat is the kernel's).
 * - arc4random, arc4random_buf (2.36, libevent's): getrandom(2).
 * - strerrorname_np (2.32): Linux's errno names. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* Hidden: what crt1.o and the static libraries call binds to these at link
 * time, and none is exported, so that the dynamic loader finds libc's own
 * for the versioned calls below (an unversioned definition in the
 * executable would satisfy them: __libc_start_main would call itself). */
#define COMPAT __attribute__((visibility("hidden")))

#if !defined(__x86_64__)
#error "tools/dist/glibc-compat.c is for x86-64 (struct stat, the system call numbers)"
#endif

/* ---- the start ---- */

typedef int (*main_fn)(int, char **, char **);

int compat_libc_start_main(main_fn main, int argc, char **argv, void (*init)(int, char **, char **),
			   void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
__asm__(".symver compat_libc_start_main, __libc_start_main@GLIBC_2.2.5");

extern void _init(void);
extern void (*__init_array_start[])(int, char **, char **) __attribute__((visibility("hidden")));
extern void (*__init_array_end[])(int, char **, char **) __attribute__((visibility("hidden")));

/* glibc 2.31's __libc_csu_init: _init, then the executable's init array
 * (the preinit array is the dynamic loader's) */
static void
compat_csu_init(int argc, char **argv, char **envp)
{
	size_t n = (size_t)(__init_array_end - __init_array_start);

	_init();
	for (size_t i = 0; i < n; i++)
		(*__init_array_start[i])(argc, argv, envp);
}

COMPAT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
			     void (*fini)(void), void (*rtld_fini)(void), void *stack_end);

COMPAT int
__libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
		  void (*rtld_fini)(void), void *stack_end)
{
	(void)init; /* NULL: crt1.o of 2.34+ leaves the constructors to libc */
	(void)fini;
	return compat_libc_start_main(main, argc, argv, compat_csu_init, NULL, rtld_fini,
				      stack_end);
}

/* ---- threads ---- */

int compat_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int compat_pthread_join(pthread_t t, void **ret);
__asm__(".symver compat_pthread_create, pthread_create@GLIBC_2.2.5");
__asm__(".symver compat_pthread_join, pthread_join@GLIBC_2.2.5");

COMPAT int
pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	return compat_pthread_create(t, attr, fn, arg);
}

COMPAT int
pthread_join(pthread_t t, void **ret)
{
	return compat_pthread_join(t, ret);
}

/* Each f here: a hidden f that calls f@GLIBC_2.2.5 of libpthread.so.0 or
 * libdl.so.2 (n arguments, their types and the result's as given). */
#define OLD_VERSION(ret, f, params, args)                                                          \
	ret compat_##f params;                                                                     \
	__asm__(".symver compat_" #f ", " #f "@GLIBC_2.2.5");                                      \
	COMPAT ret f params                                                                        \
	{                                                                                          \
		return compat_##f args;                                                            \
	}

OLD_VERSION(int, pthread_once, (pthread_once_t * o, void (*fn)(void)), (o, fn))
OLD_VERSION(int, pthread_key_create, (pthread_key_t * k, void (*d)(void *)), (k, d))
OLD_VERSION(int, pthread_key_delete, (pthread_key_t k), (k))
OLD_VERSION(void *, pthread_getspecific, (pthread_key_t k), (k))
/* the value as an integer: a pointer to const would have GCC take the
 * call for a read of what it points at */
int compat_pthread_setspecific(pthread_key_t k, uintptr_t v);
__asm__(".symver compat_pthread_setspecific, pthread_setspecific@GLIBC_2.2.5");
COMPAT int
pthread_setspecific(pthread_key_t k, const void *v)
{
	return compat_pthread_setspecific(k, (uintptr_t)v);
}
OLD_VERSION(int, pthread_rwlock_init,
	    (pthread_rwlock_t *restrict l, const pthread_rwlockattr_t *restrict a), (l, a))
OLD_VERSION(int, pthread_rwlock_destroy, (pthread_rwlock_t * l), (l))
OLD_VERSION(int, pthread_rwlock_rdlock, (pthread_rwlock_t * l), (l))
OLD_VERSION(int, pthread_rwlock_wrlock, (pthread_rwlock_t * l), (l))
OLD_VERSION(int, pthread_rwlock_unlock, (pthread_rwlock_t * l), (l))
OLD_VERSION(void *, dlopen, (const char *file, int mode), (file, mode))
OLD_VERSION(void *, dlsym, (void *restrict h, const char *restrict name), (h, name))
OLD_VERSION(int, dlclose, (void *h), (h))
OLD_VERSION(char *, dlerror, (void), ())
OLD_VERSION(int, dladdr, (const void *addr, Dl_info *info), (addr, info))

/* ---- system calls glibc 2.31 has no wrapper of this version for ---- */

COMPAT int
stat(const char *restrict path, struct stat *restrict st)
{
	return (int)syscall(SYS_stat, path, st);
}

COMPAT int
fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

COMPAT int
lstat(const char *restrict path, struct stat *restrict st)
{
	return (int)syscall(SYS_lstat, path, st);
}

COMPAT int
fstatat(int dirfd, const char *restrict path, struct stat *restrict st, int flags)
{
	return (int)syscall(SYS_newfstatat, dirfd, path, st, flags);
}

COMPAT int
close_range(unsigned int first, unsigned int last, int flags)
{
	return (int)syscall(SYS_close_range, first, last, flags);
}

COMPAT int
mount_setattr(int dirfd, const char *path, unsigned int flags, struct mount_attr *attr, size_t size)
{
	return (int)syscall(SYS_mount_setattr, dirfd, path, flags, attr, size);
}

/* ---- randomness ---- */

COMPAT void
arc4random_buf(void *buf, size_t n)
{
	unsigned char *p = buf;
	ssize_t got;

	while (n) {
		got = getrandom(p, n, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			abort(); /* no randomness: nothing may go on without it */
		p += got;
		n -= (size_t)got;
	}
}

COMPAT uint32_t
arc4random(void)
{
	uint32_t v;

	arc4random_buf(&v, sizeof(v));
	return v;
}

/* ---- errno names ---- */

#define N(e) [e] = #e
static const char *const errno_names[] = {
	N(EPERM),
	N(ENOENT),
	N(ESRCH),
	N(EINTR),
	N(EIO),
	N(ENXIO),
	N(E2BIG),
	N(ENOEXEC),
	N(EBADF),
	N(ECHILD),
	N(EAGAIN),
	N(ENOMEM),
	N(EACCES),
	N(EFAULT),
	N(ENOTBLK),
	N(EBUSY),
	N(EEXIST),
	N(EXDEV),
	N(ENODEV),
	N(ENOTDIR),
	N(EISDIR),
	N(EINVAL),
	N(ENFILE),
	N(EMFILE),
	N(ENOTTY),
	N(ETXTBSY),
	N(EFBIG),
	N(ENOSPC),
	N(ESPIPE),
	N(EROFS),
	N(EMLINK),
	N(EPIPE),
	N(EDOM),
	N(ERANGE),
	N(EDEADLK),
	N(ENAMETOOLONG),
	N(ENOLCK),
	N(ENOSYS),
	N(ENOTEMPTY),
	N(ELOOP),
	N(ENOMSG),
	N(EIDRM),
	N(ECHRNG),
	N(EL2NSYNC),
	N(EL3HLT),
	N(EL3RST),
	N(ELNRNG),
	N(EUNATCH),
	N(ENOCSI),
	N(EL2HLT),
	N(EBADE),
	N(EBADR),
	N(EXFULL),
	N(ENOANO),
	N(EBADRQC),
	N(EBADSLT),
	N(EBFONT),
	N(ENOSTR),
	N(ENODATA),
	N(ETIME),
	N(ENOSR),
	N(ENONET),
	N(ENOPKG),
	N(EREMOTE),
	N(ENOLINK),
	N(EADV),
	N(ESRMNT),
	N(ECOMM),
	N(EPROTO),
	N(EMULTIHOP),
	N(EDOTDOT),
	N(EBADMSG),
	N(EOVERFLOW),
	N(ENOTUNIQ),
	N(EBADFD),
	N(EREMCHG),
	N(ELIBACC),
	N(ELIBBAD),
	N(ELIBSCN),
	N(ELIBMAX),
	N(ELIBEXEC),
	N(EILSEQ),
	N(ERESTART),
	N(ESTRPIPE),
	N(EUSERS),
	N(ENOTSOCK),
	N(EDESTADDRREQ),
	N(EMSGSIZE),
	N(EPROTOTYPE),
	N(ENOPROTOOPT),
	N(EPROTONOSUPPORT),
	N(ESOCKTNOSUPPORT),
	N(EOPNOTSUPP),
	N(EPFNOSUPPORT),
	N(EAFNOSUPPORT),
	N(EADDRINUSE),
	N(EADDRNOTAVAIL),
	N(ENETDOWN),
	N(ENETUNREACH),
	N(ENETRESET),
	N(ECONNABORTED),
	N(ECONNRESET),
	N(ENOBUFS),
	N(EISCONN),
	N(ENOTCONN),
	N(ESHUTDOWN),
	N(ETOOMANYREFS),
	N(ETIMEDOUT),
	N(ECONNREFUSED),
	N(EHOSTDOWN),
	N(EHOSTUNREACH),
	N(EALREADY),
	N(EINPROGRESS),
	N(ESTALE),
	N(EUCLEAN),
	N(ENOTNAM),
	N(ENAVAIL),
	N(EISNAM),
	N(EREMOTEIO),
	N(EDQUOT),
	N(ENOMEDIUM),
	N(EMEDIUMTYPE),
	N(ECANCELED),
	N(ENOKEY),
	N(EKEYEXPIRED),
	N(EKEYREVOKED),
	N(EKEYREJECTED),
	N(EOWNERDEAD),
	N(ENOTRECOVERABLE),
	N(ERFKILL),
	N(EHWPOISON),
};
#undef N

COMPAT const char *
strerrorname_np(int e)
{
	if (e < 0 || (size_t)e >= sizeof(errno_names) / sizeof(errno_names[0]))
		return NULL;
	return errno_names[e];
}
