/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bucket allocator: per-bucket state, generations, live-sector counts,
 * open data buckets, free lists with reserves, and invalidation driven by
 * a replacement policy (policy.h).
 *
 * Every bucket has an 8-bit generation that every key pointing into it
 * carries.  Invalidating a bucket bumps its generation, which makes all
 * its keys stale at once; the bucket is handed out again only after the
 * journal entry recording the new generation is durable (C4).  GC keeps
 * every key's generation within BKC_GEN_WINDOW of its bucket's (C6).
 *
 * No locks: the caller serialises calls (in the kernel, the same lock that
 * covers tree inserts, since inserts update the live counts).
 */
#ifndef _BKC_ALLOC_H
#define _BKC_ALLOC_H

#include "key.h"

#define BKC_GEN_WINDOW		128	/* GC wanted beyond this */
#define BKC_GEN_LIMIT		255	/* never bump beyond this */
#define BKC_WP_NR		4	/* data write points */
#define BKC_OPEN_MAX		128	/* data buckets open or pinned: QD32 x 1M of 512k, and more */

enum bkc_bucket_type {
	BKC_BUCKET_FREE		= 0,	/* no live data */
	BKC_BUCKET_DATA		= 1,	/* cached data, clean or dirty */
	BKC_BUCKET_BTREE	= 2,	/* a btree node */
	BKC_BUCKET_JOURNAL	= 3,	/* in the journal ring */
	BKC_BUCKET_META		= 4,	/* bucket table */
	BKC_BUCKET_SB		= 5,	/* before first_bucket */
};

/* bucket flags */
#define BKC_BF_REF	(1 << 3)	/* referenced by some key (open only) */
#define BKC_BF_OPEN	(1 << 4)	/* data bucket being filled or pinned */
#define BKC_BF_PENDING	(1 << 5)	/* invalidated, waiting for journal */
#define BKC_BF_FREEING	(1 << 6)	/* btree/meta bucket no longer used */
#define BKC_BF_AVAIL	(1 << 7)	/* on the free list */
#define BKC_BT_MASK	0x07

struct bkc_bucket {
	u32	live;		/* sectors of current-gen keys */
	u32	dirty;		/* of which dirty */
	u32	prio;		/* replacement stamp (policy.h) */
	u8	gen;
	u8	oldest_gen;	/* no key anywhere is older than this */
	u8	gc_gen;		/* gen when the running GC pass started */
	u8	state;		/* type | flags */
};

/* Allocation classes, in order of priority for the reserves. */
enum bkc_alloc_class {
	BKC_ALLOC_DATA		= 0,
	BKC_ALLOC_BTREE		= 1,
	BKC_ALLOC_META		= 2,
};

/* The bucket state names of the allocator's view. */
enum bkc_bucket_state {
	BKC_BS_FREE, BKC_BS_CLEAN, BKC_BS_DIRTY, BKC_BS_BTREE,
	BKC_BS_JOURNAL, BKC_BS_META, BKC_BS_SB, BKC_BS_NR
};

struct bkc_obucket {
	u64	bucket;
	u32	used;		/* sectors handed out */
	u32	refs;		/* allocations not yet inserted */
	bool	closed;
};

struct bkc_cand {
	u64	score;
	u64	bucket;
};

struct bkc_repl_ops;

struct bkc_alloc_stats {
	u64	invalidated;
	u64	invalidated_empty;
	u64	data_allocs;
	u64	btree_allocs;
	u64	meta_allocs;
	u64	enospc;
	u64	window_blocked;
	u64	scans;
};

struct bkc_alloc {
	struct bkc_geom		geom;
	u32			bucket_shift;	/* sectors per bucket, log2 */
	u32			block_sectors;
	struct bkc_bucket	*b;		/* nbuckets entries */

	/* free: usable now; pending: waiting for a journal seq */
	u64			*free;
	u32			free_cap, free_head, nr_free;
	u64			*pend_bucket;
	u64			*pend_seq;
	u32			pend_cap, pend_head, nr_pend;
	u32			reserve_btree;	/* kept from data */
	u32			reserve_meta;	/* kept from data and btree */
	u32			free_target;

	struct bkc_obucket	open[BKC_OPEN_MAX];
	s32			wp[BKC_WP_NR];	/* index into open[], or -1 */

	/* replacement */
	const struct bkc_repl_ops *repl;
	u32			repl_id;
	u32			clock;
	u64			rand_state;
	u64			rand_seed;
	struct bkc_cand		*cand;
	u32			cand_cap, nr_cand, cand_next;
	u64			scan_pos;
	bool			scanning;

	/* buckets no key references, not yet on the free list */
	u64			unref_pos;
	bool			unref_done;
	bool			gc_wanted;
	u64			nr_freeing;
	u64			*freeing;	/* the first freeing_cap of them */
	u64			freeing_cap;

	/* accounting */
	u64			live_sectors;
	u64			dirty_sectors;
	u64			*dev_dirty;	/* per backing device id */
	u32			ndevs;

	/*
	 * Where dirty data may be: a counter per 4 KiB granule of the
	 * backing devices, hashed into dsum_mask + 1 slots, of the live
	 * dirty sectors in the granules hashed to it (bkc_alloc_account()
	 * counts a key's sectors in and out as it counts them per bucket).
	 * Zero says no dirty data there; more, maybe.  A slot that reaches
	 * BKC_DSUM_STUCK (8191 full granules) stays there until a recount.
	 */
	u16			*dsum;
	u64			dsum_mask;

	struct bkc_alloc_stats	stats;
};

#define BKC_DSUM_SHIFT		3	/* a granule is 1 << 3 sectors */
#define BKC_DSUM_MIN		(1ULL << 12)	/* slots */
#define BKC_DSUM_MAX		(1ULL << 20)	/* slots: 2 MiB */
#define BKC_DSUM_STUCK		0xffff

/* The summary slot of @lba's granule on device @dev. */
static inline u64 bkc_dsum_slot(const struct bkc_alloc *a, u32 dev, u64 lba)
{
	return ((lba >> BKC_DSUM_SHIFT) + dev * BKC_GOLDEN64) & a->dsum_mask;
}

/*
 * May device @dev hold dirty data in the 4 KiB granule of @lba?  False:
 * no live dirty key touches it.  Without the set lock, a slot is one
 * aligned u16, loaded whole, in an array that stays from init to exit:
 * the answer is one that was right a moment ago.
 */
static inline bool bkc_alloc_maybe_dirty(const struct bkc_alloc *a, u32 dev,
					 u64 lba)
{
	return READ_ONCE(a->dsum[bkc_dsum_slot(a, dev, lba)]) != 0;
}

int bkc_alloc_init(struct bkc_alloc *a, const struct bkc_geom *g,
		   u32 ndevs, u32 repl, u64 seed);
void bkc_alloc_exit(struct bkc_alloc *a);

/* Fresh cache: every usable bucket free at gen 0, usable at once. */
void bkc_alloc_format(struct bkc_alloc *a);
/* Mark journal ring buckets. */
void bkc_alloc_set_journal(struct bkc_alloc *a, const u64 *buckets, u32 nr);

static inline u8 bkc_alloc_gen(const struct bkc_alloc *a, u64 bucket)
{
	return a->b[bucket].gen;
}

static inline u32 bkc_alloc_type(const struct bkc_alloc *a, u64 bucket)
{
	return a->b[bucket].state & BKC_BT_MASK;
}

enum bkc_bucket_state bkc_alloc_state(const struct bkc_alloc *a, u64 bucket);
const char *bkc_bucket_state_name(enum bkc_bucket_state s);

/* Is leaf key @k live (its generation current)? */
static inline bool bkc_alloc_key_live(const struct bkc_alloc *a,
				      const struct bkc_key *k)
{
	u64 b = bkc_key_bucket(k);

	return !bkc_key_hole(k) && b < a->geom.nbuckets &&
		a->b[b].gen == bkc_key_gen(k);
}

/* Add (@sign 1) or remove (-1) a leaf key's sectors from the counts. */
void bkc_alloc_account(struct bkc_alloc *a, const struct bkc_key *k,
		       int sign);
/* Forget all counts (before a full recount). */
void bkc_alloc_reset_counts(struct bkc_alloc *a);

/* Free buckets available to @class right now. */
u32 bkc_alloc_avail(const struct bkc_alloc *a, enum bkc_alloc_class class);

/* How the buckets are used (priority_stats), in buckets. */
struct bkc_alloc_shares {
	u64	unused;		/* free, or data with nothing live */
	u64	clean;		/* data, none of it dirty */
	u64	dirty;		/* data with dirty sectors */
	u64	metadata;	/* btree, journal, table, superblock */
};
void bkc_alloc_shares(const struct bkc_alloc *a, struct bkc_alloc_shares *s);

/*
 * Data: hand out up to @sectors from write point @wp's open bucket,
 * opening a new bucket if needed.  *@got may be less than asked (end of
 * bucket).  The allocation pins the bucket until bkc_alloc_data_put()
 * after its key is inserted (or the write failed).  Returns 0, -ENOSPC
 * (no bucket beyond the reserves) or -EAGAIN (too many pinned buckets).
 */
int bkc_alloc_data(struct bkc_alloc *a, u32 wp, u32 sectors, u64 *bucket,
		   u32 *off, u32 *got, u8 *gen);
void bkc_alloc_data_put(struct bkc_alloc *a, u64 bucket);
/* Close every write point (shutdown, policy tests). */
void bkc_alloc_close_all(struct bkc_alloc *a);

/* A whole bucket for a btree node or the bucket table. */
int bkc_alloc_bucket(struct bkc_alloc *a, enum bkc_alloc_class class,
		     u64 *bucket);
/*
 * A btree/meta bucket is no longer referenced by the newest metadata, but
 * may be by durable metadata: it waits, flagged freeing.
 */
void bkc_alloc_freeing(struct bkc_alloc *a, u64 bucket);
/*
 * Nothing durable points at freeing buckets any more (the metadata that
 * replaced them is durable): they become free at once, with no generation
 * bump (C4: no durable key references them).
 */
u32 bkc_alloc_release_freeing(struct bkc_alloc *a);
void bkc_alloc_release(struct bkc_alloc *a, u64 bucket);
/* Invalidate one specific bucket now (GC of an empty bucket). */
int bkc_alloc_invalidate_bucket(struct bkc_alloc *a, u64 bucket, u64 jseq);

/*
 * Invalidate the next victim chosen by the replacement policy (empty
 * buckets first, then clean data): its generation is bumped and it becomes
 * usable once journal entry @jseq, which must record the new generation,
 * is durable.  Scans at most @scan_budget buckets when the candidate list
 * is empty.  Returns 1 with *@bucket set, 0 if no victim now (call again
 * to continue a scan, or wait for GC/writeback), -errno.
 */
int bkc_alloc_invalidate(struct bkc_alloc *a, u64 jseq, u32 scan_budget,
			 u64 *bucket);
/* Does the free list want more invalidations? */
bool bkc_alloc_want_invalidate(const struct bkc_alloc *a);
/* Journal is durable up to @seq: pending buckets become free. */
void bkc_alloc_journal_durable(struct bkc_alloc *a, u64 seq);

/* A read hit in @bucket (decide-only policy hook, no I/O). */
void bkc_alloc_touch(struct bkc_alloc *a, u64 bucket);
/* Switch replacement policy at runtime; -EINVAL for an unknown one. */
int bkc_alloc_set_policy(struct bkc_alloc *a, u32 repl);

/*
 * Generations (C6).  A key is stale when its gen differs from its
 * bucket's; a stale key must never look current again, so a bucket's gen
 * may be bumped only while it stays less than 255 steps ahead of
 * oldest_gen, a lower bound on the gen of every key that may point into
 * the bucket.  A GC pass drops stale keys and then raises oldest_gen to
 * the gens of its start; bkc_alloc_need_gc() asks for a pass once a bucket
 * is BKC_GEN_WINDOW steps ahead.
 */
void bkc_alloc_gc_start(struct bkc_alloc *a);
void bkc_alloc_gc_finish(struct bkc_alloc *a);
bool bkc_alloc_gen_bumpable(const struct bkc_alloc *a, u64 bucket);
bool bkc_alloc_need_gc(const struct bkc_alloc *a);

/*
 * Opening an existing cache: set a bucket's persisted state, mark buckets
 * that any durable key (or btree node, table, journal) references, then
 * bkc_alloc_open_finish() puts every unreferenced bucket on the free list:
 * with no key pointing at it, it can be reused without a gen bump (C4).
 */
void bkc_alloc_load(struct bkc_alloc *a, u64 bucket, u8 gen, u8 oldest,
		    u32 prio);
void bkc_alloc_set_gen(struct bkc_alloc *a, u64 bucket, u8 gen);
void bkc_alloc_mark(struct bkc_alloc *a, u64 bucket,
		    enum bkc_bucket_type type);
void bkc_alloc_open_finish(struct bkc_alloc *a);

u64 bkc_alloc_rand(struct bkc_alloc *a);

#endif /* _BKC_ALLOC_H */
