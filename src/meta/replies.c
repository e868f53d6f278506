/* Reply cache of tagged mutations (see replies.h). */
#include "meta/replies.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PENDING_BUCKETS 1024

struct pend {
	struct pend *next;
	uint64_t client, xid;
};

struct meta_replies {
	pthread_mutex_t lock;
	struct pend *b[PENDING_BUCKETS]; /* guarded by lock */
};

static unsigned bucket(uint64_t client, uint64_t xid)
{
	uint64_t h = (client ^ (xid * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
	return (unsigned)(h >> 54) % PENDING_BUCKETS;
}

int meta_replies_new(struct meta_replies **out)
{
	struct meta_replies *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	*out = p;
	return 0;
}

void meta_replies_free(struct meta_replies *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < PENDING_BUCKETS; i++)
		while (p->b[i]) {
			struct pend *e = p->b[i];
			p->b[i] = e->next;
			free(e);
		}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

bool meta_replies_pending_add(struct meta_replies *p, uint64_t client, uint64_t xid)
{
	unsigned i = bucket(client, xid);
	pthread_mutex_lock(&p->lock);
	for (struct pend *e = p->b[i]; e; e = e->next)
		if (e->client == client && e->xid == xid) {
			pthread_mutex_unlock(&p->lock);
			return false;
		}
	struct pend *e = malloc(sizeof(*e));
	if (e) {
		*e = (struct pend){.next = p->b[i], .client = client, .xid = xid};
		p->b[i] = e;
	}
	pthread_mutex_unlock(&p->lock);
	return e != NULL;
}

void meta_replies_pending_del(struct meta_replies *p, uint64_t client, uint64_t xid)
{
	unsigned i = bucket(client, xid);
	pthread_mutex_lock(&p->lock);
	for (struct pend **pp = &p->b[i]; *pp; pp = &(*pp)->next)
		if ((*pp)->client == client && (*pp)->xid == xid) {
			struct pend *e = *pp;
			*pp = e->next;
			free(e);
			break;
		}
	pthread_mutex_unlock(&p->lock);
}

static void key_of(uint8_t k[16], uint64_t client, uint64_t xid)
{
	for (int i = 0; i < 8; i++) {
		k[i] = (uint8_t)(client >> (56 - 8 * i));
		k[8 + i] = (uint8_t)(xid >> (56 - 8 * i));
	}
}

int meta_replies_get(struct meta_db *db, MDB_txn *txn, uint64_t client, uint64_t xid,
		     uint64_t *transno, struct wbuf *out)
{
	uint8_t kb[16];
	key_of(kb, client, xid);
	MDB_val k = {16, kb}, v;
	int rc = mdb_get(txn, db->replies, &k, &v);
	if (rc)
		return rc == MDB_NOTFOUND ? -ENOENT : meta_mdb_err(rc);
	const uint8_t *p = v.mv_data;
	if (v.mv_size < 9 || p[0] != 1)
		return -EIO;
	*transno = get_le64(p + 1);
	if (v.mv_size > 9)
		wbuf_put(out, p + 9, v.mv_size - 9);
	return out->err ? -ENOMEM : 0;
}

int meta_replies_put(struct meta_db *db, MDB_txn *txn, uint64_t client, uint64_t xid,
		     uint64_t transno, const void *payload, size_t len, uint64_t done_below)
{
	uint8_t kb[16];
	if (done_below) {
		MDB_cursor *cur;
		int rc = meta_mdb_err(mdb_cursor_open(txn, db->replies, &cur));
		if (rc)
			return rc;
		for (;;) { /* the client's first record, while below done_below */
			key_of(kb, client, 0);
			MDB_val k = {16, kb}, v;
			rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
			if (rc || k.mv_size != 16)
				break;
			const uint8_t *q = k.mv_data;
			uint64_t c = 0, x = 0;
			for (int i = 0; i < 8; i++) {
				c = c << 8 | q[i];
				x = x << 8 | q[8 + i];
			}
			if (c != client || x >= done_below)
				break;
			if ((rc = meta_mdb_cursor_del(cur, 0)))
				break;
		}
		mdb_cursor_close(cur);
		if (rc && rc != MDB_NOTFOUND)
			return meta_mdb_err(rc);
	}
	uint8_t *b = malloc(9 + len);
	if (!b)
		return -ENOMEM;
	b[0] = 1;
	put_le64(b + 1, transno);
	if (len)
		memcpy(b + 9, payload, len);
	key_of(kb, client, xid);
	MDB_val k = {16, kb}, v = {9 + len, b};
	int rc = meta_mdb_err(meta_mdb_put(txn, db->replies, &k, &v, 0));
	free(b);
	return rc;
}
