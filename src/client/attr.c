/* libweft attribute calls: getattr, setattr (a size change drains this client's writes
 * and shrinks the objects before meta records it), access, and ENTRY replies corrected
 * by what this client knows of the size (winode.c). ns.c (names) and file.c (open with
 * O_TRUNC) use it; it calls neither. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client_int.h"
#include "common/log.h"
#include "weft/err.h"

/* Calls meta and decodes an ENTRY reply (attr + layout). */
int client_call_entry_lease(struct weft_client *c, uint16_t op, struct wbuf *w,
			    struct weft_attr *attr, struct weft_layout *layout,
			    struct client_entry_lease *l)
{
	struct frame *f;
	uint64_t gen = client_recall_gen(c);
	if (l)
		*l = (struct client_entry_lease){.gen = gen};
	int err = client_meta_call(c, op, w, NULL, 0, &f);
	if (err == 0) {
		struct weft_msg_entry e;
		if (proto_entry_decode(f->payload, f->h.payload_len, &e, NULL) < 0) {
			err = -EIO;
		} else {
			if (l) {
				l->lease = e.lease;
				l->dir_lease = e.dir_lease;
			}
			client_lease_note(c, e.attr.ino, e.lease, gen);
			client_fix_size(c, &e.attr);
			if (attr)
				*attr = e.attr;
			if (layout)
				*layout = e.layout;
		}
	}
	frame_free(f);
	return err;
}

int client_call_entry(struct weft_client *c, uint16_t op, struct wbuf *w, struct weft_attr *attr,
		      struct weft_layout *layout)
{
	return client_call_entry_lease(c, op, w, attr, layout, NULL);
}

static int getattr_layout(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
			  struct weft_attr *attr, struct weft_layout *layout)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino m = {.cred = *cr, .ino = ino};
	proto_ino_encode(&w, &m);
	return client_call_entry(c, WEFT_OP_GETATTR, &w, attr, layout);
}

int weft_getattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		 struct weft_attr *attr)
{
	if (client_wbattr_getattr(c, ino, attr))
		return 0; /* a file created here that nobody else has seen (wbattr.c) */
	if (client_dirattr_get(c, ino, attr))
		return 0; /* a directory as this client's creates left it (dirattr.c) */
	uint64_t rgen = client_recall_gen(c), agen = atomic_load(&c->attr_gen),
		 dgen = atomic_load(&c->dir_gen);
	/* a directory's attributes change only with its names, so its GETATTR waits for
	 * what this client sent in it, not elsewhere (dirattr.c knows it is one) */
	bool dir = client_dirattr_is_dir(c, ino);
	if (dir)
		client_acreate_dir_scope(c, ino);
	int err = getattr_layout(c, cr, ino, attr, NULL);
	if (dir)
		client_acreate_scope_end();
	/* kept for the kernel's next GETATTR of it after a create there (dirattr.c) */
	if (err == 0 && S_ISDIR(attr->mode))
		client_dirattr_note(c, attr, rgen, agen, dgen);
	return err;
}

/* A truncate meta refused while the file's layout is being migrated waits this long
 * and starts again from its GETATTR (the layout may have changed). */
#define SETATTR_MIGRATING_WAIT_MS 50

static int setattr_at_meta(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
			   uint32_t valid, const struct weft_attr *in, struct weft_attr *out);

int weft_setattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		 uint32_t valid, const struct weft_attr *in, struct weft_attr *out)
{
	int err;
	if (client_wbattr_try(c, cr, ino, valid, in, out))
		return 0; /* buffered (wbattr.c) */
	/* a file created here and sent behind (acreate.c): meta's answer to its create
	 * first (the request below would wait for it anyway), and its error */
	struct winode *cw = client_winode_find(c, ino);
	if (cw) {
		err = client_acreate_settle(c, cw);
		client_winode_put(c, cw);
		if (err)
			return err;
	}
	/* A directory's attributes change only with its own names, and meta checks a
	 * create against its parent alone: so a directory's SETATTR (tar sets each
	 * directory's times, owner and mode once its files are out) is answered here and
	 * sent behind what this client sent in it when the directory is claimed
	 * (acreate.c), else waits for what this client sent in it or to remove it, not
	 * for every create sent behind elsewhere (dirattr.c knows it is a directory) */
	bool dir = client_dirattr_is_dir(c, ino);
	if (dir && client_acreate_setattr(c, cr, ino, valid, in, out) == 0)
		return 0;
	client_settle_ino(c, ino);
	client_attrs_changed(c);
	if (valid & (WEFT_SET_MODE | WEFT_SET_UID | WEFT_SET_GID))
		client_cdir_unclaim(c, ino); /* its creates' owners followed the old ones */
	if (dir)
		client_acreate_dir_scope(c, ino);
	err = setattr_at_meta(c, cr, ino, valid, in, out);
	if (dir)
		client_acreate_scope_end();
	return err;
}

static int setattr_at_meta(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
			   uint32_t valid, const struct weft_attr *in, struct weft_attr *out)
{
	int err;
again:
	if (valid & WEFT_SET_SIZE) {
		if (in->size > (uint64_t)WEFT_FILE_SIZE_MAX)
			return -EFBIG;
		struct weft_attr cur;
		struct weft_layout layout;
		err = getattr_layout(c, cr, ino, &cur, &layout);
		if (err)
			return err;
		if (S_ISDIR(cur.mode))
			return -EISDIR;
		if (!S_ISREG(cur.mode))
			return -EINVAL;
		/* buffered writes land first; then objects shrink before meta records the
		 * size, so a crash in between never exposes stale bytes past the new end */
		err = client_truncate_local(c, ino, cur.size);
		if (err)
			return err;
		if (in->size < cur.size && layout.stripe_unit) {
			/* objects shrink before meta records the size, so meta must say yes
			 * first: a caller without write access (the kernel's view of the mode
			 * may be stale) must not cut data it then fails to truncate. A write
			 * handle's access was checked at open. */
			if (!(valid & WEFT_SET_HANDLE) && (err = weft_access(c, cr, ino, W_OK)))
				return err;
			err = client_data_truncate(c, cr, ino, &layout, in->size);
			if (err)
				return err;
		}
	}
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_setattr m = {.cred = *cr, .ino = ino, .valid = valid, .mode = in->mode,
				     .uid = in->uid, .gid = in->gid, .size = in->size,
				     .atime_ns = in->atime_ns, .mtime_ns = in->mtime_ns,
				     .ctime_ns = in->ctime_ns};
	proto_setattr_encode(&w, &m);
	struct frame *f;
	err = client_meta_call(c, WEFT_OP_SETATTR, &w, NULL, 0, &f);
	if (err == -WEFT_EMIGRATING) {
		frame_free(f);
		usleep(SETATTR_MIGRATING_WAIT_MS * 1000);
		goto again;
	}
	if (err == 0) {
		struct weft_msg_attr a;
		if (proto_attr_decode(f->payload, f->h.payload_len, &a, NULL) < 0) {
			err = -EIO;
		} else {
			if (valid & WEFT_SET_SIZE)
				client_truncate_local(c, ino, a.attr.size);
			client_fix_size(c, &a.attr);
			if (out)
				*out = a.attr;
		}
	}
	frame_free(f);
	return err;
}

int weft_access(struct weft_client *c, const struct weft_cred *cr, uint64_t ino, uint32_t mask)
{
	struct wbuf w;
	wbuf_init(&w);
	client_settle_ino(c, ino);
	struct weft_msg_access m = {.cred = *cr, .ino = ino, .mask = mask};
	proto_access_encode(&w, &m);
	return client_meta_call(c, WEFT_OP_ACCESS, &w, NULL, 0, NULL);
}
