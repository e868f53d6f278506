/* Cluster key files and handshake proofs (libsodium HMAC-SHA256). */
#include "net/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/proto.h"
#include "weft/err.h"

static void sodium_once(void)
{
	static int done;
	if (!done) {
		if (sodium_init() < 0)
			abort();
		done = 1;
	}
}

void auth_random(void *p, size_t n)
{
	sodium_once();
	randombytes_buf(p, n);
}

int auth_keygen(const char *path, int force)
{
	uint8_t k[WEFT_KEY_LEN];
	auth_random(k, sizeof(k));
	/* never through a symlink: --force must not truncate whatever a link points to */
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
			    (force ? O_TRUNC : O_EXCL), 0600);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	int err = 0;
	if (fchmod(fd, 0600) < 0 || write(fd, k, sizeof(k)) != (ssize_t)sizeof(k) || fsync(fd) < 0)
		err = errno ? -errno : -EIO;
	if (close(fd) < 0 && !err)
		err = -errno;
	sodium_memzero(k, sizeof(k));
	return err;
}


static const char *const role_names[] = {
	[WEFT_ROLE_CLIENT] = "client", [WEFT_ROLE_STORE] = "store",
	[WEFT_ROLE_ADMIN] = "admin", [WEFT_ROLE_META] = "meta",
};

const char *auth_role_name(uint8_t role)
{
	return role < sizeof(role_names) / sizeof(role_names[0]) ? role_names[role] : NULL;
}

uint8_t auth_role_parse(const char *s)
{
	for (uint8_t r = 1; r < sizeof(role_names) / sizeof(role_names[0]); r++)
		if (role_names[r] && strcmp(s, role_names[r]) == 0)
			return r;
	return 0;
}

/* HMAC(key, tag | 0 | role | name | 0 | serial) */
static void derive(const uint8_t key[WEFT_KEY_LEN], const char *tag, uint8_t role,
		   const char *name, uint32_t serial, uint8_t out[WEFT_KEY_LEN])
{
	crypto_auth_hmacsha256_state st;
	uint8_t sv[4] = {(uint8_t)serial, (uint8_t)(serial >> 8), (uint8_t)(serial >> 16),
			 (uint8_t)(serial >> 24)};
	sodium_once();
	crypto_auth_hmacsha256_init(&st, key, WEFT_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)tag, strlen(tag) + 1);
	crypto_auth_hmacsha256_update(&st, &role, 1);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)name, strlen(name) + 1);
	crypto_auth_hmacsha256_update(&st, sv, 4);
	crypto_auth_hmacsha256_final(&st, out);
}

static void service_key(const uint8_t secret[WEFT_KEY_LEN], uint8_t out[WEFT_KEY_LEN])
{
	derive(secret, "weft-service-key", 0, "", 0, out);
}

void auth_meta_key(const struct weft_key *secret, uint8_t role, const char *name,
		   uint32_t serial, uint8_t out[WEFT_KEY_LEN])
{
	derive(secret->k, "weft-node-meta", role, name, serial, out);
}

void auth_store_key(const uint8_t svc[WEFT_KEY_LEN], uint8_t role, const char *name,
		    uint32_t serial, uint8_t out[WEFT_KEY_LEN])
{
	derive(svc, "weft-node-store", role, name, serial, out);
}

void auth_cred_derive(const struct weft_key *secret, uint8_t role, const char *name,
		      uint32_t serial, struct weft_key *out)
{
	uint8_t svc[WEFT_KEY_LEN];
	memset(out, 0, sizeof(*out));
	service_key(secret->k, svc);
	auth_meta_key(secret, role, name, serial, out->k);
	auth_store_key(svc, role, name, serial, out->store_k);
	if (role == WEFT_ROLE_STORE) {
		memcpy(out->svc, svc, WEFT_KEY_LEN);
		out->has_svc = true;
	}
	out->serial = serial;
	out->role = role;
	snprintf(out->name, sizeof(out->name), "%s", name);
	sodium_memzero(svc, sizeof(svc));
}

int auth_client_key(const struct weft_key *key, uint8_t server_role, uint8_t role,
		    const char *name, uint8_t out[WEFT_KEY_LEN])
{
	if (server_role == WEFT_ROLE_META) {
		memcpy(out, key->k, WEFT_KEY_LEN);
		return 0;
	}
	if (server_role != WEFT_ROLE_STORE)
		return -WEFT_EAUTH;
	if (key->serial)
		memcpy(out, key->store_k, WEFT_KEY_LEN);
	else /* a secret holder speaks as any role and name */
		auth_store_key(key->svc, role, name, 0, out);
	return 0;
}

void auth_wrap(const uint8_t proof[WEFT_KEY_LEN], const char *purpose, const uint8_t *nonce_c,
	       const uint8_t *nonce_s, uint8_t inout[WEFT_KEY_LEN])
{
	crypto_auth_hmacsha256_state st;
	uint8_t pad[32];
	sodium_once();
	crypto_auth_hmacsha256_init(&st, proof, WEFT_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)"weft-wrap", 10);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)purpose, strlen(purpose) + 1);
	crypto_auth_hmacsha256_update(&st, nonce_c, WEFT_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, nonce_s, WEFT_NONCE_LEN);
	crypto_auth_hmacsha256_final(&st, pad);
	for (int i = 0; i < WEFT_KEY_LEN; i++)
		inout[i] ^= pad[i];
	sodium_memzero(pad, sizeof(pad));
}

/* ---- files ---- */

#define CRED_MAGIC "weft-credential 1"
#define CRED_FILE_MAX 4096

static void hex_put(char *dst, const uint8_t *k)
{
	sodium_bin2hex(dst, 2 * WEFT_KEY_LEN + 1, k, WEFT_KEY_LEN);
}

static int hex_get(const char *src, uint8_t *k)
{
	size_t n = 0;
	if (strlen(src) != 2 * WEFT_KEY_LEN ||
	    sodium_hex2bin(k, WEFT_KEY_LEN, src, strlen(src), NULL, &n, NULL) < 0 ||
	    n != WEFT_KEY_LEN)
		return -EINVAL;
	return 0;
}

int auth_cred_write(const char *path, const struct weft_key *cred, int force)
{
	char text[1024], mk[65], sk[65], vk[65];
	hex_put(mk, cred->k);
	hex_put(sk, cred->store_k);
	int n = snprintf(text, sizeof(text),
			 CRED_MAGIC "\n# a weft node credential: keep it mode 0600, readable by root only\n"
			 "name %s\nrole %s\nserial %u\nmeta-key %s\nstore-key %s\n",
			 cred->name, auth_role_name(cred->role), cred->serial, mk, sk);
	if (cred->has_svc) {
		hex_put(vk, cred->svc);
		n += snprintf(text + n, sizeof(text) - n, "service-key %s\n", vk);
	}
	int err = 0;
	if (strcmp(path, "-") == 0) {
		if (fwrite(text, 1, n, stdout) != (size_t)n || fflush(stdout))
			err = -EIO;
	} else {
		int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
				    (force ? O_TRUNC : O_EXCL), 0600);
		if (fd < 0)
			return -errno;
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
			err = -EINVAL;
		else if (fchmod(fd, 0600) < 0 || write(fd, text, n) != n || fsync(fd) < 0)
			err = errno ? -errno : -EIO;
		if (close(fd) < 0 && !err)
			err = -errno;
	}
	sodium_memzero(text, sizeof(text));
	return err;
}

/* Parses a credential's text (NUL-terminated) into key. */
static int cred_parse(char *text, struct weft_key *key, char *why, size_t whylen)
{
	bool have_meta = false, have_store = false;
	memset(key, 0, sizeof(*key));
	char *save = NULL;
	char *line = strtok_r(text, "\n", &save);
	if (!line || strcmp(line, CRED_MAGIC) != 0) {
		snprintf(why, whylen, "neither a 32-byte cluster key nor a node credential");
		return -EINVAL;
	}
	while ((line = strtok_r(NULL, "\n", &save))) {
		if (line[0] == '#' || line[0] == 0)
			continue;
		char *val = strchr(line, ' ');
		if (!val) {
			snprintf(why, whylen, "line \"%.40s\" has no value", line);
			return -EINVAL;
		}
		*val++ = 0;
		int bad = 0;
		if (strcmp(line, "name") == 0) {
			bad = strlen(val) == 0 || strlen(val) > WEFT_NODE_MAX;
			snprintf(key->name, sizeof(key->name), "%s", val);
		} else if (strcmp(line, "role") == 0) {
			key->role = auth_role_parse(val);
			bad = key->role == 0 || key->role == WEFT_ROLE_META;
		} else if (strcmp(line, "serial") == 0) {
			char *end;
			unsigned long v = strtoul(val, &end, 10);
			bad = *end || v == 0 || v > UINT32_MAX;
			key->serial = (uint32_t)v;
		} else if (strcmp(line, "meta-key") == 0) {
			bad = hex_get(val, key->k);
			have_meta = true;
		} else if (strcmp(line, "store-key") == 0) {
			bad = hex_get(val, key->store_k);
			have_store = true;
		} else if (strcmp(line, "service-key") == 0) {
			bad = hex_get(val, key->svc);
			key->has_svc = true;
		}
		if (bad) {
			snprintf(why, whylen, "bad %s", line);
			return -EINVAL;
		}
	}
	if (!key->name[0] || !key->role || !key->serial || !have_meta || !have_store) {
		snprintf(why, whylen, "a node credential needs name, role, serial, meta-key and store-key");
		return -EINVAL;
	}
	return 0;
}

int auth_key_load(const char *path, struct weft_key *key, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cluster key %s: %s", path,
			 e == ELOOP ? "is a symbolic link (give the file itself)" : strerror(e));
		return -e;
	}
	struct stat st;
	int rc = 0;
	char text[CRED_FILE_MAX + 1], why[128];
	ssize_t n = 0;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cluster key %s: %s", path, strerror(-rc));
	} else if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		snprintf(err, errlen, "cluster key %s is not a regular file", path);
	} else if (st.st_uid != geteuid() && st.st_uid != 0) {
		rc = -EPERM;
		snprintf(err, errlen, "cluster key %s is owned by uid %u, not by this user (%u) or root",
			 path, (unsigned)st.st_uid, (unsigned)geteuid());
	} else if (st.st_mode & 077) {
		rc = -EPERM;
		snprintf(err, errlen,
			 "cluster key %s is accessible by group or others (mode %04o); run chmod 600 %s",
			 path, (unsigned)(st.st_mode & 07777), path);
	} else if (st.st_size > CRED_FILE_MAX ||
		   (n = read(fd, text, CRED_FILE_MAX)) != st.st_size) {
		rc = -EINVAL;
		snprintf(err, errlen, "cluster key %s: %lld bytes, expected %d (a cluster key) or a node credential",
			 path, (long long)st.st_size, WEFT_KEY_LEN);
	} else if (n == WEFT_KEY_LEN && memcmp(text, CRED_MAGIC, 8) != 0) {
		memset(key, 0, sizeof(*key));
		memcpy(key->k, text, WEFT_KEY_LEN);
		service_key(key->k, key->svc);
		key->has_svc = true;
	} else {
		text[n] = 0;
		rc = cred_parse(text, key, why, sizeof(why));
		if (rc)
			snprintf(err, errlen, "cluster key %s: %s", path, why);
	}
	sodium_memzero(text, sizeof(text));
	close(fd);
	return rc;
}

void auth_mac(const uint8_t key[WEFT_KEY_LEN], const char *side, const struct auth_bind *b,
	      uint8_t out[32])
{
	crypto_auth_hmacsha256_state st;
	uint8_t v[10] = {(uint8_t)b->version, (uint8_t)(b->version >> 8), b->client_role,
			 b->server_role, (uint8_t)b->serial, (uint8_t)(b->serial >> 8),
			 (uint8_t)(b->serial >> 16), (uint8_t)(b->serial >> 24), b->wire_c, b->wire_s};
	sodium_once();
	crypto_auth_hmacsha256_init(&st, key, WEFT_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)side, strlen(side) + 1);
	crypto_auth_hmacsha256_update(&st, v, sizeof(v));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)b->client_name, strlen(b->client_name) + 1);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)b->server_name, strlen(b->server_name) + 1);
	crypto_auth_hmacsha256_update(&st, b->nonce_c, WEFT_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, b->nonce_s, WEFT_NONCE_LEN);
	crypto_auth_hmacsha256_final(&st, out);
}

int auth_mac_verify(const uint8_t a[32], const uint8_t b[32])
{
	return crypto_verify_32(a, b);
}

/* ---- capabilities ---- */

uint64_t auth_realtime_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint32_t auth_cap_period(uint64_t realtime_ms)
{
	return (uint32_t)(realtime_ms / WEFT_CAP_PERIOD_MS);
}

void auth_cap_key(const uint8_t svc[WEFT_KEY_LEN], uint32_t period, uint8_t out[WEFT_KEY_LEN])
{
	derive(svc, "weft-cap-key", 0, "", period, out);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* HMAC(key, "weft-cap" | 0 | fields | node | 0), truncated to 16 bytes */
static void cap_mac(const uint8_t key[WEFT_KEY_LEN], const uint8_t fields[32], const char *node,
		    uint8_t out[16])
{
	crypto_auth_hmacsha256_state st;
	uint8_t full[32];
	sodium_once();
	crypto_auth_hmacsha256_init(&st, key, WEFT_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)"weft-cap", 9);
	crypto_auth_hmacsha256_update(&st, fields, 32);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)node, strlen(node) + 1);
	crypto_auth_hmacsha256_final(&st, full);
	memcpy(out, full, 16);
	sodium_memzero(full, sizeof(full));
}

void auth_cap_mint(const uint8_t key[WEFT_KEY_LEN], const struct weft_cap *c, const char *node,
		   uint8_t out[WEFT_CAP_LEN])
{
	memset(out, 0, WEFT_CAP_LEN);
	put64(out, c->ino);
	put64(out + 8, c->session);
	put64(out + 16, c->expiry_ms);
	out[24] = (uint8_t)c->period;
	out[25] = (uint8_t)(c->period >> 8);
	out[26] = (uint8_t)(c->period >> 16);
	out[27] = (uint8_t)(c->period >> 24);
	out[28] = c->rights;
	cap_mac(key, out, node, out + 32);
}

void auth_cap_parse(const uint8_t in[WEFT_CAP_LEN], struct weft_cap *c)
{
	c->ino = get64(in);
	c->session = get64(in + 8);
	c->expiry_ms = get64(in + 16);
	c->period = (uint32_t)in[24] | (uint32_t)in[25] << 8 | (uint32_t)in[26] << 16 |
		    (uint32_t)in[27] << 24;
	c->rights = in[28];
}

bool auth_cap_mac_ok(const uint8_t key[WEFT_KEY_LEN], const uint8_t in[WEFT_CAP_LEN],
		     const char *node)
{
	uint8_t mac[16];
	cap_mac(key, in, node, mac);
	return crypto_verify_16(mac, in + 32) == 0;
}
