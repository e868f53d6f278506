/* Unit tests of targets, chain tables (balance, distinct nodes, liveness, versions),
 * the chain set codec, and layout refusal when nodes are too few. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "meta/chains.h"
#include "meta/layout.h"
#include "meta/moves.h"
#include "meta/ns.h"
#include "meta/super.h"
#include "test_meta_util.h"
#include "weft/err.h"

static const struct weft_chain_target *find_target(const struct weft_chain_set *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->ntargets; i++)
		if (s->targets[i].id == id)
			return &s->targets[i];
	return NULL;
}

/* Checks table invariants; returns max - min memberships over targets. */
static unsigned check_table(const struct weft_chain_set *s, uint8_t r, bool verbose)
{
	unsigned heads[64] = { 0 }, joins[64] = { 0 };
	uint32_t n = s->nchains[r - 1];
	CHECK_INT(n, ==, s->ntargets);
	for (uint32_t i = 0; i < n; i++) {
		const struct weft_chain *c = &s->chains[r - 1][i];
		CHECK_INT(c->id, ==, i);
		CHECK_INT(c->nmembers, ==, r);
		for (int m = 0; m < r; m++) {
			const struct weft_chain_target *t = find_target(s, c->members[m].target);
			CHECK(t != NULL);
			CHECK(t->id < 64);
			joins[t->id]++;
			if (m == 0)
				heads[t->id]++;
			for (int k = 0; k < m; k++)
				CHECK(strcmp(find_target(s, c->members[k].target)->node, t->node) != 0);
		}
	}
	unsigned lo = 1000, hi = 0;
	for (uint32_t i = 0; i < s->ntargets; i++) {
		uint32_t id = s->targets[i].id;
		CHECK_INT(heads[id], ==, 1);
		CHECK_INT(joins[id], >=, 1);
		lo = joins[id] < lo ? joins[id] : lo;
		hi = joins[id] > hi ? joins[id] : hi;
	}
	if (verbose)
		printf("  %u targets, R=%u: memberships %u..%u\n", s->ntargets, r, lo, hi);
	return hi - lo;
}

static void test_balance(unsigned ntargets, unsigned nodes)
{
	char dir[256];
	struct weft_chain_set s;
	MDB_txn *txn;
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, ntargets, nodes);
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_snapshot(db, txn, &s));
	meta_db_read_end(db, txn);
	CHECK_INT(s.ntargets, ==, ntargets);
	for (uint8_t r = 1; r <= 3; r++)
		CHECK_INT(check_table(&s, r, true), <=, r == 1 ? 0 : 1);
	proto_chain_set_free(&s);
	tmeta_close(db, dir);
}

static int reg_one(MDB_txn *txn, void *arg)
{
	void **a = arg;
	struct meta_db *db = a[0];
	const uint8_t *uuid = a[1];
	return meta_chains_register(db, txn, uuid, a[2], a[3], 1000, 5, a[4]);
}

static uint32_t reg(struct meta_db *db, uint8_t u, const char *node, const char *addr)
{
	uint8_t uuid[16] = { u };
	uint32_t id = 0;
	void *a[] = { db, uuid, (void *)node, (void *)addr, &id };
	CHECK_OK(meta_db_write(db, reg_one, a));
	return id;
}

static int create_f(MDB_txn *txn, void *arg)
{
	struct weft_cred root = tmeta_cred(0, 0);
	struct meta_ctx c = { .db = ((void **)arg)[0], .txn = txn, .cred = &root };
	return meta_ns_create(&c, ROOT, S((const char *)((void **)arg)[1]), 0644, 0, NULL,
			      ((void **)arg)[2], NULL);
}

static void test_too_few_nodes(void)
{
	char dir[256];
	struct weft_layout l;
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 2);
	void *a[] = { db, "f1", &l };
	/* no targets at all: nothing can be placed */
	CHECK_INT(meta_db_write(db, create_f, a), ==, -EINVAL);
	/* two targets on one node: R=1 works, R=2 (the default here) does not */
	reg(db, 1, "n1", "h:1");
	reg(db, 2, "n1", "h:2");
	CHECK_INT(meta_db_write(db, create_f, a), ==, -EINVAL);
	MDB_txn *txn;
	uint32_t n;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_count(db, txn, 1, &n));
	CHECK_INT(n, ==, 2);
	CHECK_OK(meta_chains_count(db, txn, 2, &n));
	CHECK_INT(n, ==, 0);
	meta_db_read_end(db, txn);
	/* a second node appears: the R=2 table is built for every target */
	reg(db, 3, "n2", "h:3");
	CHECK_OK(meta_db_write(db, create_f, a));
	CHECK_INT(l.replicas, ==, 2);
	CHECK_INT(l.chain_count, ==, 3);
	struct weft_chain_set s;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_count(db, txn, 3, &n));
	CHECK_INT(n, ==, 0);
	CHECK_OK(meta_chains_snapshot(db, txn, &s));
	meta_db_read_end(db, txn);
	check_table(&s, 2, false);
	proto_chain_set_free(&s);
	tmeta_close(db, dir);
}

struct live_arg {
	struct meta_db *db;
	int step;
	uint32_t id;
	unsigned n;
};

static int live_apply(MDB_txn *txn, void *arg)
{
	struct live_arg *a = arg;
	struct meta_target_stats st = { .capacity = 2000, .free = 1500, .write_bytes = 42 };
	switch (a->step) {
	case 0: return meta_chains_heartbeat(a->db, txn, a->id, &st, 100);
	case 1: return meta_chains_expire(a->db, txn, 150, 60, &a->n);
	case 2: return meta_chains_heartbeat(a->db, txn, a->id, &st, 200);
	case 3: return meta_chains_target_offline(a->db, txn, a->id);
	default: return -EINVAL;
	}
}

static void test_liveness(void)
{
	char dir[256];
	MDB_txn *txn;
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 1);
	uint32_t ids[4];
	for (int i = 0; i < 4; i++) {
		char node[8], addr[16];
		snprintf(node, sizeof(node), "n%d", i);
		snprintf(addr, sizeof(addr), "h:%d", i);
		ids[i] = reg(db, (uint8_t)(i + 1), node, addr);
	}
	CHECK_INT(ids[0], ==, 1);
	CHECK_INT(ids[3], ==, 4);
	/* same uuid: same id, new address, and a new epoch (the chain set carries the
	 * addresses mounts connect to); the same address again changes nothing */
	struct meta_super sbm;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_super_get(db, txn, &sbm));
	meta_db_read_end(db, txn);
	CHECK_INT(reg(db, 2, "n1", "newhost:1"), ==, ids[1]);
	struct meta_target t;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_target_get(db, txn, ids[1], &t));
	CHECK_STR(t.addr, "newhost:1");
	struct meta_super sb0;
	CHECK_OK(meta_super_get(db, txn, &sb0));
	meta_db_read_end(db, txn);
	CHECK_INT(sb0.chains_epoch, ==, sbm.chains_epoch + 1);
	CHECK_INT(reg(db, 2, "n1", "newhost:1"), ==, ids[1]);
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_super_get(db, txn, &sbm));
	meta_db_read_end(db, txn);
	CHECK_INT(sbm.chains_epoch, ==, sb0.chains_epoch);

	struct weft_chain_set s0;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_snapshot(db, txn, &s0));
	meta_db_read_end(db, txn);
	/* targets 0, 2, 3 heartbeat at t=100; target 1 last seen at 5: expire at 150/60 */
	struct live_arg a = { .db = db };
	for (int i = 0; i < 4; i++) {
		if (i == 1)
			continue;
		a.id = ids[i];
		CHECK_OK(meta_db_write(db, live_apply, &a));
	}
	a.step = 1;
	CHECK_OK(meta_db_write(db, live_apply, &a));
	CHECK_INT(a.n, ==, 1);
	struct weft_chain_set s;
	struct meta_super sb1;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_target_get(db, txn, ids[0], &t));
	CHECK_INT(t.free, ==, 1500);
	CHECK_INT(t.write_bytes, ==, 42);
	CHECK_OK(meta_chains_target_get(db, txn, ids[1], &t));
	CHECK_INT(t.state, ==, WEFT_MEMBER_OFFLINE);
	CHECK_OK(meta_chains_snapshot(db, txn, &s));
	CHECK_OK(meta_super_get(db, txn, &sb1));
	uint64_t total, freeb;
	CHECK_OK(meta_chains_capacity(db, txn, &total, &freeb));
	CHECK_INT(total, ==, 3 * 2000);
	meta_db_read_end(db, txn);
	CHECK(sb1.chains_epoch > sb0.chains_epoch);
	CHECK_INT(s.epoch, ==, sb1.chains_epoch);
	/* every chain holding target 1 has it last, offline, with version 2 */
	unsigned touched = 0;
	for (uint8_t r = 1; r <= 3; r++)
		for (uint32_t i = 0; i < s.nchains[r - 1]; i++) {
			const struct weft_chain *c = &s.chains[r - 1][i];
			bool has = false;
			for (int m = 0; m < r; m++)
				if (c->members[m].target == ids[1]) {
					has = true;
					CHECK_INT(m, ==, r - 1);
					CHECK_INT(c->members[m].state, ==, WEFT_MEMBER_OFFLINE);
				} else {
					CHECK_INT(c->members[m].state, ==, WEFT_MEMBER_SERVING);
				}
			CHECK_INT(c->version, ==, s0.chains[r - 1][i].version + has);
			touched += has;
		}
	CHECK_INT(touched, ==, 1 + 2 + 3);
	proto_chain_set_free(&s);

	/* it comes back: syncing, behind the live members; then serving */
	a.step = 2;
	a.id = ids[1];
	CHECK_OK(meta_db_write(db, live_apply, &a));
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_snapshot(db, txn, &s));
	meta_db_read_end(db, txn);
	const struct weft_chain *c3 = NULL;
	for (uint32_t i = 0; i < s.nchains[2]; i++)
		if (s.chains[2][i].members[2].target == ids[1])
			c3 = &s.chains[2][i];
	CHECK(c3 != NULL);
	CHECK_INT(c3->members[2].state, ==, WEFT_MEMBER_SYNCING);
	CHECK_INT(c3->version, ==, s0.chains[2][c3->id].version + 2);
	proto_chain_set_free(&s0);
	uint32_t cid = c3->id;
	proto_chain_set_free(&s);

	/* two members down in one chain: both at the end, in the order they failed */
	a.step = 3;
	a.id = ids[3];
	CHECK_OK(meta_db_write(db, live_apply, &a));
	CHECK_OK(meta_db_write(db, live_apply, &a)); /* already offline: no change */
	struct weft_chain c;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_get(db, txn, 3, cid, &c));
	meta_db_read_end(db, txn);
	bool has3 = false;
	for (int m = 0; m < 3; m++)
		has3 |= c.members[m].target == ids[3];
	if (has3) {
		CHECK_INT(c.members[2].target, ==, ids[3]);
		CHECK_INT(c.members[2].state, ==, WEFT_MEMBER_OFFLINE);
		CHECK_INT(c.members[1].target, ==, ids[1]);
	}
	tmeta_close(db, dir);
}

static int serving_apply(MDB_txn *txn, void *arg)
{
	uint32_t *v = arg;
	struct meta_db *db = *(struct meta_db **)(v + 4);
	return meta_chains_member_serving(db, txn, (uint8_t)v[0], v[1], v[2]);
}

static void test_member_serving(void)
{
	char dir[256];
	MDB_txn *txn;
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, 3, 3);
	/* target 1 offline then back, then serving in chain 0 of R=2 (which holds it) */
	struct live_arg a = { .db = db, .step = 3, .id = 1 };
	CHECK_OK(meta_db_write(db, live_apply, &a));
	a.step = 2;
	CHECK_OK(meta_db_write(db, live_apply, &a));
	struct weft_chain c;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_get(db, txn, 2, 0, &c));
	meta_db_read_end(db, txn);
	int pos = -1;
	for (int m = 0; m < 2; m++)
		if (c.members[m].target == 1)
			pos = m;
	CHECK(pos >= 0);
	CHECK_INT(c.members[pos].state, ==, WEFT_MEMBER_SYNCING);
	uint32_t v[6] = { 2, 0, 1, 0 };
	memcpy(v + 4, &db, sizeof(db));
	CHECK_OK(meta_db_write(db, serving_apply, v));
	CHECK_OK(meta_db_read_begin(db, &txn));
	struct weft_chain c2;
	CHECK_OK(meta_chains_get(db, txn, 2, 0, &c2));
	meta_db_read_end(db, txn);
	CHECK_INT(c2.members[pos].state, ==, WEFT_MEMBER_SERVING);
	CHECK_INT(c2.version, ==, c.version + 1);
	v[2] = 99;
	CHECK_INT(meta_db_write(db, serving_apply, v), ==, -ENOENT);
	v[1] = 1000;
	CHECK_INT(meta_db_write(db, serving_apply, v), ==, -ENOENT);
	tmeta_close(db, dir);
}

struct vouch_arg {
	struct meta_db *db;
	uint32_t id;
	uint64_t inc, wseq, hb_wseq;
	bool untrusted, offline, disk_failed;
};

static int vouch_apply(MDB_txn *txn, void *arg)
{
	struct vouch_arg *a = arg;
	if (a->disk_failed)
		return meta_chains_target_disk_failed(a->db, txn, a->id);
	if (a->offline)
		return meta_chains_target_offline(a->db, txn, a->id);
	if (a->hb_wseq) {
		struct meta_target_stats st = { .wseq = a->hb_wseq };
		return meta_chains_heartbeat(a->db, txn, a->id, &st, 1);
	}
	return meta_chains_vouch(a->db, txn, a->id, a->inc, a->wseq, &a->untrusted);
}

/* Target 1's state in chain 0 of R=2 (it owns it: first while serving). */
static int state_in_chain0(struct meta_db *db, int *pos)
{
	MDB_txn *txn;
	struct weft_chain c;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_get(db, txn, 2, 0, &c));
	meta_db_read_end(db, txn);
	for (int m = 0; m < c.nmembers; m++)
		if (c.members[m].target == 1) {
			*pos = m;
			return c.members[m].state;
		}
	return -1;
}

/* A returning target is trusted with the same incarnation and a write sequence at
 * least what it reported; a new incarnation or an older sequence makes it rebuild (copy
 * the whole chain), except in a one-member chain, where it is syncing. */
static void test_vouch(void)
{
	char dir[256];
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, 3, 3);
	struct vouch_arg a = { .db = db, .id = 1, .inc = 77, .wseq = 10 };
	int pos;
	CHECK_OK(meta_db_write(db, vouch_apply, &a)); /* first report: recorded */
	CHECK(!a.untrusted);
	a.hb_wseq = 25; /* a heartbeat reports more writes */
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	a.hb_wseq = 0;
	a.wseq = 25;
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	CHECK(!a.untrusted);
	CHECK_INT(state_in_chain0(db, &pos), ==, WEFT_MEMBER_SERVING);
	CHECK_INT(pos, ==, 0);
	a.wseq = 24; /* restored from an older copy */
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	CHECK(a.untrusted);
	CHECK_INT(state_in_chain0(db, &pos), ==, WEFT_MEMBER_REBUILDING);
	CHECK_INT(pos, ==, 1); /* behind the live member */
	a.wseq = 30; /* same incarnation, newer: trusted (stays rebuilding until copied) */
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	CHECK(!a.untrusted);
	CHECK_INT(state_in_chain0(db, &pos), ==, WEFT_MEMBER_REBUILDING);
	a.inc = 78; /* new incarnation: emptied or replaced */
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	CHECK(a.untrusted);
	CHECK_INT(state_in_chain0(db, &pos), ==, WEFT_MEMBER_REBUILDING);
	/* it fails before it has copied everything: when it returns it rebuilds again, a
	 * sync from the missed log would leave the rest of the chain missing */
	a.offline = true;
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	CHECK_INT(state_in_chain0(db, &pos), ==, WEFT_MEMBER_OFFLINE);
	a.offline = false;
	a.hb_wseq = 31;
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	CHECK_INT(state_in_chain0(db, &pos), ==, WEFT_MEMBER_REBUILDING);
	a.hb_wseq = 0;
	a.id = 99;
	CHECK_INT(meta_db_write(db, vouch_apply, &a), ==, -ENOENT);
	tmeta_close(db, dir);
}

static int replace_apply(MDB_txn *txn, void *arg)
{
	void **a = arg;
	return meta_chains_replace(a[0], txn, *(uint32_t *)a[1], a[2]);
}

/* Re-replication: the target leaves every chain that has another live member, a target
 * of another node rebuilds in its place; the chain keeps id and owner; replicas-1
 * chains keep it (nobody to copy from). */
/* A target that reports its own disk failing goes offline and rebuilds when it returns,
 * also when it was already offline (a report that arrives after meta's timeout). */
static void test_disk_failed(void)
{
	char dir[256];
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, 3, 3);
	struct vouch_arg a = { .db = db, .id = 1, .inc = 5, .wseq = 1 };
	int pos;
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	CHECK_INT(state_in_chain0(db, &pos), ==, WEFT_MEMBER_SERVING);
	a.disk_failed = true;
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	CHECK_INT(state_in_chain0(db, &pos), ==, WEFT_MEMBER_OFFLINE);
	a.disk_failed = false;
	a.hb_wseq = 2; /* the disk replaced, the store restarted */
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	CHECK_INT(state_in_chain0(db, &pos), ==, WEFT_MEMBER_REBUILDING);
	a.hb_wseq = 0;
	/* already offline (timed out) when the report arrives */
	a.offline = true;
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	a.offline = false;
	a.disk_failed = true;
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	a.disk_failed = false;
	a.hb_wseq = 3;
	CHECK_OK(meta_db_write(db, vouch_apply, &a));
	CHECK_INT(state_in_chain0(db, &pos), ==, WEFT_MEMBER_REBUILDING);
	tmeta_close(db, dir);
}

static void test_replace(void)
{
	char dir[256];
	MDB_txn *txn;
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, 4, 4);
	struct weft_chain_set before, after;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_snapshot(db, txn, &before));
	meta_db_read_end(db, txn);
	uint32_t id = 1;
	unsigned n = 0;
	void *a[] = { db, &id, &n };
	CHECK_OK(meta_db_write(db, replace_apply, a));
	CHECK(n > 0);
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_snapshot(db, txn, &after));
	meta_db_read_end(db, txn);
	CHECK(after.epoch > before.epoch);
	CHECK_INT(find_target(&after, 1)->state, ==, WEFT_MEMBER_OFFLINE);
	unsigned changed = 0;
	for (uint8_t r = 1; r <= 3; r++) {
		CHECK_INT(after.nchains[r - 1], ==, before.nchains[r - 1]);
		for (uint32_t i = 0; i < after.nchains[r - 1]; i++) {
			const struct weft_chain *b = &before.chains[r - 1][i], *c = &after.chains[r - 1][i];
			CHECK_INT(c->owner, ==, b->owner);
			bool had = false, has = false;
			int rebuilding = 0;
			for (int m = 0; m < c->nmembers; m++) {
				had |= b->members[m].target == 1;
				has |= c->members[m].target == 1;
				rebuilding += c->members[m].state == WEFT_MEMBER_REBUILDING;
				for (int k = 0; k < m; k++) /* still distinct nodes */
					CHECK(strcmp(find_target(&after, c->members[k].target)->node,
						     find_target(&after, c->members[m].target)->node) != 0);
			}
			if (r == 1) {
				CHECK(has == had); /* kept: nothing to rebuild from */
				continue;
			}
			CHECK(!has);
			if (had) {
				CHECK_INT(rebuilding, ==, 1);
				CHECK(c->version > b->version);
				/* the rebuilding member sits right behind the live ones */
				CHECK_INT(c->members[c->nmembers - 1].state, ==, WEFT_MEMBER_REBUILDING);
				changed++;
			} else {
				CHECK_INT(c->version, ==, b->version);
			}
		}
	}
	CHECK_INT(changed, ==, n);
	proto_chain_set_free(&before);
	proto_chain_set_free(&after);
	id = 4242;
	CHECK_INT(meta_db_write(db, replace_apply, a), ==, -ENOENT);
	tmeta_close(db, dir);
}

static void test_codec(void)
{
	char dir[256];
	MDB_txn *txn;
	struct weft_chain_set s, d;
	struct wbuf w;
	struct rbuf r;
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, 5, 5);
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_snapshot(db, txn, &s));
	meta_db_read_end(db, txn);
	wbuf_init(&w);
	proto_chain_set_encode(&s, &w);
	CHECK_OK(w.err);
	CHECK_INT(w.len, ==, 1 + 8 + 4 + 5 * (4 + 1 + 2 + 5 + 2 + 14) + 3 * 4 + 5 * (13 + 5) +
				 5 * (13 + 10) + 5 * (13 + 15));
	rbuf_init(&r, w.data, w.len);
	CHECK_OK(proto_chain_set_decode(&r, &d));
	CHECK_INT(rbuf_left(&r), ==, 0);
	CHECK_INT(d.epoch, ==, s.epoch);
	CHECK_INT(d.ntargets, ==, 5);
	CHECK_STR(d.targets[4].node, "node4");
	CHECK_STR(d.targets[4].addr, "127.0.0.1:9004");
	for (int k = 0; k < 3; k++) {
		CHECK_INT(d.nchains[k], ==, 5);
		for (uint32_t i = 0; i < 5; i++) {
			CHECK_INT(d.chains[k][i].version, ==, s.chains[k][i].version);
			for (int m = 0; m <= k; m++)
				CHECK_INT(d.chains[k][i].members[m].target, ==,
					  s.chains[k][i].members[m].target);
		}
	}
	const struct weft_chain *c = proto_chain_set_get(&d, 3, 4);
	CHECK(c && c->id == 4 && c->replicas == 3);
	CHECK(proto_chain_set_get(&d, 3, 5) == NULL);
	CHECK(proto_chain_set_get(&d, 4, 0) == NULL);
	proto_chain_set_free(&d);
	proto_chain_set_free(&d); /* idempotent */

	/* every truncation is refused, never read past the end */
	for (size_t len = 0; len < w.len; len++) {
		uint8_t *copy = malloc(len ? len : 1);
		memcpy(copy, w.data, len);
		rbuf_init(&r, copy, len);
		CHECK_INT(proto_chain_set_decode(&r, &d), ==, -WEFT_EPROTO);
		CHECK(r.why != NULL);
		CHECK(d.targets == NULL && d.chains[0] == NULL);
		free(copy);
	}
	/* huge counts are refused before allocating */
	uint8_t evil[1 + 8 + 4] = { 1 };
	put_le32(evil + 9, 0xffffffffu);
	rbuf_init(&r, evil, sizeof(evil));
	CHECK_INT(proto_chain_set_decode(&r, &d), ==, -WEFT_EPROTO);
	/* bad state, bad member count, bad version */
	uint8_t *bad = malloc(w.len);
	memcpy(bad, w.data, w.len);
	bad[0] = 2;
	rbuf_init(&r, bad, w.len);
	CHECK_INT(proto_chain_set_decode(&r, &d), ==, -WEFT_EPROTO);
	memcpy(bad, w.data, w.len);
	bad[1 + 8 + 4 + 4] = 7; /* first target's state */
	rbuf_init(&r, bad, w.len);
	CHECK_INT(proto_chain_set_decode(&r, &d), ==, -WEFT_EPROTO);
	free(bad);
	wbuf_free(&w);
	proto_chain_set_free(&s);
	tmeta_close(db, dir);
}

/* Once files name chains of a table, those chains keep their members; a new target
 * adds chains and the tables no file uses yet are rebuilt balanced. */
static void test_growth_after_use(void)
{
	char dir[256];
	MDB_txn *txn;
	struct weft_chain_set a, b;
	struct weft_layout l;
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 2);
	tmeta_targets(db, 4, 4);
	void *arg[] = { db, "f", &l };
	CHECK_OK(meta_db_write(db, create_f, arg));
	CHECK_INT(l.chain_count, ==, 4);
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_snapshot(db, txn, &a));
	meta_db_read_end(db, txn);
	reg(db, 100, "node9", "h:9");
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_snapshot(db, txn, &b));
	meta_db_read_end(db, txn);
	CHECK_INT(b.nchains[1], ==, 5);
	for (uint32_t i = 0; i < 4; i++) {
		CHECK_INT(b.chains[1][i].version, ==, a.chains[1][i].version);
		CHECK(memcmp(b.chains[1][i].members, a.chains[1][i].members,
			     sizeof(a.chains[1][i].members)) == 0);
	}
	CHECK_INT(check_table(&b, 2, true), <=, 2);
	CHECK_INT(check_table(&b, 3, true), <=, 1);
	CHECK(b.epoch > a.epoch);
	proto_chain_set_free(&a);
	proto_chain_set_free(&b);
	/* the old file's layout still names 4 chains; new files see 5 */
	arg[1] = "g";
	CHECK_OK(meta_db_write(db, create_f, arg));
	CHECK_INT(l.chain_count, ==, 5);
	tmeta_close(db, dir);
}

struct room_arg {
	struct meta_db *db;
	uint64_t free[8];  /* per target id (capacity 100 GiB each) */
	unsigned ntargets;
	unsigned counts[8]; /* first_chain of the layouts picked */
	unsigned picks;
	uint8_t replicas;
};

static int room_beat(MDB_txn *txn, void *arg)
{
	struct room_arg *a = arg;
	int rc = 0;
	for (uint32_t id = 1; id <= a->ntargets && !rc; id++) {
		struct meta_target_stats st = { .capacity = 100ull << 30, .free = a->free[id] };
		rc = meta_chains_heartbeat(a->db, txn, id, &st, 10);
	}
	return rc;
}

/* `picks` creates of files striped over one chain (each takes a new inode number). */
static int room_pick(MDB_txn *txn, void *arg)
{
	struct room_arg *a = arg;
	struct weft_layout d = { .stripe_unit = 1 << 20, .stripe_count = 1,
				 .replicas = a->replicas }, l;
	memset(a->counts, 0, sizeof(a->counts));
	for (unsigned i = 0; i < a->picks; i++) {
		struct meta_super sb;
		int rc = meta_super_get(a->db, txn, &sb);
		if (rc)
			return rc;
		sb.next_ino++;
		if ((rc = meta_layout_pick(a->db, txn, &sb, &d, &l)) || (rc = meta_super_put(a->db, txn, &sb)))
			return rc;
		a->counts[l.first_chain]++;
	}
	return 0;
}

/* New files striped over fewer chains than there are go where the room is: evenly by
 * count while the targets are about as full, in proportion to free space once they are
 * not (a store added to four full ones takes most of them); a chain's room is its
 * fullest member's, so a replicated chain that pairs the new store with a full one is
 * no roomier than that one. A new target's chain pairs it with the emptiest old one. */
static void test_placement_by_room(void)
{
	char dir[256];
	MDB_txn *txn;
	struct weft_chain_set s;
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, 5, 5);
	struct room_arg a = { .db = db, .ntargets = 5, .picks = 500, .replicas = 1 };
	for (uint32_t id = 1; id <= 5; id++)
		a.free[id] = 60ull << 30;
	a.free[3] = 55ull << 30; /* within 20%: still round-robin */
	CHECK_OK(meta_db_write(db, room_beat, &a));
	CHECK_OK(meta_db_write(db, room_pick, &a));
	for (int c = 0; c < 5; c++)
		CHECK_INT(a.counts[c], ==, 100);
	/* four at 10% free, one empty */
	for (uint32_t id = 1; id <= 4; id++)
		a.free[id] = 10ull << 30;
	a.free[5] = 100ull << 30;
	CHECK_OK(meta_db_write(db, room_beat, &a));
	CHECK_OK(meta_db_write(db, room_pick, &a));
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_snapshot(db, txn, &s));
	meta_db_read_end(db, txn);
	unsigned to_empty = 0;
	for (uint32_t c = 0; c < s.nchains[0]; c++)
		if (s.chains[0][c].members[0].target == 5)
			to_empty = a.counts[c];
	proto_chain_set_free(&s);
	printf("placement by room: %u of 500 new files on the empty target (expected ~357)\n",
	       to_empty);
	CHECK_INT(to_empty, >, 300);
	CHECK_INT(to_empty, <, 420);
	tmeta_close(db, dir);

	/* replicas 2: four targets, one file (so the chains are kept), then target 5 joins */
	db = tmeta_open(dir, sizeof(dir), 2);
	tmeta_targets(db, 4, 4);
	struct weft_layout l;
	void *arg[] = { db, "f", &l };
	CHECK_OK(meta_db_write(db, create_f, arg));
	a = (struct room_arg){ .db = db, .ntargets = 4 };
	for (uint32_t id = 1; id <= 4; id++)
		a.free[id] = 20ull << 30;
	a.free[2] = 70ull << 30; /* the emptiest old target */
	CHECK_OK(meta_db_write(db, room_beat, &a));
	reg(db, 50, "node50", "h:50");
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_snapshot(db, txn, &s));
	meta_db_read_end(db, txn);
	CHECK_INT(s.nchains[1], ==, 5);
	CHECK_INT(s.chains[1][4].members[0].target, ==, 5);
	CHECK_INT(s.chains[1][4].members[1].target, ==, 2);
	proto_chain_set_free(&s);
	tmeta_close(db, dir);
}


struct move_arg {
	struct meta_db *db;
	int step; /* 0 drain, 1 moves step, 2 remove, 3 member serving */
	uint32_t id;
	uint8_t replicas;
	uint32_t chain;
	unsigned n;
	struct meta_moves_result res;
};

static int move_apply(MDB_txn *txn, void *arg)
{
	struct move_arg *a = arg;
	struct meta_moves_cfg cfg = {.rebalance = false, .threshold = 10};
	switch (a->step) {
	case 0: return meta_moves_drain(a->db, txn, a->id, &a->n);
	case 1: return meta_moves_step(a->db, txn, &cfg, &a->res);
	case 2: return meta_moves_remove(a->db, txn, a->id);
	default: return meta_chains_member_serving(a->db, txn, a->replicas, a->chain, a->id);
	}
}

/* Drain: each chain of the target gets an extra rebuilding member (replicas + 1, the
 * drained one still serving), which replaces it when it serves; remove is refused until
 * the target is in no chain, and the removed target leaves the set for good. */
static void test_drain(void)
{
	char dir[256];
	MDB_txn *txn;
	struct meta_db *db = tmeta_open(dir, sizeof(dir), 1);
	tmeta_targets(db, 4, 4);
	struct move_arg a = {.db = db, .step = 2, .id = 2};
	CHECK_INT(meta_db_write(db, move_apply, &a), ==, -EINVAL); /* not drained */
	a.step = 0;
	CHECK_OK(meta_db_write(db, move_apply, &a));
	unsigned memberships = a.n;
	CHECK_INT(memberships, >=, 3); /* at least one per table */
	a.step = 2;
	CHECK_INT(meta_db_write(db, move_apply, &a), ==, -EBUSY);
	for (int round = 0; round < 4; round++) {
		a.step = 1;
		CHECK_OK(meta_db_write(db, move_apply, &a));
		struct weft_chain_set set;
		CHECK_OK(meta_db_read_begin(db, &txn));
		CHECK_OK(meta_chains_snapshot(db, txn, &set));
		meta_db_read_end(db, txn);
		for (uint8_t r = 1; r <= WEFT_REPLICAS_MAX; r++)
			for (uint32_t i = 0; i < set.nchains[r - 1]; i++) {
				const struct weft_chain *c = &set.chains[r - 1][i];
				if (c->nmembers == r)
					continue;
				/* a move: the newcomer rebuilds behind the serving members, the
				 * drained target still serves, and the codec carries it */
				CHECK_INT(c->nmembers, ==, r + 1);
				int serving = 0, newcomer = -1;
				bool has2 = false;
				for (int m = 0; m < c->nmembers; m++) {
					serving += c->members[m].state == WEFT_MEMBER_SERVING;
					has2 |= c->members[m].target == 2 &&
						c->members[m].state == WEFT_MEMBER_SERVING;
					if (c->members[m].state == WEFT_MEMBER_REBUILDING)
						newcomer = m;
				}
				CHECK_INT(serving, ==, r);
				CHECK(has2);
				CHECK_INT(newcomer, ==, r);
				CHECK(c->members[newcomer].target != 2);
				struct wbuf w;
				wbuf_init(&w);
				proto_chain_set_encode(&set, &w);
				struct rbuf rb;
				rbuf_init(&rb, w.data, w.len);
				struct weft_chain_set back;
				CHECK_OK(proto_chain_set_decode(&rb, &back));
				CHECK_INT(back.chains[r - 1][i].nmembers, ==, r + 1);
				proto_chain_set_free(&back);
				wbuf_free(&w);
				/* it synced: the drained target leaves in the same version */
				a.step = 3;
				a.replicas = r;
				a.chain = i;
				a.id = c->members[newcomer].target;
				CHECK_OK(meta_db_write(db, move_apply, &a));
				a.id = 2;
				struct weft_chain after;
				CHECK_OK(meta_db_read_begin(db, &txn));
				CHECK_OK(meta_chains_get(db, txn, r, i, &after));
				meta_db_read_end(db, txn);
				CHECK_INT(after.nmembers, ==, r);
				CHECK_INT(after.version, ==, c->version + 1);
				for (int m = 0; m < r; m++) {
					CHECK(after.members[m].target != 2);
					CHECK_INT(after.members[m].state, ==, WEFT_MEMBER_SERVING);
				}
			}
		proto_chain_set_free(&set);
	}
	unsigned left = 99;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_moves_memberships(db, txn, 2, &left));
	meta_db_read_end(db, txn);
	CHECK_INT(left, ==, 0);
	a.step = 2;
	CHECK_OK(meta_db_write(db, move_apply, &a));
	struct weft_chain_set set;
	CHECK_OK(meta_db_read_begin(db, &txn));
	CHECK_OK(meta_chains_snapshot(db, txn, &set));
	meta_db_read_end(db, txn);
	CHECK_INT(set.ntargets, ==, 3);
	CHECK(find_target(&set, 2) == NULL);
	proto_chain_set_free(&set);
	/* the removed target may not register again */
	uint8_t uuid[16] = {2, 0xaa}; /* as tmeta_targets made it */
	uint32_t id = 0;
	void *ra[] = {db, uuid, "n1", "127.0.0.1:1", &id};
	CHECK_INT(meta_db_write(db, reg_one, ra), ==, -EPERM);
	tmeta_close(db, dir);
}

int main(void)
{
	test_balance(4, 4);
	test_balance(5, 5);
	test_balance(8, 8);
	test_balance(8, 4);  /* two targets per node */
	test_balance(12, 3); /* four per node */
	test_too_few_nodes();
	test_growth_after_use();
	test_placement_by_room();
	test_liveness();
	test_member_serving();
	test_vouch();
	test_disk_failed();
	test_replace();
	test_drain();
	test_codec();
	printf("meta_chains: ok\n");
	return 0;
}
