/* Group commit writer thread (see commit.h for the design). */
#include "meta/commit.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

struct meta_commit {
	struct meta_db *db;
	unsigned max_batch;
	pthread_t writer, completer;
	pthread_mutex_t lock;
	pthread_cond_t wake;              /* writer: signalled on submit and stop */
	struct meta_mutation *head, *tail; /* submitted, guarded by lock */
	bool stopping;                    /* guarded by lock */
	struct meta_commit_stats st;      /* guarded by lock */
	/* Batches applied and synced, waiting for their done() calls. A lock of their own:
	 * the completion thread must not contend with submitters. */
	pthread_mutex_t dlock;
	pthread_cond_t dwake;               /* completion thread: work, or writer gone */
	struct meta_mutation *dhead, *dtail; /* guarded by dlock */
	bool writer_gone;                   /* guarded by dlock */
};

/* Takes up to max mutations off the queue (lock held). */
static struct meta_mutation *take(struct meta_commit *gc, unsigned *n)
{
	struct meta_mutation *first = gc->head, *m = first, *last = NULL;
	*n = 0;
	while (m && *n < gc->max_batch) {
		last = m;
		m = m->next;
		(*n)++;
	}
	if (last)
		last->next = NULL;
	gc->head = m;
	if (!m)
		gc->tail = NULL;
	return first;
}

/* Errors an op may return because LMDB itself failed under it (map full, I/O, out of
 * memory, corruption): the txn may be flagged unusable even if the op wrote nothing. */
static bool lmdb_may_have_failed(int rc)
{
	return rc == -EIO || rc == -ENOSPC || rc == -ENOMEM || rc == -EAGAIN;
}

/* The fast path: every op straight in the batch txn. Returns false when an op failed
 * after attempting a write (or as lmdb_may_have_failed): its partial writes cannot be
 * taken out, so the caller aborts txn and redoes the batch with apply_nested. */
static bool apply_direct(MDB_txn *txn, struct meta_mutation *list)
{
	for (struct meta_mutation *m = list; m; m = m->next) {
		uint64_t writes = meta_mdb_writes;
		m->result = m->apply(txn, m->arg);
		if (m->result && (meta_mdb_writes != writes || lmdb_may_have_failed(m->result)))
			return false;
	}
	return true;
}

/* The slow path: one nested txn per op, committed if apply returns 0, aborted otherwise,
 * so a failing op's writes go with its child. */
static void apply_nested(MDB_env *env, MDB_txn *txn, struct meta_mutation *list)
{
	for (struct meta_mutation *m = list; m; m = m->next) {
		MDB_txn *child;
		int rc = meta_mdb_err(mdb_txn_begin(env, txn, 0, &child));
		if (rc == 0) {
			rc = m->apply(child, m->arg);
			if (rc == 0)
				rc = meta_mdb_err(mdb_txn_commit(child));
			else
				mdb_txn_abort(child);
		}
		m->result = rc;
	}
}

/* Appends a finished batch to the completion queue. */
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

/* Runs one batch: ops in one txn, one commit, one sync, then hands it to completion. */
static void run_batch(struct meta_commit *gc, struct meta_mutation *list, unsigned n)
{
	MDB_env *env = gc->db->env;
	MDB_txn *txn = NULL;
	bool synced = false, redone = false;
	int err = meta_mdb_err(mdb_txn_begin(env, NULL, 0, &txn));

	if (err == 0 && !apply_direct(txn, list)) {
		mdb_txn_abort(txn);
		redone = true;
		err = meta_mdb_err(mdb_txn_begin(env, NULL, 0, &txn));
		if (err == 0)
			apply_nested(env, txn, list);
	}
	if (err == 0) {
		err = meta_mdb_err(mdb_txn_commit(txn));
		bool need_sync = false;
		for (struct meta_mutation *m = list; m; m = m->next)
			need_sync |= !m->lazy;
		if (err == 0 && need_sync) {
			err = meta_mdb_err(mdb_env_sync(env, 1));
			synced = true;
		}
	}
	if (err)
		log_error("meta group commit of %u ops: %s", n, strerror(-err));

	unsigned failed = 0;
	struct meta_mutation *last = NULL;
	for (struct meta_mutation *m = list; m; m = m->next) {
		if (err)
			m->result = err;
		failed += m->result != 0;
		last = m;
	}
	/* stats first: a waiter woken by done() sees its own op counted */
	pthread_mutex_lock(&gc->lock);
	gc->st.ops += n;
	gc->st.failed += failed;
	gc->st.batches += err == 0;
	gc->st.syncs += synced;
	gc->st.redone += redone;
	pthread_mutex_unlock(&gc->lock);
	if (list)
		hand_over(gc, list, last);
}

static void *writer(void *arg)
{
	struct meta_commit *gc = arg;
	pthread_setname_np(pthread_self(), "meta-writer"); /* for top, perf */
	pthread_mutex_lock(&gc->lock);
	for (;;) {
		while (!gc->head && !gc->stopping)
			pthread_cond_wait(&gc->wake, &gc->lock);
		if (!gc->head && gc->stopping)
			break;
		unsigned n;
		struct meta_mutation *list = take(gc, &n);
		pthread_mutex_unlock(&gc->lock);
		run_batch(gc, list, n);
		pthread_mutex_lock(&gc->lock);
	}
	pthread_mutex_unlock(&gc->lock);
	return NULL;
}

/* Calls done() of finished mutations in order, off the writer thread: replying (a
 * socket write per op) overlaps the next batch's apply, commit and sync. */
static void *completer(void *arg)
{
	struct meta_commit *gc = arg;
	pthread_setname_np(pthread_self(), "meta-done");
	pthread_mutex_lock(&gc->dlock);
	for (;;) {
		while (!gc->dhead && !gc->writer_gone)
			pthread_cond_wait(&gc->dwake, &gc->dlock);
		struct meta_mutation *m = gc->dhead;
		if (!m)
			break; /* writer gone and nothing left */
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

static void destroy(struct meta_commit *gc)
{
	pthread_cond_destroy(&gc->dwake);
	pthread_mutex_destroy(&gc->dlock);
	pthread_cond_destroy(&gc->wake);
	pthread_mutex_destroy(&gc->lock);
	free(gc);
}

int meta_commit_start(struct meta_db *db, unsigned max_batch, struct meta_commit **out)
{
	struct meta_commit *gc = calloc(1, sizeof(*gc));
	int rc;
	if (!gc)
		return -ENOMEM;
	gc->db = db;
	gc->max_batch = max_batch ? max_batch : META_COMMIT_BATCH_DEFAULT;
	pthread_mutex_init(&gc->lock, NULL);
	pthread_cond_init(&gc->wake, NULL);
	pthread_mutex_init(&gc->dlock, NULL);
	pthread_cond_init(&gc->dwake, NULL);
	if ((rc = pthread_create(&gc->completer, NULL, completer, gc))) {
		destroy(gc);
		return -rc;
	}
	if ((rc = pthread_create(&gc->writer, NULL, writer, gc))) {
		pthread_mutex_lock(&gc->dlock);
		gc->writer_gone = true;
		pthread_cond_signal(&gc->dwake);
		pthread_mutex_unlock(&gc->dlock);
		pthread_join(gc->completer, NULL);
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
	pthread_join(gc->writer, NULL);
	/* the writer has handed over its last batch: the completer drains it and exits */
	pthread_mutex_lock(&gc->dlock);
	gc->writer_gone = true;
	pthread_cond_signal(&gc->dwake);
	pthread_mutex_unlock(&gc->dlock);
	pthread_join(gc->completer, NULL);
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
	struct meta_mutation m = { .apply = run_apply, .done = run_done, .arg = &ra };
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

void meta_commit_stats(struct meta_commit *gc, struct meta_commit_stats *out)
{
	pthread_mutex_lock(&gc->lock);
	*out = gc->st;
	pthread_mutex_unlock(&gc->lock);
}
