/* metaclient: the readdir helpers the modes share (see mc_test.h). */
#include "mc_test.h"


/* One READDIR page; returns status, appends to *out. */
int readdir_page(struct mc *m, const struct weft_cred *cr, uint64_t ino, uint64_t cookie,
		 uint32_t max, bool plus, struct ent **out, size_t *n, bool *eof,
		 size_t *bytes)
{
	struct weft_msg_readdir q = {.cred = *cr, .ino = ino, .cookie = cookie, .max_bytes = max,
				     .plus = plus};
	struct frame *f = NULL;
	int rc = mc_call(m, WEFT_OP_READDIR, &q, NULL, 0, &f);
	if (rc) {
		frame_free(f);
		return rc;
	}
	struct weft_msg_dirlist dl;
	if (proto_dirlist_decode(f->payload, f->h.payload_len, &dl, NULL)) {
		frame_free(f);
		return -EIO;
	}
	if (bytes)
		*bytes = f->h.bulk_len;
	struct rbuf r;
	rbuf_init(&r, f->bulk, f->h.bulk_len);
	struct weft_dirent d;
	uint32_t cnt = 0;
	while ((rc = proto_dirent_next(&r, &d)) == 0) {
		*out = realloc(*out, (*n + 1) * sizeof(**out));
		struct ent *e = &(*out)[(*n)++];
		proto_str_copy(e->name, sizeof(e->name), d.name);
		e->ino = d.ino;
		e->cookie = d.next_cookie;
		e->type = d.type;
		e->has_attr = d.has_attr;
		e->attr = d.attr;
		cnt++;
	}
	frame_free(f);
	if (rc < 0 || cnt != dl.count)
		return -EIO;
	*eof = dl.eof;
	return 0;
}

int list_all(struct mc *m, const struct weft_cred *cr, uint64_t ino, uint32_t max,
	     bool plus, struct ent **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	uint64_t cookie = 0;
	for (int guard = 0; guard < 1000000; guard++) {
		bool eof = false;
		size_t before = *n;
		int rc = readdir_page(m, cr, ino, cookie, max, plus, out, n, &eof, NULL);
		if (rc)
			return rc;
		if (*n > before)
			cookie = (*out)[*n - 1].cookie;
		if (eof || *n == before)
			return 0;
	}
	return -ELOOP;
}

struct ent *find_ent(struct ent *e, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(e[i].name, name) == 0)
			return &e[i];
	return NULL;
}
