/* Which roles may send which request (roles.h). */
#include "proto/roles.h"

#include "proto/proto.h"

#define C (1u << WEFT_ROLE_CLIENT)
#define S (1u << WEFT_ROLE_STORE)
#define A (1u << WEFT_ROLE_ADMIN)
#define M (1u << WEFT_ROLE_META)

/* The roles that may send op to meta. */
static unsigned meta_roles(uint16_t op)
{
	switch (op) {
	case WEFT_OP_PING: case WEFT_OP_ECHO: case WEFT_OP_SINK: case WEFT_OP_STATS_GET:
		return C | S | A | M;
	case WEFT_OP_GETSTRIPE:          /* a store's resync reads layouts */
		return C | S | A;
	case WEFT_OP_CHAINS_GET:
		return C | S | A;
	case WEFT_OP_TARGET_FAILED:      /* a report meta checks with a probe */
		return C | S | A;
	case WEFT_OP_TARGETS_GET:
		return C | S | A;
	case WEFT_OP_TARGET_REGISTER: case WEFT_OP_TARGET_HEARTBEAT: case WEFT_OP_CHAIN_SYNCED:
	case WEFT_OP_RESYNC_PROGRESS: case WEFT_OP_CHAIN_OBJECTS:
		return S;
	case WEFT_OP_TARGET_OUT: case WEFT_OP_TARGET_DRAIN: case WEFT_OP_REBALANCE:
	case WEFT_OP_NODE_ADD: case WEFT_OP_NODE_LIST: case WEFT_OP_NODE_REVOKE:
		return A;
	case WEFT_OP_SESSION_OPEN: case WEFT_OP_SESSION_BEAT: case WEFT_OP_SESSION_CLOSE:
	case WEFT_OP_CAP_GET:
	case WEFT_OP_RECALL: /* meta refuses it from anyone (it sends it) */
		return C | A;
	default:
		/* the namespace: clients, and admins (weft setstripe, getstripe) */
		if (op >= 0x0100 && op < 0x0200)
			return C | A;
		return 0;
	}
}

/* The roles that may send op to a store. */
static unsigned store_roles(uint16_t op)
{
	switch (op) {
	case WEFT_OP_PING: case WEFT_OP_ECHO: case WEFT_OP_SINK: case WEFT_OP_STATS_GET:
	case WEFT_OP_STORE_STATS:
		return C | S | A | M;
	case WEFT_OP_OBJ_WRITE: case WEFT_OP_OBJ_TRUNCATE: case WEFT_OP_OBJ_FSYNC:
	case WEFT_OP_OBJ_READ: case WEFT_OP_OBJ_STAT: case WEFT_OP_OBJ_EXTENT:
		return C | S | M;
	case WEFT_OP_OBJ_SYNC_READ: case WEFT_OP_OBJ_MISSED: /* resync between chain peers */
		return S | M;
	case WEFT_OP_STORE_SCRUB: case WEFT_OP_STORE_RATE:
		return A | M;
	case WEFT_OP_OBJ_LIST: case WEFT_OP_OBJ_DELETE: case WEFT_OP_OBJ_REMOVE:
		return M;
	default:
		return 0;
	}
}

bool proto_op_allowed(uint16_t op, uint8_t server_role, uint8_t peer_role)
{
	if (peer_role < WEFT_ROLE_CLIENT || peer_role > WEFT_ROLE_META)
		return false;
	unsigned mask = server_role == WEFT_ROLE_STORE ? store_roles(op) : meta_roles(op);
	return mask & (1u << peer_role);
}

const char *proto_op_roles(uint16_t op, uint8_t server_role)
{
	/* indexed by the mask shifted down by one: client 1, store 2, admin 4, meta 8 */
	static const char *const names[16] = {
		[0] = "nobody", [1] = "client", [2] = "store", [4] = "admin", [8] = "meta",
		[5] = "client, admin", [10] = "store, meta", [12] = "admin, meta",
		[7] = "client, store, admin", [11] = "client, store, meta", [15] = "any",
	};
	unsigned mask = server_role == WEFT_ROLE_STORE ? store_roles(op) : meta_roles(op);
	const char *n = names[(mask >> 1) & 15];
	return n ? n : "some roles";
}
