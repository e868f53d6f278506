/* weft store's server: one storage target served over the wire protocol (OBJ_* and
 * STORE_STATS), registered with meta, heart-beating, replicating writes down chains.
 *
 * DESIGN. Threads:
 *   - the loop thread (src/common/loop.h) owns every connection: it decodes requests
 *     and queues them on the workers; replies from successors complete forwards here;
 *   - worker threads (workers.h) do all disk I/O and every blocking call (connecting to
 *     a successor, reporting a failure to meta, refetching the chain table); they reply
 *     with conn_reply, which any thread may call; a connection is referenced while a
 *     request of it is pending;
 *   - the heartbeat thread sends TARGET_HEARTBEAT every heartbeat_ms, refetches the
 *     chain tables when meta's version moved, re-registers if meta forgot us.
 * Fencing: data requests are served only while the lease holds, i.e. until lease_ms
 * after the sending time of the last heartbeat meta answered; otherwise they are
 * refused with -WEFT_ENOTSERVING. Before registration nothing is served.
 * Guarantees: a write (truncate, fsync) is acknowledged only once this target and,
 * through it, every later non-offline member of the chain stored it; a checksum
 * mismatch on receipt writes and forwards nothing; a read never returns bytes that
 * failed their CRC. */
#ifndef WEFT_STORE_SERVER_H
#define WEFT_STORE_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "net/auth.h"

struct store_server;

struct store_server_opts {
	const char *dir;            /* target directory (formatted on first start) */
	const char *meta;           /* meta's "host:port" */
	const char *listen;         /* "host:port"; port 0 picks one */
	int default_port;           /* when listen has no port */
	const char *advertise;      /* address for clients; NULL: from listen (0.0.0.0 ->
				     * 127.0.0.1, logged) */
	const char *node;           /* node name */
	const struct weft_key *key; /* cluster key (copied) */
	unsigned workers;           /* I/O threads; 0: 8 */
	bool buffered;              /* no O_DIRECT for large writes (store_obj_opts) */
	uint32_t heartbeat_ms;      /* 0: 1000 */
	uint32_t forward_timeout_ms;/* successor reply timeout; 0: 10000 */
	uint64_t resync_rate;       /* resync/rebuild copy limit, bytes/s; 0: 64 MiB/s;
				     * UINT64_MAX: unlimited */
	const volatile int *stop;   /* start gives up registering when *stop becomes set */
	uint64_t capacity;          /* 0: the file system's; else the size reported to meta,
				     * and free = capacity - bytes of the objects held (for
				     * stores sharing one file system: placement, rebalance) */
};

/* Binds, registers with meta (retrying forever with backoff until it answers or *stop
 * is set), formats or opens the target, fetches the chain tables and starts serving.
 * Returns 0 once serving, or -errno with a one-line reason in err (bad address, bind,
 * target belongs to another file system (-EXDEV), checksum mode differs from the file
 * system's (-EINVAL), -EINTR when stopped while registering). */
int store_server_start(const struct store_server_opts *o, struct store_server **out,
		       char *err, size_t errlen);
/* The address registered with meta ("host:port"). */
const char *store_server_addr(const struct store_server *s);
/* The bound port. */
int store_server_port(const struct store_server *s);
/* Target id meta assigned. */
uint32_t store_server_target(const struct store_server *s);
/* Stops serving, waits for pending requests, stops every thread, closes the target.
 * NULL is a no-op. */
void store_server_stop(struct store_server *s);
/* The server's event loop (for liveness checks such as systemd's watchdog). */
struct loop *store_server_loop(const struct store_server *s);

#endif
