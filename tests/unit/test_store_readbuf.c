/* Reply buffers of store reads: page-aligned, the common size reused (last given back,
 * first taken again), at most STORE_READBUF_KEEP kept, larger ones never kept. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store/readbuf.h"

int main(void)
{
	void *a = store_readbuf_get(4096);
	CHECK_INT((uintptr_t)a % 4096, ==, 0);
	memset(a, 1, STORE_READBUF_SIZE); /* a small read gets the whole common size */
	store_readbuf_put(a, 4096);
	void *b = store_readbuf_get(STORE_READBUF_SIZE);
	CHECK_INT(b == a, ==, 1); /* the one given back */
	store_readbuf_release_small(b);
	/* larger than the common size: its own allocation, not kept */
	size_t big = STORE_READBUF_SIZE + 1;
	void *c = store_readbuf_get(big);
	CHECK_INT((uintptr_t)c % 4096, ==, 0);
	memset(c, 2, big);
	store_readbuf_put(c, big);
	void *d = store_readbuf_get(100);
	CHECK_INT(d == a, ==, 1);
	/* more given back than kept: the rest are freed (ASan/LSan would see a leak) */
	void *v[STORE_READBUF_KEEP + 4];
	v[0] = d;
	for (int i = 1; i < STORE_READBUF_KEEP + 4; i++)
		v[i] = store_readbuf_get(STORE_READBUF_SIZE);
	for (int i = 0; i < STORE_READBUF_KEEP + 4; i++)
		store_readbuf_release_small(v[i]);
	store_readbuf_put(NULL, 0);
	printf("ok\n");
	return 0;
}
