/* Targets and chain tables in LMDB: registration, heartbeats, liveness, table growth. */
#include "meta/chains.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "meta/super.h"

/* targets value v1 (LE): u8 version, u8[16] uuid, u8 state, u64 capacity, u64 free,
 * u64 read_bytes, u64 write_bytes, u64 read_ops, u64 write_ops, i64 last_seen_ns,
 * i64 registered_ns, u16 len + node, u16 len + addr, then (absent in older records)
 * u64 incarnation, u64 wseq, then (absent in older records) u8 flags (META_TARGET_*).
 * chains value v1 (LE): u8 version, u32 owner, u64 version, u8 nmembers,
 * per member u32 target + u8 state (with the flag bits below). nmembers is replicas,
 * or replicas + 1 while a membership moves. Key: u8 replicas, u32 BE chain id. */
#define TARGET_VERSION 1
#define CHAIN_VERSION 1
/* in a member's stored state byte: rebuild_pending */
#define MEMBER_REBUILD_PENDING 0x80
/* in a member's stored state byte: leaving (a move drops it once the newcomer serves) */
#define MEMBER_LEAVING 0x40
#define MEMBER_FLAGS (MEMBER_REBUILD_PENDING | MEMBER_LEAVING)

static int target_encode(const struct meta_target *t, struct wbuf *w)
{
	wbuf_u8(w, TARGET_VERSION);
	wbuf_put(w, t->uuid, 16);
	wbuf_u8(w, t->state);
	wbuf_u64(w, t->capacity);
	wbuf_u64(w, t->free);
	wbuf_u64(w, t->read_bytes);
	wbuf_u64(w, t->write_bytes);
	wbuf_u64(w, t->read_ops);
	wbuf_u64(w, t->write_ops);
	wbuf_u64(w, (uint64_t)t->last_seen_ns);
	wbuf_u64(w, (uint64_t)t->registered_ns);
	wbuf_str(w, t->node, strlen(t->node));
	wbuf_str(w, t->addr, strlen(t->addr));
	wbuf_u64(w, t->incarnation);
	wbuf_u64(w, t->wseq);
	wbuf_u8(w, t->flags);
	return w->err;
}

static void get_str(struct rbuf *r, char *out, size_t max)
{
	uint16_t n = rbuf_u16(r);
	if (n > max) {
		rbuf_fail(r, "string too long");
		n = 0;
	}
	rbuf_get(r, out, n);
	out[n] = '\0';
}

static int target_decode(const MDB_val *k, const MDB_val *v, struct meta_target *t)
{
	struct rbuf r;
	if (k->mv_size != 4)
		return -EIO;
	memset(t, 0, sizeof(*t));
	t->id = meta_get_be32(k->mv_data);
	rbuf_init(&r, v->mv_data, v->mv_size);
	if (rbuf_u8(&r) != TARGET_VERSION)
		return -EIO;
	rbuf_get(&r, t->uuid, 16);
	t->state = rbuf_u8(&r);
	t->capacity = rbuf_u64(&r);
	t->free = rbuf_u64(&r);
	t->read_bytes = rbuf_u64(&r);
	t->write_bytes = rbuf_u64(&r);
	t->read_ops = rbuf_u64(&r);
	t->write_ops = rbuf_u64(&r);
	t->last_seen_ns = (int64_t)rbuf_u64(&r);
	t->registered_ns = (int64_t)rbuf_u64(&r);
	get_str(&r, t->node, WEFT_NODE_MAX);
	get_str(&r, t->addr, WEFT_ADDR_MAX);
	if (rbuf_ok(&r) && rbuf_left(&r) >= 16) {
		t->incarnation = rbuf_u64(&r);
		t->wseq = rbuf_u64(&r);
	}
	if (rbuf_ok(&r) && rbuf_left(&r) == 1)
		t->flags = rbuf_u8(&r);
	return rbuf_ok(&r) && rbuf_left(&r) == 0 ? 0 : -EIO;
}

static int target_put(struct meta_db *db, MDB_txn *txn, const struct meta_target *t)
{
	struct wbuf w;
	uint8_t kb[4];
	wbuf_init(&w);
	int rc = target_encode(t, &w);
	if (rc == 0) {
		meta_be32(kb, t->id);
		MDB_val k = { 4, kb }, v = { w.len, w.data };
		rc = meta_mdb_err(meta_mdb_put(txn, db->targets, &k, &v, 0));
	}
	wbuf_free(&w);
	return rc;
}

int meta_chains_target_get(struct meta_db *db, MDB_txn *txn, uint32_t id,
			   struct meta_target *out)
{
	uint8_t kb[4];
	meta_be32(kb, id);
	MDB_val k = { 4, kb }, v;
	int rc = mdb_get(txn, db->targets, &k, &v);
	if (rc)
		return meta_mdb_err(rc);
	return target_decode(&k, &v, out);
}

/* Loads all targets in id order into a malloc'd array; removed ones only if asked. */
static int targets_load_all(struct meta_db *db, MDB_txn *txn, bool removed,
			    struct meta_target **out, uint32_t *n)
{
	MDB_cursor *cur;
	MDB_stat st;
	int rc = mdb_stat(txn, db->targets, &st);
	*out = NULL;
	*n = 0;
	if (rc)
		return meta_mdb_err(rc);
	if (st.ms_entries == 0)
		return 0;
	struct meta_target *a = calloc(st.ms_entries, sizeof(*a));
	if (!a)
		return -ENOMEM;
	if ((rc = mdb_cursor_open(txn, db->targets, &cur))) {
		free(a);
		return meta_mdb_err(rc);
	}
	MDB_val k, v;
	uint32_t i = 0;
	int err = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && i < st.ms_entries;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		if ((err = target_decode(&k, &v, &a[i])))
			break;
		else if (removed || !(a[i].flags & META_TARGET_REMOVED))
			i++;
	mdb_cursor_close(cur);
	if (!err && rc && rc != MDB_NOTFOUND)
		err = meta_mdb_err(rc);
	if (err) {
		free(a);
		return err;
	}
	*out = a;
	*n = i;
	return 0;
}

/* The targets that are part of the file system (not removed), in id order. */
static int targets_load(struct meta_db *db, MDB_txn *txn, struct meta_target **out, uint32_t *n)
{
	return targets_load_all(db, txn, false, out, n);
}

static void chain_key(uint8_t kb[5], uint8_t replicas, uint32_t id)
{
	kb[0] = replicas;
	meta_be32(kb + 1, id);
}

static int chain_decode(const MDB_val *k, const MDB_val *v, struct weft_chain *c)
{
	const uint8_t *p = v->mv_data;
	if (k->mv_size != 5 || v->mv_size < 14 || p[0] != CHAIN_VERSION)
		return -EIO;
	memset(c, 0, sizeof(*c));
	c->replicas = ((const uint8_t *)k->mv_data)[0];
	c->id = meta_get_be32((const uint8_t *)k->mv_data + 1);
	c->owner = get_le32(p + 1);
	c->version = get_le64(p + 5);
	c->nmembers = p[13];
	if ((c->nmembers != c->replicas && c->nmembers != c->replicas + 1) ||
	    c->nmembers > WEFT_CHAIN_MEMBERS_MAX ||
	    v->mv_size != 14 + 5 * (size_t)c->nmembers)
		return -EIO;
	for (int m = 0; m < c->nmembers; m++) {
		c->members[m].target = get_le32(p + 14 + 5 * m);
		c->members[m].state = p[14 + 5 * m + 4] & ~MEMBER_FLAGS;
		c->members[m].rebuild_pending = p[14 + 5 * m + 4] & MEMBER_REBUILD_PENDING;
		c->members[m].leaving = p[14 + 5 * m + 4] & MEMBER_LEAVING;
	}
	return 0;
}

static int chain_put(struct meta_db *db, MDB_txn *txn, const struct weft_chain *c)
{
	uint8_t kb[5], vb[14 + 5 * WEFT_CHAIN_MEMBERS_MAX];
	chain_key(kb, c->replicas, c->id);
	vb[0] = CHAIN_VERSION;
	put_le32(vb + 1, c->owner);
	put_le64(vb + 5, c->version);
	vb[13] = c->nmembers;
	for (int m = 0; m < c->nmembers; m++) {
		put_le32(vb + 14 + 5 * m, c->members[m].target);
		vb[14 + 5 * m + 4] = c->members[m].state |
				      (c->members[m].rebuild_pending ? MEMBER_REBUILD_PENDING : 0) |
				      (c->members[m].leaving ? MEMBER_LEAVING : 0);
	}
	MDB_val k = { 5, kb }, v = { 14 + 5 * (size_t)c->nmembers, vb };
	return meta_mdb_err(meta_mdb_put(txn, db->chains, &k, &v, 0));
}

int meta_chains_get(struct meta_db *db, MDB_txn *txn, uint8_t replicas, uint32_t id,
		    struct weft_chain *out)
{
	uint8_t kb[5];
	chain_key(kb, replicas, id);
	MDB_val k = { 5, kb }, v;
	int rc = mdb_get(txn, db->chains, &k, &v);
	if (rc)
		return meta_mdb_err(rc);
	return chain_decode(&k, &v, out);
}

int meta_chains_count(struct meta_db *db, MDB_txn *txn, uint8_t replicas, uint32_t *n)
{
	MDB_cursor *cur;
	uint8_t kb[5];
	*n = 0;
	int rc = mdb_cursor_open(txn, db->chains, &cur);
	if (rc)
		return meta_mdb_err(rc);
	/* ids are dense from 0: the last key of the table is n - 1 */
	chain_key(kb, (uint8_t)(replicas + 1), 0);
	MDB_val k = { 5, kb }, v;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == 0)
		rc = mdb_cursor_get(cur, &k, &v, MDB_PREV);
	else if (rc == MDB_NOTFOUND)
		rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
	if (rc == 0 && k.mv_size == 5 && ((uint8_t *)k.mv_data)[0] == replicas)
		*n = meta_get_be32((uint8_t *)k.mv_data + 1) + 1;
	mdb_cursor_close(cur);
	return rc == 0 || rc == MDB_NOTFOUND ? 0 : meta_mdb_err(rc);
}

/* Loads table replicas into a malloc'd array indexed by id. */
static int chains_load(struct meta_db *db, MDB_txn *txn, uint8_t replicas,
		       struct weft_chain **out, uint32_t *n)
{
	int rc = meta_chains_count(db, txn, replicas, n);
	*out = NULL;
	if (rc || *n == 0)
		return rc;
	struct weft_chain *a = calloc(*n, sizeof(*a));
	if (!a)
		return -ENOMEM;
	for (uint32_t i = 0; i < *n; i++)
		if ((rc = meta_chains_get(db, txn, replicas, i, &a[i]))) {
			free(a);
			return rc == -ENOENT ? -EIO : rc;
		}
	*out = a;
	return 0;
}

static int epoch_bump(struct meta_db *db, MDB_txn *txn)
{
	struct meta_super sb;
	int rc = meta_super_get(db, txn, &sb);
	if (rc)
		return rc;
	sb.chains_epoch++;
	return meta_super_put(db, txn, &sb);
}

/* Orders targets round-robin across nodes (nodes in order of their first target), so
 * that neighbours in the order sit on different nodes where possible. */
static void interleave(const struct meta_target *t, uint32_t n, uint32_t *order)
{
	bool *used = calloc(n, sizeof(*used));
	uint32_t k = 0;
	if (!used) { /* degrade to id order */
		for (uint32_t i = 0; i < n; i++)
			order[i] = i;
		return;
	}
	while (k < n) {
		/* one pass: first unused target of each node not yet taken in this pass */
		uint32_t start = k;
		for (uint32_t i = 0; i < n; i++) {
			if (used[i])
				continue;
			bool node_taken = false;
			for (uint32_t j = start; j < k; j++)
				if (strcmp(t[order[j]].node, t[i].node) == 0)
					node_taken = true;
			if (!node_taken) {
				used[i] = true;
				order[k++] = i;
			}
		}
	}
	free(used);
}

static uint32_t distinct_nodes(const struct meta_target *t, uint32_t n)
{
	uint32_t d = 0;
	for (uint32_t i = 0; i < n; i++) {
		bool seen = false;
		for (uint32_t j = 0; j < i && !seen; j++)
			seen = strcmp(t[i].node, t[j].node) == 0;
		d += !seen;
	}
	return d;
}

static bool same_members(const struct weft_chain *a, const struct weft_chain *b)
{
	if (a->nmembers != b->nmembers || a->owner != b->owner)
		return false;
	for (int m = 0; m < a->nmembers; m++)
		if (a->members[m].target != b->members[m].target ||
		    a->members[m].state != b->members[m].state)
			return false;
	return true;
}

/* How full a target is, in whole percent (0 when its size is not known yet). */
static uint64_t full_pct(const struct meta_target *t)
{
	if (t->capacity == 0 || t->free >= t->capacity)
		return 0;
	return 100 - (uint64_t)((double)t->free * 100.0 / (double)t->capacity);
}

/* Picks the members of a chain owned by target index h (position oi in order): live
 * targets first, then those in fewest chains, then the emptiest (so that a store added
 * to full ones is paired with the emptiest of them), then rotation order. */
static int place(const struct meta_target *t, uint32_t n, const uint32_t *order, uint32_t oi,
		 uint8_t replicas, const uint32_t *count, uint32_t *pick)
{
	pick[0] = order[oi];
	for (int m = 1; m < replicas; m++) {
		int64_t best = -1;
		uint64_t best_score = UINT64_MAX;
		for (uint32_t step = 1; step < n; step++) {
			uint32_t cand = order[(oi + step) % n];
			bool clash = false;
			for (int j = 0; j < m; j++)
				clash |= strcmp(t[pick[j]].node, t[cand].node) == 0;
			if (clash)
				continue;
			uint64_t score = (uint64_t)!!(t[cand].flags & META_TARGET_DRAINING) << 61 |
					 (uint64_t)(t[cand].state == WEFT_MEMBER_OFFLINE) << 60 |
					 (uint64_t)count[cand] << 40 | full_pct(&t[cand]) << 24 |
					 step;
			if (score < best_score) {
				best_score = score;
				best = cand;
			}
		}
		if (best < 0)
			return -EINVAL; /* cannot happen when distinct nodes >= replicas */
		pick[m] = (uint32_t)best;
	}
	return 0;
}

/* Grows table replicas to one chain per target. Chains that some layout may name
 * (id < used) are kept; the rest are rebuilt from scratch together with the new ones,
 * so a cluster whose stores register one by one before any file exists ends with the
 * same balanced table as one built with all targets at once. A rebuilt chain keeps its
 * id and gets a higher version when its members change. */
static int grow_table(struct meta_db *db, MDB_txn *txn, uint8_t replicas, uint32_t used,
		      const struct meta_target *t, uint32_t n, const uint32_t *order, bool *changed)
{
	struct weft_chain *ch;
	uint32_t nch;
	int rc = chains_load(db, txn, replicas, &ch, &nch);
	if (rc)
		return rc;
	uint32_t keep = nch < used ? nch : used;
	uint32_t *count = calloc(n, sizeof(*count));
	bool *owns = calloc(n, sizeof(*owns));
	if (!count || !owns) {
		rc = -ENOMEM;
		goto out;
	}
	/* targets are sorted by id; linear scans are fine for META_TARGETS_MAX */
	for (uint32_t c = 0; c < keep; c++)
		for (uint32_t i = 0; i < n; i++) {
			for (int m = 0; m < ch[c].nmembers; m++)
				count[i] += t[i].id == ch[c].members[m].target;
			owns[i] |= t[i].id == ch[c].owner;
		}
	for (uint32_t i = 0; i < n; i++)
		count[i] += !owns[i]; /* each will head its own new chain */
	uint32_t id = keep;
	for (uint32_t oi = 0; oi < n; oi++) {
		uint32_t h = order[oi], pick[WEFT_REPLICAS_MAX];
		if (owns[h])
			continue;
		if ((rc = place(t, n, order, oi, replicas, count, pick)))
			goto out;
		struct weft_chain c = { .id = id, .replicas = replicas, .nmembers = replicas,
					.owner = t[h].id, .version = 1 };
		int k = 0; /* live members first, offline ones at the end */
		for (int pass = 0; pass < 2; pass++)
			for (int m = 0; m < replicas; m++) {
				bool off = t[pick[m]].state == WEFT_MEMBER_OFFLINE;
				if (off != (pass == 1))
					continue;
				c.members[k].target = t[pick[m]].id;
				c.members[k++].state = off ? WEFT_MEMBER_OFFLINE : WEFT_MEMBER_SERVING;
			}
		for (int m = 1; m < replicas; m++)
			count[pick[m]]++;
		owns[h] = true;
		if (id < nch) {
			c.version = ch[id].version;
			if (same_members(&c, &ch[id])) {
				id++;
				continue;
			}
			c.version++;
		}
		if ((rc = chain_put(db, txn, &c)))
			goto out;
		id++;
		*changed = true;
	}
out:
	free(count);
	free(owns);
	free(ch);
	return rc;
}

static int grow(struct meta_db *db, MDB_txn *txn)
{
	struct meta_target *t;
	uint32_t n;
	bool changed = false;
	int rc = targets_load(db, txn, &t, &n);
	if (rc || n == 0)
		return rc;
	uint32_t *order = calloc(n, sizeof(*order));
	if (!order) {
		free(t);
		return -ENOMEM;
	}
	interleave(t, n, order);
	uint32_t nodes = distinct_nodes(t, n);
	struct meta_super sb;
	rc = meta_super_get(db, txn, &sb);
	for (uint8_t r = 1; r <= WEFT_REPLICAS_MAX && !rc; r++)
		if (nodes >= r)
			rc = grow_table(db, txn, r, sb.used[r - 1], t, n, order, &changed);
	free(order);
	free(t);
	if (rc == 0 && changed)
		rc = epoch_bump(db, txn);
	return rc;
}

/* Moves member m to position `to`, shifting the ones between. */
static void move_member(struct weft_chain *c, int m, int to)
{
	struct weft_chain_member x = c->members[m];
	if (m < to)
		memmove(&c->members[m], &c->members[m + 1], (size_t)(to - m) * sizeof(x));
	else if (m > to)
		memmove(&c->members[to + 1], &c->members[to], (size_t)(m - to) * sizeof(x));
	c->members[to] = x;
}

/* Applies a state change of target id to every chain it is in: to OFFLINE (moved to
 * the end) or from OFFLINE to SYNCING (moved behind the live members), or back to
 * REBUILDING if it went offline before it finished rebuilding there. */
static int member_change(struct meta_db *db, MDB_txn *txn, uint32_t id, bool offline)
{
	bool changed = false;
	int rc = 0;
	for (uint8_t r = 1; r <= WEFT_REPLICAS_MAX && !rc; r++) {
		struct weft_chain *ch;
		uint32_t n;
		if ((rc = chains_load(db, txn, r, &ch, &n)))
			break;
		for (uint32_t i = 0; i < n && !rc; i++) {
			struct weft_chain *c = &ch[i];
			for (int m = 0; m < c->nmembers; m++) {
				if (c->members[m].target != id)
					continue;
				bool is_off = c->members[m].state == WEFT_MEMBER_OFFLINE;
				if (offline == is_off)
					break;
				if (offline) {
					if (c->members[m].state == WEFT_MEMBER_REBUILDING)
						c->members[m].rebuild_pending = true;
					c->members[m].state = WEFT_MEMBER_OFFLINE;
					move_member(c, m, c->nmembers - 1);
				} else {
					int live = 0;
					for (int j = 0; j < c->nmembers; j++)
						live += j != m && c->members[j].state != WEFT_MEMBER_OFFLINE;
					c->members[m].state = c->members[m].rebuild_pending ?
						WEFT_MEMBER_REBUILDING : WEFT_MEMBER_SYNCING;
					move_member(c, m, live);
				}
				c->version++;
				changed = true;
				rc = chain_put(db, txn, c);
				break;
			}
		}
		free(ch);
	}
	if (rc == 0 && changed)
		rc = epoch_bump(db, txn);
	return rc;
}

static int set_target_state(struct meta_db *db, MDB_txn *txn, struct meta_target *t,
			    uint8_t state)
{
	if (t->state == state)
		return target_put(db, txn, t);
	t->state = state;
	int rc = target_put(db, txn, t);
	if (rc)
		return rc;
	if (state == WEFT_MEMBER_OFFLINE)
		log_warn("target %u (%s on %s) offline", t->id, t->addr, t->node);
	else
		log_info("target %u (%s on %s) back, syncing", t->id, t->addr, t->node);
	return member_change(db, txn, t->id, state == WEFT_MEMBER_OFFLINE);
}

int meta_chains_register(struct meta_db *db, MDB_txn *txn, const uint8_t uuid[16],
			 const char *node, const char *addr, uint64_t capacity, int64_t now_ns,
			 uint32_t *id)
{
	size_t nl = strlen(node), al = strlen(addr);
	struct meta_target *all, t;
	uint32_t n;
	int rc;
	if (nl == 0 || nl > WEFT_NODE_MAX || al == 0 || al > WEFT_ADDR_MAX)
		return -EINVAL;
	if ((rc = targets_load_all(db, txn, true, &all, &n)))
		return rc;
	int found = -1;
	for (uint32_t i = 0; i < n; i++)
		if (memcmp(all[i].uuid, uuid, 16) == 0)
			found = (int)i;
	if (found >= 0) {
		t = all[found];
		free(all);
		if (t.flags & META_TARGET_REMOVED)
			return -EPERM; /* taken out for good (weft target remove) */
		if (strcmp(t.node, node) != 0)
			log_warn("target %u re-registered from node %s, was %s: node kept",
				 t.id, node, t.node);
		/* the chain set carries addresses: a new one is a new epoch, so that mounts
		 * and stores connect to the target where it is now */
		bool moved = strcmp(t.addr, addr) != 0;
		memcpy(t.addr, addr, al + 1);
		t.capacity = capacity;
		t.last_seen_ns = now_ns;
		if ((rc = set_target_state(db, txn, &t, WEFT_MEMBER_SERVING)))
			return rc;
		if (moved && (rc = epoch_bump(db, txn)))
			return rc;
		*id = t.id;
		return grow(db, txn);
	}
	free(all);
	if (n >= META_TARGETS_MAX) /* removed targets keep their ids: they count */
		return -ENOSPC;
	struct meta_super sb;
	if ((rc = meta_super_get(db, txn, &sb)))
		return rc;
	memset(&t, 0, sizeof(t));
	t.id = sb.next_target++;
	if ((rc = meta_super_put(db, txn, &sb)))
		return rc;
	memcpy(t.uuid, uuid, 16);
	t.state = WEFT_MEMBER_SERVING;
	memcpy(t.node, node, nl + 1);
	memcpy(t.addr, addr, al + 1);
	t.capacity = t.free = capacity;
	t.last_seen_ns = t.registered_ns = now_ns;
	if ((rc = target_put(db, txn, &t)))
		return rc;
	*id = t.id;
	return grow(db, txn);
}

int meta_chains_heartbeat(struct meta_db *db, MDB_txn *txn, uint32_t id,
			  const struct meta_target_stats *st, int64_t now_ns)
{
	struct meta_target t;
	int rc = meta_chains_target_get(db, txn, id, &t);
	if (rc)
		return rc;
	if (t.flags & META_TARGET_REMOVED)
		return -EPERM;
	t.capacity = st->capacity;
	t.free = st->free;
	t.read_bytes = st->read_bytes;
	t.write_bytes = st->write_bytes;
	t.read_ops = st->read_ops;
	t.write_ops = st->write_ops;
	t.last_seen_ns = now_ns;
	if (st->wseq > t.wseq)
		t.wseq = st->wseq;
	return set_target_state(db, txn, &t, WEFT_MEMBER_SERVING);
}

/* A target whose directory meta cannot vouch for (emptied, replaced, or older than it
 * reported) holds nothing it may serve: each of its memberships that is not offline
 * becomes REBUILDING, behind the live members, so it copies every object of the chain
 * (the survivors' missed logs only know what changed while it was away). A one-member
 * chain has nobody to copy from: it becomes SYNCING and takes writes at once. */
static int members_rebuilding(struct meta_db *db, MDB_txn *txn, uint32_t id)
{
	bool changed = false;
	int rc = 0;
	for (uint8_t r = 1; r <= WEFT_REPLICAS_MAX && !rc; r++) {
		struct weft_chain *ch;
		uint32_t n;
		if ((rc = chains_load(db, txn, r, &ch, &n)))
			break;
		for (uint32_t i = 0; i < n && !rc; i++) {
			struct weft_chain *c = &ch[i];
			uint8_t want = c->nmembers > 1 ? WEFT_MEMBER_REBUILDING : WEFT_MEMBER_SYNCING;
			for (int m = 0; m < c->nmembers; m++) {
				if (c->members[m].target != id || c->members[m].state == want)
					continue;
				if (c->members[m].state == WEFT_MEMBER_OFFLINE) {
					if (want == WEFT_MEMBER_REBUILDING &&
					    !c->members[m].rebuild_pending) {
						c->members[m].rebuild_pending = true;
						rc = chain_put(db, txn, c);
					}
					break;
				}
				int live = 0;
				for (int j = 0; j < c->nmembers; j++)
					live += j != m && c->members[j].state != WEFT_MEMBER_OFFLINE;
				c->members[m].state = want;
				move_member(c, m, live);
				c->version++;
				changed = true;
				rc = chain_put(db, txn, c);
				break;
			}
		}
		free(ch);
	}
	if (rc == 0 && changed)
		rc = epoch_bump(db, txn);
	return rc;
}

int meta_chains_vouch(struct meta_db *db, MDB_txn *txn, uint32_t id, uint64_t incarnation,
		      uint64_t wseq, bool *untrusted)
{
	struct meta_target t;
	int rc = meta_chains_target_get(db, txn, id, &t);
	*untrusted = false;
	if (rc)
		return rc;
	if (t.incarnation && (incarnation != t.incarnation || wseq < t.wseq)) {
		*untrusted = true;
		if (incarnation != t.incarnation)
			log_warn("target %u (%s on %s) came back with a new incarnation: its "
				 "directory was emptied or replaced; rebuilding, serves no reads",
				 t.id, t.addr, t.node);
		else
			log_warn("target %u (%s on %s) came back older than it was (write sequence "
				 "%llu, had reported %llu): restored from an old copy? rebuilding, "
				 "serves no reads", t.id, t.addr, t.node, (unsigned long long)wseq,
				 (unsigned long long)t.wseq);
		if ((rc = members_rebuilding(db, txn, id)))
			return rc;
	}
	t.incarnation = incarnation;
	t.wseq = wseq;
	return target_put(db, txn, &t);
}

int meta_chains_target_offline(struct meta_db *db, MDB_txn *txn, uint32_t id)
{
	struct meta_target t;
	int rc = meta_chains_target_get(db, txn, id, &t);
	if (rc)
		return rc;
	if (t.state == WEFT_MEMBER_OFFLINE)
		return 0;
	return set_target_state(db, txn, &t, WEFT_MEMBER_OFFLINE);
}

int meta_chains_target_disk_failed(struct meta_db *db, MDB_txn *txn, uint32_t id)
{
	int rc = meta_chains_target_offline(db, txn, id);
	return rc ? rc : members_rebuilding(db, txn, id);
}

int meta_chains_all_silent(struct meta_db *db, MDB_txn *txn, int64_t now_ns,
			   int64_t timeout_ns, bool *all)
{
	struct meta_target *t;
	uint32_t n, up = 0, expired = 0, quiet = 0;
	*all = false;
	int rc = targets_load(db, txn, &t, &n);
	for (uint32_t i = 0; i < n && !rc; i++) {
		if (t[i].state == WEFT_MEMBER_OFFLINE)
			continue;
		up++;
		expired += now_ns - t[i].last_seen_ns > timeout_ns;
		/* heartbeats are staggered (one a second each): when meta is cut off, the
		 * others are close behind the first to cross the timeout */
		quiet += now_ns - t[i].last_seen_ns > timeout_ns / 2;
	}
	free(t);
	*all = up >= 2 && expired > 0 && quiet == up;
	return rc;
}

int meta_chains_heard_since(struct meta_db *db, MDB_txn *txn, int64_t since_ns, bool *heard)
{
	struct meta_target *t;
	uint32_t n;
	*heard = false;
	int rc = targets_load(db, txn, &t, &n);
	for (uint32_t i = 0; i < n && !rc && !*heard; i++)
		*heard = t[i].last_seen_ns > since_ns;
	free(t);
	return rc;
}

int meta_chains_expire(struct meta_db *db, MDB_txn *txn, int64_t now_ns, int64_t timeout_ns,
		       unsigned *n_off)
{
	struct meta_target *t;
	uint32_t n;
	*n_off = 0;
	int rc = targets_load(db, txn, &t, &n);
	for (uint32_t i = 0; i < n && !rc; i++) {
		if (t[i].state == WEFT_MEMBER_OFFLINE || now_ns - t[i].last_seen_ns <= timeout_ns)
			continue;
		rc = set_target_state(db, txn, &t[i], WEFT_MEMBER_OFFLINE);
		(*n_off)++;
	}
	free(t);
	return rc;
}

/* Is target id a member of any chain? */
static int in_chains(struct meta_db *db, MDB_txn *txn, uint32_t id, bool *yes)
{
	*yes = false;
	for (uint8_t r = 1; r <= WEFT_REPLICAS_MAX && !*yes; r++) {
		struct weft_chain *ch;
		uint32_t n;
		int rc = chains_load(db, txn, r, &ch, &n);
		if (rc)
			return rc;
		for (uint32_t i = 0; i < n && !*yes; i++)
			for (int m = 0; m < ch[i].nmembers; m++)
				*yes |= ch[i].members[m].target == id;
		free(ch);
	}
	return 0;
}

int meta_chains_replace(struct meta_db *db, MDB_txn *txn, uint32_t id, unsigned *nchanged)
{
	struct meta_target *t;
	uint32_t nt;
	*nchanged = 0;
	int rc = meta_chains_target_offline(db, txn, id);
	if (rc || (rc = targets_load(db, txn, &t, &nt)))
		return rc;
	bool changed = false;
	for (uint8_t r = 1; r <= WEFT_REPLICAS_MAX && !rc; r++) {
		struct weft_chain *ch;
		uint32_t n;
		if ((rc = chains_load(db, txn, r, &ch, &n)))
			break;
		uint32_t *count = calloc(nt ? nt : 1, sizeof(*count));
		if (!count) {
			free(ch);
			rc = -ENOMEM;
			break;
		}
		for (uint32_t i = 0; i < n; i++)
			for (int m = 0; m < ch[i].nmembers; m++)
				for (uint32_t k = 0; k < nt; k++)
					count[k] += t[k].id == ch[i].members[m].target;
		for (uint32_t i = 0; i < n && !rc; i++) {
			struct weft_chain *c = &ch[i];
			int m = -1;
			for (int j = 0; j < c->nmembers; j++)
				if (c->members[j].target == id)
					m = j;
			int alive = 0;
			for (int j = 0; m >= 0 && j < c->nmembers; j++)
				alive += j != m && c->members[j].state != WEFT_MEMBER_OFFLINE;
			if (m < 0 || alive == 0)
				continue; /* nobody left to rebuild from: keep it, it may come back */
			int best = -1;
			for (uint32_t k = 0; k < nt; k++) {
				if (t[k].state == WEFT_MEMBER_OFFLINE || t[k].id == id)
					continue;
				bool clash = false;
				for (int j = 0; j < c->nmembers; j++) {
					if (j == m)
						continue;
					for (uint32_t q = 0; q < nt; q++)
						clash |= t[q].id == c->members[j].target &&
							 strcmp(t[q].node, t[k].node) == 0;
				}
				if (!clash && (best < 0 || count[k] < count[best]))
					best = (int)k;
			}
			if (best < 0) {
				log_warn("chain %u/%u: no target on another node to replace target %u",
					 r, c->id, id);
				continue;
			}
			int live = 0;
			for (int j = 0; j < c->nmembers; j++)
				live += j != m && c->members[j].state != WEFT_MEMBER_OFFLINE;
			c->members[m].target = t[best].id;
			c->members[m].state = WEFT_MEMBER_REBUILDING;
			c->members[m].rebuild_pending = false;
			move_member(c, m, live);
			/* the owner stays: it names the chain (one per target and table), so the
			 * table does not grow a new chain around the target taken out */
			count[best]++;
			c->version++;
			rc = chain_put(db, txn, c);
			changed = true;
			(*nchanged)++;
			log_warn("chain %u/%u: target %u replaced by target %u (%s), rebuilding", r,
				 c->id, id, t[best].id, t[best].node);
		}
		free(count);
		free(ch);
	}
	free(t);
	if (rc == 0 && changed)
		rc = epoch_bump(db, txn);
	return rc;
}

int meta_chains_replace_expired(struct meta_db *db, MDB_txn *txn, int64_t now_ns,
				int64_t after_ns, unsigned *n)
{
	struct meta_target *t;
	uint32_t nt;
	*n = 0;
	int rc = targets_load(db, txn, &t, &nt);
	for (uint32_t i = 0; i < nt && !rc; i++) {
		if (t[i].state != WEFT_MEMBER_OFFLINE || now_ns - t[i].last_seen_ns <= after_ns)
			continue;
		bool member;
		if ((rc = in_chains(db, txn, t[i].id, &member)) || !member)
			continue;
		unsigned k = 0;
		rc = meta_chains_replace(db, txn, t[i].id, &k);
		*n += k;
	}
	free(t);
	return rc;
}

/* A chain with an extra member (a move): once replicas members serve without the one
 * leaving, the leaving one is dropped, in the same version as the newcomer's promotion,
 * so the chain never has fewer serving copies than before the move began. */
static void move_finish(struct weft_chain *c)
{
	if (c->nmembers <= c->replicas)
		return;
	int serving = 0, leaving = -1;
	for (int m = 0; m < c->nmembers; m++) {
		if (c->members[m].leaving)
			leaving = m;
		else
			serving += c->members[m].state == WEFT_MEMBER_SERVING;
	}
	if (leaving < 0 || serving < c->replicas)
		return;
	log_info("chain %u/%u: target %u moved out (its copy is now held by the others)",
		 c->replicas, c->id, c->members[leaving].target);
	move_member(c, leaving, c->nmembers - 1);
	c->nmembers--;
}

int meta_chains_member_serving(struct meta_db *db, MDB_txn *txn, uint8_t replicas,
			       uint32_t chain, uint32_t target)
{
	struct weft_chain c;
	int rc = meta_chains_get(db, txn, replicas, chain, &c);
	if (rc)
		return rc;
	for (int m = 0; m < c.nmembers; m++) {
		if (c.members[m].target != target)
			continue;
		if (c.members[m].state == WEFT_MEMBER_SERVING)
			return 0;
		if (c.members[m].state == WEFT_MEMBER_OFFLINE)
			return -EINVAL;
		c.members[m].state = WEFT_MEMBER_SERVING;
		c.members[m].rebuild_pending = false;
		c.version++;
		move_finish(&c);
		if ((rc = chain_put(db, txn, &c)))
			return rc;
		return epoch_bump(db, txn);
	}
	return -ENOENT;
}

int meta_chains_capacity(struct meta_db *db, MDB_txn *txn, uint64_t *total, uint64_t *free_b)
{
	struct meta_target *t;
	uint32_t n;
	*total = *free_b = 0;
	int rc = targets_load(db, txn, &t, &n);
	for (uint32_t i = 0; i < n && !rc; i++) {
		if (t[i].state == WEFT_MEMBER_OFFLINE)
			continue;
		*total += t[i].capacity;
		*free_b += t[i].free;
	}
	free(t);
	return rc;
}

int meta_chains_room(struct meta_db *db, MDB_txn *txn, uint8_t replicas, uint32_t n,
		     uint64_t *room)
{
	struct meta_target *t;
	struct weft_chain *ch;
	uint32_t nt, nch;
	int rc = targets_load(db, txn, &t, &nt);
	if (rc)
		return rc;
	if ((rc = chains_load(db, txn, replicas, &ch, &nch))) {
		free(t);
		return rc;
	}
	for (uint32_t c = 0; c < n; c++) {
		room[c] = 0;
		if (c >= nch)
			continue;
		uint64_t min = UINT64_MAX;
		for (int m = 0; m < ch[c].nmembers; m++) {
			if (ch[c].members[m].state == WEFT_MEMBER_OFFLINE)
				continue;
			for (uint32_t i = 0; i < nt; i++)
				if (t[i].id == ch[c].members[m].target && t[i].free < min)
					min = t[i].free;
		}
		room[c] = min == UINT64_MAX ? 0 : min;
	}
	free(ch);
	free(t);
	return 0;
}

int meta_chains_snapshot(struct meta_db *db, MDB_txn *txn, struct weft_chain_set *out)
{
	struct meta_target *t;
	struct meta_super sb;
	uint32_t n;
	memset(out, 0, sizeof(*out));
	int rc = meta_super_get(db, txn, &sb);
	if (rc || (rc = targets_load(db, txn, &t, &n)))
		return rc;
	out->epoch = sb.chains_epoch;
	if (n && !(out->targets = calloc(n, sizeof(*out->targets)))) {
		free(t);
		return -ENOMEM;
	}
	out->ntargets = n;
	for (uint32_t i = 0; i < n; i++) {
		out->targets[i].id = t[i].id;
		out->targets[i].state = t[i].state;
		memcpy(out->targets[i].node, t[i].node, sizeof(t[i].node));
		memcpy(out->targets[i].addr, t[i].addr, sizeof(t[i].addr));
	}
	free(t);
	for (uint8_t r = 1; r <= WEFT_REPLICAS_MAX && !rc; r++)
		rc = chains_load(db, txn, r, &out->chains[r - 1], &out->nchains[r - 1]);
	if (rc)
		proto_chain_set_free(out);
	return rc;
}

/* ---- building blocks for moves.c (same txn rules as above) ---- */

int meta_chains_target_put(struct meta_db *db, MDB_txn *txn, const struct meta_target *t)
{
	return target_put(db, txn, t);
}

int meta_chains_targets(struct meta_db *db, MDB_txn *txn, struct meta_target **out,
			uint32_t *n)
{
	return targets_load(db, txn, out, n);
}

int meta_chains_table(struct meta_db *db, MDB_txn *txn, uint8_t replicas,
		      struct weft_chain **out, uint32_t *n)
{
	return chains_load(db, txn, replicas, out, n);
}

int meta_chains_put(struct meta_db *db, MDB_txn *txn, const struct weft_chain *c)
{
	return chain_put(db, txn, c);
}

int meta_chains_epoch_bump(struct meta_db *db, MDB_txn *txn)
{
	return epoch_bump(db, txn);
}

void meta_chains_move_member(struct weft_chain *c, int m, int to)
{
	move_member(c, m, to);
}
