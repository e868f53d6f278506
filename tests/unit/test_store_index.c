/* Unit tests of the per-target LMDB index: begin/end protocol, group commit across
 * threads, lazy flush, persistence, torn scan, list order, settle. */
#include "store_testutil.h"

#include <pthread.h>

#include "store/index.h"

static void test_protocol_and_torn(void)
{
	char *dir = tmp_dir("idx");
	struct store_index *idx;
	struct store_index_opts o = {.map_size = 16u << 20};
	CHECK_OK(store_index_open(dir, &o, &idx));
	size_t n;
	store_index_torn(idx, &n);
	CHECK_INT(n, ==, 0);
	struct store_index_rec r;
	CHECK_INT(store_index_get(idx, 1, 0, &r), ==, -ENOENT);

	uint64_t v;
	CHECK_OK(store_index_begin(idx, 1, 0, &v));
	CHECK_INT(v, ==, 1);
	CHECK_OK(store_index_get(idx, 1, 0, &r));
	CHECK_INT(r.pending, ==, 1);
	CHECK_INT(r.committed, ==, 0);
	store_index_end(idx, 1, 0, v, 4096, 0, true, false);
	CHECK_OK(store_index_get(idx, 1, 0, &r));
	CHECK_INT(r.committed, ==, 1);
	CHECK_INT(r.length, ==, 4096);

	/* second mutation while the record is still in flux on disk: no txn */
	struct store_index_stats st0, st1;
	store_index_get_stats(idx, &st0);
	CHECK_OK(store_index_begin(idx, 1, 0, &v));
	CHECK_INT(v, ==, 2);
	store_index_end(idx, 1, 0, v, 8192, 0, true, false);
	store_index_get_stats(idx, &st1);
	CHECK_INT(st1.begin_txns, ==, st0.begin_txns);

	/* flush writes it clean; the next begin needs a txn again */
	CHECK_OK(store_index_flush(idx));
	CHECK_OK(store_index_begin(idx, 1, 0, &v));
	CHECK_INT(v, ==, 3);
	store_index_get_stats(idx, &st0);
	CHECK_INT(st0.begin_txns, ==, st1.begin_txns + 1);
	store_index_end(idx, 1, 0, v, 100, 1234567890123, true, false);

	/* failed mutation keeps the record in flux; an unfinished one too */
	CHECK_OK(store_index_begin(idx, 2, 5, &v));
	store_index_end(idx, 2, 5, v, 0, 0, false, false);
	CHECK_OK(store_index_begin(idx, 3, 1, &v));
	/* removal */
	CHECK_OK(store_index_begin(idx, 4, 0, &v));
	store_index_end(idx, 4, 0, v, 10, 0, true, false);
	CHECK_OK(store_index_sync(idx));
	CHECK_OK(store_index_begin(idx, 4, 0, &v));
	store_index_end(idx, 4, 0, v, 0, 0, true, true);
	CHECK_INT(store_index_get(idx, 4, 0, &r), ==, -ENOENT);
	store_index_close(idx);

	CHECK_OK(store_index_open(dir, &o, &idx));
	const struct store_torn *t = store_index_torn(idx, &n);
	CHECK_INT(n, ==, 2);
	CHECK_INT(t[0].rec.ino, ==, 2);
	CHECK_INT(t[0].rec.stripe, ==, 5);
	CHECK_INT(t[1].rec.ino, ==, 3);
	CHECK_OK(store_index_get(idx, 1, 0, &r));
	CHECK_INT(r.committed, ==, 3);
	CHECK_INT(r.pending, ==, 3);
	CHECK_INT(r.length, ==, 100);
	CHECK_INT(r.stamp, ==, 1234567890123); /* the files' stamp survives a reopen */
	CHECK_INT(store_index_get(idx, 4, 0, &r), ==, -ENOENT);
	CHECK_OK(store_index_settle(idx, 2, 5, 77, 42, false));
	CHECK_OK(store_index_settle(idx, 3, 1, 0, 0, true));
	struct store_index_rec recs[8];
	CHECK_OK(store_index_list(idx, 0, 0, recs, 8, &n));
	CHECK_INT(n, ==, 2);
	CHECK_INT(recs[1].ino, ==, 2);
	CHECK_INT(recs[1].length, ==, 77);
	CHECK_INT(recs[1].stamp, ==, 42);
	CHECK_INT(recs[1].committed, ==, recs[1].pending);
	store_index_close(idx);
	CHECK_OK(store_index_open(dir, &o, &idx));
	store_index_torn(idx, &n);
	CHECK_INT(n, ==, 0);
	store_index_close(idx);
	rm_rf(dir);
	free(dir);
}

/* Ordering: keys are big-endian so list order is numeric, not byte order of LE. */
static void test_list_order(void)
{
	char *dir = tmp_dir("idxord");
	struct store_index *idx;
	CHECK_OK(store_index_open(dir, NULL, &idx));
	uint64_t inos[] = {256, 1, 0xffffffffffULL, 255, 2};
	uint64_t v;
	for (int i = 0; i < 5; i++)
		for (uint32_t s = 0; s < 3; s++) {
			CHECK_OK(store_index_begin(idx, inos[i], 300 - s * 100, &v));
			store_index_end(idx, inos[i], 300 - s * 100, v, 1, 0, true, false);
		}
	struct store_index_rec recs[20];
	size_t n;
	CHECK_OK(store_index_list(idx, 0, 0, recs, 20, &n));
	CHECK_INT(n, ==, 15);
	for (size_t i = 1; i < n; i++)
		CHECK(recs[i - 1].ino < recs[i].ino ||
		      (recs[i - 1].ino == recs[i].ino && recs[i - 1].stripe < recs[i].stripe));
	store_index_close(idx);
	rm_rf(dir);
	free(dir);
}

/* Group commit: many threads beginning mutations of distinct objects at once share
 * transactions. With a background flusher running, nothing is lost. */
#define NT 8
#define PER 300
static struct store_index *gidx;
static void *gc_worker(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg * 100000;
	for (uint64_t i = 0; i < PER; i++) {
		uint64_t v;
		CHECK_OK(store_index_begin(gidx, base + i, 0, &v));
		store_index_end(gidx, base + i, 0, v, i, 0, true, false);
	}
	return NULL;
}

static void test_group_commit(void)
{
	char *dir = tmp_dir("idxgc");
	struct store_index_opts o = {.sync_interval_ms = 20};
	CHECK_OK(store_index_open(dir, &o, &gidx));
	pthread_t th[NT];
	for (uintptr_t i = 0; i < NT; i++)
		CHECK_OK(pthread_create(&th[i], NULL, gc_worker, (void *)i));
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	struct store_index_stats st;
	store_index_get_stats(gidx, &st);
	fprintf(stderr, "group commit: %llu begins in %llu txns, %llu flush txns, %llu syncs\n",
		(unsigned long long)st.begins, (unsigned long long)st.begin_txns,
		(unsigned long long)st.flush_txns, (unsigned long long)st.syncs);
	CHECK_INT(st.begins, ==, NT * PER);
	CHECK(st.begin_txns <= NT * PER);
	store_index_close(gidx);
	CHECK_OK(store_index_open(dir, &o, &gidx));
	size_t n;
	store_index_torn(gidx, &n);
	CHECK_INT(n, ==, 0);
	struct store_index_rec *recs = malloc(NT * PER * sizeof(*recs));
	CHECK_OK(store_index_list(gidx, 0, 0, recs, NT * PER, &n));
	CHECK_INT(n, ==, NT * PER);
	store_index_close(gidx);
	free(recs);
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	test_protocol_and_torn();
	test_list_order();
	test_group_commit();
	printf("store_index: ok\n");
	return 0;
}
