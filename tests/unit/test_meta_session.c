/* Unit tests of client sessions: heartbeats, expiry releasing opens, orphans freed when
 * their last open goes away, and the pending queue that results. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "check.h"
#include "meta/ns.h"
#include "meta/pending.h"
#include "meta/session.h"
#include "test_meta_util.h"

static size_t npending(struct meta_db *db)
{
	struct meta_pending p[16];
	size_t n;
	CHECK_OK(meta_pending_list(db, C.txn, 0, p, 16, &n));
	return n;
}

int main(void)
{
	char dir[256];
	struct weft_cred root = tmeta_cred(0, 0);
	struct weft_attr f, g, a;
	struct meta_session s;
	uint64_t s1, s2, s3;
	unsigned n;
	char longname[WEFT_NODE_MAX + 2];
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';

	struct meta_db *db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, 2, 2);
	TX_BEGIN(db);
	C.cred = &root;
	CHECK_OK(OP(meta_session_create(db, C.txn, "mnt-a", 1000, &s1)));
	CHECK_OK(OP(meta_session_create(db, C.txn, "mnt-b", 1000, &s2)));
	CHECK_OK(OP(meta_session_create(db, C.txn, "mnt-c", 1000, &s3)));
	CHECK(s1 != s2 && s2 != s3);
	CHECK_INT(OP(meta_session_create(db, C.txn, "", 1000, &s3)), ==, -EINVAL);
	CHECK_INT(OP(meta_session_create(db, C.txn, longname, 1000, &s3)), ==, -EINVAL);
	CHECK_OK(meta_session_get(db, C.txn, s1, &s));
	CHECK_STR(s.node, "mnt-a");

	CHECK_OK(OP(meta_ns_create(&C, ROOT, S("f"), 0644, 0, &f, NULL, NULL)));
	CHECK_OK(OP(meta_ns_create(&C, ROOT, S("g"), 0644, 0, &g, NULL, NULL)));
	/* s1 opens f twice, s2 opens f and g; s3 opens g */
	CHECK_OK(OP(meta_session_open(db, C.txn, s1, f.ino)));
	CHECK_OK(OP(meta_session_open(db, C.txn, s1, f.ino)));
	CHECK_OK(OP(meta_session_open(db, C.txn, s2, f.ino)));
	CHECK_OK(OP(meta_session_open(db, C.txn, s2, g.ino)));
	CHECK_OK(OP(meta_session_open(db, C.txn, s3, g.ino)));
	CHECK_INT(OP(meta_session_open(db, C.txn, 9999, g.ino)), ==, -ENOENT);
	CHECK_INT(OP(meta_session_open(db, C.txn, s1, 9999)), ==, -ESTALE);
	CHECK_INT(meta_session_ino_open(db, C.txn, f.ino), ==, 1);

	/* both unlinked while open: orphans */
	size_t p0 = npending(db);
	CHECK_OK(OP(meta_ns_unlink(&C, ROOT, S("f"))));
	CHECK_OK(OP(meta_ns_unlink(&C, ROOT, S("g"))));
	CHECK_INT(npending(db), ==, p0);

	/* s2 and s3 heartbeat; s1 goes silent */
	CHECK_OK(OP(meta_session_heartbeat(db, C.txn, s2, 5000)));
	CHECK_OK(OP(meta_session_heartbeat(db, C.txn, s3, 5000)));
	CHECK_OK(OP(meta_session_expire(db, C.txn, 6000, 2000, &n)));
	CHECK_INT(n, ==, 1);
	CHECK_INT(meta_session_get(db, C.txn, s1, &s), ==, -ENOENT);
	CHECK_INT(OP(meta_session_heartbeat(db, C.txn, s1, 6000)), ==, -ENOENT);
	/* f is still open by s2 */
	CHECK_OK(meta_ns_getattr(&C, REF(f), &a));
	CHECK_INT(a.nlink, ==, 0);
	CHECK_INT(npending(db), ==, p0);

	/* s2 closes cleanly: f's last open goes, g is still open by s3 */
	CHECK_OK(OP(meta_session_close(db, C.txn, s2)));
	CHECK_INT(meta_ns_getattr(&C, REF(f), &a), ==, -ESTALE);
	CHECK_OK(meta_ns_getattr(&C, REF(g), &a));
	CHECK_INT(npending(db), ==, p0 + 1);
	CHECK_INT(OP(meta_session_close(db, C.txn, s2)), ==, -ENOENT);

	/* s3 expires: g freed */
	CHECK_OK(OP(meta_session_expire(db, C.txn, 100000, 2000, &n)));
	CHECK_INT(n, ==, 1);
	CHECK_INT(meta_ns_getattr(&C, REF(g), &a), ==, -ESTALE);
	CHECK_INT(npending(db), ==, p0 + 2);
	CHECK_INT(meta_session_ino_open(db, C.txn, g.ino), ==, 0);

	/* an open, linked file is not freed when its session goes */
	uint64_t s4;
	struct weft_attr h;
	CHECK_OK(OP(meta_session_create(db, C.txn, "mnt-d", 1000, &s4)));
	CHECK_OK(OP(meta_ns_create(&C, ROOT, S("h"), 0644, 0, &h, NULL, NULL)));
	CHECK_OK(OP(meta_session_open(db, C.txn, s4, h.ino)));
	CHECK_OK(OP(meta_session_close(db, C.txn, s4)));
	CHECK_OK(meta_ns_getattr(&C, REF(h), &a));
	CHECK_INT(a.nlink, ==, 1);
	/* many stale sessions expire in one call */
	for (int i = 0; i < 150; i++) {
		uint64_t id;
		CHECK_OK(OP(meta_session_create(db, C.txn, "bulk", 1, &id)));
	}
	CHECK_OK(OP(meta_session_expire(db, C.txn, 1000000, 10, &n)));
	CHECK_INT(n, ==, 150);

	/* open state is memory: a "restart" (a new table) loads only the orphan records */
	uint64_t s5, s6;
	struct weft_attr k, m;
	unsigned ns_, no_, nor_;
	CHECK_OK(OP(meta_session_create(db, C.txn, "mnt-e", meta_now_ns(), &s5)));
	CHECK_OK(OP(meta_ns_create(&C, ROOT, S("k"), 0644, 0, &k, NULL, NULL)));
	CHECK_OK(OP(meta_session_open(db, C.txn, s5, k.ino)));
	CHECK_OK(OP(meta_ns_unlink(&C, ROOT, S("k"))));
	size_t p1 = npending(db);
	TX_END();
	meta_live_free(db->live);
	db->live = meta_live_new();
	TX_BEGIN(db);
	CHECK_OK(OP(meta_session_load(db, C.txn, meta_now_ns() + 3600 * 1000000000LL)));
	meta_session_counts(db, &ns_, &no_, &nor_);
	CHECK_INT(ns_, ==, 0);
	CHECK_INT(nor_, ==, 1);
	CHECK_INT(OP(meta_session_heartbeat(db, C.txn, s5, 1)), ==, -ENOENT);
	/* in the grace period nothing is freed; a client's new session reclaims its open */
	CHECK_OK(OP(meta_session_reap(db, C.txn, &n)));
	CHECK_INT(n, ==, 0);
	CHECK_OK(meta_ns_getattr(&C, REF(k), &a));
	CHECK_OK(OP(meta_session_create(db, C.txn, "mnt-e", meta_now_ns(), &s6)));
	CHECK_INT(OP(meta_session_reopen(db, C.txn, s5, k.ino, 1)), ==, -ENOENT);
	CHECK_INT(OP(meta_session_reopen(db, C.txn, s6, k.ino, 0)), ==, -EINVAL);
	CHECK_OK(OP(meta_session_reopen(db, C.txn, s6, k.ino, 2)));
	CHECK_OK(OP(meta_session_release(db, C.txn, s6, k.ino)));
	CHECK_OK(meta_ns_getattr(&C, REF(k), &a));
	TX_END();
	/* another restart, no grace, nobody reclaims: the orphan is freed */
	meta_live_free(db->live);
	db->live = meta_live_new();
	TX_BEGIN(db);
	CHECK_OK(OP(meta_session_load(db, C.txn, 0)));
	CHECK_OK(OP(meta_session_reap(db, C.txn, &n)));
	CHECK_INT(n, ==, 1);
	CHECK_INT(meta_ns_getattr(&C, REF(k), &a), ==, -ESTALE);
	CHECK_INT(npending(db), ==, p1 + 1);
	meta_session_counts(db, &ns_, &no_, &nor_);
	CHECK_INT(nor_, ==, 0);
	CHECK_OK(OP(meta_session_create(db, C.txn, "mnt-f", meta_now_ns(), &s6)));
	CHECK_OK(OP(meta_ns_create(&C, ROOT, S("m"), 0644, 0, &m, NULL, NULL)));
	TX_END();

	/* an open whose snapshot predates an unlink that freed the inode: ESTALE */
	MDB_txn *old;
	CHECK_OK(meta_db_read_begin(db, &old));
	TX_BEGIN(db);
	CHECK_OK(OP(meta_ns_unlink(&C, ROOT, S("m"))));
	TX_END();
	CHECK_INT(meta_session_open(db, old, s6, m.ino), ==, -ESTALE);
	mdb_txn_abort(old);
	CHECK_OK(meta_db_read_begin(db, &old));
	CHECK_INT(meta_session_open(db, old, s6, m.ino), ==, -ESTALE); /* gone in it too */
	mdb_txn_abort(old);
	TX_BEGIN(db);
	TX_END();
	tmeta_close(db, dir);
	printf("meta_session: ok\n");
	return 0;
}
