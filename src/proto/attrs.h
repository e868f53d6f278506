/* Rules on the wire's credentials and attributes that meta applies and libweft predicts
 * (a mount that buffers a chmod answers the kernel with what meta will make of it): one
 * copy of each, so the two cannot drift apart. */
#ifndef WEFT_PROTO_ATTRS_H
#define WEFT_PROTO_ATTRS_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/types.h"

/* True when cred's gid or one of its supplementary groups is gid. */
bool proto_cred_in_group(const struct weft_cred *cred, uint32_t gid);
/* A change of owner or data by someone else clears S_ISUID, and S_ISGID when S_IXGRP is
 * set (Linux should_remove_suid). */
void proto_attr_kill_suid(struct weft_attr *a);

#endif
