/* The chain-set fetched from meta over an rpc (CHAINS_GET, then decode). The set and its
 * codec are proto/chainset.h; this is the one blocking call on top of them. */
#ifndef WEFT_NET_CHAINFETCH_H
#define WEFT_NET_CHAINFETCH_H

#include "net/rpc.h"
#include "proto/chainset.h"

struct rpc;
/* Asks meta (over r) for the whole set: CHAINS_GET, then decode. Not from r's loop
 * thread. Returns 0 or -errno (the call's, or the decoder's). */
int chain_set_fetch(struct rpc *r, int timeout_ms, struct weft_chain_set *out);

#endif
