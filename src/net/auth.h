/* Credentials and the challenge-response proofs of the connection handshake.
 *
 * Who holds what (docs/SECURITY.md):
 *  - meta holds the cluster secret (the 32-byte file `weft mkfs` writes). A holder of the
 *    secret may speak as any role and name (serial 0): meta itself, and `weft up`'s
 *    one-machine cluster.
 *  - every other node holds a node credential (`weft node add NAME --role R`): its name,
 *    role, serial and two proof keys, one toward meta and one toward stores, derived
 *    from the secret so that meta keeps no key on disk:
 *        service   = HMAC(secret, "weft-service-key")
 *        meta key  = HMAC(secret,  "weft-node-meta"  | role | name | serial)
 *        store key = HMAC(service, "weft-node-store" | role | name | serial)
 *    A store's credential also carries the service key, with which the store checks the
 *    proofs of its peers without asking meta; meta checks its peers against its node
 *    registry (name, role, serial, revoked).
 *
 * Handshake (every connection, before any other message):
 *   client -> HELLO{versions, role, nonce_c, name, serial}
 *   server -> HELLO reply{version, nonce_s, server role, server name}
 *   client -> AUTH{mac_c}                         server -> AUTH reply{mac_s} or -WEFT_EAUTH
 * mac_x = HMAC(proof key, tag_x | version | client role | server role | serial |
 *              wire_c | wire_s | client name | server name | nonce_c | nonce_s), tag
 * "weft-client" or "weft-server": the roles, both names, the version and the wire levels
 * asked and chosen cannot be changed on the way, and both nonces are fresh, so a recorded
 * AUTH is useless in another handshake. Every frame after AUTH is protected with keys
 * derived from the same binding (net/wire.h). */
#ifndef WEFT_AUTH_H
#define WEFT_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

#define WEFT_KEY_LEN 32

/* What a process proves itself with: the cluster secret (serial 0) or a node credential. */
struct weft_key {
	uint8_t k[WEFT_KEY_LEN];       /* the cluster secret, or this node's meta key */
	uint8_t store_k[WEFT_KEY_LEN]; /* node credential: proof key toward stores */
	uint8_t svc[WEFT_KEY_LEN];     /* service key (secret holders and stores) */
	bool has_svc;
	uint32_t serial;               /* 0: the cluster secret */
	uint8_t role;                  /* node credential: its role (WEFT_ROLE_*) */
	char name[WEFT_NODE_MAX + 1];  /* node credential: its name */
};

/* What a server checks a peer's HELLO against: fills the proof key the peer must use, or
 * returns -WEFT_EAUTH with a one-line reason. */
typedef int (*auth_verify_fn)(void *arg, uint8_t role, const char *name, uint32_t serial,
			      uint8_t out[WEFT_KEY_LEN], char *why, size_t whylen);

/* Writes 32 random bytes to path with mode 0600; refuses to overwrite unless force.
 * Returns 0 or -errno. */
int auth_keygen(const char *path, int force);
/* Loads a key file: the 32-byte cluster secret, or a node credential (text, written by
 * auth_cred_write). The file must be a regular file owned by this user or root and not
 * readable or writable by group or others. Returns 0 or -errno (-EPERM for a too-open
 * mode, -EINVAL for a wrong size or format); on error writes a one-line reason into err. */
int auth_key_load(const char *path, struct weft_key *key, char *err, size_t errlen);
/* The credential of node (role, name, serial) derived from the cluster secret; stores'
 * credentials carry the service key. */
void auth_cred_derive(const struct weft_key *secret, uint8_t role, const char *name,
		      uint32_t serial, struct weft_key *out);
/* Writes a credential as text to path (mode 0600, never through a symlink), or to
 * stdout when path is "-" . Returns 0 or -errno. */
int auth_cred_write(const char *path, const struct weft_key *cred, int force);
/* The proof key of (role, name, serial) toward meta, from the cluster secret. */
void auth_meta_key(const struct weft_key *secret, uint8_t role, const char *name,
		   uint32_t serial, uint8_t out[WEFT_KEY_LEN]);
/* The proof key of (role, name, serial) toward stores, from the service key. */
void auth_store_key(const uint8_t svc[WEFT_KEY_LEN], uint8_t role, const char *name,
		    uint32_t serial, uint8_t out[WEFT_KEY_LEN]);
/* The key a client side proves itself with toward a server of server_role, announcing
 * (role, name): -WEFT_EAUTH when this key cannot speak to such a server. */
int auth_client_key(const struct weft_key *key, uint8_t server_role, uint8_t role,
		    const char *name, uint8_t out[WEFT_KEY_LEN]);
/* 32 bytes that hide a secret sent over a connection: HMAC(proof key, "weft-wrap" |
 * purpose | nonce_c | nonce_s); XOR the secret with it both ways. */
void auth_wrap(const uint8_t proof[WEFT_KEY_LEN], const char *purpose, const uint8_t *nonce_c,
	       const uint8_t *nonce_s, uint8_t inout[WEFT_KEY_LEN]);
/* Fills n random bytes. */
void auth_random(void *p, size_t n);

/* What one handshake's MACs cover besides the key and the side. */
struct auth_bind {
	uint16_t version;
	uint8_t client_role, server_role;
	const char *client_name, *server_name;
	uint32_t serial;
	const uint8_t *nonce_c, *nonce_s;
	uint8_t wire_c, wire_s;        /* the wire bytes of HELLO and its reply (net/wire.h) */
};
/* Computes the proof of `side` ("weft-client" or "weft-server"). */
void auth_mac(const uint8_t key[WEFT_KEY_LEN], const char *side, const struct auth_bind *b,
	      uint8_t out[32]);
/* Constant-time comparison of two proofs: 0 if equal. */
int auth_mac_verify(const uint8_t a[32], const uint8_t b[32]);
/* ---- capabilities (proto.h WEFT_CAP_LEN has the format) ----
 * cap key of period p = HMAC(service, "weft-cap-key" | p): meta and every store derive it
 * from the service key, so rotating needs no message. A period lasts
 * WEFT_CAP_PERIOD_MS; meta mints with the current period's key, stores accept the
 * previous, current and next period (clock skew), so a key is used at most three periods.
 * A capability's lifetime (meta's WEFT_META_CAP_MS, at most a period) bounds how long a
 * capability outlives a revocation that does not reach a store. */
#define WEFT_CAP_PERIOD_MS (3600u * 1000)
struct weft_cap {
	uint64_t ino, session, expiry_ms;
	uint32_t period;
	uint8_t rights;   /* WEFT_CAP_* */
};
/* The period of a CLOCK_REALTIME time in ms, and the realtime clock in ms. */
uint32_t auth_cap_period(uint64_t realtime_ms);
uint64_t auth_realtime_ms(void);
void auth_cap_key(const uint8_t svc[WEFT_KEY_LEN], uint32_t period, uint8_t out[WEFT_KEY_LEN]);
/* Encodes c into out and MACs it for node with key (the cap key of c->period). */
void auth_cap_mint(const uint8_t key[WEFT_KEY_LEN], const struct weft_cap *c, const char *node,
		   uint8_t out[WEFT_CAP_LEN]);
/* Decodes the fields of in (does not check the MAC). */
void auth_cap_parse(const uint8_t in[WEFT_CAP_LEN], struct weft_cap *c);
/* Whether in's MAC is right for node under key (constant time). */
bool auth_cap_mac_ok(const uint8_t key[WEFT_KEY_LEN], const uint8_t in[WEFT_CAP_LEN],
		     const char *node);

/* "client", "store", "admin", "meta"; or NULL. And back: 0 for an unknown name. */
const char *auth_role_name(uint8_t role);
uint8_t auth_role_parse(const char *s);

#endif
