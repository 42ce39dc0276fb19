// SPDX-License-Identifier: GPL-2.0
/*
 * Replacement policy and allocator tests: LRU evicts the least recently
 * used bucket, FIFO evicts in fill order, random is close to uniform
 * (chi-square), all three respect the btree and meta reserves and never
 * evict dirty or open buckets, the policy switches at runtime, and the
 * generation window (C6) blocks reuse until GC has run, and enough
 * buckets may be in flight for 32 writes of 1 MiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "policy.h"
#include "tcheck.h"

#define NB	96
#define FIRST	2

static struct bkc_geom geom = {
	.nbuckets = NB, .first_bucket = FIRST, .bucket_sectors = 8,
	.block_bytes = 512,
};

static void setup(struct bkc_alloc *a, u32 repl, u64 seed)
{
	REQUIRE(bkc_alloc_init(a, &geom, 4, repl, seed) == 0);
	bkc_alloc_format(a);
}

/* Open a whole bucket for data and give it one live clean key. */
static u64 fill_one(struct bkc_alloc *a, u32 wp, bool dirty)
{
	struct bkc_key k;
	u64 b;
	u32 off, got;
	u8 gen;

	REQUIRE(bkc_alloc_data(a, wp, geom.bucket_sectors, &b, &off, &got,
			       &gen) == 0);
	CHECK_EQ(off, 0);
	CHECK_EQ(got, geom.bucket_sectors);
	bkc_key_init(&k, 1, b * 8, got, b, off, gen, dirty);
	bkc_alloc_account(a, &k, 1);
	bkc_alloc_data_put(a, b);
	return b;
}

static u64 victim(struct bkc_alloc *a)
{
	u64 b = ~0ULL;
	int ret = bkc_alloc_invalidate(a, 1, NB, &b);

	CHECK_EQ(ret, 1);
	return b;
}

/* Fill @n buckets in order; returns them in @b. */
static void fill(struct bkc_alloc *a, u64 *b, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		b[i] = fill_one(a, 0, false);
}

static void test_lru(void)
{
	struct bkc_alloc a;
	u64 b[16], v;
	u32 i, clock;

	setup(&a, BKC_REPL_LRU, 1);
	fill(&a, b, 13);
	/* read hits on 3, 0 and 7, each followed by a fill */
	bkc_alloc_touch(&a, b[3]);
	fill(&a, &b[13], 1);
	bkc_alloc_touch(&a, b[0]);
	fill(&a, &b[14], 1);
	bkc_alloc_touch(&a, b[7]);
	clock = a.clock;
	/* hits are coarse: a second one stores nothing, and none moves the clock */
	bkc_alloc_touch(&a, b[7]);
	bkc_alloc_touch(&a, b[3]);
	CHECK_EQ(a.clock, clock);
	CHECK_EQ(a.b[b[3]].prio, a.b[b[7]].prio);
	fill(&a, &b[15], 1);
	/* the never-used buckets are empty and go first: skip them */
	for (i = 0; i < NB; i++) {
		v = victim(&a);
		if (a.b[v].prio || v == b[0])
			break;
	}
	/* then 1, 2, 4, 5, 6, 8 .. 12, and each hit just after its fill */
	CHECK_EQ(v, b[1]);
	CHECK_EQ(victim(&a), b[2]);
	CHECK_EQ(victim(&a), b[4]);
	for (i = 5; i < 13; i++)
		if (i != 7)
			CHECK_EQ(victim(&a), b[i]);
	CHECK_EQ(victim(&a), b[13]);
	CHECK_EQ(victim(&a), b[0]);
	CHECK_EQ(victim(&a), b[14]);
	/* 3 and 7 were read last, after b[14]'s fill, and tie */
	v = victim(&a);
	CHECK(v == b[3] || v == b[7]);
	CHECK_EQ(victim(&a), v == b[3] ? b[7] : b[3]);
	CHECK_EQ(victim(&a), b[15]);
	bkc_alloc_exit(&a);
}

static void test_fifo(void)
{
	struct bkc_alloc a;
	u64 b[16], v;
	u32 i;

	setup(&a, BKC_REPL_FIFO, 2);
	fill(&a, b, 16);
	bkc_alloc_touch(&a, b[3]);
	bkc_alloc_touch(&a, b[0]);
	for (i = 0; i < NB; i++) {
		v = victim(&a);
		if (a.b[v].prio)
			break;
	}
	/* reads change nothing: fill order */
	CHECK_EQ(v, b[0]);
	for (i = 1; i < 16; i++)
		CHECK_EQ(victim(&a), b[i]);
	bkc_alloc_exit(&a);
}

/* Evict everything empty first; returns the next (policy) victim. */
static u64 first_policy_victim(struct bkc_alloc *a)
{
	u32 i;
	u64 v = 0;

	for (i = 0; i < NB; i++) {
		v = victim(a);
		if (a->b[v].prio)
			break;
	}
	return v;
}

static void test_random(void)
{
	enum { N = 64, TRIALS = 6400 };
	u32 count[NB] = { 0 }, t, i;
	double chi = 0, e = (double)TRIALS / N;
	u64 b[N];

	for (t = 0; t < TRIALS; t++) {
		struct bkc_alloc a;
		u64 v;

		setup(&a, BKC_REPL_RANDOM, 1000 + t);
		fill(&a, b, N);
		v = first_policy_victim(&a);
		for (i = 0; i < N; i++)
			if (b[i] == v)
				count[i]++;
		bkc_alloc_exit(&a);
	}
	for (i = 0; i < N; i++)
		chi += (count[i] - e) * (count[i] - e) / e;
	/* 63 degrees of freedom: p = 0.001 at 103.4 */
	printf("  random: chi-square %.1f over %d buckets, %d trials\n",
	       chi, N, TRIALS);
	CHECK(chi < 103.4);
	/* and not degenerate: no bucket wildly favoured */
	for (i = 0; i < N; i++)
		CHECK(count[i] > e / 3 && count[i] < e * 3);
}

/*
 * Each policy: data never takes the reserves, btree allocations may use
 * the btree reserve, meta the rest; dirty and open buckets are never
 * evicted; eviction keeps the cache going round after round.
 */
static void test_reserves(u32 repl)
{
	struct bkc_alloc a;
	u64 b, dirty[4];
	u32 round, i, evicted;

	setup(&a, repl, 7 + repl);
	for (i = 0; i < 4; i++)
		dirty[i] = fill_one(&a, 1, true);
	for (round = 0; round < 20; round++) {
		u32 off, got;
		u8 gen;
		int ret;

		/* fill until data hits the reserves */
		while ((ret = bkc_alloc_data(&a, 0, geom.bucket_sectors, &b,
					     &off, &got, &gen)) == 0) {
			struct bkc_key k;

			bkc_key_init(&k, 1, 0, got, b, off, gen, false);
			bkc_alloc_account(&a, &k, 1);
			bkc_alloc_data_put(&a, b);
		}
		CHECK_EQ(ret, -ENOSPC);
		CHECK_EQ(bkc_alloc_avail(&a, BKC_ALLOC_DATA), 0);
		CHECK(a.nr_free >= a.reserve_btree + a.reserve_meta);
		CHECK_EQ(bkc_alloc_avail(&a, BKC_ALLOC_BTREE),
			 a.nr_free - a.reserve_meta);
		/* evict; dirty buckets never go */
		evicted = 0;
		while (bkc_alloc_want_invalidate(&a) &&
		       bkc_alloc_invalidate(&a, round + 2, NB, &b) == 1) {
			for (i = 0; i < 4; i++)
				CHECK(b != dirty[i]);
			CHECK(bkc_alloc_state(&a, b) == BKC_BS_FREE);
			evicted++;
		}
		CHECK(evicted > 0);
		/* not usable before the entry with their new gens is durable */
		CHECK_EQ(a.nr_pend, evicted);
		bkc_alloc_journal_durable(&a, round + 1);
		CHECK_EQ(bkc_alloc_avail(&a, BKC_ALLOC_DATA), 0);
		CHECK_EQ(a.nr_pend, evicted);
		bkc_alloc_journal_durable(&a, round + 2);
		CHECK_EQ(a.nr_pend, 0);
		CHECK(bkc_alloc_avail(&a, BKC_ALLOC_DATA) > 0);
	}
	/* the reserves themselves: btree down to the meta reserve ... */
	for (;;) {
		u32 off, got;
		u8 gen;

		if (bkc_alloc_data(&a, 0, geom.bucket_sectors, &b, &off, &got,
				   &gen))
			break;
		bkc_alloc_data_put(&a, b);
	}
	i = 0;
	while (bkc_alloc_bucket(&a, BKC_ALLOC_BTREE, &b) == 0)
		i++;
	CHECK(i >= a.reserve_btree);
	CHECK_EQ(a.nr_free, a.reserve_meta);
	/* ... and meta to the last bucket */
	i = 0;
	while (bkc_alloc_bucket(&a, BKC_ALLOC_META, &b) == 0)
		i++;
	CHECK_EQ(i, a.reserve_meta);
	CHECK_EQ(a.nr_free, 0);
	for (i = 0; i < 4; i++)
		CHECK(bkc_alloc_state(&a, dirty[i]) == BKC_BS_DIRTY);
	bkc_alloc_exit(&a);
}

static void test_switch(void)
{
	struct bkc_alloc a;
	u64 b[8];
	u32 i;

	setup(&a, BKC_REPL_LRU, 3);
	fill(&a, b, 8);
	bkc_alloc_touch(&a, b[0]);
	/* switching to FIFO: touches already made stay, order is by stamp */
	CHECK_EQ(bkc_alloc_set_policy(&a, BKC_REPL_FIFO), 0);
	bkc_alloc_touch(&a, b[1]);	/* ignored by FIFO */
	CHECK_EQ(first_policy_victim(&a), b[1]);
	for (i = 2; i < 8; i++)
		CHECK_EQ(victim(&a), b[i]);
	CHECK_EQ(victim(&a), b[0]);
	CHECK_EQ(bkc_alloc_set_policy(&a, BKC_REPL_NR), -EINVAL);
	CHECK_EQ(bkc_alloc_set_policy(&a, BKC_REPL_RANDOM), 0);
	CHECK(!strcmp(a.repl->name, "random"));
	bkc_alloc_exit(&a);
}

/* C6: a bucket's gen never laps the oldest key that may point at it. */
static void test_gen_window(void)
{
	struct bkc_alloc a;
	u64 b, c, v;

	setup(&a, BKC_REPL_FIFO, 4);
	b = fill_one(&a, 0, false);
	c = fill_one(&a, 0, false);
	bkc_alloc_close_all(&a);
	/* keys with gen 10 may still point into b: 253 bumps are allowed */
	bkc_alloc_load(&a, b, (u8)(10 + 253), 10, a.b[b].prio);
	CHECK(bkc_alloc_gen_bumpable(&a, b));
	CHECK_EQ(bkc_alloc_invalidate_bucket(&a, b, 1), 0);
	CHECK_EQ((u8)(a.b[b].gen - 10), BKC_GEN_LIMIT - 1);
	CHECK(!bkc_alloc_gen_bumpable(&a, b));
	CHECK(bkc_alloc_need_gc(&a));

	/* the policy skips a bucket at the limit, even the oldest one */
	bkc_alloc_load(&a, c, 9, 10, a.b[c].prio);
	CHECK(!bkc_alloc_gen_bumpable(&a, c));
	while (bkc_alloc_invalidate(&a, 2, NB, &v) == 1)
		CHECK(v != c);
	CHECK(bkc_alloc_state(&a, c) == BKC_BS_CLEAN);

	/* a GC pass (nothing older than its start survives) opens it */
	bkc_alloc_gc_start(&a);
	bkc_alloc_gc_finish(&a);
	CHECK(bkc_alloc_gen_bumpable(&a, c));
	CHECK(!bkc_alloc_need_gc(&a));
	CHECK_EQ(bkc_alloc_invalidate_bucket(&a, c, 3), 0);
	bkc_alloc_exit(&a);
}

/*
 * Buckets handed out but not yet inserted stay pinned: a queue of 32
 * 1 MiB writes in flight holds 64 buckets of 512 KiB, and one more may be
 * open per write point.  All of them are allowed; the one past
 * BKC_OPEN_MAX waits (-EAGAIN) until an insert releases one.
 */
static void test_pinned(void)
{
	struct bkc_geom g = geom;
	struct bkc_alloc a;
	u64 b[BKC_OPEN_MAX], x;
	u32 i, off, got;
	u8 gen;

	CHECK(BKC_OPEN_MAX >= 64 + BKC_WP_NR);
	g.nbuckets = 4 * BKC_OPEN_MAX;
	REQUIRE(bkc_alloc_init(&a, &g, 4, BKC_REPL_LRU, 1) == 0);
	bkc_alloc_format(&a);
	for (i = 0; i < BKC_OPEN_MAX; i++) {
		REQUIRE(bkc_alloc_data(&a, i % BKC_WP_NR, g.bucket_sectors, &b[i],
				       &off, &got, &gen) == 0);
		CHECK_EQ(got, g.bucket_sectors);
	}
	CHECK_EQ(bkc_alloc_data(&a, 0, g.bucket_sectors, &x, &off, &got, &gen),
		 -EAGAIN);
	bkc_alloc_data_put(&a, b[0]);
	CHECK_EQ(bkc_alloc_data(&a, 0, g.bucket_sectors, &x, &off, &got, &gen),
		 0);
	bkc_alloc_data_put(&a, x);
	for (i = 1; i < BKC_OPEN_MAX; i++)
		bkc_alloc_data_put(&a, b[i]);
	bkc_alloc_exit(&a);
}

int main(void)
{
	test_lru();
	test_fifo();
	test_random();
	test_reserves(BKC_REPL_LRU);
	test_reserves(BKC_REPL_FIFO);
	test_reserves(BKC_REPL_RANDOM);
	test_switch();
	test_gen_window();
	test_pinned();
	return tcheck_done("test_policy");
}
