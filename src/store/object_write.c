/* Object writes: write (new sidecar entries for the chunks touched, a partial chunk
 * read and verified first), truncate, delete and fsync, each under the object's lock
 * held exclusively and recorded in the index (see object.h). */
#include "store/object_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/log.h"
#include "proto/proto.h"
#include "store/iov.h"
#include "weft/err.h"

#define STACK_ENTRIES 256

static inline uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* New sidecar entries for chunks c0..c1 touched by a write of [off, end) on an object
 * of old size S and new size S2; ent[i] is chunk c0 + i. Full chunks take the piece's
 * (verified) CRC; a partial chunk either continues its old CRC (write at or past its
 * old end: no read needed) or is read, verified, and recomputed around the new bytes. */
static int chunk_entries(struct store_objs *s, struct store_fdc_entry *e, uint64_t off,
			 uint64_t end, const struct iovec *iov, int cnt, const uint32_t *crcs,
			 uint64_t S, uint64_t S2, uint32_t *ent, struct store_obj_result *r)
{
	uint64_t c0 = off / STORE_CHUNK, c1 = (end - 1) / STORE_CHUNK;
	uint8_t *scratch = NULL;
	int rc = 0;
	for (uint64_t c = c0; c <= c1; c++) {
		uint64_t cs = c * STORE_CHUNK, ce = cs + STORE_CHUNK;
		uint64_t ws = max64(cs, off), we = min64(ce, end);
		uint64_t ne = min64(ce, S2), oe = S <= cs ? cs : min64(S, ce);
		uint32_t crc;
		if (c != c0 && c != c1) { /* middle chunk: fully covered */
			ent[c - c0] = store_crc_to_entry(crcs[c - c0], WEFT_CHUNK_SIZE);
			continue;
		}
		if (ws == cs && we == ne) {
			crc = crcs[c - c0];
		} else {
			uint32_t old = 0;
			if (oe > cs) {
				rc = store_obj_crc_read(s, e, c, 1, &old);
				if (rc)
					goto out;
			}
			size_t poff = (size_t)(ws - off), plen = (size_t)(we - ws);
			if (ws >= oe) {
				crc = oe > cs ? store_crc_from_entry(old, (uint32_t)(oe - cs)) : 0;
				crc = store_crc_extend_zeros(crc, ws - oe);
				crc = store_iov_crc(crc, iov, cnt, poff, plen);
				crc = store_crc_extend_zeros(crc, ne - we);
			} else {
				if (!scratch && !(scratch = malloc(STORE_CHUNK))) {
					rc = -ENOMEM;
					goto out;
				}
				size_t olen = (size_t)(oe - cs);
				rc = store_obj_seg_pread(s, e, scratch, olen, cs);
				if (rc)
					goto out;
				if (crc32c(0, scratch, olen) !=
				    store_crc_from_entry(old, (uint32_t)olen)) {
					char path[OBJ_PATH_LEN];
					store_obj_path(s, path, e->ino, e->stripe, false);
					log_warn("write objects/%s: existing chunk %" PRIu64
						 " fails its checksum; partial write refused", path, c);
					r->bad_chunk = (int64_t)c;
					rc = -WEFT_ECHECKSUM;
					goto out;
				}
				crc = crc32c(0, scratch, (size_t)(ws - cs));
				crc = store_iov_crc(crc, iov, cnt, poff, plen);
				if (we < oe)
					crc = crc32c(crc, scratch + (we - cs), (size_t)(oe - we));
				crc = store_crc_extend_zeros(crc, ne - max64(we, oe));
			}
		}
		ent[c - c0] = store_crc_to_entry(crc, (uint32_t)(ne - cs));
	}
out:
	free(scratch);
	return rc;
}

static void log_damage(const struct store_objs *s, struct store_fdc_entry *e, const char *what, uint64_t a, uint64_t b, int err)
{
	char path[OBJ_PATH_LEN];
	store_obj_path(s, path, e->ino, e->stripe, false);
	log_warn("write objects/%s: %s failed (%s); chunks %" PRIu64 "..%" PRIu64
		 " may fail verification until rewritten", path, what, weft_strerror(err),
		 a / STORE_CHUNK, (b - 1) / STORE_CHUNK);
}

/* The object's committed version is still *expect (0: no object)? 0, -EAGAIN if not.
 * NULL expect: always. Called with the object's lock held exclusively. */
static int expect_ok(struct store_objs *s, uint64_t ino, uint32_t stripe, const uint64_t *expect)
{
	if (!expect)
		return 0;
	struct store_index_rec rec;
	int rc = store_index_get(s->idx, ino, stripe, &rec);
	if (rc && rc != -ENOENT)
		return rc;
	return (rc ? 0 : rec.committed) == *expect ? 0 : -EAGAIN;
}

/* Before a mutation of e: 0 if its data file is the one the index vouches for (or the
 * index has no stamp for it, or it was damaged in place: see store_obj_old_copy), else the
 * record's stamp, which the mutation keeps, so that a file put back from an older copy
 * stays stale however it is written to afterwards: a write changes some bytes, and the
 * others would still be old. */
static uint64_t stale_stamp(struct store_objs *s, struct store_fdc_entry *e)
{
	uint64_t recorded = 0;
	return store_obj_old_copy(s, e, &recorded) ? recorded : 0;
}

static int obj_writev(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		      const struct iovec *iov, int iovcnt, const uint32_t *crcs, size_t ncrcs,
		      const uint64_t *expect, bool verified, struct store_obj_result *res)
{
	struct store_obj_result r = {.bad_piece = -1, .bad_chunk = -1};
	uint32_t stack_ent[STACK_ENTRIES + 1], *ent = stack_ent;
	int rc = 0;
	if (iovcnt < 0 || (iovcnt > 0 && !iov))
		return -EINVAL;
	size_t len = store_iov_len(iov, iovcnt);
	if (len > STORE_OBJ_IO_MAX)
		return -EINVAL;
	if (off > STORE_OBJ_SIZE_MAX || len > STORE_OBJ_SIZE_MAX - off)
		return -EFBIG;
	uint64_t np = store_crc_npieces(off, len);
	if (s->checksums) {
		if (ncrcs != np || (np && !crcs))
			return -EINVAL;
		/* Verify every piece before touching anything (no lock needed), unless the
		 * caller already did (a chain member checks before it forwards). */
		int64_t bad = verified ? -1 : proto_crcs_verify(off, iov, iovcnt, crcs);
		if (bad >= 0) {
			r.bad_piece = bad;
			rc = -WEFT_ECHECKSUM;
			goto out_nolock;
		}
	}
	if (len == 0)
		goto out_nolock;

	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_wrlock(lk);
	struct store_fdc_entry *e = NULL;
	uint64_t ver = 0, S = 0, S2 = 0, end = off + len, keep = 0;
	bool began = false, ok = true;
	rc = expect_ok(s, ino, stripe, expect);
	if (rc == 0)
		rc = store_fdc_get(s->fdc, ino, stripe, true, &e);
	if (rc)
		goto out;
	S = e->size;
	S2 = max64(S, end);
	keep = stale_stamp(s, e);
	rc = store_index_begin(s->idx, ino, stripe, &ver);
	if (rc)
		goto out;
	began = true;

	uint64_t c0 = off / STORE_CHUNK, c1 = (end - 1) / STORE_CHUNK, n = c1 - c0 + 1;
	uint64_t L = S / STORE_CHUNK;
	uint32_t old_last = 0;
	bool ext = s->checksums && S % STORE_CHUNK != 0 && S2 > S && L < c0;
	if (s->checksums) {
		if (n > STACK_ENTRIES && !(ent = malloc((n + 1) * sizeof(*ent)))) {
			rc = -ENOMEM;
			goto out;
		}
		rc = chunk_entries(s, e, off, end, iov, iovcnt, crcs, S, S2, ent + 1, &r);
		if (rc)
			goto out; /* nothing written */
		if (ext) { /* the old last chunk now extends with zeros to its full size */
			rc = store_obj_crc_read(s, e, L, 1, &old_last);
			if (rc)
				goto out;
			uint32_t olen = (uint32_t)(S - L * STORE_CHUNK);
			uint32_t crc = store_crc_from_entry(old_last, olen);
			crc = store_crc_extend_zeros(crc, WEFT_CHUNK_SIZE - olen);
			ent[0] = store_crc_to_entry(crc, WEFT_CHUNK_SIZE);
		}
	}

	size_t done = 0;
	rc = store_obj_seg_io(s, e, true, iov, iovcnt, off, &done);
	if (rc) {
		if (end > S && off + done > S && store_obj_seg_trunc_data(s, e, S) < 0)
			log_error("write rollback: ftruncate: %s", strerror(errno));
		if (done > 0 && off < S) {
			log_damage(s, e, "data write", off, min64(off + done, S), rc);
			ok = false;
		}
		goto out;
	}
	if (s->checksums) {
		if (ext && L + 1 == c0)
			rc = store_obj_crc_write(s, e, L, n + 1, ent);
		else
			rc = store_obj_crc_write(s, e, c0, n, ent + 1);
		if (rc == 0 && ext && L + 1 != c0)
			rc = store_obj_crc_write(s, e, L, 1, ent);
		if (rc) {
			/* Undo the extension; entries past the old end must read as zero. */
			if (end > S && store_obj_seg_trunc_data(s, e, S) < 0)
				log_error("write rollback: ftruncate: %s", strerror(errno));
			if (store_obj_seg_trunc_crc(s, e, store_crc_nchunks(S)) < 0)
				log_error("write rollback: ftruncate sidecar: %s", strerror(errno));
			if (ext && store_obj_crc_write(s, e, L, 1, &old_last) != 0)
				log_error("write rollback: restore entry of chunk %" PRIu64, L);
			if (off < S) {
				log_damage(s, e, "checksum write", off, min64(end, S), rc);
				ok = false;
			}
			goto out;
		}
	}
	e->size = S2;
	store_target_count_write(s->t, len);

out:
	if (rc && e) { /* the file may have changed under us: trust the disk */
		struct stat st;
		if (fstat(e->fd, &st) == 0) {
			e->size = (uint64_t)st.st_size;
			store_obj_seg_size(s, e);
		}
	}
	if (began)
		store_index_end(s->idx, ino, stripe, ver, e->size, keep ? keep : store_obj_stamp(e->fd),
				ok, false);
	r.size = e ? e->size : 0;
	r.version = rc == 0 ? ver : 0;
	r.allocated = rc == 0 && e ? store_obj_seg_allocated(s, e) : 0;
	store_fdc_put(s->fdc, e);
	pthread_rwlock_unlock(lk);
	if (ent != stack_ent)
		free(ent);
out_nolock:
	if (res)
		*res = r;
	return rc;
}

int store_obj_writev(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		     const struct iovec *iov, int iovcnt, const uint32_t *crcs, size_t ncrcs,
		     struct store_obj_result *res)
{
	return obj_writev(s, ino, stripe, off, iov, iovcnt, crcs, ncrcs, NULL, false, res);
}

int store_obj_writev_verified(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
			      const struct iovec *iov, int iovcnt, const uint32_t *crcs,
			      size_t ncrcs, struct store_obj_result *res)
{
	return obj_writev(s, ino, stripe, off, iov, iovcnt, crcs, ncrcs, NULL, true, res);
}

int store_obj_write_if(struct store_objs *s, uint64_t expect, uint64_t ino, uint32_t stripe,
		       uint64_t off, const void *buf, size_t len, const uint32_t *crcs,
		       size_t ncrcs, struct store_obj_result *res)
{
	struct iovec v = {(void *)buf, len};
	return obj_writev(s, ino, stripe, off, &v, 1, crcs, ncrcs, &expect, false, res);
}

int store_obj_write(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		    const void *buf, size_t len, const uint32_t *crcs, size_t ncrcs,
		    struct store_obj_result *res)
{
	struct iovec v = {(void *)buf, len};
	return store_obj_writev(s, ino, stripe, off, &v, 1, crcs, ncrcs, res);
}

/* Sidecar changes of a truncate from S to T, computed before the data changes.
 * chunk and entry name the one entry to write (none if *has == false). A bad last chunk
 * is left bad: its old entry no longer matches any coverage (-WEFT_ECHECKSUM). */
static int truncate_entry(struct store_objs *s, struct store_fdc_entry *e, uint64_t S, uint64_t T, bool *has,
			  uint64_t *chunk, uint32_t *entry)
{
	*has = false;
	if (T < S) {
		if (T % STORE_CHUNK == 0)
			return 0;
		uint64_t c = T / STORE_CHUNK, cs = c * STORE_CHUNK;
		size_t olen = (size_t)(min64(S, cs + STORE_CHUNK) - cs), nlen = (size_t)(T - cs);
		uint32_t old;
		int rc = store_obj_crc_read(s, e, c, 1, &old);
		if (rc)
			return rc;
		uint8_t *buf = malloc(STORE_CHUNK);
		if (!buf)
			return -ENOMEM;
		rc = store_obj_seg_pread(s, e, buf, olen, cs);
		if (rc == 0) {
			uint32_t head = crc32c(0, buf, nlen);
			uint32_t full = crc32c(head, buf + nlen, olen - nlen);
			if (full != store_crc_from_entry(old, (uint32_t)olen)) {
				rc = -WEFT_ECHECKSUM;
			} else {
				*has = true;
				*chunk = c;
				*entry = store_crc_to_entry(head, (uint32_t)nlen);
			}
		}
		free(buf);
		return rc;
	}
	if (S % STORE_CHUNK == 0)
		return 0;
	uint64_t c = S / STORE_CHUNK, cs = c * STORE_CHUNK;
	uint32_t olen = (uint32_t)(S - cs), nlen = (uint32_t)(min64(T, cs + STORE_CHUNK) - cs);
	uint32_t old;
	int rc = store_obj_crc_read(s, e, c, 1, &old);
	if (rc)
		return rc;
	uint32_t crc = store_crc_extend_zeros(store_crc_from_entry(old, olen), nlen - olen);
	*has = true;
	*chunk = c;
	*entry = store_crc_to_entry(crc, nlen);
	return 0;
}

static int obj_truncate(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t size,
			const uint64_t *expect, struct store_obj_result *res)
{
	struct store_obj_result r = {.bad_piece = -1, .bad_chunk = -1};
	if (size > STORE_OBJ_SIZE_MAX)
		return -EFBIG;
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_wrlock(lk);
	struct store_fdc_entry *e = NULL;
	uint64_t ver = 0, S = 0, keep = 0;
	bool began = false, ok = true;
	int rc = expect_ok(s, ino, stripe, expect);
	if (rc == 0)
		rc = store_fdc_get(s->fdc, ino, stripe, true, &e);
	if (rc)
		goto out;
	S = e->size;
	if (size > 0) /* to 0: nothing old is left */
		keep = stale_stamp(s, e);
	rc = store_index_begin(s->idx, ino, stripe, &ver);
	if (rc)
		goto out;
	began = true;
	if (size == S)
		goto out;
	bool has = false;
	uint64_t chunk = 0;
	uint32_t entry = 0;
	int bad = 0;
	if (s->checksums) {
		rc = truncate_entry(s, e, S, size, &has, &chunk, &entry);
		if (rc == -WEFT_ECHECKSUM) {
			bad = rc;
			r.bad_chunk = (int64_t)(size / STORE_CHUNK);
			rc = 0;
		}
		if (rc)
			goto out;
	}
	if (store_obj_seg_trunc_data(s, e, size) < 0) {
		rc = -errno;
		char path[OBJ_PATH_LEN];
		store_obj_path(s, path, ino, stripe, false);
		log_error("ftruncate objects/%s: %s", path, strerror(errno));
		goto out;
	}
	e->size = size;
	if (s->checksums) {
		if (size < S && store_obj_seg_trunc_crc(s, e, store_crc_nchunks(size)) < 0)
			rc = -errno;
		if (rc == 0 && has)
			rc = store_obj_crc_write(s, e, chunk, 1, &entry);
		if (rc) {
			ok = false;
			log_damage(s, e, "truncate checksum update", size / STORE_CHUNK * STORE_CHUNK,
				   size + 1, rc);
			goto out;
		}
	}
	rc = bad;
	if (bad) {
		char path[OBJ_PATH_LEN];
		store_obj_path(s, path, ino, stripe, false);
		log_warn("truncate objects/%s: chunk %" PRIu64 " was already bad and stays bad",
			 path, size / STORE_CHUNK);
	}
out:
	if (began)
		store_index_end(s->idx, ino, stripe, ver, e->size, keep ? keep : store_obj_stamp(e->fd),
				ok, false);
	r.size = e ? e->size : 0;
	r.version = began ? ver : 0;
	store_fdc_put(s->fdc, e);
	pthread_rwlock_unlock(lk);
	if (res)
		*res = r;
	return rc;
}

int store_obj_truncate(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t size,
		       struct store_obj_result *res)
{
	return obj_truncate(s, ino, stripe, size, NULL, res);
}

int store_obj_truncate_if(struct store_objs *s, uint64_t expect, uint64_t ino, uint32_t stripe,
			  uint64_t size, struct store_obj_result *res)
{
	return obj_truncate(s, ino, stripe, size, &expect, res);
}

static int obj_delete(struct store_objs *s, uint64_t ino, uint32_t stripe, const uint64_t *expect)
{
	char path[OBJ_PATH_LEN], cpath[OBJ_PATH_LEN];
	store_obj_path(s, path, ino, stripe, false);
	store_obj_path(s, cpath, ino, stripe, true);
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_wrlock(lk);
	struct stat st;
	struct store_index_rec rec;
	uint64_t ver;
	int rc = expect_ok(s, ino, stripe, expect);
	if (rc)
		goto out;
	bool exists = fstatat(s->root_fd, path, &st, 0) == 0 ||
		      store_index_get(s->idx, ino, stripe, &rec) == 0;
	if (!exists) {
		rc = -ENOENT;
		goto out;
	}
	rc = store_index_begin(s->idx, ino, stripe, &ver);
	if (rc)
		goto out;
	store_fdc_drop(s->fdc, ino, stripe);
	rc = store_obj_seg_unlink(s, ino, stripe);
	if (rc == 0 && unlinkat(s->root_fd, path, 0) < 0 && errno != ENOENT)
		rc = -errno;
	if (rc == 0 && unlinkat(s->root_fd, cpath, 0) < 0 && errno != ENOENT)
		rc = -errno;
	if (rc)
		log_error("unlink objects/%s: %s", path, strerror(-rc));
	store_index_end(s->idx, ino, stripe, ver, 0, 0, rc == 0, true);
out:
	pthread_rwlock_unlock(lk);
	return rc;
}

int store_obj_delete(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	return obj_delete(s, ino, stripe, NULL);
}

int store_obj_delete_if(struct store_objs *s, uint64_t expect, uint64_t ino, uint32_t stripe)
{
	return obj_delete(s, ino, stripe, &expect);
}

int store_obj_delete_inode(struct store_objs *s, uint64_t ino, uint64_t *ndeleted)
{
	struct store_index_rec recs[64];
	uint64_t count = 0;
	uint32_t from = 0;
	int rc = 0;
	for (;;) {
		size_t n;
		rc = store_index_list(s->idx, ino, from, recs, 64, &n);
		if (rc)
			break;
		size_t i;
		for (i = 0; i < n && recs[i].ino == ino; i++) {
			int drc = store_obj_delete(s, ino, recs[i].stripe);
			if (drc == 0)
				count++;
			else if (drc != -ENOENT && rc == 0)
				rc = drc;
		}
		if (i < n || n < 64 || recs[n - 1].stripe == UINT32_MAX)
			break;
		from = recs[n - 1].stripe + 1;
	}
	if (ndeleted)
		*ndeleted = count;
	return rc;
}

int store_obj_fsync(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_rdlock(lk);
	struct store_fdc_entry *e;
	int rc = store_fdc_get(s->fdc, ino, stripe, false, &e);
	if (rc == 0) {
		rc = store_obj_seg_sync(s, e);
		store_fdc_put(s->fdc, e);
	}
	pthread_rwlock_unlock(lk);
	char path[OBJ_PATH_LEN];
	store_obj_path(s, path, ino, stripe, false);
	if (rc == 0)
		rc = store_obj_sync_path(s, ino); /* objects/XX and objects/XX/YY in their parents */
	if (rc == 0) {
		path[5] = 0; /* "XX/YY" */
		rc = store_obj_fsync_dirat(s->root_fd, path);
	}
	if (rc == 0)
		rc = store_index_sync(s->idx);
	if (rc && rc != -ENOENT)
		log_error("fsync objects/%s: %s", path, strerror(-rc));
	return rc;
}
