/* A bounded, thread-safe LRU cache of open object files, keyed by (ino, stripe).
 *
 * An entry holds the object's data fd, its CRC sidecar fd (-1 when checksums are off)
 * and its size. The cache opens files through the caller's open function and closes
 * them when an unreferenced entry is evicted or dropped.
 *
 * Contract with the caller (object.c): an entry is used only between store_fdc_get and
 * store_fdc_put, and only while the caller holds the object's lock (shared or
 * exclusive). `size` is guarded by that object lock: read it under either mode, change
 * it only under the exclusive lock. The cache's own fields are guarded by its mutex.
 * When more than `cap` entries are referenced at once the cache grows past cap and
 * shrinks back as they are put. */
#ifndef WEFT_STORE_FDCACHE_H
#define WEFT_STORE_FDCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store_fdc_entry {
	uint64_t ino;
	uint32_t stripe;
	int fd;          /* data file, O_RDWR */
	int crc_fd;      /* sidecar, O_RDWR, or -1 */
	/* The first STORE_CRC_INLINE entries are in the data file's attribute (crcfile.h);
	 * the sidecar, if any, holds the rest and is opened when the object is larger than
	 * those entries cover or when one past them is written. Set at open. */
	bool crc_inline;
	_Atomic int dfd; /* data file again with O_DIRECT, opened on first use, or -1 */
	uint64_t size;   /* object size in bytes; guarded by the object lock */
	/* Files of the object's segments past the first (object_seg.c), guarded by the
	 * object lock; closed through close_extra when the entry is closed. */
	void *segs;
	void (*close_extra)(struct store_fdc_entry *e);
	/* private to fdcache.c, guarded by the cache mutex */
	int refs;
	struct store_fdc_entry *hnext, *lprev, *lnext;
};

/* Opens (and with create, creates) the files of (ino, stripe): sets e->fd, e->crc_fd and
 * e->size. Returns 0, -ENOENT when !create and the object does not exist, or -errno. */
typedef int (*store_fdc_open_fn)(void *arg, struct store_fdc_entry *e, bool create);

struct store_fdc;

/* Creates a cache of at most cap unreferenced entries (cap >= 1). Returns 0 or -ENOMEM. */
int store_fdc_create(size_t cap, store_fdc_open_fn open_fn, void *arg, struct store_fdc **out);
/* Closes every file and frees the cache. No entry may be referenced. NULL is a no-op. */
void store_fdc_destroy(struct store_fdc *c);

/* Returns a referenced entry for (ino, stripe), opening the files on a miss.
 * Errors: those of open_fn (-ENOENT, -EMFILE after one eviction retry, ...). */
int store_fdc_get(struct store_fdc *c, uint64_t ino, uint32_t stripe, bool create,
		  struct store_fdc_entry **out);
/* Releases a reference from store_fdc_get. NULL is a no-op. */
void store_fdc_put(struct store_fdc *c, struct store_fdc_entry *e);
/* Closes and forgets (ino, stripe) if cached. The caller holds the object's exclusive
 * lock and no reference to it (so nobody does). */
void store_fdc_drop(struct store_fdc *c, uint64_t ino, uint32_t stripe);
/* Number of cached entries (for tests). */
size_t store_fdc_count(struct store_fdc *c);

#endif
