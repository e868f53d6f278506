/* The chain cache (src/net/chaincache.c): many threads meeting a chain their table does
 * not know cost one fetch; lookups do not wait for a refresh in progress; announcements
 * and stale marks make the next lookup refresh; a failed fetch keeps the old table.
 * "meta" here is a fetch function serving tables built in the test and passed through
 * the real wire codec, as CHAINS_GET's reply is. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "common/loop.h"
#include "net/chaincache.h"
#include "weft/err.h"

/* What "meta" serves now. */
static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meta_cond = PTHREAD_COND_INITIALIZER;
static uint64_t meta_epoch = 1;
static uint32_t meta_targets = 4;
static uint64_t meta_version = 1; /* of every chain */
static int meta_fail;             /* -errno to fail fetches with */
static bool meta_hold;            /* fetches wait until cleared */
static int meta_waiting;          /* fetches waiting on meta_hold */
static atomic_int fetches;
static int fetch_delay_ms;

/* One chain of 2 replicas per target (targets listed in reverse id order: the cache
 * sorts them), encoded and decoded as on the wire. */
static int fetch(void *arg, struct weft_chain_set *out)
{
	(void)arg;
	atomic_fetch_add(&fetches, 1);
	pthread_mutex_lock(&meta_lock);
	/* meta answers with what it has when the request arrives; a held fetch is one whose
	 * reply is slow to come back */
	struct weft_chain_set s = {.epoch = meta_epoch, .ntargets = meta_targets};
	int fail = meta_fail;
	uint64_t ver = meta_version;
	meta_waiting++;
	pthread_cond_broadcast(&meta_cond);
	while (meta_hold)
		pthread_cond_wait(&meta_cond, &meta_lock);
	meta_waiting--;
	pthread_mutex_unlock(&meta_lock);
	if (fetch_delay_ms)
		usleep((useconds_t)fetch_delay_ms * 1000);
	if (fail)
		return fail;
	s.targets = calloc(s.ntargets, sizeof(*s.targets));
	s.nchains[1] = s.ntargets;
	s.chains[1] = calloc(s.ntargets, sizeof(struct weft_chain));
	CHECK(s.targets && s.chains[1]);
	for (uint32_t i = 0; i < s.ntargets; i++) {
		struct weft_chain_target *t = &s.targets[i];
		t->id = s.ntargets - i; /* ids 1..n, reversed */
		snprintf(t->node, sizeof(t->node), "node%u", t->id);
		snprintf(t->addr, sizeof(t->addr), "127.0.0.1:%u", 1 + t->id);
		struct weft_chain *c = &s.chains[1][i];
		*c = (struct weft_chain){.id = i, .replicas = 2, .nmembers = 2, .version = ver};
		c->members[0].target = i + 1;
		c->members[1].target = (i + 1) % s.ntargets + 1;
	}
	struct wbuf w;
	wbuf_init(&w);
	proto_chain_set_encode(&s, &w);
	proto_chain_set_free(&s);
	CHECK_OK(w.err);
	struct rbuf r;
	rbuf_init(&r, w.data, w.len);
	int rc = proto_chain_set_decode(&r, out);
	wbuf_free(&w);
	return rc;
}

static void serve(uint64_t epoch, uint32_t targets, uint64_t version)
{
	pthread_mutex_lock(&meta_lock);
	meta_epoch = epoch;
	meta_targets = targets;
	meta_version = version;
	pthread_mutex_unlock(&meta_lock);
}

static struct chaincache *cc;

struct racer {
	pthread_t th;
	uint32_t chain;
	int rc;
	struct weft_chain got;
};

static pthread_barrier_t start_line;

static void *race(void *arg)
{
	struct racer *r = arg;
	pthread_barrier_wait(&start_line);
	r->rc = chaincache_chain(cc, 2, r->chain, 0, &r->got);
	return NULL;
}

/* 32 threads meet chain 4 (a fifth store joined) at once: one fetch serves them all. */
static void test_single_flight(void)
{
	enum { N = 32 };
	struct racer rs[N];
	serve(2, 5, 1);
	fetch_delay_ms = 50; /* long enough that every thread arrives during the fetch */
	int before = atomic_load(&fetches);
	pthread_barrier_init(&start_line, NULL, N);
	for (int i = 0; i < N; i++) {
		rs[i].chain = 4;
		CHECK_OK(pthread_create(&rs[i].th, NULL, race, &rs[i]));
	}
	for (int i = 0; i < N; i++) {
		pthread_join(rs[i].th, NULL);
		CHECK_OK(rs[i].rc);
		CHECK_INT(rs[i].got.id, ==, 4);
		CHECK_INT(rs[i].got.members[0].target, ==, 5);
	}
	pthread_barrier_destroy(&start_line);
	fetch_delay_ms = 0;
	CHECK_INT(atomic_load(&fetches) - before, ==, 1);
	CHECK_INT(chaincache_epoch(cc), ==, 2);
	printf("ok: %d threads meeting an unknown chain at once cost one fetch\n", N);
}

struct refresher {
	pthread_t th;
	int rc;
};

static void *do_refresh(void *arg)
{
	struct refresher *r = arg;
	r->rc = chaincache_refresh(cc, chaincache_gen(cc));
	return NULL;
}

static int64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* While a refresh waits for meta, lookups of known chains answer from the old table. */
static void test_readers_do_not_wait(void)
{
	serve(3, 5, 2);
	pthread_mutex_lock(&meta_lock);
	meta_hold = true;
	pthread_mutex_unlock(&meta_lock);
	struct refresher rf;
	CHECK_OK(pthread_create(&rf.th, NULL, do_refresh, &rf));
	pthread_mutex_lock(&meta_lock);
	while (meta_waiting == 0)
		pthread_cond_wait(&meta_cond, &meta_lock);
	pthread_mutex_unlock(&meta_lock);
	int64_t t0 = ms_now();
	for (int i = 0; i < 1000; i++) {
		struct weft_chain c;
		CHECK_OK(chaincache_chain(cc, 2, (uint32_t)i % 5, 0, &c));
		CHECK_INT(c.version, ==, 1); /* the old table */
		struct conn *cn;
		CHECK_INT(chaincache_conn(cc, 99, &cn), ==, -ENXIO);
	}
	CHECK(ms_now() - t0 < 1000);
	pthread_mutex_lock(&meta_lock);
	meta_hold = false;
	pthread_cond_broadcast(&meta_cond);
	pthread_mutex_unlock(&meta_lock);
	pthread_join(rf.th, NULL);
	CHECK_OK(rf.rc);
	struct weft_chain c;
	CHECK_OK(chaincache_chain(cc, 2, 0, 0, &c));
	CHECK_INT(c.version, ==, 2);
	printf("ok: lookups answer from the old table while a refresh waits for meta\n");
}

static void test_stale_and_announce(void)
{
	struct weft_chain c;
	int f0 = atomic_load(&fetches);
	/* the same epoch announced: nothing to do */
	CHECK(!chaincache_announce(cc, 3));
	CHECK_OK(chaincache_chain(cc, 2, 1, 0, &c));
	CHECK_INT(atomic_load(&fetches), ==, f0);
	/* a newer epoch announced: the next lookup refreshes first */
	serve(4, 5, 3);
	CHECK(chaincache_announce(cc, 4));
	CHECK(chaincache_stale(cc));
	CHECK_OK(chaincache_chain(cc, 2, 1, 0, &c));
	CHECK_INT(c.version, ==, 3);
	CHECK_INT(atomic_load(&fetches), ==, f0 + 1);
	CHECK(!chaincache_stale(cc));
	/* a store said stale */
	serve(5, 5, 4);
	chaincache_mark_stale(cc);
	CHECK_OK(chaincache_chain(cc, 2, 1, 0, &c));
	CHECK_INT(c.version, ==, 4);
	/* a request naming a newer version than ours (the store side) */
	serve(6, 5, 5);
	CHECK_OK(chaincache_chain(cc, 2, 2, 5, &c));
	CHECK_INT(c.version, ==, 5);
	/* a chain meta does not have either: one fetch, then ESTALECHAIN */
	int f1 = atomic_load(&fetches);
	CHECK_INT(chaincache_chain(cc, 2, 7, 0, &c), ==, -WEFT_ESTALECHAIN);
	CHECK_INT(chaincache_chain(cc, 3, 0, 0, &c), ==, -WEFT_ESTALECHAIN);
	CHECK_INT(atomic_load(&fetches), ==, f1 + 2);
	char addr[64];
	CHECK(chaincache_target_addr(cc, 5, addr, sizeof(addr)));
	CHECK_STR(addr, "127.0.0.1:6");
	CHECK(!chaincache_target_addr(cc, 6, addr, sizeof(addr)));
	printf("ok: announced epochs, stale marks and newer versions refresh; unknown chains fail\n");
}

/* meta away: the old table stays and serves; known chains do not wait on meta again
 * within the backoff; an unknown one still asks. */
static void test_fetch_failure(void)
{
	struct weft_chain c;
	meta_fail = -ECONNREFUSED;
	chaincache_mark_stale(cc);
	int f0 = atomic_load(&fetches);
	CHECK_OK(chaincache_chain(cc, 2, 1, 0, &c)); /* tried, failed, old table */
	CHECK_INT(c.version, ==, 5);
	CHECK_INT(atomic_load(&fetches), ==, f0 + 1);
	for (int i = 0; i < 100; i++)
		CHECK_OK(chaincache_chain(cc, 2, 1, 0, &c));
	CHECK_INT(atomic_load(&fetches), ==, f0 + 1);
	CHECK(chaincache_stale(cc));
	CHECK_INT(chaincache_chain(cc, 2, 9, 0, &c), ==, -WEFT_ESTALECHAIN);
	CHECK_INT(atomic_load(&fetches), ==, f0 + 2);
	uint64_t ok, bad;
	chaincache_counts(cc, &ok, &bad);
	CHECK_INT(bad, ==, 2);
	/* 16 threads meeting an unknown chain while meta is away (each fetch slow): the
	 * one failing fetch answers all those that waited for it */
	enum { N = 16 };
	struct racer rs[N];
	fetch_delay_ms = 100;
	int f1 = atomic_load(&fetches);
	pthread_barrier_init(&start_line, NULL, N);
	for (int i = 0; i < N; i++) {
		rs[i].chain = 9;
		CHECK_OK(pthread_create(&rs[i].th, NULL, race, &rs[i]));
	}
	for (int i = 0; i < N; i++) {
		pthread_join(rs[i].th, NULL);
		CHECK_INT(rs[i].rc, ==, -WEFT_ESTALECHAIN);
	}
	pthread_barrier_destroy(&start_line);
	fetch_delay_ms = 0;
	CHECK_INT(atomic_load(&fetches) - f1, <=, 2);
	meta_fail = 0;
	CHECK_OK(chaincache_refresh(cc, chaincache_gen(cc)));
	CHECK(!chaincache_stale(cc));
	printf("ok: a failed fetch keeps the old table and does not make every lookup wait, "
	       "nor %d threads queue one fetch each\n", N);
}

static void hold_meta(bool on)
{
	pthread_mutex_lock(&meta_lock);
	meta_hold = on;
	pthread_cond_broadcast(&meta_cond);
	pthread_mutex_unlock(&meta_lock);
}

struct wanter {
	pthread_t th;
	uint64_t min_ver;
	int rc;
	struct weft_chain got;
};

static void *want_version(void *arg)
{
	struct wanter *w = arg;
	w->rc = chaincache_chain(cc, 2, 1, w->min_ver, &w->got);
	return NULL;
}

/* A refresh another thread began before meta's change returns the old tables; a lookup
 * that waited for it and wants the new version fetches once more (a store would
 * otherwise answer ESTALECHAIN to a request meta's tables allow). */
static void test_joined_refresh_too_old(void)
{
	serve(7, 5, 6);
	hold_meta(true);
	struct refresher rf;
	CHECK_OK(pthread_create(&rf.th, NULL, do_refresh, &rf));
	pthread_mutex_lock(&meta_lock);
	while (meta_waiting == 0)
		pthread_cond_wait(&meta_cond, &meta_lock);
	pthread_mutex_unlock(&meta_lock);
	int f0 = atomic_load(&fetches);
	serve(8, 5, 7); /* meta's change, after that fetch was answered */
	struct wanter w = {.min_ver = 7};
	CHECK_OK(pthread_create(&w.th, NULL, want_version, &w));
	usleep(100 * 1000); /* w waits for the refresh in flight */
	hold_meta(false);
	pthread_join(rf.th, NULL);
	pthread_join(w.th, NULL);
	CHECK_OK(rf.rc);
	CHECK_OK(w.rc);
	CHECK_INT(w.got.version, ==, 7);
	CHECK_INT(atomic_load(&fetches) - f0, ==, 1); /* the one more, not one per waiter */
	printf("ok: a lookup that joined a refresh begun before meta's change fetches once more\n");
}

/* A connection to a target that is not listening fails with the connect's error. */
static void test_conn(void)
{
	struct conn *cn;
	int rc = chaincache_conn(cc, 1, &cn); /* 127.0.0.1:2: nothing listens there */
	CHECK(rc == -ECONNREFUSED || rc == -ETIMEDOUT);
	printf("ok: connecting to a target that is down reports it (%s)\n", weft_strerror(rc));
}

int main(void)
{
	struct loop *loop;
	CHECK_OK(loop_new(&loop));
	CHECK_OK(loop_start(loop));
	struct weft_key key = {0};
	struct chaincache_params p = {.loop = loop, .key = &key, .role = WEFT_ROLE_CLIENT,
				      .name = "test", .fetch = fetch, .who = "test"};
	CHECK_OK(chaincache_new(&p, &cc));
	struct weft_chain c;
	CHECK_OK(chaincache_chain(cc, 2, 3, 0, &c)); /* the first lookup fetches */
	CHECK_INT(c.members[0].target, ==, 4);
	CHECK_INT(chaincache_chain(cc, 2, 4, 0, &c), ==, -WEFT_ESTALECHAIN);
	test_single_flight();
	test_readers_do_not_wait();
	test_stale_and_announce();
	test_fetch_failure();
	test_joined_refresh_too_old();
	test_conn();
	chaincache_free(cc);
	loop_free(loop);
	return 0;
}
