/* Client sessions and open counts, in memory; orphan records on disk (session.h). */
#include "meta/session.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "meta/inode.h"
#include "meta/super.h"

struct oent {
	uint64_t ino, session;
	uint32_t count;
	struct oent *next;
};

struct orphan {
	uint64_t ino;
	int64_t not_before_ns; /* loaded at start: the grace period for reclaims */
};

struct dying {
	uint64_t ino, txnid; /* freed by the write txn txnid */
};

struct meta_live {
	pthread_mutex_t lock;
	struct meta_session *sess;
	size_t nsess, capsess;
	struct oent **b;       /* open entries hashed by ino */
	size_t nb, n;
	struct orphan *orphans; /* unlinked inodes still open (or not yet reaped) */
	size_t norph, caporph;
	struct dying *dying;
	size_t ndying, capdying;
};

struct meta_live *meta_live_new(void)
{
	struct meta_live *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	pthread_mutex_init(&l->lock, NULL);
	l->nb = 256;
	l->b = calloc(l->nb, sizeof(*l->b));
	if (!l->b) {
		free(l);
		return NULL;
	}
	return l;
}

void meta_live_free(struct meta_live *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nb; i++)
		for (struct oent *e = l->b[i], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	free(l->b);
	free(l->sess);
	free(l->orphans);
	free(l->dying);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* Grows *p (of *cap elements of size sz) to hold one more than n. */
static int grow(void **p, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 16;
	void *q = realloc(*p, nc * sz);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = nc;
	return 0;
}

static size_t hash(const struct meta_live *l, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) & (l->nb - 1);
}

static void rehash(struct meta_live *l)
{
	size_t nb = l->nb * 2;
	struct oent **b = calloc(nb, sizeof(*b));
	if (!b)
		return; /* longer chains, still correct */
	struct oent **old = l->b;
	size_t onb = l->nb;
	l->b = b;
	l->nb = nb;
	for (size_t i = 0; i < onb; i++)
		for (struct oent *e = old[i], *next; e; e = next) {
			next = e->next;
			size_t h = hash(l, e->ino);
			e->next = b[h];
			b[h] = e;
		}
	free(old);
}

static struct meta_session *sess_find(struct meta_live *l, uint64_t id)
{
	for (size_t i = 0; i < l->nsess; i++)
		if (l->sess[i].id == id)
			return &l->sess[i];
	return NULL;
}

static struct oent **oent_find(struct meta_live *l, uint64_t ino, uint64_t session)
{
	struct oent **pp = &l->b[hash(l, ino)];
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->ino == ino && (*pp)->session == session)
			return pp;
	return pp;
}

static bool ino_open(struct meta_live *l, uint64_t ino)
{
	for (struct oent *e = l->b[hash(l, ino)]; e; e = e->next)
		if (e->ino == ino)
			return true;
	return false;
}

static ssize_t orphan_find(struct meta_live *l, uint64_t ino)
{
	for (size_t i = 0; i < l->norph; i++)
		if (l->orphans[i].ino == ino)
			return (ssize_t)i;
	return -1;
}

static int orphan_add(struct meta_live *l, uint64_t ino, int64_t not_before_ns)
{
	if (orphan_find(l, ino) >= 0)
		return 0;
	int rc = grow((void **)&l->orphans, &l->caporph, l->norph, sizeof(*l->orphans));
	if (rc)
		return rc;
	l->orphans[l->norph++] = (struct orphan){ino, not_before_ns};
	return 0;
}

static int dying_add(struct meta_live *l, uint64_t ino, uint64_t txnid)
{
	int rc = grow((void **)&l->dying, &l->capdying, l->ndying, sizeof(*l->dying));
	if (rc)
		return rc;
	l->dying[l->ndying++] = (struct dying){ino, txnid};
	return 0;
}

/* ---- durable orphan records: "opens" table, ino BE64 -> empty ---- */

static int orphan_put(struct meta_db *db, MDB_txn *txn, uint64_t ino)
{
	uint8_t kb[8];
	meta_be64(kb, ino);
	MDB_val k = {8, kb}, v = {0, kb};
	return meta_mdb_err(meta_mdb_put(txn, db->opens, &k, &v, 0));
}

static int orphan_del(struct meta_db *db, MDB_txn *txn, uint64_t ino)
{
	uint8_t kb[8];
	meta_be64(kb, ino);
	MDB_val k = {8, kb};
	int rc = meta_mdb_err(meta_mdb_del(txn, db->opens, &k, NULL));
	return rc == -ENOENT ? 0 : rc;
}

/* Deletes every record of dbi (the old on-disk session tables). */
static int clear_table(MDB_txn *txn, MDB_dbi dbi)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn, dbi, &cur);
	if (rc)
		return meta_mdb_err(rc);
	MDB_val k, v;
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) == 0)
		if ((rc = meta_mdb_cursor_del(cur, 0)))
			break;
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : meta_mdb_err(rc);
}

int meta_session_load(struct meta_db *db, MDB_txn *txn, int64_t grace_until_ns)
{
	struct meta_live *l = db->live;
	MDB_cursor *cur;
	uint64_t old[64];
	size_t nold;
	int rc;
	/* old format: ino BE64 + session BE64 -> count; the inode's ORPHAN flag says */
	do {
		nold = 0;
		if ((rc = mdb_cursor_open(txn, db->opens, &cur)))
			return meta_mdb_err(rc);
		MDB_val k, v;
		for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && nold < 64;
		     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
			if (k.mv_size == 16)
				old[nold++] = meta_get_be64(k.mv_data);
		mdb_cursor_close(cur);
		if (rc && rc != MDB_NOTFOUND)
			return meta_mdb_err(rc);
		for (size_t i = 0; i < nold; i++) {
			uint8_t kb[16];
			struct meta_inode in;
			meta_be64(kb, old[i]);
			MDB_val k2 = {8, kb}, v2;
			/* every 16-byte key of this inode */
			if ((rc = mdb_cursor_open(txn, db->opens, &cur)))
				return meta_mdb_err(rc);
			while ((rc = mdb_cursor_get(cur, &k2, &v2, MDB_SET_RANGE)) == 0 &&
			       k2.mv_size == 16 && meta_get_be64(k2.mv_data) == old[i]) {
				if ((rc = meta_mdb_cursor_del(cur, 0)))
					break;
				k2 = (MDB_val){8, kb};
			}
			mdb_cursor_close(cur);
			if (rc && rc != MDB_NOTFOUND)
				return meta_mdb_err(rc);
			rc = meta_inode_get(db, txn, old[i], &in);
			if (rc == 0 && in.attr.nlink == 0 && (in.flags & META_INODE_ORPHAN) &&
			    (rc = orphan_put(db, txn, old[i])))
				return rc;
			if (rc && rc != -ENOENT)
				return rc;
		}
	} while (nold == 64);
	if ((rc = clear_table(txn, db->sess_opens)) || (rc = clear_table(txn, db->sessions)))
		return rc;
	/* load the orphan records */
	if ((rc = mdb_cursor_open(txn, db->opens, &cur)))
		return meta_mdb_err(rc);
	MDB_val k, v;
	pthread_mutex_lock(&l->lock);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		if (k.mv_size == 8 &&
		    (rc = orphan_add(l, meta_get_be64(k.mv_data), grace_until_ns)))
			break;
	pthread_mutex_unlock(&l->lock);
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc > 0 ? meta_mdb_err(rc) : rc;
}

/* ---- sessions ---- */

int meta_session_get(struct meta_db *db, MDB_txn *txn, uint64_t id, struct meta_session *out)
{
	(void)txn;
	struct meta_live *l = db->live;
	pthread_mutex_lock(&l->lock);
	struct meta_session *s = sess_find(l, id);
	if (s)
		*out = *s;
	pthread_mutex_unlock(&l->lock);
	return s ? 0 : -ENOENT;
}

int meta_session_create(struct meta_db *db, MDB_txn *txn, const char *node, int64_t now_ns,
			uint64_t *id)
{
	struct meta_live *l = db->live;
	struct meta_super sb;
	size_t nl = strlen(node);
	int rc;
	if (nl == 0 || nl > WEFT_NODE_MAX)
		return -EINVAL;
	if ((rc = meta_super_get(db, txn, &sb)))
		return rc;
	uint64_t sid = sb.next_session++;
	if ((rc = meta_super_put(db, txn, &sb)))
		return rc;
	pthread_mutex_lock(&l->lock);
	struct meta_session *s = sess_find(l, sid); /* a second run of the same op */
	if (!s && (rc = grow((void **)&l->sess, &l->capsess, l->nsess, sizeof(*l->sess))) == 0)
		s = &l->sess[l->nsess++];
	if (s) {
		s->id = sid;
		memcpy(s->node, node, nl + 1);
		s->created_ns = s->last_seen_ns = now_ns;
	}
	pthread_mutex_unlock(&l->lock);
	*id = sid;
	return rc;
}

int meta_session_heartbeat(struct meta_db *db, MDB_txn *txn, uint64_t id, int64_t now_ns)
{
	(void)txn;
	struct meta_live *l = db->live;
	pthread_mutex_lock(&l->lock);
	struct meta_session *s = sess_find(l, id);
	if (s)
		s->last_seen_ns = now_ns;
	pthread_mutex_unlock(&l->lock);
	return s ? 0 : -ENOENT;
}

/* Drops session id and its opens (lock held). */
static bool sess_drop(struct meta_live *l, uint64_t id)
{
	struct meta_session *s = sess_find(l, id);
	if (!s)
		return false;
	*s = l->sess[--l->nsess];
	for (size_t i = 0; i < l->nb; i++)
		for (struct oent **pp = &l->b[i]; *pp;) {
			struct oent *e = *pp;
			if (e->session == id) {
				*pp = e->next;
				free(e);
				l->n--;
			} else {
				pp = &e->next;
			}
		}
	return true;
}

int meta_session_close(struct meta_db *db, MDB_txn *txn, uint64_t id)
{
	struct meta_live *l = db->live;
	pthread_mutex_lock(&l->lock);
	bool found = sess_drop(l, id);
	pthread_mutex_unlock(&l->lock);
	if (!found)
		return -ENOENT;
	return meta_session_reap(db, txn, NULL);
}

int meta_session_expire(struct meta_db *db, MDB_txn *txn, int64_t now_ns, int64_t timeout_ns,
			unsigned *n)
{
	struct meta_live *l = db->live;
	*n = 0;
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->nsess;) {
		if (now_ns - l->sess[i].last_seen_ns > timeout_ns) {
			sess_drop(l, l->sess[i].id); /* moves the last one to i */
			(*n)++;
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&l->lock);
	return *n ? meta_session_reap(db, txn, NULL) : 0;
}

/* ---- opens ---- */

/* Counts count opens of ino by session id. check_inode: look the inode up in txn first
 * (-ESTALE when it is gone); the callers of meta_session_open_found have just read or
 * created it in this very txn, so they skip that second read and decode. */
static int session_open(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino,
			uint32_t count, bool check_inode)
{
	struct meta_live *l = db->live;
	uint64_t snap = mdb_txn_id(txn);
	struct meta_inode in;
	int rc = 0;
	if (count == 0)
		return -EINVAL;
	pthread_mutex_lock(&l->lock);
	if (!sess_find(l, id)) {
		rc = -ENOENT;
		goto out;
	}
	/* freed by a write txn this snapshot does not see: as if that came first. Entries
	 * that every snapshot from now on sees can go. */
	for (size_t i = 0; i < l->ndying;) {
		if (l->dying[i].ino == ino && l->dying[i].txnid > snap) {
			rc = -ESTALE;
			goto out;
		}
		if (l->dying[i].txnid < snap)
			l->dying[i] = l->dying[--l->ndying];
		else
			i++;
	}
	if (check_inode && (rc = meta_inode_get(db, txn, ino, &in))) {
		rc = rc == -ENOENT ? -ESTALE : rc;
		goto out;
	}
	struct oent **pp = oent_find(l, ino, id);
	if (*pp) {
		(*pp)->count += count;
		goto out;
	}
	struct oent *e = malloc(sizeof(*e));
	if (!e) {
		rc = -ENOMEM;
		goto out;
	}
	*e = (struct oent){.ino = ino, .session = id, .count = count};
	size_t h = hash(l, ino);
	e->next = l->b[h];
	l->b[h] = e;
	if (++l->n > l->nb * 2)
		rehash(l);
out:
	pthread_mutex_unlock(&l->lock);
	return rc;
}

int meta_session_reopen(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino,
			uint32_t count)
{
	return session_open(db, txn, id, ino, count, true);
}

int meta_session_open(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino)
{
	return session_open(db, txn, id, ino, 1, true);
}

int meta_session_open_found(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino)
{
	return session_open(db, txn, id, ino, 1, false);
}

int meta_session_ino_open(struct meta_db *db, MDB_txn *txn, uint64_t ino)
{
	(void)txn;
	struct meta_live *l = db->live;
	pthread_mutex_lock(&l->lock);
	bool open = ino_open(l, ino);
	pthread_mutex_unlock(&l->lock);
	return open;
}

int meta_session_holds(struct meta_db *db, uint64_t id, uint64_t ino)
{
	struct meta_live *l = db->live;
	pthread_mutex_lock(&l->lock);
	bool held = *oent_find(l, ino, id) != NULL;
	pthread_mutex_unlock(&l->lock);
	return held;
}

/* Frees orphan ino in txn if it still is one (nlink 0, ORPHAN) and drops its record. */
static int orphan_free(struct meta_db *db, MDB_txn *txn, uint64_t ino)
{
	struct meta_inode in;
	int rc = meta_inode_get(db, txn, ino, &in);
	if (rc == 0 && in.attr.nlink == 0 && (in.flags & META_INODE_ORPHAN))
		rc = meta_inode_destroy(db, txn, &in);
	else if (rc == -ENOENT)
		rc = 0;
	return rc ? rc : orphan_del(db, txn, ino);
}

int meta_session_release(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino)
{
	struct meta_live *l = db->live;
	pthread_mutex_lock(&l->lock);
	struct oent **pp = oent_find(l, ino, id);
	struct oent *e = *pp;
	if (!e) {
		pthread_mutex_unlock(&l->lock);
		return -ENOENT;
	}
	bool orphan_left = false;
	if (--e->count == 0) {
		*pp = e->next;
		free(e);
		l->n--;
		orphan_left = !ino_open(l, ino) && orphan_find(l, ino) >= 0;
	}
	pthread_mutex_unlock(&l->lock);
	if (txn)
		return meta_session_reap(db, txn, NULL);
	return orphan_left;
}

int meta_session_unlinked(struct meta_db *db, MDB_txn *txn, uint64_t ino)
{
	struct meta_live *l = db->live;
	int rc;
	uint64_t id = mdb_txn_id(txn);
	pthread_mutex_lock(&l->lock);
	/* keep the list short without opens to prune it: an entry 1024 commits old cannot
	 * matter (an OPEN holds its snapshot for microseconds, see meta_session_reopen) */
	for (size_t i = 0; i < l->ndying;)
		if (l->dying[i].txnid + 1024 < id)
			l->dying[i] = l->dying[--l->ndying];
		else
			i++;
	bool open = ino_open(l, ino);
	rc = open ? orphan_add(l, ino, 0) : dying_add(l, ino, id);
	pthread_mutex_unlock(&l->lock);
	if (rc)
		return rc;
	if (open && (rc = orphan_put(db, txn, ino)))
		return rc;
	return open;
}

int meta_session_reap(struct meta_db *db, MDB_txn *txn, unsigned *n)
{
	struct meta_live *l = db->live;
	uint64_t take[64];
	size_t nt;
	int rc = 0;
	if (n)
		*n = 0;
	do {
		nt = 0;
		int64_t now = meta_now_ns();
		pthread_mutex_lock(&l->lock);
		/* taken out and marked dying under the lock: no open can slip in between */
		for (size_t i = 0; i < l->norph && nt < 64;) {
			uint64_t ino = l->orphans[i].ino;
			if (now < l->orphans[i].not_before_ns || ino_open(l, ino) ||
			    dying_add(l, ino, mdb_txn_id(txn))) {
				i++; /* open, or no memory to mark it: next time */
				continue;
			}
			take[nt++] = ino;
			l->orphans[i] = l->orphans[--l->norph];
		}
		pthread_mutex_unlock(&l->lock);
		for (size_t i = 0; i < nt; i++)
			if ((rc = orphan_free(db, txn, take[i])))
				return rc;
		if (n)
			*n += (unsigned)nt;
	} while (nt == 64);
	return rc;
}

void meta_session_counts(struct meta_db *db, unsigned *sessions, unsigned *opens,
			 unsigned *orphans)
{
	struct meta_live *l = db->live;
	pthread_mutex_lock(&l->lock);
	*sessions = (unsigned)l->nsess;
	*opens = (unsigned)l->n;
	*orphans = (unsigned)l->norph;
	pthread_mutex_unlock(&l->lock);
}
