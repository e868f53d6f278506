/* Unit tests of the striping math: every byte of a file maps to exactly one (stripe,
 * object offset), objects are dense per stripe, and object lengths match file sizes. */
#include "check.h"
#include "client/stripe.h"

static void test_map(void)
{
	struct weft_layout l = {.stripe_unit = 65536, .stripe_count = 3, .first_chain = 2,
				.chain_count = 4, .replicas = 1};
	struct stripe_piece p;
	CHECK_INT(stripe_map(&l, 0, 10, &p), ==, 10);
	CHECK_INT(p.stripe, ==, 0);
	CHECK_INT(p.obj_off, ==, 0);
	CHECK_INT(p.chain, ==, 2);
	/* the end of block 0 */
	CHECK_INT(stripe_map(&l, 65530, 100, &p), ==, 6);
	/* block 4 is stripe 1, second row */
	CHECK_INT(stripe_map(&l, 4 * 65536 + 7, 1 << 20, &p), ==, 65536 - 7);
	CHECK_INT(p.stripe, ==, 1);
	CHECK_INT(p.obj_off, ==, 65536 + 7);
	CHECK_INT(p.chain, ==, 3);
	CHECK_INT(p.block, ==, 4);
	/* chain wraps around the table */
	stripe_map(&l, 2 * 65536, 1, &p);
	CHECK_INT(p.chain, ==, 0);
	/* huge offsets do not overflow */
	stripe_map(&l, (1ull << 62) + 5, 1, &p);
	CHECK(p.obj_off < (1ull << 62));
}

/* Walk a file byte range by pieces and check the object lengths implied by a size. */
static void test_object_len(void)
{
	for (uint32_t sc = 1; sc <= 5; sc++) {
		struct weft_layout l = {.stripe_unit = 65536, .stripe_count = sc, .chain_count = 8,
					.replicas = 1};
		uint64_t sizes[] = {0, 1, 65535, 65536, 65537, 3 * 65536 + 9, 17 * 65536, 1000003};
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			uint64_t size = sizes[k], max_end[5] = {0};
			for (uint64_t off = 0; off < size;) {
				struct stripe_piece p;
				uint32_t n = stripe_map(&l, off, size - off, &p);
				if (p.obj_off + n > max_end[p.stripe])
					max_end[p.stripe] = p.obj_off + n;
				off += n;
			}
			for (uint32_t s = 0; s < sc; s++)
				CHECK_INT(stripe_object_len(&l, s, size), ==, max_end[s]);
		}
	}
}

/* Generation 0 names objects by stripe; a migrated layout's are stride apart, and the
 * chain of a stripe does not depend on the generation. */
static void test_object_numbers(void)
{
	struct weft_layout l = {.stripe_unit = 65536, .stripe_count = 3, .first_chain = 2,
				.chain_count = 4, .replicas = 2};
	CHECK_INT(stripe_object(&l, 2), ==, 2);
	l.gen = 3;
	CHECK_INT(stripe_object(&l, 2), ==, 2 + 3 * WEFT_LAYOUT_GEN_STRIDE);
	CHECK_INT(stripe_chain(&l, 2), ==, 0);
	l.gen = WEFT_LAYOUT_GEN_MAX;
	CHECK_INT(stripe_object(&l, WEFT_LAYOUT_GEN_STRIDE - 1), ==, UINT32_MAX);
}

int main(void)
{
	test_map();
	test_object_len();
	test_object_numbers();
	printf("test_stripe: ok\n");
	return 0;
}
