/* Unit tests of POSIX permission rules, alone and through namespace ops with non-root
 * credentials: owner/group/other with supplementary groups, sticky, setgid, squash. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "meta/ns.h"
#include "meta/perm.h"
#include "test_meta_util.h"

static void test_bits(void)
{
	struct weft_attr a = { .mode = S_IFREG | 0640, .uid = 10, .gid = 20 };
	struct weft_cred owner = tmeta_cred(10, 99), member = tmeta_cred(11, 99),
			 other = tmeta_cred(12, 99), root = tmeta_cred(0, 0);
	member.ngroups = 2;
	member.groups[0] = 5;
	member.groups[1] = 20;
	CHECK_OK(meta_perm_check(&owner, &a, META_MAY_READ | META_MAY_WRITE));
	CHECK_INT(meta_perm_check(&owner, &a, META_MAY_EXEC), ==, -EACCES);
	CHECK_OK(meta_perm_check(&member, &a, META_MAY_READ));
	CHECK_INT(meta_perm_check(&member, &a, META_MAY_WRITE), ==, -EACCES);
	CHECK_INT(meta_perm_check(&other, &a, META_MAY_READ), ==, -EACCES);
	CHECK_OK(meta_perm_check(&other, &a, 0));
	CHECK_OK(meta_perm_check(&root, &a, META_MAY_READ | META_MAY_WRITE));
	CHECK_INT(meta_perm_check(&root, &a, META_MAY_EXEC), ==, -EACCES);
	a.mode |= 0001;
	CHECK_OK(meta_perm_check(&root, &a, META_MAY_EXEC));
	/* the owner class decides even when group or other would allow more */
	a.mode = S_IFREG | 0077;
	CHECK_INT(meta_perm_check(&owner, &a, META_MAY_READ), ==, -EACCES);
	CHECK_OK(meta_perm_check(&member, &a, META_MAY_READ));
	/* directories: root may always search */
	struct weft_attr d = { .mode = S_IFDIR | 0000, .uid = 10, .gid = 20 };
	CHECK_OK(meta_perm_check(&root, &d, META_MAY_EXEC | META_MAY_WRITE | META_MAY_READ));
	CHECK(meta_perm_in_group(&member, 5));
	CHECK(!meta_perm_in_group(&member, 6));
	CHECK(meta_perm_owner(&root, &a) && meta_perm_owner(&owner, &a) && !meta_perm_owner(&member, &a));
	/* more groups than were sent: a caller not found in the file's group may still be
	 * in it, so it gets what both group and other allow (fail closed) */
	struct weft_attr g = { .mode = S_IFREG | 0604, .uid = 10, .gid = 20 };
	CHECK_OK(meta_perm_check(&other, &g, META_MAY_READ));
	other.more_groups = 1;
	CHECK_INT(meta_perm_check(&other, &g, META_MAY_READ), ==, -EACCES);
	g.mode = S_IFREG | 0644;
	CHECK_OK(meta_perm_check(&other, &g, META_MAY_READ));
	member.more_groups = 1; /* found in the group: its bits, as always */
	g.mode = S_IFREG | 0640;
	CHECK_OK(meta_perm_check(&member, &g, META_MAY_READ));
	other.more_groups = member.more_groups = 0;

	/* sticky */
	struct weft_attr t = { .mode = S_IFDIR | 01777, .uid = 0 };
	struct weft_attr v = { .mode = S_IFREG | 0644, .uid = 11 };
	CHECK_OK(meta_perm_sticky(&member, &t, &v));
	CHECK_INT(meta_perm_sticky(&other, &t, &v), ==, -EPERM);
	CHECK_OK(meta_perm_sticky(&root, &t, &v));
	t.uid = 12;
	CHECK_OK(meta_perm_sticky(&other, &t, &v)); /* owns the directory */
	t.mode = S_IFDIR | 0777;
	CHECK_OK(meta_perm_sticky(&owner, &t, &v));

	/* squash */
	struct weft_cred s = tmeta_cred(0, 0);
	s.ngroups = 2;
	s.groups[0] = 0;
	s.groups[1] = 7;
	meta_perm_squash(&s);
	CHECK_INT(s.uid, ==, META_NOBODY);
	CHECK_INT(s.gid, ==, META_NOBODY);
	CHECK_INT(s.groups[0], ==, META_NOBODY);
	CHECK_INT(s.groups[1], ==, 7);
	struct weft_cred n = tmeta_cred(5, 6);
	meta_perm_squash(&n);
	CHECK_INT(n.uid, ==, 5);

	/* new owner */
	uint32_t mode = S_IFREG | 02755, uid, gid;
	struct weft_attr sg = { .mode = S_IFDIR | 02775, .uid = 0, .gid = 300 };
	meta_perm_new_owner(&other, &sg, &mode, &uid, &gid);
	CHECK_INT(uid, ==, 12);
	CHECK_INT(gid, ==, 300);
	CHECK_INT(mode, ==, S_IFREG | 0755); /* not in group 300: sgid stripped */
	mode = S_IFDIR | 0755;
	meta_perm_new_owner(&other, &sg, &mode, &uid, &gid);
	CHECK_INT(mode, ==, S_IFDIR | 02755);
	mode = S_IFREG | 0644;
	struct weft_attr plain = { .mode = S_IFDIR | 0777, .gid = 300 };
	meta_perm_new_owner(&other, &plain, &mode, &uid, &gid);
	CHECK_INT(gid, ==, 99);
}

static void test_through_ns(void)
{
	char dir[256];
	struct weft_attr a;
	struct weft_cred root = tmeta_cred(0, 0), alice = tmeta_cred(1000, 1000),
			 bob = tmeta_cred(1001, 1001), carol = tmeta_cred(1002, 1002);
	carol.ngroups = 1;
	carol.groups[0] = 500; /* member of "proj" */
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, 2, 2);
	TX_BEGIN(db);
	C.cred = &root;

	/* sticky /tmp: bob cannot remove alice's file, alice and root can */
	struct weft_attr tmp;
	CHECK_OK(OP(meta_ns_mkdir(&C, ROOT, S("tmp"), 01777, &tmp)));
	C.cred = &alice;
	CHECK_OK(OP(meta_ns_create(&C, REF(tmp), S("a"), 0666, 0, &a, NULL, NULL)));
	CHECK_OK(OP(meta_ns_mkdir(&C, REF(tmp), S("adir"), 0777, &a)));
	C.cred = &bob;
	CHECK_INT(OP(meta_ns_unlink(&C, REF(tmp), S("a"))), ==, -EPERM);
	CHECK_INT(OP(meta_ns_rmdir(&C, REF(tmp), S("adir"))), ==, -EPERM);
	CHECK_OK(OP(meta_ns_create(&C, REF(tmp), S("b"), 0644, 0, &a, NULL, NULL)));
	CHECK_OK(OP(meta_ns_unlink(&C, REF(tmp), S("b"))));
	C.cred = &alice;
	CHECK_OK(OP(meta_ns_unlink(&C, REF(tmp), S("a"))));
	C.cred = &root;
	CHECK_OK(OP(meta_ns_rmdir(&C, REF(tmp), S("adir"))));

	/* setgid project directory: new entries get its group, subdirs stay setgid */
	struct weft_attr proj, f, sub;
	CHECK_OK(OP(meta_ns_mkdir(&C, ROOT, S("proj"), 0775, &proj)));
	struct meta_setattr sa = { .valid = META_SET_GID | META_SET_MODE, .gid = 500, .mode = 02775 };
	CHECK_OK(OP(meta_ns_setattr(&C, REF(proj), &sa, &proj)));
	CHECK_INT(proj.mode, ==, S_IFDIR | 02775);
	C.cred = &carol;
	CHECK_OK(OP(meta_ns_create(&C, REF(proj), S("f"), 0664, 0, &f, NULL, NULL)));
	CHECK_INT(f.gid, ==, 500);
	CHECK_INT(f.uid, ==, 1002);
	CHECK_OK(OP(meta_ns_mkdir(&C, REF(proj), S("sub"), 0755, &sub)));
	CHECK_INT(sub.gid, ==, 500);
	CHECK_INT(sub.mode, ==, S_IFDIR | 02755);
	CHECK_OK(OP(meta_ns_create(&C, REF(sub), S("g"), 0644, 0, &a, NULL, NULL)));
	CHECK_INT(a.gid, ==, 500);
	/* bob is not in group 500: no write access to the group-writable dir */
	C.cred = &bob;
	CHECK_INT(OP(meta_ns_create(&C, REF(proj), S("x"), 0644, 0, &a, NULL, NULL)), ==, -EACCES);
	CHECK_INT(OP(meta_ns_unlink(&C, REF(proj), S("f"))), ==, -EACCES);
	/* ...but carol, via her supplementary group, can write the file */
	C.cred = &carol;
	CHECK_OK(meta_ns_access(&C, REF(f), R_OK | W_OK));
	C.cred = &bob;
	CHECK_OK(meta_ns_access(&C, REF(f), R_OK));
	CHECK_INT(meta_ns_access(&C, REF(f), W_OK), ==, -EACCES);

	/* search permission on the path */
	struct weft_attr closed;
	C.cred = &alice;
	CHECK_INT(OP(meta_ns_mkdir(&C, ROOT, S("closed"), 0777, &a)), ==, -EACCES);
	C.cred = &root;
	CHECK_OK(OP(meta_ns_mkdir(&C, ROOT, S("closed"), 0700, &closed)));
	CHECK_OK(OP(meta_ns_create(&C, REF(closed), S("in"), 0644, 0, &a, NULL, NULL)));
	C.cred = &alice;
	CHECK_INT(meta_ns_lookup(&C, REF(closed), S("in"), &a), ==, -EACCES);
	CHECK_INT(OP(meta_ns_unlink(&C, REF(closed), S("in"))), ==, -EACCES);
	C.cred = &root;
	TX_END();
	tmeta_close(db, dir);
}

int main(void)
{
	test_bits();
	test_through_ns();
	printf("meta_perm: ok\n");
	return 0;
}
