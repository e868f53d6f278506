/* The layout of a file or a directory's default as the extended attribute "weft.layout"
 * of the mount, as Lustre's lustre.lov: `weft getstripe` and `weft setstripe` read and
 * write it through the mount with the caller's own credentials, so users need no key.
 *
 * Text, one line: "stripe_unit=N stripe_count=N replicas=N" and, reading a file,
 * " first_chain=N chain_count=N generation=N"; reading a directory, " default=0|1"
 * (1: it inherits the file system's). Writing takes any of stripe_unit, stripe_count and
 * replicas; the others keep their value. */
#ifndef WEFT_MOUNT_LAYOUT_XATTR_H
#define WEFT_MOUNT_LAYOUT_XATTR_H

#include <stdbool.h>
#include <stddef.h>

#include "weft/types.h"

#define WEFT_LAYOUT_XATTR "weft.layout"

/* Writes the text into buf (cap bytes, NUL-terminated); returns its length. */
size_t layout_xattr_format(const struct weft_layout *l, bool dir, bool is_default, char *buf,
			   size_t cap);
/* Applies the text (n bytes) to *l: 0, or -EINVAL for an unknown key or a bad number.
 * *is_default is set when the text says default=1 (reading); may be NULL. */
int layout_xattr_parse(const char *text, size_t n, struct weft_layout *l, bool *is_default);

#endif
