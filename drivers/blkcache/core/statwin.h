/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Decaying windows of request counters, as bcache's stats_five_minute,
 * stats_hour and stats_day: what happened "in the last window", for
 * counters that only grow (the glue's per-cpu totals).
 *
 * A window keeps, per counter, an exponentially decayed sum of the events
 * folded into it, with a time constant of the window's length: under a
 * steady rate of r events per second it settles at r * length, and events
 * older than a few lengths are forgotten.  The glue folds the totals in
 * at a short, regular interval (bkc_statwin_fold); a read adds what came
 * since the last fold undecayed, so a count is exact right after a burst
 * and off by at most the fold interval over the window's length.
 *
 * Time is in milliseconds.  Decide-only: no locks, no sleeping; the caller
 * serializes fold, read and reset of one window.
 */
#ifndef _BKC_STATWIN_H
#define _BKC_STATWIN_H

#include "bkc_port.h"

/* The counters a window follows, in this order in every array. */
enum bkc_stat {
	BKC_STAT_HITS,			/* reads served wholly from the cache */
	BKC_STAT_MISSES,		/* reads not, or not wholly */
	BKC_STAT_BYPASS_HITS,		/* bypassed reads the cache held */
	BKC_STAT_BYPASS_MISSES,		/* bypassed reads it did not */
	BKC_STAT_MISS_COLLISIONS,	/* promotions a racing write undid */
	BKC_STAT_BYPASSED,		/* sectors of bypassed I/O */
	BKC_STAT_WRITE_HITS,		/* cached writes over cached data */
	BKC_STAT_WRITE_MISSES,		/* cached writes over uncached data */
	BKC_STAT_PROMOTIONS,		/* read misses copied into the cache */
	BKC_STAT_READAROUNDS,		/* 512 KiB around such a miss, too */
	BKC_STAT_OVERWRITES,		/* write hits overwriting dirty data in place */
	BKC_STAT_NR,
};

struct bkc_statwin {
	u64	v[BKC_STAT_NR];		/* decayed sums, fixed point, as of @t */
	u64	base[BKC_STAT_NR];	/* the totals folded in so far */
	u64	t;			/* time of the last fold */
	u64	len;			/* window length */
};

/* An empty window of @len ms starting at @now over @totals. */
void bkc_statwin_init(struct bkc_statwin *w, u64 len, const u64 *totals,
		      u64 now);
/* Fold in what @totals gained since the last fold, at time @now. */
void bkc_statwin_fold(struct bkc_statwin *w, const u64 *totals, u64 now);
/* The window's counts at @now into @out; changes nothing. */
void bkc_statwin_read(const struct bkc_statwin *w, const u64 *totals, u64 now,
		      u64 *out);
/* Percent of @hits in @hits + @misses, 0 if neither. */
u32 bkc_stat_ratio(u64 hits, u64 misses);

#endif /* _BKC_STATWIN_H */
