/* The handshake of a connection (loop thread only), see conn.h for when it runs. A client
 * starts it with HELLO; every frame before the connection is ready goes to
 * handshake_frame, which answers it, closes the connection on failure (one rate-limited
 * log line naming the peer) or makes the connection ready. */
#ifndef WEFT_HANDSHAKE_H
#define WEFT_HANDSHAKE_H

#include <stdbool.h>

#include "net/conn.h"

/* Client side: sends HELLO. */
void handshake_start(struct conn *c);
/* Handles a frame received before the connection is ready; consumes f. */
void handshake_frame(struct conn *c, struct frame *f);
/* Whether a line a stranger provoked may be logged: at most 10 per 10 s per process (a
 * flood costs no disk); *dropped counts those not logged since the last one. */
bool handshake_log_ok(unsigned *dropped);

#endif
