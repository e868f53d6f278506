/* A hostile client node (issue 13): it holds a valid client credential and tries, against
 * a live cluster, what only stores, admins or meta may do, and to pass for another role
 * or node. Every attempt must be refused.
 *
 * usage: hostile CRED META_ADDR STORE_ADDR attacks
 *        hostile CRED META_ADDR policy DIR_INO  (uids and gids outside the node's policy)
 *        hostile CRED ADDR connect   (exit 0 when the credential is accepted, 3 refused)
 *        hostile CRED META_ADDR caps DIR_INO OWN VICTIM THIEF_CRED ADMIN_CRED
 * attacks prints one line per attempt ("refused: WHAT (reason)") and exits 0 when all
 * were refused, 1 when any was served.
 *
 * caps: the stores' capabilities. In directory DIR_INO (world-writable) it creates OWN
 * as nobody; VICTIM is another user's file it may not open. Against the head of each
 * file's first chain it sends OBJ_* without a capability, with another file's, with one
 * altered (MAC, ino, rights, expiry, period), with a read capability for a write, with
 * another node's (THIEF_CRED's), an expired one (meta's WEFT_META_CAP_MS must be short),
 * one of a revoked node (ADMIN_CRED revokes THIEF) and one of an evicted session (it
 * leaves a recall unanswered; meta's WEFT_META_LEASE_MS short). Each must be refused,
 * and the controls (its own valid capability, a renewal) served: "served (control)". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <unistd.h>

#include "common/log.h"
#include "net/auth.h"
#include "net/chainfetch.h"
#include "net/rpc.h"
#include "proto/chainset.h"
#include "proto/proto.h"
#include "weft/err.h"

static struct loop *loop;
static struct weft_key cred;
static int served;

static struct rpc *endpoint(const char *addr, const struct weft_key *k)
{
	struct rpc_params p = {.loop = loop, .key = k, .addr = addr,
			       .role = k->serial ? k->role : WEFT_ROLE_CLIENT,
			       .name = k->serial ? k->name : "hostile", .connect_timeout_ms = 3000};
	struct rpc *r = NULL;
	if (rpc_new(&p, &r)) {
		fprintf(stderr, "hostile: bad address %s\n", addr);
		exit(2);
	}
	return r;
}

/* Sends msg as op; an attempt is refused when the reply is an error. */
static void attempt(struct rpc *r, const char *what, uint16_t op, const void *msg)
{
	struct wbuf w;
	wbuf_init(&w);
	if (msg)
		proto_msg_encode_any((enum weft_msg_type)proto_op_req_type(op), &w, msg);
	struct frame *f = NULL;
	int rc = rpc_call(r, op, &w, NULL, 0, 10000, &f);
	char detail[256] = "";
	if (f && rc)
		conn_error_detail(f, detail, sizeof(detail));
	frame_free(f);
	if (rc == 0) {
		printf("SERVED: %s\n", what);
		served++;
	} else {
		printf("refused: %s (%s%s%s)\n", what, weft_strerror(rc), detail[0] ? ": " : "", detail);
	}
}

/* Connecting with key k must fail. */
static void attempt_connect(const char *addr, const struct weft_key *k, const char *what)
{
	struct rpc *r = endpoint(addr, k);
	struct conn *c;
	int rc = rpc_conn(r, &c);
	if (rc == 0) {
		printf("SERVED: %s\n", what);
		served++;
		conn_put(c);
	} else {
		printf("refused: %s (%s)\n", what, weft_strerror(rc));
	}
	rpc_free(r);
}

static void attacks(const char *meta_addr, const char *store_addr)
{
	struct rpc *meta = endpoint(meta_addr, &cred), *store = endpoint(store_addr, &cred);

	/* cluster control, as a client */
	struct weft_msg_target_register reg = {.node = proto_str_of("evil", 4),
					       .addr = proto_str_of("127.0.0.1:9", 11),
					       .capacity = 1ull << 40, .free = 1ull << 40};
	attempt(meta, "TARGET_REGISTER of a store of our own", WEFT_OP_TARGET_REGISTER, &reg);
	struct weft_msg_target_drain dr = {.target = 1};
	attempt(meta, "TARGET_DRAIN of target 1", WEFT_OP_TARGET_DRAIN, &dr);
	struct weft_msg_node_add na = {.name = proto_str_of("evil", 4), .role = WEFT_ROLE_ADMIN};
	attempt(meta, "NODE_ADD of an admin credential", WEFT_OP_NODE_ADD, &na);
	struct weft_msg_node_name nn = {.name = proto_str_of("node0", 5)};
	attempt(meta, "NODE_REVOKE of another node", WEFT_OP_NODE_REVOKE, &nn);
	/* other nodes' sessions: ids are small and sequential */
	for (uint64_t id = 1; id <= 16; id++) {
		struct weft_msg_session_id s = {.session = id};
		char what[64];
		snprintf(what, sizeof(what), "SESSION_CLOSE of session %llu", (unsigned long long)id);
		attempt(meta, what, WEFT_OP_SESSION_CLOSE, &s);
	}

	/* the stores' objects, bypassing meta */
	struct weft_msg_obj_list ol = {.max = 100};
	attempt(store, "OBJ_LIST on a store", WEFT_OP_OBJ_LIST, &ol);
	for (uint64_t ino = 1; ino <= 64; ino++) {
		struct weft_msg_obj_delete od = {.ino = ino};
		char what[64];
		snprintf(what, sizeof(what), "OBJ_DELETE of inode %llu", (unsigned long long)ino);
		attempt(store, what, WEFT_OP_OBJ_DELETE, &od);
	}
	struct weft_msg_obj_id orm = {.ino = 1, .stripe = 0};
	attempt(store, "OBJ_REMOVE of one object", WEFT_OP_OBJ_REMOVE, &orm);
	struct weft_msg_store_scrub sc = {.rate = 1};
	attempt(store, "STORE_SCRUB", WEFT_OP_STORE_SCRUB, &sc);

	/* passing for a store, for another node, for another serial */
	struct weft_key k = cred;
	k.role = WEFT_ROLE_STORE;
	attempt_connect(meta_addr, &k, "HELLO claiming the store role to meta");
	attempt_connect(store_addr, &k, "HELLO claiming the store role to a store");
	k = cred;
	snprintf(k.name, sizeof(k.name), "node0");
	attempt_connect(meta_addr, &k, "HELLO in another node's name to meta");
	attempt_connect(store_addr, &k, "HELLO in another node's name to a store");
	k = cred;
	k.serial++;
	attempt_connect(meta_addr, &k, "HELLO with a serial not issued");
	k = cred;
	k.serial = 0; /* as if it held the cluster key */
	attempt_connect(meta_addr, &k, "HELLO as a holder of the cluster key to meta");
	attempt_connect(store_addr, &k, "HELLO as a holder of the cluster key to a store");
	rpc_free(meta);
	rpc_free(store);
}

/* Requests in uids and gids a client node's policy does not allow (dir: a directory
 * anyone may write). Each must be refused; uid 0 is squashed, so what it makes belongs
 * to nobody. */
static void policy(const char *meta_addr, uint64_t dir)
{
	struct rpc *meta = endpoint(meta_addr, &cred);
	struct weft_msg_ino gi = {.cred = {.uid = 5000, .gid = 1500}, .ino = 1};
	attempt(meta, "GETATTR as uid 5000", WEFT_OP_GETATTR, &gi);
	gi.cred = (struct weft_cred){.uid = 1500, .gid = 5000};
	attempt(meta, "GETATTR as gid 5000", WEFT_OP_GETATTR, &gi);
	gi.cred = (struct weft_cred){.uid = 1500, .gid = 1500, .ngroups = 2, .groups = {1501, 3000}};
	attempt(meta, "GETATTR with group 3000 among 1500's", WEFT_OP_GETATTR, &gi);
	struct weft_msg_create mk = {.cred = {.uid = 0, .gid = 0}, .parent = dir,
				     .name = proto_str_of("made-by-root", 12), .mode = 040755};
	struct wbuf w;
	wbuf_init(&w);
	proto_create_encode(&w, &mk);
	int rc = rpc_call(meta, WEFT_OP_MKDIR, &w, NULL, 0, 10000, NULL);
	printf("mkdir as uid 0: %s\n", rc ? weft_strerror(rc) : "made");
	rpc_free(meta);
}

/* ---- capabilities ---- */

static int controls_failed;

/* A call whose reply the caller wants: 0 and *rep, or -errno (detail filled). */
static int call(struct rpc *r, uint16_t op, const void *msg, struct frame **rep, char *detail,
		size_t dlen)
{
	struct wbuf w;
	wbuf_init(&w);
	proto_msg_encode_any((enum weft_msg_type)proto_op_req_type(op), &w, msg);
	struct frame *f = NULL;
	int rc = rpc_call(r, op, &w, NULL, 0, 10000, &f);
	if (detail)
		detail[0] = 0;
	if (rc && f && detail)
		conn_error_detail(f, detail, dlen);
	if (rc || !rep)
		frame_free(f);
	else
		*rep = f;
	return rc;
}

static void control(struct rpc *r, const char *what, uint16_t op, const void *msg)
{
	char detail[256];
	int rc = call(r, op, msg, NULL, detail, sizeof(detail));
	if (rc == 0) {
		printf("served (control): %s\n", what);
	} else {
		printf("CONTROL REFUSED: %s (%s%s%s)\n", what, weft_strerror(rc),
		       detail[0] ? ": " : "", detail);
		controls_failed++;
	}
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "hostile: %s: %s\n", what, weft_strerror(rc));
	exit(2);
}

static uint64_t session_open(struct rpc *meta, const struct weft_key *k, uint32_t flags)
{
	struct weft_msg_session_open m = {.node = proto_str_of(k->name, strlen(k->name)),
					  .flags = flags};
	struct frame *f;
	int rc = call(meta, WEFT_OP_SESSION_OPEN, &m, &f, NULL, 0);
	if (rc)
		die("SESSION_OPEN", rc);
	struct weft_msg_session sm;
	if (proto_session_decode(f->payload, f->h.payload_len, &sm, NULL))
		die("SESSION reply", -EPROTO);
	frame_free(f);
	return sm.session;
}

static const struct weft_cred nobody = {.uid = 65534, .gid = 65534, .umask = 022};

/* OPEN (or CREATE_OPEN of name in dir when name) with flags in session: the reply */
static int open_file(struct rpc *meta, uint64_t dir, const char *name, uint64_t ino, int flags,
		     uint64_t session, struct weft_msg_opened *o)
{
	struct frame *f;
	int rc;
	char detail[256];
	if (name) {
		struct weft_msg_create_open m = {.cred = nobody, .parent = dir,
						 .name = proto_str_of(name, strlen(name)),
						 .mode = S_IFREG | 0644, .open_flags = (uint32_t)flags,
						 .session = session};
		rc = call(meta, WEFT_OP_CREATE_OPEN, &m, &f, detail, sizeof(detail));
	} else {
		struct weft_msg_open m = {.cred = nobody, .ino = ino, .flags = (uint32_t)flags,
					  .session = session};
		rc = call(meta, WEFT_OP_OPEN, &m, &f, detail, sizeof(detail));
	}
	if (rc)
		return rc;
	rc = proto_opened_decode(f->payload, f->h.payload_len, o, NULL) ? -EPROTO : 0;
	o->written = (struct weft_str){NULL, 0};
	frame_free(f);
	return rc;
}

/* Where stripe 0 of a file lives: its chain and the head's address */
struct obj_at {
	uint64_t ino;
	struct weft_chain ch;
	char addr[WEFT_ADDR_MAX + 1];
};

static void locate(struct rpc *meta, uint64_t ino, const struct weft_layout *l, struct obj_at *o)
{
	struct weft_chain_set set;
	int rc = chain_set_fetch(meta, 10000, &set);
	if (rc)
		die("chain tables", rc);
	uint32_t id = (uint32_t)(l->first_chain % (l->chain_count ? l->chain_count : 1));
	if (l->replicas < 1 || l->replicas > WEFT_REPLICAS_MAX || id >= set.nchains[l->replicas - 1])
		die("layout", -EINVAL);
	o->ino = ino;
	o->ch = set.chains[l->replicas - 1][id];
	for (uint32_t i = 0; i < set.ntargets; i++)
		if (set.targets[i].id == o->ch.members[0].target)
			snprintf(o->addr, sizeof(o->addr), "%s", set.targets[i].addr);
	proto_chain_set_free(&set);
}

static uint8_t wdata[4096];

/* One object request op on stripe 0 of o carrying cap (NULL: none) */
static int obj_req(struct rpc *store, const struct obj_at *o, uint16_t op, const uint8_t *cap,
		   char *detail, size_t dlen)
{
	struct wbuf w;
	wbuf_init(&w);
	uint8_t c[WEFT_CAP_LEN] = {0};
	if (cap)
		memcpy(c, cap, WEFT_CAP_LEN);
	struct iovec v = {wdata, sizeof(wdata)};
	int nv = 0;
	switch (op) {
	case WEFT_OP_OBJ_WRITE: {
		struct weft_msg_obj_write m = {.ino = o->ino, .replicas = o->ch.replicas,
					       .chain = o->ch.id, .chain_ver = o->ch.version,
					       .offset = 0};
		proto_crcs_compute_buf(wdata, sizeof(wdata), 0, &m.crcs);
		memcpy(m.cap, c, sizeof(c));
		proto_obj_write_encode(&w, &m);
		nv = 1;
		break;
	}
	case WEFT_OP_OBJ_READ: {
		struct weft_msg_obj_read m = {.ino = o->ino, .replicas = o->ch.replicas,
					      .chain = o->ch.id, .chain_ver = o->ch.version,
					      .len = 4096};
		memcpy(m.cap, c, sizeof(c));
		proto_obj_read_encode(&w, &m);
		break;
	}
	case WEFT_OP_OBJ_TRUNCATE: {
		struct weft_msg_obj_truncate m = {.ino = o->ino, .replicas = o->ch.replicas,
						  .chain = o->ch.id, .chain_ver = o->ch.version};
		memcpy(m.cap, c, sizeof(c));
		proto_obj_truncate_encode(&w, &m);
		break;
	}
	case WEFT_OP_OBJ_FSYNC: {
		struct weft_msg_obj_sync m = {.ino = o->ino, .replicas = o->ch.replicas,
					      .chain = o->ch.id, .chain_ver = o->ch.version};
		memcpy(m.cap, c, sizeof(c));
		proto_obj_sync_encode(&w, &m);
		break;
	}
	case WEFT_OP_OBJ_EXTENT: {
		struct weft_msg_obj_extent m = {.ino = o->ino, .replicas = o->ch.replicas,
						.chain = o->ch.id, .chain_ver = o->ch.version};
		memcpy(m.cap, c, sizeof(c));
		proto_obj_extent_encode(&w, &m);
		break;
	}
	default: {
		struct weft_msg_obj_id m = {.ino = o->ino};
		memcpy(m.cap, c, sizeof(c));
		proto_obj_id_encode(&w, &m);
		break;
	}
	}
	struct frame *f = NULL;
	int rc = rpc_call(store, op, &w, nv ? &v : NULL, nv, 10000, &f);
	detail[0] = 0;
	if (rc && f)
		conn_error_detail(f, detail, dlen);
	frame_free(f);
	return rc == -ENOENT ? 0 : rc; /* a missing object was served: the check passed */
}

/* An attack with a capability: refused, with a reason that names the capability */
static void cap_attempt(struct rpc *store, const char *what, const struct obj_at *o, uint16_t op,
			const uint8_t *cap)
{
	char detail[256];
	int rc = obj_req(store, o, op, cap, detail, sizeof(detail));
	if (rc == 0 || !strstr(detail, "capability")) {
		printf("SERVED: %s (%s%s%s)\n", what, rc ? weft_strerror(rc) : "ok",
		       detail[0] ? ": " : "", detail);
		served++;
	} else {
		printf("refused: %s (%s: %s)\n", what, weft_strerror(rc), detail);
	}
}

static void cap_control(struct rpc *store, const char *what, const struct obj_at *o, uint16_t op,
			const uint8_t *cap)
{
	char detail[256];
	int rc = obj_req(store, o, op, cap, detail, sizeof(detail));
	if (rc == 0) {
		printf("served (control): %s\n", what);
	} else {
		printf("CONTROL REFUSED: %s (%s%s%s)\n", what, weft_strerror(rc),
		       detail[0] ? ": " : "", detail);
		controls_failed++;
	}
}

static struct rpc *store_of(const struct obj_at *o, const struct weft_key *k)
{
	return endpoint(o->addr, k);
}

static void caps(const char *meta_addr, uint64_t dir, const char *own, const char *victim,
		 const char *thief_path, const char *admin_path)
{
	struct weft_key thief, admin;
	char err[256];
	if (auth_key_load(thief_path, &thief, err, sizeof(err)) ||
	    auth_key_load(admin_path, &admin, err, sizeof(err))) {
		fprintf(stderr, "hostile: %s\n", err);
		exit(2);
	}
	struct rpc *meta = endpoint(meta_addr, &cred);
	uint64_t sess = session_open(meta, &cred, 0);

	/* our own file, and the victim's, which we may look up but not open */
	struct weft_msg_opened mine, mine_r;
	int rc = open_file(meta, dir, own, 0, O_RDWR, sess, &mine);
	if (rc)
		die("CREATE_OPEN of our own file", rc);
	if ((rc = open_file(meta, 0, NULL, mine.attr.ino, O_RDONLY, sess, &mine_r)))
		die("OPEN O_RDONLY of our own file", rc);
	struct weft_msg_lookup lk = {.cred = nobody, .parent = dir,
				     .name = proto_str_of(victim, strlen(victim))};
	struct frame *f;
	if ((rc = call(meta, WEFT_OP_LOOKUP, &lk, &f, NULL, 0)))
		die("LOOKUP of the victim", rc);
	struct weft_msg_entry ve;
	if (proto_entry_decode(f->payload, f->h.payload_len, &ve, NULL))
		die("ENTRY", -EPROTO);
	frame_free(f);
	struct obj_at mo, vo;
	locate(meta, mine.attr.ino, &mine.layout, &mo);
	locate(meta, ve.attr.ino, &ve.layout, &vo);
	struct weft_msg_opened vopen;
	rc = open_file(meta, 0, NULL, vo.ino, O_RDWR, sess, &vopen);
	printf("%s: OPEN of the victim's file (%s)\n", rc ? "refused" : "SERVED",
	       rc ? weft_strerror(rc) : "opened");
	served += rc == 0;
	struct weft_msg_cap_get cg = {.cred = nobody, .ino = vo.ino, .session = sess,
				      .rights = WEFT_CAP_READ};
	attempt(meta, "CAP_GET of the victim's file", WEFT_OP_CAP_GET, &cg);
	cg.has_old = 1;
	memcpy(cg.old, mine.cap, WEFT_CAP_LEN);
	attempt(meta, "CAP_GET renewing our capability for the victim's file", WEFT_OP_CAP_GET, &cg);

	struct rpc *ms = store_of(&mo, &cred), *vs = store_of(&vo, &cred);
	static const uint16_t ops[] = {WEFT_OP_OBJ_READ, WEFT_OP_OBJ_WRITE, WEFT_OP_OBJ_TRUNCATE,
				       WEFT_OP_OBJ_FSYNC, WEFT_OP_OBJ_STAT, WEFT_OP_OBJ_EXTENT};
	char what[160];
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		snprintf(what, sizeof(what), "%s of the victim's file without a capability",
			 proto_op_name(ops[i]));
		cap_attempt(vs, what, &vo, ops[i], NULL);
		snprintf(what, sizeof(what), "%s of the victim's file with another file's capability",
			 proto_op_name(ops[i]));
		cap_attempt(vs, what, &vo, ops[i], mine.cap);
	}
	/* our own file: the controls, then altered capabilities */
	cap_control(ms, "OBJ_WRITE of our file with its capability", &mo, WEFT_OP_OBJ_WRITE, mine.cap);
	cap_control(ms, "OBJ_READ of our file with its capability", &mo, WEFT_OP_OBJ_READ, mine.cap);
	cap_control(ms, "OBJ_READ of our file with its read capability", &mo, WEFT_OP_OBJ_READ,
		    mine_r.cap);
	cap_attempt(ms, "OBJ_WRITE of our file with a read capability", &mo, WEFT_OP_OBJ_WRITE,
		    mine_r.cap);
	cap_attempt(ms, "OBJ_TRUNCATE of our file with a read capability", &mo, WEFT_OP_OBJ_TRUNCATE,
		    mine_r.cap);
	struct { const char *what; size_t at; uint8_t x; const uint8_t *base; uint16_t op; } alt[] = {
		{"a byte of the MAC flipped", 40, 0x01, mine.cap, WEFT_OP_OBJ_READ},
		{"the last byte of the MAC flipped", WEFT_CAP_LEN - 1, 0x80, mine.cap, WEFT_OP_OBJ_WRITE},
		{"its ino changed to the victim's", 0, 0, mine.cap, WEFT_OP_OBJ_READ},
		{"its rights raised to read-write", 28, WEFT_CAP_WRITE, mine_r.cap, WEFT_OP_OBJ_WRITE},
		{"its expiry pushed a day on", 19, 0x05, mine.cap, WEFT_OP_OBJ_READ},
		{"its session changed", 8, 0x01, mine.cap, WEFT_OP_OBJ_READ},
		{"its key period changed", 24, 0x01, mine.cap, WEFT_OP_OBJ_READ},
		{"a reserved byte set", 30, 0x01, mine.cap, WEFT_OP_OBJ_READ},
	};
	for (size_t i = 0; i < sizeof(alt) / sizeof(alt[0]); i++) {
		uint8_t c[WEFT_CAP_LEN];
		memcpy(c, alt[i].base, WEFT_CAP_LEN);
		const struct obj_at *target = &mo;
		struct rpc *st = ms;
		if (alt[i].x)
			c[alt[i].at] ^= alt[i].x;
		else { /* the ino: aimed at the victim's object */
			for (int b = 0; b < 8; b++)
				c[b] = (uint8_t)(vo.ino >> (8 * b));
			target = &vo;
			st = vs;
		}
		snprintf(what, sizeof(what), "%s with a capability with %s",
			 proto_op_name(alt[i].op), alt[i].what);
		cap_attempt(st, what, target, alt[i].op, c);
	}

	/* another node's capability: THIEF opens its own file; we present its capability */
	struct rpc *tmeta = endpoint(meta_addr, &thief);
	uint64_t tsess = session_open(tmeta, &thief, 0);
	struct weft_msg_opened theirs;
	if ((rc = open_file(tmeta, dir, "thief-own", 0, O_RDWR, tsess, &theirs)))
		die("CREATE_OPEN as the thief", rc);
	struct obj_at to;
	locate(meta, theirs.attr.ino, &theirs.layout, &to);
	struct rpc *ts_ours = store_of(&to, &cred), *ts_theirs = store_of(&to, &thief);
	cap_control(ts_theirs, "OBJ_WRITE by the thief with its own capability", &to,
		    WEFT_OP_OBJ_WRITE, theirs.cap);
	cap_attempt(ts_ours, "OBJ_WRITE with another node's capability", &to, WEFT_OP_OBJ_WRITE,
		    theirs.cap);

	/* a revoked node's capability: still valid in time, but its node is refused */
	struct rpc *ameta = endpoint(meta_addr, &admin);
	struct weft_msg_node_name nn = {.name = proto_str_of(thief.name, strlen(thief.name))};
	control(ameta, "NODE_REVOKE of the thief (admin)", WEFT_OP_NODE_REVOKE, &nn);
	usleep(500 * 1000); /* meta's push reaches the stores within its 100 ms tick */
	char detail[256];
	rc = obj_req(ts_theirs, &to, WEFT_OP_OBJ_READ, theirs.cap, detail, sizeof(detail));
	printf("%s: OBJ_READ with the capability of a revoked node (%s%s%s)\n",
	       rc ? "refused" : "SERVED", rc ? weft_strerror(rc) : "ok", detail[0] ? ": " : "",
	       detail);
	served += rc == 0;

	/* an expired capability; then its renewal through the open (a control) */
	struct weft_cap pc;
	auth_cap_parse(mine.cap, &pc);
	uint64_t now = auth_realtime_ms();
	if (pc.expiry_ms > now + 60000) {
		printf("CONTROL REFUSED: capabilities live %llu ms: set WEFT_META_CAP_MS short\n",
		       (unsigned long long)(pc.expiry_ms - now));
		controls_failed++;
	} else {
		if (pc.expiry_ms + 200 > now)
			usleep((useconds_t)(pc.expiry_ms + 200 - now) * 1000);
		snprintf(what, sizeof(what), "OBJ_READ with an expired capability");
		rc = obj_req(ms, &mo, WEFT_OP_OBJ_READ, mine.cap, detail, sizeof(detail));
		printf("%s: %s (%s%s%s)\n", rc == -WEFT_ECAPEXPIRED ? "refused" : "SERVED", what,
		       rc ? weft_strerror(rc) : "ok", detail[0] ? ": " : "", detail);
		served += rc != -WEFT_ECAPEXPIRED;
		rc = obj_req(ms, &mo, WEFT_OP_OBJ_WRITE, mine.cap, detail, sizeof(detail));
		printf("%s: OBJ_WRITE with an expired capability (%s%s%s)\n",
		       rc == -WEFT_ECAPEXPIRED ? "refused" : "SERVED", rc ? weft_strerror(rc) : "ok",
		       detail[0] ? ": " : "", detail);
		served += rc != -WEFT_ECAPEXPIRED;
		struct weft_msg_cap_get rn = {.ino = mo.ino, .session = sess, .has_old = 1};
		memcpy(rn.old, mine.cap, WEFT_CAP_LEN);
		if ((rc = call(meta, WEFT_OP_CAP_GET, &rn, &f, detail, sizeof(detail)))) {
			printf("CONTROL REFUSED: CAP_GET renewing our expired capability (%s: %s)\n",
			       weft_strerror(rc), detail);
			controls_failed++;
		} else {
			struct weft_msg_cap nc;
			proto_cap_decode(f->payload, f->h.payload_len, &nc, NULL);
			frame_free(f);
			printf("served (control): CAP_GET renewing our expired capability\n");
			cap_control(ms, "OBJ_WRITE with the renewed capability", &mo, WEFT_OP_OBJ_WRITE,
				    nc.cap);
		}
	}

	/* an evicted session's capability: a second session that answers no recall holds
	 * our file open; a change of the file from the first session recalls its lease */
	struct rpc *emeta = endpoint(meta_addr, &cred);
	uint64_t esess = session_open(emeta, &cred, WEFT_SESSION_RECALLS);
	struct weft_msg_opened ev;
	if ((rc = open_file(emeta, 0, NULL, mo.ino, O_RDWR, esess, &ev)))
		die("OPEN in the session to be evicted", rc);
	cap_control(ms, "OBJ_WRITE with the capability of a session not yet evicted", &mo,
		    WEFT_OP_OBJ_WRITE, ev.cap);
	struct weft_msg_setattr sa = {.cred = nobody, .ino = mo.ino, .valid = WEFT_SET_MODE,
				      .mode = S_IFREG | 0666};
	control(meta, "SETATTR of our file from the other session (waits for the eviction)",
		WEFT_OP_SETATTR, &sa);
	rc = 0;
	for (int i = 0; i < 50 && rc == 0; i++) { /* meta pushes the eviction within a tick */
		rc = obj_req(ms, &mo, WEFT_OP_OBJ_WRITE, ev.cap, detail, sizeof(detail));
		if (rc == 0)
			usleep(100 * 1000);
	}
	printf("%s: OBJ_WRITE with the capability of an evicted session (%s%s%s)\n",
	       rc && strstr(detail, "evicted") ? "refused" : "SERVED", rc ? weft_strerror(rc) : "ok",
	       detail[0] ? ": " : "", detail);
	served += !(rc && strstr(detail, "evicted"));
	struct weft_msg_cap_get rn = {.ino = mo.ino, .session = sess, .has_old = 1};
	memcpy(rn.old, mine.cap, WEFT_CAP_LEN);
	if ((rc = call(meta, WEFT_OP_CAP_GET, &rn, &f, detail, sizeof(detail))) == 0) {
		struct weft_msg_cap nc;
		proto_cap_decode(f->payload, f->h.payload_len, &nc, NULL);
		frame_free(f);
		cap_control(ms, "OBJ_WRITE with a capability of our live session", &mo,
			    WEFT_OP_OBJ_WRITE, nc.cap);
	} else {
		printf("CONTROL REFUSED: CAP_GET in our live session (%s: %s)\n",
		       weft_strerror(rc), detail);
		controls_failed++;
	}
	rpc_free(emeta);
	rpc_free(ameta);
	rpc_free(ts_ours);
	rpc_free(ts_theirs);
	rpc_free(tmeta);
	rpc_free(ms);
	rpc_free(vs);
	rpc_free(meta);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: hostile CRED META STORE attacks | hostile CRED ADDR connect\n");
		return 2;
	}
	log_init("hostile", LOG_ERROR);
	char err[256];
	if (auth_key_load(argv[1], &cred, err, sizeof(err))) {
		fprintf(stderr, "hostile: %s\n", err);
		return 2;
	}
	loop_new(&loop);
	loop_start(loop);
	int rc = 0;
	if (strcmp(argv[3], "connect") == 0) {
		struct rpc *r = endpoint(argv[2], &cred);
		struct conn *c;
		int e = rpc_conn(r, &c);
		if (e == 0)
			conn_put(c);
		else
			printf("refused: %s\n", weft_strerror(e));
		rc = e == 0 ? 0 : 3;
		rpc_free(r);
	} else if (argc == 5 && strcmp(argv[3], "policy") == 0) {
		policy(argv[2], strtoull(argv[4], NULL, 10));
		printf("%d attempts served\n", served);
		rc = served ? 1 : 0;
	} else if (argc == 9 && strcmp(argv[3], "caps") == 0) {
		caps(argv[2], strtoull(argv[4], NULL, 0), argv[5], argv[6], argv[7], argv[8]);
		printf("%d attempts served, %d controls refused\n", served, controls_failed);
		rc = served || controls_failed ? 1 : 0;
	} else if (argc == 5 && strcmp(argv[4], "attacks") == 0) {
		attacks(argv[2], argv[3]);
		printf("%d attempts served\n", served);
		rc = served ? 1 : 0;
	} else {
		rc = 2;
	}
	loop_free(loop);
	return rc;
}
