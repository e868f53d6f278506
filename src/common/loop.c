/* epoll event loop with posted tasks (eventfd) and periodic timers. */
#include "common/loop.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

struct task {
	struct task *next;
	loop_task_cb fn;
	void *arg;
};

struct timer {
	struct timer *next;
	uint32_t period_ms;
	uint64_t due_ms;
	loop_task_cb fn;
	void *arg;
};

struct loop {
	int epfd;
	struct loop_watch wake; /* eventfd for loop_post and loop_stop */
	pthread_mutex_t lock;   /* guards tasks_head/tasks_tail */
	struct task *tasks_head, *tasks_tail;
	struct timer *timers;   /* loop thread only (added before start or from the loop) */
	pthread_mutex_t timer_lock;
	volatile int stopping;
	pthread_t thread;
	bool threaded;
	volatile pthread_t runner;
	volatile bool running;
};

uint64_t loop_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t loop_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int64_t loop_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct timespec loop_deadline_ms(unsigned ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static void wake_cb(struct loop_watch *w, uint32_t events)
{
	uint64_t v;
	ssize_t r = read(w->fd, &v, sizeof(v));
	(void)r;
	(void)events;
}

int loop_new(struct loop **out)
{
	struct loop *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	int err;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		err = -errno;
		goto fail_free;
	}
	l->wake.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->wake.fd < 0) {
		err = -errno;
		goto fail_ep;
	}
	l->wake.cb = wake_cb;
	l->wake.arg = l;
	pthread_mutex_init(&l->lock, NULL);
	pthread_mutex_init(&l->timer_lock, NULL);
	err = loop_watch_add(l, &l->wake, EPOLLIN);
	if (err)
		goto fail_ev;
	*out = l;
	return 0;
fail_ev:
	close(l->wake.fd);
fail_ep:
	close(l->epfd);
fail_free:
	free(l);
	return err;
}

static void run_tasks(struct loop *l)
{
	pthread_mutex_lock(&l->lock);
	struct task *t = l->tasks_head;
	l->tasks_head = l->tasks_tail = NULL;
	pthread_mutex_unlock(&l->lock);
	while (t) {
		struct task *next = t->next;
		t->fn(t->arg);
		free(t);
		t = next;
	}
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	loop_stop(l);
	if (l->threaded)
		pthread_join(l->thread, NULL);
	run_tasks(l);
	while (l->timers) {
		struct timer *t = l->timers;
		l->timers = t->next;
		free(t);
	}
	close(l->wake.fd);
	close(l->epfd);
	pthread_mutex_destroy(&l->lock);
	pthread_mutex_destroy(&l->timer_lock);
	free(l);
}

int loop_watch_add(struct loop *l, struct loop_watch *w, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = w};
	w->events = events;
	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0 ? -errno : 0;
}

int loop_watch_mod(struct loop *l, struct loop_watch *w, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = w};
	w->events = events;
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0 ? -errno : 0;
}

void loop_watch_del(struct loop *l, struct loop_watch *w)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

static void wake(struct loop *l)
{
	uint64_t one = 1;
	ssize_t r = write(l->wake.fd, &one, sizeof(one));
	(void)r;
}

int loop_post(struct loop *l, loop_task_cb fn, void *arg)
{
	struct task *t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->next = NULL;
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_lock(&l->lock);
	if (l->tasks_tail)
		l->tasks_tail->next = t;
	else
		l->tasks_head = t;
	l->tasks_tail = t;
	pthread_mutex_unlock(&l->lock);
	wake(l);
	return 0;
}

int loop_every(struct loop *l, uint32_t period_ms, loop_task_cb fn, void *arg)
{
	struct timer *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->period_ms = period_ms ? period_ms : 1;
	t->due_ms = loop_now_ms() + t->period_ms;
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_lock(&l->timer_lock);
	t->next = l->timers;
	l->timers = t;
	pthread_mutex_unlock(&l->timer_lock);
	wake(l);
	return 0;
}

void loop_cancel(struct loop *l, loop_task_cb fn, void *arg)
{
	pthread_mutex_lock(&l->timer_lock);
	for (struct timer **pp = &l->timers; *pp;) {
		struct timer *t = *pp;
		if (t->fn == fn && t->arg == arg) {
			*pp = t->next;
			free(t);
		} else {
			pp = &t->next;
		}
	}
	pthread_mutex_unlock(&l->timer_lock);
}

/* Runs due timers; returns ms until the next one (-1 if none). */
static int run_timers(struct loop *l)
{
	uint64_t now = loop_now_ms();
	int wait = -1;
	pthread_mutex_lock(&l->timer_lock);
	for (struct timer *t = l->timers; t; t = t->next) {
		if (t->due_ms <= now) {
			pthread_mutex_unlock(&l->timer_lock);
			t->fn(t->arg);
			pthread_mutex_lock(&l->timer_lock);
			now = loop_now_ms();
			t->due_ms = now + t->period_ms;
		}
		int left = (int)(t->due_ms - now);
		if (wait < 0 || left < wait)
			wait = left;
	}
	pthread_mutex_unlock(&l->timer_lock);
	return wait;
}

void loop_run(struct loop *l)
{
	struct epoll_event evs[128];
	l->runner = pthread_self();
	l->running = true;
	while (!l->stopping) {
		int wait = run_timers(l);
		int n = epoll_wait(l->epfd, evs, 128, wait);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			struct loop_watch *w = evs[i].data.ptr;
			w->cb(w, evs[i].events);
		}
		run_tasks(l);
	}
	run_tasks(l);
	l->running = false;
}

static void *loop_thread(void *arg)
{
	loop_run(arg);
	return NULL;
}

int loop_start(struct loop *l)
{
	int err = pthread_create(&l->thread, NULL, loop_thread, l);
	if (err)
		return -err;
	pthread_setname_np(l->thread, "weft-loop"); /* for top, perf and ctxt counts */
	l->threaded = true;
	return 0;
}

void loop_stop(struct loop *l)
{
	l->stopping = 1;
	wake(l);
}

bool loop_in_thread(const struct loop *l)
{
	return l->running && pthread_equal(l->runner, pthread_self());
}
