/* libweft open files: open and create, writes gathered in stripe-unit blocks bounded by
 * the pagepool (sent and drained by winode.c), reads with readahead windows for
 * sequential readers, flush, fsync, release.
 *
 * Locking: wi->lock guards a winode's state and is never held while waiting for the
 * network (replies complete on the loop thread, and their callbacks take wi->lock). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/client_int.h"
#include "common/log.h"
#include "net/stats.h"
#include "weft/err.h"

#define DIRTY_BLOCKS_MAX 4   /* unsent blocks gathered per inode before the oldest is sent */

/* ---- write-behind ---- */

/* Buffer size for `need` bytes of a block that has `room` bytes left from its start:
 * whole 64 KiB units, never past the block's end. */
static uint32_t gather_cap(uint32_t need, uint32_t room)
{
	uint32_t cap = (need + 65535u) & ~65535u;
	return cap < room ? cap : room;
}

ssize_t weft_file_write(struct weft_file *f, const void *buf, size_t len, uint64_t off)
{
	struct weft_client *c = f->c;
	struct winode *wi = f->wi;
	if (len == 0)
		return 0;
	if (off > (uint64_t)WEFT_FILE_SIZE_MAX || len > (uint64_t)WEFT_FILE_SIZE_MAX - off)
		return -EFBIG;
	if (client_file_fenced(f))
		return -EIO; /* opened in a session meta evicted: nothing more of it lands */
	const uint8_t *src = buf;
	uint64_t su;
	size_t done = 0;
relock:
	/* a migration freezes the file between writes, never inside one's gathering: a
	 * block sent with the old layout after the migrator copied would be lost */
	client_winode_lock_ready(c, wi);
	su = wi->layout.stripe_unit;
	if (wi->retry && !wi->error)
		wi->error = client_wb_drain(c, wi); /* resend failed blocks before they pile up */
	if (wi->frozen) {
		pthread_mutex_unlock(&wi->lock); /* frozen while the drain waited */
		goto relock;
	}
	if (wi->error) {
		int err = wi->error; /* kept: flush and close report it too */
		pthread_mutex_unlock(&wi->lock);
		return err;
	}
	wi->wgen++; /* fetches under way may hold the old bytes: they are not kept */
	if (wi->ra)
		client_ra_drop(c, wi);
	while (done < len) {
		uint64_t pos = off + done;
		uint64_t block = pos / su, bstart = block * su;
		uint32_t n = (uint32_t)(su - (pos - bstart));
		if (n > len - done)
			n = (uint32_t)(len - done);
		/* the gathering block of this file block, if the write continues it */
		struct wblock **pp = &wi->dirty, *b = NULL;
		int ndirty = 0;
		for (; *pp; pp = &(*pp)->next, ndirty++) {
			if ((*pp)->block == block) {
				b = *pp;
				break;
			}
		}
		if (b && !(pos >= b->file_off && pos <= b->file_off + b->len)) {
			*pp = b->next; /* not contiguous: send what it has, start anew */
			client_wb_submit(c, wi, b);
			b = NULL;
		}
		uint64_t end = pos + n;
		if (!b) {
			if (ndirty >= DIRTY_BLOCKS_MAX) {
				struct wblock *old = wi->dirty;
				wi->dirty = old->next;
				client_wb_submit(c, wi, old);
			}
			/* the buffer starts where the write does and grows as it continues, so a
			 * small file costs a small buffer, not a stripe unit */
			uint32_t cap = gather_cap(n, (uint32_t)(bstart + su - pos));
			pthread_mutex_unlock(&wi->lock);
			client_pool_take(c, cap);
			b = calloc(1, sizeof(*b));
			uint8_t *data = b ? malloc(cap) : NULL;
			pthread_mutex_lock(&wi->lock);
			if (!data) {
				free(b);
				client_pool_give(c, cap);
				pthread_mutex_unlock(&wi->lock);
				return done ? (ssize_t)done : -ENOMEM;
			}
			if (wi->frozen) {
				free(b);
				free(data);
				client_pool_give(c, cap);
				pthread_mutex_unlock(&wi->lock);
				goto relock; /* frozen meanwhile: wait, then go on from done */
			}
			*b = (struct wblock){.wi = wi, .file_off = pos, .len = 0, .cap = cap,
					     .block = block, .data = data};
			b->next = wi->dirty;
			wi->dirty = b;
		} else if (end - b->file_off > b->cap) {
			uint32_t cap = gather_cap((uint32_t)(end - b->file_off),
						  (uint32_t)(bstart + su - b->file_off));
			if (cap < 2 * b->cap && 2 * b->cap <= bstart + su - b->file_off)
				cap = 2 * b->cap;
			uint8_t *data = realloc(b->data, cap);
			if (!data) {
				pthread_mutex_unlock(&wi->lock);
				return done ? (ssize_t)done : -ENOMEM;
			}
			client_pool_grow(c, cap - b->cap);
			b->data = data;
			b->cap = cap;
		}
		memcpy(b->data + (pos - b->file_off), src + done, n);
		if (end > b->file_off + b->len)
			b->len = (uint32_t)(end - b->file_off);
		if (b->file_off + b->len == bstart + su) {
			/* the block is complete: send it now */
			struct wblock **q = &wi->dirty;
			while (*q != b)
				q = &(*q)->next;
			*q = b->next;
			client_wb_submit(c, wi, b);
		}
		done += n;
	}
	if (off + len > wi->size)
		wi->size = off + len;
	wi->size_dirty = wi->blocks_dirty = true;
	wi->mtime_ns = loop_wall_ns();
	pthread_mutex_unlock(&wi->lock);
	return (ssize_t)len;
}

/* ---- reads ---- */

/* A reader that continues where it stopped (or its kernel read-ahead, which may arrive
 * out of order, up to a window behind) gets the next stripe units fetched in parallel.
 * A read elsewhere is remembered (ra_alt_end); a second read continuing it starts a new
 * run from there (a reader that went back to the start). A reader that only ever follows
 * another one through the same file does not take the run over from it, as its reads
 * are not consecutive. wi->lock held. */
static bool read_sequential(struct weft_client *c, struct winode *wi, uint64_t off, size_t len)
{
	uint64_t su = wi->layout.stripe_unit;
	uint64_t b = off / su, at = wi->ra_next / su;
	uint64_t back = wi->ra_window > c->readahead_units ? wi->ra_window : c->readahead_units;
	if (b <= at + 1 && b + back >= at) {
		if (off + len > wi->ra_next)
			wi->ra_next = off + len;
		wi->ra_alt_end = 0;
		return true;
	}
	if (wi->ra_alt_end && (off == wi->ra_alt_end || b == wi->ra_alt_end / su)) {
		wi->ra_next = off + len;
		wi->ra_hwm = 0;
		wi->ra_alt_end = 0;
		return true;
	}
	wi->ra_alt_end = off + len;
	return false;
}

/* Start of a read: takes wi->lock, cuts *len at the file's size, waits for this file's
 * buffered writes in the range, and notes whether the read continues a sequential run.
 * False (lock released) when there is nothing to read. */
static bool read_begin(struct weft_client *c, struct winode *wi, uint64_t off, size_t *len,
		       bool *sequential)
{
	size_t want = *len;
again:
	client_winode_lock_ready(c, wi);
	while (wi->acreate_pending) /* no layout until meta answered the create (acreate.c) */
		pthread_cond_wait(&wi->cond, &wi->lock);
	*len = want;
	if (off >= wi->size || *len == 0 || wi->acreate_err) {
		pthread_mutex_unlock(&wi->lock);
		return false;
	}
	if (*len > wi->size - off)
		*len = (size_t)(wi->size - off);
	client_wb_drain_range(c, wi, off, *len);
	if (wi->frozen) {
		pthread_mutex_unlock(&wi->lock); /* frozen while the drain waited */
		goto again;
	}
	*sequential = read_sequential(c, wi, off, *len);
	return true;
}

ssize_t weft_file_read(struct weft_file *f, void *buf, size_t len, uint64_t off)
{
	struct weft_client *c = f->c;
	struct winode *wi = f->wi;
	bool sequential;
	if (!read_begin(c, wi, off, &len, &sequential))
		return 0;
	if (client_ra_take(c, wi, off, len, buf)) {
		if (sequential)
			client_ra_ahead(c, wi, off + len);
		pthread_mutex_unlock(&wi->lock);
		return (ssize_t)len;
	}
	if (sequential)
		client_ra_ahead(c, wi, off + len);
	struct weft_layout l = wi->layout; /* a migrate's thaw may replace it meanwhile */
	pthread_mutex_unlock(&wi->lock);
	stats_add(STATS_CACHE_PAGE_MISSES, 1); /* no readahead held it: wait for the stores */
	int err = client_data_read_range(c, wi, wi->ino, &l, off, len, buf);
	return err ? err : (ssize_t)len;
}

/* What a read view points at for the zeros of a hole or past an object's end. Never
 * written: in .bss (not const, which would put a MiB of zeros in the binary), so its
 * pages are the kernel's one zero page. */
static uint8_t view_zeros[1u << 20];

/* Pins the readahead blocks holding the range and points v at their bytes (and at
 * view_zeros for a hole's); their
 * checksums are checked here, outside wi->lock, so the kernel's requests handled by
 * several threads are checked at once. Anything else (a range readahead does not hold,
 * more pieces than WEFT_VIEW_IOV, a bad checksum) takes the copying path,
 * which reads again with replica failover. */
ssize_t weft_file_read_view(struct weft_file *f, size_t len, uint64_t off,
			    struct weft_read_view *v)
{
	struct weft_client *c = f->c;
	struct winode *wi = f->wi;
	struct ra_block *bs[WEFT_VIEW_IOV];
	bool checked[WEFT_VIEW_IOV];
	v->niov = 0;
	v->npins = 0;
	v->buf = NULL;
	bool sequential;
	if (!read_begin(c, wi, off, &len, &sequential))
		return 0;
	uint64_t su = wi->layout.stripe_unit;
	bool pinned = client_ra_pin(c, wi, off, len, bs, checked, WEFT_VIEW_IOV);
	if (sequential)
		client_ra_ahead(c, wi, off + len); /* pinned blocks stay while it drops the lock */
	pthread_mutex_unlock(&wi->lock);
	if (pinned) {
		int n = (int)((off + len - 1) / su - off / su + 1), k = 0;
		signed char verdict[WEFT_VIEW_IOV] = {0};
		bool all = true;
		for (int i = 0; i < n && all; i++) {
			struct ra_block *b = bs[i];
			uint64_t bstart = b->block * su;
			uint64_t from = off > bstart ? off : bstart;
			uint64_t to = off + len < bstart + su ? off + len : bstart + su;
			/* the reply holds got bytes; past them a hole or the object's end */
			uint64_t a = from - bstart, e = to - bstart;
			uint64_t got = b->reply ? b->reply->h.bulk_len : 0, have = e < got ? e : got;
			if (to > bstart + b->len) {
				all = false; /* the file grew past what was fetched */
				break;
			}
			verdict[i] = !b->reply || checked[i] ||
				     client_data_read_verify(c, b->reply, b->obj_off, b->len) == 0 ? 1 : -1;
			all = verdict[i] > 0;
			if (all && a < have) {
				all = k < WEFT_VIEW_IOV;
				if (all)
					v->iov[k++] = (struct iovec){b->reply->bulk + a, have - a};
			}
			if (all && have < e) {
				/* zeros from one read-only region no one writes: no memset, and
				 * its pages are the kernel's zero page (view_zeros) */
				uint64_t z = e - (have > a ? have : a);
				all = k < WEFT_VIEW_IOV && z <= sizeof(view_zeros);
				if (all)
					v->iov[k++] = (struct iovec){(void *)view_zeros, z};
			}
		}
		if (all) {
			stats_add(STATS_READAHEAD_HITS, 1); /* once: a fallback counts in weft_file_read */
			v->niov = k;
			v->npins = n;
			memcpy(v->pins, bs, sizeof(bs[0]) * (size_t)n);
			return (ssize_t)len;
		}
		pthread_mutex_lock(&wi->lock);
		client_ra_unpin(c, wi, bs, n, verdict); /* only what was checked counts as checked */
		pthread_mutex_unlock(&wi->lock);
	}
	v->buf = malloc(len);
	if (!v->buf)
		return -ENOMEM;
	ssize_t got = weft_file_read(f, v->buf, len, off);
	if (got > 0) {
		v->iov[0] = (struct iovec){v->buf, (size_t)got};
		v->niov = 1;
	}
	return got;
}

void weft_read_view_release(struct weft_file *f, struct weft_read_view *v)
{
	if (v->npins) {
		struct winode *wi = f->wi;
		pthread_mutex_lock(&wi->lock);
		client_ra_unpin(f->c, wi, (struct ra_block **)v->pins, v->npins, NULL);
		pthread_mutex_unlock(&wi->lock);
		v->npins = 0;
	}
	free(v->buf);
	v->buf = NULL;
	v->niov = 0;
}

/* ---- open, flush, fsync, release ---- */

int client_winode_flush_locked(struct weft_client *c, struct winode *wi,
			       const struct weft_cred *cred, uint64_t session, bool *blocks_out)
{
	bool behind = client_close_begin(c, wi); /* a close left this flush behind */
	/* created asynchronously: the stores and meta know the file once meta answered */
	int cerr = client_acreate_settle(c, wi);
	if (cerr) {
		pthread_mutex_lock(&wi->lock);
		wi->size_dirty = wi->blocks_dirty = false;
		client_wb_discard(c, wi); /* the file is not there: its data has nowhere to go */
		pthread_mutex_unlock(&wi->lock);
		client_wbattr_flush(c, wi, true, behind); /* dropped: nothing to apply it to */
		client_wbattr_take_err(wi);
		if (behind)
			client_close_settled(c, cerr);
		return cerr;
	}
	/* the data goes to the stores and the new size to meta at the same time: both are
	 * done before this returns, which is what another client's open relies on (a close
	 * waits for it, or another client's open waits through a recall: closebehind.c) */
	client_winode_lock_ready(c, wi);
	client_wb_submit_dirty(c, wi);
	/* after writes, the report waits for the data: st_blocks is what the stores hold
	 * once it is there (their write replies, or OBJ_EXTENT: sparse_allocated) */
	bool blocks = wi->blocks_dirty;
	bool report = wi->size_dirty || blocks;
	bool fenced = session <= atomic_load(&c->fenced_upto);
	if (fenced)
		report = blocks = false; /* an evicted session's size never reaches meta */
	uint8_t mask[WEFT_WRITTEN_MAX];
	uint32_t ml = 0;
	for (uint32_t i = 0; i < WEFT_WRITTEN_MAX; i++)
		if ((mask[i] = __atomic_load_n(&wi->written[i], __ATOMIC_RELAXED) |
			       __atomic_load_n(&wi->sent[i], __ATOMIC_RELAXED)) != 0)
			ml = i + 1;
	struct weft_msg_extend m = {.cred = *cred, .ino = wi->ino, .size = wi->size,
				    .mtime_ns = wi->mtime_ns, .written = {(const char *)mask, ml},
				    .behind = behind};
	wi->size_dirty = wi->blocks_dirty = false;
	wi->flushing = true; /* the size is on its way to meta: this client's is the one */
	pthread_mutex_unlock(&wi->lock);
	struct meta_wait mw;
	if (report && !blocks) {
		struct wbuf w;
		wbuf_init(&w);
		proto_extend_encode(&w, &m);
		client_meta_start(c, WEFT_OP_EXTEND, &w, &mw);
	}
	pthread_mutex_lock(&wi->lock);
	int err = client_wb_drain(c, wi);
	pthread_mutex_unlock(&wi->lock);
	bool measured = false;
	if (report && blocks) {
		uint64_t bytes;
		if (!err && client_sparse_allocated(c, wi, mask, ml, &bytes) == 0) {
			m.has_blocks = 1;
			m.blocks = bytes / 512;
			measured = true;
		}
		struct wbuf w;
		wbuf_init(&w);
		proto_extend_encode(&w, &m);
		client_meta_start(c, WEFT_OP_EXTEND, &w, &mw);
	}
	if (report) {
		int e2 = client_meta_wait(&mw);
		if (!e2 && measured && blocks_out)
			*blocks_out = true;
		if (e2 || (blocks && !measured)) {
			pthread_mutex_lock(&wi->lock);
			wi->size_dirty = e2 || wi->size_dirty; /* report it again next time */
			wi->blocks_dirty = true;
			pthread_mutex_unlock(&wi->lock);
			if (!err)
				err = e2;
		}
	}
	/* buffered chmod/chown/utimes (wbattr.c): after the size, as they were made */
	int e3 = client_wbattr_flush(c, wi, fenced, behind);
	e3 = client_wbattr_take_err(wi) ? : e3;
	if (!err)
		err = e3;
	if (fenced)
		err = -EIO;
	pthread_mutex_lock(&wi->lock);
	wi->flushing = false;
	pthread_mutex_unlock(&wi->lock);
	if (behind)
		client_close_settled(c, err);
	return err;
}

int weft_file_flush(struct weft_file *f)
{
	pthread_mutex_lock(&f->wi->flush_lock);
	int err = client_winode_flush_locked(f->c, f->wi, &f->cred, f->session,
					     &f->blocks_reported);
	pthread_mutex_unlock(&f->wi->flush_lock);
	return err;
}

int weft_file_close(struct weft_file *f)
{
	return client_close_defer(f) ? 0 : weft_file_flush(f);
}

int weft_file_fsync(struct weft_file *f)
{
	int err = weft_file_flush(f);
	if (err)
		return err;
	err = client_data_fsync(f->c, f->wi->ino, &f->wi->layout);
	if (err)
		return err;
	/* the size the flush reported is durable at meta only after a sync there */
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino m = {.cred = f->cred, .ino = f->wi->ino};
	proto_ino_encode(&w, &m);
	return client_meta_call(f->c, WEFT_OP_FSYNC, &w, NULL, 0, NULL);
}

int weft_file_release(struct weft_file *f)
{
	struct weft_client *c = f->c;
	pthread_mutex_lock(&c->inodes_lock);
	bool last = f->wi->opens <= 1;
	pthread_mutex_unlock(&c->inodes_lock);
	/* the last handle: meta's write-back claim ends with this release, so nothing may
	 * be buffered for the file after the flush below (a chmod by path arriving between
	 * it and the release would stay here unseen by others) */
	if (last)
		client_wbattr_end(c, f->wi);
	int err = weft_file_flush(f);
	/* not waited for: meta only drops a count in memory, and the request goes on the
	 * same connection as (so before) any later request about the file. A release lost
	 * with the connection to a restarting meta is not needed: the renewed session
	 * reclaims only the opens still counted here. */
	pthread_rwlock_rdlock(&c->sess_lock);
	/* else the open went with it, or (an asynchronous create meta refused) never was */
	if (f->session > atomic_load(&c->fenced_upto) && !f->wi->acreate_err) {
		pthread_mutex_lock(&c->inodes_lock);
		f->wi->opens--;
		pthread_mutex_unlock(&c->inodes_lock);
		struct wbuf w;
		wbuf_init(&w);
		struct weft_msg_release m = {.ino = f->wi->ino, .handle = 0,
					     .session = c->session};
		proto_release_encode(&w, &m);
		client_meta_post(c, WEFT_OP_RELEASE, &w);
	}
	pthread_rwlock_unlock(&c->sess_lock);
	if (weft_file_writable(f)) {
		pthread_mutex_lock(&f->wi->lock);
		f->wi->writers--;
		pthread_mutex_unlock(&f->wi->lock);
	}
	client_winode_put(f->c, f->wi);
	free(f);
	return err;
}

bool weft_file_blocks_changed(struct weft_file *f)
{
	bool r = f->blocks_reported;
	f->blocks_reported = false;
	return r;
}

uint64_t weft_file_size(struct weft_file *f)
{
	pthread_mutex_lock(&f->wi->lock);
	uint64_t s = f->wi->size;
	pthread_mutex_unlock(&f->wi->lock);
	return s;
}

/* Encodes an OPEN or CREATE_OPEN request (msg) for session sid. */
typedef void (*open_enc_fn)(struct wbuf *w, void *msg, uint64_t sid);

#define OPEN_MIGRATING_WAIT_MS 50

static void enc_open(struct wbuf *w, void *msg, uint64_t sid)
{
	struct weft_msg_open *m = msg;
	m->session = sid;
	proto_open_encode(w, m);
}

static void enc_create_open(struct wbuf *w, void *msg, uint64_t sid)
{
	struct weft_msg_create_open *m = msg;
	m->session = sid;
	proto_create_open_encode(w, m);
}

int client_open_rpc(struct weft_client *c, uint16_t op, void *msg, struct weft_msg_opened *o,
		    uint8_t written[WEFT_WRITTEN_MAX], uint32_t *wlen, uint64_t *sidp)
{
	open_enc_fn enc = op == WEFT_OP_OPEN ? enc_open : enc_create_open;
	struct frame *fr;
	int err;
	uint64_t sid = 0;
	for (int attempt = 0;; attempt++) {
		pthread_rwlock_rdlock(&c->sess_lock);
		sid = c->session;
		struct wbuf w;
		wbuf_init(&w);
		enc(&w, msg, sid);
		err = client_meta_call(c, op, &w, NULL, 0, &fr);
		if (err == -WEFT_EMIGRATING) {
			/* the file's layout is being switched (migrate.h at meta): ask again
			 * once it is done; never the application's error */
			pthread_rwlock_unlock(&c->sess_lock);
			frame_free(fr);
			usleep(OPEN_MIGRATING_WAIT_MS * 1000);
			attempt--;
			continue;
		}
		if (err == -ENOENT && attempt == 0) {
			pthread_rwlock_unlock(&c->sess_lock);
			if (client_session_lost(c, sid) && client_session_renew(c, sid) == 0) {
				frame_free(fr);
				continue;
			}
			pthread_rwlock_rdlock(&c->sess_lock);
		}
		break;
	}
	if (!err && proto_opened_decode(fr->payload, fr->h.payload_len, o, NULL) < 0)
		err = -EIO;
	/* o->written borrows from the frame: keep a copy */
	*wlen = err ? 0 : o->written.len;
	if (*wlen)
		memcpy(written, o->written.p, *wlen);
	o->written = (struct weft_str){NULL, 0};
	frame_free(fr);
	if (!err && o->layout.stripe_unit == 0)
		o->layout.stripe_unit = WEFT_STRIPE_UNIT_DEFAULT;
	if (err)
		pthread_rwlock_unlock(&c->sess_lock);
	*sidp = sid;
	return err;
}

/* Sends OPEN or CREATE_OPEN (msg) and makes the open file from the OPENED reply. The
 * open is counted at meta in our session and in the winode (sess_lock held for reading
 * across both, so that a session renewal reclaims exactly what meta counted). ENOENT
 * from a session meta no longer knows (a restart): renew and retry. */
static int open_call(struct weft_client *c, const struct weft_cred *cr, uint16_t op,
		     void *msg, int flags, struct weft_file **out, struct weft_msg_opened *o)
{
	uint64_t gen = client_recall_gen(c), sid = 0;
	uint64_t agen = atomic_load(&c->attr_gen), dgen = atomic_load(&c->dir_gen);
	uint8_t written[WEFT_WRITTEN_MAX];
	uint32_t wlen = 0;
	int err = client_open_rpc(c, op, msg, o, written, &wlen, &sid);
	if (err)
		return err;
	client_lease_note(c, o->attr.ino, o->lease, gen);
	client_dirattr_note(c, &o->pattr, gen, agen, dgen); /* CREATE_OPEN's parent */
	if (o->created)
		atomic_fetch_add(&c->create_gen, 1); /* answered: a listing fetched since has it */
	struct weft_file *f = NULL;
	if (!(f = calloc(1, sizeof(*f))))
		err = -ENOMEM;
	if (!err && !(f->wi = client_winode_get(c, &o->attr, &o->layout)))
		err = -ENOMEM;
	if (err) {
		pthread_rwlock_unlock(&c->sess_lock);
		free(f);
		/* an open meta counted but we cannot use: give it back */
		if (err == -ENOMEM) {
			struct wbuf w;
			wbuf_init(&w);
			struct weft_msg_release m = {.ino = o->attr.ino, .session = c->session};
			proto_release_encode(&w, &m);
			client_meta_post(c, WEFT_OP_RELEASE, &w);
		}
		return err;
	}
	client_cap_note(f->wi, o->cap);
	pthread_mutex_lock(&c->inodes_lock);
	f->wi->opens++;
	pthread_mutex_unlock(&c->inodes_lock);
	pthread_rwlock_unlock(&c->sess_lock);
	f->c = c;
	f->cred = *cr;
	f->flags = flags;
	f->session = sid;
	pthread_mutex_lock(&f->wi->lock);
	if ((flags & O_ACCMODE) != O_RDONLY)
		f->wi->writers++;
	if (o->layout.gen > f->wi->layout.gen)
		f->wi->frozen = true; /* migrated since it was opened here: the next I/O
				       * takes the new layout */
	pthread_mutex_unlock(&f->wi->lock);
	for (uint32_t i = 0; i < wlen; i++)
		__atomic_fetch_or(&f->wi->written[i], written[i], __ATOMIC_RELAXED);
	*out = f;
	return 0;
}

int weft_create(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name, uint32_t mode, int flags, bool excl, struct weft_file **out,
		struct weft_attr *attr)
{
	flags &= ~(O_TRUNC | O_CREAT | O_EXCL);
	/* a claimed directory's new name: answered here, sent behind (acreate.c) */
	int rc = c->acreate ? client_acreate_try(c, cr, parent, name, mode, flags, out, attr) : 1;
	/* an existing directory: made complete here if it pays (tar over a tree) */
	if (rc == 1 && client_acreate_fill(c, cr, parent))
		rc = client_acreate_try(c, cr, parent, name, mode, flags, out, attr);
	if (rc <= 0)
		return rc;
	struct weft_msg_create_open m = {.cred = *cr, .parent = parent,
					 .name = proto_str_of(name, strlen(name)),
					 .mode = (mode & 07777) | S_IFREG,
					 .flags = (excl ? WEFT_CREATE_EXCL : 0) |
						  (c->wb_attrs ? WEFT_CREATE_WB : 0),
					 .open_flags = (uint32_t)flags};
	struct weft_msg_opened o;
	uint64_t gen = client_recall_gen(c);
	client_cdir_begin(c, parent); /* the name is kept if parent is complete (lease.c) */
	client_emptied_forget(c, parent);
	/* what this client sent in parent comes first (an unlink of the name on its way
	 * would otherwise be met, and the old file opened), not every job sent elsewhere */
	client_acreate_dir_scope(c, parent);
	int err = open_call(c, cr, WEFT_OP_CREATE_OPEN, &m, flags, out, &o);
	client_acreate_scope_end();
	/* an existing file's open in a directory thought complete would be a name it did
	 * not know: not complete after all */
	client_cdir_end(c, parent, name, 2, err ? err : o.created || excl ? 0 : -EEXIST,
			err ? 0 : o.dir_lease, gen);
	if (err)
		return err;
	if (!o.created)
		client_pf_forget(c, o.attr.ino); /* an existing file, opened to be written */
	/* the open holds the winode: one lookup per create (open_call's) */
	if (o.created) {
		client_winode_mark_nocap(c, (*out)->wi, true); /* a new inode has no xattrs */
		client_wbattr_created(c, (*out)->wi, &o.attr);
	}
	client_winode_fix_size((*out)->wi, &o.attr);
	if (attr)
		*attr = o.attr;
	return 0;
}

int weft_file_open(struct weft_client *c, const struct weft_cred *cr, uint64_t ino, int flags,
		   struct weft_file **out, struct weft_attr *attr)
{
	/* a listed file opened for reading under its lease: answered here (prefetch.c) */
	int rc = client_open_local(c, cr, ino, flags, out, attr);
	if (rc <= 0)
		return rc;
	client_pf_unhold_ino(c, ino);
	if ((flags & O_ACCMODE) != O_RDONLY)
		client_pf_forget(c, ino); /* it will change */
	client_settle_ino(c, ino); /* meta checks the open by what this client showed */
	struct weft_msg_open m = {.cred = *cr, .ino = ino, .flags = (uint32_t)flags};
	struct weft_msg_opened o;
	struct weft_file *f;
	/* a small file's data is read with the OPEN, not after it (prefetch.c) */
	struct client_pf pf;
	struct winode *pwi = client_pf_start(c, ino, flags, &pf);
	int err = open_call(c, cr, WEFT_OP_OPEN, &m, flags, &f, &o);
	if (pwi)
		client_pf_finish(c, pwi, &pf, err, &o.attr, &o.layout);
	if (err)
		return err;
	if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && S_ISREG(o.attr.mode)) {
		struct weft_attr in = {.size = 0};
		err = weft_setattr(c, cr, ino, WEFT_SET_SIZE, &in, &o.attr);
		if (err) {
			weft_file_release(f);
			return err;
		}
	}
	client_fix_size(c, &o.attr);
	if (attr)
		*attr = o.attr;
	*out = f;
	return 0;
}

bool weft_open_for_write(struct weft_client *c, uint64_t ino)
{
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return false;
	pthread_mutex_lock(&wi->lock);
	bool r = wi->writers > 0;
	pthread_mutex_unlock(&wi->lock);
	client_winode_put(c, wi);
	return r;
}

bool weft_file_writable(struct weft_file *f)
{
	return (f->flags & O_ACCMODE) != O_RDONLY;
}

