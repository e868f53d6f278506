/* Which roles may send which request: one table for meta's and the stores' dispatch, so
 * that a client credential cannot call what only stores, admins or meta may (issue 13).
 *
 * A request a role may not send is refused with WEFT_EPERM-style -EACCES and a one-line
 * detail, before it is decoded. Builtins (PING, ECHO, SINK, STATS_GET) are open to
 * every authenticated peer. */
#ifndef WEFT_PROTO_ROLES_H
#define WEFT_PROTO_ROLES_H

#include <stdbool.h>
#include <stdint.h>

/* Whether a peer of role peer_role may send op to a server of role server_role
 * (WEFT_ROLE_META or WEFT_ROLE_STORE). */
bool proto_op_allowed(uint16_t op, uint8_t server_role, uint8_t peer_role);
/* "client, admin": the roles that may send op to such a server, for error messages. */
const char *proto_op_roles(uint16_t op, uint8_t server_role);

#endif
