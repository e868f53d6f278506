/* weft store's server: lifecycle, request decoding and dispatch to the workers, and the
 * handlers that need no replication (read, stat, list, delete, stats), each in the
 * dispatch table (store_ops) with what it replies and changes. See server.h.
 * Calls go one way: server.c -> replicate.c, resync.c, repair.c -> request.c. */
#include "store/server_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/builtin.h"
#include "net/nodetab.h"
#include "proto/objlist.h"
#include "common/log.h"
#include "store/iov.h"
#include "store/readbuf.h"
#include "weft/err.h"

#define LIST_MAX 65536u

bool store_serving(struct store_server *s)
{
	if (!atomic_load(&s->ready) || atomic_load(&s->disk_failed))
		return false;
	uint64_t now = loop_now_ms();
	if (now < atomic_load(&s->lease_until_ms))
		return true;
	if (!atomic_exchange(&s->fenced_logged, true))
		log_warn("no heartbeat answered by meta %s within the lease (%u ms): "
			 "refusing data requests (fenced) until one is", s->meta_addr,
			 atomic_load(&s->lease_ms));
	return false;
}


static void reply_msg(struct sreq *q, int status, struct wbuf *w)
{
	if (w->err) {
		wbuf_free(w);
		store_reply_status(q, -ENOMEM);
		return;
	}
	conn_reply(q->c, q->f, status, w, NULL, 0, NULL, NULL);
	wbuf_free(w);
}

/* ---- handlers without replication (worker threads) ---- */

/* Whether this target serves reads in the request's chain at its version; if not, the
 * request is answered with why (ESTALECHAIN, ENOTSERVING...). */
static bool serves_reads(struct sreq *q, uint8_t replicas, uint32_t chain, uint64_t ver)
{
	struct weft_chain ch;
	int me;
	int rc = store_chains_check(q->s, replicas, chain, ver, true, &ch, &me);
	if (rc)
		store_reply_status(q, rc);
	return rc == 0;
}

static void do_read(struct sreq *q)
{
	struct store_server *s = q->s;
	struct weft_msg_obj_read *m = &q->m.r;
	if (!serves_reads(q, m->replicas, m->chain, m->chain_ver))
		return;
	int rc;
	if (m->len > WEFT_BULK_MAX) {
		conn_reply_error(q->c, q->f, -EINVAL, 0, "read of %" PRIu32 " bytes: more than %u",
				 m->len, WEFT_BULK_MAX);
		return;
	}
	/* page-aligned, so that a large read can go straight from the disk (O_DIRECT);
	 * one of the common size is a buffer a read used before (readbuf.h) */
	uint8_t *buf = m->len ? store_readbuf_get(m->len) : NULL;
	struct weft_msg_obj_data *d = malloc(sizeof(*d));
	if ((m->len && !buf) || !d) {
		store_readbuf_put(buf, m->len);
		free(d);
		store_reply_status(q, -ENOMEM);
		return;
	}
	size_t n = 0;
	struct store_obj_result r;
	uint64_t np = store_crc_npieces(m->offset, m->len);
	unsigned fl = (m->flags & (WEFT_READ_WRITTEN | WEFT_READ_REPAIR)) ? STORE_READ_WRITTEN : 0;
	if (store_repair_active(s, m->ino, m->stripe))
		fl |= STORE_READ_LOST;
	if (m->flags & WEFT_READ_HOLES)
		fl |= STORE_READ_HOLES;
	struct iovec bv = {buf, m->len};
	rc = store_obj_readv_flags(s->objs, m->ino, m->stripe, m->offset, &bv, 1, d->crcs.v,
				   (size_t)np, &n, &r, fl);
	if (rc) {
		store_readbuf_put(buf, m->len);
		free(d);
		/* lost here: the client reads another replica; copy it back from one */
		if (rc == -WEFT_EMISSING && !(m->flags & WEFT_READ_REPAIR) && m->replicas > 1)
			store_repair_start(s, m->ino, m->stripe, m->replicas, m->chain);
		if (rc == -WEFT_EMISSING)
			conn_reply_error(q->c, q->f, rc, s->target_id,
					 "target %u: ino %" PRIu64 " stripe %" PRIu32 " was written "
					 "but is missing or stale here", s->target_id, m->ino,
					 m->stripe);
		else if (rc == -WEFT_ECHECKSUM) {
			conn_reply_error(q->c, q->f, rc, s->target_id,
					 "target %u: ino %" PRIu64 " stripe %" PRIu32
					 " chunk %" PRId64 " does not match its checksum",
					 s->target_id, m->ino, m->stripe, r.bad_chunk);
			store_resync_repair(s, m->replicas, m->chain, m->ino, m->stripe);
		}
		else
			conn_reply_error(q->c, q->f, rc, s->target_id,
					 "target %u: read ino %" PRIu64 " stripe %" PRIu32 ": %s",
					 s->target_id, m->ino, m->stripe, weft_strerror(rc));
		if (store_disk_error_code(rc))
			store_disk_read_error(s, rc, m->ino, m->stripe, m->replicas, m->chain);
		return;
	}
	d->crcs.n = (uint32_t)store_crc_npieces(m->offset + r.hole, n);
	if (!s->checksums)
		memset(d->crcs.v, 0, d->crcs.n * sizeof(uint32_t));
	d->size = r.size; /* the object's size */
	d->hole = r.hole;
	struct wbuf w;
	wbuf_init(&w);
	proto_obj_data_encode(&w, d);
	free(d);
	if (w.err) {
		wbuf_free(&w);
		store_readbuf_put(buf, m->len);
		store_reply_status(q, -ENOMEM);
		return;
	}
	struct iovec v = {buf, n};
	/* the bulk is sent from buf and given back once the kernel has it */
	if (n)
		conn_reply(q->c, q->f, 0, &w, &v, 1,
			   m->len > STORE_READBUF_SIZE ? free : store_readbuf_release_small, buf);
	else
		conn_reply(q->c, q->f, 0, &w, NULL, 0, NULL, NULL);
	if (!n)
		store_readbuf_put(buf, m->len);
	wbuf_free(&w);
}

/* OBJ_SYNC_READ: OBJ_READ for a resyncing member, -ENOENT when there is no object.
 * Queued with the object's key, so it runs after the writes to it received before. */
static void do_sync_read(struct sreq *q)
{
	struct store_obj_stat st;
	int rc = store_obj_stat(q->s->objs, q->m.r.ino, q->m.r.stripe, &st);
	if (rc == -ENOENT)
		store_reply_status(q, rc);
	else
		do_read(q);
}

static void do_stat(struct sreq *q)
{
	struct store_obj_stat st;
	int rc = store_obj_stat(q->s->objs, q->m.id.ino, q->m.id.stripe, &st);
	if (rc) {
		store_reply_status(q, rc);
		return;
	}
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_obj_size m = {.size = st.size};
	proto_obj_size_encode(&w, &m);
	reply_msg(q, 0, &w);
}

/* OBJ_EXTENT: the object's next data extent from an offset, its size and allocation
 * (SEEK_DATA/SEEK_HOLE and st_blocks at the client). */
static void do_extent(struct sreq *q)
{
	struct store_server *s = q->s;
	struct weft_msg_obj_extent *m = &q->m.x;
	if (!serves_reads(q, m->replicas, m->chain, m->chain_ver))
		return;
	int rc;
	struct store_obj_stat st;
	struct weft_msg_obj_extent_reply r = {0};
	rc = store_obj_extent(s->objs, m->ino, m->stripe, m->offset, &st, &r.data, &r.hole);
	if (rc) {
		store_reply_status(q, rc);
		return;
	}
	r.size = st.size;
	r.allocated = st.allocated;
	struct wbuf w;
	wbuf_init(&w);
	proto_obj_extent_reply_encode(&w, &r);
	reply_msg(q, 0, &w);
}

static void do_list(struct sreq *q)
{
	struct weft_msg_obj_list *m = &q->m.l;
	uint32_t max = m->max == 0 || m->max > LIST_MAX ? LIST_MAX : m->max;
	struct store_index_rec *recs = malloc(max * sizeof(*recs));
	if (!recs) {
		store_reply_status(q, -ENOMEM);
		return;
	}
	size_t n = 0;
	int rc = store_obj_list(q->s->objs, m->ino, m->stripe, recs, max, &n);
	if (rc) {
		free(recs);
		store_reply_status(q, rc);
		return;
	}
	uint8_t *bulk = malloc(n * PROTO_OBJ_REC_SIZE + 1);
	if (!bulk) {
		free(recs);
		store_reply_status(q, -ENOMEM);
		return;
	}
	for (size_t i = 0; i < n; i++)
		proto_obj_rec_put(bulk, i, &(struct proto_obj_rec){.ino = recs[i].ino,
				  .stripe = recs[i].stripe, .length = recs[i].length});
	free(recs);
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_obj_list_reply r = {.count = (uint32_t)n, .eof = n < max};
	proto_obj_list_reply_encode(&w, &r);
	struct iovec v = {bulk, n * PROTO_OBJ_REC_SIZE};
	if (n)
		conn_reply(q->c, q->f, w.err, &w, &v, 1, free, bulk);
	else
		conn_reply(q->c, q->f, w.err, &w, NULL, 0, NULL, NULL);
	free(n ? NULL : bulk);
	wbuf_free(&w);
}

static void do_delete(struct sreq *q)
{
	uint64_t n = 0;
	int rc = store_obj_delete_inode(q->s->objs, q->m.d.ino, &n);
	if (rc)
		conn_reply_error(q->c, q->f, rc, q->s->target_id, "target %u: delete ino %" PRIu64
				 ": %s", q->s->target_id, q->m.d.ino, weft_strerror(rc));
	else
		store_reply_status(q, 0);
}

/* One object, on this target only (not forwarded): meta's deleter sends it to every
 * member of the chain that held a layout a migrate replaced. */
static void do_remove(struct sreq *q)
{
	int rc = store_obj_delete(q->s->objs, q->m.id.ino, q->m.id.stripe);
	if (rc && rc != -ENOENT)
		conn_reply_error(q->c, q->f, rc, q->s->target_id, "target %u: remove ino %" PRIu64
				 " object %" PRIu32 ": %s", q->s->target_id, q->m.id.ino,
				 q->m.id.stripe, weft_strerror(rc));
	else
		store_reply_status(q, 0);
}

static void do_stats(struct sreq *q)
{
	struct store_server *s = q->s;
	struct weft_msg_store_stats m = {.target = s->target_id};
	struct store_counters c;
	store_target_counters(s->t, &c);
	store_target_space(s->t, &m.capacity, &m.free);
	m.bytes_read = c.bytes_read;
	m.bytes_written = c.bytes_written;
	m.ops_read = c.ops_read;
	m.ops_written = c.ops_written;
	struct wbuf w;
	wbuf_init(&w);
	proto_store_stats_encode(&w, &m);
	reply_msg(q, 0, &w);
}

static void do_scrub(struct sreq *q)
{
	store_resync_scrub(q->s, (uint64_t)q->m.sc.rate << 20);
	store_reply_status(q, 0);
}

static void do_rate(struct sreq *q)
{
	atomic_store(&q->s->resync_rate, (uint64_t)q->m.rt.rate << 20);
	log_info("copy rate (resync, rebuilds, moves) set to %s%u MiB/s",
		 q->m.rt.rate ? "" : "unlimited, ", q->m.rt.rate);
	store_reply_status(q, 0);
}

/* ---- the dispatch table ---- */

/* Worker key of a request: STORE_JOB_ANY (any worker), or the object's key, so that it
 * runs after the mutations of that object received before it, in order. */
static uint64_t key_any(const struct sreq *q) { return STORE_JOB_ANY; }
static uint64_t key_write(const struct sreq *q) { return store_obj_key(q->m.w.ino, q->m.w.stripe); }
static uint64_t key_truncate(const struct sreq *q) { return store_obj_key(q->m.t.ino, q->m.t.stripe); }
static uint64_t key_sync(const struct sreq *q) { return store_obj_key(q->m.sy.ino, q->m.sy.stripe); }
static uint64_t key_read(const struct sreq *q) { return store_obj_key(q->m.r.ino, q->m.r.stripe); }
static uint64_t key_extent(const struct sreq *q) { return store_obj_key(q->m.x.ino, q->m.x.stripe); }
static uint64_t key_id(const struct sreq *q) { return store_obj_key(q->m.id.ino, q->m.id.stripe); }
/* a repair peer's read comes after the object's writes; other reads go anywhere */
static uint64_t key_read_repair(const struct sreq *q)
{
	return (q->m.r.flags & WEFT_READ_REPAIR) ? key_read(q) : STORE_JOB_ANY;
}

/* One opcode a store serves. The request message (proto_op_req_type) is decoded into
 * q->m on the loop thread; handler runs on the worker chosen by key. */
struct store_op {
	uint16_t op;
	bool decode;            /* false: the request carries no message (nothing decoded) */
	bool any_state;         /* served also when not serving (no lease, failed disk) */
	bool frees;             /* the handler frees q (it may outlive the call) */
	uint64_t (*key)(const struct sreq *q);
	void (*handler)(struct sreq *q);
};

static const struct store_op store_ops[] = {
	/* OBJ_WRITE: replies OBJ_WRITTEN {size, allocated} once the write is on this target
	 * and every later chain member; writes the object's bytes and CRCs, forwards down
	 * the chain, notes it for OFFLINE members (replicate.c). */
	{WEFT_OP_OBJ_WRITE, true, false, true, key_write, store_repl_write},
	/* OBJ_TRUNCATE: replies OBJ_SIZE; sets the object's size here and down the chain. */
	{WEFT_OP_OBJ_TRUNCATE, true, false, true, key_truncate, store_repl_write},
	/* OBJ_FSYNC: replies empty once the object is durable here and down the chain;
	 * asks for an early heartbeat (the write sequence meta records). */
	{WEFT_OP_OBJ_FSYNC, true, false, true, key_sync, store_repl_write},
	/* OBJ_READ: replies OBJ_DATA {size, hole, crcs} + bytes in bulk; changes nothing,
	 * but a missing object starts a repair from a peer and a bad checksum a resync of
	 * the object. */
	{WEFT_OP_OBJ_READ, true, false, false, key_read_repair, do_read},
	/* OBJ_SYNC_READ: as OBJ_READ for a resyncing peer; ENOENT when there is no object. */
	{WEFT_OP_OBJ_SYNC_READ, true, false, false, key_read, do_sync_read},
	/* OBJ_MISSED: replies OBJ_LIST_REPLY with the missed log's (ino, stripe) pairs for a
	 * returning member; drops the entries before the cursor (copied). */
	{WEFT_OP_OBJ_MISSED, true, false, false, key_any, store_resync_missed_list},
	/* STORE_SCRUB: replies empty; starts a background scrub of the target. */
	{WEFT_OP_STORE_SCRUB, true, false, false, key_any, do_scrub},
	/* STORE_RATE: replies empty; sets the copy rate of resync, rebuilds and moves. */
	{WEFT_OP_STORE_RATE, true, false, false, key_any, do_rate},
	/* OBJ_STAT: replies OBJ_SIZE; changes nothing. */
	{WEFT_OP_OBJ_STAT, true, false, false, key_any, do_stat},
	/* OBJ_EXTENT: replies OBJ_EXTENT_REPLY {size, allocated, data, hole}; changes nothing. */
	{WEFT_OP_OBJ_EXTENT, true, false, false, key_extent, do_extent},
	/* OBJ_LIST: replies OBJ_LIST_REPLY + records (proto/objlist.h); changes nothing. */
	{WEFT_OP_OBJ_LIST, true, false, false, key_any, do_list},
	/* OBJ_DELETE: replies empty; deletes every object of the inode on this target. */
	{WEFT_OP_OBJ_DELETE, true, false, false, key_any, do_delete},
	/* OBJ_REMOVE: replies empty; deletes one object (ino, object number) here. */
	{WEFT_OP_OBJ_REMOVE, true, false, false, key_id, do_remove},
	/* STORE_STATS: replies STORE_STATS (space, counters); changes nothing. */
	{WEFT_OP_STORE_STATS, false, true, false, key_any, do_stats},
};

static const struct store_op *store_op_find(uint16_t op)
{
	for (size_t i = 0; i < sizeof(store_ops) / sizeof(store_ops[0]); i++)
		if (store_ops[i].op == op)
			return &store_ops[i];
	return NULL;
}

static void run_job(struct store_job *j)
{
	struct sreq *q = (struct sreq *)j;
	struct store_server *s = q->s;
	const struct store_op *o = store_op_find(q->op);
	if (!o->any_state && !store_serving(s)) {
		conn_reply_error(q->c, q->f, -WEFT_ENOTSERVING, s->target_id,
				 atomic_load(&s->disk_failed) ?
				 "target %u is not serving (its disk failed a write)" :
				 "target %u is not serving (no lease from meta)", s->target_id);
		store_req_free(q);
		return;
	}
	o->handler(q);
	if (!o->frees)
		store_req_free(q);
}

/* ---- loop thread ---- */

static void on_request(struct conn *c, struct frame *f)
{
	struct store_server *s = conn_ctx(c);
	if (builtin_handle(c, f))
		return;
	uint16_t op = f->h.opcode;
	const struct store_op *o = store_op_find(op);
	if (o && builtin_refuse_role(c, f, WEFT_ROLE_STORE))
		return;
	if (!o) {
		conn_reply_error(c, f, -ENOSYS, 0, "%s (0x%04x) is not served by a store",
				 proto_op_name(op) ? proto_op_name(op) : "unknown opcode", op);
		frame_free(f);
		return;
	}
	struct sreq *q = calloc(1, sizeof(*q));
	if (!q) {
		conn_reply(c, f, -ENOMEM, NULL, NULL, 0, NULL, NULL);
		frame_free(f);
		return;
	}
	const char *why = NULL;
	if (o->decode && proto_msg_decode_any((enum weft_msg_type)proto_op_req_type(op), f->payload,
					      f->h.payload_len, &q->m, &why)) {
		log_warn("%s from %s: %s", proto_op_name(op), conn_peer(c), why ? why : "malformed");
		conn_reply_error(c, f, -WEFT_EPROTO, 0, "%s: %s", proto_op_name(op),
				 why ? why : "malformed");
		frame_free(f);
		free(q);
		return;
	}
	q->op = op;
	if (store_caps_refuse(s, c, f, q)) {
		free(q);
		return;
	}
	q->s = s;
	q->c = c;
	conn_get(c);
	q->f = f;
	q->op = op;
	q->job.fn = run_job;
	atomic_fetch_add(&s->pending, 1);
	store_workers_push(s->workers, &q->job, o->key(q));
}

static const struct conn_ops srv_ops = {.on_request = on_request};

/* ---- lifecycle ---- */

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

static int advertised_addr(struct store_server *s, const struct store_server_opts *o, int port)
{
	if (o->advertise) {
		snprintf(s->addr, sizeof(s->addr), "%s", o->advertise);
		return 0;
	}
	char host[WEFT_ADDR_MAX + 1] = "";
	const char *l = o->listen ? o->listen : "";
	const char *colon = strrchr(l, ':');
	size_t hl = colon ? (size_t)(colon - l) : strlen(l);
	if (hl >= sizeof(host))
		return -ENAMETOOLONG;
	memcpy(host, l, hl);
	host[hl] = 0;
	if (host[0] == 0 || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "[::]") == 0) {
		log_warn("listening on %s: registering 127.0.0.1:%d with meta as the address clients "
			 "use (only local clients can reach it; pass --advertise HOST:PORT)",
			 l[0] ? l : "all addresses", port);
		snprintf(host, sizeof(host), "127.0.0.1");
	}
	if (snprintf(s->addr, sizeof(s->addr), "%s:%d", host, port) >= (int)sizeof(s->addr))
		return -ENAMETOOLONG;
	return 0;
}

static void free_server(struct store_server *s)
{
	pthread_mutex_destroy(&s->fwd_lock);
	pthread_mutex_destroy(&s->report_lock);
	store_caps_fini(s);
	pthread_mutex_destroy(&s->repair_lock);
	pthread_mutex_destroy(&s->hb_lock);
	pthread_cond_destroy(&s->hb_cond);
	free(s->dir);
	free(s->meta_addr);
	free(s->node);
	free(s->listen);
	nodetab_free(s->nodes);
	free(s);
}

static int open_objects(struct store_server *s, char *err, size_t errlen);

/* The directory's contents cannot be vouched for (why): objects/ and index/ move to
 * untrusted-<old incarnation>/ (kept for an administrator, never served), the target
 * starts empty under a new incarnation, and meta makes it a new, syncing member. */
static int set_aside(struct store_server *s, const char *why, char *err, size_t errlen)
{
	char aside[4096], from[4096], to[4096];
	snprintf(aside, sizeof(aside), "%s/untrusted-%016" PRIx64, s->dir,
		 store_target_incarnation(s->t));
	store_obj_close(s->objs);
	s->objs = NULL;
	int rc = mkdir(aside, 0750) < 0 && errno != EEXIST ? -errno : 0;
	for (int i = 0; i < 2 && rc == 0; i++) {
		const char *sub = i ? "index" : "objects";
		if (snprintf(from, sizeof(from), "%s/%s", s->dir, sub) >= (int)sizeof(from) ||
		    snprintf(to, sizeof(to), "%s/%s", aside, sub) >= (int)sizeof(to))
			rc = -ENAMETOOLONG;
		else if (rename(from, to) < 0 && errno != ENOENT)
			rc = -errno;
	}
	if (rc)
		return fail(err, errlen, rc, "%s: setting untrusted objects aside in %s: %s", s->dir,
			    aside, strerror(-rc));
	if ((rc = store_target_new_incarnation(s->t)))
		return fail(err, errlen, rc, "%s: recording a new incarnation: %s", s->dir,
			    weft_strerror(rc));
	s->renewed = true;
	log_warn("%s: %s: its objects and index are set aside in %s (never served; remove "
		 "them once the data is safe elsewhere); rejoining as a new, empty target",
		 s->dir, why, aside);
	struct store_obj_opts oo = {.buffered = s->buffered};
	if ((rc = store_obj_open(s->t, &oo, &s->objs)))
		return fail(err, errlen, rc, "open objects of %s: %s", s->dir, weft_strerror(rc));
	return 0;
}

/* Opens (formatting on first start) the target once meta told us the file system. */
static int open_target(struct store_server *s, bool formatted, uint8_t fs_checksums,
		       char *err, size_t errlen)
{
	int rc;
	if (!formatted) {
		struct store_target_opts to = {.uuid = s->uuid, .no_checksums = !fs_checksums};
		rc = store_target_open(s->dir, &to, &s->t);
		if (rc)
			return fail(err, errlen, rc, "format %s: %s", s->dir, weft_strerror(rc));
	} else if (store_target_checksums(s->t) != !!fs_checksums) {
		return fail(err, errlen, -EINVAL, "%s: target has checksums %s but file system "
			    "has them %s", s->dir, store_target_checksums(s->t) ? "on" : "off",
			    fs_checksums ? "on" : "off");
	}
	rc = store_target_set_identity(s->t, s->fsid, s->target_id);
	if (rc)
		return fail(err, errlen, rc, "%s: %s", s->dir, rc == -EXDEV ?
			    "belongs to another file system" : weft_strerror(rc));
	s->checksums = store_target_checksums(s->t);
	if (!s->objs && (rc = open_objects(s, err, errlen)))
		return rc;
	return 0;
}

/* Opens the objects and index, and decides whether the directory can be vouched for: if
 * not (objects or index lost), a new incarnation tells meta to treat the target as new
 * and empty (docs/ARCHITECTURE.md, "Lost and stale objects"). */
static int open_objects(struct store_server *s, char *err, size_t errlen)
{
	struct store_obj_opts oo = {.buffered = s->buffered};
	int rc = store_obj_open(s->t, &oo, &s->objs);
	if (rc)
		return fail(err, errlen, rc, "open objects of %s: %s", s->dir, weft_strerror(rc));
	char why[160];
	if (!store_obj_vouch(s->objs, why, sizeof(why)) &&
	    (rc = set_aside(s, why, err, errlen)))
		return rc;
	size_t ntorn = 0;
	const struct store_torn *torn = store_obj_torn(s->objs, &ntorn);
	for (size_t i = 0; i < ntorn; i++)
		log_warn("torn object ino %" PRIu64 " stripe %" PRIu32 " recovered: size %" PRIu64
			 "%s, %" PRIu64 " bad chunks", torn[i].rec.ino, torn[i].rec.stripe,
			 torn[i].size, torn[i].cut_from ? " (unacknowledged tail cut)" : "",
			 torn[i].nbad);
	if (ntorn)
		log_warn("%zu torn objects found at start (interrupted writes)", ntorn);
	return 0;
}

int store_server_start(const struct store_server_opts *o, struct store_server **out,
		       char *err, size_t errlen)
{
	struct store_server *s = calloc(1, sizeof(*s));
	if (!s)
		return fail(err, errlen, -ENOMEM, "out of memory");
	int rc;
	s->dir = strdup(o->dir);
	s->meta_addr = strdup(o->meta);
	s->node = strdup(o->node);
	s->listen = strdup(o->listen ? o->listen : "0.0.0.0");
	s->key = *o->key;
	s->nodes = nodetab_new();
	s->heartbeat_ms = o->heartbeat_ms ? o->heartbeat_ms : 1000;
	s->buffered = o->buffered;
	s->forward_timeout_ms = o->forward_timeout_ms ? o->forward_timeout_ms : 10000;
	s->resync_rate = !o->resync_rate ? 64ull << 20 : o->resync_rate == UINT64_MAX ? 0 :
		o->resync_rate;
	s->stop = o->stop;
	s->capacity = o->capacity;
	pthread_mutex_init(&s->fwd_lock, NULL);
	pthread_mutex_init(&s->report_lock, NULL);
	store_caps_init(s);
	pthread_mutex_init(&s->repair_lock, NULL);
	pthread_mutex_init(&s->hb_lock, NULL);
	pthread_cond_init(&s->hb_cond, NULL);
	if (!s->dir || !s->meta_addr || !s->node || !s->listen || !s->nodes) {
		free_server(s);
		return fail(err, errlen, -ENOMEM, "out of memory");
	}

	/* An existing target is opened now (its UUID is registered); a new one is formatted
	 * only once meta has answered, with the file system's checksum mode. */
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", s->dir, STORE_TARGET_FILE);
	bool formatted = access(path, F_OK) == 0;
	if (formatted) {
		struct store_target_opts to = {.any_checksums = true};
		rc = store_target_open(s->dir, &to, &s->t);
		if (rc) {
			free_server(s);
			return fail(err, errlen, rc, "open target %s: %s", o->dir, weft_strerror(rc));
		}
		store_target_uuid(s->t, s->uuid);
		/* objects first: registration reports what the directory holds */
		rc = open_objects(s, err, errlen);
		if (rc) {
			store_obj_close(s->objs);
			store_target_close(s->t);
			free_server(s);
			return rc;
		}
	} else {
		if (mkdir(s->dir, 0750) < 0 && errno != EEXIST) {
			rc = -errno;
			free_server(s);
			return fail(err, errlen, rc, "mkdir %s: %s", o->dir, strerror(-rc));
		}
		auth_random(s->uuid, sizeof(s->uuid));
	}

	rc = loop_new(&s->loop);
	if (rc == 0)
		rc = loop_start(s->loop);
	if (rc) {
		snprintf(err, errlen, "event loop: %s", strerror(-rc));
		goto fail;
	}
	rc = store_workers_create(o->workers ? o->workers : 8, &s->workers);
	if (rc) {
		snprintf(err, errlen, "worker threads: %s", strerror(-rc));
		goto fail;
	}
	struct server_params sp = {.loop = s->loop, .key = &s->key, .role = WEFT_ROLE_STORE,
				   .name = s->node, .verify = store_verify_peer, .verify_arg = s,
				   .listen = s->listen,
				   .default_port = o->default_port, .ops = &srv_ops, .ctx = s};
	rc = server_new(&sp, &s->srv, err, errlen);
	if (rc)
		goto fail;
	rc = advertised_addr(s, o, server_port(s->srv));
	if (rc) {
		snprintf(err, errlen, "address too long");
		goto fail;
	}
	struct rpc_params rp = {.loop = s->loop, .key = &s->key, .addr = s->meta_addr,
				.default_port = 7070, .role = WEFT_ROLE_STORE, .name = s->node,
				.ops = &store_meta_conn_ops, .ctx = s};
	rc = rpc_new(&rp, &s->meta);
	if (rc) {
		snprintf(err, errlen, "bad meta address '%s'", s->meta_addr);
		goto fail;
	}
	if ((rc = store_chains_init(s))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	uint8_t fs_checksums = 1;
	rc = store_hb_register(s, true, &fs_checksums);
	if (rc) {
		snprintf(err, errlen, "registering with meta %s: %s", s->meta_addr,
			 weft_strerror(rc));
		goto fail;
	}
	rc = open_target(s, formatted, fs_checksums, err, errlen);
	if (rc)
		goto fail;
	/* meta: older than it was (restored from an old copy); a new incarnation this
	 * store just chose is untrusted too, and already empty */
	if (s->untrusted && !s->renewed) {
		rc = set_aside(s, "meta cannot vouch for it (its write sequence went back)",
			       err, errlen);
		if (rc == 0)
			rc = store_hb_register(s, false, NULL);
		if (rc)
			goto fail;
	}
	/* a new target registers again: meta records its incarnation from the start */
	if (!formatted && (rc = store_hb_register(s, false, NULL))) {
		snprintf(err, errlen, "registering with meta %s: %s", s->meta_addr,
			 weft_strerror(rc));
		goto fail;
	}
	rc = store_resync_open(s);
	if (rc) {
		snprintf(err, errlen, "%s/missed.log: %s", s->dir, strerror(-rc));
		goto fail;
	}
	rc = store_chains_refresh(s, true);
	if (rc)
		log_warn("fetching chain tables from meta %s: %s (will retry)", s->meta_addr,
			 weft_strerror(rc));
	loop_every(s->loop, 1000, store_repl_check_timeouts, s);
	atomic_store(&s->ready, true);
	rc = store_hb_start(s);
	if (rc == 0)
		rc = store_resync_start(s);
	if (rc) {
		snprintf(err, errlen, "heartbeat or resync thread: %s", strerror(-rc));
		goto fail;
	}
	log_info("target %u (%s) serving on %s, registered as %s with meta %s, checksums %s",
		 s->target_id, s->dir, s->listen, s->addr, s->meta_addr,
		 s->checksums ? "on" : "off");
	*out = s;
	return 0;

fail:
	atomic_store(&s->ready, false);
	store_server_stop(s);
	return rc;
}

const char *store_server_addr(const struct store_server *s) { return s->addr; }
int store_server_port(const struct store_server *s) { return server_port(s->srv); }
uint32_t store_server_target(const struct store_server *s) { return s->target_id; }

void store_server_stop(struct store_server *s)
{
	if (!s)
		return;
	atomic_store(&s->stopping, true);
	atomic_store(&s->ready, false);
	store_hb_stop(s);
	store_resync_close(s);
	if (s->srv)
		server_free(s->srv);
	s->srv = NULL;
	/* Requests already queued run (and are refused: not ready); forwards in flight
	 * complete when the successors' connections close. */
	store_workers_destroy(s->workers);
	s->workers = NULL;
	chaincache_free(s->cc); /* closes the successors' connections */
	s->cc = NULL;
	for (int i = 0; i < 500 && atomic_load(&s->pending) > 0; i++)
		usleep(10000);
	if (atomic_load(&s->pending) > 0)
		log_warn("stopping with %d requests still pending", atomic_load(&s->pending));
	rpc_free(s->meta);
	loop_free(s->loop);
	store_obj_close(s->objs);
	store_target_close(s->t);
	free_server(s);
}

struct loop *store_server_loop(const struct store_server *s)
{
	return s->loop;
}
