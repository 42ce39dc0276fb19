// SPDX-License-Identifier: GPL-2.0
/*
 * Exponential decay in integers.  See decay.h.
 *
 * 2^-x for x in [0, 1) comes from a table of 2^(-i/16) in 1/65536,
 * interpolated linearly between entries (error below 0.1 %); whole
 * half-lives are shifts.
 */
#include "decay.h"

/* 65536 * 2^(-i/16), i = 0..16 */
static const u32 bkc_exp2_tab[17] = {
	65536, 62757, 60096, 57548, 55109, 52773, 50535, 48393,
	46341, 44376, 42495, 40693, 38968, 37316, 35734, 34219,
	32768,
};

u64 bkc_decay(u64 v, u64 elapsed, u64 halflife)
{
	u64 whole, frac, pos, idx, rem, f;

	if (!halflife || !elapsed || !v)
		return v;
	whole = bkc_div64(elapsed, halflife);
	if (whole >= 64)
		return 0;
	v >>= whole;
	frac = elapsed - whole * halflife;
	if (!frac || !v)
		return v;
	/* position in the table in 1/65536 of a step: frac / halflife * 16 */
	if (frac > (~0ULL >> 21))
		pos = bkc_div64(frac, bkc_div64(halflife, 16ULL << 16) ?: 1);
	else
		pos = bkc_div64(frac << 20, halflife);
	idx = pos >> 16;
	rem = pos & 0xffff;
	if (idx >= 16)
		return v >> 1;
	f = bkc_exp2_tab[idx] -
		(((u64)(bkc_exp2_tab[idx] - bkc_exp2_tab[idx + 1]) * rem) >> 16);
	/* v * f / 65536 without overflow for any v */
	return (v >> 16) * f + (((v & 0xffff) * f) >> 16);
}

u64 bkc_decount_read(const struct bkc_decount *d, u64 now, u64 halflife)
{
	return bkc_decay(d->v, now > d->t ? now - d->t : 0, halflife);
}

u64 bkc_decount_add(struct bkc_decount *d, u64 now, u64 halflife)
{
	u64 v = bkc_decount_read(d, now, halflife);

	d->v = v + BKC_DECAY_ONE < v ? ~0ULL : v + BKC_DECAY_ONE;
	if (now > d->t)
		d->t = now;
	return d->v;
}
