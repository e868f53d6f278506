/* Node credentials at meta: the registry (LMDB table "nodes": name -> role, serial,
 * revoked; docs/on-disk-format.md), the check of a peer's HELLO against it, the admin
 * requests NODE_ADD, NODE_LIST and NODE_REVOKE, and telling the stores (NODES_CHANGED).
 *
 * DESIGN: keys are derived from the cluster secret (net/auth.h), so the registry holds
 * none: a credential is (role, name, serial), and reissuing one bumps the serial, which
 * refuses the old one. The registry is also in memory (s->nodes) for the handshake,
 * updated after each commit. A change bumps s->nodes_version; the loop's push tick
 * (push.c) then closes the connections of revoked or replaced credentials here and sends
 * the registry to every store, which closes theirs: a revoked node is cut off within a
 * tick (100 ms) on meta and on every connected store.
 *
 * Threads: verify and the pushes on the loop thread; handlers on the writer (apply) and
 * any thread (reply). */
#include "meta/server_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "meta/perm.h"
#include "meta/lease.h"
#include "net/nodetab.h"
#include "net/server.h"
#include "weft/err.h"

#define MSG(type) ((const struct weft_msg_##type *)(const void *)r->msg)

#define NODE_REC_V1 1 /* 7 bytes: version, role, serial, revoked */
#define NODE_REC_V2 2 /* + u8 flags, u32 uid_lo, uid_hi, gid_lo, gid_hi: 24 bytes */

struct node_rec {
	uint8_t role;
	uint32_t serial;
	bool revoked;
	struct node_policy policy;
};

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static int rec_get(struct meta_db *db, MDB_txn *txn, const char *name, struct node_rec *out)
{
	MDB_val k = {strlen(name), (void *)name}, v;
	int rc = mdb_get(txn, db->nodes, &k, &v);
	if (rc)
		return meta_mdb_err(rc);
	const uint8_t *p = v.mv_data;
	if (v.mv_size < 7 || (p[0] != NODE_REC_V1 && p[0] != NODE_REC_V2) ||
	    (p[0] == NODE_REC_V2 && v.mv_size < 24))
		return -EIO;
	out->role = p[1];
	out->serial = get32(p + 2);
	out->revoked = p[6];
	out->policy = NODE_POLICY_ANY;
	if (p[0] == NODE_REC_V2)
		out->policy = (struct node_policy){.trusted = p[7] & WEFT_NODE_TRUSTED,
						   .uid_lo = get32(p + 8), .uid_hi = get32(p + 12),
						   .gid_lo = get32(p + 16), .gid_hi = get32(p + 20)};
	return 0;
}

static int rec_put(struct meta_db *db, MDB_txn *txn, const char *name, const struct node_rec *n)
{
	uint8_t b[24] = {NODE_REC_V2, n->role};
	put32(b + 2, n->serial);
	b[6] = n->revoked;
	b[7] = n->policy.trusted ? WEFT_NODE_TRUSTED : 0;
	put32(b + 8, n->policy.uid_lo);
	put32(b + 12, n->policy.uid_hi);
	put32(b + 16, n->policy.gid_lo);
	put32(b + 20, n->policy.gid_hi);
	MDB_val k = {strlen(name), (void *)name}, v = {sizeof(b), b};
	return meta_mdb_err(meta_mdb_put(txn, db->nodes, &k, &v, 0));
}

int meta_nodes_load(struct meta_server *s)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	int rc = meta_db_read_begin(s->db, &txn);
	if (rc)
		return rc;
	rc = meta_mdb_err(mdb_cursor_open(txn, s->db->nodes, &cur));
	if (rc == 0) {
		MDB_val k, v;
		int mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		while (mrc == 0 && rc == 0) {
			char name[WEFT_NODE_MAX + 1];
			struct node_rec n;
			if (k.mv_size == 0 || k.mv_size > WEFT_NODE_MAX) {
				rc = -EIO;
				break;
			}
			memcpy(name, k.mv_data, k.mv_size);
			name[k.mv_size] = 0;
			rc = rec_get(s->db, txn, name, &n);
			if (rc == 0)
				rc = nodetab_set(s->nodes, name, n.role, n.serial, n.revoked,
						 &n.policy);
			mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		}
		mdb_cursor_close(cur);
	}
	meta_db_read_end(s->db, txn);
	return rc;
}

int meta_nodes_verify(void *arg, uint8_t role, const char *name, uint32_t serial,
		      uint8_t out[WEFT_KEY_LEN], char *why, size_t whylen)
{
	struct meta_server *s = arg;
	if (serial == 0) {
		memcpy(out, s->key.k, WEFT_KEY_LEN);
		return 0;
	}
	if (role == WEFT_ROLE_META) {
		snprintf(why, whylen, "only the cluster key speaks as meta");
		return -WEFT_EAUTH;
	}
	if (!nodetab_allows(s->nodes, true, role, name, serial, why, whylen))
		return -WEFT_EAUTH;
	auth_meta_key(&s->key, role, name, serial, out);
	return 0;
}

/* A node name as a registry key: printable, no spaces (the registry's text form). */
static bool name_ok(const struct weft_str *n)
{
	if (n->len == 0 || n->len > WEFT_NODE_MAX)
		return false;
	for (uint32_t i = 0; i < n->len; i++)
		if (n->p[i] <= ' ' || n->p[i] == 0x7f)
			return false;
	return true;
}

/* NODE_ADD {name, role} -> NODE_CRED: issues the next serial of name for role (a
 * revoked name comes back with it). EINVAL bad name or role. */
static int h_node_add(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_node_add *m = MSG(node_add);
	if (!name_ok(&m->name) || !auth_role_name(m->role) || m->role == WEFT_ROLE_META) {
		snprintf(r->detail, sizeof(r->detail),
			 "a node name is 1-%d printable characters without spaces, and its role "
			 "client, store or admin", WEFT_NODE_MAX);
		return -EINVAL;
	}
	if (m->uid_lo > m->uid_hi || m->gid_lo > m->gid_hi) {
		snprintf(r->detail, sizeof(r->detail), "a uid or gid range runs backwards");
		return -EINVAL;
	}
	char name[WEFT_NODE_MAX + 1];
	proto_str_copy(name, sizeof(name), m->name);
	struct node_rec n = {0};
	int rc = rec_get(c->db, c->txn, name, &n);
	if (rc && rc != -ENOENT)
		return rc;
	if ((m->flags & WEFT_NODE_POLICY_ONLY) && rc == -ENOENT) {
		snprintf(r->detail, sizeof(r->detail), "no node named %s", name);
		return rc;
	}
	n.policy = (struct node_policy){.trusted = m->flags & WEFT_NODE_TRUSTED,
					.uid_lo = m->uid_lo, .uid_hi = m->uid_hi,
					.gid_lo = m->gid_lo, .gid_hi = m->gid_hi};
	if (!(m->flags & WEFT_NODE_POLICY_ONLY)) {
		n.role = m->role;
		n.serial++;
		n.revoked = false;
	}
	r->u32 = n.serial;
	r->rec_role = n.role;
	r->rec_revoked = n.revoked;
	return rec_put(c->db, c->txn, name, &n);
}

static void rep_node_add(struct mreq *r, struct wbuf *w)
{
	const struct weft_msg_node_add *m = MSG(node_add);
	char name[WEFT_NODE_MAX + 1];
	proto_str_copy(name, sizeof(name), m->name);
	struct node_policy pol = {.trusted = m->flags & WEFT_NODE_TRUSTED, .uid_lo = m->uid_lo,
				  .uid_hi = m->uid_hi, .gid_lo = m->gid_lo, .gid_hi = m->gid_hi};
	nodetab_set(r->s->nodes, name, r->rec_role, r->u32, r->rec_revoked, &pol);
	atomic_fetch_add(&r->s->nodes_version, 1);
	if (m->flags & WEFT_NODE_POLICY_ONLY) { /* no new key: an empty credential */
		struct weft_msg_node_cred rep = {.serial = r->u32};
		proto_node_cred_encode(w, &rep);
		log_info("node %s: policy set (%s, uids %u-%u, gids %u-%u)", name,
			 pol.trusted ? "trusted" : "root squashed", pol.uid_lo, pol.uid_hi, pol.gid_lo,
			 pol.gid_hi);
		return;
	}
	struct weft_key cred;
	auth_cred_derive(&r->s->key, m->role, name, r->u32, &cred);
	struct weft_msg_node_cred rep = {.serial = r->u32, .has_service = cred.has_svc};
	memcpy(rep.meta_key, cred.k, WEFT_KEY_LEN);
	memcpy(rep.store_key, cred.store_k, WEFT_KEY_LEN);
	memcpy(rep.service_key, cred.svc, WEFT_KEY_LEN);
	conn_wrap(r->c, "meta-key", rep.meta_key);
	conn_wrap(r->c, "store-key", rep.store_key);
	conn_wrap(r->c, "service-key", rep.service_key);
	proto_node_cred_encode(w, &rep);
	log_info("node %s: %s credential issued (serial %u)", name, auth_role_name(m->role),
		 r->u32);
	memset(&cred, 0, sizeof(cred));
}

/* NODE_REVOKE {name} -> EMPTY: the node's credentials are refused from now on. ENOENT
 * no such node. */
static int h_node_revoke(struct mreq *r, const struct meta_ctx *c)
{
	char name[WEFT_NODE_MAX + 1];
	proto_str_copy(name, sizeof(name), MSG(node_name)->name);
	struct node_rec n;
	int rc = rec_get(c->db, c->txn, name, &n);
	if (rc == -ENOENT)
		snprintf(r->detail, sizeof(r->detail), "no node named %s", name);
	if (rc)
		return rc;
	n.revoked = true;
	r->u32 = n.serial;
	return rec_put(c->db, c->txn, name, &n);
}

static void rep_node_revoke(struct mreq *r, struct wbuf *w)
{
	(void)w;
	char name[WEFT_NODE_MAX + 1];
	proto_str_copy(name, sizeof(name), MSG(node_name)->name);
	uint8_t role;
	uint32_t serial;
	bool revoked;
	struct node_policy pol;
	if (nodetab_get(r->s->nodes, name, &role, &serial, &revoked, &pol))
		nodetab_set(r->s->nodes, name, role, serial, true, &pol);
	atomic_fetch_add(&r->s->nodes_version, 1);
	log_info("node %s: revoked", name);
}

/* NODE_LIST -> NODES {text} */
static int h_node_list(struct mreq *r, const struct meta_ctx *c)
{
	(void)c;
	nodetab_format(r->s->nodes, &r->bulk);
	if (r->bulk.len > WEFT_NODES_TEXT_MAX) {
		snprintf(r->detail, sizeof(r->detail), "the node list is over %d bytes",
			 WEFT_NODES_TEXT_MAX);
		return -E2BIG;
	}
	return r->bulk.err;
}

static void rep_node_list(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_nodes m = {.text = {(const char *)r->bulk.data, (uint32_t)r->bulk.len}};
	proto_nodes_encode(w, &m);
	wbuf_reset(&r->bulk); /* sent in the payload, not as bulk */
}

#define H(op, write, fn, rep) {WEFT_OP_##op, write, false, false, false, fn, rep}
const struct meta_handler meta_node_handlers[] = {
	H(NODE_ADD, true, h_node_add, rep_node_add),
	H(NODE_REVOKE, true, h_node_revoke, rep_node_revoke),
	H(NODE_LIST, false, h_node_list, rep_node_list),
	{0},
};

/* ---- telling the stores, cutting off (loop thread) ---- */

/* The registry's text, then the evicted sessions (LE u64s) at text->data + fenced_at. */
static void send_nodes(struct conn *c, const struct wbuf *text, size_t fenced_at)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_nodes m = {.text = {(const char *)text->data, (uint32_t)fenced_at},
				   .fenced = {(const char *)text->data + fenced_at,
					      (uint32_t)(text->len - fenced_at)}};
	proto_nodes_encode(&w, &m);
	conn_send_oneway(c, WEFT_OP_NODES_CHANGED, &w);
}

struct push {
	struct wbuf text;
	size_t fenced_at;
};

static void push_store(struct conn *c, void *arg)
{
	struct push *p = arg;
	if (conn_peer_role(c) == WEFT_ROLE_STORE)
		send_nodes(c, &p->text, p->fenced_at);
}

/* The registry and the sessions evicted lately, whose capabilities stores must refuse
 * (a capability outlives nothing else of its session: after its lifetime the store
 * refuses it anyway). */
static size_t push_format(struct meta_server *s, struct push *p)
{
	wbuf_init(&p->text);
	nodetab_format(s->nodes, &p->text);
	p->fenced_at = p->text.len;
	uint64_t ids[WEFT_FENCED_MAX];
	size_t total;
	size_t n = meta_leases_evicted_list(s->leases, ids, WEFT_FENCED_MAX, &total);
	for (size_t i = 0; i < n; i++)
		wbuf_u64(&p->text, ids[i]);
	return total;
}

void meta_nodes_ready(struct meta_server *s, struct conn *c)
{
	if (conn_peer_role(c) != WEFT_ROLE_STORE)
		return;
	struct push p;
	push_format(s, &p);
	send_nodes(c, &p.text, p.fenced_at);
	wbuf_free(&p.text);
}

void meta_nodes_tick(struct meta_server *s)
{
	uint64_t v = atomic_load(&s->nodes_version);
	uint64_t none;
	size_t evictions;
	meta_leases_evicted_list(s->leases, &none, 0, &evictions);
	if (v == s->pushed_nodes_version && evictions == s->pushed_evictions)
		return;
	if (v != s->pushed_nodes_version)
		nodetab_cut_off(s->nodes, s->srv);
	s->pushed_nodes_version = v;
	struct push p;
	s->pushed_evictions = (uint32_t)push_format(s, &p);
	server_foreach(s->srv, push_store, &p);
	wbuf_free(&p.text);
}

/* ---- a client node's policy on its requests (loop thread) ---- */

static struct log_limit policy_lines = LOG_LIMIT_INIT;

static bool in_range(uint32_t id, uint32_t lo, uint32_t hi)
{
	return id == META_NOBODY || (id >= lo && id <= hi);
}

int meta_nodes_clamp(struct meta_server *s, struct conn *c, struct weft_cred *cred, char *detail,
		     size_t cap)
{
	if (conn_peer_serial(c) == 0 || conn_peer_role(c) != WEFT_ROLE_CLIENT)
		return 0; /* the cluster key and admins speak for any uid */
	uint8_t role;
	uint32_t serial;
	bool revoked;
	struct node_policy p;
	const char *node = conn_peer_name(c);
	if (!nodetab_get(s->nodes, node, &role, &serial, &revoked, &p) || revoked ||
	    serial != conn_peer_serial(c)) {
		snprintf(detail, cap, "node %s is no longer registered with this credential", node);
		return -EACCES;
	}
	if (!p.trusted)
		meta_perm_squash(cred);
	uint32_t bad = 0;
	const char *what = NULL;
	if (!in_range(cred->uid, p.uid_lo, p.uid_hi)) {
		bad = cred->uid;
		what = "uid";
	} else if (!in_range(cred->gid, p.gid_lo, p.gid_hi)) {
		bad = cred->gid;
		what = "gid";
	} else {
		for (uint32_t i = 0; i < cred->ngroups && i < WEFT_GROUPS_MAX; i++)
			if (!in_range(cred->groups[i], p.gid_lo, p.gid_hi)) {
				bad = cred->groups[i];
				what = "group";
				break;
			}
	}
	if (!what)
		return 0;
	snprintf(detail, cap, "%s %u is outside what node %s may act as (uids %u-%u, gids %u-%u)",
		 what, bad, node, p.uid_lo, p.uid_hi, p.gid_lo, p.gid_hi);
	unsigned dropped;
	if (log_limit_ok(&policy_lines, 10, 10000, &dropped))
		log_warn("refused a request from %s: %s", conn_peer(c), detail);
	return -EACCES;
}
