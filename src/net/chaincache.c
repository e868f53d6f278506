/* The chain-table cache of a cluster member: lookups, single-flight refresh, one
 * connection per target. See chaincache.h for the design. */
#include "net/chaincache.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "net/chainfetch.h"
#include "net/rpc.h"
#include "weft/err.h"

/* After a failed fetch, lookups of chains the table has do not wait for meta again
 * before this long: the table they have is used (a store refuses it if it is too old). */
#define FETCH_BACKOFF_MS 1000

/* An rpc for one (target, address), made once and kept until the cache is freed. */
struct cc_ep {
	struct cc_ep *next;
	uint32_t id;
	char addr[WEFT_ADDR_MAX + 1];
	struct rpc *rpc;
};

struct chaincache {
	struct chaincache_params p;
	char name[WEFT_NODE_MAX + 1];
	char who[32];

	pthread_rwlock_t lock;          /* guards set and rpcs; held for lookups only */
	struct weft_chain_set set;      /* targets sorted by id */
	struct rpc **rpcs;              /* rpcs[i]: the connection to set.targets[i] */

	atomic_uint_fast64_t gen;       /* bumped (under lock) by every install */
	atomic_uint_fast64_t epoch;     /* set.epoch */
	atomic_bool stale;
	atomic_int_fast64_t retry_at_ms; /* no waiting refresh of a known chain before this */
	atomic_uint_fast64_t fetches, failures;

	pthread_mutex_t refresh_lock;   /* one fetch at a time; guards eps, tries, last_rc */
	struct cc_ep *eps;
	atomic_uint_fast64_t tries;     /* fetches attempted (read unlocked to compare) */
	int last_rc;                    /* result of the last one */
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fetch_meta(void *arg, struct weft_chain_set *out)
{
	struct chaincache *cc = arg;
	return chain_set_fetch(cc->p.meta, cc->p.meta_timeout_ms, out);
}

int chaincache_new(const struct chaincache_params *p, struct chaincache **out)
{
	struct chaincache *cc = calloc(1, sizeof(*cc));
	if (!cc)
		return -ENOMEM;
	cc->p = *p;
	snprintf(cc->name, sizeof(cc->name), "%s", p->name ? p->name : "");
	snprintf(cc->who, sizeof(cc->who), "%s", p->who ? p->who : "chain cache");
	cc->p.name = cc->name;
	cc->p.who = cc->who;
	if (!cc->p.fetch) {
		cc->p.fetch = fetch_meta;
		cc->p.fetch_arg = cc;
	}
	if (!cc->p.connect_timeout_ms)
		cc->p.connect_timeout_ms = 3000;
	pthread_rwlock_init(&cc->lock, NULL);
	pthread_mutex_init(&cc->refresh_lock, NULL);
	atomic_init(&cc->stale, true); /* no table yet */
	*out = cc;
	return 0;
}

void chaincache_free(struct chaincache *cc)
{
	if (!cc)
		return;
	for (struct cc_ep *e = cc->eps, *next; e; e = next) {
		next = e->next;
		rpc_free(e->rpc);
		free(e);
	}
	free(cc->rpcs);
	proto_chain_set_free(&cc->set);
	pthread_rwlock_destroy(&cc->lock);
	pthread_mutex_destroy(&cc->refresh_lock);
	free(cc);
}

uint64_t chaincache_gen(struct chaincache *cc)
{
	return atomic_load(&cc->gen);
}

uint64_t chaincache_epoch(struct chaincache *cc)
{
	return atomic_load(&cc->epoch);
}

void chaincache_mark_stale(struct chaincache *cc)
{
	atomic_store(&cc->stale, true);
	atomic_store(&cc->retry_at_ms, 0);
}

bool chaincache_announce(struct chaincache *cc, uint64_t epoch)
{
	if (atomic_load(&cc->gen) && epoch == atomic_load(&cc->epoch))
		return atomic_load(&cc->stale);
	chaincache_mark_stale(cc);
	return true;
}

bool chaincache_stale(struct chaincache *cc)
{
	return atomic_load(&cc->stale);
}

void chaincache_counts(struct chaincache *cc, uint64_t *fetches, uint64_t *failures)
{
	*fetches = atomic_load(&cc->fetches);
	*failures = atomic_load(&cc->failures);
}

static int target_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct weft_chain_target *)a)->id;
	uint32_t y = ((const struct weft_chain_target *)b)->id;
	return x < y ? -1 : x > y;
}

/* Index of target id in set (sorted), or -1. Lock held. */
static int find_target(const struct weft_chain_set *s, uint32_t id)
{
	uint32_t lo = 0, hi = s->ntargets;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->targets[mid].id == id)
			return (int)mid;
		if (s->targets[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The rpc for (id, addr), made if new. refresh_lock held. */
static struct rpc *ep_rpc(struct chaincache *cc, uint32_t id, const char *addr)
{
	for (struct cc_ep *e = cc->eps; e; e = e->next)
		if (e->id == id && strcmp(e->addr, addr) == 0)
			return e->rpc;
	struct cc_ep *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	struct rpc_params rp = {.loop = cc->p.loop, .key = cc->p.key, .addr = addr,
				.default_port = cc->p.default_port, .role = cc->p.role,
				.name = cc->name, .connect_timeout_ms = cc->p.connect_timeout_ms};
	if (rpc_new(&rp, &e->rpc)) {
		/* an address that does not parse: connecting to it fails with -ENXIO */
		log_warn("%s: target %u has a bad address '%s'", cc->who, id, addr);
		free(e);
		return NULL;
	}
	e->id = id;
	snprintf(e->addr, sizeof(e->addr), "%s", addr);
	e->next = cc->eps;
	cc->eps = e;
	return e->rpc;
}

/* chaincache_refresh; *fetched says whether this call fetched the tables itself (false:
 * it joined a refresh another thread had started, maybe before the caller's news). */
static int refresh(struct chaincache *cc, uint64_t seen, bool *fetched)
{
	*fetched = false;
	uint64_t tried = atomic_load(&cc->tries);
	pthread_mutex_lock(&cc->refresh_lock);
	if (atomic_load(&cc->gen) != seen) {
		pthread_mutex_unlock(&cc->refresh_lock); /* another thread just did it */
		return 0;
	}
	if (atomic_load(&cc->tries) != tried) {
		/* a fetch failed while we waited: meta is away; do not queue behind it again */
		int rc = cc->last_rc;
		pthread_mutex_unlock(&cc->refresh_lock);
		return rc;
	}
	/* cleared before the fetch: a mark made while it runs is kept for the next one */
	atomic_store(&cc->stale, false);
	*fetched = true;
	struct weft_chain_set set;
	int rc = cc->p.fetch(cc->p.fetch_arg, &set);
	struct rpc **rpcs = NULL;
	if (rc == 0 && !(rpcs = calloc(set.ntargets ? set.ntargets : 1, sizeof(*rpcs)))) {
		proto_chain_set_free(&set);
		rc = -ENOMEM;
	}
	cc->last_rc = rc;
	atomic_fetch_add(&cc->tries, 1);
	if (rc) {
		atomic_fetch_add(&cc->failures, 1);
		atomic_store(&cc->retry_at_ms, now_ms() + FETCH_BACKOFF_MS);
		atomic_store(&cc->stale, true);
		pthread_mutex_unlock(&cc->refresh_lock);
		log_debug("%s: fetching chain tables: %s", cc->who, weft_strerror(rc));
		return rc;
	}
	if (set.ntargets > 1)
		qsort(set.targets, set.ntargets, sizeof(*set.targets), target_cmp);
	for (uint32_t i = 0; i < set.ntargets; i++)
		rpcs[i] = ep_rpc(cc, set.targets[i].id, set.targets[i].addr);
	pthread_rwlock_wrlock(&cc->lock);
	uint64_t old_epoch = cc->set.epoch;
	bool first = atomic_load(&cc->gen) == 0;
	struct weft_chain_set old = cc->set;
	struct rpc **old_rpcs = cc->rpcs;
	cc->set = set;
	cc->rpcs = rpcs;
	atomic_store(&cc->epoch, set.epoch);
	atomic_fetch_add(&cc->gen, 1);
	pthread_rwlock_unlock(&cc->lock);
	atomic_fetch_add(&cc->fetches, 1);
	/* the targets meta marked offline, read while no other refresh can free this set
	 * (once refresh_lock is let go, the next one may: a use after free ASan caught in a
	 * failover test); their rpcs live as long as the cache (eps) */
	struct rpc **drop = NULL;
	size_t ndrop = 0;
	if (cc->p.drop_offline && (drop = calloc(set.ntargets ? set.ntargets : 1, sizeof(*drop))))
		for (uint32_t i = 0; i < set.ntargets; i++)
			if (set.targets[i].state == WEFT_MEMBER_OFFLINE && rpcs[i])
				drop[ndrop++] = rpcs[i];
	pthread_mutex_unlock(&cc->refresh_lock);
	if (first || set.epoch != old_epoch)
		log_info("%s: chain tables version %" PRIu64 ": %u targets, %u/%u/%u chains of 1/2/3",
			 cc->who, set.epoch, set.ntargets, set.nchains[0], set.nchains[1],
			 set.nchains[2]);
	proto_chain_set_free(&old);
	free(old_rpcs);
	/* a target meta marked offline loses its connection: requests waiting on a silent or
	 * frozen host fail now and go to the other members (the rpc reconnects on next use) */
	for (size_t i = 0; i < ndrop; i++)
		rpc_drop(drop[i]);
	free(drop);
	if (cc->p.installed)
		cc->p.installed(cc->p.installed_arg);
	return 0;
}

int chaincache_refresh(struct chaincache *cc, uint64_t seen)
{
	bool fetched;
	return refresh(cc, seen, &fetched);
}

int chaincache_snapshot(struct chaincache *cc, struct weft_chain_set *out)
{
	memset(out, 0, sizeof(*out));
	int rc = 0;
	pthread_rwlock_rdlock(&cc->lock);
	if (atomic_load(&cc->gen) == 0) {
		rc = -ENOENT;
		goto out;
	}
	out->epoch = cc->set.epoch;
	out->ntargets = cc->set.ntargets;
	if (cc->set.ntargets &&
	    !(out->targets = malloc(cc->set.ntargets * sizeof(*out->targets)))) {
		rc = -ENOMEM;
		goto out;
	}
	if (cc->set.ntargets)
		memcpy(out->targets, cc->set.targets, cc->set.ntargets * sizeof(*out->targets));
	for (int r = 0; r < WEFT_REPLICAS_MAX; r++) {
		out->nchains[r] = cc->set.nchains[r];
		if (!cc->set.nchains[r])
			continue;
		if (!(out->chains[r] = malloc(cc->set.nchains[r] * sizeof(*out->chains[r])))) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(out->chains[r], cc->set.chains[r], cc->set.nchains[r] * sizeof(*out->chains[r]));
	}
out:
	pthread_rwlock_unlock(&cc->lock);
	if (rc)
		proto_chain_set_free(out);
	return rc;
}

/* Copies the chain if the table has it at min_ver or later. */
static bool lookup(struct chaincache *cc, uint8_t replicas, uint32_t id, uint64_t min_ver,
		   struct weft_chain *out)
{
	pthread_rwlock_rdlock(&cc->lock);
	const struct weft_chain *c = proto_chain_set_get(&cc->set, replicas, id);
	bool ok = c && c->version >= min_ver;
	if (ok)
		*out = *c;
	pthread_rwlock_unlock(&cc->lock);
	return ok;
}

int chaincache_chain(struct chaincache *cc, uint8_t replicas, uint32_t id, uint64_t min_ver,
		     struct weft_chain *out)
{
	uint64_t g = atomic_load(&cc->gen);
	if (atomic_load(&cc->stale) && (g == 0 || now_ms() >= atomic_load(&cc->retry_at_ms))) {
		chaincache_refresh(cc, g);
		g = atomic_load(&cc->gen);
	}
	if (lookup(cc, replicas, id, min_ver, out))
		return 0;
	/* a chain we do not know (yet): meta built it after our table was fetched */
	bool fetched;
	int rc = refresh(cc, g, &fetched);
	if (lookup(cc, replicas, id, min_ver, out))
		return 0;
	if (rc == 0 && !fetched) {
		/* we joined a refresh another thread started, perhaps before meta made the
		 * chain or version we were asked for: one fetch more, started after our
		 * news. A third install in between is as good (fetches are serialised, so it
		 * began after the one we joined ended) and makes this return at once. */
		rc = refresh(cc, atomic_load(&cc->gen), &fetched);
		if (lookup(cc, replicas, id, min_ver, out))
			return 0;
	}
	if (rc)
		log_warn("%s: chain %u of %u replicas unknown here and the tables could not be "
			 "fetched: %s", cc->who, id, replicas, weft_strerror(rc));
	return -WEFT_ESTALECHAIN;
}

bool chaincache_target_addr(struct chaincache *cc, uint32_t id, char *buf, size_t cap)
{
	pthread_rwlock_rdlock(&cc->lock);
	int i = find_target(&cc->set, id);
	if (i >= 0)
		snprintf(buf, cap, "%s", cc->set.targets[i].addr);
	pthread_rwlock_unlock(&cc->lock);
	return i >= 0;
}

int chaincache_conn(struct chaincache *cc, uint32_t id, struct conn **out)
{
	pthread_rwlock_rdlock(&cc->lock);
	int i = find_target(&cc->set, id);
	struct rpc *r = i >= 0 ? cc->rpcs[i] : NULL;
	pthread_rwlock_unlock(&cc->lock);
	if (!r)
		return -ENXIO;
	return rpc_conn(r, out); /* r lives as long as the cache */
}
