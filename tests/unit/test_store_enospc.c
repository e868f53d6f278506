/* ENOSPC on a deliberately small file system (a 2 MiB tmpfs): a write that does not fit
 * fails cleanly with -ENOSPC, acknowledges nothing (size and data as before, every
 * chunk still verifies), and other requests keep working. Skips (77) when tmpfs cannot
 * be mounted (not root, no CAP_SYS_ADMIN). */
#include "store_testutil.h"

#include <sys/mount.h>

#define CH WEFT_CHUNK_SIZE

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7) | 1;
}

int main(void)
{
	char *dir = tmp_dir("enospc");
	if (mount("tmpfs", dir, "tmpfs", 0, "size=2m") < 0) {
		fprintf(stderr, "mount tmpfs on %s: %s: skipping\n", dir, strerror(errno));
		rmdir(dir);
		free(dir);
		return 77;
	}
	struct tstore ts = {.dir = malloc(600)};
	snprintf(ts.dir, 600, "%s/target", dir);
	struct store_target_opts to = {0};
	CHECK_OK(store_target_open(ts.dir, &to, &ts.t));
	struct store_obj_opts oo = {.no_sync_thread = true, .index_map_size = 1u << 20};
	CHECK_OK(store_obj_open(ts.t, &oo, &ts.s));

	size_t big = 128 * 1024;
	uint8_t *a = malloc(4u << 20), *b = malloc(4u << 20);
	fill(a, 4u << 20, 3);
	/* B: 256 KiB we will delete later to make room */
	CHECK_OK(ts_write(&ts, 2, 0, 0, a, 2 * big));

	/* A: append until the disk is full */
	uint64_t acked = 0;
	int rc;
	while ((rc = ts_write(&ts, 1, 0, acked, a + acked, big)) == 0)
		acked += big;
	CHECK_INT(rc, ==, -ENOSPC);
	CHECK(acked > 0);
	fprintf(stderr, "enospc after %llu bytes\n", (unsigned long long)acked);
	struct store_obj_stat st;
	CHECK_OK(store_obj_stat(ts.s, 1, 0, &st));
	CHECK_INT(st.size, ==, acked);
	/* an unaligned append fails too, still acknowledging nothing */
	rc = ts_write(&ts, 1, 0, acked, a + acked, big + 1000);
	CHECK_INT(rc, ==, -ENOSPC);
	CHECK_OK(store_obj_stat(ts.s, 1, 0, &st));
	CHECK_INT(st.size, ==, acked);

	/* reads keep working and everything acknowledged verifies */
	size_t n;
	CHECK_OK(ts_read(&ts, 1, 0, 0, b, 4u << 20, &n, NULL));
	CHECK_INT(n, ==, acked);
	CHECK(memcmp(a, b, n) == 0);
	uint64_t nbad = 0;
	CHECK_OK(store_obj_verify(ts.s, 1, 0, &nbad, NULL));
	CHECK_INT(nbad, ==, 0);
	/* overwriting allocated space still works on a full disk */
	fill(b, big, 9);
	CHECK_OK(ts_write(&ts, 1, 0, CH + 5, b, 1000));
	memcpy(a + CH + 5, b, 1000);

	/* delete frees space; the next append succeeds */
	CHECK_OK(store_obj_delete(ts.s, 2, 0));
	CHECK_OK(ts_write(&ts, 1, 0, acked, a + acked, big));
	acked += big;
	CHECK_OK(ts_read(&ts, 1, 0, 0, b, 4u << 20, &n, NULL));
	CHECK_INT(n, ==, acked);
	CHECK(memcmp(a, b, n) == 0);

	/* restart: nothing torn, all verifies */
	ts_close(&ts);
	CHECK_OK(store_target_open(ts.dir, &to, &ts.t));
	CHECK_OK(store_obj_open(ts.t, &oo, &ts.s));
	size_t nt;
	store_obj_torn(ts.s, &nt);
	CHECK_INT(nt, ==, 0);
	CHECK_OK(store_obj_verify(ts.s, 1, 0, &nbad, NULL));
	CHECK_INT(nbad, ==, 0);
	ts_close(&ts);

	umount2(dir, MNT_DETACH);
	rmdir(dir);
	free(dir);
	free(ts.dir);
	free(a);
	free(b);
	printf("store_enospc: ok\n");
	return 0;
}
