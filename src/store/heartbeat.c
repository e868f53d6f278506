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

#include "common/log.h"
#include "weft/err.h"

/* Sleeps up to ms unless the server is stopping; returns true if it should stop. */
static bool nap(struct store_server *s, uint32_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->hb_lock);
	while (!s->hb_stop && !(s->stop && *s->stop)) {
		if (pthread_cond_timedwait(&s->hb_cond, &s->hb_lock, &ts) == ETIMEDOUT)
			break;
	}
	bool stop = s->hb_stop || (s->stop && *s->stop);
	pthread_mutex_unlock(&s->hb_lock);
	return stop;
}

static bool transient(int rc)
{
	return rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -ENOTCONN || rc == -ECONNRESET ||
	       rc == -EHOSTUNREACH || rc == -ENETUNREACH || rc == -EPIPE || rc == -ECONNABORTED ||
	       rc == -EAGAIN || rc == -EINTR;
}

static void space(struct store_server *s, uint64_t *cap, uint64_t *avail)
{
	*cap = *avail = 0;
	if (s->t) {
		store_target_space(s->t, cap, avail);
		return;
	}
	struct statvfs v;
	if (statvfs(s->dir, &v) == 0) {
		*cap = (uint64_t)v.f_blocks * v.f_frsize;
		*avail = (uint64_t)v.f_bavail * v.f_frsize;
	}
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
	m.node = weft_str_of(s->node, strlen(s->node));
	m.addr = weft_str_of(s->addr, strlen(s->addr));
	space(s, &m.capacity, &m.free);
	struct wbuf w;
	wbuf_init(&w);
	weft_target_register_encode(&w, &m);
	uint64_t sent = loop_now_ms();
	struct frame *rep = NULL;
	int rc = rpc_call(s->meta, WEFT_OP_TARGET_REGISTER, &w, NULL, 0, STORE_META_TIMEOUT_MS, &rep);
	if (rc == 0) {
		const char *why = NULL;
		if (weft_target_registered_decode(rep->payload, rep->h.payload_len, out, &why)) {
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

int hb_register(struct store_server *s, bool first, uint8_t *checksums_out)
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

/* ---- chain tables ---- */

static int fetch_chains(struct store_server *s)
{
	struct meta_chain_set set = {0};
	int rc = meta_chain_set_fetch(s->meta, STORE_META_TIMEOUT_MS, &set);
	if (rc)
		return rc; /* meta unreachable: the heartbeat reports it; malformed: logged */
	pthread_rwlock_wrlock(&s->chains_lock);
	uint64_t old = s->have_chains ? s->chains.epoch : 0;
	struct meta_chain_set prev = s->chains;
	s->chains = set;
	s->have_chains = true;
	pthread_rwlock_unlock(&s->chains_lock);
	meta_chain_set_free(&prev);
	resync_tables_changed(s);
	if (set.epoch != old)
		log_info("chain tables version %" PRIu64 ": %u targets, %u/%u/%u chains of 1/2/3",
			 set.epoch, set.ntargets, set.nchains[0], set.nchains[1], set.nchains[2]);
	return 0;
}

/* Refetches unless someone else did since the caller saw version `seen`. */
static int refresh_from(struct store_server *s, bool have, uint64_t seen)
{
	pthread_mutex_lock(&s->refresh_lock);
	pthread_rwlock_rdlock(&s->chains_lock);
	bool moved = s->have_chains != have || (have && s->chains.epoch != seen);
	pthread_rwlock_unlock(&s->chains_lock);
	int rc = moved ? 0 : fetch_chains(s);
	pthread_mutex_unlock(&s->refresh_lock);
	return rc;
}

int chains_refresh(struct store_server *s, bool force)
{
	pthread_rwlock_rdlock(&s->chains_lock);
	bool have = s->have_chains;
	uint64_t seen = have ? s->chains.epoch : 0;
	pthread_rwlock_unlock(&s->chains_lock);
	if (!force && have && seen == atomic_load(&s->meta_chains_version))
		return 0;
	return refresh_from(s, have, seen);
}

int chains_check(struct store_server *s, uint8_t replicas, uint32_t chain, uint64_t ver,
		 bool is_read, struct meta_chain *out, int *me)
{
	for (int attempt = 0;; attempt++) {
		pthread_rwlock_rdlock(&s->chains_lock);
		bool have = s->have_chains;
		uint64_t seen = have ? s->chains.epoch : 0;
		const struct meta_chain *c = have ? meta_chain_set_get(&s->chains, replicas, chain) : NULL;
		if (c)
			*out = *c;
		pthread_rwlock_unlock(&s->chains_lock);
		bool newer = c && ver != UINT64_MAX && ver > out->version;
		if ((!c || newer) && attempt == 0) {
			refresh_from(s, have, seen);
			continue;
		}
		if (!c || (ver != UINT64_MAX && ver != out->version))
			return -WEFT_ESTALECHAIN;
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
}

bool chains_target_addr(struct store_server *s, uint32_t target, char *buf, size_t cap)
{
	bool found = false;
	pthread_rwlock_rdlock(&s->chains_lock);
	for (uint32_t i = 0; s->have_chains && i < s->chains.ntargets; i++) {
		if (s->chains.targets[i].id == target) {
			snprintf(buf, cap, "%s", s->chains.targets[i].addr);
			found = true;
			break;
		}
	}
	pthread_rwlock_unlock(&s->chains_lock);
	return found;
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
	struct wbuf w;
	wbuf_init(&w);
	weft_target_heartbeat_encode(&w, &m);
	uint64_t sent = loop_now_ms();
	uint32_t timeout = s->heartbeat_ms * 2 < 2000 ? 2000 : s->heartbeat_ms * 2;
	struct frame *rep = NULL;
	int rc = rpc_call(s->meta, WEFT_OP_TARGET_HEARTBEAT, &w, NULL, 0, (int)timeout, &rep);
	if (rc == 0) {
		struct weft_msg_heartbeat_reply r;
		const char *why = NULL;
		if (weft_heartbeat_reply_decode(rep->payload, rep->h.payload_len, &r, &why)) {
			log_error("heartbeat reply from meta %s: %s", s->meta_addr, why);
			rc = -WEFT_EPROTO;
		} else {
			set_lease(s, sent, r.lease_ms);
			atomic_store(&s->meta_chains_version, r.chains_version);
		}
	}
	frame_free(rep);
	return rc;
}

/* RESYNC_PROGRESS to meta while syncing, and once more (zeros) when it ends. */
static void report_progress(struct store_server *s, bool *was)
{
	bool active = resync_active(s);
	if (!active && !*was)
		return;
	*was = active;
	struct weft_msg_resync_progress m;
	resync_progress(s, &m);
	struct wbuf w;
	wbuf_init(&w);
	weft_resync_progress_encode(&w, &m);
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
		int rc = beat(s);
		if (rc == -ENOENT || rc == -ESTALE) {
			log_warn("meta %s does not know target %u: registering again", s->meta_addr,
				 s->target_id);
			rc = hb_register(s, false, NULL);
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
		rc = chains_refresh(s, false);
		if (rc)
			log_warn("fetching chain tables from meta %s: %s", s->meta_addr,
				 weft_strerror(rc));
		report_progress(s, &syncing);
	}
	return NULL;
}

int hb_start(struct store_server *s)
{
	int rc = pthread_create(&s->hb_thread, NULL, hb_main, s);
	if (rc)
		return -rc;
	s->hb_started = true;
	return 0;
}

void hb_stop(struct store_server *s)
{
	pthread_mutex_lock(&s->hb_lock);
	s->hb_stop = true;
	pthread_cond_broadcast(&s->hb_cond);
	pthread_mutex_unlock(&s->hb_lock);
	if (s->hb_started)
		pthread_join(s->hb_thread, NULL);
	s->hb_started = false;
}
