/* The pending-object-work queue: durable records of object data the stores must delete
 * (unlinked files) or trim (truncated files). Added in the same txn as the namespace
 * change, so a crash never leaks space; removed when a store reports the work done.
 *
 * Threads: plain functions on a caller's txn. */
#ifndef WEFT_META_PENDING_H
#define WEFT_META_PENDING_H

#include <stdint.h>

#include "meta/mdb.h"

enum meta_pending_kind {
	META_PENDING_DELETE = 1,   /* delete every object (ino, s) of the layout */
	META_PENDING_TRUNCATE = 2, /* trim objects to hold only bytes below size */
	META_PENDING_DROP = 3,     /* remove the objects of one layout generation: the
				    * layout a `weft migrate` replaced */
};

struct meta_pending {
	uint64_t seq;  /* queue position, increasing */
	uint8_t kind;  /* enum meta_pending_kind */
	uint64_t ino;
	uint64_t size; /* TRUNCATE: the new size; DELETE: 0 */
	struct weft_layout layout;
};

/* Appends a record (write txn). Errors: -EINVAL bad kind; -errno from LMDB. */
int meta_pending_add(struct meta_db *db, MDB_txn *txn, uint8_t kind, uint64_t ino,
		     uint64_t size, const struct weft_layout *layout);
/* Reads up to max records with seq > after, oldest first, into out[]; *n gets the
 * number read. Errors: -EIO malformed record; -errno from LMDB. */
int meta_pending_list(struct meta_db *db, MDB_txn *txn, uint64_t after,
		      struct meta_pending *out, size_t max, size_t *n);
/* Removes record seq (write txn). Errors: -ENOENT no such record. */
int meta_pending_done(struct meta_db *db, MDB_txn *txn, uint64_t seq);

#endif
