// SPDX-License-Identifier: GPL-2.0
/*
 * The /dev/cacheN request path.
 *
 * Every bio becomes a struct bkc_req and is cut, without copying data,
 * into clones of the original bio (bio_trim) aimed at the cache device
 * or at the backing device.  The request completes when its clones have.
 *
 * Reads look the range up in the index (always: dirty data may live only
 * in the cache).  Hits are read from the cache device; a clean hit whose
 * bucket was reused meanwhile, or that fails, is read again from the
 * backing device.  Misses are read from the backing device and, unless
 * the read was bypassed, copied into the cache in the background.  A miss
 * to be promoted is read into pages of the module's own and copied to the
 * caller from there: the caller's pages (O_DIRECT user memory) may change
 * while the read is in flight, and must never become the cached copy.
 *
 * Writes, by mode:
 *   writeback     data to the cache, dirty keys; done at cache speed
 *   writethrough  data to both, clean keys
 *   writearound   data to the backing device, cached copies invalidated
 *   none          the same as writearound
 * Bypassed writes (sequential streams past sequential_cutoff, a cache
 * full of dirty data, discard, write-zeroes) go the writearound way; in
 * writeback mode a stream's write into a RAID stripe that holds dirty
 * data is cached (bkc_stripe_dirty()).
 * Keys are inserted by the set's insert worker once the data is written;
 * a write with FUA completes only once the journal entry holding its keys
 * is durable.  A writeback write completes as soon as its data is in the
 * cache, before its keys are in (bkc_ack()): reads and bypassed writes
 * of its range, and a PREFLUSH of its device, wait for them.  A PREFLUSH
 * flushes the backing device (and the cache device after in-place
 * overwrites) and commits the journal before the data part starts
 * (design.md section 4).  A writeback write that one dirty key covers
 * whole overwrites that key's data in place, with no key (bkc_inplace()).
 *
 * Promotion safety: a read miss records the write epoch before reading
 * the backing device; the copy is inserted only if no write touched its
 * 64 KiB granules since then and none is in flight, so a promotion can
 * never bury newer data under older.
 *
 * Read-around: the device remembers the last few write streams it
 * bypassed as sequential.  A promoted read miss inside one also reads,
 * in the background, the 1 MiB around it (aligned, within the stream),
 * and promotes what of it the cache holds nothing of (up to 16 holes), so
 * data written as a stream and then read at random is served from the
 * cache after a fraction of the misses one block at a time would take.
 * One read-around per window is in flight at a time: misses in it
 * meanwhile are promoted on their own.  The same epoch check covers the
 * whole range.
 *
 * Writes that drop or overwrite dirty data of a range (writethrough,
 * writearound and bypassed writes over dirty keys) apply only after the
 * backing device has been flushed (bkc_bflush_work()): a journal entry
 * must never forget dirty data whose replacement is not durable.  A
 * write that failed on the backing device changes nothing in the index.
 *
 * A failed cache set (fail.c): requests that still need it are parked on
 * their backing device until its failover decides, then go on in
 * passthrough (no dirty data) or fail (bkc_req_failover()).
 */
#include <linux/hash.h>
#include <linux/highmem.h>
#include <linux/mempool.h>
#include <linux/slab.h>

#include "bkc.h"
#include "trace.h"

#define BKC_SEGS		32
#define BKC_SEG_WHOLE		0xffff	/* clone of the whole request */
#define BKC_SEG_FLUSH		0xfffe	/* the backing device flush of a PREFLUSH */
#define BKC_SEG_CFLUSH		0xfffd	/* the cache device flush of a PREFLUSH */
#define BKC_PROMOTE_MAX		64	/* promotions in flight per set */
#define BKC_PROMOTE_MAX_BYTES	(512U << 10)
#define BKC_RA_SECTORS		2048	/* read-around: 1 MiB, one bio */
#define BKC_RA_HOLES		16	/* pieces of it promoted, at most */
#define BKC_PROMO_EXTS		8	/* extents of the cache per piece */
#define BKC_PROMO_BATCH		32	/* promotions filled together */
#define BKC_SEQ_TIMEOUT		(2 * HZ)
#define BKC_ACK_MAX		256	/* acked writes per set, keys not in */
#define BKC_ACK_BATCH		32	/* the insert worker goes at once */
#define BKC_APPLY_YIELD		1	/* bkc_apply(): let waiting I/O in */

enum { BKC_WP_DIRTY, BKC_WP_CLEAN };

enum bkc_seg_kind {
	BKC_SEG_MISS,
	BKC_SEG_HIT,		/* clean data in the cache */
	BKC_SEG_HIT_DIRTY,	/* dirty data: only the cache has it */
	BKC_SEG_CACHE,		/* a write's extent in the cache */
};

struct bkc_promo;

struct bkc_seg {
	u64	lba;		/* cacheN sector */
	u64	bucket;
	struct bkc_promo *promo;	/* a miss read into our pages */
	u32	len;
	u32	off;		/* sector in bucket */
	u8	gen;
	u8	kind;
	bool	put;		/* allocation released */
};

/* How a request's data goes (r->route). */
enum bkc_route {
	BKC_RT_NONE,	/* not routed: reads, and writes until bkc_write() */
	BKC_RT_PASS,	/* no cache set, or a failed one: a plain remap */
	BKC_RT_WB,	/* a write to the cache only, dirty keys */
	BKC_RT_WT,	/* a write to both devices, clean keys */
	BKC_RT_AROUND,	/* a write to the backing device; the cache forgets it */
	BKC_RT_FAST,	/* the same, the cache holding nothing of it: no keys */
	BKC_RT_INPLACE,	/* a write over dirty data, in its place: no keys */
};

/* Where a request is (r->stage). */
enum bkc_stage {
	BKC_ST_DATA,	/* its data I/O, then its keys (the default) */
	BKC_ST_FLUSH,	/* the PREFLUSH before it (bkc_flush_start()) */
	BKC_ST_FLUSHQ,	/* that PREFLUSH, behind acked writes (bkc_submit_bio()) */
	BKC_ST_ACKED,	/* completed to its caller, its keys not in (bkc_ack()) */
};

/* What a request is, holds and met on the way (r->flags). */
enum {
	RQ_WRITE	= 1 << 0,
	RQ_FUA		= 1 << 1,
	RQ_RANGE	= 1 << 2,	/* holds a bkc_fg_range */
	RQ_EPOCH	= 1 << 3,	/* holds write epochs */
	RQ_CACHE_ERR	= 1 << 4,
	RQ_BACK_ERR	= 1 << 5,
	RQ_PROMOTE	= 1 << 6,
	RQ_WHIT		= 1 << 7,	/* its keys replaced cached data */
	RQ_WBCOUNT	= 1 << 9,	/* counted in wb.wb_writes */
	RQ_RELOOKUP	= 1 << 10,	/* a dirty hit went stale: read again */
	RQ_ACCT		= 1 << 11,	/* I/O accounting started */
	RQ_FLUSHED	= 1 << 12,	/* backing flushed since its write */
	RQ_COUNTED	= 1 << 13,	/* write hit or miss counted */
	RQ_ACKLIST	= 1 << 14,	/* on b->acked, counted in the slots */
	RQ_NOIP		= 1 << 15,	/* its in-place overwrite failed */
};

/* What the insert worker does with a request once the set is unlocked. */
enum {
	BKC_INS_FINISH,		/* its keys are in: finish it */
	BKC_INS_PARK,		/* the set failed: park it */
	BKC_INS_REROUTE,	/* write it around (bkc_reroute()) */
	BKC_INS_DEFER,		/* flush the backing device first */
};

/* What a parked request has done already (bkc_park()). */
enum {
	BKC_PARK_NEW,		/* nothing: dispatch it again */
	BKC_PARK_INSERT,	/* its data I/O: its keys are not in */
	BKC_PARK_FUA,		/* everything but the journal commit */
	BKC_PARK_FLUSH,		/* a PREFLUSH waiting for the journal */
};

/* What bkc_remap() changes in a bio, to be put back at its completion. */
struct bkc_hook {
	bio_end_io_t		*end_io;
	void			*private;
	struct block_device	*bdev;
	struct bvec_iter	iter;
	int			remaining;
	unsigned short		flags;
};

struct bkc_req {
	struct bkc_backing	*b;
	struct bkc_set		*set;
	struct bio		*bio;
	unsigned long		start;
	atomic_t		pending;
	blk_status_t		status;
	u32			flags;
	unsigned long		rflags;		/* set from end_io: RQ_RELOOKUP */
	struct bio		*rest;		/* split-off tail, submitted last */
	u64			lba;
	u32			sectors;
	u32			nseg;
	u32			applied;	/* segments inserted, or sectors forgotten */
	u32			piece;		/* next piece to forget, 0: a whole one */
	unsigned long		retry;		/* segments to re-read */
	u64			epoch;
	u64			jseq;
	struct bkc_jwait	jw;
	struct llist_node	ll;
	struct work_struct	work;
	struct list_head	fo_node;	/* on b->fo_parked */
	struct list_head	ack_node;	/* on b->acked */
	u8			route;		/* enum bkc_route */
	u8			stage;		/* enum bkc_stage */
	u8			park;		/* BKC_PARK_* */
	u8			ins_next;	/* BKC_INS_* */
	struct bkc_fg_range	range;
	struct bkc_hook		hook;		/* a remapped hit (bkc_remap()) */
	struct bkc_seg		seg[BKC_SEGS];
};

/* A clone, with the request and segment it serves. */
struct bkc_clone {
	struct bkc_req		*r;
	u32			seg;
	u64			flush_gen;	/* BKC_SEG_[C]FLUSH: what it covers */
	struct bio		bio;	/* must be last: bio_set front_pad */
};

/* The cache writes of a batch of promotions in flight. */
struct bkc_promo_wait {
	atomic_t		pending;
	struct completion	done;
};

struct bkc_promo {
	struct llist_node	ll;		/* on set->promo_ready */
	struct work_struct	submit;		/* a read-around's read */
	struct bio		*bio;
	struct bkc_backing	*b;
	struct bkc_set		*set;
	u64			lba;
	u32			len;
	u64			epoch;
	bool			readaround;
	s8			ra_slot;	/* of b->ra_busy, or -1 */
	/* what of [lba, lba + len) is promoted, in sectors from lba */
	u32			nholes;
	struct bkc_hole {
		u32		off, len;
	}			hole[BKC_RA_HOLES];
	/* the hole being filled, in a batch (bkc_promo_batch()) */
	u32			cur;
	u32			next;		/* extents of it in ext[] */
	int			err;		/* 1: a write came first, or -errno */
	int			werr;		/* of its cache writes */
	struct bkc_promo_wait	*wait;
	struct bkc_seg		ext[BKC_PROMO_EXTS];
	u32			nr_pages;
	struct page		*pages[];
};

static struct kmem_cache *bkc_req_cache;
static mempool_t *bkc_req_pool;
/* superblock state writes, waited for by the request path */
static struct workqueue_struct *bkc_state_wq;

static void bkc_dispatch(struct bkc_req *r);
static void bkc_dispatch_work(struct work_struct *work);
static void bkc_on_failed_set(struct bkc_req *r);
static void bkc_flush_start(struct bkc_req *r);
static void bkc_req_done(struct bkc_req *r);
static void bkc_park(struct bkc_req *r, u8 kind);
static void bkc_passthrough(struct bkc_req *r);
static void bkc_promo_copy_out(struct bkc_req *r, struct bkc_seg *seg);
static void bkc_promo_drop_all(struct bkc_req *r);
static bool bkc_promo_read(struct bkc_req *r, u32 segno);
static void bkc_readaround(struct bkc_req *r);

unsigned int bkc_bio_front_pad(void)
{
	return offsetof(struct bkc_clone, bio);
}

/* ---- request lifetime ---- */

static void bkc_acct_start(struct bkc_req *r)
{
	if (r->flags & RQ_ACCT)
		return;
	r->flags |= RQ_ACCT;
	r->start = bio_start_io_acct(r->bio);
}

/* Complete @r's bio, unless an early completion did (bkc_ack()), and free @r. */
static void bkc_req_complete(struct bkc_req *r)
{
	struct bkc_backing *b = r->b;
	struct bio *bio = r->bio;

	if (r->stage != BKC_ST_ACKED) {
		bio->bi_status = r->status;
		if (r->flags & RQ_ACCT)
			bio_end_io_acct(bio, r->start);
		bio_endio(bio);
	}
	mempool_free(r, bkc_req_pool);
	percpu_ref_put(&b->inflight);
}

static void bkc_req_put(struct bkc_req *r)
{
	if (atomic_dec_and_test(&r->pending))
		bkc_req_done(r);
}

static void bkc_req_error(struct bkc_req *r, blk_status_t st)
{
	cmpxchg(&r->status, BLK_STS_OK, st);
}

/*
 * The I/O of segment @segno of @r (or BKC_SEG_WHOLE, BKC_SEG_FLUSH,
 * BKC_SEG_CFLUSH) completed with @st; @flush_gen is what a flush covers.
 * Interrupt context.
 */
static void bkc_io_done(struct bkc_req *r, u32 segno, blk_status_t st,
			bool write, u64 flush_gen)
{
	struct bkc_seg *seg;

	if (segno == BKC_SEG_CFLUSH) {
		/*
		 * In-place overwrites up to @flush_gen are durable now.  A
		 * failed flush may have lost them, and a later flush that
		 * succeeds would say otherwise: the set fails, as when a
		 * journal commit (which flushes too) fails.
		 */
		if (st) {
			bkc_req_error(r, st);
			bkc_set_fail(r->set, "a cache device flush failed",
				     blk_status_to_errno(st));
		} else {
			bkc_atomic64_max(&r->set->ip_flushed, flush_gen);
		}
		return;
	}
	if (segno == BKC_SEG_WHOLE || segno == BKC_SEG_FLUSH) {
		/* the backing device: the data, a flush or a remap */
		bkc_fg_stamp(&r->b->wb);
		if (st) {
			r->flags |= RQ_BACK_ERR;
			bkc_req_error(r, st);
		} else if (segno == BKC_SEG_FLUSH) {
			bkc_backing_flushed(r->b, flush_gen);
		} else if (write) {
			/* counted before the request can complete */
			bkc_backing_wrote(r->b);
		}
	} else {
		seg = &r->seg[segno];
		switch (seg->kind) {
		case BKC_SEG_HIT:
			/* a failed or stale clean hit is read from the backing device */
			if (st || bkc_core_gen_lockless(r->set->core,
							seg->bucket) != seg->gen)
				set_bit(segno, &r->retry);
			break;
		case BKC_SEG_HIT_DIRTY:
			/*
			 * Written back, invalidated and reused while we read:
			 * the index now says where the data is.  A failed
			 * read of dirty data is an error: only the cache has it.
			 */
			if (!st && bkc_core_gen_lockless(r->set->core,
							 seg->bucket) != seg->gen)
				set_bit(ilog2(RQ_RELOOKUP), &r->rflags);
			if (st)
				bkc_req_error(r, st);
			break;
		case BKC_SEG_MISS:
			/* only a miss went to the backing device */
			bkc_fg_stamp(&r->b->wb);
			if (st)
				bkc_req_error(r, st);
			else if (seg->promo)
				bkc_promo_copy_out(r, seg);
			break;
		case BKC_SEG_CACHE:
			if (st)
				r->flags |= RQ_CACHE_ERR;
			break;
		}
		if (st && seg->kind != BKC_SEG_MISS)
			bkc_set_io_error(r->set, blk_status_to_errno(st),
					 seg->kind == BKC_SEG_CACHE ?
					 "data write" : "data read");
	}
}

static void bkc_clone_endio(struct bio *clone)
{
	struct bkc_clone *bc = container_of(clone, struct bkc_clone, bio);
	struct bkc_req *r = bc->r;

	bkc_io_done(r, bc->seg, clone->bi_status, op_is_write(bio_op(clone)),
		    bc->flush_gen);
	bio_put(clone);
	bkc_req_put(r);
}

/* A remapped hit is done: put its bio back as it came, then finish it. */
static void bkc_remap_endio(struct bio *bio)
{
	struct bkc_req *r = bio->bi_private;
	blk_status_t st = bio->bi_status;

	bio->bi_end_io = r->hook.end_io;
	bio->bi_private = r->hook.private;
	bio->bi_bdev = r->hook.bdev;
	bio->bi_iter = r->hook.iter;
	bio->bi_flags = r->hook.flags;
	atomic_set(&bio->__bi_remaining, r->hook.remaining);
	bio->bi_status = BLK_STS_OK;
	bkc_io_done(r, 0, st, false, 0);
	bkc_req_put(r);
}

static struct bio *bkc_clone(struct bkc_req *r, struct block_device *bdev,
			     struct bio_set *bs, u32 segno, u64 lba, u32 len,
			     sector_t sector)
{
	struct bio *clone = bio_alloc_clone(bdev, r->bio, GFP_NOIO, bs);
	struct bkc_clone *bc;

	if (!clone)
		return NULL;
	bc = container_of(clone, struct bkc_clone, bio);
	bc->r = r;
	bc->seg = segno;
	if (len != r->sectors || lba != r->lba)
		bio_trim(clone, lba - r->lba, len);
	clone->bi_iter.bi_sector = sector;
	clone->bi_end_io = bkc_clone_endio;
	clone->bi_private = NULL;
	return clone;
}

/* Submit a clone, or fail its part of the request. */
static void bkc_submit_clone(struct bkc_req *r, struct bio *clone)
{
	if (clone) {
		submit_bio_noacct(clone);
	} else {
		bkc_req_error(r, BLK_STS_RESOURCE);
		bkc_req_put(r);
	}
}

static void bkc_to_backing(struct bkc_req *r, u32 segno, u64 lba, u32 len)
{
	struct bkc_backing *b = r->b;

	bkc_fg_stamp(&b->wb);
	bkc_submit_clone(r, bkc_clone(r, b->dev.bdev, &b->bs, segno, lba, len,
				      lba + b->data_start));
}

static void bkc_to_cache(struct bkc_req *r, u32 segno)
{
	struct bkc_seg *seg = &r->seg[segno];
	struct bkc_set *set = r->set;
	struct bio *clone;

	clone = bkc_clone(r, set->dev.bdev, &set->bs, segno, seg->lba,
			  seg->len, bkc_bucket_sector(set, seg->bucket,
						      seg->off));
	if (clone)
		clone->bi_opf &= ~(REQ_FUA | REQ_PREFLUSH);
	/* a read hit is served from here too: only writes count */
	if (r->flags & RQ_WRITE)
		this_cpu_add(*set->data_written, (u64)seg->len << SECTOR_SHIFT);
	bkc_submit_clone(r, clone);
}

/*
 * A read that is one cached extent goes to the cache device as it came,
 * without a clone: its bio is pointed there, its completion hooked, and
 * bkc_remap_endio() puts back what this changed before anything else
 * sees it, so that a retry or a new lookup starts from the bio as it
 * came.  A chained bio is cloned instead: a child's completion could
 * store its own error in the bio's status, which would then look like
 * the cache device's.
 */
static bool bkc_remap(struct bkc_req *r)
{
	struct bkc_seg *seg = &r->seg[0];
	struct bkc_set *set = r->set;
	struct bio *bio = r->bio;

	if (r->nseg != 1 || bio_flagged(bio, BIO_CHAIN) ||
	    WARN_ON_ONCE(seg->lba != r->lba || seg->len != r->sectors))
		return false;
	r->hook.end_io = bio->bi_end_io;
	r->hook.private = bio->bi_private;
	r->hook.bdev = bio->bi_bdev;
	r->hook.iter = bio->bi_iter;
	r->hook.flags = bio->bi_flags;
	r->hook.remaining = atomic_read(&bio->__bi_remaining);
	bio_set_dev(bio, set->dev.bdev);
	bio->bi_iter.bi_sector = bkc_bucket_sector(set, seg->bucket, seg->off);
	bio->bi_end_io = bkc_remap_endio;
	bio->bi_private = r;
	submit_bio_noacct(bio);
	return true;
}

/* ---- write epochs (promotion safety) ---- */

/*
 * A write marks each 64 KiB granule it touches in a hashed slot: an
 * in-flight count for its whole life, and the epoch (a set-wide counter)
 * it began and ended at.  A read takes the epoch first, then checks that
 * no write to its range is in flight; its promotion is inserted only if,
 * at insert time, none is in flight and no slot carries a newer epoch.
 * Hash collisions only cost promotions.  Writes too large for the slots
 * use one set-wide slot that every promotion checks.
 */
static struct bkc_epoch_slot *bkc_epoch_slot(struct bkc_set *set, u32 dev,
					     u64 granule)
{
	return &set->epochs[hash_64(((u64)dev << 48) ^ granule,
				    ilog2(BKC_EPOCH_SLOTS))];
}

static u64 bkc_granules(u64 lba, u32 len)
{
	return ((lba + len - 1) >> BKC_EPOCH_SHIFT) -
		(lba >> BKC_EPOCH_SHIFT) + 1;
}

#define for_each_granule(g, lba, len) \
	for ((g) = (lba) >> BKC_EPOCH_SHIFT; \
	     (g) <= ((lba) + (len) - 1) >> BKC_EPOCH_SHIFT; (g)++)

static bool bkc_epoch_big(struct bkc_req *r)
{
	return bkc_granules(r->lba, r->sectors) > BKC_EPOCH_SLOTS / 4;
}

static void bkc_epoch_begin(struct bkc_req *r)
{
	struct bkc_set *set = r->set;
	u32 dev = r->b->dev_id;
	u64 g, e;

	if (bkc_epoch_big(r)) {
		atomic_inc(&set->big.inflight);
	} else {
		for_each_granule(g, r->lba, r->sectors)
			atomic_inc(&bkc_epoch_slot(set, dev, g)->inflight);
	}
	/* in flight before the new epoch: see bkc_read() */
	smp_mb__after_atomic();
	e = atomic64_inc_return(&set->epoch);
	if (bkc_epoch_big(r)) {
		bkc_atomic64_max(&set->big.epoch, e);
	} else {
		for_each_granule(g, r->lba, r->sectors)
			bkc_atomic64_max(&bkc_epoch_slot(set, dev, g)->epoch, e);
	}
	r->flags |= RQ_EPOCH;
}

static void bkc_epoch_end(struct bkc_req *r)
{
	struct bkc_set *set = r->set;
	u32 dev = r->b->dev_id;
	u64 g, e;

	if (!(r->flags & RQ_EPOCH))
		return;
	r->flags &= ~RQ_EPOCH;
	e = atomic64_inc_return(&set->epoch);
	if (bkc_epoch_big(r)) {
		bkc_atomic64_max(&set->big.epoch, e);
		/* the stamp before the count drops */
		smp_mb__before_atomic();
		atomic_dec(&set->big.inflight);
		return;
	}
	for_each_granule(g, r->lba, r->sectors)
		bkc_atomic64_max(&bkc_epoch_slot(set, dev, g)->epoch, e);
	/* the stamp before the count drops */
	smp_mb__before_atomic();
	for_each_granule(g, r->lba, r->sectors)
		atomic_dec(&bkc_epoch_slot(set, dev, g)->inflight);
}

/* Did a write touch [lba, lba + len) since epoch @e, or is one running? */
static bool bkc_epoch_dirtied(struct bkc_set *set, u32 dev, u64 lba, u32 len,
			      u64 e)
{
	struct bkc_epoch_slot *s;
	u64 g;

	if (atomic_read(&set->big.inflight) ||
	    (u64)atomic64_read(&set->big.epoch) > e)
		return true;
	if (bkc_granules(lba, len) > BKC_EPOCH_SLOTS / 4)
		return true;
	for_each_granule(g, lba, len) {
		s = bkc_epoch_slot(set, dev, g);
		if (atomic_read(&s->inflight) ||
		    (u64)atomic64_read(&s->epoch) > e)
			return true;
	}
	return false;
}

/* ---- early completion of writeback writes ---- */

/*
 * A writeback write whose data reached the cache device is completed to
 * its caller at once, before its keys are inserted (bkc_ack()), so that
 * the insert worker runs once per batch of writes instead of once per
 * write (bkc_insert_soon()).  Until its keys are in, such an acked write
 *   - raises the acked count of its granules' slots: a read of them waits
 *     for the keys (bkc_ack_wait()), and a bypassed write over them goes
 *     through the insert worker, behind it, instead of completing from
 *     end_io (bkc_write());
 *   - is on its device's acked list: a PREFLUSH of the device goes through
 *     the insert worker behind it (bkc_submit_bio()), and a failover of
 *     the set counts it as dirty data and reports its range lost
 *     (backing.c);
 *   - counts in the device's dirty_data.
 * Writes with FUA, failed ones, writes too large for the slots and writes
 * beyond BKC_ACK_MAX acked ones in the set wait for their keys as before.
 */

/* Run the insert worker at once. Any context. */
static void bkc_insert_now(struct bkc_set *set)
{
	mod_delayed_work(set->insert_wq, &set->insert_work, 0);
}

/* Run it soon, to gather a batch, unless it is queued already. */
static void bkc_insert_soon(struct bkc_set *set)
{
	queue_delayed_work(set->insert_wq, &set->insert_work,
			   msecs_to_jiffies(2));
}

/* Has [lba, lba + len) of @dev acked writes whose keys are not in? */
static bool bkc_acked_any(struct bkc_set *set, u32 dev, u64 lba, u32 len)
{
	u64 g;

	/* none in the set: the common case of reads, no slot to look at */
	if (!len || !atomic_read(&set->nacked))
		return false;
	if (bkc_granules(lba, len) > BKC_EPOCH_SLOTS / 4)
		return true;
	for_each_granule(g, lba, len)
		if (atomic_read(&bkc_epoch_slot(set, dev, g)->acked))
			return true;
	return false;
}

/*
 * Complete the write @r (its data is in the cache) before its keys are
 * inserted, if it may be (see above); then it is on the insert list.
 * Interrupt context.
 */
static bool bkc_ack(struct bkc_req *r)
{
	struct bkc_backing *b = r->b;
	struct bkc_set *set = r->set;
	struct bio *bio = r->bio;
	unsigned long start = r->start, flags;
	bool acct = r->flags & RQ_ACCT, first;
	int n;
	u64 g;

	if (r->route != BKC_RT_WB || (r->flags & (RQ_FUA | RQ_CACHE_ERR)) ||
	    r->status || !r->sectors || bkc_epoch_big(r) ||
	    atomic_read(&set->nacked) >= BKC_ACK_MAX)
		return false;
	spin_lock_irqsave(&b->ack_lock, flags);
	/* a failover reads the list once the set failed: none join later */
	if (bkc_set_failed(set)) {
		spin_unlock_irqrestore(&b->ack_lock, flags);
		return false;
	}
	list_add_tail(&r->ack_node, &b->acked);
	WRITE_ONCE(b->acked_sectors, b->acked_sectors + r->sectors);
	atomic_inc(&b->nacked);
	spin_unlock_irqrestore(&b->ack_lock, flags);
	n = atomic_inc_return(&set->nacked);
	for_each_granule(g, r->lba, r->sectors)
		atomic_inc(&bkc_epoch_slot(set, b->dev_id, g)->acked);
	r->stage = BKC_ST_ACKED;
	r->flags |= RQ_ACKLIST;
	/*
	 * On the insert list before the caller sees the completion, with the
	 * counts raised (llist_add() is a full barrier): a later PREFLUSH
	 * queues behind it.  From here on @r may be inserted and freed.
	 */
	first = llist_add(&r->ll, &set->done);
	if (n == BKC_ACK_BATCH)
		bkc_insert_now(set);
	else if (first)
		bkc_insert_soon(set);
	bio->bi_status = BLK_STS_OK;
	if (acct)
		bio_end_io_acct(bio, start);
	bio_endio(bio);
	return true;
}

/*
 * The keys of acked @r are in (the insert worker calls this under the set
 * lock, so that dirty_data moves its sectors into the index's count at
 * once), or never will be.  Process context.
 */
static void bkc_ack_end(struct bkc_req *r)
{
	struct bkc_backing *b = r->b;
	struct bkc_set *set = r->set;
	unsigned long flags;
	u64 g;

	if (!(r->flags & RQ_ACKLIST))
		return;
	r->flags &= ~RQ_ACKLIST;
	spin_lock_irqsave(&b->ack_lock, flags);
	list_del(&r->ack_node);
	WRITE_ONCE(b->acked_sectors, b->acked_sectors - r->sectors);
	spin_unlock_irqrestore(&b->ack_lock, flags);
	/* the keys before the counts drop: see bkc_read(), bkc_submit_bio() */
	smp_mb__before_atomic();
	for_each_granule(g, r->lba, r->sectors)
		atomic_dec(&bkc_epoch_slot(set, b->dev_id, g)->acked);
	atomic_dec(&b->nacked);
	atomic_dec(&set->nacked);
	/* the insert worker sends the waiting reads on when it is done */
	if (!bkc_set_locked_by_me(set) && !llist_empty(&set->ack_waiters))
		bkc_insert_now(set);
}

/*
 * A read of a range with acked writes waits for their keys: the insert
 * worker sends it on once it has run (and it may wait again then).
 */
static bool bkc_ack_wait(struct bkc_req *r)
{
	struct bkc_set *set = r->set;

	if (!bkc_acked_any(set, r->b->dev_id, r->lba, r->sectors))
		return false;
	llist_add(&r->ll, &set->ack_waiters);
	bkc_insert_now(set);
	return true;
}

/*
 * The ranges (bytes of /dev/cacheN) of @b's acked writes, at most @cap of
 * them into @out; how many.  For a failover of the set (backing.c).
 */
u32 bkc_req_acked_ranges(struct bkc_backing *b, struct bkc_lost *out,
			 u32 cap)
{
	struct bkc_req *r;
	u32 n = 0;

	spin_lock_irq(&b->ack_lock);
	list_for_each_entry(r, &b->acked, ack_node) {
		if (n == cap)
			break;
		out[n].start = r->lba << SECTOR_SHIFT;
		out[n].len = (u64)r->sectors << SECTOR_SHIFT;
		n++;
	}
	spin_unlock_irq(&b->ack_lock);
	return n;
}

/* Reads waiting for acked writes' keys go on (from @wq). */
static void bkc_ack_waiters_send(struct bkc_set *set)
{
	struct llist_node *list = llist_del_all(&set->ack_waiters);
	struct bkc_req *r, *tmp;

	llist_for_each_entry_safe(r, tmp, list, ll) {
		INIT_WORK(&r->work, bkc_dispatch_work);
		queue_work(set->wq, &r->work);
	}
}

/*
 * Has @r's device dirty data in the cache: in the index, or acked writes'?
 * Lockless, for reads that would go to the backing device without the
 * index.
 */
static bool bkc_dev_dirty_lockless(struct bkc_req *r)
{
	return bkc_core_dev_dirty_lockless(r->set->core, r->b->dev_id) ||
	       atomic_read(&r->b->nacked);
}

/* ---- stats and bypass ---- */

/* Count @n of @stat for @r's backing device and its set (stats.c). */
static void bkc_count(struct bkc_req *r, enum bkc_stat stat, u64 n)
{
	bkc_stat_add(&r->b->st, stat, n);
	if (r->set)
		bkc_stat_add(&r->set->st, stat, n);
}

static bool bkc_sequential(struct bkc_backing *b, struct bio *bio)
{
	u64 cutoff = READ_ONCE(b->sequential_cutoff), bytes;

	if (!cutoff)
		return false;
	spin_lock(&b->seq_lock);
	bytes = bkc_seq_account(&b->seq, bio->bi_iter.bi_sector,
				bio_sectors(bio), get_jiffies_64(),
				BKC_SEQ_TIMEOUT);
	spin_unlock(&b->seq_lock);
	return bytes > cutoff;
}

/* ---- reads ---- */

static int bkc_read_seg(void *arg, const struct bkc_key *k, u64 pos, u32 len)
{
	struct bkc_req *r = arg;
	struct bkc_seg *seg;

	if (r->nseg == BKC_SEGS)
		return 1;
	seg = &r->seg[r->nseg++];
	/* set whole: the request cache does not clear it (bkc_req_ctor()) */
	*seg = (struct bkc_seg){ .put = true };
	if (!k) {
		seg->kind = BKC_SEG_MISS;
		seg->lba = bkc_pos_lba(pos);
		seg->len = len;
		return 0;
	}
	seg->kind = bkc_key_dirty(k) ? BKC_SEG_HIT_DIRTY : BKC_SEG_HIT;
	seg->lba = bkc_pos_lba(k->pos);
	seg->len = k->len;
	seg->bucket = bkc_key_bucket(k);
	seg->gen = bkc_key_gen(k);
	seg->off = k->off;
	return 0;
}

/* Keep the first @sectors of the request; the rest is resubmitted. */
static bool bkc_req_trim(struct bkc_req *r, u32 sectors)
{
	struct bio *split;

	if (sectors >= r->sectors)
		return true;
	split = bio_split(r->bio, sectors, GFP_NOIO, &r->b->split_bs);
	if (IS_ERR_OR_NULL(split))
		return false;
	bio_chain(split, r->bio);
	r->rest = r->bio;
	r->bio = split;
	r->sectors = sectors;
	return true;
}

/*
 * The tail goes in after this request's clones: from a worker it re-enters
 * bkc_submit_bio() at once, which may wait for a quiesce that waits for
 * this request.
 */
static void bkc_submit_rest(struct bkc_req *r)
{
	struct bio *rest = r->rest;

	r->rest = NULL;
	if (rest)
		submit_bio_noacct(rest);
}

static void bkc_read_work(struct work_struct *work);

/* Fail a request that has not been cut into clones yet. */
static void bkc_req_fail(struct bkc_req *r, blk_status_t st)
{
	r->route = BKC_RT_PASS;
	r->nseg = 0;
	r->flags &= ~RQ_PROMOTE;
	bkc_acct_start(r);
	bkc_req_error(r, st);
	atomic_set(&r->pending, 1);
	bkc_req_put(r);
}

static void bkc_read(struct bkc_req *r)
{
	struct bkc_set *set = r->set;
	struct bkc_core *c = set->core;
	u32 i, covered = 0, hits = 0;
	bool bypass;
	int ret;

	r->epoch = atomic64_read(&set->epoch);
	/* the epoch before the inflight checks: see bkc_epoch_begin() */
	smp_mb();
	if (bkc_ack_wait(r))
		return;
	/* no acked write of the range: the lookup sees their keys */
	smp_rmb();
	r->nseg = 0;
	down_read(&set->lock);
	ret = bkc_core_lookup(c, r->b->dev_id, r->lba, r->sectors,
			      bkc_read_seg, r);
	for (i = 0; i < r->nseg && ret >= 0; i++) {
		if (r->seg[i].kind != BKC_SEG_MISS) {
			bkc_core_touch(c, r->seg[i].bucket);
			hits += r->seg[i].len;
		}
		covered += r->seg[i].len;
	}
	up_read(&set->lock);

	if (ret == -EAGAIN) {
		/* a node must be read from disk: not in ->submit_bio */
		INIT_WORK(&r->work, bkc_read_work);
		queue_work(set->wq, &r->work);
		return;
	}
	if (ret < 0 || !r->nseg) {
		if (bkc_set_failed(set)) {
			bkc_park(r, BKC_PARK_NEW);
			return;
		}
		/*
		 * The index could not be read.  With no dirty data of this
		 * device in the cache, the backing device has everything.
		 */
		if (!bkc_dev_dirty_lockless(r)) {
			bkc_err_ratelimited(set->dev.bdev,
					    "index lookup failed (%d); read from the backing device",
					    ret);
			bkc_passthrough(r);
			return;
		}
		bkc_err_ratelimited(set->dev.bdev, "index lookup failed (%d)",
				    ret);
		bkc_req_fail(r, BLK_STS_IOERR);
		return;
	}
	if (!bkc_req_trim(r, covered)) {
		bkc_req_fail(r, BLK_STS_RESOURCE);
		return;
	}
	bkc_acct_start(r);
	bypass = bkc_sequential(r->b, r->bio);

	trace_bkc_request(disk_devt(r->b->disk), r->lba, r->sectors, false,
			  bypass ? BKC_ROUTE_BYPASS : hits == covered ?
			  BKC_ROUTE_HIT : BKC_ROUTE_MISS,
			  bypass ? BKC_WHY_SEQUENTIAL : BKC_WHY_NONE);
	if (bypass) {
		bkc_count(r, BKC_STAT_BYPASSED, r->sectors);
		if (hits == covered)
			bkc_count(r, BKC_STAT_BYPASS_HITS, 1);
		else
			bkc_count(r, BKC_STAT_BYPASS_MISSES, 1);
	} else if (hits == covered) {
		bkc_count(r, BKC_STAT_HITS, 1);
	} else {
		bkc_count(r, BKC_STAT_MISSES, 1);
		if (READ_ONCE(r->b->sb.cache_mode) != BKC_MODE_NONE &&
		    atomic_read(&set->promotes) < BKC_PROMOTE_MAX &&
		    READ_ONCE(set->running) &&
		    !bkc_epoch_dirtied(set, r->b->dev_id, r->lba, r->sectors,
				       r->epoch))
			r->flags |= RQ_PROMOTE;
	}
	/* the miss is promoted on its own; a read-around takes what is around */
	if ((r->flags & RQ_PROMOTE) && r->nseg == 1)
		bkc_readaround(r);

	atomic_set(&r->pending, r->nseg + 1);
	for (i = 0; i < r->nseg; i++) {
		struct bkc_seg *seg = &r->seg[i];

		if (seg->kind == BKC_SEG_MISS) {
			if (!(r->flags & RQ_PROMOTE) || !bkc_promo_read(r, i))
				bkc_to_backing(r, i, seg->lba, seg->len);
		} else if (!bkc_remap(r)) {
			bkc_to_cache(r, i);
		}
	}
	bkc_submit_rest(r);
	bkc_req_put(r);
}

static void bkc_read_work(struct work_struct *work)
{
	bkc_read(container_of(work, struct bkc_req, work));
}

/* Read again from the backing device the clean hits that went wrong. */
static void bkc_retry_work(struct work_struct *work)
{
	struct bkc_req *r = container_of(work, struct bkc_req, work);
	unsigned long mask = xchg(&r->retry, 0);
	u32 i;

	atomic_set(&r->pending, hweight_long(mask));
	for_each_set_bit(i, &mask, BKC_SEGS) {
		r->seg[i].kind = BKC_SEG_MISS;
		bkc_to_backing(r, i, r->seg[i].lba, r->seg[i].len);
	}
}

/* ---- promotion of read misses ---- */

static void bkc_promo_free(struct bkc_promo *p)
{
	u32 i;

	for (i = 0; i < p->nr_pages; i++)
		__free_page(p->pages[i]);
	if (p->ra_slot >= 0)
		clear_bit(p->ra_slot, &p->b->ra_busy);
	atomic_dec(&p->set->promotes);
	percpu_ref_put(&p->b->inflight);
	kfree(p);
}

static void bkc_promo_endio(struct bio *bio)
{
	struct bkc_promo *p = bio->bi_private;
	struct bkc_promo_wait *w = p->wait;

	if (bio->bi_status)
		WRITE_ONCE(p->werr, blk_status_to_errno(bio->bi_status));
	bio_put(bio);
	if (atomic_dec_and_test(&w->pending))
		complete(&w->done);
}

/*
 * Send @len sectors of @p's pages, from sector @from of it, to @sector;
 * each bio is submitted before the next is allocated (bio_alloc()'s pool).
 */
static void bkc_promo_write(struct bkc_promo *p, u32 from, u32 len,
			    sector_t sector)
{
	u32 byte = from << SECTOR_SHIFT, left = len << SECTOR_SHIFT;
	struct bio *bio;

	bio = bio_alloc(p->set->dev.bdev,
			min_t(u32, BIO_MAX_VECS,
			      DIV_ROUND_UP(left + (byte & (PAGE_SIZE - 1)),
					   PAGE_SIZE)),
			REQ_OP_WRITE | REQ_SYNC, GFP_NOIO);
	bio->bi_iter.bi_sector = sector;
	bio->bi_private = p;
	bio->bi_end_io = bkc_promo_endio;
	this_cpu_add(*p->set->data_written, left);
	while (left) {
		u32 in = byte & (PAGE_SIZE - 1);
		u32 n = min_t(u32, left, PAGE_SIZE - in);

		__bio_add_page(bio, p->pages[byte >> PAGE_SHIFT], n, in);
		byte += n;
		left -= n;
	}
	atomic_inc(&p->wait->pending);
	submit_bio(bio);
}

/* Space in the cache for hole p->cur of @p, under set->lock. */
static void bkc_promo_alloc_hole(struct bkc_promo *p)
{
	struct bkc_hole *h = &p->hole[p->cur];
	u32 done = 0;
	int r = 0;

	p->next = 0;
	while (done < h->len && p->next < BKC_PROMO_EXTS) {
		struct bkc_seg *e = &p->ext[p->next];

		r = bkc_core_alloc_data(p->set->core, BKC_WP_CLEAN,
					h->len - done, &e->bucket, &e->off,
					&e->len, &e->gen);
		if (r)
			break;
		e->lba = p->lba + h->off + done;
		done += e->len;
		p->next++;
	}
	if (done < h->len)
		p->err = r ?: -ENOSPC;
}

/*
 * Insert @p's extents, unless a write to its range came first (its data
 * wins: p->err = 1); under set->lock, which it drops to pin a leaf that
 * is not in memory.  True if a record was added.
 */
static bool bkc_promo_insert(struct bkc_promo *p, struct bkc_pins *pins)
{
	struct bkc_set *set = p->set;
	u32 dev = p->b->dev_id, i = 0, tries = 0;
	struct bkc_key k;
	u64 seq;
	int r = 0;

	while (i < p->next) {
		struct bkc_seg *e = &p->ext[i];

		if (bkc_epoch_dirtied(set, dev, p->lba, p->len, p->epoch)) {
			r = 1;
			break;
		}
		bkc_key_init(&k, dev, e->lba, e->len, e->bucket, e->off,
			     e->gen, false);
		r = bkc_core_insert(set->core, &k, &seq);
		if (r == -EDEADLK && tries++ < 8) {
			/* pin the leaf: no node read under the write lock */
			bkc_set_unlock(set);
			bkc_pins_put(set, pins);
			r = bkc_pins_get(set, pins, bkc_pos(dev, e->lba),
					 bkc_pos(dev, e->lba + e->len));
			bkc_set_lock(set);
			if (r)
				break;
			continue;
		}
		if (r)
			break;
		i++;
		tries = 0;	/* they count per extent */
	}
	p->err = r;
	return i > 0;
}

/*
 * Copy into the cache, and insert, the current hole of each of @n
 * promotions (@ps): the space for all under one hold of set->lock, their
 * writes in flight together, their keys in under one more.  Each pays no
 * worker, no lock round trip and no wait of its own.
 */
static void bkc_promo_batch(struct bkc_set *set, struct bkc_promo **ps, u32 n)
{
	struct bkc_promo_wait w;
	struct bkc_pins pins = {};
	struct blk_plug plug;
	u32 i, j;

	atomic_set(&w.pending, 1);
	init_completion(&w.done);
	bkc_set_lock(set);
	for (i = 0; i < n; i++) {
		ps[i]->wait = &w;
		ps[i]->err = 0;
		ps[i]->werr = 0;
		bkc_promo_alloc_hole(ps[i]);
	}
	bkc_set_unlock(set);

	blk_start_plug(&plug);
	for (i = 0; i < n; i++) {
		struct bkc_promo *p = ps[i];

		for (j = 0; j < p->next && !p->err; j++)
			bkc_promo_write(p, (u32)(p->ext[j].lba - p->lba),
					p->ext[j].len,
					bkc_bucket_sector(set, p->ext[j].bucket,
							  p->ext[j].off));
	}
	blk_finish_plug(&plug);
	if (!atomic_dec_and_test(&w.pending))
		wait_for_completion_io(&w.done);
	for (i = 0; i < n; i++) {
		if (ps[i]->werr) {
			ps[i]->err = ps[i]->werr;
			bkc_set_io_error(set, ps[i]->werr, "promotion write");
		}
	}
	/* a set that failed meanwhile takes no more keys */
	if (bkc_set_failed(set)) {
		for (i = 0; i < n; i++)
			ps[i]->err = ps[i]->err ?: -EIO;
	}

	bkc_set_lock(set);
	for (i = 0; i < n; i++) {
		struct bkc_promo *p = ps[i];

		if (!p->err && bkc_promo_insert(p, &pins))
			bkc_meta_note_record(set);
		for (j = 0; j < p->next; j++)
			bkc_core_data_put(set->core, p->ext[j].bucket);
		p->next = 0;
		/* waiting I/O goes in between promotions */
		if (rwsem_is_contended(&set->lock)) {
			bkc_set_unlock(set);
			bkc_set_lock(set);
		}
	}
	bkc_set_unlock(set);
	bkc_pins_put(set, &pins);
}

/* @p is done, filled or not: count it and free it. */
static void bkc_promo_end(struct bkc_promo *p)
{
	enum bkc_stat st = BKC_STAT_NR;

	if (!p->err)
		st = p->readaround ? BKC_STAT_READAROUNDS : BKC_STAT_PROMOTIONS;
	else if (p->err == 1)
		st = BKC_STAT_MISS_COLLISIONS;
	if (st != BKC_STAT_NR) {
		bkc_stat_add(&p->b->st, st, 1);
		bkc_stat_add(&p->set->st, st, 1);
	}
	bkc_promo_free(p);
}

/*
 * Hand promotions (a list, first to last, of @set) to the set's
 * workqueue, a jiffy from now.  This runs where a read completes: waking
 * the high-priority worker here would put it on the CPU the reader is
 * about to be woken on, and move the reader to another one (a cross-CPU
 * wakeup).  The timer runs bkc_promo_kick(), which fills every promotion
 * gathered meanwhile, in batches (bkc_promo_batch()).
 */
static void bkc_promo_queue_list(struct bkc_set *set, struct llist_node *first,
				 struct llist_node *last)
{
	if (first && llist_add_batch(first, last, &set->promo_ready))
		queue_delayed_work(set->wq, &set->promo_kick, 1);
}

void bkc_promo_kick(struct work_struct *work)
{
	struct bkc_set *set = container_of(to_delayed_work(work),
					   struct bkc_set, promo_kick);
	struct bkc_promo *ps[BKC_PROMO_BATCH], *p;
	struct llist_node *list = NULL;
	u32 n = 0, i, k;

	/*
	 * Batches of up to BKC_PROMO_BATCH, a hole of each at a time: a
	 * promotion with holes left takes its place in the next batch, and
	 * those that came meanwhile fill the rest (in the order they came),
	 * so that none waits behind a long read-around.
	 */
	for (;;) {
		if (!list) {
			list = llist_del_all(&set->promo_ready);
			list = llist_reverse_order(list);
		}
		if (!list && !n)
			break;
		while (list && n < BKC_PROMO_BATCH) {
			p = llist_entry(list, struct bkc_promo, ll);
			list = list->next;
			p->cur = 0;
			ps[n++] = p;
		}
		if (bkc_set_failed(set)) {
			for (i = 0; i < n; i++)
				bkc_promo_free(ps[i]);
			n = 0;
			continue;
		}
		bkc_promo_batch(set, ps, n);
		for (i = 0, k = 0; i < n; i++) {
			p = ps[i];
			if (!p->err && ++p->cur < p->nholes)
				ps[k++] = p;
			else
				bkc_promo_end(p);
		}
		n = k;
		/* a round may have slept on no I/O at all */
		cond_resched();
	}
}

/* The pages for a promotion of [@lba, @lba + @len) for @r, or NULL. */
static struct bkc_promo *bkc_promo_alloc(struct bkc_req *r, u64 lba, u32 len)
{
	struct bkc_set *set = r->set;
	u32 npg = DIV_ROUND_UP(len << SECTOR_SHIFT, PAGE_SIZE), j;
	struct bkc_promo *p;

	if (atomic_inc_return(&set->promotes) > BKC_PROMOTE_MAX) {
		atomic_dec(&set->promotes);
		return NULL;
	}
	p = kzalloc(struct_size(p, pages, npg), GFP_NOWAIT | __GFP_NOWARN);
	if (!p) {
		atomic_dec(&set->promotes);
		return NULL;
	}
	p->b = r->b;
	p->set = set;
	p->ra_slot = -1;	/* before any bkc_promo_free() */
	percpu_ref_get(&r->b->inflight);
	for (j = 0; j < npg; j++) {
		p->pages[j] = alloc_page(GFP_NOWAIT | __GFP_NOWARN);
		if (!p->pages[j])
			break;
		p->nr_pages++;
	}
	if (j < npg) {
		bkc_promo_free(p);
		return NULL;
	}
	p->lba = lba;
	p->len = len;
	p->epoch = r->epoch;
	p->readaround = false;
	p->nholes = 1;
	p->hole[0].off = 0;
	p->hole[0].len = len;
	return p;
}

/*
 * Read miss segment @segno of @r from the backing device into pages of a
 * promotion; bkc_promo_copy_out() gives the caller its copy.  False if
 * there are no pages for it: the caller reads it the plain way.
 */
static bool bkc_promo_read(struct bkc_req *r, u32 segno)
{
	struct bkc_seg *seg = &r->seg[segno];
	struct bkc_backing *b = r->b;
	u32 bytes = seg->len << SECTOR_SHIFT, i, n;
	struct bkc_clone *bc;
	struct bkc_promo *p;
	struct bio *bio;

	if (bytes > BKC_PROMOTE_MAX_BYTES)
		return false;
	p = bkc_promo_alloc(r, seg->lba, seg->len);
	if (!p)
		return false;
	seg->promo = p;
	bkc_fg_stamp(&b->wb);
	bio = bio_alloc_bioset(b->dev.bdev, p->nr_pages,
			       REQ_OP_READ | (r->bio->bi_opf & REQ_SYNC),
			       GFP_NOIO, &b->bs);
	bc = container_of(bio, struct bkc_clone, bio);
	bc->r = r;
	bc->seg = segno;
	bio->bi_iter.bi_sector = seg->lba + b->data_start;
	bio->bi_end_io = bkc_clone_endio;
	bio->bi_private = NULL;
	for (i = 0; bytes; i++, bytes -= n) {
		n = min_t(u32, bytes, PAGE_SIZE);
		__bio_add_page(bio, p->pages[i], n, 0);
	}
	submit_bio_noacct(bio);
	return true;
}

/* A promoted miss was read: copy our pages into the caller's buffer. */
static void bkc_promo_copy_out(struct bkc_req *r, struct bkc_seg *seg)
{
	struct bkc_promo *p = seg->promo;
	struct bvec_iter iter = r->bio->bi_iter;
	struct bio_vec bv;
	u32 done = 0;

	bio_advance_iter(r->bio, &iter, (seg->lba - r->lba) << SECTOR_SHIFT);
	iter.bi_size = seg->len << SECTOR_SHIFT;
	__bio_for_each_segment(bv, r->bio, iter, iter) {
		u32 skip = 0;

		while (skip < bv.bv_len) {
			u32 in = done & (PAGE_SIZE - 1);
			u32 n = min_t(u32, bv.bv_len - skip, PAGE_SIZE - in);
			u8 *src = kmap_local_page(p->pages[done >> PAGE_SHIFT]);

			memcpy_to_bvec(&(struct bio_vec){
				.bv_page = bv.bv_page,
				.bv_offset = bv.bv_offset + skip,
				.bv_len = n }, src + in);
			kunmap_local(src);
			skip += n;
			done += n;
		}
	}
}

/* Forget the promotions of @r (failed, or read again). */
static void bkc_promo_drop_all(struct bkc_req *r)
{
	u32 i;

	for (i = 0; i < r->nseg; i++) {
		if (r->seg[i].promo)
			bkc_promo_free(r->seg[i].promo);
		r->seg[i].promo = NULL;
	}
}

/*
 * A read finished: chain the promotions of its misses from *@first to
 * *@last, for bkc_promo_queue_list() once the caller has its completion.
 * Each promotion holds its own reference to the backing device.
 */
static void bkc_promote(struct bkc_req *r, struct llist_node **first,
			struct llist_node **last)
{
	struct bkc_set *set = r->set;
	u32 i;

	for (i = 0; i < r->nseg; i++) {
		struct bkc_seg *seg = &r->seg[i];
		struct bkc_promo *p = seg->promo;

		if (!p)
			continue;
		seg->promo = NULL;
		if (r->status || seg->kind != BKC_SEG_MISS ||
		    bkc_epoch_dirtied(set, r->b->dev_id, seg->lba, seg->len,
				      r->epoch)) {
			bkc_promo_free(p);
			continue;
		}
		p->ll.next = *first;
		*first = &p->ll;
		if (!*last)
			*last = &p->ll;
	}
}

/* ---- read-around of bypassed write streams ---- */

/* Remember a write that bypassed the cache as part of a stream. */
static void bkc_note_bypassed(struct bkc_backing *b, u64 lba, u32 len)
{
	struct bkc_span *sp;
	u32 i;

	spin_lock(&b->seq_lock);
	for (i = 0; i < BKC_BYPASSED_NR; i++) {
		sp = &b->bypassed[i];
		if (sp->end == lba && sp->start < sp->end) {
			sp->end = lba + len;
			goto out;
		}
	}
	sp = &b->bypassed[b->bypassed_next % BKC_BYPASSED_NR];
	/* bkc_readaround() peeks at it without the lock */
	WRITE_ONCE(b->bypassed_next, b->bypassed_next + 1);
	sp->start = lba;
	sp->end = lba + len;
out:
	spin_unlock(&b->seq_lock);
}

struct bkc_ra_holes {
	u64			base;	/* sector the offsets count from */
	u64			miss, miss_end;	/* promoted on its own */
	u32			n, sectors;
	struct bkc_hole		hole[BKC_RA_HOLES];
};

/* Note hole [@s, @e) if not empty; 1 once there is no room for it. */
static int bkc_ra_add(struct bkc_ra_holes *h, u64 s, u64 e)
{
	if (s >= e)
		return 0;
	if (h->n == BKC_RA_HOLES)
		return 1;
	h->hole[h->n].off = (u32)(s - h->base);
	h->hole[h->n++].len = (u32)(e - s);
	h->sectors += (u32)(e - s);
	return 0;
}

/* An unmapped piece of the read-around, less the miss itself. */
static int bkc_ra_hole(void *arg, const struct bkc_key *k, u64 pos, u32 len)
{
	struct bkc_ra_holes *h = arg;
	u64 s = bkc_pos_lba(pos), e = s + len;

	if (k)
		return 0;
	return bkc_ra_add(h, s, min(e, h->miss)) ?:
		bkc_ra_add(h, max(s, h->miss_end), e);
}

static void bkc_ra_endio(struct bio *bio)
{
	struct bkc_promo *p = bio->bi_private;
	blk_status_t st = bio->bi_status;

	bio_put(bio);
	if (st) {
		bkc_promo_free(p);
		return;
	}
	bkc_promo_queue_list(p->set, &p->ll, &p->ll);
}

/*
 * Submit a read-around's read from a worker, plugged: md RAID5 cuts it at
 * chunk boundaries, and the chunks that lie next to each other on a
 * member then reach it as one request.  Submitted from the request path
 * instead, it would be cut after bkc_submit_bio() returned, unplugged.
 */
static void bkc_ra_submit(struct work_struct *work)
{
	struct bkc_promo *p = container_of(work, struct bkc_promo, submit);
	struct blk_plug plug;

	blk_start_plug(&plug);
	submit_bio_noacct(p->bio);
	blk_finish_plug(&plug);
}

/*
 * @r is a promoted miss: if it lies in a write stream that bypassed the
 * cache, read the 1 MiB around it too and promote what the cache holds
 * nothing of but the miss (promoted on its own), if that is more than
 * the miss itself.  Best effort: no pages, too many promotions in flight,
 * no free slot, the window's read-around already in flight, or a node
 * not in memory, and nothing happens.
 */
static void bkc_readaround(struct bkc_req *r)
{
	struct bkc_backing *b = r->b;
	struct bkc_set *set = r->set;
	u64 lba = r->lba, end = lba + r->sectors, s = 0, e = 0, a;
	struct bkc_ra_holes h = {};
	struct bkc_promo *p;
	struct bio *bio;
	u32 i, left, slot = BKC_RA_INFLIGHT;
	int ret;

	/* lockless: a stream noted meanwhile is only found by the next miss */
	if (!READ_ONCE(b->bypassed_next) ||
	    atomic_read(&set->promotes) >= BKC_PROMOTE_MAX / 4)
		return;
	a = round_down(lba, BKC_RA_SECTORS);
	spin_lock(&b->seq_lock);
	for (i = 0; i < BKC_BYPASSED_NR; i++) {
		struct bkc_span *sp = &b->bypassed[i];

		if (sp->start <= lba && end <= sp->end) {
			s = max(sp->start, a);
			e = min(sp->end, a + BKC_RA_SECTORS);
			break;
		}
	}
	/* one read-around per window at a time: the next finds it cached */
	for_each_set_bit(i, &b->ra_busy, BKC_RA_INFLIGHT)
		if (b->ra_window[i] == a)
			e = 0;
	if (e > s) {
		slot = find_first_zero_bit(&b->ra_busy, BKC_RA_INFLIGHT);
		if (slot < BKC_RA_INFLIGHT) {
			b->ra_window[slot] = a;
			set_bit(slot, &b->ra_busy);
		}
	}
	spin_unlock(&b->seq_lock);
	if (slot >= BKC_RA_INFLIGHT)
		return;
	e = min_t(u64, e, get_capacity(b->disk));
	if (e <= s || e - s <= r->sectors ||
	    bkc_epoch_dirtied(set, b->dev_id, s, e - s, r->epoch))
		goto out_slot;
	/* the holes: what the cache holds nothing of */
	h.base = s;
	h.miss = lba;
	h.miss_end = end;
	down_read(&set->lock);
	ret = bkc_core_lookup(set->core, b->dev_id, s, e - s, bkc_ra_hole, &h);
	up_read(&set->lock);
	/* nothing to gain beyond the miss's own promotion */
	if (ret < 0 || h.sectors <= r->sectors)
		goto out_slot;
	p = bkc_promo_alloc(r, s, e - s);
	if (!p)
		goto out_slot;
	p->readaround = true;
	p->ra_slot = slot;	/* bkc_promo_free() gives it back */
	p->nholes = h.n;
	memcpy(p->hole, h.hole, sizeof(p->hole));
	bio = bio_alloc(b->dev.bdev, p->nr_pages, REQ_OP_READ,
			GFP_NOWAIT | __GFP_NOWARN);
	if (!bio) {
		bkc_promo_free(p);
		return;
	}
	bio->bi_iter.bi_sector = s + b->data_start;
	bio->bi_private = p;
	bio->bi_end_io = bkc_ra_endio;
	for (i = 0, left = p->len << SECTOR_SHIFT; left; i++) {
		u32 n = min_t(u32, left, PAGE_SIZE);

		__bio_add_page(bio, p->pages[i], n, 0);
		left -= n;
	}
	p->bio = bio;
	INIT_WORK(&p->submit, bkc_ra_submit);
	queue_work(set->wq, &p->submit);
	return;
out_slot:
	clear_bit(slot, &b->ra_busy);
}

/* ---- writes ---- */

static void bkc_release_extents(struct bkc_req *r)
{
	u32 i;

	for (i = 0; i < r->nseg; i++) {
		if (r->seg[i].kind == BKC_SEG_CACHE && !r->seg[i].put) {
			bkc_core_data_put(r->set->core, r->seg[i].bucket);
			r->seg[i].put = true;
		}
	}
}

/* Space in the cache for the whole request, as up to BKC_SEGS extents. */
static int bkc_alloc_extents(struct bkc_req *r, u32 wp)
{
	struct bkc_set *set = r->set;
	u32 done = 0;
	int ret = 0;

	bkc_set_lock(set);
	while (done < r->sectors && r->nseg < BKC_SEGS) {
		struct bkc_seg *seg = &r->seg[r->nseg];

		*seg = (struct bkc_seg){ .kind = BKC_SEG_CACHE };
		ret = bkc_core_alloc_data(set->core, wp, r->sectors - done,
					  &seg->bucket, &seg->off, &seg->len,
					  &seg->gen);
		if (ret)
			break;
		seg->lba = r->lba + done;
		done += seg->len;
		r->nseg++;
	}
	bkc_set_unlock(set);
	if (!done)
		return ret ? ret : -ENOSPC;
	if (!bkc_req_trim(r, done)) {
		/* bypassed whole: no extent of it may stay */
		bkc_set_lock(set);
		bkc_release_extents(r);
		bkc_set_unlock(set);
		r->nseg = 0;
		return -ENOMEM;
	}
	return 0;
}

/* ---- in-place overwrites ---- */

/*
 * A writeback write that one dirty key covers whole goes to that key's
 * place in the cache: no new space, no key, no journal record; an fsync
 * after it costs a flush of the cache device, not a commit.  Each sector
 * reads back old or new after a power cut (design C2).  What could meet
 * it is kept off:
 *   - writeback: its range is registered (range.c) before the lookup, so
 *     no batch can look the key up, copy it and mark it clean meanwhile;
 *     where a batch holds the range, the write goes the usual way;
 *   - GC moves and bucket reuse: the meta thread's gate (meta.c) keeps
 *     new ones off and waits for those in flight;
 *   - other writes of the range: none may be acked (keys not in) or in
 *     flight, else the write goes the usual way, after them.
 * Writes with FUA or PREFLUSH go the usual way.  The write is counted
 * when it completes (ip_done); a PREFLUSH has the cache device flushed
 * when one completed since the last such flush: by the commit it waits
 * for, or by a flush of its own (bkc_flush_start()).
 */

/* Point @r's one segment at the place of dirty key @k, which covers it. */
static void bkc_ip_seg(struct bkc_req *r, const struct bkc_key *k)
{
	r->seg[0] = (struct bkc_seg){
		.kind	= BKC_SEG_CACHE,
		.put	= true,		/* no data reference to drop */
		.lba	= r->lba,
		.len	= r->sectors,
		.bucket	= bkc_key_bucket(k),
		.gen	= bkc_key_gen(k),
		.off	= k->off + (u32)(r->lba - bkc_pos_lba(k->pos)),
	};
	r->nseg = 1;
}

static void bkc_ip_put(struct bkc_set *set)
{
	if (atomic_dec_and_test(&set->ip_inflight))
		wake_up_all(&set->ip_wait);
}

/* May @r overwrite in place?  If so it holds its range and a gate count. */
static bool bkc_inplace(struct bkc_req *r)
{
	struct bkc_backing *b = r->b;
	struct bkc_set *set = r->set;
	struct bkc_key k;
	int ret;

	/*
	 * Only a dirty key is overwritten.  Lockless: a count read as 0
	 * just after a key became dirty only sends this write the usual way.
	 */
	if (!bkc_core_dev_dirty_lockless(set->core, b->dev_id))
		return false;
	/*
	 * Nor where the core's summary says no dirty key is: the usual
	 * case of a write to a block not written before, which then needs
	 * no range, no gate and no descent.  Lockless, as the count.
	 */
	if (!bkc_core_maybe_dirty_lockless(set->core, b->dev_id, r->lba))
		return false;
	if (!bkc_fg_try_begin(b, &r->range, r->lba, r->sectors))
		return false;
	if (bkc_acked_any(set, b->dev_id, r->lba, r->sectors) ||
	    bkc_epoch_dirtied(set, b->dev_id, r->lba, r->sectors,
			      atomic64_read(&set->epoch)))
		goto out_range;
	atomic_inc(&set->ip_inflight);
	/* the count before the gate: see bkc_ip_gate_raise() */
	smp_mb__after_atomic();
	if (READ_ONCE(set->ip_gate))
		goto out_gate;
	/* no acked write of the range: the lookup sees every key */
	smp_rmb();
	down_read(&set->lock);
	ret = bkc_core_find(set->core, b->dev_id, r->lba, r->sectors, &k);
	up_read(&set->lock);
	if (ret != 1 || !bkc_key_dirty(&k))
		goto out_gate;
	bkc_ip_seg(r, &k);
	r->flags |= RQ_RANGE;
	return true;
out_gate:
	bkc_ip_put(set);
out_range:
	bkc_fg_end(b, &r->range);
	return false;
}

/*
 * An in-place overwrite is done: count it and let the gate go.  True if
 * it must be made again the usual way (bkc_req_done()): it failed on the
 * cache device (its range of the key then holds what the device left, and
 * a new extent and key replace that range), or the set failed meanwhile
 * (its cache device is not relied on again: bkc_dispatch() parks it like
 * any write of a failed set).
 */
static bool bkc_inplace_done(struct bkc_req *r)
{
	struct bkc_set *set = r->set;
	bool again = bkc_set_failed(set) || (r->flags & RQ_CACHE_ERR);

	if (!again) {
		atomic64_inc(&set->ip_done);
		bkc_count(r, BKC_STAT_OVERWRITES, 1);
	}
	bkc_ip_put(set);
	return again;
}

/*
 * The backing superblock must say "dirty" before dirty data exists.  The
 * write is done by a worker: bios submitted from ->submit_bio would wait
 * on current->bio_list until we return.
 */
static int bkc_mark_dirty(struct bkc_backing *b)
{
	if (READ_ONCE(b->sb.state) == BKC_STATE_DIRTY)
		return 0;
	queue_work(bkc_state_wq, &b->state_work);
	flush_work(&b->state_work);
	return READ_ONCE(b->sb.state) == BKC_STATE_DIRTY ? 0 : -EIO;
}

static int bkc_has_key(void *arg, const struct bkc_key *k, u64 pos, u32 len)
{
	return k ? 1 : 0;
}

static int bkc_has_dirty(void *arg, const struct bkc_key *k, u64 pos,
			 u32 len)
{
	return k && bkc_key_dirty(k) ? 1 : 0;
}

/*
 * The journal entry that a FUA write which records nothing itself waits
 * for, 0 if none; set->lock held.  Its range may have been forgotten by
 * an earlier write whose record is not durable yet (a write routed around
 * the cache): after a power cut the replay would bring the clean data it
 * forgot back over the FUA write's (design.md C1).  It waits for every
 * record so far, as a write with records of its own does.
 */
static u64 bkc_fua_seq(struct bkc_set *set)
{
	u64 seq = bkc_core_flush_seq(set->core);

	return seq > bkc_core_durable_seq(set->core) ? seq : 0;
}

/*
 * The RAID-stripe rule: in writeback mode, a stream's write that would
 * bypass is cached instead when a stripe it touches already holds dirty
 * data.  Bypassed, it would cost md a partial-stripe write now and, once
 * the dirty data drains, another one; cached, writeback writes the stripe
 * whole.  It also spares the backing flush that must come before a
 * bypassed write may drop dirty data (bkc_apply()).  The device's dirty
 * count is read without the lock: a stale value only decides whether the
 * stripe is looked up, and either route is correct.
 */
static bool bkc_stripe_dirty(struct bkc_req *r)
{
	struct bkc_backing *b = r->b;
	struct bkc_set *set = r->set;
	u64 stripe = bkc_backing_stripe(b), s, e;
	int ret;

	if (!stripe || !bkc_core_dev_dirty_lockless(set->core, b->dev_id))
		return false;
	s = r->lba - r->lba % stripe;
	e = min_t(u64, roundup(r->lba + r->sectors, stripe),
		  get_capacity(b->disk));
	down_read(&set->lock);
	ret = bkc_core_lookup(set->core, b->dev_id, s, e - s, bkc_has_dirty,
			      NULL);
	up_read(&set->lock);
	return ret > 0;
}

static void bkc_write(struct bkc_req *r)
{
	struct bkc_backing *b = r->b;
	struct bkc_set *set = r->set;
	u32 mode = READ_ONCE(b->sb.cache_mode), i;
	enum req_op op = bio_op(r->bio);
	int ret = -ENOSPC, why = BKC_WHY_NONE;
	bool bypass;

	/* a detach in progress writes back; new data must not be dirty */
	if (mode == BKC_MODE_WRITEBACK && READ_ONCE(b->detaching))
		mode = BKC_MODE_WRITETHROUGH;
	if (mode == BKC_MODE_NONE || mode == BKC_MODE_WRITEAROUND)
		why = BKC_WHY_MODE;
	else if (op != REQ_OP_WRITE || !r->sectors)
		why = BKC_WHY_OP;
	else if (mode == BKC_MODE_WRITEBACK &&
		 bkc_core_dirty_pct_lockless(set->core, BKC_DIRTY_BYPASS_PCT))
		why = BKC_WHY_FULL;
	else if (bkc_sequential(b, r->bio) &&
		 !(mode == BKC_MODE_WRITEBACK && bkc_stripe_dirty(r)))
		why = BKC_WHY_SEQUENTIAL;
	if (why == BKC_WHY_SEQUENTIAL)
		bkc_note_bypassed(b, r->lba, r->sectors);
	bypass = why != BKC_WHY_NONE;
	if (!bypass && mode == BKC_MODE_WRITEBACK) {
		atomic_inc(&b->wb.wb_writes);
		r->flags |= RQ_WBCOUNT;
		/* count before state; bkc_wb_set_clean() does the reverse */
		smp_mb__after_atomic();
		if (bkc_mark_dirty(b))
			why = BKC_WHY_NOSPACE;
		bypass = why != BKC_WHY_NONE;
	}
	if (!bypass && mode == BKC_MODE_WRITEBACK && !(r->flags & RQ_NOIP) &&
	    !(r->bio->bi_opf & (REQ_FUA | REQ_PREFLUSH)) && bkc_inplace(r)) {
		trace_bkc_request(disk_devt(b->disk), r->lba, r->sectors, true,
				  BKC_ROUTE_CACHED, BKC_WHY_NONE);
		bkc_acct_start(r);
		bkc_epoch_begin(r);
		r->route = BKC_RT_INPLACE;
		r->flags |= RQ_COUNTED;
		bkc_count(r, BKC_STAT_WRITE_HITS, 1);
		atomic_set(&r->pending, 2);
		bkc_to_cache(r, 0);
		bkc_req_put(r);
		return;
	}
	if (!bypass) {
		ret = bkc_alloc_extents(r, mode == BKC_MODE_WRITEBACK ?
					BKC_WP_DIRTY : BKC_WP_CLEAN);
		if (ret == -ENOSPC || ret == -EAGAIN) {
			bkc_meta_wait_space(set, HZ / 20);
			ret = bkc_alloc_extents(r, mode == BKC_MODE_WRITEBACK ?
						BKC_WP_DIRTY : BKC_WP_CLEAN);
		}
		if (ret)
			why = BKC_WHY_NOSPACE;
		bypass = ret != 0;
	}
	trace_bkc_request(disk_devt(b->disk), r->lba, r->sectors, true,
			  bypass ? BKC_ROUTE_BYPASS : BKC_ROUTE_CACHED, why);
	bkc_acct_start(r);
	if (r->sectors)
		bkc_epoch_begin(r);
	if (bypass) {
		r->route = BKC_RT_AROUND;
		bkc_count(r, BKC_STAT_BYPASSED, r->sectors);
	} else {
		r->route = mode == BKC_MODE_WRITEBACK ? BKC_RT_WB : BKC_RT_WT;
	}
	if (r->route != BKC_RT_WB) {
		bkc_fg_begin(b, &r->range, r->lba, r->sectors);
		r->flags |= RQ_RANGE;
	}
	/*
	 * A bypassed write over a range the cache holds nothing of needs no
	 * invalidation, so it completes from end_io without the insert
	 * worker.  Writes that race with it are unordered with it anyway;
	 * promotions are kept off by its write epoch.  An acked write's keys
	 * go in first, by the insert worker: with one over the range, the
	 * write goes there behind it.  The check comes before the lookup, as
	 * in bkc_read(): the worker inserts the keys before it drops the
	 * counts, so with none left the lookup sees them.  (After the lookup
	 * the keys could have gone in and the count dropped in between: the
	 * write would then leave an acked write's dirty key over its data.)
	 */
	if (r->route == BKC_RT_AROUND && r->sectors &&
	    !bkc_acked_any(set, b->dev_id, r->lba, r->sectors)) {
		u64 jseq = 0;
		int has;

		/* no acked write of the range: the lookup sees their keys */
		smp_rmb();
		down_read(&set->lock);
		has = bkc_core_lookup(set->core, b->dev_id, r->lba,
				      r->sectors, bkc_has_key, NULL);
		if (!has && (r->flags & RQ_FUA))
			jseq = bkc_fua_seq(set);
		up_read(&set->lock);
		if (!has) {
			r->route = BKC_RT_FAST;
			r->jseq = jseq;
		}
	}

	atomic_set(&r->pending, r->nseg + (r->route != BKC_RT_WB) + 1);
	if (r->route != BKC_RT_WB)
		bkc_to_backing(r, BKC_SEG_WHOLE, r->lba, r->sectors);
	for (i = 0; i < r->nseg; i++)
		bkc_to_cache(r, i);
	bkc_submit_rest(r);
	bkc_req_put(r);
}

/* Insert the keys of @r's cache extents not inserted yet. */
static int bkc_apply_keys(struct bkc_req *r, bool dirty)
{
	struct bkc_key k;
	u64 seq, ow;
	int ret;

	for (; r->applied < r->nseg; r->applied++) {
		struct bkc_seg *s = &r->seg[r->applied];

		bkc_key_init(&k, r->b->dev_id, s->lba, s->len, s->bucket,
			     s->off, s->gen, dirty);
		ow = bkc_core_overwrites(r->set->core);
		ret = bkc_core_insert(r->set->core, &k, &seq);
		if (ret)
			return ret;
		/* a write hit replaces cached data; the insert says so */
		if (bkc_core_overwrites(r->set->core) != ow)
			r->flags |= RQ_WHIT;
		r->jseq = seq;
	}
	if (!(r->flags & RQ_COUNTED) && r->nseg) {
		r->flags |= RQ_COUNTED;
		bkc_count(r, (r->flags & RQ_WHIT) ? BKC_STAT_WRITE_HITS :
			  BKC_STAT_WRITE_MISSES, 1);
	}
	return 0;
}

/* Does bkc_apply() put keys for @r (else it forgets @r's range)? */
static bool bkc_apply_keys_route(const struct bkc_req *r)
{
	return r->route == BKC_RT_WB ||
	       (r->route == BKC_RT_WT && !(r->flags & RQ_CACHE_ERR));
}

/*
 * Insert @r's keys or invalidations; called with set->lock held.
 * Returns -EINPROGRESS if the write replaces dirty data that the backing
 * device must hold durably first (the caller flushes it and calls again),
 * BKC_APPLY_YIELD if an invalidation stopped between pieces for waiting
 * I/O (the caller drops the lock and calls again).
 */
static int bkc_apply(struct bkc_req *r)
{
	struct bkc_set *set = r->set;
	struct bkc_core *c = set->core;
	u32 dev = r->b->dev_id, len;
	bool blind = r->route == BKC_RT_AROUND &&
		     r->sectors <= 1U << BKC_INVAL_SHIFT;
	u32 start = r->applied;
	u64 lba, seq;
	int ret = 0;

	if (r->route == BKC_RT_WB)
		return (r->flags & RQ_CACHE_ERR) ? 0 : bkc_apply_keys(r, true);
	/*
	 * The backing write failed: whatever the cache holds for the range
	 * stays as it is.  Dirty data there is still the newest durable
	 * copy, and clean data still one of the values the range had.
	 */
	if (r->flags & RQ_BACK_ERR)
		return 0;
	/*
	 * Everything else wrote the backing device and now puts clean keys
	 * over the range or forgets it.  Where that drops dirty data, the
	 * backing device must be flushed first (design.md C3, C4).
	 */
	if (bkc_apply_keys_route(r)) {
		/*
		 * A request's range: its leaves' pins fit (bkc_pins_get()).
		 * It is at most 32 extents, each in a bucket (a node), and a
		 * leaf made by a split holds half a full one's keys, of a
		 * sector or more each: 73 with 4 KiB nodes, 4948 with 256
		 * KiB ones.  Only a request of tens of MiB, in buckets of
		 * several MiB, over 512-byte keys could span more than 16.
		 */
		if (!(r->flags & RQ_FLUSHED) && bkc_core_dev_dirty(c, dev)) {
			ret = bkc_core_lookup(c, dev, r->lba, r->sectors,
					      bkc_has_dirty, NULL);
			if (ret)
				return ret < 0 ? ret : -EINPROGRESS;
		}
		return bkc_apply_keys(r, false);
	}
	/*
	 * Forget the range in pieces that span few leaves, each looked at on
	 * its own, so that a large range (a discard) needs only the leaves
	 * of one piece in memory at a time (bkc_apply_pin()).  Pieces
	 * before one that holds dirty data may be forgotten before the flush
	 * it waits for: they held clean data only, which may go whatever
	 * becomes of the write (design.md C2), also if the flush fails.
	 * Between pieces, I/O waiting for the lock goes first (the caller
	 * lets go of it and calls again), as when a leaf is pinned:
	 * a discard of a whole large device is thousands of pieces.
	 */
	for (; r->applied < r->sectors; r->applied += len, r->piece = 0) {
		if (r->applied != start && rwsem_is_contended(&set->lock))
			return BKC_APPLY_YIELD;
		lba = r->lba + r->applied;
		len = min_t(u32, r->piece ?: 1U << BKC_INVAL_SHIFT,
			    r->sectors - r->applied);
		if (!(r->flags & RQ_FLUSHED) && bkc_core_dev_dirty(c, dev)) {
			ret = bkc_core_lookup(c, dev, lba, len, bkc_has_dirty,
					      NULL);
			if (ret)
				return ret < 0 ? ret : -EINPROGRESS;
		}
		/*
		 * A bypassed write of one piece forgets it without a look:
		 * bkc_write() found keys in its range (or it was rerouted,
		 * bkc_reroute()).  A longer one (a discard) looks at each
		 * piece, as most may hold nothing: a record for each would
		 * fill the journal for nothing.
		 */
		if (!blind) {
			ret = bkc_core_lookup(c, dev, lba, len, bkc_has_key,
					      NULL);
			if (ret < 0)
				return ret;
		}
		if (blind || ret) {
			ret = bkc_core_invalidate(c, dev, lba, len, &seq);
			if (ret)
				return ret;
			r->jseq = seq;
		}
	}
	return 0;
}

/*
 * bkc_apply() met a leaf of @r's range not in memory: pin the leaves it
 * needs next, the request's for its keys, the piece it stands at for an
 * invalidation.  If they are more than @p holds, that piece shrinks to
 * the leaves pinned (with small leaves, 512-byte keys say, a whole piece
 * can span more), so that it can go on; a later piece starts whole again.
 * Called without set->lock.
 */
static int bkc_apply_pin(struct bkc_req *r, struct bkc_pins *p)
{
	u32 dev = r->b->dev_id;
	u64 from = r->lba, to = r->lba + r->sectors;
	int ret;

	if (!bkc_apply_keys_route(r)) {
		from += r->applied;
		to = min_t(u64, to, from + (1U << BKC_INVAL_SHIFT));
	}
	ret = bkc_pins_get(r->set, p, bkc_pos(dev, from), bkc_pos(dev, to));
	if (!ret && !bkc_apply_keys_route(r))
		r->piece = (u32)(bkc_pins_reach(p, bkc_pos(dev, from),
						bkc_pos(dev, to)) -
				 bkc_pos(dev, from));
	return ret;
}

static void bkc_fua_done(struct bkc_jwait *jw, int err)
{
	struct bkc_req *r = container_of(jw, struct bkc_req, jw);

	if (err && bkc_set_failed(r->set)) {
		bkc_park(r, BKC_PARK_FUA);
		return;
	}
	if (err)
		bkc_req_error(r, BLK_STS_IOERR);
	bkc_req_complete(r);
}

/* Release what a write holds besides its cache extents. */
static void bkc_write_release(struct bkc_req *r)
{
	if (r->flags & RQ_WBCOUNT)
		atomic_dec(&r->b->wb.wb_writes);
	r->flags &= ~RQ_WBCOUNT;
	if (r->flags & RQ_RANGE)
		bkc_fg_end(r->b, &r->range);
	r->flags &= ~RQ_RANGE;
	bkc_ack_end(r);
	bkc_epoch_end(r);
}

/* Keys are in: release what the request held and complete it. */
static void bkc_write_finish(struct bkc_req *r)
{
	bkc_write_release(r);
	if ((r->flags & RQ_FUA) && r->jseq) {
		r->jw.fn = bkc_fua_done;
		bkc_journal_wait(r->set, &r->jw, r->jseq);
		return;
	}
	bkc_req_complete(r);
}

/* bkc_write_finish() in process context: a journal wait (jlock) */
static void bkc_finish_work(struct work_struct *work)
{
	bkc_write_finish(container_of(work, struct bkc_req, work));
}

/*
 * A writeback write that failed on the cache device of a device with no
 * dirty data: write it to the backing device instead, as a bypassed
 * write, which then forgets what the cache held for the range.
 */
static void bkc_reroute(struct bkc_req *r)
{
	r->flags &= ~RQ_CACHE_ERR;
	r->route = BKC_RT_AROUND;
	r->nseg = 0;
	r->applied = 0;
	r->piece = 0;
	bkc_fg_begin(r->b, &r->range, r->lba, r->sectors);
	r->flags |= RQ_RANGE;
	atomic_set(&r->pending, 1);
	bkc_to_backing(r, BKC_SEG_WHOLE, r->lba, r->sectors);
}

/* The insert worker: keys of finished writes, in batches. */
void bkc_insert_work(struct work_struct *work)
{
	struct bkc_set *set = container_of(to_delayed_work(work),
					   struct bkc_set, insert_work);
	struct llist_node *list = llist_reverse_order(llist_del_all(&set->done));
	struct bkc_pins pins = {};
	struct bkc_req *r, *tmp;
	bool noted = false, defer = false;
	u32 tries, at;
	int ret;

	if (!list) {
		bkc_ack_waiters_send(set);
		return;
	}
	/*
	 * The leaves of the batch are not pinned beforehand: they are in
	 * memory nearly always (leaves holding dirty keys are never
	 * evicted, the others only under memory pressure).  A write whose
	 * leaf is not finds out with -EDEADLK below and pins it then (see
	 * struct bkc_set's lock).  Pinning each write's leaves first cost a
	 * descent of the tree per write.
	 */
	bkc_set_lock(set);
	llist_for_each_entry(r, list, ll) {
		if (r->stage == BKC_ST_FLUSHQ)
			continue;
		if (bkc_set_failed(set)) {
			r->ins_next = BKC_INS_PARK;
			continue;
		}
		if (r->route == BKC_RT_WB && (r->flags & RQ_CACHE_ERR)) {
			bkc_release_extents(r);
			if (!bkc_core_dev_dirty(set->core, r->b->dev_id)) {
				r->ins_next = BKC_INS_REROUTE;
				continue;
			}
			/*
			 * The data reached neither device, and the cache may
			 * hold dirty data of the range.  Writing it around now
			 * would leave the backing device newer than that, with
			 * nothing durable to say so if the cache is failing:
			 * the write fails, the old data stays readable (not
			 * so after a failed in-place overwrite, which is
			 * retried this way: its range holds what the device
			 * left, as after any failed write).
			 */
			bkc_err_ratelimited(set->dev.bdev,
					    "writeback write of %u sectors at %llu failed on the cache device",
					    r->sectors, r->lba);
			bkc_req_error(r, BLK_STS_IOERR);
			continue;
		}
		for (tries = 0, at = r->applied;;) {
			ret = bkc_apply(r);
			/* tries count from the last piece applied */
			if (ret == -EDEADLK && r->applied != at) {
				at = r->applied;
				tries = 0;
			}
			if (ret == -EDEADLK && tries++ < 8) {
				/* a leaf @r needs is not in memory: pin it */
				bkc_set_unlock(set);
				bkc_pins_put(set, &pins);
				ret = bkc_apply_pin(r, &pins);
				bkc_set_lock(set);
				if (ret)
					break;
				continue;
			}
			if (ret == BKC_APPLY_YIELD) {
				/* a long invalidation lets waiting I/O in */
				bkc_set_unlock(set);
				cond_resched();
				bkc_set_lock(set);
				if (!bkc_set_failed(set))
					continue;
				ret = -EIO;	/* parked below */
			}
			if (ret != -EAGAIN && ret != -ENOSPC)
				break;
			bkc_set_unlock(set);
			ret = bkc_meta_wait_space(set, HZ / 10);
			bkc_set_lock(set);
			if (ret)
				break;
		}
		if (ret == -EINPROGRESS) {
			r->ins_next = BKC_INS_DEFER;
			defer = true;
			continue;
		}
		if (ret && !bkc_set_failed(set)) {
			/*
			 * The index cannot say what the devices hold any more:
			 * stop trusting it (the backing devices go on without
			 * the cache, fail.c).
			 */
			bkc_err(set->dev.bdev, "cannot record a write (%d)",
				ret);
			bkc_set_fail(set, "a write could not be recorded", ret);
		}
		if (ret) {
			r->ins_next = BKC_INS_PARK;
			continue;
		}
		if (r->jseq)
			noted = true;
		else if (r->flags & RQ_FUA)
			r->jseq = bkc_fua_seq(set);
		bkc_ack_end(r);
		bkc_release_extents(r);
		/* a batch of acked writes lets waiting I/O in between keys */
		if (rwsem_is_contended(&set->lock)) {
			bkc_set_unlock(set);
			bkc_set_lock(set);
		}
	}
	if (noted)
		bkc_meta_note_record(set);
	bkc_set_unlock(set);
	bkc_pins_put(set, &pins);

	/* r may be finished (and freed) by each call: iterate safely */
	llist_for_each_entry_safe(r, tmp, list, ll) {
		u8 next = r->ins_next;

		if (r->stage == BKC_ST_FLUSHQ) {
			/* the acked writes before it are in: flush now */
			r->stage = BKC_ST_DATA;
			if (bkc_set_failed(set))
				bkc_on_failed_set(r);
			else
				bkc_flush_start(r);
			continue;
		}
		r->ins_next = BKC_INS_FINISH;
		switch (next) {
		case BKC_INS_PARK:
			bkc_park(r, BKC_PARK_INSERT);
			break;
		case BKC_INS_REROUTE:
			bkc_reroute(r);
			break;
		case BKC_INS_DEFER:
			llist_add(&r->ll, &set->bflush);
			break;
		default:
			bkc_write_finish(r);
		}
	}
	if (defer)
		queue_work(set->wq, &set->bflush_work);
	bkc_ack_waiters_send(set);
}

/*
 * Flush the backing devices of the writes that replace dirty data, then
 * let them apply.  A failed flush fails the write and leaves the dirty
 * data in the cache as it was (clean pieces of its range forgotten before
 * it stay forgotten, bkc_apply()).  Each write holds its device's
 * inflight reference, so the device stays.
 */
void bkc_bflush_work(struct work_struct *work)
{
	struct bkc_set *set = container_of(work, struct bkc_set, bflush_work);
	struct llist_node *list = llist_del_all(&set->bflush);
	struct bkc_req *r, *tmp, *q;
	bool requeue = false;
	int err;

	if (!list)
		return;
	llist_for_each_entry(r, list, ll) {
		if (r->flags & (RQ_FLUSHED | RQ_BACK_ERR))
			continue;
		/* for foreground writes: writeback yields to it */
		err = bkc_backing_flush(r->b, true);
		/* one flush covers every write of the device done before it */
		llist_for_each_entry(q, list, ll) {
			if (q->b != r->b)
				continue;
			if (err)
				q->flags |= RQ_BACK_ERR;
			else
				q->flags |= RQ_FLUSHED;
		}
		if (err) {
			bkc_req_error(r, BLK_STS_IOERR);
			bkc_err_ratelimited(r->b->dev.bdev,
					    "flush failed (%d): writes over dirty data fail, the dirty data stays",
					    err);
		}
	}
	llist_for_each_entry_safe(r, tmp, list, ll) {
		if (r->flags & RQ_BACK_ERR)
			bkc_req_error(r, BLK_STS_IOERR);
		if (llist_add(&r->ll, &set->done))
			requeue = true;
	}
	if (requeue)
		bkc_insert_now(set);
}

/* ---- flushes ---- */

static void bkc_flush_jw(struct bkc_jwait *jw, int err)
{
	struct bkc_req *r = container_of(jw, struct bkc_req, jw);

	if (err && bkc_set_failed(r->set)) {
		bkc_park(r, BKC_PARK_FLUSH);
		return;
	}
	if (err)
		bkc_req_error(r, BLK_STS_IOERR);
	bkc_req_put(r);
}

/* Send an empty PREFLUSH to @bdev for @r as segment @seg, covering @gen. */
static void bkc_flush_send(struct bkc_req *r, struct block_device *bdev,
			   struct bio_set *bs, u32 seg, u64 gen)
{
	struct bkc_clone *bc;
	struct bio *flush;

	atomic_inc(&r->pending);
	flush = bio_alloc_bioset(bdev, 0, REQ_OP_WRITE | REQ_PREFLUSH,
				 GFP_NOIO, bs);
	bc = container_of(flush, struct bkc_clone, bio);
	bc->r = r;
	bc->seg = seg;
	bc->flush_gen = gen;
	flush->bi_end_io = bkc_clone_endio;
	submit_bio_noacct(flush);
}

/*
 * PREFLUSH: flush the devices that need it and commit the journal.  The
 * backing device is flushed only when a write to it completed since its
 * last successful flush.  The cache device is flushed by the commit this
 * waits for, if any: the open entry's commit sends its PREFLUSH after the
 * entry closes, so after now (bkc_commit()).  Else it is flushed here
 * when an in-place overwrite completed since the last cache flush began;
 * the rest of what went to the cache is the journal's business.
 */
static void bkc_flush_start(struct bkc_req *r)
{
	struct bkc_backing *b = r->b;
	struct bkc_set *set = r->set;
	u64 gen, ip, seq;
	bool open;

	r->stage = BKC_ST_FLUSH;
	/* the journal wait's count, and one per flush sent below */
	atomic_set(&r->pending, 1);
	seq = bkc_journal_flush_seq(set, &open);
	if (!open) {
		ip = atomic64_read(&set->ip_done);
		/* a commit may have covered more than @ip meanwhile */
		if (ip > (u64)atomic64_read(&set->ip_flushed))
			bkc_flush_send(r, set->dev.bdev, &set->bs,
				       BKC_SEG_CFLUSH, ip);
	}
	if (bkc_backing_flush_needed(b, &gen))
		bkc_flush_send(r, b->dev.bdev, &b->bs, BKC_SEG_FLUSH, gen);
	r->jw.fn = bkc_flush_jw;
	bkc_journal_wait(set, &r->jw, seq);
}

static void bkc_dispatch_work(struct work_struct *work)
{
	bkc_dispatch(container_of(work, struct bkc_req, work));
}

/* ---- completion ---- */

static void bkc_req_done(struct bkc_req *r)
{
	if (r->stage == BKC_ST_FLUSH) {
		r->stage = BKC_ST_DATA;
		r->bio->bi_opf &= ~REQ_PREFLUSH;
		if (r->status || !bio_sectors(r->bio)) {
			bkc_acct_start(r);
			bkc_req_complete(r);
			return;
		}
		r->flags &= ~RQ_BACK_ERR;
		INIT_WORK(&r->work, bkc_dispatch_work);
		queue_work(r->set->wq, &r->work);
		return;
	}
	if (test_and_clear_bit(ilog2(RQ_RELOOKUP), &r->rflags)) {
		r->retry = 0;
		r->flags &= ~RQ_PROMOTE;
		bkc_promo_drop_all(r);
		INIT_WORK(&r->work, bkc_read_work);
		queue_work(r->set->wq, &r->work);
		return;
	}
	if (r->retry) {
		INIT_WORK(&r->work, bkc_retry_work);
		queue_work(r->set->wq, &r->work);
		return;
	}
	if (r->route == BKC_RT_PASS) {
		bkc_req_complete(r);
		return;
	}
	if (r->route == BKC_RT_INPLACE) {
		if (!bkc_inplace_done(r)) {
			bkc_write_finish(r);
			return;
		}
		bkc_write_release(r);
		r->flags &= ~RQ_CACHE_ERR;
		r->flags |= RQ_NOIP;
		r->route = BKC_RT_NONE;
		r->nseg = 0;
		INIT_WORK(&r->work, bkc_dispatch_work);
		queue_work(r->set->wq, &r->work);
		return;
	}
	if (r->route == BKC_RT_FAST) {
		/*
		 * A FUA write whose journal entry is not durable yet waits
		 * from the workqueue (the journal's waiters take jlock); its
		 * range and write epoch go now, so that nothing waits on it.
		 */
		if (r->jseq > READ_ONCE(r->set->durable_seq)) {
			bkc_write_release(r);
			INIT_WORK(&r->work, bkc_finish_work);
			queue_work(r->set->wq, &r->work);
			return;
		}
		bkc_write_finish(r);
		return;
	}
	if (r->flags & RQ_WRITE) {
		if (!bkc_ack(r)) {
			llist_add(&r->ll, &r->set->done);
			bkc_insert_now(r->set);
		}
		return;
	}
	if (r->flags & RQ_PROMOTE) {
		struct llist_node *first = NULL, *last = NULL;
		struct bkc_set *set = r->set;

		/* the reader first: queueing arms a timer */
		bkc_promote(r, &first, &last);
		bkc_req_complete(r);
		bkc_promo_queue_list(set, first, last);
		return;
	}
	bkc_req_complete(r);
}

/* ---- a failed cache set ---- */

/* Finish parked request @r now that its device's failover is @state. */
static void bkc_park_resolve(struct bkc_req *r, u8 state)
{
	bool dead = state != BKC_FO_PASS;

	switch (r->park) {
	case BKC_PARK_NEW:
		if (dead)
			bkc_req_fail(r, BLK_STS_IOERR);
		else
			bkc_passthrough(r);
		return;
	case BKC_PARK_INSERT:
		/* the set is never used again: its extents need no release */
		bkc_write_release(r);
		if (r->stage == BKC_ST_ACKED) {
			/* completed: its data went with the set (lost_dirty) */
			WARN_ON_ONCE(!dead);
			bkc_req_complete(r);
			return;
		}
		if (!dead && r->route == BKC_RT_WB) {
			/* the data is only in the dead cache: write it again */
			r->flags &= RQ_WRITE | RQ_FUA | RQ_ACCT;
			r->status = BLK_STS_OK;
			bkc_passthrough(r);
			return;
		}
		/* the backing device has the data (or the write failed) */
		if (dead)
			bkc_req_error(r, BLK_STS_IOERR);
		bkc_req_complete(r);
		return;
	case BKC_PARK_FUA:
		if (dead)
			bkc_req_error(r, BLK_STS_IOERR);
		bkc_req_complete(r);
		return;
	case BKC_PARK_FLUSH:
		/* the backing flush is done, in flight or not needed; no journal */
		if (dead)
			bkc_req_error(r, BLK_STS_IOERR);
		bkc_req_put(r);
		return;
	}
}

static void bkc_park_work(struct work_struct *work)
{
	struct bkc_req *r = container_of(work, struct bkc_req, work);

	bkc_park_resolve(r, READ_ONCE(r->b->fo_state));
}

/*
 * @r needs a set that failed: wait for the failover of its device, or
 * finish it (from a worker) if that has decided already.  Any context.
 */
static void bkc_park(struct bkc_req *r, u8 kind)
{
	struct bkc_backing *b = r->b;
	unsigned long flags;
	u8 state;

	r->park = kind;
	spin_lock_irqsave(&b->fo_lock, flags);
	state = b->fo_state;
	if (state == BKC_FO_NONE)
		list_add_tail(&r->fo_node, &b->fo_parked);
	spin_unlock_irqrestore(&b->fo_lock, flags);
	if (state == BKC_FO_NONE)
		return;
	INIT_WORK(&r->work, bkc_park_work);
	bkc_park_queue(&r->work);
}

/*
 * The failover of @b decided @state (BKC_FO_PASS or BKC_FO_DEAD): finish
 * the parked requests; later ones see the state.  Process context.
 */
void bkc_req_failover(struct bkc_backing *b, u8 state)
{
	struct bkc_req *r, *tmp;
	unsigned long flags;
	LIST_HEAD(parked);

	spin_lock_irqsave(&b->fo_lock, flags);
	WRITE_ONCE(b->fo_state, state);
	list_splice_init(&b->fo_parked, &parked);
	spin_unlock_irqrestore(&b->fo_lock, flags);
	list_for_each_entry_safe(r, tmp, &parked, fo_node) {
		list_del_init(&r->fo_node);
		bkc_park_resolve(r, state);
	}
}

/*
 * A request for a failed set before its data I/O: reads of a device
 * without dirty data go to the backing device at once (it has all the
 * data; its failover cannot change that); the rest wait for the
 * failover.
 */
static void bkc_on_failed_set(struct bkc_req *r)
{
	u8 state = READ_ONCE(r->b->fo_state);

	if (state == BKC_FO_PASS) {
		bkc_passthrough(r);
	} else if (state == BKC_FO_DEAD) {
		bkc_req_fail(r, BLK_STS_IOERR);
	} else if (!(r->flags & RQ_WRITE) &&
		   !(r->bio->bi_opf & REQ_PREFLUSH) &&
		   !bkc_dev_dirty_lockless(r)) {
		bkc_passthrough(r);
	} else {
		bkc_park(r, BKC_PARK_NEW);
	}
}

/* ---- entry ---- */

static void bkc_dispatch(struct bkc_req *r)
{
	if (bkc_set_failed(r->set))
		bkc_on_failed_set(r);
	else if (r->flags & RQ_WRITE)
		bkc_write(r);
	else
		bkc_read(r);
}

/* No cache set (or a failed one): remap to the backing device. */
static void bkc_passthrough(struct bkc_req *r)
{
	r->route = BKC_RT_PASS;
	bkc_acct_start(r);
	atomic_set(&r->pending, 1);
	bkc_to_backing(r, BKC_SEG_WHOLE, r->lba, r->sectors);
}

void bkc_submit_bio(struct bio *bio)
{
	struct bkc_backing *b = bio->bi_bdev->bd_disk->private_data;
	struct bkc_set *set;
	struct bkc_req *r;

	bkc_backing_enter(b);
	bkc_stamp(&b->wb.last_io);
	r = mempool_alloc(bkc_req_pool, GFP_NOIO);
	memset(r, 0, offsetof(struct bkc_req, seg));
	r->b = b;
	r->bio = bio;
	r->lba = bio->bi_iter.bi_sector;
	r->sectors = bio_sectors(bio);
	if (op_is_write(bio_op(bio)))
		r->flags |= RQ_WRITE;
	if (bio->bi_opf & REQ_FUA)
		r->flags |= RQ_FUA;

	set = b->set;
	if (!set) {
		bkc_passthrough(r);
		return;
	}
	r->set = set;
	if (bkc_set_failed(set)) {
		bkc_on_failed_set(r);
		return;
	}
	if (bio->bi_opf & REQ_PREFLUSH) {
		/* behind the device's acked writes: their keys go in first */
		if (atomic_read(&b->nacked)) {
			r->stage = BKC_ST_FLUSHQ;
			llist_add(&r->ll, &set->done);
			bkc_insert_now(set);
			return;
		}
		/* none: the journal holds every completed write's keys */
		smp_rmb();
		bkc_flush_start(r);
		return;
	}
	bkc_dispatch(r);
}

/*
 * The request cache has a constructor, so that the slab allocator does not
 * clear each request as it hands it out (init_on_alloc, on by default in
 * Debian's kernels): 1.6 KiB per I/O, most of it segments a 4 KiB request
 * never uses, some 300 instructions per I/O by a profile (2026-12-06).
 * That caches with a constructor are not cleared is how mm/slab.h decides
 * (slab_want_init_on_alloc()), not a promise: if it changes, only the cost
 * comes back.  bkc_submit_bio() clears the head, and each segment is set
 * whole where it is filled (bkc_read_seg(), bkc_alloc_extents(),
 * bkc_ip_seg()); no segment past r->nseg is read.
 */
static void bkc_req_ctor(void *p)
{
	memset(p, 0, sizeof(struct bkc_req));
}

int bkc_request_init(void)
{
	bkc_req_cache = kmem_cache_create("bkc_req", sizeof(struct bkc_req),
					  __alignof__(struct bkc_req), 0,
					  bkc_req_ctor);
	if (!bkc_req_cache)
		return -ENOMEM;
	bkc_req_pool = mempool_create_slab_pool(64, bkc_req_cache);
	bkc_state_wq = alloc_workqueue("blkcache_state", WQ_MEM_RECLAIM, 0);
	if (!bkc_req_pool || !bkc_state_wq) {
		bkc_request_exit();
		return -ENOMEM;
	}
	return 0;
}

void bkc_request_exit(void)
{
	if (bkc_state_wq)
		destroy_workqueue(bkc_state_wq);
	bkc_state_wq = NULL;
	mempool_destroy(bkc_req_pool);
	bkc_req_pool = NULL;
	kmem_cache_destroy(bkc_req_cache);
	bkc_req_cache = NULL;
}
