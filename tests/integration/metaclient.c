/* metaclient: protocol-level tests of a running `weft meta`, through the wire protocol
 * alone (src/net/rpc.h + src/proto/proto.h).
 *
 * usage: metaclient KEYFILE ADDR proto          every operation and its errno cases
 *        metaclient KEYFILE ADDR bad            malformed and hostile input
 *        metaclient KEYFILE ADDR crash LOG R T  T threads create/rename/unlink in dir
 *                                               "rR" until meta dies; intents and acks
 *                                               appended to LOG
 *        metaclient KEYFILE ADDR verify LOG     every acknowledged op of LOG is there,
 *                                               nothing is half-applied
 * Exit status 0 when every check passed; each failed check prints file:line. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/addr.h"
#include "net/auth.h"
#include "proto/chainset.h"
#include "metacall.h"

static int failures, checks;
static const char *g_addr;
static struct weft_key g_key;

#define EXPECT(expr, want) do { \
	long got_ = (long)(expr), want_ = (long)(want); \
	checks++; \
	if (got_ != want_) { \
		failures++; \
		fprintf(stderr, "%s:%d: %s: got %ld (%s), want %ld (%s)\n", __FILE__, __LINE__, \
			#expr, got_, weft_strerror((int)got_), want_, weft_strerror((int)want_)); \
	} } while (0)
#define OK(expr) EXPECT(expr, 0)
#define TRUE(cond) do { \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "%s:%d: not true: %s\n", __FILE__, __LINE__, #cond); \
	} } while (0)

static struct weft_cred root, user, other;

/* ---- readdir helper: collects every entry of a directory ---- */

struct ent {
	char name[WEFT_NAME_MAX + 1];
	uint64_t ino, cookie;
	uint8_t type;
	bool has_attr;
	struct weft_attr attr;
};

/* One READDIR page; returns status, appends to *out. */
static int readdir_page(struct mc *m, const struct weft_cred *cr, uint64_t ino, uint64_t cookie,
			uint32_t max, bool plus, struct ent **out, size_t *n, bool *eof,
			size_t *bytes)
{
	struct weft_msg_readdir q = {.cred = *cr, .ino = ino, .cookie = cookie, .max_bytes = max,
				     .plus = plus};
	struct frame *f = NULL;
	int rc = mc_call(m, WEFT_OP_READDIR, &q, NULL, 0, &f);
	if (rc) {
		frame_free(f);
		return rc;
	}
	struct weft_msg_dirlist dl;
	if (weft_dirlist_decode(f->payload, f->h.payload_len, &dl, NULL)) {
		frame_free(f);
		return -EIO;
	}
	if (bytes)
		*bytes = f->h.bulk_len;
	struct rbuf r;
	rbuf_init(&r, f->bulk, f->h.bulk_len);
	struct weft_dirent d;
	uint32_t cnt = 0;
	while ((rc = weft_dirent_next(&r, &d)) == 0) {
		*out = realloc(*out, (*n + 1) * sizeof(**out));
		struct ent *e = &(*out)[(*n)++];
		weft_str_copy(e->name, sizeof(e->name), d.name);
		e->ino = d.ino;
		e->cookie = d.next_cookie;
		e->type = d.type;
		e->has_attr = d.has_attr;
		e->attr = d.attr;
		cnt++;
	}
	frame_free(f);
	if (rc < 0 || cnt != dl.count)
		return -EIO;
	*eof = dl.eof;
	return 0;
}

static int list_all(struct mc *m, const struct weft_cred *cr, uint64_t ino, uint32_t max,
		    bool plus, struct ent **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	uint64_t cookie = 0;
	for (int guard = 0; guard < 1000000; guard++) {
		bool eof = false;
		size_t before = *n;
		int rc = readdir_page(m, cr, ino, cookie, max, plus, out, n, &eof, NULL);
		if (rc)
			return rc;
		if (*n > before)
			cookie = (*out)[*n - 1].cookie;
		if (eof || *n == before)
			return 0;
	}
	return -ELOOP;
}

static struct ent *find_ent(struct ent *e, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(e[i].name, name) == 0)
			return &e[i];
	return NULL;
}

/* ---- the protocol tests ---- */

static uint64_t session;

static void t_targets(struct mc *m)
{
	uint32_t a, b, a2;
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
		OK(weft_heartbeat_reply_decode(f->payload, f->h.payload_len, &hr, NULL));
	TRUE(hr.lease_ms > 0 && hr.chains_version > 0);
	frame_free(f);
	hb.target = 999;
	EXPECT(mc_call(m, WEFT_OP_TARGET_HEARTBEAT, &hb, NULL, 0, NULL), -ENOENT);

	/* chains: both tables for 1 and 2 replicas exist, none for 3 */
	struct weft_msg_chains_get cg = {0};
	OK(mc_call(m, WEFT_OP_CHAINS_GET, &cg, NULL, 0, &f));
	struct meta_chain_set set = {0};
	uint64_t v1 = 0;
	if (f) {
		struct weft_msg_chains cm;
		OK(weft_chains_decode(f->payload, f->h.payload_len, &cm, NULL));
		v1 = cm.version;
		struct rbuf r;
		rbuf_init(&r, f->bulk, f->h.bulk_len);
		OK(meta_chain_set_decode(&r, &set));
		EXPECT(set.ntargets, 2);
		EXPECT(set.nchains[0], 2);
		EXPECT(set.nchains[1], 2);
		EXPECT(set.nchains[2], 0);
		/* the unspecified host ":2" became the peer's address */
		for (uint32_t i = 0; i < set.ntargets; i++)
			if (set.targets[i].id == b)
				TRUE(strcmp(set.targets[i].addr, "127.0.0.1:2") == 0);
		meta_chain_set_free(&set);
	}
	frame_free(f);
	/* a reported target that does not answer meta's probe (nothing listens on port 2)
	 * goes offline, asynchronously: the version moves */
	struct weft_msg_target_failed tf = {.reporter = a, .target = b, .chain = 0, .replicas = 2};
	OK(mc_call(m, WEFT_OP_TARGET_FAILED, &tf, NULL, 0, NULL));
	for (int i = 0; i < 100; i++) {
		OK(mc_call(m, WEFT_OP_CHAINS_GET, &cg, NULL, 0, &f));
		struct weft_msg_chains cm;
		if (!f || weft_chains_decode(f->payload, f->h.payload_len, &cm, NULL) ||
		    cm.version > v1)
			break;
		frame_free(f);
		f = NULL;
		usleep(50000);
	}
	if (f) {
		struct weft_msg_chains cm;
		OK(weft_chains_decode(f->payload, f->h.payload_len, &cm, NULL));
		TRUE(cm.version > v1);
		struct rbuf r;
		rbuf_init(&r, f->bulk, f->h.bulk_len);
		OK(meta_chain_set_decode(&r, &set));
		const struct meta_chain *c = meta_chain_set_get(&set, 2, 0);
		TRUE(c && c->members[1].state == WEFT_MEMBER_OFFLINE);
		meta_chain_set_free(&set);
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
		OK(weft_targets_decode(f->payload, f->h.payload_len, &tm, NULL));
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
		OK(weft_session_decode(f->payload, f->h.payload_len, &s, NULL));
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
		OK(weft_path_decode(f->payload, f->h.payload_len, &p, NULL));
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
	struct weft_attr f, x;
	OK(mc_create(m, &root, 1, "attrs", S_IFREG | 0644, WEFT_CREATE_EXCL, &f));
	struct weft_msg_setattr q = {.cred = root, .ino = f.ino, .valid = WEFT_SET_MODE,
				     .mode = 0600};
	struct frame *fr = NULL;
	OK(mc_call(m, WEFT_OP_SETATTR, &q, NULL, 0, &fr));
	if (fr) {
		struct weft_msg_attr am;
		OK(weft_attr_decode(fr->payload, fr->h.payload_len, &am, NULL));
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
		OK(weft_attr_decode(fr->payload, fr->h.payload_len, &am, NULL));
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
		OK(weft_opened_decode(fr->payload, fr->h.payload_len, &o, NULL));
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
		OK(weft_session_decode(fr->payload, fr->h.payload_len, &s, NULL));
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
		OK(weft_opened_decode(fr->payload, fr->h.payload_len, &o, NULL));
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
		OK(weft_opened_decode(fr->payload, fr->h.payload_len, &o, NULL));
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
		OK(weft_size_decode(fr->payload, fr->h.payload_len, &s, NULL));
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
	struct weft_attr d, f;
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
		OK(weft_layout_decode(fr->payload, fr->h.payload_len, &lm, NULL));
		TRUE(lm.is_default && lm.layout.stripe_unit == 256 * 1024 && lm.layout.replicas == 2);
	}
	frame_free(fr);
	struct weft_layout l;
	struct weft_msg_create cq = {.cred = root, .parent = d.ino, .name = MC_STR("in"),
				     .mode = S_IFREG | 0644, .flags = WEFT_CREATE_EXCL};
	OK(mc_entry(m, WEFT_OP_CREATE, &cq, &f, &l));
	TRUE(l.stripe_unit == 256 * 1024 && l.replicas == 2 && l.stripe_count == 1);
	gq.ino = f.ino;
	OK(mc_call(m, WEFT_OP_GETSTRIPE, &gq, NULL, 0, &fr));
	if (fr) {
		struct weft_msg_layout lm;
		OK(weft_layout_decode(fr->payload, fr->h.payload_len, &lm, NULL));
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
		OK(weft_statfs_reply_decode(fr->payload, fr->h.payload_len, &s, NULL));
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
	struct weft_msg_create cq = {.cred = root, .parent = 1, .name = weft_str_of("a\0b", 3),
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

static int run_proto(struct mc *m, bool squash)
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

/* ---- bad input ---- */

static int raw_auth(void)
{
	struct weft_addr a;
	if (addr_parse(g_addr, 7070, &a))
		return -1;
	int fd = addr_connect(&a, 3000);
	if (fd < 0)
		return -1;
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	uint8_t nonce_c[WEFT_NONCE_LEN], hdr[WEFT_HDR_SIZE];
	auth_random(nonce_c, sizeof(nonce_c));
	struct weft_msg_hello h = {.ver_min = 1, .ver_max = 1, .role = WEFT_ROLE_CLIENT,
				   .name = MC_STR("raw")};
	memcpy(h.nonce, nonce_c, sizeof(nonce_c));
	struct wbuf w;
	wbuf_init(&w);
	weft_hello_encode(&w, &h);
	struct weft_hdr hh = {.magic = WEFT_MAGIC, .version = 1, .opcode = WEFT_OP_HELLO,
			      .reqid = 1, .payload_len = (uint32_t)w.len};
	weft_hdr_encode(hdr, &hh);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    write(fd, w.data, w.len) != (ssize_t)w.len)
		goto fail;
	wbuf_free(&w);
	uint8_t buf[4096];
	if (recv(fd, hdr, sizeof(hdr), MSG_WAITALL) != (ssize_t)sizeof(hdr))
		goto fail;
	struct weft_hdr rh;
	if (weft_hdr_decode(hdr, &rh, NULL) || rh.payload_len > sizeof(buf) ||
	    recv(fd, buf, rh.payload_len, MSG_WAITALL) != (ssize_t)rh.payload_len)
		goto fail;
	struct weft_msg_hello_reply hr;
	if (weft_hello_reply_decode(buf, rh.payload_len, &hr, NULL))
		goto fail;
	struct weft_msg_auth am;
	auth_mac(&g_key, "weft-client", nonce_c, hr.nonce, hr.version, am.mac);
	wbuf_init(&w);
	weft_auth_encode(&w, &am);
	hh = (struct weft_hdr){.magic = WEFT_MAGIC, .version = 1, .opcode = WEFT_OP_AUTH,
			       .reqid = 2, .payload_len = (uint32_t)w.len};
	weft_hdr_encode(hdr, &hh);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    write(fd, w.data, w.len) != (ssize_t)w.len)
		goto fail;
	wbuf_free(&w);
	if (recv(fd, hdr, sizeof(hdr), MSG_WAITALL) != (ssize_t)sizeof(hdr) ||
	    weft_hdr_decode(hdr, &rh, NULL) || rh.status != 0 || rh.payload_len > sizeof(buf) ||
	    recv(fd, buf, rh.payload_len, MSG_WAITALL) != (ssize_t)rh.payload_len)
		goto fail;
	return fd;
fail:
	wbuf_free(&w);
	close(fd);
	return -1;
}

/* After authenticating: garbage bytes -> the server closes this connection. */
static void t_garbage_after_auth(void)
{
	int fd = raw_auth();
	TRUE(fd >= 0);
	if (fd < 0)
		return;
	char junk[256];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 37 + 11);
	ssize_t wr = write(fd, junk, sizeof(junk));
	(void)wr;
	char b[64];
	ssize_t r;
	while ((r = read(fd, b, sizeof(b))) > 0)
		;
	EXPECT(r, 0); /* EOF: closed by the server, not a timeout */
	close(fd);
	/* a header announcing more payload than allowed */
	fd = raw_auth();
	TRUE(fd >= 0);
	if (fd < 0)
		return;
	uint8_t hdr[WEFT_HDR_SIZE];
	struct weft_hdr h = {.magic = WEFT_MAGIC, .version = 1, .opcode = WEFT_OP_LOOKUP,
			     .reqid = 9, .payload_len = WEFT_PAYLOAD_MAX + 1};
	weft_hdr_encode(hdr, &h);
	wr = write(fd, hdr, sizeof(hdr));
	while ((r = read(fd, b, sizeof(b))) > 0)
		;
	EXPECT(r, 0);
	close(fd);
}

static int run_bad(struct mc *m)
{
	struct weft_attr x;
	uint32_t t;
	/* a target so that files can be made (a second run registers the same uuid) */
	OK(mc_register(m, 0xc3, "bad-node", "127.0.0.1:1", &t));
	int rc = mc_create(m, &root, 1, "badroot", S_IFDIR | 0755, 0, &x);
	if (rc == -EEXIST) /* a second run on the same fs */
		rc = mc_lookup(m, &root, 1, "badroot", &x);
	OK(rc);
	uint64_t d = x.ino;
	/* malformed payloads of every meta opcode: an errno each, never a dead server */
	static const uint16_t ops[] = {
		0x0101, 0x0102, 0x0103, 0x0104, 0x0105, 0x0106, 0x0107, 0x0108, 0x0109, 0x010a,
		0x010b, 0x010c, 0x010e, 0x010f, 0x0110, 0x0111, 0x0112, 0x0113, 0x0114, 0x0115,
		0x0116, 0x0117, 0x0118, 0x0201, 0x0202, 0x0203, 0x0301, 0x0302, 0x0303, 0x0304};
	uint8_t junk[600];
	unsigned seed = 12345;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		for (int k = 0; k < 20; k++) {
			size_t len = (size_t)(rand_r(&seed) % 3 ? rand_r(&seed) % 40 : rand_r(&seed) % 600);
			for (size_t j = 0; j < len; j++)
				junk[j] = (uint8_t)rand_r(&seed);
			int r2 = mc_call_raw(m, ops[i], junk, len, NULL);
			/* random bytes rarely decode; when they do, any errno or success is fine */
			TRUE(r2 <= 0 && r2 != -ENOTCONN && r2 != -ETIMEDOUT);
		}
		/* truncated: empty payload is malformed for every request with fields */
		if (ops[i] != WEFT_OP_STATFS) {
			EXPECT(mc_call_raw(m, ops[i], NULL, 0, NULL), -WEFT_EPROTO);
			TRUE(m->detail[0] != '\0');
		}
	}
	/* names */
	EXPECT(mc_create(m, &root, d, "x/y", S_IFREG | 0644, 0, &x), -EINVAL);
	EXPECT(mc_create(m, &root, d, "/", S_IFDIR | 0755, WEFT_CREATE_EXCL, &x), -EINVAL);
	struct weft_msg_name nq = {.cred = root, .parent = d, .name = weft_str_of("\0", 1)};
	EXPECT(mc_call(m, WEFT_OP_UNLINK, &nq, NULL, 0, NULL), -EINVAL);
	EXPECT(mc_create(m, &root, d, "", S_IFDIR | 0755, WEFT_CREATE_EXCL, &x), -ENOENT);
	EXPECT(mc_create(m, &root, d, ".", S_IFREG | 0644, 0, &x), -EEXIST);
	EXPECT(mc_create(m, &root, d, "..", S_IFDIR | 0755, WEFT_CREATE_EXCL, &x), -EEXIST);
	EXPECT(mc_rename(m, &root, 1, "badroot", d, "..", 0), -EBUSY);
	EXPECT(mc_name_op(m, WEFT_OP_RMDIR, &root, 1, "."), -EINVAL);
	struct weft_msg_link lq = {.cred = root, .ino = d, .newparent = d, .newname = MC_STR(".")};
	EXPECT(mc_entry(m, WEFT_OP_LINK, &lq, NULL, NULL), -EEXIST);
	/* inodes that never existed, and an old generation */
	EXPECT(mc_getattr(m, &root, 0, 0, &x), -ESTALE);
	EXPECT(mc_getattr(m, &root, UINT64_MAX, 0, &x), -ESTALE);
	EXPECT(mc_lookup(m, &root, 1ULL << 40, "x", &x), -ESTALE);
	EXPECT(mc_create(m, &root, 1ULL << 40, "x", S_IFREG | 0644, 0, &x), -ESTALE);
	OK(mc_create(m, &root, d, "gen", S_IFREG | 0644, 0, &x));
	OK(mc_name_op(m, WEFT_OP_UNLINK, &root, d, "gen"));
	EXPECT(mc_getattr(m, &root, x.ino, x.gen, &x), -ESTALE);
	/* bad flags */
	EXPECT(mc_rename(m, &root, 1, "badroot", 1, "b2", 0x80), -EINVAL);
	struct weft_msg_access aq = {.cred = root, .ino = 1, .mask = 0x40};
	EXPECT(mc_call(m, WEFT_OP_ACCESS, &aq, NULL, 0, NULL), -EINVAL);
	struct weft_msg_open oq = {.cred = root, .ino = 1, .flags = 3};
	EXPECT(mc_call(m, WEFT_OP_OPEN, &oq, NULL, 0, NULL), -EINVAL);
	/* garbage after authentication closes that connection only */
	t_garbage_after_auth();
	/* the server still serves, on this connection and a new one */
	OK(mc_getattr(m, &root, d, 0, &x));
	struct mc m2;
	OK(mc_open(&m2, NULL, &g_key, g_addr));
	OK(mc_getattr(&m2, &root, 1, 0, &x));
	mc_close(&m2);
	return 0;
}

/* ---- crash workload and its verification ---- */

static int logfd;
static atomic_bool crash_stop;

static void logline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logline(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* one write per line: O_APPEND keeps lines whole between threads */
	if (write(logfd, buf, (size_t)n) != n)
		abort();
}

struct crash_arg {
	int round, tid;
	uint64_t dir;
	struct mc m;
};

static void *crash_main(void *arg)
{
	struct crash_arg *a = arg;
	int r = a->round, t = a->tid;
	char f[64], g[64];
	for (int i = 0; !atomic_load(&crash_stop); i++) {
		snprintf(f, sizeof(f), "f%d.%d", t, i);
		snprintf(g, sizeof(g), "g%d.%d", t, i);
		logline("I %d %d C %s\n", r, t, f);
		if (mc_create(&a->m, &root, a->dir, f, S_IFREG | 0644, WEFT_CREATE_EXCL, NULL))
			break;
		logline("A %d %d\n", r, t);
		logline("I %d %d R %s %s\n", r, t, f, g);
		if (mc_rename(&a->m, &root, a->dir, f, a->dir, g, 0))
			break;
		logline("A %d %d\n", r, t);
		if (i % 3 == 0) {
			logline("I %d %d U %s\n", r, t, g);
			if (mc_name_op(&a->m, WEFT_OP_UNLINK, &root, a->dir, g))
				break;
			logline("A %d %d\n", r, t);
		}
	}
	atomic_store(&crash_stop, true);
	return NULL;
}

static int run_crash(const char *log, int round, int threads)
{
	logfd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (logfd < 0)
		return 1;
	struct loop *loop;
	if (loop_new(&loop) || loop_start(loop))
		return 1;
	struct crash_arg *a = calloc((size_t)threads, sizeof(*a));
	for (int t = 0; t < threads; t++) {
		if (mc_open(&a[t].m, loop, &g_key, g_addr)) {
			fprintf(stderr, "crash: cannot connect\n");
			return 1;
		}
	}
	struct weft_attr d;
	char dn[32];
	snprintf(dn, sizeof(dn), "r%d", round);
	if (round == 0) {
		uint32_t id;
		if (mc_register(&a[0].m, 0xd4, "crash-node", "127.0.0.1:1", &id))
			return 1;
	}
	if (mc_create(&a[0].m, &root, 1, dn, S_IFDIR | 0755, WEFT_CREATE_EXCL, &d)) {
		fprintf(stderr, "crash: mkdir %s failed\n", dn);
		return 1;
	}
	logline("D %d %llu\n", round, (unsigned long long)d.ino);
	fprintf(stdout, "ready\n");
	fflush(stdout);
	pthread_t *th = calloc((size_t)threads, sizeof(*th));
	for (int t = 0; t < threads; t++) {
		a[t].round = round;
		a[t].tid = t;
		a[t].dir = d.ino;
		pthread_create(&th[t], NULL, crash_main, &a[t]);
	}
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < threads; t++)
		mc_close(&a[t].m);
	loop_free(loop);
	close(logfd);
	free(th);
	free(a);
	return 0;
}

/* Expected state of one name: 1 present, 0 absent, 2 either (an unacknowledged op). */
struct want {
	char name[32];
	int state;
	char pair[32]; /* unacknowledged rename: exactly one of name/pair */
};

struct thr {
	char op, a[32], b[32];
	bool pending;
};

static struct want *want_get(struct want **w, size_t *n, const char *name)
{
	for (size_t i = *n; i-- > 0;)
		if (strcmp((*w)[i].name, name) == 0)
			return &(*w)[i];
	*w = realloc(*w, (*n + 1) * sizeof(**w));
	struct want *x = &(*w)[(*n)++];
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%s", name);
	return x;
}

static int run_verify(struct mc *m, const char *log)
{
	FILE *f = fopen(log, "r");
	if (!f)
		return 1;
	enum { MAXR = 64, MAXT = 64 };
	uint64_t dirs[MAXR] = {0};
	struct want *w[MAXR] = {0};
	size_t nw[MAXR] = {0};
	static struct thr th[MAXR][MAXT];
	char line[256];
	int acked = 0;
	while (fgets(line, sizeof(line), f)) {
		int r, t;
		char op, a[32], b[32];
		unsigned long long ino;
		if (sscanf(line, "D %d %llu", &r, &ino) == 2 && r >= 0 && r < MAXR) {
			dirs[r] = ino;
		} else if (sscanf(line, "I %d %d %c %31s %31s", &r, &t, &op, a, b) >= 4 &&
			   r >= 0 && r < MAXR && t >= 0 && t < MAXT) {
			TRUE(!th[r][t].pending); /* one op in flight per thread */
			th[r][t] = (struct thr){.op = op, .pending = true};
			snprintf(th[r][t].a, 32, "%s", a);
			if (op == 'R')
				snprintf(th[r][t].b, 32, "%s", b);
		} else if (sscanf(line, "A %d %d", &r, &t) == 2 && r >= 0 && r < MAXR && t >= 0 &&
			   t < MAXT) {
			struct thr *x = &th[r][t];
			TRUE(x->pending);
			x->pending = false;
			acked++;
			if (x->op == 'C')
				want_get(&w[r], &nw[r], x->a)->state = 1;
			else if (x->op == 'U')
				want_get(&w[r], &nw[r], x->a)->state = 0;
			else if (x->op == 'R') {
				want_get(&w[r], &nw[r], x->a)->state = 0;
				want_get(&w[r], &nw[r], x->b)->state = 1;
			}
		}
	}
	fclose(f);
	int unacked = 0;
	for (int r = 0; r < MAXR; r++)
		for (int t = 0; t < MAXT; t++) {
			struct thr *x = &th[r][t];
			if (!x->pending)
				continue;
			unacked++;
			struct want *p = want_get(&w[r], &nw[r], x->a);
			p->state = 2;
			if (x->op == 'R') {
				snprintf(p->pair, sizeof(p->pair), "%s", x->b);
				want_get(&w[r], &nw[r], x->b)->state = 2;
			}
		}
	int rounds = 0, present = 0;
	for (int r = 0; r < MAXR; r++) {
		if (!dirs[r])
			continue;
		rounds++;
		struct ent *e;
		size_t n;
		int rc = list_all(m, &root, dirs[r], 65536, true, &e, &n);
		OK(rc);
		if (rc)
			continue;
		/* every listed entry is expected (or possible), with a sound inode */
		for (size_t i = 2; i < n; i++) {
			struct want *x = NULL;
			for (size_t k = 0; k < nw[r]; k++)
				if (strcmp(w[r][k].name, e[i].name) == 0)
					x = &w[r][k];
			if (!x || x->state == 0) {
				failures++;
				fprintf(stderr, "round %d: %s present but %s\n", r, e[i].name,
					x ? "its removal was acknowledged" : "never created");
			}
			if (!e[i].has_attr || e[i].attr.nlink != 1 || !S_ISREG(e[i].attr.mode)) {
				failures++;
				fprintf(stderr, "round %d: %s has a bad inode (nlink %u)\n", r,
					e[i].name, e[i].attr.nlink);
			}
			present++;
		}
		for (size_t k = 0; k < nw[r]; k++) {
			struct want *x = &w[r][k];
			bool here = find_ent(e + 2, n - 2, x->name) != NULL;
			if (x->state == 1 && !here) {
				failures++;
				fprintf(stderr, "round %d: %s missing but its creation was acknowledged\n",
					r, x->name);
			}
			if (x->pair[0]) {
				bool there = find_ent(e + 2, n - 2, x->pair) != NULL;
				if (here == there) {
					failures++;
					fprintf(stderr, "round %d: rename %s -> %s half-applied (%s)\n", r,
						x->name, x->pair, here ? "both" : "neither");
				}
			}
		}
		struct weft_attr da = {0};
		OK(mc_getattr(m, &root, dirs[r], 0, &da));
		EXPECT(da.nlink, 2);
		free(e);
		free(w[r]);
	}
	printf("verify: %d rounds, %d acknowledged ops, %d in flight at the kills, %d files "
	       "present\n", rounds, acked, unacked, present);
	return 0;
}

/* ---- a fake store: registers, heartbeats, answers OBJ_DELETE (for the deleter) ---- */

#include <signal.h>
#include "net/server.h"

static volatile sig_atomic_t fake_stop;
static void fake_on_term(int sig) { (void)sig; fake_stop = 1; }

static void fake_request(struct conn *c, struct frame *f)
{
	if (f->h.opcode == WEFT_OP_OBJ_DELETE) {
		struct weft_msg_obj_delete m;
		if (weft_obj_delete_decode(f->payload, f->h.payload_len, &m, NULL) == 0) {
			printf("deleted %llu role %u\n", (unsigned long long)m.ino, conn_peer_role(c));
			fflush(stdout);
			conn_reply(c, f, 0, NULL, NULL, 0, NULL, NULL);
		} else {
			conn_reply(c, f, -WEFT_EPROTO, NULL, NULL, 0, NULL, NULL);
		}
	} else {
		conn_reply(c, f, -ENOSYS, NULL, NULL, 0, NULL, NULL);
	}
	frame_free(f);
}

static int run_fakestore(struct mc *m)
{
	static const struct conn_ops ops = {.on_request = fake_request};
	struct loop *loop;
	struct server *srv;
	char err[256], a[64];
	if (loop_new(&loop) || loop_start(loop))
		return 1;
	struct server_params p = {.loop = loop, .key = &g_key, .listen = "127.0.0.1:0",
				  .ops = &ops};
	if (server_new(&p, &srv, err, sizeof(err)))
		return 1;
	snprintf(a, sizeof(a), ":%d", server_port(srv));
	uint32_t id = 0;
	OK(mc_register(m, 0xf0, "fake-store", a, &id));
	printf("registered target %u\n", id);
	fflush(stdout);
	signal(SIGTERM, fake_on_term);
	while (!fake_stop) {
		struct weft_msg_target_heartbeat hb = {.target = id, .capacity = 1ULL << 40,
						       .free = 1ULL << 39};
		mc_call(m, WEFT_OP_TARGET_HEARTBEAT, &hb, NULL, 0, NULL);
		usleep(300000);
	}
	loop_post(loop, (loop_task_cb)server_free, srv);
	loop_free(loop);
	return 0;
}

/* Creates a file, opens it, unlinks it, prints its ino, releases it. */
static int run_unlinkone(struct mc *m)
{
	struct weft_attr a;
	struct weft_msg_session_open so = {.node = MC_STR("deleter-test")};
	struct frame *fr = NULL;
	OK(mc_call(m, WEFT_OP_SESSION_OPEN, &so, NULL, 0, &fr));
	struct weft_msg_session s = {0};
	if (fr)
		OK(weft_session_decode(fr->payload, fr->h.payload_len, &s, NULL));
	frame_free(fr);
	char name[64];
	snprintf(name, sizeof(name), "doomed-%d", (int)getpid());
	OK(mc_create(m, &root, 1, name, S_IFREG | 0644, WEFT_CREATE_EXCL, &a));
	struct weft_msg_open q = {.cred = root, .ino = a.ino, .flags = O_RDWR, .session = s.session};
	OK(mc_call(m, WEFT_OP_OPEN, &q, NULL, 0, NULL));
	OK(mc_name_op(m, WEFT_OP_UNLINK, &root, 1, name));
	printf("ino %llu\n", (unsigned long long)a.ino);
	fflush(stdout);
	sleep(1); /* open: the deleter must not touch it yet */
	struct weft_msg_release rl = {.ino = a.ino, .session = s.session};
	OK(mc_call(m, WEFT_OP_RELEASE, &rl, NULL, 0, NULL));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: metaclient KEYFILE ADDR proto|squash|bad|register|crash LOG R T|verify LOG\n");
		return 2;
	}
	log_init("metaclient", LOG_WARN);
	char err[512];
	if (auth_key_load(argv[1], &g_key, err, sizeof(err))) {
		fprintf(stderr, "metaclient: %s\n", err);
		return 1;
	}
	g_addr = argv[2];
	root = mc_cred(0, 0);
	user = mc_cred(1000, 1000);
	other = mc_cred(2000, 2000);
	const char *mode = argv[3];
	if (strcmp(mode, "crash") == 0) {
		if (argc != 7)
			return 2;
		return run_crash(argv[4], atoi(argv[5]), atoi(argv[6]));
	}
	struct mc m;
	int rc = mc_open(&m, NULL, &g_key, g_addr);
	if (rc) {
		fprintf(stderr, "metaclient: connect %s: %s\n", g_addr, weft_strerror(rc));
		return 1;
	}
	if (strcmp(mode, "proto") == 0 || strcmp(mode, "squash") == 0)
		run_proto(&m, strcmp(mode, "squash") == 0);
	else if (strcmp(mode, "bad") == 0)
		run_bad(&m);
	else if (strcmp(mode, "fakestore") == 0)
		run_fakestore(&m);
	else if (strcmp(mode, "unlinkone") == 0)
		run_unlinkone(&m);
	else if (strcmp(mode, "register") == 0) /* a fake target, for benchmarks */
		OK(mc_register(&m, 0xe5, "bench-node", "127.0.0.1:1", NULL));
	else if (strcmp(mode, "verify") == 0 && argc == 5)
		run_verify(&m, argv[4]);
	else
		return 2;
	mc_close(&m);
	printf("metaclient %s: %d checks, %d failed\n", mode, checks, failures);
	return failures ? 1 : 0;
}
