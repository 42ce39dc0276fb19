/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Exponential decay with a half-life, decide-only and in integers: the
 * cache set's I/O error count (io_error_limit, io_error_halflife) and any
 * other count that should forget old events.
 *
 * Values are fixed point with BKC_DECAY_SHIFT fractional bits.  Time is
 * in caller units (the kernel uses milliseconds); a half-life of 0 means
 * no decay.
 */
#ifndef _BKC_DECAY_H
#define _BKC_DECAY_H

#include "bkc_port.h"

#define BKC_DECAY_SHIFT		16
#define BKC_DECAY_ONE		(1ULL << BKC_DECAY_SHIFT)

/* @v after @elapsed time units with half-life @halflife (0: none). */
u64 bkc_decay(u64 v, u64 elapsed, u64 halflife);

/* A decaying event count. */
struct bkc_decount {
	u64	v;	/* fixed point, as of @t */
	u64	t;	/* time of the last update */
};

/* Add one event at time @now; returns the decayed count, fixed point. */
u64 bkc_decount_add(struct bkc_decount *d, u64 now, u64 halflife);
/* The decayed count at time @now, fixed point; changes nothing. */
u64 bkc_decount_read(const struct bkc_decount *d, u64 now, u64 halflife);

#endif /* _BKC_DECAY_H */
