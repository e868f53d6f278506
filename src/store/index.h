/* Per-target index of objects in LMDB: (ino, stripe) -> committed version, pending
 * version, length. It lets a restarted store recognise objects a crash tore.
 *
 * Protocol, per mutation of an object (write, truncate, delete), called by object.c
 * while it holds that object's exclusive lock:
 *     store_index_begin()  -- before the files are touched: the record on disk now says
 *                             pending != committed ("in flux")
 *     ... change the files ...
 *     store_index_end()    -- success: committed = pending, length recorded
 * An object whose record says pending != committed at open is *torn*.
 *
 * Batching (DESIGN): begin must reach the LMDB file before the data does, so it is
 * synchronous, but concurrent begins share one write transaction (group commit: the
 * first waiter commits everyone queued). An object whose record on disk is already in
 * flux needs no transaction at all, so a stream of writes to one object costs one
 * transaction per flush interval, not one per write. end() only updates memory; a
 * flush (background thread every sync_interval_ms, store_index_flush/sync, close)
 * writes committed records of idle objects in one transaction.
 *
 * Durability: the environment is opened MDB_NOMETASYNC: a commit syncs the pages it
 * wrote, then writes the meta page that makes them current without waiting for it. A
 * killed process (SIGKILL, crash) loses nothing and torn detection is exact. After a
 * power loss or kernel crash the index is intact (never a meta page ahead of its tree)
 * and as of its last commit or the one before; objects changed since may be torn
 * without being listed -- their chunks still fail checksum verification on read, so
 * damage is reported, never returned as data. store_index_sync (every
 * sync_interval_ms, and on every store_obj_fsync) makes the last commit durable too.
 *
 * Threads: every function is safe from any thread, except open/close. */
#ifndef WEFT_STORE_INDEX_H
#define WEFT_STORE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store_index;

struct store_index_opts {
	size_t map_size;             /* LMDB map size in bytes; 0: 4 GiB */
	unsigned sync_interval_ms;   /* flush + fsync period; 0: no background thread */
};

struct store_index_rec {
	uint64_t ino;
	uint32_t stripe;
	uint64_t committed, pending; /* versions: +1 per successful mutation */
	uint64_t length;             /* object size at the last committed mutation */
	uint64_t stamp;              /* stamp of the object's files at that mutation (the
	                              * data file's ctime in ns, see object.h); 0: unknown
	                              * (a record written before stamps existed) */
};

/* An object found torn at open, and what recovery found (filled by object.c). */
struct store_torn {
	struct store_index_rec rec;  /* record as found */
	uint64_t size;               /* object size after recovery; 0 if missing */
	uint64_t cut_from;           /* size before a torn tail was cut off; 0: not cut */
	uint64_t nbad;               /* chunks that failed verification (left bad) */
	uint64_t first_bad;          /* first bad chunk, valid when nbad > 0 */
	uint64_t nrepaired;          /* chunks whose CRC was a zero-extension: fixed */
	bool missing;                /* object files gone (e.g. torn delete) */
};

struct store_index_stats {
	uint64_t begins;             /* store_index_begin calls */
	uint64_t begin_txns;         /* write transactions committed for begins */
	uint64_t flush_txns;         /* write transactions committed by flushes */
	uint64_t syncs;              /* mdb_env_sync calls */
};

/* Opens (creating) the LMDB environment in directory dir (created if missing) and
 * scans it for torn objects. *out is owned by the caller: store_index_close.
 * Errors: -errno from mkdir, LMDB errors mapped to -errno (-ENOSPC for a full map,
 * -EIO for a corrupt environment), -ENOMEM. */
int store_index_open(const char *dir, const struct store_index_opts *opts,
		     struct store_index **out);
/* Stops the flusher, flushes idle objects, syncs, closes. Objects still in a mutation
 * keep a pending record on disk, as after a crash. NULL is a no-op. */
void store_index_close(struct store_index *idx);

/* Marks (ino, stripe) in flux before its files change; *version is the version the
 * mutation will commit. Blocks until the record is in the LMDB file (page cache).
 * Errors: -ENOSPC (map full), -EIO, -ENOMEM; on error the files must not be touched. */
int store_index_begin(struct store_index *idx, uint64_t ino, uint32_t stripe, uint64_t *version);
/* Ends the mutation begun with store_index_begin. ok: committed = version, length and
 * stamp recorded; !ok: the record stays in flux on disk (the object will be re-verified at
 * restart). remove: the object was deleted; its record is dropped. Never fails. */
void store_index_end(struct store_index *idx, uint64_t ino, uint32_t stripe, uint64_t version,
		     uint64_t length, uint64_t stamp, bool ok, bool remove);

/* Current record of (ino, stripe), including unflushed changes. -ENOENT if none. */
int store_index_get(struct store_index *idx, uint64_t ino, uint32_t stripe,
		    struct store_index_rec *out);
/* Lists up to max records with key >= (ino, stripe), in (ino, stripe) order, after a
 * flush. *n is the number stored in out. Returns 0 or -errno. */
int store_index_list(struct store_index *idx, uint64_t ino, uint32_t stripe,
		     struct store_index_rec *out, size_t max, size_t *n);

/* Writes committed records of idle objects (no fsync). Returns 0 or -errno. */
int store_index_flush(struct store_index *idx);
/* Flush, then fsync the LMDB file, unless a sync that began after the caller's last
 * change already completed (concurrent callers share one fsync). 0 or -errno. */
int store_index_sync(struct store_index *idx);

/* Objects torn at open: array owned by the index, valid until close. During open,
 * recovery (object.c) may update the entries' results via store_index_torn_mut. */
const struct store_torn *store_index_torn(struct store_index *idx, size_t *n);
struct store_torn *store_index_torn_mut(struct store_index *idx, size_t *n);
/* Settles a torn record after recovery: committed = pending, length, stamp; or removes
 * it (remove). Returns 0 or -errno. Recovery only. */
int store_index_settle(struct store_index *idx, uint64_t ino, uint32_t stripe,
		       uint64_t length, uint64_t stamp, bool remove);

/* Records stamp as the files' stamp of (ino, stripe) now, outside a mutation (one
 * write transaction): for files found changed in place whose damage the chunks' CRCs
 * report (object_recover.c store_obj_old_copy). The object's lock must be held; -EBUSY if
 * the record is in flux. Returns 0 or -errno. */
int store_index_restamp(struct store_index *idx, uint64_t ino, uint32_t stripe, uint64_t stamp);

/* Write sequence of the index: the id of its last committed LMDB transaction. It only
 * grows while the index lives; an index restored from an older copy, or created anew,
 * reports less than it did (meta compares, see meta_chains_vouch). */
uint64_t store_index_wseq(struct store_index *idx);

void store_index_get_stats(struct store_index *idx, struct store_index_stats *out);

#endif
