// SPDX-License-Identifier: GPL-2.0
/*
 * Writeback rate controller.  See ratectl.h.
 */
#include "ratectl.h"

/* Upper bound of "unlimited", so that sums cannot overflow. */
#define BKC_RATE_INF	(1ULL << 40)

void bkc_ratectl_init(struct bkc_ratectl *c, u64 min_rate, u64 max_rate)
{
	memset(c, 0, sizeof(*c));
	c->p_inv = 40;
	c->i_inv = 10000;
	c->min_rate = min_rate;
	c->max_rate = max_rate;
	c->rate = min_rate;
}

static s64 sdiv(s64 a, u64 b)
{
	if (a >= 0)
		return (s64)bkc_div64((u64)a, b);
	return -(s64)bkc_div64((u64)-a, b);
}

static s64 sclamp(s64 v, s64 lo, s64 hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * New rate after @dt_ms milliseconds with @dirty sectors dirty and a
 * target of @target sectors.  Returns sectors per second.
 */
u64 bkc_ratectl_update(struct bkc_ratectl *c, u64 dirty, u64 target,
		       u64 dt_ms, bool idle)
{
	s64 hi = c->max_rate ? (s64)min_t(u64, c->max_rate, BKC_RATE_INF) :
		(s64)BKC_RATE_INF;
	s64 lo = (s64)min_t(u64, c->min_rate, (u64)hi);
	s64 err, step, out;

	err = (s64)min_t(u64, dirty, BKC_RATE_INF) -
		(s64)min_t(u64, target, BKC_RATE_INF);
	c->error = err;
	c->proportional = sdiv(err, c->p_inv ?: 1);
	step = sdiv(sdiv(err * (s64)min_t(u64, dt_ms, 60000), 1000),
		    c->i_inv ?: 1);
	out = c->proportional + c->integral;
	/* Integrate only while that moves the output back into range. */
	if ((out < hi || step < 0) && (out > lo || step > 0))
		c->integral = sclamp(c->integral + step, -hi, hi);
	/* Nothing to write back: forget the history. */
	if (!dirty)
		c->integral = 0;
	out = sclamp(c->proportional + c->integral, lo, hi);
	if (idle && dirty)
		out = hi;
	c->rate = (u64)out;
	return c->rate;
}
