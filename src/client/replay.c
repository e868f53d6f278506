/* libweft's side of meta's durability contract: acknowledged mutations kept until meta
 * says they are synced, and replayed after a restart of meta that may have lost them.
 *
 * DESIGN. Meta answers a namespace mutation once it is committed, before the sync that
 * makes it survive a power cut; the reply's DURABLE record (proto.h, MSG_REPLAY) gives
 * its transaction number, the last one synced and meta's incarnation (boot). Each
 * acknowledged mutation whose number is above the synced one is kept here (its request
 * payload and bulk, and the inode a create was given) and dropped once a reply of the
 * same incarnation reports it synced. When the session is renewed after meta restarted
 * (a new boot), session.c calls client_replay_run: the kept mutations of older
 * incarnations go back to meta as REPLAY, in transaction order, while no other mutation
 * of this client is sent (replay_lock: mutations hold it for reading, the replay for
 * writing). Meta answers at once those its database holds and applies the rest, a
 * create with the inode number it had; the replayed ones are kept under their new
 * numbers until synced. A replay meta refuses is logged: a change lost.
 *
 * Threads: any; kept_lock guards the list and boot/synced. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "common/log.h"
#include "weft/err.h"

struct kept {
	struct kept *next;
	uint64_t transno, boot; /* as meta numbered it, in that incarnation */
	uint64_t ino, gen;      /* what a create-like op was given */
	uint64_t xid;           /* its TAGGED number: its replay goes with it */
	uint16_t op;
	uint32_t len, blen;     /* payload, then bulk, in data */
	uint8_t data[];
};

bool client_replay_keepable(uint16_t op)
{
	switch (op) {
	case WEFT_OP_SETATTR: case WEFT_OP_CREATE: case WEFT_OP_MKDIR: case WEFT_OP_UNLINK:
	case WEFT_OP_RMDIR: case WEFT_OP_RENAME: case WEFT_OP_LINK: case WEFT_OP_SYMLINK:
	case WEFT_OP_SETXATTR: case WEFT_OP_REMOVEXATTR: case WEFT_OP_CREATE_OPEN:
	case WEFT_OP_EXTEND: case WEFT_OP_SETSTRIPE:
		return true;
	default:
		return false;
	}
}

/* Drops what rec says is synced (kept_lock held). */
static void prune(struct weft_client *c, uint64_t boot, uint64_t synced)
{
	for (struct kept **pp = &c->kept; *pp;) {
		struct kept *k = *pp;
		if (k->boot == boot && k->transno <= synced) {
			*pp = k->next;
			free(k);
			c->nkept--;
		} else {
			pp = &k->next;
		}
	}
}

int client_durable_parse(const struct frame *f, struct client_durable *d)
{
	if (!f || f->h.bulk_len != WEFT_DURABLE_LEN || !f->bulk)
		return -ENOENT;
	d->transno = get_le64(f->bulk);
	d->synced = get_le64(f->bulk + 8);
	d->boot = get_le64(f->bulk + 16);
	return 0;
}

uint64_t client_replay_done_below(struct weft_client *c, uint64_t xid)
{
	uint64_t below = xid > 4096 ? xid - 4096 : 0;
	pthread_mutex_lock(&c->kept_lock);
	for (struct kept *k = c->kept; k; k = k->next)
		if (k->xid && k->xid < below)
			below = k->xid;
	pthread_mutex_unlock(&c->kept_lock);
	return below;
}

void client_durable_seen(struct weft_client *c, uint16_t op, uint64_t xid,
			 const struct frame *f, const uint8_t *payload, uint32_t len,
			 const struct iovec *bulk, int nbulk)
{
	struct client_durable d;
	/* only these replies carry the record: another's bulk (an xattr value) may happen
	 * to be as long */
	bool carries = client_replay_keepable(op) || op == WEFT_OP_FSYNC ||
		       op == WEFT_OP_REPLAY || op == WEFT_OP_TAGGED || op == WEFT_OP_MIGRATE ||
		       op == WEFT_OP_SESSION_OPEN || op == WEFT_OP_SESSION_BEAT;
	if (!carries || client_durable_parse(f, &d))
		return;
	struct kept *k = NULL;
	if (client_replay_keepable(op) && d.transno > d.synced) {
		uint32_t blen = 0;
		for (int i = 0; i < nbulk; i++)
			blen += (uint32_t)bulk[i].iov_len;
		k = malloc(sizeof(*k) + len + blen);
		if (!k) {
			log_warn("%s (transno %llu): out of memory to keep it for a replay",
				 proto_op_name(op), (unsigned long long)d.transno);
		} else {
			*k = (struct kept){.transno = d.transno, .boot = d.boot, .op = op,
					   .xid = xid, .len = len, .blen = blen};
			if (len)
				memcpy(k->data, payload, len);
			uint8_t *p = k->data + len;
			for (int i = 0; i < nbulk; i++) {
				memcpy(p, bulk[i].iov_base, bulk[i].iov_len);
				p += bulk[i].iov_len;
			}
			/* the inode a create was given, imposed again by a replay */
			struct weft_msg_entry e;
			struct weft_msg_opened o;
			if (op == WEFT_OP_CREATE_OPEN &&
			    proto_opened_decode(f->payload, f->h.payload_len, &o, NULL) == 0) {
				k->ino = o.attr.ino;
				k->gen = o.attr.gen;
			} else if ((op == WEFT_OP_CREATE || op == WEFT_OP_MKDIR ||
				    op == WEFT_OP_SYMLINK) &&
				   proto_entry_decode(f->payload, f->h.payload_len, &e, NULL) == 0) {
				k->ino = e.attr.ino;
				k->gen = e.attr.gen;
			}
		}
	}
	pthread_mutex_lock(&c->kept_lock);
	if (!c->boot)
		c->boot = d.boot;
	if (d.boot == c->boot && d.synced > c->synced) {
		c->synced = d.synced;
		prune(c, d.boot, d.synced);
	}
	if (k) {
		k->next = c->kept;
		c->kept = k;
		c->nkept++;
	}
	if (d.boot != c->boot)
		c->boot_new = d.boot;
	pthread_mutex_unlock(&c->kept_lock);
}

void client_replay_enter(struct weft_client *c)
{
	pthread_rwlock_rdlock(&c->replay_lock);
}

void client_replay_leave(struct weft_client *c)
{
	pthread_rwlock_unlock(&c->replay_lock);
}

static int by_transno(const void *a, const void *b)
{
	const struct kept *x = *(struct kept *const *)a, *y = *(struct kept *const *)b;
	return x->transno < y->transno ? -1 : x->transno > y->transno;
}

/* Sends k as REPLAY; on success keeps it under its new number. Returns 1 if it went
 * through, 0 if meta went away again (kept for the next incarnation), -1 if meta
 * refused it (lost). */
static int replay_one(struct weft_client *c, struct kept *k)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_replay m = {.transno = k->transno, .ino = k->ino, .gen = k->gen,
				    .op = k->op,
				    .payload = {(const char *)k->data, k->len}};
	proto_replay_encode(&w, &m);
	uint16_t op = WEFT_OP_REPLAY;
	if (k->xid && !w.err) {
		/* with the original tag: meta's reply record says whether it holds the op,
		 * whatever became of the numbers since (meta/replies.h) */
		struct wbuf t;
		wbuf_init(&t);
		struct weft_msg_tagged tm = {.client = c->client_id, .xid = k->xid,
					     .done_below = 0, .op = WEFT_OP_REPLAY,
					     .payload = {(const char *)w.data, (uint32_t)w.len}};
		proto_tagged_encode(&t, &tm);
		wbuf_free(&w);
		w = t;
		op = WEFT_OP_TAGGED;
	}
	struct iovec v = {k->data + k->len, k->blen};
	struct frame *f = NULL;
	int err = client_meta_call(c, op, &w, k->blen ? &v : NULL, k->blen ? 1 : 0, &f);
	struct client_durable d;
	if (err == 0 && client_durable_parse(f, &d) == 0) {
		k->transno = d.transno;
		k->boot = d.boot;
	} else if (err == 0) {
		err = -WEFT_EPROTO;
	}
	frame_free(f);
	if (err == -EIO || err == -ENOTCONN || err == -ECONNRESET || err == -ECONNREFUSED ||
	    err == -EPIPE || err == -ETIMEDOUT || err == -ECONNABORTED) {
		log_warn("replay of %s (transno %llu): %s; kept for meta's next start",
			 proto_op_name(k->op), (unsigned long long)m.transno, weft_strerror(err));
		return 0;
	}
	if (err) {
		log_error("replay of %s (transno %llu) refused by meta: %s; an acknowledged "
			  "change is lost", proto_op_name(k->op), (unsigned long long)m.transno,
			  weft_strerror(err));
		return -1;
	}
	log_debug("replayed %s (transno %llu, now %llu)", proto_op_name(k->op),
		 (unsigned long long)m.transno, (unsigned long long)k->transno);
	return 1;
}

void client_replay_run(struct weft_client *c)
{
	pthread_rwlock_wrlock(&c->replay_lock);
	pthread_mutex_lock(&c->kept_lock);
	/* the incarnation of meta now: what older ones acknowledged goes back to it */
	uint64_t boot = c->boot_new ? c->boot_new : c->boot;
	size_t n = 0;
	struct kept **v = boot ? malloc((c->nkept ? c->nkept : 1) * sizeof(*v)) : NULL;
	if (v) {
		for (struct kept **pp = &c->kept; *pp;) {
			struct kept *k = *pp;
			if (k->boot != boot) {
				*pp = k->next;
				c->nkept--;
				v[n++] = k;
			} else {
				pp = &k->next;
			}
		}
		if (c->boot != boot)
			c->synced = 0;
		c->boot = boot;
		c->boot_new = 0;
	}
	pthread_mutex_unlock(&c->kept_lock);
	if (!n) {
		free(v);
		pthread_rwlock_unlock(&c->replay_lock);
		return;
	}
	qsort(v, n, sizeof(*v), by_transno);
	size_t lost = 0, later = 0;
	struct kept *keep = NULL;
	for (size_t i = 0; i < n; i++) {
		int rc = later ? 0 : replay_one(c, v[i]);
		if (rc >= 0) {
			/* not sent (meta went away): replayed at its next start, still in
			 * order, since it keeps its old incarnation and number */
			later += rc == 0;
			v[i]->next = keep;
			keep = v[i];
		} else {
			free(v[i]);
			lost++;
		}
	}
	free(v);
	pthread_mutex_lock(&c->kept_lock);
	while (keep) {
		struct kept *k = keep;
		keep = k->next;
		if (k->boot == c->boot && k->transno <= c->synced) {
			free(k);
			continue;
		}
		k->next = c->kept;
		c->kept = k;
		c->nkept++;
	}
	pthread_mutex_unlock(&c->kept_lock);
	pthread_rwlock_unlock(&c->replay_lock);
	log_info("meta restarted: %zu acknowledged mutation(s) replayed, %zu lost, %zu kept "
		 "for its next start", n - lost - later, lost, later);
}

void client_replay_recovering(struct weft_client *c)
{
	if (atomic_exchange(&c->recovering, true))
		return;
	client_acreate_no_barrier(+1); /* the creates in flight wait for this replay */
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino m = {.ino = 1};
	proto_ino_encode(&w, &m);
	if (client_meta_call(c, WEFT_OP_FSYNC, &w, NULL, 0, NULL) == 0)
		client_replay_run(c);
	client_acreate_no_barrier(-1);
	atomic_store(&c->recovering, false);
}

void client_replay_free(struct weft_client *c)
{
	while (c->kept) {
		struct kept *k = c->kept;
		c->kept = k->next;
		free(k);
	}
	c->nkept = 0;
}
