// SPDX-License-Identifier: GPL-2.0
/*
 * Decaying windows of request counters (statwin.h).
 */
#include "statwin.h"
#include "decay.h"

/* Half-life of a time constant of @len: len * ln 2. */
static u64 halflife(u64 len)
{
	return bkc_div64(len * 693147, 1000000) ?: 1;
}

void bkc_statwin_init(struct bkc_statwin *w, u64 len, const u64 *totals,
		      u64 now)
{
	u32 i;

	for (i = 0; i < BKC_STAT_NR; i++) {
		w->v[i] = 0;
		w->base[i] = totals[i];
	}
	w->t = now;
	w->len = len;
}

/* What total @i gained since the last fold (totals only grow). */
static u64 gained(const struct bkc_statwin *w, const u64 *totals, u32 i)
{
	return totals[i] >= w->base[i] ? totals[i] - w->base[i] : 0;
}

static u64 add_sat(u64 a, u64 b)
{
	return a + b < a ? ~0ULL : a + b;
}

static u64 to_fixed(u64 n)
{
	return n > (~0ULL >> BKC_DECAY_SHIFT) ? ~0ULL : n << BKC_DECAY_SHIFT;
}

void bkc_statwin_fold(struct bkc_statwin *w, const u64 *totals, u64 now)
{
	u64 el = now > w->t ? now - w->t : 0, hl = halflife(w->len);
	u32 i;

	for (i = 0; i < BKC_STAT_NR; i++) {
		w->v[i] = add_sat(bkc_decay(w->v[i], el, hl),
				  to_fixed(gained(w, totals, i)));
		w->base[i] = totals[i];
	}
	if (now > w->t)
		w->t = now;
}

void bkc_statwin_read(const struct bkc_statwin *w, const u64 *totals, u64 now,
		      u64 *out)
{
	u64 el = now > w->t ? now - w->t : 0, hl = halflife(w->len), v;
	u32 i;

	for (i = 0; i < BKC_STAT_NR; i++) {
		v = add_sat(bkc_decay(w->v[i], el, hl),
			    to_fixed(gained(w, totals, i)));
		/* rounded to the nearest event */
		out[i] = (v >> BKC_DECAY_SHIFT) +
			 ((v >> (BKC_DECAY_SHIFT - 1)) & 1);
	}
}

u32 bkc_stat_ratio(u64 hits, u64 misses)
{
	u64 all = hits + misses;

	if (!all || all < hits)
		return 0;
	return (u32)bkc_div64(hits * 100, all);
}
