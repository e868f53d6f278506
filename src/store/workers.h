/* A fixed pool of worker threads for a store's disk I/O and blocking calls, fed by
 * the loop thread.
 *
 * DESIGN: each worker has its own FIFO, and there is one shared FIFO. A job pushed
 * with a key (a hash of the object it mutates) always goes to the same worker's FIFO,
 * so mutations of one object run in arrival order on every member of a chain (the
 * replicas apply them in the same order). A job pushed without a key (reads, stats,
 * lists) goes to the shared FIFO and runs on whichever worker is free. A worker takes
 * its own FIFO first. One mutex guards every FIFO; a push wakes at most one sleeping
 * worker (the FIFO's owner for a keyed job, the last to fall asleep for a shared one).
 *
 * Threads: push from any thread; create/destroy from the owner. */
#ifndef WEFT_STORE_WORKERS_H
#define WEFT_STORE_WORKERS_H

#include <stdint.h>

struct store_job {
	void (*fn)(struct store_job *j);  /* runs on a worker thread; owns j */
	struct store_job *next;           /* private to workers.c */
};

struct store_workers;

/* Starts n (1..64) threads. Returns 0, -EINVAL or -errno (pthread_create). */
int store_workers_create(unsigned n, struct store_workers **out);
/* Runs every queued job, then joins the threads and frees. NULL is a no-op. */
void store_workers_destroy(struct store_workers *w);
/* Queues j: keyed (any value) to one worker's FIFO, or to the shared FIFO with
 * STORE_JOB_ANY. Never fails; j must stay valid until its fn runs. */
#define STORE_JOB_ANY UINT64_MAX
void store_workers_push(struct store_workers *w, struct store_job *j, uint64_t key);
/* Jobs queued and not yet started (for stats and tests). */
unsigned store_workers_queued(struct store_workers *w);

#endif
