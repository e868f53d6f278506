/* Unit tests of storage targets: format, reopen, identity, mismatches, lock, space,
 * counters. */
#include "store_testutil.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "common/crc.h"

static void test_target(void)
{
	char *dir = tmp_dir("tgt");
	char sub[600], path[700];
	snprintf(sub, sizeof(sub), "%s/t0", dir); /* missing: created and formatted */
	struct store_target *t, *t2;
	CHECK_OK(store_target_open(sub, NULL, &t));
	CHECK(store_target_checksums(t));
	CHECK_INT(store_target_id(t), ==, -1);
	uint8_t u1[16], u2[16], fs[16], fs2[16];
	store_target_uuid(t, u1);
	CHECK(!store_target_fs_uuid(t, fs));
	/* a second open is refused while the first holds the lock */
	CHECK_INT(store_target_open(sub, NULL, &t2), ==, -EBUSY);
	memset(fs, 0xAB, 16);
	CHECK_OK(store_target_set_identity(t, fs, 42));
	CHECK_INT(store_target_id(t), ==, 42);
	memset(fs2, 0xCD, 16);
	CHECK_INT(store_target_set_identity(t, fs2, 43), ==, -EXDEV);
	CHECK_INT(store_target_open(sub, NULL, &t2), ==, -EBUSY);

	uint64_t cap, avail;
	CHECK_OK(store_target_space(t, &cap, &avail));
	CHECK(cap > 0 && avail <= cap);
	store_target_count_write(t, 100);
	store_target_count_write(t, 50);
	store_target_count_read(t, 7);
	struct store_counters c;
	store_target_counters(t, &c);
	CHECK_INT(c.bytes_written, ==, 150);
	CHECK_INT(c.ops_written, ==, 2);
	CHECK_INT(c.bytes_read, ==, 7);
	CHECK_INT(c.ops_read, ==, 1);
	store_target_close(t);

	/* reopen: same identity; fs UUID checked when given */
	struct store_target_opts o = {.fs_uuid = fs};
	CHECK_OK(store_target_open(sub, &o, &t));
	store_target_uuid(t, u2);
	CHECK(memcmp(u1, u2, 16) == 0);
	CHECK(store_target_fs_uuid(t, fs2));
	CHECK(memcmp(fs, fs2, 16) == 0);
	CHECK_INT(store_target_id(t), ==, 42);
	store_target_close(t);
	memset(fs2, 0x11, 16);
	o.fs_uuid = fs2;
	CHECK_INT(store_target_open(sub, &o, &t), ==, -EXDEV);
	o.no_checksums = true;
	o.fs_uuid = NULL;
	CHECK_INT(store_target_open(sub, &o, &t), ==, -EINVAL);

	/* damaged identity file, unknown version */
	snprintf(path, sizeof(path), "%s/weft-target", sub);
	int fd = open(path, O_RDWR);
	uint8_t b[64];
	CHECK_INT(pread(fd, b, 64, 0), ==, 64);
	uint8_t save = b[20];
	b[20] ^= 1;
	CHECK_INT(pwrite(fd, b, 64, 0), ==, 64);
	CHECK_INT(store_target_open(sub, NULL, &t), ==, -EINVAL);
	b[20] = save;
	b[8] = 99; /* version 99, with a valid CRC */
	uint32_t crc = crc32c(0, b, 60);
	memcpy(b + 60, &crc, 4);
	CHECK_INT(pwrite(fd, b, 64, 0), ==, 64);
	CHECK_INT(store_target_open(sub, NULL, &t), ==, -ENOTSUP);
	CHECK_INT(pwrite(fd, "NOTWEFT!", 8, 0), ==, 8);
	CHECK_INT(store_target_open(sub, NULL, &t), ==, -EINVAL);
	close(fd);

	/* a non-empty directory without an identity file is never formatted */
	snprintf(sub, sizeof(sub), "%s/t1", dir);
	mkdir(sub, 0755);
	snprintf(path, sizeof(path), "%s/precious", sub);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	close(fd);
	CHECK_INT(store_target_open(sub, NULL, &t), ==, -ENOTEMPTY);
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	test_target();
	printf("store_target: ok\n");
	return 0;
}
