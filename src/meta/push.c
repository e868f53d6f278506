/* meta -> mounts: CHAINS_CHANGED, so that clients learn of a new chain-table epoch
 * within a tick instead of at their next session heartbeat (a third of the lease).
 * Stores are not sent it: they beat every second and get the epoch in the reply.
 *
 * A loop timer reads the superblock's chains_epoch (a read txn, a few microseconds) and,
 * when it moved since the last push, sends a one-way CHAINS_CHANGED {version} on every
 * ready connection of a client. Polling the epoch rather than hooking every
 * mutation that bumps it (registration, heartbeats, failure reports, expiry, and what
 * resync and re-replication add) keeps the push independent of who changed the tables.
 * A member that misses a push (not connected at the time) still learns from its next
 * heartbeat reply, or at once when a request names a chain it does not have.
 *
 * Threads: the loop thread only. */
#include "meta/server_int.h"

#include "common/log.h"
#include "net/server.h"

#define PUSH_TICK_MS 100

static void push_one(struct conn *c, void *arg)
{
	if (conn_peer_role(c) != WEFT_ROLE_CLIENT)
		return;
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_chains m = {.version = *(const uint64_t *)arg};
	proto_chains_encode(&w, &m);
	conn_send_oneway(c, WEFT_OP_CHAINS_CHANGED, &w); /* a closing peer: nothing to do */
}

static void push_tick(void *arg)
{
	struct meta_server *s = arg;
	MDB_txn *txn;
	struct meta_super sb;
	if (s->stopping)
		return;
	meta_nodes_tick(s);
	if (meta_db_read_begin(s->db, &txn))
		return;
	int rc = meta_super_get(s->db, txn, &sb);
	meta_db_read_end(s->db, txn);
	if (rc || sb.chains_epoch == s->pushed_epoch)
		return;
	bool first = s->pushed_epoch == 0;
	s->pushed_epoch = sb.chains_epoch;
	if (!first)
		server_foreach(s->srv, push_one, &sb.chains_epoch);
}

void meta_push_start(struct meta_server *s)
{
	loop_every(s->loop, PUSH_TICK_MS, push_tick, s);
}
