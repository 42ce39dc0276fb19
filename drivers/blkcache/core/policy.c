// SPDX-License-Identifier: GPL-2.0
/*
 * Replacement policies.  All three share the per-bucket prio stamp and the
 * allocator's clock, which advances by two on every fill:
 *   LRU     stamps on fill and on every read hit; the oldest stamp goes.
 *           A hit takes the clock as it stands: younger than every
 *           bucket filled before it, and as young as every bucket read
 *           since the last fill (stamps are coarse).
 *   FIFO    stamps on fill only; buckets go in the order they were filled.
 *   random  ignores stamps; a hash of the bucket number and a seed that
 *           changes on every candidate scan gives each clean bucket the
 *           same chance.
 * Ages are clock differences in u32 arithmetic; the allocator clamps
 * stamps older than 2^30 during scans so that they never wrap.
 */
#include "policy.h"

/*
 * A fill, under the caller's exclusive lock.  The clock steps once for the
 * fill and once past it, so that hits after it are younger than it.
 */
static void stamp(struct bkc_alloc *a, u64 bucket)
{
	a->b[bucket].prio = ++a->clock;
	a->clock++;
}

/*
 * A read hit, which the kernel records under the shared side of its lock
 * (core.h).  Lockless, and safe: only exclusive holders change the clock
 * or a stamp otherwise, so every concurrent hit on a bucket stores the
 * same value, and single-copy accesses keep each store whole.  Repeated
 * hits store nothing.
 */
static void hit_stamp(struct bkc_alloc *a, u64 bucket)
{
	u32 now = READ_ONCE(a->clock);

	if (READ_ONCE(a->b[bucket].prio) != now)
		WRITE_ONCE(a->b[bucket].prio, now);
}

static void no_stamp(struct bkc_alloc *a, u64 bucket)
{
}

static u64 age_score(const struct bkc_alloc *a, u64 bucket)
{
	return (u32)(a->clock - a->b[bucket].prio);
}

/* splitmix64 finaliser: a well mixed hash of the bucket and the seed */
static u64 mix64(u64 x)
{
	x += BKC_GOLDEN64;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static u64 random_score(const struct bkc_alloc *a, u64 bucket)
{
	return mix64(bucket ^ a->rand_seed) >> 1;
}

static const struct bkc_repl_ops repl_ops[BKC_REPL_NR] = {
	[BKC_REPL_LRU] = {
		.name		= "lru",
		.filled		= stamp,
		.accessed	= hit_stamp,
		.score		= age_score,
	},
	[BKC_REPL_FIFO] = {
		.name		= "fifo",
		.filled		= stamp,
		.accessed	= no_stamp,
		.score		= age_score,
	},
	[BKC_REPL_RANDOM] = {
		.name		= "random",
		.filled		= stamp,
		.accessed	= no_stamp,
		.score		= random_score,
	},
};

const struct bkc_repl_ops *bkc_repl_get(u32 repl)
{
	return repl < BKC_REPL_NR ? &repl_ops[repl] : NULL;
}
