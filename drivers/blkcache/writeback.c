// SPDX-License-Identifier: GPL-2.0
/*
 * Writeback: one thread per backing device copies dirty data from the
 * cache to the backing device, in LBA order, a batch at a time.
 *
 * A batch covers whole RAID stripes (the backing device's io_opt): keys
 * are taken from a stripe-aligned start until about BKC_WB_BATCH bytes
 * (when paced, what the rate allows in BKC_WB_PAUSE_MAX seconds), then
 * up to the end of the stripe they reached, so md gets every dirty
 * piece of a stripe at once, contiguous runs merged into large writes,
 * under one plug.  For each batch:
 *   1. announce the LBA range (range.c), wait for foreground backing
 *      writes in it, and only then look up its dirty keys;
 *   2. read their data from the cache, wait until the journal holds
 *      those keys, write the data to the backing device;
 *   3. flush the backing device;
 *   4. mark clean whatever still maps to the data just written (a newer
 *      write may have replaced it meanwhile: that stays dirty).
 * A failed batch marks nothing clean; after a back-off the thread goes on
 * after it, and its range is tried again on the next pass.
 *
 * Stripe fill: on a backing device where writing part of a stripe costs
 * reads (md RAID5/6: it reads the rest of the stripe, or the old data and
 * parity, before it can write), every stripe that holds dirty data is
 * written whole.  What of it is not dirty is read from the backing device
 * first (one read of the whole run when it has more gaps than stripes,
 * else a read per gap), within the batch's range, so no foreground write
 * can land there between that read and the write; the dirty data is read
 * over it from the cache.  md then computes parity from the data it is
 * given, with no read.  Sparse dirty data (a few 4k blocks per stripe)
 * drains several times faster; dense data has no gaps and reads nothing
 * more.  A batch's size then counts the stripes it writes, not the dirty
 * bytes.
 *
 * Pacing: a PI controller (core/ratectl.c) sets the rate from the dirty
 * amount against writeback_percent of the cache (0 once the device has
 * left writeback mode: its dirty data drains); the device goes at full
 * speed (writeback_rate_max, if set, counted in dirty data written back)
 * when it has been idle (no request at all) for BKC_WB_IDLE_FULL, when
 * draining for detach, during a writeback_max_age pass, when the set is
 * BKC_DIRTY_URGENT_PCT full of dirty data and when the target is 0
 * (unless yielding, below).  Below the target,
 * nothing is written back for writeback_delay seconds after the device
 * became dirty, then batches follow the rate (paced batches: what it
 * allows in BKC_WB_PAUSE_MAX, a stripe at least).  The idle
 * time is long, as bcache's is, so that a pause of a few seconds does not
 * write back the data a workload is about to rewrite: over dirty data a
 * rewrite goes in place, with no key, no commit and no write to md.
 *
 * Yielding: while foreground I/O reaches the backing device (a request
 * sent there or completed there within the last BKC_WB_YIELD), a target
 * of 0 does not mean full speed: the controller's rate holds, so
 * back-to-back batches do not queue in front of the foreground requests.
 * Dirty data at or below the target is not written back at all while
 * foreground I/O has reached the backing device within BKC_WB_IDLE.
 * Draining for detach, a max_age pass and a set nearly full of dirty
 * data (BKC_DIRTY_URGENT_PCT, below the point where writes start to bypass)
 * do not yield.  A request that only hits the cache keeps the device
 * from being idle, but does not make writeback yield: it does not touch
 * md.
 */
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "bkc.h"
#include "trace.h"

#define BKC_WB_KEYS		256
#define BKC_WB_BATCH		(4U << 20)	/* bytes, before stripe end */
#define BKC_WB_PAUSE_MAX	10		/* s, after a paced batch */
#define BKC_WB_IDLE		HZ
#define BKC_WB_IDLE_FULL	(30 * HZ)
#define BKC_WB_YIELD		(HZ / 10)
#define BKC_WB_MIN_RATE		8		/* sectors/s */
#define BKC_WB_FULL_RATE	(1ULL << 40)

struct bkc_wb_run {
	u64	lba;		/* cacheN sector */
	u32	len;
	bool	stale;		/* holds data of a reused bucket */
	void	*buf;
};

struct bkc_wb_ctx {
	struct bkc_backing	*b;
	struct bkc_key		*keys;
	u32			nkeys;
	struct bkc_wb_run	*runs;
	u32			nruns;
	u64			limit;		/* bytes a batch gathers */
	bool			picked;		/* the batch found a range */
	/* async I/O of a phase */
	atomic_t		pending;
	int			err;
	bool			cache;		/* the phase reads the cache */
	struct completion	done;
};

void bkc_wb_init(struct bkc_backing *b)
{
	struct bkc_wb *wb = &b->wb;

	bkc_range_init(wb);
	init_waitqueue_head(&wb->kick);
	wb->percent = 10;
	wb->delay = 30;
	wb->running = true;
	wb->rate_max = 0;
	atomic_set(&wb->wb_writes, 0);
	bkc_ratectl_init(&wb->ctl, BKC_WB_MIN_RATE, 0);
	/* jiffies start 5 minutes before a 32-bit wrap: 0 is no "long ago" */
	wb->last_io = jiffies;
	wb->fg_last = jiffies - BKC_WB_YIELD - 1;
}

void bkc_wb_kick(struct bkc_backing *b)
{
	wake_up(&b->wb.kick);
}

/* ---- async I/O on the runs' kvmalloc'ed buffers (io.c) ---- */

static void bkc_wb_endio(struct bio *bio)
{
	struct bkc_wb_ctx *x = bio->bi_private;

	if (bio->bi_status) {
		x->err = blk_status_to_errno(bio->bi_status);
		if (x->cache)
			bkc_set_io_error(x->b->set, x->err, "writeback read");
	}
	bio_put(bio);
	if (atomic_dec_and_test(&x->pending))
		complete(&x->done);
}

static void bkc_wb_io(struct bkc_wb_ctx *x, struct block_device *bdev,
		      blk_opf_t opf, sector_t sector, void *buf, u32 len)
{
	bkc_io_async(bdev, opf, sector, buf, len, bkc_wb_endio, x,
		     &x->pending);
}

static void bkc_wb_phase_begin(struct bkc_wb_ctx *x, bool cache)
{
	x->err = 0;
	x->cache = cache;
	atomic_set(&x->pending, 1);
	reinit_completion(&x->done);
}

static int bkc_wb_phase_wait(struct bkc_wb_ctx *x)
{
	if (!atomic_dec_and_test(&x->pending))
		wait_for_completion(&x->done);
	return x->err;
}

/* ---- one batch ---- */

struct bkc_wb_pick {
	struct bkc_wb_ctx	*x;
	u64			stripe;	/* filling: the stripe, else 0 */
	u64			bytes;	/* what the keys so far make the batch write */
	u64			filled;	/* filling: the end of the last stripe */
	bool			cut;	/* stopped before the range's end */
};

/* Add to @p's count what key @k makes the batch write. */
static void bkc_wb_count(struct bkc_wb_pick *p, const struct bkc_key *k)
{
	u64 ks = bkc_pos_lba(k->pos), ss;

	if (!p->stripe) {
		p->bytes += (u64)k->len << SECTOR_SHIFT;
		return;
	}
	/* filling: the batch writes the stripes its keys touch */
	ss = max(ks - ks % p->stripe, p->filled);
	p->filled = max(p->filled, roundup(bkc_pos_lba(bkc_key_end(k)),
					   p->stripe));
	if (p->filled > ss)
		p->bytes += (p->filled - ss) << SECTOR_SHIFT;
}

/*
 * Take the range's dirty keys, up to BKC_WB_KEYS and, at a stripe's
 * start (a key's when not filling), up to @x->limit: writes that came in
 * since the range was picked may have added keys to it.
 */
static int bkc_wb_collect(void *arg, const struct bkc_key *k)
{
	struct bkc_wb_pick *p = arg;
	struct bkc_wb_ctx *x = p->x;
	u64 ks = bkc_pos_lba(k->pos);

	if (!bkc_key_dirty(k))
		return 0;
	if (x->nkeys == BKC_WB_KEYS ||
	    (p->bytes >= x->limit &&
	     (!p->stripe || ks - ks % p->stripe >= p->filled))) {
		p->cut = true;
		return 1;
	}
	bkc_wb_count(p, k);
	x->keys[x->nkeys++] = *k;
	return 0;
}

/*
 * Stripe-aligned batch range starting at or after @from, or false; @fill
 * is the stripe when partly dirty stripes are filled (bkc_backing_stripe).
 */
static bool bkc_wb_pick_range(struct bkc_backing *b, struct bkc_wb_ctx *x,
			      u64 from, u64 fill, u64 *start, u64 *end)
{
	struct bkc_wb_pick p = { .x = x, .stripe = fill };
	struct bkc_set *set = b->set;
	u64 stripe = bdev_io_opt(b->dev.bdev) >> SECTOR_SHIFT;
	u64 e;
	int n, i;

	down_read(&set->lock);
	n = bkc_core_next_dirty(set->core, b->dev_id, from, x->keys,
				BKC_WB_KEYS);
	up_read(&set->lock);
	if (n <= 0)
		return false;
	*start = bkc_pos_lba(x->keys[0].pos);
	e = *start;
	for (i = 0; i < n && p.bytes < x->limit; i++) {
		e = bkc_pos_lba(bkc_key_end(&x->keys[i]));
		bkc_wb_count(&p, &x->keys[i]);
	}
	if (stripe > 1) {
		*start -= *start % stripe;
		e = roundup(e, stripe);
	}
	*end = e;
	return true;
}

/*
 * Merge the batch's keys into runs of contiguous LBAs with buffers: the
 * keys themselves, or with @stripe the whole stripes they touch (up to
 * the end of the device).
 */
static int bkc_wb_make_runs(struct bkc_backing *b, struct bkc_wb_ctx *x,
			    u64 stripe)
{
	u64 cap = bdev_nr_sectors(b->dev.bdev) - b->data_start;
	struct bkc_wb_run *run = NULL;
	u32 i;

	x->nruns = 0;
	for (i = 0; i < x->nkeys; i++) {
		u64 lba = bkc_pos_lba(x->keys[i].pos);
		u64 end = lba + x->keys[i].len;

		if (stripe) {
			lba -= lba % stripe;
			end = min(roundup(end, stripe), cap);
			if (run && lba <= run->lba + run->len) {
				run->len = max_t(u64, run->len, end - run->lba);
				continue;
			}
		} else if (run && run->lba + run->len == lba &&
			   run->len + x->keys[i].len <=
			   (BKC_WB_BATCH >> SECTOR_SHIFT)) {
			run->len += x->keys[i].len;
			continue;
		}
		run = &x->runs[x->nruns++];
		run->lba = lba;
		run->len = end - lba;
		run->stale = false;
		run->buf = NULL;
	}
	for (i = 0; i < x->nruns; i++) {
		x->runs[i].buf = kvmalloc((size_t)x->runs[i].len << SECTOR_SHIFT,
					  GFP_KERNEL);
		if (!x->runs[i].buf)
			return -ENOMEM;
	}
	return 0;
}

/* The run of @x holding key @k; *@ri starts the search (keys are sorted). */
static struct bkc_wb_run *bkc_wb_run_of(struct bkc_wb_ctx *x, u32 *ri,
					const struct bkc_key *k)
{
	u64 lba = bkc_pos_lba(k->pos);

	while (lba >= x->runs[*ri].lba + x->runs[*ri].len)
		(*ri)++;
	/* every key lies in a run: bkc_wb_make_runs() built them from the keys */
	WARN_ON_ONCE(lba < x->runs[*ri].lba);
	return &x->runs[*ri];
}

/*
 * Stripe fill: read from the backing device what of each run no dirty key
 * covers, into the run's buffer (the cache reads go over it afterwards).
 */
static void bkc_wb_read_gaps(struct bkc_backing *b, struct bkc_wb_ctx *x,
			     u64 stripe)
{
	struct block_device *bdev = b->dev.bdev;
	u32 i, k = 0, first, gaps;
	u64 pos, end, ks;

	for (i = 0; i < x->nruns; i++) {
		struct bkc_wb_run *run = &x->runs[i];
		bool whole;

		end = run->lba + run->len;
		first = k;
		gaps = 0;
		for (pos = run->lba; k < x->nkeys &&
		     (ks = bkc_pos_lba(x->keys[k].pos)) < end; k++) {
			gaps += ks > pos;
			pos = ks + x->keys[k].len;
		}
		gaps += pos < end;
		if (!gaps)
			continue;
		/* many small reads cost more than one large one */
		whole = gaps > DIV_ROUND_UP(run->len, stripe);
		if (whole) {
			bkc_wb_io(x, bdev, REQ_OP_READ, run->lba + b->data_start,
				  run->buf, run->len << SECTOR_SHIFT);
			continue;
		}
		for (pos = run->lba, k = first; k < x->nkeys &&
		     (ks = bkc_pos_lba(x->keys[k].pos)) < end; k++) {
			if (ks > pos)
				bkc_wb_io(x, bdev, REQ_OP_READ,
					  pos + b->data_start,
					  (u8 *)run->buf +
					  ((pos - run->lba) << SECTOR_SHIFT),
					  (u32)(ks - pos) << SECTOR_SHIFT);
			pos = ks + x->keys[k].len;
		}
		if (pos < end)
			bkc_wb_io(x, bdev, REQ_OP_READ, pos + b->data_start,
				  (u8 *)run->buf + ((pos - run->lba) << SECTOR_SHIFT),
				  (u32)(end - pos) << SECTOR_SHIFT);
	}
}

static void bkc_wb_free_runs(struct bkc_wb_ctx *x)
{
	u32 i;

	for (i = 0; i < x->nruns; i++)
		kvfree(x->runs[i].buf);
	x->nruns = 0;
}

/* Mark the batch's keys clean where they still map to the same data. */
static int bkc_wb_mark_clean(struct bkc_backing *b, struct bkc_wb_ctx *x)
{
	struct bkc_set *set = b->set;
	struct bkc_pins pins = {};
	u32 i = 0, tries = 0;
	u64 seq;
	int r = 0;

	if (!x->nkeys)
		return 0;
	/* the leaves first: no node is read with the lock held for writing */
	bkc_pins_get(set, &pins, x->keys[0].pos,
		     bkc_key_end(&x->keys[x->nkeys - 1]));
	bkc_set_lock(set);
	while (i < x->nkeys) {
		r = bkc_core_mark_clean(set->core, &x->keys[i], &seq);
		if (r == -EDEADLK && tries++ < 8) {
			bkc_set_unlock(set);
			bkc_pins_put(set, &pins);
			r = bkc_pins_get(set, &pins, x->keys[i].pos,
					 bkc_key_end(&x->keys[x->nkeys - 1]));
			bkc_set_lock(set);
			if (r)
				break;
			continue;
		}
		if (r == -EAGAIN || r == -ENOSPC) {
			bkc_set_unlock(set);
			r = kthread_should_stop() ? -EINTR :
				bkc_meta_wait_space(set, HZ / 10);
			bkc_set_lock(set);
			if (r)
				break;
			continue;
		}
		if (r < 0)
			break;
		r = 0;
		i++;
	}
	bkc_meta_note_record(set);
	bkc_set_unlock(set);
	bkc_pins_put(set, &pins);
	return r;
}

/*
 * Write back one batch from @from on.  Returns sectors written back (0 if
 * none: @x->picked says whether there was dirty data from @from on at
 * all), or -errno.  *@next is where the next batch starts.
 */
static long bkc_wb_batch(struct bkc_backing *b, struct bkc_wb_ctx *x,
			 u64 from, u64 *next)
{
	struct bkc_set *set = b->set;
	struct bkc_wb_pick pick = { .x = x };
	struct blk_plug plug;
	u64 start, end, done = 0, stripe = bkc_backing_stripe(b);
	u32 i, k;
	long r;

	x->nkeys = 0;
	x->picked = bkc_wb_pick_range(b, x, from, stripe, &start, &end);
	if (!x->picked)
		return 0;
	*next = end;

	bkc_wb_batch_begin(b, start, end);
	/* the keys as they are now that no foreground write runs here */
	x->nkeys = 0;
	pick.stripe = stripe;
	down_read(&set->lock);
	r = bkc_core_iter(set->core, bkc_pos(b->dev_id, start),
			  bkc_pos(b->dev_id, end), false, bkc_wb_collect,
			  &pick);
	up_read(&set->lock);
	if (r < 0 || !x->nkeys)
		goto out;
	if (pick.cut) {
		/*
		 * The next batch takes the rest, from the first key left out;
		 * if that would go back (keys rewritten before @from filled
		 * the batch), the rest of the range waits for the next pass.
		 */
		u64 e = bkc_pos_lba(bkc_key_end(&x->keys[x->nkeys - 1]));

		if (e > from)
			*next = e;
	}
	r = bkc_wb_make_runs(b, x, stripe);
	if (r)
		goto out;

	if (stripe) {
		/* the rest of the stripes, before the dirty data goes over it */
		bkc_wb_phase_begin(x, false);
		blk_start_plug(&plug);
		bkc_wb_read_gaps(b, x, stripe);
		blk_finish_plug(&plug);
		r = bkc_wb_phase_wait(x);
		if (r) {
			bkc_err_ratelimited(b->dev.bdev,
					    "writeback of sectors %llu-%llu: reading the stripes to fill failed (%ld); retrying later",
					    start, end - 1, r);
			goto out;
		}
	}

	/* read the dirty data from the cache */
	bkc_wb_phase_begin(x, true);
	for (i = 0, k = 0; k < x->nkeys; k++) {
		struct bkc_key *key = &x->keys[k];
		struct bkc_wb_run *run = bkc_wb_run_of(x, &i, key);

		bkc_wb_io(x, set->dev.bdev, REQ_OP_READ,
			  bkc_bucket_sector(set, bkc_key_bucket(key), key->off),
			  (u8 *)run->buf + ((bkc_pos_lba(key->pos) - run->lba) <<
					    SECTOR_SHIFT),
			  key->len << SECTOR_SHIFT);
	}
	r = bkc_wb_phase_wait(x);
	if (r) {
		bkc_err_ratelimited(b->dev.bdev,
				    "writeback of sectors %llu-%llu: reading the cache failed (%ld); retrying later",
				    start, end - 1, r);
		goto out;
	}
	/* every read of the runs is done (the backing device's ones too) */
	for (i = 0; i < x->nruns; i++)
		bkc_io_read_done(x->runs[i].buf,
				 x->runs[i].len << SECTOR_SHIFT);
	/*
	 * The keys were taken from the index in memory: a key whose journal
	 * entry is not durable yet may vanish in a power cut, and the older
	 * (perhaps clean) key it replaced comes back.  Its data must not
	 * reach the backing device before that entry is durable, or the
	 * backing device would hold data that the cache, reading the older
	 * key, does not show.
	 */
	r = bkc_journal_sync(set);
	if (r)
		goto out;
	/*
	 * Data whose bucket was reused meanwhile (GC moved it) is not what
	 * the key meant: such a run is not written and its keys stay dirty.
	 */
	down_read(&set->lock);
	for (i = 0, k = 0; k < x->nkeys; k++)
		if (bkc_core_ptr_stale(set->core, &x->keys[k]))
			bkc_wb_run_of(x, &i, &x->keys[k])->stale = true;
	up_read(&set->lock);
	for (i = 0, k = 0; k < x->nkeys; k++) {
		if (bkc_wb_run_of(x, &i, &x->keys[k])->stale)
			x->keys[k].ptr |= BKC_KEY_HOLE;
		else
			done += x->keys[k].len;
	}

	/* write it to the backing device, stripes together */
	bkc_wb_phase_begin(x, false);
	blk_start_plug(&plug);
	for (i = 0; i < x->nruns; i++) {
		if (x->runs[i].stale)
			continue;
		bkc_wb_io(x, b->dev.bdev, REQ_OP_WRITE,
			  x->runs[i].lba + b->data_start, x->runs[i].buf,
			  x->runs[i].len << SECTOR_SHIFT);
	}
	blk_finish_plug(&plug);
	r = bkc_wb_phase_wait(x);
	if (done)
		bkc_backing_wrote(b);
	if (!r)
		r = bkc_backing_flush(b, false);
	if (r) {
		/* nothing is marked clean: the cache keeps the dirty data */
		bkc_err_ratelimited(b->dev.bdev,
				    "writeback of sectors %llu-%llu of %s failed on the backing device (%ld); retrying later",
				    start, end - 1,
				    b->disk ? b->disk->disk_name : "the device", r);
		goto out;
	}
	/* a key that GC moved must not be marked clean from the old data */
	for (k = 0; k < x->nkeys; k++) {
		if (bkc_key_hole(&x->keys[k])) {
			memmove(&x->keys[k], &x->keys[k + 1],
				(x->nkeys - k - 1) * sizeof(x->keys[0]));
			x->nkeys--;
			k--;
		}
	}
	r = bkc_wb_mark_clean(b, x);
	if (!r)
		r = done;
	trace_bkc_writeback_batch(b->dev.bdev->bd_dev, start, end, x->nkeys,
				  done);
out:
	bkc_wb_free_runs(x);
	bkc_wb_batch_end(b);
	return r;
}

/* ---- pacing and state ---- */

/* Dirty sectors to aim at: none once the device left writeback mode. */
static u64 bkc_wb_target(struct bkc_backing *b)
{
	u64 cap = bkc_core_capacity(b->set->core);

	if (READ_ONCE(b->sb.cache_mode) != BKC_MODE_WRITEBACK)
		return 0;
	return div_u64(cap * READ_ONCE(b->wb.percent), 100);
}

/*
 * No dirty data left: record "clean" in the superblock, unless a
 * writeback-mode write is in flight (request.c counts them and then looks
 * at the state, in the opposite order).
 */
static void bkc_wb_set_clean(struct bkc_backing *b)
{
	mutex_lock(&b->sb_io);
	if (b->sb.state == BKC_STATE_DIRTY) {
		WRITE_ONCE(b->sb.state, BKC_STATE_CLEAN);
		/* state before count here, count before state in bkc_write() */
		smp_mb();
		if (atomic_read(&b->wb.wb_writes) ||
		    bkc_backing_dirty_sectors(b) ||
		    bkc_sb_write(b->dev.bdev, &b->sb))
			WRITE_ONCE(b->sb.state, BKC_STATE_DIRTY);
	}
	mutex_unlock(&b->sb_io);
}

/*
 * So much of the set is dirty (all its backing devices' data) that
 * nothing yields.
 */
static bool bkc_wb_urgent(struct bkc_backing *b)
{
	return bkc_core_dirty_pct_lockless(b->set->core, BKC_DIRTY_URGENT_PCT);
}

static bool bkc_wb_should_wake(struct bkc_backing *b)
{
	return kthread_should_stop() || READ_ONCE(b->wb.drain) ||
	       b->wb.sweeping;
}

/* Foreground I/O reached the backing device within the last @t jiffies. */
static bool bkc_wb_fg_within(struct bkc_wb *wb, unsigned long t)
{
	return time_before(jiffies, READ_ONCE(wb->fg_last) + t);
}

/*
 * Sleep @t between batches.  A pause that only yields to the foreground
 * ends as soon as the foreground has gone quiet.  At full speed (@full:
 * draining, a max_age pass, a nearly full set), the pause is that of
 * writeback_rate_max and only a stop ends it early.
 */
static bool bkc_wb_pause_over(struct bkc_backing *b, bool full)
{
	return full ? kthread_should_stop() : bkc_wb_should_wake(b);
}

static void bkc_wb_pause(struct bkc_backing *b, unsigned long t, bool full)
{
	struct bkc_wb *wb = &b->wb;
	unsigned long end = jiffies + t, left;

	while (!bkc_wb_pause_over(b, full) && time_before(jiffies, end)) {
		left = end - jiffies;
		if (wb->yielding) {
			if (!bkc_wb_fg_within(wb, BKC_WB_YIELD))
				return;
			left = min_t(unsigned long, left, BKC_WB_YIELD);
		}
		wait_event_interruptible_timeout(wb->kick,
			bkc_wb_pause_over(b, full), left);
	}
}

/*
 * writeback_max_age: every max_age / 2 a pass writes back all dirty data
 * from LBA 0 to the end at full speed, whatever the target and delay.
 * Data dirtied behind the pass waits at most for the next one, so none
 * stays dirty much longer than max_age (the keys carry no time of their
 * own).  Only the thread touches the pass state.
 */
static void bkc_wb_age(struct bkc_backing *b, unsigned long now)
{
	struct bkc_wb *wb = &b->wb;
	u32 age = READ_ONCE(wb->max_age);

	if (!age) {
		wb->sweeping = false;
		return;
	}
	if (wb->sweeping ||
	    time_before(now, wb->last_sweep + (unsigned long)age * HZ / 2))
		return;
	wb->sweeping = true;
	wb->last_sweep = now;
	wb->next_lba = 0;
}

static int bkc_wb_thread(void *arg)
{
	unsigned int noio = memalloc_noio_save();
	struct bkc_backing *b = arg;
	struct bkc_wb *wb = &b->wb;
	unsigned long last = jiffies, dirty_since = 0, backoff = HZ;
	struct bkc_wb_ctx *x;
	u64 dirty, target, rate, cap;
	bool idle, full, yield, rest, may_yield, urgent;
	long r;

	x = kzalloc(sizeof(*x), GFP_KERNEL);
	if (x) {
		x->keys = kvmalloc_array(BKC_WB_KEYS, sizeof(*x->keys),
					 GFP_KERNEL);
		x->runs = kvmalloc_array(BKC_WB_KEYS, sizeof(*x->runs),
					 GFP_KERNEL);
		init_completion(&x->done);
	}
	if (!x || !x->keys || !x->runs)
		goto out;
	x->b = b;

	while (!kthread_should_stop()) {
		unsigned long now = jiffies;
		u64 dt = jiffies_to_msecs(now - last);

		last = now;
		dirty = bkc_backing_dirty_sectors(b);
		/* kept current while clean too: writeback_rate_debug shows it */
		target = bkc_wb_target(b);
		WRITE_ONCE(wb->target, target);
		if (!dirty) {
			dirty_since = 0;
			/*
			 * wb->drain stays: a detach waits for clean
			 * (bkc_backing_clean()) and may find dirty data again;
			 * backing.c clears it where the detach ends.
			 */
			WRITE_ONCE(wb->rate, 0);
			WRITE_ONCE(wb->yielding, false);
			/* nothing to write back: the controller forgets its history */
			bkc_ratectl_update(&wb->ctl, 0, 0, 0, false);
			bkc_wb_set_clean(b);
			bkc_backing_clean(b);
			wait_event_interruptible_timeout(wb->kick,
				kthread_should_stop() ||
				bkc_backing_dirty_sectors(b), HZ);
			continue;
		}
		if (!dirty_since)
			dirty_since = now;
		/* writeback_running 0 stops max_age passes too */
		if (READ_ONCE(wb->running))
			bkc_wb_age(b, now);
		else
			wb->sweeping = false;
		idle = time_after(now, READ_ONCE(wb->last_io) + BKC_WB_IDLE_FULL);
		/* draining, a max_age pass and a nearly full set never yield */
		urgent = bkc_wb_urgent(b);
		may_yield = READ_ONCE(wb->running) && !READ_ONCE(wb->drain) &&
			    !wb->sweeping && !urgent;
		yield = may_yield && (!target || idle) &&
			bkc_wb_fg_within(wb, BKC_WB_YIELD);
		full = READ_ONCE(wb->drain) || wb->sweeping || urgent ||
			(!yield && (!target || idle));
		/*
		 * At or below the target nothing needs writing back now: while
		 * foreground I/O goes to the backing device, write nothing
		 * (each batch ends with a flush of it) until the foreground
		 * has been quiet for BKC_WB_IDLE, not just for BKC_WB_YIELD.
		 */
		rest = may_yield && !full && dirty <= target &&
		       bkc_wb_fg_within(wb, BKC_WB_IDLE);
		WRITE_ONCE(wb->yielding, yield || rest);
		cap = READ_ONCE(wb->rate_max) >> SECTOR_SHIFT;
		wb->ctl.max_rate = cap;
		rate = bkc_ratectl_update(&wb->ctl, dirty, target, dt,
					  idle && !yield);
		if (full)
			rate = cap ? cap : BKC_WB_FULL_RATE;
		if (rest)
			rate = 0;
		WRITE_ONCE(wb->rate, rate);

		if ((!READ_ONCE(wb->running) && !READ_ONCE(wb->drain)) ||
		    (!full && dirty <= target &&
		     time_before(now, dirty_since + READ_ONCE(wb->delay) * HZ))) {
			wait_event_interruptible_timeout(wb->kick,
				bkc_wb_should_wake(b), HZ);
			continue;
		}
		if (rest) {
			wait_event_interruptible_timeout(wb->kick,
				bkc_wb_should_wake(b), BKC_WB_YIELD);
			continue;
		}

		/*
		 * A paced batch is what the rate allows in the longest pause
		 * after it (one key or stripe at least): else the minimum
		 * rate would write BKC_WB_BATCH per pause.  At full speed
		 * (drains, max_age passes, a nearly full set) batches are
		 * whole.
		 */
		x->limit = BKC_WB_BATCH;
		if (!full && rate < BKC_WB_FULL_RATE)
			x->limit = clamp_t(u64, (rate * BKC_WB_PAUSE_MAX) <<
					   SECTOR_SHIFT, 1, BKC_WB_BATCH);
		r = bkc_wb_batch(b, x, wb->next_lba, &wb->next_lba);
		if (r == 0 && x->picked) {
			/*
			 * The range went clean meanwhile, or all its data
			 * moved (GC): the device may hold more after it.
			 */
			cond_resched();
			continue;
		}
		if (r == 0) {
			/* a max_age pass ends at the end of the device */
			wb->sweeping = false;
			/* nothing after next_lba: start over from 0 */
			if (wb->next_lba) {
				wb->next_lba = 0;
				continue;
			}
			/*
			 * Nothing in the index (acked writes whose keys are
			 * not in yet count as dirty): sleep, even if draining.
			 */
			wait_event_interruptible_timeout(wb->kick,
				kthread_should_stop(), HZ / 20);
			continue;
		}
		if (r < 0) {
			wait_event_interruptible_timeout(wb->kick,
				kthread_should_stop(), backoff);
			backoff = min_t(unsigned long, backoff * 2, 30 * HZ);
			continue;
		}
		backoff = HZ;
		wb->written += r;
		if (rate < BKC_WB_FULL_RATE) {
			/* sleep as long as @r sectors take at @rate */
			u64 ms = div64_u64((u64)r * 1000, max_t(u64, rate, 1));

			bkc_wb_pause(b, msecs_to_jiffies(min_t(u64, ms,
					BKC_WB_PAUSE_MAX * 1000)), full);
		} else {
			cond_resched();
		}
	}
out:
	if (x) {
		kvfree(x->keys);
		kvfree(x->runs);
		kfree(x);
	}
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
	memalloc_noio_restore(noio);
	return 0;
}

int bkc_wb_start(struct bkc_backing *b)
{
	struct task_struct *t;

	if (b->wb.thread || !b->set)
		return 0;
	t = kthread_run(bkc_wb_thread, b, "blkcache_wb_%pg", b->dev.bdev);
	if (IS_ERR(t))
		return PTR_ERR(t);
	b->wb.thread = t;
	return 0;
}

/* Idempotent; dirty data stays dirty for the next registration. */
void bkc_wb_stop(struct bkc_backing *b)
{
	if (!b->wb.thread)
		return;
	kthread_stop(b->wb.thread);
	b->wb.thread = NULL;
}
