/* Repair of lost objects: an object this target should hold (meta records it written,
 * or the index lists it) but that is missing or stale here is copied back from a
 * serving member of its chain.
 *
 * DESIGN: a read that finds the object lost answers WEFT_EMISSING (the client reads
 * another replica) and queues one repair job. The job is pushed with the object's key,
 * so it runs on the worker that applies the object's writes here: a write forwarded
 * to this target while the copy runs waits behind it and is applied after (writes
 * are idempotent, so applying one the copy already holds is harmless). Its reads go to
 * the peer with WEFT_READ_REPAIR, which the peer also runs on its own worker for the
 * object, after the writes it received before. While the copy runs, reads of the
 * object here are refused (STORE_READ_LOST). The copy truncates the object to 0, writes
 * every non-zero piece the peer sends (the peer's CRCs are checked by the write) and
 * sets the peer's size; all-zero pieces stay holes. A copy that fails after changing
 * the local object removes it, so the object stays lost rather than looking whole. */
#include "store/server_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "weft/err.h"

#define PIECE (1u << 20)

struct repair_job {
	struct store_job job;
	struct store_server *s;
	uint64_t ino;
	uint32_t stripe;
	uint8_t replicas;
	uint32_t chain;
};

static int slot_of(struct store_server *s, uint64_t ino, uint32_t stripe)
{
	for (int i = 0; i < STORE_REPAIRS_MAX; i++)
		if (s->repairing[i].used && s->repairing[i].ino == ino &&
		    s->repairing[i].stripe == stripe)
			return i;
	return -1;
}

bool store_repair_active(struct store_server *s, uint64_t ino, uint32_t stripe)
{
	pthread_mutex_lock(&s->repair_lock);
	bool on = slot_of(s, ino, stripe) >= 0;
	pthread_mutex_unlock(&s->repair_lock);
	return on;
}

static void repair_end(struct store_server *s, uint64_t ino, uint32_t stripe)
{
	pthread_mutex_lock(&s->repair_lock);
	int i = slot_of(s, ino, stripe);
	if (i >= 0)
		s->repairing[i].used = false;
	pthread_mutex_unlock(&s->repair_lock);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* The member to copy from: the nearest serving one before this target in the chain
 * (it applied every write this one got), else the nearest after it. */
static int pick_source(struct store_server *s, uint8_t replicas, uint32_t chain,
		       struct weft_chain *ch)
{
	if (chaincache_chain(s->cc, replicas, chain, 0, ch))
		return -1;
	int me = -1;
	for (int i = 0; i < ch->nmembers; i++)
		if (ch->members[i].target == s->target_id)
			me = i;
	if (me < 0)
		return -1;
	for (int i = me - 1; i >= 0; i--)
		if (ch->members[i].state == WEFT_MEMBER_SERVING)
			return i;
	for (int i = me + 1; i < ch->nmembers; i++)
		if (ch->members[i].state == WEFT_MEMBER_SERVING)
			return i;
	return -1;
}

/* One OBJ_READ of the peer. *rep is the caller's on success. */
static int peer_read(struct conn *c, const struct repair_job *j, uint64_t ver, uint64_t off,
		     struct frame **rep)
{
	struct weft_msg_obj_read m = {.ino = j->ino, .stripe = j->stripe, .replicas = j->replicas,
				      .chain = j->chain, .chain_ver = ver, .offset = off,
				      .len = PIECE, .flags = WEFT_READ_REPAIR};
	struct wbuf w;
	wbuf_init(&w);
	proto_obj_read_encode(&w, &m);
	*rep = NULL;
	int rc = conn_call_sync(c, WEFT_OP_OBJ_READ, &w, NULL, 0, STORE_META_TIMEOUT_MS * 2, rep);
	if (rc) {
		frame_free(*rep);
		*rep = NULL;
	}
	return rc;
}

/* Copies the object from a peer; *touched says whether the local copy was changed. */
static int copy_object(struct repair_job *j, uint32_t *source, bool *touched)
{
	struct store_server *s = j->s;
	struct weft_chain ch;
	int src = pick_source(s, j->replicas, j->chain, &ch);
	if (src < 0)
		return -WEFT_ENOTSERVING;
	*source = ch.members[src].target;
	struct conn *r;
	int crc = store_chains_target_conn(s, *source, &r);
	if (crc)
		return crc;
	struct weft_msg_obj_data *d = malloc(sizeof(*d));
	if (!d) {
		conn_put(r);
		return -ENOMEM;
	}
	uint64_t off = 0, size = 0;
	int rc = 0;
	for (;;) {
		struct frame *f;
		rc = peer_read(r, j, ch.version, off, &f);
		if (rc)
			break;
		const char *why = NULL;
		if (proto_obj_data_decode(f->payload, f->h.payload_len, d, &why) < 0 ||
		    f->h.bulk_len > PIECE) {
			frame_free(f);
			rc = -WEFT_EPROTO;
			break;
		}
		size = d->size;
		uint32_t n = f->h.bulk_len;
		if (off == 0) {
			*touched = true;
			rc = store_obj_truncate(s->objs, j->ino, j->stripe, 0, NULL);
		}
		if (rc == 0 && !all_zero(f->bulk, n))
			rc = store_obj_write(s->objs, j->ino, j->stripe, off, f->bulk, n,
					     d->crcs.v, s->checksums ? d->crcs.n : 0, NULL);
		frame_free(f);
		off += n;
		if (rc || n < PIECE || off >= size)
			break;
	}
	free(d);
	conn_put(r);
	if (rc == 0)
		rc = store_obj_truncate(s->objs, j->ino, j->stripe, size, NULL);
	if (rc == 0)
		rc = store_obj_fsync(s->objs, j->ino, j->stripe);
	return rc;
}

static void run_repair(struct store_job *job)
{
	struct repair_job *j = (struct repair_job *)job;
	uint32_t source = 0;
	bool touched = false;
	int rc = atomic_load(&j->s->stopping) ? -ECANCELED : copy_object(j, &source, &touched);
	if (rc == 0)
		log_info("repaired lost object ino %" PRIu64 " stripe %" PRIu32 " from target %u",
			 j->ino, j->stripe, source);
	else {
		/* a partial copy must not look whole: remove it, so it stays lost (reads of
		 * it are refused, the next one tries again). Untouched (the peer had nothing
		 * to give, e.g. a write creating the object is still on its way): left alone */
		if (touched)
			store_obj_delete(j->s->objs, j->ino, j->stripe);
		log_warn("repairing lost object ino %" PRIu64 " stripe %" PRIu32 " (chain %u of "
			 "%u replicas) from target %u: %s; the next read of it tries again",
			 j->ino, j->stripe, j->chain, j->replicas, source, weft_strerror(rc));
	}
	repair_end(j->s, j->ino, j->stripe);
	free(j);
}

void store_repair_start(struct store_server *s, uint64_t ino, uint32_t stripe, uint8_t replicas,
		  uint32_t chain)
{
	struct repair_job *j = calloc(1, sizeof(*j));
	if (!j)
		return;
	*j = (struct repair_job){.job.fn = run_repair, .s = s, .ino = ino, .stripe = stripe,
				 .replicas = replicas, .chain = chain};
	pthread_mutex_lock(&s->repair_lock);
	int free_slot = -1;
	for (int i = 0; i < STORE_REPAIRS_MAX && free_slot < 0; i++)
		if (!s->repairing[i].used)
			free_slot = i;
	if (slot_of(s, ino, stripe) >= 0 || free_slot < 0) {
		pthread_mutex_unlock(&s->repair_lock);
		free(j);
		return;
	}
	s->repairing[free_slot].ino = ino;
	s->repairing[free_slot].stripe = stripe;
	s->repairing[free_slot].used = true;
	pthread_mutex_unlock(&s->repair_lock);
	store_workers_push(s->workers, &j->job, store_obj_key(ino, stripe));
}
