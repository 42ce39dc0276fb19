// SPDX-License-Identifier: GPL-2.0
/*
 * Bucket allocator.  See alloc.h.
 *
 * Free buckets sit in a ring (free) once they are safe to write: either
 * no key points into them at all (fresh format, or unreferenced when the
 * cache was opened), or their new generation is durable in the journal.
 * Invalidated buckets wait in a second ring (pend) tagged with the journal
 * seq that records their new generation.  Both rings are bounded; buckets
 * that do not fit stay where they are and are picked up later.
 */
#include "alloc.h"
#include "policy.h"

static_assert(sizeof(struct bkc_bucket) == 16);

#define CAND_CAP	256
#define AGE_CLAMP	(1U << 30)

static u32 ilog2_u32(u32 v)
{
	u32 r = 0;

	while (v >>= 1)
		r++;
	return r;
}

static inline u32 btype(const struct bkc_bucket *b)
{
	return b->state & BKC_BT_MASK;
}

static inline void set_type(struct bkc_bucket *b, u32 type)
{
	b->state = (b->state & ~BKC_BT_MASK) | type;
}

u64 bkc_alloc_rand(struct bkc_alloc *a)
{
	/* xorshift64* */
	u64 x = a->rand_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	a->rand_state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

int bkc_alloc_init(struct bkc_alloc *a, const struct bkc_geom *g,
		   u32 ndevs, u32 repl, u64 seed)
{
	u64 nb = g->nbuckets;
	u64 bucket_bytes = (u64)g->bucket_sectors << 9;
	u64 table, slots;
	u32 spare, i;

	memset(a, 0, sizeof(*a));
	if (!nb || nb > BKC_NBUCKETS_MAX || !is_power_of_2(g->bucket_sectors) ||
	    g->first_bucket >= nb || !ndevs || !bkc_repl_get(repl))
		return -EINVAL;
	a->geom = *g;
	a->bucket_shift = ilog2_u32(g->bucket_sectors);
	a->block_sectors = max_t(u32, g->block_bytes >> 9, 1);
	a->repl = bkc_repl_get(repl);
	a->repl_id = repl;
	a->rand_state = (seed * BKC_GOLDEN64) | 1;
	a->ndevs = ndevs;

	/* the bucket table needs this many buckets; keep them for it */
	table = DIV_ROUND_UP(nb * sizeof(struct bkc_bucket_disk),
			     bucket_bytes / 2) + 1;
	a->reserve_meta = min_t(u64, table + 2, nb / 8);
	a->reserve_btree = clamp_t(u64, nb >> 10, 16, 1024);
	spare = clamp_t(u64, nb >> 6, 16, 16384);
	a->free_target = a->reserve_btree + a->reserve_meta + spare;
	a->free_cap = a->free_target * 2;
	a->pend_cap = a->free_target * 2;
	a->cand_cap = CAND_CAP;

	a->b = bkc_kvzalloc(nb * sizeof(*a->b));
	a->free = bkc_kvzalloc(a->free_cap * sizeof(u64));
	a->pend_bucket = bkc_kvzalloc(a->pend_cap * sizeof(u64));
	a->pend_seq = bkc_kvzalloc(a->pend_cap * sizeof(u64));
	a->cand = bkc_kvzalloc(a->cand_cap * sizeof(*a->cand));
	a->freeing_cap = clamp_t(u64, nb / 64, 64, 65536);
	a->freeing = bkc_kvzalloc(a->freeing_cap * sizeof(u64));
	a->dev_dirty = bkc_kvzalloc(ndevs * sizeof(u64));
	/* a slot per granule of the cache or two, so they fill no faster */
	slots = BKC_DSUM_MIN;
	while (slots < BKC_DSUM_MAX &&
	       slots < (nb * g->bucket_sectors) >> BKC_DSUM_SHIFT)
		slots <<= 1;
	a->dsum_mask = slots - 1;
	a->dsum = bkc_kvzalloc(slots * sizeof(*a->dsum));
	if (!a->b || !a->free || !a->pend_bucket || !a->pend_seq ||
	    !a->cand || !a->dev_dirty || !a->freeing || !a->dsum) {
		bkc_alloc_exit(a);
		return -ENOMEM;
	}
	for (i = 0; i < BKC_WP_NR; i++)
		a->wp[i] = -1;
	for (i = 0; i < g->first_bucket; i++)
		set_type(&a->b[i], BKC_BUCKET_SB);
	return 0;
}

void bkc_alloc_exit(struct bkc_alloc *a)
{
	bkc_kvfree(a->b);
	bkc_kvfree(a->free);
	bkc_kvfree(a->pend_bucket);
	bkc_kvfree(a->pend_seq);
	bkc_kvfree(a->cand);
	bkc_kvfree(a->dev_dirty);
	bkc_kvfree(a->freeing);
	bkc_kvfree(a->dsum);
	memset(a, 0, sizeof(*a));
}

void bkc_alloc_format(struct bkc_alloc *a)
{
	u64 i;

	for (i = a->geom.first_bucket; i < a->geom.nbuckets; i++)
		memset(&a->b[i], 0, sizeof(a->b[i]));
	a->unref_pos = a->geom.first_bucket;
	a->unref_done = false;
}

void bkc_alloc_set_journal(struct bkc_alloc *a, const u64 *buckets, u32 nr)
{
	u32 i;

	for (i = 0; i < nr; i++)
		if (buckets[i] < a->geom.nbuckets)
			bkc_alloc_mark(a, buckets[i], BKC_BUCKET_JOURNAL);
}

void bkc_alloc_load(struct bkc_alloc *a, u64 bucket, u8 gen, u8 oldest,
		    u32 prio)
{
	struct bkc_bucket *b = &a->b[bucket];

	b->gen = gen;
	b->oldest_gen = oldest;
	b->gc_gen = gen;
	b->prio = prio;
}

void bkc_alloc_set_gen(struct bkc_alloc *a, u64 bucket, u8 gen)
{
	if (bucket < a->geom.nbuckets)
		WRITE_ONCE(a->b[bucket].gen, gen);
}

void bkc_alloc_mark(struct bkc_alloc *a, u64 bucket,
		    enum bkc_bucket_type type)
{
	struct bkc_bucket *b;

	if (bucket < a->geom.first_bucket || bucket >= a->geom.nbuckets)
		return;
	b = &a->b[bucket];
	b->state |= BKC_BF_REF;
	if (type != BKC_BUCKET_FREE &&
	    (btype(b) == BKC_BUCKET_FREE || type != BKC_BUCKET_DATA))
		set_type(b, type);
}

void bkc_alloc_open_finish(struct bkc_alloc *a)
{
	a->unref_pos = a->geom.first_bucket;
	a->unref_done = false;
}

enum bkc_bucket_state bkc_alloc_state(const struct bkc_alloc *a, u64 bucket)
{
	const struct bkc_bucket *b = &a->b[bucket];

	switch (btype(b)) {
	case BKC_BUCKET_DATA:
		return b->dirty ? BKC_BS_DIRTY : BKC_BS_CLEAN;
	case BKC_BUCKET_BTREE:
		return BKC_BS_BTREE;
	case BKC_BUCKET_JOURNAL:
		return BKC_BS_JOURNAL;
	case BKC_BUCKET_META:
		return BKC_BS_META;
	case BKC_BUCKET_SB:
		return BKC_BS_SB;
	}
	return BKC_BS_FREE;
}

const char *bkc_bucket_state_name(enum bkc_bucket_state s)
{
	static const char * const names[BKC_BS_NR] = {
		"free", "clean", "dirty", "btree", "journal", "meta",
		"superblock",
	};

	return s < BKC_BS_NR ? names[s] : "unknown";
}

/* ---- accounting ---- */

/*
 * Count the dirty sectors [@lba, @lba + @len) in (@sign > 0) or out of
 * the summary slots of the granules they fall in.  Sectors, not keys:
 * an insert counts out the pieces of older keys it replaces, which need
 * not be whole granules.  A key is at most a bucket, so the loop is
 * short.
 */
static void dsum_count(struct bkc_alloc *a, u32 dev, u64 lba, u32 len,
		       int sign)
{
	u64 slot = bkc_dsum_slot(a, dev, lba), end = lba + len;

	BKC_ASSERT(len);
	while (lba < end) {
		u64 next = min_t(u64, ((lba >> BKC_DSUM_SHIFT) + 1) <<
				 BKC_DSUM_SHIFT, end);
		u32 n = next - lba, v = a->dsum[slot];

		/* single-copy stores: the glue reads the slots locklessly */
		if (v != BKC_DSUM_STUCK) {
			BKC_ASSERT(sign > 0 || v >= n);
			if (sign > 0)
				v = min_t(u32, v + n, BKC_DSUM_STUCK);
			else
				v -= min(v, n);
			WRITE_ONCE(a->dsum[slot], v);
		}
		lba = next;
		slot = (slot + 1) & a->dsum_mask;
	}
}

void bkc_alloc_account(struct bkc_alloc *a, const struct bkc_key *k, int sign)
{
	struct bkc_bucket *b;
	u32 dev = bkc_pos_dev(k->pos);
	u32 len = k->len;

	if (!bkc_alloc_key_live(a, k))
		return;
	b = &a->b[bkc_key_bucket(k)];
	/* single-copy stores: the glue reads the totals locklessly */
	if (sign > 0) {
		b->live += len;
		WRITE_ONCE(a->live_sectors, a->live_sectors + len);
		if (bkc_key_dirty(k)) {
			dsum_count(a, dev, bkc_pos_lba(k->pos), len, 1);
			b->dirty += len;
			WRITE_ONCE(a->dirty_sectors, a->dirty_sectors + len);
			if (dev < a->ndevs)
				WRITE_ONCE(a->dev_dirty[dev],
					   a->dev_dirty[dev] + len);
		}
		return;
	}
	BKC_ASSERT(len <= b->live);
	len = min_t(u32, len, b->live);
	b->live -= len;
	WRITE_ONCE(a->live_sectors,
		   a->live_sectors - min_t(u64, len, a->live_sectors));
	if (bkc_key_dirty(k)) {
		BKC_ASSERT(k->len <= b->dirty);
		len = min_t(u32, k->len, b->dirty);
		b->dirty -= len;
		WRITE_ONCE(a->dirty_sectors,
			   a->dirty_sectors - min_t(u64, len, a->dirty_sectors));
		if (dev < a->ndevs)
			WRITE_ONCE(a->dev_dirty[dev], a->dev_dirty[dev] -
				   min_t(u64, len, a->dev_dirty[dev]));
		dsum_count(a, dev, bkc_pos_lba(k->pos), k->len, -1);
	}
}

void bkc_alloc_reset_counts(struct bkc_alloc *a)
{
	u64 i;

	for (i = 0; i < a->geom.nbuckets; i++) {
		a->b[i].live = 0;
		a->b[i].dirty = 0;
	}
	a->live_sectors = 0;
	a->dirty_sectors = 0;
	memset(a->dev_dirty, 0, a->ndevs * sizeof(u64));
	memset(a->dsum, 0, (a->dsum_mask + 1) * sizeof(*a->dsum));
}

/* ---- free list ---- */

static u32 class_keep(const struct bkc_alloc *a, enum bkc_alloc_class class)
{
	switch (class) {
	case BKC_ALLOC_DATA:
		return a->reserve_btree + a->reserve_meta;
	case BKC_ALLOC_BTREE:
		return a->reserve_meta;
	default:
		return 0;
	}
}

u32 bkc_alloc_avail(const struct bkc_alloc *a, enum bkc_alloc_class class)
{
	u32 keep = class_keep(a, class);
	u32 n = a->nr_free;

	/* buckets nobody ever used can join the free list at any time */
	if (!a->unref_done)
		n = a->free_cap;
	return n > keep ? n - keep : 0;
}

void bkc_alloc_shares(const struct bkc_alloc *a, struct bkc_alloc_shares *s)
{
	u64 i;

	s->unused = 0;
	s->clean = 0;
	s->dirty = 0;
	s->metadata = a->geom.first_bucket;
	for (i = a->geom.first_bucket; i < a->geom.nbuckets; i++) {
		const struct bkc_bucket *b = &a->b[i];

		switch (btype(b)) {
		case BKC_BUCKET_DATA:
			if (b->dirty)
				s->dirty++;
			else if (b->live)
				s->clean++;
			else
				s->unused++;
			break;
		case BKC_BUCKET_FREE:
			s->unused++;
			break;
		default:
			s->metadata++;
		}
	}
}

static void push_free(struct bkc_alloc *a, u64 bucket)
{
	a->free[(a->free_head + a->nr_free) % a->free_cap] = bucket;
	a->nr_free++;
	a->b[bucket].state |= BKC_BF_AVAIL;
}

/*
 * Move buckets that no key references (after format or open) straight to
 * the free list; they need no generation bump.
 */
static void refill_unref(struct bkc_alloc *a, u32 budget)
{
	while (!a->unref_done && budget-- && a->nr_free < a->free_cap) {
		struct bkc_bucket *b = &a->b[a->unref_pos];

		if (btype(b) == BKC_BUCKET_FREE && !(b->state & ~BKC_BT_MASK))
			push_free(a, a->unref_pos);
		if (++a->unref_pos >= a->geom.nbuckets)
			a->unref_done = true;
	}
}

static int pop_free(struct bkc_alloc *a, enum bkc_alloc_class class,
		    u64 *bucket)
{
	u32 keep = class_keep(a, class);
	u64 b;

	if (a->nr_free <= keep)
		refill_unref(a, a->geom.nbuckets);
	if (a->nr_free <= keep) {
		a->stats.enospc++;
		return -ENOSPC;
	}
	b = a->free[a->free_head];
	a->free_head = (a->free_head + 1) % a->free_cap;
	a->nr_free--;
	a->b[b].state &= ~BKC_BF_AVAIL;
	a->b[b].state |= BKC_BF_REF;
	a->b[b].live = 0;
	a->b[b].dirty = 0;
	*bucket = b;
	return 0;
}

int bkc_alloc_bucket(struct bkc_alloc *a, enum bkc_alloc_class class,
		     u64 *bucket)
{
	int ret;

	if (class != BKC_ALLOC_BTREE && class != BKC_ALLOC_META)
		return -EINVAL;
	ret = pop_free(a, class, bucket);
	if (ret)
		return ret;
	set_type(&a->b[*bucket], class == BKC_ALLOC_BTREE ?
		 BKC_BUCKET_BTREE : BKC_BUCKET_META);
	if (class == BKC_ALLOC_BTREE)
		a->stats.btree_allocs++;
	else
		a->stats.meta_allocs++;
	return 0;
}

void bkc_alloc_freeing(struct bkc_alloc *a, u64 bucket)
{
	if (!(a->b[bucket].state & BKC_BF_FREEING)) {
		a->b[bucket].state |= BKC_BF_FREEING;
		if (a->nr_freeing < a->freeing_cap)
			a->freeing[a->nr_freeing] = bucket;
		a->nr_freeing++;
	}
}

bool bkc_alloc_gen_bumpable(const struct bkc_alloc *a, u64 bucket)
{
	const struct bkc_bucket *b = &a->b[bucket];

	return (u8)(b->gen - b->oldest_gen) < BKC_GEN_LIMIT - 1;
}

bool bkc_alloc_need_gc(const struct bkc_alloc *a)
{
	return a->gc_wanted;
}

/* Bump @bucket's gen and queue it until journal seq @jseq is durable. */
static int invalidate(struct bkc_alloc *a, u64 bucket, u64 jseq)
{
	struct bkc_bucket *b = &a->b[bucket];
	u32 at;

	if (a->nr_pend >= a->pend_cap)
		return -EAGAIN;
	if (!bkc_alloc_gen_bumpable(a, bucket)) {
		a->stats.window_blocked++;
		a->gc_wanted = true;
		return -EAGAIN;
	}
	if (b->dirty)
		return -EBUSY;
	WRITE_ONCE(a->live_sectors,
		   a->live_sectors - min_t(u64, b->live, a->live_sectors));
	/* read locklessly by the glue: see bkc_core_gen_lockless() */
	WRITE_ONCE(b->gen, b->gen + 1);
	if ((u8)(b->gen - b->oldest_gen) >= BKC_GEN_WINDOW)
		a->gc_wanted = true;
	b->live = 0;
	b->state = BKC_BUCKET_FREE | BKC_BF_PENDING;
	at = (a->pend_head + a->nr_pend) % a->pend_cap;
	a->pend_bucket[at] = bucket;
	a->pend_seq[at] = jseq;
	a->nr_pend++;
	a->stats.invalidated++;
	return 0;
}

/*
 * A btree or table bucket that no durable metadata points at any more is
 * reused without a generation bump: no key carries its current generation
 * except through metadata that is gone (C4, second clause).
 */
static void release(struct bkc_alloc *a, u64 bucket)
{
	struct bkc_bucket *b = &a->b[bucket];

	b->state = BKC_BUCKET_FREE;
	b->live = 0;
	b->dirty = 0;
	if (a->nr_free < a->free_cap) {
		push_free(a, bucket);
	} else if (a->unref_done || bucket < a->unref_pos) {
		/* no room on the free list: the unreferenced scan finds it */
		a->unref_done = false;
		a->unref_pos = a->geom.first_bucket;
	}
}

u32 bkc_alloc_release_freeing(struct bkc_alloc *a)
{
	u64 i, n = a->nr_freeing;

	if (n <= a->freeing_cap) {
		for (i = 0; i < n; i++)
			if (a->b[a->freeing[i]].state & BKC_BF_FREEING)
				release(a, a->freeing[i]);
	} else {
		/* more than the list holds: find them all */
		for (i = a->geom.first_bucket; i < a->geom.nbuckets; i++)
			if (a->b[i].state & BKC_BF_FREEING)
				release(a, i);
	}
	a->nr_freeing = 0;
	return n;
}

/* One bucket that was never put on the freeing list (old table). */
void bkc_alloc_release(struct bkc_alloc *a, u64 bucket)
{
	if (a->b[bucket].state & BKC_BF_FREEING)
		return;		/* goes with the next release_freeing() */
	release(a, bucket);
}

int bkc_alloc_invalidate_bucket(struct bkc_alloc *a, u64 bucket, u64 jseq)
{
	struct bkc_bucket *b;

	if (bucket < a->geom.first_bucket || bucket >= a->geom.nbuckets)
		return -EINVAL;
	b = &a->b[bucket];
	if (btype(b) != BKC_BUCKET_DATA && btype(b) != BKC_BUCKET_FREE)
		return -EINVAL;
	if (b->state & (BKC_BF_OPEN | BKC_BF_PENDING | BKC_BF_AVAIL))
		return -EBUSY;
	return invalidate(a, bucket, jseq);
}

void bkc_alloc_journal_durable(struct bkc_alloc *a, u64 seq)
{
	while (a->nr_pend && a->pend_seq[a->pend_head] <= seq &&
	       a->nr_free < a->free_cap) {
		u64 b = a->pend_bucket[a->pend_head];

		a->pend_head = (a->pend_head + 1) % a->pend_cap;
		a->nr_pend--;
		a->b[b].state &= ~BKC_BF_PENDING;
		push_free(a, b);
	}
}

bool bkc_alloc_want_invalidate(const struct bkc_alloc *a)
{
	return a->nr_free + a->nr_pend < a->free_target &&
		a->nr_pend < a->pend_cap;
}

/* ---- victims ---- */

/* May the replacement policy evict @bucket? */
static bool evictable(const struct bkc_alloc *a, u64 bucket)
{
	const struct bkc_bucket *b = &a->b[bucket];
	u32 t = btype(b);

	if (t != BKC_BUCKET_DATA && t != BKC_BUCKET_FREE)
		return false;
	if (b->state & (BKC_BF_OPEN | BKC_BF_PENDING | BKC_BF_AVAIL |
			BKC_BF_FREEING))
		return false;
	if (t == BKC_BUCKET_FREE && !(b->state & BKC_BF_REF))
		return false;		/* refill_unref() takes those */
	return !b->dirty && bkc_alloc_gen_bumpable(a, bucket);
}

static void cand_sift(struct bkc_cand *h, u32 n, u32 i)
{
	for (;;) {
		u32 l = 2 * i + 1, m = i;
		struct bkc_cand tmp;

		if (l < n && h[l].score < h[m].score)
			m = l;
		if (l + 1 < n && h[l + 1].score < h[m].score)
			m = l + 1;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

static void cand_push(struct bkc_alloc *a, u64 score, u64 bucket)
{
	struct bkc_cand *h = a->cand;
	u32 i;

	if (a->nr_cand == a->cand_cap) {
		if (score <= h[0].score)
			return;
		h[0].score = score;
		h[0].bucket = bucket;
		cand_sift(h, a->nr_cand, 0);
		return;
	}
	i = a->nr_cand++;
	h[i].score = score;
	h[i].bucket = bucket;
	while (i) {
		u32 p = (i - 1) / 2;
		struct bkc_cand tmp;

		if (h[p].score <= h[i].score)
			break;
		tmp = h[p];
		h[p] = h[i];
		h[i] = tmp;
		i = p;
	}
}

/* Heap sort: leaves a->cand ordered by descending score. */
static void cand_sort(struct bkc_alloc *a)
{
	u32 n = a->nr_cand;

	while (n > 1) {
		struct bkc_cand tmp = a->cand[0];

		a->cand[0] = a->cand[n - 1];
		a->cand[n - 1] = tmp;
		n--;
		cand_sift(a->cand, n, 0);
	}
}

/* Scan up to @budget buckets; true when a full pass has finished. */
static bool scan(struct bkc_alloc *a, u32 budget)
{
	if (!a->scanning) {
		a->scanning = true;
		a->scan_pos = a->geom.first_bucket;
		a->nr_cand = 0;
		a->cand_next = 0;
		a->rand_seed = bkc_alloc_rand(a);
	}
	while (budget-- && a->scan_pos < a->geom.nbuckets) {
		u64 i = a->scan_pos++;
		struct bkc_bucket *b = &a->b[i];

		if ((u32)(a->clock - b->prio) > AGE_CLAMP)
			b->prio = a->clock - AGE_CLAMP;
		if (!evictable(a, i))
			continue;
		cand_push(a, b->live ? a->repl->score(a, i) : ~0ULL, i);
	}
	if (a->scan_pos < a->geom.nbuckets)
		return false;
	cand_sort(a);
	a->scanning = false;
	a->stats.scans++;
	return true;
}

int bkc_alloc_invalidate(struct bkc_alloc *a, u64 jseq, u32 scan_budget,
			 u64 *bucket)
{
	bool scanned = false;

	refill_unref(a, scan_budget);
	for (;;) {
		while (a->cand_next < a->nr_cand) {
			u64 b = a->cand[a->cand_next++].bucket;
			int ret;

			if (!evictable(a, b))
				continue;
			if (!a->b[b].live)
				a->stats.invalidated_empty++;
			ret = invalidate(a, b, jseq);
			if (ret == -EAGAIN) {
				a->cand_next--;
				return 0;
			}
			if (ret)
				continue;
			*bucket = b;
			return 1;
		}
		if (scanned || !scan(a, scan_budget))
			return 0;
		scanned = true;
		if (!a->nr_cand)
			return 0;
	}
}

/* ---- data ---- */

static void open_release(struct bkc_alloc *a, struct bkc_obucket *o)
{
	a->b[o->bucket].state &= ~BKC_BF_OPEN;
	memset(o, 0, sizeof(*o));
}

static void wp_close(struct bkc_alloc *a, u32 wp)
{
	struct bkc_obucket *o;

	if (a->wp[wp] < 0)
		return;
	o = &a->open[a->wp[wp]];
	o->closed = true;
	if (!o->refs)
		open_release(a, o);
	a->wp[wp] = -1;
}

int bkc_alloc_data(struct bkc_alloc *a, u32 wp, u32 sectors, u64 *bucket,
		   u32 *off, u32 *got, u8 *gen)
{
	u32 bs = a->geom.bucket_sectors, n, i;
	struct bkc_obucket *o;

	if (wp >= BKC_WP_NR || !sectors)
		return -EINVAL;
	if (a->wp[wp] >= 0 && a->open[a->wp[wp]].used >= bs)
		wp_close(a, wp);
	if (a->wp[wp] < 0) {
		u64 b;
		int ret;

		for (i = 0; i < BKC_OPEN_MAX; i++)
			if (!a->open[i].bucket)
				break;
		if (i == BKC_OPEN_MAX)
			return -EAGAIN;
		ret = pop_free(a, BKC_ALLOC_DATA, &b);
		if (ret)
			return ret;
		set_type(&a->b[b], BKC_BUCKET_DATA);
		a->b[b].state |= BKC_BF_OPEN;
		a->repl->filled(a, b);
		o = &a->open[i];
		o->bucket = b;
		o->used = 0;
		o->refs = 0;
		o->closed = false;
		a->wp[wp] = i;
	}
	o = &a->open[a->wp[wp]];
	n = min_t(u32, sectors, bs - o->used);
	*bucket = o->bucket;
	*off = o->used;
	*got = n;
	*gen = a->b[o->bucket].gen;
	n = (n + a->block_sectors - 1) & ~(a->block_sectors - 1);
	o->used = min_t(u32, o->used + n, bs);
	o->refs++;
	a->stats.data_allocs++;
	if (o->used >= bs)
		wp_close(a, wp);
	return 0;
}

void bkc_alloc_data_put(struct bkc_alloc *a, u64 bucket)
{
	u32 i;

	for (i = 0; i < BKC_OPEN_MAX; i++) {
		struct bkc_obucket *o = &a->open[i];

		if (o->bucket != bucket || !o->refs)
			continue;
		if (!--o->refs && o->closed)
			open_release(a, o);
		return;
	}
}

void bkc_alloc_close_all(struct bkc_alloc *a)
{
	u32 i;

	for (i = 0; i < BKC_WP_NR; i++)
		wp_close(a, i);
}

/* ---- policy and GC hooks ---- */

void bkc_alloc_touch(struct bkc_alloc *a, u64 bucket)
{
	if (bucket < a->geom.nbuckets &&
	    btype(&a->b[bucket]) == BKC_BUCKET_DATA)
		a->repl->accessed(a, bucket);
}

int bkc_alloc_set_policy(struct bkc_alloc *a, u32 repl)
{
	const struct bkc_repl_ops *ops = bkc_repl_get(repl);

	if (!ops)
		return -EINVAL;
	a->repl = ops;
	a->repl_id = repl;
	/* candidates were scored by the old policy: rescan */
	a->nr_cand = 0;
	a->cand_next = 0;
	a->scanning = false;
	return 0;
}

void bkc_alloc_gc_start(struct bkc_alloc *a)
{
	u64 i;

	for (i = 0; i < a->geom.nbuckets; i++)
		a->b[i].gc_gen = a->b[i].gen;
}

void bkc_alloc_gc_finish(struct bkc_alloc *a)
{
	u64 i;

	a->gc_wanted = false;
	for (i = 0; i < a->geom.nbuckets; i++) {
		struct bkc_bucket *b = &a->b[i];

		b->oldest_gen = b->gc_gen;
		if ((u8)(b->gen - b->oldest_gen) >= BKC_GEN_WINDOW)
			a->gc_wanted = true;
	}
}
