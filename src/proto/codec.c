/* Encoders and decoders of every message, generated from the tables in proto.h.
 * Each field kind has one encode and one decode routine; a decoder checks the remaining
 * length before each read (via struct rbuf), checks string limits before taking a
 * pointer, and requires the message to end exactly where the payload ends. */
#include "proto/proto.h"

#include <errno.h>
#include <string.h>

#include "common/crc.h"
#include "weft/err.h"

/* ---- shared field helpers ---- */

void proto_attr_put(struct wbuf *w, const struct weft_attr *a)
{
	wbuf_u64(w, a->ino);
	wbuf_u64(w, a->gen);
	wbuf_u32(w, a->mode);
	wbuf_u32(w, a->nlink);
	wbuf_u32(w, a->uid);
	wbuf_u32(w, a->gid);
	wbuf_u32(w, a->rdev);
	wbuf_u32(w, a->blksize);
	wbuf_u64(w, a->size);
	wbuf_u64(w, a->blocks);
	wbuf_u64(w, (uint64_t)a->atime_ns);
	wbuf_u64(w, (uint64_t)a->mtime_ns);
	wbuf_u64(w, (uint64_t)a->ctime_ns);
}

void proto_attr_get(struct rbuf *r, struct weft_attr *a)
{
	a->ino = rbuf_u64(r);
	a->gen = rbuf_u64(r);
	a->mode = rbuf_u32(r);
	a->nlink = rbuf_u32(r);
	a->uid = rbuf_u32(r);
	a->gid = rbuf_u32(r);
	a->rdev = rbuf_u32(r);
	a->blksize = rbuf_u32(r);
	a->size = rbuf_u64(r);
	a->blocks = rbuf_u64(r);
	a->atime_ns = (int64_t)rbuf_u64(r);
	a->mtime_ns = (int64_t)rbuf_u64(r);
	a->ctime_ns = (int64_t)rbuf_u64(r);
	if (a->size > (uint64_t)WEFT_FILE_SIZE_MAX)
		rbuf_fail(r, "attr size over the largest file size");
}

void proto_layout_put(struct wbuf *w, const struct weft_layout *l)
{
	wbuf_u32(w, l->stripe_unit);
	wbuf_u32(w, l->stripe_count);
	wbuf_u32(w, l->first_chain);
	wbuf_u32(w, l->chain_count);
	wbuf_u8(w, l->replicas);
	wbuf_u32(w, l->gen);
}

void proto_layout_get(struct rbuf *r, struct weft_layout *l)
{
	l->stripe_unit = rbuf_u32(r);
	l->stripe_count = rbuf_u32(r);
	l->first_chain = rbuf_u32(r);
	l->chain_count = rbuf_u32(r);
	l->replicas = rbuf_u8(r);
	l->gen = rbuf_u32(r);
	if (l->replicas > WEFT_REPLICAS_MAX)
		rbuf_fail(r, "layout replicas over 3");
	else if (l->gen > WEFT_LAYOUT_GEN_MAX)
		rbuf_fail(r, "layout generation over 65535");
	else if (l->stripe_unit && (l->stripe_unit < WEFT_STRIPE_UNIT_MIN ||
				    l->stripe_unit > WEFT_STRIPE_UNIT_MAX ||
				    (l->stripe_unit & (l->stripe_unit - 1))))
		rbuf_fail(r, "layout stripe unit not a power of two in 64 KiB..16 MiB");
}

static void cred_put(struct wbuf *w, const struct weft_cred *c)
{
	uint32_t n = c->ngroups > WEFT_GROUPS_MAX ? WEFT_GROUPS_MAX : c->ngroups;
	wbuf_u32(w, c->uid);
	wbuf_u32(w, c->gid);
	wbuf_u32(w, c->umask);
	/* bit 7 of the count: more groups than were sent (struct weft_cred.more_groups) */
	wbuf_u8(w, (uint8_t)(n | (c->more_groups || c->ngroups > WEFT_GROUPS_MAX ? 0x80 : 0)));
	for (uint32_t i = 0; i < n; i++)
		wbuf_u32(w, c->groups[i]);
}

static void cred_get(struct rbuf *r, struct weft_cred *c)
{
	c->uid = rbuf_u32(r);
	c->gid = rbuf_u32(r);
	c->umask = rbuf_u32(r);
	uint8_t n = rbuf_u8(r);
	c->more_groups = (n & 0x80) != 0;
	c->ngroups = n & 0x7fu;
	if (c->ngroups > WEFT_GROUPS_MAX) {
		rbuf_fail(r, "credential has more than 32 groups");
		c->ngroups = 0;
		return;
	}
	for (uint32_t i = 0; i < c->ngroups; i++)
		c->groups[i] = rbuf_u32(r);
}

static void crcs_put(struct wbuf *w, const struct weft_crcs *c)
{
	uint32_t n = c->n > WEFT_CRCS_MAX ? WEFT_CRCS_MAX : c->n;
	wbuf_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		wbuf_u32(w, c->v[i]);
}

static void crcs_get(struct rbuf *r, struct weft_crcs *c)
{
	c->n = rbuf_u32(r);
	if (c->n > WEFT_CRCS_MAX) {
		rbuf_fail(r, "more checksums than a bulk can have");
		c->n = 0;
		return;
	}
	if (rbuf_left(r) < (size_t)c->n * 4) {
		rbuf_fail(r, "checksum list truncated");
		c->n = 0;
		return;
	}
	for (uint32_t i = 0; i < c->n; i++)
		c->v[i] = rbuf_u32(r);
}

static const char why_str_long[] = "string over its limit";

int proto_decode_err(const char *why)
{
	return why == why_str_long ? -ENAMETOOLONG : -WEFT_EPROTO;
}

static void str_get(struct rbuf *r, struct weft_str *s, uint32_t max)
{
	uint32_t n = rbuf_u16(r);
	if (n > max) {
		rbuf_fail(r, why_str_long);
		s->p = "";
		s->len = 0;
		return;
	}
	const uint8_t *p = rbuf_ptr(r, n);
	s->p = p ? (const char *)p : "";
	s->len = p ? n : 0;
}

/* ---- per-kind encode / decode ---- */

#define ENC_U8(f, l) wbuf_u8(w, m->f);
#define ENC_U16(f, l) wbuf_u16(w, m->f);
#define ENC_U32(f, l) wbuf_u32(w, m->f);
#define ENC_U64(f, l) wbuf_u64(w, m->f);
#define ENC_I64(f, l) wbuf_u64(w, (uint64_t)m->f);
#define ENC_STR(f, l) \
	if (m->f.len > (l)) \
		return -EINVAL; \
	wbuf_str(w, m->f.p, m->f.len);
#define ENC_FIX(f, l) wbuf_put(w, m->f, l);
#define ENC_ATTR(f, l) proto_attr_put(w, &m->f);
#define ENC_LAYOUT(f, l) proto_layout_put(w, &m->f);
#define ENC_CRED(f, l) cred_put(w, &m->f);
#define ENC_CRCS(f, l) \
	if (m->f.n > WEFT_CRCS_MAX) \
		return -EINVAL; \
	crcs_put(w, &m->f);
#define ENC(kind, f, l) ENC_##kind(f, l)

#define DEC_U8(f, l) m->f = rbuf_u8(&r);
#define DEC_U16(f, l) m->f = rbuf_u16(&r);
#define DEC_U32(f, l) m->f = rbuf_u32(&r);
#define DEC_U64(f, l) m->f = rbuf_u64(&r);
#define DEC_I64(f, l) m->f = (int64_t)rbuf_u64(&r);
#define DEC_STR(f, l) str_get(&r, &m->f, l);
#define DEC_FIX(f, l) rbuf_get(&r, m->f, l);
#define DEC_ATTR(f, l) proto_attr_get(&r, &m->f);
#define DEC_LAYOUT(f, l) proto_layout_get(&r, &m->f);
#define DEC_CRED(f, l) cred_get(&r, &m->f);
#define DEC_CRCS(f, l) crcs_get(&r, &m->f);
#define DEC(kind, f, l) DEC_##kind(f, l)

#define X(lname, FIELDS) \
	int proto_##lname##_encode(struct wbuf *w, const struct weft_msg_##lname *m) \
	{ \
		(void)m; \
		FIELDS(ENC) \
		return w->err; \
	} \
	int proto_##lname##_decode(const void *p, size_t len, struct weft_msg_##lname *m, \
				   const char **why) \
	{ \
		struct rbuf r; \
		rbuf_init(&r, p, len); \
		memset(m, 0, sizeof(*m)); \
		FIELDS(DEC) \
		if (rbuf_ok(&r) && rbuf_left(&r) != 0) \
			rbuf_fail(&r, "trailing bytes after " #lname " message"); \
		if (!rbuf_ok(&r)) { \
			if (why) \
				*why = r.why; \
			return -WEFT_EPROTO; \
		} \
		return 0; \
	}
WEFT_MESSAGES(X)
#undef X

/* ---- tables ---- */

static const char *const msg_names[] = {
#define X(lname, FIELDS) #lname,
	WEFT_MESSAGES(X)
#undef X
};

static const size_t msg_sizes[] = {
#define X(lname, FIELDS) sizeof(struct weft_msg_##lname),
	WEFT_MESSAGES(X)
#undef X
};

const char *proto_msg_name(enum weft_msg_type t)
{
	return (unsigned)t < WEFT_MSG_COUNT ? msg_names[t] : "unknown";
}

size_t proto_msg_size(enum weft_msg_type t)
{
	return (unsigned)t < WEFT_MSG_COUNT ? msg_sizes[t] : 0;
}

int proto_msg_decode_any(enum weft_msg_type t, const void *p, size_t len, void *m, const char **why)
{
	switch (t) {
#define X(lname, FIELDS) \
	case WEFT_MSG_##lname: return proto_##lname##_decode(p, len, m, why);
		WEFT_MESSAGES(X)
#undef X
	default:
		if (why)
			*why = "unknown message type";
		return -WEFT_EPROTO;
	}
}

int proto_msg_encode_any(enum weft_msg_type t, struct wbuf *w, const void *m)
{
	switch (t) {
#define X(lname, FIELDS) \
	case WEFT_MSG_##lname: return proto_##lname##_encode(w, m);
		WEFT_MESSAGES(X)
#undef X
	default:
		return -EINVAL;
	}
}

const char *proto_op_name(uint16_t op)
{
	switch (op) {
#define X(NAME, num, req, rep) case num: return #NAME;
		WEFT_OPCODES(X)
#undef X
	default: return NULL;
	}
}

int proto_op_req_type(uint16_t op)
{
	switch (op) {
#define X(NAME, num, req, rep) case num: return WEFT_MSG_##req;
		WEFT_OPCODES(X)
#undef X
	default: return -1;
	}
}

int proto_op_rep_type(uint16_t op)
{
	switch (op) {
#define X(NAME, num, req, rep) case num: return WEFT_MSG_##rep;
		WEFT_OPCODES(X)
#undef X
	default: return -1;
	}
}

/* ---- directory entries ---- */

size_t proto_dirent_size(size_t namelen, unsigned plus)
{
	/* attr 80 bytes; layout 21, the capability and the written byte; the lease */
	unsigned level = plus & ~WEFT_READDIR_LEASES;
	return 2 + namelen + 8 + 8 + 1 + 1 + (level ? 80 : 0) +
	       (level >= WEFT_READDIR_PLUS_CAP ? 21 + WEFT_CAP_LEN + 1 : 0) +
	       (level && (plus & WEFT_READDIR_LEASES) ? 4 : 0);
}

void proto_dirent_encode(struct wbuf *w, const struct weft_dirent *d)
{
	wbuf_str(w, d->name.p, d->name.len);
	wbuf_u64(w, d->ino);
	wbuf_u64(w, d->next_cookie);
	wbuf_u8(w, d->type);
	uint8_t what = d->has_cap ? 2 : d->has_attr;
	wbuf_u8(w, what | (what && d->lease ? WEFT_READDIR_LEASES : 0));
	if (what && d->lease)
		wbuf_u32(w, d->lease);
	if (d->has_attr || d->has_cap)
		proto_attr_put(w, &d->attr);
	if (d->has_cap) {
		proto_layout_put(w, &d->layout);
		wbuf_put(w, d->cap, WEFT_CAP_LEN);
		wbuf_u8(w, d->written0);
	}
}

int proto_dirent_next(struct rbuf *r, struct weft_dirent *d)
{
	if (!rbuf_ok(r))
		return -WEFT_EPROTO;
	if (rbuf_left(r) == 0)
		return 1;
	memset(d, 0, sizeof(*d));
	str_get(r, &d->name, WEFT_NAME_MAX);
	d->ino = rbuf_u64(r);
	d->next_cookie = rbuf_u64(r);
	d->type = rbuf_u8(r);
	uint8_t plus = rbuf_u8(r);
	bool leased = plus & WEFT_READDIR_LEASES;
	plus &= (uint8_t)~WEFT_READDIR_LEASES;
	if (plus > 2 || (leased && plus == 0))
		rbuf_fail(r, "directory entry attr flag not 0, 1 or 2 (leased only with 1 or 2)");
	if (leased)
		d->lease = rbuf_u32(r);
	d->has_attr = plus >= 1;
	d->has_cap = plus == 2;
	if (d->has_attr)
		proto_attr_get(r, &d->attr);
	if (d->has_cap) {
		proto_layout_get(r, &d->layout);
		rbuf_get(r, d->cap, WEFT_CAP_LEN);
		d->written0 = rbuf_u8(r);
	}
	if (rbuf_ok(r) && d->name.len == 0)
		rbuf_fail(r, "directory entry with an empty name");
	return rbuf_ok(r) ? 0 : -WEFT_EPROTO;
}

int proto_str_copy(char *out, size_t cap, struct weft_str s)
{
	if (cap == 0 || s.len >= cap)
		return -ENAMETOOLONG;
	memcpy(out, s.p, s.len);
	out[s.len] = '\0';
	return 0;
}

uint32_t proto_crc_pieces(uint64_t off, uint64_t len)
{
	if (len == 0)
		return 0;
	uint64_t first = off / WEFT_CHUNK_SIZE, last = (off + len - 1) / WEFT_CHUNK_SIZE;
	return (uint32_t)(last - first + 1);
}

/* The one walk over a transfer's pieces (split at WEFT_CHUNK_SIZE boundaries of the
 * object), across iovec boundaries in one pass. out: fill out[i] with piece i's CRC;
 * want: compare, and return the first piece whose CRC differs (-1: none). */
static int64_t crcs_walk(uint64_t off, const struct iovec *iov, int iovcnt, uint32_t *out,
			 const uint32_t *want)
{
	int64_t piece = 0;
	uint32_t crc = 0;
	uint64_t left = WEFT_CHUNK_SIZE - off % WEFT_CHUNK_SIZE; /* of the current piece */
	bool open = false;
	for (int i = 0; i < iovcnt; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t len = iov[i].iov_len;
		while (len) {
			size_t n = len < left ? len : (size_t)left;
			crc = crc32c(crc, p, n);
			open = true;
			p += n;
			len -= n;
			left -= n;
			if (left == 0) {
				if (out)
					out[piece] = crc;
				else if (want[piece] != crc)
					return piece;
				piece++;
				crc = 0;
				left = WEFT_CHUNK_SIZE;
				open = false;
			}
		}
	}
	if (open) {
		if (out)
			out[piece] = crc;
		else if (want[piece] != crc)
			return piece;
	}
	return -1;
}

void proto_crcs_compute_buf(const void *p, uint32_t len, uint64_t off, struct weft_crcs *out)
{
	struct iovec v = {(void *)p, len};
	out->n = proto_crc_pieces(off, len);
	crcs_walk(off, &v, 1, out->v, NULL);
}

void proto_crcs_compute(uint64_t off, const struct iovec *iov, int iovcnt, uint32_t *crcs)
{
	crcs_walk(off, iov, iovcnt, crcs, NULL);
}

int64_t proto_crcs_verify(uint64_t off, const struct iovec *iov, int iovcnt, const uint32_t *crcs)
{
	return crcs_walk(off, iov, iovcnt, NULL, crcs);
}
