/* TARGETS_GET records (see targets.h). */
#include "proto/targets.h"

void proto_target_rec_write(struct wbuf *w, const struct weft_target_rec *t)
{
	wbuf_u32(w, t->id);
	wbuf_u8(w, t->state);
	wbuf_str(w, t->node.p, t->node.len);
	wbuf_str(w, t->addr.p, t->addr.len);
	wbuf_u64(w, t->capacity);
	wbuf_u64(w, t->free);
	wbuf_u64(w, t->bytes_read);
	wbuf_u64(w, t->bytes_written);
	wbuf_u64(w, t->ops_read);
	wbuf_u64(w, t->ops_written);
	wbuf_u64(w, t->silent_ms);
	wbuf_u64(w, t->resync_objects_left);
	wbuf_u64(w, t->resync_bytes_left);
	wbuf_u64(w, t->resync_rate);
	wbuf_u8(w, t->flags);
	wbuf_u32(w, t->memberships);
}

bool proto_target_rec_read(struct rbuf *r, struct weft_target_rec *t)
{
	t->id = rbuf_u32(r);
	t->state = rbuf_u8(r);
	t->node.len = rbuf_u16(r);
	t->node.p = (const char *)rbuf_ptr(r, t->node.len);
	t->addr.len = rbuf_u16(r);
	t->addr.p = (const char *)rbuf_ptr(r, t->addr.len);
	t->capacity = rbuf_u64(r);
	t->free = rbuf_u64(r);
	t->bytes_read = rbuf_u64(r);
	t->bytes_written = rbuf_u64(r);
	t->ops_read = rbuf_u64(r);
	t->ops_written = rbuf_u64(r);
	t->silent_ms = rbuf_u64(r);
	t->resync_objects_left = rbuf_u64(r);
	t->resync_bytes_left = rbuf_u64(r);
	t->resync_rate = rbuf_u64(r);
	t->flags = rbuf_u8(r);
	t->memberships = rbuf_u32(r);
	return rbuf_ok(r);
}
