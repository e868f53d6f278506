/* Helpers shared by the store unit tests: temporary directories, open/close of a
 * target with its objects, piece CRCs. Header-only; each test includes it once. */
#ifndef WEFT_TEST_STORE_UTIL_H
#define WEFT_TEST_STORE_UTIL_H

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "store/object.h"
#include "store/target.h"
#include "weft/err.h"

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

static inline void rm_rf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static inline char *tmp_dir(const char *tag)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char *p = malloc(512);
	CHECK(p != NULL);
	snprintf(p, 512, "%s/weft-%s-XXXXXX", base, tag);
	CHECK(mkdtemp(p) != NULL);
	return p;
}

struct tstore {
	char *dir;
	struct store_target *t;
	struct store_objs *s;
};

static inline void ts_open_opts(struct tstore *ts, bool nocrc, size_t fdcache)
{
	struct store_target_opts to = {.no_checksums = nocrc};
	CHECK_OK(store_target_open(ts->dir, &to, &ts->t));
	struct store_obj_opts oo = {.fd_cache = fdcache, .no_sync_thread = true,
				    .index_map_size = 64u << 20};
	CHECK_OK(store_obj_open(ts->t, &oo, &ts->s));
}

static inline void ts_open(struct tstore *ts) { ts_open_opts(ts, false, 0); }

static inline void ts_close(struct tstore *ts)
{
	store_obj_close(ts->s);
	store_target_close(ts->t);
	ts->s = NULL;
	ts->t = NULL;
}

/* Writes buf with correct piece CRCs; returns the store's result code. */
static inline int ts_write(struct tstore *ts, uint64_t ino, uint32_t stripe, uint64_t off,
			   const void *buf, size_t len)
{
	uint64_t np = store_crc_npieces(off, len);
	uint32_t *crcs = calloc(np + 1, 4);
	struct iovec v = {(void *)buf, len};
	store_obj_piece_crcs(off, &v, 1, crcs);
	int rc = store_obj_write(ts->s, ino, stripe, off, buf, len, crcs, np, NULL);
	free(crcs);
	return rc;
}

/* Reads into buf, checks the returned piece CRCs against the data; returns the result
 * code and the count in *n. */
static inline int ts_read(struct tstore *ts, uint64_t ino, uint32_t stripe, uint64_t off,
			  void *buf, size_t len, size_t *n, struct store_obj_result *r)
{
	uint64_t np = store_crc_npieces(off, len);
	uint32_t *crcs = calloc(np + 1, 4), *want = calloc(np + 1, 4);
	int rc = store_obj_read(ts->s, ino, stripe, off, buf, len, crcs, np, n, r);
	if (rc == 0 && *n > 0) {
		struct iovec v = {buf, *n};
		store_obj_piece_crcs(off, &v, 1, want);
		uint64_t got = store_crc_npieces(off, *n);
		for (uint64_t i = 0; i < got; i++)
			CHECK_INT(crcs[i], ==, want[i]);
	}
	free(crcs);
	free(want);
	return rc;
}

#endif
