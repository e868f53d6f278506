/* Benchmark of the object store's data path against plain pwrite/pread on the same
 * disk: writes TOTAL bytes in REQ-byte requests to one object, checksums on and off,
 * then reads them back (page cache and cold, after fdatasync + POSIX_FADV_DONTNEED).
 *
 * usage: bench_store_obj [DIR [TOTAL_MIB [REPEATS]]]   (default /var/tmp, 1024, 3)
 * Runs the methods interleaved REPEATS times and prints, per (method, request size),
 * the median MB/s of buffered write, write+fsync, cached read and cold read. The client's CRCs are computed once up front (the
 * buffer and its offsets within a chunk repeat), so "crc on" measures the store's own
 * cost: verify on receipt, sidecar writes, verify on read, CRCs of the reply. */
#include <errno.h>
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

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_store_obj: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static void drop_cache(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

struct result {
	double write, write_sync, read_cached, read_cold; /* MB/s */
};

static double mbs(uint64_t bytes, double secs) { return (double)bytes / 1e6 / secs; }

static struct result bench_plain(const char *dir, uint64_t total, size_t req, uint8_t *buf)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/plain.dat", dir);
	struct result r;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open", errno);
	double t0 = now();
	for (uint64_t off = 0; off < total; off += req)
		if (pwrite(fd, buf, req, (off_t)off) != (ssize_t)req)
			die("pwrite", errno);
	double t1 = now();
	fdatasync(fd);
	double t2 = now();
	r.write = mbs(total, t1 - t0);
	r.write_sync = mbs(total, t2 - t0);
	t0 = now();
	for (uint64_t off = 0; off < total; off += req)
		if (pread(fd, buf, req, (off_t)off) != (ssize_t)req)
			die("pread", errno);
	r.read_cached = mbs(total, now() - t0);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	t0 = now();
	for (uint64_t off = 0; off < total; off += req)
		if (pread(fd, buf, req, (off_t)off) != (ssize_t)req)
			die("pread", errno);
	r.read_cold = mbs(total, now() - t0);
	close(fd);
	unlink(path);
	return r;
}

static struct result bench_store(const char *dir, uint64_t total, size_t req, uint8_t *buf,
				 bool crc)
{
	char tdir[4096], path[4200];
	snprintf(tdir, sizeof(tdir), "%s/target-%s", dir, crc ? "crc" : "nocrc");
	nftw(tdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	struct store_target_opts to = {.no_checksums = !crc};
	struct store_target *t;
	struct store_objs *s;
	int rc = store_target_open(tdir, &to, &t);
	if (rc)
		die("store_target_open", rc);
	struct store_obj_opts oo = {0};
	rc = store_obj_open(t, &oo, &s);
	if (rc)
		die("store_obj_open", rc);
	uint64_t np = store_crc_npieces(0, req);
	uint32_t *crcs = calloc(np, 4);
	struct iovec v = {buf, req};
	store_obj_piece_crcs(0, &v, 1, crcs);
	struct result r;

	double t0 = now();
	for (uint64_t off = 0; off < total; off += req) {
		rc = store_obj_write(s, 1, 0, off, buf, req, crc ? crcs : NULL, crc ? np : 0, NULL);
		if (rc)
			die("store_obj_write", rc);
	}
	double t1 = now();
	rc = store_obj_fsync(s, 1, 0);
	if (rc)
		die("store_obj_fsync", rc);
	double t2 = now();
	r.write = mbs(total, t1 - t0);
	r.write_sync = mbs(total, t2 - t0);

	size_t n;
	t0 = now();
	for (uint64_t off = 0; off < total; off += req) {
		rc = store_obj_read(s, 1, 0, off, buf, req, crcs, np, &n, NULL);
		if (rc || n != req)
			die("store_obj_read", rc ? rc : EIO);
	}
	r.read_cached = mbs(total, now() - t0);
	snprintf(path, sizeof(path), "%s/objects/00/00/0000000000000001.0", tdir);
	drop_cache(path);
	strcat(path, ".crc");
	drop_cache(path);
	t0 = now();
	for (uint64_t off = 0; off < total; off += req) {
		rc = store_obj_read(s, 1, 0, off, buf, req, crcs, np, &n, NULL);
		if (rc || n != req)
			die("store_obj_read", rc ? rc : EIO);
	}
	r.read_cold = mbs(total, now() - t0);
	struct store_index_stats st;
	store_index_get_stats(store_obj_index(s), &st);
	if (getenv("BENCH_VERBOSE"))
		fprintf(stderr, "  (index: %llu begins, %llu begin txns, %llu flush txns, %llu syncs)\n",
		(unsigned long long)st.begins, (unsigned long long)st.begin_txns,
		(unsigned long long)st.flush_txns, (unsigned long long)st.syncs);
	free(crcs);
	store_obj_close(s);
	store_target_close(t);
	nftw(tdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return r;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAXREP 32
int main(int argc, char **argv)
{
	const char *base = argc > 1 ? argv[1] : "/var/tmp";
	uint64_t total = (argc > 2 ? strtoull(argv[2], NULL, 10) : 1024) << 20;
	int repeats = argc > 3 ? atoi(argv[3]) : 3;
	if (repeats < 1 || repeats > MAXREP)
		repeats = 3;
	log_init("bench", LOG_WARN);
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/weft-bench-XXXXXX", base);
	if (!mkdtemp(dir))
		die("mkdtemp", errno);
	printf("dir %s, %llu MiB per run, median of %d runs\n", dir,
	       (unsigned long long)(total >> 20), repeats);
	size_t reqs[] = {1u << 20, 8u << 20};
	const char *names[] = {"pwrite", "store-crc", "store-nocrc"};
	static struct result res[2][3][MAXREP];
	uint8_t *buf = aligned_alloc(4096, 8u << 20);
	for (size_t i = 0; i < (8u << 20); i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 11);
	double t0 = now();
	uint32_t c = 0;
	for (int i = 0; i < 128; i++)
		c = crc32c(c, buf, 8u << 20);
	printf("crc32c (ISA-L): %.1f GB/s on one core (%08x)\n", 1.0 * (1u << 30) / 1e9 / (now() - t0), c);
	for (int rep = 0; rep < repeats; rep++)
		for (int k = 0; k < 2; k++) {
			res[k][0][rep] = bench_plain(dir, total, reqs[k], buf);
			res[k][1][rep] = bench_store(dir, total, reqs[k], buf, true);
			res[k][2][rep] = bench_store(dir, total, reqs[k], buf, false);
		}
	for (int k = 0; k < 2; k++)
		for (int m = 0; m < 3; m++) {
			double w[MAXREP], ws[MAXREP], rc[MAXREP], rd[MAXREP];
			for (int i = 0; i < repeats; i++) {
				w[i] = res[k][m][i].write;
				ws[i] = res[k][m][i].write_sync;
				rc[i] = res[k][m][i].read_cached;
				rd[i] = res[k][m][i].read_cold;
			}
			printf("%-11s %zu MiB  write %6.0f  write+fsync %6.0f  read(cached) %6.0f  read(cold) %6.0f MB/s\n",
			       names[m], reqs[k] >> 20, median(w, repeats), median(ws, repeats),
			       median(rc, repeats), median(rd, repeats));
		}
	free(buf);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
