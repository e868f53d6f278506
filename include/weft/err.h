/* weft error codes: every function returns 0 or a negative errno; weft-specific
 * conditions use a private negative range above the system's errnos. */
#ifndef WEFT_ERR_H
#define WEFT_ERR_H

enum {
	WEFT_ERR_BASE = 4096,
	WEFT_EPROTO = WEFT_ERR_BASE, /* malformed frame or message */
	WEFT_EAUTH,                  /* authentication failed (wrong or missing key) */
	WEFT_ECHECKSUM,              /* data does not match its CRC32C */
	WEFT_ESTALECHAIN,            /* request carried an old chain version: refresh */
	WEFT_ETARGETDOWN,            /* a chain member failed; detail names the target */
	WEFT_EVERSION,               /* no protocol version in common */
	WEFT_ENOTSERVING,            /* target is not serving (fenced, syncing, offline) */
	WEFT_EMISSING,               /* object written but missing or stale on this target */
	WEFT_EEVICTED,               /* this client's session was evicted (a recall unanswered) */
	WEFT_EMIGRATING,             /* the file's layout is being migrated: retry shortly */
	WEFT_ECAPEXPIRED,            /* the request's capability expired: renew it and retry */
	WEFT_ERECOVERING,            /* meta takes replays first, or a copy is being applied:
	                              * nothing was done, retry shortly */
	WEFT_ERR_MAX
};

/* Returns a static string for a negative (or positive) error code, system or weft. */
const char *weft_strerror(int err);

#endif
