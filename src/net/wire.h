/* The protected wire: what every frame after the handshake carries.
 *
 * Levels (per file system, docs/SECURITY.md):
 *   none       frames as before the handshake: header, payload, bulk.
 *   integrity  header, payload and bulk in clear, then a 16-byte tag over all three:
 *              AES-256-GCM's tag with them all as additional data (GMAC) when both ends
 *              have AES-NI, else Poly1305 under a one-time key taken from
 *              ChaCha20(direction key, counter). The send path stays zero-copy: the MAC
 *              streams over the caller's iovecs.
 *   privacy    header in clear (it says how long the frame is), payload and bulk
 *              encrypted, then the 16-byte AEAD tag; the header is the AEAD's additional
 *              data. AES-256-GCM when both ends have AES-NI, ChaCha20-Poly1305 otherwise.
 * AES-256-GCM is OpenSSL's (libcrypto: its GHASH takes additional data in pieces and runs
 * 2.5x faster than libsodium's here, docs/PERFORMANCE.md); ChaCha20 and Poly1305 are
 * libsodium's.
 * The nonce of a frame is its implicit counter in its direction (0, 1, ...: never sent,
 * never reused; 8 bytes little-endian then 4 zero bytes). A frame whose tag fails closes
 * the connection.
 *
 * Keys: k_c2s = HMAC(proof, "weft-wire-c2s" | binding), k_s2c likewise with
 * "weft-wire-s2c", where the binding is that of the handshake's MACs (net/auth.h): the
 * version, both roles and names, the serial, both nonces, and both wire bytes.
 *
 * The wire byte of HELLO is the client's level (its floor: the file system's level as it
 * knows it) | WIRE_AES if the client has AES-NI; that of the reply the level the server
 * chose, max(client's, server's floor) | WIRE_AES if both have AES-NI. Both are in the
 * MACs, so a man in the middle cannot lower them, and a client refuses a level below its
 * floor. */
#ifndef WEFT_WIRE_H
#define WEFT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "net/auth.h"

enum { WIRE_NONE = 0, WIRE_INTEGRITY = 1, WIRE_PRIVACY = 2 };
#define WIRE_LEVEL_MASK 0x3u
#define WIRE_AES        0x80u
#define WIRE_TAG_LEN    16

struct wire_dir {
	EVP_CIPHER_CTX *gcm;             /* AES-256-GCM with this key (when aes) */
	uint8_t key[32];
	uint64_t ctr;                    /* the next frame's counter */
};

struct wire {
	uint8_t level;   /* WIRE_*; 0 until the handshake is done */
	bool aes;        /* AES-256-GCM (both ends have AES-NI), else ChaCha20/Poly1305 */
	struct wire_dir tx, rx;
};

/* "none", "integrity", "privacy"; and back (-1 for anything else). */
const char *wire_level_name(int level);
int wire_level_parse(const char *s);
/* This process's floor: the lowest level it accepts and asks for. Raised by meta from
 * its superblock and by every process when it learns the file system's level from
 * meta's HELLO reply; never lowered. */
int wire_floor(void);
void wire_floor_raise(int level);
/* Whether this CPU runs AES-256-GCM in hardware (and WEFT_WIRE_NO_AES is not set in the
 * environment, for tests and measurements). */
bool wire_aes_ok(void);
/* From now on this process offers ChaCha20/Poly1305 only (tests). */
void wire_aes_off(void);

/* Sets up both directions of w from the handshake (server: we are its server side).
 * Returns 0, or -ENOMEM. */
int wire_setup(struct wire *w, const uint8_t proof[WEFT_KEY_LEN], const struct auth_bind *b,
	       bool server, uint8_t level, bool aes);
void wire_clear(struct wire *w);
/* The sending side (wire_mac, wire_seal) advances tx's counter: its caller serializes
 * them and queues frames in the same order (conn.c's seal_lock). The receiving side
 * (wire_open) is the connection's loop thread alone. Neither fails once set up. */
/* Integrity: the tag of the next frame of w over the iovecs (header first). */
void wire_mac(struct wire *w, const struct iovec *v, int n, uint8_t tag[WIRE_TAG_LEN]);
/* Privacy: encrypts the next frame's body, given as the iovecs v, into dst; tag out. */
void wire_seal(struct wire *w, const uint8_t *hdr, size_t hlen, const struct iovec *v, int n,
	       uint8_t *dst, uint8_t tag[WIRE_TAG_LEN]);
/* Checks (and at privacy, decrypts in place) the next frame received; 0 or -1. */
int wire_open(struct wire *w, const uint8_t *hdr, size_t hlen, uint8_t *body, size_t len,
	      const uint8_t tag[WIRE_TAG_LEN]);

#endif
