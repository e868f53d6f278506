/* The protected wire: per-direction keys, frame tags and encryption. See wire.h. */
#include "net/wire.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_int floor_level;
static atomic_int aes_state = -1; /* -1: not checked yet */

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
	int v = atomic_load(&aes_state);
	if (v < 0) {
		if (sodium_init() < 0 || getenv("WEFT_WIRE_NO_AES"))
			v = 0;
		else
			v = crypto_aead_aes256gcm_is_available() ? 1 : 0;
		atomic_store(&aes_state, v);
	}
	return v == 1;
}

void wire_aes_off(void)
{
	atomic_store(&aes_state, 0);
}

static int dir_setup(struct wire_dir *d, const uint8_t proof[WEFT_KEY_LEN],
		     const struct auth_bind *b, const char *tag, bool aes)
{
	auth_mac(proof, tag, b, d->key);
	d->ctr = 0;
	if (!aes)
		return 0;
	d->gcm = EVP_CIPHER_CTX_new();
	if (!d->gcm || EVP_EncryptInit_ex(d->gcm, EVP_aes_256_gcm(), NULL, d->key, NULL) != 1)
		return -ENOMEM;
	return 0;
}

int wire_setup(struct wire *w, const uint8_t proof[WEFT_KEY_LEN], const struct auth_bind *b,
	       bool server, uint8_t level, bool aes)
{
	w->aes = aes;
	if (dir_setup(server ? &w->rx : &w->tx, proof, b, "weft-wire-c2s", aes) ||
	    dir_setup(server ? &w->tx : &w->rx, proof, b, "weft-wire-s2c", aes)) {
		wire_clear(w);
		return -ENOMEM;
	}
	w->level = level;
	return 0;
}

void wire_clear(struct wire *w)
{
	EVP_CIPHER_CTX_free(w->tx.gcm);
	EVP_CIPHER_CTX_free(w->rx.gcm);
	sodium_memzero(w, sizeof(*w));
}

/* The nonce of counter ctr: 8 bytes little-endian, 4 zero bytes. */
static void nonce_of(uint64_t ctr, uint8_t n[12])
{
	for (int i = 0; i < 8; i++)
		n[i] = (uint8_t)(ctr >> (8 * i));
	memset(n + 8, 0, 4);
}

/* The integrity tag of frame ctr over the iovecs. */
static void mac_iov(struct wire_dir *d, bool aes, uint64_t ctr, const struct iovec *v, int n,
		    uint8_t tag[WIRE_TAG_LEN])
{
	uint8_t nonce[12];
	nonce_of(ctr, nonce);
	if (aes) { /* GMAC: AES-256-GCM of nothing, everything as additional data */
		int outl;
		EVP_EncryptInit_ex(d->gcm, NULL, NULL, NULL, nonce);
		for (int i = 0; i < n; i++)
			if (v[i].iov_len)
				EVP_EncryptUpdate(d->gcm, NULL, &outl, v[i].iov_base, (int)v[i].iov_len);
		uint8_t none[16];
		EVP_EncryptFinal_ex(d->gcm, none, &outl);
		EVP_CIPHER_CTX_ctrl(d->gcm, EVP_CTRL_GCM_GET_TAG, WIRE_TAG_LEN, tag);
		return;
	}
	uint8_t otk[32];
	crypto_onetimeauth_poly1305_state st;
	crypto_stream_chacha20_ietf(otk, sizeof(otk), nonce, d->key);
	crypto_onetimeauth_poly1305_init(&st, otk);
	for (int i = 0; i < n; i++)
		crypto_onetimeauth_poly1305_update(&st, v[i].iov_base, v[i].iov_len);
	crypto_onetimeauth_poly1305_final(&st, tag);
	sodium_memzero(otk, sizeof(otk));
}

void wire_mac(struct wire *w, const struct iovec *v, int n, uint8_t tag[WIRE_TAG_LEN])
{
	mac_iov(&w->tx, w->aes, w->tx.ctr++, v, n, tag);
}

void wire_seal(struct wire *w, const uint8_t *hdr, size_t hlen, const struct iovec *v, int n,
	       uint8_t *dst, uint8_t tag[WIRE_TAG_LEN])
{
	struct wire_dir *d = &w->tx;
	uint8_t nonce[12];
	size_t off = 0;
	nonce_of(d->ctr++, nonce);
	if (w->aes) { /* encrypts while it copies */
		int outl;
		EVP_EncryptInit_ex(d->gcm, NULL, NULL, NULL, nonce);
		EVP_EncryptUpdate(d->gcm, NULL, &outl, hdr, (int)hlen);
		for (int i = 0; i < n; i++) {
			if (!v[i].iov_len)
				continue;
			EVP_EncryptUpdate(d->gcm, dst + off, &outl, v[i].iov_base, (int)v[i].iov_len);
			off += v[i].iov_len;
		}
		EVP_EncryptFinal_ex(d->gcm, dst + off, &outl);
		EVP_CIPHER_CTX_ctrl(d->gcm, EVP_CTRL_GCM_GET_TAG, WIRE_TAG_LEN, tag);
		return;
	}
	for (int i = 0; i < n; i++) {
		memcpy(dst + off, v[i].iov_base, v[i].iov_len);
		off += v[i].iov_len;
	}
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(dst, tag, NULL, dst, off, hdr, hlen, NULL,
							   nonce, d->key);
}

int wire_open(struct wire *w, const uint8_t *hdr, size_t hlen, uint8_t *body, size_t len,
	      const uint8_t tag[WIRE_TAG_LEN])
{
	struct wire_dir *d = &w->rx;
	uint64_t ctr = d->ctr++;
	if (w->level == WIRE_INTEGRITY) {
		uint8_t want[WIRE_TAG_LEN];
		struct iovec v[2] = {{(void *)hdr, hlen}, {body, len}};
		mac_iov(d, w->aes, ctr, v, 2, want);
		return crypto_verify_16(want, tag) == 0 ? 0 : -1;
	}
	uint8_t nonce[12];
	nonce_of(ctr, nonce);
	if (w->aes) {
		int outl;
		uint8_t t[WIRE_TAG_LEN];
		memcpy(t, tag, sizeof(t));
		if (EVP_DecryptInit_ex(d->gcm, NULL, NULL, NULL, nonce) != 1 ||
		    EVP_DecryptUpdate(d->gcm, NULL, &outl, hdr, (int)hlen) != 1 ||
		    (len && EVP_DecryptUpdate(d->gcm, body, &outl, body, (int)len) != 1) ||
		    EVP_CIPHER_CTX_ctrl(d->gcm, EVP_CTRL_GCM_SET_TAG, WIRE_TAG_LEN, t) != 1)
			return -1;
		return EVP_DecryptFinal_ex(d->gcm, body + len, &outl) > 0 ? 0 : -1;
	}
	return crypto_aead_chacha20poly1305_ietf_decrypt_detached(body, NULL, body, len, tag, hdr,
								  hlen, nonce, d->key) == 0 ? 0 : -1;
}
