/* Requests every weft daemon answers the same way: PING (echo the token), ECHO (echo
 * the bulk) and SINK (discard the bulk), for health checks, tests and benchmarks of the transport. */
#ifndef WEFT_BUILTIN_H
#define WEFT_BUILTIN_H

#include <stdbool.h>

#include "net/conn.h"

/* Answers f if it is PING, ECHO or SINK and returns true (f consumed); false otherwise (f
 * untouched). Loop thread. */
bool builtin_handle(struct conn *c, struct frame *f);
/* Refuses f when the peer's role may not send it to a server of server_role
 * (proto/roles.h): replies -EACCES with a one-line detail, logs it (at most 10 lines per
 * 10 s) and returns true (f consumed); false otherwise (f untouched). Loop thread. */
bool builtin_refuse_role(struct conn *c, struct frame *f, uint8_t server_role);

#endif
