/* Unit tests of the wire protocol: every message round-trips, every truncated, oversized
 * or inconsistent frame or message is rejected with a reason. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "proto/proto.h"
#include "weft/err.h"

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* the longest string field: the node registry's text */
static char text[WEFT_NODES_TEXT_MAX > WEFT_PATH_MAX ? WEFT_NODES_TEXT_MAX : WEFT_PATH_MAX];

/* Fill every field of a message with random valid values, from the same tables. */
#define FILL_U8(f, l) m->f = (uint8_t)rnd();
#define FILL_U16(f, l) m->f = (uint16_t)rnd();
#define FILL_U32(f, l) m->f = (uint32_t)rnd();
#define FILL_U64(f, l) m->f = rnd();
#define FILL_I64(f, l) m->f = (int64_t)rnd();
#define FILL_STR(f, l) m->f = proto_str_of(text, rnd() % ((l) + 1));
#define FILL_FIX(f, l) for (int i = 0; i < (l); i++) m->f[i] = (uint8_t)rnd();
#define FILL_ATTR(f, l) \
	m->f = (struct weft_attr){.ino = rnd(), .gen = rnd(), .mode = 0100644, .nlink = 1, \
				  .size = rnd() >> 3, .mtime_ns = (int64_t)rnd()};
#define FILL_LAYOUT(f, l) \
	m->f = (struct weft_layout){.stripe_unit = 1u << (16 + rnd() % 9), .stripe_count = 4, \
				    .first_chain = 3, .chain_count = 8, .replicas = (uint8_t)(1 + rnd() % 3), \
				    .gen = (uint32_t)(rnd() % (WEFT_LAYOUT_GEN_MAX + 1))};
#define FILL_CRED(f, l) \
	m->f.uid = (uint32_t)rnd(); m->f.ngroups = (uint32_t)(rnd() % (WEFT_GROUPS_MAX + 1)); \
	for (uint32_t i = 0; i < m->f.ngroups; i++) m->f.groups[i] = (uint32_t)rnd();
#define FILL_CRCS(f, l) \
	m->f.n = (uint32_t)(rnd() % 20); for (uint32_t i = 0; i < m->f.n; i++) m->f.v[i] = (uint32_t)rnd();
#define FILL(kind, f, l) FILL_##kind(f, l)

#define X(lname, FIELDS) \
	static void fill_##lname(struct weft_msg_##lname *m) { (void)m; FIELDS(FILL) }
WEFT_MESSAGES(X)
#undef X

/* Round trip: encode, decode, encode again: same bytes. Every strict prefix fails to decode,
 * and one trailing byte fails too. */
static void roundtrip(enum weft_msg_type t)
{
	union {
#define X(lname, FIELDS) struct weft_msg_##lname lname;
		WEFT_MESSAGES(X)
#undef X
	} a, b;
	memset(&a, 0, sizeof(a));
	switch (t) {
#define X(lname, FIELDS) case WEFT_MSG_##lname: fill_##lname(&a.lname); break;
		WEFT_MESSAGES(X)
#undef X
	default: CHECK(0);
	}
	struct wbuf w1, w2;
	wbuf_init(&w1);
	wbuf_init(&w2);
	CHECK_OK(proto_msg_encode_any(t, &w1, &a));
	const char *why = NULL;
	int rc = proto_msg_decode_any(t, w1.data, w1.len, &b, &why);
	if (rc) {
		fprintf(stderr, "decode %s: %s\n", proto_msg_name(t), why);
		CHECK(0);
	}
	CHECK_OK(proto_msg_encode_any(t, &w2, &b));
	CHECK_INT(w1.len, ==, w2.len);
	CHECK(w1.len == 0 || memcmp(w1.data, w2.data, w1.len) == 0);
	CHECK(w1.len <= WEFT_PAYLOAD_MAX);
	for (size_t cut = 0; cut < w1.len; cut++) {
		why = NULL;
		CHECK_INT(proto_msg_decode_any(t, w1.data, cut, &b, &why), ==, -WEFT_EPROTO);
		CHECK(why != NULL);
	}
	wbuf_u8(&w1, 0);
	why = NULL;
	CHECK_INT(proto_msg_decode_any(t, w1.data, w1.len, &b, &why), ==, -WEFT_EPROTO);
	CHECK(strstr(why, "trailing") != NULL);
	wbuf_free(&w1);
	wbuf_free(&w2);
}

static void test_every_message(void)
{
	for (int i = 0; i < (int)sizeof(text); i++)
		text[i] = (char)('a' + i % 26);
	for (int rep = 0; rep < 50; rep++)
		for (int t = 0; t < WEFT_MSG_COUNT; t++)
			roundtrip((enum weft_msg_type)t);
	/* every opcode names a request and a reply type */
	int ops = 0;
#define X(NAME, num, req, rep) \
	CHECK_INT(proto_op_req_type(num), ==, WEFT_MSG_##req); \
	CHECK_INT(proto_op_rep_type(num), ==, WEFT_MSG_##rep); \
	CHECK_STR(proto_op_name(num), #NAME); ops++;
	WEFT_OPCODES(X)
#undef X
	CHECK(ops > 40);
	CHECK(proto_op_name(0x7777) == NULL);
}

static void test_field_limits(void)
{
	struct weft_msg_lookup m = {.parent = 1};
	struct wbuf w;
	wbuf_init(&w);
	/* encoder refuses a name over 255 bytes */
	m.name = proto_str_of(text, 256);
	CHECK_INT(proto_lookup_encode(&w, &m), ==, -EINVAL);
	/* a hand-made message with a 256-byte name is rejected by the decoder */
	wbuf_reset(&w);
	struct weft_cred cr = {0};
	(void)cr;
	wbuf_u32(&w, 0); wbuf_u32(&w, 0); wbuf_u32(&w, 0); wbuf_u8(&w, 0); /* cred */
	wbuf_u64(&w, 1);
	wbuf_str(&w, text, 256);
	const char *why = NULL;
	struct weft_msg_lookup d;
	CHECK_INT(proto_lookup_decode(w.data, w.len, &d, &why), ==, -WEFT_EPROTO);
	CHECK_STR(why, "string over its limit");
	/* too many groups */
	wbuf_reset(&w);
	wbuf_u32(&w, 0); wbuf_u32(&w, 0); wbuf_u32(&w, 0); wbuf_u8(&w, 33);
	CHECK_INT(proto_lookup_decode(w.data, w.len, &d, &why), ==, -WEFT_EPROTO);
	CHECK_STR(why, "credential has more than 32 groups");
	/* bit 7 of the count says more groups than were sent; the count is the rest */
	wbuf_reset(&w);
	wbuf_u32(&w, 5); wbuf_u32(&w, 6); wbuf_u32(&w, 0); wbuf_u8(&w, 0x81); wbuf_u32(&w, 7);
	wbuf_u64(&w, 1);
	wbuf_str(&w, text, 3);
	CHECK_INT(proto_lookup_decode(w.data, w.len, &d, &why), ==, 0);
	CHECK_INT(d.cred.ngroups, ==, 1);
	CHECK_INT(d.cred.groups[0], ==, 7);
	CHECK_INT(d.cred.more_groups, ==, 1);
	struct wbuf w2;
	wbuf_init(&w2);
	proto_lookup_encode(&w2, &d);
	CHECK(w2.len == w.len && memcmp(w2.data, w.data, w.len) == 0);
	wbuf_free(&w2);
	/* too many checksums, before any allocation or read */
	wbuf_reset(&w);
	struct weft_msg_obj_data od = {.size = 1};
	od.crcs.n = 3;
	proto_obj_data_encode(&w, &od);
	put_le32(w.data + 8, WEFT_CRCS_MAX + 1);
	struct weft_msg_obj_data dd;
	CHECK_INT(proto_obj_data_decode(w.data, w.len, &dd, &why), ==, -WEFT_EPROTO);
	CHECK_STR(why, "more checksums than a bulk can have");
	/* checksum count larger than the bytes present */
	put_le32(w.data + 8, 200);
	CHECK_INT(proto_obj_data_decode(w.data, w.len, &dd, &why), ==, -WEFT_EPROTO);
	CHECK_STR(why, "checksum list truncated");
	/* invalid layout */
	wbuf_reset(&w);
	struct weft_msg_layout lm = {.layout = {.stripe_unit = 3000, .replicas = 1}};
	proto_layout_encode(&w, &lm);
	struct weft_msg_layout ld;
	CHECK_INT(proto_layout_decode(w.data, w.len, &ld, &why), ==, -WEFT_EPROTO);
	CHECK(strstr(why, "stripe unit") != NULL);
	/* a layout generation past the object numbers' room */
	wbuf_reset(&w);
	lm = (struct weft_msg_layout){.layout = {.stripe_unit = 65536, .replicas = 1,
						 .gen = WEFT_LAYOUT_GEN_MAX + 1}};
	proto_layout_encode(&w, &lm);
	CHECK_INT(proto_layout_decode(w.data, w.len, &ld, &why), ==, -WEFT_EPROTO);
	CHECK(strstr(why, "generation") != NULL);
	wbuf_free(&w);
}

static void hdr_expect(struct weft_hdr h, const char *reason)
{
	uint8_t b[WEFT_HDR_SIZE];
	struct weft_hdr d;
	const char *why = NULL;
	proto_hdr_encode(b, &h);
	int rc = proto_hdr_decode(b, &d, &why);
	if (!reason) {
		CHECK_OK(rc);
		CHECK(memcmp(&d, &h, sizeof(h)) == 0);
	} else {
		CHECK_INT(rc, ==, -WEFT_EPROTO);
		CHECK_STR(why, reason);
	}
}

static void test_frames(void)
{
	struct weft_hdr ok = {.magic = WEFT_MAGIC, .version = WEFT_PROTO_MAX, .opcode = WEFT_OP_PING,
			      .reqid = 0x1122334455667788ULL, .payload_len = 8, .bulk_len = 0};
	hdr_expect(ok, NULL);
	struct weft_hdr h = ok;
	h.flags = WEFT_F_REPLY;
	h.status = -ENOENT;
	h.bulk_len = WEFT_BULK_MAX;
	h.payload_len = WEFT_PAYLOAD_MAX;
	hdr_expect(h, NULL);
	h = ok; h.magic = 0x12345678; hdr_expect(h, "bad magic (not a weft peer?)");
	h = ok; h.version = WEFT_PROTO_MAX + 1; hdr_expect(h, "unsupported protocol version");
	h = ok; h.version = WEFT_PROTO_MIN - 1; hdr_expect(h, "unsupported protocol version");
	h = ok; h.payload_len = WEFT_PAYLOAD_MAX + 1; hdr_expect(h, "payload longer than 64 KiB");
	h = ok; h.bulk_len = WEFT_BULK_MAX + 1; hdr_expect(h, "bulk longer than 16 MiB");
	h = ok; h.bulk_len = 0xFFFFFFFFu; hdr_expect(h, "bulk longer than 16 MiB");
	h = ok; h.flags = 0x80; hdr_expect(h, "unknown frame flags");
	h = ok; h.flags = WEFT_F_REPLY | WEFT_F_ONEWAY; hdr_expect(h, "reply marked one-way");
	h = ok; h.status = -1; hdr_expect(h, "request with a non-zero status");
	h = ok; h.flags = WEFT_F_REPLY; h.status = 5; hdr_expect(h, "status out of range");
	h = ok; h.opcode = 0x7777; hdr_expect(h, "unknown opcode");
}

static void test_dirents(void)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_dirent d = {.name = proto_str_of("hello", 5), .ino = 42, .next_cookie = 7, .type = 4};
	proto_dirent_encode(&w, &d);
	d.has_attr = true;
	d.attr.ino = 43;
	d.name = proto_str_of("x", 1);
	proto_dirent_encode(&w, &d);
	CHECK_INT(w.len, ==, proto_dirent_size(5, false) + proto_dirent_size(1, true));
	struct rbuf r;
	struct weft_dirent o;
	rbuf_init(&r, w.data, w.len);
	CHECK_OK(proto_dirent_next(&r, &o));
	CHECK_INT(o.ino, ==, 42);
	CHECK_INT(o.name.len, ==, 5);
	CHECK(!o.has_attr);
	CHECK_OK(proto_dirent_next(&r, &o));
	CHECK(o.has_attr);
	CHECK_INT(o.attr.ino, ==, 43);
	CHECK_INT(proto_dirent_next(&r, &o), ==, 1);
	/* truncated entry */
	rbuf_init(&r, w.data, w.len - 1);
	CHECK_OK(proto_dirent_next(&r, &o));
	CHECK_INT(proto_dirent_next(&r, &o), ==, -WEFT_EPROTO);
	wbuf_free(&w);

	/* WEFT_READDIR_PLUS_CAP: the attr, the layout and a capability */
	wbuf_init(&w);
	d.has_cap = true;
	d.layout = (struct weft_layout){.stripe_unit = 1u << 20, .stripe_count = 2,
					.first_chain = 3, .chain_count = 4, .replicas = 2, .gen = 5};
	for (int i = 0; i < WEFT_CAP_LEN; i++)
		d.cap[i] = (uint8_t)(i + 1);
	proto_dirent_encode(&w, &d);
	CHECK_INT(w.len, ==, proto_dirent_size(1, WEFT_READDIR_PLUS_CAP));
	rbuf_init(&r, w.data, w.len);
	CHECK_OK(proto_dirent_next(&r, &o));
	CHECK(o.has_attr && o.has_cap);
	CHECK_INT(o.attr.ino, ==, 43);
	CHECK_INT(o.layout.first_chain, ==, 3);
	CHECK_INT(o.layout.gen, ==, 5);
	CHECK(memcmp(o.cap, d.cap, WEFT_CAP_LEN) == 0);
	CHECK_INT(proto_dirent_next(&r, &o), ==, 1);
	/* an unknown flag value */
	w.data[2 + 1 + 8 + 8 + 1] = 3;
	rbuf_init(&r, w.data, w.len);
	CHECK_INT(proto_dirent_next(&r, &o), ==, -WEFT_EPROTO);
	wbuf_free(&w);
}

static void test_crc_pieces(void)
{
	CHECK_INT(proto_crc_pieces(0, 0), ==, 0);
	CHECK_INT(proto_crc_pieces(0, 1), ==, 1);
	CHECK_INT(proto_crc_pieces(0, WEFT_CHUNK_SIZE), ==, 1);
	CHECK_INT(proto_crc_pieces(1, WEFT_CHUNK_SIZE), ==, 2);
	CHECK_INT(proto_crc_pieces(WEFT_CHUNK_SIZE - 1, 2), ==, 2);
	CHECK_INT(proto_crc_pieces(5, WEFT_BULK_MAX), ==, WEFT_BULK_MAX / WEFT_CHUNK_SIZE + 1);
	CHECK(proto_crc_pieces(5, WEFT_BULK_MAX) <= WEFT_CRCS_MAX);
}

int main(void)
{
	test_every_message();
	test_field_limits();
	test_frames();
	test_dirents();
	test_crc_pieces();
	printf("test_proto: ok (%d message types)\n", WEFT_MSG_COUNT);
	return 0;
}
