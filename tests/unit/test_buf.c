/* Unit tests of the bounds-checked buffer writer/reader and CRC32C. */
#include "check.h"
#include "common/buf.h"
#include "common/crc.h"

static void test_roundtrip(void)
{
	struct wbuf w;
	wbuf_init(&w);
	wbuf_u8(&w, 7);
	wbuf_u16(&w, 0xBEEF);
	wbuf_u32(&w, 0xDEADBEEF);
	wbuf_u64(&w, 0x0123456789ABCDEFULL);
	wbuf_str(&w, "hello", 5);
	CHECK_OK(w.err);
	CHECK_INT(w.len, ==, 1 + 2 + 4 + 8 + 2 + 5);
	struct rbuf r;
	rbuf_init(&r, w.data, w.len);
	CHECK_INT(rbuf_u8(&r), ==, 7);
	CHECK_INT(rbuf_u16(&r), ==, 0xBEEF);
	CHECK_INT(rbuf_u32(&r), ==, 0xDEADBEEF);
	CHECK(rbuf_u64(&r) == 0x0123456789ABCDEFULL);
	CHECK_INT(rbuf_u16(&r), ==, 5);
	CHECK(memcmp(rbuf_ptr(&r, 5), "hello", 5) == 0);
	CHECK(rbuf_ok(&r));
	CHECK_INT(rbuf_left(&r), ==, 0);
	/* reading past the end fails, returns zero, and stays failed */
	CHECK_INT(rbuf_u32(&r), ==, 0);
	CHECK(!rbuf_ok(&r));
	CHECK_STR(r.why, "message truncated");
	wbuf_free(&w);
}

static void test_crc(void)
{
	/* the CRC32C check value */
	CHECK_INT(crc32c(0, "123456789", 9), ==, 0xE3069283u);
	/* incremental equals one-shot */
	uint32_t c = crc32c(0, "1234", 4);
	CHECK_INT(crc32c(c, "56789", 5), ==, 0xE3069283u);
}

int main(void)
{
	test_roundtrip();
	test_crc();
	printf("test_buf: ok\n");
	return 0;
}
