/* POSIX permission checks. */
#include "meta/perm.h"

#include <errno.h>
#include <sys/stat.h>

#include "proto/attrs.h"

void meta_perm_squash(struct weft_cred *c)
{
	if (c->uid == 0)
		c->uid = META_NOBODY;
	if (c->gid == 0)
		c->gid = META_NOBODY;
	for (uint32_t i = 0; i < c->ngroups && i < WEFT_GROUPS_MAX; i++)
		if (c->groups[i] == 0)
			c->groups[i] = META_NOBODY;
}

bool meta_perm_in_group(const struct weft_cred *c, uint32_t gid)
{
	return proto_cred_in_group(c, gid);
}

int meta_perm_check(const struct weft_cred *c, const struct weft_attr *a, uint32_t mask)
{
	mask &= META_MAY_READ | META_MAY_WRITE | META_MAY_EXEC;
	if (c->uid == 0) {
		if (!(mask & META_MAY_EXEC) || S_ISDIR(a->mode) || (a->mode & 0111))
			return 0;
		return -EACCES;
	}
	uint32_t bits;
	if (c->uid == a->uid)
		bits = (a->mode >> 6) & 7;
	else if (meta_perm_in_group(c, a->gid))
		bits = (a->mode >> 3) & 7;
	else if (c->more_groups)
		bits = (a->mode >> 3) & a->mode & 7; /* group or other: fail closed */
	else
		bits = a->mode & 7;
	return (bits & mask) == mask ? 0 : -EACCES;
}

bool meta_perm_owner(const struct weft_cred *c, const struct weft_attr *a)
{
	return c->uid == 0 || c->uid == a->uid;
}

int meta_perm_sticky(const struct weft_cred *c, const struct weft_attr *dir,
		     const struct weft_attr *victim)
{
	if (!(dir->mode & S_ISVTX) || c->uid == 0 || c->uid == dir->uid || c->uid == victim->uid)
		return 0;
	return -EPERM;
}

void meta_perm_new_owner(const struct weft_cred *c, const struct weft_attr *dir,
			 uint32_t *mode, uint32_t *uid, uint32_t *gid)
{
	*uid = c->uid;
	if (dir->mode & S_ISGID) {
		*gid = dir->gid;
		if (S_ISDIR(*mode))
			*mode |= S_ISGID;
	} else {
		*gid = c->gid;
	}
	if (!S_ISDIR(*mode) && (*mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && c->uid != 0 && !meta_perm_in_group(c, *gid))
		*mode &= ~(uint32_t)S_ISGID;
}
