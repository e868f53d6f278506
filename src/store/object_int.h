/* Internals shared by object.c, object_write.c, object_read.c, object_recover.c and
 * object_seg.c. Not an API. */
#ifndef WEFT_STORE_OBJECT_INT_H
#define WEFT_STORE_OBJECT_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "store/fdcache.h"
#include "store/object.h"

#define OBJ_NLOCKS 1024u
#define OBJ_PATH_LEN 48  /* "xx/yy/0123456789abcdef.4294967295.crc" + NUL */

struct store_objs {
	struct store_target *t;     /* borrowed */
	int root_fd;                /* <target>/objects */
	bool checksums;
	bool grouped;        /* format 2 object paths (store_obj_path) */
	struct store_index *idx;
	struct store_fdc *fdc;
	pthread_rwlock_t locks[OBJ_NLOCKS];
	atomic_bool direct;         /* large aligned transfers bypass the page cache */
	/* Directories made but not yet fsynced in their parent (make_dirs): the root's
	 * entries for new XX, and XX's entries for new XX/YY (bit XX). Synced before an
	 * object below them is made durable (store_obj_fsync), and every heartbeat. */
	pthread_mutex_t dirs_lock;
	bool root_dirty;
	uint8_t xx_dirty[256 / 8];
	_Atomic uint64_t direct_bytes; /* moved with O_DIRECT (tests, stats) */
};

/* The lock of (ino, stripe). */
pthread_rwlock_t *store_obj_lock(struct store_objs *s, uint64_t ino, uint32_t stripe);
/* Relative path of the data file (crc: of the sidecar) under objects/. */
void store_obj_path(const struct store_objs *s, char *buf, uint64_t ino, uint32_t stripe,
		    bool crc);
/* preadv/pwritev looping over short transfers and IOV_MAX. *done counts bytes moved.
 * A read stops early at end of file (returns 0 with *done short). 0 or -errno. */
int store_obj_io(bool write, int fd, const struct iovec *iov, int cnt, uint64_t off, size_t *done);
/* Transfers of at least this many bytes, page-aligned in offset and memory, go to and
 * from the disk with O_DIRECT (store_obj_data_io). */
#define OBJ_DIRECT_MIN (128u << 10)
/* store_obj_io on the object's data in its first segment: O_DIRECT for a large aligned
 * transfer while s->direct holds (cleared for good where the file system refuses it),
 * else through the page cache. 0 or -errno; *done as store_obj_io. */
int store_obj_data_io(struct store_objs *s, struct store_fdc_entry *e, bool write,
		const struct iovec *iov, int cnt, uint64_t off, size_t *done);
/* The stamp of an object's files: its data file's ctime in ns (0 if fstat fails). The
 * kernel sets ctime on every change to a file and nothing can set it back, so a file
 * restored from a copy (cp, rsync, tar, a snapshot) never has the stamp the index
 * recorded at the object's last mutation here. */
uint64_t store_obj_stamp(int fd);
/* Whether the open object e is an older copy than its index record vouches for: its
 * stamp differs and every chunk agrees with its CRC (a whole older copy put back). A
 * file whose stamp differs and whose chunks do not all agree was damaged in place: its
 * record is re-stamped and the CRCs govern it (false). Verifies the whole object, but
 * only when the stamp differs. *recorded (may be NULL): the record's stamp, when true.
 * Object lock held (read or write). Logs what it found. */
bool store_obj_old_copy(struct store_objs *s, struct store_fdc_entry *e, uint64_t *recorded);
/* fsync of directory rel under dirfd (a new entry made durable). 0 or -errno. */
int store_obj_fsync_dirat(int dirfd, const char *rel);
/* pread of len bytes at off into buf, zero-filling past end of file. 0 or -errno. */
int store_obj_pread(int fd, void *buf, size_t len, uint64_t off);
/* Segments (object_seg.c): an object's bytes [k*SEG, (k+1)*SEG) live in segment k, so
 * no local file exceeds 1 TiB (ext4 allows 16 TiB) while objects reach 2^63 - 1. Each
 * call below has the object's lock held; I/O functions take object offsets. */
#define OBJ_SEG_SHIFT 40
#define OBJ_SEG_SIZE ((uint64_t)1 << OBJ_SEG_SHIFT)
/* Object size from its segments, at open (e->size already holds segment 0's). */
int store_obj_seg_size(struct store_objs *s, struct store_fdc_entry *e);
bool store_obj_seg_marked(struct store_objs *s, uint64_t ino, uint32_t stripe);
/* store_obj_io over segments; reads fill holes (absent segments) with zeros. */
int store_obj_seg_io(struct store_objs *s, struct store_fdc_entry *e, bool write,
	       const struct iovec *iov, int cnt, uint64_t off, size_t *done);
int store_obj_seg_pread(struct store_objs *s, struct store_fdc_entry *e, void *buf, size_t len,
		  uint64_t off);
/* Sidecar entries by chunk number, over segments. 0 or -errno. */
int store_obj_crc_read(struct store_objs *s, struct store_fdc_entry *e, uint64_t first, size_t n,
		 uint32_t *out);
int store_obj_crc_write(struct store_objs *s, struct store_fdc_entry *e, uint64_t first, size_t n,
		  const uint32_t *in);
/* Like ftruncate (0, or -1 with errno) of the data to size bytes / the sidecar to
 * nentries entries: segments past the new end are removed. */
int store_obj_seg_trunc_data(struct store_objs *s, struct store_fdc_entry *e, uint64_t size);
int store_obj_seg_trunc_crc(struct store_objs *s, struct store_fdc_entry *e, uint64_t nentries);
/* fdatasync of every segment and sidecar. 0 or -errno. */
int store_obj_seg_sync(struct store_objs *s, struct store_fdc_entry *e);
/* Bytes allocated on disk by every data segment. */
uint64_t store_obj_seg_allocated(struct store_objs *s, struct store_fdc_entry *e);
/* Removes segments past the first and the marker (delete). 0 or -errno. */
int store_obj_seg_unlink(struct store_objs *s, uint64_t ino, uint32_t stripe);
/* First offset >= off holding data (SEEK_DATA over segments), or e->size if none. */
int64_t store_obj_seg_next_data(struct store_objs *s, struct store_fdc_entry *e, uint64_t off);
/* First offset >= off in a hole (SEEK_HOLE over segments; the end of a segment file
 * and an absent segment are holes), at most e->size; e->size where SEEK_HOLE is not
 * supported (all data). */
int64_t store_obj_seg_next_hole(struct store_objs *s, struct store_fdc_entry *e, uint64_t off);
/* Recovery of torn objects at open (object_recover.c). */
int store_obj_recover(struct store_objs *s);

#endif
