/* Extended attributes: the "xattrs" table (ino BE64 + name -> value) and the
 * setxattr/getxattr/listxattr/removexattr operations with Linux's rules.
 *
 * Namespaces: "user." (regular files and directories only; read needs r, write needs w
 * permission; a sticky directory's user.* is writable by its owner or root only),
 * "trusted." (root only: others get -EPERM writing, -ENODATA reading, and do not see
 * them listed), "security." (anyone reads, root writes), "system." and anything else:
 * -EOPNOTSUPP (no POSIX ACLs yet). Names are NUL-terminated, 1..WEFT_XATTR_NAME_MAX
 * bytes (else -ERANGE); values up to WEFT_XATTR_SIZE_MAX bytes (else -E2BIG).
 *
 * Threads: as ns.h (ctx on one thread at a time). */
#ifndef WEFT_META_XATTR_H
#define WEFT_META_XATTR_H

#include <stddef.h>
#include <stdint.h>

#include "meta/ns.h"

/* flags: XATTR_CREATE (-EEXIST if present), XATTR_REPLACE (-ENODATA if absent); other
 * bits -EINVAL. Sets the inode's ctime. Errors also: -ESTALE, -EACCES, -EPERM. */
int meta_xattr_set(const struct meta_ctx *c, struct meta_ref ref, const char *name,
		   const void *value, size_t size, uint32_t flags);
/* size 0: *len = value size, nothing copied. Else copies the value into buf and sets
 * *len, or -ERANGE when size < value size. Errors: -ENODATA absent, -EACCES, -ESTALE. */
int meta_xattr_get(const struct meta_ctx *c, struct meta_ref ref, const char *name,
		   void *buf, size_t size, size_t *len);
/* Names visible to cred, each NUL-terminated, concatenated; size semantics as get. */
int meta_xattr_list(const struct meta_ctx *c, struct meta_ref ref, char *buf, size_t size,
		    size_t *len);
/* Errors: -ENODATA absent, -EACCES, -EPERM, -ESTALE. Sets ctime. */
int meta_xattr_remove(const struct meta_ctx *c, struct meta_ref ref, const char *name);

/* Deletes every xattr of ino (inode destruction). */
int meta_xattr_drop_all(struct meta_db *db, MDB_txn *txn, uint64_t ino);

#endif
