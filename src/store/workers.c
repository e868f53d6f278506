/* Worker threads of a store: per-worker FIFOs for ordered mutations, a shared FIFO
 * for everything else (see workers.h).
 *
 * Wake-ups: each worker sleeps on a condition variable of its own, and a push wakes at
 * most one worker: the owner of the FIFO for a keyed job (if it sleeps), or the worker
 * that went to sleep last for a shared job (its stack and cache are the warmest). A busy
 * worker needs no wake-up: it looks at its FIFO and the shared one before it sleeps.
 * Waking every worker on every push (as a broadcast would) cost each request a burst of
 * context switches and a fight for the lock among the workers that lost the race
 * (docs/PERFORMANCE.md, issue 17). */
#include "store/workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct fifo {
	struct store_job *head, *tail;
};

struct worker {
	pthread_cond_t cond;        /* this worker's wake-up */
	bool sleeping;              /* in cond_wait, not yet woken; guarded by lock */
	bool in_stack;              /* on the stack of sleepers; guarded by lock */
};

struct store_workers {
	pthread_mutex_t lock;
	unsigned n;
	bool stopping;              /* guarded by lock */
	unsigned queued;            /* guarded by lock */
	struct fifo shared;         /* guarded by lock */
	struct fifo *own;           /* [n], guarded by lock */
	struct worker *wk;          /* [n] */
	unsigned *idle;             /* [n] stack of sleeping workers (top: the last to
				     * sleep), guarded by lock */
	unsigned nidle;             /* guarded by lock */
	pthread_t *threads;
	unsigned started;
};

struct worker_arg {
	struct store_workers *w;
	unsigned idx;
};

static void fifo_push(struct fifo *q, struct store_job *j)
{
	j->next = NULL;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
}

static struct store_job *fifo_pop(struct fifo *q)
{
	struct store_job *j = q->head;
	if (j) {
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
	}
	return j;
}

/* Takes worker i off the stack of sleepers (lock held). */
static void idle_remove(struct store_workers *w, unsigned i)
{
	if (!w->wk[i].in_stack)
		return;
	w->wk[i].in_stack = false;
	for (unsigned k = w->nidle; k-- > 0;)
		if (w->idle[k] == i) {
			for (; k + 1 < w->nidle; k++)
				w->idle[k] = w->idle[k + 1];
			w->nidle--;
			return;
		}
}

/* Wakes worker i if it sleeps (lock held). */
static void wake(struct store_workers *w, unsigned i)
{
	if (!w->wk[i].sleeping)
		return;
	w->wk[i].sleeping = false;
	idle_remove(w, i);
	pthread_cond_signal(&w->wk[i].cond);
}

static void *worker_main(void *arg)
{
	struct worker_arg a = *(struct worker_arg *)arg;
	free(arg);
	struct store_workers *w = a.w;
	struct worker *me = &w->wk[a.idx];
	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct store_job *j = fifo_pop(&w->own[a.idx]);
		if (!j)
			j = fifo_pop(&w->shared);
		if (!j) {
			if (w->stopping)
				break;
			me->sleeping = true;
			me->in_stack = true;
			w->idle[w->nidle++] = a.idx;
			/* spurious wake-ups leave it sleeping and stacked: wait again */
			while (me->sleeping && !w->stopping)
				pthread_cond_wait(&me->cond, &w->lock);
			me->sleeping = false;
			idle_remove(w, a.idx);
			continue;
		}
		w->queued--;
		pthread_mutex_unlock(&w->lock);
		j->fn(j);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int store_workers_create(unsigned n, struct store_workers **out)
{
	if (n == 0 || n > 64)
		return -EINVAL;
	struct store_workers *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->n = n;
	w->own = calloc(n, sizeof(*w->own));
	w->wk = calloc(n, sizeof(*w->wk));
	w->idle = calloc(n, sizeof(*w->idle));
	w->threads = calloc(n, sizeof(*w->threads));
	if (!w->own || !w->wk || !w->idle || !w->threads) {
		free(w->own);
		free(w->wk);
		free(w->idle);
		free(w->threads);
		free(w);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->lock, NULL);
	for (unsigned i = 0; i < n; i++)
		pthread_cond_init(&w->wk[i].cond, NULL);
	for (unsigned i = 0; i < n; i++) {
		struct worker_arg *a = malloc(sizeof(*a));
		if (a)
			*a = (struct worker_arg){w, i};
		int rc = a ? pthread_create(&w->threads[i], NULL, worker_main, a) : ENOMEM;
		if (rc) {
			free(a);
			store_workers_destroy(w);
			return -rc;
		}
		pthread_setname_np(w->threads[i], "weft-worker");
		w->started++;
	}
	*out = w;
	return 0;
}

void store_workers_destroy(struct store_workers *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	for (unsigned i = 0; i < w->n; i++)
		pthread_cond_signal(&w->wk[i].cond);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->started; i++)
		pthread_join(w->threads[i], NULL);
	/* jobs of a worker that never started (create failed half-way) */
	for (unsigned i = 0; i < w->n; i++) {
		struct store_job *j;
		while ((j = fifo_pop(&w->own[i])))
			j->fn(j);
	}
	for (unsigned i = 0; i < w->n; i++)
		pthread_cond_destroy(&w->wk[i].cond);
	pthread_mutex_destroy(&w->lock);
	free(w->own);
	free(w->wk);
	free(w->idle);
	free(w->threads);
	free(w);
}

void store_workers_push(struct store_workers *w, struct store_job *j, uint64_t key)
{
	pthread_mutex_lock(&w->lock);
	if (key == STORE_JOB_ANY) {
		fifo_push(&w->shared, j);
		if (w->nidle)
			wake(w, w->idle[w->nidle - 1]);
	} else {
		uint64_t h = key * 0x9E3779B97F4A7C15ULL;
		unsigned i = (unsigned)((h >> 32) % w->n);
		fifo_push(&w->own[i], j);
		wake(w, i);
	}
	w->queued++;
	pthread_mutex_unlock(&w->lock);
}

unsigned store_workers_queued(struct store_workers *w)
{
	pthread_mutex_lock(&w->lock);
	unsigned n = w->queued;
	pthread_mutex_unlock(&w->lock);
	return n;
}
