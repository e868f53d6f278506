/* meta's space: the reserve kept for deletes, online growth of the LMDB map, the gate
 * that refuses namespace growth on a full disk, and the space gauges.
 *
 * DESIGN: LMDB is copy-on-write: an unlink needs free pages to write, so a database that
 * filled its disk cannot delete anything (the wedge of issue 18). meta keeps two margins:
 *  - a reserve file ("space.reserve" in meta's directory, preallocated with
 *    posix_fallocate, --reserve) that only freeing operations may use: when a batch fails
 *    with ENOSPC, the reserve is truncated (its blocks go back to the file system) and the
 *    batch is redone with the growing ops refused;
 *  - a low-water mark W: growing ops (create, mkdir, symlink, link, setxattr, rename,
 *    setstripe) are refused with ENOSPC while the room for growth (disk free + free
 *    pages inside data.mdb) is under W + the part of the reserve not held. Freeing ops
 *    (unlink, rmdir, truncate, removexattr, ...) always go ahead.
 * Deletes put their pages on LMDB's free list; creates reuse them, so after an rm the
 * room is back without the disk having a byte more. The reserve is re-taken once the
 * disk has room for it again.
 *
 * The map starts small (64 MiB, WEFT_META_MAPSIZE) and grows online: when the pages in
 * use pass half of it, or a batch fails with MDB_MAP_FULL, the writer (with no write txn
 * live) takes the map lock exclusive (read txns hold it shared, mdb.h) and calls
 * mdb_env_set_mapsize: doubling, by 1 GiB at most per step, up to the disk's size.
 *
 * Threads: meta_space_check and meta_space_relieve are for the group commit's writer
 * (no write txn live); meta_space_low and meta_space_get from any thread. */
#ifndef WEFT_META_SPACE_H
#define WEFT_META_SPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "meta/mdb.h"

struct meta_space;

struct meta_space_opts {
	uint64_t reserve;    /* bytes; 0 = 1% of the disk, 8 MiB to 256 MiB, at most 1/8 of it */
	uint64_t warn;       /* warn once when the room falls under it; 0 = max(2 (W+R), 5%) */
	bool no_reserve;     /* --reserve 0: no reserve file (W alone) */
};

struct meta_space_info {
	uint64_t db_bytes;      /* pages in use */
	uint64_t file_bytes;    /* data.mdb's size */
	uint64_t map_bytes;     /* LMDB map size */
	uint64_t disk_bytes, disk_free_bytes;
	uint64_t reserve_bytes; /* held now */
	uint64_t reserve_want;  /* configured */
	uint64_t low_water;     /* W */
	uint64_t room_bytes;    /* disk free + LMDB free pages */
	bool low;               /* growing ops refused */
};

/* Opens (creating) the reserve file in dir and takes the reserve if the disk allows.
 * Errors: -errno from open/statvfs (err names what). */
int meta_space_open(struct meta_db *db, const char *dir, const struct meta_space_opts *o,
		    struct meta_space **out, char *err, size_t errlen);
void meta_space_close(struct meta_space *sp);

/* Measures, grows the map if it is past half, re-takes the reserve if the disk has room,
 * sets the gate, the gauges, and logs the warning. Writer thread, no write txn live. */
void meta_space_check(struct meta_space *sp);
/* After a batch failed with ENOSPC: grows the map if that is what ran out (map_full:
 * MDB_MAP_FULL was seen; *no_grow false), else, if the disk is full, releases the
 * reserve (*no_grow true: redo without growing ops). Returns false when there is
 * nothing to give. Writer thread, no write txn live. */
bool meta_space_relieve(struct meta_space *sp, bool map_full, bool *no_grow);
/* True if meta's disk has (almost) nothing free: a failed write there was the disk
 * filling (LMDB reports a short write as EIO). Any thread. */
bool meta_space_disk_full(const struct meta_space *sp);
/* True while growing ops are refused. Any thread. */
bool meta_space_low(const struct meta_space *sp);
void meta_space_get(struct meta_space *sp, struct meta_space_info *out);

#endif
