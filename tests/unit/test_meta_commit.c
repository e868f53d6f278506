/* Unit tests of group commit: concurrent creators share syncs, a failing mutation rolls
 * back alone (failing before it writes: in the batch txn; after a write, or with LMDB's
 * map full: by a redo of the batch with a nested txn per op), completions follow
 * durability and submission order, and everything survives a reopen. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "meta/commit.h"
#include "meta/ns.h"
#include "test_meta_util.h"

#define NTHREADS 8
#define PER_THREAD 100

static struct meta_db *db;
static struct meta_commit *gc;
static struct weft_cred root;

struct create_arg {
	char name[32];
	int fail_after; /* create, then fail with this errno (0 = succeed) */
};

static int create_apply(MDB_txn *txn, void *arg)
{
	struct create_arg *a = arg;
	struct meta_ctx c = { .db = db, .txn = txn, .cred = &root };
	int rc = meta_ns_create(&c, ROOT, S(a->name), 0644, META_CREATE_EXCL, NULL, NULL, NULL);
	if (rc == 0 && a->fail_after)
		return -a->fail_after;
	return rc;
}

static void *creator(void *arg)
{
	int t = (int)(intptr_t)arg;
	for (int i = 0; i < PER_THREAD; i++) {
		struct create_arg a = { .fail_after = 0 };
		snprintf(a.name, sizeof(a.name), "t%d_%d", t, i);
		CHECK_OK(meta_commit_run(gc, create_apply, &a));
	}
	return NULL;
}

static int lookup(const char *name)
{
	MDB_txn *txn;
	struct weft_attr a;
	CHECK_OK(meta_db_read_begin(db, &txn));
	struct meta_ctx c = { .db = db, .txn = txn, .cred = &root };
	int rc = meta_ns_lookup(&c, ROOT, S(name), &a);
	meta_db_read_end(db, txn);
	return rc;
}

static void test_concurrent_creates(void)
{
	pthread_t th[NTHREADS];
	struct meta_commit_stats st;
	for (int t = 0; t < NTHREADS; t++)
		CHECK_OK(pthread_create(&th[t], NULL, creator, (void *)(intptr_t)t));
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	meta_commit_stats(gc, &st);
	printf("  %d threads x %d creates: %llu ops, %llu batches, %llu syncs\n", NTHREADS,
	       PER_THREAD, (unsigned long long)st.ops, (unsigned long long)st.batches,
	       (unsigned long long)st.syncs);
	CHECK_INT(st.ops, ==, NTHREADS * PER_THREAD);
	CHECK_INT(st.failed, ==, 0);
	CHECK_INT(st.syncs, ==, st.batches);
	CHECK_INT(st.syncs, <, st.ops);
	CHECK_OK(lookup("t0_0"));
	CHECK_OK(lookup("t7_99"));
}

/* Holds the writer inside one batch until released, so the next submissions queue up
 * and are applied together in one batch. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_state; /* 0 closed, 1 writer inside, 2 open */
static int ndone;
static int results[8];

static int gate_apply(MDB_txn *txn, void *arg)
{
	pthread_mutex_lock(&gate_lock);
	if (gate_state != 2) { /* once open, a redo of its batch passes straight through */
		gate_state = 1;
		pthread_cond_broadcast(&gate_cond);
		while (gate_state != 2)
			pthread_cond_wait(&gate_cond, &gate_lock);
	}
	pthread_mutex_unlock(&gate_lock);
	return 0;
}

static void note_done(void *arg, int result)
{
	pthread_mutex_lock(&gate_lock);
	results[(intptr_t)arg] = result;
	ndone++;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static struct create_arg cargs[8];

static int indexed_apply(MDB_txn *txn, void *arg)
{
	return create_apply(txn, &cargs[(intptr_t)arg]);
}

static void test_batch_isolation(void)
{
	struct meta_mutation gate = { .apply = gate_apply, .done = note_done, .arg = (void *)0 };
	struct meta_mutation m[4];
	struct meta_commit_stats before, after;
	meta_commit_stats(gc, &before);
	CHECK_OK(meta_commit_submit(gc, &gate));
	pthread_mutex_lock(&gate_lock);
	while (gate_state != 1)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	/* writer is busy: these four queue into the next batch */
	const char *names[4] = { "b_ok1", "b_bad", "b_ok2", "b_ok1" };
	for (int i = 0; i < 4; i++) {
		snprintf(cargs[i + 1].name, sizeof(cargs[i + 1].name), "%s", names[i]);
		cargs[i + 1].fail_after = i == 1 ? EIO : 0;
		m[i] = (struct meta_mutation){ .apply = indexed_apply, .done = note_done,
					       .arg = (void *)(intptr_t)(i + 1) };
		CHECK_OK(meta_commit_submit(gc, &m[i]));
	}
	pthread_mutex_lock(&gate_lock);
	gate_state = 2;
	pthread_cond_broadcast(&gate_cond);
	while (ndone < 5)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	CHECK_INT(results[0], ==, 0);
	CHECK_INT(results[1], ==, 0);
	CHECK_INT(results[2], ==, -EIO);
	CHECK_INT(results[3], ==, 0);
	CHECK_INT(results[4], ==, -EEXIST); /* saw b_ok1 of the same batch */
	CHECK_OK(lookup("b_ok1"));
	CHECK_OK(lookup("b_ok2"));
	CHECK_INT(lookup("b_bad"), ==, -ENOENT); /* created, then rolled back alone */
	meta_commit_stats(gc, &after);
	CHECK_INT(after.ops - before.ops, ==, 5);
	/* the four together, with or without the gate (the writer goes on filling a batch
	 * while the one before it syncs) */
	CHECK_INT(after.syncs - before.syncs, <=, 2);
	CHECK_INT(after.failed - before.failed, ==, 2);
	CHECK_INT(after.redone - before.redone, ==, 1); /* b_bad failed after writing */
}

/* Runs the mutations m[0..n) as one batch (behind a gate op) and waits for them. */
static void run_gated_batch(struct meta_mutation *m, int n)
{
	struct meta_mutation gate = { .apply = gate_apply, .done = note_done, .arg = (void *)0 };
	pthread_mutex_lock(&gate_lock);
	gate_state = 0;
	ndone = 0;
	pthread_mutex_unlock(&gate_lock);
	CHECK_OK(meta_commit_submit(gc, &gate));
	pthread_mutex_lock(&gate_lock);
	while (gate_state != 1)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	for (int i = 0; i < n; i++)
		CHECK_OK(meta_commit_submit(gc, &m[i]));
	pthread_mutex_lock(&gate_lock);
	gate_state = 2;
	pthread_cond_broadcast(&gate_cond);
	while (ndone < n + 1)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	CHECK_INT(results[0], ==, 0);
}

/* Ops failing before any write (EEXIST, EINVAL, EACCES...) leave the batch txn alone:
 * no redo, the others commit. */
static void test_clean_failures(void)
{
	struct meta_mutation m[4];
	struct meta_commit_stats before, after;
	const char *names[4] = { "c_ok1", "b_ok1", "c_ok2", "c_ok1" }; /* b_ok1 exists */
	for (int i = 0; i < 4; i++) {
		snprintf(cargs[i + 1].name, sizeof(cargs[i + 1].name), "%s", names[i]);
		cargs[i + 1].fail_after = 0;
		m[i] = (struct meta_mutation){ .apply = indexed_apply, .done = note_done,
					       .arg = (void *)(intptr_t)(i + 1) };
	}
	snprintf(cargs[3].name, sizeof(cargs[3].name), "bad/name");
	meta_commit_stats(gc, &before);
	run_gated_batch(m, 4);
	meta_commit_stats(gc, &after);
	CHECK_INT(results[1], ==, 0);
	CHECK_INT(results[2], ==, -EEXIST);
	CHECK_INT(results[3], ==, -EINVAL);
	CHECK_INT(results[4], ==, -EEXIST); /* c_ok1 of the same batch */
	CHECK_OK(lookup("c_ok1"));
	CHECK_INT(after.failed - before.failed, ==, 3);
	CHECK_INT(after.redone - before.redone, ==, 0);
}

/* An op that writes, then hits LMDB's MDB_MAP_FULL (which leaves a txn unusable): the
 * batch is redone op by op, the others commit, nothing of that op remains. */
static int mapfull_apply(MDB_txn *txn, void *arg)
{
	(void)arg;
	uint8_t kb[16] = "mapfull-small";
	MDB_val k = { sizeof(kb), kb }, v = { 5, "small" };
	int rc = meta_mdb_err(meta_mdb_put(txn, db->xattrs, &k, &v, 0));
	if (rc)
		return rc;
	/* more than the whole map: fails allocating pages, before reading the value */
	size_t big = 1u << 30; /* the test map is 64 MiB */
	void *p = malloc(big); /* never touched: the kernel gives untouched pages lazily */
	CHECK(p != NULL);
	memcpy(kb, "mapfull-big\0\0\0\0\0", 16);
	v = (MDB_val){ big, p };
	rc = meta_mdb_err(meta_mdb_put(txn, db->xattrs, &k, &v, 0));
	free(p);
	return rc;
}

static bool mapfull_key_present(const char *key)
{
	MDB_txn *txn;
	uint8_t kb[16] = { 0 };
	memcpy(kb, key, strlen(key));
	MDB_val k = { sizeof(kb), kb }, v;
	CHECK_OK(meta_db_read_begin(db, &txn));
	int rc = mdb_get(txn, db->xattrs, &k, &v);
	meta_db_read_end(db, txn);
	return rc == 0;
}

static void test_map_full_mid_op(void)
{
	struct meta_mutation m[3];
	struct meta_commit_stats before, after;
	snprintf(cargs[1].name, sizeof(cargs[1].name), "mf_before");
	snprintf(cargs[3].name, sizeof(cargs[3].name), "mf_after");
	cargs[1].fail_after = cargs[3].fail_after = 0;
	for (int i = 0; i < 3; i++)
		m[i] = (struct meta_mutation){ .apply = i == 1 ? mapfull_apply : indexed_apply,
					       .done = note_done, .arg = (void *)(intptr_t)(i + 1) };
	meta_commit_stats(gc, &before);
	run_gated_batch(m, 3);
	meta_commit_stats(gc, &after);
	CHECK_INT(results[1], ==, 0);
	CHECK_INT(results[2], ==, -ENOSPC);
	CHECK_INT(results[3], ==, 0);
	CHECK_INT(after.failed - before.failed, ==, 1);
	CHECK_INT(after.redone - before.redone, ==, 1);
	CHECK_OK(lookup("mf_before"));
	CHECK_OK(lookup("mf_after"));
	CHECK(!mapfull_key_present("mapfull-small"));
	CHECK(!mapfull_key_present("mapfull-big"));
}

/* Many queued without waiting: far fewer syncs than mutations. */
static int async_left;
static void async_done(void *arg, int result)
{
	CHECK_OK(result);
	pthread_mutex_lock(&gate_lock);
	async_left--;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static void test_async_burst(void)
{
	enum { N = 1000 };
	static struct create_arg a[N];
	static struct meta_mutation m[N];
	struct meta_commit_stats before, after;
	meta_commit_stats(gc, &before);
	async_left = N;
	for (int i = 0; i < N; i++) {
		snprintf(a[i].name, sizeof(a[i].name), "burst%d", i);
		m[i] = (struct meta_mutation){ .apply = create_apply, .done = async_done, .arg = &a[i] };
		CHECK_OK(meta_commit_submit(gc, &m[i]));
	}
	pthread_mutex_lock(&gate_lock);
	while (async_left > 0)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	meta_commit_stats(gc, &after);
	printf("  burst of %d: %llu syncs\n", N, (unsigned long long)(after.syncs - before.syncs));
	CHECK_INT(after.syncs - before.syncs, <=, N / 10);
}

static int nothing_apply(MDB_txn *txn, void *arg)
{
	(void)txn;
	(void)arg;
	return 0;
}

/* Lazy mutations alone commit without a sync; mixed with a durable one they wait for it. */
static void test_lazy(void)
{
	static struct create_arg a[2];
	static struct meta_mutation m[2];
	struct meta_commit_stats before, after;
	/* the burst's last batch is synced within the sync delay: let that happen first */
	for (int i = 0; i < 100 && meta_commit_synced(gc) < meta_commit_committed(gc); i++)
		usleep(10000);
	meta_commit_stats(gc, &before);
	async_left = 1;
	snprintf(a[0].name, sizeof(a[0].name), "lazy0");
	m[0] = (struct meta_mutation){.apply = create_apply, .done = async_done, .arg = &a[0],
				      .lazy = true};
	CHECK_OK(meta_commit_submit(gc, &m[0]));
	pthread_mutex_lock(&gate_lock);
	while (async_left > 0)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	meta_commit_stats(gc, &after);
	CHECK_INT(after.ops - before.ops, ==, 1);
	CHECK_INT(after.syncs - before.syncs, ==, 0);
	/* a durable one syncs (and with it the lazy change before it) */
	meta_commit_stats(gc, &before);
	async_left = 1;
	snprintf(a[1].name, sizeof(a[1].name), "lazy1");
	m[1] = (struct meta_mutation){.apply = create_apply, .done = async_done, .arg = &a[1],
				      .durable = true};
	CHECK_OK(meta_commit_submit(gc, &m[1]));
	pthread_mutex_lock(&gate_lock);
	while (async_left > 0)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	meta_commit_stats(gc, &after);
	CHECK_INT(after.syncs - before.syncs, ==, 1);
	/* a lazy one alone is synced once the writer was idle for idle_sync_ms, even with
	 * batches that write nothing coming more often than that (meta's expiry tick) */
	static struct create_arg late = {.name = "lazy2"};
	static struct meta_mutation lm;
	meta_commit_set_idle_sync(gc, 200);
	async_left = 1;
	lm = (struct meta_mutation){.apply = create_apply, .done = async_done, .arg = &late,
				    .lazy = true};
	CHECK_OK(meta_commit_submit(gc, &lm));
	pthread_mutex_lock(&gate_lock);
	while (async_left > 0)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	CHECK_INT(meta_commit_synced(gc), <, lm.transno);
	for (int i = 0; i < 40 && meta_commit_synced(gc) < lm.transno; i++) {
		struct meta_mutation tick = {.apply = nothing_apply, .done = async_done,
					     .lazy = true};
		async_left = 1;
		CHECK_OK(meta_commit_submit(gc, &tick));
		pthread_mutex_lock(&gate_lock);
		while (async_left > 0)
			pthread_cond_wait(&gate_cond, &gate_lock);
		pthread_mutex_unlock(&gate_lock);
		usleep(50000);
	}
	CHECK_INT(meta_commit_synced(gc), ==, lm.transno);
	meta_commit_set_idle_sync(gc, META_COMMIT_IDLE_SYNC_MS);
}

/* Transaction numbers: each applied op gets the next one, a failed op none; a reply
 * comes once committed (before its sync), and the sync follows within the delay. */
static uint64_t seen_synced[3];
static struct create_arg tn_args[3];

static void transno_done(void *arg, int result)
{
	ptrdiff_t i = (struct create_arg *)arg - tn_args;
	(void)result;
	pthread_mutex_lock(&gate_lock);
	seen_synced[i] = meta_commit_synced(gc);
	async_left--;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static void test_transno(void)
{
	struct create_arg *a = tn_args;
	static struct meta_mutation m[3];
	uint64_t before = meta_commit_committed(gc);
	meta_commit_set_sync_delay(gc, 200);
	for (int i = 0; i < 3; i++) {
		async_left = 1;
		snprintf(a[i].name, sizeof(a[i].name), i == 1 ? "b_ok2" : "tn%d", i); /* 1: EEXIST */
		m[i] = (struct meta_mutation){.apply = create_apply, .done = transno_done,
					      .arg = &a[i]};
		CHECK_OK(meta_commit_submit(gc, &m[i]));
		pthread_mutex_lock(&gate_lock);
		while (async_left > 0)
			pthread_cond_wait(&gate_cond, &gate_lock);
		pthread_mutex_unlock(&gate_lock);
	}
	CHECK_INT(m[0].transno, ==, before + 1);
	CHECK_INT(m[1].transno, ==, 0); /* failed */
	CHECK_INT(m[2].transno, ==, before + 2);
	/* answered before its sync: the first was synced by the third's commit at most */
	CHECK_INT(seen_synced[0], <, m[0].transno);
	CHECK_INT(seen_synced[2], <, m[2].transno);
	CHECK_INT(meta_commit_synced(gc), >=, m[0].transno);
	for (int i = 0; i < 100 && meta_commit_synced(gc) < m[2].transno; i++)
		usleep(10000);
	CHECK_INT(meta_commit_synced(gc), ==, m[2].transno);
	meta_commit_set_sync_delay(gc, META_COMMIT_SYNC_DELAY_MS);
}

int main(void)
{
	char dir[256];
	root = tmeta_cred(0, 0);
	db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, 2, 2);
	CHECK_OK(meta_commit_start(db, 0, &gc));
	test_concurrent_creates();
	test_batch_isolation();
	test_clean_failures();
	test_map_full_mid_op();
	test_async_burst();
	test_lazy();
	test_transno();
	uint64_t last = meta_commit_committed(gc);
	meta_commit_stop(gc);
	/* durable: reopen and find everything */
	meta_db_close(db);
	CHECK_OK(meta_db_open(dir, 64ULL << 20, &db));
	CHECK_OK(lookup("t3_50"));
	CHECK_OK(lookup("b_ok2"));
	CHECK_OK(lookup("lazy0")); /* made durable by the sync of the next batch */
	CHECK_OK(lookup("lazy0")); /* made durable by the sync of the next batch */
	CHECK_OK(lookup("burst999"));
	CHECK_INT(lookup("b_bad"), ==, -ENOENT);
	/* the numbers go on from where they were */
	CHECK_OK(meta_commit_start(db, 0, &gc));
	CHECK_INT(meta_commit_committed(gc), ==, last);
	CHECK_INT(meta_commit_synced(gc), ==, last);
	meta_commit_stop(gc);
	tmeta_close(db, dir);
	printf("meta_commit: ok\n");
	return 0;
}
