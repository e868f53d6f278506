/* Inode records: the versioned encoding of one inode (attributes, layout, directory
 * fields, symlink target) and get/put/destroy on the "inodes" table.
 *
 * Threads: plain functions on a caller's txn. A struct meta_inode is a decoded copy:
 * it owns nothing and stays valid after the txn ends. */
#ifndef WEFT_META_INODE_H
#define WEFT_META_INODE_H

#include <stdbool.h>
#include <stdint.h>

#include "meta/mdb.h"

#define META_INODE_VERSION 1u
/* Bytes of the written-stripes mask: one bit per stripe, stripe_count <= 4096 targets. */
#define META_WRITTEN_MAX 512

/* flags */
#define META_INODE_ORPHAN 0x1u /* nlink 0 but still open somewhere: freed at last release */

/* Hard-link limit (files) and subdirectory limit (directories), as ext4's EXT4_LINK_MAX:
 * link() and mkdir()/rename() into a full directory return -EMLINK. */
#define META_LINK_MAX 65000u

struct meta_inode {
	struct weft_attr attr;     /* attr.ino is the key; the rest is stored */
	struct weft_layout layout; /* regular file: its layout; directory: default for
	                            * entries created in it; others: zero */
	uint32_t flags;            /* META_INODE_* */
	uint64_t parent;           /* directory: ino of its parent ('..'); root: itself */
	uint64_t next_cookie;      /* directory: next readdir cookie to hand out */
	/* regular file: stripe objects written (bit s of written[s / 8]), bytes in use; a
	 * missing object whose bit is set is lost, not a hole (docs/ARCHITECTURE.md) */
	uint16_t written_len;
	uint8_t written[META_WRITTEN_MAX];
	uint16_t target_len;       /* symlink: bytes in target (no NUL) */
	char target[WEFT_PATH_MAX];
};

/* Reads inode ino. Errors: -ENOENT no such inode; -EIO malformed record. */
int meta_inode_get(struct meta_db *db, MDB_txn *txn, uint64_t ino, struct meta_inode *out);
/* Reads inode ref and checks its generation: gen 0 accepts any. A missing inode or a
 * different generation is -ESTALE (the caller's handle names something that is gone). */
int meta_inode_get_ref(struct meta_db *db, MDB_txn *txn, uint64_t ino, uint64_t gen,
		       struct meta_inode *out);
/* Writes inode in->attr.ino (write txn). Errors: -errno from LMDB. */
int meta_inode_put(struct meta_db *db, MDB_txn *txn, const struct meta_inode *in);
/* Removes the inode record and its xattrs; a regular file's objects are queued in the
 * pending table for the stores to delete (same txn). Errors: -errno from LMDB. */
int meta_inode_destroy(struct meta_db *db, MDB_txn *txn, const struct meta_inode *in);
/* Number of inode records (for statfs). */
int meta_inode_count(struct meta_db *db, MDB_txn *txn, uint64_t *count);

struct meta_super;
/* Takes the next inode number and the current generation from sb; the caller writes sb
 * back (one superblock update per create, shared with meta_layout_pick). */
void meta_inode_alloc(struct meta_super *sb, uint64_t *ino, uint64_t *gen);

/* Codec, exposed for tests. encode returns the bytes written (buf must hold
 * META_INODE_MAXLEN); decode returns 0 or -EIO. */
#define META_INODE_FIXED_LEN 109
#define META_INODE_MAXLEN (META_INODE_FIXED_LEN + WEFT_PATH_MAX + 2 + META_WRITTEN_MAX + 4)
size_t meta_inode_encode(const struct meta_inode *in, uint8_t *buf);
int meta_inode_decode(uint64_t ino, const void *buf, size_t len, struct meta_inode *out);

/* ORs mask (len bytes) into in's written-stripes mask. */
void meta_inode_mark_written(struct meta_inode *in, const uint8_t *mask, size_t len);
/* Clears the bits of stripes that hold no byte below size (truncate). */
void meta_inode_trim_written(struct meta_inode *in, uint64_t size);

/* Sets attr.blksize/blocks from size and layout (what getattr reports). */
void meta_inode_fill_derived(struct meta_inode *in);

#endif
