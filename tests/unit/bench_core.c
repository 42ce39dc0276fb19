// SPDX-License-Identifier: GPL-2.0
/*
 * Benchmark of the portable core (not a test; built by scripts/bench-core
 * with -O2 and no sanitizers).  For N keys of 4 KiB each at random
 * positions of a 10 TB backing device it reports:
 *   - tree inserts/s (bkc_btree_insert alone),
 *   - core inserts/s (bkc_core_insert: journal record too, with journal
 *     commits and node flushes encoded into a simulated device),
 *   - lookups/s of random 4 KiB reads that hit,
 *   - allocator RAM per GiB of cache and node memory per key.
 *
 *   bench_core N
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "core.h"

#define KEY_SECTORS	8
#define BACKING_SECTORS	(10ULL * 1000 * 1000 * 1000 * 1000 / 512)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static u64 rng = 0x2545f4914f6cdd1dULL;

static u64 rnd(void)
{
	return sim_rand(&rng);
}

/* Distinct random slots: a multiplicative permutation of [0, slots). */
static u64 slot_lba(u64 i, u64 slots)
{
	return ((i * BKC_GOLDEN64) % slots) * KEY_SECTORS;
}

struct bench {
	struct sim		s;
	struct bkc_core		c;
	struct bkc_sb_info	sb;
	u8			*buf;
};

static int dummy_read(void *ctx, u64 bucket, u32 off, void *buf, u32 len)
{
	memcpy(buf, sim_bucket(ctx, bucket) + off, len);
	return 0;
}

static const struct bkc_core_ops ops = { .read = dummy_read };

static void commit(struct bench *b)
{
	struct bkc_journal_write w;

	if (bkc_core_journal_prepare(&b->c, &w))
		return;
	sim_write(&b->s, w.bucket, w.offset, w.buf, w.bytes, 0);
	bkc_core_journal_done(&b->c, &w);
}

static void flush(struct bench *b)
{
	struct bkc_node_write nw;
	u64 bk;
	u32 bytes;

	commit(b);
	for (;;) {
		nw.buf = b->buf;
		if (bkc_core_node_prepare(&b->c, &nw, 0) <= 0)
			break;
		sim_write(&b->s, nw.bucket, nw.offset, b->buf, nw.bytes, 0);
		bkc_core_node_done(&b->c, &nw);
	}
	if (!bkc_core_table_begin(&b->c)) {
		while (bkc_core_table_next(&b->c, b->buf, &bk, &bytes) > 0)
			;	/* encoded, not stored: only the CPU cost counts */
		bkc_core_table_end(&b->c);
	}
	commit(b);
	commit(b);
}

static void setup(struct bench *b, u64 nbuckets)
{
	struct bkc_core_config cfg = { .ndevs = 16, .seed = 1 };
	const char *why;

	memset(b, 0, sizeof(*b));
	b->sb.version = BKC_SB_VERSION;
	b->sb.block_size = 4096;
	b->sb.bucket_size = 512 << 10;
	memset(b->sb.set_uuid, 7, BKC_UUID_SIZE);
	if (bkc_sb_init_cache(&b->sb, nbuckets * b->sb.bucket_size, &why)) {
		fprintf(stderr, "bench: %s\n", why);
		exit(1);
	}
	sim_init(&b->s, &(struct bkc_geom){
		.nbuckets = b->sb.nbuckets, .first_bucket = b->sb.first_bucket,
		.bucket_sectors = b->sb.bucket_size >> 9, .block_bytes = 4096,
		.set_magic = bkc_set_magic(b->sb.set_uuid) }, 256 << 10);
	b->buf = malloc(b->sb.bucket_size);
	b->s.t = &b->c.tree;
	if (!b->buf || bkc_core_init(&b->c, &b->sb, &cfg, &sim_btree_ops,
				     &ops, &b->s) ||
	    bkc_core_format(&b->c))
		exit(1);
	flush(b);
}

static void teardown(struct bench *b)
{
	bkc_core_exit(&b->c);
	sim_exit(&b->s);
	free(b->buf);
}

/* Fill with @n keys; returns seconds. */
static double fill(struct bench *b, u64 n, bool core)
{
	u64 slots = BACKING_SECTORS / KEY_SECTORS, i, seq;
	double t0 = now();

	for (i = 0; i < n; i++) {
		struct bkc_key k;
		u64 bucket;
		u32 off, got;
		u8 gen;
		int ret;

		ret = bkc_core_alloc_data(&b->c, 0, KEY_SECTORS, &bucket, &off,
					  &got, &gen);
		if (ret) {
			fprintf(stderr, "bench: out of data buckets\n");
			exit(1);
		}
		bkc_key_init(&k, 1, slot_lba(i, slots), got, bucket, off, gen,
			     true);
		if (core) {
			ret = bkc_core_insert(&b->c, &k, &seq);
			if (ret == -EAGAIN) {
				commit(b);
				ret = bkc_core_insert(&b->c, &k, &seq);
			}
		} else {
			ret = bkc_btree_insert(&b->c.tree, &k, 1);
		}
		if (ret) {
			fprintf(stderr, "bench: insert %d\n", ret);
			exit(1);
		}
		bkc_core_data_put(&b->c, bucket);
		/* the kernel flushes nodes when the journal fills up */
		if (core && bkc_core_journal_fill(&b->c) > 128)
			flush(b);
		if (!core && (i & 0xfffff) == 0xfffff)
			flush(b);
	}
	return now() - t0;
}

static int hit_cb(void *arg, const struct bkc_key *k, u64 pos, u32 len)
{
	*(u64 *)arg += k ? len : 0;
	return 0;
}

static void run(u64 n)
{
	u64 nbuckets = n * KEY_SECTORS / 1024 * 5 / 4 + 4096;
	u64 slots = BACKING_SECTORS / KEY_SECTORS, i, hits = 0, found;
	struct bkc_btree_check chk;
	struct bkc_key k;
	struct bench *b = calloc(1, sizeof(*b));
	double t;
	u64 lookups = n < 2000000 ? n : 2000000;

	if (!b)
		exit(1);
	setup(b, nbuckets);
	t = fill(b, n, false);
	printf("%9llu keys  tree inserts: %10.0f /s\n",
	       (unsigned long long)n, n / t);
	flush(b);

	t = now();
	for (i = 0; i < lookups; i++) {
		u64 j = rnd() % n;

		bkc_btree_lookup(&b->c.tree, 1, slot_lba(j, slots),
				 KEY_SECTORS, hit_cb, &hits);
	}
	t = now() - t;
	printf("%9llu keys  lookups:      %10.0f /s  (%llu of %llu sectors hit)\n",
	       (unsigned long long)n, lookups / t, (unsigned long long)hits,
	       (unsigned long long)lookups * KEY_SECTORS);

	/* the point query of a write's in-place probe, over the same keys */
	found = 0;
	t = now();
	for (i = 0; i < lookups; i++) {
		u64 j = rnd() % n;

		found += bkc_btree_find(&b->c.tree, 1, slot_lba(j, slots),
					KEY_SECTORS, &k) == 1;
	}
	t = now() - t;
	printf("%9llu keys  finds:        %10.0f /s  (%llu of %llu found)\n",
	       (unsigned long long)n, lookups / t, (unsigned long long)found,
	       (unsigned long long)lookups);
	bkc_btree_check(&b->c.tree, &chk);
	printf("%9llu keys  tree: depth %u, %llu nodes of %u KiB, %.1f bytes of node memory per key\n",
	       (unsigned long long)n, chk.depth,
	       (unsigned long long)chk.nodes, b->c.tree.node_bytes >> 10,
	       (double)chk.nodes * (bkc_btree_base_bytes(&b->c.tree) +
				    bkc_btree_delta_bytes(&b->c.tree)) / n);
	teardown(b);

	setup(b, nbuckets);
	t = fill(b, n, true);
	printf("%9llu keys  core inserts: %10.0f /s  (journalled, with commits and node flushes)\n",
	       (unsigned long long)n, n / t);
	teardown(b);
	free(b);
}

/* Allocator memory for a cache of @gib GiB with @bucket_kib buckets. */
static void ram(u64 gib, u32 bucket_kib)
{
	struct bkc_geom g = {
		.nbuckets = gib * 1024 * 1024 / bucket_kib, .first_bucket = 1,
		.bucket_sectors = bucket_kib * 2, .block_bytes = 4096,
	};
	struct bkc_alloc a;
	u64 bytes;

	if (bkc_alloc_init(&a, &g, 64, 0, 1))
		exit(1);
	bytes = sizeof(a) + g.nbuckets * sizeof(struct bkc_bucket) +
		a.free_cap * 8ULL + a.pend_cap * 16ULL +
		a.cand_cap * sizeof(struct bkc_cand) + a.ndevs * 8ULL +
		a.freeing_cap * 8ULL;
	printf("allocator RAM, %4llu GiB cache, %4u KiB buckets: %8.0f bytes per GiB of cache (%u per bucket + rings)\n",
	       (unsigned long long)gib, bucket_kib, (double)bytes / gib,
	       (u32)sizeof(struct bkc_bucket));
	bkc_alloc_exit(&a);
}

int main(int argc, char **argv)
{
	u64 n = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;

	if (n)
		run(n);
	else {
		ram(1024, 512);
		ram(1024, 128);
		ram(64, 512);
	}
	return 0;
}
