/* The store's worker pool: jobs with one key run in push order, one at a time; jobs
 * without a key spread over the workers; each push wakes a sleeping worker that runs
 * it (no job waits for destroy); destroy runs every queued job first. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "check.h"
#include "store/workers.h"

#define KEYS 16
#define PER_KEY 2000

struct tjob {
	struct store_job job;
	uint64_t key;
	int seq;
};

static int last_seq[KEYS];
static atomic_int running[KEYS];
static atomic_int done_jobs, order_errors, overlap_errors, max_parallel, now_parallel;

static void keyed_fn(struct store_job *j)
{
	struct tjob *t = (struct tjob *)j;
	if (atomic_fetch_add(&running[t->key], 1) != 0)
		atomic_fetch_add(&overlap_errors, 1);
	if (last_seq[t->key] != t->seq - 1)
		atomic_fetch_add(&order_errors, 1);
	last_seq[t->key] = t->seq;
	atomic_fetch_sub(&running[t->key], 1);
	atomic_fetch_add(&done_jobs, 1);
	free(t);
}

static void any_fn(struct store_job *j)
{
	int p = atomic_fetch_add(&now_parallel, 1) + 1;
	int m = atomic_load(&max_parallel);
	while (p > m && !atomic_compare_exchange_weak(&max_parallel, &m, p))
		;
	usleep(20000);
	atomic_fetch_sub(&now_parallel, 1);
	atomic_fetch_add(&done_jobs, 1);
	free(j);
}

/* Jobs that can only end together: each waits (up to 5 s) until all have started. */
#define TOGETHER 4
static atomic_int together_started, together_late, woken_done;

static void together_fn(struct store_job *j)
{
	atomic_fetch_add(&together_started, 1);
	int ms = 0;
	while (atomic_load(&together_started) < TOGETHER && ms < 5000) {
		usleep(1000);
		ms++;
	}
	if (atomic_load(&together_started) < TOGETHER)
		atomic_fetch_add(&together_late, 1);
	free(j);
}

static void woken_fn(struct store_job *j)
{
	atomic_fetch_add(&woken_done, 1);
	free(j);
}

/* Waits up to 5 s for *v to reach want. */
static int wait_for(atomic_int *v, int want)
{
	for (int ms = 0; ms < 5000 && atomic_load(v) < want; ms++)
		usleep(1000);
	return atomic_load(v);
}

/* Every worker asleep, then pushes one at a time: each wakes a worker of its own. */
static void test_wakeups(void)
{
	struct store_workers *w;
	CHECK_OK(store_workers_create(TOGETHER, &w));
	usleep(50000);
	for (int i = 0; i < TOGETHER; i++) {
		struct store_job *j = malloc(sizeof(*j));
		j->fn = together_fn;
		store_workers_push(w, j, STORE_JOB_ANY);
	}
	CHECK_INT(wait_for(&together_started, TOGETHER), ==, TOGETHER);
	/* keyed jobs to sleeping workers run before destroy */
	usleep(50000);
	for (int k = 0; k < 16; k++) {
		struct store_job *j = malloc(sizeof(*j));
		j->fn = woken_fn;
		store_workers_push(w, j, (uint64_t)k * 7919u);
		CHECK_INT(wait_for(&woken_done, k + 1), ==, k + 1);
	}
	store_workers_destroy(w);
	CHECK_INT(atomic_load(&together_late), ==, 0);
}

int main(void)
{
	test_wakeups();
	struct store_workers *w;
	CHECK_INT(store_workers_create(0, &w), ==, -EINVAL);
	CHECK_OK(store_workers_create(4, &w));
	for (int k = 0; k < KEYS; k++)
		last_seq[k] = -1;
	for (int i = 0; i < PER_KEY; i++) {
		for (int k = 0; k < KEYS; k++) {
			struct tjob *t = malloc(sizeof(*t));
			t->job.fn = keyed_fn;
			t->key = (uint64_t)k;
			t->seq = i;
			store_workers_push(w, &t->job, (uint64_t)k * 1000003u);
		}
	}
	/* shared jobs run in parallel on several workers */
	for (int i = 0; i < 8; i++) {
		struct store_job *j = malloc(sizeof(*j));
		j->fn = any_fn;
		store_workers_push(w, j, STORE_JOB_ANY);
	}
	store_workers_destroy(w); /* drains everything */
	CHECK_INT(atomic_load(&done_jobs), ==, KEYS * PER_KEY + 8);
	CHECK_INT(atomic_load(&order_errors), ==, 0);
	CHECK_INT(atomic_load(&overlap_errors), ==, 0);
	CHECK_INT(atomic_load(&max_parallel), >=, 2);
	for (int k = 0; k < KEYS; k++)
		CHECK_INT(last_seq[k], ==, PER_KEY - 1);
	printf("ok\n");
	return 0;
}
