/* Chunk checksum arithmetic and the CRC sidecar's I/O (see crcfile.h). */
#include "store/crcfile.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/crc.h"

static uint32_t zero_crc[WEFT_CHUNK_SIZE + 1];
static pthread_once_t zero_once = PTHREAD_ONCE_INIT;
static const uint8_t zero_chunk[WEFT_CHUNK_SIZE];

static void zero_init(void)
{
	uint32_t c = 0;
	zero_crc[0] = 0;
	for (uint32_t i = 1; i <= WEFT_CHUNK_SIZE; i++) {
		c = crc32c(c, zero_chunk, 1);
		zero_crc[i] = c;
	}
}

uint32_t store_crc_zero(uint32_t len)
{
	pthread_once(&zero_once, zero_init);
	return zero_crc[len];
}

uint32_t store_crc_extend_zeros(uint32_t crc, uint64_t n)
{
	while (n > 0) {
		size_t take = n < sizeof(zero_chunk) ? (size_t)n : sizeof(zero_chunk);
		crc = crc32c(crc, zero_chunk, take);
		n -= take;
	}
	return crc;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_IS_LE 1
#else
#define HOST_IS_LE 0
#endif

int store_crc_read(int fd, uint64_t first, size_t n, uint32_t *out)
{
	size_t want = n * 4, got = 0;
	off_t off = (off_t)(first * 4);
	char *p = (char *)out;
	while (got < want) {
		ssize_t r = pread(fd, p + got, want - got, off + (off_t)got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	memset(p + got, 0, want - got);
	if (!HOST_IS_LE)
		for (size_t i = 0; i < n; i++)
			out[i] = get_le32((const uint8_t *)&out[i]);
	return 0;
}

int store_crc_write(int fd, uint64_t first, size_t n, const uint32_t *in)
{
	size_t want = n * 4, done = 0;
	const char *p = (const char *)in;
	uint32_t *tmp = NULL;
	if (!HOST_IS_LE) {
		tmp = malloc(want);
		if (!tmp)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			put_le32((uint8_t *)&tmp[i], in[i]);
		p = (const char *)tmp;
	}
	int rc = 0;
	while (done < want) {
		ssize_t w = pwrite(fd, p + done, want - done, (off_t)(first * 4 + done));
		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		done += (size_t)w;
	}
	free(tmp);
	return rc;
}

/* The attribute's entries, as many as it holds (<= STORE_CRC_INLINE); *n: that many. */
static int xattr_get(int fd, uint8_t *raw, size_t *n)
{
	ssize_t r = fgetxattr(fd, STORE_CRC_XATTR, raw, 4 * STORE_CRC_INLINE);
	if (r < 0 && errno == ENODATA)
		r = 0;
	else if (r < 0)
		return -errno;
	*n = (size_t)r / 4;
	return 0;
}

int store_crc_xattr_read(int fd, uint64_t first, size_t n, uint32_t *out)
{
	uint8_t raw[4 * STORE_CRC_INLINE];
	size_t have = 0;
	int rc = xattr_get(fd, raw, &have);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		out[i] = first + i < have ? get_le32(raw + 4 * (first + i)) : 0;
	return 0;
}

int store_crc_xattr_write(int fd, uint64_t first, size_t n, const uint32_t *in)
{
	uint8_t raw[4 * STORE_CRC_INLINE] = {0};
	size_t have = 0;
	int rc = xattr_get(fd, raw, &have);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		put_le32(raw + 4 * (first + i), in[i]);
	size_t len = first + n > have ? first + n : have;
	if (fsetxattr(fd, STORE_CRC_XATTR, raw, 4 * len, 0) < 0)
		return -errno;
	return 0;
}

int store_crc_xattr_truncate(int fd, uint64_t nentries)
{
	uint8_t raw[4 * STORE_CRC_INLINE];
	size_t have = 0;
	int rc = xattr_get(fd, raw, &have);
	if (rc || have <= nentries)
		return rc;
	if (fsetxattr(fd, STORE_CRC_XATTR, raw, 4 * nentries, 0) < 0)
		return -errno;
	return 0;
}

int store_crc_xattr_present(int fd)
{
	if (fgetxattr(fd, STORE_CRC_XATTR, NULL, 0) >= 0)
		return 1;
	if (errno == ENODATA)
		return 0;
	return errno == ENOTSUP ? -EOPNOTSUPP : -errno;
}
