/* The mount's work queue (workq.h): one mutex, one condition variable, a FIFO. */
#include "mount/workq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "net/stats.h"

#define WORKQ_MAX 64

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct workq_job *head, **tail;
	unsigned queued;
	bool running, stopping;
	unsigned n;
	pthread_t th[WORKQ_MAX];
} q = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .tail = &q.head};

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&q.lock);
	for (;;) {
		while (!q.head && !q.stopping)
			pthread_cond_wait(&q.cond, &q.lock);
		struct workq_job *j = q.head;
		if (!j)
			break; /* stopping, and nothing left */
		q.head = j->next;
		if (!q.head)
			q.tail = &q.head;
		stats_set_gauge(STATS_MOUNT_RELEASES_QUEUED, --q.queued);
		pthread_mutex_unlock(&q.lock);
		j->run(j);
		pthread_mutex_lock(&q.lock);
	}
	pthread_mutex_unlock(&q.lock);
	return NULL;
}

int workq_start(unsigned n)
{
	if (n > WORKQ_MAX)
		n = WORKQ_MAX;
	pthread_mutex_lock(&q.lock);
	q.stopping = false;
	for (q.n = 0; q.n < n; q.n++) {
		int err = pthread_create(&q.th[q.n], NULL, worker, NULL);
		if (err) {
			log_warn("mount: work queue: thread %u of %u: %s", q.n + 1, n, strerror(err));
			break;
		}
		pthread_setname_np(q.th[q.n], "weft-workq");
	}
	q.running = q.n > 0;
	pthread_mutex_unlock(&q.lock);
	return q.running ? 0 : -EAGAIN;
}

void workq_push(struct workq_job *job)
{
	job->next = NULL;
	pthread_mutex_lock(&q.lock);
	if (!q.running) {
		pthread_mutex_unlock(&q.lock);
		job->run(job);
		return;
	}
	*q.tail = job;
	q.tail = &job->next;
	stats_set_gauge(STATS_MOUNT_RELEASES_QUEUED, ++q.queued);
	pthread_cond_signal(&q.cond);
	pthread_mutex_unlock(&q.lock);
}

void workq_stop(void)
{
	pthread_mutex_lock(&q.lock);
	if (!q.running) {
		pthread_mutex_unlock(&q.lock);
		return;
	}
	q.stopping = true;
	pthread_cond_broadcast(&q.cond);
	unsigned n = q.n;
	pthread_mutex_unlock(&q.lock);
	for (unsigned i = 0; i < n; i++)
		pthread_join(q.th[i], NULL);
	pthread_mutex_lock(&q.lock);
	q.running = false;
	q.n = 0;
	pthread_mutex_unlock(&q.lock);
}
