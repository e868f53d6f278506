/* TARGETS_GET's bulk: one record per storage target, as meta sees it. The only
 * encoder and decoder of these records (meta writes them, weft status and weft stat read
 * them). Layout, little-endian: u32 id, u8 state, u16 node length, node, u16 address
 * length, address, u64 capacity, free, bytes_read, bytes_written, ops_read, ops_written,
 * silent_ms (time since the last heartbeat), resync_objects_left, resync_bytes_left,
 * resync_rate (bytes/s; all three 0 unless the target is catching up), u8 flags
 * (WEFT_TARGET_DRAINING), u32 memberships (chains it is a member of). */
#ifndef WEFT_PROTO_TARGETS_H
#define WEFT_PROTO_TARGETS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/proto.h"

struct weft_target_rec {
	uint32_t id;
	uint8_t state; /* WEFT_MEMBER_* */
	struct weft_str node, addr;
	uint64_t capacity, free, bytes_read, bytes_written, ops_read, ops_written, silent_ms;
	uint64_t resync_objects_left, resync_bytes_left, resync_rate;
	uint8_t flags;
	uint32_t memberships;
};

#define WEFT_TARGET_DRAINING 0x01 /* weft target drain: its memberships move elsewhere */

/* Appends one record to w (check w->err afterwards: -ENOMEM). */
void proto_target_rec_write(struct wbuf *w, const struct weft_target_rec *t);
/* Reads the next record; strings borrow from r's buffer. False on a short or malformed
 * record (rbuf_ok(r) then says why). */
bool proto_target_rec_read(struct rbuf *r, struct weft_target_rec *t);

#endif
