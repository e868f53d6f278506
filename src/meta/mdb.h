/* meta's LMDB environment: opening, the named tables, key helpers, mkfs.
 *
 * DESIGN: one LMDB environment per file system, in one directory (data.mdb, lock.mdb).
 * It is opened with MDB_NOSYNC (commits are made durable by an explicit mdb_env_sync,
 * once per group commit, see commit.h) and MDB_NOTLS (a read txn may be used from any
 * thread, one thread at a time). Every table and its key/value encoding is described in
 * docs/on-disk-format.md, "Metadata (weft meta)". Keys holding integers are big-endian so
 * that LMDB's byte order is numeric order; values are versioned little-endian records,
 * never raw structs.
 *
 * Threads: a struct meta_db is immutable after meta_db_open (live has its own lock) and may be shared by every
 * thread; transactions follow LMDB's rules (one write txn at a time, env-wide). */
#ifndef WEFT_META_MDB_H
#define WEFT_META_MDB_H

#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/types.h"

#define META_FORMAT_VERSION 1u
#define META_MAPSIZE_DEFAULT (64ULL << 20) /* initial map; grows online (space.c) */

struct meta_db {
	MDB_env *env;
	/* Read txns hold it shared while they use the map; growing the map (which unmaps
	 * and remaps it, space.c) holds it exclusive, between write txns. */
	pthread_rwlock_t map_lock;
	MDB_dbi super;      /* "super": fixed keys -> superblock record */
	MDB_dbi inodes;     /* ino BE64 -> inode record (inode.h) */
	MDB_dbi dirents;    /* parent BE64 + name -> dirent record (dirent.h) */
	MDB_dbi cookies;    /* parent BE64 + cookie BE64 -> name */
	MDB_dbi xattrs;     /* ino BE64 + name -> value bytes */
	MDB_dbi targets;    /* target id BE32 -> target record (chains.h) */
	MDB_dbi chains;     /* replicas u8 + chain id BE32 -> chain record */
	MDB_dbi sessions;   /* unused since sessions live in memory (emptied at start) */
	MDB_dbi opens;      /* orphans: ino BE64 -> empty, an unlinked file still open */
	MDB_dbi sess_opens; /* unused (emptied at start) */
	MDB_dbi pending;    /* seq BE64 -> pending object work record (pending.h) */
	MDB_dbi nodes;      /* node name -> node record (role, serial, revoked; nodes.c) */
	MDB_dbi replies;    /* client BE64 + xid BE64 -> reply of a tagged mutation (replies.h) */
	struct meta_live *live; /* sessions and open counts, in memory (session.h) */
};

/* Options of a new file system (meta_mkfs) and the superblock's options. */
#define META_OPT_ROOT_SQUASH 0x1u /* map uid/gid 0 of clients to 65534 */
#define META_OPT_CHECKSUMS   0x2u /* CRC32C on data chunks (default on) */
/* The wire protection of every connection (net/wire.h: WIRE_NONE, WIRE_INTEGRITY,
 * WIRE_PRIVACY) in bits 2-3; file systems made before it have none. */
#define META_OPT_WIRE_SHIFT  2
#define META_OPT_WIRE_MASK   0xcu

struct meta_mkfs_opts {
	uint32_t stripe_unit;  /* 0 = WEFT_STRIPE_UNIT_DEFAULT */
	uint32_t stripe_count; /* 0 = all chains */
	uint8_t replicas;      /* 0 = 1 */
	uint32_t options;      /* META_OPT_* */
	bool force;            /* replace an existing file system */
	uint64_t mapsize;      /* 0 = META_MAPSIZE_DEFAULT */
};

/* Creates a file system in dir (created 0700 if missing): superblock with a random UUID,
 * root directory (ino 1, 0755, uid 0, gid 0) carrying the default layout. The env is
 * synced before return. Errors: -EEXIST a file system is there and !opts->force;
 * -EINVAL bad layout in opts; -errno from mkdir/LMDB (-EIO for LMDB-specific codes). */
int meta_mkfs(const char *dir, const struct meta_mkfs_opts *opts);

/* Opens the file system in dir and bumps the superblock's epoch (the generation given to
 * inodes created from now on). mapsize 0 = default. *out is owned by the caller until
 * meta_db_close. Errors: -ENOENT no file system in dir; -EIO bad or unknown-version
 * superblock; -errno from LMDB. */
int meta_db_open(const char *dir, uint64_t mapsize, struct meta_db **out);
/* Closes the env. No txn may be live. NULL is a no-op. */
void meta_db_close(struct meta_db *db);

/* Runs apply(txn, arg) in one write txn, commits and syncs it before returning; aborts
 * the txn if apply fails. For setup, tools and tests: a server uses commit.h instead.
 * Returns apply's error, or -errno from LMDB/the sync. Any thread; blocks. */
int meta_db_write(struct meta_db *db, int (*apply)(MDB_txn *txn, void *arg), void *arg);
/* Begins a read-only txn (mdb_txn_begin MDB_RDONLY) holding map_lock shared; end it
 * with meta_db_read_end (never a bare mdb_txn_abort). Not nested in one thread. Returns
 * 0 or -errno. */
int meta_db_read_begin(struct meta_db *db, MDB_txn **txn);
/* Aborts a txn of meta_db_read_begin and releases map_lock. */
void meta_db_read_end(struct meta_db *db, MDB_txn *txn);
/* map_lock shared around a reset-and-renewed read txn (the loop thread's). */
void meta_db_map_rdlock(struct meta_db *db);
void meta_db_map_unlock(struct meta_db *db);

/* Maps an LMDB return code to 0 or -errno: MDB_NOTFOUND -ENOENT, MDB_KEYEXIST -EEXIST,
 * MDB_MAP_FULL/MDB_TXN_FULL -ENOSPC, MDB_READERS_FULL -EAGAIN, other MDB_* -EIO,
 * positive errno -errno. */
int meta_mdb_err(int rc);
/* Set (per thread) when meta_mdb_err saw MDB_MAP_FULL: the writer clears it before a
 * batch and grows the map only if it is set (space.c). */
extern _Thread_local bool meta_mdb_map_full;

/* Every write to the env goes through these three (the raw calls are poisoned below).
 * They count write attempts per thread: the group commit applies ops directly in the
 * batch txn, and an op that fails must not leave half its writes there. If it attempted
 * none, nothing changed and the batch goes on; otherwise the batch is redone with one
 * nested txn per op (commit.c). Write txns are used by one thread (LMDB's rule), so a
 * thread-local count is exact. */
extern _Thread_local uint64_t meta_mdb_writes;
static inline int meta_mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v,
			       unsigned flags)
{
	meta_mdb_writes++;
	return mdb_put(txn, dbi, k, v, flags);
}
static inline int meta_mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v)
{
	meta_mdb_writes++;
	return mdb_del(txn, dbi, k, v);
}
static inline int meta_mdb_cursor_del(MDB_cursor *cur, unsigned flags)
{
	meta_mdb_writes++;
	return mdb_cursor_del(cur, flags);
}
#pragma GCC poison mdb_put mdb_del mdb_cursor_del mdb_cursor_put mdb_drop

/* Big-endian key encoding. */
static inline void meta_be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}
static inline uint64_t meta_get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}
static inline void meta_be32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}
static inline uint32_t meta_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Current wall-clock time in ns since the epoch (CLOCK_REALTIME). */
int64_t meta_now_ns(void);

#endif
