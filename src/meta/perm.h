/* POSIX permission rules of meta: mode bits with supplementary groups, root, sticky
 * directories, setgid inheritance, root_squash.
 *
 * Threads: pure functions on their arguments; any thread. */
#ifndef WEFT_META_PERM_H
#define WEFT_META_PERM_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/types.h"

#define META_NOBODY 65534u

/* Access mask bits, as access(2). */
#define META_MAY_READ  4u
#define META_MAY_WRITE 2u
#define META_MAY_EXEC  1u

/* Maps uid 0 and gid 0 (also in groups) to META_NOBODY, as root_squash. The caller
 * applies it to each request's cred when the superblock has META_OPT_ROOT_SQUASH. */
void meta_perm_squash(struct weft_cred *cred);

/* True when cred's gid or one of its supplementary groups is gid. */
bool meta_perm_in_group(const struct weft_cred *cred, uint32_t gid);

/* Checks mask (META_MAY_*) against an inode's mode/uid/gid: the owner class, else the
 * group class (gid or supplementary), else other; a cred with more_groups that is not
 * found in the file's group gets group & other bits (it may be in the group, unseen).
 * uid 0 may read and write anything and
 * execute/search a directory, or a non-directory with at least one x bit.
 * Returns 0 or -EACCES. */
int meta_perm_check(const struct weft_cred *cred, const struct weft_attr *a, uint32_t mask);

/* True when cred owns the inode or is root (chmod, utimes to explicit times, setstripe). */
bool meta_perm_owner(const struct weft_cred *cred, const struct weft_attr *a);

/* Sticky-directory rule for removing/renaming victim from dir: allowed when dir has no
 * S_ISVTX, or cred is root, owns dir, or owns victim. Returns 0 or -EPERM. */
int meta_perm_sticky(const struct weft_cred *cred, const struct weft_attr *dir,
		     const struct weft_attr *victim);

/* Owner and mode of a new inode in dir: uid = cred uid; gid = dir gid if dir is setgid,
 * else cred gid. *mode (type + bits, umask already applied) gains S_ISGID for a new
 * directory in a setgid dir; a new group-executable non-directory loses S_ISGID when
 * cred is not root and not in the resulting group (as Linux mode_strip_sgid). */
void meta_perm_new_owner(const struct weft_cred *cred, const struct weft_attr *dir,
			 uint32_t *mode, uint32_t *uid, uint32_t *gid);

#endif
