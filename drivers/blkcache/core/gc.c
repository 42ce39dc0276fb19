// SPDX-License-Identifier: GPL-2.0
/*
 * Incremental GC.  See gc.h.
 */
#include "gc.h"

void bkc_gc_init(struct bkc_gc *gc, struct bkc_core *c)
{
	memset(gc, 0, sizeof(*gc));
	gc->c = c;
	gc->move_pct = 25;
}

bool bkc_gc_wanted(const struct bkc_gc *gc)
{
	const struct bkc_alloc *a = &gc->c->alloc;

	return bkc_alloc_need_gc(a) ||
		bkc_alloc_avail(a, BKC_ALLOC_DATA) < a->free_target / 2;
}

/*
 * Choose buckets to move: dirty data buckets, not being filled, whose live
 * data is below move_pct of the bucket, emptiest first.
 */
static void pick_moves(struct bkc_gc *gc)
{
	struct bkc_alloc *a = &gc->c->alloc;
	u32 limit = (u32)(((u64)a->geom.bucket_sectors * gc->move_pct) / 100);
	u64 i;

	gc->nr_move = 0;
	if (bkc_alloc_avail(a, BKC_ALLOC_DATA) >= a->free_target)
		return;
	for (i = a->geom.first_bucket; i < a->geom.nbuckets; i++) {
		const struct bkc_bucket *b = &a->b[i];
		u32 j;

		if (bkc_alloc_type(a, i) != BKC_BUCKET_DATA || !b->dirty ||
		    b->live >= limit || (b->state & BKC_BF_OPEN))
			continue;
		if (gc->nr_move == BKC_GC_MOVE_MAX &&
		    b->live >= a->b[gc->move[gc->nr_move - 1]].live)
			continue;
		/* insertion by live count, emptiest first */
		j = gc->nr_move < BKC_GC_MOVE_MAX ? gc->nr_move++ :
			BKC_GC_MOVE_MAX - 1;
		while (j && a->b[gc->move[j - 1]].live > b->live) {
			gc->move[j] = gc->move[j - 1];
			j--;
		}
		gc->move[j] = i;
	}
}

static bool moving(const struct bkc_gc *gc, u64 bucket)
{
	u32 i;

	for (i = 0; i < gc->nr_move; i++)
		if (gc->move[i] == bucket)
			return true;
	return false;
}

void bkc_gc_start(struct bkc_gc *gc)
{
	if (gc->state != BKC_GC_IDLE)
		return;
	bkc_alloc_gc_start(&gc->c->alloc);
	gc->start_seq = gc->c->journal.seq;
	gc->pos = 0;
	gc->since_merge = 0;
	pick_moves(gc);
	gc->state = BKC_GC_WALK;
}

static int scan_key(void *arg, const struct bkc_key *k)
{
	struct bkc_gc *gc = arg;

	gc->stats.keys_scanned++;
	gc->pos = bkc_key_end(k);
	if (bkc_btree_key_stale(&gc->c->tree, k)) {
		gc->stale[gc->nr_stale++] = *k;
		if (gc->nr_stale == BKC_GC_STALE_MAX)
			gc->stopped = true;
	} else if (gc->nr_move && moving(gc, bkc_key_bucket(k))) {
		gc->move_fn(gc->move_arg, k);
		gc->stats.moves++;
	}
	if (!--gc->budget)
		gc->stopped = true;
	return gc->stopped;
}

static int walk_step(struct bkc_gc *gc)
{
	struct bkc_core *c = gc->c;
	u64 from = gc->pos;
	u32 i;
	int ret;

	gc->nr_stale = 0;
	gc->stopped = false;
	ret = bkc_btree_iter(&c->tree, from, BKC_POS_MAX, true, scan_key, gc);
	if (ret < 0) {
		/* stale keys seen so far are not dropped: walk them again */
		gc->pos = from;
		return ret;
	}
	for (i = 0; i < gc->nr_stale; i++) {
		struct bkc_key h;

		if (!bkc_btree_key_stale(&c->tree, &gc->stale[i]))
			continue;
		if (bkc_alloc_avail(&c->alloc, BKC_ALLOC_BTREE) <
		    bkc_btree_insert_reserve(&c->tree)) {
			gc->pos = gc->stale[i].pos;
			return -ENOSPC;
		}
		bkc_key_init_hole(&h, gc->stale[i].pos, gc->stale[i].len);
		/* not journalled, but pinned to the open entry (see gc.h) */
		ret = bkc_btree_insert(&c->tree, &h, c->journal.seq);
		if (ret) {
			gc->pos = gc->stale[i].pos;
			return ret;
		}
		gc->stats.stale_dropped++;
	}
	if (++gc->since_merge >= 4 && from) {
		gc->since_merge = 0;
		ret = bkc_btree_coalesce(&c->tree, from, 0);
		if (ret > 0)
			gc->stats.merges++;
		else if (ret < 0 && ret != -ENOSPC)
			return ret;
	}
	if (gc->stopped)
		return BKC_GC_MORE;
	/* the walk reached the end of the tree */
	ret = bkc_btree_coalesce(&c->tree, 0, BKC_BTREE_MAX_DEPTH - 1);
	if (ret < 0 && ret != -ENOSPC)
		return ret;
	gc->end_seq = c->journal.seq;
	gc->state = BKC_GC_FLUSH;
	return BKC_GC_WAIT;
}

int bkc_gc_step(struct bkc_gc *gc, u32 budget, bkc_gc_move_fn fn, void *arg)
{
	struct bkc_core *c = gc->c;

	switch (gc->state) {
	case BKC_GC_IDLE:
		return 0;
	case BKC_GC_WALK:
		gc->budget = budget ? budget : 1;
		gc->move_fn = fn;
		gc->move_arg = arg;
		if (!fn)
			gc->nr_move = 0;
		return walk_step(gc);
	case BKC_GC_FLUSH:
		if (c->journal.durable_last <= gc->end_seq)
			return BKC_GC_WAIT;
		bkc_alloc_gc_finish(&c->alloc);
		gc->state = BKC_GC_IDLE;
		gc->stats.passes++;
		return 0;
	}
	return -EINVAL;
}

static int recount_key(void *arg, const struct bkc_key *k)
{
	bkc_alloc_account(arg, k, 1);
	return 0;
}

int bkc_gc_recount(struct bkc_core *c)
{
	bkc_alloc_reset_counts(&c->alloc);
	return bkc_btree_iter(&c->tree, 0, BKC_POS_MAX, false, recount_key,
			      &c->alloc);
}
