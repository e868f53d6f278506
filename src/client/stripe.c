/* Striping math. */
#include "client/stripe.h"

uint32_t stripe_chain(const struct weft_layout *l, uint32_t s)
{
	return (uint32_t)(((uint64_t)l->first_chain + s) % (l->chain_count ? l->chain_count : 1));
}

uint32_t stripe_object(const struct weft_layout *l, uint32_t s)
{
	return s + l->gen * WEFT_LAYOUT_GEN_STRIDE;
}

uint32_t stripe_map(const struct weft_layout *l, uint64_t off, uint64_t len, struct stripe_piece *p)
{
	uint64_t su = l->stripe_unit, sc = l->stripe_count ? l->stripe_count : 1;
	uint64_t b = off / su, within = off % su;
	uint64_t n = su - within;
	if (n > len)
		n = len;
	p->file_off = off;
	p->block = b;
	p->stripe = (uint32_t)(b % sc);
	p->obj_off = (b / sc) * su + within;
	p->len = (uint32_t)n;
	p->chain = stripe_chain(l, p->stripe);
	return (uint32_t)n;
}

uint64_t stripe_object_len(const struct weft_layout *l, uint32_t s, uint64_t size)
{
	uint64_t su = l->stripe_unit, sc = l->stripe_count ? l->stripe_count : 1;
	uint64_t full = size / su, rem = size % su;
	uint64_t count = full / sc + (s < full % sc ? 1 : 0);
	uint64_t len = count * su;
	if (rem && full % sc == s)
		len += rem;
	return len;
}
