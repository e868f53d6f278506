/* weft_strerror: names for system and weft-specific error codes. */
#include "weft/err.h"

#include <string.h>

const char *weft_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case WEFT_EPROTO: return "protocol error (malformed message)";
	case WEFT_EAUTH: return "authentication failed";
	case WEFT_ECHECKSUM: return "checksum mismatch";
	case WEFT_ESTALECHAIN: return "stale chain version";
	case WEFT_ETARGETDOWN: return "chain member failed";
	case WEFT_EVERSION: return "no common protocol version";
	case WEFT_ENOTSERVING: return "target not serving";
	case WEFT_EMISSING: return "object missing or stale on this target";
	case WEFT_EEVICTED: return "session evicted by meta (a lease recall went unanswered)";
	case WEFT_EMIGRATING: return "file layout being migrated (retry)";
	case WEFT_ERECOVERING: return "meta recovering after a restart (retry)";
	case WEFT_ECAPEXPIRED: return "capability expired";
	default: return strerror(err);
	}
}
