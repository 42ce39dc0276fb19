// SPDX-License-Identifier: GPL-2.0
/*
 * What the kernel relies on to never read a btree node with the set lock
 * held for writing (design-kernel.rst, "Locks"):
 *   - an insert spanning several leaves whose node cache refuses one of
 *     them changes nothing (no half-inserted key);
 *   - bkc_btree_pin_range() keeps the leaves of a range in memory, so a
 *     change of that range then needs no node read;
 *   - more leaves than fit give -E2BIG with the first ones pinned;
 *   - a damaged bset of a node is never cut off silently: refused, unless
 *     the tree replays a journal not closed cleanly (a torn append), and
 *     then the node is rewritten.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "sim.h"
#include "tcheck.h"

#define SPAN	200000ULL

struct dump {
	u64	sum;
	u64	n;
};

static int dump_key(void *arg, const struct bkc_key *k)
{
	struct dump *d = arg;

	d->sum = d->sum * 1000003 + k->pos * 31 + k->len * 7 + k->ptr;
	d->n++;
	return 0;
}

/*
 * The kernel's eviction rule (ncache.c): only unpinned clean leaves
 * without dirty keys go; interior nodes always stay.
 */
static void evict_leaves(struct sim *s)
{
	u64 i;

	for (i = 0; i < s->geom.nbuckets; i++) {
		struct sim_node *sn = s->cache[i];

		if (!sn || sn->pins || sn->n.level ||
		    (sn->n.flags & (BKC_NODE_DIRTY | BKC_NODE_INFLIGHT |
				    BKC_NODE_NEW | BKC_NODE_REWRITE)) ||
		    bkc_core_node_has_dirty(&sn->n))
			continue;
		s->cache[i] = NULL;
		s->nr_cached--;
		free(sn->n.base);
		free(sn->n.delta);
		free(sn);
		s->live_nodes--;
	}
}

static int noop_fn(void *arg, const struct bkc_key *k, u64 pos, u32 len)
{
	return 0;
}

/* A digest of every key of device 0, for "nothing changed". */
static struct dump digest(struct bkc_btree *t)
{
	struct dump d = { 0, 0 };

	REQUIRE(bkc_btree_iter(t, bkc_pos(0, 0), bkc_pos(1, 0), true, dump_key,
			       &d) == 0);
	return d;
}

int main(void)
{
	struct bkc_geom g = {
		.nbuckets = 16384, .first_bucket = 2, .bucket_sectors = 16,
		.block_bytes = 512, .set_magic = 77,
	};
	struct bkc_node *pins[64];
	struct bkc_alloc a;
	struct bkc_btree t;
	struct sim s;
	struct dump d0, d1;
	struct bkc_key k;
	u64 lba, b = 100, leaf, ow, reached;
	u32 last;
	int n, ret, i;

	sim_init(&s, &g, 1024);
	REQUIRE(bkc_alloc_init(&a, &g, 4, BKC_REPL_LRU, 1) == 0);
	bkc_alloc_format(&a);
	REQUIRE(bkc_btree_init(&t, &g, 1024, &sim_btree_ops, &s, &a) == 0);
	s.t = &t;
	REQUIRE(bkc_btree_create(&t) == 0);

	/* many small keys: a tree of several levels and many leaves */
	for (lba = 0; lba < SPAN; lba += 16) {
		bkc_key_init(&k, 0, lba, 8, b + (lba / 16) % 4000, 0,
			     bkc_alloc_gen(&a, b + (lba / 16) % 4000), false);
		REQUIRE(bkc_btree_insert(&t, &k, 1) == 0);
	}
	REQUIRE(bkc_btree_depth(&t) >= 3);
	/* keys side by side replaced nothing */
	CHECK_EQ(t.stats.overwrites, 0);
	while (sim_flush_tree(&s, ~0ULL) > 0)
		;
	d0 = digest(&t);
	CHECK(d0.n > 0);

	/*
	 * The overwrite count says whether an insert replaced cached data
	 * (a write hit): over a cached key yes, over the gap between two
	 * keys or a range a hole emptied no; the hole itself counts.
	 */
	ow = t.stats.overwrites;
	bkc_key_init(&k, 0, 8, 8, 90, 0, bkc_alloc_gen(&a, 90), false);
	REQUIRE(bkc_btree_insert(&t, &k, 1) == 0);	/* gap 8..16 */
	CHECK_EQ(t.stats.overwrites, ow);
	bkc_key_init(&k, 0, 4, 8, 91, 0, bkc_alloc_gen(&a, 91), false);
	REQUIRE(bkc_btree_insert(&t, &k, 1) == 0);	/* over 0..8 and 8..16 */
	CHECK_EQ(t.stats.overwrites, ow + 2);
	bkc_key_init_hole(&k, bkc_pos(0, 32), 8);
	REQUIRE(bkc_btree_insert(&t, &k, 1) == 0);	/* drops 32..40 */
	CHECK_EQ(t.stats.overwrites, ow + 3);
	bkc_key_init(&k, 0, 32, 8, 92, 0, bkc_alloc_gen(&a, 92), false);
	REQUIRE(bkc_btree_insert(&t, &k, 1) == 0);	/* over the hole */
	CHECK_EQ(t.stats.overwrites, ow + 3);
	while (sim_flush_tree(&s, ~0ULL) > 0)
		;
	d0 = digest(&t);

	/*
	 * A hole over many leaves of which only the first is in memory: the
	 * node cache refuses the next one, and nothing may change.
	 */
	evict_leaves(&s);
	REQUIRE(bkc_btree_lookup(&t, 0, 1000, 8, noop_fn, NULL) == 0);
	s.fail_reads = 1;
	bkc_key_init_hole(&k, bkc_pos(0, 1000), 50000);
	ret = bkc_btree_insert(&t, &k, 2);
	CHECK_EQ(ret, -EIO);
	s.fail_reads = 0;
	d1 = digest(&t);
	CHECK_EQ(d1.n, d0.n);
	CHECK_EQ(d1.sum, d0.sum);

	/* the same range pinned first: then it needs no read */
	d0 = digest(&t);
	evict_leaves(&s);
	n = bkc_btree_pin_range(&t, bkc_pos(0, 1000), bkc_pos(0, 1200), pins,
				64, &reached);
	CHECK_EQ(reached, bkc_pos(0, 1200));
	CHECK(n >= 1);
	evict_leaves(&s);
	s.fail_reads = 1;
	bkc_key_init_hole(&k, bkc_pos(0, 1000), 200);
	CHECK_EQ(bkc_btree_insert(&t, &k, 2), 0);
	s.fail_reads = 0;
	bkc_btree_unpin(&t, pins, n > 0 ? n : 0);

	CHECK(digest(&t).n < d0.n);

	/* too many leaves for the array: -E2BIG with the first ones pinned */
	while (sim_flush_tree(&s, ~0ULL) > 0)
		;
	evict_leaves(&s);
	ret = bkc_btree_pin_range(&t, bkc_pos(0, 0), bkc_pos(0, SPAN), pins, 4,
				  &reached);
	CHECK_EQ(ret, -E2BIG);
	/* they cover [0, reached): from there on, a range needs no read */
	CHECK(reached > bkc_pos(0, 0) && reached < bkc_pos(0, SPAN));
	evict_leaves(&s);
	s.fail_reads = 1;
	CHECK_EQ(bkc_btree_lookup(&t, 0, 0, (u32)(reached - bkc_pos(0, 0)),
				  noop_fn, NULL), 0);
	CHECK_EQ(bkc_btree_lookup(&t, 0, 0, (u32)(reached - bkc_pos(0, 0)) + 1,
				  noop_fn, NULL), -EIO);
	s.fail_reads = 0;
	bkc_btree_unpin(&t, pins, 4);
	/* every pin was returned: only the tree's own pins are left */
	for (i = 0; i < (int)g.nbuckets; i++) {
		struct sim_node *sn = s.cache[i];

		if (!sn || &sn->n == t.root ||
		    (sn->n.flags & (BKC_NODE_DIRTY | BKC_NODE_NEW |
				    BKC_NODE_INFLIGHT)))
			continue;
		CHECK_EQ(sn->pins, 0);
	}

	/* a leaf with two bsets: written, changed, appended */
	while (sim_flush_tree(&s, ~0ULL) > 0)
		;
	bkc_key_init(&k, 0, 100000, 8, 50, 0, bkc_alloc_gen(&a, 50), false);
	REQUIRE(bkc_btree_insert(&t, &k, 3) == 0);
	while (sim_flush_tree(&s, ~0ULL) > 0)
		;
	n = bkc_btree_pin_range(&t, bkc_pos(0, 100000), bkc_pos(0, 100008),
				pins, 1, NULL);
	REQUIRE(n == 1);
	leaf = pins[0]->bucket;
	REQUIRE(pins[0]->nbsets >= 2);
	last = pins[0]->written;
	bkc_btree_unpin(&t, pins, 1);
	d0 = digest(&t);
	evict_leaves(&s);
	REQUIRE(!s.cache[leaf]);
	/* one bit of the last bset's keys */
	sim_bucket(&s, leaf)[last - g.block_bytes + 0x42] ^= 0x10;
	ret = bkc_btree_lookup(&t, 0, 100000, 8, noop_fn, NULL);
	CHECK_EQ(ret, -EBADMSG);
	CHECK(!s.cache[leaf]);
	/* replaying an unclean journal: taken without it, to be rewritten */
	t.lenient = true;
	CHECK_EQ(bkc_btree_lookup(&t, 0, 100000, 8, noop_fn, NULL), 0);
	t.lenient = false;
	REQUIRE(s.cache[leaf]);
	CHECK(s.cache[leaf]->n.flags & BKC_NODE_REWRITE);
	CHECK(s.cache[leaf]->n.flags & BKC_NODE_DIRTY);
	CHECK(digest(&t).n <= d0.n);

	bkc_btree_exit(&t);
	bkc_alloc_exit(&a);
	sim_exit(&s);
	return tcheck_done("test_pins");
}
