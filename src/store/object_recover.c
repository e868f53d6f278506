/* Verification of whole objects (scrub) and recovery of objects torn by a crash.
 *
 * Recovery runs once in store_obj_open, before any other operation, for every object
 * whose index record says pending != committed. A write stores data before CRCs and
 * acknowledges after both, so data without a matching CRC was never acknowledged:
 *  1. Torn tail: trailing chunks that fail with entry 0 (data where no CRC was ever
 *     written) are cut off; if the chunk before them (or the last chunk) matches its
 *     stored CRC over a prefix of l bytes, the object is cut to that prefix. This
 *     undoes an interrupted append, aligned or not, and keeps every acknowledged byte.
 *  2. Every remaining chunk is verified; one whose stored CRC matches a shorter
 *     coverage followed only by zeros was zero-extended by the interrupted mutation,
 *     and its entry is rewritten. Any other mismatch is left in place (the chunk fails
 *     every read until it is rewritten or resynced) and counted.
 * Then the record is settled (committed = pending, length = file size), or removed if
 * the files are gone. A prefix match could be a coincidence with probability about
 * 2^-16 per torn chunk (65536 candidate lengths, 32-bit CRC); only torn objects are
 * examined this way. */
#include "store/object_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/log.h"

#define BATCH_CHUNKS 16u /* 1 MiB per read */

/* Is `entry` the CRC of buf[0..l) followed by zeros up to cov, for some l < cov?
 * Only the bytes before the last nonzero byte can be data, so l >= that point. */
static bool zero_extension_matches(const uint8_t *buf, size_t cov, uint32_t entry)
{
	size_t z = cov;
	while (z > 0 && buf[z - 1] == 0)
		z--;
	uint32_t crc = crc32c(0, buf, z);
	static const uint8_t zero = 0;
	for (size_t l = z; l < cov; l++) {
		if (store_crc_to_entry(crc, (uint32_t)l) == entry)
			return true;
		crc = crc32c(crc, &zero, 1);
	}
	return false;
}

/* Length l < cov such that entry is the CRC of buf[0..l), or -1. */
static long prefix_match(const uint8_t *buf, size_t cov, uint32_t entry)
{
	uint32_t crc = 0;
	for (size_t l = 0; l < cov; l++) {
		if (store_crc_to_entry(crc, (uint32_t)l) == entry)
			return (long)l;
		crc = crc32c(crc, buf + l, 1);
	}
	return -1;
}

/* Step 1 of recovery: cuts off a torn tail (see top of file). */
static int cut_torn_tail(struct store_objs *s, struct store_fdc_entry *e, struct store_torn *t)
{
	uint64_t S = e->size, cut = S, nc = store_crc_nchunks(S);
	uint8_t *buf = malloc(STORE_CHUNK);
	if (!buf)
		return -ENOMEM;
	int rc = 0;
	for (uint64_t c = nc; c-- > 0;) {
		uint64_t cs = c * STORE_CHUNK;
		size_t cov = (size_t)((cs + STORE_CHUNK < S ? cs + STORE_CHUNK : S) - cs);
		uint32_t ent;
		rc = store_obj_seg_pread(s, e, buf, cov, cs);
		if (rc == 0)
			rc = store_obj_crc_read(s, e, c, 1, &ent);
		if (rc)
			break;
		if (store_crc_to_entry(crc32c(0, buf, cov), (uint32_t)cov) == ent)
			break;
		if (ent == 0) {
			cut = cs;
			continue;
		}
		long l = prefix_match(buf, cov, ent);
		if (l >= 0)
			cut = cs + (uint64_t)l;
		break;
	}
	free(buf);
	if (rc || cut == S)
		return rc;
	if (store_obj_seg_trunc_data(s, e, cut) < 0 ||
	    store_obj_seg_trunc_crc(s, e, store_crc_nchunks(cut)) < 0)
		return -errno;
	t->cut_from = S;
	e->size = cut;
	return 0;
}

/* Verifies all chunks of an open object. With repair, fixes zero-extended chunks.
 * Called with the object's lock held (or single-threaded at open). */
static int verify_entry(struct store_objs *s, struct store_fdc_entry *e, bool repair,
			uint64_t *nbad, uint64_t *first_bad, uint64_t *nrepaired)
{
	*nbad = 0;
	if (nrepaired)
		*nrepaired = 0;
	if (!s->checksums)
		return 0;
	uint64_t S = e->size, nc = store_crc_nchunks(S);
	uint8_t *buf = malloc(BATCH_CHUNKS * STORE_CHUNK);
	if (!buf)
		return -ENOMEM;
	uint32_t ent[BATCH_CHUNKS];
	int rc = 0;
	for (uint64_t c0 = 0; c0 < nc && rc == 0; c0 += BATCH_CHUNKS) {
		/* chunks in holes are zeros with entry 0 (data is written before its
		 * entries): skip to the next data, so a sparse object of 2^60 bytes with one
		 * chunk written costs one batch, not 2^44 chunks */
		int64_t nd = store_obj_seg_next_data(s, e, c0 * STORE_CHUNK);
		if (nd >= 0 && (uint64_t)nd / STORE_CHUNK > c0)
			c0 = (uint64_t)nd / STORE_CHUNK;
		if (c0 >= nc)
			break;
		uint64_t n = nc - c0 < BATCH_CHUNKS ? nc - c0 : BATCH_CHUNKS;
		uint64_t a = c0 * STORE_CHUNK;
		uint64_t b = (c0 + n) * STORE_CHUNK < S ? (c0 + n) * STORE_CHUNK : S;
		rc = store_obj_seg_pread(s, e, buf, (size_t)(b - a), a);
		if (rc == 0)
			rc = store_obj_crc_read(s, e, c0, (size_t)n, ent);
		for (uint64_t i = 0; rc == 0 && i < n; i++) {
			uint64_t cs = (c0 + i) * STORE_CHUNK;
			size_t cov = (size_t)((cs + STORE_CHUNK < S ? cs + STORE_CHUNK : S) - cs);
			const uint8_t *p = buf + i * STORE_CHUNK;
			uint32_t crc = crc32c(0, p, cov);
			if (store_crc_to_entry(crc, (uint32_t)cov) == ent[i])
				continue;
			if (repair && zero_extension_matches(p, cov, ent[i])) {
				uint32_t fixed = store_crc_to_entry(crc, (uint32_t)cov);
				rc = store_obj_crc_write(s, e, c0 + i, 1, &fixed);
				if (rc == 0 && nrepaired)
					(*nrepaired)++;
				continue;
			}
			if ((*nbad)++ == 0 && first_bad)
				*first_bad = c0 + i;
		}
	}
	free(buf);
	return rc;
}

bool store_obj_old_copy(struct store_objs *s, struct store_fdc_entry *e, uint64_t *recorded)
{
	struct store_index_rec rec;
	if (store_index_get(s->idx, e->ino, e->stripe, &rec) != 0 || rec.stamp == 0 ||
	    rec.committed != rec.pending)
		return false;
	uint64_t stamp = store_obj_stamp(e->fd);
	if (stamp == rec.stamp)
		return false;
	uint64_t nbad = 0, first = 0;
	char path[OBJ_PATH_LEN];
	store_obj_path(s, path, e->ino, e->stripe, false);
	if (verify_entry(s, e, false, &nbad, &first, NULL) == 0 && nbad == 0) {
		if (recorded)
			*recorded = rec.stamp;
		log_warn("objects/%s: stamp %" PRIu64 ", the index says %" PRIu64 " (version %"
			 PRIu64 "): an older copy, not served", path, stamp, rec.stamp,
			 rec.committed);
		return true;
	}
	/* changed in place and some chunks fail their CRC: damage, which the chunks' CRCs
	 * report from now on, exactly as for a disk that corrupted it */
	int rc = store_index_restamp(s->idx, e->ino, e->stripe, stamp);
	log_warn("objects/%s changed behind the store: %" PRIu64 " chunks fail their CRC (first %"
		 PRIu64 "): damaged, not an older copy%s", path, nbad, first,
		 rc ? "; the index could not record it" : "");
	return false;
}

int store_obj_verify(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t *nbad,
		     uint64_t *first_bad)
{
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_rdlock(lk);
	struct store_fdc_entry *e;
	int rc = store_fdc_get(s->fdc, ino, stripe, false, &e);
	if (rc == 0) {
		rc = verify_entry(s, e, false, nbad, first_bad, NULL);
		store_fdc_put(s->fdc, e);
	}
	pthread_rwlock_unlock(lk);
	return rc;
}

int store_obj_recover(struct store_objs *s)
{
	size_t n;
	struct store_torn *torn = store_index_torn_mut(s->idx, &n);
	for (size_t i = 0; i < n; i++) {
		struct store_torn *t = &torn[i];
		char path[OBJ_PATH_LEN];
		store_obj_path(s, path, t->rec.ino, t->rec.stripe, false);
		struct store_fdc_entry *e;
		int rc = store_fdc_get(s->fdc, t->rec.ino, t->rec.stripe, false, &e);
		if (rc == -ENOENT) {
			char cpath[OBJ_PATH_LEN];
			store_obj_path(s, cpath, t->rec.ino, t->rec.stripe, true);
			unlinkat(s->root_fd, cpath, 0);
			t->missing = true;
			log_warn("torn object objects/%s (versions %" PRIu64 "->%" PRIu64
				 "): files missing, record removed", path, t->rec.committed,
				 t->rec.pending);
			rc = store_index_settle(s->idx, t->rec.ino, t->rec.stripe, 0, 0, true);
			if (rc)
				return rc;
			continue;
		}
		if (rc)
			return rc;
		if (s->checksums)
			rc = cut_torn_tail(s, e, t);
		t->size = e->size;
		if (rc == 0)
			rc = verify_entry(s, e, true, &t->nbad, &t->first_bad, &t->nrepaired);
		uint64_t stamp = store_obj_stamp(e->fd);
		store_fdc_put(s->fdc, e);
		if (rc) {
			log_error("recover objects/%s: %s", path, strerror(-rc));
			return rc;
		}
		char cut[64] = "", bad[96] = "";
		if (t->cut_from)
			snprintf(cut, sizeof(cut), ", unacknowledged tail cut from %" PRIu64, t->cut_from);
		if (t->nbad)
			snprintf(bad, sizeof(bad), ", %" PRIu64 " bad chunks from chunk %" PRIu64
				 " (they fail reads until rewritten)", t->nbad, t->first_bad);
		log_warn("torn object objects/%s (versions %" PRIu64 "->%" PRIu64 "): size %" PRIu64
			 "%s%s, %" PRIu64 " CRCs repaired", path, t->rec.committed, t->rec.pending,
			 t->size, cut, bad, t->nrepaired);
		rc = store_index_settle(s->idx, t->rec.ino, t->rec.stripe, t->size, stamp, false);
		if (rc)
			return rc;
	}
	return 0;
}
