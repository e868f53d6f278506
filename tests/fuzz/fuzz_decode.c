/* libFuzzer target for every decoder of the wire protocol: the frame header, every
 * message type, directory entry lists. A decoder must reject or accept any input without
 * reading out of bounds, and whatever it accepts must re-encode to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= WEFT_HDR_SIZE) {
		struct weft_hdr h;
		const char *why = NULL;
		if (proto_hdr_decode(data, &h, &why) == 0) {
			uint8_t again[WEFT_HDR_SIZE];
			proto_hdr_encode(again, &h);
			if (memcmp(again, data, WEFT_HDR_SIZE) != 0)
				abort();
		} else if (!why) {
			abort();
		}
	}
	if (size < 1)
		return 0;
	enum weft_msg_type t = (enum weft_msg_type)(data[0] % WEFT_MSG_COUNT);
	static _Alignas(16) uint8_t m[1 << 16];
	const char *why = NULL;
	if (proto_msg_decode_any(t, data + 1, size - 1, m, &why) == 0) {
		struct wbuf w;
		wbuf_init(&w);
		if (proto_msg_encode_any(t, &w, m) != 0 || w.len != size - 1 ||
		    (w.len && memcmp(w.data, data + 1, size - 1) != 0))
			abort();
		wbuf_free(&w);
	} else if (!why) {
		abort();
	}
	struct rbuf r;
	struct weft_dirent d;
	rbuf_init(&r, data + 1, size - 1);
	while (proto_dirent_next(&r, &d) == 0)
		if (d.name.len == 0 || d.name.len > WEFT_NAME_MAX)
			abort();
	return 0;
}
