/* libweft data path: reading and writing pieces of files on the stores, with CRC32C on
 * every piece, every piece of a request in flight at once, and replica failover on read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client_int.h"
#include "common/crc.h"
#include "common/log.h"
#include "net/stats.h"
#include "net/wire.h"
#include "weft/err.h"

void client_io_batch_init(struct io_batch *b)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->outstanding = 0;
	b->first_err = 0;
}

void client_io_batch_wait(struct io_batch *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->outstanding > 0)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

static void batch_done(struct io_batch *b, int err)
{
	pthread_mutex_lock(&b->lock);
	if (err && !b->first_err)
		b->first_err = err;
	b->outstanding--;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

/* Whether a read reply's data is what the store checked against its on-disk checksums.
 * Under a tag (f->sealed) it is: the store verified the chunks' CRCs as it read them, and
 * the tag, a MAC over the whole frame, catches any change on the way far better than the
 * CRCs would, so checking them again here costs a pass over the data for nothing. */
static bool crcs_match(const struct frame *f, const uint8_t *data, uint32_t len, uint64_t off,
		       const struct weft_crcs *got)
{
	if (f->sealed)
		return true;
	static _Thread_local struct weft_crcs want;
	proto_crcs_compute_buf(data, len, off, &want);
	return want.n == got->n && memcmp(want.v, got->v, want.n * sizeof(uint32_t)) == 0;
}

/* Index of the chain's head (its first serving member), or -1 when none serves. A
 * one-member chain whose target rejoined as new and empty (syncing: no reads until it
 * is vouched for again) still takes writes: new data is not lost with the old. */
static int chain_head(const struct weft_chain *ch)
{
	for (int i = 0; i < ch->nmembers; i++)
		if (ch->members[i].state == WEFT_MEMBER_SERVING)
			return i;
	if (ch->nmembers == 1 && ch->members[0].state == WEFT_MEMBER_SYNCING)
		return 0;
	return -1;
}

/* ---- reads ----
 * Replies complete on the loop thread, which must never block (connecting to a store
 * does), so a piece that failed is parked on its batch and the waiting caller retries it
 * on the next serving member. */

/* How long a read whose object no replica holds waits before asking again. */
#define EMISSING_GRACE_MS 100

struct read_batch {
	struct io_batch b;
	struct read_call *failed; /* guarded by b.lock */
};

struct read_call {
	struct read_call *next;
	struct weft_client *c;
	struct read_batch *batch;
	uint64_t ino;
	struct weft_layout layout;
	struct stripe_piece p;
	struct weft_chain chain;
	int member;      /* index of the member asked */
	int tries;       /* members tried */
	int stale;       /* resends after a stale-table refusal (they use no try) */
	int rounds;      /* times every member was tried (transient errors) */
	int err;         /* last error */
	struct winode *wi; /* the open file (NULL: none), for its lost-stripe marks */
	bool waited;     /* every member said EMISSING once and we asked again */
	uint8_t flags;   /* WEFT_READ_* */
	uint8_t *dst;
};

/* Checks and copies a read reply into dst; returns 0 or -errno. */
static int take_read_reply(struct read_call *k, struct frame *f)
{
	struct weft_msg_obj_data m;
	const char *why = NULL;
	if (proto_obj_data_decode(f->payload, f->h.payload_len, &m, &why) < 0) {
		log_warn("read reply from target %u: %s", k->chain.members[k->member].target, why);
		return -EIO;
	}
	uint32_t got = f->h.bulk_len;
	if (m.hole > k->p.len || got > k->p.len - m.hole)
		return -EIO;
	uint32_t hole = (uint32_t)m.hole; /* a hole: not sent, zeros here */
	if (k->c->checksums && !crcs_match(f, f->bulk, got, k->p.obj_off + hole, &m.crcs)) {
		atomic_fetch_add(&k->c->checksum_retries, 1);
		stats_add(STATS_CRC_FAILURES, 1);
		log_warn("checksum mismatch reading ino %llu stripe %u at %llu from target %u",
			 (unsigned long long)k->ino, k->p.stripe, (unsigned long long)k->p.obj_off,
			 k->chain.members[k->member].target);
		return -WEFT_ECHECKSUM;
	}
	memset(k->dst, 0, hole);
	memcpy(k->dst + hole, f->bulk, got);
	if (hole + got < k->p.len) /* hole or past the object's end */
		memset(k->dst + hole + got, 0, k->p.len - hole - got);
	atomic_fetch_add(&k->c->bytes_read, got);
	return 0;
}

static void read_finish(struct read_call *k, int err)
{
	if (err == -ENOENT) { /* the object was never written: a hole */
		memset(k->dst, 0, k->p.len);
		err = 0;
	}
	if (err == -WEFT_EMISSING)
		log_warn("ino %llu stripe %u: written, but no replica holds it: EIO",
			 (unsigned long long)k->ino, k->p.stripe);
	if (err == -WEFT_ECHECKSUM || err == -WEFT_ESTALECHAIN || err == -WEFT_ENOTSERVING ||
	    err == -WEFT_EMISSING || err == -ENOTCONN || err == -ECONNREFUSED || err == -ECONNRESET)
		err = -EIO;
	batch_done(&k->batch->b, err);
	free(k);
}

static void read_done(void *arg, int status, struct frame *f)
{
	struct read_call *k = arg;
	int err = status ? status : take_read_reply(k, f);
	frame_free(f);
	if (err == -WEFT_ESTALECHAIN)
		client_chains_stale(k->c);
	if (err == -WEFT_ECAPEXPIRED)
		client_cap_stale(k->wi);
	if (err == -ETIMEDOUT || err == -ECONNRESET || err == -ENOTCONN || err == -EHOSTUNREACH)
		client_suspect(k->c, k->chain.members[k->member].target);
	if (err && err != -ENOENT) {
		k->err = err;
		struct io_batch *b = &k->batch->b;
		pthread_mutex_lock(&b->lock);
		k->next = k->batch->failed;
		k->batch->failed = k;
		b->outstanding--;
		pthread_cond_broadcast(&b->cond);
		pthread_mutex_unlock(&b->lock);
		return;
	}
	read_finish(k, err);
}

/* Sends to the current member or the next serving one. Caller's thread (may connect).
 * Returns 0 if a request is in flight, else the last error. */
static int send_read(struct read_call *k)
{
	int err = k->err ? k->err : -EIO;
	uint8_t cap[WEFT_CAP_LEN];
	int cerr = client_cap_get(k->c, k->wi, k->ino, WEFT_CAP_READ, NULL, cap);
	if (cerr)
		return cerr;
	for (; k->tries < k->chain.nmembers;
	     k->tries++, k->member = (k->member + 1) % k->chain.nmembers) {
		const struct weft_chain_member *mem = &k->chain.members[k->member];
		if (mem->state != WEFT_MEMBER_SERVING)
			continue;
		struct conn *cn;
		err = client_store_conn(k->c, mem->target, &cn);
		if (err) {
			client_suspect(k->c, mem->target);
			continue;
		}
		struct wbuf w;
		wbuf_init(&w);
		struct weft_msg_obj_read m = {.ino = k->ino, .stripe = stripe_object(&k->layout, k->p.stripe),
					      .replicas = k->layout.replicas, .chain = k->p.chain,
					      .chain_ver = k->chain.version, .offset = k->p.obj_off,
					      .len = k->p.len, .flags = k->flags | WEFT_READ_HOLES};
		memcpy(m.cap, cap, WEFT_CAP_LEN);
		proto_obj_read_encode(&w, &m);
		pthread_mutex_lock(&k->batch->b.lock);
		k->batch->b.outstanding++;
		pthread_mutex_unlock(&k->batch->b.lock);
		err = conn_call(cn, WEFT_OP_OBJ_READ, &w, NULL, 0, NULL, NULL, read_done, k);
		conn_put(cn);
		if (err == 0)
			return 0;
		pthread_mutex_lock(&k->batch->b.lock);
		k->batch->b.outstanding--;
		pthread_mutex_unlock(&k->batch->b.lock);
	}
	return err;
}

static bool read_transient(int err);

static int start_read(struct weft_client *c, struct read_batch *rb, struct winode *wi,
		      uint64_t ino, const struct weft_layout *l, const struct stripe_piece *p,
		      uint8_t *dst)
{
	struct read_call *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = (struct read_call){.c = c, .batch = rb, .ino = ino, .layout = *l, .p = *p, .dst = dst,
				.wi = wi, .flags = client_winode_written(wi, p->stripe) ? WEFT_READ_WRITTEN : 0};
	int err = client_chain(c, l->replicas, p->chain, &k->chain);
	if (err) {
		free(k);
		return err;
	}
	/* spread readers over a chain's members: consecutive rows of an object alternate */
	uint64_t row = p->block / (l->stripe_count ? l->stripe_count : 1);
	k->member = (int)((ino + row) % k->chain.nmembers);
	for (int i = 0; i < k->chain.nmembers; i++) { /* not one this client cannot reach */
		const struct weft_chain_member *m = &k->chain.members[k->member];
		if (m->state == WEFT_MEMBER_SERVING && !client_is_suspect(c, m->target))
			break;
		k->member = (k->member + 1) % k->chain.nmembers;
	}
	atomic_fetch_add(&c->ops_read, 1);
	err = send_read(k);
	if (err && read_transient(err)) {
		/* no member could be asked (connect refused: the table may be older than a
		 * failover): read_batch_finish retries it with a fresh table, as a piece
		 * whose reply failed */
		k->err = err;
		pthread_mutex_lock(&rb->b.lock);
		k->next = rb->failed;
		rb->failed = k;
		pthread_mutex_unlock(&rb->b.lock);
		return 0;
	}
	if (err) {
		/* read_finish accounts for one outstanding piece */
		pthread_mutex_lock(&rb->b.lock);
		rb->b.outstanding++;
		pthread_mutex_unlock(&rb->b.lock);
		read_finish(k, err);
	}
	return 0;
}

/* Whether stripe s of k's file was already found lost (no grace for it again). */
static bool lost_known(const struct read_call *k)
{
	uint32_t s = k->p.stripe;
	return !k->wi || s / 8 >= WEFT_WRITTEN_MAX ||
	       ((__atomic_load_n(&k->wi->lost[s / 8], __ATOMIC_RELAXED) >> (s % 8)) & 1);
}

/* Errors after which the chain may serve again shortly: a member being taken out or
 * brought back, a connection closed because meta marked its target offline. */
static bool read_transient(int err)
{
	return err == -WEFT_ESTALECHAIN || err == -WEFT_ENOTSERVING || err == -ENOTCONN ||
	       err == -WEFT_ECAPEXPIRED ||
	       err == -ECONNREFUSED || err == -ECONNRESET || err == -ESHUTDOWN ||
	       err == -ETIMEDOUT || err == -EHOSTUNREACH || err == -ECONNABORTED;
}

/* Waits for every piece; retries failed ones on the next member from this thread. When
 * every member failed for a transient reason, the chain table is fetched again and all
 * members are tried again, every READ_RETRY_PAUSE_MS, for up to READ_RETRY_ROUNDS: a
 * reader waits out a failover (bounded) instead of failing. */
#define READ_RETRY_ROUNDS 150
#define READ_RETRY_PAUSE_MS 200
static int read_batch_finish(struct read_batch *rb)
{
	for (;;) {
		client_io_batch_wait(&rb->b);
		pthread_mutex_lock(&rb->b.lock);
		struct read_call *k = rb->failed;
		rb->failed = NULL;
		pthread_mutex_unlock(&rb->b.lock);
		if (!k)
			break;
		/* A piece whose object no replica holds though it was written may be racing
		 * the write that creates it (its writer's EXTEND races its data, by design):
		 * once per batch, wait a little and ask every member again; a stripe found
		 * lost after that is marked, so later reads of it fail at once. */
		bool grace = false;
		for (struct read_call *x = k; x; x = x->next)
			if (x->err == -WEFT_EMISSING && x->tries + 1 >= x->chain.nmembers) {
				if (x->waited && x->wi && x->p.stripe / 8 < WEFT_WRITTEN_MAX)
					__atomic_fetch_or(&x->wi->lost[x->p.stripe / 8],
							  (uint8_t)(1u << (x->p.stripe % 8)),
							  __ATOMIC_RELAXED);
				else if (!x->waited && !lost_known(x))
					grace = x->waited = true, x->tries = -1;
			}
		if (grace)
			usleep(EMISSING_GRACE_MS * 1000);
		while (k) {
			struct read_call *next = k->next;
			if (k->err == -WEFT_ESTALECHAIN && k->stale < 3 &&
			    client_chain(k->c, k->layout.replicas, k->p.chain, &k->chain) == 0) {
				/* read_done marked the table stale: client_chain refetched it
				 * (once for all the pieces that met it); the same member is
				 * asked again with the current version */
				k->stale++;
			} else {
				k->tries++;
				k->member = (k->member + 1) % k->chain.nmembers;
			}
			int err;
			for (;;) {
				err = k->tries < k->chain.nmembers ? send_read(k) : k->err;
				if (!err || !read_transient(err) || k->rounds >= READ_RETRY_ROUNDS)
					break;
				/* every member failed for now: fetch the table, try them again */
				struct timespec pause = {0, READ_RETRY_PAUSE_MS * 1000000L};
				nanosleep(&pause, NULL);
				client_refresh_chains(k->c);
				client_chain(k->c, k->layout.replicas, k->p.chain, &k->chain);
				k->err = err;
				k->rounds++;
				k->tries = 0;
			}
			if (err) {
				pthread_mutex_lock(&rb->b.lock);
				rb->b.outstanding++;
				pthread_mutex_unlock(&rb->b.lock);
				read_finish(k, err);
			}
			k = next;
		}
	}
	return rb->b.first_err;
}

int client_data_read_range(struct weft_client *c, struct winode *wi, uint64_t ino,
		    const struct weft_layout *l, uint64_t off, uint64_t len, uint8_t *dst)
{
	struct read_batch rb = {.failed = NULL};
	client_io_batch_init(&rb.b);
	int err = 0;
	while (len && !err) {
		struct stripe_piece p;
		uint32_t n = stripe_map(l, off, len, &p);
		err = start_read(c, &rb, wi, ino, l, &p, dst);
		off += n;
		len -= n;
		dst += n;
	}
	int e2 = read_batch_finish(&rb);
	return err ? err : e2;
}

/* ---- one asynchronous read (readahead): one member, no failover ---- */

struct async_read {
	void (*done)(void *arg, int err, struct frame *f);
	void *arg;
	struct weft_client *c;
	struct winode *wi;
	uint32_t target;
};

/* A reply whose data follows a leading hole, rebuilt with the hole's zeros in front, so
 * that its bulk holds the block from its start (what readahead.c copies from); the
 * payload still says where the checked data begins (data_read_verify). NULL: no memory. */
static struct frame *unhole(struct frame *f)
{
	struct weft_msg_obj_data m;
	if (proto_obj_data_decode(f->payload, f->h.payload_len, &m, NULL) < 0 || !m.hole ||
	    !f->h.bulk_len || m.hole > WEFT_BULK_MAX)
		return f; /* nothing to move (an all-hole reply is short: zeros) */
	size_t pl = f->h.payload_len, bl = (size_t)m.hole + f->h.bulk_len;
	struct frame *g = malloc(sizeof(*g) + pl + bl);
	if (!g) {
		frame_free(f);
		return NULL;
	}
	*g = *f;
	g->payload = (uint8_t *)(g + 1);
	g->bulk = g->payload + pl;
	memcpy(g->payload, f->payload, pl);
	memset(g->bulk, 0, m.hole);
	memcpy(g->bulk + m.hole, f->bulk, f->h.bulk_len);
	g->h.bulk_len = (uint32_t)bl;
	frame_free(f);
	return g;
}

/* Only the status here (loop thread): the reply is checked by data_read_verify. */
static void async_read_done(void *arg, int status, struct frame *f)
{
	struct async_read *k = arg;
	if (status)
		frame_free(f);
	else if (!(f = unhole(f)))
		status = -ENOMEM;
	if (status == -ETIMEDOUT || status == -ECONNRESET || status == -ENOTCONN ||
	    status == -EHOSTUNREACH)
		client_suspect(k->c, k->target);
	if (status == -WEFT_ECAPEXPIRED)
		client_cap_stale(k->wi);
	if (status == -ENOENT)
		k->done(k->arg, 0, NULL); /* never written: zeros */
	else
		k->done(k->arg, status, status ? NULL : f);
	free(k);
}

int client_data_read_verify(struct weft_client *c, const struct frame *f, uint64_t obj_off,
		     uint32_t len)
{
	struct weft_msg_obj_data m;
	if (proto_obj_data_decode(f->payload, f->h.payload_len, &m, NULL) < 0 ||
	    f->h.bulk_len > len || m.hole > len)
		return -EIO;
	/* the checked data begins after the hole (unhole put zeros before it) */
	uint32_t hole = f->h.bulk_len ? (uint32_t)m.hole : 0;
	if (c->checksums && !crcs_match(f, f->bulk + hole, f->h.bulk_len - hole, obj_off + hole,
					&m.crcs)) {
		atomic_fetch_add(&c->checksum_retries, 1);
		stats_add(STATS_CRC_FAILURES, 1);
		log_warn("checksum mismatch in a read-ahead block at object offset %llu: read again",
			 (unsigned long long)obj_off);
		return -WEFT_ECHECKSUM;
	}
	atomic_fetch_add(&c->bytes_read, f->h.bulk_len);
	return 0;
}

int client_data_read_async(struct weft_client *c, struct winode *wi, uint64_t ino,
		    const struct weft_layout *l, const struct stripe_piece *p,
		    void (*done)(void *arg, int err, struct frame *f), void *arg)
{
	struct weft_chain ch;
	uint8_t cap[WEFT_CAP_LEN];
	int err = client_cap_get(c, wi, ino, WEFT_CAP_READ, NULL, cap);
	if (err)
		return err;
	err = client_chain(c, l->replicas, p->chain, &ch);
	if (err)
		return err;
	uint64_t row = p->block / (l->stripe_count ? l->stripe_count : 1);
	/* first the members this client reached lately, then the others */
	for (int t = 0; t < 2 * ch.nmembers; t++) {
		const struct weft_chain_member *mem = &ch.members[(ino + row + (uint64_t)t) % ch.nmembers];
		if (mem->state != WEFT_MEMBER_SERVING ||
		    client_is_suspect(c, mem->target) != (t >= ch.nmembers))
			continue;
		struct conn *cn;
		if (client_store_conn(c, mem->target, &cn) != 0) {
			client_suspect(c, mem->target);
			continue;
		}
		struct async_read *k = malloc(sizeof(*k));
		if (!k) {
			conn_put(cn);
			return -ENOMEM;
		}
		*k = (struct async_read){.done = done, .arg = arg, .c = c, .wi = wi,
					 .target = mem->target};
		struct wbuf w;
		wbuf_init(&w);
		struct weft_msg_obj_read m = {.ino = ino, .stripe = stripe_object(l, p->stripe), .replicas = l->replicas,
					      .chain = p->chain, .chain_ver = ch.version,
					      .offset = p->obj_off, .len = p->len,
					      .flags = WEFT_READ_HOLES |
						       (client_winode_written(wi, p->stripe) ?
							WEFT_READ_WRITTEN : 0)};
		memcpy(m.cap, cap, WEFT_CAP_LEN);
		proto_obj_read_encode(&w, &m);
		atomic_fetch_add(&c->ops_read, 1);
		err = conn_call(cn, WEFT_OP_OBJ_READ, &w, NULL, 0, NULL, NULL, async_read_done, k);
		conn_put(cn);
		if (err == 0)
			return 0;
		free(k);
	}
	return -EIO;
}

/* ---- writes ---- */

/* A block's send completes when both its reply has come and the transport has let go of
 * its bytes (the release callback): only then may the block's buffer be reused or freed.
 * Either may happen first. */
struct write_call {
	struct weft_client *c;
	struct wblock *b;
	uint32_t stripe;
	void (*done)(struct wblock *b);
	atomic_int parts; /* reply + release */
	int status;
};

static void write_part_done(struct write_call *k)
{
	if (atomic_fetch_sub(&k->parts, 1) != 1)
		return;
	k->b->status = k->status;
	k->done(k->b);
	free(k);
}

static void write_released(void *arg)
{
	write_part_done(arg);
}

static void write_done(void *arg, int status, struct frame *f)
{
	struct write_call *k = arg;
	if (status) {
		char detail[256];
		uint32_t target = conn_error_detail(f, detail, sizeof(detail));
		if (status == -ETIMEDOUT || status == -ECONNRESET || status == -ENOTCONN ||
		    status == -EHOSTUNREACH)
			client_suspect(k->c, k->b->target);
		if (status == -WEFT_ESTALECHAIN)
			client_chains_stale(k->c);
		else
			log_warn("write of ino %llu at %llu failed: %s%s%s (target %u)",
				 (unsigned long long)k->b->wi->ino, (unsigned long long)k->b->file_off,
				 weft_strerror(status), detail[0] ? ": " : "", detail, target);
	} else {
		atomic_fetch_add(&k->c->bytes_written, k->b->len);
		struct weft_msg_obj_written m;
		if (f && proto_obj_written_decode(f->payload, f->h.payload_len, &m, NULL) == 0)
			client_sparse_note_alloc(k->b->wi, k->stripe, m.allocated);
	}
	frame_free(f);
	k->status = status;
	write_part_done(k);
}

int client_data_write_block(struct weft_client *c, const struct weft_layout *l, struct wblock *b,
		     void (*done)(struct wblock *b))
{
	struct stripe_piece p;
	stripe_map(l, b->file_off, b->len, &p);
	struct weft_chain ch;
	uint8_t cap[WEFT_CAP_LEN];
	int err = client_cap_get(c, b->wi, b->wi->ino, WEFT_CAP_READ | WEFT_CAP_WRITE, NULL, cap);
	if (err)
		return err;
	err = client_chain(c, l->replicas, p.chain, &ch);
	if (err)
		return err;
	int head = chain_head(&ch);
	if (head < 0)
		return -EIO;
	struct conn *cn;
	b->target = ch.members[head].target;
	b->chain = p.chain;
	err = client_store_conn(c, ch.members[head].target, &cn);
	if (err && err != -ENOMEM)
		client_suspect(c, ch.members[head].target);
	if (err)
		return err;
	struct write_call *k = malloc(sizeof(*k));
	struct weft_msg_obj_write *m = malloc(sizeof(*m));
	if (!k || !m) {
		free(k);
		free(m);
		conn_put(cn);
		return -ENOMEM;
	}
	*k = (struct write_call){.c = c, .b = b, .done = done, .stripe = p.stripe};
	atomic_init(&k->parts, 2);
	*m = (struct weft_msg_obj_write){.ino = b->wi->ino, .stripe = stripe_object(l, p.stripe),
					 .replicas = l->replicas, .chain = p.chain,
					 .chain_ver = ch.version, .offset = p.obj_off};
	memcpy(m->cap, cap, WEFT_CAP_LEN);
	uint8_t *data = b->data; /* holds [file_off, file_off + len) */
	/* Under a tag the store computes the pieces' CRCs from the bytes it received (the
	 * tag proves they are the ones sent), as for a writer with checksums off: computing
	 * them here as well would cost a pass over the data for a check the tag makes. */
	if (c->checksums && conn_wire_level(cn, NULL) == WIRE_NONE)
		proto_crcs_compute_buf(data, b->len, p.obj_off, &m->crcs);
	else
		m->crcs.n = 0;
	struct wbuf w;
	wbuf_init(&w);
	proto_obj_write_encode(&w, m);
	free(m);
	struct iovec v = {data, b->len};
	atomic_fetch_add(&c->ops_written, 1);
	err = conn_call(cn, WEFT_OP_OBJ_WRITE, &w, &v, 1, write_released, k, write_done, k);
	conn_put(cn);
	if (err)
		free(k); /* conn_call released the bulk already; no reply will come */
	return err;
}

/* ---- truncate and fsync: one request per stripe, all in flight ---- */

static void stripe_done(void *arg, int status, struct frame *f)
{
	struct io_batch *b = arg;
	frame_free(f);
	batch_done(b, status == -ENOENT ? 0 : status);
}

static int per_stripe(struct weft_client *c, const struct weft_cred *cred, uint64_t ino,
		      const struct weft_layout *l, uint16_t op, uint64_t size)
{
	struct io_batch b;
	uint8_t cap[WEFT_CAP_LEN];
	int err = client_cap_get(c, NULL, ino, WEFT_CAP_READ | WEFT_CAP_WRITE, cred, cap);
	if (err)
		return err;
	client_io_batch_init(&b);
	uint32_t sc = l->stripe_count ? l->stripe_count : 1;
	for (uint32_t s = 0; s < sc && !err; s++) {
		struct weft_chain ch;
		err = client_chain(c, l->replicas, stripe_chain(l, s), &ch);
		if (err)
			break;
		int head = chain_head(&ch);
		if (head < 0) {
			err = -EIO;
			break;
		}
		struct conn *cn;
		err = client_store_conn(c, ch.members[head].target, &cn);
		if (err)
			break;
		struct wbuf w;
		wbuf_init(&w);
		if (op == WEFT_OP_OBJ_TRUNCATE) {
			struct weft_msg_obj_truncate m = {.ino = ino, .stripe = stripe_object(l, s), .replicas = l->replicas,
							  .chain = ch.id, .chain_ver = ch.version,
							  .size = stripe_object_len(l, s, size)};
			memcpy(m.cap, cap, WEFT_CAP_LEN);
			proto_obj_truncate_encode(&w, &m);
		} else {
			struct weft_msg_obj_sync m = {.ino = ino, .stripe = stripe_object(l, s), .replicas = l->replicas,
						      .chain = ch.id, .chain_ver = ch.version};
			memcpy(m.cap, cap, WEFT_CAP_LEN);
			proto_obj_sync_encode(&w, &m);
		}
		pthread_mutex_lock(&b.lock);
		b.outstanding++;
		pthread_mutex_unlock(&b.lock);
		err = conn_call(cn, op, &w, NULL, 0, NULL, NULL, stripe_done, &b);
		if (err)
			batch_done(&b, 0);
		conn_put(cn);
	}
	client_io_batch_wait(&b);
	err = err ? err : b.first_err;
	if (err == -WEFT_ESTALECHAIN)
		client_chains_stale(c);
	return err;
}

/* A stale chain table, or a capability that expired on the way: once more */
static bool again(struct weft_client *c, uint64_t ino, int err)
{
	if (err == -WEFT_ECAPEXPIRED) {
		struct winode *wi = client_winode_find(c, ino);
		client_cap_stale(wi);
		if (wi)
			client_winode_put(c, wi);
	}
	return err == -WEFT_ESTALECHAIN || err == -WEFT_ECAPEXPIRED;
}

int client_data_truncate(struct weft_client *c, const struct weft_cred *cred, uint64_t ino,
			 const struct weft_layout *l, uint64_t size)
{
	int err = per_stripe(c, cred, ino, l, WEFT_OP_OBJ_TRUNCATE, size);
	if (again(c, ino, err))
		err = per_stripe(c, cred, ino, l, WEFT_OP_OBJ_TRUNCATE, size);
	return err;
}

int client_data_fsync(struct weft_client *c, uint64_t ino, const struct weft_layout *l)
{
	int err = per_stripe(c, NULL, ino, l, WEFT_OP_OBJ_FSYNC, 0);
	if (again(c, ino, err))
		err = per_stripe(c, NULL, ino, l, WEFT_OP_OBJ_FSYNC, 0);
	return err;
}
