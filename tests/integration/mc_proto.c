/* metaclient: the modes proto and squash, every operation and its errno cases. */
#include "mc_test.h"

/* ---- the protocol tests ---- */

static uint64_t session;

static void t_targets(struct mc *m)
{
	uint32_t a = 0, b = 0, a2 = 0;
	/* no target yet: no regular file can be placed */
	struct weft_attr at;
	EXPECT(mc_create(m, &root, 1, "early", S_IFREG | 0644, 0, &at), -EINVAL);
	OK(mc_register(m, 0xa1, "node-a", "127.0.0.1:1", &a));
	OK(mc_register(m, 0xb2, "node-b", ":2", &b));
	TRUE(a != b && a && b);
	OK(mc_register(m, 0xa1, "node-a", "127.0.0.1:1", &a2));
	EXPECT(a2, a); /* the same uuid gets the same id */
	struct weft_msg_target_heartbeat hb = {.target = a, .capacity = 1ULL << 40,
					       .free = 1ULL << 39, .bytes_written = 12345};
	struct frame *f = NULL;
	OK(mc_call(m, WEFT_OP_TARGET_HEARTBEAT, &hb, NULL, 0, &f));
	struct weft_msg_heartbeat_reply hr = {0};
	if (f)
		OK(proto_heartbeat_reply_decode(f->payload, f->h.payload_len, &hr, NULL));
	TRUE(hr.lease_ms > 0 && hr.chains_version > 0);
	frame_free(f);
	hb.target = 999;
	EXPECT(mc_call(m, WEFT_OP_TARGET_HEARTBEAT, &hb, NULL, 0, NULL), -ENOENT);

	/* chains: both tables for 1 and 2 replicas exist, none for 3 */
	struct weft_msg_chains_get cg = {0};
	OK(mc_call(m, WEFT_OP_CHAINS_GET, &cg, NULL, 0, &f));
	struct weft_chain_set set = {0};
	uint64_t v1 = 0;
	if (f) {
		struct weft_msg_chains cm;
		OK(proto_chains_decode(f->payload, f->h.payload_len, &cm, NULL));
		v1 = cm.version;
		struct rbuf r;
		rbuf_init(&r, f->bulk, f->h.bulk_len);
		OK(proto_chain_set_decode(&r, &set));
		EXPECT(set.ntargets, 2);
		EXPECT(set.nchains[0], 2);
		EXPECT(set.nchains[1], 2);
		EXPECT(set.nchains[2], 0);
		/* the unspecified host ":2" became the peer's address */
		for (uint32_t i = 0; i < set.ntargets; i++)
			if (set.targets[i].id == b)
				TRUE(strcmp(set.targets[i].addr, "127.0.0.1:2") == 0);
		proto_chain_set_free(&set);
	}
	frame_free(f);
	/* a reported target that does not answer meta's probe (nothing listens on port 2)
	 * goes offline, asynchronously: the version moves */
	struct weft_msg_target_failed tf = {.reporter = a, .target = b, .chain = 0, .replicas = 2};
	OK(mc_call(m, WEFT_OP_TARGET_FAILED, &tf, NULL, 0, NULL));
	for (int i = 0; i < 100; i++) {
		OK(mc_call(m, WEFT_OP_CHAINS_GET, &cg, NULL, 0, &f));
		struct weft_msg_chains cm;
		if (!f || proto_chains_decode(f->payload, f->h.payload_len, &cm, NULL) ||
		    cm.version > v1)
			break;
		frame_free(f);
		f = NULL;
		usleep(50000);
	}
	if (f) {
		struct weft_msg_chains cm;
		OK(proto_chains_decode(f->payload, f->h.payload_len, &cm, NULL));
		TRUE(cm.version > v1);
		struct rbuf r;
		rbuf_init(&r, f->bulk, f->h.bulk_len);
		OK(proto_chain_set_decode(&r, &set));
		const struct weft_chain *c = proto_chain_set_get(&set, 2, 0);
		TRUE(c && c->members[1].state == WEFT_MEMBER_OFFLINE);
		proto_chain_set_free(&set);
	}
	frame_free(f);
	tf.target = 4242;
	EXPECT(mc_call(m, WEFT_OP_TARGET_FAILED, &tf, NULL, 0, NULL), -ENOENT);
	/* the heartbeat brings it back (syncing) */
	hb.target = b;
	OK(mc_call(m, WEFT_OP_TARGET_HEARTBEAT, &hb, NULL, 0, NULL));
	/* targets with counters */
	OK(mc_call(m, WEFT_OP_TARGETS_GET, NULL, NULL, 0, &f));
	if (f) {
		struct weft_msg_targets tm;
		OK(proto_targets_decode(f->payload, f->h.payload_len, &tm, NULL));
		EXPECT(tm.count, 2);
		TRUE(f->h.bulk_len > 0);
	}
	frame_free(f);
	/* a registration with an empty node name */
	struct weft_msg_target_register q = {.node = MC_STR(""), .addr = MC_STR("x:1")};
	EXPECT(mc_call(m, WEFT_OP_TARGET_REGISTER, &q, NULL, 0, NULL), -EINVAL);
}

static void t_sessions(struct mc *m)
{
	struct weft_msg_session_open so = {.node = MC_STR("client-1")};
	struct frame *f = NULL;
	OK(mc_call(m, WEFT_OP_SESSION_OPEN, &so, NULL, 0, &f));
	if (f) {
		struct weft_msg_session s;
		OK(proto_session_decode(f->payload, f->h.payload_len, &s, NULL));
		session = s.session;
		TRUE(s.session > 0 && s.lease_ms > 0);
		uint8_t zero[16] = {0};
		TRUE(memcmp(s.fsid, zero, 16) != 0);
	}
	frame_free(f);
	struct weft_msg_session_id sid = {.session = session};
	OK(mc_call(m, WEFT_OP_SESSION_BEAT, &sid, NULL, 0, NULL));
	sid.session = 987654321;
	EXPECT(mc_call(m, WEFT_OP_SESSION_BEAT, &sid, NULL, 0, NULL), -ENOENT);
	EXPECT(mc_call(m, WEFT_OP_SESSION_CLOSE, &sid, NULL, 0, NULL), -ENOENT);
	so.node = MC_STR("");
	EXPECT(mc_call(m, WEFT_OP_SESSION_OPEN, &so, NULL, 0, NULL), -EINVAL);
}

static void t_basic(struct mc *m)
{
	struct weft_attr a, b, d;
	struct weft_layout l;
	OK(mc_getattr(m, &root, 1, 0, &a));
	TRUE(S_ISDIR(a.mode) && a.ino == 1);
	OK(mc_lookup(m, &root, 1, ".", &a));
	EXPECT(a.ino, 1);
	OK(mc_lookup(m, &root, 1, "..", &a));
	EXPECT(a.ino, 1);
	EXPECT(mc_lookup(m, &root, 1, "missing", &a), -ENOENT);

	/* mkdir, EEXIST; create, layout in the reply */
	OK(mc_create(m, &root, 1, "d", S_IFDIR | 0755, WEFT_CREATE_EXCL, &d));
	TRUE(S_ISDIR(d.mode) && d.nlink == 2);
	EXPECT(mc_create(m, &root, 1, "d", S_IFDIR | 0755, WEFT_CREATE_EXCL, NULL), -EEXIST);
	struct weft_msg_create cq = {.cred = root, .parent = d.ino, .name = MC_STR("f"),
				     .mode = S_IFREG | 0644, .flags = WEFT_CREATE_EXCL};
	OK(mc_entry(m, WEFT_OP_CREATE, &cq, &a, &l));
	TRUE(S_ISREG(a.mode) && a.nlink == 1 && a.size == 0 && a.gen > 0);
	TRUE(l.stripe_unit == WEFT_STRIPE_UNIT_DEFAULT && l.chain_count == 2 && l.replicas == 1);
	EXPECT(mc_entry(m, WEFT_OP_CREATE, &cq, NULL, NULL), -EEXIST);
	cq.flags = 0; /* not exclusive: the existing file comes back */
	OK(mc_entry(m, WEFT_OP_CREATE, &cq, &b, NULL));
	EXPECT(b.ino, a.ino);
	OK(mc_lookup(m, &root, d.ino, "f", &b));
	EXPECT(b.ino, a.ino);
	/* GETATTR replies the layout of a file too */
	struct weft_msg_ino gq = {.cred = root, .ino = a.ino};
	struct weft_layout l2;
	OK(mc_entry(m, WEFT_OP_GETATTR, &gq, &b, &l2));
	EXPECT(l2.first_chain, l.first_chain);
	EXPECT(l2.stripe_unit, l.stripe_unit);
	/* generations: the right one, any (0), a wrong one */
	OK(mc_getattr(m, &root, a.ino, a.gen, &b));
	EXPECT(mc_getattr(m, &root, a.ino, a.gen + 1, &b), -ESTALE);
	EXPECT(mc_getattr(m, &root, 1ULL << 50, 0, &b), -ESTALE);
	/* ENOTDIR: a file as a parent */
	EXPECT(mc_lookup(m, &root, a.ino, "x", &b), -ENOTDIR);
	EXPECT(mc_create(m, &root, a.ino, "x", S_IFDIR | 0755, WEFT_CREATE_EXCL, NULL), -ENOTDIR);
	/* create over a directory name, not exclusive */
	cq.parent = 1;
	cq.name = MC_STR("d");
	EXPECT(mc_entry(m, WEFT_OP_CREATE, &cq, NULL, NULL), -EISDIR);
	/* unlink/rmdir type errors, ENOTEMPTY */
	EXPECT(mc_name_op(m, WEFT_OP_UNLINK, &root, 1, "d"), -EISDIR);
	EXPECT(mc_name_op(m, WEFT_OP_RMDIR, &root, d.ino, "f"), -ENOTDIR);
	EXPECT(mc_name_op(m, WEFT_OP_RMDIR, &root, 1, "d"), -ENOTEMPTY);
	EXPECT(mc_name_op(m, WEFT_OP_UNLINK, &root, d.ino, "nothere"), -ENOENT);
	/* '.' and '..' as targets */
	EXPECT(mc_name_op(m, WEFT_OP_RMDIR, &root, d.ino, "."), -EINVAL);
	EXPECT(mc_name_op(m, WEFT_OP_RMDIR, &root, d.ino, ".."), -ENOTEMPTY);
	EXPECT(mc_name_op(m, WEFT_OP_UNLINK, &root, d.ino, "."), -EISDIR);
	EXPECT(mc_create(m, &root, d.ino, "..", S_IFDIR | 0755, WEFT_CREATE_EXCL, NULL), -EEXIST);
	EXPECT(mc_rename(m, &root, d.ino, ".", 1, "z", 0), -EBUSY);
	EXPECT(mc_rename(m, &root, d.ino, "f", d.ino, "..", 0), -EBUSY);
	/* rename: simple, NOREPLACE, EXCHANGE, into own subtree */
	OK(mc_create(m, &root, d.ino, "g", S_IFREG | 0600, WEFT_CREATE_EXCL, &b));
	EXPECT(mc_rename(m, &root, d.ino, "f", d.ino, "g", 1 /* NOREPLACE */), -EEXIST);
	OK(mc_rename(m, &root, d.ino, "f", d.ino, "g", 2 /* EXCHANGE */));
	struct weft_attr x;
	OK(mc_lookup(m, &root, d.ino, "g", &x));
	EXPECT(x.ino, a.ino);
	EXPECT(mc_rename(m, &root, d.ino, "nothere", d.ino, "g", 2), -ENOENT);
	EXPECT(mc_rename(m, &root, d.ino, "g", d.ino, "f", 3), -EINVAL);
	OK(mc_rename(m, &root, d.ino, "g", d.ino, "h", 0));
	EXPECT(mc_lookup(m, &root, d.ino, "g", &x), -ENOENT);
	struct weft_attr sub;
	OK(mc_create(m, &root, d.ino, "sub", S_IFDIR | 0755, WEFT_CREATE_EXCL, &sub));
	EXPECT(mc_rename(m, &root, 1, "d", sub.ino, "d2", 0), -EINVAL);
	EXPECT(mc_rename(m, &root, d.ino, "sub", d.ino, "h", 0), -ENOTDIR);
	EXPECT(mc_rename(m, &root, d.ino, "h", d.ino, "sub", 0), -EISDIR);
	/* a directory moved across parents: nlinks follow */
	OK(mc_create(m, &root, 1, "e", S_IFDIR | 0755, WEFT_CREATE_EXCL, &x));
	OK(mc_rename(m, &root, d.ino, "sub", x.ino, "sub", 0));
	OK(mc_getattr(m, &root, x.ino, 0, &x));
	EXPECT(x.nlink, 3);
	OK(mc_getattr(m, &root, d.ino, 0, &x));
	EXPECT(x.nlink, 2);
	OK(mc_lookup(m, &root, sub.ino, "..", &x));
	OK(mc_lookup(m, &root, 1, "e", &b));
	EXPECT(x.ino, b.ino);

	/* link and nlink; a directory cannot be linked */
	struct weft_msg_link lq = {.cred = root, .ino = a.ino, .newparent = 1,
				   .newname = MC_STR("hardlink")};
	OK(mc_entry(m, WEFT_OP_LINK, &lq, &x, NULL));
	EXPECT(x.nlink, 2);
	EXPECT(x.ino, a.ino);
	EXPECT(mc_entry(m, WEFT_OP_LINK, &lq, &x, NULL), -EEXIST);
	lq.ino = d.ino;
	lq.newname = MC_STR("dirlink");
	EXPECT(mc_entry(m, WEFT_OP_LINK, &lq, &x, NULL), -EPERM);
	OK(mc_name_op(m, WEFT_OP_UNLINK, &root, 1, "hardlink"));
	OK(mc_getattr(m, &root, a.ino, 0, &x));
	EXPECT(x.nlink, 1);

	/* symlink and readlink */
	struct weft_msg_symlink sq = {.cred = root, .parent = 1, .name = MC_STR("sl"),
				      .target = MC_STR("d/h")};
	OK(mc_entry(m, WEFT_OP_SYMLINK, &sq, &x, NULL));
	TRUE(S_ISLNK(x.mode) && x.size == 3);
	struct weft_msg_ino rq = {.cred = root, .ino = x.ino};
	struct frame *f = NULL;
	OK(mc_call(m, WEFT_OP_READLINK, &rq, NULL, 0, &f));
	if (f) {
		struct weft_msg_path p;
		OK(proto_path_decode(f->payload, f->h.payload_len, &p, NULL));
		TRUE(p.path.len == 3 && memcmp(p.path.p, "d/h", 3) == 0);
	}
	frame_free(f);
	rq.ino = a.ino;
	EXPECT(mc_call(m, WEFT_OP_READLINK, &rq, NULL, 0, NULL), -EINVAL);
	sq.name = MC_STR("sl2");
	sq.target = MC_STR("");
	EXPECT(mc_entry(m, WEFT_OP_SYMLINK, &sq, &x, NULL), -ENOENT);

	/* mknod: fifo for anyone, devices root only, directories never */
	OK(mc_create(m, &root, 1, "fifo", S_IFIFO | 0644, 0, &x));
	TRUE(S_ISFIFO(x.mode));
	OK(mc_create(m, &root, 1, "sock", S_IFSOCK | 0644, 0, &x));
	struct weft_msg_create nq = {.cred = root, .parent = 1, .name = MC_STR("null"),
				     .mode = S_IFCHR | 0666, .rdev = 0x103};
	OK(mc_entry(m, WEFT_OP_CREATE, &nq, &x, NULL));
	EXPECT(x.rdev, 0x103);

	/* fsync, access */
	struct weft_msg_ino fq = {.cred = root, .ino = a.ino};
	OK(mc_call(m, WEFT_OP_FSYNC, &fq, NULL, 0, NULL));
	fq.ino = 1ULL << 50;
	EXPECT(mc_call(m, WEFT_OP_FSYNC, &fq, NULL, 0, NULL), -ESTALE);
	struct weft_msg_access aq = {.cred = root, .ino = a.ino, .mask = 6};
	OK(mc_call(m, WEFT_OP_ACCESS, &aq, NULL, 0, NULL));
	aq.cred = user;
	EXPECT(mc_call(m, WEFT_OP_ACCESS, &aq, NULL, 0, NULL), -EACCES);
	aq.mask = 0;
	OK(mc_call(m, WEFT_OP_ACCESS, &aq, NULL, 0, NULL));
}

static void t_setattr(struct mc *m)
{
	struct weft_attr f = {0}, x = {0};
	OK(mc_create(m, &root, 1, "attrs", S_IFREG | 0644, WEFT_CREATE_EXCL, &f));
	struct weft_msg_setattr q = {.cred = root, .ino = f.ino, .valid = WEFT_SET_MODE,
				     .mode = 0600};
	struct frame *fr = NULL;
	OK(mc_call(m, WEFT_OP_SETATTR, &q, NULL, 0, &fr));
	if (fr) {
		struct weft_msg_attr am;
		OK(proto_attr_decode(fr->payload, fr->h.payload_len, &am, NULL));
		EXPECT(am.attr.mode, S_IFREG | 0600);
	}
	frame_free(fr);
	q.valid = WEFT_SET_UID | WEFT_SET_GID;
	q.uid = 1000;
	q.gid = 1000;
	OK(mc_call(m, WEFT_OP_SETATTR, &q, NULL, 0, NULL));
	OK(mc_getattr(m, &root, f.ino, 0, &x));
	TRUE(x.uid == 1000 && x.gid == 1000);
	/* the owner may chmod, others not; a user cannot give the file away */
	q.cred = other;
	q.valid = WEFT_SET_MODE;
	q.mode = 0666;
	EXPECT(mc_call(m, WEFT_OP_SETATTR, &q, NULL, 0, NULL), -EPERM);
	q.cred = user;
	OK(mc_call(m, WEFT_OP_SETATTR, &q, NULL, 0, NULL));
	q.valid = WEFT_SET_UID;
	q.uid = 0;
	EXPECT(mc_call(m, WEFT_OP_SETATTR, &q, NULL, 0, NULL), -EPERM);
	/* size and times */
	q.cred = user;
	q.valid = WEFT_SET_SIZE;
	q.size = 5000;
	OK(mc_call(m, WEFT_OP_SETATTR, &q, NULL, 0, NULL));
	OK(mc_getattr(m, &root, f.ino, 0, &x));
	EXPECT(x.size, 5000);
	q.valid = WEFT_SET_MTIME | WEFT_SET_ATIME;
	q.mtime_ns = 1000000000LL * 1234567;
	q.atime_ns = 1000000000LL * 7654321;
	OK(mc_call(m, WEFT_OP_SETATTR, &q, NULL, 0, NULL));
	OK(mc_getattr(m, &root, f.ino, 0, &x));
	TRUE(x.mtime_ns == q.mtime_ns && x.atime_ns == q.atime_ns);
	q.valid = 0x8000;
	EXPECT(mc_call(m, WEFT_OP_SETATTR, &q, NULL, 0, NULL), -EINVAL);
	/* a directory's size */
	q.cred = root;
	q.ino = 1;
	q.valid = WEFT_SET_SIZE;
	EXPECT(mc_call(m, WEFT_OP_SETATTR, &q, NULL, 0, NULL), -EISDIR);
	/* EXTEND: size = max, mtime set */
	struct weft_msg_extend e = {.cred = user, .ino = f.ino, .size = 100, .mtime_ns = 42};
	OK(mc_call(m, WEFT_OP_EXTEND, &e, NULL, 0, &fr));
	if (fr) {
		struct weft_msg_attr am;
		OK(proto_attr_decode(fr->payload, fr->h.payload_len, &am, NULL));
		EXPECT(am.attr.size, 5000);
		EXPECT(am.attr.mtime_ns, 42);
	}
	frame_free(fr);
	e.size = 1 << 20;
	OK(mc_call(m, WEFT_OP_EXTEND, &e, NULL, 0, NULL));
	OK(mc_getattr(m, &root, f.ino, 0, &x));
	EXPECT(x.size, 1 << 20);
	e.ino = 1;
	EXPECT(mc_call(m, WEFT_OP_EXTEND, &e, NULL, 0, NULL), -EINVAL);
}

static void t_perms(struct mc *m)
{
	struct weft_attr x, pub;
	/* a non-root user cannot create in root's 0755 directory */
	EXPECT(mc_create(m, &user, 1, "u1", S_IFREG | 0644, WEFT_CREATE_EXCL, &x), -EACCES);
	EXPECT(mc_create(m, &user, 1, "u1", S_IFDIR | 0755, WEFT_CREATE_EXCL, &x), -EACCES);
	/* devices are root's */
	struct weft_msg_create nq = {.cred = user, .parent = 1, .name = MC_STR("dev"),
				     .mode = S_IFBLK | 0666, .rdev = 1};
	OK(mc_create(m, &root, 1, "pub", S_IFDIR | 01777, WEFT_CREATE_EXCL, &pub));
	nq.parent = pub.ino;
	EXPECT(mc_entry(m, WEFT_OP_CREATE, &nq, &x, NULL), -EPERM);
	/* sticky: other cannot remove user's file */
	OK(mc_create(m, &user, pub.ino, "mine", S_IFREG | 0666, WEFT_CREATE_EXCL, &x));
	TRUE(x.uid == 1000 && x.gid == 1000);
	EXPECT(mc_name_op(m, WEFT_OP_UNLINK, &other, pub.ino, "mine"), -EPERM);
	EXPECT(mc_rename(m, &other, pub.ino, "mine", pub.ino, "theirs", 0), -EPERM);
	/* search permission on a parent */
	struct weft_attr priv;
	OK(mc_create(m, &root, 1, "priv", S_IFDIR | 0700, WEFT_CREATE_EXCL, &priv));
	OK(mc_create(m, &root, priv.ino, "secret", S_IFREG | 0644, WEFT_CREATE_EXCL, &x));
	EXPECT(mc_lookup(m, &user, priv.ino, "secret", &x), -EACCES);
	struct ent *e;
	size_t n;
	EXPECT(list_all(m, &user, priv.ino, 4096, false, &e, &n), -EACCES);
	free(e);
	/* supplementary groups give group access */
	struct weft_msg_setattr sq = {.cred = root, .ino = priv.ino,
				      .valid = WEFT_SET_GID | WEFT_SET_MODE, .gid = 555, .mode = 0770};
	OK(mc_call(m, WEFT_OP_SETATTR, &sq, NULL, 0, NULL));
	struct weft_cred grp = user;
	grp.ngroups = 1;
	grp.groups[0] = 555;
	OK(mc_lookup(m, &grp, priv.ino, "secret", &x));
	EXPECT(mc_lookup(m, &user, priv.ino, "secret", &x), -EACCES);
	/* umask applies to new inodes */
	struct weft_cred um = root;
	um.umask = 022;
	OK(mc_create(m, &um, 1, "masked", S_IFREG | 0666, WEFT_CREATE_EXCL, &x));
	EXPECT(x.mode & 0777, 0644);
}

static void t_open(struct mc *m)
{
	struct weft_attr f, x;
	OK(mc_create(m, &root, 1, "ofile", S_IFREG | 0644, WEFT_CREATE_EXCL, &f));
	struct weft_msg_open q = {.cred = root, .ino = f.ino, .flags = O_RDWR, .session = session};
	struct frame *fr = NULL;
	OK(mc_call(m, WEFT_OP_OPEN, &q, NULL, 0, &fr));
	if (fr) {
		struct weft_msg_opened o;
		OK(proto_opened_decode(fr->payload, fr->h.payload_len, &o, NULL));
		EXPECT(o.attr.ino, f.ino);
		TRUE(o.layout.stripe_unit > 0 && o.layout.chain_count > 0);
	}
	frame_free(fr);
	/* permissions by access mode */
	q.cred = user;
	q.flags = O_RDONLY;
	OK(mc_call(m, WEFT_OP_OPEN, &q, NULL, 0, NULL));
	struct weft_msg_release rl = {.ino = f.ino, .session = session};
	OK(mc_call(m, WEFT_OP_RELEASE, &rl, NULL, 0, NULL));
	q.flags = O_WRONLY;
	EXPECT(mc_call(m, WEFT_OP_OPEN, &q, NULL, 0, NULL), -EACCES);
	q.flags = O_RDONLY | O_TRUNC;
	EXPECT(mc_call(m, WEFT_OP_OPEN, &q, NULL, 0, NULL), -EACCES);
	q.cred = root;
	q.ino = 1;
	q.flags = O_WRONLY;
	EXPECT(mc_call(m, WEFT_OP_OPEN, &q, NULL, 0, NULL), -EISDIR);
	q.flags = O_RDONLY | O_DIRECTORY;
	OK(mc_call(m, WEFT_OP_OPEN, &q, NULL, 0, NULL));
	rl.ino = 1;
	OK(mc_call(m, WEFT_OP_RELEASE, &rl, NULL, 0, NULL));
	q.ino = 1ULL << 50;
	EXPECT(mc_call(m, WEFT_OP_OPEN, &q, NULL, 0, NULL), -ESTALE);
	q.ino = f.ino;
	q.session = 123456789;
	EXPECT(mc_call(m, WEFT_OP_OPEN, &q, NULL, 0, NULL), -ENOENT);
	/* unlinked while open: it lives on until the last release */
	OK(mc_name_op(m, WEFT_OP_UNLINK, &root, 1, "ofile"));
	EXPECT(mc_lookup(m, &root, 1, "ofile", &x), -ENOENT);
	OK(mc_getattr(m, &root, f.ino, f.gen, &x));
	EXPECT(x.nlink, 0);
	rl.ino = f.ino;
	OK(mc_call(m, WEFT_OP_RELEASE, &rl, NULL, 0, NULL));
	EXPECT(mc_getattr(m, &root, f.ino, f.gen, &x), -ESTALE);
	EXPECT(mc_call(m, WEFT_OP_RELEASE, &rl, NULL, 0, NULL), -ENOENT);
	/* a closed session's opens go away with it */
	struct weft_msg_session_open so = {.node = MC_STR("client-2")};
	OK(mc_call(m, WEFT_OP_SESSION_OPEN, &so, NULL, 0, &fr));
	uint64_t s2 = 0;
	if (fr) {
		struct weft_msg_session s;
		OK(proto_session_decode(fr->payload, fr->h.payload_len, &s, NULL));
		s2 = s.session;
	}
	frame_free(fr);
	OK(mc_create(m, &root, 1, "ofile2", S_IFREG | 0644, WEFT_CREATE_EXCL, &f));
	q = (struct weft_msg_open){.cred = root, .ino = f.ino, .flags = O_RDONLY, .session = s2};
	OK(mc_call(m, WEFT_OP_OPEN, &q, NULL, 0, NULL));
	OK(mc_name_op(m, WEFT_OP_UNLINK, &root, 1, "ofile2"));
	OK(mc_getattr(m, &root, f.ino, 0, &x));
	struct weft_msg_session_id sid = {.session = s2};
	OK(mc_call(m, WEFT_OP_SESSION_CLOSE, &sid, NULL, 0, NULL));
	EXPECT(mc_getattr(m, &root, f.ino, 0, &x), -ESTALE);
}

/* CREATE_OPEN: create and open in one op; the creator's open ignores the new mode. */
static void t_create_open(struct mc *m)
{
	struct weft_attr d, x;
	OK(mc_create(m, &root, 1, "co", S_IFDIR | 0777, WEFT_CREATE_EXCL, &d));
	struct weft_msg_create_open q = {.cred = user, .parent = d.ino, .name = MC_STR("ro"),
					 .mode = 0444, .flags = WEFT_CREATE_EXCL,
					 .open_flags = O_WRONLY, .session = session};
	struct frame *fr = NULL;
	OK(mc_call(m, WEFT_OP_CREATE_OPEN, &q, NULL, 0, &fr));
	if (fr) {
		struct weft_msg_opened o;
		OK(proto_opened_decode(fr->payload, fr->h.payload_len, &o, NULL));
		EXPECT(o.created, 1);
		EXPECT(o.attr.mode, S_IFREG | 0444);
		EXPECT(o.attr.uid, user.uid);
		TRUE(o.layout.stripe_unit > 0 && o.layout.chain_count > 0);
		struct weft_msg_release rl = {.ino = o.attr.ino, .session = session};
		OK(mc_call(m, WEFT_OP_RELEASE, &rl, NULL, 0, NULL)); /* the open was recorded */
	}
	frame_free(fr);
	OK(mc_lookup(m, &user, d.ino, "ro", &x));
	/* exclusive on an existing name */
	EXPECT(mc_call(m, WEFT_OP_CREATE_OPEN, &q, NULL, 0, NULL), -EEXIST);
	/* an existing file is checked like OPEN: 0444 for writing is refused */
	q.flags = 0;
	EXPECT(mc_call(m, WEFT_OP_CREATE_OPEN, &q, NULL, 0, NULL), -EACCES);
	q.open_flags = O_RDONLY;
	fr = NULL;
	OK(mc_call(m, WEFT_OP_CREATE_OPEN, &q, NULL, 0, &fr));
	if (fr) {
		struct weft_msg_opened o;
		OK(proto_opened_decode(fr->payload, fr->h.payload_len, &o, NULL));
		EXPECT(o.created, 0);
		EXPECT(o.attr.ino, x.ino);
	}
	frame_free(fr);
	/* bad requests */
	q.open_flags = O_ACCMODE;
	EXPECT(mc_call(m, WEFT_OP_CREATE_OPEN, &q, NULL, 0, NULL), -EINVAL);
	q.open_flags = O_RDONLY;
	q.mode = S_IFDIR | 0755;
	EXPECT(mc_call(m, WEFT_OP_CREATE_OPEN, &q, NULL, 0, NULL), -EINVAL);
	q.mode = 0644;
	q.flags = 0x80;
	EXPECT(mc_call(m, WEFT_OP_CREATE_OPEN, &q, NULL, 0, NULL), -EINVAL);
	/* no write permission in the directory */
	q = (struct weft_msg_create_open){.cred = user, .parent = 1, .name = MC_STR("nope"),
					  .mode = 0644, .open_flags = O_WRONLY, .session = session};
	EXPECT(mc_call(m, WEFT_OP_CREATE_OPEN, &q, NULL, 0, NULL), -EACCES);
}

static void t_xattr(struct mc *m)
{
	struct weft_attr f;
	OK(mc_create(m, &root, 1, "xf", S_IFREG | 0644, WEFT_CREATE_EXCL, &f));
	struct weft_msg_xattr q = {.cred = root, .ino = f.ino, .name = MC_STR("user.color")};
	OK(mc_call(m, WEFT_OP_SETXATTR, &q, "blue", 4, NULL));
	q.flags = 1; /* XATTR_CREATE */
	EXPECT(mc_call(m, WEFT_OP_SETXATTR, &q, "red", 3, NULL), -EEXIST);
	q.flags = 2; /* XATTR_REPLACE */
	q.name = MC_STR("user.none");
	EXPECT(mc_call(m, WEFT_OP_SETXATTR, &q, "x", 1, NULL), -ENODATA);
	q.flags = 0;
	q.name = MC_STR("user.color");
	struct frame *fr = NULL;
	q.size = 0; /* size only */
	OK(mc_call(m, WEFT_OP_GETXATTR, &q, NULL, 0, &fr));
	if (fr) {
		struct weft_msg_size s;
		OK(proto_size_decode(fr->payload, fr->h.payload_len, &s, NULL));
		EXPECT(s.size, 4);
		EXPECT(fr->h.bulk_len, 0);
	}
	frame_free(fr);
	q.size = 2;
	EXPECT(mc_call(m, WEFT_OP_GETXATTR, &q, NULL, 0, NULL), -ERANGE);
	q.size = 100;
	OK(mc_call(m, WEFT_OP_GETXATTR, &q, NULL, 0, &fr));
	if (fr)
		TRUE(fr->h.bulk_len == 4 && memcmp(fr->bulk, "blue", 4) == 0);
	frame_free(fr);
	q.name = MC_STR("user.other");
	OK(mc_call(m, WEFT_OP_SETXATTR, &q, "", 0, NULL));
	q.name = MC_STR("");
	q.size = 1000;
	OK(mc_call(m, WEFT_OP_LISTXATTR, &q, NULL, 0, &fr));
	if (fr) {
		static const char want[] = "user.color\0user.other";
		TRUE(fr->h.bulk_len == sizeof(want) && memcmp(fr->bulk, want, sizeof(want)) == 0);
	}
	frame_free(fr);
	q.size = 3;
	EXPECT(mc_call(m, WEFT_OP_LISTXATTR, &q, NULL, 0, NULL), -ERANGE);
	/* permissions: others may read user.* of a 0644 file, not write it */
	q.cred = user;
	q.name = MC_STR("user.color");
	q.size = 100;
	OK(mc_call(m, WEFT_OP_GETXATTR, &q, NULL, 0, NULL));
	EXPECT(mc_call(m, WEFT_OP_SETXATTR, &q, "x", 1, NULL), -EACCES);
	q.name = MC_STR("trusted.t");
	EXPECT(mc_call(m, WEFT_OP_SETXATTR, &q, "x", 1, NULL), -EPERM);
	q.cred = root;
	q.name = MC_STR("system.posix_acl_access");
	EXPECT(mc_call(m, WEFT_OP_SETXATTR, &q, "x", 1, NULL), -EOPNOTSUPP);
	q.name = MC_STR("user.color");
	OK(mc_call(m, WEFT_OP_REMOVEXATTR, &q, NULL, 0, NULL));
	EXPECT(mc_call(m, WEFT_OP_REMOVEXATTR, &q, NULL, 0, NULL), -ENODATA);
	EXPECT(mc_call(m, WEFT_OP_GETXATTR, &q, NULL, 0, NULL), -ENODATA);
}

static void t_stripe_statfs(struct mc *m)
{
	struct weft_attr d = {0}, f = {0};
	OK(mc_create(m, &root, 1, "striped", S_IFDIR | 0755, WEFT_CREATE_EXCL, &d));
	struct weft_msg_setstripe q = {.cred = root, .ino = d.ino,
				       .layout = {.stripe_unit = 256 * 1024, .stripe_count = 1,
						  .replicas = 2}};
	OK(mc_call(m, WEFT_OP_SETSTRIPE, &q, NULL, 0, NULL));
	struct weft_msg_ino gq = {.cred = root, .ino = d.ino};
	struct frame *fr = NULL;
	OK(mc_call(m, WEFT_OP_GETSTRIPE, &gq, NULL, 0, &fr));
	if (fr) {
		struct weft_msg_layout lm;
		OK(proto_layout_decode(fr->payload, fr->h.payload_len, &lm, NULL));
		TRUE(lm.is_default && lm.layout.stripe_unit == 256 * 1024 && lm.layout.replicas == 2);
	}
	frame_free(fr);
	struct weft_layout l = {0};
	struct weft_msg_create cq = {.cred = root, .parent = d.ino, .name = MC_STR("in"),
				     .mode = S_IFREG | 0644, .flags = WEFT_CREATE_EXCL};
	OK(mc_entry(m, WEFT_OP_CREATE, &cq, &f, &l));
	TRUE(l.stripe_unit == 256 * 1024 && l.replicas == 2 && l.stripe_count == 1);
	gq.ino = f.ino;
	OK(mc_call(m, WEFT_OP_GETSTRIPE, &gq, NULL, 0, &fr));
	if (fr) {
		struct weft_msg_layout lm;
		OK(proto_layout_decode(fr->payload, fr->h.payload_len, &lm, NULL));
		TRUE(!lm.is_default && lm.layout.first_chain == l.first_chain);
	}
	frame_free(fr);
	/* more replicas than nodes: refused with a reason */
	q.layout.replicas = 3;
	EXPECT(mc_call(m, WEFT_OP_SETSTRIPE, &q, NULL, 0, NULL), -EINVAL);
	TRUE(strstr(m->detail, "storage nodes") != NULL);
	q.layout.replicas = 1;
	q.cred = user;
	EXPECT(mc_call(m, WEFT_OP_SETSTRIPE, &q, NULL, 0, NULL), -EPERM);
	/* statfs sums the targets */
	OK(mc_call(m, WEFT_OP_STATFS, NULL, NULL, 0, &fr));
	if (fr) {
		struct weft_msg_statfs_reply s;
		OK(proto_statfs_reply_decode(fr->payload, fr->h.payload_len, &s, NULL));
		EXPECT(s.bsize, 4096);
		EXPECT(s.namemax, 255);
		TRUE(s.blocks >= (1ULL << 40) / 4096 && s.bfree <= s.blocks && s.files > s.ffree &&
		     s.files - s.ffree > 10);
	}
	frame_free(fr);
}

/* Long names: 255 bytes work, 256 are ENAMETOOLONG (sent hand-encoded: the encoder
 * refuses them). */
static void t_names(struct mc *m)
{
	char n255[256];
	memset(n255, 'a', 255);
	n255[255] = '\0';
	struct weft_attr x;
	OK(mc_create(m, &root, 1, n255, S_IFREG | 0644, WEFT_CREATE_EXCL, &x));
	OK(mc_lookup(m, &root, 1, n255, &x));
	OK(mc_name_op(m, WEFT_OP_UNLINK, &root, 1, n255));
	/* LOOKUP {cred, parent, name(256)} */
	struct wbuf w;
	wbuf_init(&w);
	wbuf_u32(&w, 0); wbuf_u32(&w, 0); wbuf_u32(&w, 0); wbuf_u8(&w, 0); /* cred */
	wbuf_u64(&w, 1);
	char n256[256];
	memset(n256, 'b', 256);
	wbuf_str(&w, n256, 256);
	EXPECT(mc_call_raw(m, WEFT_OP_LOOKUP, w.data, w.len, NULL), -ENAMETOOLONG);
	/* CREATE with the same long name, then mode, rdev, flags */
	wbuf_u32(&w, S_IFREG | 0644); wbuf_u32(&w, 0); wbuf_u32(&w, 0);
	EXPECT(mc_call_raw(m, WEFT_OP_CREATE, w.data, w.len, NULL), -ENAMETOOLONG);
	wbuf_free(&w);
	/* '/' and NUL inside names, empty names */
	EXPECT(mc_create(m, &root, 1, "a/b", S_IFREG | 0644, WEFT_CREATE_EXCL, &x), -EINVAL);
	struct weft_msg_create cq = {.cred = root, .parent = 1, .name = proto_str_of("a\0b", 3),
				     .mode = S_IFREG | 0644};
	EXPECT(mc_entry(m, WEFT_OP_CREATE, &cq, NULL, NULL), -EINVAL);
	EXPECT(mc_create(m, &root, 1, "", S_IFREG | 0644, WEFT_CREATE_EXCL, &x), -ENOENT);
	EXPECT(mc_lookup(m, &root, 1, "", &x), -ENOENT);
	EXPECT(mc_rename(m, &root, 1, "sl", 1, "x/y", 0), -EINVAL);
	EXPECT(mc_name_op(m, WEFT_OP_UNLINK, &root, 1, "a/b"), -EINVAL);
}

/* READDIR: '.' and '..' first, pages never over max_bytes, every entry once, plus
 * carries attributes. */
static void t_readdir(struct mc *m)
{
	struct weft_attr d, x;
	OK(mc_create(m, &root, 1, "big", S_IFDIR | 0755, WEFT_CREATE_EXCL, &d));
	enum { N = 600 };
	for (int i = 0; i < N; i++) {
		char name[64];
		snprintf(name, sizeof(name), "entry-%04d-%s", i, i % 7 ? "f" : "with-a-longer-name");
		OK(mc_create(m, &root, d.ino, name, i % 10 ? S_IFREG | 0644 : S_IFDIR | 0755,
			     WEFT_CREATE_EXCL, &x));
	}
	/* one small page */
	struct ent *e = NULL;
	size_t n = 0, bytes = 0;
	bool eof = true;
	OK(readdir_page(m, &root, d.ino, 0, 100 /* raised to 4096 */, true, &e, &n, &eof, &bytes));
	TRUE(n > 2 && !eof && bytes <= 4096);
	TRUE(n > 0 && strcmp(e[0].name, ".") == 0 && e[0].ino == d.ino && e[0].has_attr);
	TRUE(n > 1 && strcmp(e[1].name, "..") == 0 && e[1].ino == 1);
	free(e);
	for (int plus = 0; plus < 2; plus++) {
		OK(list_all(m, &root, d.ino, 4096, plus, &e, &n));
		EXPECT(n, N + 2);
		int bad = 0;
		for (size_t i = 2; i < n; i++) {
			if (strncmp(e[i].name, "entry-", 6) != 0 || find_ent(e + i + 1, n - i - 1, e[i].name))
				bad++;
			int k = atoi(e[i].name + 6);
			if (e[i].type != (k % 10 ? DT_REG : DT_DIR))
				bad++;
			if (plus && (!e[i].has_attr || e[i].attr.ino != e[i].ino))
				bad++;
			if (!plus && e[i].has_attr)
				bad++;
		}
		EXPECT(bad, 0);
		free(e);
	}
	/* a file is not a directory; an unknown one is stale */
	OK(mc_lookup(m, &root, d.ino, "entry-0001-f", &x));
	EXPECT(list_all(m, &root, x.ino, 4096, false, &e, &n), -ENOTDIR);
	free(e);
	EXPECT(list_all(m, &root, 1ULL << 50, 4096, false, &e, &n), -ESTALE);
	free(e);
	/* a huge max_bytes is capped and still consistent */
	OK(list_all(m, &root, d.ino, 64 << 20, true, &e, &n));
	EXPECT(n, N + 2);
	free(e);
}

/* Listings stay consistent while another client changes the directory: entries
 * present for the whole listing appear exactly once, none twice. */
struct churn {
	uint64_t dir;
	atomic_bool stop;
	int errors;
};

static void *churn_main(void *arg)
{
	struct churn *ch = arg;
	struct mc m;
	if (mc_open(&m, NULL, &g_key, g_addr)) {
		ch->errors++;
		return NULL;
	}
	for (int i = 0; !atomic_load(&ch->stop); i++) {
		char name[64];
		snprintf(name, sizeof(name), "churn-%d", i);
		if (mc_create(&m, &root, ch->dir, name, S_IFREG | 0644, WEFT_CREATE_EXCL, NULL))
			ch->errors++;
		if (i >= 20) {
			snprintf(name, sizeof(name), "churn-%d", i - 20);
			if (mc_name_op(&m, WEFT_OP_UNLINK, &root, ch->dir, name))
				ch->errors++;
		}
	}
	mc_close(&m);
	return NULL;
}

static void t_readdir_churn(struct mc *m)
{
	struct weft_attr d;
	OK(mc_create(m, &root, 1, "churn", S_IFDIR | 0755, WEFT_CREATE_EXCL, &d));
	enum { STABLE = 400 };
	for (int i = 0; i < STABLE; i++) {
		char name[64];
		snprintf(name, sizeof(name), "stable-%d", i);
		OK(mc_create(m, &root, d.ino, name, S_IFREG | 0644, WEFT_CREATE_EXCL, NULL));
	}
	struct churn ch = {.dir = d.ino};
	pthread_t t;
	pthread_create(&t, NULL, churn_main, &ch);
	usleep(50000);
	for (int round = 0; round < 20; round++) {
		struct ent *e = NULL;
		size_t n = 0;
		OK(list_all(m, &root, d.ino, 4096, round & 1, &e, &n));
		int stable = 0, dups = 0;
		for (size_t i = 0; i < n; i++) {
			if (strncmp(e[i].name, "stable-", 7) == 0)
				stable++;
			for (size_t j = i + 1; j < n; j++)
				if (strcmp(e[i].name, e[j].name) == 0)
					dups++;
		}
		EXPECT(stable, STABLE);
		EXPECT(dups, 0);
		free(e);
	}
	atomic_store(&ch.stop, true);
	pthread_join(t, NULL);
	EXPECT(ch.errors, 0);
}

static void t_unknown(struct mc *m)
{
	/* an opcode outside the protocol: the transport closes that connection (the rpc
	 * reconnects on the next call) */
	int rc = mc_call_raw(m, 0x0999, NULL, 0, NULL);
	TRUE(rc == -ENOTCONN || rc == -ENOSYS);
	/* a known opcode meta does not serve: ENOSYS */
	struct weft_msg_obj_delete od = {.ino = 5};
	EXPECT(mc_call(m, WEFT_OP_OBJ_DELETE, &od, NULL, 0, NULL), -ENOSYS);
	struct weft_msg_recall rq = {.ino = 1};
	EXPECT(mc_call(m, WEFT_OP_RECALL, &rq, NULL, 0, NULL), -EOPNOTSUPP);
	struct weft_msg_ping p = {.token = 77};
	OK(mc_call(m, WEFT_OP_PING, &p, NULL, 0, NULL));
}

/* root_squash is a file system option: when the fs was made with it, uid 0 is nobody. */
static void t_root_squash(struct mc *m)
{
	struct weft_attr x;
	int rc = mc_create(m, &root, 1, "squashed", S_IFREG | 0644, WEFT_CREATE_EXCL, &x);
	EXPECT(rc, -EACCES);
}

int run_proto(struct mc *m, bool squash)
{
	if (squash) {
		t_root_squash(m);
		return 0;
	}
	t_targets(m);
	t_sessions(m);
	t_basic(m);
	t_setattr(m);
	t_perms(m);
	t_open(m);
	t_create_open(m);
	t_xattr(m);
	t_stripe_statfs(m);
	t_names(m);
	t_readdir(m);
	t_readdir_churn(m);
	t_unknown(m);
	return 0;
}
