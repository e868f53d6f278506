/* weft store and meta: registration, heartbeats (which renew the lease that fences
 * this store), and the chain tables with the checks every data request goes through. */
#include "store/server_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "net/stats.h"
#include "weft/err.h"

/* A beat asked for by hb_soon waits this long, so that a burst of fsyncs costs one. */
#define HB_SOON_MS 20

/* Sleeps up to ms unless the server is stopping (true: stop) or a beat is asked for
 * (after HB_SOON_MS). */
static bool nap(struct store_server *s, uint32_t ms)
{
	struct timespec ts = loop_deadline_ms(ms);
	pthread_mutex_lock(&s->hb_lock);
	while (!s->hb_stop && !(s->stop && *s->stop) && !s->hb_soon) {
		if (pthread_cond_timedwait(&s->hb_cond, &s->hb_lock, &ts) == ETIMEDOUT)
			break;
	}
	bool stop = s->hb_stop || (s->stop && *s->stop);
	bool soon = s->hb_soon;
	pthread_mutex_unlock(&s->hb_lock);
	if (soon && !stop) {
		usleep(HB_SOON_MS * 1000);
		pthread_mutex_lock(&s->hb_lock);
		s->hb_soon = false;
		pthread_mutex_unlock(&s->hb_lock);
	}
	return stop;
}

void store_hb_soon(struct store_server *s)
{
	pthread_mutex_lock(&s->hb_lock);
	if (!s->hb_soon) {
		s->hb_soon = true;
		pthread_cond_broadcast(&s->hb_cond);
	}
	pthread_mutex_unlock(&s->hb_lock);
}

static bool transient(int rc)
{
	return rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -ENOTCONN || rc == -ECONNRESET ||
	       rc == -EHOSTUNREACH || rc == -ENETUNREACH || rc == -EPIPE || rc == -ECONNABORTED ||
	       rc == -EAGAIN || rc == -EINTR;
}

/* Bytes of the objects this target holds (their logical sizes), counted from the
 * index at most every 2 s. Heartbeat thread (or start, before it runs). */
static uint64_t held_bytes(struct store_server *s)
{
	uint64_t now = loop_now_ms();
	if (s->held_ms && now - s->held_ms < 2000)
		return s->held;
	struct store_index_rec recs[256];
	size_t n;
	uint64_t ino = 0, sum = 0;
	uint32_t stripe = 0;
	while (s->objs && store_obj_list(s->objs, ino, stripe, recs, 256, &n) == 0 && n) {
		for (size_t i = 0; i < n; i++)
			sum += recs[i].length;
		ino = recs[n - 1].ino;
		stripe = recs[n - 1].stripe + 1;
		if (stripe == 0)
			ino++;
	}
	s->held = sum;
	s->held_ms = now;
	return sum;
}

static void space(struct store_server *s, uint64_t *cap, uint64_t *avail)
{
	*cap = *avail = 0;
	struct statvfs v;
	if (s->t) {
		store_target_space(s->t, cap, avail);
	} else if (statvfs(s->dir, &v) == 0) {
		*cap = (uint64_t)v.f_blocks * v.f_frsize;
		*avail = (uint64_t)v.f_bavail * v.f_frsize;
	}
	if (s->capacity) { /* a share of a file system other stores use too */
		uint64_t held = held_bytes(s);
		uint64_t left = s->capacity > held ? s->capacity - held : 0;
		*cap = s->capacity < *cap || !*cap ? s->capacity : *cap;
		*avail = left < *avail ? left : *avail;
	}
	stats_set_gauge(STATS_TARGET_CAPACITY_BYTES, *cap);
	stats_set_gauge(STATS_TARGET_FREE_BYTES, *avail);
}

static void set_lease(struct store_server *s, uint64_t sent_ms, uint32_t lease_ms)
{
	if (lease_ms == 0)
		lease_ms = 5000;
	atomic_store(&s->lease_ms, lease_ms);
	atomic_store(&s->lease_until_ms, sent_ms + lease_ms);
	if (atomic_exchange(&s->fenced_logged, false))
		log_info("lease renewed by meta %s: serving data requests again", s->meta_addr);
}

/* One TARGET_REGISTER round trip. */
static int register_once(struct store_server *s, struct weft_msg_target_registered *out)
{
	struct weft_msg_target_register m = {0};
	memcpy(m.uuid, s->uuid, sizeof(m.uuid));
	m.node = proto_str_of(s->node, strlen(s->node));
	m.addr = proto_str_of(s->addr, strlen(s->addr));
	space(s, &m.capacity, &m.free);
	if (s->t && s->objs) {
		m.incarnation = store_target_incarnation(s->t);
		m.wseq = store_index_wseq(store_obj_index(s->objs));
	}
	struct wbuf w;
	wbuf_init(&w);
	proto_target_register_encode(&w, &m);
	uint64_t sent = loop_now_ms();
	struct frame *rep = NULL;
	int rc = rpc_call(s->meta, WEFT_OP_TARGET_REGISTER, &w, NULL, 0, STORE_META_TIMEOUT_MS, &rep);
	if (rc == 0) {
		const char *why = NULL;
		if (proto_target_registered_decode(rep->payload, rep->h.payload_len, out, &why)) {
			log_error("TARGET_REGISTER reply from meta %s: %s", s->meta_addr, why);
			rc = -WEFT_EPROTO;
		} else {
			set_lease(s, sent, out->lease_ms);
		}
	} else if (rep) {
		char detail[256];
		conn_error_detail(rep, detail, sizeof(detail));
		if (detail[0])
			log_error("meta %s refused the registration: %s: %s", s->meta_addr,
				  weft_strerror(rc), detail);
	}
	frame_free(rep);
	return rc;
}

int store_hb_register(struct store_server *s, bool first, uint8_t *checksums_out)
{
	uint32_t backoff = 100;
	unsigned failures = 0;
	for (;;) {
		struct weft_msg_target_registered r;
		int rc = register_once(s, &r);
		if (rc == 0) {
			if (!first && r.target != s->target_id)
				log_warn("meta %s now calls this target %u (was %u)", s->meta_addr,
					 r.target, s->target_id);
			s->target_id = r.target;
			memcpy(s->fsid, r.fsid, sizeof(s->fsid));
			s->untrusted = r.untrusted;
			if (checksums_out)
				*checksums_out = r.checksums;
			if (!first && s->t) {
				int e = store_target_set_identity(s->t, s->fsid, s->target_id);
				if (e)
					log_error("%s: recording identity from meta: %s", s->dir,
						  weft_strerror(e));
			}
			log_info("registered with meta %s as target %u (lease %u ms)%s", s->meta_addr,
				 r.target, r.lease_ms, failures ? " after retrying" : "");
			return 0;
		}
		if (!transient(rc) && first)
			return rc;
		if (failures++ % 30 == 0)
			log_warn("cannot register with meta %s: %s; retrying", s->meta_addr,
				 weft_strerror(rc));
		if (nap(s, backoff))
			return -EINTR;
		backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
	}
}

/* ---- chain tables: the chain cache (src/net/chaincache.h) ---- */

/* A new chain table: notes of objects members missed are dropped for chains where
 * those members serve again (resync.c). */
static void tables_installed(void *arg)
{
	store_resync_tables_changed(arg);
}

int store_chains_init(struct store_server *s)
{
	struct chaincache_params p = {.loop = s->loop, .key = &s->key, .role = WEFT_ROLE_STORE,
				      .name = s->node, .default_port = 7071,
				      .connect_timeout_ms = 3000, .meta = s->meta,
				      .meta_timeout_ms = STORE_META_TIMEOUT_MS, .who = "store",
				      .installed = tables_installed, .installed_arg = s};
	return chaincache_new(&p, &s->cc);
}

int store_chains_refresh(struct store_server *s, bool force)
{
	if (!force && !chaincache_stale(s->cc))
		return 0;
	return chaincache_refresh(s->cc, chaincache_gen(s->cc));
}

int store_chains_check(struct store_server *s, uint8_t replicas, uint32_t chain, uint64_t ver,
		 bool is_read, struct weft_chain *out, int *me)
{
	/* a request naming a chain we do not have, or a newer version of it, makes the
	 * cache fetch the tables (single-flight) before it answers */
	int rc = chaincache_chain(s->cc, replicas, chain, ver == UINT64_MAX ? 0 : ver, out);
	if (rc)
		return rc;
	if (ver != UINT64_MAX && ver != out->version)
		return -WEFT_ESTALECHAIN; /* the sender's is older: it refreshes and resends */
	*me = -1;
	for (int i = 0; i < out->nmembers; i++)
		if (out->members[i].target == s->target_id)
			*me = i;
	if (*me < 0)
		return -WEFT_ESTALECHAIN;
	uint8_t st = out->members[*me].state;
	if (is_read ? st != WEFT_MEMBER_SERVING : st == WEFT_MEMBER_OFFLINE)
		return -WEFT_ENOTSERVING;
	return 0;
}

bool store_chains_target_addr(struct store_server *s, uint32_t target, char *buf, size_t cap)
{
	return chaincache_target_addr(s->cc, target, buf, cap);
}

int store_chains_target_conn(struct store_server *s, uint32_t target, struct conn **out)
{
	return chaincache_conn(s->cc, target, out);
}

/* ---- heartbeats ---- */

static int beat(struct store_server *s)
{
	struct weft_msg_target_heartbeat m = {.target = s->target_id};
	struct store_counters c;
	store_target_counters(s->t, &c);
	space(s, &m.capacity, &m.free);
	m.bytes_read = c.bytes_read;
	m.bytes_written = c.bytes_written;
	m.ops_read = c.ops_read;
	m.ops_written = c.ops_written;
	m.wseq = s->objs ? store_index_wseq(store_obj_index(s->objs)) : 0;
	struct wbuf w;
	wbuf_init(&w);
	proto_target_heartbeat_encode(&w, &m);
	uint64_t sent = loop_now_ms();
	uint32_t timeout = s->heartbeat_ms * 2 < 2000 ? 2000 : s->heartbeat_ms * 2;
	struct frame *rep = NULL;
	int rc = rpc_call(s->meta, WEFT_OP_TARGET_HEARTBEAT, &w, NULL, 0, (int)timeout, &rep);
	if (rc == 0) {
		struct weft_msg_heartbeat_reply r;
		const char *why = NULL;
		if (proto_heartbeat_reply_decode(rep->payload, rep->h.payload_len, &r, &why)) {
			log_error("heartbeat reply from meta %s: %s", s->meta_addr, why);
			rc = -WEFT_EPROTO;
		} else {
			set_lease(s, sent, r.lease_ms);
			chaincache_announce(s->cc, r.chains_version);
		}
	}
	frame_free(rep);
	return rc;
}

/* RESYNC_PROGRESS to meta while syncing, and once more (zeros) when it ends. */
static void report_progress(struct store_server *s, bool *was)
{
	bool active = store_resync_active(s);
	if (!active && !*was)
		return;
	*was = active;
	struct weft_msg_resync_progress m;
	store_resync_progress(s, &m);
	struct wbuf w;
	wbuf_init(&w);
	proto_resync_progress_encode(&w, &m);
	struct frame *rep = NULL;
	rpc_call(s->meta, WEFT_OP_RESYNC_PROGRESS, &w, NULL, 0, 2000, &rep);
	frame_free(rep);
}

static void *hb_main(void *arg)
{
	struct store_server *s = arg;
	unsigned failures = 0;
	bool syncing = false;
	while (!nap(s, s->heartbeat_ms)) {
		if (atomic_load(&s->disk_failed)) {
			/* failed (diskfail.c): no heartbeat, so meta never sees it come back;
			 * the report instead, until meta has it (then it must rebuild) */
			store_disk_report(s);
			continue;
		}
		/* new object directories reach the disk within a beat (object.c) */
		int drc = s->objs ? store_obj_sync_dirs(s->objs) : 0;
		if (drc)
			log_error("fsync of new object directories: %s", strerror(-drc));
		int rc = beat(s);
		if (rc == -ENOENT || rc == -ESTALE) {
			log_warn("meta %s does not know target %u: registering again", s->meta_addr,
				 s->target_id);
			rc = store_hb_register(s, false, NULL);
		}
		if (rc) {
			if (failures++ % 30 == 0)
				log_warn("heartbeat to meta %s failed: %s (%u in a row); retrying",
					 s->meta_addr, weft_strerror(rc), failures);
			continue;
		}
		if (failures)
			log_info("meta %s answers heartbeats again (after %u failures)", s->meta_addr,
				 failures);
		failures = 0;
		rc = store_chains_refresh(s, false);
		if (rc)
			log_warn("fetching chain tables from meta %s: %s", s->meta_addr,
				 weft_strerror(rc));
		report_progress(s, &syncing);
	}
	return NULL;
}

int store_hb_start(struct store_server *s)
{
	int rc = pthread_create(&s->hb_thread, NULL, hb_main, s);
	if (rc)
		return -rc;
	s->hb_started = true;
	return 0;
}

void store_hb_stop(struct store_server *s)
{
	pthread_mutex_lock(&s->hb_lock);
	s->hb_stop = true;
	pthread_cond_broadcast(&s->hb_cond);
	pthread_mutex_unlock(&s->hb_lock);
	if (s->hb_started)
		pthread_join(s->hb_thread, NULL);
	s->hb_started = false;
}
