/* Object reads: whole covering chunks read with one preadv (full chunks straight into
 * the caller's buffers, partial end chunks into scratch), verified against the
 * sidecar, then one CRC per returned piece (see object.h); stat, extents, versions and
 * the index's lists. */
#include "store/object_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/crc.h"
#include "common/log.h"
#include "store/iov.h"
#include "weft/err.h"

#define STACK_ENTRIES 256
#define STACK_IOV 64

static inline uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Zero-fills bytes [from, total) of iov (what lies past the end of a short file). */
static void zero_tail(const struct iovec *iov, int cnt, size_t from)
{
	for (int i = 0; i < cnt; i++) {
		if (from >= iov[i].iov_len) {
			from -= iov[i].iov_len;
			continue;
		}
		memset((char *)iov[i].iov_base + from, 0, iov[i].iov_len - from);
		from = 0;
	}
}

static int read_plain(struct store_objs *s, struct store_fdc_entry *e, uint64_t off,
		      const struct iovec *iov, int iovcnt, size_t n, uint32_t *crcs, size_t ncrcs)
{
	struct iovec stackv[STACK_IOV], *v = stackv;
	int rc = 0;
	if (iovcnt > STACK_IOV && !(v = malloc((size_t)iovcnt * sizeof(*v))))
		return -ENOMEM;
	int k = store_iov_slice(iov, iovcnt, 0, n, v, iovcnt);
	size_t done;
	rc = store_obj_seg_io(s, e, false, v, k, off, &done);
	if (rc == 0 && done < n)
		zero_tail(v, k, done);
	uint64_t np = store_crc_npieces(off, n);
	if (crcs)
		memset(crcs, 0, (size_t)min64(np, ncrcs) * sizeof(*crcs));
	if (v != stackv)
		free(v);
	(void)s;
	return rc;
}

static int read_checked(struct store_objs *s, struct store_fdc_entry *e, uint64_t off,
			const struct iovec *iov, int iovcnt, size_t n, uint64_t S, uint32_t *crcs,
			struct store_obj_result *r)
{
	uint64_t c0 = off / STORE_CHUNK, c1 = (off + n - 1) / STORE_CHUNK, nc = c1 - c0 + 1;
	uint64_t end = off + n;
	/* A chunk is partial when the caller wants less than its whole coverage. */
#define COV_END(c) min64(((c) + 1) * STORE_CHUNK, S)
	bool p0 = off != c0 * STORE_CHUNK || min64(end, (c0 + 1) * STORE_CHUNK) != COV_END(c0);
	bool p1 = c1 != c0 && end != COV_END(c1);
	uint64_t fa = c0 + (p0 ? 1 : 0), fb = c1 - (p1 ? 1 : 0); /* full chunks fa..fb */
	uint8_t *scratch = NULL;
	uint32_t stack_ent[STACK_ENTRIES], *ent = stack_ent;
	struct iovec stackv[STACK_IOV], *v = stackv;
	int maxv = iovcnt + 2, k = 0, rc = 0;
	if (maxv > STACK_IOV && !(v = malloc((size_t)maxv * sizeof(*v))))
		return -ENOMEM;
	if (nc > STACK_ENTRIES && !(ent = malloc(nc * sizeof(*ent)))) {
		rc = -ENOMEM;
		goto out;
	}
	if ((p0 || p1) && !(scratch = aligned_alloc(4096, 2 * STORE_CHUNK))) { /* see obj_data_io */
		rc = -ENOMEM;
		goto out;
	}
	uint8_t *s0 = scratch, *s1 = scratch ? scratch + STORE_CHUNK : NULL;
	if (p0)
		v[k++] = (struct iovec){s0, (size_t)(COV_END(c0) - c0 * STORE_CHUNK)};
	if (fa <= fb) {
		uint64_t a = fa * STORE_CHUNK, b = COV_END(fb);
		int m = store_iov_slice(iov, iovcnt, (size_t)(a - off), (size_t)(b - a), v + k,
					maxv - k);
		k += m;
	}
	if (p1)
		v[k++] = (struct iovec){s1, (size_t)(COV_END(c1) - c1 * STORE_CHUNK)};
	size_t want = (size_t)(COV_END(c1) - c0 * STORE_CHUNK), done;
	rc = store_obj_seg_io(s, e, false, v, k, c0 * STORE_CHUNK, &done);
	if (rc)
		goto out;
	if (done < want)
		zero_tail(v, k, done);
	rc = store_obj_crc_read(s, e, c0, (size_t)nc, ent);
	if (rc)
		goto out;
	for (uint64_t c = c0; c <= c1; c++) {
		uint64_t cs = c * STORE_CHUNK;
		size_t cov = (size_t)(COV_END(c) - cs);
		const uint8_t *sb = (c == c0 && p0) ? s0 : (c == c1 && p1) ? s1 : NULL;
		uint32_t crc = sb ? crc32c(0, sb, cov)
				  : store_iov_crc(0, iov, iovcnt, (size_t)(cs - off), cov);
		if (crc != store_crc_from_entry(ent[c - c0], (uint32_t)cov)) {
			char path[OBJ_PATH_LEN];
			store_obj_path(s, path, e->ino, e->stripe, false);
			log_warn("read objects/%s: chunk %" PRIu64 " fails its checksum", path, c);
			r->bad_chunk = (int64_t)c;
			rc = -WEFT_ECHECKSUM;
			goto out;
		}
		if (sb) {
			uint64_t ws = max64(cs, off), we = min64(cs + STORE_CHUNK, end);
			store_iov_copy_in(iov, iovcnt, (size_t)(ws - off), sb + (ws - cs),
					  (size_t)(we - ws));
			crc = crc32c(0, sb + (ws - cs), (size_t)(we - ws));
		}
		crcs[c - c0] = crc;
	}
#undef COV_END
out:
	free(scratch);
	if (ent != stack_ent)
		free(ent);
	if (v != stackv)
		free(v);
	return rc;
}

/* A lost object: the index has its record but its file is gone, or its file's size is
 * not the length the index committed (replaced by another copy). Object lock held. */
static bool stale_object(struct store_objs *s, uint64_t ino, uint32_t stripe, bool exists,
			 uint64_t size)
{
	struct store_index_rec rec;
	if (store_index_get(s->idx, ino, stripe, &rec) != 0)
		return false;
	if (exists && (rec.committed != rec.pending || rec.length == size))
		return false;
	char path[OBJ_PATH_LEN];
	store_obj_path(s, path, ino, stripe, false);
	if (exists)
		log_warn("read objects/%s: %" PRIu64 " bytes, the index says %" PRIu64
			 ": not served", path, size, rec.length);
	else
		log_warn("read objects/%s: listed in the index but missing: not served", path);
	return true;
}

int store_obj_stale(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	char path[OBJ_PATH_LEN];
	store_obj_path(s, path, ino, stripe, false);
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_wrlock(lk);
	struct stat st;
	struct store_fdc_entry *e = NULL;
	int rc = fstatat(s->root_fd, path, &st, 0) == 0 ? 0 : -errno;
	if (rc == 0)
		rc = store_fdc_get(s->fdc, ino, stripe, false, &e);
	if (rc == 0) {
		/* a descriptor of a file replaced behind us (renamed over) reads the old
		 * inode: drop it, so that the file on disk is what is judged and served */
		struct stat fst;
		if (fstat(e->fd, &fst) != 0 || fst.st_ino != st.st_ino || fst.st_dev != st.st_dev) {
			store_fdc_put(s->fdc, e);
			e = NULL;
			store_fdc_drop(s->fdc, ino, stripe);
			rc = store_fdc_get(s->fdc, ino, stripe, false, &e);
		}
	}
	if (rc == 0)
		rc = store_obj_old_copy(s, e, NULL) ? 1 : 0;
	store_fdc_put(s->fdc, e);
	pthread_rwlock_unlock(lk);
	return rc == -ENOENT ? 0 : rc;
}

/* The data of [from, to): from its first data byte *d to the end *end of its last data
 * extent ([to, to) if the range is all hole), found with SEEK_DATA/SEEK_HOLE, so that a
 * hole is neither read from disk nor sent. */
static void data_span(struct store_objs *s, struct store_fdc_entry *e, uint64_t from,
		      uint64_t to, uint64_t *d, uint64_t *end)
{
	uint64_t x = (uint64_t)store_obj_seg_next_data(s, e, from);
	if (x >= to) {
		*d = *end = to;
		return;
	}
	*d = x;
	uint64_t h = (uint64_t)store_obj_seg_next_hole(s, e, x);
	while (h < to) {
		uint64_t nd = (uint64_t)store_obj_seg_next_data(s, e, h);
		if (nd >= to)
			break;
		h = (uint64_t)store_obj_seg_next_hole(s, e, nd);
		if (h <= nd) /* no progress: take the rest as data */
			h = to;
	}
	*end = min64(h, to);
}

int store_obj_readv(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		    const struct iovec *iov, int iovcnt, uint32_t *crcs, size_t ncrcs,
		    size_t *nread, struct store_obj_result *res)
{
	return store_obj_readv_flags(s, ino, stripe, off, iov, iovcnt, crcs, ncrcs, nread, res, 0);
}

int store_obj_readv_flags(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
			  const struct iovec *iov, int iovcnt, uint32_t *crcs, size_t ncrcs,
			  size_t *nread, struct store_obj_result *res, unsigned flags)
{
	struct store_obj_result r = {.bad_piece = -1, .bad_chunk = -1};
	*nread = 0;
	if (iovcnt < 0 || (iovcnt > 0 && !iov))
		return -EINVAL;
	size_t len = store_iov_len(iov, iovcnt);
	if (len > STORE_OBJ_IO_MAX)
		return -EINVAL;
	if (s->checksums && (ncrcs < store_crc_npieces(off, len) || (len && !crcs)))
		return -EINVAL;
	if (len == 0 || off >= STORE_OBJ_SIZE_MAX)
		goto out_nolock;
	if (flags & STORE_READ_LOST)
		return -WEFT_EMISSING; /* being repaired: not yet whole */
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_rdlock(lk);
	struct store_fdc_entry *e = NULL;
	int rc = store_fdc_get(s->fdc, ino, stripe, false, &e);
	if (rc == -ENOENT) { /* never written (a hole), unless it was */
		rc = (flags & STORE_READ_WRITTEN) || stale_object(s, ino, stripe, false, 0) ?
			     -WEFT_EMISSING : 0;
		goto out;
	}
	if (rc)
		goto out;
	uint64_t S = e->size;
	r.size = S;
	if (stale_object(s, ino, stripe, true, S)) {
		rc = -WEFT_EMISSING;
		goto out;
	}
	if (off >= S)
		goto out_whole;
	size_t n = (size_t)min64(len, S - off);
	if (flags & STORE_READ_HOLES) {
		uint64_t d, end;
		data_span(s, e, off, off + n, &d, &end);
		r.hole = d - off;
		off = d;
		n = (size_t)(end - d);
		if (n == 0)
			goto out_whole;
	}
	if (s->checksums)
		rc = read_checked(s, e, off, iov, iovcnt, n, S, crcs, &r);
	else
		rc = read_plain(s, e, off, iov, iovcnt, n, crcs, ncrcs);
	if (rc == 0 && !store_obj_old_copy(s, e, NULL)) {
		*nread = n;
		store_target_count_read(s->t, n);
	} else if (rc == 0) {
		rc = -WEFT_EMISSING;
	}
	goto out;
out_whole: /* nothing to read past the checks: the copy must still be current */
	if (store_obj_old_copy(s, e, NULL))
		rc = -WEFT_EMISSING;
out:
	store_fdc_put(s->fdc, e);
	pthread_rwlock_unlock(lk);
	if (res)
		*res = r;
	return rc;
out_nolock:
	if (res)
		*res = r;
	return 0;
}

int store_obj_read(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		   void *buf, size_t len, uint32_t *crcs, size_t ncrcs, size_t *nread,
		   struct store_obj_result *res)
{
	struct iovec v = {buf, len};
	return store_obj_readv(s, ino, stripe, off, &v, 1, crcs, ncrcs, nread, res);
}

uint64_t store_obj_version(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	struct store_index_rec rec;
	return store_index_get(s->idx, ino, stripe, &rec) == 0 ? rec.committed : 0;
}

/* Size, allocation and, with the index's record, committed version of an open object. */
static void stat_entry(struct store_objs *s, struct store_fdc_entry *e, bool version,
		       struct store_obj_stat *st)
{
	struct store_index_rec rec;
	st->size = e->size;
	st->allocated = store_obj_seg_allocated(s, e);
	st->version = version && store_index_get(s->idx, e->ino, e->stripe, &rec) == 0 ?
		      rec.committed : 0;
}

int store_obj_stat(struct store_objs *s, uint64_t ino, uint32_t stripe,
		   struct store_obj_stat *st)
{
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_rdlock(lk);
	struct store_fdc_entry *e;
	int rc = store_fdc_get(s->fdc, ino, stripe, false, &e);
	if (rc == 0) {
		stat_entry(s, e, true, st);
		store_fdc_put(s->fdc, e);
	}
	pthread_rwlock_unlock(lk);
	return rc;
}

int store_obj_on_disk(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	char path[OBJ_PATH_LEN];
	struct stat st;
	store_obj_path(s, path, ino, stripe, false);
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_wrlock(lk);
	int rc = fstatat(s->root_fd, path, &st, 0) == 0 ? 0 : -errno;
	if (rc == -ENOENT)
		store_fdc_drop(s->fdc, ino, stripe); /* a descriptor of a file removed behind us */
	pthread_rwlock_unlock(lk);
	return rc;
}

int store_obj_extent(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		     struct store_obj_stat *st, uint64_t *data, uint64_t *hole)
{
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_rdlock(lk);
	struct store_fdc_entry *e;
	int rc = store_fdc_get(s->fdc, ino, stripe, false, &e);
	if (rc == 0) {
		stat_entry(s, e, false, st);
		*data = off < e->size ? (uint64_t)store_obj_seg_next_data(s, e, off) : e->size;
		*hole = *data < e->size ? (uint64_t)store_obj_seg_next_hole(s, e, *data) : e->size;
		store_fdc_put(s->fdc, e);
	}
	pthread_rwlock_unlock(lk);
	return rc;
}

int store_obj_list(struct store_objs *s, uint64_t ino, uint32_t stripe,
		   struct store_index_rec *out, size_t max, size_t *n)
{
	return store_index_list(s->idx, ino, stripe, out, max, n);
}

const struct store_torn *store_obj_torn(struct store_objs *s, size_t *n)
{
	return store_index_torn(s->idx, n);
}
