/* Internals shared by object.c, object_read.c and object_recover.c. Not an API. */
#ifndef WEFT_STORE_OBJECT_INT_H
#define WEFT_STORE_OBJECT_INT_H

#include <pthread.h>

#include "store/fdcache.h"
#include "store/object.h"

#define OBJ_NLOCKS 1024u
#define OBJ_PATH_LEN 48  /* "xx/yy/0123456789abcdef.4294967295.crc" + NUL */

struct store_objs {
	struct store_target *t;     /* borrowed */
	int root_fd;                /* <target>/objects */
	bool checksums;
	struct store_index *idx;
	struct store_fdc *fdc;
	pthread_rwlock_t locks[OBJ_NLOCKS];
};

/* The lock of (ino, stripe). */
pthread_rwlock_t *obj_lock(struct store_objs *s, uint64_t ino, uint32_t stripe);
/* Relative path of the data file (crc: of the sidecar) under objects/. */
void obj_path(char *buf, uint64_t ino, uint32_t stripe, bool crc);
/* preadv/pwritev looping over short transfers and IOV_MAX. *done counts bytes moved.
 * A read stops early at end of file (returns 0 with *done short). 0 or -errno. */
int obj_io(bool write, int fd, const struct iovec *iov, int cnt, uint64_t off, size_t *done);
/* pread of len bytes at off into buf, zero-filling past end of file. 0 or -errno. */
int obj_pread(int fd, void *buf, size_t len, uint64_t off);
/* Recovery of torn objects at open (object_recover.c). */
int obj_recover(struct store_objs *s);

#endif
