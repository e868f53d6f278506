/* Cluster key files and handshake proofs (libsodium HMAC-SHA256). */
#include "net/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/proto.h"

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
	} else if (st.st_size != WEFT_KEY_LEN) {
		rc = -EINVAL;
		snprintf(err, errlen, "cluster key %s: %lld bytes, expected %d", path,
			 (long long)st.st_size, WEFT_KEY_LEN);
	} else if (read(fd, key->k, WEFT_KEY_LEN) != WEFT_KEY_LEN) {
		rc = -EIO;
		snprintf(err, errlen, "cluster key %s: short read", path);
	}
	close(fd);
	return rc;
}

void auth_mac(const struct weft_key *key, const char *side, const uint8_t *nonce_c,
	      const uint8_t *nonce_s, uint16_t version, uint8_t out[32])
{
	crypto_auth_hmacsha256_state st;
	uint8_t v[2] = {(uint8_t)version, (uint8_t)(version >> 8)};
	sodium_once();
	crypto_auth_hmacsha256_init(&st, key->k, WEFT_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)side, strlen(side) + 1);
	crypto_auth_hmacsha256_update(&st, nonce_c, WEFT_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, nonce_s, WEFT_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, v, 2);
	crypto_auth_hmacsha256_final(&st, out);
}

int auth_mac_verify(const uint8_t a[32], const uint8_t b[32])
{
	return crypto_verify_32(a, b);
}
