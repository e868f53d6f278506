/* Objects past what one local file may hold: a 1-byte write at 2^60 and other offsets up
 * to 2^63 - 1 on the file system of /var/tmp (ext4 in CI, whose files stop at 16 TiB),
 * writes across a segment boundary, truncate down and up across segments, restart, and
 * delete; space is used only for what was written. */
#include <dirent.h>
#include <sys/statfs.h>

#include "store_testutil.h"

#define SEG ((uint64_t)1 << 40)

static int count_files(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

int main(void)
{
	setenv("TMPDIR", "/var/tmp", 0);
	struct tstore ts = {.dir = tmp_dir("seg")};
	struct statfs sf;
	CHECK_OK(statfs(ts.dir, &sf));
	printf("file system of %s: magic 0x%lx%s\n", ts.dir, (unsigned long)sf.f_type,
	       sf.f_type == 0xEF53 ? " (ext4)" : "");
	ts_open(&ts);
	uint8_t b = 0xa7, buf[256];
	size_t n;
	struct store_obj_result r;
	uint64_t big = (uint64_t)1 << 60;

	/* one byte at 2^60 */
	CHECK_OK(ts_write(&ts, 7, 0, big, &b, 1));
	struct store_obj_stat st;
	CHECK_OK(store_obj_stat(ts.s, 7, 0, &st));
	CHECK(st.size == big + 1);
	CHECK_INT(st.allocated, <, 1 << 20);
	memset(buf, 0x55, sizeof(buf));
	CHECK_OK(ts_read(&ts, 7, 0, big - 10, buf, 20, &n, &r));
	CHECK_INT(n, ==, 11);
	for (int i = 0; i < 10; i++)
		CHECK_INT(buf[i], ==, 0);
	CHECK_INT(buf[10], ==, 0xa7);
	CHECK_OK(ts_read(&ts, 7, 0, 12345, buf, 100, &n, &r)); /* a hole in segment 0 */
	CHECK_INT(n, ==, 100);
	for (int i = 0; i < 100; i++)
		CHECK_INT(buf[i], ==, 0);
	CHECK_OK(ts_read(&ts, 7, 0, big / 2, buf, 100, &n, &r)); /* an absent segment */
	CHECK_INT(n, ==, 100);
	CHECK_INT(buf[0], ==, 0);

	/* across the boundary of segments 0 and 1 */
	uint8_t pat[300];
	for (int i = 0; i < 300; i++)
		pat[i] = (uint8_t)(i * 7 + 1);
	CHECK_OK(ts_write(&ts, 8, 0, SEG - 100, pat, 300));
	CHECK_OK(ts_read(&ts, 8, 0, SEG - 100, buf, 256, &n, &r));
	CHECK_INT(n, ==, 256);
	CHECK(memcmp(buf, pat, 256) == 0);
	CHECK_OK(store_obj_stat(ts.s, 8, 0, &st));
	CHECK(st.size == SEG + 200);

	/* truncate down across segments, then up */
	CHECK_OK(store_obj_truncate(ts.s, 7, 0, SEG + 50, &r));
	CHECK(r.size == SEG + 50);
	CHECK_OK(ts_read(&ts, 7, 0, big, buf, 10, &n, &r));
	CHECK_INT(n, ==, 0);
	char objdir[600];
	snprintf(objdir, sizeof(objdir), "%s/objects/00/00", ts.dir);
	CHECK_INT(count_files(objdir, "0000000000000007.0.s"), ==, 3); /* s1, s1.crc, segs */
	CHECK_OK(store_obj_truncate(ts.s, 7, 0, (uint64_t)1 << 62, &r));
	CHECK_OK(ts_read(&ts, 7, 0, ((uint64_t)1 << 62) - 5, buf, 10, &n, &r));
	CHECK_INT(n, ==, 5);
	CHECK_INT(buf[0], ==, 0);

	/* the largest offsets */
	uint64_t max = (uint64_t)INT64_MAX;
	CHECK_OK(ts_write(&ts, 9, 0, max - 10, pat, 10));
	CHECK_INT(ts_write(&ts, 9, 0, max - 10, pat, 11), ==, -EFBIG);
	CHECK_OK(ts_read(&ts, 9, 0, max - 10, buf, 20, &n, &r));
	CHECK_INT(n, ==, 10);
	CHECK(memcmp(buf, pat, 10) == 0);

	/* restart: sizes and data come back from the segments */
	ts_close(&ts);
	ts_open(&ts);
	CHECK_OK(store_obj_stat(ts.s, 7, 0, &st));
	CHECK(st.size == (uint64_t)1 << 62);
	CHECK_OK(store_obj_stat(ts.s, 9, 0, &st));
	CHECK(st.size == max);
	CHECK_OK(ts_read(&ts, 8, 0, SEG - 100, buf, 256, &n, &r));
	CHECK_INT(n, ==, 256);
	CHECK(memcmp(buf, pat, 256) == 0);
	uint64_t nbad = 0, first_bad = 0;
	CHECK_OK(store_obj_verify(ts.s, 9, 0, &nbad, &first_bad)); /* skips the holes */
	CHECK_INT(nbad, ==, 0);

	/* delete removes every segment */
	CHECK_OK(store_obj_delete(ts.s, 7, 0));
	CHECK_INT(count_files(objdir, "0000000000000007"), ==, 0);
	CHECK_OK(store_obj_delete(ts.s, 9, 0));
	ts_close(&ts);
	rm_rf(ts.dir);
	free(ts.dir);
	printf("ok\n");
	return 0;
}
