/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xorshift64: the pseudo-random numbers of the guest test tools
 * (poison-io, rwcheck).  @s must not be 0.
 */
#ifndef BKC_TEST_XORSHIFT_H
#define BKC_TEST_XORSHIFT_H

#include <stdint.h>

static inline uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

#endif /* BKC_TEST_XORSHIFT_H */
