/* The superblock: file system identity, counters and options, one record in the
 * "super" table under the key "sb". Counters (next inode, next session, next target,
 * round-robin chain cursors, chain epoch) live here so that allocation is part of the
 * same write txn as the mutation that uses it.
 *
 * Threads: plain functions on a caller's txn (write txn for meta_super_put). */
#ifndef WEFT_META_SUPER_H
#define WEFT_META_SUPER_H

#include <stdint.h>

#include "meta/mdb.h"

struct meta_super {
	uint32_t format;           /* META_FORMAT_VERSION */
	uint8_t uuid[16];
	uint32_t options;          /* META_OPT_* */
	uint64_t next_ino;         /* next inode number to hand out (never reused) */
	uint64_t epoch;            /* bumped at every open; generation of new inodes */
	uint64_t next_session;     /* next session id */
	uint32_t next_target;      /* next target id */
	uint32_t rr[WEFT_REPLICAS_MAX]; /* first-chain round-robin cursor per replica count */
	uint64_t chains_epoch;     /* bumped on any change of targets' chains */
	uint32_t used[WEFT_REPLICAS_MAX]; /* per table: chains 0..used-1 are named by some
	                                   * layout (largest chain_count handed out); only
	                                   * chains past it may be rebuilt */
	int64_t created_ns;
	struct weft_layout layout; /* the mkfs default (root's default; chain fields 0) */
};

/* Reads the superblock. Errors: -ENOENT none; -EIO malformed or unknown format. */
int meta_super_get(struct meta_db *db, MDB_txn *txn, struct meta_super *sb);
/* Writes the superblock (write txn). Errors: -errno from LMDB. */
int meta_super_put(struct meta_db *db, MDB_txn *txn, const struct meta_super *sb);

/* Encoding, exposed for tests: buf must hold META_SUPER_LEN bytes. */
#define META_SUPER_LEN 101
void meta_super_encode(const struct meta_super *sb, uint8_t *buf);
int meta_super_decode(const void *buf, size_t len, struct meta_super *sb);

#endif
