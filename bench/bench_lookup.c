/* What the lost-object check costs a store read: times store_index_get (the lookup
 * every read now does) against a whole 4 KiB store_obj_read (lookup included), on
 * NOBJ objects whose index records were flushed (the lookup then opens an LMDB read
 * transaction: the dearer case; an object written since the last flush is found in
 * memory).
 *
 * usage: bench_lookup [DIR [NOBJ [READS]]]   (default /var/tmp, 1000, 200000) */
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/log.h"
#include "store/object.h"
#include "store/target.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

int main(int argc, char **argv)
{
	const char *base = argc > 1 ? argv[1] : "/var/tmp";
	unsigned nobj = argc > 2 ? (unsigned)atoi(argv[2]) : 1000;
	unsigned reads = argc > 3 ? (unsigned)atoi(argv[3]) : 200000;
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/weft-bench-lookup-XXXXXX", base);
	if (!mkdtemp(dir))
		return 1;
	log_init("bench_lookup", LOG_WARN);
	struct store_target *t;
	struct store_objs *s;
	struct store_obj_opts oo = {.no_sync_thread = true};
	if (store_target_open(dir, NULL, &t) || store_obj_open(t, &oo, &s))
		return 1;
	uint8_t buf[4096];
	memset(buf, 7, sizeof(buf));
	uint32_t crc = crc32c(0, buf, sizeof(buf)), crcs[2];
	for (unsigned i = 0; i < nobj; i++)
		if (store_obj_write(s, 1000 + i, 0, 0, buf, sizeof(buf), &crc, 1, NULL))
			return 1;
	store_index_sync(store_obj_index(s)); /* records flushed: lookups go to LMDB */
	struct store_index_rec rec;
	double t0 = now();
	for (unsigned i = 0; i < reads; i++)
		store_index_get(store_obj_index(s), 1000 + i % nobj, 0, &rec);
	double t1 = now();
	size_t n;
	for (unsigned i = 0; i < reads; i++)
		if (store_obj_read(s, 1000 + i % nobj, 0, 0, buf, sizeof(buf), crcs, 2, &n, NULL))
			return 1;
	double t2 = now();
	printf("index lookup (flushed record): %.0f ns; 4 KiB store read, lookup included: %.0f ns"
	       " (%.1f%%)\n", (t1 - t0) / reads * 1e9, (t2 - t1) / reads * 1e9,
	       100.0 * (t1 - t0) / (t2 - t1));
	store_obj_close(s);
	store_target_close(t);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
