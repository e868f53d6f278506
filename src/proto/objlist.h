/* OBJ_LIST_REPLY's bulk: one fixed-size record per object a store holds. The only
 * encoder and decoder of these records (the store writes them, its test client and
 * tools read them). Layout, little-endian, PROTO_OBJ_REC_SIZE bytes each:
 *   u64 ino, u32 stripe, u64 length (bytes of the object)
 * The reply's count says how many; its bulk is exactly count records.
 *
 * Threads: pure functions. */
#ifndef WEFT_PROTO_OBJLIST_H
#define WEFT_PROTO_OBJLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_OBJ_REC_SIZE 20u

struct proto_obj_rec {
	uint64_t ino;
	uint32_t stripe;
	uint64_t length;
};

/* Writes record i of a bulk at least (i + 1) * PROTO_OBJ_REC_SIZE bytes long. */
void proto_obj_rec_put(uint8_t *bulk, size_t i, const struct proto_obj_rec *rec);
/* True when a bulk of len bytes holds exactly count records. */
bool proto_obj_recs_fit(size_t len, uint32_t count);
/* Reads record i (the caller checked the bulk with proto_obj_recs_fit). */
void proto_obj_rec_get(const uint8_t *bulk, size_t i, struct proto_obj_rec *rec);

#endif
