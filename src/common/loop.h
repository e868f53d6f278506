/* An epoll event loop: one thread owns it and runs callbacks for ready descriptors,
 * periodic timers, and tasks posted from other threads.
 *
 * DESIGN: each daemon runs one loop thread that owns connection state; blocking work
 * goes to worker threads, which hand results back with loop_post() (an eventfd wakes
 * the loop). Watchers are embedded in their owner's struct; the owner must remove a
 * watcher before freeing it, and must defer the free with loop_post() when it is
 * removed from inside a callback (events already fetched may still name it). */
#ifndef WEFT_LOOP_H
#define WEFT_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct loop;
struct loop_watch;

typedef void (*loop_fd_cb)(struct loop_watch *w, uint32_t events);
typedef void (*loop_task_cb)(void *arg);

struct loop_watch {
	int fd;
	uint32_t events; /* EPOLLIN/EPOLLOUT currently asked for */
	loop_fd_cb cb;
	void *arg;
};

/* Returns 0 or -errno. */
int loop_new(struct loop **out);
/* Stops (if running in a thread, joins it) and frees. Tasks still queued are run first. */
void loop_free(struct loop *l);
/* Registers w->fd for events; any thread. Returns 0 or -errno. */
int loop_watch_add(struct loop *l, struct loop_watch *w, uint32_t events);
int loop_watch_mod(struct loop *l, struct loop_watch *w, uint32_t events);
void loop_watch_del(struct loop *l, struct loop_watch *w);
/* Runs fn(arg) on the loop thread soon; any thread. Returns 0 or -ENOMEM. */
int loop_post(struct loop *l, loop_task_cb fn, void *arg);
/* Calls fn(arg) on the loop thread every period_ms until the loop ends or loop_cancel. */
int loop_every(struct loop *l, uint32_t period_ms, loop_task_cb fn, void *arg);
/* Removes the loop_every timers of fn(arg), so that arg may be freed. Call on the loop
 * thread (from a posted task), not from a timer callback. */
void loop_cancel(struct loop *l, loop_task_cb fn, void *arg);
/* Runs in the calling thread until loop_stop(). */
void loop_run(struct loop *l);
/* Runs the loop in a new thread. Returns 0 or -errno. */
int loop_start(struct loop *l);
/* Asks the loop to return; any thread. */
void loop_stop(struct loop *l);
/* True when called from the thread running the loop. */
bool loop_in_thread(const struct loop *l);
/* Monotonic clock in milliseconds, and in microseconds. */
uint64_t loop_now_ms(void);
uint64_t loop_now_us(void);
/* Wall-clock time (CLOCK_REALTIME) in nanoseconds: what file times are stamped with. */
int64_t loop_wall_ns(void);
/* The CLOCK_REALTIME instant ms from now, as pthread timed waits take it. */
struct timespec loop_deadline_ms(unsigned ms);

#endif
