/* Leases in meta's memory: see lease.h. */
#include "meta/lease.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "net/conn.h"

#define LEASE_BUCKETS 8192

struct holder {
	uint64_t session;
	uint64_t expiry_ms;
	uint32_t pins;   /* opens: the lease lasts until they are released */
	bool wb;         /* may have buffered attributes (meta_leases_wb_claim) */
};

struct lnode {
	struct lnode *next;
	uint64_t ino;
	int busy;        /* mutations parked or committing */
	/* a directory claimed for asynchronous creates (meta_leases_claim) until claim_until */
	uint64_t claim_session, claim_until;
	uint32_t n, cap;
	struct holder *h;
};

struct binding {
	struct conn *c;
	uint64_t session;
	bool fenced;
};

struct meta_leases {
	pthread_mutex_t lock;
	uint32_t lease_ms;
	size_t count;
	struct lnode *buckets[LEASE_BUCKETS];
	struct binding *b;
	size_t nb, capb;
	uint64_t *evicted;
	size_t nev, capev;
	uint64_t *recallers;   /* sessions that answer recalls (unordered) */
	size_t nrc, caprc;
};

int meta_leases_new(uint32_t lease_ms, struct meta_leases **out)
{
	struct meta_leases *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	l->lease_ms = lease_ms;
	*out = l;
	return 0;
}

void meta_leases_free(struct meta_leases *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < LEASE_BUCKETS; i++)
		while (l->buckets[i]) {
			struct lnode *n = l->buckets[i];
			l->buckets[i] = n->next;
			free(n->h);
			free(n);
		}
	for (size_t i = 0; i < l->nb; i++)
		conn_put(l->b[i].c);
	free(l->b);
	free(l->evicted);
	free(l->recallers);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

uint32_t meta_leases_ms(const struct meta_leases *l)
{
	return l->lease_ms;
}

/* ---- connections ---- */

static struct binding *binding_of(struct meta_leases *l, struct conn *c)
{
	for (size_t i = 0; i < l->nb; i++)
		if (l->b[i].c == c)
			return &l->b[i];
	return NULL;
}

void meta_leases_bind(struct meta_leases *l, struct conn *c, uint64_t session)
{
	pthread_mutex_lock(&l->lock);
	struct binding *b = binding_of(l, c);
	if (!b && l->nb == l->capb) {
		size_t nc = l->capb ? l->capb * 2 : 16;
		struct binding *v = realloc(l->b, nc * sizeof(*v));
		if (v) {
			l->b = v;
			l->capb = nc;
		}
	}
	if (!b && l->nb < l->capb) {
		b = &l->b[l->nb++];
		b->c = c;
		conn_get(c);
	}
	if (b && b->session != session) {
		b->session = session;
		b->fenced = false;
	}
	pthread_mutex_unlock(&l->lock);
}

void meta_leases_unbind(struct meta_leases *l, struct conn *c)
{
	pthread_mutex_lock(&l->lock);
	struct binding *b = binding_of(l, c);
	struct conn *put = NULL;
	if (b) {
		put = b->c;
		*b = l->b[--l->nb];
	}
	pthread_mutex_unlock(&l->lock);
	if (put)
		conn_put(put);
}

uint64_t meta_leases_session_of(struct meta_leases *l, struct conn *c, bool *fenced)
{
	pthread_mutex_lock(&l->lock);
	struct binding *b = binding_of(l, c);
	uint64_t s = b ? b->session : 0;
	if (fenced)
		*fenced = b && b->fenced;
	pthread_mutex_unlock(&l->lock);
	return s;
}

struct conn *meta_leases_conn_of(struct meta_leases *l, uint64_t session)
{
	struct conn *c = NULL;
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->nb && !c; i++)
		if (l->b[i].session == session && !l->b[i].fenced) {
			c = l->b[i].c;
			conn_get(c);
		}
	pthread_mutex_unlock(&l->lock);
	return c;
}

/* ---- the table ---- */

static struct lnode **slot_of(struct meta_leases *l, uint64_t ino)
{
	struct lnode **p = &l->buckets[(ino * 0x9e3779b97f4a7c15ull) >> 51];
	while (*p && (*p)->ino != ino)
		p = &(*p)->next;
	return p;
}

static bool live(const struct holder *h, uint64_t now_ms)
{
	return h->pins || h->expiry_ms > now_ms;
}

/* Nothing keeps n: no holder, no mutation, no claim (by now_ms; 0: any claim keeps it). */
static bool idle(const struct lnode *n, uint64_t now_ms)
{
	return n->n == 0 && n->busy == 0 && n->claim_until <= now_ms;
}

static bool claimed_by_other(const struct lnode *n, uint64_t session, uint64_t now_ms)
{
	return n->claim_session && n->claim_session != session && n->claim_until > now_ms;
}

/* Drops dead holders of *p and the node itself when nothing is left. */
static void prune(struct meta_leases *l, struct lnode **p, uint64_t now_ms)
{
	struct lnode *n = *p;
	uint32_t k = 0;
	for (uint32_t i = 0; i < n->n; i++)
		if (live(&n->h[i], now_ms))
			n->h[k++] = n->h[i];
	l->count -= n->n - k;
	n->n = k;
	if (idle(n, now_ms)) {
		*p = n->next;
		free(n->h);
		free(n);
	}
}

static bool is_recaller(const struct meta_leases *l, uint64_t session)
{
	for (size_t i = 0; i < l->nrc; i++)
		if (l->recallers[i] == session)
			return true;
	return false;
}

void meta_leases_recaller(struct meta_leases *l, uint64_t session)
{
	pthread_mutex_lock(&l->lock);
	if (!is_recaller(l, session) && l->nrc == l->caprc) {
		size_t nc = l->caprc ? l->caprc * 2 : 16;
		uint64_t *v = realloc(l->recallers, nc * sizeof(*v));
		if (v) {
			l->recallers = v;
			l->caprc = nc;
		}
	}
	if (!is_recaller(l, session) && l->nrc < l->caprc)
		l->recallers[l->nrc++] = session;
	pthread_mutex_unlock(&l->lock);
}

uint32_t meta_leases_grant(struct meta_leases *l, uint64_t session, uint64_t ino, bool pin,
			   uint64_t now_ms)
{
	if (!session || !ino)
		return 0;
	uint32_t granted = 0;
	pthread_mutex_lock(&l->lock);
	if (!is_recaller(l, session))
		goto out;
	struct lnode **p = slot_of(l, ino);
	struct lnode *n = *p;
	if (!n && (n = calloc(1, sizeof(*n)))) {
		n->ino = ino;
		*p = n;
	}
	if (!n)
		goto out;
	struct holder *h = NULL;
	for (uint32_t i = 0; i < n->n && !h; i++)
		if (n->h[i].session == session)
			h = &n->h[i];
	/* a directory another session claimed: its names may be about to change unseen;
	 * a file another session buffers attributes of: they may differ from the reply's
	 * (a READDIRPLUS entry; GETATTR and LOOKUP recall them first) */
	bool blocked = n->busy || claimed_by_other(n, session, now_ms);
	for (uint32_t i = 0; i < n->n && !blocked; i++)
		blocked = n->h[i].wb && n->h[i].pins && n->h[i].session != session;
	if (!h && (pin || !blocked)) {
		if (n->n == n->cap) {
			uint32_t nc = n->cap ? n->cap * 2 : 2;
			struct holder *v = realloc(n->h, nc * sizeof(*v));
			if (!v)
				goto out_prune;
			n->h = v;
			n->cap = nc;
		}
		h = &n->h[n->n++];
		*h = (struct holder){.session = session};
		l->count++;
	}
	if (!h)
		goto out_prune;
	if (pin)
		h->pins++;
	/* a busy inode's reply may show what a mutation is about to change: no caching */
	if (!blocked) {
		h->expiry_ms = now_ms + l->lease_ms;
		granted = l->lease_ms;
		if (n->claim_session == session && n->claim_until > now_ms)
			n->claim_until = h->expiry_ms; /* the claim lives as long as the lease */
	}
out_prune:
	prune(l, p, now_ms);
out:
	pthread_mutex_unlock(&l->lock);
	return granted;
}

static struct holder *find(struct meta_leases *l, uint64_t session, uint64_t ino,
			   struct lnode ***pp)
{
	struct lnode **p = slot_of(l, ino);
	*pp = p;
	if (!*p)
		return NULL;
	for (uint32_t i = 0; i < (*p)->n; i++)
		if ((*p)->h[i].session == session)
			return &(*p)->h[i];
	return NULL;
}

uint32_t meta_leases_renew(struct meta_leases *l, uint64_t session, uint64_t ino,
			   uint64_t now_ms)
{
	if (!session || !ino)
		return 0;
	uint32_t granted = 0;
	pthread_mutex_lock(&l->lock);
	struct lnode **p;
	struct holder *h = find(l, session, ino, &p);
	/* busy blocks a renewal unless session holds the claim: then the mutations under
	 * way are its own (another session's takes the claim back as it starts) */
	bool own = *p && (*p)->claim_session == session && (*p)->claim_until > now_ms;
	if (h && ((*p)->busy == 0 || own) && h->expiry_ms > now_ms && is_recaller(l, session)) {
		h->expiry_ms = now_ms + l->lease_ms;
		granted = l->lease_ms;
		if ((*p)->claim_session == session && (*p)->claim_until > now_ms)
			(*p)->claim_until = h->expiry_ms;
	}
	pthread_mutex_unlock(&l->lock);
	return granted;
}

void meta_leases_wb_claim(struct meta_leases *l, uint64_t session, uint64_t ino)
{
	pthread_mutex_lock(&l->lock);
	struct lnode **p;
	struct holder *h = find(l, session, ino, &p);
	if (h && h->pins)
		h->wb = true;
	pthread_mutex_unlock(&l->lock);
}

uint64_t meta_leases_wb_take(struct meta_leases *l, uint64_t ino, uint64_t except)
{
	uint64_t who = 0;
	pthread_mutex_lock(&l->lock);
	struct lnode **p = slot_of(l, ino);
	for (uint32_t i = 0; *p && (*p)->ino == ino && i < (*p)->n && !who; i++) {
		struct holder *h = &(*p)->h[i];
		if (h->wb && h->session != except) {
			h->wb = false;
			who = h->pins ? h->session : 0;
		}
	}
	pthread_mutex_unlock(&l->lock);
	return who;
}

void meta_leases_claim(struct meta_leases *l, uint64_t session, uint64_t ino, uint64_t now_ms)
{
	pthread_mutex_lock(&l->lock);
	struct lnode **p = slot_of(l, ino);
	struct lnode *n = *p;
	if (!n && is_recaller(l, session) && (n = calloc(1, sizeof(*n)))) {
		n->ino = ino;
		*p = n;
	}
	if (n && is_recaller(l, session) && !claimed_by_other(n, session, now_ms)) {
		n->claim_session = session;
		n->claim_until = now_ms + l->lease_ms;
	}
	pthread_mutex_unlock(&l->lock);
}

uint64_t meta_leases_claim_take(struct meta_leases *l, uint64_t ino, uint64_t except,
				uint64_t now_ms)
{
	uint64_t who = 0;
	pthread_mutex_lock(&l->lock);
	struct lnode **p = slot_of(l, ino);
	if (*p && claimed_by_other(*p, except, now_ms)) {
		who = (*p)->claim_session;
		(*p)->claim_session = 0;
		(*p)->claim_until = 0;
		prune(l, p, now_ms);
	}
	pthread_mutex_unlock(&l->lock);
	return who;
}

void meta_leases_unpin(struct meta_leases *l, uint64_t session, uint64_t ino)
{
	pthread_mutex_lock(&l->lock);
	struct lnode **p;
	struct holder *h = find(l, session, ino, &p);
	if (h && h->pins && --h->pins == 0)
		h->wb = false; /* the client flushed at its close */
	if (*p && (*p)->ino == ino)
		prune(l, p, 0); /* now 0: drops only what nothing keeps (no pin, no expiry) */
	pthread_mutex_unlock(&l->lock);
}

size_t meta_leases_holders(struct meta_leases *l, uint64_t ino, uint64_t except,
			   uint64_t now_ms, uint64_t *out, size_t max)
{
	size_t k = 0;
	pthread_mutex_lock(&l->lock);
	struct lnode **p = slot_of(l, ino);
	if (*p) {
		prune(l, p, now_ms); /* may free the node: *p is then another inode's, or NULL */
		for (uint32_t i = 0; *p && (*p)->ino == ino && i < (*p)->n && k < max; i++)
			if ((*p)->h[i].session != except)
				out[k++] = (*p)->h[i].session;
	}
	pthread_mutex_unlock(&l->lock);
	return k;
}

void meta_leases_busy(struct meta_leases *l, uint64_t ino, int delta)
{
	pthread_mutex_lock(&l->lock);
	struct lnode **p = slot_of(l, ino);
	struct lnode *n = *p;
	if (!n && delta > 0 && (n = calloc(1, sizeof(*n)))) {
		n->ino = ino;
		*p = n;
	}
	if (n) {
		n->busy += delta;
		if (n->busy < 0)
			n->busy = 0;
		if (idle(n, 0)) {
			*p = n->next;
			free(n->h);
			free(n);
		}
	}
	pthread_mutex_unlock(&l->lock);
}

void meta_leases_drop(struct meta_leases *l, uint64_t session, uint64_t ino)
{
	pthread_mutex_lock(&l->lock);
	struct lnode **p;
	struct holder *h = find(l, session, ino, &p);
	if (h) {
		/* the holder invalidated its cache; an open keeps only its pin (pages read
		 * after this are of the new state) */
		h->expiry_ms = 0;
		prune(l, p, 0);
	}
	pthread_mutex_unlock(&l->lock);
}

void meta_leases_forget(struct meta_leases *l, uint64_t session, bool evicted)
{
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->nrc; i++)
		if (l->recallers[i] == session) {
			l->recallers[i] = l->recallers[--l->nrc];
			break;
		}
	for (size_t i = 0; i < LEASE_BUCKETS; i++) {
		struct lnode **p = &l->buckets[i];
		while (*p) {
			struct lnode *n = *p;
			for (uint32_t j = 0; j < n->n; j++)
				if (n->h[j].session == session)
					n->h[j].pins = 0, n->h[j].expiry_ms = 0;
			if (n->claim_session == session)
				n->claim_session = 0, n->claim_until = 0;
			prune(l, p, 0);
			if (*p == n)
				p = &n->next;
		}
	}
	if (evicted) {
		for (size_t i = 0; i < l->nb; i++)
			if (l->b[i].session == session)
				l->b[i].fenced = true;
		if (l->nev == l->capev) {
			size_t nc = l->capev ? l->capev * 2 : 16;
			uint64_t *v = realloc(l->evicted, nc * sizeof(*v));
			if (v) {
				l->evicted = v;
				l->capev = nc;
			}
		}
		if (l->nev < l->capev)
			l->evicted[l->nev++] = session;
	}
	pthread_mutex_unlock(&l->lock);
}

bool meta_leases_evicted(struct meta_leases *l, uint64_t session)
{
	bool r = false;
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->nev && !r; i++)
		r = l->evicted[i] == session;
	pthread_mutex_unlock(&l->lock);
	return r;
}

size_t meta_leases_evicted_list(struct meta_leases *l, uint64_t *out, size_t max,
				size_t *total)
{
	pthread_mutex_lock(&l->lock);
	size_t n = l->nev < max ? l->nev : max;
	if (n)
		memcpy(out, l->evicted + (l->nev - n), n * sizeof(*out));
	*total = l->nev;
	pthread_mutex_unlock(&l->lock);
	return n;
}

void meta_leases_sweep(struct meta_leases *l, uint64_t now_ms)
{
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < LEASE_BUCKETS; i++) {
		struct lnode **p = &l->buckets[i];
		while (*p) {
			struct lnode *n = *p;
			prune(l, p, now_ms);
			if (*p == n)
				p = &n->next;
		}
	}
	pthread_mutex_unlock(&l->lock);
}

size_t meta_leases_count(struct meta_leases *l)
{
	pthread_mutex_lock(&l->lock);
	size_t n = l->count;
	pthread_mutex_unlock(&l->lock);
	return n;
}
