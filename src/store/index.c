/* Per-target LMDB index of objects, with group-committed begins and lazily flushed
 * commits (see index.h for the protocol and durability).
 *
 * DESIGN: a hash map in memory holds the objects mutated since the last flush
 * (struct ient). idx->mu guards the map, the begin queue, the stats and the flags.
 * A begin that needs a record written queues its entry and waits; whichever waiter
 * finds no commit running becomes the leader, takes the whole queue, commits it in
 * one LMDB write transaction with mu released, then wakes everyone. A flush runs its
 * transaction with mu held (and no leader running), so no begin can load a record
 * that the flush is about to mark clean. LMDB keys are (ino, stripe) big-endian, so
 * cursor order is (ino, stripe) order. */
#include "store/index.h"

#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/buf.h"
#include "common/log.h"

#define NBUCKETS 4096u
#define KEY_LEN 12
#define VAL_LEN_V1 24 /* records written before the stamp */
#define VAL_LEN 32

struct ient {
	uint64_t ino;
	uint32_t stripe;
	uint64_t committed, pending, length; /* latest values, in memory */
	uint64_t stamp;    /* files' stamp at the last committed mutation */
	int inflight;      /* mutations between begin and end */
	int err;           /* set by a failed begin batch */
	bool persisted;    /* the record in LMDB is in flux (pending != committed) */
	bool queued;       /* waiting in idx->queue for a begin batch */
	bool failed;       /* last end was !ok: leave the record in flux */
	bool removed;      /* last end deleted the object */
	struct ient *hnext, *qnext;
};

struct store_index {
	MDB_env *env;
	MDB_dbi dbi;
	pthread_mutex_t mu;
	pthread_cond_t cv;              /* a begin batch finished; or stop */
	struct ient *buckets[NBUCKETS]; /* guarded by mu */
	struct ient *queue;             /* guarded by mu */
	bool committing;                /* a leader's batch is running; guarded by mu */
	uint64_t epoch;                 /* write txns committed; guarded by mu */
	struct store_index_stats stats; /* guarded by mu */

	pthread_mutex_t sync_mu;        /* serialises syncs */
	uint64_t synced_epoch;          /* guarded by sync_mu */

	pthread_t flusher;
	bool has_flusher;
	bool stop;                      /* guarded by mu */
	unsigned interval_ms;

	struct store_torn *torn;
	size_t ntorn;
};

static int mdb_err(int rc)
{
	switch (rc) {
	case MDB_SUCCESS: return 0;
	case MDB_NOTFOUND: return -ENOENT;
	case MDB_MAP_FULL: return -ENOSPC;
	case MDB_TXN_FULL: return -ENOSPC;
	case MDB_READERS_FULL: return -EAGAIN;
	default:
		if (rc > 0 && rc < 4096)
			return -rc;
		return -EIO;
	}
}

static void key_put(uint8_t *k, uint64_t ino, uint32_t stripe)
{
	for (int i = 0; i < 8; i++)
		k[i] = (uint8_t)(ino >> (56 - 8 * i));
	for (int i = 0; i < 4; i++)
		k[8 + i] = (uint8_t)(stripe >> (24 - 8 * i));
}

static void key_get(const uint8_t *k, uint64_t *ino, uint32_t *stripe)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | k[i];
	uint32_t s = 0;
	for (int i = 0; i < 4; i++)
		s = s << 8 | k[8 + i];
	*ino = v;
	*stripe = s;
}

static bool val_get(const MDB_val *k, const MDB_val *v, struct store_index_rec *r)
{
	if (k->mv_size != KEY_LEN || v->mv_size < VAL_LEN_V1)
		return false;
	key_get(k->mv_data, &r->ino, &r->stripe);
	const uint8_t *p = v->mv_data;
	r->committed = get_le64(p);
	r->pending = get_le64(p + 8);
	r->length = get_le64(p + 16);
	r->stamp = v->mv_size >= VAL_LEN ? get_le64(p + 24) : 0;
	return true;
}

static unsigned bucket(uint64_t ino, uint32_t stripe)
{
	uint64_t h = ino * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)stripe * 0xC2B2AE3D27D4EB4FULL);
	return (unsigned)(h >> 40) % NBUCKETS;
}

static struct ient *find(struct store_index *idx, uint64_t ino, uint32_t stripe)
{
	for (struct ient *e = idx->buckets[bucket(ino, stripe)]; e; e = e->hnext)
		if (e->ino == ino && e->stripe == stripe)
			return e;
	return NULL;
}

static void forget(struct store_index *idx, struct ient *e)
{
	struct ient **pp = &idx->buckets[bucket(e->ino, e->stripe)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	free(e);
}

/* Reads one record from LMDB. Returns 0, -ENOENT or -errno. */
static int db_get(struct store_index *idx, uint64_t ino, uint32_t stripe,
		  struct store_index_rec *r)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(idx->env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return mdb_err(rc);
	uint8_t kb[KEY_LEN];
	key_put(kb, ino, stripe);
	MDB_val k = {KEY_LEN, kb}, v;
	rc = mdb_get(txn, idx->dbi, &k, &v);
	if (rc == 0 && !val_get(&k, &v, r))
		rc = MDB_CORRUPTED;
	mdb_txn_abort(txn);
	return mdb_err(rc);
}

static int db_put(MDB_txn *txn, MDB_dbi dbi, const struct store_index_rec *r)
{
	uint8_t kb[KEY_LEN], vb[VAL_LEN];
	key_put(kb, r->ino, r->stripe);
	put_le64(vb, r->committed);
	put_le64(vb + 8, r->pending);
	put_le64(vb + 16, r->length);
	put_le64(vb + 24, r->stamp);
	MDB_val k = {KEY_LEN, kb}, v = {VAL_LEN, vb};
	return mdb_put(txn, dbi, &k, &v, 0);
}

static int db_del(MDB_txn *txn, MDB_dbi dbi, uint64_t ino, uint32_t stripe)
{
	uint8_t kb[KEY_LEN];
	key_put(kb, ino, stripe);
	MDB_val k = {KEY_LEN, kb};
	int rc = mdb_del(txn, dbi, &k, NULL);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Finds or loads the entry of (ino, stripe). Called with mu held. */
static int entry_load(struct store_index *idx, uint64_t ino, uint32_t stripe, struct ient **out)
{
	struct ient *e = find(idx, ino, stripe);
	if (e) {
		*out = e;
		return 0;
	}
	struct store_index_rec r;
	int rc = db_get(idx, ino, stripe, &r);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->ino = ino;
	e->stripe = stripe;
	if (rc == 0) {
		e->committed = r.committed;
		e->pending = r.pending;
		e->length = r.length;
		e->stamp = r.stamp;
		e->persisted = r.pending != r.committed;
	}
	unsigned b = bucket(ino, stripe);
	e->hnext = idx->buckets[b];
	idx->buckets[b] = e;
	*out = e;
	return 0;
}

/* Leader: commits the queued begins in one transaction. Called with mu held and
 * committing set; releases mu during the transaction. */
static void commit_queue(struct store_index *idx)
{
	struct ient *batch = idx->queue;
	idx->queue = NULL;
	size_t n = 0;
	for (struct ient *e = batch; e; e = e->qnext)
		n++;
	struct store_index_rec *recs = malloc(n * sizeof(*recs));
	int rc = recs ? 0 : -ENOMEM;
	size_t i = 0;
	for (struct ient *e = batch; e && recs; e = e->qnext, i++)
		recs[i] = (struct store_index_rec){e->ino, e->stripe, e->committed, e->pending, e->length,
						   e->stamp};
	pthread_mutex_unlock(&idx->mu);

	MDB_txn *txn = NULL;
	if (rc == 0) {
		int mrc = mdb_txn_begin(idx->env, NULL, 0, &txn);
		for (i = 0; mrc == 0 && i < n; i++)
			mrc = db_put(txn, idx->dbi, &recs[i]);
		if (mrc == 0) {
			mrc = mdb_txn_commit(txn);
		} else if (txn) {
			mdb_txn_abort(txn);
		}
		rc = mdb_err(mrc);
	}
	free(recs);

	pthread_mutex_lock(&idx->mu);
	for (struct ient *e = batch; e; e = e->qnext) {
		e->queued = false;
		if (rc == 0)
			e->persisted = true;
		else
			e->err = rc;
	}
	if (rc == 0) {
		idx->epoch++;
		idx->stats.begin_txns++;
	} else {
		log_error("index: commit of %zu pending records: %s", n, strerror(-rc));
	}
	idx->committing = false;
	pthread_cond_broadcast(&idx->cv);
}

int store_index_begin(struct store_index *idx, uint64_t ino, uint32_t stripe, uint64_t *version)
{
	pthread_mutex_lock(&idx->mu);
	struct ient *e;
	int rc = entry_load(idx, ino, stripe, &e);
	if (rc < 0) {
		pthread_mutex_unlock(&idx->mu);
		return rc;
	}
	idx->stats.begins++;
	if (e->removed) {
		e->removed = false;
		e->length = 0;
	}
	e->inflight++;
	if (e->persisted) {
		e->pending++;
		*version = e->pending;
		pthread_mutex_unlock(&idx->mu);
		return 0;
	}
	e->pending = e->committed + 1;
	e->queued = true;
	e->qnext = idx->queue;
	idx->queue = e;
	while (!e->persisted && !e->err) {
		if (!idx->committing) {
			idx->committing = true;
			commit_queue(idx);
		} else {
			pthread_cond_wait(&idx->cv, &idx->mu);
		}
	}
	rc = e->err;
	if (rc) {
		e->err = 0;
		e->pending = e->committed;
		if (--e->inflight == 0 && !e->persisted)
			forget(idx, e);
	} else {
		*version = e->pending;
	}
	pthread_mutex_unlock(&idx->mu);
	return rc;
}

void store_index_end(struct store_index *idx, uint64_t ino, uint32_t stripe, uint64_t version,
		     uint64_t length, uint64_t stamp, bool ok, bool remove)
{
	pthread_mutex_lock(&idx->mu);
	struct ient *e = find(idx, ino, stripe);
	if (e) {
		e->inflight--;
		if (ok) {
			e->committed = version;
			e->length = remove ? 0 : length;
			e->stamp = remove ? 0 : stamp;
			e->removed = remove;
			e->failed = false;
		} else {
			e->failed = true;
		}
	}
	pthread_mutex_unlock(&idx->mu);
}

/* Writes idle entries and forgets them. Called with mu held and no leader running. */
static int flush_locked(struct store_index *idx)
{
	size_t nwork = 0;
	for (unsigned b = 0; b < NBUCKETS; b++)
		for (struct ient *e = idx->buckets[b]; e; e = e->hnext)
			if (e->inflight == 0)
				nwork++;
	if (nwork == 0)
		return 0;
	MDB_txn *txn;
	int rc = mdb_txn_begin(idx->env, NULL, 0, &txn);
	bool wrote = false;
	for (unsigned b = 0; rc == 0 && b < NBUCKETS; b++) {
		for (struct ient *e = idx->buckets[b]; rc == 0 && e; e = e->hnext) {
			if (e->inflight != 0 || !e->persisted || e->failed)
				continue;
			if (e->removed) {
				rc = db_del(txn, idx->dbi, e->ino, e->stripe);
			} else {
				struct store_index_rec r = {e->ino, e->stripe, e->committed,
							    e->committed, e->length, e->stamp};
				rc = db_put(txn, idx->dbi, &r);
			}
			wrote = true;
		}
	}
	if (rc == 0 && wrote) {
		rc = mdb_txn_commit(txn);
		if (rc == 0) {
			idx->epoch++;
			idx->stats.flush_txns++;
		}
	} else {
		mdb_txn_abort(txn);
	}
	if (rc) {
		log_error("index: flush of %zu records: %s", nwork, mdb_strerror(rc));
		return mdb_err(rc);
	}
	for (unsigned b = 0; b < NBUCKETS; b++) {
		struct ient *e = idx->buckets[b];
		while (e) {
			struct ient *next = e->hnext;
			if (e->inflight == 0)
				forget(idx, e);
			e = next;
		}
	}
	return 0;
}

int store_index_flush(struct store_index *idx)
{
	pthread_mutex_lock(&idx->mu);
	while (idx->committing)
		pthread_cond_wait(&idx->cv, &idx->mu);
	int rc = flush_locked(idx);
	pthread_mutex_unlock(&idx->mu);
	return rc;
}

int store_index_sync(struct store_index *idx)
{
	pthread_mutex_lock(&idx->sync_mu);
	int rc = store_index_flush(idx);
	pthread_mutex_lock(&idx->mu);
	uint64_t e = idx->epoch;
	pthread_mutex_unlock(&idx->mu);
	if (rc == 0 && idx->synced_epoch < e) {
		rc = mdb_err(mdb_env_sync(idx->env, 1));
		if (rc == 0)
			idx->synced_epoch = e;
		pthread_mutex_lock(&idx->mu);
		idx->stats.syncs++;
		pthread_mutex_unlock(&idx->mu);
	}
	pthread_mutex_unlock(&idx->sync_mu);
	return rc;
}

static void *flusher_main(void *arg)
{
	struct store_index *idx = arg;
	pthread_mutex_lock(&idx->mu);
	while (!idx->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += idx->interval_ms / 1000;
		ts.tv_nsec += (long)(idx->interval_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!idx->stop && pthread_cond_timedwait(&idx->cv, &idx->mu, &ts) != ETIMEDOUT)
			;
		if (idx->stop)
			break;
		pthread_mutex_unlock(&idx->mu);
		int rc = store_index_sync(idx);
		if (rc)
			log_warn("index: periodic sync: %s", strerror(-rc));
		pthread_mutex_lock(&idx->mu);
	}
	pthread_mutex_unlock(&idx->mu);
	return NULL;
}

static int scan_torn(struct store_index *idx)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	int rc = mdb_txn_begin(idx->env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return mdb_err(rc);
	rc = mdb_cursor_open(txn, idx->dbi, &cur);
	if (rc) {
		mdb_txn_abort(txn);
		return mdb_err(rc);
	}
	size_t cap = 0;
	MDB_val k, v;
	int op = MDB_FIRST;
	while ((rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
		op = MDB_NEXT;
		struct store_index_rec r;
		if (!val_get(&k, &v, &r)) {
			rc = MDB_CORRUPTED;
			break;
		}
		if (r.pending == r.committed)
			continue;
		if (idx->ntorn == cap) {
			cap = cap ? cap * 2 : 16;
			struct store_torn *t = realloc(idx->torn, cap * sizeof(*t));
			if (!t) {
				rc = ENOMEM;
				break;
			}
			idx->torn = t;
		}
		idx->torn[idx->ntorn++] = (struct store_torn){.rec = r};
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
}

int store_index_open(const char *dir, const struct store_index_opts *opts,
		     struct store_index **out)
{
	if (mkdir(dir, 0750) < 0 && errno != EEXIST) {
		int rc = -errno;
		log_error("mkdir %s: %s", dir, strerror(errno));
		return rc;
	}
	struct store_index *idx = calloc(1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	pthread_mutex_init(&idx->mu, NULL);
	pthread_mutex_init(&idx->sync_mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&idx->cv, &ca);
	pthread_condattr_destroy(&ca);

	size_t map = opts && opts->map_size ? opts->map_size : (size_t)4 << 30;
	MDB_txn *txn = NULL;
	int rc = mdb_env_create(&idx->env);
	if (rc)
		goto fail;
	rc = mdb_env_set_mapsize(idx->env, map);
	if (rc)
		goto fail;
	/* MDB_NOMETASYNC, not MDB_NOSYNC: each commit syncs its data pages before it writes
	 * the meta page that points to them, so no power loss can leave a meta page on disk
	 * ahead of its tree (with MDB_NOSYNC the kernel may write them back in any order:
	 * a corrupt index). The meta page itself reaches the disk with the next commit's
	 * sync or store_index_sync. */
	rc = mdb_env_open(idx->env, dir, MDB_NOMETASYNC | MDB_NOTLS, 0640);
	if (rc)
		goto fail;
	rc = mdb_txn_begin(idx->env, NULL, 0, &txn);
	if (rc)
		goto fail;
	rc = mdb_dbi_open(txn, NULL, 0, &idx->dbi);
	if (rc) {
		mdb_txn_abort(txn);
		goto fail;
	}
	rc = mdb_txn_commit(txn);
	if (rc)
		goto fail;
	rc = scan_torn(idx);
	if (rc < 0) {
		log_error("index %s: scan: %s", dir, strerror(-rc));
		rc = -rc; /* back to positive for the common exit below */
		goto fail;
	}
	idx->interval_ms = opts ? opts->sync_interval_ms : 0;
	if (idx->interval_ms > 0) {
		rc = pthread_create(&idx->flusher, NULL, flusher_main, idx);
		if (rc)
			goto fail;
		idx->has_flusher = true;
	}
	*out = idx;
	return 0;

fail:
	if (rc > 0 && rc < 4096)
		log_error("index %s: %s", dir, strerror(rc));
	else
		log_error("index %s: %s", dir, mdb_strerror(rc));
	{
		int err = mdb_err(rc);
		if (idx->env)
			mdb_env_close(idx->env);
		free(idx->torn);
		pthread_cond_destroy(&idx->cv);
		pthread_mutex_destroy(&idx->sync_mu);
		pthread_mutex_destroy(&idx->mu);
		free(idx);
		return err;
	}
}

void store_index_close(struct store_index *idx)
{
	if (!idx)
		return;
	if (idx->has_flusher) {
		pthread_mutex_lock(&idx->mu);
		idx->stop = true;
		pthread_cond_broadcast(&idx->cv);
		pthread_mutex_unlock(&idx->mu);
		pthread_join(idx->flusher, NULL);
	}
	int rc = store_index_sync(idx);
	if (rc)
		log_error("index: final sync: %s", strerror(-rc));
	for (unsigned b = 0; b < NBUCKETS; b++) {
		struct ient *e = idx->buckets[b];
		while (e) {
			struct ient *next = e->hnext;
			free(e);
			e = next;
		}
	}
	mdb_env_close(idx->env);
	free(idx->torn);
	pthread_cond_destroy(&idx->cv);
	pthread_mutex_destroy(&idx->sync_mu);
	pthread_mutex_destroy(&idx->mu);
	free(idx);
}

int store_index_get(struct store_index *idx, uint64_t ino, uint32_t stripe,
		    struct store_index_rec *out)
{
	pthread_mutex_lock(&idx->mu);
	struct ient *e = find(idx, ino, stripe);
	if (e) {
		*out = (struct store_index_rec){ino, stripe, e->committed, e->pending, e->length,
						e->stamp};
		bool gone = e->removed && e->inflight == 0;
		pthread_mutex_unlock(&idx->mu);
		return gone ? -ENOENT : 0;
	}
	int rc = db_get(idx, ino, stripe, out);
	pthread_mutex_unlock(&idx->mu);
	return rc;
}

int store_index_list(struct store_index *idx, uint64_t ino, uint32_t stripe,
		     struct store_index_rec *out, size_t max, size_t *n)
{
	*n = 0;
	int rc = store_index_flush(idx);
	if (rc)
		return rc;
	MDB_txn *txn;
	MDB_cursor *cur;
	rc = mdb_txn_begin(idx->env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return mdb_err(rc);
	rc = mdb_cursor_open(txn, idx->dbi, &cur);
	if (rc) {
		mdb_txn_abort(txn);
		return mdb_err(rc);
	}
	uint8_t kb[KEY_LEN];
	key_put(kb, ino, stripe);
	MDB_val k = {KEY_LEN, kb}, v;
	int op = MDB_SET_RANGE;
	while (*n < max && (rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
		op = MDB_NEXT;
		if (!val_get(&k, &v, &out[*n])) {
			rc = MDB_CORRUPTED;
			break;
		}
		(*n)++;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
}

const struct store_torn *store_index_torn(struct store_index *idx, size_t *n)
{
	*n = idx->ntorn;
	return idx->torn;
}

struct store_torn *store_index_torn_mut(struct store_index *idx, size_t *n)
{
	*n = idx->ntorn;
	return idx->torn;
}

int store_index_settle(struct store_index *idx, uint64_t ino, uint32_t stripe,
		       uint64_t length, uint64_t stamp, bool remove)
{
	struct store_index_rec r;
	pthread_mutex_lock(&idx->mu);
	int rc = db_get(idx, ino, stripe, &r);
	MDB_txn *txn = NULL;
	if (rc == 0) {
		rc = mdb_txn_begin(idx->env, NULL, 0, &txn);
		if (rc == 0) {
			if (remove) {
				rc = db_del(txn, idx->dbi, ino, stripe);
			} else {
				r.committed = r.pending;
				r.length = length;
				r.stamp = stamp;
				rc = db_put(txn, idx->dbi, &r);
			}
			rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
			if (rc == 0)
				idx->epoch++;
		}
		rc = mdb_err(rc);
	}
	pthread_mutex_unlock(&idx->mu);
	return rc == -ENOENT ? 0 : rc;
}

int store_index_restamp(struct store_index *idx, uint64_t ino, uint32_t stripe, uint64_t stamp)
{
	pthread_mutex_lock(&idx->mu);
	struct ient *e;
	int rc = entry_load(idx, ino, stripe, &e);
	if (rc == 0 && (e->inflight || e->removed || e->failed || e->committed != e->pending))
		rc = -EBUSY;
	MDB_txn *txn = NULL;
	if (rc == 0) {
		/* the entry as a flush would write it, with the new stamp: the record on disk
		 * is then no longer in flux, and the next begin must say so again */
		e->stamp = stamp;
		struct store_index_rec r = {ino, stripe, e->committed, e->committed, e->length, stamp};
		int mrc = mdb_txn_begin(idx->env, NULL, 0, &txn);
		if (mrc == 0)
			mrc = db_put(txn, idx->dbi, &r);
		mrc = mrc ? (txn ? (mdb_txn_abort(txn), mrc) : mrc) : mdb_txn_commit(txn);
		if (mrc == 0) {
			idx->epoch++;
			e->persisted = false;
		}
		rc = mdb_err(mrc);
	}
	pthread_mutex_unlock(&idx->mu);
	return rc;
}

uint64_t store_index_wseq(struct store_index *idx)
{
	MDB_envinfo info;
	if (mdb_env_info(idx->env, &info) != 0)
		return 0;
	return (uint64_t)info.me_last_txnid;
}

void store_index_get_stats(struct store_index *idx, struct store_index_stats *out)
{
	pthread_mutex_lock(&idx->mu);
	*out = idx->stats;
	pthread_mutex_unlock(&idx->mu);
}
