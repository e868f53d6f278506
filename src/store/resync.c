/* Resync: bringing a target that comes back up to date from the other members of its
 * chains while I/O goes on.
 *
 * DESIGN. Two halves, in every store:
 *  - Survivor side (the "missed log"): a serving member that applies a mutation
 *    (write, truncate) in a chain where some member is OFFLINE, in the chain version
 *    the request carries, notes (replicas, chain, offline target, ino, stripe) before it
 *    applies it. The notes are kept sorted in memory and appended to <target>/missed.log
 *    (21-byte records; rewritten without dropped entries), so they survive a restart of
 *    the survivor. A returning target therefore copies only what changed while it was
 *    away, never every object. Notes of a target are dropped when the chain tables show
 *    it SERVING in that chain again (or no longer a member).
 *  - Returning side (the copier thread): for each chain in which this target is
 *    SYNCING, it asks the serving member just before it in the chain (its predecessor,
 *    the one that forwards it new writes) for the missed objects (OBJ_MISSED, from a
 *    cursor; entries before the cursor are dropped as copied) and copies each with
 *    OBJ_SYNC_READ, 1 MiB at a time. New writes keep arriving on the chain meanwhile
 *    (a syncing member gets forwarded writes). A copy never overwrites newer data: the
 *    local version of the object is read before the bytes are fetched, and the bytes are
 *    written with store_obj_write_if, which refuses (-EAGAIN, then the range is fetched
 *    again) when a forwarded write changed the object in between. OBJ_SYNC_READ is
 *    queued on the source with the object's key, so it runs after every write to that
 *    object the source received before it: a write the returning target already holds
 *    is in the source's copy too. When a pass from the start of the list finds nothing
 *    left, the copier sends CHAIN_SYNCED (with the chain version it synced against) and
 *    meta makes it SERVING there; from then on it serves reads.
 * A single-member chain (replicas 1) has nothing to copy from: its target is synced at
 * once. A chain with no serving member stays syncing (its data may be stale).
 *
 * Threads: resync_note and store_resync_missed_list run on worker threads; resync_tables_changed
 * after a chain-table fetch; the copier is its own thread. rs->lock guards the notes. */
#include "store/server_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "weft/err.h"

#define REC_SIZE 21
#define COPY_UNIT (1u << 20)
#define LIST_BATCH 256u
#define COPY_TRIES 50

struct note {
	uint8_t replicas;
	uint32_t chain, target;
	uint64_t ino;
	uint32_t stripe;
};

struct store_resync {
	struct store_server *s;
	pthread_mutex_t lock;       /* guards notes, n, cap, fd */
	struct note *notes;         /* sorted by note_cmp */
	size_t n, cap;
	int fd;                     /* missed.log, append */
	char path[4096];

	pthread_t thread;
	bool started;
	pthread_mutex_t wake_lock;  /* guards stop; wake signals the copier */
	pthread_cond_t wake;
	bool stop;

	/* progress of the copier (atomics: read by the heartbeat) */
	atomic_uint_fast64_t objects_left, bytes_left, objects_done, bytes_done, rate;
	atomic_bool syncing;
	uint64_t tb_start_ms, tb_bytes; /* throttle window (copier thread) */

	/* objects that failed their checksum on read here: repaired by the copier */
	struct repair { uint8_t replicas; uint32_t chain; uint64_t ino; uint32_t stripe; }
		repairs[64];        /* guarded by wake_lock */
	unsigned nrepairs;
	uint64_t scrub_rate;        /* scrub requested at this rate (bytes/s), guarded by
				     * wake_lock; 0: none */
};

static int note_cmp(const struct note *a, const struct note *b)
{
#define CMP(f) if (a->f != b->f) return a->f < b->f ? -1 : 1
	CMP(replicas); CMP(chain); CMP(target); CMP(ino); CMP(stripe);
#undef CMP
	return 0;
}

/* First index whose note is >= k. */
static size_t lower_bound(const struct store_resync *rs, const struct note *k)
{
	size_t lo = 0, hi = rs->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (note_cmp(&rs->notes[mid], k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void rec_put(uint8_t *b, const struct note *x)
{
	b[0] = x->replicas;
	put_le32(b + 1, x->chain);
	put_le32(b + 5, x->target);
	put_le64(b + 9, x->ino);
	put_le32(b + 17, x->stripe);
}

/* Inserts unless present; true if inserted. rs->lock held. */
static bool insert(struct store_resync *rs, const struct note *x)
{
	size_t i = lower_bound(rs, x);
	if (i < rs->n && note_cmp(&rs->notes[i], x) == 0)
		return false;
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 256;
		struct note *p = realloc(rs->notes, cap * sizeof(*p));
		if (!p)
			return false;
		rs->notes = p;
		rs->cap = cap;
	}
	memmove(&rs->notes[i + 1], &rs->notes[i], (rs->n - i) * sizeof(*x));
	rs->notes[i] = *x;
	rs->n++;
	return true;
}

/* Rewrites missed.log from memory (after drops). rs->lock held. */
static void rewrite(struct store_resync *rs)
{
	char tmp[4100];
	snprintf(tmp, sizeof(tmp), "%s.new", rs->path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		log_error("resync: create %s: %s", tmp, strerror(errno));
		return;
	}
	bool ok = true;
	uint8_t buf[REC_SIZE * 256];
	for (size_t i = 0; i < rs->n && ok;) {
		size_t k = 0;
		for (; k < 256 && i < rs->n; k++, i++)
			rec_put(buf + k * REC_SIZE, &rs->notes[i]);
		ok = write(fd, buf, k * REC_SIZE) == (ssize_t)(k * REC_SIZE);
	}
	if (!ok || rename(tmp, rs->path) < 0) {
		log_error("resync: rewriting %s: %s", rs->path, strerror(errno));
		close(fd);
		unlink(tmp);
		return;
	}
	if (rs->fd >= 0)
		close(rs->fd);
	rs->fd = fd; /* O_WRONLY at its end: later notes append */
}

int store_resync_open(struct store_server *s)
{
	struct store_resync *rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	rs->s = s;
	rs->fd = -1;
	pthread_mutex_init(&rs->lock, NULL);
	pthread_mutex_init(&rs->wake_lock, NULL);
	pthread_cond_init(&rs->wake, NULL);
	snprintf(rs->path, sizeof(rs->path), "%s/missed.log", s->dir);
	int fd = open(rs->path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		uint8_t b[REC_SIZE];
		while (read(fd, b, REC_SIZE) == REC_SIZE) {
			struct note x = {.replicas = b[0], .chain = get_le32(b + 1),
					 .target = get_le32(b + 5), .ino = get_le64(b + 9),
					 .stripe = get_le32(b + 17)};
			insert(rs, &x);
		}
		close(fd);
		if (rs->n)
			log_info("resync: %zu objects noted as missed by offline members", rs->n);
	}
	rs->fd = open(rs->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (rs->fd < 0) {
		int rc = -errno;
		log_error("resync: open %s: %s", rs->path, strerror(errno));
		pthread_mutex_destroy(&rs->lock);
		free(rs->notes);
		free(rs);
		return rc;
	}
	if (store_sweep_open(s))
		log_warn("sweep: no memory: copies of chains this target leaves stay here");
	s->rs = rs;
	return 0;
}

void store_resync_note(struct store_server *s, const struct weft_chain *ch, uint64_t ino,
		 uint32_t stripe)
{
	struct store_resync *rs = s->rs;
	if (!rs)
		return;
	for (int m = 0; m < ch->nmembers; m++) {
		if (ch->members[m].state != WEFT_MEMBER_OFFLINE)
			continue;
		struct note x = {.replicas = ch->replicas, .chain = ch->id,
				 .target = ch->members[m].target, .ino = ino, .stripe = stripe};
		pthread_mutex_lock(&rs->lock);
		if (insert(rs, &x)) {
			uint8_t b[REC_SIZE];
			rec_put(b, &x);
			if (write(rs->fd, b, REC_SIZE) != REC_SIZE)
				log_error("resync: append to %s: %s", rs->path, strerror(errno));
		}
		pthread_mutex_unlock(&rs->lock);
	}
}

/* Is target `t` still owed anything in chain (r, c) of the current tables? */
static bool still_owed(const struct weft_chain_set *set, const struct note *x)
{
	const struct weft_chain *c = proto_chain_set_get(set, x->replicas, x->chain);
	if (!c)
		return true; /* tables not loaded: keep */
	for (int m = 0; m < c->nmembers; m++)
		if (c->members[m].target == x->target)
			return c->members[m].state != WEFT_MEMBER_SERVING;
	return false;
}

void store_resync_tables_changed(struct store_server *s)
{
	struct store_resync *rs = s->rs;
	if (!rs)
		return;
	store_sweep_tables_changed(s);
	struct weft_chain_set set;
	if (chaincache_snapshot(s->cc, &set))
		return; /* no table yet, or no memory: keep every note */
	pthread_mutex_lock(&rs->lock);
	size_t k = 0;
	for (size_t i = 0; i < rs->n; i++)
		if (still_owed(&set, &rs->notes[i]))
			rs->notes[k++] = rs->notes[i];
	proto_chain_set_free(&set);
	bool dropped = k != rs->n;
	rs->n = k;
	if (dropped)
		rewrite(rs);
	pthread_mutex_unlock(&rs->lock);
	pthread_mutex_lock(&rs->wake_lock);
	pthread_cond_signal(&rs->wake);
	pthread_mutex_unlock(&rs->wake_lock);
}

/* OBJ_MISSED on a serving member (worker thread). Bulk: u64 objects left, u64 bytes
 * left (from the cursor on, bytes as this member holds them), then (ino u64, stripe
 * u32) pairs. */
void store_resync_missed_list(struct sreq *q)
{
	struct store_server *s = q->s;
	struct store_resync *rs = s->rs;
	const struct weft_msg_obj_missed *m = &q->m.ms;
	struct weft_chain ch;
	int me;
	int rc = store_chains_check(s, m->replicas, m->chain, m->chain_ver, true, &ch, &me);
	if (rc) {
		conn_reply_error(q->c, q->f, rc, s->target_id, "target %u: chain %u/%u version %"
				 PRIu64 ": %s", s->target_id, m->replicas, m->chain, m->chain_ver,
				 weft_strerror(rc));
		return;
	}
	uint32_t max = m->max == 0 || m->max > 4096 ? 4096 : m->max;
	struct note lo = {.replicas = m->replicas, .chain = m->chain, .target = m->target,
			  .ino = m->ino, .stripe = m->stripe};
	struct note from0 = lo;
	from0.ino = 0;
	from0.stripe = 0;
	struct wbuf b;
	wbuf_init(&b);
	pthread_mutex_lock(&rs->lock);
	size_t first = lower_bound(rs, &from0), cur = lower_bound(rs, &lo);
	if (cur > first) { /* copied by the caller: drop */
		memmove(&rs->notes[first], &rs->notes[cur], (rs->n - cur) * sizeof(struct note));
		rs->n -= cur - first;
		rewrite(rs);
		cur = first;
	}
	size_t end = cur;
	uint64_t bytes = 0;
	while (end < rs->n && rs->notes[end].replicas == m->replicas &&
	       rs->notes[end].chain == m->chain && rs->notes[end].target == m->target) {
		struct store_index_rec rec;
		if (store_index_get(store_obj_index(s->objs), rs->notes[end].ino,
				    rs->notes[end].stripe, &rec) == 0)
			bytes += rec.length;
		end++;
	}
	wbuf_u64(&b, end - cur);
	wbuf_u64(&b, bytes);
	uint32_t n = 0;
	for (size_t i = cur; i < end && n < max; i++, n++) {
		wbuf_u64(&b, rs->notes[i].ino);
		wbuf_u32(&b, rs->notes[i].stripe);
	}
	bool eof = cur + n == end;
	pthread_mutex_unlock(&rs->lock);
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_obj_list_reply r = {.count = n, .eof = eof};
	proto_obj_list_reply_encode(&w, &r);
	if (b.err || w.err) {
		store_reply_status(q, -ENOMEM);
		wbuf_free(&b);
	} else {
		/* the bulk is sent from b's buffer, freed once the kernel has it */
		struct iovec v = {b.data, b.len};
		conn_reply(q->c, q->f, 0, &w, &v, 1, free, b.data);
	}
	wbuf_free(&w);
}

/* ---- the copier (returning side) ---- */

struct job {
	bool rebuild;               /* REBUILDING: copy every object of the chain */
	uint8_t replicas;
	uint32_t chain, source;
	uint64_t version;
	char addr[WEFT_ADDR_MAX + 1];
};

static bool stopping(struct store_resync *rs)
{
	pthread_mutex_lock(&rs->wake_lock);
	bool st = rs->stop;
	pthread_mutex_unlock(&rs->wake_lock);
	return st || atomic_load(&rs->s->stopping);
}

/* Chains in which this target is SYNCING, each with the member to copy from. */
static size_t collect(struct store_server *s, struct job *out, size_t max)
{
	size_t n = 0;
	struct weft_chain_set set;
	bool have = chaincache_snapshot(s->cc, &set) == 0;
	for (int r = 1; have && r <= WEFT_REPLICAS_MAX; r++)
		for (uint32_t i = 0; i < set.nchains[r - 1] && n < max; i++) {
			const struct weft_chain *c = &set.chains[r - 1][i];
			int me = -1, src = -1;
			for (int m = 0; m < c->nmembers; m++) {
				if (c->members[m].target == s->target_id)
					me = m;
				else if (me < 0 && c->members[m].state == WEFT_MEMBER_SERVING)
					src = m; /* last serving member before me */
			}
			if (me < 0 || (c->members[me].state != WEFT_MEMBER_SYNCING &&
					c->members[me].state != WEFT_MEMBER_REBUILDING))
				continue;
			struct job *j = &out[n++];
			memset(j, 0, sizeof(*j));
			j->rebuild = c->members[me].state == WEFT_MEMBER_REBUILDING;
			j->replicas = (uint8_t)r;
			j->chain = c->id;
			j->version = c->version;
			j->source = src >= 0 ? c->members[src].target : 0;
			for (uint32_t t = 0; src >= 0 && t < set.ntargets; t++)
				if (set.targets[t].id == j->source)
					snprintf(j->addr, sizeof(j->addr), "%s", set.targets[t].addr);
		}
	proto_chain_set_free(&set);
	return n;
}

static int chain_synced(struct store_server *s, const struct job *j, uint64_t copied,
			uint64_t bytes)
{
	struct weft_msg_chain_synced m = {.target = s->target_id, .replicas = j->replicas,
					  .chain = j->chain, .chain_ver = j->version};
	struct wbuf w;
	wbuf_init(&w);
	proto_chain_synced_encode(&w, &m);
	struct frame *rep = NULL;
	int rc = rpc_call(s->meta, WEFT_OP_CHAIN_SYNCED, &w, NULL, 0, STORE_META_TIMEOUT_MS, &rep);
	frame_free(rep);
	if (rc == 0)
		log_info("chain %u/%u: in sync (%" PRIu64 " objects copied), %" PRIu64 " bytes, "
			 "serving", j->replicas, j->chain, copied, bytes);
	store_chains_refresh(s, true);
	return rc;
}

/* Keeps the copier at or below rate bytes/s (0: unlimited), so application I/O keeps
 * the rest of the disks and links. Copier thread. */
static void throttle(struct store_server *s, uint64_t n, uint64_t rate)
{
	struct store_resync *rs = s->rs;
	if (!rate)
		return;
	uint64_t now = loop_now_ms();
	if (!rs->tb_start_ms || now - rs->tb_start_ms > 1000) {
		rs->tb_start_ms = now; /* a new one-second window */
		rs->tb_bytes = 0;
	}
	rs->tb_bytes += n;
	uint64_t due = rs->tb_start_ms + rs->tb_bytes * 1000 / rate;
	if (due > now) {
		struct timespec ts = {(time_t)((due - now) / 1000), (long)((due - now) % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/* Copies one object from the source; 0 or -errno (the pass is then abandoned). */
static int copy_object(struct store_server *s, struct rpc *src, const struct job *j,
		       uint64_t ino, uint32_t stripe)
{
	struct store_resync *rs = s->rs;
	uint64_t off = 0;
	for (int tries = 0; tries < COPY_TRIES && !stopping(rs);) {
		uint64_t v0 = store_obj_version(s->objs, ino, stripe);
		struct weft_msg_obj_read m = {.ino = ino, .stripe = stripe, .replicas = j->replicas,
					      .chain = j->chain, .chain_ver = j->version,
					      .offset = off, .len = COPY_UNIT};
		struct wbuf w;
		wbuf_init(&w);
		proto_obj_read_encode(&w, &m);
		struct frame *rep = NULL;
		int rc = rpc_call(src, WEFT_OP_OBJ_SYNC_READ, &w, NULL, 0, 30000, &rep);
		if (rc == -ENOENT) { /* gone at the source: gone here too */
			frame_free(rep);
			rc = store_obj_delete_if(s->objs, v0, ino, stripe);
			if (rc == -EAGAIN) {
				tries++;
				continue;
			}
			return rc == -ENOENT ? 0 : rc;
		}
		if (rc) {
			frame_free(rep);
			return rc;
		}
		struct weft_msg_obj_data d;
		const char *why = NULL;
		if (proto_obj_data_decode(rep->payload, rep->h.payload_len, &d, &why)) {
			frame_free(rep);
			return -WEFT_EPROTO;
		}
		uint32_t n = rep->h.bulk_len;
		if (n) {
			rc = store_obj_write_if(s->objs, v0, ino, stripe, off, rep->bulk, n,
						s->checksums ? d.crcs.v : NULL,
						s->checksums ? d.crcs.n : 0, NULL);
			if (rc == -EAGAIN) { /* a forwarded write came in: fetch this range again */
				frame_free(rep);
				tries++;
				continue;
			}
			if (rc) {
				frame_free(rep);
				return rc;
			}
			atomic_fetch_add(&rs->bytes_done, n);
			throttle(s, n, s->resync_rate);
			off += n;
			v0 = store_obj_version(s->objs, ino, stripe);
		}
		frame_free(rep);
		if (n == COPY_UNIT && off < d.size)
			continue;
		/* the end: cut what the source no longer has (or make an empty object) */
		struct store_obj_stat st;
		if (store_obj_stat(s->objs, ino, stripe, &st) == 0 && st.size == d.size)
			return 0;
		rc = store_obj_truncate_if(s->objs, v0, ino, stripe, d.size, NULL);
		if (rc == -EAGAIN) {
			off = 0; /* changed under us: go over it again */
			tries++;
			continue;
		}
		return rc;
	}
	return stopping(rs) ? -EINTR : -EAGAIN;
}

static int list_call(struct rpc *src, struct store_server *s, const struct job *j, uint64_t ino,
		     uint32_t stripe, struct frame **rep, struct weft_msg_obj_list_reply *r)
{
	struct weft_msg_obj_missed m = {.replicas = j->replicas, .chain = j->chain,
					.chain_ver = j->version, .target = s->target_id,
					.ino = ino, .stripe = stripe, .max = LIST_BATCH};
	struct wbuf w;
	wbuf_init(&w);
	proto_obj_missed_encode(&w, &m);
	int rc = rpc_call(src, WEFT_OP_OBJ_MISSED, &w, NULL, 0, 10000, rep);
	if (rc)
		return rc;
	const char *why = NULL;
	if (proto_obj_list_reply_decode((*rep)->payload, (*rep)->h.payload_len, r, &why) ||
	    (*rep)->h.bulk_len != 16 + 12 * (uint64_t)r->count)
		return -WEFT_EPROTO;
	return 0;
}

/* CHAIN_OBJECTS from ino: the (ino u64, stripe u32) pairs meta's layouts place in the
 * job's chain, in (*rep)->bulk; r->next and r->eof say where the next page starts. */
static int chain_objects_page(struct store_server *s, const struct job *j, uint64_t ino,
			      struct frame **rep, struct weft_msg_chain_objects_reply *r)
{
	struct weft_msg_chain_objects m = {.replicas = j->replicas, .chain = j->chain,
					   .ino = ino, .max = 1024};
	struct wbuf w;
	wbuf_init(&w);
	proto_chain_objects_encode(&w, &m);
	int rc = rpc_call(s->meta, WEFT_OP_CHAIN_OBJECTS, &w, NULL, 0, STORE_META_TIMEOUT_MS, rep);
	const char *why = NULL;
	if (rc == 0 && (proto_chain_objects_reply_decode((*rep)->payload, (*rep)->h.payload_len, r,
							 &why) ||
			(*rep)->h.bulk_len != 12 * (uint64_t)r->count))
		rc = -WEFT_EPROTO;
	return rc;
}

/* A replacement member: every object meta's layouts place in the chain, one pass
 * (writes since the member joined are forwarded to it), then CHAIN_SYNCED. */
static int rebuild_chain(struct store_server *s, struct rpc *src, const struct job *j)
{
	struct store_resync *rs = s->rs;
	uint64_t ino = 0, total = 0, bytes0 = atomic_load(&rs->bytes_done);
	for (;;) {
		struct frame *rep = NULL;
		struct weft_msg_chain_objects_reply r;
		int rc = chain_objects_page(s, j, ino, &rep, &r);
		if (rc) {
			frame_free(rep);
			return rc;
		}
		for (uint32_t i = 0; i < r.count && rc == 0 && !stopping(rs); i++) {
			uint64_t oi = get_le64(rep->bulk + 12 * i);
			uint32_t os = get_le32(rep->bulk + 12 * i + 8);
			rc = copy_object(s, src, j, oi, os);
			if (rc == 0) {
				atomic_fetch_add(&rs->objects_done, 1);
				total++;
			} else {
				log_warn("chain %u/%u: rebuilding ino %" PRIu64 " stripe %" PRIu32
					 " from target %u: %s", j->replicas, j->chain, oi, os, j->source,
					 weft_strerror(rc));
			}
		}
		bool eof = r.eof;
		ino = r.next;
		frame_free(rep);
		if (rc || stopping(rs))
			return rc ? rc : -EINTR;
		if (eof)
			return chain_synced(s, j, total, atomic_load(&rs->bytes_done) - bytes0);
	}
}

/* One chain: passes over the source's list until one finds nothing. */
static int sync_chain(struct store_server *s, const struct job *j)
{
	struct store_resync *rs = s->rs;
	if (j->source == 0)
		/* a lone member that rejoins holds its data: synced at once; a newcomer
		 * (a move's extra member) with nobody to copy from waits */
		return j->replicas == 1 && !j->rebuild ? chain_synced(s, j, 0, 0) : -EAGAIN;
	struct rpc_params rp = {.loop = s->loop, .key = &s->key, .addr = j->addr,
				.default_port = 7071, .role = WEFT_ROLE_STORE, .name = s->node,
				.connect_timeout_ms = 3000};
	struct rpc *src;
	int rc = rpc_new(&rp, &src);
	if (rc)
		return rc;
	log_info("chain %u/%u: %s from target %u (%s)", j->replicas, j->chain,
		 j->rebuild ? "rebuilding" : "syncing", j->source, j->addr);
	if (j->rebuild) {
		rc = rebuild_chain(s, src, j);
		rpc_free(src);
		return rc;
	}
	uint64_t total = 0, bytes0 = atomic_load(&rs->bytes_done);
	for (int pass = 0; !stopping(rs); pass++) {
		uint64_t ino = 0, copied = 0;
		uint32_t stripe = 0;
		for (;;) {
			struct frame *rep = NULL;
			struct weft_msg_obj_list_reply r;
			rc = list_call(src, s, j, ino, stripe, &rep, &r);
			if (rc) {
				frame_free(rep);
				goto out;
			}
			const uint8_t *b = rep->bulk;
			atomic_store(&rs->objects_left, get_le64(b));
			atomic_store(&rs->bytes_left, get_le64(b + 8));
			for (uint32_t i = 0; i < r.count && rc == 0 && !stopping(rs); i++) {
				ino = get_le64(b + 16 + 12 * i);
				stripe = get_le32(b + 24 + 12 * i);
				rc = copy_object(s, src, j, ino, stripe);
				if (rc == 0) {
					atomic_fetch_add(&rs->objects_done, 1);
					copied++;
					total++;
				} else {
					log_warn("chain %u/%u: copying ino %" PRIu64 " stripe %" PRIu32
						 " from target %u: %s", j->replicas, j->chain, ino,
						 stripe, j->source, weft_strerror(rc));
				}
			}
			uint32_t count = r.count;
			bool eof = r.eof;
			frame_free(rep);
			if (rc || stopping(rs))
				goto out;
			if (count == 0 && eof)
				break;
			/* next from just after the last one copied (this acks them) */
			if (stripe == UINT32_MAX) {
				ino++;
				stripe = 0;
			} else {
				stripe++;
			}
		}
		if (copied == 0) {
			rc = chain_synced(s, j, total, atomic_load(&rs->bytes_done) - bytes0);
			goto out;
		}
	}
	rc = -EINTR;
out:
	rpc_free(src);
	return rc;
}

void store_resync_repair(struct store_server *s, uint8_t replicas, uint32_t chain, uint64_t ino,
		   uint32_t stripe)
{
	struct store_resync *rs = s->rs;
	if (!rs)
		return;
	pthread_mutex_lock(&rs->wake_lock);
	bool dup = false;
	for (unsigned i = 0; i < rs->nrepairs; i++)
		dup |= rs->repairs[i].ino == ino && rs->repairs[i].stripe == stripe;
	if (!dup && rs->nrepairs < 64)
		rs->repairs[rs->nrepairs++] = (struct repair){replicas, chain, ino, stripe};
	pthread_cond_signal(&rs->wake);
	pthread_mutex_unlock(&rs->wake_lock);
}

/* Copies each queued damaged object again from another serving member of its chain
 * (the copy's full-chunk writes replace the bad chunks). */
static void do_repairs(struct store_server *s)
{
	struct store_resync *rs = s->rs;
	struct repair rp[64];
	pthread_mutex_lock(&rs->wake_lock);
	unsigned n = rs->nrepairs;
	memcpy(rp, rs->repairs, n * sizeof(rp[0]));
	rs->nrepairs = 0;
	pthread_mutex_unlock(&rs->wake_lock);
	for (unsigned i = 0; i < n && !stopping(rs); i++) {
		struct job j = {.replicas = rp[i].replicas, .chain = rp[i].chain};
		struct weft_chain_set set;
		bool have = chaincache_snapshot(s->cc, &set) == 0;
		const struct weft_chain *c = have ?
			proto_chain_set_get(&set, rp[i].replicas, rp[i].chain) : NULL;
		for (int m = 0; c && m < c->nmembers && !j.source; m++) {
			if (c->members[m].target == s->target_id ||
			    c->members[m].state != WEFT_MEMBER_SERVING)
				continue;
			j.source = c->members[m].target;
			j.version = c->version;
			for (uint32_t t = 0; t < set.ntargets; t++)
				if (set.targets[t].id == j.source)
					snprintf(j.addr, sizeof(j.addr), "%s", set.targets[t].addr);
		}
		proto_chain_set_free(&set);
		if (!j.source) {
			log_warn("ino %" PRIu64 " stripe %" PRIu32 " is damaged here and no other member "
				 "of chain %u/%u serves: not repaired", rp[i].ino, rp[i].stripe,
				 rp[i].replicas, rp[i].chain);
			continue;
		}
		struct rpc_params p = {.loop = s->loop, .key = &s->key, .addr = j.addr,
				       .default_port = 7071, .role = WEFT_ROLE_STORE, .name = s->node,
				       .connect_timeout_ms = 3000};
		struct rpc *src;
		if (rpc_new(&p, &src))
			continue;
		int rc = copy_object(s, src, &j, rp[i].ino, rp[i].stripe);
		rpc_free(src);
		if (rc)
			log_warn("repairing ino %" PRIu64 " stripe %" PRIu32 " from target %u: %s",
				 rp[i].ino, rp[i].stripe, j.source, weft_strerror(rc));
		else
			log_warn("ino %" PRIu64 " stripe %" PRIu32 " was damaged here (checksum or "
				 "disk error): repaired from target %u", rp[i].ino, rp[i].stripe,
				 j.source);
	}
}

void store_resync_scrub(struct store_server *s, uint64_t rate)
{
	struct store_resync *rs = s->rs;
	if (!rs)
		return;
	pthread_mutex_lock(&rs->wake_lock);
	rs->scrub_rate = rate ? rate : s->resync_rate ? s->resync_rate : UINT64_MAX;
	pthread_cond_signal(&rs->wake);
	pthread_mutex_unlock(&rs->wake_lock);
}

int store_meta_layout(struct store_server *s, uint64_t ino, struct weft_layout *out)
{
	struct weft_msg_ino m = {.ino = ino};
	struct wbuf w;
	wbuf_init(&w);
	proto_ino_encode(&w, &m);
	struct frame *rep = NULL;
	int rc = rpc_call(s->meta, WEFT_OP_GETSTRIPE, &w, NULL, 0, STORE_META_TIMEOUT_MS, &rep);
	struct weft_msg_layout l;
	const char *why = NULL;
	if (rc == 0 && proto_layout_decode(rep->payload, rep->h.payload_len, &l, &why))
		rc = -WEFT_EPROTO;
	frame_free(rep);
	if (rc == 0)
		*out = l.layout;
	return rc;
}

/* The chain of (ino, stripe), from the file's layout at meta. 0 or -errno. */
static int object_chain(struct store_server *s, uint64_t ino, uint32_t stripe, uint8_t *replicas,
			uint32_t *chain)
{
	struct weft_layout l;
	int rc = store_meta_layout(s, ino, &l);
	if (rc)
		return rc;
	if (!l.chain_count || stripe / WEFT_LAYOUT_GEN_STRIDE != l.gen)
		return -EINVAL; /* not (or no longer) an object of the file's layout */
	stripe %= WEFT_LAYOUT_GEN_STRIDE;
	*replicas = l.replicas;
	*chain = (uint32_t)(((uint64_t)l.first_chain + stripe) % l.chain_count);
	return 0;
}

/* Scrub, second pass: objects meta's layouts place on this target, in each replicated
 * chain where it serves, that are not here (lost with a file, or an rm in objects/) are
 * copied from another serving member. An object the other member lacks too was never
 * written (a hole): nothing to do. Each one is checked at meta again first (its file
 * may have been deleted since the listing). */
static void scrub_missing_chain(struct store_server *s, struct rpc *src, const struct job *j,
				uint64_t *nrestored)
{
	uint64_t ino = 0;
	for (;;) {
		struct frame *rep = NULL;
		struct weft_msg_chain_objects_reply r;
		int rc = chain_objects_page(s, j, ino, &rep, &r);
		if (rc) {
			frame_free(rep);
			log_warn("scrub: listing chain %u/%u at meta: %s", j->replicas, j->chain,
				 weft_strerror(rc));
			return;
		}
		for (uint32_t i = 0; i < r.count && !stopping(s->rs); i++) {
			uint64_t oi = get_le64(rep->bulk + 12 * i);
			uint32_t os = get_le32(rep->bulk + 12 * i + 8);
			if (store_obj_on_disk(s->objs, oi, os) != -ENOENT)
				continue;
			/* the file may have been deleted since the listing (the deleter may have
			 * reached this member first): ask meta again, so that no copy of a
			 * deleted file is brought back */
			uint8_t or;
			uint32_t oc;
			if (object_chain(s, oi, os, &or, &oc) || or != j->replicas || oc != j->chain)
				continue;
			rc = copy_object(s, src, j, oi, os);
			if (rc || store_obj_on_disk(s->objs, oi, os) != 0)
				continue; /* not at the source either: a hole */
			(*nrestored)++;
			log_warn("scrub: ino %" PRIu64 " stripe %" PRIu32 " of chain %u/%u was missing "
				 "here: copied from target %u", oi, os, j->replicas, j->chain, j->source);
		}
		bool eof = r.eof;
		ino = r.next;
		frame_free(rep);
		if (eof || stopping(s->rs))
			return;
	}
}

static void scrub_missing(struct store_server *s)
{
	struct job jobs[64];
	size_t n = 0;
	uint64_t nrestored = 0;
	struct weft_chain_set set;
	if (chaincache_snapshot(s->cc, &set) != 0)
		return;
	for (int r = 2; r <= WEFT_REPLICAS_MAX; r++)
		for (uint32_t i = 0; i < set.nchains[r - 1] && n < 64; i++) {
			const struct weft_chain *c = &set.chains[r - 1][i];
			int me = -1, src = -1;
			for (int m = 0; m < c->nmembers; m++) {
				if (c->members[m].state != WEFT_MEMBER_SERVING)
					continue;
				if (c->members[m].target == s->target_id)
					me = m;
				else if (src < 0)
					src = m;
			}
			if (me < 0 || src < 0)
				continue;
			struct job *j = &jobs[n++];
			memset(j, 0, sizeof(*j));
			j->replicas = (uint8_t)r;
			j->chain = c->id;
			j->version = c->version;
			j->source = c->members[src].target;
			for (uint32_t t = 0; t < set.ntargets; t++)
				if (set.targets[t].id == j->source)
					snprintf(j->addr, sizeof(j->addr), "%s", set.targets[t].addr);
		}
	proto_chain_set_free(&set);
	for (size_t i = 0; i < n && !stopping(s->rs); i++) {
		struct rpc_params p = {.loop = s->loop, .key = &s->key, .addr = jobs[i].addr,
				       .default_port = 7071, .role = WEFT_ROLE_STORE, .name = s->node,
				       .connect_timeout_ms = 3000};
		struct rpc *src;
		if (rpc_new(&p, &src))
			continue;
		scrub_missing_chain(s, src, &jobs[i], &nrestored);
		rpc_free(src);
	}
	log_info("scrub: %" PRIu64 " objects missing here copied back from other members",
		 nrestored);
}

/* Scrub, stale check: an object whose file is not the one the index vouches for (an
 * older copy restored behind the store's back) is repaired as a read that found it
 * would repair it: copied whole from a serving member, reads of it refused meanwhile.
 * With one replica there is nothing to copy from: reads of it fail until rewritten. */
static bool scrub_stale(struct store_server *s, uint64_t ino, uint32_t stripe)
{
	if (store_obj_stale(s->objs, ino, stripe) != 1)
		return false;
	uint8_t r;
	uint32_t c;
	int rc = object_chain(s, ino, stripe, &r, &c);
	if (rc == 0 && r > 1)
		store_repair_start(s, ino, stripe, r, c);
	log_warn("scrub: ino %" PRIu64 " stripe %" PRIu32 ": stale (its files are an older copy "
		 "than the index vouches for)%s%s", ino, stripe,
		 rc ? "; its chain is unknown: " : r > 1 ? "; repairing from another member" :
		 "; one replica: not repairable, reads of it fail", rc ? weft_strerror(rc) : "");
	return true;
}

/* Scrub: verifies every object (at the scrub rate), queues bad ones for repair. */
static void scrub(struct store_server *s, uint64_t rate)
{
	struct store_resync *rs = s->rs;
	uint64_t ino = 0, nobj = 0, nbad = 0, nstale = 0;
	uint32_t stripe = 0;
	struct store_index_rec recs[256];
	size_t n;
	log_info("scrub: verifying every object at up to %llu MiB/s",
		 rate == UINT64_MAX ? 0ull : (unsigned long long)(rate >> 20));
	while (!stopping(rs) && store_obj_list(s->objs, ino, stripe, recs, 256, &n) == 0 && n) {
		for (size_t i = 0; i < n && !stopping(rs); i++) {
			uint64_t bad = 0, first = 0;
			if (store_obj_verify(s->objs, recs[i].ino, recs[i].stripe, &bad, &first) != 0)
				continue;
			nobj++;
			throttle(s, recs[i].length, rate == UINT64_MAX ? 0 : rate);
			if (!bad) { /* CRCs agree: still maybe a whole older copy */
				nstale += scrub_stale(s, recs[i].ino, recs[i].stripe);
				continue;
			}
			nbad++;
			uint8_t r;
			uint32_t c;
			int rc = object_chain(s, recs[i].ino, recs[i].stripe, &r, &c);
			log_warn("scrub: ino %" PRIu64 " stripe %" PRIu32 ": %" PRIu64 " bad chunks "
				 "(first %" PRIu64 ")%s%s", recs[i].ino, recs[i].stripe, bad, first,
				 rc ? "; its chain is unknown: " : "; repairing",
				 rc ? weft_strerror(rc) : "");
			if (rc == 0)
				store_resync_repair(s, r, c, recs[i].ino, recs[i].stripe);
		}
		do_repairs(s);
		ino = recs[n - 1].ino;
		stripe = recs[n - 1].stripe + 1;
		if (stripe == 0)
			ino++;
	}
	log_info("scrub: %" PRIu64 " objects verified, %" PRIu64 " damaged, %" PRIu64 " stale",
		 nobj, nbad, nstale);
	scrub_missing(s);
}

static void *copier_main(void *arg)
{
	struct store_resync *rs = arg;
	struct store_server *s = rs->s;
	struct job jobs[64];
	uint64_t last_bytes = 0, last_ms = loop_now_ms();
	while (!stopping(rs)) {
		do_repairs(s);
		store_sweep_run(s);
		pthread_mutex_lock(&rs->wake_lock);
		uint64_t scrub_rate = rs->scrub_rate;
		rs->scrub_rate = 0;
		pthread_mutex_unlock(&rs->wake_lock);
		if (scrub_rate)
			scrub(s, scrub_rate);
		size_t n = collect(s, jobs, 64);
		atomic_store(&rs->syncing, n > 0);
		for (size_t i = 0; i < n && !stopping(rs); i++) {
			int rc = sync_chain(s, &jobs[i]);
			if (rc == -WEFT_ESTALECHAIN)
				store_chains_refresh(s, true);
		}
		uint64_t now = loop_now_ms(), done = atomic_load(&rs->bytes_done);
		if (now > last_ms)
			atomic_store(&rs->rate, (done - last_bytes) * 1000 / (now - last_ms));
		last_bytes = done;
		last_ms = now;
		if (n == 0) {
			atomic_store(&rs->objects_left, 0);
			atomic_store(&rs->bytes_left, 0);
		}
		struct timespec ts = loop_deadline_ms(500);
		pthread_mutex_lock(&rs->wake_lock);
		if (!rs->stop && !rs->nrepairs && !rs->scrub_rate)
			pthread_cond_timedwait(&rs->wake, &rs->wake_lock, &ts);
		pthread_mutex_unlock(&rs->wake_lock);
	}
	return NULL;
}

int store_resync_start(struct store_server *s)
{
	struct store_resync *rs = s->rs;
	int rc = pthread_create(&rs->thread, NULL, copier_main, rs);
	if (rc)
		return -rc;
	rs->started = true;
	return 0;
}

void store_resync_progress(struct store_server *s, struct weft_msg_resync_progress *out)
{
	struct store_resync *rs = s->rs;
	memset(out, 0, sizeof(*out));
	out->target = s->target_id;
	if (!rs || !atomic_load(&rs->syncing))
		return;
	out->objects_left = atomic_load(&rs->objects_left);
	out->bytes_left = atomic_load(&rs->bytes_left); /* as the source counts them */
	out->rate = atomic_load(&rs->rate);
}

bool store_resync_active(struct store_server *s)
{
	return s->rs && atomic_load(&s->rs->syncing);
}

void store_resync_close(struct store_server *s)
{
	struct store_resync *rs = s->rs;
	if (!rs)
		return;
	pthread_mutex_lock(&rs->wake_lock);
	rs->stop = true;
	pthread_cond_broadcast(&rs->wake);
	pthread_mutex_unlock(&rs->wake_lock);
	if (rs->started)
		pthread_join(rs->thread, NULL);
	store_sweep_close(s);
	if (rs->fd >= 0)
		close(rs->fd);
	pthread_mutex_destroy(&rs->lock);
	pthread_mutex_destroy(&rs->wake_lock);
	pthread_cond_destroy(&rs->wake);
	free(rs->notes);
	free(rs);
	s->rs = NULL;
}
