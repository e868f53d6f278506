/* Capabilities at the store: a client node's object requests are served only with a
 * capability meta minted for that node, that file and enough rights, still valid, whose
 * node meta has not revoked and whose session meta has not evicted (proto.h has the
 * format, net/auth.h the keys). Checked on the loop thread as a request is decoded, with
 * no call to meta: one HMAC-SHA256 over 41 bytes and a table lookup. Stores and meta are
 * exempt (chain forwarding, resync, repair, meta's deleter and probes).
 *
 * Refusals: EACCES with a one-line detail ("OBJ_WRITE of ino 12: capability for another
 * file"), or WEFT_ECAPEXPIRED (the client renews at meta and sends again); logged at most
 * 5 lines per 10 s for each kind of refusal (so every kind shows, and a flood does not). */
#include "store/server_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "net/auth.h"
#include "net/nodetab.h"
#include "weft/err.h"

enum refusal { R_NONE, R_PERIOD, R_MAC, R_INO, R_RIGHTS, R_REVOKED, R_EVICTED, R_EXPIRED, R_KINDS };
static struct log_limit refused_lines[R_KINDS] = {
	LOG_LIMIT_INIT, LOG_LIMIT_INIT, LOG_LIMIT_INIT, LOG_LIMIT_INIT,
	LOG_LIMIT_INIT, LOG_LIMIT_INIT, LOG_LIMIT_INIT, LOG_LIMIT_INIT,
};

void store_caps_init(struct store_server *s)
{
	pthread_mutex_init(&s->caps_lock, NULL);
}

void store_caps_fini(struct store_server *s)
{
	free(s->fenced);
	s->fenced = NULL;
	s->nfenced = 0;
	memset(s->capk, 0, sizeof(s->capk));
	pthread_mutex_destroy(&s->caps_lock);
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void store_caps_fenced(struct store_server *s, const void *p, size_t len)
{
	size_t n = len / 8;
	uint64_t *v = n ? malloc(n * sizeof(*v)) : NULL;
	if (n && !v) {
		log_warn("NODES_CHANGED: no memory for %zu evicted sessions", n);
		return;
	}
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		uint64_t x = 0;
		for (int j = 7; j >= 0; j--)
			x = x << 8 | b[i * 8 + (size_t)j];
		v[i] = x;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp64);
	pthread_mutex_lock(&s->caps_lock);
	free(s->fenced);
	s->fenced = v;
	s->nfenced = n;
	pthread_mutex_unlock(&s->caps_lock);
}

/* caps_lock held: the cap key of period, derived once */
static const uint8_t *cap_key(struct store_server *s, uint32_t period)
{
	size_t n = sizeof(s->capk) / sizeof(s->capk[0]), victim = 0;
	for (size_t i = 0; i < n; i++) {
		if (s->capk[i].set && s->capk[i].period == period)
			return s->capk[i].k;
		if (!s->capk[i].set || s->capk[i].period < s->capk[victim].period)
			victim = i;
	}
	auth_cap_key(s->key.svc, period, s->capk[victim].k);
	s->capk[victim].period = period;
	s->capk[victim].set = true;
	return s->capk[victim].k;
}

static bool fenced(const struct store_server *s, uint64_t session)
{
	return session && s->nfenced &&
	       bsearch(&session, s->fenced, s->nfenced, sizeof(session), cmp64) != NULL;
}

/* 0, or the refusal's status with why and its kind filled */
static int check(struct store_server *s, struct conn *c, uint64_t ino, uint8_t need,
		 const uint8_t raw[WEFT_CAP_LEN], char *why, size_t whylen, enum refusal *kind)
{
	static const uint8_t zero[WEFT_CAP_LEN];
	if (memcmp(raw, zero, WEFT_CAP_LEN) == 0) {
		snprintf(why, whylen, "no capability");
		*kind = R_NONE;
		return -EACCES;
	}
	struct weft_cap cap;
	auth_cap_parse(raw, &cap);
	uint64_t now = auth_realtime_ms();
	uint32_t cur = auth_cap_period(now);
	if (cap.period + 1 < cur || cap.period > cur + 1) {
		snprintf(why, whylen, "capability of key period %" PRIu32 " (now %" PRIu32 ")",
			 cap.period, cur);
		*kind = R_PERIOD;
		return -EACCES;
	}
	const char *node = conn_peer_name(c);
	pthread_mutex_lock(&s->caps_lock);
	bool mac_ok = auth_cap_mac_ok(cap_key(s, cap.period), raw, node);
	bool evicted = mac_ok && fenced(s, cap.session);
	pthread_mutex_unlock(&s->caps_lock);
	if (!mac_ok) {
		snprintf(why, whylen, "capability forged, altered or of another node");
		*kind = R_MAC;
		return -EACCES;
	}
	if (cap.ino != ino) {
		snprintf(why, whylen, "capability for another file (ino %" PRIu64 ")", cap.ino);
		*kind = R_INO;
		return -EACCES;
	}
	if ((cap.rights & need) != need) {
		snprintf(why, whylen, "capability does not allow %s",
			 need & WEFT_CAP_WRITE ? "writing" : "reading");
		*kind = R_RIGHTS;
		return -EACCES;
	}
	uint8_t role;
	uint32_t serial;
	bool revoked = false;
	if (nodetab_get(s->nodes, node, &role, &serial, &revoked, NULL) && revoked) {
		snprintf(why, whylen, "capability of revoked node %s", node);
		*kind = R_REVOKED;
		return -EACCES;
	}
	if (evicted) {
		snprintf(why, whylen, "capability of evicted session %" PRIu64, cap.session);
		*kind = R_EVICTED;
		return -WEFT_EEVICTED;
	}
	if (cap.expiry_ms <= now) {
		snprintf(why, whylen, "capability expired %" PRIu64 " ms ago", now - cap.expiry_ms);
		*kind = R_EXPIRED;
		return -WEFT_ECAPEXPIRED;
	}
	return 0;
}

bool store_caps_refuse(struct store_server *s, struct conn *c, struct frame *f,
		       const struct sreq *q)
{
	if (conn_peer_role(c) != WEFT_ROLE_CLIENT)
		return false;
	uint64_t ino;
	const uint8_t *raw;
	uint8_t need = WEFT_CAP_READ;
	switch (q->op) {
	case WEFT_OP_OBJ_WRITE: ino = q->m.w.ino; raw = q->m.w.cap; need |= WEFT_CAP_WRITE; break;
	case WEFT_OP_OBJ_TRUNCATE: ino = q->m.t.ino; raw = q->m.t.cap; need |= WEFT_CAP_WRITE; break;
	case WEFT_OP_OBJ_FSYNC: ino = q->m.sy.ino; raw = q->m.sy.cap; need |= WEFT_CAP_WRITE; break;
	case WEFT_OP_OBJ_READ: ino = q->m.r.ino; raw = q->m.r.cap; break;
	case WEFT_OP_OBJ_STAT: ino = q->m.id.ino; raw = q->m.id.cap; break;
	case WEFT_OP_OBJ_EXTENT: ino = q->m.x.ino; raw = q->m.x.cap; break;
	default: return false;
	}
	char why[160];
	enum refusal kind = R_NONE;
	int rc = check(s, c, ino, need, raw, why, sizeof(why), &kind);
	if (rc == 0)
		return false;
	unsigned dropped;
	/* a client renews before expiry: an expired one is worth a line too */
	if (log_limit_ok(&refused_lines[kind], 5, 10000, &dropped))
		log_warn("refused %s of ino %" PRIu64 " from %s (client \"%s\"): %s%s",
			 proto_op_name(q->op), ino, conn_peer(c), conn_peer_name(c), why,
			 dropped ? " (and more not logged)" : "");
	conn_reply_error(c, f, rc, 0, "%s of ino %" PRIu64 ": %s", proto_op_name(q->op), ino, why);
	frame_free(f);
	return true;
}
