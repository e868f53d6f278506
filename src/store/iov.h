/* Byte-range helpers over iovec arrays: length, slicing, CRC32C and copies.
 *
 * Every function borrows the caller's iovec array and the memory it points to; none
 * allocates. All are pure and safe from any thread. Ranges are byte offsets counted
 * from the start of the array; callers pass ranges inside the array (checked by assert). */
#ifndef WEFT_STORE_IOV_H
#define WEFT_STORE_IOV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Total bytes described by iov[0..cnt). */
size_t store_iov_len(const struct iovec *iov, int cnt);

/* Writes into out[0..max) the segments covering bytes [off, off+len) of iov.
 * Returns the number of segments written (0 when len is 0), or -EINVAL if more than
 * max would be needed. */
int store_iov_slice(const struct iovec *iov, int cnt, size_t off, size_t len,
		    struct iovec *out, int max);

/* CRC32C of bytes [off, off+len) of iov, continuing from seed. */
uint32_t store_iov_crc(uint32_t seed, const struct iovec *iov, int cnt, size_t off, size_t len);

/* Copies len bytes from src into bytes [off, off+len) of iov. */
void store_iov_copy_in(const struct iovec *iov, int cnt, size_t off, const void *src, size_t len);

/* Copies bytes [off, off+len) of iov into dst. */
void store_iov_copy_out(const struct iovec *iov, int cnt, size_t off, void *dst, size_t len);

#endif
