/* Requests every weft daemon answers the same way: PING (echo the token), ECHO (echo
 * the bulk) and SINK (discard the bulk), for health checks, tests and benchmarks of the transport. */
#ifndef WEFT_BUILTIN_H
#define WEFT_BUILTIN_H

#include <stdbool.h>

#include "net/conn.h"

/* Answers f if it is PING, ECHO or SINK and returns true (f consumed); false otherwise (f
 * untouched). Loop thread. */
bool builtin_handle(struct conn *c, struct frame *f);

#endif
