/* The "weft.layout" extended attribute's text (layout_xattr.h). */
#include "mount/layout_xattr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t layout_xattr_format(const struct weft_layout *l, bool dir, bool is_default, char *buf,
			   size_t cap)
{
	int n;
	if (dir)
		n = snprintf(buf, cap, "stripe_unit=%u stripe_count=%u replicas=%u default=%d",
			     l->stripe_unit, l->stripe_count, l->replicas, is_default ? 1 : 0);
	else
		n = snprintf(buf, cap,
			     "stripe_unit=%u stripe_count=%u replicas=%u first_chain=%u chain_count=%u "
			     "generation=%u", l->stripe_unit, l->stripe_count, l->replicas,
			     l->first_chain, l->chain_count, l->gen);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

int layout_xattr_parse(const char *text, size_t n, struct weft_layout *l, bool *is_default)
{
	char buf[256];
	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, text, n);
	buf[n] = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq || eq[1] == 0)
			return -EINVAL;
		*eq = 0;
		char *end;
		unsigned long v = strtoul(eq + 1, &end, 10);
		if (*end || v > UINT32_MAX)
			return -EINVAL;
		if (strcmp(tok, "stripe_unit") == 0)
			l->stripe_unit = (uint32_t)v;
		else if (strcmp(tok, "stripe_count") == 0)
			l->stripe_count = (uint32_t)v;
		else if (strcmp(tok, "replicas") == 0 && v <= 255)
			l->replicas = (uint8_t)v;
		else if (strcmp(tok, "first_chain") == 0)
			l->first_chain = (uint32_t)v;
		else if (strcmp(tok, "chain_count") == 0)
			l->chain_count = (uint32_t)v;
		else if (strcmp(tok, "generation") == 0)
			l->gen = (uint32_t)v;
		else if (strcmp(tok, "default") == 0 && is_default)
			*is_default = v != 0;
		else if (strcmp(tok, "default") != 0)
			return -EINVAL;
	}
	return 0;
}
