/* Capabilities for the stores (proto.h): each open file's winode keeps the capability
 * meta gave with OPEN or CREATE_OPEN; every store request for the file carries it.
 *
 * DESIGN: renewal rides on the open: once half a capability's life has passed, the next
 * request for the file asks meta for a new one (CAP_GET with the old capability, which
 * meta renews while this session holds the file open), from the caller's thread; an idle
 * file costs nothing, and a capability that expired unused is renewed the same way. A
 * store that answers WEFT_ECAPEXPIRED (clocks apart, a request queued past the expiry)
 * makes the capability stale (client_cap_stale) and the request is sent again like after
 * any transient error. Requests for a file this client has not open (a truncate by
 * path) get a capability checked by meta as an open would be (CAP_GET without one).
 *
 * Threads: any but the loop thread (a renewal waits for meta); wi->cap_lock guards a
 * winode's capability. */
#include "client/client_int.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "net/auth.h"
#include "weft/err.h"

static bool cap_zero(const uint8_t cap[WEFT_CAP_LEN])
{
	static const uint8_t zero[WEFT_CAP_LEN];
	return memcmp(cap, zero, WEFT_CAP_LEN) == 0;
}

void client_cap_note(struct winode *wi, const uint8_t cap[WEFT_CAP_LEN])
{
	if (!wi || cap_zero(cap))
		return;
	struct weft_cap c, had;
	auth_cap_parse(cap, &c);
	uint64_t now = auth_realtime_ms();
	pthread_mutex_lock(&wi->cap_lock);
	auth_cap_parse(wi->cap, &had);
	/* a read-only open does not take away a read-write capability still fresh, unless
	 * it comes from a new session (the old one may have been evicted) */
	if (!(wi->cap_rights & ~c.rights) || now >= wi->cap_renew_ms || had.session != c.session) {
		memcpy(wi->cap, cap, WEFT_CAP_LEN);
		wi->cap_rights = c.rights;
		wi->cap_expiry_ms = c.expiry_ms;
		wi->cap_renew_ms = c.expiry_ms > now ? now + (c.expiry_ms - now) / 2 : 0;
	}
	pthread_mutex_unlock(&wi->cap_lock);
}

void client_cap_stale(struct winode *wi)
{
	if (!wi)
		return;
	pthread_mutex_lock(&wi->cap_lock);
	wi->cap_renew_ms = 0;
	pthread_mutex_unlock(&wi->cap_lock);
}

/* CAP_GET; 0 and the new capability in out, or -errno */
static int cap_get(struct weft_client *c, uint64_t ino, uint8_t rights,
		   const struct weft_cred *cred, const uint8_t *old, uint8_t out[WEFT_CAP_LEN])
{
	int err = 0;
	for (int attempt = 0; attempt < 2; attempt++) {
		pthread_rwlock_rdlock(&c->sess_lock);
		uint64_t sid = c->session;
		pthread_rwlock_unlock(&c->sess_lock);
		struct weft_msg_cap_get m = {.ino = ino, .session = sid, .rights = rights,
					     .has_old = old != NULL};
		if (cred)
			m.cred = *cred;
		if (old)
			memcpy(m.old, old, WEFT_CAP_LEN);
		struct wbuf w;
		wbuf_init(&w);
		proto_cap_get_encode(&w, &m);
		struct frame *fr = NULL;
		err = client_meta_call(c, WEFT_OP_CAP_GET, &w, NULL, 0, &fr);
		if (!err) {
			struct weft_msg_cap r;
			if (proto_cap_decode(fr->payload, fr->h.payload_len, &r, NULL) == 0)
				memcpy(out, r.cap, WEFT_CAP_LEN);
			else
				err = -EIO;
		}
		frame_free(fr);
		/* meta restarted and lost our session: a new one reclaims our opens */
		if (err == -ENOENT && sid && attempt == 0 && client_session_lost(c, sid) &&
		    client_session_renew(c, sid) == 0)
			continue;
		break;
	}
	return err;
}

int client_cap_get(struct weft_client *c, struct winode *wi, uint64_t ino, uint8_t need,
		   const struct weft_cred *cred, uint8_t out[WEFT_CAP_LEN])
{
	struct winode *found = NULL;
	if (!wi)
		wi = found = client_winode_find(c, ino);
	uint64_t now = auth_realtime_ms();
	uint8_t old[WEFT_CAP_LEN];
	bool has_old = false;
	if (wi) {
		pthread_mutex_lock(&wi->cap_lock);
		bool held = (wi->cap_rights & need) == need;
		if (held && now < wi->cap_renew_ms) {
			memcpy(out, wi->cap, WEFT_CAP_LEN);
			pthread_mutex_unlock(&wi->cap_lock);
			if (found)
				client_winode_put(c, found);
			return 0;
		}
		if (held) {
			memcpy(old, wi->cap, WEFT_CAP_LEN);
			has_old = true;
		}
		pthread_mutex_unlock(&wi->cap_lock);
	}
	int err = cap_get(c, ino, need, cred, has_old ? old : NULL, out);
	if (err && has_old && err != -WEFT_EEVICTED) {
		/* the session no longer holds the file open (a write-behind flushed after
		 * the last release): the capability serves until it expires */
		struct weft_cap oc;
		auth_cap_parse(old, &oc);
		if (oc.expiry_ms > now + 1000) {
			memcpy(out, old, WEFT_CAP_LEN);
			err = 0;
		} else {
			log_warn("ino %llu: renewing its capability: %s", (unsigned long long)ino,
				 weft_strerror(err));
		}
	} else if (!err) {
		client_cap_note(wi, out);
	}
	if (found)
		client_winode_put(c, found);
	return err;
}
