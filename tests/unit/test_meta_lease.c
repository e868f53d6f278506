/* Unit tests of meta's lease table (src/meta/lease.h): grants and their expiry, pins by
 * opens, busy inodes, renewals of live leases only, holders other than the requester, forgetting and eviction. */
#include <stdint.h>

#include "check.h"
#include "meta/lease.h"

int main(void)
{
	struct meta_leases *l;
	CHECK_OK(meta_leases_new(5000, &l));
	uint64_t who[8];
	/* a session that does not answer recalls gets no lease */
	CHECK_INT(meta_leases_grant(l, 1, 10, false, 1000), ==, 0);
	for (uint64_t s = 1; s <= 5; s++)
		meta_leases_recaller(l, s);
	/* a grant lasts lease_ms; session 0 and inode 0 get none */
	CHECK_INT(meta_leases_grant(l, 1, 10, false, 1000), ==, 5000);
	CHECK_INT(meta_leases_grant(l, 0, 10, false, 1000), ==, 0);
	CHECK_INT(meta_leases_grant(l, 2, 10, false, 1000), ==, 5000);
	CHECK_INT(meta_leases_holders(l, 10, 1, 2000, who, 8), ==, 1);
	CHECK_INT(who[0], ==, 2);
	CHECK_INT(meta_leases_holders(l, 10, 0, 2000, who, 8), ==, 2);
	/* expired: no holder left, and the sweep frees them */
	CHECK_INT(meta_leases_holders(l, 10, 0, 6001, who, 8), ==, 0);
	meta_leases_sweep(l, 6001);
	CHECK_INT(meta_leases_count(l), ==, 0);
	/* a pin (an open) outlives the expiry until unpinned */
	CHECK_INT(meta_leases_grant(l, 3, 11, true, 1000), ==, 5000);
	CHECK_INT(meta_leases_holders(l, 11, 0, 100000, who, 8), ==, 1);
	meta_leases_unpin(l, 3, 11);
	CHECK_INT(meta_leases_holders(l, 11, 0, 100000, who, 8), ==, 0);
	/* busy: no new lease (an open is still pinned, without caching) */
	meta_leases_busy(l, 12, +1);
	CHECK_INT(meta_leases_grant(l, 4, 12, false, 1000), ==, 0);
	CHECK_INT(meta_leases_holders(l, 12, 0, 1000, who, 8), ==, 0);
	CHECK_INT(meta_leases_grant(l, 4, 12, true, 1000), ==, 0);
	CHECK_INT(meta_leases_holders(l, 12, 0, 1000, who, 8), ==, 1);
	meta_leases_busy(l, 12, -1);
	CHECK_INT(meta_leases_grant(l, 4, 12, false, 1000), ==, 5000);
	/* renew extends only a live lease, never a lapsed or a busy one, nor a bare pin */
	CHECK_INT(meta_leases_renew(l, 4, 13, 1000), ==, 0);     /* none held */
	CHECK_INT(meta_leases_grant(l, 4, 13, false, 1000), ==, 5000);
	CHECK_INT(meta_leases_renew(l, 4, 13, 5999), ==, 5000);  /* live: to 10999 */
	CHECK_INT(meta_leases_renew(l, 3, 13, 5999), ==, 0);     /* another session's */
	CHECK_INT(meta_leases_holders(l, 13, 0, 10998, who, 8), ==, 1);
	CHECK_INT(meta_leases_renew(l, 4, 13, 10999), ==, 0);    /* lapsed */
	CHECK_INT(meta_leases_grant(l, 4, 13, false, 20000), ==, 5000);
	meta_leases_busy(l, 13, +1);
	CHECK_INT(meta_leases_renew(l, 4, 13, 21000), ==, 0);    /* busy */
	meta_leases_busy(l, 13, -1);
	CHECK_INT(meta_leases_renew(l, 4, 13, 21000), ==, 5000);
	CHECK_INT(meta_leases_grant(l, 4, 14, true, 1000), ==, 5000);
	CHECK_INT(meta_leases_renew(l, 4, 14, 7000), ==, 0);     /* pinned, expired */
	meta_leases_unpin(l, 4, 14);
	/* many inodes in one bucket chain: holders stay per inode */
	for (uint64_t i = 100; i < 20000; i++)
		meta_leases_grant(l, 5, i, false, 1000);
	CHECK_INT(meta_leases_holders(l, 12, 4, 1000, who, 8), ==, 0);
	CHECK_INT(meta_leases_holders(l, 150, 0, 1000, who, 8), ==, 1);
	/* forget drops everything of a session; evicted is remembered */
	meta_leases_forget(l, 5, true);
	CHECK_INT(meta_leases_holders(l, 150, 0, 1000, who, 8), ==, 0);
	CHECK(meta_leases_evicted(l, 5));
	CHECK(!meta_leases_evicted(l, 4));
	meta_leases_forget(l, 4, false);
	CHECK_INT(meta_leases_count(l), ==, 0);
	meta_leases_free(l);
	return 0;
}
