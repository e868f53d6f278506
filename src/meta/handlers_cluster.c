/* Session, target and chain request handlers (opcodes 0x02xx, 0x03xx). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include <sys/stat.h>

#include "meta/chains.h"
#include "meta/inode.h"
#include "meta/server_int.h"
#include "meta/lease.h"
#include "meta/session.h"
#include "proto/targets.h"
#include "meta/super.h"
#include "weft/err.h"

#define MSG(type) ((const struct weft_msg_##type *)(const void *)r->msg)

static int node_name(const struct weft_str *s, char *out)
{
	if (s->len == 0 || s->len > WEFT_NODE_MAX || memchr(s->p, '\0', s->len))
		return -EINVAL;
	memcpy(out, s->p, s->len);
	out[s->len] = '\0';
	return 0;
}

/* SESSION_OPEN {node, flags} -> SESSION {session, lease_ms, fsid}. Creates a session;
 * with WEFT_SESSION_RECALLS it gets leases (it answers RECALL). */
static int h_session_open(struct mreq *r, const struct meta_ctx *c)
{
	char node[WEFT_NODE_MAX + 1];
	int rc = node_name(&MSG(session_open)->node, node);
	if (rc)
		return rc;
	if (conn_peer_serial(r->c)) /* a node credential's sessions are in its own name */
		snprintf(node, sizeof(node), "%s", conn_peer_name(r->c));
	rc = meta_session_create(c->db, c->txn, node, meta_now_ns(), &r->u64);
	if (rc == 0 && (MSG(session_open)->flags & WEFT_SESSION_RECALLS))
		meta_leases_recaller(r->s->leases, r->u64);
	return rc;
}

static void rep_session(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_session m = {.session = r->u64, .lease_ms = r->s->session_timeout_ms};
	memcpy(m.fsid, r->s->fsid, 16);
	meta_leases_bind(r->s->leases, r->c, r->u64); /* leases go to this connection */
	proto_session_encode(w, &m);
}

/* SESSION_BEAT {session} -> HEARTBEAT_REPLY {lease_ms, chains_version}. A read: sessions
 * live in memory (session.h), so a beat writes nothing. The chain-table
 * epoch rides on the beat so that every mount learns of a new one within a beat.
 * Errors: ENOENT unknown or expired session. */
static int h_session_beat(struct mreq *r, const struct meta_ctx *c)
{
	if (meta_leases_evicted(r->s->leases, MSG(session_id)->session)) {
		snprintf(r->detail, sizeof(r->detail), "session %llu was evicted",
			 (unsigned long long)MSG(session_id)->session);
		return -WEFT_EEVICTED;
	}
	int rc = meta_session_heartbeat(c->db, c->txn, MSG(session_id)->session, meta_now_ns());
	struct meta_super sb;
	if (rc == 0 && (rc = meta_super_get(c->db, c->txn, &sb)) == 0)
		r->u64 = sb.chains_epoch;
	return rc;
}

static void rep_session_beat(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_heartbeat_reply m = {.lease_ms = r->s->session_timeout_ms,
					     .chains_version = r->u64};
	meta_leases_bind(r->s->leases, r->c, MSG(session_id)->session);
	proto_heartbeat_reply_encode(w, &m);
}

/* SESSION_CLOSE {session} -> EMPTY: releases its opens (freeing orphans). ENOENT. */
static int h_session_close(struct mreq *r, const struct meta_ctx *c)
{
	meta_leases_forget(r->s->leases, MSG(session_id)->session, false);
	return meta_session_close(c->db, c->txn, MSG(session_id)->session);
}

/* RECALL goes from meta to clients; a client sending it is refused. */
static int h_recall(struct mreq *r, const struct meta_ctx *c)
{
	snprintf(r->detail, sizeof(r->detail), "RECALL is sent by meta, not to it");
	return -EOPNOTSUPP;
}

/* TARGET_REGISTER {uuid, node, addr, capacity, free} -> TARGET_REGISTERED {target, fsid,
 * lease_ms, checksums}. The same uuid always gets the same id; chain tables grow. */
static int h_target_register(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_target_register *m = MSG(target_register);
	char node[WEFT_NODE_MAX + 1], addr[WEFT_ADDR_MAX + 1];
	int rc = node_name(&m->node, node);
	if (rc) {
		snprintf(r->detail, sizeof(r->detail), "node name must be 1..%d bytes",
			 WEFT_NODE_MAX);
		return rc;
	}
	if (m->addr.len == 0 || memchr(m->addr.p, '\0', m->addr.len)) {
		snprintf(r->detail, sizeof(r->detail), "target address is empty");
		return -EINVAL;
	}
	meta_fix_store_addr(m->addr.p, m->addr.len, conn_peer(r->c), addr, sizeof(addr));
	int64_t now = meta_now_ns();
	uint32_t id;
	if ((rc = meta_chains_register(c->db, c->txn, m->uuid, node, addr, m->capacity, now, &id)))
		return rc;
	struct meta_target_stats st = {.capacity = m->capacity, .free = m->free};
	if ((rc = meta_chains_heartbeat(c->db, c->txn, id, &st, now)))
		return rc;
	bool untrusted;
	if ((rc = meta_chains_vouch(c->db, c->txn, id, m->incarnation, m->wseq, &untrusted)))
		return rc;
	r->u32 = id;
	r->flag = untrusted;
	log_info("target %u registered: node %s at %s, %llu bytes", id, node, addr,
		 (unsigned long long)m->capacity);
	return 0;
}

static void rep_target_registered(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_target_registered m = {.target = r->u32,
					       .lease_ms = r->s->target_timeout_ms,
					       .checksums = r->s->checksums, .untrusted = r->flag};
	memcpy(m.fsid, r->s->fsid, 16);
	proto_target_registered_encode(w, &m);
}

/* TARGET_HEARTBEAT {target, capacity, free, counters} -> HEARTBEAT_REPLY {lease_ms,
 * chains_version}. An offline target comes back as syncing. ENOENT unknown target. */
static int h_target_heartbeat(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_target_heartbeat *m = MSG(target_heartbeat);
	struct meta_target_stats st = {.capacity = m->capacity, .free = m->free,
				       .read_bytes = m->bytes_read,
				       .write_bytes = m->bytes_written, .read_ops = m->ops_read,
				       .write_ops = m->ops_written, .wseq = m->wseq};
	int rc = meta_chains_heartbeat(c->db, c->txn, m->target, &st, meta_now_ns());
	if (rc)
		return rc;
	struct meta_super sb;
	if ((rc = meta_super_get(c->db, c->txn, &sb)))
		return rc;
	r->u64 = sb.chains_epoch;
	return 0;
}

static void rep_heartbeat(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_heartbeat_reply m = {.lease_ms = r->s->target_timeout_ms,
					     .chains_version = r->u64};
	proto_heartbeat_reply_encode(w, &m);
}

/* CHAINS_GET {known_version} -> CHAINS {version}, the chain set in bulk. */
static int h_chains_get(struct mreq *r, const struct meta_ctx *c)
{
	struct weft_chain_set set;
	int rc = meta_chains_snapshot(c->db, c->txn, &set);
	if (rc)
		return rc;
	proto_chain_set_encode(&set, &r->bulk);
	r->u64 = set.epoch;
	proto_chain_set_free(&set);
	return r->bulk.err;
}

static void rep_chains(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_chains m = {.version = r->u64};
	proto_chains_encode(w, &m);
}

/* TARGET_FAILED {reporter, target, chain, replicas} -> EMPTY. The report is not
 * trusted: meta probes the target and marks it offline in all its chains only if it
 * does not answer (probe.c); the reply does not wait for the probe. A target that
 * reports itself (reporter == target: its disk failed) is marked offline with no probe.
 * ENOENT unknown target. */
static int h_target_failed(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_target_failed *m = MSG(target_failed);
	struct meta_target t;
	/* only a store speaks for its own disk: anyone else's report is probed */
	uint32_t reporter = m->reporter;
	if (reporter == m->target && conn_peer_role(r->c) != WEFT_ROLE_STORE)
		reporter = 0;
	int rc = meta_chains_target_get(c->db, c->txn, m->target, &t);
	/* a target's own report counts even when it is already offline: it must rebuild */
	if (rc || (t.state == WEFT_MEMBER_OFFLINE && reporter != m->target))
		return rc;
	rc = meta_probe_target(r->s, m->target, t.addr, reporter);
	if (rc == 0 && reporter != m->target)
		log_info("target %u reported failed by %s%u (chain %u of %u replicas): probing it",
			 m->target, reporter ? "target " : "a client ", reporter, m->chain,
			 m->replicas);
	return rc;
}

/* CHAIN_SYNCED {target, replicas, chain, chain_ver} -> EMPTY: the syncing member has
 * caught up; it serves in that chain from now on (version bumped). ESTALECHAIN if the
 * chain changed since chain_ver (the store syncs again against the new one); ENOENT,
 * EINVAL as meta_chains_member_serving. */
static int h_chain_synced(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_chain_synced *m = MSG(chain_synced);
	struct weft_chain ch;
	int rc = meta_chains_get(c->db, c->txn, m->replicas, m->chain, &ch);
	if (rc)
		return rc;
	if (ch.version != m->chain_ver) {
		snprintf(r->detail, sizeof(r->detail), "chain %u/%u is at version %llu, not %llu",
			 m->replicas, m->chain, (unsigned long long)ch.version,
			 (unsigned long long)m->chain_ver);
		return -WEFT_ESTALECHAIN;
	}
	rc = meta_chains_member_serving(c->db, c->txn, m->replicas, m->chain, m->target);
	if (rc == 0)
		log_info("target %u in sync in chain %u/%u: serving", m->target, m->replicas,
			 m->chain);
	return rc;
}

/* TARGET_OUT {target} -> TARGET_OUT_REPLY {chains}: re-replication now (weft target
 * out): the target leaves every chain, another takes its place and rebuilds.
 * ENOENT unknown target. */
static int h_target_out(struct mreq *r, const struct meta_ctx *c)
{
	unsigned n = 0;
	int rc = meta_chains_replace(c->db, c->txn, MSG(target_out)->target, &n);
	r->u32 = n;
	if (rc == 0)
		log_warn("target %u taken out by an administrator: %u chains rebuild elsewhere",
			 MSG(target_out)->target, n);
	return rc;
}

/* TARGET_DRAIN {target, remove} -> TARGET_OUT_REPLY {chains}: starts draining target
 * (its memberships move in the next expiry steps), or removes a drained one. ENOENT
 * unknown target; EBUSY remove while it is still a member of some chain; EINVAL remove
 * of a target not drained, or drain of a removed one. */
static int h_target_drain(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_target_drain *m = MSG(target_drain);
	unsigned n = 0;
	int rc;
	if (!m->remove)
		return (rc = meta_moves_drain(c->db, c->txn, m->target, &n), r->u32 = n, rc);
	rc = meta_moves_remove(c->db, c->txn, m->target);
	if (rc == -EBUSY && meta_moves_memberships(c->db, c->txn, m->target, &n) == 0)
		snprintf(r->detail, sizeof(r->detail), "target %u is still a member of %u "
			 "chains: its copies are needed (weft target drain %u, and wait)",
			 m->target, n, m->target);
	else if (rc == -EINVAL)
		snprintf(r->detail, sizeof(r->detail), "target %u was not drained (weft target "
			 "drain %u first)", m->target, m->target);
	return rc;
}

/* REBALANCE {mode, threshold} -> REBALANCE_REPLY. Runs on the writer thread, as the
 * expiry step that starts moves, so the settings need no lock. */
static int h_rebalance(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_rebalance *m = MSG(rebalance);
	struct meta_server *s = r->s;
	(void)c;
	if (m->mode > 3 || m->threshold > 100) {
		snprintf(r->detail, sizeof(r->detail), "bad rebalance mode %u or threshold %u%%",
			 m->mode, m->threshold);
		return -EINVAL;
	}
	if (m->threshold)
		s->moves.threshold = m->threshold;
	if (m->mode == 1)
		s->rebalance_once = true;
	else if (m->mode == 2)
		s->rebalance_auto = true;
	else if (m->mode == 3)
		s->rebalance_auto = s->rebalance_once = false;
	if (m->mode == 1 || m->mode == 2)
		s->moves_idle = false; /* until the next step says otherwise */
	/* the reply is encoded on the loop thread: take the values here */
	r->u32 = s->moves.threshold;
	r->u64 = (uint64_t)s->moves_res.moving << 32 | s->moves_res.spread;
	r->written[0] = s->moves_res.moving || ((s->rebalance_auto || s->rebalance_once) &&
						 !s->moves_idle);
	r->written[1] = s->rebalance_auto;
	return 0;
}

static void rep_rebalance(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_rebalance_reply m = {.active = r->written[0], .automatic = r->written[1],
					     .threshold = r->u32, .spread = (uint32_t)r->u64,
					     .moving = (uint32_t)(r->u64 >> 32)};
	proto_rebalance_reply_encode(w, &m);
}

static void rep_target_out(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_target_out_reply m = {.chains = r->u32};
	proto_target_out_reply_encode(w, &m);
}

/* CHAIN_OBJECTS {replicas, chain, ino, max} -> CHAIN_OBJECTS_REPLY {count, next, eof},
 * (ino u64, object number u32: stripe + layout generation * stride) pairs in bulk: the objects a rebuilding member must copy, as
 * the layouts of the files (from inode ino on, at most max inodes looked at) place
 * them in that chain. Loop thread: bounded work per call. */
static int h_chain_objects(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_chain_objects *m = MSG(chain_objects);
	uint32_t max = m->max == 0 || m->max > 4096 ? 4096 : m->max, seen = 0, n = 0;
	MDB_cursor *cur;
	int rc = mdb_cursor_open(c->txn, c->db->inodes, &cur);
	if (rc)
		return meta_mdb_err(rc);
	uint8_t kb[8];
	meta_be64(kb, m->ino);
	MDB_val k = {8, kb}, v;
	r->u64 = 0;
	r->flag = true; /* eof unless we stop early */
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 8)
			continue;
		uint64_t ino = meta_get_be64(k.mv_data);
		if (seen++ == max) {
			r->u64 = ino;
			r->flag = false;
			break;
		}
		struct meta_inode in;
		if (meta_inode_decode(ino, v.mv_data, v.mv_size, &in) || !S_ISREG(in.attr.mode))
			continue;
		const struct weft_layout *l = &in.layout;
		if (l->replicas != m->replicas || l->chain_count == 0)
			continue;
		uint32_t sc = l->stripe_count ? l->stripe_count : l->chain_count;
		for (uint32_t s = 0; s < sc; s++)
			if ((uint32_t)(((uint64_t)l->first_chain + s) % l->chain_count) == m->chain) {
				wbuf_u64(&r->bulk, ino);
				wbuf_u32(&r->bulk, s + l->gen * WEFT_LAYOUT_GEN_STRIDE);
				n++;
			}
	}
	mdb_cursor_close(cur);
	if (rc && rc != MDB_NOTFOUND)
		return meta_mdb_err(rc);
	r->u32 = n;
	return r->bulk.err;
}

static void rep_chain_objects(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_chain_objects_reply m = {.count = r->u32, .next = r->u64, .eof = r->flag};
	proto_chain_objects_reply_encode(w, &m);
}

/* RESYNC_PROGRESS {target, objects_left, bytes_left, rate} -> EMPTY: kept in memory
 * for weft status (loop thread). */
static int h_resync_progress(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_resync_progress *m = MSG(resync_progress);
	(void)c;
	if (m->target == 0 || m->target > META_TARGETS_MAX)
		return -EINVAL;
	if (!r->s->progress &&
	    !(r->s->progress = calloc(META_TARGETS_MAX + 1, sizeof(*r->s->progress))))
		return -ENOMEM;
	r->s->progress[m->target] = (struct meta_resync_progress){
		.objects_left = m->objects_left, .bytes_left = m->bytes_left, .rate = m->rate};
	return 0;
}

/* TARGETS_GET {} -> TARGETS {count}, per-target records in bulk (proto/targets.h). */
static int h_targets_get(struct mreq *r, const struct meta_ctx *c)
{
	struct meta_super sb;
	int rc = meta_super_get(c->db, c->txn, &sb);
	if (rc)
		return rc;
	int64_t now = meta_now_ns();
	uint32_t n = 0;
	for (uint32_t id = 1; id < sb.next_target; id++) {
		struct meta_target t;
		rc = meta_chains_target_get(c->db, c->txn, id, &t);
		if (rc == -ENOENT || (rc == 0 && (t.flags & META_TARGET_REMOVED)))
			continue;
		unsigned memberships = 0;
		if (rc == 0)
			rc = meta_moves_memberships(c->db, c->txn, id, &memberships);
		if (rc)
			return rc;
		int64_t silent = (now - t.last_seen_ns) / 1000000;
		struct meta_resync_progress p = {0};
		if (r->s->progress && id <= META_TARGETS_MAX)
			p = r->s->progress[id];
		struct weft_target_rec rec = {
			.id = t.id, .state = t.state,
			.node = {t.node, (uint32_t)strlen(t.node)},
			.addr = {t.addr, (uint32_t)strlen(t.addr)},
			.capacity = t.capacity, .free = t.free,
			.bytes_read = t.read_bytes, .bytes_written = t.write_bytes,
			.ops_read = t.read_ops, .ops_written = t.write_ops,
			.silent_ms = silent > 0 ? (uint64_t)silent : 0,
			.resync_objects_left = p.objects_left, .resync_bytes_left = p.bytes_left,
			.resync_rate = p.rate,
			.flags = t.flags, .memberships = memberships,
		};
		proto_target_rec_write(&r->bulk, &rec);
		n++;
	}
	r->u32 = n;
	return r->bulk.err;
}

static void rep_targets(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_targets m = {.count = r->u32};
	proto_targets_encode(w, &m);
}

#define H(op, write, del, fn, rep) {WEFT_OP_##op, write, false, del, false, fn, rep}

const struct meta_handler meta_cluster_handlers[] = {
	H(SESSION_OPEN, true, false, h_session_open, rep_session),
	H(SESSION_BEAT, false, false, h_session_beat, rep_session_beat),
	H(SESSION_CLOSE, true, true, h_session_close, NULL),
	H(RECALL, false, false, h_recall, NULL),
	H(TARGET_REGISTER, true, false, h_target_register, rep_target_registered),
	H(TARGET_HEARTBEAT, true, false, h_target_heartbeat, rep_heartbeat),
	H(CHAINS_GET, false, false, h_chains_get, rep_chains),
	H(TARGET_FAILED, false, false, h_target_failed, NULL),
	H(TARGETS_GET, false, false, h_targets_get, rep_targets),
	H(CHAIN_SYNCED, true, false, h_chain_synced, NULL),
	H(RESYNC_PROGRESS, false, false, h_resync_progress, NULL),
	H(TARGET_OUT, true, false, h_target_out, rep_target_out),
	H(TARGET_DRAIN, true, false, h_target_drain, rep_target_out),
	H(REBALANCE, true, false, h_rebalance, rep_rebalance),
	H(CHAIN_OBJECTS, false, false, h_chain_objects, rep_chain_objects),
	{0},
};
