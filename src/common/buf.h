/* Bounds-checked little-endian buffer writer (growable) and reader (sticky error).
 *
 * Writer: struct wbuf owns a malloc'd buffer; wbuf_free releases it. A failed
 * allocation sets ->err and later puts are ignored, so encoders check once at the end.
 * Reader: struct rbuf borrows memory; a read past the end sets ->err, returns zeros,
 * and records why, so decoders check once at the end and report the first reason. */
#ifndef WEFT_BUF_H
#define WEFT_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wbuf {
	uint8_t *data;
	size_t len, cap;
	int err; /* 0 or -ENOMEM */
};

void wbuf_init(struct wbuf *w);
void wbuf_free(struct wbuf *w);
void wbuf_reset(struct wbuf *w);
/* Makes room for n more bytes; returns 0 or -ENOMEM. */
int wbuf_reserve(struct wbuf *w, size_t n);
void wbuf_put(struct wbuf *w, const void *p, size_t n);
void wbuf_u8(struct wbuf *w, uint8_t v);
void wbuf_u16(struct wbuf *w, uint16_t v);
void wbuf_u32(struct wbuf *w, uint32_t v);
void wbuf_u64(struct wbuf *w, uint64_t v);
/* u16 length then bytes. */
void wbuf_str(struct wbuf *w, const char *s, size_t n);

struct rbuf {
	const uint8_t *p;
	size_t len, off;
	const char *why; /* first failure reason, static string; NULL while ok */
};

void rbuf_init(struct rbuf *r, const void *p, size_t len);
static inline bool rbuf_ok(const struct rbuf *r) { return r->why == NULL; }
static inline size_t rbuf_left(const struct rbuf *r) { return r->len - r->off; }
/* Records a failure reason (first one wins). */
void rbuf_fail(struct rbuf *r, const char *why);
uint8_t rbuf_u8(struct rbuf *r);
uint16_t rbuf_u16(struct rbuf *r);
uint32_t rbuf_u32(struct rbuf *r);
uint64_t rbuf_u64(struct rbuf *r);
/* Copies n bytes into out (zeros on failure). */
void rbuf_get(struct rbuf *r, void *out, size_t n);
/* Returns a pointer to n bytes inside the buffer, or NULL (and fails). */
const uint8_t *rbuf_ptr(struct rbuf *r, size_t n);

/* Little-endian helpers for fixed headers. */
static inline void put_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t get_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

#endif
