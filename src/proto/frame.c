/* The fixed 32-byte frame header: encode, and decode with validation. */
#include "proto/proto.h"

#include "weft/err.h"

void proto_hdr_encode(uint8_t out[WEFT_HDR_SIZE], const struct weft_hdr *h)
{
	put_le32(out + 0, h->magic);
	put_le16(out + 4, h->version);
	put_le16(out + 6, h->opcode);
	put_le32(out + 8, h->flags);
	put_le32(out + 12, (uint32_t)h->status);
	put_le64(out + 16, h->reqid);
	put_le32(out + 24, h->payload_len);
	put_le32(out + 28, h->bulk_len);
}

int proto_hdr_decode(const uint8_t in[WEFT_HDR_SIZE], struct weft_hdr *h, const char **why)
{
	h->magic = get_le32(in + 0);
	h->version = get_le16(in + 4);
	h->opcode = get_le16(in + 6);
	h->flags = get_le32(in + 8);
	h->status = (int32_t)get_le32(in + 12);
	h->reqid = get_le64(in + 16);
	h->payload_len = get_le32(in + 24);
	h->bulk_len = get_le32(in + 28);

	const char *bad = NULL;
	if (h->magic != WEFT_MAGIC)
		bad = "bad magic (not a weft peer?)";
	else if (h->version < WEFT_PROTO_MIN || h->version > WEFT_PROTO_MAX)
		bad = "unsupported protocol version";
	else if (h->payload_len > WEFT_PAYLOAD_MAX)
		bad = "payload longer than 64 KiB";
	else if (h->bulk_len > WEFT_BULK_MAX)
		bad = "bulk longer than 16 MiB";
	else if (h->flags & ~(WEFT_F_REPLY | WEFT_F_ONEWAY))
		bad = "unknown frame flags";
	else if ((h->flags & WEFT_F_REPLY) && (h->flags & WEFT_F_ONEWAY))
		bad = "reply marked one-way";
	else if (!(h->flags & WEFT_F_REPLY) && h->status != 0)
		bad = "request with a non-zero status";
	else if (h->status > 0 || h->status < -WEFT_ERR_MAX)
		bad = "status out of range";
	else if (!proto_op_name(h->opcode))
		bad = "unknown opcode";
	if (bad) {
		if (why)
			*why = bad;
		return -WEFT_EPROTO;
	}
	return 0;
}
