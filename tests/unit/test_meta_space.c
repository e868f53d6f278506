/* Unit tests of meta's space management (space.c) with the group commit: a database
 * opened with a 1 MiB map grows it online, both when the pages in use pass half of it
 * (checked before each batch) and when an op meets MDB_MAP_FULL mid-batch (the batch is
 * redone after the growth, and the op succeeds), while reader threads keep reading
 * values through read txns (they hold the map lock, so the remap never pulls the map
 * from under them). The reserve file is taken at open. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "meta/commit.h"
#include "meta/space.h"
#include "test_meta_util.h"

static struct meta_db *db;
static struct meta_commit *gc;
static struct meta_space *sp;

struct put_arg {
	char key[16];
	size_t len;
	uint8_t fill;
};

static int put_apply(MDB_txn *txn, void *arg)
{
	struct put_arg *a = arg;
	uint8_t kb[16] = {0};
	memcpy(kb, a->key, strlen(a->key));
	MDB_val k = {sizeof(kb), kb}, v = {a->len, NULL};
	int rc = meta_mdb_err(meta_mdb_put(txn, db->xattrs, &k, &v, MDB_RESERVE));
	if (rc == 0)
		memset(v.mv_data, a->fill, a->len);
	return rc;
}

/* 0 if key holds len bytes of fill, -ENOENT if absent, -EIO if different */
static int check_value(const char *key, size_t len, uint8_t fill)
{
	MDB_txn *txn;
	uint8_t kb[16] = {0};
	memcpy(kb, key, strlen(key));
	MDB_val k = {sizeof(kb), kb}, v;
	CHECK_OK(meta_db_read_begin(db, &txn));
	int rc = mdb_get(txn, db->xattrs, &k, &v);
	if (rc == 0) {
		const uint8_t *p = v.mv_data;
		rc = v.mv_size == len ? 0 : -EIO;
		for (size_t i = 0; rc == 0 && i < len; i += 4096)
			if (p[i] != fill)
				rc = -EIO;
	} else {
		rc = -ENOENT;
	}
	meta_db_read_end(db, txn);
	return rc;
}

static atomic_bool stop_readers;
static atomic_long reads;

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_readers)) {
		CHECK_OK(check_value("first", 200 << 10, 0x11));
		atomic_fetch_add(&reads, 1);
	}
	return NULL;
}

static uint64_t map_bytes(void)
{
	MDB_envinfo ei;
	mdb_env_info(db->env, &ei);
	return ei.me_mapsize;
}

int main(void)
{
	char dir[256], path[300];
	char err[256];
	struct stat st;
	db = tmeta_open(dir, sizeof(dir), 1);
	meta_db_close(db);
	CHECK_OK(meta_db_open(dir, 1 << 20, &db));
	uint64_t map0 = map_bytes();
	CHECK(map0 <= (1 << 20) + (64 << 10));
	struct meta_space_opts so = {.reserve = 1 << 20};
	CHECK_OK(meta_space_open(db, dir, &so, &sp, err, sizeof(err)));
	snprintf(path, sizeof(path), "%s/space.reserve", dir);
	CHECK_OK(stat(path, &st));
	CHECK((uint64_t)st.st_blocks * 512 >= 1 << 20); /* allocated, not sparse */
	CHECK_OK(meta_commit_start(db, 0, &gc));
	meta_commit_set_space(gc, sp);

	struct put_arg first = {"first", 200 << 10, 0x11};
	CHECK_OK(meta_commit_run(gc, put_apply, &first));
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		CHECK_OK(pthread_create(&th[i], NULL, reader, NULL));

	/* one op bigger than the whole map: MDB_MAP_FULL mid-batch, grown, redone, ok */
	struct put_arg big = {"big", 3 << 19, 0x22}; /* 1.5 MiB */
	CHECK_OK(meta_commit_run(gc, put_apply, &big));
	CHECK(map_bytes() > map0);
	/* many smaller ops: growth before batches, as the pages in use pass half */
	for (int i = 0; i < 24; i++) {
		struct put_arg a = {"", 256 << 10, (uint8_t)i};
		snprintf(a.key, sizeof(a.key), "k%d", i);
		CHECK_OK(meta_commit_run(gc, put_apply, &a));
	}
	uint64_t map1 = map_bytes();
	CHECK(map1 >= 8 << 20);
	atomic_store(&stop_readers, true);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	CHECK(atomic_load(&reads) > 0);
	CHECK_OK(check_value("big", 3 << 19, 0x22));
	for (int i = 0; i < 24; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d", i);
		CHECK_OK(check_value(k, 256 << 10, (uint8_t)i));
	}
	struct meta_space_info info;
	meta_space_get(sp, &info);
	CHECK(!info.low);
	CHECK(!meta_space_low(sp));
	CHECK_INT(info.reserve_bytes, ==, 1 << 20);
	CHECK(info.map_bytes >= 8 << 20);

	meta_commit_stop(gc);
	meta_space_close(sp);
	/* durable; reopened with the 1 MiB map asked for, it gets room over the data */
	meta_db_close(db);
	CHECK_OK(meta_db_open(dir, 1 << 20, &db));
	CHECK(map_bytes() >= 14 << 20);
	CHECK_OK(check_value("big", 3 << 19, 0x22));
	unlink(path);
	tmeta_close(db, dir);
	printf("meta_space: ok (map %llu -> %llu KiB, %ld reads during growth)\n",
	       (unsigned long long)(map0 >> 10), (unsigned long long)(map1 >> 10),
	       (long)atomic_load(&reads));
	return 0;
}
