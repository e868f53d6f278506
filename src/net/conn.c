/* Connections: framing, send queue, calls in flight. The handshake is in handshake.c.
 * See conn.h. */
#include "net/conn.h"
#include "net/conn_int.h"
#include "net/handshake.h"
#include "net/stats.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/log.h"
#include "weft/err.h"

#define RX_BUF_SIZE   (256u * 1024)
#define RX_BULKY      (64u * 1024) /* a bulk this large is read straight into its frame */
#define RX_BULKY_READ (4u * 1024)  /* what is read into rx after one (header, payload) */
#define QUEUE_HIGH    (64u * 1024 * 1024) /* stop reading requests above this */
#define QUEUE_LOW     (16u * 1024 * 1024) /* resume below this */
#define IOV_BATCH     64

struct send_entry {
	struct send_entry *next;
	uint8_t hdr[WEFT_HDR_SIZE];
	uint8_t tag[WIRE_TAG_LEN];  /* after the handshake (wire.h) */
	uint8_t *payload;          /* owned: the payload, or at privacy the sealed body */
	conn_release_fn release;
	void *release_arg;
	size_t bytes;              /* left to send */
	int niov, iov_idx;
	struct iovec iov[];        /* hdr, payload, bulk..., tag; or hdr, sealed body, tag */
};

struct call {
	struct call *next;
	uint64_t reqid;
	conn_call_fn done;
	void *arg;
	uint16_t op;      /* for the call's counters (stats.h) */
	uint64_t t0_ns;
	uint64_t bytes_out;
};

/* Counts a finished call: its reply (or the local error that ended it). */
static void call_count(const struct call *k, int status, const struct frame *reply)
{
	uint64_t in = reply ? (uint64_t)reply->h.payload_len + reply->h.bulk_len : 0;
	stats_op(STATS_CALLED, k->op, status, stats_now_ns() - k->t0_ns, in, k->bytes_out);
}

static uint64_t body_len(const struct wbuf *payload, const struct iovec *bulk, int nbulk)
{
	uint64_t n = payload ? payload->len : 0;
	for (int i = 0; i < nbulk; i++)
		n += bulk[i].iov_len;
	return n;
}

/* ---- frames ---- */

void frame_free(struct frame *f)
{
	free(f);
}

/* A large bulk starts on a page boundary, so that a store can hand it to an O_DIRECT
 * write as it is (the kernel wants aligned user buffers); the frame, a gap and the
 * payload come first in the same allocation. Small frames stay packed. Either way the
 * payload, the bulk and the tag (wire.h) follow each other, so that a body is read, checked
 * and decrypted in place as one piece. */
#define BULK_ALIGN 4096u

static struct frame *frame_alloc(const struct weft_hdr *h)
{
	size_t head = sizeof(struct frame) + h->payload_len;
	struct frame *f;
	if (h->bulk_len >= BULK_ALIGN) {
		head = (head + BULK_ALIGN - 1) & ~(size_t)(BULK_ALIGN - 1);
		size_t tail = h->bulk_len + WIRE_TAG_LEN;
		f = aligned_alloc(BULK_ALIGN, head + ((tail + BULK_ALIGN - 1) & ~(size_t)(BULK_ALIGN - 1)));
	} else {
		f = malloc(head + h->bulk_len + WIRE_TAG_LEN + 1);
	}
	if (!f)
		return NULL;
	f->h = *h;
	f->rx_ns = 0;
	f->sealed = false;
	f->bulk = (uint8_t *)f + head;
	f->payload = f->bulk - h->payload_len;
	return f;
}

/* ---- lifetime ---- */

void conn_get(struct conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void conn_put(struct conn *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	close(c->watch.fd);
	free(c->rx);
	free(c->cur);
	wire_clear(&c->wire);
	pthread_mutex_destroy(&c->seal_lock);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->plock);
	pthread_cond_destroy(&c->cond);
	free(c);
}

void *conn_ctx(const struct conn *c) { return c->ctx; }
void *conn_owner(const struct conn *c) { return c->owner; }
void conn_set_ctx(struct conn *c, void *ctx) { c->ctx = ctx; }
const char *conn_peer(const struct conn *c) { return c->peer; }
const char *conn_peer_name(const struct conn *c) { return c->peer_name; }
uint8_t conn_peer_role(const struct conn *c) { return c->peer_role; }
uint32_t conn_peer_serial(const struct conn *c) { return c->peer_serial; }

int conn_wire_level(const struct conn *c, bool *aes)
{
	if (aes)
		*aes = c->wire.aes;
	return c->wire.level;
}

void conn_wrap(const struct conn *c, const char *purpose, uint8_t inout[WEFT_KEY_LEN])
{
	auth_wrap(c->proof, purpose, c->nonce_c, c->nonce_s, inout);
}
uint64_t conn_age_ms(const struct conn *c) { return loop_now_ms() - c->born_ms; }

bool conn_is_ready(const struct conn *c)
{
	return __atomic_load_n(&c->ready, __ATOMIC_ACQUIRE);
}

bool conn_is_closed(const struct conn *c)
{
	return __atomic_load_n(&c->closed, __ATOMIC_ACQUIRE);
}

size_t conn_queued(const struct conn *c)
{
	return __atomic_load_n(&c->queued, __ATOMIC_RELAXED);
}

/* ---- send queue ---- */

/* Recomputes the epoll mask; c->lock held. */
static void update_events(struct conn *c)
{
	if (c->closed)
		return;
	uint32_t ev = (c->read_paused ? 0 : EPOLLIN) | (c->q_head ? EPOLLOUT : 0);
	if (ev != c->watch.events)
		loop_watch_mod(c->loop, &c->watch, ev);
}

static void release_entries(struct send_entry *e)
{
	while (e) {
		struct send_entry *next = e->next;
		if (e->release)
			e->release(e->release_arg);
		free(e->payload);
		free(e);
		e = next;
	}
}

static void close_task(void *arg);

/* Marks the connection closed and schedules teardown on the loop; c->lock held. */
static void mark_closed(struct conn *c, int err)
{
	if (!c->closed) {
		c->closed = true;
		c->close_err = err;
		pthread_cond_broadcast(&c->cond);
	}
	if (!c->close_posted) {
		c->close_posted = true;
		conn_get(c);
		if (loop_post(c->loop, close_task, c) < 0)
			conn_put(c); /* out of memory: the loop's reference leaks the conn */
	}
}

/* Writes as much of the queue as the socket takes; c->lock held. Entries fully sent are
 * moved to *done for release outside the lock. */
static void flush_locked(struct conn *c, struct send_entry **done)
{
	while (c->q_head && !c->closed) {
		struct iovec iov[IOV_BATCH];
		int n = 0;
		for (struct send_entry *e = c->q_head; e && n < IOV_BATCH; e = e->next)
			for (int i = e->iov_idx; i < e->niov && n < IOV_BATCH; i++)
				iov[n++] = e->iov[i];
		ssize_t w = writev(c->watch.fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				mark_closed(c, -errno);
			break;
		}
		c->queued -= (size_t)w;
		size_t left = (size_t)w;
		while (left && c->q_head) {
			struct send_entry *e = c->q_head;
			struct iovec *v = &e->iov[e->iov_idx];
			if (left < v->iov_len) {
				v->iov_base = (uint8_t *)v->iov_base + left;
				v->iov_len -= left;
				e->bytes -= left;
				left = 0;
				break;
			}
			left -= v->iov_len;
			e->bytes -= v->iov_len;
			e->iov_idx++;
			if (e->iov_idx == e->niov) {
				c->q_head = e->next;
				if (!c->q_head)
					c->q_tail = NULL;
				e->next = *done;
				*done = e;
			}
		}
		/* a completed entry may still head the queue if it had zero-length iovecs */
		while (c->q_head && c->q_head->bytes == 0) {
			struct send_entry *e = c->q_head;
			c->q_head = e->next;
			if (!c->q_head)
				c->q_tail = NULL;
			e->next = *done;
			*done = e;
		}
	}
	if (c->queued <= QUEUE_LOW)
		pthread_cond_broadcast(&c->cond);
	if (!c->q_head && c->close_after_flush)
		mark_closed(c, -WEFT_EAUTH);
	if (c->read_paused && c->queued <= QUEUE_LOW)
		c->read_paused = false;
	update_events(c);
}

/* Queues one frame. payload is taken; on failure release is called. */
static int send_frame(struct conn *c, const struct weft_hdr *h, struct wbuf *payload,
		      const struct iovec *bulk, int nbulk, conn_release_fn release, void *arg)
{
	struct send_entry *e = calloc(1, sizeof(*e) + sizeof(struct iovec) * (size_t)(3 + nbulk));
	if (!e) {
		if (payload)
			wbuf_free(payload);
		if (release)
			release(arg);
		return -ENOMEM;
	}
	proto_hdr_encode(e->hdr, h);
	e->iov[e->niov++] = (struct iovec){e->hdr, WEFT_HDR_SIZE};
	if (payload && payload->len) {
		e->payload = payload->data;
		e->iov[e->niov++] = (struct iovec){payload->data, payload->len};
		wbuf_init(payload);
	} else if (payload) {
		wbuf_free(payload);
	}
	for (int i = 0; i < nbulk; i++)
		if (bulk[i].iov_len)
			e->iov[e->niov++] = bulk[i];
	e->bytes = WEFT_HDR_SIZE + h->payload_len + h->bulk_len;
	e->release = release;
	e->release_arg = arg;

	/* after the handshake (read once: wire.level is set before ready, and only the loop
	 * thread sends before ready) */
	uint8_t level = c->wire.level;
	uint8_t *sealed = NULL;
	if (level == WIRE_PRIVACY && e->niov > 1) {
		/* the body gets a buffer of its own, encrypted into below */
		sealed = malloc(e->bytes - WEFT_HDR_SIZE);
		if (!sealed) {
			release_entries(e);
			return -ENOMEM;
		}
	}
	if (level) {
		pthread_mutex_lock(&c->seal_lock);
		if (level == WIRE_INTEGRITY)
			wire_mac(&c->wire, e->iov, e->niov, e->tag);
		else
			wire_seal(&c->wire, e->hdr, WEFT_HDR_SIZE, e->iov + 1, e->niov - 1,
				  sealed ? sealed : e->tag, e->tag);
	}
	if (sealed) { /* the caller's buffers are free now */
		if (e->release)
			e->release(e->release_arg);
		e->release = NULL;
		free(e->payload);
		e->payload = sealed;
		e->iov[1] = (struct iovec){sealed, e->bytes - WEFT_HDR_SIZE};
		e->niov = 2;
	}
	if (level) {
		e->iov[e->niov++] = (struct iovec){e->tag, WIRE_TAG_LEN};
		e->bytes += WIRE_TAG_LEN;
	}

	struct send_entry *done = NULL;
	pthread_mutex_lock(&c->lock);
	if (level)
		pthread_mutex_unlock(&c->seal_lock);
	if (c->closed) {
		pthread_mutex_unlock(&c->lock);
		release_entries(e);
		return -ENOTCONN;
	}
	if (c->q_tail)
		c->q_tail->next = e;
	else
		c->q_head = e;
	c->q_tail = e;
	c->queued += e->bytes;
	/* the sender writes what the socket takes now, from its own thread */
	flush_locked(c, &done);
	if (c->queued > QUEUE_HIGH && !c->read_paused) {
		c->read_paused = true;
		update_events(c);
	}
	pthread_mutex_unlock(&c->lock);
	release_entries(done);
	return 0;
}

static int build_hdr(struct weft_hdr *h, uint16_t op, uint32_t flags, int status, uint64_t reqid,
		     const struct wbuf *payload, const struct iovec *bulk, int nbulk)
{
	size_t bl = 0;
	for (int i = 0; i < nbulk; i++)
		bl += bulk[i].iov_len;
	size_t pl = payload ? payload->len : 0;
	if (payload && payload->err)
		return payload->err;
	if (pl > WEFT_PAYLOAD_MAX || bl > WEFT_BULK_MAX)
		return -EMSGSIZE;
	*h = (struct weft_hdr){.magic = WEFT_MAGIC, .version = WEFT_PROTO_MAX, .opcode = op,
			       .flags = flags, .status = status, .reqid = reqid,
			       .payload_len = (uint32_t)pl, .bulk_len = (uint32_t)bl};
	return 0;
}

int conn_reply(struct conn *c, const struct frame *req, int status, struct wbuf *payload,
	       const struct iovec *bulk, int nbulk, conn_release_fn release, void *arg)
{
	if (req->rx_ns)
		stats_op(STATS_SERVED, req->h.opcode, status, stats_now_ns() - req->rx_ns,
			 (uint64_t)req->h.payload_len + req->h.bulk_len, body_len(payload, bulk, nbulk));
	struct weft_hdr h;
	int err = build_hdr(&h, req->h.opcode, WEFT_F_REPLY, status, req->h.reqid, payload, bulk, nbulk);
	if (err) {
		if (payload)
			wbuf_free(payload);
		if (release)
			release(arg);
		return err;
	}
	return send_frame(c, &h, payload, bulk, nbulk, release, arg);
}

int conn_reply_error(struct conn *c, const struct frame *req, int status, uint32_t target,
		     const char *fmt, ...)
{
	char detail[256] = "";
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(detail, sizeof(detail), fmt, ap);
		va_end(ap);
	}
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_error m = {.target = target, .detail = proto_str_of(detail, strlen(detail))};
	proto_error_encode(&w, &m);
	return conn_reply(c, req, status, &w, NULL, 0, NULL, NULL);
}

uint32_t conn_error_detail(const struct frame *reply, char *buf, size_t cap)
{
	struct weft_msg_error m;
	if (cap)
		buf[0] = '\0';
	if (!reply || reply->h.payload_len == 0 ||
	    proto_error_decode(reply->payload, reply->h.payload_len, &m, NULL) < 0)
		return 0;
	if (cap)
		snprintf(buf, cap, "%.*s", (int)m.detail.len, m.detail.p);
	return m.target;
}

/* ---- calls ---- */

static struct call *pending_take(struct conn *c, uint64_t reqid)
{
	struct call **pp = &c->pending[reqid % PENDING_HASH];
	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->reqid == reqid) {
			struct call *k = *pp;
			*pp = k->next;
			return k;
		}
	}
	return NULL;
}

static int call_start(struct conn *c, uint16_t op, uint32_t flags, struct wbuf *payload,
		      const struct iovec *bulk, int nbulk, conn_release_fn release, void *rarg,
		      conn_call_fn done, void *arg, uint64_t *reqid_out)
{
	struct call *k = NULL;
	if (done) {
		k = malloc(sizeof(*k));
		if (!k) {
			if (payload)
				wbuf_free(payload);
			if (release)
				release(rarg);
			return -ENOMEM;
		}
		k->op = op;
		k->t0_ns = stats_now_ns();
		k->bytes_out = body_len(payload, bulk, nbulk);
	}
	pthread_mutex_lock(&c->plock);
	uint64_t reqid = ++c->next_reqid;
	if (k) {
		k->reqid = reqid;
		k->done = done;
		k->arg = arg;
		k->next = c->pending[reqid % PENDING_HASH];
		c->pending[reqid % PENDING_HASH] = k;
	}
	pthread_mutex_unlock(&c->plock);
	if (reqid_out)
		*reqid_out = reqid;

	struct weft_hdr h;
	int err = build_hdr(&h, op, flags, 0, reqid, payload, bulk, nbulk);
	if (err) {
		if (payload)
			wbuf_free(payload);
		if (release)
			release(rarg);
	} else {
		err = send_frame(c, &h, payload, bulk, nbulk, release, rarg);
	}
	if (err && k) {
		pthread_mutex_lock(&c->plock);
		struct call *mine = pending_take(c, reqid);
		pthread_mutex_unlock(&c->plock);
		if (!mine)
			return 0; /* the close path already took it and will call done */
		free(mine);
	}
	return err;
}

int conn_call(struct conn *c, uint16_t op, struct wbuf *payload, const struct iovec *bulk,
	      int nbulk, conn_release_fn release, void *release_arg, conn_call_fn done, void *arg)
{
	if (!conn_is_ready(c)) {
		if (payload)
			wbuf_free(payload);
		if (release)
			release(release_arg);
		return -ENOTCONN;
	}
	return call_start(c, op, 0, payload, bulk, nbulk, release, release_arg, done, arg, NULL);
}

int conn_send_oneway(struct conn *c, uint16_t op, struct wbuf *payload)
{
	return call_start(c, op, WEFT_F_ONEWAY, payload, NULL, 0, NULL, NULL, NULL, NULL, NULL);
}

/* The CLOCK_REALTIME moment ms from now, for pthread_cond_timedwait. */
static struct timespec deadline_after(int ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (long)(ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	return dl;
}

struct sync_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int status;
	struct frame *reply;
};

static void sync_done(void *arg, int status, struct frame *reply)
{
	struct sync_wait *s = arg;
	pthread_mutex_lock(&s->lock);
	s->status = status;
	s->reply = reply;
	s->done = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

int conn_call_sync(struct conn *c, uint16_t op, struct wbuf *payload, const struct iovec *bulk,
		   int nbulk, int timeout_ms, struct frame **reply)
{
	struct sync_wait s = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	uint64_t reqid;
	if (reply)
		*reply = NULL;
	if (!conn_is_ready(c)) {
		if (payload)
			wbuf_free(payload);
		return -ENOTCONN;
	}
	int err = call_start(c, op, 0, payload, bulk, nbulk, NULL, NULL, sync_done, &s, &reqid);
	if (err)
		return err;
	struct timespec dl = deadline_after(timeout_ms > 0 ? timeout_ms : 0);
	pthread_mutex_lock(&s.lock);
	while (!s.done) {
		if (timeout_ms <= 0) {
			pthread_cond_wait(&s.cond, &s.lock);
			continue;
		}
		if (pthread_cond_timedwait(&s.cond, &s.lock, &dl) == ETIMEDOUT && !s.done) {
			/* whoever removes the pending entry completes the call */
			pthread_mutex_lock(&c->plock);
			struct call *mine = pending_take(c, reqid);
			pthread_mutex_unlock(&c->plock);
			if (mine) {
				call_count(mine, -ETIMEDOUT, NULL);
				free(mine);
				s.done = true;
				s.status = -ETIMEDOUT;
				break;
			}
			timeout_ms = 0; /* the reply is being delivered: wait for it */
		}
	}
	pthread_mutex_unlock(&s.lock);
	if (reply)
		*reply = s.reply;
	else
		frame_free(s.reply);
	return s.status;
}

int conn_wait_queue(struct conn *c, size_t bytes)
{
	pthread_mutex_lock(&c->lock);
	while (!c->closed && c->queued > bytes)
		pthread_cond_wait(&c->cond, &c->lock);
	int err = c->closed ? -ENOTCONN : 0;
	pthread_mutex_unlock(&c->lock);
	return err;
}

int conn_wait_ready(struct conn *c, int timeout_ms)
{
	struct timespec dl = deadline_after(timeout_ms);
	int err = 0;
	pthread_mutex_lock(&c->lock);
	while (!c->ready && !c->closed && err == 0)
		err = pthread_cond_timedwait(&c->cond, &c->lock, &dl);
	int rc = c->ready ? 0 : c->closed ? (c->close_err ? c->close_err : -ECONNRESET) : -ETIMEDOUT;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- close ---- */

static void close_task(void *arg)
{
	struct conn *c = arg;
	pthread_mutex_lock(&c->lock);
	struct send_entry *q = c->q_head;
	c->q_head = c->q_tail = NULL;
	c->queued = 0;
	int err = c->close_err ? c->close_err : -ECONNRESET;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);

	struct call *calls = NULL;
	pthread_mutex_lock(&c->plock);
	for (int i = 0; i < PENDING_HASH; i++) {
		while (c->pending[i]) {
			struct call *k = c->pending[i];
			c->pending[i] = k->next;
			k->next = calls;
			calls = k;
		}
	}
	pthread_mutex_unlock(&c->plock);

	loop_watch_del(c->loop, &c->watch);
	shutdown(c->watch.fd, SHUT_RDWR);
	release_entries(q);
	while (calls) {
		struct call *k = calls;
		calls = k->next;
		call_count(k, err == -WEFT_EAUTH ? err : -ENOTCONN, NULL);
		k->done(k->arg, err == -WEFT_EAUTH ? err : -ENOTCONN, NULL);
		free(k);
	}
	if (c->ops && c->ops->on_close)
		c->ops->on_close(c, err);
	conn_put(c); /* the reference taken by mark_closed */
	conn_put(c); /* the loop's reference */
}

void conn_close(struct conn *c, int err)
{
	pthread_mutex_lock(&c->lock);
	mark_closed(c, err);
	pthread_mutex_unlock(&c->lock);
}

/* ---- for the handshake (handshake.c) ---- */

void conn_send_handshake(struct conn *c, uint16_t op, uint32_t flags, int status, uint64_t reqid,
			 struct wbuf *w)
{
	struct weft_hdr h;
	if (build_hdr(&h, op, flags, status, reqid, w, NULL, 0) == 0)
		send_frame(c, &h, w, NULL, 0, NULL, NULL);
	else
		wbuf_free(w);
}

void conn_become_ready(struct conn *c)
{
	c->hs = HS_READY;
	pthread_mutex_lock(&c->lock);
	__atomic_store_n(&c->ready, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (c->ops && c->ops->on_ready)
		c->ops->on_ready(c);
}

/* ---- receive ---- */

static void deliver(struct conn *c, struct frame *f)
{
	if (c->hs != HS_READY) {
		handshake_frame(c, f);
		return;
	}
	if (f->h.flags & WEFT_F_REPLY) {
		pthread_mutex_lock(&c->plock);
		struct call *k = pending_take(c, f->h.reqid);
		pthread_mutex_unlock(&c->plock);
		if (!k) {
			log_debug("%s: reply to unknown request %llu (timed out?)", c->peer,
				  (unsigned long long)f->h.reqid);
			frame_free(f);
			return;
		}
		call_count(k, f->h.status, f);
		k->done(k->arg, f->h.status, f);
		free(k);
		return;
	}
	f->rx_ns = stats_now_ns();
	if (c->ops && c->ops->on_request)
		c->ops->on_request(c, f);
	else
		frame_free(f);
}

static void protocol_error(struct conn *c, const char *why)
{
	unsigned dropped = 0;
	if (c->hs == HS_READY || handshake_log_ok(&dropped))
		log_warn("closing connection %s: %s%s", c->peer, why,
			 dropped ? " (and more from unauthenticated peers not logged)" : "");
	conn_close(c, -WEFT_EPROTO);
}

/* Lines about frames that fail their check: at most 10 per 10 s per process. */
static struct log_limit tag_lines = LOG_LIMIT_INIT;

/* A whole frame (and its tag) arrived: checks it and hands it on; false if the
 * connection is closed for it. */
static bool frame_done(struct conn *c, struct frame *f)
{
	if (c->hs == HS_READY && c->wire.level) {
		uint64_t n = c->wire.rx.ctr;
		size_t len = (size_t)f->h.payload_len + f->h.bulk_len;
		if (wire_open(&c->wire, c->cur_hdr, WEFT_HDR_SIZE, f->payload, len,
			      f->payload + len) != 0) {
			unsigned dropped = 0;
			if (log_limit_ok(&tag_lines, 10, 10000, &dropped))
				log_error("frame %llu from %s (%s \"%s\") fails its integrity check: "
					  "closing the connection%s", (unsigned long long)n, c->peer,
					  auth_role_name(c->peer_role) ? auth_role_name(c->peer_role) : "?",
					  c->peer_name, dropped ? " (and more not logged)" : "");
			frame_free(f);
			conn_close(c, -WEFT_EPROTO);
			return false;
		}
		f->sealed = true;
	}
	deliver(c, f);
	return true;
}

/* Parses whole frames out of the receive buffer; returns false if the connection died. */
static bool parse_rx(struct conn *c)
{
	while (!conn_is_closed(c)) {
		size_t avail = c->rx_len - c->rx_off;
		if (avail < WEFT_HDR_SIZE)
			break;
		struct weft_hdr h;
		const char *why;
		if (proto_hdr_decode(c->rx + c->rx_off, &h, &why) < 0) {
			protocol_error(c, why);
			return false;
		}
		/* Before the peer proved it holds the key it gets no bulk and no large payload:
		 * nothing is allocated on the word of an unauthenticated header. */
		if (c->hs != HS_READY &&
		    (h.bulk_len || h.payload_len > HS_PAYLOAD_MAX ||
		     (h.opcode != WEFT_OP_HELLO && h.opcode != WEFT_OP_AUTH))) {
			protocol_error(c, "handshake frame with bulk, a large payload or another "
					  "opcode than HELLO/AUTH");
			return false;
		}
		struct frame *f = frame_alloc(&h);
		if (!f) {
			protocol_error(c, "out of memory for frame");
			return false;
		}
		size_t body = (size_t)h.payload_len + h.bulk_len +
			      (c->hs == HS_READY && c->wire.level ? WIRE_TAG_LEN : 0);
		memcpy(c->cur_hdr, c->rx + c->rx_off, WEFT_HDR_SIZE);
		c->rx_bulky = h.bulk_len >= RX_BULKY;
		size_t have = avail - WEFT_HDR_SIZE;
		size_t take = have < body ? have : body;
		memcpy(f->payload, c->rx + c->rx_off + WEFT_HDR_SIZE, take);
		c->rx_off += WEFT_HDR_SIZE + take;
		if (take < body) {
			c->cur = f;
			c->cur_got = take;
			c->cur_need = body;
			break;
		}
		if (!frame_done(c, f))
			return false;
	}
	if (c->rx_off == c->rx_len)
		c->rx_off = c->rx_len = 0;
	else if (c->rx_off > RX_BUF_SIZE / 2) {
		memmove(c->rx, c->rx + c->rx_off, c->rx_len - c->rx_off);
		c->rx_len -= c->rx_off;
		c->rx_off = 0;
	}
	return !conn_is_closed(c);
}

static void on_readable(struct conn *c)
{
	for (int rounds = 0; rounds < 16 && !conn_is_closed(c); rounds++) {
		ssize_t r;
		if (c->cur) {
			/* body of a large frame: read straight into it */
			r = read(c->watch.fd, c->cur->payload + c->cur_got, c->cur_need - c->cur_got);
			if (r > 0) {
				c->cur_got += (size_t)r;
				if (c->cur_got == c->cur_need) {
					struct frame *f = c->cur;
					c->cur = NULL;
					if (!frame_done(c, f))
						return;
				}
				continue;
			}
		} else {
			if (c->rx_len == RX_BUF_SIZE) {
				if (!parse_rx(c))
					return;
				continue;
			}
			/* after a large frame, the next one is likely large too: read little
			 * (its header and payload) rather than copy its bulk out of rx */
			size_t room = RX_BUF_SIZE - c->rx_len;
			if (c->rx_bulky && room > RX_BULKY_READ)
				room = RX_BULKY_READ;
			r = read(c->watch.fd, c->rx + c->rx_len, room);
			if (r > 0) {
				c->rx_len += (size_t)r;
				if (!parse_rx(c))
					return;
				continue;
			}
		}
		if (r == 0) {
			if (c->hs == HS_SERVER_WAIT_AUTH)
				log_error("authentication failed from %s: peer closed during handshake (wrong key?)",
					  c->peer);
			conn_close(c, -ECONNRESET);
			return;
		}
		if (errno == EAGAIN || errno == EINTR)
			return;
		conn_close(c, -errno);
		return;
	}
}

static void on_event(struct loop_watch *w, uint32_t events)
{
	struct conn *c = w->arg;
	if (conn_is_closed(c))
		return;
	conn_get(c);
	if (events & EPOLLOUT) {
		struct send_entry *done = NULL;
		pthread_mutex_lock(&c->lock);
		flush_locked(c, &done);
		pthread_mutex_unlock(&c->lock);
		release_entries(done);
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		on_readable(c);
	conn_put(c);
}

struct conn *conn_new(int fd, const struct conn_params *p)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (c)
		c->rx = malloc(RX_BUF_SIZE);
	if (!c || !c->rx) {
		free(c);
		close(fd);
		return NULL;
	}
	atomic_init(&c->refs, 2); /* the caller's and the loop's */
	c->loop = p->loop;
	c->ops = p->ops;
	c->ctx = p->ctx;
	c->owner = p->owner;
	if (p->key)
		c->key = *p->key;
	c->role = p->role;
	c->verify = p->verify;
	c->verify_arg = p->verify_arg;
	if (c->key.serial) { /* a node credential speaks only as itself */
		c->role = c->key.role;
		snprintf(c->name, sizeof(c->name), "%s", c->key.name);
	} else {
		snprintf(c->name, sizeof(c->name), "%s", p->name ? p->name : "");
	}
	c->serial = c->key.serial;
	c->born_ms = loop_now_ms();
	c->watch.fd = fd;
	c->watch.cb = on_event;
	c->watch.arg = c;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->seal_lock, NULL);
	pthread_mutex_init(&c->plock, NULL);
	pthread_cond_init(&c->cond, NULL);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		addr_format((struct sockaddr *)&ss, c->peer, sizeof(c->peer));
	else
		snprintf(c->peer, sizeof(c->peer), "fd %d", fd);
	c->hs = p->is_server ? HS_SERVER_WAIT_HELLO : HS_CLIENT_WAIT_HELLO;
	int err = loop_watch_add(c->loop, &c->watch, EPOLLIN);
	if (err) {
		log_error("connection %s: epoll: %s", c->peer, strerror(-err));
		conn_close(c, err);
		return c;
	}
	if (!p->is_server)
		handshake_start(c);
	return c;
}
