/* Unit tests of the complete-directory table (client/cdir.h): names added and removed,
 * the answers for complete and unknown directories, pending mutations, and the bounds
 * (the oldest directory goes; a directory past its name bound is no longer complete),
 * and what a name is known to be. */
#include <stdio.h>

#include "check.h"
#include "client/cdir.h"

#define L(s) s, strlen(s)

static void test_names(void)
{
	struct cdir *t = cdir_new(4, 100);
	CHECK(t);
	CHECK_INT(cdir_lookup(t, 7, L("a")), ==, CDIR_UNKNOWN);
	cdir_name_add(t, 7, L("a")); /* not complete: nothing kept */
	CHECK_INT(cdir_add_dir(t, 7, 1000), ==, 0);
	CHECK_INT(cdir_lookup(t, 7, L("a")), ==, CDIR_ABSENT);
	CHECK_INT(cdir_until(t, 7), ==, 1000);
	cdir_set_until(t, 7, 2000);
	CHECK_INT(cdir_until(t, 7), ==, 2000);
	CHECK_INT(cdir_until(t, 8), ==, 0);
	cdir_name_add(t, 7, L("a"));
	cdir_name_add(t, 7, L("a"));
	CHECK_INT(cdir_lookup(t, 7, L("a")), ==, CDIR_PRESENT);
	CHECK_INT(cdir_lookup(t, 7, L("ab")), ==, CDIR_ABSENT);
	CHECK_INT(cdir_lookup(t, 7, "ab", 1), ==, CDIR_PRESENT); /* by length, not NUL */
	CHECK_INT(cdir_lookup(t, 8, L("a")), ==, CDIR_UNKNOWN);
	cdir_name_del(t, 7, L("a"));
	CHECK_INT(cdir_lookup(t, 7, L("a")), ==, CDIR_ABSENT);
	cdir_name_del(t, 7, L("a"));
	/* many names: the buckets grow and every name is still found */
	char n[32];
	for (int i = 0; i < 100; i++) {
		snprintf(n, sizeof(n), "f%d", i);
		cdir_name_add(t, 7, L(n));
	}
	for (int i = 0; i < 100; i++) {
		snprintf(n, sizeof(n), "f%d", i);
		CHECK_INT(cdir_lookup(t, 7, L(n)), ==, CDIR_PRESENT);
	}
	CHECK_INT(cdir_lookup(t, 7, L("f100")), ==, CDIR_ABSENT);
	for (int i = 0; i < 100; i += 2) {
		snprintf(n, sizeof(n), "f%d", i);
		cdir_name_del(t, 7, L(n));
	}
	for (int i = 0; i < 100; i++) {
		snprintf(n, sizeof(n), "f%d", i);
		CHECK_INT(cdir_lookup(t, 7, L(n)), ==, i % 2 ? CDIR_PRESENT : CDIR_ABSENT);
	}
	/* past max_names: no longer complete */
	for (int i = 0; i < 60; i++) {
		snprintf(n, sizeof(n), "g%d", i);
		cdir_name_add(t, 7, L(n));
	}
	CHECK(!cdir_has(t, 7));
	CHECK_INT(cdir_lookup(t, 7, L("zz")), ==, CDIR_UNKNOWN);
	/* added again (a new mkdir of that inode cannot happen, but the table allows it):
	 * empty */
	CHECK_INT(cdir_add_dir(t, 7, 1000), ==, 0);
	CHECK_INT(cdir_lookup(t, 7, L("f1")), ==, CDIR_ABSENT);
	cdir_free(t);
	cdir_free(NULL);
}

static void test_pending_and_bounds(void)
{
	struct cdir *t = cdir_new(3, 10);
	for (uint64_t d = 1; d <= 3; d++)
		CHECK_INT(cdir_add_dir(t, d, 1000), ==, 0);
	cdir_pending(t, 2, +1);
	CHECK_INT(cdir_lookup(t, 2, L("x")), ==, CDIR_UNKNOWN);
	cdir_pending(t, 2, +1);
	cdir_pending(t, 2, -1);
	CHECK_INT(cdir_lookup(t, 2, L("x")), ==, CDIR_UNKNOWN);
	cdir_pending(t, 2, -1);
	CHECK_INT(cdir_lookup(t, 2, L("x")), ==, CDIR_ABSENT);
	cdir_pending(t, 9, +1); /* not complete: ignored */
	/* a fourth directory: the oldest (1) goes */
	CHECK_INT(cdir_add_dir(t, 4, 1000), ==, 0);
	CHECK_INT(cdir_count(t), ==, 3);
	CHECK(!cdir_has(t, 1) && cdir_has(t, 2) && cdir_has(t, 3) && cdir_has(t, 4));
	cdir_drop(t, 3);
	CHECK(!cdir_has(t, 3));
	CHECK_INT(cdir_add_dir(t, 5, 1000), ==, 0);
	CHECK(cdir_has(t, 2) && cdir_has(t, 4) && cdir_has(t, 5));
	CHECK_INT(cdir_add_dir(t, 6, 1000), ==, 0);
	CHECK(!cdir_has(t, 2));
	cdir_clear(t);
	CHECK_INT(cdir_count(t), ==, 0);
	CHECK_INT(cdir_lookup(t, 5, L("x")), ==, CDIR_UNKNOWN);
	/* many directories through a small table */
	for (uint64_t d = 100; d < 10000; d++) {
		CHECK_INT(cdir_add_dir(t, d, 1000), ==, 0);
		cdir_name_add(t, d, L("n"));
	}
	CHECK_INT(cdir_count(t), ==, 3);
	CHECK_INT(cdir_lookup(t, 9999, L("n")), ==, CDIR_PRESENT);
	CHECK_INT(cdir_lookup(t, 9996, L("n")), ==, CDIR_UNKNOWN);
	cdir_free(t);
}

/* what a name is: known not to be a directory, or not known */
static void test_kinds(void)
{
	struct cdir *t = cdir_new(4, 100);
	CHECK(t);
	CHECK_INT(cdir_add_dir(t, 7, 1000), ==, 0);
	cdir_name_add(t, 7, L("d"));
	cdir_name_add_kind(t, 7, L("f"), true);
	CHECK(!cdir_name_file(t, 7, L("d")));
	CHECK(cdir_name_file(t, 7, L("f")));
	CHECK(!cdir_name_file(t, 7, L("g"))); /* absent */
	CHECK(!cdir_name_file(t, 8, L("f"))); /* not complete */
	cdir_name_add_kind(t, 7, L("f"), false); /* there already: takes the new kind */
	CHECK(!cdir_name_file(t, 7, L("f")));
	CHECK_INT(cdir_lookup(t, 7, L("f")), ==, CDIR_PRESENT);
	cdir_name_add_kind(t, 7, L("f"), true);
	cdir_pending(t, 7, +1); /* a mutation in flight: nothing is certain */
	CHECK(!cdir_name_file(t, 7, L("f")));
	cdir_pending(t, 7, -1);
	CHECK(cdir_name_file(t, 7, L("f")));
	cdir_name_del(t, 7, L("f"));
	CHECK(!cdir_name_file(t, 7, L("f")));
	cdir_free(t);
}

int main(void)
{
	test_names();
	test_kinds();
	test_pending_and_bounds();
	printf("cdir: ok\n");
	return 0;
}
