// SPDX-License-Identifier: GPL-2.0
/*
 * Model test: random inserts (dirty and clean), overwrites, invalidations,
 * writeback compare-and-set, range lookups and iteration against a
 * trivial per-sector reference map, with bucket evictions, GC passes,
 * node flushes, node-cache evictions (so nodes are decoded back from their
 * on-disk images) and merges mixed in.  After every batch the tree
 * invariants, the full contents and the allocator's live-sector counts
 * are checked.
 *
 *   test_model [ops]     default 1,000,000 ops over fixed seeds plus one
 *                        random seed, which is printed; BKC_SEED=n replays
 *                        a single seed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "tcheck.h"

#define NDEV		3
#define SPAN		(1U << 15)	/* sectors per device in the model */
#define MAXW		160		/* longest write, sectors */

static const u32 devs[NDEV] = { 0, 1, BKC_MAX_DEV };
static const u64 dev_base[NDEV] = { 0, 1000000, BKC_LBA_MAX + 1 - SPAN };

struct ref {
	u64	bucket;
	u32	off;
	u8	gen;
	u8	state;		/* 0 none, 1 clean, 2 dirty */
};

struct model {
	struct sim		sim;
	struct bkc_alloc	a;
	struct bkc_btree	t;
	struct ref		*ref[NDEV];
	u64			rng;
	u64			ops;
	u64			lookups;
	u64			finds;		/* bkc_btree_find() said 1 */
	u64			stale_evictions;	/* evict_clean() */
	u64			sectors_checked;
	u64			gc_passes;
	u64			evictions;
	u64			writebacks;
	u64			merges;
};

static u64 rnd(struct model *m, u64 n)
{
	return sim_rand(&m->rng) % n;
}

static bool ref_live(struct model *m, const struct ref *r)
{
	return r->state && bkc_alloc_gen(&m->a, r->bucket) == r->gen;
}

/* ---- reference-checking callbacks ---- */

struct lk {
	struct model	*m;
	u32		d;
	u64		next;	/* next position expected */
	bool		bad;
};

static int lookup_cb(void *arg, const struct bkc_key *k, u64 pos, u32 len)
{
	struct lk *l = arg;
	struct model *m = l->m;
	u32 i;

	if (pos != l->next || !len) {
		l->bad = true;
		return 0;
	}
	l->next = pos + len;
	for (i = 0; i < len; i++) {
		u64 lba = bkc_pos_lba(pos) + i - dev_base[l->d];
		struct ref *r = &m->ref[l->d][lba];

		m->sectors_checked++;
		if (!k) {
			if (ref_live(m, r))
				l->bad = true;
			continue;
		}
		if (!ref_live(m, r) || r->bucket != bkc_key_bucket(k) ||
		    r->off != k->off + i || r->gen != bkc_key_gen(k) ||
		    (r->state == 2) != bkc_key_dirty(k))
			l->bad = true;
	}
	return 0;
}

struct one {
	u32		pieces;
	bool		key;
	struct bkc_key	k;
};

static int one_cb(void *arg, const struct bkc_key *k, u64 pos, u32 len)
{
	struct one *o = arg;

	if (!o->pieces++ && k) {
		o->key = true;
		o->k = *k;
	}
	return 0;
}

/*
 * bkc_btree_find() says 1 exactly when the range walk gives one piece, a
 * key: with that key whole, the piece a clip of it.
 */
static void check_find(struct model *m, u32 d, u64 lba, u32 len)
{
	struct one o = { 0 };
	struct bkc_key k;
	u64 at = dev_base[d] + lba;
	int ret, want;

	CHECK_EQ(bkc_btree_lookup(&m->t, devs[d], at, len, one_cb, &o), 0);
	want = o.pieces == 1 && o.key;
	ret = bkc_btree_find(&m->t, devs[d], at, len, &k);
	CHECK_EQ(ret, want);
	if (ret != 1 || !want)
		return;
	m->finds++;
	CHECK(k.pos <= bkc_pos(devs[d], at));
	CHECK(bkc_key_end(&k) >= bkc_pos(devs[d], at) + len);
	CHECK_EQ(k.ptr, o.k.ptr);
	CHECK_EQ(k.off + (u32)(bkc_pos(devs[d], at) - k.pos), o.k.off);
}

static void check_lookup(struct model *m, u32 d, u64 lba, u32 len)
{
	struct lk l = { .m = m, .d = d };
	u64 pos = bkc_pos(devs[d], dev_base[d] + lba);
	int ret;

	l.next = pos;
	ret = bkc_btree_lookup(&m->t, devs[d], dev_base[d] + lba, len,
			       lookup_cb, &l);
	m->lookups++;
	CHECK_EQ(ret, 0);
	check_find(m, d, lba, len);
	if (l.bad || l.next != pos + len) {
		fprintf(stderr, "lookup mismatch dev %u lba %llu len %u\n",
			d, (unsigned long long)lba, len);
		CHECK(0);
		exit(1);
	}
}

/* ---- operations ---- */

static void apply_hole(struct model *m, u32 d, u64 lba, u32 len)
{
	struct bkc_key k;

	bkc_key_init_hole(&k, bkc_pos(devs[d], dev_base[d] + lba), len);
	REQUIRE(bkc_btree_insert(&m->t, &k, 1) == 0);
	memset(&m->ref[d][lba], 0, len * sizeof(struct ref));
}

static void keep_free(struct model *m);
static void gc_pass(struct model *m);

static void flush_nodes(struct model *m)
{
	int ret, tries = 0;

	do {
		ret = sim_flush_tree(&m->sim, ~0ULL);
		/* nothing journalled here: every root version is committed */
		bkc_btree_root_committed(&m->t, m->t.disk_root_ver);
		while (bkc_btree_can_release(&m->t) &&
		       bkc_alloc_release_freeing(&m->a))
			bkc_alloc_journal_durable(&m->a, ~0ULL);
		bkc_alloc_journal_durable(&m->a, ~0ULL);
		if (ret == -ENOSPC)
			keep_free(m);
	} while (ret == -ENOSPC && ++tries < 100);
	if (ret < 0) {
		u64 i, st[BKC_BS_NR] = { 0 };

		for (i = 0; i < m->a.geom.nbuckets; i++)
			st[bkc_alloc_state(&m->a, i)]++;
		fprintf(stderr, "flush: %d free %u pend %u freeing %llu\n",
			ret, m->a.nr_free, m->a.nr_pend,
			(unsigned long long)m->a.nr_freeing);
		for (i = 0; i < BKC_BS_NR; i++)
			fprintf(stderr, "  %s buckets: %llu\n",
				bkc_bucket_state_name(i),
				(unsigned long long)st[i]);
		for (i = 0; i < 4; i++)
			fprintf(stderr, "  level %llu: %u dirty %u new\n",
				(unsigned long long)i, m->t.nr_dirty[i],
				m->t.nr_new[i]);
	}
	REQUIRE(ret >= 0);
}

struct stale_state {
	struct bkc_key	*v;
	u32		n;
	u32		max;
};

static int collect_stale(void *arg, const struct bkc_key *k)
{
	struct stale_state *st = arg;

	if (!bkc_key_hole(k) && st->n < st->max)
		st->v[st->n++] = *k;
	return 0;
}

/* A GC pass: drop every stale key, then move the gen window up. */
static void gc_pass(struct model *m)
{
	struct stale_state st;
	u64 from = 0;
	u32 i;

	st.max = 4096;
	st.v = malloc(st.max * sizeof(*st.v));
	REQUIRE(st.v);
	bkc_alloc_gc_start(&m->a);
	for (;;) {
		u32 got = 0;

		st.n = 0;
		REQUIRE(bkc_btree_iter(&m->t, from, BKC_POS_MAX, true,
				       collect_stale, &st) == 0);
		for (i = 0; i < st.n; i++) {
			struct bkc_key h;

			if (!bkc_btree_key_stale(&m->t, &st.v[i]))
				continue;
			bkc_key_init_hole(&h, st.v[i].pos, st.v[i].len);
			REQUIRE(bkc_btree_insert(&m->t, &h, 0) == 0);
			got++;
		}
		if (st.n < st.max)
			break;
		from = bkc_key_end(&st.v[st.n - 1]);
	}
	/* the reference forgets stale entries the same way */
	for (i = 0; i < NDEV; i++) {
		u32 j;

		for (j = 0; j < SPAN; j++)
			if (m->ref[i][j].state && !ref_live(m, &m->ref[i][j]))
				m->ref[i][j].state = 0;
	}
	flush_nodes(m);
	bkc_alloc_gc_finish(&m->a);
	free(st.v);
	m->gc_passes++;
}

/* Writeback: mark dirty keys of a range clean, compare-and-set style. */
static void writeback(struct model *m, u32 d, u64 lba, u32 len)
{
	struct bkc_key out[64], got[64];
	u64 pos = dev_base[d] + lba, end = pos + len;
	int n, i, j, ret;

again:
	n = bkc_btree_next_dirty(&m->t, devs[d], pos, out, 64);
	REQUIRE(n >= 0);
	for (i = 0; i < n; i++) {
		int c;

		if (bkc_pos_dev(out[i].pos) != devs[d] ||
		    bkc_pos_lba(out[i].pos) >= end)
			break;
		CHECK(bkc_key_dirty(&out[i]));
		c = bkc_btree_match(&m->t, &out[i], true, got, 64);
		REQUIRE(c >= 1);
		for (j = 0; j < c; j++) {
			u64 l = bkc_pos_lba(got[j].pos) - dev_base[d];
			u32 s;

			bkc_key_set_dirty(&got[j], false);
			ret = bkc_btree_insert(&m->t, &got[j], 1);
			if (ret)
				fprintf(stderr, "mark clean: %d\n", ret);
			REQUIRE(ret == 0);
			for (s = 0; s < got[j].len; s++)
				m->ref[d][l + s].state = 1;
		}
		m->writebacks++;
	}
	if (n == 64 && i == n) {
		pos = bkc_pos_lba(bkc_key_end(&out[n - 1]));
		goto again;
	}
}

static void writeback(struct model *m, u32 d, u64 lba, u32 len);

/*
 * Evict a random bucket that holds clean data, as the replacement policy
 * does once the cache is full (the model's cache never fills): the keys
 * into it go stale, and lookups must take them for misses.
 */
static void evict_clean(struct model *m)
{
	u32 d = rnd(m, NDEV), tries;

	for (tries = 0; tries < 64; tries++) {
		const struct ref *r = &m->ref[d][rnd(m, SPAN)];

		if (r->state != 1 || !ref_live(m, r))
			continue;
		/* refused while it holds dirty data or is open */
		if (bkc_alloc_invalidate_bucket(&m->a, r->bucket, 1) == 0) {
			m->stale_evictions++;
			bkc_alloc_journal_durable(&m->a, ~0ULL);
		}
		return;
	}
}

/*
 * The kernel's allocator and writeback threads: keep the free list topped
 * up, writing dirty data back when nothing clean is left to evict.
 */
static void keep_free(struct model *m)
{
	u64 b;
	u32 d;

	while (bkc_alloc_want_invalidate(&m->a) &&
	       bkc_alloc_invalidate(&m->a, 1, m->a.geom.nbuckets, &b) > 0)
		m->evictions++;
	bkc_alloc_journal_durable(&m->a, ~0ULL);
	if (bkc_alloc_need_gc(&m->a))
		gc_pass(m);
	if (m->a.nr_free >= m->a.reserve_btree + m->a.reserve_meta)
		return;
	for (d = 0; d < NDEV; d++)
		writeback(m, d, 0, SPAN);
	while (bkc_alloc_want_invalidate(&m->a) &&
	       bkc_alloc_invalidate(&m->a, 1, m->a.geom.nbuckets, &b) > 0)
		m->evictions++;
	bkc_alloc_journal_durable(&m->a, ~0ULL);
}

/* Make room: evict buckets by policy; write back when all is dirty. */
static void make_room(struct model *m)
{
	u64 b;
	int n = 0;

	while (bkc_alloc_want_invalidate(&m->a)) {
		int ret = bkc_alloc_invalidate(&m->a, 1, m->a.geom.nbuckets,
					       &b);

		REQUIRE(ret >= 0);
		if (!ret)
			break;
		n++;
		m->evictions++;
	}
	bkc_alloc_journal_durable(&m->a, ~0ULL);
	if (bkc_alloc_need_gc(&m->a))
		gc_pass(m);
	if (!n) {
		u32 d;

		for (d = 0; d < NDEV; d++)
			writeback(m, d, 0, SPAN);
		flush_nodes(m);
	}
}

static void do_write(struct model *m, u32 d, u64 lba, u32 len, bool dirty)
{
	while (len) {
		struct bkc_key k;
		u64 bucket;
		u32 off, got, i;
		u8 gen;
		int ret;

		ret = bkc_alloc_data(&m->a, dirty ? 0 : 1, len, &bucket, &off,
				     &got, &gen);
		if (ret == -ENOSPC) {
			make_room(m);
			continue;
		}
		REQUIRE(ret == 0);
		bkc_key_init(&k, devs[d], dev_base[d] + lba, got, bucket, off,
			     gen, dirty);
		ret = bkc_btree_insert(&m->t, &k, 1);
		if (ret == -ENOSPC) {
			flush_nodes(m);
			make_room(m);
			ret = bkc_btree_insert(&m->t, &k, 1);
		}
		REQUIRE(ret == 0);
		bkc_alloc_data_put(&m->a, bucket);
		for (i = 0; i < got; i++) {
			struct ref *r = &m->ref[d][lba + i];

			r->bucket = bucket;
			r->off = off + i;
			r->gen = gen;
			r->state = dirty ? 2 : 1;
		}
		lba += got;
		len -= got;
	}
}

/* ---- full checks ---- */

static bool dsum_empty(const struct bkc_alloc *a)
{
	u64 i;

	for (i = 0; i <= a->dsum_mask; i++)
		if (a->dsum[i])
			return false;
	return true;
}

struct full {
	struct model	*m;
	u8		*seen[NDEV];
	u32		*live;
	u32		*dirty;
	u64		dev_dirty[NDEV];
	u32		*dsum;		/* the dirty summary, counted */
	u64		prev_end;
	bool		bad;
};

static int full_cb(void *arg, const struct bkc_key *k)
{
	struct full *f = arg;
	struct model *m = f->m;
	u32 d, i;

	if (k->pos < f->prev_end)
		f->bad = true;
	f->prev_end = bkc_key_end(k);
	for (d = 0; d < NDEV; d++)
		if (bkc_pos_dev(k->pos) == devs[d])
			break;
	if (d == NDEV) {
		f->bad = true;
		return 0;
	}
	for (i = 0; i < k->len; i++) {
		u64 lba = bkc_pos_lba(k->pos) + i - dev_base[d];
		struct ref *r;

		if (lba >= SPAN) {
			f->bad = true;
			return 0;
		}
		r = &m->ref[d][lba];
		f->seen[d][lba] = 1;
		if (!ref_live(m, r) || r->bucket != bkc_key_bucket(k) ||
		    r->off != k->off + i || (r->state == 2) != bkc_key_dirty(k))
			f->bad = true;
	}
	f->live[bkc_key_bucket(k)] += k->len;
	if (bkc_key_dirty(k)) {
		f->dirty[bkc_key_bucket(k)] += k->len;
		f->dev_dirty[d] += k->len;
	}
	sim_dsum_count(&m->a, k, f->dsum);
	return 0;
}

static void full_check(struct model *m)
{
	struct bkc_btree_check c;
	struct full f = { .m = m };
	u64 nb = m->a.geom.nbuckets, i, live = 0, dirty = 0;
	u32 d, j;
	int ret;

	ret = bkc_btree_check(&m->t, &c);
	if (ret) {
		fprintf(stderr, "btree check: %s\n", c.why);
		CHECK(0);
		exit(1);
	}
	for (d = 0; d < NDEV; d++)
		f.seen[d] = calloc(SPAN, 1);
	f.live = calloc(nb, sizeof(u32));
	f.dirty = calloc(nb, sizeof(u32));
	f.dsum = calloc(m->a.dsum_mask + 1, sizeof(u32));
	REQUIRE(f.live && f.dirty && f.dsum);
	CHECK_EQ(bkc_btree_iter(&m->t, 0, BKC_POS_MAX, false, full_cb, &f), 0);
	CHECK(!f.bad);
	for (d = 0; d < NDEV; d++)
		for (j = 0; j < SPAN; j++)
			if (ref_live(m, &m->ref[d][j]) && !f.seen[d][j]) {
				fprintf(stderr, "key lost: dev %u lba %u\n",
					d, j);
				CHECK(0);
				exit(1);
			}
	for (i = 0; i < nb; i++) {
		if (m->a.b[i].live != f.live[i] ||
		    m->a.b[i].dirty != f.dirty[i]) {
			fprintf(stderr,
				"bucket %llu counts live %u/%u dirty %u/%u\n",
				(unsigned long long)i, m->a.b[i].live,
				f.live[i], m->a.b[i].dirty, f.dirty[i]);
			CHECK(0);
			exit(1);
		}
		live += f.live[i];
		dirty += f.dirty[i];
	}
	CHECK_EQ(m->a.live_sectors, live);
	CHECK_EQ(m->a.dirty_sectors, dirty);
	CHECK_EQ(m->a.dev_dirty[0], f.dev_dirty[0]);
	CHECK_EQ(m->a.dev_dirty[1], f.dev_dirty[1]);
	/* the summary counts exactly the live dirty sectors */
	if (sim_dsum_diff(&m->a, f.dsum)) {
		CHECK(0);
		exit(1);
	}
	if (!dirty)
		CHECK(dsum_empty(&m->a));
	for (d = 0; d < NDEV; d++)
		free(f.seen[d]);
	free(f.live);
	free(f.dirty);
	free(f.dsum);
}

struct nrec {
	u64	lo;
	u64	hi;
	u32	cnt;
	u8	level;
};

struct nlist {
	struct nrec	*v;
	u32		n;
	u32		cap;
};

static int collect_node(void *arg, struct bkc_node *n)
{
	struct nlist *l = arg;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		REQUIRE(l->v);
	}
	l->v[l->n].lo = n->lo;
	l->v[l->n].hi = n->hi;
	l->v[l->n].cnt = n->nbase + n->ndelta;
	l->v[l->n].level = n->level;
	l->n++;
	return 0;
}

static int coalesce(struct model *m, u64 pos, u8 level)
{
	int r = bkc_btree_coalesce(&m->t, pos, level);

	if (r == -ENOSPC) {
		flush_nodes(m);
		keep_free(m);
		r = bkc_btree_coalesce(&m->t, pos, level);
		if (r == -ENOSPC)
			r = 0;
	}
	if (r < 0)
		fprintf(stderr, "merge failed: %d\n", r);
	REQUIRE(r >= 0);
	return r;
}

/*
 * Merge sweeps until nothing merges, then check node fill: every pair of
 * adjacent siblings holds more than merge_keys keys together (else they
 * would have been merged), no node is empty, no interior root has a single
 * child.  Every sweep starts with a flush: an over-full node is split only
 * when written, and the halves may then merge with their neighbours.
 */
static void fill_check(struct model *m)
{
	struct nlist l = { 0 };
	u32 i, j, rounds = 0;
	int merged;
	u8 level;

	do {
		flush_nodes(m);
		merged = 0;
		for (level = 0; level < m->t.root->level; level++) {
			l.n = 0;
			REQUIRE(bkc_btree_walk_nodes(&m->t, collect_node,
						     &l) == 0);
			for (i = 0; i < l.n; i++)
				if (l.v[i].level == level)
					merged += coalesce(m, l.v[i].lo, level);
		}
		merged += coalesce(m, 0, BKC_BTREE_MAX_DEPTH - 1);
		m->merges += merged;
	} while (merged && ++rounds < 50);
	flush_nodes(m);
	l.n = 0;
	REQUIRE(bkc_btree_walk_nodes(&m->t, collect_node, &l) == 0);
	CHECK(!m->t.root->level || m->t.root->nbase > 1);
	for (i = 0; i < l.n; i++) {
		struct nrec *a = &l.v[i];

		if (a->level == m->t.root->level)
			continue;
		CHECK(a->cnt > 0);
		for (j = 0; j < l.n; j++) {
			struct nrec *b = &l.v[j], *p;
			u32 k;

			if (b->level != a->level || b->lo != a->hi)
				continue;
			/* same parent? */
			for (k = 0; k < l.n; k++) {
				p = &l.v[k];
				if (p->level == a->level + 1 && p->lo <= a->lo &&
				    a->lo < p->hi)
					break;
			}
			if (k < l.n && b->lo < p->hi &&
			    a->cnt + b->cnt <= m->t.merge_keys) {
				fprintf(stderr, "siblings unmerged: %u + %u\n",
					a->cnt, b->cnt);
				CHECK(0);
			}
		}
	}
	free(l.v);
}

/* ---- driver ---- */

/*
 * Everything written back empties the dirty summary; one dirty key then
 * marks its own granules, and not the next one's nor another device's.
 */
static void dsum_check(struct model *m)
{
	const struct bkc_alloc *a = &m->a;
	u32 d;

	for (d = 0; d < NDEV; d++)
		writeback(m, d, 0, SPAN);
	CHECK_EQ(a->dirty_sectors, 0);
	CHECK(dsum_empty(a));
	do_write(m, 1, 800, 9, true);
	full_check(m);
	CHECK(bkc_alloc_maybe_dirty(a, devs[1], dev_base[1] + 800));
	CHECK(bkc_alloc_maybe_dirty(a, devs[1], dev_base[1] + 815));
	CHECK(!bkc_alloc_maybe_dirty(a, devs[1], dev_base[1] + 816));
	CHECK(!bkc_alloc_maybe_dirty(a, devs[1], dev_base[1] + 792));
	CHECK(!bkc_alloc_maybe_dirty(a, devs[0], dev_base[1] + 800));
	writeback(m, 1, 800, 9);
	CHECK(!bkc_alloc_maybe_dirty(a, devs[1], dev_base[1] + 800));
	full_check(m);
}

/*
 * One slot past what it can count: it stays at BKC_DSUM_STUCK when its
 * sectors are counted out again, the others as they were, until a
 * recount empties it.
 */
static void dsum_stuck(void)
{
	struct bkc_geom g = {
		.nbuckets = 16384, .first_bucket = 2, .bucket_sectors = 16,
		.block_bytes = 512, .set_magic = 5,
	};
	u64 n = BKC_DSUM_STUCK / 8 + 1, stride, bucket, slot, j;
	struct bkc_alloc a;
	struct bkc_key k;
	u32 off, got;
	u8 gen;

	REQUIRE(bkc_alloc_init(&a, &g, 4, BKC_REPL_LRU, 5) == 0);
	bkc_alloc_format(&a);
	REQUIRE(bkc_alloc_data(&a, 0, 8, &bucket, &off, &got, &gen) == 0);
	REQUIRE(got == 8);
	/* granules this far apart share a slot */
	stride = (a.dsum_mask + 1) << BKC_DSUM_SHIFT;
	slot = bkc_dsum_slot(&a, 1, 0);
	for (j = 0; j < n; j++) {
		bkc_key_init(&k, 1, j * stride, 8, bucket, off, gen, true);
		bkc_alloc_account(&a, &k, 1);
	}
	CHECK_EQ(a.dsum[slot], BKC_DSUM_STUCK);
	CHECK(bkc_alloc_maybe_dirty(&a, 1, 7));
	CHECK(!bkc_alloc_maybe_dirty(&a, 1, 8));
	for (j = 0; j < n; j++) {
		bkc_key_init(&k, 1, j * stride, 8, bucket, off, gen, true);
		bkc_alloc_account(&a, &k, -1);
	}
	CHECK_EQ(a.dirty_sectors, 0);
	CHECK_EQ(a.dsum[slot], BKC_DSUM_STUCK);
	bkc_alloc_reset_counts(&a);
	CHECK(dsum_empty(&a));
	bkc_alloc_data_put(&a, bucket);
	bkc_alloc_exit(&a);
}

static void run(u64 seed, u64 nops, u32 node_bytes, u32 block_bytes,
		u32 repl)
{
	struct bkc_geom g = {
		.nbuckets = 16384, .first_bucket = 2, .bucket_sectors = 16,
		.block_bytes = block_bytes, .set_magic = seed * 77,
	};
	struct model *m = calloc(1, sizeof(*m));
	u64 i, batch = 5000, evicted = 0;
	u32 d;

	REQUIRE(m);
	m->rng = seed | 1;
	for (d = 0; d < NDEV; d++) {
		m->ref[d] = calloc(SPAN, sizeof(struct ref));
		REQUIRE(m->ref[d]);
	}
	sim_init(&m->sim, &g, node_bytes);
	REQUIRE(bkc_alloc_init(&m->a, &g, 4, repl, seed) == 0);
	bkc_alloc_format(&m->a);
	REQUIRE(bkc_btree_init(&m->t, &g, node_bytes, &sim_btree_ops, &m->sim,
			       &m->a) == 0);
	m->sim.t = &m->t;
	REQUIRE(bkc_btree_create(&m->t) == 0);

	for (i = 0; i < nops; i++) {
		u32 op = rnd(m, 100);
		u32 dd = rnd(m, NDEV);
		u32 len = 1 + rnd(m, rnd(m, 4) ? 16 : MAXW);
		u64 lba = rnd(m, SPAN - len + 1);

		/* hot spots make overwrites and splits of existing keys */
		if (rnd(m, 4) == 0)
			lba = rnd(m, 64) * 8 % (SPAN - len);
		if (op < 40)
			do_write(m, dd, lba, len, true);
		else if (op < 60)
			do_write(m, dd, lba, len, false);
		else if (op < 65)
			apply_hole(m, dd, lba, len);
		else if (op < 67)
			writeback(m, dd, lba, len * 8);
		else
			check_lookup(m, dd, lba, len);
		m->ops++;
		if (bkc_alloc_want_invalidate(&m->a))
			keep_free(m);
		if (rnd(m, 500) == 0)
			flush_nodes(m);
		if (rnd(m, 200) == 0)
			evict_clean(m);
		if (rnd(m, 2000) == 0) {
			flush_nodes(m);
			evicted += sim_evict(&m->sim, 2, &m->rng);
		}
		if (rnd(m, 3000) == 0) {
			u32 sw = rnd(m, BKC_REPL_NR);

			REQUIRE(bkc_alloc_set_policy(&m->a, sw) == 0);
		}
		if (rnd(m, 1000) == 0) {
			u64 pos = bkc_pos(devs[dd], dev_base[dd] + lba);

			m->merges += bkc_btree_coalesce(&m->t, pos, 0) > 0;
		}
		if (rnd(m, 20000) == 0)
			gc_pass(m);
		if ((i + 1) % batch == 0) {
			full_check(m);
			if (tcheck_failures)
				break;
		}
	}
	full_check(m);
	fill_check(m);
	full_check(m);
	/* everything written out and read back from the "disk" */
	flush_nodes(m);
	evicted += sim_evict(&m->sim, 1, &m->rng);
	full_check(m);
	dsum_check(m);
	{
		struct bkc_btree_check c;

		bkc_btree_check(&m->t, &c);
		printf("  seed %llu: %llu ops, %llu lookups (%llu one key), %llu sectors compared, %llu clean buckets evicted\n",
		       (unsigned long long)seed, (unsigned long long)m->ops,
		       (unsigned long long)m->lookups,
		       (unsigned long long)m->finds,
		       (unsigned long long)m->sectors_checked,
		       (unsigned long long)m->stale_evictions);
		printf("    depth %u, %llu nodes, %llu keys, fill %u..%u of %u\n",
		       c.depth, (unsigned long long)c.nodes,
		       (unsigned long long)c.keys, c.min_fill, c.max_fill,
		       m->t.split_keys);
		printf("    splits %llu merges %llu cow %llu appends %llu\n",
		       (unsigned long long)m->t.stats.splits,
		       (unsigned long long)m->t.stats.merges,
		       (unsigned long long)m->t.stats.cows,
		       (unsigned long long)m->t.stats.appends);
		printf("    evictions %llu, gc passes %llu, node loads %llu\n",
		       (unsigned long long)m->evictions,
		       (unsigned long long)m->gc_passes,
		       (unsigned long long)m->sim.node_reads);
	}
	bkc_btree_exit(&m->t);
	sim_exit(&m->sim);
	bkc_alloc_exit(&m->a);
	for (d = 0; d < NDEV; d++)
		free(m->ref[d]);
	free(m);
}

int main(int argc, char **argv)
{
	u64 total = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	const char *env = getenv("BKC_SEED");
	u64 rseed;

	dsum_stuck();
	if (env) {
		run(strtoull(env, NULL, 0), total, 1024, 512, BKC_REPL_LRU);
		return tcheck_done("test_model");
	}
	rseed = (u64)time(NULL) ^ ((u64)clock() << 20);
	printf("test_model: %llu ops; random seed %llu\n",
	       (unsigned long long)total, (unsigned long long)rseed);
	printf("test_model: replay it with BKC_SEED=%llu\n",
	       (unsigned long long)rseed);
	run(1, total * 3 / 10, 1024, 512, BKC_REPL_LRU);
	run(2, total * 3 / 10, 4096, 512, BKC_REPL_FIFO);
	run(3, total * 2 / 10, 4096, 4096, BKC_REPL_RANDOM);
	run(rseed, total * 2 / 10, 1024, 512, BKC_REPL_LRU);
	printf("test_model: %llu operations checked\n",
	       (unsigned long long)total);
	return tcheck_done("test_model");
}
