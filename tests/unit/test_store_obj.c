/* Unit tests of the object store: holes, short reads, truncate, unaligned writes
 * against an in-memory model, restart, corruption, bad incoming CRCs, torn writes,
 * delete, list, fd cache bounds, checksums off, concurrency. */
#include "store_testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>

#include "common/crc.h"
#include "store/crcfile.h"
#include "store/index.h"
#include "store/object_int.h"
#include "store/target.h"

#define CH WEFT_CHUNK_SIZE

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((seed + i) * 2654435761u >> 13) | 1; /* never zero */
}

static char obj_file(struct tstore *ts, uint64_t ino, uint32_t stripe, char *out, bool crc)
{
	/* format 2: objects/XX/YY from bits 16-23 and 8-15 of the inode number */
	snprintf(out, 512, "%s/objects/%02x/%02x/%016llx.%u%s", ts->dir,
		 (unsigned)((ino >> 16) & 0xff), (unsigned)((ino >> 8) & 0xff), (unsigned long long)ino,
		 stripe, crc ? ".crc" : "");
	return 0;
}

/* Checksum entry idx of an object, wherever the store keeps it (crcfile.h): the data
 * file's attribute for the first STORE_CRC_INLINE entries of an object that has it, else
 * the sidecar. entry_put writes it there. */
static bool entry_inline(struct tstore *ts, uint64_t ino, uint32_t stripe, uint64_t idx)
{
	char d[512];
	obj_file(ts, ino, stripe, d, false);
	return idx < STORE_CRC_INLINE && getxattr(d, STORE_CRC_XATTR, NULL, 0) >= 0;
}
static uint32_t entry_get(struct tstore *ts, uint64_t ino, uint32_t stripe, uint64_t idx)
{
	char p[512];
	uint8_t raw[4 * STORE_CRC_INLINE] = {0};
	uint32_t v = 0;
	if (entry_inline(ts, ino, stripe, idx)) {
		obj_file(ts, ino, stripe, p, false);
		CHECK(getxattr(p, STORE_CRC_XATTR, raw, sizeof(raw)) >= 0);
		memcpy(&v, raw + 4 * idx, 4);
		return v;
	}
	obj_file(ts, ino, stripe, p, true);
	int fd = open(p, O_RDONLY);
	CHECK(fd >= 0);
	CHECK(pread(fd, &v, 4, (off_t)(4 * idx)) >= 0);
	close(fd);
	return v;
}
static void entry_put(struct tstore *ts, uint64_t ino, uint32_t stripe, uint64_t idx, uint32_t v)
{
	char p[512];
	uint8_t raw[4 * STORE_CRC_INLINE] = {0};
	if (entry_inline(ts, ino, stripe, idx)) {
		obj_file(ts, ino, stripe, p, false);
		ssize_t len = getxattr(p, STORE_CRC_XATTR, raw, sizeof(raw));
		CHECK(len >= 0);
		memcpy(raw + 4 * idx, &v, 4);
		if ((size_t)len < 4 * idx + 4)
			len = (ssize_t)(4 * idx + 4);
		CHECK_OK(setxattr(p, STORE_CRC_XATTR, raw, (size_t)len, 0));
		return;
	}
	obj_file(ts, ino, stripe, p, true);
	int fd = open(p, O_RDWR);
	CHECK(fd >= 0);
	CHECK_INT(pwrite(fd, &v, 4, (off_t)(4 * idx)), ==, 4);
	close(fd);
}

static void test_basic_holes_short(void)
{
	struct tstore ts = {.dir = tmp_dir("obj")};
	ts_open(&ts);
	size_t n;
	uint8_t *a = malloc(3 * CH), *b = malloc(4 * CH);
	fill(a, 3 * CH, 1);
	/* missing object reads empty */
	CHECK_OK(ts_read(&ts, 5, 0, 0, b, 100, &n, NULL));
	CHECK_INT(n, ==, 0);
	CHECK_INT(store_obj_delete(ts.s, 5, 0), ==, -ENOENT);
	struct store_obj_stat st;
	CHECK_INT(store_obj_stat(ts.s, 5, 0, &st), ==, -ENOENT);

	/* aligned write, read back whole */
	CHECK_OK(ts_write(&ts, 5, 0, 0, a, 2 * CH));
	CHECK_OK(ts_read(&ts, 5, 0, 0, b, 2 * CH, &n, NULL));
	CHECK_INT(n, ==, 2 * CH);
	CHECK(memcmp(a, b, 2 * CH) == 0);

	/* write far away leaves a hole that reads as zeros */
	uint64_t far = 10 * CH + 123;
	CHECK_OK(ts_write(&ts, 5, 0, far, a, 1000));
	CHECK_OK(store_obj_stat(ts.s, 5, 0, &st));
	CHECK_INT(st.size, ==, far + 1000);
	CHECK_OK(ts_read(&ts, 5, 0, 2 * CH - 10, b, 3 * CH, &n, NULL));
	CHECK_INT(n, ==, 3 * CH);
	CHECK(memcmp(b, a + 2 * CH - 10, 10) == 0);
	for (size_t i = 10; i < 3 * CH; i++)
		CHECK_INT(b[i], ==, 0);

	/* short read at the end, and nothing past it */
	CHECK_OK(ts_read(&ts, 5, 0, far + 500, b, 4 * CH, &n, NULL));
	CHECK_INT(n, ==, 500);
	CHECK(memcmp(b, a + 500, 500) == 0);
	CHECK_OK(ts_read(&ts, 5, 0, far + 1000, b, 10, &n, NULL));
	CHECK_INT(n, ==, 0);
	CHECK_OK(ts_read(&ts, 5, 0, far + 5000, b, 10, &n, NULL));
	CHECK_INT(n, ==, 0);

	/* sparse: the hole is not allocated on disk */
	CHECK_OK(store_obj_stat(ts.s, 5, 0, &st));
	CHECK(st.allocated < 6 * CH);
	CHECK(st.version >= 2);

	/* counters */
	struct store_counters c;
	store_target_counters(ts.t, &c);
	CHECK_INT(c.ops_written, ==, 2);
	CHECK_INT(c.bytes_written, ==, 2 * CH + 1000);
	CHECK(c.ops_read >= 3);

	/* zero-length write and read are no-ops; bad arguments rejected */
	CHECK_OK(store_obj_write(ts.s, 5, 0, 0, a, 0, NULL, 0, NULL));
	uint32_t crc1[2];
	CHECK_INT(store_obj_write(ts.s, 5, 0, 0, a, 100, crc1, 2, NULL), ==, -EINVAL);
	CHECK_INT(store_obj_write(ts.s, 5, 0, STORE_OBJ_SIZE_MAX, a, 100, crc1, 1, NULL), ==,
		  -EFBIG);
	CHECK_INT(store_obj_read(ts.s, 5, 0, 0, b, 2 * CH, crc1, 1, &n, NULL), ==, -EINVAL);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
	free(a);
	free(b);
}

/* Model-based: random unaligned writes (several iovecs), truncates and reads of a
 * few objects, compared with an in-memory copy; then restart and compare again. */
#define MODEL_MAX (40 * CH + 777)
struct model {
	uint8_t *data;
	uint64_t size;
};

static void model_check(struct tstore *ts, uint64_t ino, struct model *m)
{
	uint8_t *b = malloc(MODEL_MAX + CH);
	size_t n;
	CHECK_OK(ts_read(ts, ino, 0, 0, b, MODEL_MAX + CH, &n, NULL));
	CHECK_INT(n, ==, m->size);
	CHECK(memcmp(b, m->data, m->size) == 0);
	uint64_t nbad = 0, first = 0;
	int rc = store_obj_verify(ts->s, ino, 0, &nbad, &first);
	CHECK(rc == 0 || (rc == -ENOENT && m->size == 0));
	CHECK_INT(nbad, ==, 0);
	free(b);
}

/* Whether files in dir can be opened with O_DIRECT (tmpfs: no). */
static bool dir_takes_direct(const char *dir)
{
	char p[600];
	snprintf(p, sizeof(p), "%s/probe", dir);
	int fd = open(p, O_RDWR | O_CREAT | O_DIRECT, 0600);
	if (fd >= 0)
		close(fd);
	unlink(p);
	return fd >= 0;
}

#define PAGE 4096u
/* Some writes and reads are shaped for O_DIRECT (page-aligned offset and buffers, at
 * least OBJ_DIRECT_MIN long, maybe a partial last page), the others are not: both views
 * of a file must agree whatever the mix. */
static bool direct_shaped(uint64_t *off, uint64_t *len)
{
	if (rnd() % 3)
		return false;
	*off = (rnd() % (MODEL_MAX - 8 * CH)) & ~(uint64_t)(PAGE - 1);
	*len = ((128u << 10) + rnd() % (4 * CH)) & ~(uint64_t)(PAGE - 1);
	if (rnd() % 2)
		*len += rnd() % PAGE;
	return true;
}

/* Splits [0, len) into cnt iovecs over buf; page-multiple pieces when aligned. */
static void split_iov(uint8_t *buf, size_t len, struct iovec *v, int cnt, bool aligned)
{
	size_t pos = 0;
	for (int k = 0; k < cnt; k++) {
		size_t take = k == cnt - 1 ? len - pos : (size_t)(rnd() % (len - pos + 1));
		if (aligned && k < cnt - 1)
			take &= ~(size_t)(PAGE - 1);
		v[k] = (struct iovec){buf + pos, take};
		pos += take;
	}
}

static void test_model_in(const char *base)
{
	char tmpl[512];
	snprintf(tmpl, sizeof(tmpl), "%s/weft-model-XXXXXX", base);
	struct tstore ts = {.dir = strdup(mkdtemp(tmpl))};
	bool direct = dir_takes_direct(ts.dir);
	ts_open_opts(&ts, false, 3); /* tiny fd cache: exercise eviction too */
	enum { NOBJ = 4 };
	struct model m[NOBJ];
	for (int i = 0; i < NOBJ; i++) {
		m[i].data = calloc(1, MODEL_MAX);
		m[i].size = 0;
	}
	size_t bufsz = (MODEL_MAX + PAGE - 1) & ~(size_t)(PAGE - 1);
	uint8_t *buf = aligned_alloc(PAGE, bufsz), *rb = aligned_alloc(PAGE, bufsz);
	for (int step = 0; step < 3000; step++) {
		int o = (int)(rnd() % NOBJ);
		uint64_t ino = 100 + (uint64_t)o;
		struct model *mm = &m[o];
		int op = (int)(rnd() % 10);
		if (op < 5) { /* write, split over up to 4 iovecs */
			uint64_t off = rnd() % (MODEL_MAX - 1);
			uint64_t len = 1 + rnd() % ((rnd() % 4 == 0) ? 6 * CH : CH / 2);
			if (rnd() % 4 == 0)
				off -= off % CH; /* some aligned */
			bool dshape = direct_shaped(&off, &len);
			if (off + len > MODEL_MAX)
				len = MODEL_MAX - off;
			fill(buf, len, rnd());
			struct iovec v[4];
			int cnt = 1 + (int)(rnd() % 4);
			split_iov(buf, len, v, cnt, dshape);
			uint64_t np = store_crc_npieces(off, len);
			uint32_t *crcs = malloc(np * 4);
			store_obj_piece_crcs(off, v, cnt, crcs);
			struct store_obj_result r;
			CHECK_OK(store_obj_writev(ts.s, ino, 0, off, v, cnt, crcs, np, &r));
			free(crcs);
			memcpy(mm->data + off, buf, len);
			if (off + len > mm->size)
				mm->size = off + len;
			CHECK_INT(r.size, ==, mm->size);
		} else if (op < 6) { /* truncate up or down */
			uint64_t sz = rnd() % MODEL_MAX;
			if (rnd() % 3 == 0)
				sz -= sz % CH;
			CHECK_OK(store_obj_truncate(ts.s, ino, 0, sz, NULL));
			if (sz < mm->size)
				memset(mm->data + sz, 0, mm->size - sz);
			mm->size = sz;
		} else { /* read a random range, into several iovecs */
			uint64_t off = rnd() % MODEL_MAX, len = 1 + rnd() % (3 * CH);
			bool dshape = direct_shaped(&off, &len);
			if (off + len > MODEL_MAX)
				len = MODEL_MAX - off;
			struct iovec v[3];
			split_iov(rb, len, v, 3, dshape);
			uint64_t np = store_crc_npieces(off, len);
			uint32_t *crcs = malloc(np * 4 + 4), *want = malloc(np * 4 + 4);
			size_t n;
			CHECK_OK(store_obj_readv(ts.s, ino, 0, off, v, 3, crcs, np, &n, NULL));
			uint64_t expect = off >= mm->size ? 0 : (mm->size - off < len ? mm->size - off : len);
			CHECK_INT(n, ==, expect);
			CHECK(memcmp(rb, mm->data + off, n) == 0);
			struct iovec one = {rb, n};
			store_obj_piece_crcs(off, &one, 1, want);
			for (uint64_t i = 0; i < store_crc_npieces(off, n); i++)
				CHECK_INT(crcs[i], ==, want[i]);
			free(crcs);
			free(want);
		}
		CHECK(store_obj_open_files(ts.s) <= 3);
	}
	for (int i = 0; i < NOBJ; i++)
		model_check(&ts, 100 + (uint64_t)i, &m[i]);
	/* large aligned transfers took O_DIRECT where the file system allows it */
	if (direct)
		CHECK(store_obj_direct_bytes(ts.s) > 0);
	else
		CHECK_INT(store_obj_direct_bytes(ts.s), ==, 0);
	/* restart persistence */
	ts_close(&ts);
	ts_open(&ts);
	size_t ntorn;
	store_obj_torn(ts.s, &ntorn);
	CHECK_INT(ntorn, ==, 0);
	for (int i = 0; i < NOBJ; i++)
		model_check(&ts, 100 + (uint64_t)i, &m[i]);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
	for (int i = 0; i < NOBJ; i++)
		free(m[i].data);
	free(buf);
	free(rb);
}

static void test_truncate(void)
{
	struct tstore ts = {.dir = tmp_dir("trunc")};
	ts_open(&ts);
	uint8_t *a = malloc(4 * CH), *b = malloc(4 * CH);
	fill(a, 4 * CH, 7);
	size_t n;
	CHECK_OK(ts_write(&ts, 1, 2, 0, a, 3 * CH));
	CHECK_OK(store_obj_truncate(ts.s, 1, 2, CH + 10, NULL)); /* down, mid-chunk */
	CHECK_OK(ts_read(&ts, 1, 2, 0, b, 4 * CH, &n, NULL));
	CHECK_INT(n, ==, CH + 10);
	CHECK(memcmp(a, b, CH + 10) == 0);
	CHECK_OK(store_obj_truncate(ts.s, 1, 2, 3 * CH + 5, NULL)); /* up: zeros */
	CHECK_OK(ts_read(&ts, 1, 2, 0, b, 4 * CH, &n, NULL));
	CHECK_INT(n, ==, 3 * CH + 5);
	CHECK(memcmp(a, b, CH + 10) == 0);
	for (size_t i = CH + 10; i < n; i++)
		CHECK_INT(b[i], ==, 0);
	/* truncate creates a missing object; truncate to 0 */
	CHECK_OK(store_obj_truncate(ts.s, 9, 0, 5 * CH, NULL));
	struct store_obj_stat st;
	CHECK_OK(store_obj_stat(ts.s, 9, 0, &st));
	CHECK_INT(st.size, ==, 5 * CH);
	CHECK_OK(store_obj_truncate(ts.s, 1, 2, 0, NULL));
	CHECK_OK(ts_read(&ts, 1, 2, 0, b, 10, &n, NULL));
	CHECK_INT(n, ==, 0);
	/* the entries shrink with the object: none left in the attribute or the sidecar */
	char p[512];
	obj_file(&ts, 1, 2, p, false);
	CHECK_INT(getxattr(p, STORE_CRC_XATTR, NULL, 0), ==, 0);
	obj_file(&ts, 1, 2, p, true);
	struct stat fst;
	CHECK(stat(p, &fst) < 0 || fst.st_size == 0);
	/* past the inline entries, the sidecar holds the rest; it shrinks as well */
	CHECK_OK(ts_write(&ts, 1, 2, 0, a, 3 * CH));
	CHECK_OK(store_obj_truncate(ts.s, 1, 2, 20 * CH, NULL));
	CHECK_OK(ts_write(&ts, 1, 2, 12 * CH, a, CH));
	CHECK(entry_get(&ts, 1, 2, 12) != 0 && entry_get(&ts, 1, 2, 1) != 0);
	CHECK(entry_inline(&ts, 1, 2, 1));
	CHECK_OK(ts_read(&ts, 1, 2, 12 * CH, b, CH, &n, NULL));
	CHECK(n == CH && memcmp(a, b, CH) == 0);
	CHECK_OK(store_obj_truncate(ts.s, 1, 2, 2 * CH, NULL));
	CHECK_OK(stat(p, &fst));
	CHECK_INT(fst.st_size, ==, 2 * 4);
	obj_file(&ts, 1, 2, p, false);
	CHECK_INT(getxattr(p, STORE_CRC_XATTR, NULL, 0), ==, 2 * 4);
	CHECK_OK(ts_read(&ts, 1, 2, 0, b, 3 * CH, &n, NULL));
	CHECK(n == 2 * CH && memcmp(a, b, 2 * CH) == 0);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
	free(a);
	free(b);
}

static void flip_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	uint8_t c;
	CHECK_INT(pread(fd, &c, 1, off), ==, 1);
	c ^= 0x40;
	CHECK_INT(pwrite(fd, &c, 1, off), ==, 1);
	close(fd);
}

static void test_corruption(void)
{
	struct tstore ts = {.dir = tmp_dir("corrupt")};
	ts_open(&ts);
	uint8_t *a = malloc(4 * CH), *b = malloc(4 * CH);
	fill(a, 4 * CH, 3);
	size_t n;
	struct store_obj_result r;
	CHECK_OK(ts_write(&ts, 0x1234, 1, 0, a, 4 * CH));
	char p[512];
	obj_file(&ts, 0x1234, 1, p, false);
	flip_byte(p, 2 * CH + 77);
	/* that chunk: checksum error naming it, also for a read of part of it */
	CHECK_INT(ts_read(&ts, 0x1234, 1, 0, b, 4 * CH, &n, &r), ==, -WEFT_ECHECKSUM);
	CHECK_INT(r.bad_chunk, ==, 2);
	CHECK_INT(n, ==, 0);
	CHECK_INT(ts_read(&ts, 0x1234, 1, 2 * CH + 100, b, 10, &n, &r), ==, -WEFT_ECHECKSUM);
	CHECK_INT(r.bad_chunk, ==, 2);
	/* other chunks still read */
	CHECK_OK(ts_read(&ts, 0x1234, 1, 0, b, 2 * CH, &n, NULL));
	CHECK_INT(n, ==, 2 * CH);
	CHECK(memcmp(a, b, 2 * CH) == 0);
	CHECK_OK(ts_read(&ts, 0x1234, 1, 3 * CH + 5, b, CH, &n, NULL));
	CHECK_INT(n, ==, CH - 5);
	uint64_t nbad, first;
	CHECK_OK(store_obj_verify(ts.s, 0x1234, 1, &nbad, &first));
	CHECK_INT(nbad, ==, 1);
	CHECK_INT(first, ==, 2);
	/* a partial write into the bad chunk is refused (never bless bad data) */
	CHECK_INT(ts_write(&ts, 0x1234, 1, 2 * CH + 10, a, 10), ==, -WEFT_ECHECKSUM);
	/* a full overwrite repairs it */
	CHECK_OK(ts_write(&ts, 0x1234, 1, 2 * CH, a + 2 * CH, CH));
	CHECK_OK(ts_read(&ts, 0x1234, 1, 0, b, 4 * CH, &n, NULL));
	CHECK(memcmp(a, b, 4 * CH) == 0);
	/* corrupting the sidecar is caught as well */
	entry_put(&ts, 0x1234, 1, 1, entry_get(&ts, 0x1234, 1, 1) ^ 0x400000);
	CHECK_INT(ts_read(&ts, 0x1234, 1, CH, b, 1, &n, &r), ==, -WEFT_ECHECKSUM);
	CHECK_INT(r.bad_chunk, ==, 1);
	/* corruption in a hole: data appears where the sidecar says zeros */
	CHECK_OK(store_obj_truncate(ts.s, 0x1234, 1, 8 * CH, NULL));
	obj_file(&ts, 0x1234, 1, p, false);
	int fd = open(p, O_RDWR);
	CHECK_INT(pwrite(fd, "x", 1, 6 * CH + 3), ==, 1);
	close(fd);
	CHECK_INT(ts_read(&ts, 0x1234, 1, 6 * CH, b, 10, &n, &r), ==, -WEFT_ECHECKSUM);
	CHECK_INT(r.bad_chunk, ==, 6);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
	free(a);
	free(b);
}

/* An object written before inline entries (a sidecar, no attribute) keeps its entries
 * in the sidecar: read, corrupted and written as before, never split across both. */
static void test_sidecar_from_before(void)
{
	struct tstore ts = {.dir = tmp_dir("before")};
	ts_open(&ts);
	uint8_t *a = malloc(3 * CH), *b = malloc(3 * CH);
	fill(a, 3 * CH, 9);
	size_t n;
	struct store_obj_result r;
	CHECK_OK(ts_write(&ts, 0x42, 0, 0, a, 2 * CH));
	uint32_t e0 = entry_get(&ts, 0x42, 0, 0), e1 = entry_get(&ts, 0x42, 0, 1);
	CHECK(e0 != 0 && e1 != 0);
	ts_close(&ts);
	/* rewrite it in the old form */
	char d[512], c[512];
	obj_file(&ts, 0x42, 0, d, false);
	obj_file(&ts, 0x42, 0, c, true);
	CHECK_OK(removexattr(d, STORE_CRC_XATTR));
	int fd = open(c, O_RDWR | O_CREAT, 0640);
	CHECK(fd >= 0);
	uint32_t old[2] = {e0, e1};
	CHECK_INT(pwrite(fd, old, 8, 0), ==, 8);
	close(fd);
	ts_open(&ts);
	/* as written by the store: its stamp is the files' as they are now */
	fd = open(d, O_RDONLY);
	CHECK_OK(store_index_restamp(ts.s->idx, 0x42, 0, store_obj_stamp(fd)));
	close(fd);
	CHECK_OK(ts_read(&ts, 0x42, 0, 0, b, 2 * CH, &n, NULL));
	CHECK(n == 2 * CH && memcmp(a, b, n) == 0);
	CHECK_OK(ts_write(&ts, 0x42, 0, 2 * CH, a + 2 * CH, CH));
	CHECK(!entry_inline(&ts, 0x42, 0, 0));
	CHECK(entry_get(&ts, 0x42, 0, 2) != 0);
	CHECK_OK(ts_read(&ts, 0x42, 0, 0, b, 3 * CH, &n, NULL));
	CHECK(n == 3 * CH && memcmp(a, b, n) == 0);
	entry_put(&ts, 0x42, 0, 1, e1 ^ 1);
	CHECK_INT(ts_read(&ts, 0x42, 0, 0, b, 3 * CH, &n, &r), ==, -WEFT_ECHECKSUM);
	CHECK_INT(r.bad_chunk, ==, 1);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
	free(a);
	free(b);
}

/* A target of format 1 (made before format 2) keeps its objects where format 1 put
 * them, objects/<bits 8-15>/<bits 0-7>/, across writes, reopens and deletes; a new
 * target is format 2 (obj_file above). */
static void test_format1_paths(void)
{
	struct tstore ts = {.dir = tmp_dir("fmt1")};
	ts_open(&ts);
	CHECK_INT(store_target_version(ts.t), ==, 2);
	ts_close(&ts);
	char path[600];
	snprintf(path, sizeof(path), "%s/weft-target", ts.dir);
	int fd = open(path, O_RDWR);
	uint8_t id[64];
	CHECK_INT(pread(fd, id, 64, 0), ==, 64);
	id[8] = 1; /* version 1, with a valid CRC */
	uint32_t crc = crc32c(0, id, 60);
	memcpy(id + 60, &crc, 4);
	CHECK_INT(pwrite(fd, id, 64, 0), ==, 64);
	close(fd);
	ts_open(&ts);
	CHECK_INT(store_target_version(ts.t), ==, 1);
	uint8_t a[3000], b[3000];
	size_t n;
	fill(a, sizeof(a), 11);
	CHECK_OK(ts_write(&ts, 0x123456, 0, 0, a, sizeof(a)));
	snprintf(path, sizeof(path), "%s/objects/34/56/0000000000123456.0", ts.dir);
	CHECK_OK(access(path, F_OK));
	CHECK_OK(store_target_new_incarnation(ts.t)); /* rewrites the identity file */
	ts_close(&ts);
	ts_open(&ts); /* still format 1: the rewrite kept the version */
	CHECK_INT(store_target_version(ts.t), ==, 1);
	CHECK_OK(ts_read(&ts, 0x123456, 0, 0, b, sizeof(b), &n, NULL));
	CHECK(n == sizeof(a) && memcmp(a, b, n) == 0);
	CHECK_OK(store_obj_delete(ts.s, 0x123456, 0));
	CHECK(access(path, F_OK) < 0);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
}

static void test_bad_incoming_crc(void)
{
	struct tstore ts = {.dir = tmp_dir("badcrc")};
	ts_open(&ts);
	uint8_t *a = malloc(3 * CH), *b = malloc(3 * CH);
	fill(a, 3 * CH, 11);
	size_t n;
	CHECK_OK(ts_write(&ts, 7, 0, 0, a, CH));
	uint64_t off = CH / 2, len = 2 * CH;
	uint32_t crcs[3];
	struct iovec v = {a + CH, len};
	store_obj_piece_crcs(off, &v, 1, crcs);
	crcs[1] ^= 1;
	struct store_obj_result r;
	CHECK_INT(store_obj_write(ts.s, 7, 0, off, a + CH, len, crcs, 3, &r), ==,
		  -WEFT_ECHECKSUM);
	CHECK_INT(r.bad_piece, ==, 1);
	/* nothing written: same size, same bytes, same version */
	struct store_obj_stat st;
	CHECK_OK(store_obj_stat(ts.s, 7, 0, &st));
	CHECK_INT(st.size, ==, CH);
	CHECK_INT(st.version, ==, 1);
	CHECK_OK(ts_read(&ts, 7, 0, 0, b, 3 * CH, &n, NULL));
	CHECK_INT(n, ==, CH);
	CHECK(memcmp(a, b, CH) == 0);
	/* the first piece wrong: also nothing for a new object */
	store_obj_piece_crcs(0, &v, 1, crcs);
	crcs[0] ^= 0x80000000u;
	CHECK_INT(store_obj_write(ts.s, 8, 0, 0, a, len, crcs, 2, &r), ==, -WEFT_ECHECKSUM);
	CHECK_INT(r.bad_piece, ==, 0);
	CHECK_INT(store_obj_stat(ts.s, 8, 0, &st), ==, -ENOENT);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
	free(a);
	free(b);
}

static void torn_pwrite(struct tstore *ts, uint64_t ino, const void *p, size_t n, off_t off)
{
	char path[512];
	obj_file(ts, ino, 0, path, false);
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	CHECK_INT(pwrite(fd, p, n, off), ==, (ssize_t)n);
	close(fd);
}

static void test_torn(void)
{
	struct tstore ts = {.dir = tmp_dir("torn")};
	ts_open(&ts);
	uint8_t *a = malloc(4 * CH), *b = malloc(4 * CH);
	fill(a, 4 * CH, 5);
	size_t n;
	/* Each object gets a mutation "torn" by a crash: the index begin is recorded and
	 * data reaches the file, but neither its CRCs nor the index end do.
	 *   1: clean, untouched
	 *   2: overwrite inside chunk 1 (CRC not updated): chunk stays bad
	 *   3: size 100, append at CH + 50 (hole between): cut back to 100
	 *   4: nothing changed after begin (crash after CRCs, before commit): verifies
	 *   5: size 100, unaligned append inside chunk 0: cut back to 100
	 *   6: size 2 CH, aligned append of CH + 10: cut back to 2 CH
	 *   7: size 100, write of chunk 2 with its CRC, but chunk 0's zero-extended CRC
	 *      not yet written: chunk 0's CRC is repaired, nothing cut */
	CHECK_OK(ts_write(&ts, 1, 0, 0, a, 2 * CH));
	CHECK_OK(ts_write(&ts, 2, 0, 0, a, 2 * CH));
	CHECK_OK(ts_write(&ts, 3, 0, 0, a, 100));
	CHECK_OK(ts_write(&ts, 4, 0, 0, a, CH));
	CHECK_OK(ts_write(&ts, 5, 0, 0, a, 100));
	CHECK_OK(ts_write(&ts, 6, 0, 0, a, 2 * CH));
	CHECK_OK(ts_write(&ts, 7, 0, 0, a, 100));
	struct store_index *idx = store_obj_index(ts.s);
	uint64_t v;
	for (uint64_t ino = 2; ino <= 7; ino++)
		CHECK_OK(store_index_begin(idx, ino, 0, &v));
	char p[512];
	obj_file(&ts, 2, 0, p, false);
	flip_byte(p, CH + 9);
	torn_pwrite(&ts, 3, a + 500, 1000, CH + 50);
	torn_pwrite(&ts, 5, a + 500, 1000, 100);
	torn_pwrite(&ts, 6, a + 500, CH + 10, 2 * CH);
	torn_pwrite(&ts, 7, a + 2 * CH, CH, 2 * CH);
	uint32_t e2 = store_crc_to_entry(crc32c(0, a + 2 * CH, CH), CH);
	entry_put(&ts, 7, 0, 2, e2);
	ts_close(&ts); /* in-flight records stay pending, as after SIGKILL */

	ts_open(&ts);
	size_t nt;
	const struct store_torn *t = store_obj_torn(ts.s, &nt);
	CHECK_INT(nt, ==, 6);
	for (size_t i = 0; i < nt; i++) {
		CHECK_INT(t[i].rec.ino, ==, i + 2);
		CHECK(t[i].rec.pending != t[i].rec.committed);
	}
	CHECK_INT(t[0].nbad, ==, 1);
	CHECK_INT(t[0].first_bad, ==, 1);
	CHECK_INT(t[0].cut_from, ==, 0);
	CHECK_INT(t[1].nbad, ==, 0);
	CHECK_INT(t[1].cut_from, ==, CH + 1050);
	CHECK_INT(t[1].size, ==, 100);
	CHECK_INT(t[2].nbad, ==, 0);
	CHECK_INT(t[2].cut_from, ==, 0);
	CHECK_INT(t[3].size, ==, 100);
	CHECK_INT(t[3].cut_from, ==, 1100);
	CHECK_INT(t[4].size, ==, 2 * CH);
	CHECK_INT(t[4].nbad, ==, 0);
	CHECK_INT(t[5].nrepaired, ==, 1);
	CHECK_INT(t[5].nbad, ==, 0);
	CHECK_INT(t[5].cut_from, ==, 0);
	CHECK_INT(t[5].size, ==, 3 * CH);
	CHECK_OK(ts_read(&ts, 7, 0, 0, b, 4 * CH, &n, NULL));
	CHECK_INT(n, ==, 3 * CH);
	CHECK(memcmp(a, b, 100) == 0);
	CHECK(memcmp(a + 2 * CH, b + 2 * CH, CH) == 0);
	/* the bad chunk fails reads; everything acknowledged reads back */
	struct store_obj_result r;
	CHECK_INT(ts_read(&ts, 2, 0, CH, b, 10, &n, &r), ==, -WEFT_ECHECKSUM);
	CHECK_INT(r.bad_chunk, ==, 1);
	CHECK_OK(ts_read(&ts, 2, 0, 0, b, CH, &n, NULL));
	for (uint64_t ino = 3; ino <= 6; ino++) {
		size_t want = ino == 4 ? CH : ino == 6 ? 2 * CH : 100;
		CHECK_OK(ts_read(&ts, ino, 0, 0, b, 4 * CH, &n, NULL));
		CHECK_INT(n, ==, want);
		CHECK(memcmp(a, b, want) == 0);
		uint64_t nbad;
		CHECK_OK(store_obj_verify(ts.s, ino, 0, &nbad, NULL));
		CHECK_INT(nbad, ==, 0);
	}
	CHECK_OK(ts_read(&ts, 1, 0, 0, b, 2 * CH, &n, NULL));
	CHECK(memcmp(a, b, 2 * CH) == 0);
	/* records are settled: a second restart finds nothing torn */
	ts_close(&ts);
	ts_open(&ts);
	store_obj_torn(ts.s, &nt);
	CHECK_INT(nt, ==, 0);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
	free(a);
	free(b);
}

static void test_delete_list(void)
{
	struct tstore ts = {.dir = tmp_dir("del")};
	ts_open(&ts);
	uint8_t a[100];
	fill(a, sizeof(a), 9);
	uint64_t inos[] = {0x300, 0x5, 0x1ff, 0x5};
	uint32_t stripes[] = {0, 3, 1, 1};
	for (int i = 0; i < 4; i++)
		CHECK_OK(ts_write(&ts, inos[i], stripes[i], 0, a, 10 + (size_t)i));
	CHECK_OK(ts_write(&ts, 0x5, 7, 0, a, 1));
	struct store_index_rec recs[10];
	size_t n;
	CHECK_OK(store_obj_list(ts.s, 0, 0, recs, 10, &n));
	CHECK_INT(n, ==, 5);
	uint64_t want_ino[] = {0x5, 0x5, 0x5, 0x1ff, 0x300};
	uint32_t want_stripe[] = {1, 3, 7, 1, 0};
	for (int i = 0; i < 5; i++) {
		CHECK_INT(recs[i].ino, ==, want_ino[i]);
		CHECK_INT(recs[i].stripe, ==, want_stripe[i]);
		CHECK_INT(recs[i].committed, ==, recs[i].pending);
	}
	CHECK_INT(recs[3].length, ==, 12);
	/* cursor: resume after (0x5, 3), max 2 */
	CHECK_OK(store_obj_list(ts.s, 0x5, 4, recs, 2, &n));
	CHECK_INT(n, ==, 2);
	CHECK_INT(recs[0].stripe, ==, 7);
	CHECK_INT(recs[1].ino, ==, 0x1ff);
	/* delete one, then all stripes of an inode */
	CHECK_OK(store_obj_delete(ts.s, 0x1ff, 1));
	CHECK_INT(store_obj_delete(ts.s, 0x1ff, 1), ==, -ENOENT);
	uint64_t nd;
	CHECK_OK(store_obj_delete_inode(ts.s, 0x5, &nd));
	CHECK_INT(nd, ==, 3);
	CHECK_OK(store_obj_list(ts.s, 0, 0, recs, 10, &n));
	CHECK_INT(n, ==, 1);
	CHECK_INT(recs[0].ino, ==, 0x300);
	char p[512];
	obj_file(&ts, 0x5, 3, p, false);
	CHECK(access(p, F_OK) < 0);
	obj_file(&ts, 0x5, 3, p, true);
	CHECK(access(p, F_OK) < 0);
	size_t nr;
	uint8_t b[100];
	CHECK_OK(ts_read(&ts, 0x5, 3, 0, b, 100, &nr, NULL));
	CHECK_INT(nr, ==, 0);
	/* recreate after delete */
	CHECK_OK(ts_write(&ts, 0x5, 3, 0, a, 50));
	CHECK_OK(ts_read(&ts, 0x5, 3, 0, b, 100, &nr, NULL));
	CHECK_INT(nr, ==, 50);
	CHECK_OK(store_obj_fsync(ts.s, 0x5, 3));
	CHECK_INT(store_obj_fsync(ts.s, 0x77, 3), ==, -ENOENT);
	/* persists */
	ts_close(&ts);
	ts_open(&ts);
	CHECK_OK(store_obj_list(ts.s, 0, 0, recs, 10, &n));
	CHECK_INT(n, ==, 2);
	CHECK_INT(recs[0].ino, ==, 0x5);
	CHECK_INT(recs[0].length, ==, 50);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
}

static void test_no_checksums(void)
{
	struct tstore ts = {.dir = tmp_dir("nocrc")};
	ts_open_opts(&ts, true, 0);
	uint8_t *a = malloc(3 * CH), *b = malloc(3 * CH);
	fill(a, 3 * CH, 2);
	CHECK_OK(store_obj_write(ts.s, 1, 0, 100, a, 2 * CH, NULL, 0, NULL));
	uint32_t crcs[4] = {1, 1, 1, 1};
	size_t n;
	CHECK_OK(store_obj_read(ts.s, 1, 0, 100, b, 3 * CH, crcs, 4, &n, NULL));
	CHECK_INT(n, ==, 2 * CH);
	CHECK(memcmp(a, b, n) == 0);
	CHECK_INT(crcs[0], ==, 0);
	CHECK_INT(crcs[2], ==, 0);
	char p[512];
	obj_file(&ts, 1, 0, p, true);
	CHECK(access(p, F_OK) < 0);
	ts_close(&ts);
	/* reopening with the other mode is refused */
	struct store_target_opts to = {.no_checksums = false};
	CHECK_INT(store_target_open(ts.dir, &to, &ts.t), ==, -EINVAL);
	rm_rf(ts.dir);
	free(ts.dir);
	free(a);
	free(b);
}

/* Threads: each owns one object and also writes disjoint chunks of a shared one,
 * while readers verify. */
struct thr {
	struct tstore *ts;
	int id;
};
#define NTHR 4
#define ROUNDS 200

static void *worker(void *arg)
{
	struct thr *t = arg;
	uint8_t *a = malloc(2 * CH), *b = malloc(2 * CH);
	for (int i = 0; i < ROUNDS; i++) {
		fill(a, 2 * CH, (uint64_t)(t->id * 1000 + i));
		uint64_t off = (uint64_t)(i % 8) * CH + (uint64_t)t->id * 3;
		CHECK_OK(ts_write(t->ts, 500 + (uint64_t)t->id, 0, off, a, CH + 1000));
		CHECK_OK(ts_write(t->ts, 999, 0, ((uint64_t)t->id * 8 + (uint64_t)(i % 8)) * CH, a, CH));
		size_t n;
		CHECK_OK(ts_read(t->ts, 500 + (uint64_t)t->id, 0, off, b, CH + 1000, &n, NULL));
		CHECK_INT(n, ==, CH + 1000);
		CHECK(memcmp(a, b, n) == 0);
		CHECK_OK(ts_read(t->ts, 999, 0, (uint64_t)(i % 32) * CH, b, 2 * CH, &n, NULL));
	}
	free(a);
	free(b);
	return NULL;
}

static void test_threads(void)
{
	struct tstore ts = {.dir = tmp_dir("thr")};
	ts_open_opts(&ts, false, 2);
	pthread_t th[NTHR];
	struct thr args[NTHR];
	for (int i = 0; i < NTHR; i++) {
		args[i] = (struct thr){&ts, i};
		CHECK_OK(pthread_create(&th[i], NULL, worker, &args[i]));
	}
	for (int i = 0; i < NTHR; i++)
		pthread_join(th[i], NULL);
	uint64_t nbad;
	CHECK_OK(store_obj_verify(ts.s, 999, 0, &nbad, NULL));
	CHECK_INT(nbad, ==, 0);
	struct store_index_stats st;
	store_index_get_stats(store_obj_index(ts.s), &st);
	fprintf(stderr, "threads: %llu begins, %llu begin txns, %llu flush txns\n",
		(unsigned long long)st.begins, (unsigned long long)st.begin_txns,
		(unsigned long long)st.flush_txns);
	CHECK(st.begin_txns < st.begins);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
}

/* A real crash: a child appends unaligned writes and reports each acknowledged size
 * through a pipe; it is killed with SIGKILL at a random moment. After reopening, every
 * acknowledged byte reads back and every chunk verifies. */
static uint8_t pat(uint64_t p) { return (uint8_t)(p * 7 + 3) | 1; }

static void test_sigkill(void)
{
	for (int round = 0; round < 5; round++) {
		struct tstore ts = {.dir = tmp_dir("kill")};
		int pfd[2];
		CHECK_OK(pipe(pfd));
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			close(pfd[0]);
			ts_open(&ts);
			uint8_t *buf = malloc(3 * CH);
			uint64_t off = 0;
			for (;;) {
				size_t len = 1 + (size_t)(rnd() % (2 * CH));
				for (size_t i = 0; i < len; i++)
					buf[i] = pat(off + i);
				if (ts_write(&ts, 1, 0, off, buf, len) != 0)
					_exit(2);
				off += len;
				if (write(pfd[1], &off, sizeof(off)) != sizeof(off))
					_exit(3);
			}
		}
		close(pfd[1]);
		struct timespec d = {0, (long)(20 + rnd() % 60) * 1000000L};
		nanosleep(&d, NULL);
		kill(pid, SIGKILL);
		int status;
		waitpid(pid, &status, 0);
		CHECK(WIFSIGNALED(status));
		uint64_t acked = 0, v;
		while (read(pfd[0], &v, sizeof(v)) == sizeof(v))
			acked = v;
		close(pfd[0]);

		ts_open(&ts);
		struct store_obj_stat st;
		int src = store_obj_stat(ts.s, 1, 0, &st);
		if (src == -ENOENT) {
			/* killed before its first write was acknowledged (a slow machine) */
			CHECK_INT(acked, ==, 0);
			ts_close(&ts);
			rm_rf(ts.dir);
			free(ts.dir);
			continue;
		}
		CHECK_OK(src);
		CHECK(st.size >= acked);
		uint8_t *b = malloc(st.size + 1);
		size_t n;
		for (uint64_t o = 0; o < st.size; o += n) {
			size_t want = st.size - o < (8u << 20) ? st.size - o : (8u << 20);
			CHECK_OK(ts_read(&ts, 1, 0, o, b + o, want, &n, NULL));
			CHECK_INT(n, ==, want);
		}
		n = st.size;
		for (uint64_t i = 0; i < n; i++)
			if (b[i] != pat(i)) {
				fprintf(stderr, "byte %llu of %zu wrong (acked %llu)\n",
					(unsigned long long)i, n, (unsigned long long)acked);
				CHECK(0);
			}
		uint64_t nbad;
		CHECK_OK(store_obj_verify(ts.s, 1, 0, &nbad, NULL));
		CHECK_INT(nbad, ==, 0);
		size_t nt;
		const struct store_torn *t = store_obj_torn(ts.s, &nt);
		fprintf(stderr, "sigkill round %d: acked %llu, size %llu, torn %zu%s\n", round,
			(unsigned long long)acked, (unsigned long long)st.size, nt,
			nt && t[0].cut_from ? " (tail cut)" : "");
		free(b);
		ts_close(&ts);
		rm_rf(ts.dir);
		free(ts.dir);
	}
}

/* Lost and stale objects: a missing object is a hole only when nothing says it was
 * written; the index's record or the caller's WRITTEN flag make it WEFT_EMISSING, as
 * does a file whose size is not the index's; store_obj_vouch sees objects/ emptied
 * and an index lost; the target's incarnation survives a reopen and changes on demand. */
static void test_lost(void)
{
	struct tstore ts = {.dir = tmp_dir("lost")};
	ts_open(&ts);
	char why[160], path[512];
	CHECK(store_obj_vouch(ts.s, why, sizeof(why))); /* empty and empty */
	uint8_t *a = malloc(2 * CH), *b = malloc(2 * CH);
	fill(a, 2 * CH, 3);
	uint32_t crcs[4];
	size_t n;
	struct iovec v = {b, CH};
	/* never written: a hole without the flag, EMISSING with it */
	CHECK_OK(store_obj_readv_flags(ts.s, 9, 0, 0, &v, 1, crcs, 4, &n, NULL, 0));
	CHECK_INT(n, ==, 0);
	CHECK_INT(store_obj_readv_flags(ts.s, 9, 0, 0, &v, 1, crcs, 4, &n, NULL,
					STORE_READ_WRITTEN), ==, -WEFT_EMISSING);
	CHECK_OK(ts_write(&ts, 9, 0, 0, a, 2 * CH));
	CHECK_OK(ts_write(&ts, 9, 1, 0, a, CH));
	CHECK_OK(store_obj_readv_flags(ts.s, 9, 0, 0, &v, 1, crcs, 4, &n, NULL,
				       STORE_READ_WRITTEN));
	CHECK_INT(n, ==, CH);
	CHECK_INT(store_obj_readv_flags(ts.s, 9, 0, 0, &v, 1, crcs, 4, &n, NULL,
					STORE_READ_LOST), ==, -WEFT_EMISSING);
	uint64_t inc = store_target_incarnation(ts.t);
	CHECK(inc != 0);
	ts_close(&ts);

	/* the file of stripe 1 removed behind the store's back: listed, so lost */
	obj_file(&ts, 9, 1, path, false);
	CHECK_OK(unlink(path));
	/* stripe 0 replaced by a shorter copy: its size is not the index's */
	obj_file(&ts, 9, 0, path, false);
	CHECK_OK(truncate(path, CH));
	ts_open(&ts);
	CHECK_INT(store_target_incarnation(ts.t), ==, inc);
	CHECK(store_obj_vouch(ts.s, why, sizeof(why))); /* one object lost: found by reads */
	CHECK_INT(store_obj_readv_flags(ts.s, 9, 1, 0, &v, 1, crcs, 4, &n, NULL, 0), ==,
		  -WEFT_EMISSING);
	CHECK_INT(store_obj_readv_flags(ts.s, 9, 0, 0, &v, 1, crcs, 4, &n, NULL, 0), ==,
		  -WEFT_EMISSING);
	/* a rewrite makes it whole again */
	CHECK_OK(store_obj_truncate(ts.s, 9, 0, 0, NULL));
	CHECK_OK(ts_write(&ts, 9, 0, 0, a, 2 * CH));
	CHECK_OK(store_obj_readv_flags(ts.s, 9, 0, 0, &v, 1, crcs, 4, &n, NULL, 0));
	CHECK(memcmp(a, b, CH) == 0);
	ts_close(&ts);

	/* objects/ emptied: the index lists objects whose files are all gone */
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s/objects/*", ts.dir);
	CHECK_OK(system(cmd));
	ts_open(&ts);
	CHECK(!store_obj_vouch(ts.s, why, sizeof(why)));
	CHECK(strstr(why, "gone") != NULL);
	CHECK_OK(store_target_new_incarnation(ts.t));
	CHECK(store_target_incarnation(ts.t) != inc);
	inc = store_target_incarnation(ts.t);
	CHECK_OK(ts_write(&ts, 10, 0, 0, a, CH));
	ts_close(&ts);

	/* the index lost: objects/ holds files the index does not list */
	snprintf(cmd, sizeof(cmd), "rm -rf %s/index", ts.dir);
	CHECK_OK(system(cmd));
	ts_open(&ts);
	CHECK_INT(store_target_incarnation(ts.t), ==, inc); /* recorded durably */
	CHECK(!store_obj_vouch(ts.s, why, sizeof(why)));
	CHECK(strstr(why, "index") != NULL);
	/* deleting every object leaves empty directories: nothing to vouch against */
	CHECK_OK(ts_write(&ts, 10, 0, 0, a, CH));
	CHECK_OK(store_obj_delete(ts.s, 10, 0));
	CHECK(store_obj_vouch(ts.s, why, sizeof(why)));
	ts_close(&ts);
	free(a);
	free(b);
	rm_rf(ts.dir);
	free(ts.dir);
}

/* Reads a whole file into a malloc'd buffer (*n bytes), or copies buf back over it in
 * place (as `cp` onto an existing file does: same inode, new ctime). */
static uint8_t *slurp(const char *path, size_t *n)
{
	struct stat st;
	CHECK_OK(stat(path, &st));
	*n = (size_t)st.st_size;
	uint8_t *buf = malloc(*n + 1);
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_INT(pread(fd, buf, *n, 0), ==, (ssize_t)*n);
	close(fd);
	return buf;
}
static void put_back(const char *path, const uint8_t *buf, size_t n)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0);
	CHECK_INT(pwrite(fd, buf, n, 0), ==, (ssize_t)n);
	close(fd);
}

/* Old is not current: an object's files put back from a copy taken before its last
 * write (same size, CRCs consistent) are found by their stamp, on read and by
 * store_obj_stale, with the store running and across a restart; a write into the stale
 * object does not make it current, a truncate to 0 and rewrite does. */
static void test_stale(void)
{
	struct tstore ts = {.dir = tmp_dir("stale")};
	ts_open(&ts);
	uint8_t *a = malloc(2 * CH), *b = malloc(2 * CH), *got = malloc(2 * CH);
	fill(a, 2 * CH, 5);
	fill(b, 2 * CH, 6);
	uint32_t crcs[4];
	size_t n, nd, nc;
	struct iovec v = {got, 2 * CH};
	char dpath[512], cpath[512];
	obj_file(&ts, 11, 0, dpath, false);
	obj_file(&ts, 11, 0, cpath, true);
	CHECK_OK(ts_write(&ts, 11, 0, 0, a, 2 * CH));
	/* its files: the data with its inline entries, and a sidecar if it has one */
	uint8_t ox[4 * STORE_CRC_INLINE];
	ssize_t nx = getxattr(dpath, STORE_CRC_XATTR, ox, sizeof(ox));
	bool has_sidecar = access(cpath, F_OK) == 0;
	CHECK(nx > 0 || has_sidecar);
	uint8_t *od = slurp(dpath, &nd), *oc = has_sidecar ? slurp(cpath, &nc) : NULL;
	CHECK_OK(ts_write(&ts, 11, 0, 0, b, 2 * CH));
	CHECK_INT(store_obj_stale(ts.s, 11, 0), ==, 0);
	usleep(20000); /* past the file system's timestamp granularity */
	put_back(dpath, od, nd);
	if (nx > 0)
		CHECK_OK(setxattr(dpath, STORE_CRC_XATTR, ox, (size_t)nx, 0));
	if (has_sidecar)
		put_back(cpath, oc, nc);
	CHECK_INT(store_obj_stale(ts.s, 11, 0), ==, 1);
	CHECK_INT(store_obj_readv_flags(ts.s, 11, 0, 0, &v, 1, crcs, 4, &n, NULL, 0), ==,
		  -WEFT_EMISSING);
	/* a write into part of it: the rest is still old, so it stays stale */
	CHECK_OK(ts_write(&ts, 11, 0, 0, b, CH));
	CHECK_INT(store_obj_stale(ts.s, 11, 0), ==, 1);
	CHECK_INT(store_obj_readv_flags(ts.s, 11, 0, 0, &v, 1, crcs, 4, &n, NULL, 0), ==,
		  -WEFT_EMISSING);
	/* repair: truncate to 0, then the current bytes */
	CHECK_OK(store_obj_truncate(ts.s, 11, 0, 0, NULL));
	CHECK_OK(ts_write(&ts, 11, 0, 0, b, 2 * CH));
	CHECK_INT(store_obj_stale(ts.s, 11, 0), ==, 0);
	CHECK_OK(store_obj_readv_flags(ts.s, 11, 0, 0, &v, 1, crcs, 4, &n, NULL, 0));
	CHECK(n == 2 * CH && memcmp(got, b, 2 * CH) == 0);
	ts_close(&ts);
	/* the stamp is in the index: still current after a reopen; an old copy put back
	 * while the store is down is found at the first read */
	ts_open(&ts);
	CHECK_INT(store_obj_stale(ts.s, 11, 0), ==, 0);
	CHECK_OK(store_obj_readv_flags(ts.s, 11, 0, 0, &v, 1, crcs, 4, &n, NULL, 0));
	ts_close(&ts);
	usleep(20000);
	put_back(dpath, od, nd);
	if (nx > 0)
		CHECK_OK(setxattr(dpath, STORE_CRC_XATTR, ox, (size_t)nx, 0));
	if (has_sidecar)
		put_back(cpath, oc, nc);
	ts_open(&ts);
	CHECK_INT(store_obj_readv_flags(ts.s, 11, 0, 0, &v, 1, crcs, 4, &n, NULL, 0), ==,
		  -WEFT_EMISSING);
	CHECK_INT(store_obj_stale(ts.s, 11, 0), ==, 1);
	ts_close(&ts);
	free(od);
	free(oc);
	free(a);
	free(b);
	free(got);
	rm_rf(ts.dir);
	free(ts.dir);
}

/* Resync's conditional mutations: applied only while the version is unchanged. */
static void test_conditional(void)
{
	struct tstore ts = {.dir = tmp_dir("cond")};
	ts_open(&ts);
	uint8_t a[5000], b[5000], r[5000];
	fill(a, sizeof(a), 3);
	fill(b, sizeof(b), 4);
	uint64_t np = store_crc_npieces(0, sizeof(a));
	uint32_t ca[4], cb[4];
	struct iovec va = {a, sizeof(a)}, vb = {b, sizeof(b)};
	store_obj_piece_crcs(0, &va, 1, ca);
	store_obj_piece_crcs(0, &vb, 1, cb);
	CHECK_INT(store_obj_version(ts.s, 9, 0), ==, 0);
	/* missing object: expect 0 creates it */
	struct store_obj_result res;
	CHECK_OK(store_obj_write_if(ts.s, 0, 9, 0, 0, a, sizeof(a), ca, np, &res));
	uint64_t v1 = store_obj_version(ts.s, 9, 0);
	CHECK_INT(v1, ==, res.version);
	CHECK(v1 > 0);
	/* stale expectation: refused, nothing changes */
	CHECK_INT(store_obj_write_if(ts.s, 0, 9, 0, 0, b, sizeof(b), cb, np, NULL), ==, -EAGAIN);
	CHECK_INT(store_obj_truncate_if(ts.s, v1 + 7, 9, 0, 10, NULL), ==, -EAGAIN);
	CHECK_INT(store_obj_delete_if(ts.s, v1 + 7, 9, 0), ==, -EAGAIN);
	size_t n;
	CHECK_OK(ts_read(&ts, 9, 0, 0, r, sizeof(r), &n, NULL));
	CHECK_INT(n, ==, sizeof(a));
	CHECK(memcmp(r, a, sizeof(a)) == 0);
	CHECK_INT(store_obj_version(ts.s, 9, 0), ==, v1);
	/* a plain (forwarded) write moves the version: a copy taken before is refused */
	CHECK_OK(ts_write(&ts, 9, 0, 0, b, sizeof(b)));
	CHECK_INT(store_obj_write_if(ts.s, v1, 9, 0, 0, a, sizeof(a), ca, np, NULL), ==, -EAGAIN);
	CHECK_OK(ts_read(&ts, 9, 0, 0, r, sizeof(r), &n, NULL));
	CHECK(memcmp(r, b, sizeof(b)) == 0);
	/* current expectation: applied */
	uint64_t v2 = store_obj_version(ts.s, 9, 0);
	CHECK_OK(store_obj_truncate_if(ts.s, v2, 9, 0, 100, &res));
	CHECK_INT(res.size, ==, 100);
	uint64_t v3 = store_obj_version(ts.s, 9, 0);
	CHECK(v3 > v2);
	CHECK_OK(store_obj_delete_if(ts.s, v3, 9, 0));
	CHECK_INT(store_obj_version(ts.s, 9, 0), ==, 0);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
}

/* STORE_READ_HOLES: a leading hole is skipped and named, the read stops at the last
 * data, the data that is returned is checked and carries its CRCs; store_obj_extent
 * names the next data extent and the allocation. */
static void test_holes_skipped(void)
{
	struct tstore ts = {.dir = tmp_dir("holes")};
	/* only where the file system reports holes (ext4, xfs, tmpfs; not ramfs) */
	char probe[600];
	snprintf(probe, sizeof(probe), "%s/probe", ts.dir);
	int pf = open(probe, O_RDWR | O_CREAT, 0600);
	CHECK(pf >= 0);
	CHECK(pwrite(pf, "x", 1, 1 << 20) == 1);
	bool holes = lseek(pf, 0, SEEK_DATA) > 0;
	close(pf);
	unlink(probe);
	if (!holes) {
		printf("store_obj: holes not tested (%s reports no holes)\n", ts.dir);
		rm_rf(ts.dir);
		free(ts.dir);
		return;
	}
	ts_open(&ts);
	const size_t M = 1u << 20;
	uint8_t *a = malloc(2 * CH), *b = malloc(8 * M);
	fill(a, 2 * CH, 9);
	/* data [3M, 3M + 2CH) and [6M, 6M + 4096); the object is 6M + 4096 long */
	CHECK_OK(ts_write(&ts, 7, 0, 3 * M, a, 2 * CH));
	CHECK_OK(ts_write(&ts, 7, 0, 6 * M, a, 4096));
	uint64_t np = store_crc_npieces(0, 8 * M);
	uint32_t *crcs = calloc(np + 1, 4), *want = calloc(np + 1, 4);
	struct iovec v = {b, 8 * M};
	struct store_obj_result r;
	size_t n;
	/* all hole: nothing read */
	v.iov_len = 2 * M;
	CHECK_OK(store_obj_readv_flags(ts.s, 7, 0, 0, &v, 1, crcs, np, &n, &r, STORE_READ_HOLES));
	CHECK_INT(n, ==, 0);
	CHECK_INT(r.hole, ==, 2 * M);
	/* a leading hole, then the first data extent; the second extent is past the range */
	v.iov_len = 4 * M;
	memset(b, 0xee, 8 * M);
	CHECK_OK(store_obj_readv_flags(ts.s, 7, 0, 2 * M, &v, 1, crcs, np, &n, &r,
				       STORE_READ_HOLES));
	CHECK_INT(r.hole, ==, M);
	CHECK_INT(n, ==, 2 * CH);
	CHECK(memcmp(b, a, 2 * CH) == 0);
	struct iovec d = {b, n};
	store_obj_piece_crcs(3 * M, &d, 1, want);
	for (uint64_t i = 0; i < store_crc_npieces(3 * M, n); i++)
		CHECK_INT(crcs[i], ==, want[i]);
	/* both extents: the hole between them is read as zeros */
	v.iov_len = 8 * M;
	CHECK_OK(store_obj_readv_flags(ts.s, 7, 0, 0, &v, 1, crcs, np, &n, &r, STORE_READ_HOLES));
	CHECK_INT(r.hole, ==, 3 * M);
	CHECK_INT(n, ==, 3 * M + 4096);
	CHECK(memcmp(b, a, 2 * CH) == 0 && memcmp(b + 3 * M, a, 4096) == 0);
	for (size_t i = 2 * CH; i < 3 * M; i++)
		if (b[i]) {
			CHECK(b[i] == 0);
			break;
		}
	/* without the flag, as before: every byte from the offset */
	CHECK_OK(store_obj_readv_flags(ts.s, 7, 0, 0, &v, 1, crcs, np, &n, &r, 0));
	CHECK_INT(r.hole, ==, 0);
	CHECK_INT(n, ==, 6 * M + 4096);
	/* extents and allocation */
	struct store_obj_stat st;
	uint64_t dd, hh;
	CHECK_OK(store_obj_extent(ts.s, 7, 0, 0, &st, &dd, &hh));
	CHECK_INT(dd, ==, 3 * M);
	CHECK_INT(hh, ==, 3 * M + 2 * CH);
	CHECK_INT(st.size, ==, 6 * M + 4096);
	CHECK(st.allocated >= 2 * CH + 4096 && st.allocated < M);
	CHECK_OK(store_obj_extent(ts.s, 7, 0, 3 * M + 2 * CH, &st, &dd, &hh));
	CHECK_INT(dd, ==, 6 * M);
	CHECK_INT(hh, ==, 6 * M + 4096);
	CHECK_OK(store_obj_extent(ts.s, 7, 0, 6 * M + 4096, &st, &dd, &hh));
	CHECK_INT(dd, ==, st.size); /* nothing but the end */
	CHECK_INT(store_obj_extent(ts.s, 8, 0, 0, &st, &dd, &hh), ==, -ENOENT);
	/* a flipped byte in the data is still found with the flag */
	char p[512];
	obj_file(&ts, 7, 0, p, false);
	int fd = open(p, O_RDWR);
	CHECK(fd >= 0);
	uint8_t x = a[10] ^ 0x5a;
	CHECK(pwrite(fd, &x, 1, 3 * M + 10) == 1);
	close(fd);
	v.iov_len = 8 * M;
	CHECK_INT(store_obj_readv_flags(ts.s, 7, 0, 0, &v, 1, crcs, np, &n, &r,
					STORE_READ_HOLES), ==, -WEFT_ECHECKSUM);
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
	free(a);
	free(b);
	free(crcs);
	free(want);
}

int main(void)
{
	test_basic_holes_short();
	test_holes_skipped();
	test_lost();
	test_stale();
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	test_model_in(base);
	/* ramfs refuses O_DIRECT: the buffered fallback (mounting it needs root) */
	char rdir[512];
	snprintf(rdir, sizeof(rdir), "%s/weft-ramfs-XXXXXX", base);
	CHECK(mkdtemp(rdir) != NULL);
	if (mount("ramfs", rdir, "ramfs", 0, NULL) == 0) {
		test_model_in(rdir);
		CHECK_OK(umount(rdir));
	} else {
		printf("store_obj: ramfs fallback not tested (mount: %s)\n", strerror(errno));
	}
	rmdir(rdir);
	test_truncate();
	test_corruption();
	test_sidecar_from_before();
	test_format1_paths();
	test_bad_incoming_crc();
	test_torn();
	test_delete_list();
	test_conditional();
	test_no_checksums();
	test_threads();
	test_sigkill();
	printf("store_obj: ok\n");
	return 0;
}
