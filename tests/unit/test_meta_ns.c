/* Unit tests of the namespace operations against a real LMDB env in a temp dir. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <linux/xattr.h>

#include "check.h"
#include "meta/dentry.h"
#include "meta/inode.h"
#include "meta/layout.h"
#include "meta/ns.h"
#include "meta/pending.h"
#include "meta/session.h"
#include "meta/super.h"
#include "meta/xattr.h"
#include "test_meta_util.h"

static struct meta_db *db;
static struct weft_cred root_cred;

static struct weft_attr mkfile(struct meta_ref dir, const char *name, uint32_t mode)
{
	struct weft_attr a;
	CHECK_OK(OP(meta_ns_create(&C, dir, S(name), mode, META_CREATE_EXCL, &a, NULL, NULL)));
	return a;
}

static struct weft_attr mkdir_(struct meta_ref dir, const char *name, uint32_t mode)
{
	struct weft_attr a;
	CHECK_OK(OP(meta_ns_mkdir(&C, dir, S(name), mode, &a)));
	return a;
}

static struct weft_attr getattr(struct meta_ref ref)
{
	struct weft_attr a;
	CHECK_OK(meta_ns_getattr(&C, ref, &a));
	return a;
}

static size_t npending(void)
{
	struct meta_pending p[64];
	size_t n;
	CHECK_OK(meta_pending_list(db, C.txn, 0, p, 64, &n));
	return n;
}

static void test_codecs(void)
{
	struct meta_inode in, out;
	uint8_t buf[META_INODE_MAXLEN];
	memset(&in, 0, sizeof(in));
	in.attr = (struct weft_attr){ .ino = 42, .gen = 7, .mode = S_IFLNK | 0777, .nlink = 1,
				      .uid = 1000, .gid = 100, .size = 3, .atime_ns = -5,
				      .mtime_ns = 123456789, .ctime_ns = 1 };
	in.layout = (struct weft_layout){ 1 << 20, 4, 2, 8, 2, 0 };
	in.parent = 9;
	in.next_cookie = 77;
	in.flags = META_INODE_ORPHAN;
	memcpy(in.target, "a/b", 4);
	in.target_len = 3;
	size_t n = meta_inode_encode(&in, buf);
	CHECK_INT(n, ==, META_INODE_FIXED_LEN + 3);
	CHECK_OK(meta_inode_decode(42, buf, n, &out));
	CHECK_INT(out.attr.gen, ==, 7);
	CHECK_INT(out.attr.atime_ns, ==, -5);
	CHECK_INT(out.layout.first_chain, ==, 2);
	CHECK_INT(out.layout.replicas, ==, 2);
	CHECK_INT(out.next_cookie, ==, 77);
	CHECK_INT(out.flags, ==, META_INODE_ORPHAN);
	CHECK_STR(out.target, "a/b");
	CHECK_INT(meta_inode_decode(42, buf, n - 1, &out), ==, -EIO);
	buf[0] = 99;
	CHECK_INT(meta_inode_decode(42, buf, n, &out), ==, -EIO);

	/* a regular file's written-stripes mask: kept after the target, trimmed by size */
	memset(&in, 0, sizeof(in));
	in.attr = (struct weft_attr){ .ino = 43, .gen = 1, .mode = S_IFREG | 0644, .nlink = 1 };
	in.layout = (struct weft_layout){ 1 << 20, 20, 0, 20, 2, 0 };
	n = meta_inode_encode(&in, buf);
	CHECK_INT(n, ==, META_INODE_FIXED_LEN); /* empty mask: the old record */
	uint8_t mask[3] = {0x05, 0x00, 0x08}; /* stripes 0, 2, 19 */
	meta_inode_mark_written(&in, mask, 3);
	CHECK_INT(in.written_len, ==, 3);
	n = meta_inode_encode(&in, buf);
	CHECK_INT(n, ==, META_INODE_FIXED_LEN + 2 + 3);
	CHECK_OK(meta_inode_decode(43, buf, n, &out));
	CHECK_INT(out.written_len, ==, 3);
	CHECK_INT(out.written[0], ==, 0x05);
	CHECK_INT(out.written[2], ==, 0x08);
	CHECK_INT(meta_inode_decode(43, buf, n - 1, &out), ==, -EIO);
	CHECK_OK(meta_inode_decode(43, buf, n, &out));
	meta_inode_trim_written(&out, (2u << 20) + 1); /* stripes 0..2 keep bytes */
	CHECK_INT(out.written_len, ==, 1);
	CHECK_INT(out.written[0], ==, 0x05);
	meta_inode_trim_written(&out, 1u << 20); /* only stripe 0 */
	CHECK_INT(out.written[0], ==, 0x01);
	meta_inode_trim_written(&out, 0);
	CHECK_INT(out.written_len, ==, 0);
	/* a migrated file: layout generation after an empty mask */
	out.layout.gen = 7;
	n = meta_inode_encode(&out, buf);
	CHECK_INT(n, ==, META_INODE_FIXED_LEN + 2 + 4);
	CHECK_OK(meta_inode_decode(43, buf, n, &in));
	CHECK_INT(in.layout.gen, ==, 7);
	CHECK_INT(in.written_len, ==, 0);
	CHECK_INT(meta_inode_decode(43, buf, n - 1, &in), ==, -EIO);

	struct meta_super sb = { .format = META_FORMAT_VERSION, .next_ino = 5, .rr = { 1, 2, 3 } }, sb2;
	uint8_t sbuf[META_SUPER_LEN];
	meta_super_encode(&sb, sbuf);
	CHECK_OK(meta_super_decode(sbuf, sizeof(sbuf), &sb2));
	CHECK_INT(sb2.next_ino, ==, 5);
	CHECK_INT(sb2.rr[2], ==, 3);
	CHECK_INT(meta_super_decode(sbuf, sizeof(sbuf) - 1, &sb2), ==, -EIO);
}

static void test_root_and_stale(void)
{
	TX_BEGIN(db);
	struct weft_attr a = getattr(ROOT);
	CHECK_INT(a.mode, ==, S_IFDIR | 0755);
	CHECK_INT(a.nlink, ==, 2);
	CHECK_INT(a.ino, ==, 1);
	struct meta_super sb;
	CHECK_OK(meta_super_get(db, C.txn, &sb));
	CHECK_INT(sb.epoch, ==, 2); /* mkfs 1, open bumped it */
	struct weft_attr f = mkfile(ROOT, "gen", 0644);
	CHECK_INT(f.gen, ==, 2);
	CHECK_INT(meta_ns_getattr(&C, (struct meta_ref){ f.ino, f.gen + 1 }, &a), ==, -ESTALE);
	CHECK_INT(meta_ns_getattr(&C, (struct meta_ref){ 999999, 0 }, &a), ==, -ESTALE);
	CHECK_OK(meta_ns_getattr(&C, REF(f), &a));
	CHECK_OK(OP(meta_ns_unlink(&C, ROOT, S("gen"))));
	CHECK_INT(meta_ns_getattr(&C, REF(f), &a), ==, -ESTALE);
	TX_END();
}

static void test_names(void)
{
	struct weft_attr a;
	char big[300];
	memset(big, 'x', sizeof(big));
	TX_BEGIN(db);
	CHECK_INT(OP(meta_ns_create(&C, ROOT, "", 0, 0644, 0, &a, NULL, NULL)), ==, -ENOENT);
	CHECK_INT(OP(meta_ns_create(&C, ROOT, S("a/b"), 0644, 0, &a, NULL, NULL)), ==, -EINVAL);
	CHECK_INT(OP(meta_ns_create(&C, ROOT, "a\0b", 3, 0644, 0, &a, NULL, NULL)), ==, -EINVAL);
	CHECK_INT(OP(meta_ns_create(&C, ROOT, big, 256, 0644, 0, &a, NULL, NULL)), ==, -ENAMETOOLONG);
	CHECK_OK(OP(meta_ns_create(&C, ROOT, big, 255, 0644, 0, &a, NULL, NULL)));
	CHECK_OK(meta_ns_lookup(&C, ROOT, big, 255, &a));
	CHECK_INT(meta_ns_lookup(&C, ROOT, big, 256, &a), ==, -ENAMETOOLONG);
	CHECK_OK(OP(meta_ns_unlink(&C, ROOT, big, 255)));
	/* '.' and '..', as Linux */
	CHECK_INT(OP(meta_ns_create(&C, ROOT, S("."), 0644, 0, &a, NULL, NULL)), ==, -EEXIST);
	CHECK_INT(OP(meta_ns_mkdir(&C, ROOT, S(".."), 0755, &a)), ==, -EEXIST);
	CHECK_INT(OP(meta_ns_mknod(&C, ROOT, S("."), S_IFIFO | 0644, 0, &a)), ==, -EEXIST);
	CHECK_INT(OP(meta_ns_symlink(&C, ROOT, S(".."), S("x"), &a)), ==, -EEXIST);
	CHECK_INT(OP(meta_ns_unlink(&C, ROOT, S("."))), ==, -EISDIR);
	CHECK_INT(OP(meta_ns_unlink(&C, ROOT, S(".."))), ==, -EISDIR);
	CHECK_INT(OP(meta_ns_rmdir(&C, ROOT, S("."))), ==, -EINVAL);
	CHECK_INT(OP(meta_ns_rmdir(&C, ROOT, S(".."))), ==, -ENOTEMPTY);
	struct weft_attr d = mkdir_(ROOT, "names", 0755);
	CHECK_INT(OP(meta_ns_rename(&C, ROOT, S("."), REF(d), S("x"), 0)), ==, -EBUSY);
	CHECK_INT(OP(meta_ns_rename(&C, ROOT, S("names"), REF(d), S(".."), 0)), ==, -EBUSY);
	CHECK_INT(OP(meta_ns_rename(&C, ROOT, S("names"), REF(d), S(".."), RENAME_NOREPLACE)), ==, -EEXIST);
	struct weft_attr lk = mkfile(ROOT, "lk", 0644);
	CHECK_INT(OP(meta_ns_link(&C, REF(lk), ROOT, S("."), &a)), ==, -EEXIST);
	CHECK_OK(meta_ns_lookup(&C, REF(d), S("."), &a));
	CHECK_INT(a.ino, ==, d.ino);
	CHECK_OK(meta_ns_lookup(&C, REF(d), S(".."), &a));
	CHECK_INT(a.ino, ==, WEFT_ROOT_INO);
	CHECK_OK(meta_ns_lookup(&C, ROOT, S(".."), &a));
	CHECK_INT(a.ino, ==, WEFT_ROOT_INO);
	CHECK_INT(meta_ns_lookup(&C, ROOT, S("nope"), &a), ==, -ENOENT);
	TX_END();
}

static void test_create_mknod(void)
{
	struct weft_attr a, b;
	struct weft_layout l;
	bool created;
	TX_BEGIN(db);
	CHECK_OK(OP(meta_ns_create(&C, ROOT, S("f"), 0640, META_CREATE_EXCL, &a, &l, &created)));
	CHECK(created);
	CHECK_INT(a.mode, ==, S_IFREG | 0640);
	CHECK_INT(a.nlink, ==, 1);
	CHECK_INT(a.size, ==, 0);
	CHECK_INT(l.chain_count, ==, 4);
	CHECK_INT(l.stripe_count, ==, 4);
	CHECK_INT(l.replicas, ==, 1);
	CHECK_INT(l.stripe_unit, ==, WEFT_STRIPE_UNIT_DEFAULT);
	CHECK_INT(a.blksize, ==, WEFT_STRIPE_UNIT_DEFAULT);
	CHECK_INT(OP(meta_ns_create(&C, ROOT, S("f"), 0640, META_CREATE_EXCL, &b, NULL, NULL)), ==, -EEXIST);
	CHECK_OK(OP(meta_ns_create(&C, ROOT, S("f"), 0600, 0, &b, NULL, &created)));
	CHECK(!created);
	CHECK_INT(b.ino, ==, a.ino);
	CHECK_INT(b.mode, ==, S_IFREG | 0640);
	mkdir_(ROOT, "cd", 0755);
	CHECK_INT(OP(meta_ns_create(&C, ROOT, S("cd"), 0600, 0, &b, NULL, &created)), ==, -EISDIR);
	CHECK_INT(OP(meta_ns_create(&C, REF(a), S("x"), 0600, 0, &b, NULL, NULL)), ==, -ENOTDIR);
	CHECK_INT(meta_ns_lookup(&C, REF(a), S("x"), &b), ==, -ENOTDIR);
	/* first chains spread round-robin */
	struct weft_layout l2, l3;
	CHECK_OK(OP(meta_ns_create(&C, ROOT, S("f2"), 0600, 0, NULL, &l2, NULL)));
	CHECK_OK(OP(meta_ns_create(&C, ROOT, S("f3"), 0600, 0, NULL, &l3, NULL)));
	CHECK_INT(l2.first_chain, ==, (l.first_chain + 1) % 4);
	CHECK_INT(l3.first_chain, ==, (l.first_chain + 2) % 4);
	/* umask */
	struct weft_cred cr = root_cred;
	cr.umask = 022;
	C.cred = &cr;
	CHECK_INT(mkfile(ROOT, "um", 0666).mode, ==, S_IFREG | 0644);
	C.cred = &root_cred;

	/* mknod */
	CHECK_OK(OP(meta_ns_mknod(&C, ROOT, S("fifo"), S_IFIFO | 0644, 0, &a)));
	CHECK_INT(a.mode, ==, S_IFIFO | 0644);
	CHECK_OK(OP(meta_ns_mknod(&C, ROOT, S("sock"), S_IFSOCK | 0644, 0, &a)));
	CHECK_OK(OP(meta_ns_mknod(&C, ROOT, S("reg"), 0644, 0, &a)));
	CHECK_INT(a.mode, ==, S_IFREG | 0644);
	CHECK_OK(OP(meta_ns_mknod(&C, ROOT, S("null"), S_IFCHR | 0666, 0x103, &a)));
	CHECK_INT(a.rdev, ==, 0x103);
	CHECK_INT(OP(meta_ns_mknod(&C, ROOT, S("dirnod"), S_IFDIR | 0755, 0, &a)), ==, -EPERM);
	CHECK_INT(OP(meta_ns_mknod(&C, ROOT, S("bad"), 0170000, 0, &a)), ==, -EINVAL);
	CHECK_INT(OP(meta_ns_mknod(&C, ROOT, S("fifo"), S_IFIFO | 0644, 0, &a)), ==, -EEXIST);
	struct weft_cred user = tmeta_cred(1000, 1000);
	struct weft_attr d = mkdir_(ROOT, "userdir", 0777);
	C.cred = &user;
	CHECK_INT(OP(meta_ns_mknod(&C, REF(d), S("blk"), S_IFBLK | 0600, 0x801, &a)), ==, -EPERM);
	CHECK_INT(OP(meta_ns_mknod(&C, REF(d), S("chr"), S_IFCHR | 0600, 0x801, &a)), ==, -EPERM);
	CHECK_OK(OP(meta_ns_mknod(&C, REF(d), S("fifo"), S_IFIFO | 0600, 0, &a)));
	CHECK_INT(a.uid, ==, 1000);
	/* no write permission in root (0755, owned by 0) */
	CHECK_INT(OP(meta_ns_create(&C, ROOT, S("nope"), 0600, 0, &a, NULL, NULL)), ==, -EACCES);
	CHECK_INT(OP(meta_ns_mkdir(&C, ROOT, S("nope"), 0700, &a)), ==, -EACCES);
	/* but an existing name is EEXIST before EACCES, as Linux */
	CHECK_INT(OP(meta_ns_mkdir(&C, ROOT, S("f"), 0700, &a)), ==, -EEXIST);
	C.cred = &root_cred;
	TX_END();
}

static void test_mkdir_rmdir(void)
{
	struct weft_attr a;
	TX_BEGIN(db);
	uint32_t n0 = getattr(ROOT).nlink;
	struct weft_attr d = mkdir_(ROOT, "d", 0750);
	CHECK_INT(d.mode, ==, S_IFDIR | 0750);
	CHECK_INT(d.nlink, ==, 2);
	CHECK_INT(getattr(ROOT).nlink, ==, n0 + 1);
	struct weft_attr e = mkdir_(REF(d), "e", 0755);
	CHECK_INT(getattr(REF(d)).nlink, ==, 3);
	mkfile(REF(e), "x", 0644);
	CHECK_INT(OP(meta_ns_rmdir(&C, REF(d), S("e"))), ==, -ENOTEMPTY);
	CHECK_INT(OP(meta_ns_rmdir(&C, REF(e), S("x"))), ==, -ENOTDIR);
	CHECK_INT(OP(meta_ns_unlink(&C, REF(d), S("e"))), ==, -EISDIR);
	CHECK_INT(OP(meta_ns_rmdir(&C, REF(d), S("zz"))), ==, -ENOENT);
	CHECK_OK(OP(meta_ns_unlink(&C, REF(e), S("x"))));
	CHECK_OK(OP(meta_ns_rmdir(&C, REF(d), S("e"))));
	CHECK_INT(getattr(REF(d)).nlink, ==, 2);
	CHECK_INT(meta_ns_getattr(&C, REF(e), &a), ==, -ESTALE);
	CHECK_OK(OP(meta_ns_rmdir(&C, ROOT, S("d"))));
	CHECK_INT(getattr(ROOT).nlink, ==, n0);
	/* subdirectory limit */
	struct weft_attr full = mkdir_(ROOT, "full", 0755);
	struct meta_inode in;
	CHECK_OK(meta_inode_get(db, C.txn, full.ino, &in));
	in.attr.nlink = META_LINK_MAX;
	CHECK_OK(meta_inode_put(db, C.txn, &in));
	CHECK_INT(OP(meta_ns_mkdir(&C, REF(full), S("one"), 0755, &a)), ==, -EMLINK);
	CHECK_OK(OP(meta_ns_create(&C, REF(full), S("file"), 0644, 0, &a, NULL, NULL)));
	TX_END();
}

static void test_symlink(void)
{
	struct weft_attr a;
	char buf[16], big[WEFT_PATH_MAX + 1];
	size_t len;
	memset(big, 'p', sizeof(big));
	TX_BEGIN(db);
	CHECK_OK(OP(meta_ns_symlink(&C, ROOT, S("ln"), S("../some/where"), &a)));
	CHECK_INT(a.mode, ==, S_IFLNK | 0777);
	CHECK_INT(a.size, ==, 13);
	CHECK_OK(meta_ns_readlink(&C, REF(a), buf, sizeof(buf), &len));
	CHECK_INT(len, ==, 13);
	CHECK(memcmp(buf, "../some/where", 13) == 0);
	CHECK_OK(meta_ns_readlink(&C, REF(a), buf, 4, &len));
	CHECK_INT(len, ==, 13);
	CHECK(memcmp(buf, "../s", 4) == 0);
	CHECK_INT(meta_ns_readlink(&C, ROOT, buf, sizeof(buf), &len), ==, -EINVAL);
	CHECK_INT(OP(meta_ns_symlink(&C, ROOT, S("l2"), "", 0, &a)), ==, -ENOENT);
	CHECK_INT(OP(meta_ns_symlink(&C, ROOT, S("l2"), big, WEFT_PATH_MAX, &a)), ==, -ENAMETOOLONG);
	CHECK_OK(OP(meta_ns_symlink(&C, ROOT, S("l2"), big, WEFT_PATH_MAX - 1, &a)));
	CHECK_INT(OP(meta_ns_symlink(&C, ROOT, S("l2"), S("x"), &a)), ==, -EEXIST);
	TX_END();
}

static void test_link_unlink_orphan(void)
{
	struct weft_attr a;
	TX_BEGIN(db);
	struct weft_attr f = mkfile(ROOT, "lf", 0644);
	struct weft_attr d = mkdir_(ROOT, "ld", 0755);
	CHECK_OK(OP(meta_ns_link(&C, REF(f), REF(d), S("lf2"), &a)));
	CHECK_INT(a.nlink, ==, 2);
	CHECK_INT(OP(meta_ns_link(&C, REF(f), REF(d), S("lf2"), &a)), ==, -EEXIST);
	CHECK_INT(OP(meta_ns_link(&C, REF(d), ROOT, S("dl"), &a)), ==, -EPERM);
	CHECK_INT(OP(meta_ns_link(&C, REF(f), REF(f), S("x"), &a)), ==, -ENOTDIR);
	/* link limit */
	struct meta_inode in;
	CHECK_OK(meta_inode_get(db, C.txn, f.ino, &in));
	in.attr.nlink = META_LINK_MAX;
	CHECK_OK(meta_inode_put(db, C.txn, &in));
	CHECK_INT(OP(meta_ns_link(&C, REF(f), ROOT, S("lf3"), &a)), ==, -EMLINK);
	in.attr.nlink = 2;
	CHECK_OK(meta_inode_put(db, C.txn, &in));

	size_t p0 = npending();
	CHECK_OK(OP(meta_ns_unlink(&C, ROOT, S("lf"))));
	CHECK_INT(getattr(REF(f)).nlink, ==, 1);
	CHECK_INT(npending(), ==, p0);
	CHECK_INT(OP(meta_ns_unlink(&C, ROOT, S("lf"))), ==, -ENOENT);
	CHECK_OK(OP(meta_ns_unlink(&C, REF(d), S("lf2"))));
	CHECK_INT(meta_ns_getattr(&C, REF(f), &a), ==, -ESTALE);
	CHECK_INT(npending(), ==, p0 + 1);
	struct meta_pending p[64];
	size_t n;
	CHECK_OK(meta_pending_list(db, C.txn, 0, p, 64, &n));
	CHECK_INT(p[n - 1].kind, ==, META_PENDING_DELETE);
	CHECK_INT(p[n - 1].ino, ==, f.ino);
	CHECK_INT(p[n - 1].layout.chain_count, ==, 4);
	CHECK_OK(meta_pending_done(db, C.txn, p[n - 1].seq));
	CHECK_INT(npending(), ==, p0);

	/* unlink while open: orphan until the last release */
	uint64_t s1, s2;
	CHECK_OK(OP(meta_session_create(db, C.txn, "client1", 1, &s1)));
	CHECK_OK(OP(meta_session_create(db, C.txn, "client2", 1, &s2)));
	struct weft_attr g = mkfile(ROOT, "open", 0644);
	CHECK_OK(OP(meta_session_open(db, C.txn, s1, g.ino)));
	CHECK_OK(OP(meta_session_open(db, C.txn, s2, g.ino)));
	CHECK_OK(OP(meta_ns_unlink(&C, ROOT, S("open"))));
	CHECK_INT(meta_ns_lookup(&C, ROOT, S("open"), &a), ==, -ENOENT);
	a = getattr(REF(g));
	CHECK_INT(a.nlink, ==, 0);
	CHECK_INT(npending(), ==, p0);
	CHECK_INT(OP(meta_ns_link(&C, REF(g), ROOT, S("back"), &a)), ==, -ENOENT);
	CHECK_OK(OP(meta_session_release(db, C.txn, s1, g.ino)));
	CHECK_OK(meta_ns_getattr(&C, REF(g), &a));
	CHECK_INT(OP(meta_session_release(db, C.txn, s1, g.ino)), ==, -ENOENT);
	CHECK_OK(OP(meta_session_release(db, C.txn, s2, g.ino)));
	CHECK_INT(meta_ns_getattr(&C, REF(g), &a), ==, -ESTALE);
	CHECK_INT(npending(), ==, p0 + 1);
	TX_END();
}

static void test_setattr(void)
{
	struct weft_attr a;
	struct weft_cred u = tmeta_cred(1000, 1000), v = tmeta_cred(1001, 1001);
	u.ngroups = 1;
	u.groups[0] = 50;
	TX_BEGIN(db);
	struct weft_attr d = mkdir_(ROOT, "sa", 0777);
	C.cred = &u;
	struct weft_attr f = mkfile(REF(d), "f", 0644);
	CHECK_INT(f.uid, ==, 1000);
	struct meta_setattr sa = { .valid = META_SET_MODE, .mode = 0600 };
	C.now_ns = 5000;
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.mode, ==, S_IFREG | 0600);
	CHECK_INT(a.ctime_ns, ==, 5000);
	C.now_ns = 0;
	/* chown: only root; owner to own uid is a no-op allowed */
	sa = (struct meta_setattr){ .valid = META_SET_UID, .uid = 1001 };
	CHECK_INT(OP(meta_ns_setattr(&C, REF(f), &sa, &a)), ==, -EPERM);
	sa.uid = 1000;
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	/* chgrp to a group the owner is in, not to another */
	sa = (struct meta_setattr){ .valid = META_SET_GID, .gid = 50 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.gid, ==, 50);
	sa.gid = 77;
	CHECK_INT(OP(meta_ns_setattr(&C, REF(f), &sa, &a)), ==, -EPERM);
	/* someone else: no chmod, no explicit times, no truncate without write */
	C.cred = &v;
	sa = (struct meta_setattr){ .valid = META_SET_MODE, .mode = 0777 };
	CHECK_INT(OP(meta_ns_setattr(&C, REF(f), &sa, &a)), ==, -EPERM);
	sa = (struct meta_setattr){ .valid = META_SET_MTIME, .mtime_ns = 1 };
	CHECK_INT(OP(meta_ns_setattr(&C, REF(f), &sa, &a)), ==, -EPERM);
	sa = (struct meta_setattr){ .valid = META_SET_MTIME_NOW | META_SET_ATIME_NOW };
	CHECK_INT(OP(meta_ns_setattr(&C, REF(f), &sa, &a)), ==, -EACCES);
	sa = (struct meta_setattr){ .valid = META_SET_SIZE, .size = 10 };
	CHECK_INT(OP(meta_ns_setattr(&C, REF(f), &sa, &a)), ==, -EACCES);
	/* ...but through an open handle the size may change */
	sa.valid |= META_SET_HANDLE;
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.size, ==, 10);
	/* group-writable: utimes(NULL) by a group member with write permission is fine */
	C.cred = &u;
	sa = (struct meta_setattr){ .valid = META_SET_MODE, .mode = 0664 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	struct weft_cred w = tmeta_cred(1002, 50);
	C.cred = &w;
	sa = (struct meta_setattr){ .valid = META_SET_MTIME_NOW | META_SET_ATIME_NOW };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	sa = (struct meta_setattr){ .valid = META_SET_ATIME, .atime_ns = 1 };
	CHECK_INT(OP(meta_ns_setattr(&C, REF(f), &sa, &a)), ==, -EPERM);
	/* owner sets explicit times */
	C.cred = &u;
	sa = (struct meta_setattr){ .valid = META_SET_ATIME | META_SET_MTIME, .atime_ns = 11,
				    .mtime_ns = 22 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.atime_ns, ==, 11);
	CHECK_INT(a.mtime_ns, ==, 22);
	/* setgid dropped when the owner is not in the file's group */
	sa = (struct meta_setattr){ .valid = META_SET_GID, .gid = 1000 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	struct weft_cred u2 = tmeta_cred(1000, 1000); /* same user without group 50 */
	C.cred = &root_cred;
	sa = (struct meta_setattr){ .valid = META_SET_GID, .gid = 50 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	C.cred = &u2;
	sa = (struct meta_setattr){ .valid = META_SET_MODE, .mode = 02755 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.mode, ==, S_IFREG | 0755);
	C.cred = &u;
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.mode, ==, S_IFREG | 02755);
	/* chown by root clears setuid/setgid(with group x) of a non-directory */
	sa = (struct meta_setattr){ .valid = META_SET_MODE, .mode = 06755 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.mode, ==, S_IFREG | 06755);
	C.cred = &root_cred;
	sa = (struct meta_setattr){ .valid = META_SET_UID, .uid = 1001 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.uid, ==, 1001);
	CHECK_INT(a.mode, ==, S_IFREG | 0755);
	/* a non-root truncate clears setuid too */
	sa = (struct meta_setattr){ .valid = META_SET_MODE, .mode = 04755 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	C.cred = &v;
	sa = (struct meta_setattr){ .valid = META_SET_SIZE, .size = 100 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.mode, ==, S_IFREG | 0755);
	/* kill_priv (a write): needs write permission or a write handle; clears setuid,
	 * and setgid only with group x, for a non-root caller; root keeps them */
	C.cred = &root_cred;
	sa = (struct meta_setattr){ .valid = META_SET_MODE, .mode = 06755 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	C.cred = &w;
	sa = (struct meta_setattr){ .valid = META_SET_KILL_PRIV };
	CHECK_INT(OP(meta_ns_setattr(&C, REF(f), &sa, &a)), ==, -EACCES);
	CHECK_INT(a.mode, ==, S_IFREG | 06755);
	sa.valid |= META_SET_HANDLE;
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.mode, ==, S_IFREG | 0755);
	C.cred = &root_cred;
	sa = (struct meta_setattr){ .valid = META_SET_MODE, .mode = 06745 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	sa = (struct meta_setattr){ .valid = META_SET_KILL_PRIV };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.mode, ==, S_IFREG | 06745);
	C.cred = &w;
	sa = (struct meta_setattr){ .valid = META_SET_KILL_PRIV | META_SET_HANDLE };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(a.mode, ==, S_IFREG | 02745); /* no group x: setgid stays */
	C.cred = &root_cred;
	sa = (struct meta_setattr){ .valid = META_SET_MODE, .mode = 0755 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(OP(meta_ns_setattr(&C, REF(d), &(struct meta_setattr){ .valid = META_SET_KILL_PRIV }, &a)), ==, -EINVAL);
	C.cred = &v;
	/* truncating down records the size only: the client trims the objects first */
	size_t p0 = npending();
	C.now_ns = 777;
	sa = (struct meta_setattr){ .valid = META_SET_SIZE, .size = 3 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	C.now_ns = 0;
	CHECK_INT(a.size, ==, 3);
	CHECK_INT(a.mtime_ns, ==, 777);
	CHECK_INT(a.blocks, <=, 8); /* truncating frees what lay past the end */
	CHECK_INT(npending(), ==, p0);
	/* nor does growing */
	sa.size = 1 << 20;
	CHECK_OK(OP(meta_ns_setattr(&C, REF(f), &sa, &a)));
	CHECK_INT(npending(), ==, p0);
	/* size of a directory or fifo */
	C.cred = &root_cred;
	CHECK_INT(OP(meta_ns_setattr(&C, REF(d), &sa, &a)), ==, -EISDIR);
	CHECK_OK(OP(meta_ns_mknod(&C, REF(d), S("fifo"), S_IFIFO | 0666, 0, &a)));
	CHECK_INT(OP(meta_ns_setattr(&C, REF(a), &sa, &a)), ==, -EINVAL);
	sa.size = (uint64_t)INT64_MAX + 1;
	CHECK_INT(OP(meta_ns_setattr(&C, REF(f), &sa, &a)), ==, -EFBIG);
	sa.valid = 0x80000000u;
	CHECK_INT(OP(meta_ns_setattr(&C, REF(f), &sa, &a)), ==, -EINVAL);
	/* extend */
	C.cred = &v;
	CHECK_OK(OP(meta_ns_extend(&C, REF(f), 5000000, 99, NULL, &a)));
	CHECK_INT(a.size, ==, 5000000);
	CHECK_INT(a.mtime_ns, ==, 99);
	CHECK_OK(OP(meta_ns_extend(&C, REF(f), 10, 100, NULL, &a)));
	CHECK_INT(a.size, ==, 5000000);
	CHECK_INT(a.mtime_ns, ==, 100);
	/* st_blocks is what the writer measured on the stores, kept as reported */
	uint64_t blk = 24;
	CHECK_OK(OP(meta_ns_extend(&C, REF(f), 10, 100, &blk, &a)));
	CHECK_INT(a.blocks, ==, 24);
	CHECK_OK(OP(meta_ns_getattr(&C, REF(f), &a)));
	CHECK_INT(a.blocks, ==, 24);
	CHECK_INT(OP(meta_ns_extend(&C, REF(d), 10, 100, NULL, &a)), ==, -EINVAL);
	C.cred = &root_cred;
	TX_END();
}

static void test_rename(void)
{
	struct weft_attr a;
	TX_BEGIN(db);
	struct weft_attr d = mkdir_(ROOT, "rn", 0755);
	struct weft_attr x = mkfile(REF(d), "x", 0644);
	struct weft_attr y = mkfile(REF(d), "y", 0644);
	struct weft_attr s1 = mkdir_(REF(d), "s1", 0755);
	struct weft_attr s2 = mkdir_(REF(d), "s2", 0755);
	struct weft_attr s3 = mkdir_(REF(s2), "s3", 0755);
	(void)s3;
	/* plain rename */
	CHECK_OK(OP(meta_ns_rename(&C, REF(d), S("x"), REF(d), S("x2"), 0)));
	CHECK_INT(meta_ns_lookup(&C, REF(d), S("x"), &a), ==, -ENOENT);
	CHECK_OK(meta_ns_lookup(&C, REF(d), S("x2"), &a));
	CHECK_INT(a.ino, ==, x.ino);
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("x"), REF(d), S("q"), 0)), ==, -ENOENT);
	/* kinds */
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("x2"), REF(d), S("s1"), 0)), ==, -EISDIR);
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("s1"), REF(d), S("x2"), 0)), ==, -ENOTDIR);
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("s1"), REF(d), S("s2"), 0)), ==, -ENOTEMPTY);
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("x2"), REF(d), S("y"), RENAME_NOREPLACE)), ==, -EEXIST);
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("x2"), REF(d), S("zz"), RENAME_EXCHANGE)), ==, -ENOENT);
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("x2"), REF(d), S("y"), RENAME_EXCHANGE | RENAME_NOREPLACE)), ==, -EINVAL);
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("x2"), REF(d), S("y"), 8)), ==, -EINVAL);
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("x2"), REF(x), S("y"), 0)), ==, -ENOTDIR);
	/* into its own subtree */
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("s2"), REF(s2), S("in"), 0)), ==, -EINVAL);
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("s2"), REF(s3), S("in"), 0)), ==, -EINVAL);
	CHECK_INT(OP(meta_ns_rename(&C, ROOT, S("rn"), REF(s3), S("in"), 0)), ==, -EINVAL);
	/* over an ancestor of the source */
	CHECK_INT(OP(meta_ns_rename(&C, REF(s2), S("s3"), ROOT, S("rn"), 0)), ==, -ENOTEMPTY);
	/* overwrite a file: its last link goes, objects queued */
	size_t p0 = npending();
	CHECK_OK(OP(meta_ns_rename(&C, REF(d), S("x2"), REF(d), S("y"), 0)));
	CHECK_INT(meta_ns_getattr(&C, REF(y), &a), ==, -ESTALE);
	CHECK_INT(npending(), ==, p0 + 1);
	CHECK_OK(meta_ns_lookup(&C, REF(d), S("y"), &a));
	CHECK_INT(a.ino, ==, x.ino);
	/* hard links to the same inode: nothing happens */
	CHECK_OK(OP(meta_ns_link(&C, REF(x), REF(d), S("y2"), &a)));
	CHECK_OK(OP(meta_ns_rename(&C, REF(d), S("y"), REF(d), S("y2"), 0)));
	CHECK_OK(meta_ns_lookup(&C, REF(d), S("y"), &a));
	CHECK_OK(meta_ns_lookup(&C, REF(d), S("y2"), &a));
	CHECK_INT(a.nlink, ==, 2);
	/* dir over empty dir */
	uint32_t dl = getattr(REF(d)).nlink; /* 2 + s1 + s2 */
	CHECK_INT(dl, ==, 4);
	CHECK_OK(OP(meta_ns_rename(&C, REF(d), S("s2"), REF(d), S("s1"), 0)));
	CHECK_INT(meta_ns_getattr(&C, REF(s1), &a), ==, -ESTALE);
	CHECK_INT(getattr(REF(d)).nlink, ==, 3);
	/* cross-parent directory move: link counts and '..' */
	uint32_t rl = getattr(ROOT).nlink;
	CHECK_OK(OP(meta_ns_rename(&C, REF(d), S("s1"), ROOT, S("moved"), 0)));
	CHECK_INT(getattr(REF(d)).nlink, ==, 2);
	CHECK_INT(getattr(ROOT).nlink, ==, rl + 1);
	CHECK_OK(meta_ns_lookup(&C, REF(s2), S(".."), &a));
	CHECK_INT(a.ino, ==, WEFT_ROOT_INO);
	/* exchange a file and a directory across parents */
	CHECK_OK(OP(meta_ns_rename(&C, ROOT, S("moved"), REF(d), S("y"), RENAME_EXCHANGE)));
	CHECK_OK(meta_ns_lookup(&C, REF(d), S("y"), &a));
	CHECK_INT(a.ino, ==, s2.ino);
	CHECK_OK(meta_ns_lookup(&C, ROOT, S("moved"), &a));
	CHECK_INT(a.ino, ==, x.ino);
	CHECK_INT(getattr(REF(d)).nlink, ==, 3);
	CHECK_INT(getattr(ROOT).nlink, ==, rl);
	CHECK_OK(meta_ns_lookup(&C, REF(s2), S(".."), &a));
	CHECK_INT(a.ino, ==, d.ino);
	/* exchange of a directory with its own ancestor's entry */
	CHECK_INT(OP(meta_ns_rename(&C, REF(s2), S("s3"), ROOT, S("rn"), RENAME_EXCHANGE)), ==, -EINVAL);
	/* sticky directory: only owners may rename away */
	struct weft_cred u = tmeta_cred(1000, 1000), v = tmeta_cred(1001, 1001);
	struct weft_attr t = mkdir_(ROOT, "tmp", 01777);
	C.cred = &u;
	mkfile(REF(t), "mine", 0644);
	C.cred = &v;
	CHECK_INT(OP(meta_ns_rename(&C, REF(t), S("mine"), REF(t), S("theirs"), 0)), ==, -EPERM);
	mkfile(REF(t), "vfile", 0644);
	CHECK_INT(OP(meta_ns_rename(&C, REF(t), S("vfile"), REF(t), S("mine"), 0)), ==, -EPERM);
	CHECK_OK(OP(meta_ns_rename(&C, REF(t), S("vfile"), REF(t), S("v2"), 0)));
	/* a directory moved to another parent needs write permission on itself */
	C.cred = &u;
	struct weft_attr ud = mkdir_(REF(t), "udir", 0555);
	CHECK_INT(OP(meta_ns_rename(&C, REF(t), S("udir"), REF(t), S("udir2"), 0)), ==, 0);
	struct weft_attr ud2 = mkdir_(REF(t), "other", 0755);
	CHECK_INT(OP(meta_ns_rename(&C, REF(t), S("udir2"), REF(ud2), S("udir"), 0)), ==, -EACCES);
	(void)ud;
	/* no write permission on the source dir */
	CHECK_INT(OP(meta_ns_rename(&C, REF(d), S("y"), REF(t), S("zz"), 0)), ==, -EACCES);
	C.cred = &root_cred;
	TX_END();
}

struct listing {
	char names[64][WEFT_NAME_MAX + 1];
	uint64_t cookies[64];
	struct weft_attr attrs[64];
	bool plus;
	int n, max;
};

static int collect(void *arg, const struct meta_ns_dirent *e)
{
	struct listing *l = arg;
	if (l->n >= l->max)
		return 1;
	memcpy(l->names[l->n], e->name, e->len);
	l->names[l->n][e->len] = '\0';
	l->cookies[l->n] = e->cookie;
	CHECK(l->plus == (e->attr != NULL));
	if (e->attr) {
		l->attrs[l->n] = *e->attr;
		CHECK_INT(e->attr->ino, ==, e->ino);
	}
	l->n++;
	return 0;
}

static bool listed(const struct listing *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (strcmp(l->names[i], name) == 0)
			return true;
	return false;
}

static void test_readdir(void)
{
	struct listing l;
	TX_BEGIN(db);
	struct weft_attr d = mkdir_(ROOT, "rd", 0755);
	char name[8];
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		mkfile(REF(d), name, 0644);
	}
	memset(&l, 0, sizeof(l));
	l.max = 64;
	l.plus = true;
	CHECK_OK(meta_ns_readdir(&C, REF(d), 0, true, collect, &l));
	CHECK_INT(l.n, ==, 12);
	CHECK_STR(l.names[0], ".");
	CHECK_STR(l.names[1], "..");
	CHECK_INT(l.attrs[0].ino, ==, d.ino);
	CHECK_INT(l.attrs[1].ino, ==, WEFT_ROOT_INO);
	CHECK_STR(l.names[2], "e0");
	CHECK_STR(l.names[11], "e9");
	CHECK_INT(l.attrs[11].mode, ==, S_IFREG | 0644);

	/* page through 4 at a time while the directory changes under the cursor */
	memset(&l, 0, sizeof(l));
	l.max = 4;
	CHECK_OK(meta_ns_readdir(&C, REF(d), 0, false, collect, &l));
	CHECK_INT(l.n, ==, 4); /* . .. e0 e1 */
	uint64_t cur = l.cookies[3];
	CHECK_OK(OP(meta_ns_unlink(&C, REF(d), S("e2"))));  /* ahead of the cursor: gone */
	CHECK_OK(OP(meta_ns_unlink(&C, REF(d), S("e1"))));  /* the cursor's own entry */
	CHECK_OK(OP(meta_ns_unlink(&C, REF(d), S("e0"))));  /* behind the cursor */
	mkfile(REF(d), "new1", 0644);                       /* added: shows up later */
	struct listing rest;
	memset(&rest, 0, sizeof(rest));
	rest.max = 64;
	for (;;) {
		int before = rest.n;
		rest.max = before + 3;
		CHECK_OK(meta_ns_readdir(&C, REF(d), cur, false, collect, &rest));
		if (rest.n == before)
			break;
		cur = rest.cookies[rest.n - 1];
		if (rest.n == 3)
			mkfile(REF(d), "new2", 0644);
	}
	CHECK(!listed(&rest, "e0") && !listed(&rest, "e1") && !listed(&rest, "e2"));
	CHECK(!listed(&rest, ".") && !listed(&rest, ".."));
	for (int i = 3; i < 10; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		CHECK(listed(&rest, name));
	}
	CHECK(listed(&rest, "new1") && listed(&rest, "new2"));
	CHECK_INT(rest.n, ==, 9);
	for (int i = 1; i < rest.n; i++)
		CHECK(rest.cookies[i] > rest.cookies[i - 1]);
	/* a cookie past the end lists nothing; a file is not a directory */
	memset(&l, 0, sizeof(l));
	l.max = 64;
	CHECK_OK(meta_ns_readdir(&C, REF(d), UINT64_MAX, false, collect, &l));
	CHECK_INT(l.n, ==, 0);
	struct weft_attr f;
	CHECK_OK(meta_ns_lookup(&C, REF(d), S("e5"), &f));
	CHECK_INT(meta_ns_readdir(&C, REF(f), 0, false, collect, &l), ==, -ENOTDIR);
	/* read permission needed */
	struct weft_cred u = tmeta_cred(1000, 1000);
	struct weft_attr priv = mkdir_(ROOT, "priv", 0711);
	C.cred = &u;
	CHECK_INT(meta_ns_readdir(&C, REF(priv), 0, false, collect, &l), ==, -EACCES);
	C.cred = &root_cred;
	TX_END();
}

static void test_xattr(void)
{
	char buf[64];
	size_t len;
	TX_BEGIN(db);
	struct weft_attr f = mkfile(ROOT, "xf", 0644);
	CHECK_OK(OP(meta_xattr_set(&C, REF(f), "user.a", "hello", 5, 0)));
	CHECK_OK(OP(meta_xattr_set(&C, REF(f), "user.b", "", 0, XATTR_CREATE)));
	CHECK_INT(OP(meta_xattr_set(&C, REF(f), "user.a", "x", 1, XATTR_CREATE)), ==, -EEXIST);
	CHECK_INT(OP(meta_xattr_set(&C, REF(f), "user.c", "x", 1, XATTR_REPLACE)), ==, -ENODATA);
	CHECK_OK(OP(meta_xattr_set(&C, REF(f), "user.a", "world!", 6, XATTR_REPLACE)));
	CHECK_INT(OP(meta_xattr_set(&C, REF(f), "user.a", "x", 1, 4)), ==, -EINVAL);
	CHECK_OK(meta_xattr_get(&C, REF(f), "user.a", NULL, 0, &len));
	CHECK_INT(len, ==, 6);
	CHECK_INT(meta_xattr_get(&C, REF(f), "user.a", buf, 3, &len), ==, -ERANGE);
	CHECK_OK(meta_xattr_get(&C, REF(f), "user.a", buf, sizeof(buf), &len));
	CHECK(len == 6 && memcmp(buf, "world!", 6) == 0);
	CHECK_OK(meta_xattr_get(&C, REF(f), "user.b", buf, sizeof(buf), &len));
	CHECK_INT(len, ==, 0);
	CHECK_INT(meta_xattr_get(&C, REF(f), "user.zz", buf, sizeof(buf), &len), ==, -ENODATA);
	CHECK_INT(meta_xattr_get(&C, REF(f), "", buf, sizeof(buf), &len), ==, -ERANGE);
	CHECK_INT(meta_xattr_get(&C, REF(f), "bogus.a", buf, sizeof(buf), &len), ==, -EOPNOTSUPP);
	static char bigval[WEFT_XATTR_SIZE_MAX + 1];
	CHECK_INT(OP(meta_xattr_set(&C, REF(f), "user.big", bigval, sizeof(bigval), 0)), ==, -E2BIG);
	CHECK_OK(OP(meta_xattr_set(&C, REF(f), "trusted.t", "1", 1, 0)));
	/* list */
	CHECK_OK(meta_xattr_list(&C, REF(f), NULL, 0, &len));
	CHECK_INT(len, ==, 7 + 7 + 10);
	CHECK_INT(meta_xattr_list(&C, REF(f), buf, 10, &len), ==, -ERANGE);
	CHECK_OK(meta_xattr_list(&C, REF(f), buf, sizeof(buf), &len));
	CHECK(memcmp(buf, "trusted.t\0user.a\0user.b\0", 24) == 0);
	/* other users */
	struct weft_cred u = tmeta_cred(1000, 1000);
	C.cred = &u;
	CHECK_OK(meta_xattr_list(&C, REF(f), buf, sizeof(buf), &len));
	CHECK_INT(len, ==, 14); /* trusted.* hidden */
	CHECK_OK(meta_xattr_get(&C, REF(f), "user.a", buf, sizeof(buf), &len));
	CHECK_INT(meta_xattr_get(&C, REF(f), "trusted.t", buf, sizeof(buf), &len), ==, -ENODATA);
	CHECK_INT(OP(meta_xattr_set(&C, REF(f), "user.a", "x", 1, 0)), ==, -EACCES);
	CHECK_INT(OP(meta_xattr_set(&C, REF(f), "trusted.a", "x", 1, 0)), ==, -EPERM);
	CHECK_INT(OP(meta_xattr_remove(&C, REF(f), "user.a")), ==, -EACCES);
	C.cred = &root_cred;
	/* user.* only on files and directories */
	struct weft_attr ln;
	CHECK_OK(OP(meta_ns_symlink(&C, ROOT, S("xl"), S("xf"), &ln)));
	CHECK_INT(OP(meta_xattr_set(&C, REF(ln), "user.a", "x", 1, 0)), ==, -EPERM);
	/* remove */
	CHECK_OK(OP(meta_xattr_remove(&C, REF(f), "user.a")));
	CHECK_INT(OP(meta_xattr_remove(&C, REF(f), "user.a")), ==, -ENODATA);
	/* freed with the inode */
	CHECK_OK(OP(meta_ns_unlink(&C, ROOT, S("xf"))));
	MDB_cursor *cur;
	CHECK_OK(mdb_cursor_open(C.txn, db->xattrs, &cur));
	uint8_t kb[8];
	meta_be64(kb, f.ino);
	MDB_val k = { 8, kb }, v;
	int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	CHECK(rc == MDB_NOTFOUND || meta_get_be64(k.mv_data) != f.ino);
	mdb_cursor_close(cur);
	TX_END();
}

static void test_access_statfs_stripe(void)
{
	struct meta_statfs st;
	struct weft_layout l;
	TX_BEGIN(db);
	struct weft_attr f = mkfile(ROOT, "acc", 0640);
	struct weft_cred u = tmeta_cred(1000, 1000), g = tmeta_cred(1001, 0);
	CHECK_OK(meta_ns_access(&C, REF(f), R_OK | W_OK));
	CHECK_INT(meta_ns_access(&C, REF(f), X_OK), ==, -EACCES); /* root needs some x bit */
	C.cred = &u;
	CHECK_INT(meta_ns_access(&C, REF(f), R_OK), ==, -EACCES);
	CHECK_OK(meta_ns_access(&C, REF(f), F_OK));
	C.cred = &g;
	CHECK_OK(meta_ns_access(&C, REF(f), R_OK));
	CHECK_INT(meta_ns_access(&C, REF(f), W_OK), ==, -EACCES);
	C.cred = &root_cred;

	CHECK_OK(meta_ns_statfs(&C, 1ULL << 40, 1ULL << 39, &st));
	CHECK_INT(st.blocks, ==, (1ULL << 40) / st.bsize);
	CHECK_INT(st.bfree, ==, (1ULL << 39) / st.bsize);
	CHECK(st.files > st.ffree && st.files - st.ffree > 10); /* total, free: some in use */
	CHECK_INT(st.namemax, ==, 255);

	/* setstripe on a directory changes what new files get */
	struct weft_attr d = mkdir_(ROOT, "striped", 0755);
	struct weft_layout req = { .stripe_unit = 64 << 10, .stripe_count = 2, .replicas = 2 };
	CHECK_OK(OP(meta_layout_setstripe(&C, REF(d), &req, &l)));
	CHECK_OK(meta_layout_getstripe(&C, REF(d), &l));
	CHECK_INT(l.stripe_unit, ==, 64 << 10);
	struct weft_layout fl;
	CHECK_OK(OP(meta_ns_create(&C, REF(d), S("sf"), 0644, 0, NULL, &fl, NULL)));
	CHECK_INT(fl.stripe_unit, ==, 64 << 10);
	CHECK_INT(fl.stripe_count, ==, 2);
	CHECK_INT(fl.replicas, ==, 2);
	CHECK_INT(fl.chain_count, ==, 4);
	/* subdirectories inherit the default */
	struct weft_attr sub = mkdir_(REF(d), "sub", 0755);
	CHECK_OK(meta_layout_getstripe(&C, REF(sub), &l));
	CHECK_INT(l.replicas, ==, 2);
	/* a stripe unit that is not a power of two in range (replicas > nodes: test_meta_chains) */
	req.stripe_unit = 1000;
	CHECK_INT(OP(meta_layout_setstripe(&C, REF(d), &req, &l)), ==, -EINVAL);
	/* files: only while empty, only by the owner */
	struct weft_attr sf;
	CHECK_OK(meta_ns_lookup(&C, REF(d), S("sf"), &sf));
	req = (struct weft_layout){ .stripe_unit = 4 << 20, .stripe_count = 1, .replicas = 1 };
	CHECK_OK(OP(meta_layout_setstripe(&C, REF(sf), &req, &l)));
	CHECK_INT(l.stripe_count, ==, 1);
	CHECK_INT(l.chain_count, ==, 4);
	CHECK_OK(meta_ns_getlayout(&C, REF(sf), &l));
	CHECK_INT(l.stripe_unit, ==, 4 << 20);
	CHECK_OK(OP(meta_ns_extend(&C, REF(sf), 1, 0, NULL, NULL)));
	CHECK_INT(OP(meta_layout_setstripe(&C, REF(sf), &req, &l)), ==, -EBUSY);
	C.cred = &u;
	CHECK_INT(OP(meta_layout_setstripe(&C, REF(d), &req, &l)), ==, -EPERM);
	C.cred = &root_cred;
	TX_END();
}

/* A migrate's DROP row keeps the replaced layout's generation; older rows read as 0. */
static void test_pending_drop(void)
{
	TX_BEGIN(db);
	size_t p0 = npending();
	struct weft_layout l = {1 << 20, 2, 1, 4, 2, 5};
	CHECK_OK(meta_pending_add(db, C.txn, META_PENDING_DROP, 77, 0, &l));
	l.gen = 0;
	CHECK_OK(meta_pending_add(db, C.txn, META_PENDING_DELETE, 78, 0, &l));
	struct meta_pending p[64];
	size_t n;
	CHECK_OK(meta_pending_list(db, C.txn, 0, p, 64, &n));
	CHECK_INT(n, ==, p0 + 2);
	CHECK_INT(p[n - 2].kind, ==, META_PENDING_DROP);
	CHECK_INT(p[n - 2].ino, ==, 77);
	CHECK_INT(p[n - 2].layout.gen, ==, 5);
	CHECK_INT(p[n - 2].layout.stripe_count, ==, 2);
	CHECK_INT(p[n - 1].layout.gen, ==, 0);
	CHECK_OK(meta_pending_done(db, C.txn, p[n - 2].seq));
	CHECK_OK(meta_pending_done(db, C.txn, p[n - 1].seq));
	TX_END();
}

int main(void)
{
	char dir[256];
	root_cred = tmeta_cred(0, 0);
	C.cred = &root_cred;
	test_codecs();
	db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, 4, 4);
	test_root_and_stale();
	test_names();
	test_create_mknod();
	test_mkdir_rmdir();
	test_symlink();
	test_link_unlink_orphan();
	test_setattr();
	test_rename();
	test_readdir();
	test_xattr();
	test_access_statfs_stripe();
	test_pending_drop();
	tmeta_close(db, dir);

	/* mkfs --force replaces a file system; open of an empty dir is ENOENT */
	db = tmeta_open(dir, sizeof(dir), 1);
	struct weft_attr x;
	tmeta_targets(db, 1, 1);
	TX_BEGIN(db);
	mkfile(ROOT, "old", 0644);
	TX_END();
	meta_db_close(db);
	struct meta_mkfs_opts o = { .force = true, .mapsize = 64ULL << 20, .stripe_unit = 1000 };
	CHECK_INT(meta_mkfs(dir, &o), ==, -EINVAL);
	o.stripe_unit = 4 << 20;
	CHECK_OK(meta_mkfs(dir, &o));
	CHECK_OK(meta_db_open(dir, 64ULL << 20, &db));
	TX_BEGIN(db);
	CHECK_INT(meta_ns_lookup(&C, ROOT, S("old"), &x), ==, -ENOENT);
	struct weft_layout rl;
	CHECK_OK(meta_ns_getlayout(&C, ROOT, &rl));
	CHECK_INT(rl.stripe_unit, ==, 4 << 20);
	TX_END();
	tmeta_close(db, dir);
	struct meta_db *none;
	CHECK_INT(meta_db_open("/nonexistent-weft-dir", 0, &none), ==, -ENOENT);
	printf("meta_ns: ok\n");
	return 0;
}
