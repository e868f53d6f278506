/* The node registry a server checks credentials against: name -> role, serial, revoked.
 *
 * meta keeps the registry (LMDB table "nodes", meta/nodes.c) and sends it to every store
 * when a store connects and whenever it changes (NODES_CHANGED); the store keeps its
 * copy here. A credential (role, name, serial) passes meta only if the registry lists it
 * as is and not revoked; it passes a store unless the registry revokes that serial or
 * lists a later one for the name (a store knows only what meta last told it, and a
 * serial later than the one it knows can only have come from meta).
 *
 * Threads: any; a mutex guards the table. */
#ifndef WEFT_NODETAB_H
#define WEFT_NODETAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct nodetab;

/* What meta lets a client node's requests say (Lustre's nodemap): uid 0 squashed to
 * nobody unless trusted, and uid and gids within ranges (nobody, 65534, always passes). */
struct node_policy {
	bool trusted;
	uint32_t uid_lo, uid_hi, gid_lo, gid_hi;
};
#define NODE_POLICY_ANY ((struct node_policy){false, 0, UINT32_MAX, 0, UINT32_MAX})

struct nodetab *nodetab_new(void);
void nodetab_free(struct nodetab *t);
/* Adds or replaces name's entry (policy NULL: NODE_POLICY_ANY). Returns 0 or -ENOMEM. */
int nodetab_set(struct nodetab *t, const char *name, uint8_t role, uint32_t serial,
		bool revoked, const struct node_policy *policy);
/* name's entry: true if listed. policy may be NULL. */
bool nodetab_get(struct nodetab *t, const char *name, uint8_t *role, uint32_t *serial,
		 bool *revoked, struct node_policy *policy);
/* Whether a credential passes (see above); strict: meta's rule. On refusal writes why. */
bool nodetab_allows(struct nodetab *t, bool strict, uint8_t role, const char *name,
		    uint32_t serial, char *why, size_t whylen);
/* The table as text, one node a line: "NAME ROLE SERIAL active|revoked" and, for a
 * client, " trusted" or " squashed", then " uids=LO-HI gids=LO-HI" when restricted. */
void nodetab_format(struct nodetab *t, struct wbuf *w);
/* Replaces the table with text as nodetab_format writes it. Returns 0 or -EINVAL. */
int nodetab_parse(struct nodetab *t, const char *text, size_t len);
struct server;
/* Closes srv's connections of every credential the table refuses: all of a revoked
 * node's, and those of serials a later one replaced; one log line per node cut off.
 * Loop thread of srv. */
void nodetab_cut_off(struct nodetab *t, struct server *srv);
/* Calls fn for each entry (under the table's lock: fn must not call back into t). */
void nodetab_foreach(struct nodetab *t, void (*fn)(void *arg, const char *name, uint8_t role,
						    uint32_t serial, bool revoked), void *arg);

#endif
