/* Chain replication of mutations: OBJ_WRITE, OBJ_TRUNCATE and OBJ_FSYNC are applied
 * locally and, at the same time, forwarded unchanged (same payload, same bulk buffer)
 * to the next non-offline member of the chain; the reply goes out when both are done.
 *
 * A request's parts: the local operation (worker thread), and with a successor the
 * forward's reply and the release of its bulk (loop thread). The last part to end
 * completes the request; the received frame (whose bulk the forward sends from) is
 * freed only then. A successor that refuses the connection, resets it, answers with
 * an error or does not answer within forward_timeout_ms (its connection is closed) is
 * reported to meta with TARGET_FAILED (from a worker: that call blocks) and the request
 * fails with -WEFT_ETARGETDOWN naming it. */
#include "store/server_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "store/iov.h"
#include "weft/err.h"

/* ---- completion ---- */

static void reply_done(struct sreq *q)
{
	struct store_server *s = q->s;
	int rc = q->local_rc;
	if (rc) {
		if (rc == -WEFT_ECHECKSUM)
			conn_reply_error(q->c, q->f, rc, s->target_id, "target %u: %s",
					 s->target_id, q->local_detail[0] ? q->local_detail :
					 "data does not match its checksum; nothing written");
		else if (q->local_detail[0])
			conn_reply_error(q->c, q->f, rc, s->target_id, "target %u: %s",
					 s->target_id, q->local_detail);
		else
			conn_reply_error(q->c, q->f, rc, s->target_id, "target %u: %s: %s",
					 s->target_id, proto_op_name(q->op), weft_strerror(rc));
		return;
	}
	rc = q->fwd_rc;
	if (rc == -WEFT_ESTALECHAIN) {
		conn_reply_error(q->c, q->f, rc, q->fwd_target,
				 "successor target %u has another version of chain %u",
				 q->fwd_target, q->chain);
		return;
	}
	if (rc == -WEFT_ETARGETDOWN && q->fwd_replied) {
		/* a member further down failed; its predecessor reported it */
		conn_reply_error(q->c, q->f, rc, q->fwd_detail_target, "%s", q->fwd_detail);
		return;
	}
	if (rc && q->fwd_replied) {
		/* the successor answered with the request's own error: pass it on */
		conn_reply_error(q->c, q->f, rc, q->fwd_target, "target %u (%s): %s%s%s",
				 q->fwd_target, q->fwd_addr, weft_strerror(rc),
				 q->fwd_detail[0] ? ": " : "", q->fwd_detail);
		return;
	}
	if (rc) {
		if (q->fwd_timed_out)
			conn_reply_error(q->c, q->f, -WEFT_ETARGETDOWN, q->fwd_target,
					 "target %u (%s) did not answer within %u ms", q->fwd_target,
					 q->fwd_addr, s->forward_timeout_ms);
		else if (q->fwd_replied)
			conn_reply_error(q->c, q->f, -WEFT_ETARGETDOWN, q->fwd_target,
					 "target %u (%s) failed: %s%s%s", q->fwd_target, q->fwd_addr,
					 weft_strerror(rc), q->fwd_detail[0] ? ": " : "", q->fwd_detail);
		else
			conn_reply_error(q->c, q->f, -WEFT_ETARGETDOWN, q->fwd_target,
					 "target %u (%s) did not answer: %s", q->fwd_target,
					 q->fwd_addr, weft_strerror(rc));
		return;
	}
	struct wbuf w;
	wbuf_init(&w);
	if (q->op == WEFT_OP_OBJ_WRITE) {
		struct weft_msg_obj_written m = {.size = q->local_size,
						 .allocated = q->local_allocated};
		proto_obj_written_encode(&w, &m);
	} else if (q->op == WEFT_OP_OBJ_TRUNCATE) {
		struct weft_msg_obj_size m = {.size = q->local_size};
		proto_obj_size_encode(&w, &m);
	}
	conn_reply(q->c, q->f, w.err, &w, NULL, 0, NULL, NULL);
	wbuf_free(&w);
}

/* Only a successor that did not answer (connection refused or reset, or silence past
 * the forward timeout) is reported to meta; one that answered with an error is alive, and
 * its error (ENOSPC, EFBIG...) belongs to the request. */
static bool needs_report(const struct sreq *q)
{
	return q->fwd_rc && !q->fwd_replied;
}

/* TARGET_FAILED to meta, at most once a second per (target, chain). Blocking. */
static void report_failure(struct sreq *q)
{
	struct store_server *s = q->s;
	uint64_t now = loop_now_ms();
	pthread_mutex_lock(&s->report_lock);
	bool dup = s->last_report_target == q->fwd_target && s->last_report_chain == q->chain &&
		   now - s->last_report_ms < 1000;
	if (!dup) {
		s->last_report_target = q->fwd_target;
		s->last_report_chain = q->chain;
		s->last_report_ms = now;
	}
	pthread_mutex_unlock(&s->report_lock);
	if (dup)
		return;
	log_error("successor target %u (%s) of chain %u/%u failed: %s; reporting it to meta",
		  q->fwd_target, q->fwd_addr, q->replicas, q->chain,
		  q->fwd_timed_out ? "no reply in time" : weft_strerror(q->fwd_rc));
	struct weft_msg_target_failed m = {.reporter = s->target_id, .target = q->fwd_target,
					   .chain = q->chain, .replicas = q->replicas};
	struct wbuf w;
	wbuf_init(&w);
	proto_target_failed_encode(&w, &m);
	struct frame *rep = NULL;
	int rc = rpc_call(s->meta, WEFT_OP_TARGET_FAILED, &w, NULL, 0, STORE_META_TIMEOUT_MS, &rep);
	frame_free(rep);
	if (rc)
		log_warn("TARGET_FAILED for target %u to meta %s: %s", q->fwd_target, s->meta_addr,
			 weft_strerror(rc));
}

static void finish(struct sreq *q)
{
	reply_done(q);
	store_req_free(q);
}

static void report_job(struct store_job *j)
{
	struct sreq *q = (struct sreq *)j;
	if (!atomic_load(&q->s->stopping))
		report_failure(q);
	finish(q);
}

static void complete(struct sreq *q)
{
	struct store_server *s = q->s;
	if (needs_report(q) && !atomic_load(&s->stopping)) {
		if (loop_in_thread(s->loop)) {
			q->job.fn = report_job;
			store_workers_push(s->workers, &q->job, STORE_JOB_ANY);
			return;
		}
		report_failure(q);
	}
	finish(q);
}

static void part_done(struct sreq *q)
{
	if (atomic_fetch_sub(&q->parts, 1) == 1)
		complete(q);
}

/* ---- forwarding ---- */

static void fwd_unlink(struct sreq *q)
{
	struct store_server *s = q->s;
	pthread_mutex_lock(&s->fwd_lock);
	if (q->fprev)
		q->fprev->fnext = q->fnext;
	else if (s->fwd_head == q)
		s->fwd_head = q->fnext;
	if (q->fnext)
		q->fnext->fprev = q->fprev;
	q->fprev = q->fnext = NULL;
	pthread_mutex_unlock(&s->fwd_lock);
}

static void fwd_released(void *arg)
{
	part_done(arg);
}

static void fwd_done(void *arg, int status, struct frame *reply)
{
	struct sreq *q = arg;
	fwd_unlink(q);
	conn_put(q->fwd_conn);
	q->fwd_conn = NULL;
	q->fwd_rc = status;
	q->fwd_replied = reply != NULL;
	if (status && reply)
		q->fwd_detail_target = conn_error_detail(reply, q->fwd_detail, sizeof(q->fwd_detail));
	frame_free(reply);
	part_done(q);
}

/* Sends q's frame to target. Accounts for its parts itself on failure. */
static void fwd_start(struct sreq *q, uint32_t target, int nparts)
{
	struct store_server *s = q->s;
	q->fwd_target = target;
	q->fwd_sent = true;
	int rc;
	if (!store_chains_target_addr(s, target, q->fwd_addr, sizeof(q->fwd_addr))) {
		snprintf(q->fwd_addr, sizeof(q->fwd_addr), "unknown address");
		rc = -EHOSTUNREACH;
		goto fail;
	}
	struct conn *c;
	rc = store_chains_target_conn(s, target, &c);
	if (rc)
		goto fail;
	struct wbuf w;
	wbuf_init(&w);
	wbuf_put(&w, q->f->payload, q->f->h.payload_len);
	struct iovec v = {q->f->bulk, q->f->h.bulk_len};
	bool bulk = q->f->h.bulk_len > 0;
	q->fwd_conn = c; /* rpc_conn's reference, dropped in fwd_done */
	q->fwd_start_ms = loop_now_ms();
	pthread_mutex_lock(&s->fwd_lock);
	q->fnext = s->fwd_head;
	if (s->fwd_head)
		s->fwd_head->fprev = q;
	s->fwd_head = q;
	pthread_mutex_unlock(&s->fwd_lock);
	rc = conn_call(c, q->op, &w, bulk ? &v : NULL, bulk ? 1 : 0, bulk ? fwd_released : NULL,
		       q, fwd_done, q);
	if (rc == 0)
		return;
	/* release (if any) has run: one part gone; the reply will never come */
	fwd_unlink(q);
	q->fwd_conn = NULL;
	conn_put(c);
	q->fwd_rc = rc;
	part_done(q);
	return;
fail:
	q->fwd_rc = rc;
	for (int i = 0; i < nparts; i++)
		part_done(q);
}

void store_repl_check_timeouts(void *arg)
{
	struct store_server *s = arg;
	uint64_t now = loop_now_ms();
	struct conn *victims[16];
	int n = 0;
	pthread_mutex_lock(&s->fwd_lock);
	for (struct sreq *q = s->fwd_head; q && n < 16; q = q->fnext) {
		if (q->fwd_timed_out || now - q->fwd_start_ms < s->forward_timeout_ms)
			continue;
		q->fwd_timed_out = true;
		bool seen = false;
		for (int i = 0; i < n; i++)
			seen |= victims[i] == q->fwd_conn;
		if (!seen) {
			conn_get(q->fwd_conn);
			victims[n++] = q->fwd_conn;
		}
	}
	pthread_mutex_unlock(&s->fwd_lock);
	for (int i = 0; i < n; i++) {
		log_warn("successor %s did not answer within %u ms: closing the connection",
			 conn_peer(victims[i]), s->forward_timeout_ms);
		conn_close(victims[i], -ETIMEDOUT);
		conn_put(victims[i]);
	}
}

/* The disk failed this request's local part: the target fails (diskfail.c) and the
 * request fails as a member that is down does, so the client resends it once meta has
 * taken this target out of the chain. */
static void disk_failed(struct sreq *q)
{
	uint64_t ino = q->op == WEFT_OP_OBJ_WRITE ? q->m.w.ino :
		       q->op == WEFT_OP_OBJ_TRUNCATE ? q->m.t.ino : q->m.sy.ino;
	uint32_t stripe = q->op == WEFT_OP_OBJ_WRITE ? q->m.w.stripe :
			  q->op == WEFT_OP_OBJ_TRUNCATE ? q->m.t.stripe : q->m.sy.stripe;
	store_disk_write_error(q->s, q->local_rc, proto_op_name(q->op), ino, stripe);
	snprintf(q->local_detail, sizeof(q->local_detail), "its disk failed %s: %s; the target "
		 "is down", proto_op_name(q->op), weft_strerror(q->local_rc));
	q->local_rc = -WEFT_ETARGETDOWN;
}

/* ---- the request ---- */

static int local_op(struct sreq *q)
{
	struct store_server *s = q->s;
	struct store_obj_result r = {0};
	int rc = 0;
	switch (q->op) {
	case WEFT_OP_OBJ_WRITE: {
		struct weft_msg_obj_write *m = &q->m.w;
		struct iovec v = {q->f->bulk, q->f->h.bulk_len};
		rc = (q->crcs_verified ? store_obj_writev_verified : store_obj_writev)(
			s->objs, m->ino, m->stripe, m->offset, &v, 1,
			s->checksums ? m->crcs.v : NULL, s->checksums ? m->crcs.n : 0, &r);
		if (rc == -WEFT_ECHECKSUM)
			snprintf(q->local_detail, sizeof(q->local_detail), r.bad_piece >= 0 ?
				 "piece %" PRId64 " of the write does not match its checksum; nothing written" :
				 "stored chunk %" PRId64 " is damaged; partial write refused",
				 r.bad_piece >= 0 ? r.bad_piece : r.bad_chunk);
		if (rc == 0 && (m->flags & WEFT_WRITE_SYNC))
			rc = store_obj_fsync(s->objs, m->ino, m->stripe);
		q->local_size = r.size;
		q->local_allocated = r.allocated;
		break;
	}
	case WEFT_OP_OBJ_TRUNCATE:
		rc = store_obj_truncate(s->objs, q->m.t.ino, q->m.t.stripe, q->m.t.size, &r);
		q->local_size = r.size;
		break;
	case WEFT_OP_OBJ_FSYNC:
		rc = store_obj_fsync(s->objs, q->m.sy.ino, q->m.sy.stripe);
		if (rc == -ENOENT)
			rc = 0; /* nothing written: nothing to make durable */
		if (rc == 0)
			store_hb_soon(s); /* meta learns the write sequence fsync made durable */
		break;
	}
	return rc;
}

/* Checks the piece CRCs before anything is forwarded (verify: there is a successor;
 * without one, store_obj_writev verifies them before writing). Either way they are
 * checked once: q->crcs_verified tells the local write. */
static int check_crcs(struct sreq *q, bool verify)
{
	struct store_server *s = q->s;
	struct weft_msg_obj_write *m = &q->m.w;
	uint32_t len = q->f->h.bulk_len;
	uint64_t np = store_crc_npieces(m->offset, len);
	if (!s->checksums)
		return 0;
	struct iovec v = {q->f->bulk, len};
	if (m->crcs.n == 0 && np > 0) {
		/* the writer has checksums off: store them anyway (computed here from these
		 * bytes: nothing to verify) */
		if (np > WEFT_CRCS_MAX)
			return -EINVAL;
		store_obj_piece_crcs(m->offset, &v, 1, m->crcs.v);
		m->crcs.n = (uint32_t)np;
		q->crcs_verified = true;
		return 0;
	}
	if (m->crcs.n != np) {
		snprintf(q->local_detail, sizeof(q->local_detail), "%u CRCs for %" PRIu64 " pieces",
			 m->crcs.n, np);
		return -EINVAL;
	}
	if (!verify)
		return 0;
	int64_t bad = proto_crcs_verify(m->offset, &v, 1, m->crcs.v);
	if (bad >= 0) {
		snprintf(q->local_detail, sizeof(q->local_detail),
			 "piece %" PRId64 " of the write does not match its checksum; "
			 "nothing written", bad);
		return -WEFT_ECHECKSUM;
	}
	q->crcs_verified = true;
	return 0;
}

void store_repl_write(struct sreq *q)
{
	struct store_server *s = q->s;
	uint64_t ver = UINT64_MAX;
	switch (q->op) {
	case WEFT_OP_OBJ_WRITE:
		q->replicas = q->m.w.replicas;
		q->chain = q->m.w.chain;
		ver = q->m.w.chain_ver;
		break;
	case WEFT_OP_OBJ_TRUNCATE:
		q->replicas = q->m.t.replicas;
		q->chain = q->m.t.chain;
		ver = q->m.t.chain_ver;
		break;
	default: /* OBJ_FSYNC */
		q->replicas = q->m.sy.replicas;
		q->chain = q->m.sy.chain;
		ver = q->m.sy.chain_ver;
		break;
	}
	int succ = -1, nparts = 0;
	{
		struct weft_chain ch;
		int me;
		int rc = store_chains_check(s, q->replicas, q->chain, ver, false, &ch, &me);
		if (rc == 0 && conn_peer_role(q->c) != WEFT_ROLE_STORE) {
			/* from a client: only the head (first serving member) takes it */
			for (int i = 0; i < me; i++)
				if (ch.members[i].state == WEFT_MEMBER_SERVING)
					rc = -WEFT_ESTALECHAIN;
		}
		if (rc) {
			if (rc == -WEFT_ESTALECHAIN)
				conn_reply_error(q->c, q->f, rc, s->target_id, "target %u: chain %u/%u "
						 "version %" PRIu64 " is not current here", s->target_id,
						 q->replicas, q->chain, ver);
			else
				store_reply_status(q, rc);
			store_req_free(q);
			return;
		}
		for (int i = me + 1; i < ch.nmembers && succ < 0; i++)
			if (ch.members[i].state != WEFT_MEMBER_OFFLINE)
				succ = (int)ch.members[i].target;
		/* a member that is away misses this: note it for its resync (before applying,
		 * so a resync that lists after this request was accepted sees it) */
		if (q->op == WEFT_OP_OBJ_WRITE)
			store_resync_note(s, &ch, q->m.w.ino, q->m.w.stripe);
		else if (q->op == WEFT_OP_OBJ_TRUNCATE)
			store_resync_note(s, &ch, q->m.t.ino, q->m.t.stripe);
	}
	if (q->op == WEFT_OP_OBJ_WRITE) {
		int rc = check_crcs(q, succ >= 0);
		if (rc) {
			conn_reply_error(q->c, q->f, rc, s->target_id, "target %u: %s", s->target_id,
					 q->local_detail);
			store_req_free(q);
			return;
		}
	}
	if (succ >= 0)
		nparts = 1 + (q->f->h.bulk_len > 0 ? 1 : 0);
	atomic_store(&q->parts, 1 + nparts);
	if (succ >= 0)
		fwd_start(q, (uint32_t)succ, nparts);
	q->local_rc = local_op(q);
	if (store_disk_error_code(q->local_rc))
		disk_failed(q);
	part_done(q);
}
