/* OBJ_LIST_REPLY records (see objlist.h). */
#include "proto/objlist.h"

#include "common/buf.h"

void proto_obj_rec_put(uint8_t *bulk, size_t i, const struct proto_obj_rec *rec)
{
	uint8_t *p = bulk + PROTO_OBJ_REC_SIZE * i;
	put_le64(p, rec->ino);
	put_le32(p + 8, rec->stripe);
	put_le64(p + 12, rec->length);
}

bool proto_obj_recs_fit(size_t len, uint32_t count)
{
	return len == (uint64_t)count * PROTO_OBJ_REC_SIZE;
}

void proto_obj_rec_get(const uint8_t *bulk, size_t i, struct proto_obj_rec *rec)
{
	const uint8_t *p = bulk + PROTO_OBJ_REC_SIZE * i;
	rec->ino = get_le64(p);
	rec->stripe = get_le32(p + 8);
	rec->length = get_le64(p + 12);
}
