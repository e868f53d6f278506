/* Chunk checksums of objects: chunk/piece arithmetic and the CRC sidecar file.
 *
 * An object is cut into fixed chunks of WEFT_CHUNK_SIZE bytes. The checksum of chunk c
 * is the CRC32C of its *coverage*, bytes [c*CHUNK, min((c+1)*CHUNK, object size)).
 * The sidecar "<obj>.crc" holds one little-endian u32 *entry* per chunk at offset 4*c:
 *
 *     entry = crc32c(coverage) XOR crc32c(coverage-length zero bytes)
 *
 * so an all-zero chunk, and in particular a chunk never written (a hole in both files),
 * has entry 0, which is what a hole in the sidecar reads as. No marker is needed to
 * tell "never written" from "written": both mean the same bytes. Invariant kept by
 * object.c: entries of chunks at or past the object's last chunk are zero.
 *
 * A *piece* is the part of a byte range inside one chunk: [off, off+len) is split at
 * every multiple of WEFT_CHUNK_SIZE; the wire carries one CRC32C per piece.
 *
 * All functions are safe from any thread; I/O functions return 0 or -errno. */
#ifndef WEFT_STORE_CRCFILE_H
#define WEFT_STORE_CRCFILE_H

#include <stddef.h>
#include <stdint.h>

#include "weft/types.h"

#define STORE_CHUNK ((uint64_t)WEFT_CHUNK_SIZE)

/* Number of pieces of [off, off+len): 0 when len is 0. */
static inline uint64_t store_crc_npieces(uint64_t off, uint64_t len)
{
	if (len == 0)
		return 0;
	return (off + len - 1) / STORE_CHUNK - off / STORE_CHUNK + 1;
}

/* Number of chunks of an object of `size` bytes. */
static inline uint64_t store_crc_nchunks(uint64_t size)
{
	return (size + STORE_CHUNK - 1) / STORE_CHUNK;
}

/* CRC32C of len zero bytes, 0 <= len <= WEFT_CHUNK_SIZE (table lookup; the table is
 * built on first use). */
uint32_t store_crc_zero(uint32_t len);

/* Converts between a chunk's CRC32C and its sidecar entry; len is the coverage length. */
static inline uint32_t store_crc_to_entry(uint32_t crc, uint32_t len)
{
	return crc ^ store_crc_zero(len);
}
static inline uint32_t store_crc_from_entry(uint32_t entry, uint32_t len)
{
	return entry ^ store_crc_zero(len);
}

/* Continues crc over n zero bytes. */
uint32_t store_crc_extend_zeros(uint32_t crc, uint64_t n);

/* Inline entries. The first STORE_CRC_INLINE entries of an object (its first 512 KiB)
 * may live in an extended attribute of the data file instead, STORE_CRC_XATTR: the same
 * little-endian u32 entries, as many as were ever written (absent entries read as 0).
 * 32 bytes fit inside an ext4 inode (256-byte inodes), so a small object is one file
 * and one inode, not two, and reading its entries costs no I/O once the data file is
 * open. Entries from STORE_CRC_INLINE on stay in the sidecar at their usual offsets.
 * An object uses the attribute only if it has no sidecar from before (object.c). */
#define STORE_CRC_INLINE 8u
#define STORE_CRC_XATTR "user.weft.crc"

/* Reads inline entries [first, first+n) (first + n <= STORE_CRC_INLINE) of data file fd
 * into out. 0 or -errno. */
int store_crc_xattr_read(int fd, uint64_t first, size_t n, uint32_t *out);
/* Writes inline entries [first, first+n) (first + n <= STORE_CRC_INLINE). 0 or -errno. */
int store_crc_xattr_write(int fd, uint64_t first, size_t n, const uint32_t *in);
/* Drops inline entries from nentries on (they read as 0 after). 0 or -errno. */
int store_crc_xattr_truncate(int fd, uint64_t nentries);
/* Whether fd has inline entries: 1 yes, 0 no, -errno (-EOPNOTSUPP: the file system
 * has no user extended attributes). */
int store_crc_xattr_present(int fd);

/* Reads entries [first, first+n) of the sidecar fd into out (host order). Entries past
 * the end of the file read as 0. Returns 0 or -errno (pread). */
int store_crc_read(int fd, uint64_t first, size_t n, uint32_t *out);

/* Writes entries [first, first+n) from in (host order) with one pwrite (looping on
 * short writes). Returns 0 or -errno; on error some entries may have been written. */
int store_crc_write(int fd, uint64_t first, size_t n, const uint32_t *in);

#endif
