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
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;              /* signalled on submit and stop */
	struct meta_mutation *head, *tail; /* queue, guarded by lock */
	bool stopping;                    /* guarded by lock */
	struct meta_commit_stats st;      /* guarded by lock */
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

/* Runs one batch: nested txn per mutation, one commit, one sync, then completions. */
static void run_batch(struct meta_commit *gc, struct meta_mutation *list, unsigned n)
{
	int *res = calloc(n, sizeof(*res));
	MDB_env *env = gc->db->env;
	MDB_txn *txn = NULL;
	int err = res ? meta_mdb_err(mdb_txn_begin(env, NULL, 0, &txn)) : -ENOMEM;
	unsigned i = 0;
	bool synced = false;

	if (err == 0) {
		for (struct meta_mutation *m = list; m; m = m->next, i++) {
			MDB_txn *child;
			int rc = meta_mdb_err(mdb_txn_begin(env, txn, 0, &child));
			if (rc == 0) {
				rc = m->apply(child, m->arg);
				if (rc == 0)
					rc = meta_mdb_err(mdb_txn_commit(child));
				else
					mdb_txn_abort(child);
			}
			res[i] = rc;
		}
		err = meta_mdb_err(mdb_txn_commit(txn));
		bool need_sync = false;
		for (struct meta_mutation *m = list; m; m = m->next)
			need_sync |= !m->lazy;
		if (err == 0 && need_sync) {
			err = meta_mdb_err(mdb_env_sync(env, 1));
			synced = true;
		}
		if (err)
			log_error("meta group commit of %u ops: %s", n, strerror(-err));
	}

	unsigned failed = 0;
	for (i = 0; i < n; i++)
		failed += (err ? err : res[i]) != 0;
	/* stats first: a waiter woken by done() sees its own op counted */
	pthread_mutex_lock(&gc->lock);
	gc->st.ops += n;
	gc->st.failed += failed;
	gc->st.batches += err == 0;
	gc->st.syncs += synced;
	pthread_mutex_unlock(&gc->lock);
	i = 0;
	for (struct meta_mutation *m = list, *next; m; m = next, i++) {
		next = m->next; /* done() may free m */
		m->done(m->arg, err ? err : res[i]);
	}
	free(res);
}

static void *writer(void *arg)
{
	struct meta_commit *gc = arg;
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
	if ((rc = pthread_create(&gc->thread, NULL, writer, gc))) {
		pthread_cond_destroy(&gc->wake);
		pthread_mutex_destroy(&gc->lock);
		free(gc);
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
	pthread_join(gc->thread, NULL);
	pthread_cond_destroy(&gc->wake);
	pthread_mutex_destroy(&gc->lock);
	free(gc);
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
