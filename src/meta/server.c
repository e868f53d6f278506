/* weft meta's RPC server: request dispatch (reads on the loop thread, mutations through
 * the group commit), expiry timers, start and stop. See server.h for the design. */
#include "meta/server.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "net/builtin.h"
#include "common/log.h"
#include "meta/chains.h"
#include "meta/lease.h"
#include "meta/migrate.h"
#include "meta/perm.h"
#include "meta/replies.h"
#include "meta/server_int.h"
#include "meta/session.h"
#include "meta/space.h"
#include "net/nodetab.h"
#include "net/wire.h"
#include "weft/err.h"

/* ---- finishing a request ---- */

static void bulk_release(void *p)
{
	free(p);
}

/* Sends the reply (success or error) and frees r. Any thread. */
/* Replies that carry a DURABLE record as their bulk (proto.h, MSG_REPLAY): namespace
 * mutations (and FSYNC), and the session's open and beats, which tell an idle client
 * what is synced and when meta restarted. */
static bool carries_durable(const struct mreq *r)
{
	uint16_t op = r->h->op;
	return (op >> 8 == 1 && r->h->write) || op == WEFT_OP_SESSION_OPEN ||
	       op == WEFT_OP_SESSION_BEAT;
}

static void durable_record(struct meta_server *s, struct wbuf *w, uint64_t transno)
{
	wbuf_u64(w, transno);
	wbuf_u64(w, meta_commit_synced(s->gc));
	wbuf_u64(w, s->boot);
}

/* The directory an ENTRY reply's request named (the name's parent); 0: none. */
static uint64_t entry_dir_of(const struct mreq *r)
{
	const void *m = r->msg;
	switch (r->h->op) {
	case WEFT_OP_LOOKUP:
		return ((const struct weft_msg_lookup *)m)->parent;
	case WEFT_OP_CREATE:
	case WEFT_OP_MKDIR:
		return ((const struct weft_msg_create *)m)->parent;
	case WEFT_OP_SYMLINK:
		return ((const struct weft_msg_symlink *)m)->parent;
	case WEFT_OP_LINK:
		return ((const struct weft_msg_link *)m)->newparent;
	default:
		return 0;
	}
}

static void mreq_finish(struct mreq *r, int rc)
{
	struct conn *c = r->c;
	if (rc) {
		if (r->detail[0])
			conn_reply_error(c, r->f, rc, r->err_target, "%s", r->detail);
		else
			conn_reply(c, r->f, rc, NULL, NULL, 0, NULL, NULL);
	} else {
		struct wbuf w;
		wbuf_init(&w);
		if (r->h->reply) {
			r->h->reply(r, &w);
		} else {
			switch (proto_op_rep_type(r->h->op)) {
			case WEFT_MSG_entry: {
				/* a lease on what the reply shows; LOOKUP's covers the name too */
				uint64_t sess = meta_conn_session(r->s, c), now = loop_now_ms();
				uint64_t dir = entry_dir_of(r);
				/* the caller's lease on the directory, renewed only if it never
				 * lapsed (dir_lease, proto.h) */
				uint32_t dir_lease = dir ? meta_leases_renew(r->s->leases, sess, dir,
									     now) : 0;
				bool dir_ok = r->h->op != WEFT_OP_LOOKUP || dir_lease ||
					      meta_leases_grant(r->s->leases, sess, dir, false, now);
				uint32_t lease = meta_leases_grant(r->s->leases, sess, r->attr.ino,
								   false, now);
				/* the kernel caches the name with the child: both need a lease */
				struct weft_msg_entry m = {.attr = r->attr, .layout = r->layout,
							   .lease = dir_ok ? lease : 0,
							   .dir_lease = dir_lease};
				proto_entry_encode(&w, &m);
				break;
			}
			case WEFT_MSG_attr: {
				struct weft_msg_attr m = {.attr = r->attr};
				proto_attr_encode(&w, &m);
				break;
			}
			default:
				break;
			}
		}
		if (carries_durable(r))
			durable_record(r->s, &r->bulk, r->mut.transno);
		if (w.err || r->bulk.err) {
			wbuf_free(&w);
			conn_reply(c, r->f, -ENOMEM, NULL, NULL, 0, NULL, NULL);
		} else if (r->bulk.len) {
			struct iovec v = {r->bulk.data, r->bulk.len};
			/* the buffer moves to the send queue; released when sent */
			r->bulk.data = NULL;
			r->bulk.len = r->bulk.cap = 0;
			conn_reply(c, r->f, 0, &w, &v, 1, bulk_release, v.iov_base);
		} else {
			conn_reply(c, r->f, 0, &w, NULL, 0, NULL, NULL);
		}
		wbuf_free(&w);
	}
	wbuf_free(&r->bulk);
	if (r->tag_pending)
		meta_replies_pending_del(r->s->replies, r->tag_client, r->tag_xid);
	wbuf_free(&r->saved);
	frame_free(r->f);
	conn_put(c);
	free(r);
}

/* ---- mutations ---- */

/* An asynchronous create (CREATE_OPEN with ino, checked by its handler) takes the number
 * and the time the client gave the file; a time far from meta's clock is not taken. */
static void client_time(int64_t t, struct meta_ctx *ctx)
{
	int64_t d = t - meta_now_ns();
	if (t && d < 60 * 1000000000LL && d > -60 * 1000000000LL)
		ctx->now_ns = t;
}

static void async_create_ctx(const struct mreq *r, struct meta_ctx *ctx)
{
	const struct weft_msg_create_open *m = (const void *)r->msg;
	if (!m->ino)
		return;
	ctx->impose_ino = m->ino;
	ctx->impose_gen = 1;
	client_time(m->time_ns, ctx);
}

/* A mkdir the client answered itself (MKDIR with ino, checked by its handler). */
static void async_mkdir_ctx(const struct mreq *r, struct meta_ctx *ctx)
{
	const struct weft_msg_create *m = (const void *)r->msg;
	ctx->impose_ino = m->ino;
	ctx->impose_gen = 1;
	client_time(m->time_ns, ctx);
}

static int mut_apply(MDB_txn *txn, void *arg)
{
	struct mreq *r = arg;
	struct meta_ctx ctx = {.db = r->s->db, .txn = txn, .cred = &r->cred};
	if (r->replay) {
		ctx.impose_ino = r->replay_ino;
		ctx.impose_gen = r->replay_gen;
	}
	if (r->h->op == WEFT_OP_CREATE_OPEN)
		async_create_ctx(r, &ctx);
	if (r->h->op == WEFT_OP_MKDIR && ((const struct weft_msg_create *)(const void *)r->msg)->ino)
		async_mkdir_ctx(r, &ctx);
	if (r->h->op == WEFT_OP_UNLINK || r->h->op == WEFT_OP_RMDIR) /* asynchronous ones' (acreate.c) */
		client_time(((const struct weft_msg_name *)(const void *)r->msg)->time_ns, &ctx);
	if (r->h->op == WEFT_OP_RENAME)
		client_time(((const struct weft_msg_rename *)(const void *)r->msg)->time_ns, &ctx);
	int rc = r->h->apply(r, &ctx);
	if (rc == 0 && r->tagged) {
		/* the reply a copy of this request will get (replies.h): no lease, no
		 * capability (minted afresh for the copy) */
		wbuf_free(&r->saved);
		wbuf_init(&r->saved);
		switch (proto_op_rep_type(r->h->op)) {
		case WEFT_MSG_entry: {
			struct weft_msg_entry m = {.attr = r->attr, .layout = r->layout};
			proto_entry_encode(&r->saved, &m);
			break;
		}
		case WEFT_MSG_attr: {
			struct weft_msg_attr m = {.attr = r->attr};
			proto_attr_encode(&r->saved, &m);
			break;
		}
		case WEFT_MSG_opened: {
			struct weft_msg_opened m = {.attr = r->attr, .layout = r->layout,
						    .handle = r->u64, .created = r->flag,
						    .written = {(const char *)r->written,
								r->written_len}};
			proto_opened_encode(&r->saved, &m);
			break;
		}
		default:
			break;
		}
		if (r->saved.err)
			rc = -ENOMEM;
	}
	return rc;
}

/* The batch numbered a tagged mutation: its reply is recorded in the same txn. */
static int mut_stamped(MDB_txn *txn, void *arg, uint64_t transno)
{
	struct mreq *r = arg;
	if (!r->tagged)
		return 0;
	return meta_replies_put(r->s->db, txn, r->tag_client, r->tag_xid, transno,
				r->saved.data, r->saved.len, r->tag_done_below);
}

static void mut_done(void *arg, int result)
{
	struct mreq *r = arg;
	meta_recall_done(r->s, r);
	if (result && r->opened_ino) /* the batch failed: the open did not happen */
		meta_session_release(r->s->db, NULL,
				     ((struct weft_msg_create_open *)(void *)r->msg)->session,
				     r->opened_ino);
	if (result == 0 && r->h->wakes_deleter)
		meta_deleter_wake(r->s->del);
	if (r->h->op == WEFT_OP_MIGRATE)
		meta_migrate_done(r->s, r, result);
	mreq_finish(r, result);
}

static int reap_apply(MDB_txn *txn, void *arg)
{
	struct mreq *r = arg;
	return meta_session_reap(r->s->db, txn, NULL);
}

/* The release itself succeeded; a failed reap leaves the orphan for the next tick. */
static void reap_done(void *arg, int result)
{
	struct mreq *r = arg;
	if (result == 0)
		meta_deleter_wake(r->s->del);
	mreq_finish(r, 0);
}

/* ---- reads on the loop thread ---- */

static int run_read(struct mreq *r)
{
	struct meta_server *s = r->s;
	int rc;
	meta_db_map_rdlock(s->db);
	if (s->rtxn)
		rc = meta_mdb_err(mdb_txn_renew(s->rtxn));
	else
		rc = meta_mdb_err(mdb_txn_begin(s->db->env, NULL, MDB_RDONLY, &s->rtxn));
	if (rc) {
		meta_db_map_unlock(s->db);
		return rc;
	}
	struct meta_ctx ctx = {.db = s->db, .txn = s->rtxn, .cred = &r->cred};
	rc = r->h->apply(r, &ctx);
	mdb_txn_reset(s->rtxn);
	meta_db_map_unlock(s->db);
	return rc;
}

void meta_read_resume(struct meta_server *s, struct mreq *r)
{
	(void)s;
	memset(r->detail, 0, sizeof(r->detail));
	mreq_finish(r, run_read(r));
}

/* ---- dispatch ---- */

static const struct meta_handler *find_handler(uint16_t op)
{
	for (const struct meta_handler *h = meta_ns_handlers; h->op; h++)
		if (h->op == op)
			return h;
	for (const struct meta_handler *h = meta_cluster_handlers; h->op; h++)
		if (h->op == op)
			return h;
	for (const struct meta_handler *h = meta_node_handlers; h->op; h++)
		if (h->op == op)
			return h;
	return NULL;
}

/* Sessions belong to the node that opened them: a peer with a node credential may name
 * only its own node's sessions (a secret holder, any). */
static bool session_owner_ok(struct meta_server *s, struct conn *c, uint16_t op,
			     const void *msg, char *detail, size_t cap)
{
	uint64_t id;
	switch (op) {
	case WEFT_OP_OPEN: id = ((const struct weft_msg_open *)msg)->session; break;
	case WEFT_OP_CREATE_OPEN: id = ((const struct weft_msg_create_open *)msg)->session; break;
	case WEFT_OP_RELEASE: id = ((const struct weft_msg_release *)msg)->session; break;
	case WEFT_OP_REOPEN: id = ((const struct weft_msg_reopen *)msg)->session; break;
	case WEFT_OP_CAP_GET: id = ((const struct weft_msg_cap_get *)msg)->session; break;
	case WEFT_OP_SESSION_BEAT: case WEFT_OP_SESSION_CLOSE:
		id = ((const struct weft_msg_session_id *)msg)->session;
		break;
	default:
		return true;
	}
	struct meta_session ms;
	if (id == 0 || conn_peer_serial(c) == 0 || meta_session_get(s->db, NULL, id, &ms) != 0 ||
	    strcmp(ms.node, conn_peer_name(c)) == 0)
		return true;
	snprintf(detail, cap, "%s: session %llu belongs to node %s, not to %s", proto_op_name(op),
		 (unsigned long long)id, ms.node, conn_peer_name(c));
	log_warn("refused %s from %s: session %llu belongs to node %s, not to %s",
		 proto_op_name(op), conn_peer(c), (unsigned long long)id, ms.node, conn_peer_name(c));
	return false;
}

/* REPLAY {transno, ino, gen, op, payload}: answered 0 at once if the database holds
 * transno; else f becomes op's request (payload and bulk) and *rp says what to impose.
 * Returns true if f was answered (and freed). */
static bool replay_unwrap(struct meta_server *s, struct conn *c, struct frame *f,
			  struct mreq *rp)
{
	struct weft_msg_replay m;
	const char *why = NULL;
	if (proto_replay_decode(f->payload, f->h.payload_len, &m, &why)) {
		conn_reply_error(c, f, -WEFT_EPROTO, 0, "REPLAY: %s", why ? why : "malformed");
		frame_free(f);
		return true;
	}
	if (m.op >> 8 != 1 || m.op == WEFT_OP_REPLAY || m.transno == 0) {
		conn_reply_error(c, f, -EINVAL, 0, "REPLAY of %s (transno %llu): not a mutation",
				 proto_op_name(m.op) ? proto_op_name(m.op) : "?",
				 (unsigned long long)m.transno);
		frame_free(f);
		return true;
	}
	/* tagged (libweft's), its reply record answers whether the database holds it
	 * (tagged_unwrap found none: it does not), whatever became of the numbers since */
	if (!rp->tagged && m.transno <= s->boundary) {
		struct wbuf w, d;
		wbuf_init(&w);
		wbuf_init(&d);
		durable_record(s, &d, m.transno);
		struct iovec v = {d.data, d.len};
		conn_reply(c, f, 0, &w, &v, 1, NULL, NULL);
		wbuf_free(&w);
		wbuf_free(&d);
		frame_free(f);
		return true;
	}
	/* the op's payload lies inside the REPLAY's, in the same frame allocation */
	f->payload = (uint8_t *)(uintptr_t)m.payload.p;
	f->h.payload_len = m.payload.len;
	f->h.opcode = m.op;
	rp->replay = true;
	rp->replay_ino = m.ino;
	rp->replay_gen = m.gen;
	log_info("replay of %s (transno %llu) from %s", proto_op_name(m.op),
		 (unsigned long long)m.transno, conn_peer(c));
	return false;
}

/* TAGGED {client, xid, done_below, op, payload}: answered from the reply cache if
 * (client, xid) was applied (a copy sent again after a connection died); else f becomes
 * op's request and *rp carries the tag. Returns true if f was answered (and freed). */
static bool tagged_unwrap(struct meta_server *s, struct conn *c, struct frame *f,
			  struct mreq *rp)
{
	struct weft_msg_tagged m;
	const char *why = NULL;
	if (proto_tagged_decode(f->payload, f->h.payload_len, &m, &why)) {
		conn_reply_error(c, f, -WEFT_EPROTO, 0, "TAGGED: %s", why ? why : "malformed");
		frame_free(f);
		return true;
	}
	if (m.op >> 8 != 1 || m.op == WEFT_OP_TAGGED) {
		conn_reply_error(c, f, -EINVAL, 0, "TAGGED %s: not a namespace mutation",
				 proto_op_name(m.op) ? proto_op_name(m.op) : "?");
		frame_free(f);
		return true;
	}
	uint64_t transno = 0;
	struct wbuf w;
	wbuf_init(&w);
	meta_db_map_rdlock(s->db);
	int rc = s->rtxn ? meta_mdb_err(mdb_txn_renew(s->rtxn))
			 : meta_mdb_err(mdb_txn_begin(s->db->env, NULL, MDB_RDONLY, &s->rtxn));
	if (rc == 0) {
		rc = meta_replies_get(s->db, s->rtxn, m.client, m.xid, &transno, &w);
		mdb_txn_reset(s->rtxn);
	}
	meta_db_map_unlock(s->db);
	if (rc == -ENOENT) {
		wbuf_free(&w);
		f->payload = (uint8_t *)(uintptr_t)m.payload.p;
		f->h.payload_len = m.payload.len;
		f->h.opcode = m.op;
		rp->tagged = true;
		rp->tag_client = m.client;
		rp->tag_xid = m.xid;
		rp->tag_done_below = m.done_below;
		return false;
	}
	if (rc == 0 && m.op == WEFT_OP_CREATE_OPEN) {
		/* an open needs a capability of its own: minted for this connection */
		struct weft_msg_opened o;
		struct weft_msg_create_open co;
		struct wbuf w2;
		wbuf_init(&w2);
		if (proto_opened_decode(w.data, w.len, &o, NULL) == 0 &&
		    proto_create_open_decode(m.payload.p, m.payload.len, &co, NULL) == 0) {
			meta_cap_mint(s, c, o.attr.ino, co.session,
				      (co.open_flags & O_ACCMODE) == O_RDONLY &&
				      !(co.open_flags & O_TRUNC) ? WEFT_CAP_READ :
				      WEFT_CAP_READ | WEFT_CAP_WRITE, o.cap);
			proto_opened_encode(&w2, &o);
		}
		wbuf_free(&w);
		w = w2;
	}
	if (rc == 0 && !w.err) {
		struct wbuf d;
		wbuf_init(&d);
		durable_record(s, &d, transno);
		struct iovec v = {d.data, d.len};
		conn_reply(c, f, 0, &w, &v, 1, NULL, NULL);
		wbuf_free(&d);
		log_debug("%s from %s (client %llx, xid %llu) answered from the reply cache",
			  proto_op_name(m.op), conn_peer(c), (unsigned long long)m.client,
			  (unsigned long long)m.xid);
	} else {
		conn_reply_error(c, f, rc ? rc : -ENOMEM, 0, "TAGGED %s: reply cache: %s",
				 proto_op_name(m.op), weft_strerror(rc ? rc : -ENOMEM));
	}
	wbuf_free(&w);
	frame_free(f);
	return true;
}

static void on_request(struct conn *c, struct frame *f)
{
	struct meta_server *s = conn_ctx(c);
	uint16_t op = f->h.opcode;
	if (builtin_handle(c, f))
		return;
	struct mreq rp = {0};
	if (op == WEFT_OP_TAGGED) {
		if (tagged_unwrap(s, c, f, &rp))
			return;
		op = f->h.opcode;
	}
	if (op == WEFT_OP_REPLAY) {
		if (replay_unwrap(s, c, f, &rp))
			return;
		op = f->h.opcode;
	} else if (s->recover_until_ms && op >> 8 == 1 && op != WEFT_OP_FSYNC) {
		const struct meta_handler *hh = find_handler(op);
		if (hh && hh->write) {
			if (loop_now_ms() < s->recover_until_ms) {
				conn_reply_error(c, f, -WEFT_ERECOVERING, 0,
						 "%s: meta is taking replays after a restart",
						 proto_op_name(op));
				frame_free(f);
				return;
			}
			s->recover_until_ms = 0;
			log_info("recovery window over: serving every mutation");
		}
	}
	const struct meta_handler *h = find_handler(op);
	if (h && builtin_refuse_role(c, f, WEFT_ROLE_META))
		return;
	if (!h) {
		const char *name = proto_op_name(op);
		conn_reply_error(c, f, -ENOSYS, 0, "opcode 0x%04x (%s) is not served by meta", op,
				 name ? name : "unknown");
		frame_free(f);
		return;
	}
	if (s->stopping) {
		conn_reply_error(c, f, -ESHUTDOWN, 0, "meta is shutting down");
		frame_free(f);
		return;
	}
	bool fenced = false;
	if ((h->write || op == WEFT_OP_OPEN || op == WEFT_OP_CAP_GET) &&
	    op != WEFT_OP_SESSION_OPEN &&
	    meta_leases_session_of(s->leases, c, &fenced) && fenced) {
		/* an evicted session's late requests (lease.h) */
		conn_reply_error(c, f, -WEFT_EEVICTED, 0, "%s: this session was evicted",
				 proto_op_name(op));
		frame_free(f);
		return;
	}
	int t = proto_op_req_type(op);
	size_t msz = proto_msg_size((enum weft_msg_type)t);
	struct mreq *r = calloc(1, sizeof(*r) + msz);
	if (!r) {
		conn_reply(c, f, -ENOMEM, NULL, NULL, 0, NULL, NULL);
		frame_free(f);
		return;
	}
	const char *why = NULL;
	if (proto_msg_decode_any((enum weft_msg_type)t, f->payload, f->h.payload_len, r->msg,
				 &why) < 0) {
		if (h->name_errors && proto_decode_err(why) == -ENAMETOOLONG)
			conn_reply_error(c, f, -ENAMETOOLONG, 0, "%s: name over %d bytes",
					 proto_op_name(op), WEFT_NAME_MAX);
		else
			conn_reply_error(c, f, -WEFT_EPROTO, 0, "%s: %s", proto_op_name(op),
					 why ? why : "malformed");
		log_debug("malformed %s from %s: %s", proto_op_name(op), conn_peer(c),
			  why ? why : "?");
		frame_free(f);
		free(r);
		return;
	}
	r->s = s;
	r->c = c;
	r->f = f;
	r->h = h;
	r->replay = rp.replay;
	r->replay_ino = rp.replay_ino;
	r->replay_gen = rp.replay_gen;
	r->tagged = rp.tagged && h->write;
	r->tag_client = rp.tag_client;
	r->tag_xid = rp.tag_xid;
	r->tag_done_below = rp.tag_done_below;
	wbuf_init(&r->saved);
	wbuf_init(&r->bulk);
	if (!session_owner_ok(s, c, op, r->msg, r->detail, sizeof(r->detail))) {
		conn_reply_error(c, f, -EACCES, 0, "%s", r->detail);
		frame_free(f);
		free(r);
		return;
	}
	if (h->has_cred) {
		memcpy(&r->cred, r->msg, sizeof(r->cred));
		if (s->root_squash)
			meta_perm_squash(&r->cred);
		if (meta_nodes_clamp(s, c, &r->cred, r->detail, sizeof(r->detail))) {
			conn_reply_error(c, f, -EACCES, 0, "%s", r->detail);
			frame_free(f);
			free(r);
			return;
		}
	}
	conn_get(c);
	if (!h->write) {
		if (meta_recall_claimed(s, r))
			return; /* another mount's creates there come first */
		int rc = run_read(r);
		if (rc == 0 && (op == WEFT_OP_GETATTR || op == WEFT_OP_LOOKUP) &&
		    meta_recall_read(s, r))
			return; /* another mount's buffered attributes come first */
		if (rc == 0 && op == WEFT_OP_RELEASE && r->flag) {
			/* an orphan's last open went: free it now, reply once that is committed */
			r->mut = (struct meta_mutation){.apply = reap_apply, .done = reap_done,
							.arg = r, .lazy = true, .what = "reap"};
			if (meta_commit_submit(s->gc, &r->mut) == 0)
				return;
		}
		mreq_finish(r, rc);
		return;
	}
	r->mut.apply = mut_apply;
	r->mut.done = mut_done;
	r->mut.what = proto_op_name(op);
	r->mut.stamped = mut_stamped;
	r->mut.arg = r;
	if (r->tagged) {
		/* a copy of it may come while it is applied: that one waits (replies.h) */
		if (!meta_replies_pending_add(s->replies, r->tag_client, r->tag_xid)) {
			snprintf(r->detail, sizeof(r->detail), "%s: a copy of it is being applied",
				 proto_op_name(op));
			mreq_finish(r, -WEFT_ERECOVERING);
			return;
		}
		r->tag_pending = true;
	}
	/* Lazy ops do not wait for the meta page's sync (intact after a power cut, durable
	 * with the next sync): EXTEND, the size a writer reports at close, which like a
	 * local file system's is durable once fsync returns (the client's fsync sends FSYNC,
	 * a durable op, after it), not at close; and a SETATTR with WEFT_SET_DEFERRED, the
	 * chmod/chown/utimes a client buffered (its write-back at close), for the same
	 * reason. (OPEN and RELEASE are not mutations: open
	 * state lives in memory, session.h.) */
	uint32_t set_valid = op == WEFT_OP_SETATTR
		? ((const struct weft_msg_setattr *)(const void *)r->msg)->valid : 0;
	r->mut.lazy = op == WEFT_OP_EXTEND || (set_valid & WEFT_SET_DEFERRED);
	/* nobody waits for it (a flush behind a close): it may wait for company */
	r->mut.linger = (op == WEFT_OP_EXTEND &&
			 ((const struct weft_msg_extend *)(const void *)r->msg)->behind) ||
			(set_valid & WEFT_SET_DEFERRED && set_valid & WEFT_SET_BEHIND);
	/* Namespace changes are answered once committed: clients keep them until synced
	 * and replay them (replay.c in libweft). The rest is answered after the sync:
	 * FSYNC (that is its point), and what no client keeps or whose effects leave meta
	 * at once (sessions, targets and chains, nodes, SETSTRIPE and MIGRATE from tools) */
	r->mut.durable = !r->mut.lazy && (op >> 8 != 1 || op == WEFT_OP_FSYNC ||
					  op == WEFT_OP_SETSTRIPE || op == WEFT_OP_MIGRATE);
	r->mut.grows = meta_op_grows(op);
	if (r->mut.grows && meta_space_low(s->space)) {
		snprintf(r->detail, sizeof(r->detail),
			 "%s: meta's metadata disk is full (what is left is kept for deletes)",
			 proto_op_name(op));
		mreq_finish(r, -ENOSPC);
		return;
	}
	/* a migration is marked before its recalls go: from then on no one opens the
	 * file with the old layout (migrate.h) */
	const struct weft_msg_migrate *mg = (const void *)r->msg;
	bool begin = op == WEFT_OP_MIGRATE && mg->step == WEFT_MIGRATE_BEGIN;
	int rc = begin ? meta_migrate_mark(s, r, mg->ino) : 0;
	if (rc) {
		mreq_finish(r, rc);
		return;
	}
	rc = meta_recall_submit(s, r);
	if (rc) {
		meta_recall_done(s, r);
		if (op == WEFT_OP_MIGRATE)
			meta_migrate_done(s, r, rc);
		mreq_finish(r, rc);
	}
}

/* Ops that grow the namespace: refused with ENOSPC once meta's space is low (space.h),
 * so that what is left stays for the ops that free it. Every other mutation (unlink,
 * rmdir, setattr and its truncate, removexattr, open/release, fsync, extend, sessions,
 * targets) goes ahead and may use the reserve. */
bool meta_op_grows(uint16_t op)
{
	switch (op) {
	case WEFT_OP_CREATE:
	case WEFT_OP_CREATE_OPEN:
	case WEFT_OP_MKDIR:
	case WEFT_OP_SYMLINK:
	case WEFT_OP_LINK:
	case WEFT_OP_RENAME:
	case WEFT_OP_SETXATTR:
	case WEFT_OP_SETSTRIPE:
		return true;
	default:
		return false;
	}
}

/* The handlers rely on this to pick the credential out of any request that has one. */
_Static_assert(offsetof(struct weft_msg_lookup, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_ino, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_setattr, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_create, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_name, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_rename, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_link, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_symlink, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_readdir, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_xattr, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_access, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_open, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_extend, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_setstripe, cred) == 0, "cred first");
_Static_assert(offsetof(struct weft_msg_migrate, cred) == 0, "cred first");

static void on_close(struct conn *c, int err)
{
	(void)err;
	struct meta_server *s = conn_ctx(c);
	if (s && s->leases)
		meta_leases_unbind(s->leases, c);
	if (s)
		meta_migrate_conn_closed(s, c);
}

static void on_ready(struct conn *c)
{
	meta_nodes_ready(conn_ctx(c), c);
}

static const struct conn_ops meta_conn_ops = {.on_request = on_request, .on_ready = on_ready,
					      .on_close = on_close};

/* ---- expiry of silent targets and sessions ---- */

struct expire_result {
	unsigned targets, sessions, replaced, reaped;
	bool isolated, hearing_again;
};
/* written by the writer thread (one expiry at a time), read by the completion thread */
static struct expire_result expire_res;

static int expire_apply(MDB_txn *txn, void *arg)
{
	struct meta_server *s = arg;
	int64_t now = meta_now_ns();
	uint64_t up = loop_now_ms() - s->started_ms;
	int rc = 0;
	expire_res = (struct expire_result){0};
	/* Every target silent at once: it is meta that was cut off (or stalled), not all
	 * of them. Taking them all out would leave no serving member anywhere; instead,
	 * as after a restart, everyone gets a new full timeout to get back in touch,
	 * counted from when meta hears from a target again: the cut may outlast any
	 * timeout, and once it heals the stores' heartbeats come back over seconds (each
	 * waits for its TCP retransmission, backed off during the cut), so a grace counted
	 * from the detection, or from a later check, could end before a store's first
	 * heartbeat and take it out. */
	if (!s->deaf && up > s->target_timeout_ms) {
		bool all = false;
		rc = meta_chains_all_silent(s->db, txn, now, (int64_t)s->target_timeout_ms * 1000000,
					    &all);
		if (rc == 0 && all) {
			s->deaf = true;
			s->deaf_since_ns = now;
			expire_res.isolated = true;
		}
	}
	if (!rc && s->deaf) {
		bool heard = false;
		rc = meta_chains_heard_since(s->db, txn, s->deaf_since_ns, &heard);
		if (!rc && heard) {
			s->deaf = false;
			expire_res.hearing_again = true;
		}
		s->started_ms = loop_now_ms(); /* writer thread only reads it */
		up = 0;
	}
	/* after a restart everyone gets one full timeout to get back in touch */
	if (!rc && up > s->target_timeout_ms)
		rc = meta_chains_expire(s->db, txn, now, (int64_t)s->target_timeout_ms * 1000000,
					&expire_res.targets);
	/* re-replication: chains of a target away longer than replace_after get another */
	if (!rc && up > s->target_timeout_ms)
		rc = meta_chains_replace_expired(s->db, txn, now, (int64_t)s->replace_after_ms * 1000000,
						 &expire_res.replaced);
	if (!rc && up > s->session_timeout_ms)
		rc = meta_session_expire(s->db, txn, now, (int64_t)s->session_timeout_ms * 1000000,
					 &expire_res.sessions);
	/* orphans whose last open went (a release, an expired session), after the grace
	 * period that lets clients reclaim their opens after a restart */
	if (!rc)
		rc = meta_session_reap(s->db, txn, &expire_res.reaped);
	/* drains and rebalancing: start the moves due (moves.h) */
	if (!rc && up > s->target_timeout_ms) {
		/* a rebalancing move waits until the last one's effect shows in the targets'
		 * reports: the old copies swept (store/sweep.c) and a heartbeat since */
		uint64_t now_ms = loop_now_ms();
		bool settled = now_ms - s->moves_busy_ms > MOVES_SETTLE_MS;
		s->moves.rebalance = (s->rebalance_auto || s->rebalance_once) && settled;
		rc = meta_moves_step(s->db, txn, &s->moves, &s->moves_res);
		if (!rc && s->moves_res.moving)
			s->moves_busy_ms = now_ms;
		s->moves_idle = !rc && settled && !s->moves_res.moving && !s->moves_res.started;
		if (s->moves_idle)
			s->rebalance_once = false; /* balanced, or no move would narrow the gap */
	}
	return rc;
}

static void expire_done(void *arg, int result)
{
	struct meta_server *s = arg;
	if (expire_res.isolated)
		log_warn("no storage target heard from within %u ms: meta itself was cut off or "
			 "stalled; every target and session gets a new full timeout once meta "
			 "hears from a target again", s->target_timeout_ms);
	if (expire_res.hearing_again)
		log_info("a storage target heard from again after meta's cut: every target and "
			 "session has %u ms from now", s->target_timeout_ms);
	if (result)
		log_warn("expiry of targets and sessions: %s", weft_strerror(result));
	else if (expire_res.replaced)
		log_warn("re-replication: %u chains got a replacement member", expire_res.replaced);
	if (!result && (expire_res.targets || expire_res.sessions)) {
		log_info("expired %u silent target(s), %u silent session(s)", expire_res.targets,
			 expire_res.sessions);
	}
	if (!result && (expire_res.sessions || expire_res.reaped))
		meta_deleter_wake(s->del);
	atomic_store(&s->expiring, false);
}

static void expire_tick(void *arg)
{
	struct meta_server *s = arg;
	if (s->stopping || atomic_exchange(&s->expiring, true))
		return;
	/* lazy: it writes nothing unless something expires, and an expiry a power cut loses
	 * happens again after the restart */
	s->expire_mut = (struct meta_mutation){.apply = expire_apply, .done = expire_done, .arg = s,
					       .lazy = true, .what = "expire"};
	if (meta_commit_submit(s->gc, &s->expire_mut))
		atomic_store(&s->expiring, false);
}

/* ---- store addresses ---- */

void meta_fix_store_addr(const char *given, size_t len, const char *peer, char *out, size_t cap)
{
	char g[WEFT_ADDR_MAX + 1];
	snprintf(g, sizeof(g), "%.*s", (int)len, given);
	const char *colon = strrchr(g, ':');
	if (!colon) {
		snprintf(out, cap, "%s", g);
		return;
	}
	size_t hl = (size_t)(colon - g);
	bool unspecified = hl == 0 || (hl == 7 && strncmp(g, "0.0.0.0", 7) == 0) ||
			   (hl == 4 && strncmp(g, "[::]", 4) == 0);
	if (!unspecified) {
		snprintf(out, cap, "%s", g);
		return;
	}
	/* peer is "a.b.c.d:port" or "[v6]:port": keep its host */
	const char *pc = strrchr(peer, ':');
	size_t pl = pc ? (size_t)(pc - peer) : strlen(peer);
	snprintf(out, cap, "%.*s%s", (int)pl, peer, colon);
}

/* ---- start and stop ---- */

static int read_super(struct meta_server *s)
{
	MDB_txn *txn;
	struct meta_super sb;
	int rc = meta_db_read_begin(s->db, &txn);
	if (rc)
		return rc;
	rc = meta_super_get(s->db, txn, &sb);
	meta_db_read_end(s->db, txn);
	if (rc)
		return rc;
	memcpy(s->fsid, sb.uuid, 16);
	s->root_squash = (sb.options & META_OPT_ROOT_SQUASH) != 0;
	s->checksums = (sb.options & META_OPT_CHECKSUMS) != 0;
	wire_floor_raise((int)((sb.options & META_OPT_WIRE_MASK) >> META_OPT_WIRE_SHIFT));
	log_info("wire protection: %s", wire_level_name(wire_floor()));
	s->had_sessions = sb.next_session > 1;
	return 0;
}

/* After an unclean stop: inode numbers a power cut took back must not be given again
 * before clients replay the creates that had them (they impose them). */
static int skip_inos(MDB_txn *txn, void *arg)
{
	struct meta_db *db = arg;
	struct meta_super sb;
	int rc = meta_super_get(db, txn, &sb);
	if (rc)
		return rc;
	sb.next_ino += META_REPLAY_INO_GAP;
	return meta_super_put(db, txn, &sb);
}

struct load_arg {
	struct meta_db *db;
	int64_t grace_until_ns;
};

static int load_sessions(MDB_txn *txn, void *arg)
{
	struct load_arg *a = arg;
	return meta_session_load(a->db, txn, a->grace_until_ns);
}

int meta_server_start(const struct meta_server_opts *o, struct meta_server **out, char *err,
		      size_t errlen)
{
	struct meta_server *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->key = *o->key;
	s->target_timeout_ms = o->target_timeout_ms ? o->target_timeout_ms : 10000;
	s->replace_after_ms = o->replace_after_ms ? o->replace_after_ms : 300000;
	s->moves.threshold = o->rebalance_threshold ? o->rebalance_threshold : 10;
	s->rebalance_auto = !o->no_rebalance;
	s->session_timeout_ms = o->session_timeout_ms ? o->session_timeout_ms : 30000;
	/* WEFT_META_LEASE_MS overrides the lease (tests) */
	const char *le = getenv("WEFT_META_LEASE_MS");
	uint32_t lease_ms = le ? (uint32_t)strtoul(le, NULL, 0) : o->lease_ms;
	if (meta_leases_new(lease_ms ? lease_ms : 5000, &s->leases) ||
	    meta_migrate_new(&s->migrations) || meta_replies_new(&s->replies)) {
		snprintf(err, errlen, "out of memory");
		meta_leases_free(s->leases);
		meta_migrate_free(s->migrations);
		free(s);
		return -ENOMEM;
	}
	atomic_init(&s->next_handle, 1);
	/* WEFT_META_CAP_MS overrides the capabilities' lifetime (tests); at most a period */
	const char *ce = getenv("WEFT_META_CAP_MS");
	s->cap_ms = ce ? (uint32_t)strtoul(ce, NULL, 0) : 600000;
	if (s->cap_ms == 0 || s->cap_ms > WEFT_CAP_PERIOD_MS)
		s->cap_ms = WEFT_CAP_PERIOD_MS;
	/* WEFT_META_MAPSIZE (bytes): the initial LMDB map (default 64 MiB); it grows online
	 * (space.h), so a tiny one exercises the growth */
	const char *ms = getenv("WEFT_META_MAPSIZE");
	uint64_t mapsize = ms ? strtoull(ms, NULL, 0) : 0;
	int rc = meta_db_open(o->dir, mapsize, &s->db);
	if (rc) {
		if (rc == -ENOENT)
			snprintf(err, errlen, "%s: no file system here (run weft mkfs --meta %s)",
				 o->dir, o->dir);
		else
			snprintf(err, errlen, "open %s: %s", o->dir, weft_strerror(rc));
		goto fail_free;
	}
	if ((rc = read_super(s))) {
		snprintf(err, errlen, "%s: superblock: %s", o->dir, weft_strerror(rc));
		goto fail_db;
	}
	if (!(s->nodes = nodetab_new()) || (rc = meta_nodes_load(s))) {
		rc = rc ? rc : -ENOMEM;
		snprintf(err, errlen, "%s: node registry: %s", o->dir, weft_strerror(rc));
		goto fail_db;
	}
	struct meta_space_opts so = {.reserve = o->reserve, .warn = o->space_warn,
				     .no_reserve = o->no_reserve};
	if ((rc = meta_space_open(s->db, o->dir, &so, &s->space, err, errlen)))
		goto fail_db;
	/* open state is rebuilt from the clients: orphans wait one session timeout for
	 * them before they are freed */
	struct load_arg la = {s->db, meta_now_ns() + (int64_t)s->session_timeout_ms * 1000000};
	if ((rc = meta_db_write(s->db, load_sessions, &la))) {
		snprintf(err, errlen, "%s: open files: %s", o->dir, weft_strerror(rc));
		goto fail_space;
	}
	/* DIR/running exists while meta runs: found at start, the last run did not stop
	 * cleanly, and clients may hold acknowledged mutations a power cut took away */
	snprintf(s->running_path, sizeof(s->running_path), "%s/running", o->dir);
	bool unclean = access(s->running_path, F_OK) == 0;
	if (unclean && (rc = meta_db_write(s->db, skip_inos, s->db))) {
		snprintf(err, errlen, "%s: superblock: %s", o->dir, weft_strerror(rc));
		goto fail_space;
	}
	int rfd = open(s->running_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (rfd < 0 || fsync(rfd) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", s->running_path, strerror(errno));
		if (rfd >= 0)
			close(rfd);
		goto fail_space;
	}
	close(rfd);
	if ((rc = meta_commit_start(s->db, o->sync_each ? 1 : 0, &s->gc))) {
		snprintf(err, errlen, "start group commit: %s", weft_strerror(rc));
		goto fail_space;
	}
	meta_commit_set_space(s->gc, s->space);
	/* WEFT_META_IDLE_SYNC_MS: how long committed lazy changes wait for a sync when meta
	 * is idle (commit.h; tests lengthen it to catch what a power cut would lose) */
	/* WEFT_META_LINGER_MS: how long ops nobody waits for wait for company (commit.h) */
	const char *lg = getenv("WEFT_META_LINGER_MS");
	if (lg && *lg)
		meta_commit_set_linger(s->gc, (unsigned)strtoul(lg, NULL, 0));
	const char *is = getenv("WEFT_META_IDLE_SYNC_MS");
	if (is && *is)
		meta_commit_set_idle_sync(s->gc, (unsigned)strtoul(is, NULL, 0));
	/* WEFT_META_SYNC_DELAY_MS: how long a committed batch waits for its meta page's
	 * sync when nothing follows (commit.h; tests lengthen it for power cuts) */
	const char *sd = getenv("WEFT_META_SYNC_DELAY_MS");
	if (sd && *sd)
		meta_commit_set_sync_delay(s->gc, (unsigned)strtoul(sd, NULL, 0));
	s->boundary = meta_commit_committed(s->gc);
	if (getrandom(&s->boot, sizeof(s->boot), 0) != sizeof(s->boot) || !s->boot)
		s->boot = (uint64_t)meta_now_ns();
	if ((rc = loop_new(&s->loop))) {
		snprintf(err, errlen, "event loop: %s", weft_strerror(rc));
		goto fail_gc;
	}
	if ((rc = meta_deleter_start(s, o->deleter_period_ms ? o->deleter_period_ms : 2000,
				     &s->del))) {
		snprintf(err, errlen, "start deleter: %s", weft_strerror(rc));
		goto fail_loop;
	}
	s->started_ms = loop_now_ms();
	s->test_refuse_create = getenv("WEFT_META_TEST_REFUSE_CREATE");
	s->test_refuse_unlink = getenv("WEFT_META_TEST_REFUSE_UNLINK");
	const char *rm = getenv("WEFT_META_TEST_REFUSE_MODE");
	s->test_refuse_mode = rm ? (uint32_t)strtoul(rm, NULL, 8) : 0;
	/* WEFT_META_RECOVERY_MS (default 5000): after an unclean stop, namespace mutations
	 * wait that long for clients to replay what they hold (ARCHITECTURE.md) */
	const char *rw = getenv("WEFT_META_RECOVERY_MS");
	uint32_t recovery_ms = rw && *rw ? (uint32_t)strtoul(rw, NULL, 0) : 5000;
	if (unclean && recovery_ms) {
		s->recover_until_ms = s->started_ms + recovery_ms;
		log_info("last run did not stop cleanly (database at transaction %llu): "
			 "replays first, for %u ms", (unsigned long long)s->boundary, recovery_ms);
	}
	/* leases the last run granted may still be cached: no mutation before they end */
	if (s->had_sessions)
		s->quiet_until_ms = s->started_ms + meta_leases_ms(s->leases) + 1000;
	struct server_params sp = {.loop = s->loop, .key = &s->key, .role = WEFT_ROLE_META,
				   .name = "meta", .verify = meta_nodes_verify, .verify_arg = s,
				   .listen = o->listen,
				   .default_port = o->default_port, .ops = &meta_conn_ops, .ctx = s};
	if ((rc = server_new(&sp, &s->srv, err, errlen)))
		goto fail_del;
	/* the listen host with the bound port */
	char host[64];
	const char *l = o->listen ? o->listen : "";
	const char *colon = strrchr(l, ':');
	if (l[0] == '[' && (!colon || colon < strchr(l, ']')))
		colon = NULL;
	size_t hl = colon ? (size_t)(colon - l) : strlen(l);
	snprintf(host, sizeof(host), "%.*s", (int)hl, l);
	if (!colon && strspn(l, "0123456789") == strlen(l))
		host[0] = '\0'; /* "7070" alone is a port */
	snprintf(s->addr, sizeof(s->addr), "%s:%d", host[0] ? host : "0.0.0.0",
		 server_port(s->srv));
	loop_every(s->loop, 1000, expire_tick, s);
	meta_push_start(s);
	meta_recall_start(s);
	if ((rc = loop_start(s->loop))) {
		snprintf(err, errlen, "start event loop: %s", weft_strerror(rc));
		goto fail_srv;
	}
	*out = s;
	return 0;
fail_srv:
	server_free(s->srv);
fail_del:
	meta_deleter_stop(s->del);
fail_loop:
	loop_free(s->loop);
fail_gc:
	meta_commit_stop(s->gc);
fail_space:
	meta_space_close(s->space);
fail_db:
	nodetab_free(s->nodes);
	meta_db_close(s->db);
fail_free:
	meta_leases_free(s->leases);
	meta_migrate_free(s->migrations);
	meta_replies_free(s->replies);
	free(s);
	return rc;
}

const char *meta_server_addr(const struct meta_server *s)
{
	return s->addr;
}

struct stop_sync {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	struct meta_server *s;
};

static void stop_on_loop(void *arg)
{
	struct stop_sync *st = arg;
	st->s->stopping = true;
	meta_recall_flush(st->s);
	pthread_mutex_lock(&st->lock);
	st->done = true;
	pthread_cond_signal(&st->cond);
	pthread_mutex_unlock(&st->lock);
}

static void free_server_on_loop(void *arg)
{
	struct meta_server *s = arg;
	meta_leases_free(s->leases); /* drops its connection references */
	s->leases = NULL;
	server_free(s->srv);
	if (s->rtxn)
		mdb_txn_abort(s->rtxn);
	s->rtxn = NULL;
}

void meta_server_stop(struct meta_server *s)
{
	if (!s)
		return;
	/* 1. the loop stops taking requests (after this, it submits nothing) */
	struct stop_sync st = {.lock = PTHREAD_MUTEX_INITIALIZER,
			       .cond = PTHREAD_COND_INITIALIZER, .s = s};
	if (loop_post(s->loop, stop_on_loop, &st) == 0) {
		pthread_mutex_lock(&st.lock);
		while (!st.done)
			pthread_cond_wait(&st.cond, &st.lock);
		pthread_mutex_unlock(&st.lock);
	}
	/* 2. the deleter (it submits too), 3. the committer completes what is queued */
	meta_deleter_stop(s->del);
	for (int i = 0; i < 400 && atomic_load(&s->probes) > 0; i++)
		usleep(10000); /* probes end with a mutation: let them */
	struct meta_commit_stats cs;
	meta_commit_stats(s->gc, &cs);
	log_info("group commit: %llu ops in %llu batches, %llu syncs, %llu failed, %llu redone",
		 (unsigned long long)cs.ops, (unsigned long long)cs.batches,
		 (unsigned long long)cs.syncs, (unsigned long long)cs.failed,
		 (unsigned long long)cs.redone);
	meta_commit_stop(s->gc); /* syncs what is committed */
	unlink(s->running_path);
	/* 4. connections, the loop, the file system */
	loop_post(s->loop, free_server_on_loop, s);
	loop_free(s->loop);
	meta_space_close(s->space);
	meta_db_close(s->db);
	nodetab_free(s->nodes);
	meta_migrate_free(s->migrations);
	meta_replies_free(s->replies);
	free(s->progress);
	free(s);
}

struct loop *meta_server_loop(const struct meta_server *s)
{
	return s->loop;
}
