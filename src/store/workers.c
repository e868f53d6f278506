/* Worker threads of a store: per-worker FIFOs for ordered mutations, a shared FIFO
 * for everything else (see workers.h). */
#include "store/workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct fifo {
	struct store_job *head, *tail;
};

struct store_workers {
	pthread_mutex_t lock;
	pthread_cond_t cond;        /* signalled on push and on stop */
	unsigned n;
	bool stopping;              /* guarded by lock */
	unsigned queued;            /* guarded by lock */
	struct fifo shared;         /* guarded by lock */
	struct fifo *own;           /* [n], guarded by lock */
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

static void *worker_main(void *arg)
{
	struct worker_arg a = *(struct worker_arg *)arg;
	free(arg);
	struct store_workers *w = a.w;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct store_job *j = fifo_pop(&w->own[a.idx]);
		if (!j)
			j = fifo_pop(&w->shared);
		if (!j) {
			if (w->stopping)
				break;
			pthread_cond_wait(&w->cond, &w->lock);
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
	w->threads = calloc(n, sizeof(*w->threads));
	if (!w->own || !w->threads) {
		free(w->own);
		free(w->threads);
		free(w);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
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
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->started; i++)
		pthread_join(w->threads[i], NULL);
	/* jobs of a worker that never started (create failed half-way) */
	for (unsigned i = 0; i < w->n; i++) {
		struct store_job *j;
		while ((j = fifo_pop(&w->own[i])))
			j->fn(j);
	}
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w->own);
	free(w->threads);
	free(w);
}

void store_workers_push(struct store_workers *w, struct store_job *j, uint64_t key)
{
	pthread_mutex_lock(&w->lock);
	if (key == STORE_JOB_ANY) {
		fifo_push(&w->shared, j);
	} else {
		uint64_t h = key * 0x9E3779B97F4A7C15ULL;
		fifo_push(&w->own[(h >> 32) % w->n], j);
	}
	w->queued++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

unsigned store_workers_queued(struct store_workers *w)
{
	pthread_mutex_lock(&w->lock);
	unsigned n = w->queued;
	pthread_mutex_unlock(&w->lock);
	return n;
}
