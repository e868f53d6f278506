/* faultdisk.so: makes a disk fail for a store, by LD_PRELOAD. When the file named by
 * $WEFT_FAULT_CTL exists and holds "read PATTERN" or "write PATTERN", reads (pread,
 * preadv) or writes (pwrite, pwritev, fsync, fdatasync) of any file whose path contains
 * both "/objects/" and PATTERN fail with EIO, as a dying disk's would. Nothing else is
 * touched: meta, the mount and the store's index see a healthy disk. Test use only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static int faulty(int fd, const char *kind)
{
	const char *ctl = getenv("WEFT_FAULT_CTL");
	if (!ctl)
		return 0;
	FILE *f = fopen(ctl, "re");
	if (!f)
		return 0;
	char line[512] = "", link[64], path[4096];
	char *ok = fgets(line, sizeof(line), f);
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	size_t kl = strlen(kind);
	if (!ok || strncmp(line, kind, kl) != 0 || line[kl] != ' ')
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	return strstr(path, "/objects/") && strstr(path, line + kl + 1);
}

#define NEXT(name) static __typeof__(name) *next; if (!next) next = dlsym(RTLD_NEXT, #name)

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	NEXT(pread);
	if (faulty(fd, "read"))
		return errno = EIO, -1;
	return next(fd, buf, n, off);
}

ssize_t preadv(int fd, const struct iovec *v, int cnt, off_t off)
{
	NEXT(preadv);
	if (faulty(fd, "read"))
		return errno = EIO, -1;
	return next(fd, v, cnt, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	NEXT(pwrite);
	if (faulty(fd, "write"))
		return errno = EIO, -1;
	return next(fd, buf, n, off);
}

ssize_t pwritev(int fd, const struct iovec *v, int cnt, off_t off)
{
	NEXT(pwritev);
	if (faulty(fd, "write"))
		return errno = EIO, -1;
	return next(fd, v, cnt, off);
}

int fsync(int fd)
{
	NEXT(fsync);
	if (faulty(fd, "write"))
		return errno = EIO, -1;
	return next(fd);
}

int fdatasync(int fd)
{
	NEXT(fdatasync);
	if (faulty(fd, "write"))
		return errno = EIO, -1;
	return next(fd);
}
