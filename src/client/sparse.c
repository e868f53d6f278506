/* libweft sparse files: SEEK_DATA / SEEK_HOLE across a file's stripe objects, and the
 * bytes the stores hold for a file (its st_blocks), both from OBJ_EXTENT.
 *
 * A file offset maps to one stripe object (stripe.h), and a hole in the file is a hole
 * in the object that holds those bytes: so SEEK_DATA is the smallest, over the stripes,
 * of each object's next data mapped back to the file, and SEEK_HOLE walks the file's
 * blocks from the offset, asking an object again only when the walk leaves the data
 * extent its last answer gave (one request per stripe for a dense file). The requests
 * of SEEK_DATA and of st_blocks (one per stripe) are all in flight at once. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "common/log.h"
#include "weft/err.h"

/* Extents in 4 KiB blocks, as a local file system reports them (and as the stores' own
 * file systems do, but for an object's end, which may fall inside a block). */
#define SPARSE_BLOCK 4096u

/* OBJ_EXTENT of stripe s at object offset off, from one serving member (the next one on
 * failure; the table again once if it was stale). A missing object is all hole. On
 * return, x->data < x->hole when there is data at or after off: [x->data, x->hole),
 * with x->data >= off; the object's last block counts as data to its end. */
static int obj_extent_at(struct weft_client *c, uint64_t ino, const struct weft_layout *l,
			 uint32_t s, uint64_t off, struct weft_msg_obj_extent_reply *x);

/* x as asked at off rounded down to its block: as obj_extent says. */
static int extent_fix(struct weft_client *c, uint64_t ino, const struct weft_layout *l,
		      uint32_t s, uint64_t off, struct weft_msg_obj_extent_reply *x)
{
	if (x->data >= x->size)
		return 0;
	if (x->hole == x->size)
		x->hole = (x->size + SPARSE_BLOCK - 1) & ~(uint64_t)(SPARSE_BLOCK - 1);
	if (x->data < off) {
		if (x->hole > off)
			x->data = off;
		else /* a file system with finer holes than blocks: ask at off itself */
			return obj_extent_at(c, ino, l, s, off, x);
	}
	return 0;
}

static int obj_extent(struct weft_client *c, uint64_t ino, const struct weft_layout *l,
		      uint32_t s, uint64_t off, struct weft_msg_obj_extent_reply *x)
{
	uint64_t q = off & ~(uint64_t)(SPARSE_BLOCK - 1); /* off's block may be data */
	int err = obj_extent_at(c, ino, l, s, q, x);
	return err ? err : extent_fix(c, ino, l, s, off, x);
}

static void extent_clamp(struct weft_msg_obj_extent_reply *x)
{
	if (x->data > x->size)
		x->data = x->size;
	if (x->hole < x->data || x->hole > x->size)
		x->hole = x->size;
}

/* ---- many OBJ_EXTENTs at once (one per stripe): a wide file costs one round trip ---- */

struct ext_batch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int left;
};

struct ext_req {
	struct ext_batch *b;
	int err;
	struct weft_msg_obj_extent_reply x;
};

static void ext_done(void *arg, int status, struct frame *f)
{
	struct ext_req *r = arg;
	int err = status;
	if (!err && proto_obj_extent_reply_decode(f->payload, f->h.payload_len, &r->x, NULL) < 0)
		err = -EIO;
	if (err == -ENOENT) { /* never written */
		r->x = (struct weft_msg_obj_extent_reply){0};
		err = 0;
	}
	if (!err)
		extent_clamp(&r->x);
	frame_free(f);
	r->err = err;
	pthread_mutex_lock(&r->b->lock);
	r->b->left--;
	pthread_cond_broadcast(&r->b->cond);
	pthread_mutex_unlock(&r->b->lock);
}

/* OBJ_EXTENT of stripe st[i] at object offset q[i], for i < n, into out[i]: all sent at
 * once to each chain's first serving member; any that failed is asked again on its own,
 * with failover (obj_extent_at). 0 or the first error. */
static int extents_many(struct weft_client *c, uint64_t ino, const struct weft_layout *l,
			uint32_t n, const uint32_t *st, const uint64_t *q,
			struct weft_msg_obj_extent_reply *out)
{
	uint8_t cap[WEFT_CAP_LEN];
	int cerr = client_cap_get(c, NULL, ino, WEFT_CAP_READ, NULL, cap);
	if (cerr)
		return cerr;
	struct ext_req *r = calloc(n ? n : 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	struct ext_batch b = {.left = 0};
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cond, NULL);
	for (uint32_t i = 0; i < n; i++) {
		r[i] = (struct ext_req){.b = &b, .err = -EIO};
		struct weft_chain ch;
		if (client_chain(c, l->replicas, stripe_chain(l, st[i]), &ch))
			continue;
		const struct weft_chain_member *mem = NULL;
		for (int k = 0; k < ch.nmembers && !mem; k++) {
			const struct weft_chain_member *m = &ch.members[(ino + st[i] + (uint64_t)k) %
									(uint64_t)ch.nmembers];
			if (m->state == WEFT_MEMBER_SERVING && !client_is_suspect(c, m->target))
				mem = m;
		}
		struct conn *cn;
		if (!mem || client_store_conn(c, mem->target, &cn))
			continue;
		struct wbuf w;
		wbuf_init(&w);
		struct weft_msg_obj_extent m = {.ino = ino, .stripe = stripe_object(l, st[i]), .replicas = l->replicas,
						.chain = ch.id, .chain_ver = ch.version,
						.offset = q[i]};
		memcpy(m.cap, cap, WEFT_CAP_LEN);
		proto_obj_extent_encode(&w, &m);
		pthread_mutex_lock(&b.lock);
		b.left++;
		pthread_mutex_unlock(&b.lock);
		if (conn_call(cn, WEFT_OP_OBJ_EXTENT, &w, NULL, 0, NULL, NULL, ext_done, &r[i])) {
			pthread_mutex_lock(&b.lock);
			b.left--;
			pthread_mutex_unlock(&b.lock);
		}
		conn_put(cn);
	}
	pthread_mutex_lock(&b.lock);
	while (b.left > 0)
		pthread_cond_wait(&b.cond, &b.lock);
	pthread_mutex_unlock(&b.lock);
	int err = 0;
	for (uint32_t i = 0; i < n && !err; i++) {
		if (r[i].err == -WEFT_ESTALECHAIN)
			client_chains_stale(c);
		if (r[i].err)
			err = obj_extent_at(c, ino, l, st[i], q[i], &r[i].x);
		out[i] = r[i].x;
	}
	pthread_mutex_destroy(&b.lock);
	pthread_cond_destroy(&b.cond);
	free(r);
	return err;
}

static int obj_extent_at(struct weft_client *c, uint64_t ino, const struct weft_layout *l,
			 uint32_t s, uint64_t off, struct weft_msg_obj_extent_reply *x)
{
	int err = -EIO;
	for (int round = 0; round < 2; round++) {
		struct weft_chain ch;
		uint8_t cap[WEFT_CAP_LEN];
		if ((err = client_cap_get(c, NULL, ino, WEFT_CAP_READ, NULL, cap)))
			return err;
		if ((err = client_chain(c, l->replicas, stripe_chain(l, s), &ch)))
			return err;
		err = -EIO;
		for (int i = 0; i < ch.nmembers; i++) {
			const struct weft_chain_member *mem = &ch.members[(ino + s + (uint64_t)i) %
									   (uint64_t)ch.nmembers];
			if (mem->state != WEFT_MEMBER_SERVING)
				continue;
			struct conn *cn;
			if ((err = client_store_conn(c, mem->target, &cn))) {
				client_suspect(c, mem->target);
				continue;
			}
			struct wbuf w;
			wbuf_init(&w);
			struct weft_msg_obj_extent m = {.ino = ino, .stripe = stripe_object(l, s),
							.replicas = l->replicas, .chain = ch.id,
							.chain_ver = ch.version, .offset = off};
			memcpy(m.cap, cap, WEFT_CAP_LEN);
			proto_obj_extent_encode(&w, &m);
			struct frame *f = NULL;
			err = conn_call_sync(cn, WEFT_OP_OBJ_EXTENT, &w, NULL, 0,
					     CLIENT_STORE_TIMEOUT_MS, &f);
			conn_put(cn);
			if (err == 0 && proto_obj_extent_reply_decode(f->payload, f->h.payload_len,
								     x, NULL) < 0)
				err = -EIO;
			frame_free(f);
			if (err == -ENOENT) { /* never written */
				*x = (struct weft_msg_obj_extent_reply){0};
				return 0;
			}
			if (err == 0) {
				extent_clamp(x);
				return 0;
			}
			if (err == -WEFT_ESTALECHAIN) {
				client_chains_stale(c);
				break;
			}
			if (err == -WEFT_ECAPEXPIRED) {
				struct winode *wi = client_winode_find(c, ino);
				client_cap_stale(wi);
				if (wi)
					client_winode_put(c, wi);
				break;
			}
		}
		if (err != -WEFT_ESTALECHAIN && err != -WEFT_ECAPEXPIRED)
			break;
	}
	return err == -WEFT_ESTALECHAIN || err == -WEFT_ENOTSERVING ? -EIO : err;
}

void client_sparse_note_alloc(struct winode *wi, uint32_t s, uint64_t allocated)
{
	uint32_t sc = wi->layout.stripe_count ? wi->layout.stripe_count : 1;
	if (!wi->alloc || s >= sc || s / 8 >= WEFT_WRITTEN_MAX)
		return;
	/* replies to writes of one object may come out of order: keep the largest */
	uint64_t cur = __atomic_load_n(&wi->alloc[s], __ATOMIC_RELAXED);
	while (allocated > cur && !__atomic_compare_exchange_n(&wi->alloc[s], &cur, allocated,
							       false, __ATOMIC_RELAXED,
							       __ATOMIC_RELAXED))
		;
	__atomic_fetch_or(&wi->alloc_known[s / 8], (uint8_t)(1u << (s % 8)), __ATOMIC_RELAXED);
}

/* Stripes this client wrote since the file was opened (or last truncated) are known from
 * the write replies; the others are asked of a store, one OBJ_EXTENT each. */
int client_sparse_allocated(struct weft_client *c, struct winode *wi, const uint8_t *mask,
		     uint32_t mlen, uint64_t *bytes)
{
	const struct weft_layout *l = &wi->layout;
	uint32_t sc = l->stripe_count ? l->stripe_count : 1, n = 0;
	uint32_t *ask = malloc(sc * sizeof(*ask));
	uint64_t *zero = calloc(sc, sizeof(*zero));
	struct weft_msg_obj_extent_reply *x = malloc(sc * sizeof(*x));
	int err = ask && zero && x ? 0 : -ENOMEM;
	*bytes = 0;
	for (uint32_t s = 0; !err && s < sc && s / 8 < mlen; s++) {
		if (!((mask[s / 8] >> (s % 8)) & 1))
			continue;
		if (wi->alloc && ((__atomic_load_n(&wi->alloc_known[s / 8], __ATOMIC_RELAXED) >>
				   (s % 8)) & 1))
			*bytes += __atomic_load_n(&wi->alloc[s], __ATOMIC_RELAXED);
		else
			ask[n++] = s;
	}
	if (!err && n)
		err = extents_many(c, wi->ino, l, n, ask, zero, x);
	for (uint32_t i = 0; !err && i < n; i++)
		*bytes += x[i].allocated;
	free(ask);
	free(zero);
	free(x);
	return err;
}

/* The file offset of byte o of stripe s's object. */
static uint64_t file_off(const struct weft_layout *l, uint32_t sc, uint32_t s, uint64_t o)
{
	uint64_t su = l->stripe_unit;
	return ((o / su) * sc + s) * su + o % su;
}

static int seek_data(struct weft_client *c, uint64_t ino, const struct weft_layout *l,
		     uint64_t off, uint64_t size, uint64_t *out)
{
	uint32_t sc = l->stripe_count ? l->stripe_count : 1;
	uint64_t su = l->stripe_unit, b0 = off / su, best = size;
	uint32_t *st = malloc(sc * sizeof(*st));
	uint64_t *o = malloc(sc * sizeof(*o)), *q = malloc(sc * sizeof(*q));
	struct weft_msg_obj_extent_reply *x = malloc(sc * sizeof(*x));
	int err = st && o && q && x ? 0 : -ENOMEM;
	for (uint32_t s = 0; !err && s < sc; s++) {
		/* the first block at or after off's that lives in stripe s */
		uint64_t b = b0 + (s + sc - b0 % sc) % sc;
		st[s] = s;
		o[s] = (b / sc) * su + (b == b0 ? off % su : 0);
		q[s] = o[s] & ~(uint64_t)(SPARSE_BLOCK - 1); /* o's block may be data */
	}
	if (!err)
		err = extents_many(c, ino, l, sc, st, q, x);
	for (uint32_t s = 0; !err && s < sc; s++) {
		if ((err = extent_fix(c, ino, l, s, o[s], &x[s])))
			break;
		if (x[s].data < x[s].hole) {
			uint64_t fo = file_off(l, sc, s, x[s].data);
			if (fo < best)
				best = fo;
		}
	}
	free(st);
	free(o);
	free(q);
	free(x);
	if (err)
		return err;
	if (best >= size)
		return -ENXIO;
	*out = best > off ? best : off;
	return 0;
}

struct ext_cache {
	bool valid;
	uint64_t from;  /* asked at this object offset: [from, data) hole, [data, hole) data */
	struct weft_msg_obj_extent_reply x;
};

static int seek_hole(struct weft_client *c, uint64_t ino, const struct weft_layout *l,
		     uint64_t off, uint64_t size, uint64_t *out)
{
	uint32_t sc = l->stripe_count ? l->stripe_count : 1;
	uint64_t su = l->stripe_unit, pos = off;
	struct ext_cache *ec = calloc(sc, sizeof(*ec));
	if (!ec)
		return -ENOMEM;
	int err = 0;
	while (pos < size) {
		uint64_t b = pos / su;
		uint32_t s = (uint32_t)(b % sc);
		uint64_t o = (b / sc) * su + pos % su;
		struct ext_cache *e = &ec[s];
		if (!e->valid || o < e->from || o >= e->x.hole) {
			if ((err = obj_extent(c, ino, l, s, o, &e->x)))
				break;
			e->valid = true;
			e->from = o;
		}
		if (e->x.data >= e->x.hole || o < e->x.data)
			break; /* pos is in a hole (or past its object's end) */
		uint64_t row_end = (b / sc + 1) * su; /* this block's end, in the object */
		if (e->x.hole < row_end) {
			pos += e->x.hole - o;
			break;
		}
		pos = (b + 1) * su;
	}
	free(ec);
	if (err)
		return err;
	*out = pos < size ? pos : size;
	return 0;
}

int weft_file_seek(struct weft_file *f, uint64_t off, bool data, uint64_t *out)
{
	int err = weft_file_flush(f); /* this client's writes are on the stores */
	if (err)
		return err;
	struct winode *wi = f->wi;
	uint64_t size = weft_file_size(f);
	if (off >= size)
		return -ENXIO;
	client_winode_lock_ready(f->c, wi); /* not the objects a migrate is replacing */
	struct weft_layout l = wi->layout;
	pthread_mutex_unlock(&wi->lock);
	if (!l.stripe_unit)
		return -EIO;
	return data ? seek_data(f->c, wi->ino, &l, off, size, out)
		    : seek_hole(f->c, wi->ino, &l, off, size, out);
}
