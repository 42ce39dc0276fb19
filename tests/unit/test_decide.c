// SPDX-License-Identifier: GPL-2.0
/*
 * The request path's decide-only policies: the sequential-stream detector
 * and the writeback rate controller.
 */
#include "tcheck.h"
#include "ratectl.h"
#include "seqdetect.h"

#define CUTOFF	(4ULL << 20)

/* One task streaming 1 MiB I/Os passes the cutoff after 4 MiB. */
static void test_single_stream(void)
{
	struct bkc_seq d;
	u64 bytes = 0;
	int i;

	bkc_seq_init(&d);
	for (i = 0; i < 8; i++) {
		bytes = bkc_seq_account(&d, 1000 + i * 2048ULL, 2048, i, 100);
		CHECK_EQ(bytes, (u64)(i + 1) << 20);
	}
	CHECK(bytes > CUTOFF);
}

/* Random I/O never looks sequential. */
static void test_random(void)
{
	struct bkc_seq d;
	u64 x = 12345, bytes, max = 0;
	int i;

	bkc_seq_init(&d);
	for (i = 0; i < 10000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		bytes = bkc_seq_account(&d, (x >> 20) & ~7ULL, 8, i, 100);
		if (bytes > max)
			max = bytes;
	}
	CHECK(max <= 8192);	/* at most a chance adjacency */
}

/* Eight tasks' streams interleaved are each recognised. */
static void test_interleaved(void)
{
	struct bkc_seq d;
	u64 bytes[8] = { 0 };
	int i, t;

	bkc_seq_init(&d);
	for (i = 0; i < 64; i++)
		for (t = 0; t < 8; t++)
			bytes[t] = bkc_seq_account(&d, t * (1ULL << 30) + i * 256,
						   256, i, 100);
	for (t = 0; t < 8; t++)
		CHECK_EQ(bytes[t], 64 * 256 * 512ULL);
}

/* A stream idle past the timeout starts over. */
static void test_timeout(void)
{
	struct bkc_seq d;

	bkc_seq_init(&d);
	bkc_seq_account(&d, 0, 8, 0, 100);
	CHECK_EQ(bkc_seq_account(&d, 8, 8, 50, 100), 8192);
	CHECK_EQ(bkc_seq_account(&d, 16, 8, 500, 100), 4096);
}

/* More streams than slots: the least recently used one is forgotten. */
static void test_eviction(void)
{
	struct bkc_seq d;
	int t;

	bkc_seq_init(&d);
	for (t = 0; t <= BKC_SEQ_STREAMS; t++)
		bkc_seq_account(&d, t * 1000000ULL, 8, t + 1, 1000);
	/* stream 0 was evicted, the newest survived */
	CHECK_EQ(bkc_seq_account(&d, 8, 8, 100, 1000), 4096);
	CHECK_EQ(bkc_seq_account(&d, BKC_SEQ_STREAMS * 1000000ULL + 8, 8, 101,
				 1000), 8192);
}

/* Above target the rate rises with the error and drains toward target. */
static void test_rate_converges(void)
{
	struct bkc_ratectl c;
	u64 dirty = 1000000, target = 200000, rate, prev = 0;
	int i;

	bkc_ratectl_init(&c, 8, 0);
	for (i = 0; i < 600; i++) {
		rate = bkc_ratectl_update(&c, dirty, target, 1000, false);
		CHECK(rate >= 8);
		if (i == 0)
			CHECK(rate > 10000);
		dirty -= rate < dirty ? rate : dirty;
		prev = rate;
	}
	CHECK(dirty < target + target / 10);
	CHECK(dirty > target / 2);	/* not drained below target */
	(void)prev;
}

/* Below target: the minimum rate; idle: the maximum; clamps hold. */
static void test_rate_bounds(void)
{
	struct bkc_ratectl c;

	bkc_ratectl_init(&c, 8, 4096);
	CHECK_EQ(bkc_ratectl_update(&c, 100, 200000, 1000, false), 8);
	CHECK_EQ(bkc_ratectl_update(&c, 100, 200000, 1000, true), 4096);
	CHECK_EQ(bkc_ratectl_update(&c, 1ULL << 50, 0, 1000, false), 4096);
	/* no wind-up: back below target, the rate drops at once */
	CHECK_EQ(bkc_ratectl_update(&c, 100, 200000, 1000, false), 8);
	CHECK_EQ(bkc_ratectl_update(&c, 0, 0, 1000, false), 8);
	CHECK_EQ(c.integral, 0);
}

int main(void)
{
	test_single_stream();
	test_random();
	test_interleaved();
	test_timeout();
	test_eviction();
	test_rate_converges();
	test_rate_bounds();
	return tcheck_done("test_decide");
}
