/* libweft session: connecting to meta, the session and its heartbeats, the chain tables
 * and the connections to stores (a chain cache, src/net), the pagepool budget. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>

#include "client/client_int.h"
#include "common/log.h"
#include "net/stats.h"
#include "weft/err.h"

/* Requests that can be sent again after their connection died, whether or not meta got
 * them: they change nothing, or (EXTEND: size = max, the same mtime) the same thing
 * twice. Namespace mutations kept for a replay go TAGGED and are sent again too: meta
 * applies a tag once (meta/replies.h). The others are sent again only if they never
 * left (meta refused the connection): once sent, a second try could apply them twice. */
static bool resend_safe(uint16_t op)
{
	switch (op) {
	case WEFT_OP_LOOKUP: case WEFT_OP_GETATTR: case WEFT_OP_READLINK:
	case WEFT_OP_READDIR: case WEFT_OP_STATFS: case WEFT_OP_GETXATTR:
	case WEFT_OP_LISTXATTR: case WEFT_OP_ACCESS: case WEFT_OP_FSYNC:
	case WEFT_OP_GETSTRIPE: case WEFT_OP_CHAINS_GET: case WEFT_OP_TARGETS_GET:
	case WEFT_OP_EXTEND: case WEFT_OP_SESSION_BEAT: case WEFT_OP_CAP_GET:
	case WEFT_OP_TAGGED: /* a replay with its tag: applied once (meta/replies.h) */
		return true;
	default:
		return false;
	}
}

/* Errors that say meta is not there (rather than answering). */
static bool meta_gone(int err)
{
	return err == -ECONNREFUSED || err == -ECONNRESET || err == -ENOTCONN || err == -EPIPE ||
	       err == -ETIMEDOUT || err == -EHOSTUNREACH || err == -ENETUNREACH ||
	       err == -ECONNABORTED;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends a request to meta and waits for its reply. While meta is unreachable (a restart,
 * a failover) the request waits for it, up to CLIENT_META_WAIT_MS, as an NFS hard mount
 * or a Lustre client waits for its server, rather than failing the application at once;
 * see resend_safe for what is sent again. Not while the client opens (a mount should
 * say at once that meta is not there) or closes. */
static void post_done(void *arg, int status, struct frame *reply);

/* A new connection to meta (after it dropped): a heartbeat goes first on it, so that
 * meta binds it to our session before this request (leases are granted and recalled by
 * connection: meta's lease.h). */
static void bind_conn(struct weft_client *c, struct conn *cn, uint16_t op)
{
	if (op == WEFT_OP_SESSION_OPEN || op == WEFT_OP_SESSION_BEAT ||
	    atomic_exchange(&c->meta_conn_seen, (uintptr_t)cn) == (uintptr_t)cn || !c->session)
		return;
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_session_id m = {.session = c->session};
	proto_session_id_encode(&w, &m);
	conn_call(cn, WEFT_OP_SESSION_BEAT, &w, NULL, 0, NULL, NULL, post_done,
		  (void *)(uintptr_t)WEFT_OP_SESSION_BEAT);
}

/* Requests that need not wait for this client's asynchronous creates (acreate.c): the
 * creates themselves, what a worker sending one may need (sessions), requests about a
 * file that waited for its own create (EXTEND, RELEASE) and what concerns no name.
 * A request that depends on one directory or name alone (a listing, a lookup, a create
 * in it) waits for its own scope instead (client_acreate_dir_scope, _name_scope). */
static bool acreate_exempt(uint16_t op)
{
	switch (op) {
	case WEFT_OP_CREATE_OPEN:
	case WEFT_OP_SESSION_OPEN:
	case WEFT_OP_SESSION_BEAT:
	case WEFT_OP_REOPEN:
	case WEFT_OP_REPLAY:
	case WEFT_OP_TAGGED:
	case WEFT_OP_EXTEND:
	case WEFT_OP_RELEASE:
	case WEFT_OP_CAP_GET:
	case WEFT_OP_CHAINS_GET:
	case WEFT_OP_TARGET_FAILED:
		return true;
	default:
		return false;
	}
}

int client_meta_call(struct weft_client *c, uint16_t op, struct wbuf *payload,
		     const struct iovec *bulk, int nbulk, struct frame **reply)
{
	if (c->acreate && !acreate_exempt(op))
		client_acreate_barrier(c); /* this client's own creates come first */
	int64_t give_up = mono_ms() + CLIENT_META_WAIT_MS;
	unsigned pause_ms = 20;
	bool waited = false, may_wait = atomic_load(&c->meta_wait);
	bool keep = client_replay_keepable(op);
	struct wbuf none, *p = payload ? payload : &none;
	wbuf_init(&none);
	/* a copy of the request: to keep it for a replay (replay.c), to send it again
	 * while meta takes replays (WEFT_ERECOVERING: not applied), or after a connection
	 * died if that is safe (resend_safe) */
	struct wbuf saved;
	wbuf_init(&saved);
	if (p->len)
		wbuf_put(&saved, p->data, p->len);
	bool have_copy = !saved.err && saved.len <= WEFT_REPLAY_PAYLOAD_MAX;
	uint64_t xid = keep ? atomic_fetch_add(&c->next_xid, 1) + 1 : 0;
	struct frame *rf = NULL;
	int err = -EIO;
	for (bool first = true;; first = false) {
		struct conn *cn;
		frame_free(rf);
		rf = NULL;
		if (!first && !have_copy)
			break; /* err stands */
		struct wbuf w;
		wbuf_init(&w);
		if (keep && have_copy) {
			/* tagged for meta's reply cache: the same xid each time it is sent,
			 * so that meta applies it once (meta/replies.h) */
			struct weft_msg_tagged t = {.client = c->client_id, .xid = xid,
						    .done_below = client_replay_done_below(c, xid),
						    .op = op,
						    .payload = {(const char *)saved.data,
								(uint32_t)saved.len}};
			proto_tagged_encode(&w, &t);
		} else if (first) {
			w = *p;
			wbuf_init(p); /* taken by the call */
		} else if (saved.len) {
			wbuf_put(&w, saved.data, saved.len);
		}
		err = rpc_conn(c->meta, &cn);
		if (err == 0) {
			bind_conn(c, cn, op);
			if (keep)
				client_replay_enter(c);
			err = conn_call_sync(cn, keep && have_copy ? WEFT_OP_TAGGED : op, &w, bulk,
					     nbulk, CLIENT_META_TIMEOUT_MS, &rf);
			if (keep)
				client_replay_leave(c);
			conn_put(cn);
			/* it went: a second try could apply it twice, unless it is tagged */
			if (meta_gone(err) && !(may_wait && (resend_safe(op) || (keep && have_copy))))
				break;
		} else {
			wbuf_free(&w);
		}
		if (err == -WEFT_ERECOVERING && !c->stopping && mono_ms() < give_up) {
			/* meta restarted and takes replays first: ours now (the caller may hold
			 * sess_lock, which would keep the beat thread's renewal waiting), then
			 * this */
			if (op != WEFT_OP_TAGGED && op != WEFT_OP_REPLAY) /* not from a replay */
				client_replay_recovering(c);
			usleep(50 * 1000);
			continue;
		}
		if (!meta_gone(err) || !may_wait || c->stopping || mono_ms() >= give_up)
			break;
		if (!waited)
			log_warn("meta %s unreachable (%s): %s waits for it (up to %d s)",
				 rpc_addr(c->meta), weft_strerror(err), proto_op_name(op),
				 CLIENT_META_WAIT_MS / 1000);
		waited = true;
		usleep(pause_ms * 1000);
		pause_ms = pause_ms < 500 ? pause_ms * 2 : 1000;
	}
	if (waited)
		log_info("meta %s: %s %s after waiting", rpc_addr(c->meta), proto_op_name(op),
			 meta_gone(err) ? "gave up" : "went through");
	if (err == 0 && have_copy)
		client_durable_seen(c, op, xid, rf, saved.data, (uint32_t)saved.len, bulk,
				    nbulk);
	wbuf_free(&saved);
	wbuf_free(p);
	if (reply)
		*reply = rf;
	else
		frame_free(rf);
	if (meta_gone(err) && waited)
		return -EIO; /* the application learns it could not be done, not why */
	return err;
}

static void meta_wait_done(void *arg, int status, struct frame *reply)
{
	struct meta_wait *w = arg;
	frame_free(reply);
	pthread_mutex_lock(&w->lock);
	w->status = status;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

void client_meta_start(struct weft_client *c, uint16_t op, struct wbuf *payload,
		       struct meta_wait *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->done = false;
	w->status = 0;
	w->c = c;
	w->op = op;
	wbuf_init(&w->again);
	if (payload->len)
		wbuf_put(&w->again, payload->data, payload->len);
	struct conn *cn;
	int err = rpc_conn(c->meta, &cn);
	if (err == 0) {
		bind_conn(c, cn, op);
		err = conn_call(cn, op, payload, NULL, 0, NULL, NULL, meta_wait_done, w);
		conn_put(cn);
		payload = NULL; /* taken by conn_call */
	}
	if (payload)
		wbuf_free(payload);
	if (err)
		meta_wait_done(w, err, NULL);
}

int client_meta_wait(struct meta_wait *w)
{
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	if (meta_gone(w->status) && !w->again.err)
		return client_meta_call(w->c, w->op, &w->again, NULL, 0, NULL); /* waits for meta */
	wbuf_free(&w->again);
	return w->status;
}

int client_refresh_chains(struct weft_client *c)
{
	return chaincache_refresh(c->cc, chaincache_gen(c->cc));
}

void client_chains_stale(struct weft_client *c)
{
	chaincache_mark_stale(c->cc);
}

void client_report_failed(struct weft_client *c, uint32_t target, uint32_t chain, uint8_t replicas)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_target_failed m = {.reporter = 0, .target = target, .chain = chain,
					   .replicas = replicas};
	proto_target_failed_encode(&w, &m);
	int err = client_meta_call(c, WEFT_OP_TARGET_FAILED, &w, NULL, 0, NULL);
	log_warn("target %u (head of chain %u) unreachable; reported to meta%s%s", target, chain,
		 err ? ": " : "", err ? weft_strerror(err) : "");
	chaincache_mark_stale(c->cc);
}

void client_suspect(struct weft_client *c, uint32_t target)
{
	uint64_t now = loop_now_ms();
	pthread_mutex_lock(&c->suspect_lock);
	int slot = 0;
	for (int i = 0; i < CLIENT_SUSPECTS; i++) {
		if (c->suspects[i].target == target) {
			slot = i;
			break;
		}
		if (c->suspects[i].until_ms < c->suspects[slot].until_ms)
			slot = i; /* else the oldest entry */
	}
	c->suspects[slot].target = target;
	c->suspects[slot].until_ms = now + CLIENT_SUSPECT_MS;
	pthread_mutex_unlock(&c->suspect_lock);
}

bool client_is_suspect(struct weft_client *c, uint32_t target)
{
	uint64_t now = loop_now_ms();
	bool s = false;
	pthread_mutex_lock(&c->suspect_lock);
	for (int i = 0; i < CLIENT_SUSPECTS && !s; i++)
		s = c->suspects[i].target == target && c->suspects[i].until_ms > now;
	pthread_mutex_unlock(&c->suspect_lock);
	return s;
}

int client_chain(struct weft_client *c, uint8_t replicas, uint32_t id, struct weft_chain *out)
{
	return chaincache_chain(c->cc, replicas, id, 0, out);
}

int client_store_conn(struct weft_client *c, uint32_t target, struct conn **out)
{
	return chaincache_conn(c->cc, target, out);
}

void client_pool_take(struct weft_client *c, uint64_t bytes)
{
	pthread_mutex_lock(&c->pool_lock);
	if (c->pool_used && c->pool_used + bytes > c->pool_max)
		stats_add(STATS_PAGEPOOL_WAITS, 1);
	while (c->pool_used && c->pool_used + bytes > c->pool_max)
		pthread_cond_wait(&c->pool_cond, &c->pool_lock);
	c->pool_used += bytes;
	stats_set_gauge(STATS_PAGEPOOL_USED_BYTES, c->pool_used);
	pthread_mutex_unlock(&c->pool_lock);
}

void client_pool_grow(struct weft_client *c, uint64_t bytes)
{
	pthread_mutex_lock(&c->pool_lock);
	c->pool_used += bytes;
	stats_set_gauge(STATS_PAGEPOOL_USED_BYTES, c->pool_used);
	pthread_mutex_unlock(&c->pool_lock);
}

void client_pool_give(struct weft_client *c, uint64_t bytes)
{
	pthread_mutex_lock(&c->pool_lock);
	c->pool_used -= bytes;
	stats_set_gauge(STATS_PAGEPOOL_USED_BYTES, c->pool_used);
	pthread_cond_broadcast(&c->pool_cond);
	pthread_mutex_unlock(&c->pool_lock);
}

static int open_session(struct weft_client *c)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_session_open m = {.node = proto_str_of(c->node, strlen(c->node)),
					   .flags = WEFT_SESSION_RECALLS};
	proto_session_open_encode(&w, &m);
	struct frame *f;
	int err = client_meta_call(c, WEFT_OP_SESSION_OPEN, &w, NULL, 0, &f);
	if (err == 0) {
		struct weft_msg_session s;
		err = proto_session_decode(f->payload, f->h.payload_len, &s, NULL);
		if (err == 0) {
			c->session = s.session;
			c->lease_ms = s.lease_ms ? s.lease_ms : 10000;
		}
	}
	frame_free(f);
	return err;
}

bool client_session_lost(struct weft_client *c, uint64_t old)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_session_id m = {.session = old};
	proto_session_id_encode(&w, &m);
	int err = client_meta_call(c, WEFT_OP_SESSION_BEAT, &w, NULL, 0, NULL);
	return err == -ENOENT || err == -ESTALE;
}

/* The files held open: (ino, count) pairs, malloc'ed; *n of them. */
static struct weft_msg_reopen *held_opens(struct weft_client *c, size_t *n)
{
	struct weft_msg_reopen *v = NULL;
	size_t cap = 0;
	*n = 0;
	pthread_mutex_lock(&c->inodes_lock);
	for (size_t i = 0; i < c->inodes_cap; i++)
		for (struct winode *w = c->inodes[i]; w; w = w->next) {
			if (w->opens <= 0)
				continue;
			if (*n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				struct weft_msg_reopen *q = realloc(v, nc * sizeof(*v));
				if (!q)
					goto out;
				v = q;
				cap = nc;
			}
			v[(*n)++] = (struct weft_msg_reopen){.ino = w->ino,
							     .count = (uint32_t)w->opens};
		}
out:
	pthread_mutex_unlock(&c->inodes_lock);
	return v;
}

/* evicted: meta closed the session itself, for not answering a recall: the opens went
 * with it, and handles opened in it are fenced (client_file_fenced), not reclaimed */
static int session_renew(struct weft_client *c, uint64_t old, bool evicted)
{
	pthread_rwlock_wrlock(&c->sess_lock);
	if (c->session != old) { /* another thread renewed it */
		pthread_rwlock_unlock(&c->sess_lock);
		return 0;
	}
	if (evicted) {
		if (atomic_load(&c->fenced_upto) < old)
			atomic_store(&c->fenced_upto, old);
		client_lease_drop_all(c);
		pthread_mutex_lock(&c->inodes_lock);
		for (size_t i = 0; i < c->inodes_cap; i++)
			for (struct winode *w = c->inodes[i]; w; w = w->next)
				w->opens = 0;
		pthread_mutex_unlock(&c->inodes_lock);
		log_warn("session %llu was evicted by meta (a lease recall went unanswered): "
			 "files open in it fail with EIO", (unsigned long long)old);
	}
	/* meta restarted or evicted us: what it did meanwhile was never recalled here */
	client_cdir_drop_all(c);
	int err = open_session(c);
	if (err) {
		pthread_rwlock_unlock(&c->sess_lock);
		log_warn("opening a new session at meta: %s", weft_strerror(err));
		return err;
	}
	size_t n, taken = 0;
	struct weft_msg_reopen *v = held_opens(c, &n);
	for (size_t i = 0; i < n; i++) {
		struct wbuf w;
		wbuf_init(&w);
		v[i].session = c->session;
		proto_reopen_encode(&w, &v[i]);
		int e = client_meta_call(c, WEFT_OP_REOPEN, &w, NULL, 0, NULL);
		if (e == 0)
			taken++;
		else
			log_warn("reclaiming open inode %llu in session %llu: %s",
				 (unsigned long long)v[i].ino, (unsigned long long)c->session,
				 weft_strerror(e));
	}
	free(v);
	/* a new incarnation of meta: what it may have lost goes back first */
	client_replay_run(c);
	/* the beat thread recomputes its schedule from the new lease */
	pthread_mutex_lock(&c->beat_lock);
	pthread_cond_signal(&c->beat_cond);
	pthread_mutex_unlock(&c->beat_lock);
	log_info("session %llu replaces %llu at meta; %zu open file(s) reclaimed",
		 (unsigned long long)c->session, (unsigned long long)old, taken);
	pthread_rwlock_unlock(&c->sess_lock);
	return 0;
}

int client_session_renew(struct weft_client *c, uint64_t old)
{
	return session_renew(c, old, false);
}

bool client_file_fenced(struct weft_file *f)
{
	struct weft_client *c = f->c;
	uint32_t lease = c->lease_ms_seen;
	/* no heartbeat answered within a lease: this process may have been stopped while
	 * meta gave its leases away; ask before writing */
	if (lease && loop_now_ms() - atomic_load(&c->last_beat_ok_ms) > lease)
		client_beat_now(c);
	return f->session <= atomic_load(&c->fenced_upto);
}

static void post_done(void *arg, int status, struct frame *reply)
{
	uint16_t op = (uint16_t)(uintptr_t)arg;
	frame_free(reply);
	if (status)
		log_debug("%s (not waited for): %s", proto_op_name(op), weft_strerror(status));
}

void client_meta_post_fn(struct weft_client *c, uint16_t op, struct wbuf *payload,
			 conn_call_fn done, void *arg)
{
	struct conn *cn;
	int err = rpc_conn(c->meta, &cn);
	if (err == 0) {
		bind_conn(c, cn, op);
		err = conn_call(cn, op, payload, NULL, 0, NULL, NULL, done, arg);
		conn_put(cn);
	} else {
		wbuf_free(payload);
	}
	if (err)
		done(arg, err, NULL);
}

void client_meta_post(struct weft_client *c, uint16_t op, struct wbuf *payload)
{
	client_meta_post_fn(c, op, payload, post_done, (void *)(uintptr_t)op);
}

static void add_ms(struct timespec *t, uint32_t ms)
{
	t->tv_sec += ms / 1000;
	t->tv_nsec += (long)(ms % 1000) * 1000000;
	if (t->tv_nsec >= 1000000000) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000;
	}
}

static void beat(struct weft_client *c)
{
	uint64_t sent = loop_now_ms();
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_session_id m = {.session = c->session};
	proto_session_id_encode(&w, &m);
	struct frame *f = NULL;
	int err = client_meta_call(c, WEFT_OP_SESSION_BEAT, &w, NULL, 0, &f);
	struct weft_msg_heartbeat_reply r;
	/* an older meta answers with an empty reply: the tables are then refreshed
	 * only when a lookup or a store finds them stale */
	if (err == 0 && f && f->h.payload_len &&
	    proto_heartbeat_reply_decode(f->payload, f->h.payload_len, &r, NULL) == 0)
		chaincache_announce(c->cc, r.chains_version);
	frame_free(f);
	if (err == 0 && sent > atomic_load(&c->last_beat_ok_ms))
		atomic_store(&c->last_beat_ok_ms, sent);
	if (err == -WEFT_EEVICTED) {
		session_renew(c, m.session, true);
	} else if (err == -ENOENT || err == -ESTALE) {
		log_warn("session %llu unknown at meta (expired, or meta restarted); opening a "
			 "new one", (unsigned long long)m.session);
		client_session_renew(c, m.session);
	} else if (err) {
		log_debug("session heartbeat: %s", weft_strerror(err));
	}
}

void client_beat_now(struct weft_client *c)
{
	beat(c);
}

/* Heartbeats every third of the lease; in between, refreshes the chain tables when
 * meta pushed a new epoch (meta_request), so that no application thread waits for it. */
static void *beat_main(void *arg)
{
	struct weft_client *c = arg;
	struct timespec next;
	clock_gettime(CLOCK_REALTIME, &next);
	add_ms(&next, c->lease_ms / 3 ? c->lease_ms / 3 : 1000);
	pthread_mutex_lock(&c->beat_lock);
	while (!c->stopping) {
		/* within a third of the session's lease and of the leases meta grants, so that
		 * a live client never has to check before a write (client_file_fenced) */
		uint32_t lease = c->lease_ms;
		if (c->lease_ms_seen && c->lease_ms_seen < lease)
			lease = c->lease_ms_seen;
		uint32_t period = lease / 3 ? lease / 3 : 1000;
		struct timespec now, soonest;
		clock_gettime(CLOCK_REALTIME, &now);
		/* a new session may come with a shorter lease: beat within its period */
		soonest = now;
		add_ms(&soonest, period);
		if (next.tv_sec > soonest.tv_sec ||
		    (next.tv_sec == soonest.tv_sec && next.tv_nsec > soonest.tv_nsec))
			next = soonest;
		bool due = now.tv_sec > next.tv_sec ||
			   (now.tv_sec == next.tv_sec && now.tv_nsec >= next.tv_nsec);
		if (!due && !c->refresh_now) {
			pthread_cond_timedwait(&c->beat_cond, &c->beat_lock, &next);
			continue;
		}
		c->refresh_now = false;
		pthread_mutex_unlock(&c->beat_lock);
		if (due) {
			beat(c);
			client_pf_expire(c);
			clock_gettime(CLOCK_REALTIME, &next);
			add_ms(&next, period);
		}
		if (chaincache_stale(c->cc))
			client_refresh_chains(c);
		pthread_mutex_lock(&c->beat_lock);
	}
	pthread_mutex_unlock(&c->beat_lock);
	return NULL;
}

/* A request from meta on our connection to it (loop thread: nothing here may block). */
static void meta_request(struct conn *cn, struct frame *f)
{
	struct weft_client *c = conn_ctx(cn);
	struct weft_msg_chains m;
	if (f->h.opcode == WEFT_OP_RECALL) {
		if (!client_recall_request(c, cn, f))
			frame_free(f);
		return;
	}
	if (f->h.opcode == WEFT_OP_CHAINS_CHANGED &&
	    proto_chains_decode(f->payload, f->h.payload_len, &m, NULL) == 0) {
		log_info("meta announced chain tables version %llu", (unsigned long long)m.version);
		pthread_mutex_lock(&c->beat_lock); /* once stopping, the cache may be gone */
		if (!c->stopping && chaincache_announce(c->cc, m.version)) {
			c->refresh_now = true;
			pthread_cond_signal(&c->beat_cond);
		}
		pthread_mutex_unlock(&c->beat_lock);
	}
	frame_free(f);
}

static const struct conn_ops meta_ops = {.on_request = meta_request};

int weft_client_open(const struct weft_client_opts *o, struct weft_client **out, char *errbuf,
		     size_t errlen)
{
	char tmp[512];
	if (!errbuf) {
		errbuf = tmp;
		errlen = sizeof(tmp);
	}
	struct weft_client *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	int err = auth_key_load(o->key_file, &c->key, errbuf, errlen);
	if (err)
		goto fail_free;
	if (o->node_name)
		snprintf(c->node, sizeof(c->node), "%s", o->node_name);
	else
		gethostname(c->node, sizeof(c->node) - 1);
	c->checksums = !o->checksums_off;
	c->wb_attrs = o->wb_attrs;
	c->close_behind = o->wb_attrs && !o->sync_close;
	c->complete_dirs = !o->complete_dirs_off;
	c->pool_max = o->pagepool ? o->pagepool : 256ull << 20;
	c->attr_timeout_ns = (int64_t)o->attr_timeout_ms * 1000000;
	c->readahead_units = o->readahead_units == WEFT_READAHEAD_OFF ? 0
			     : o->readahead_units ? o->readahead_units : 8;
	pthread_mutex_init(&c->pool_lock, NULL);
	pthread_cond_init(&c->pool_cond, NULL);
	pthread_mutex_init(&c->inodes_lock, NULL);
	pthread_mutex_init(&c->pf_lock, NULL);
	pthread_mutex_init(&c->wb_list_lock, NULL);
	client_dirattr_init(c); /* without it the mount asks meta, as before */
	client_emptied_init(c); /* without it every rmdir asks meta */
	pthread_mutex_init(&c->cb_lock, NULL);
	pthread_cond_init(&c->cb_cond, NULL);
	pthread_mutex_init(&c->beat_lock, NULL);
	pthread_mutex_init(&c->suspect_lock, NULL);
	pthread_rwlock_init(&c->sess_lock, NULL);
	pthread_mutex_init(&c->kept_lock, NULL);
	pthread_rwlock_init(&c->replay_lock, NULL);
	if (getrandom(&c->client_id, sizeof(c->client_id), 0) != sizeof(c->client_id))
		c->client_id = (uint64_t)mono_ms() ^ ((uint64_t)getpid() << 32);
	pthread_cond_init(&c->beat_cond, NULL);
	c->inodes_cap = 1024;
	c->inodes = calloc(c->inodes_cap, sizeof(*c->inodes));
	/* an open's first stripe unit read with it (prefetch.c): a kind of readahead */
	if (c->readahead_units && !o->open_prefetch_off && client_pf_init(c))
		c->pf = NULL;
	c->local_open = !o->local_open_off;
	/* writer first: a stream of opens must not keep a recall's answer waiting */
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&c->lopen_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	err = loop_new(&c->loop);
	if (err || !c->inodes || (c->readahead_units && !o->open_prefetch_off && !c->pf)) {
		snprintf(errbuf, errlen, "out of memory");
		err = -ENOMEM;
		goto fail_free;
	}
	err = loop_start(c->loop);
	if (err) {
		snprintf(errbuf, errlen, "cannot start event loop: %s", strerror(-err));
		goto fail_loop;
	}
	struct rpc_params rp = {.loop = c->loop, .key = &c->key, .addr = o->meta_addr,
				.default_port = 7070, .role = WEFT_ROLE_CLIENT, .name = c->node,
				.ops = &meta_ops, .ctx = c};
	err = rpc_new(&rp, &c->meta);
	if (err) {
		snprintf(errbuf, errlen, "meta address %s: not HOST:PORT", o->meta_addr);
		goto fail_loop;
	}
	/* before the session: meta may push CHAINS_CHANGED as soon as we are connected */
	struct chaincache_params cp = {.loop = c->loop, .key = &c->key, .role = WEFT_ROLE_CLIENT,
				       .drop_offline = true,
				       .name = c->node, .connect_timeout_ms = 3000, .meta = c->meta,
				       .meta_timeout_ms = CLIENT_META_TIMEOUT_MS, .who = "libweft"};
	err = chaincache_new(&cp, &c->cc);
	if (err) {
		snprintf(errbuf, errlen, "out of memory");
		goto fail_rpc;
	}
	err = client_lease_start(c);
	if (err) {
		snprintf(errbuf, errlen, "cannot start the recall threads");
		goto fail_rpc;
	}
	/* creates answered here need claims, which recalls take back */
	if (c->recall && c->complete_dirs && !o->async_create_off &&
	    (err = client_acreate_start(c))) {
		snprintf(errbuf, errlen, "cannot start the asynchronous create threads");
		goto fail_rpc;
	}
	/* listings read ahead are kept under leases: only with recalls */
	if (c->recall && !o->dir_ahead_off && (err = client_dirahead_start(c))) {
		snprintf(errbuf, errlen, "cannot start the directory read-ahead threads");
		goto fail_rpc;
	}
	err = open_session(c);
	if (err) {
		snprintf(errbuf, errlen, "meta %s: %s", o->meta_addr, weft_strerror(err));
		goto fail_rpc;
	}
	atomic_store(&c->last_beat_ok_ms, loop_now_ms());
	err = client_refresh_chains(c);
	if (err) {
		snprintf(errbuf, errlen, "chain tables from meta %s: %s", o->meta_addr,
			 weft_strerror(err));
		goto fail_rpc;
	}
	atomic_store(&c->meta_wait, true); /* from now on, wait for meta when it is away */
	err = pthread_create(&c->beat_thread, NULL, beat_main, c);
	if (err) {
		err = -err;
		snprintf(errbuf, errlen, "cannot start heartbeat thread");
		goto fail_rpc;
	}
	*out = c;
	return 0;
fail_rpc:
	pthread_mutex_lock(&c->beat_lock);
	c->stopping = true;
	pthread_mutex_unlock(&c->beat_lock);
	client_dirahead_stop(c);
	client_acreate_stop(c);
	client_lease_stop(c);
	chaincache_free(c->cc);
	rpc_free(c->meta);
fail_loop:
	loop_free(c->loop);
fail_free:
	client_pf_free(c);
	client_emptied_free(c);
	free(c->inodes);
	free(c);
	return err;
}

int weft_sync(struct weft_client *c, const struct weft_cred *cr, uint64_t ino)
{
	client_acreate_barrier(c); /* creates and unlinks sent behind: answered, errors kept */
	int behind = client_close_flush_all(c, true); /* before their attributes: closebehind.c */
	client_wbattr_flush_all(c, false);
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino m = {.cred = *cr, .ino = ino};
	proto_ino_encode(&w, &m);
	int err = client_meta_call(c, WEFT_OP_FSYNC, &w, NULL, 0, NULL);
	return behind ? behind : err;
}

void weft_client_close(struct weft_client *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->beat_lock);
	c->stopping = true;
	pthread_cond_signal(&c->beat_cond);
	pthread_mutex_unlock(&c->beat_lock);
	pthread_join(c->beat_thread, NULL);
	client_acreate_stop(c); /* what it posted, answered */
	client_pf_drop_held(c);
	client_wbattr_flush_all(c, false); /* handles still open at the end (wbattr.c) */
	/* an unmount is durable: what meta answered lazily (EXTEND at close, buffered
	 * attributes) is synced before the session ends */
	struct weft_cred root = {0};
	int err = weft_sync(c, &root, 1);
	if (err)
		log_warn("close: sync at meta %s: %s", rpc_addr(c->meta), weft_strerror(err));
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_session_id m = {.session = c->session};
	proto_session_id_encode(&w, &m);
	client_dirahead_stop(c);
	client_meta_call(c, WEFT_OP_SESSION_CLOSE, &w, NULL, 0, NULL);
	client_lease_stop(c);
	chaincache_free(c->cc);
	rpc_free(c->meta);
	loop_free(c->loop);
	client_pf_free(c);
	client_replay_free(c);
	free(c->dirattr);
	client_emptied_free(c);
	free(c->inodes);
	free(c);
}

void weft_client_stats(struct weft_client *c, struct weft_client_stats *st)
{
	st->bytes_read = atomic_load(&c->bytes_read);
	st->bytes_written = atomic_load(&c->bytes_written);
	st->ops_read = atomic_load(&c->ops_read);
	st->ops_written = atomic_load(&c->ops_written);
	st->checksum_retries = atomic_load(&c->checksum_retries);
}
