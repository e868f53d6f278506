/* The protected wire: per-direction keys, frame tags and encryption. See wire.h. */
#include "net/wire.h"

#include <stdatomic.h>
#include <string.h>

static atomic_int floor_level;

const char *wire_level_name(int level)
{
	switch (level) {
	case WIRE_NONE: return "none";
	case WIRE_INTEGRITY: return "integrity";
	case WIRE_PRIVACY: return "privacy";
	}
	return "unknown";
}

int wire_level_parse(const char *s)
{
	for (int l = WIRE_NONE; l <= WIRE_PRIVACY; l++)
		if (strcmp(s, wire_level_name(l)) == 0)
			return l;
	return -1;
}

int wire_floor(void)
{
	return atomic_load(&floor_level);
}

void wire_floor_raise(int level)
{
	int cur = atomic_load(&floor_level);
	while (level > cur && !atomic_compare_exchange_weak(&floor_level, &cur, level))
		;
}

bool wire_aes_ok(void)
{
	static atomic_int ok = -1;
	int v = atomic_load(&ok);
	if (v < 0) {
		if (sodium_init() < 0)
			v = 0;
		else
			v = crypto_aead_aes256gcm_is_available() ? 1 : 0;
		atomic_store(&ok, v);
	}
	return v == 1;
}

static void dir_setup(struct wire_dir *d, const uint8_t proof[WEFT_KEY_LEN],
		      const struct auth_bind *b, const char *tag, bool aes)
{
	auth_mac(proof, tag, b, d->key);
	d->ctr = 0;
	if (aes)
		crypto_aead_aes256gcm_beforenm(&d->aes, d->key);
}

void wire_setup(struct wire *w, const uint8_t proof[WEFT_KEY_LEN], const struct auth_bind *b,
		bool server, uint8_t level, bool aes)
{
	w->aes = aes && level == WIRE_PRIVACY;
	dir_setup(server ? &w->rx : &w->tx, proof, b, "weft-wire-c2s", w->aes);
	dir_setup(server ? &w->tx : &w->rx, proof, b, "weft-wire-s2c", w->aes);
	w->level = level;
}

void wire_clear(struct wire *w)
{
	sodium_memzero(w, sizeof(*w));
}

/* The nonce of counter ctr: 8 bytes little-endian, 4 zero bytes. */
static void nonce_of(uint64_t ctr, uint8_t n[12])
{
	for (int i = 0; i < 8; i++)
		n[i] = (uint8_t)(ctr >> (8 * i));
	memset(n + 8, 0, 4);
}

static void mac_iov(const uint8_t key[32], uint64_t ctr, const struct iovec *v, int n,
		    uint8_t tag[WIRE_TAG_LEN])
{
	uint8_t nonce[12], otk[32];
	crypto_onetimeauth_poly1305_state st;
	nonce_of(ctr, nonce);
	crypto_stream_chacha20_ietf(otk, sizeof(otk), nonce, key);
	crypto_onetimeauth_poly1305_init(&st, otk);
	for (int i = 0; i < n; i++)
		crypto_onetimeauth_poly1305_update(&st, v[i].iov_base, v[i].iov_len);
	crypto_onetimeauth_poly1305_final(&st, tag);
	sodium_memzero(otk, sizeof(otk));
}

void wire_mac(struct wire_dir *d, const struct iovec *v, int n, uint8_t tag[WIRE_TAG_LEN])
{
	mac_iov(d->key, d->ctr++, v, n, tag);
}

void wire_seal(struct wire_dir *d, bool aes, const uint8_t *hdr, size_t hlen, uint8_t *body,
	       size_t len, uint8_t tag[WIRE_TAG_LEN])
{
	uint8_t nonce[12];
	nonce_of(d->ctr++, nonce);
	if (aes)
		crypto_aead_aes256gcm_encrypt_detached_afternm(body, tag, NULL, body, len, hdr, hlen,
								 NULL, nonce, &d->aes);
	else
		crypto_aead_chacha20poly1305_ietf_encrypt_detached(body, tag, NULL, body, len, hdr,
								   hlen, NULL, nonce, d->key);
}

int wire_open(struct wire_dir *d, uint8_t level, bool aes, const uint8_t *hdr, size_t hlen,
	      uint8_t *body, size_t len, const uint8_t tag[WIRE_TAG_LEN])
{
	uint64_t ctr = d->ctr++;
	if (level == WIRE_INTEGRITY) {
		uint8_t want[WIRE_TAG_LEN];
		struct iovec v[2] = {{(void *)hdr, hlen}, {body, len}};
		mac_iov(d->key, ctr, v, 2, want);
		return crypto_verify_16(want, tag) == 0 ? 0 : -1;
	}
	uint8_t nonce[12];
	nonce_of(ctr, nonce);
	if (aes)
		return crypto_aead_aes256gcm_decrypt_detached_afternm(body, NULL, body, len, tag, hdr,
								      hlen, nonce, &d->aes) == 0 ? 0 : -1;
	return crypto_aead_chacha20poly1305_ietf_decrypt_detached(body, NULL, body, len, tag, hdr,
								  hlen, nonce, d->key) == 0 ? 0 : -1;
}
