/* The cluster key and the challenge-response proofs of the connection handshake.
 *
 * Handshake (every connection, before any other message):
 *   client -> HELLO{versions, role, nonce_c}      server -> HELLO reply{version, nonce_s}
 *   client -> AUTH{mac_c}                         server -> AUTH reply{mac_s} or -WEFT_EAUTH
 * mac_x = HMAC-SHA256(key, tag_x || nonce_c || nonce_s || version), tag "weft-client" or
 * "weft-server". Both nonces are fresh random bytes, so a recorded AUTH is useless in
 * another handshake. */
#ifndef WEFT_AUTH_H
#define WEFT_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define WEFT_KEY_LEN 32

struct weft_key {
	uint8_t k[WEFT_KEY_LEN];
};

/* Writes 32 random bytes to path with mode 0600; refuses to overwrite unless force.
 * Returns 0 or -errno; *msg gets a static description on failure. */
int auth_keygen(const char *path, int force);
/* Loads a key file: exactly 32 bytes, not readable or writable by group or others.
 * Returns 0 or -errno (-EPERM for a too-open mode, -EINVAL for a wrong size); on error
 * writes a one-line reason into err (size errlen). */
int auth_key_load(const char *path, struct weft_key *key, char *err, size_t errlen);
/* Fills n random bytes. */
void auth_random(void *p, size_t n);
/* Computes the proof of `side` ("weft-client" or "weft-server"). */
void auth_mac(const struct weft_key *key, const char *side, const uint8_t *nonce_c,
	      const uint8_t *nonce_s, uint16_t version, uint8_t out[32]);
/* Constant-time comparison of two proofs: 0 if equal. */
int auth_mac_verify(const uint8_t a[32], const uint8_t b[32]);

#endif
