/* weft_migrate: restripes a file to a new layout while it is in use (Lustre's
 * lfs migrate). The copy runs here, in the migrator's client; meta freezes the other
 * mounts' I/O on the file and switches the layout (src/meta/migrate.h has the design).
 *
 * Steps: MIGRATE BEGIN (every mount holding the file has sent its write-behind and
 * holds further I/O; meta answers with the old and new layouts); the file's extent from
 * its objects (the size at meta may lag a writer that has not closed yet); the copy,
 * COPY_CHUNK at a time: read with the old layout (CRCs checked), written to the new
 * generation's objects (CRCs sent and checked by the stores), read back and compared
 * byte for byte; OBJ_FSYNC of the new objects; MIGRATE SWITCH with the new layout's
 * written-stripes mask. Any failure sends ABORT: the file keeps its old layout.
 *
 * Threads: the caller's; blocks for the whole copy. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/stripe.h"
#include "common/log.h"
#include "weft/err.h"

#define COPY_CHUNK (8u << 20)
#define COPY_TRIES 3

static int migrate_call(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
			uint8_t step, const struct weft_layout *l, const uint8_t *mask,
			uint32_t masklen, struct weft_msg_migrate_reply *out, char *detail,
			size_t dcap)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_migrate m = {.cred = *cr, .ino = ino, .step = step, .layout = *l,
				     .written = {(const char *)mask, masklen}};
	proto_migrate_encode(&w, &m);
	struct frame *f = NULL;
	int err = client_meta_call(c, WEFT_OP_MIGRATE, &w, NULL, 0, &f);
	if (err && f && detail)
		conn_error_detail(f, detail, dcap);
	if (!err && out && proto_migrate_reply_decode(f->payload, f->h.payload_len, out, NULL) < 0)
		err = -EIO;
	frame_free(f);
	return err;
}

/* Bytes stripe s's object holds (0: none), asked of its chain's first serving member
 * with capability cap. */
static int object_len(struct weft_client *c, uint64_t ino, const struct weft_layout *l,
		      uint32_t s, const uint8_t *cap, uint64_t *len)
{
	struct weft_chain ch;
	int err = client_chain(c, l->replicas, stripe_chain(l, s), &ch);
	if (err)
		return err;
	err = -EIO;
	for (int i = 0; i < ch.nmembers && err; i++) {
		if (ch.members[i].state != WEFT_MEMBER_SERVING)
			continue;
		struct conn *cn;
		if (client_store_conn(c, ch.members[i].target, &cn))
			continue;
		struct wbuf w;
		wbuf_init(&w);
		struct weft_msg_obj_id m = {.ino = ino, .stripe = stripe_object(l, s)};
		memcpy(m.cap, cap, WEFT_CAP_LEN);
		proto_obj_id_encode(&w, &m);
		struct frame *f = NULL;
		err = conn_call_sync(cn, WEFT_OP_OBJ_STAT, &w, NULL, 0, 10000, &f);
		conn_put(cn);
		struct weft_msg_obj_size r;
		if (err == -ENOENT) {
			*len = 0;
			err = 0;
		} else if (!err && proto_obj_size_decode(f->payload, f->h.payload_len, &r, NULL) == 0) {
			*len = r.size;
		} else if (!err) {
			err = -EIO;
		}
		frame_free(f);
	}
	return err;
}

/* Where the file's data ends: the furthest byte any old object holds. */
static int data_extent(struct weft_client *c, uint64_t ino, const struct weft_layout *l,
		       const uint8_t *cap, uint64_t *end)
{
	uint64_t su = l->stripe_unit, sc = l->stripe_count ? l->stripe_count : 1;
	*end = 0;
	for (uint32_t s = 0; s < sc; s++) {
		uint64_t len = 0;
		int err = object_len(c, ino, l, s, cap, &len);
		if (err)
			return err;
		if (len == 0)
			continue;
		uint64_t last = len - 1, row = last / su;
		uint64_t file_end = (row * sc + s) * su + last % su + 1;
		if (file_end > *end)
			*end = file_end;
	}
	return 0;
}

struct copy_write {
	struct wblock b;
	struct io_batch *batch;
};

static void write_done(struct wblock *b)
{
	struct copy_write *w = (struct copy_write *)b;
	pthread_mutex_lock(&w->batch->lock);
	if (b->status && !w->batch->first_err)
		w->batch->first_err = b->status;
	w->batch->outstanding--;
	pthread_cond_broadcast(&w->batch->cond);
	pthread_mutex_unlock(&w->batch->lock);
}

/* Writes buf = [off, off + len) of the file into the objects of layout to, every
 * stripe unit in flight at once; marks the stripes written in mask. */
static int write_range(struct weft_client *c, struct winode *wi, const struct weft_layout *to,
		       uint64_t off, uint64_t len, uint8_t *buf, uint8_t *mask)
{
	uint64_t su = to->stripe_unit, sc = to->stripe_count ? to->stripe_count : 1;
	size_t n = (size_t)((off + len - 1) / su - off / su + 1);
	struct copy_write *ws = calloc(n, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	struct io_batch batch;
	client_io_batch_init(&batch);
	int err = 0;
	size_t i = 0;
	for (uint64_t pos = off; pos < off + len; i++) {
		uint64_t block = pos / su, end = (block + 1) * su;
		if (end > off + len)
			end = off + len;
		ws[i].batch = &batch;
		ws[i].b = (struct wblock){.wi = wi, .file_off = pos, .len = (uint32_t)(end - pos),
					  .cap = (uint32_t)(end - pos), .block = block,
					  .data = buf + (pos - off)};
		uint32_t s = (uint32_t)(block % sc);
		if (s / 8 < WEFT_WRITTEN_MAX)
			mask[s / 8] |= (uint8_t)(1u << (s % 8));
		pthread_mutex_lock(&batch.lock);
		batch.outstanding++;
		pthread_mutex_unlock(&batch.lock);
		if ((err = client_data_write_block(c, to, &ws[i].b, write_done))) {
			pthread_mutex_lock(&batch.lock);
			batch.outstanding--;
			pthread_mutex_unlock(&batch.lock);
			break;
		}
		pos = end;
	}
	client_io_batch_wait(&batch);
	free(ws);
	return err ? err : batch.first_err;
}

/* Copies [off, off + len) from layout `from` to layout `to` and reads it back. */
static int copy_chunk(struct weft_client *c, struct winode *wi, const struct weft_layout *from,
		      const struct weft_layout *to, uint64_t off, uint64_t len, uint8_t *buf,
		      uint8_t *check, uint8_t *mask)
{
	int err = client_data_read_range(c, wi, wi->ino, from, off, len, buf);
	for (int t = 0; !err && t < COPY_TRIES; t++) {
		if ((err = write_range(c, wi, to, off, len, buf, mask)) == 0)
			break;
		/* a chain that changed under us (stale version, a member gone): the
		 * table again, and once more */
		client_refresh_chains(c);
	}
	if (!err)
		err = client_data_read_range(c, wi, wi->ino, to, off, len, check);
	if (!err && memcmp(buf, check, len) != 0) {
		log_warn("migrate: ino %llu: the copy of [%llu, +%llu) reads back different",
			 (unsigned long long)wi->ino, (unsigned long long)off,
			 (unsigned long long)len);
		err = -EIO;
	}
	return err;
}

int weft_migrate(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		 const struct weft_layout *want, struct weft_migrate_result *res,
		 char *detail, size_t dcap)
{
	struct weft_msg_migrate_reply lay;
	uint8_t mask[WEFT_WRITTEN_MAX] = {0};
	memset(res, 0, sizeof(*res));
	if (detail && dcap)
		detail[0] = '\0';
	int err = migrate_call(c, cr, ino, WEFT_MIGRATE_BEGIN, want, NULL, 0, &lay, detail, dcap);
	if (err)
		return err;
	res->from = lay.from;
	res->to = lay.to;
	uint8_t *buf = malloc(COPY_CHUNK), *check = malloc(COPY_CHUNK);
	struct winode *wi = calloc(1, sizeof(*wi)); /* what a write block names: ino */
	if (!buf || !check || !wi) {
		err = -ENOMEM;
		goto abort;
	}
	wi->c = c;
	wi->ino = ino;
	wi->layout = lay.to;
	pthread_mutex_init(&wi->cap_lock, NULL);
	/* the stores take the copy's reads and writes on a capability meta grants the
	 * caller as for an open for writing: it holds both generations' objects */
	uint8_t cap[WEFT_CAP_LEN];
	if ((err = client_cap_get(c, wi, ino, WEFT_CAP_READ | WEFT_CAP_WRITE, cr, cap)))
		goto abort;
	uint64_t end;
	if ((err = data_extent(c, ino, &lay.from, cap, &end)))
		goto abort;
	/* a migrator that died may have left objects of this generation: none of their
	 * bytes may show through holes of the new copy */
	if ((err = client_data_truncate(c, cr, ino, &lay.to, 0)))
		goto abort;
	for (uint64_t off = 0; off < end; off += COPY_CHUNK) {
		uint64_t n = end - off < COPY_CHUNK ? end - off : COPY_CHUNK;
		if ((err = copy_chunk(c, wi, &lay.from, &lay.to, off, n, buf, check, mask)))
			goto abort;
		res->bytes += n;
	}
	if (end && (err = client_data_fsync(c, ino, &lay.to)))
		goto abort;
	uint32_t ml = 0;
	for (uint32_t i = 0; i < WEFT_WRITTEN_MAX; i++)
		if (mask[i])
			ml = i + 1;
	err = migrate_call(c, cr, ino, WEFT_MIGRATE_SWITCH, &lay.to, mask, ml, NULL, detail, dcap);
	if (err)
		goto abort;
	free(buf);
	free(check);
	free(wi);
	return 0;
abort:
	/* meta queues the abandoned copy's objects for its deleter (only meta may remove
	 * objects from a store) */
	migrate_call(c, cr, ino, WEFT_MIGRATE_ABORT, &lay.to, NULL, 0, NULL, NULL, 0);
	free(buf);
	free(check);
	free(wi);
	return err;
}
