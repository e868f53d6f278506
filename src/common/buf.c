/* Bounds-checked buffer writer and reader. */
#include "common/buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void wbuf_init(struct wbuf *w) { memset(w, 0, sizeof(*w)); }

void wbuf_free(struct wbuf *w)
{
	free(w->data);
	memset(w, 0, sizeof(*w));
}

void wbuf_reset(struct wbuf *w)
{
	w->len = 0;
	w->err = 0;
}

int wbuf_reserve(struct wbuf *w, size_t n)
{
	if (w->err)
		return w->err;
	if (w->cap - w->len >= n)
		return 0;
	size_t cap = w->cap ? w->cap : 256;
	while (cap - w->len < n)
		cap *= 2;
	uint8_t *d = realloc(w->data, cap);
	if (!d)
		return w->err = -ENOMEM;
	w->data = d;
	w->cap = cap;
	return 0;
}

void wbuf_put(struct wbuf *w, const void *p, size_t n)
{
	if (n == 0 || wbuf_reserve(w, n))
		return;
	memcpy(w->data + w->len, p, n);
	w->len += n;
}

void wbuf_u8(struct wbuf *w, uint8_t v) { wbuf_put(w, &v, 1); }

void wbuf_u16(struct wbuf *w, uint16_t v)
{
	uint8_t b[2];
	put_le16(b, v);
	wbuf_put(w, b, 2);
}

void wbuf_u32(struct wbuf *w, uint32_t v)
{
	uint8_t b[4];
	put_le32(b, v);
	wbuf_put(w, b, 4);
}

void wbuf_u64(struct wbuf *w, uint64_t v)
{
	uint8_t b[8];
	put_le64(b, v);
	wbuf_put(w, b, 8);
}

void wbuf_str(struct wbuf *w, const char *s, size_t n)
{
	wbuf_u16(w, (uint16_t)n);
	wbuf_put(w, s, n);
}

void rbuf_init(struct rbuf *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->off = 0;
	r->why = NULL;
}

void rbuf_fail(struct rbuf *r, const char *why)
{
	if (!r->why)
		r->why = why;
	r->off = r->len;
}

const uint8_t *rbuf_ptr(struct rbuf *r, size_t n)
{
	if (r->why)
		return NULL;
	if (r->len - r->off < n) {
		rbuf_fail(r, "message truncated");
		return NULL;
	}
	const uint8_t *p = r->p + r->off;
	r->off += n;
	return p;
}

void rbuf_get(struct rbuf *r, void *out, size_t n)
{
	const uint8_t *p = rbuf_ptr(r, n);
	if (p)
		memcpy(out, p, n);
	else
		memset(out, 0, n);
}

uint8_t rbuf_u8(struct rbuf *r)
{
	const uint8_t *p = rbuf_ptr(r, 1);
	return p ? p[0] : 0;
}

uint16_t rbuf_u16(struct rbuf *r)
{
	const uint8_t *p = rbuf_ptr(r, 2);
	return p ? get_le16(p) : 0;
}

uint32_t rbuf_u32(struct rbuf *r)
{
	const uint8_t *p = rbuf_ptr(r, 4);
	return p ? get_le32(p) : 0;
}

uint64_t rbuf_u64(struct rbuf *r)
{
	const uint8_t *p = rbuf_ptr(r, 8);
	return p ? get_le64(p) : 0;
}
