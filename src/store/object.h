/* Objects of a storage target: one local file per (ino, stripe), with CRC32C chunk
 * checksums in a sidecar file, an LMDB index of versions and a bounded fd cache.
 *
 * DESIGN. Files live under <target>/objects/XX/YY/<ino:016x>.<stripe> (+ ".crc"), where
 * XX = (ino >> 8) & 0xff and YY = ino & 0xff, both two hex digits: paths are built from
 * numbers only. Checksums cover fixed WEFT_CHUNK_SIZE chunks (crcfile.h). Each object
 * has a reader/writer lock (1024 locks shared by hashing (ino, stripe)): reads and
 * fsync/stat take it shared, write/truncate/delete exclusive, so operations on one
 * object are serialised against mutations and those on different objects run in
 * parallel. Every function below may be called from any thread, concurrently, once
 * store_obj_open has returned and until store_obj_close is called.
 *
 * Wire convention for data and checksums: the bytes of a read or write of [off,
 * off+len) are split at multiples of WEFT_CHUNK_SIZE into pieces (store_crc_npieces);
 * there is one CRC32C per piece, in order. When the target was formatted without
 * checksums, CRCs are neither checked nor stored, and reads return them as 0.
 *
 * Write: every piece's CRC is checked before anything is written (mismatch:
 * -WEFT_ECHECKSUM, res->bad_piece, nothing written). Partial chunks are merged with the
 * existing chunk, which is verified first (a bad existing chunk: -WEFT_ECHECKSUM,
 * res->bad_chunk, nothing written; a full-chunk overwrite repairs it). Then data
 * (one pwritev), then sidecar entries (one or two pwrites). On a failed write nothing
 * is acknowledged: bytes appended past the old end are cut off again; bytes that
 * overwrote existing data cannot be restored, so the chunks they touched fail
 * verification until rewritten or resynced (logged, and the index keeps the object
 * in flux so a restart re-verifies it).
 * Read: whole chunks covering the range are read (one preadv, full chunks straight
 * into the caller's buffers), each is verified against its stored CRC (mismatch:
 * -WEFT_ECHECKSUM, res->bad_chunk; the caller's buffers then hold undefined bytes and
 * must not be sent), then one CRC per returned piece is produced (for whole chunks,
 * the verified CRC itself). Holes read as zeros; reads past the end are short.
 *
 * Errors common to all: -EINVAL (bad arguments), -EIO, -ENOSPC (data, sidecar or
 * index), -ENOMEM, -EMFILE, other -errno from the file system. */
#ifndef WEFT_STORE_OBJECT_H
#define WEFT_STORE_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "store/crcfile.h"
#include "store/index.h"
#include "store/target.h"

/* Largest byte count of one read or write request. */
#define STORE_OBJ_IO_MAX ((size_t)64 << 20)
/* Largest object size (offsets and truncate sizes above are -EFBIG): what off_t names.
 * Objects past 1 TiB are kept in segments (object_seg.c), since ext4 stops at 16 TiB. */
#define STORE_OBJ_SIZE_MAX ((uint64_t)INT64_MAX)

struct store_objs;

struct store_obj_opts {
	size_t fd_cache;              /* objects kept open (two fds each); 0: 1024 */
	unsigned sync_interval_ms;    /* index flush + fsync period; 0: 1000 */
	bool no_sync_thread;          /* no periodic index sync (tests, benches) */
	size_t index_map_size;        /* 0: 4 GiB */
	bool buffered;                /* never write with O_DIRECT (see obj_write) */
};

/* What an operation found, besides its return code. Fields not relevant stay -1/0. */
struct store_obj_result {
	uint64_t size;       /* object size after a write or truncate */
	uint64_t version;    /* committed version after a write or truncate */
	int64_t bad_piece;   /* write: first piece whose CRC did not match its data */
	int64_t bad_chunk;   /* read or write: chunk whose stored CRC did not match */
	uint64_t hole;       /* read with STORE_READ_HOLES: leading hole bytes skipped */
	uint64_t allocated;  /* write: bytes the object's data files take on disk after it */
};

struct store_obj_stat {
	uint64_t size;       /* bytes */
	uint64_t allocated;  /* bytes allocated on the local disk (data file) */
	uint64_t version;    /* committed version from the index (0 if unknown) */
};

/* Opens the objects of target t (borrowed; must outlive the store): creates
 * objects/ and index/, opens the index, and recovers torn objects (verifies their
 * chunks, repairs CRCs of zero-extended chunks, logs one line per torn object, see
 * store_obj_torn). Single-threaded. *out is the caller's: store_obj_close. */
int store_obj_open(struct store_target *t, const struct store_obj_opts *opts,
		   struct store_objs **out);
/* Whether the objects and the index agree enough to be vouched for after a restart:
 * false (and why, into why) when the index lists objects none of whose files exist
 * (objects/ emptied), or objects/ holds files while the index lists none (index lost).
 * Single objects missing are found by reads instead (store_obj_readv_flags). */
bool store_obj_vouch(struct store_objs *s, char *why, size_t cap);
/* Flushes and syncs the index, closes every file. No operation may be running.
 * NULL is a no-op. */
void store_obj_close(struct store_objs *s);

/* Writes the bytes of iov[0..iovcnt) at off into (ino, stripe), creating the object.
 * crcs[ncrcs]: one CRC32C per piece (ncrcs == store_crc_npieces(off, len)), or NULL/0
 * with checksums off. The iovecs and crcs are borrowed for the call. A zero-length
 * write does nothing. Errors: -WEFT_ECHECKSUM (res->bad_piece or res->bad_chunk),
 * -EINVAL (wrong ncrcs, len > STORE_OBJ_IO_MAX), -EFBIG, -ENOSPC, -EIO. res may be NULL. */
int store_obj_writev(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		     const struct iovec *iov, int iovcnt, const uint32_t *crcs, size_t ncrcs,
		     struct store_obj_result *res);
/* store_obj_writev of bytes whose crcs the caller has checked already (against these
 * very bytes): the write does not check them again. */
int store_obj_writev_verified(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
			      const struct iovec *iov, int iovcnt, const uint32_t *crcs,
			      size_t ncrcs, struct store_obj_result *res);
/* store_obj_writev with one buffer. */
int store_obj_write(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		    const void *buf, size_t len, const uint32_t *crcs, size_t ncrcs,
		    struct store_obj_result *res);

/* Reads up to store_iov_len(iov) bytes at off into iov; *nread is the count (short at
 * the end of the object; 0 for a missing object or off past the end). crcs must have
 * room for store_crc_npieces(off, len) entries (may be NULL with checksums off);
 * the first store_crc_npieces(off, *nread) are filled. Errors: -WEFT_ECHECKSUM
 * (res->bad_chunk; iov contents undefined), -EINVAL, -EIO. res may be NULL. */
int store_obj_readv(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		    const struct iovec *iov, int iovcnt, uint32_t *crcs, size_t ncrcs,
		    size_t *nread, struct store_obj_result *res);
/* store_obj_readv with flags: STORE_READ_WRITTEN says the object was written (meta's
 * record), so its absence is -WEFT_EMISSING instead of an empty read; STORE_READ_LOST
 * refuses the read with -WEFT_EMISSING (the caller knows the object is being repaired).
 * Whatever the flags, an object the index lists but whose file is missing, or whose
 * size differs from the index's committed length, is -WEFT_EMISSING (logged). */
#define STORE_READ_WRITTEN 0x1u
#define STORE_READ_LOST    0x2u
/* STORE_READ_HOLES: holes are not read. A leading hole is skipped (res->hole bytes; the
 * data that follows lands at the start of iov, *nread counts it, the CRCs cover it),
 * and a read stops at the last data before the range's end (the rest is a hole, like
 * the object's end). Holes between data inside the range are read as zeros. */
#define STORE_READ_HOLES   0x4u
int store_obj_readv_flags(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
			  const struct iovec *iov, int iovcnt, uint32_t *crcs, size_t ncrcs,
			  size_t *nread, struct store_obj_result *res, unsigned flags);
/* store_obj_readv with one buffer. */
int store_obj_read(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		   void *buf, size_t len, uint32_t *crcs, size_t ncrcs, size_t *nread,
		   struct store_obj_result *res);

/* Sets the object's size to size (creating it if missing), zero-filling when it grows.
 * Errors: -WEFT_ECHECKSUM if the new last chunk was already bad (the truncate is done,
 * the chunk stays bad), -EFBIG, -ENOSPC, -EIO. res may be NULL. */
int store_obj_truncate(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t size,
		       struct store_obj_result *res);

/* Deletes one object (data, sidecar, index record). -ENOENT if it does not exist. */
int store_obj_delete(struct store_objs *s, uint64_t ino, uint32_t stripe);
/* Deletes every stripe of ino held by this target; *ndeleted (may be NULL) counts
 * them. 0 (also when there were none) or the first -errno. */
int store_obj_delete_inode(struct store_objs *s, uint64_t ino, uint64_t *ndeleted);

/* Resync: as store_obj_write, store_obj_truncate and store_obj_delete, but only while
 * the object's committed version is still `expect` (0: no object); otherwise nothing
 * changes and they return -EAGAIN. A copier reads the version, fetches the bytes from
 * another replica, and writes them only if no mutation came in between, so a copy never
 * overwrites newer data. */
int store_obj_write_if(struct store_objs *s, uint64_t expect, uint64_t ino, uint32_t stripe,
		       uint64_t off, const void *buf, size_t len, const uint32_t *crcs,
		       size_t ncrcs, struct store_obj_result *res);
int store_obj_truncate_if(struct store_objs *s, uint64_t expect, uint64_t ino, uint32_t stripe,
			  uint64_t size, struct store_obj_result *res);
int store_obj_delete_if(struct store_objs *s, uint64_t expect, uint64_t ino, uint32_t stripe);
/* The committed version of (ino, stripe), 0 if there is no such object. */
uint64_t store_obj_version(struct store_objs *s, uint64_t ino, uint32_t stripe);

/* Makes the object's data, checksums, directory entry and index record durable
 * (fdatasync, fsync of its directory and of the new directories on the path to it,
 * index sync). -ENOENT if missing. */
int store_obj_fsync(struct store_objs *s, uint64_t ino, uint32_t stripe);
/* Makes the entries of the object directories made since in their parents durable: all
 * of them, or those on the path to ino's objects. 0 or -errno. Any thread. */
int store_obj_sync_dirs(struct store_objs *s);
int store_obj_sync_path(struct store_objs *s, uint64_t ino);

/* The first data extent at or after off: [*data, *hole) in object offsets, *data =
 * st->size when only holes follow; and st as store_obj_stat. -ENOENT if missing. */
int store_obj_extent(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		     struct store_obj_stat *st, uint64_t *data, uint64_t *hole);

/* Size, allocation and version of an object. -ENOENT if missing. */
int store_obj_stat(struct store_objs *s, uint64_t ino, uint32_t stripe,
		   struct store_obj_stat *st);

/* 0 if the object's file is in objects/ now, -ENOENT if not (a cached descriptor of a
 * file removed from under the store is dropped), else -errno. For scrub. */
int store_obj_on_disk(struct store_objs *s, uint64_t ino, uint32_t stripe);

/* 1 if the object's data file in objects/ is not the one its index record vouches for
 * (its stamp differs: restored from an older copy, or replaced, behind the store's
 * back), 0 if it is, or if either is missing or the record is unstamped or in flux;
 * else -errno. A cached descriptor of a file replaced on disk is dropped. For scrub. */
int store_obj_stale(struct store_objs *s, uint64_t ino, uint32_t stripe);

/* Lists up to max objects with (ino, stripe) >= the given key in (ino, stripe) order
 * (from the index: length is as of the last committed mutation). Resume from the last
 * key returned with stripe + 1 (or ino + 1, stripe 0 on overflow). 0 or -errno. */
int store_obj_list(struct store_objs *s, uint64_t ino, uint32_t stripe,
		   struct store_index_rec *out, size_t max, size_t *n);

/* Verifies every chunk of an object (scrub). *nbad counts bad chunks, *first_bad is
 * the first (when *nbad > 0). 0 (also with bad chunks), -ENOENT, or -errno. */
int store_obj_verify(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t *nbad,
		     uint64_t *first_bad);

/* Objects found torn at open and what recovery did (owned by s, valid until close). */
const struct store_torn *store_obj_torn(struct store_objs *s, size_t *n);

/* The store's index and fd cache size (for tests, stats and the bench). */
struct store_index *store_obj_index(struct store_objs *s);
size_t store_obj_open_files(struct store_objs *s);

/* Fills crcs[store_crc_npieces(off, len)] with the CRC32C of each piece of the bytes of
 * iov placed at off: what a writer sends with them. Any thread. */
void store_obj_piece_crcs(uint64_t off, const struct iovec *iov, int iovcnt, uint32_t *crcs);

/* Bytes read and written with O_DIRECT since open (obj_data_io). */
uint64_t store_obj_direct_bytes(struct store_objs *s);

#endif
