/* Rules on credentials and attributes shared by meta and libweft (attrs.h). */
#include "proto/attrs.h"

#include <sys/stat.h>

bool proto_cred_in_group(const struct weft_cred *c, uint32_t gid)
{
	if (c->gid == gid)
		return true;
	for (uint32_t i = 0; i < c->ngroups && i < WEFT_GROUPS_MAX; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

void proto_attr_kill_suid(struct weft_attr *a)
{
	a->mode &= ~(uint32_t)S_ISUID;
	if (a->mode & S_IXGRP)
		a->mode &= ~(uint32_t)S_ISGID;
}
