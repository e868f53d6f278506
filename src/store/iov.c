/* Byte-range helpers over iovec arrays (see iov.h). */
#include "store/iov.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "common/crc.h"

size_t store_iov_len(const struct iovec *iov, int cnt)
{
	size_t n = 0;
	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* Finds the segment holding byte off; sets *skip to the offset inside it. */
static int seek(const struct iovec *iov, int cnt, size_t off, size_t *skip)
{
	int i = 0;
	while (i < cnt && off >= iov[i].iov_len) {
		off -= iov[i].iov_len;
		i++;
	}
	*skip = off;
	return i;
}

int store_iov_slice(const struct iovec *iov, int cnt, size_t off, size_t len,
		    struct iovec *out, int max)
{
	size_t skip;
	int n = 0;
	for (int i = seek(iov, cnt, off, &skip); len > 0; i++, skip = 0) {
		assert(i < cnt);
		size_t take = iov[i].iov_len - skip;
		if (take > len)
			take = len;
		if (take == 0)
			continue;
		if (n == max)
			return -EINVAL;
		out[n].iov_base = (char *)iov[i].iov_base + skip;
		out[n].iov_len = take;
		n++;
		len -= take;
	}
	return n;
}

uint32_t store_iov_crc(uint32_t seed, const struct iovec *iov, int cnt, size_t off, size_t len)
{
	size_t skip;
	for (int i = seek(iov, cnt, off, &skip); len > 0; i++, skip = 0) {
		assert(i < cnt);
		size_t take = iov[i].iov_len - skip;
		if (take > len)
			take = len;
		seed = crc32c(seed, (const char *)iov[i].iov_base + skip, take);
		len -= take;
	}
	return seed;
}

void store_iov_copy_in(const struct iovec *iov, int cnt, size_t off, const void *src, size_t len)
{
	size_t skip;
	const char *p = src;
	for (int i = seek(iov, cnt, off, &skip); len > 0; i++, skip = 0) {
		assert(i < cnt);
		size_t take = iov[i].iov_len - skip;
		if (take > len)
			take = len;
		memcpy((char *)iov[i].iov_base + skip, p, take);
		p += take;
		len -= take;
	}
}

void store_iov_copy_out(const struct iovec *iov, int cnt, size_t off, void *dst, size_t len)
{
	size_t skip;
	char *p = dst;
	for (int i = seek(iov, cnt, off, &skip); len > 0; i++, skip = 0) {
		assert(i < cnt);
		size_t take = iov[i].iov_len - skip;
		if (take > len)
			take = len;
		memcpy(p, (const char *)iov[i].iov_base + skip, take);
		p += take;
		len -= take;
	}
}
