/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writeback rate controller, decide-only: a PI controller on the amount
 * of dirty data against a target.
 *
 * error = dirty - target (sectors).  The proportional term writes back
 * 1/p_inv of the error per second; the integral term accumulates
 * error * seconds / i_inv and only moves while the output is not clamped
 * (no wind-up).  rate = clamp(P + I, min_rate, max_rate) sectors per
 * second.  An idle backing device gets max_rate.
 */
#ifndef _BKC_RATECTL_H
#define _BKC_RATECTL_H

#include "bkc_port.h"

struct bkc_ratectl {
	/* parameters */
	u64	p_inv;
	u64	i_inv;
	u64	min_rate;	/* sectors/s */
	u64	max_rate;	/* sectors/s; 0: unlimited */

	/* state and last decision, for writeback_rate_debug */
	s64	integral;	/* sectors/s */
	s64	proportional;	/* sectors/s */
	s64	error;		/* sectors */
	u64	rate;		/* sectors/s */
};

void bkc_ratectl_init(struct bkc_ratectl *c, u64 min_rate, u64 max_rate);
u64 bkc_ratectl_update(struct bkc_ratectl *c, u64 dirty, u64 target,
		       u64 dt_ms, bool idle);

#endif /* _BKC_RATECTL_H */
