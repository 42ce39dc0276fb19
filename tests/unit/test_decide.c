// SPDX-License-Identifier: GPL-2.0
/*
 * The request path's decide-only policies: the sequential-stream detector
 * the writeback rate controller and exponential decay.
 */
#include "tcheck.h"
#include "ratectl.h"
#include "seqdetect.h"
#include "decay.h"
#include "statwin.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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
	/* idle for exactly the timeout: still the stream; one tick more: not */
	CHECK_EQ(bkc_seq_account(&d, 24, 8, 600, 100), 8192);
	CHECK_EQ(bkc_seq_account(&d, 32, 8, 701, 100), 4096);
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

/*
 * The detector against a plain model of what it promises: a slot per
 * stream, an I/O at a live stream's continuation extends it, any other
 * takes an unused slot first, else the one used longest ago.  Streams
 * continued, restarted and idled past the timeout, at random.
 */
struct ref_stream {
	u64	next, bytes, stamp;
};

static u64 ref_account(struct ref_stream *s, u64 sector, u32 sectors, u64 now,
		       u64 timeout)
{
	struct ref_stream *v = &s[0];
	int i;

	for (i = 0; i < BKC_SEQ_STREAMS; i++) {
		if (s[i].bytes && s[i].next == sector &&
		    now - s[i].stamp <= timeout) {
			s[i].bytes += (u64)sectors << 9;
			s[i].next = sector + sectors;
			s[i].stamp = now;
			return s[i].bytes;
		}
		if (v->bytes && (!s[i].bytes || s[i].stamp < v->stamp))
			v = &s[i];
	}
	v->next = sector + sectors;
	v->bytes = (u64)sectors << 9;
	v->stamp = now;
	return v->bytes;
}

static void test_seq_model(void)
{
	struct ref_stream ref[BKC_SEQ_STREAMS] = { { 0 } };
	u64 heads[2 * BKC_SEQ_STREAMS] = { 0 }, x = 88172645463325252ULL;
	u64 now = 1, sector, got, want;
	struct bkc_seq d;
	u32 sectors, h;
	int i;

	bkc_seq_init(&d);
	for (i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/*
		 * distinct stamps: with ties the model evicts the lowest slot,
		 * the detector the one used first (both are LRU)
		 */
		now += 1 + (x >> 60 == 0 ? 150 : (x >> 40) % 3);
		h = (u32)(x % (2 * BKC_SEQ_STREAMS));
		sectors = 8 << ((x >> 8) % 4);
		if ((x >> 20) % 4)
			sector = heads[h];	/* a stream's continuation, maybe */
		else
			sector = (x >> 24) % (1ULL << 30);
		got = bkc_seq_account(&d, sector, sectors, now, 100);
		want = ref_account(ref, sector, sectors, now, 100);
		CHECK_EQ(got, want);
		heads[h] = sector + sectors;
	}
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

/* bkc_decay() against the real 2^(-t/h), within 0.1 % (plus rounding). */
static void test_decay_accuracy(void)
{
	static const u64 hl[] = { 1, 7, 1000, 3600000, 1ULL << 40 };
	u64 v = 1000ULL << BKC_DECAY_SHIFT, i, t;
	double want, got;

	for (i = 0; i < sizeof(hl) / sizeof(hl[0]); i++) {
		for (t = 0; t <= 20 * hl[i] && t < 40 * 1000000ULL;
		     t += hl[i] / 37 + 1) {
			want = (double)v * pow(2.0, -(double)t / (double)hl[i]);
			got = (double)bkc_decay(v, t, hl[i]);
			CHECK(fabs(got - want) <= want * 0.001 + 2);
		}
	}
	/* whole half-lives are exact, no half-life means no decay */
	CHECK_EQ(bkc_decay(v, 3000, 1000), v >> 3);
	CHECK_EQ(bkc_decay(v, 123456, 0), v);
	CHECK_EQ(bkc_decay(v, 0, 1000), v);
	CHECK_EQ(bkc_decay(v, 64 * 1000, 1000), 0);
	CHECK_EQ(bkc_decay(~0ULL, 1000, 1000), ~0ULL >> 1);
	/* monotonic in time */
	for (t = 1; t < 5000; t++)
		CHECK(bkc_decay(v, t, 1000) <= bkc_decay(v, t - 1, 1000));
}

/* The error count: 8 events at once reach 8; they halve per half-life. */
static void test_decount(void)
{
	struct bkc_decount d = { 0, 0 };
	u64 c = 0;
	int i;

	for (i = 0; i < 8; i++)
		c = bkc_decount_add(&d, 100, 0);
	CHECK_EQ(c, 8 * BKC_DECAY_ONE);
	CHECK_EQ(bkc_decount_read(&d, 1000000, 0), 8 * BKC_DECAY_ONE);

	memset(&d, 0, sizeof(d));
	for (i = 0; i < 8; i++)
		c = bkc_decount_add(&d, 100, 1000);
	CHECK_EQ(c, 8 * BKC_DECAY_ONE);
	CHECK_EQ(bkc_decount_read(&d, 1100, 1000), 4 * BKC_DECAY_ONE);
	CHECK_EQ(bkc_decount_read(&d, 2100, 1000), 2 * BKC_DECAY_ONE);
	/* an event after two half-lives: 2 + 1 */
	CHECK_EQ(bkc_decount_add(&d, 2100, 1000), 3 * BKC_DECAY_ONE);
	/* time going backwards (clock reset) does not add decay */
	CHECK_EQ(bkc_decount_read(&d, 50, 1000), 3 * BKC_DECAY_ONE);
	/* one error per half-life converges to 2, never reaching it */
	memset(&d, 0, sizeof(d));
	for (i = 0; i < 100; i++)
		c = bkc_decount_add(&d, (u64)i * 1000, 1000);
	CHECK(c < 2 * BKC_DECAY_ONE && c > 2 * BKC_DECAY_ONE - 100);
}

/*
 * Stats windows: a burst reads back exactly at once, decays to 1/e of
 * itself after one window length (folded every 5 s as the kernel does),
 * a steady rate settles at rate * length, and counts since the last fold
 * are included in full.
 */
static void test_statwin(void)
{
	const u64 len = 300000, step = 5000;
	u64 tot[BKC_STAT_NR] = { 0 }, out[BKC_STAT_NR], t = 1000;
	struct bkc_statwin w;
	double want, got;
	u32 i;

	bkc_statwin_init(&w, len, tot, t);
	bkc_statwin_read(&w, tot, t, out);
	for (i = 0; i < BKC_STAT_NR; i++)
		CHECK_EQ(out[i], 0);
	tot[BKC_STAT_HITS] = 1000;
	tot[BKC_STAT_MISSES] = 250;
	bkc_statwin_read(&w, tot, t, out);
	CHECK_EQ(out[BKC_STAT_HITS], 1000);
	CHECK_EQ(out[BKC_STAT_MISSES], 250);
	bkc_statwin_fold(&w, tot, t);
	bkc_statwin_read(&w, tot, t + 10, out);
	CHECK_EQ(out[BKC_STAT_HITS], 1000);
	/* one window later: e^-1 of it */
	for (i = 0; i < len / step; i++) {
		t += step;
		bkc_statwin_fold(&w, tot, t);
	}
	bkc_statwin_read(&w, tot, t, out);
	want = 1000 * exp(-1.0);
	/* (each fold decays within 0.1 %, from above) */
	CHECK(fabs(out[BKC_STAT_HITS] - want) <= want * 0.03 + 1);
	/* long gone after 20 window lengths */
	for (i = 0; i < 20 * len / step; i++) {
		t += step;
		bkc_statwin_fold(&w, tot, t);
	}
	bkc_statwin_read(&w, tot, t, out);
	CHECK_EQ(out[BKC_STAT_HITS], 0);
	/* 7 events per fold for 10 window lengths: 7 * len / step */
	for (i = 0; i < 10 * len / step; i++) {
		t += step;
		tot[BKC_STAT_PROMOTIONS] += 7;
		bkc_statwin_fold(&w, tot, t);
	}
	bkc_statwin_read(&w, tot, t, out);
	want = 7.0 * len / step;
	got = out[BKC_STAT_PROMOTIONS];
	CHECK(fabs(got - want) <= want * 0.03);
	/* a reset of the totals (clear_stats) starts from scratch */
	memset(tot, 0, sizeof(tot));
	bkc_statwin_init(&w, len, tot, t);
	tot[BKC_STAT_BYPASSED] = 8;
	bkc_statwin_read(&w, tot, t + step, out);
	CHECK_EQ(out[BKC_STAT_BYPASSED], 8);
	CHECK_EQ(out[BKC_STAT_PROMOTIONS], 0);
	/* huge counts saturate, never wrap */
	tot[BKC_STAT_BYPASSED] = ~0ULL >> 8;
	bkc_statwin_fold(&w, tot, t + step);
	bkc_statwin_read(&w, tot, t + step, out);
	CHECK(out[BKC_STAT_BYPASSED] >= ~0ULL >> 17);

	CHECK_EQ(bkc_stat_ratio(0, 0), 0);
	CHECK_EQ(bkc_stat_ratio(1, 2), 33);
	CHECK_EQ(bkc_stat_ratio(5, 0), 100);
}

int main(void)
{
	test_single_stream();
	test_random();
	test_interleaved();
	test_timeout();
	test_eviction();
	test_seq_model();
	test_rate_converges();
	test_rate_bounds();
	test_decay_accuracy();
	test_decount();
	test_statwin();
	return tcheck_done("test_decide");
}
