/* Group commit: writer, syncer and completion threads (see commit.h for the design). */
#include "meta/commit.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "net/stats.h"
#include "meta/space.h"

/* The mutations of one write txn. */
struct batch {
	struct meta_mutation *first, *last;
	unsigned n;
	MDB_txn *txn;
	bool nested; /* redone with a nested txn per op (an op failed after writing) */
	bool retried; /* redone once after ENOSPC (space.h) */
	bool no_grow; /* growing ops complete with -ENOSPC, unapplied */
	bool wrote;   /* an op wrote (the txn's commit writes and syncs pages) */
	uint64_t transno; /* the last number stamped */
	int err;     /* txn begin/commit or sync error: every op completes with it */
};

struct meta_commit {
	struct meta_db *db;
	struct meta_space *sp; /* NULL: no space management (unit tests) */
	unsigned max_batch;
	pthread_t writer, syncer, completer;
	pthread_mutex_t lock;
	pthread_cond_t wake;              /* writer: submit, stop, or the sync is done */
	struct meta_mutation *head, *tail; /* submitted, guarded by lock */
	bool stopping;                    /* guarded by lock */
	struct meta_commit_stats st;      /* guarded by lock */
	/* The committed batch being synced (one at a time), guarded by lock. */
	pthread_cond_t sync_wake;         /* syncer: a batch, or writer gone */
	struct batch sync_batch;
	bool sync_busy, writer_gone;
	/* Batches synced, waiting for their done() calls. A lock of their own: the
	 * completion thread must not contend with submitters. */
	pthread_mutex_t dlock;
	pthread_cond_t dwake;               /* completion thread: work, or syncer gone */
	struct meta_mutation *dhead, *dtail; /* guarded by dlock */
	bool syncer_gone;                   /* guarded by dlock */
	/* A batch was committed and not synced since (all its ops lazy): the writer syncs
	 * it once idle for idle_sync_ms, and at stop. Guarded by lock. */
	bool dirty;
	unsigned idle_sync_ms;
	/* A committed non-lazy batch waits at most sync_delay_ms for its meta page's sync
	 * (the next commit's data sync covers it sooner), a lazy one idle_sync_ms; dirty_due
	 * is when (CLOCK_REALTIME ms), fixed when it became dirty, so that batches that
	 * write nothing (the expiry tick) do not put it off. Guarded by lock. */
	unsigned sync_delay_ms;
	int64_t dirty_due;
	unsigned linger_ms; /* guarded by lock */
	/* Transaction numbers (commit.h): last assigned (writer only, persisted in the batch
	 * txn), last committed and last durable (atomics: read by any thread). */
	uint64_t transno;
	_Atomic uint64_t committed, synced;
	FILE *synclog; /* test hook (WEFT_META_TEST_SYNCLOG), written by whoever syncs */
	FILE *commitlog; /* test hook (WEFT_META_TEST_COMMITLOG), written by the writer */
	unsigned test_delay_ms; /* test hook (WEFT_META_TEST_COMMIT_DELAY_MS): a slow disk */
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* mdb_env_sync(env, 1), counted; with the test hook, logs the txn id it made durable
 * (at least: read before the sync) so a test can model a power cut (commit.h). Called
 * with no commit running (the writer's rule: one sync at a time, never beside a commit). */
static int sync_env(struct meta_commit *gc)
{
	MDB_envinfo info = {0};
	if (gc->synclog)
		mdb_env_info(gc->db->env, &info);
	uint64_t upto = atomic_load(&gc->committed); /* no commit runs beside a sync */
	int rc = meta_mdb_err(mdb_env_sync(gc->db->env, 1));
	stats_add(STATS_META_DB_SYNCS, 1);
	if (rc == 0)
		atomic_store(&gc->synced, upto);
	if (rc == 0 && gc->synclog) {
		fprintf(gc->synclog, "%zu\n", info.me_last_txnid);
		fflush(gc->synclog);
	}
	return rc;
}

/* Takes up to max mutations off the queue (lock held); *last is the last taken. */
static struct meta_mutation *take(struct meta_commit *gc, unsigned max, unsigned *n,
				  struct meta_mutation **last)
{
	struct meta_mutation *first = gc->head, *m = first;
	*n = 0;
	*last = NULL;
	while (m && *n < max) {
		*last = m;
		m = m->next;
		(*n)++;
	}
	if (*last)
		(*last)->next = NULL;
	gc->head = m;
	if (!m)
		gc->tail = NULL;
	return *n ? first : NULL;
}

/* Errors an op may return because LMDB itself failed under it (map full, I/O, out of
 * memory, corruption): the txn may be flagged unusable even if the op wrote nothing. */
static bool lmdb_may_have_failed(int rc)
{
	return rc == -EIO || rc == -ENOSPC || rc == -ENOMEM || rc == -EAGAIN;
}

/* The slow path for one op: a nested txn, committed if apply returns 0, aborted
 * otherwise, so a failing op's writes go with its child. */
static void apply_nested(MDB_env *env, MDB_txn *txn, struct meta_mutation *m)
{
	MDB_txn *child;
	uint64_t writes = meta_mdb_writes;
	m->wrote = false;
	int rc = meta_mdb_err(mdb_txn_begin(env, txn, 0, &child));
	if (rc == 0) {
		rc = m->apply(child, m->arg);
		m->wrote = meta_mdb_writes != writes;
		if (rc == 0)
			rc = meta_mdb_err(mdb_txn_commit(child));
		else
			mdb_txn_abort(child);
	}
	m->result = rc;
}

/* Adds the list more..last (n ops) to b and applies them. The fast path runs each op
 * straight in the batch txn. An op failing after a write attempt (or as
 * lmdb_may_have_failed) cannot have its partial writes taken out: the txn is aborted and
 * everything b holds so far is redone with a nested txn per op, and so is the rest of
 * the batch. */
static void batch_add(struct meta_commit *gc, struct batch *b, struct meta_mutation *more,
		      struct meta_mutation *last, unsigned n)
{
	MDB_env *env = gc->db->env;
	if (b->last)
		b->last->next = more;
	else
		b->first = more;
	b->last = last;
	b->n += n;
	for (struct meta_mutation *m = more; m && !b->err; m = m->next) {
		if (b->no_grow && m->grows) {
			m->result = -ENOSPC;
			continue;
		}
		if (b->nested) {
			apply_nested(env, b->txn, m);
			continue;
		}
		uint64_t writes = meta_mdb_writes;
		m->result = m->apply(b->txn, m->arg);
		m->wrote = meta_mdb_writes != writes;
		if (!m->result || (meta_mdb_writes == writes && !lmdb_may_have_failed(m->result)))
			continue;
		mdb_txn_abort(b->txn);
		b->txn = NULL;
		b->nested = true;
		b->err = meta_mdb_err(mdb_txn_begin(env, NULL, 0, &b->txn));
		for (struct meta_mutation *x = b->first; !b->err; x = x->next) {
			if (b->no_grow && x->grows)
				x->result = -ENOSPC;
			else
				apply_nested(env, b->txn, x);
			if (x == m)
				break;
		}
	}
}

/* Appends a synced batch to the completion queue. */
static void hand_over(struct meta_commit *gc, struct meta_mutation *list,
		      struct meta_mutation *last)
{
	pthread_mutex_lock(&gc->dlock);
	if (gc->dtail)
		gc->dtail->next = list;
	else
		gc->dhead = list;
	gc->dtail = last;
	pthread_cond_signal(&gc->dwake);
	pthread_mutex_unlock(&gc->dlock);
}

/* Syncs a committed batch (unless it failed or is all lazy), sets every result, counts
 * it, and passes it to the completion thread. */
static void finish_batch(struct meta_commit *gc, struct batch *b)
{
	bool need_sync = false, synced = false, lazy = true;
	for (struct meta_mutation *m = b->first; m; m = m->next) {
		need_sync |= m->durable;
		lazy &= m->lazy;
	}
	if (b->err == 0 && need_sync) {
		b->err = sync_env(gc);
		synced = true;
	}
	if (b->err)
		log_error("meta group commit of %u ops: %s", b->n, strerror(-b->err));
	unsigned failed = 0;
	for (struct meta_mutation *m = b->first; m; m = m->next) {
		if (b->err)
			m->result = b->err;
		failed += m->result != 0;
	}
	/* stats first: a waiter woken by done() sees its own op counted */
	pthread_mutex_lock(&gc->lock);
	gc->st.ops += b->n;
	gc->st.failed += failed;
	gc->st.batches += b->err == 0;
	gc->st.syncs += synced;
	gc->st.redone += b->nested;
	/* no commit runs beside this sync: after it everything committed is durable */
	if (synced) {
		gc->dirty = false;
		gc->dirty_due = 0;
	} else if (b->err == 0 && atomic_load(&gc->committed) > atomic_load(&gc->synced)) {
		/* synced by the next commit, or by the writer at dirty_due */
		int64_t due = now_ms() + (lazy ? gc->idle_sync_ms : gc->sync_delay_ms);
		gc->dirty = true;
		if (!gc->dirty_due || due < gc->dirty_due)
			gc->dirty_due = due;
	}
	pthread_mutex_unlock(&gc->lock);
	hand_over(gc, b->first, b->last);
}

/* True if an op or the txn of b met ENOSPC (a full map or disk). */
static bool met_enospc(const struct batch *b)
{
	if (b->err == -ENOSPC)
		return true;
	for (const struct meta_mutation *m = b->first; m; m = m->next)
		if (m->result == -ENOSPC && !(b->no_grow && m->grows))
			return true;
	return false;
}

/* b's txn is gone (aborted, or its commit failed): applies all of b again in a new
 * txn, with growing ops refused if no_grow. */
static void reapply(struct meta_commit *gc, struct batch *b, bool no_grow)
{
	struct meta_mutation *first = b->first, *last = b->last;
	unsigned n = b->n;
	*b = (struct batch){.retried = true, .no_grow = no_grow};
	b->err = meta_mdb_err(mdb_txn_begin(gc->db->env, NULL, 0, &b->txn));
	if (b->err) {
		b->first = first;
		b->last = last;
		b->n = n;
		return;
	}
	batch_add(gc, b, first, last, n);
}

static const char transno_key[] = "transno";

/* Numbers b's applied ops that changed something and writes the last number in b's txn
 * (a failed op, or one that wrote nothing, gets 0: there is nothing to replay).
 * Runs before each commit attempt, so a redone batch is numbered afresh. */
static int stamp(struct meta_commit *gc, struct batch *b)
{
	uint64_t t = gc->transno;
	for (struct meta_mutation *m = b->first; m; m = m->next) {
		m->transno = m->result == 0 && m->wrote ? ++t : 0;
		int rc = m->transno && m->stamped ? m->stamped(b->txn, m->arg, m->transno) : 0;
		if (rc)
			return rc;
	}
	b->transno = t;
	if (t == gc->transno)
		return 0;
	uint8_t v[8];
	put_le64(v, t);
	MDB_val k = {sizeof(transno_key) - 1, (void *)transno_key}, val = {8, v};
	return meta_mdb_err(meta_mdb_put(b->txn, gc->db->super, &k, &val, 0));
}

/* The commit log test hook: "TXNID WHAT..." for a batch just committed. */
static void log_commit(struct meta_commit *gc, const struct batch *b, size_t txnid)
{
	fprintf(gc->commitlog, "%zu", txnid);
	for (const struct meta_mutation *m = b->first; m; m = m->next)
		if (m->result == 0)
			fprintf(gc->commitlog, " %s", m->what ? m->what : "?");
	fputc('\n', gc->commitlog);
	fflush(gc->commitlog);
}

/* Numbers and commits a batch txn. LMDB reports a write that the full disk cut short as
 * EIO: on a full disk that is ENOSPC, which the writer answers with the reserve. On
 * success the numbers are committed; the commit's own data sync also made the meta page
 * of the commit before durable (MDB_NOMETASYNC: the meta page is written after the data
 * pages are synced, in the same file), so what that one committed is synced. */
static int commit_txn(struct meta_commit *gc, struct batch *b)
{
	uint64_t writes = meta_mdb_writes;
	int rc = stamp(gc, b);
	if (rc) {
		mdb_txn_abort(b->txn);
		return rc;
	}
	bool wrote = meta_mdb_writes != writes || b->wrote;
	size_t txnid = mdb_txn_id(b->txn);
	if (gc->test_delay_ms)
		usleep(gc->test_delay_ms * 1000);
	rc = meta_mdb_err(mdb_txn_commit(b->txn));
	if (rc == -EIO && meta_space_disk_full(gc->sp))
		rc = -ENOSPC;
	if (rc)
		return rc;
	if (wrote && gc->commitlog)
		log_commit(gc, b, txnid);
	if (wrote) {
		uint64_t before = atomic_load(&gc->committed);
		if (before > atomic_load(&gc->synced))
			atomic_store(&gc->synced, before);
	}
	gc->transno = b->transno;
	atomic_store(&gc->committed, b->transno);
	return 0;
}

/* The writer's sync of committed batches (lock held on entry and exit; no batch
 * is being synced or committed). */
static void idle_sync(struct meta_commit *gc)
{
	gc->dirty = false;
	gc->dirty_due = 0;
	pthread_mutex_unlock(&gc->lock);
	int rc = sync_env(gc);
	if (rc)
		log_error("meta sync: %s", strerror(-rc));
	pthread_mutex_lock(&gc->lock);
	if (rc)
		gc->dirty = true;
	else
		gc->st.syncs++;
}

static void *writer(void *arg)
{
	struct meta_commit *gc = arg;
	MDB_env *env = gc->db->env;
	pthread_setname_np(pthread_self(), "meta-writer"); /* for top, perf */
	pthread_mutex_lock(&gc->lock);
	for (;;) {
		while (!gc->head && !gc->stopping) {
			if (!gc->dirty || gc->sync_busy) {
				pthread_cond_wait(&gc->wake, &gc->lock);
				continue;
			}
			/* idle with a lazy batch unsynced: sync it after idle_sync_ms, so that
			 * nothing acknowledged stays only in the page cache for longer (as a
			 * local file system's periodic commit) */
			if (!gc->dirty_due)
				gc->dirty_due = now_ms() + gc->idle_sync_ms;
			int64_t due = gc->dirty_due;
			struct timespec until = {.tv_sec = due / 1000,
						 .tv_nsec = (long)(due % 1000) * 1000000};
			if (pthread_cond_timedwait(&gc->wake, &gc->lock, &until) == ETIMEDOUT &&
			    !gc->head && gc->dirty && !gc->sync_busy)
				idle_sync(gc);
		}
		if (!gc->head)
			break; /* stopping, and everything taken is committed */
		struct batch b = {0};
		uint64_t writes0 = meta_mdb_writes;
		pthread_mutex_unlock(&gc->lock);
		if (gc->sp)
			meta_space_check(gc->sp); /* no write txn live: the map may grow */
		meta_mdb_map_full = false;
		b.err = meta_mdb_err(mdb_txn_begin(env, NULL, 0, &b.txn));
		pthread_mutex_lock(&gc->lock);
		/* Fill the batch until the previous one is synced: applying overlaps that
		 * sync, and ops that arrive meanwhile still join this batch. A batch of only
		 * lingering ops then waits up to linger_ms for one that is not. */
		bool all_linger = true;
		int64_t linger_until = 0;
		for (;;) {
			struct meta_mutation *more, *last;
			unsigned n;
			if (b.n < gc->max_batch &&
			    (more = take(gc, gc->max_batch - b.n, &n, &last))) {
				pthread_mutex_unlock(&gc->lock);
				if (b.err) { /* nothing to apply in: completes with b.err */
					if (b.last)
						b.last->next = more;
					else
						b.first = more;
					b.last = last;
					b.n += n;
				} else {
					for (struct meta_mutation *m = more; m; m = m->next)
						all_linger &= m->linger;
					batch_add(gc, &b, more, last, n);
				}
				pthread_mutex_lock(&gc->lock);
				continue;
			}
			if (!gc->sync_busy) {
				if (b.err || !all_linger || !b.n || b.n >= gc->max_batch ||
				    gc->stopping || !gc->linger_ms)
					break;
				if (!linger_until)
					linger_until = now_ms() + gc->linger_ms;
				struct timespec until = {.tv_sec = linger_until / 1000,
							 .tv_nsec = (long)(linger_until % 1000) *
								    1000000};
				if (pthread_cond_timedwait(&gc->wake, &gc->lock, &until) ==
				    ETIMEDOUT && !gc->head)
					break;
				continue;
			}
			pthread_cond_wait(&gc->wake, &gc->lock); /* an op, or the sync done */
		}
		/* Committing syncs this batch's pages before writing its meta page
		 * (MDB_NOMETASYNC, mdb.c); the syncer then makes that meta page durable. One
		 * sync at a time: commit after the previous batch's sync is done. */
		pthread_mutex_unlock(&gc->lock);
		if (!b.err && gc->sp && met_enospc(&b)) {
			/* An op met a full map or disk: nothing of b is committed yet. Abort,
			 * let meta's space give what it can (a bigger map, or the reserve with
			 * growing ops refused), apply b again once; what fails again fails. */
			bool no_grow = false;
			mdb_txn_abort(b.txn);
			b.txn = NULL;
			meta_space_relieve(gc->sp, meta_mdb_map_full, &no_grow);
			meta_mdb_map_full = false;
			reapply(gc, &b, no_grow);
		}
		b.wrote = meta_mdb_writes != writes0;
		if (!b.err && b.txn) {
			b.err = commit_txn(gc, &b);
			b.txn = NULL;
			/* the disk filled under the commit's writes: the same, once */
			bool no_grow = false;
			if (b.err == -ENOSPC && gc->sp && !b.retried &&
			    meta_space_relieve(gc->sp, meta_mdb_map_full, &no_grow)) {
				reapply(gc, &b, no_grow);
				if (!b.err)
					b.err = commit_txn(gc, &b);
			}
		} else if (b.txn) {
			mdb_txn_abort(b.txn);
		}
		/* LMDB writes nothing for a txn that changed nothing */
		if (!b.err && meta_mdb_writes != writes0)
			stats_add(STATS_META_DB_COMMITS, 1);
		b.txn = NULL;
		pthread_mutex_lock(&gc->lock);
		/* With ops waiting, the syncer syncs while the writer applies them. With none
		 * (a lone client), or in --sync-each mode (max_batch 1: one create, one commit,
		 * one sync, strictly in turn, as without group commit), the writer syncs itself:
		 * a hand-off would only add a thread wake-up to every op's latency. */
		bool waits = false;
		for (struct meta_mutation *m = b.first; m; m = m->next)
			waits |= m->durable;
		if (gc->head && gc->max_batch > 1 && waits) {
			gc->sync_batch = b;
			gc->sync_busy = true;
			pthread_cond_signal(&gc->sync_wake);
		} else {
			pthread_mutex_unlock(&gc->lock);
			finish_batch(gc, &b);
			pthread_mutex_lock(&gc->lock);
		}
	}
	/* stopping: what lazy batches committed is made durable before meta exits */
	while (gc->sync_busy)
		pthread_cond_wait(&gc->wake, &gc->lock);
	if (gc->dirty)
		idle_sync(gc);
	pthread_mutex_unlock(&gc->lock);
	return NULL;
}

/* Syncs each committed batch the writer hands over, while the writer fills the next. */
static void *syncer(void *arg)
{
	struct meta_commit *gc = arg;
	pthread_setname_np(pthread_self(), "meta-sync");
	pthread_mutex_lock(&gc->lock);
	for (;;) {
		while (!gc->sync_busy && !gc->writer_gone)
			pthread_cond_wait(&gc->sync_wake, &gc->lock);
		if (!gc->sync_busy)
			break; /* writer gone and nothing left */
		struct batch b = gc->sync_batch;
		pthread_mutex_unlock(&gc->lock);
		finish_batch(gc, &b);
		pthread_mutex_lock(&gc->lock);
		gc->sync_busy = false; /* after the hand-over: completions stay in order */
		pthread_cond_signal(&gc->wake);
	}
	pthread_mutex_unlock(&gc->lock);
	return NULL;
}

/* Calls done() of synced mutations in order, off the writer and syncer threads:
 * replying (a socket write per op) overlaps the next batches' apply, commit and sync. */
static void *completer(void *arg)
{
	struct meta_commit *gc = arg;
	pthread_setname_np(pthread_self(), "meta-done");
	pthread_mutex_lock(&gc->dlock);
	for (;;) {
		while (!gc->dhead && !gc->syncer_gone)
			pthread_cond_wait(&gc->dwake, &gc->dlock);
		struct meta_mutation *m = gc->dhead;
		if (!m)
			break; /* syncer gone and nothing left */
		gc->dhead = gc->dtail = NULL;
		pthread_mutex_unlock(&gc->dlock);
		for (struct meta_mutation *next; m; m = next) {
			next = m->next; /* done() may free m */
			m->done(m->arg, m->result);
		}
		pthread_mutex_lock(&gc->dlock);
	}
	pthread_mutex_unlock(&gc->dlock);
	return NULL;
}

/* Stops the syncer (after the writer is gone) and the completer, joining them. */
static void stop_syncer(struct meta_commit *gc)
{
	pthread_mutex_lock(&gc->lock);
	gc->writer_gone = true;
	pthread_cond_signal(&gc->sync_wake);
	pthread_mutex_unlock(&gc->lock);
	pthread_join(gc->syncer, NULL);
}

static void stop_completer(struct meta_commit *gc)
{
	pthread_mutex_lock(&gc->dlock);
	gc->syncer_gone = true;
	pthread_cond_signal(&gc->dwake);
	pthread_mutex_unlock(&gc->dlock);
	pthread_join(gc->completer, NULL);
}

static void destroy(struct meta_commit *gc)
{
	if (gc->synclog)
		fclose(gc->synclog);
	if (gc->commitlog)
		fclose(gc->commitlog);
	pthread_cond_destroy(&gc->dwake);
	pthread_mutex_destroy(&gc->dlock);
	pthread_cond_destroy(&gc->sync_wake);
	pthread_cond_destroy(&gc->wake);
	pthread_mutex_destroy(&gc->lock);
	free(gc);
}

/* The last transaction number the database holds (0 for one written before numbers). */
static int load_transno(struct meta_commit *gc)
{
	MDB_txn *txn;
	int rc = meta_db_read_begin(gc->db, &txn);
	if (rc)
		return rc;
	MDB_val k = {sizeof(transno_key) - 1, (void *)transno_key}, v;
	rc = mdb_get(txn, gc->db->super, &k, &v);
	if (rc == 0 && v.mv_size == 8)
		gc->transno = get_le64(v.mv_data);
	meta_db_read_end(gc->db, txn);
	if (rc && rc != MDB_NOTFOUND)
		return meta_mdb_err(rc);
	atomic_init(&gc->committed, gc->transno);
	atomic_init(&gc->synced, gc->transno); /* what a restart finds is what was durable */
	return 0;
}

int meta_commit_start(struct meta_db *db, unsigned max_batch, struct meta_commit **out)
{
	struct meta_commit *gc = calloc(1, sizeof(*gc));
	int rc;
	if (!gc)
		return -ENOMEM;
	gc->db = db;
	gc->max_batch = max_batch ? max_batch : META_COMMIT_BATCH_DEFAULT;
	gc->idle_sync_ms = META_COMMIT_IDLE_SYNC_MS;
	gc->linger_ms = META_COMMIT_LINGER_MS;
	gc->sync_delay_ms = META_COMMIT_SYNC_DELAY_MS;
	if ((rc = load_transno(gc))) {
		destroy(gc);
		return rc;
	}
	const char *delay = getenv("WEFT_META_TEST_COMMIT_DELAY_MS");
	gc->test_delay_ms = delay ? (unsigned)atoi(delay) : 0;
	const char *log = getenv("WEFT_META_TEST_SYNCLOG");
	if (log && *log && !(gc->synclog = fopen(log, "a")))
		log_warn("WEFT_META_TEST_SYNCLOG %s: %s", log, strerror(errno));
	log = getenv("WEFT_META_TEST_COMMITLOG");
	if (log && *log && !(gc->commitlog = fopen(log, "a")))
		log_warn("WEFT_META_TEST_COMMITLOG %s: %s", log, strerror(errno));
	pthread_mutex_init(&gc->lock, NULL);
	pthread_cond_init(&gc->wake, NULL);
	pthread_cond_init(&gc->sync_wake, NULL);
	pthread_mutex_init(&gc->dlock, NULL);
	pthread_cond_init(&gc->dwake, NULL);
	if ((rc = pthread_create(&gc->completer, NULL, completer, gc))) {
		destroy(gc);
		return -rc;
	}
	if ((rc = pthread_create(&gc->syncer, NULL, syncer, gc))) {
		stop_completer(gc);
		destroy(gc);
		return -rc;
	}
	if ((rc = pthread_create(&gc->writer, NULL, writer, gc))) {
		stop_syncer(gc);
		stop_completer(gc);
		destroy(gc);
		return -rc;
	}
	*out = gc;
	return 0;
}

void meta_commit_stop(struct meta_commit *gc)
{
	if (!gc)
		return;
	pthread_mutex_lock(&gc->lock);
	gc->stopping = true;
	pthread_cond_signal(&gc->wake);
	pthread_mutex_unlock(&gc->lock);
	/* each thread drains what the one before it handed over, then exits */
	pthread_join(gc->writer, NULL);
	stop_syncer(gc);
	stop_completer(gc);
	destroy(gc);
}

int meta_commit_submit(struct meta_commit *gc, struct meta_mutation *m)
{
	m->next = NULL;
	pthread_mutex_lock(&gc->lock);
	if (gc->stopping) {
		pthread_mutex_unlock(&gc->lock);
		return -ESHUTDOWN;
	}
	if (gc->tail)
		gc->tail->next = m;
	else
		gc->head = m;
	gc->tail = m;
	pthread_cond_signal(&gc->wake);
	pthread_mutex_unlock(&gc->lock);
	return 0;
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int result;
};

static void wake_waiter(void *arg, int result)
{
	struct waiter *w = arg;
	pthread_mutex_lock(&w->lock);
	w->done = true;
	w->result = result;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

struct run_arg {
	int (*apply)(MDB_txn *txn, void *arg);
	void *arg;
	struct waiter w;
};

static int run_apply(MDB_txn *txn, void *arg)
{
	struct run_arg *ra = arg;
	return ra->apply(txn, ra->arg);
}

static void run_done(void *arg, int result)
{
	struct run_arg *ra = arg;
	wake_waiter(&ra->w, result);
}

int meta_commit_run(struct meta_commit *gc, int (*apply)(MDB_txn *txn, void *arg), void *arg)
{
	struct run_arg ra = { .apply = apply, .arg = arg };
	struct meta_mutation m = { .apply = run_apply, .done = run_done, .arg = &ra,
				   .durable = true };
	pthread_mutex_init(&ra.w.lock, NULL);
	pthread_cond_init(&ra.w.cond, NULL);
	int rc = meta_commit_submit(gc, &m);
	if (rc == 0) {
		pthread_mutex_lock(&ra.w.lock);
		while (!ra.w.done)
			pthread_cond_wait(&ra.w.cond, &ra.w.lock);
		rc = ra.w.result;
		pthread_mutex_unlock(&ra.w.lock);
	}
	pthread_cond_destroy(&ra.w.cond);
	pthread_mutex_destroy(&ra.w.lock);
	return rc;
}

uint64_t meta_commit_synced(struct meta_commit *gc)
{
	return atomic_load(&gc->synced);
}

uint64_t meta_commit_committed(struct meta_commit *gc)
{
	return atomic_load(&gc->committed);
}

void meta_commit_set_sync_delay(struct meta_commit *gc, unsigned ms)
{
	pthread_mutex_lock(&gc->lock);
	gc->sync_delay_ms = ms;
	pthread_mutex_unlock(&gc->lock);
}

void meta_commit_set_linger(struct meta_commit *gc, unsigned ms)
{
	pthread_mutex_lock(&gc->lock);
	gc->linger_ms = ms;
	pthread_mutex_unlock(&gc->lock);
}

void meta_commit_set_idle_sync(struct meta_commit *gc, unsigned ms)
{
	pthread_mutex_lock(&gc->lock);
	gc->idle_sync_ms = ms ? ms : 1;
	pthread_cond_signal(&gc->wake);
	pthread_mutex_unlock(&gc->lock);
}

void meta_commit_set_space(struct meta_commit *gc, struct meta_space *sp)
{
	gc->sp = sp;
}

void meta_commit_stats(struct meta_commit *gc, struct meta_commit_stats *out)
{
	pthread_mutex_lock(&gc->lock);
	*out = gc->st;
	pthread_mutex_unlock(&gc->lock);
}
