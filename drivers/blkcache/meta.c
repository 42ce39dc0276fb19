// SPDX-License-Identifier: GPL-2.0
/*
 * The metadata runtime of a cache set.
 *
 * One kernel thread per set does all metadata I/O, synchronously and one
 * piece at a time: journal commits, btree node writes, bucket table
 * checkpoints, allocator refills and GC steps.  Everything it changes in
 * the core it changes under set->lock (write side), which it drops while
 * its I/O is in flight, so foreground inserts go on filling the next
 * journal entry.
 *
 * Journal commits happen when a writer waits for one (FUA writes,
 * flushes), when the open entry is full, and otherwise journal_delay_ms
 * after its first record.  Writers that wait register a struct bkc_jwait,
 * completed once the entry holding their records is durable.
 */
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "bkc.h"
#include "trace.h"

#define BKC_JOURNAL_DELAY_MS	100
#define BKC_NODE_FLUSH_INTERVAL	(5 * HZ)
#define BKC_GC_BUDGET		256
#define BKC_REFILL_SCAN		4096
#define BKC_REFILL_MAX		64
#define BKC_WP_MOVE		2
#define BKC_FLUSH_COMMITS	4	/* commits per node flush, at most */

/* ---- synchronous metadata I/O ---- */

/*
 * Read or write @len bytes of @buf (kmalloc'ed or vmalloc'ed) at @sector
 * of the cache device, waiting for completion.  Every error is a cache
 * device error (fail.c); a failed write with REQ_META fails the set at
 * once.  A failed set is never touched again: -EIO without I/O.
 */
int bkc_meta_io(struct bkc_set *set, blk_opf_t opf, u64 sector, void *buf,
		u32 len)
{
	bool write = op_is_write(opf);
	int r;

	if (bkc_set_failed(set))
		return -EIO;
	if (write && (opf & REQ_META))
		atomic64_add(len, &set->meta_written);
	else if (write)
		this_cpu_add(*set->data_written, len);
	r = bkc_io_sync(set->dev.bdev, opf, sector, buf, len);
	if (r) {
		bkc_set_io_error(set, r, !(opf & REQ_META) ? (write ?
				 "data move write" : "data move read") :
				 write ? "metadata write" : "metadata read");
		bkc_err_ratelimited(set->dev.bdev,
				    "%s of %u bytes at sector %llu failed (%d)",
				    write ? "write" : "read", len, sector, r);
		if (write && (opf & REQ_META))
			bkc_set_fail(set, "a metadata write failed", r);
	}
	return r;
}

/* Write the cache superblock; a failure fails the set. */
int bkc_cache_sb_write(struct bkc_set *set)
{
	int r;

	if (bkc_set_failed(set))
		return -EIO;
	r = bkc_sb_write(set->dev.bdev, &set->sb);
	if (r) {
		bkc_set_io_error(set, r, "superblock write");
		bkc_set_fail(set, "the superblock write failed", r);
	}
	return r;
}

/* core_ops->read: journal and table buckets while opening. */
static int bkc_core_read(void *ctx, u64 bucket, u32 offset, void *buf,
			 u32 len)
{
	struct bkc_set *set = ctx;

	return bkc_meta_io(set, REQ_OP_READ | REQ_META,
			   bkc_bucket_sector(set, bucket, offset >> SECTOR_SHIFT),
			   buf, len);
}

static const struct bkc_core_ops bkc_core_io_ops = {
	.read	= bkc_core_read,
};

/* ---- journal waiters ---- */

/*
 * Call the waiters whose entry is durable; with @fail (the set stopped
 * working), call all of them with -EIO.
 */
static void bkc_journal_wake(struct bkc_set *set, bool fail)
{
	u64 durable = READ_ONCE(set->durable_seq);
	struct bkc_jwait *jw, *tmp;
	LIST_HEAD(ready);

	spin_lock(&set->jlock);
	list_for_each_entry_safe(jw, tmp, &set->jwaiters, node)
		if (fail || jw->seq <= durable)
			list_move_tail(&jw->node, &ready);
	spin_unlock(&set->jlock);
	list_for_each_entry_safe(jw, tmp, &ready, node) {
		list_del_init(&jw->node);
		jw->fn(jw, jw->seq <= durable ? 0 : -EIO);
	}
}

/* The set failed: every journal waiter gets -EIO. */
void bkc_journal_fail(struct bkc_set *set)
{
	bkc_journal_wake(set, true);
}

/*
 * Call @jw->fn once journal entry @seq is durable: at once if it already
 * is, else from the meta thread after the commit.
 */
void bkc_journal_wait(struct bkc_set *set, struct bkc_jwait *jw, u64 seq)
{
	jw->seq = seq;
	if (seq <= READ_ONCE(set->durable_seq)) {
		jw->fn(jw, 0);
		return;
	}
	spin_lock(&set->jlock);
	list_add_tail(&jw->node, &set->jwaiters);
	spin_unlock(&set->jlock);
	/* the commit may have finished, or the set failed, meanwhile */
	if (!READ_ONCE(set->running))
		bkc_journal_wake(set, true);
	else if (seq <= READ_ONCE(set->durable_seq))
		bkc_journal_wake(set, false);
	else
		bkc_meta_kick(set, BKC_M_COMMIT);
}

/*
 * The journal entry a flush must wait for: the open entry if it holds
 * records, else the one before (durable already, or in flight).  *@open
 * (if not NULL) says whether it is the open one, whose commit then sends
 * its PREFLUSH after now (bkc_commit()).
 */
u64 bkc_journal_flush_seq(struct bkc_set *set, bool *open)
{
	u64 seq;

	down_read(&set->lock);
	seq = bkc_core_flush_seq(set->core);
	if (open)
		*open = seq == bkc_core_open_seq(set->core);
	up_read(&set->lock);
	return seq;
}

static void bkc_journal_sync_done(struct bkc_jwait *jw, int err)
{
	struct bkc_jsync *js = container_of(jw, struct bkc_jsync, jw);

	js->err = err;
	complete(&js->done);
}

/* Wait until everything journalled so far is durable. */
int bkc_journal_sync(struct bkc_set *set)
{
	struct bkc_jsync js = { .jw.fn = bkc_journal_sync_done };

	init_completion(&js.done);
	bkc_journal_wait(set, &js.jw, bkc_journal_flush_seq(set, NULL));
	wait_for_completion(&js.done);
	return js.err;
}

void bkc_meta_kick(struct bkc_set *set, int bit)
{
	if (!test_and_set_bit(bit, &set->mflags))
		wake_up(&set->meta_wait);
}

/* An insert added a record; caller holds set->lock for writing. */
void bkc_meta_note_record(struct bkc_set *set)
{
	if (!set->jfirst) {
		set->jfirst = jiffies ?: 1;
		wake_up(&set->meta_wait);
	}
}

/*
 * Wait for the meta thread to make room (buckets, journal, btree
 * reserve), at most @timeout jiffies.  Returns 0, or -EIO if the set
 * failed.
 */
int bkc_meta_wait_space(struct bkc_set *set, long timeout)
{
	u64 seq = READ_ONCE(set->durable_seq);

	atomic_inc(&set->space_waiters);
	bkc_meta_kick(set, BKC_M_REFILL);
	bkc_meta_kick(set, BKC_M_COMMIT);
	wait_event_timeout(set->space_wait,
			   READ_ONCE(set->durable_seq) != seq || !set->running,
			   timeout);
	atomic_dec(&set->space_waiters);
	return set->running ? 0 : -EIO;
}

/* ---- commits, node writes, tables ---- */

/*
 * Commit the open journal entry.  Returns 0, -EAGAIN when nothing was
 * needed, -ENOSPC/-EBUSY when nodes must be written first, or the errno
 * of a failed write (the set has failed then).  Records that drop dirty
 * data of a backing device are only added once that device has been
 * flushed (request.c), so a commit never needs a backing flush.
 */
static int bkc_commit(struct bkc_set *set)
{
	struct bkc_core *c = set->core;
	struct bkc_journal_write w;
	u64 ip;
	int r;

	bkc_set_lock(set);
	r = bkc_core_journal_prepare(c, &w);
	if (!r)
		set->jfirst = 0;
	bkc_set_unlock(set);
	if (r)
		return r;
	/*
	 * The PREFLUSH covers in-place overwrites completed by now: a
	 * PREFLUSH waiting for this entry sent no cache flush of its own
	 * (request.c, bkc_flush_start()).
	 */
	ip = atomic64_read(&set->ip_done);
	r = bkc_meta_io(set, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA |
			REQ_META | REQ_SYNC,
			bkc_bucket_sector(set, w.bucket, w.offset >> SECTOR_SHIFT),
			w.buf, w.bytes);
	if (r)
		return r;
	bkc_atomic64_max(&set->ip_flushed, ip);
	bkc_set_lock(set);
	bkc_core_journal_done(c, &w);
	WRITE_ONCE(set->durable_seq, bkc_core_durable_seq(c));
	bkc_set_unlock(set);
	trace_bkc_journal_commit(set->dev.bdev->bd_dev, w.seq, w.last_seq,
				 w.bytes);
	bkc_journal_wake(set, false);
	wake_up_all(&set->space_wait);
	return 0;
}

/*
 * Write dirty btree nodes whose journal pin is at most @max_pin (0: all),
 * committing the journal at most @commits times for nodes that wait for it.
 */
static int bkc_flush_nodes(struct bkc_set *set, u64 max_pin, int commits)
{
	struct bkc_core *c = set->core;
	struct bkc_node_write w;
	int r, rounds = 0;

	for (;;) {
		w.buf = set->node_buf;
		bkc_set_lock(set);
		r = bkc_core_node_prepare(c, &w, max_pin);
		bkc_set_unlock(set);
		if (r == -EAGAIN && rounds++ < commits) {
			bkc_commit(set);
			if (bkc_set_failed(set))
				return -EIO;
			continue;
		}
		if (r <= 0)
			return r == -EAGAIN || r == -ENOSPC ? 0 : r;
		r = bkc_meta_io(set, REQ_OP_WRITE | REQ_FUA | REQ_META |
				REQ_SYNC,
				bkc_bucket_sector(set, w.bucket,
						  w.offset >> SECTOR_SHIFT),
				w.buf, w.bytes);
		if (r)
			return r;
		bkc_set_lock(set);
		bkc_core_node_done(c, &w);
		bkc_set_unlock(set);
	}
}

static int bkc_write_table(struct bkc_set *set)
{
	struct bkc_core *c = set->core;
	u32 bytes;
	u64 b;
	int r;

	bkc_set_lock(set);
	r = bkc_core_table_begin(c);
	bkc_set_unlock(set);
	if (r)
		return r == -EBUSY ? 0 : r;
	for (;;) {
		bkc_set_lock(set);
		r = bkc_core_table_next(c, set->table_buf, &b, &bytes);
		bkc_set_unlock(set);
		if (r <= 0)
			break;
		r = bkc_meta_io(set, REQ_OP_WRITE | REQ_FUA | REQ_META |
				REQ_SYNC, bkc_bucket_sector(set, b, 0),
				set->table_buf, bytes);
		if (r)
			return r;
	}
	if (r < 0)
		return r;
	bkc_set_lock(set);
	bkc_core_table_end(c);
	bkc_set_unlock(set);
	return 0;
}

/*
 * Make the journal reclaimable: write nodes and a table, then commit.
 * @max_pin 0 writes every dirty node; else only the leaves pinned at or
 * before it (and the parents they dirty), what a GC pass needs to end.
 * @commits bounds the commits made for nodes that wait for the journal.
 */
static int bkc_journal_space(struct bkc_set *set, u64 max_pin, int commits)
{
	int r;

	/* bounded, the second flush covers the first */
	r = max_pin ? 0 :
		bkc_flush_nodes(set, bkc_core_durable_last(set->core) + 1,
				commits);
	if (!r)
		r = bkc_flush_nodes(set, max_pin, commits);
	if (!r)
		r = bkc_write_table(set);
	if (!r)
		bkc_commit(set);
	return bkc_set_failed(set) ? -EIO : 0;
}

/* Commit, making room in the journal first if it is full. */
static int bkc_commit_now(struct bkc_set *set)
{
	int r = bkc_commit(set);

	if (r == -ENOSPC || r == -EBUSY) {
		if (!bkc_journal_space(set, 0, BKC_FLUSH_COMMITS))
			bkc_commit(set);
	}
	return bkc_set_failed(set) ? -EIO : 0;
}

/* Everything durable: what registration does after format or open. */
static int bkc_checkpoint(struct bkc_set *set)
{
	struct bkc_core *c = set->core;
	int i, r;

	for (i = 0; i < 8; i++) {
		r = bkc_flush_nodes(set, 0, BKC_FLUSH_COMMITS);
		if (!r)
			r = bkc_write_table(set);
		if (!r)
			r = bkc_commit_now(set);
		if (!r)
			r = bkc_commit_now(set);
		if (bkc_set_failed(set))
			return -EIO;
		if (r)
			return r;
		if (!bkc_core_tree_dirty(c) && bkc_core_checkpoint_done(c))
			return 0;
	}
	bkc_err(set->dev.bdev, "cannot checkpoint the cache metadata");
	return -EIO;
}

/* ---- allocator refill and GC ---- */

/*
 * GC moves and bucket reuse must not meet an in-place overwrite in
 * flight (request.c, bkc_inplace()): one would copy data that is being
 * overwritten, the other would hand out space that is being written.
 * The gate keeps new ones off, then waits for those in flight.  Dekker
 * with bkc_inplace(): the gate before the count here, the count before
 * the gate there.  False if they do not finish within a second: the round
 * is skipped, nothing waits for ever.  The gate then stays up, so that
 * those in flight can only become fewer; while it is up from such a
 * round, the next ones only look at the count, and the thread's loop
 * lowers it once none is left.
 */
static bool bkc_ip_gate_raise(struct bkc_set *set)
{
	long t = READ_ONCE(set->ip_gate) ? 0 : HZ;

	WRITE_ONCE(set->ip_gate, 1);
	/* the gate before the count; pairs with bkc_inplace()'s barrier */
	smp_mb();
	if (!atomic_read(&set->ip_inflight))
		return true;
	return t && wait_event_timeout(set->ip_wait,
				       !atomic_read(&set->ip_inflight), t);
}

static void bkc_ip_gate_lower(struct bkc_set *set)
{
	WRITE_ONCE(set->ip_gate, 0);
}

static int bkc_refill(struct bkc_set *set)
{
	int n;

	bkc_set_lock(set);
	n = bkc_core_refill(set->core, BKC_REFILL_SCAN, BKC_REFILL_MAX);
	if (n > 0)
		bkc_meta_note_record(set);
	bkc_set_unlock(set);
	return n;
}

struct bkc_gc_moves {
	struct bkc_key	k[BKC_GC_MOVE_MAX];
	u32		nr;
};

static void bkc_gc_collect(void *arg, const struct bkc_key *k)
{
	struct bkc_gc_moves *m = arg;

	if (m->nr < BKC_GC_MOVE_MAX)
		m->k[m->nr++] = *k;
}

/* Copy one extent to a new place in the cache and re-point its keys. */
static void bkc_gc_move_one(struct bkc_set *set, struct bkc_key *k, void *buf)
{
	struct bkc_core *c = set->core;
	struct bkc_pins pins = {};
	struct bkc_key piece;
	u32 done = 0, off, got;
	u64 bucket, seq;
	u8 gen;
	int r;

	if (bkc_meta_io(set, REQ_OP_READ,
			bkc_bucket_sector(set, bkc_key_bucket(k), k->off), buf,
			k->len << SECTOR_SHIFT))
		return;
	while (done < k->len) {
		bkc_set_lock(set);
		r = bkc_core_alloc_data(c, BKC_WP_MOVE, k->len - done, &bucket,
					&off, &got, &gen);
		bkc_set_unlock(set);
		if (r)
			return;
		r = bkc_meta_io(set, REQ_OP_WRITE,
				bkc_bucket_sector(set, bucket, off),
				(u8 *)buf + (done << SECTOR_SHIFT),
				got << SECTOR_SHIFT);
		piece = *k;
		bkc_key_cut_front(&piece, done);
		bkc_key_cut_back(&piece, got);
		/* the leaves first: no node read with the lock held for writing */
		if (!r)
			r = bkc_pins_get(set, &pins, piece.pos,
					 bkc_key_end(&piece));
		bkc_set_lock(set);
		if (!r) {
			r = bkc_core_move(c, &piece, bucket, off, gen, &seq);
			if (r >= 0)
				bkc_meta_note_record(set);
		}
		bkc_core_data_put(c, bucket);
		bkc_set_unlock(set);
		bkc_pins_put(set, &pins);
		if (r < 0)
			return;
		done += got;
	}
}

/*
 * One GC step, with its data moves.  When the walk is done, the pass waits
 * until nothing up to its last entry is needed in the journal: nodes and
 * a table written, then a commit (BKC_GC_WAIT).  Under steady writes some
 * leaves always hold records newer than the last commit, so that takes
 * rounds.  Unless space is short (bkc_gc_wanted(); waiting writers are a
 * hint of it), a round goes at most once per journal_delay_ms, with one
 * commit for each node flush that waits for the journal (@flush_at says
 * when the next round may go; between rounds no step is taken): run back
 * to back, with four such commits each, the rounds were a commit, and two
 * cache flushes, every few milliseconds.  Returns what bkc_gc_step() does,
 * BKC_GC_MORE after a round, or 0 until the next one.
 */
static int bkc_gc_run(struct bkc_set *set, struct bkc_gc_moves *m,
		      void **buf, unsigned long *flush_at)
{
	struct bkc_pins pins = {};
	u32 i, budget = BKC_GC_BUDGET;
	bool contended, urgent;
	int r;

	/* only this thread changes set->gc: its own reads need no lock */
	if (bkc_gc_end_seq(&set->gc) && time_before(jiffies, *flush_at) &&
	    !atomic_read(&set->space_waiters)) {
		down_read(&set->lock);
		urgent = bkc_gc_wanted(&set->gc);
		up_read(&set->lock);
		if (!urgent)
			return 0;
	}
	for (;;) {
		/* the leaves of the step first (see bkc_set_lock()) */
		bkc_pins_get(set, &pins, bkc_gc_pos(&set->gc), BKC_POS_MAX);
		bkc_set_lock(set);
		bkc_gc_start(&set->gc);	/* no-op while a pass runs */
		m->nr = 0;
		r = bkc_gc_step(&set->gc, budget, bkc_gc_collect, m);
		urgent = bkc_gc_wanted(&set->gc);
		contended = rwsem_is_contended(&set->lock);
		bkc_set_unlock(set);
		trace_bkc_gc_step(set->dev.bdev->bd_dev, r, m->nr);
		bkc_pins_put(set, &pins);
		/*
		 * I/O waits for the lock: let it in before the next step (the
		 * rwsem hands it over only after a waiter waited 4 ms), unless
		 * writers wait for the space this pass makes.
		 */
		if (contended && !atomic_read(&set->space_waiters))
			usleep_range(100, 200);
		if (r != -EDEADLK || budget < 32)
			break;
		/* fewer keys, so that the step's leaves fit in the pins */
		budget /= 2;
	}
	if (m->nr && !*buf)
		*buf = kvmalloc(set->sb.bucket_size, GFP_KERNEL);
	/* the moves skipped are as if they failed: taken by a later pass */
	if (m->nr && *buf && bkc_ip_gate_raise(set)) {
		for (i = 0; i < m->nr; i++)
			bkc_gc_move_one(set, &m->k[i], *buf);
		bkc_ip_gate_lower(set);
	}
	if (r != BKC_GC_WAIT) {
		/* the walk: its end's first round may go at once */
		*flush_at = jiffies;
	} else {
		/* the rate was checked on entry (walk steps keep @flush_at past) */
		urgent |= atomic_read(&set->space_waiters) > 0;
		*flush_at = jiffies +
			msecs_to_jiffies(READ_ONCE(set->journal_delay_ms));
		r = bkc_journal_space(set, bkc_gc_end_seq(&set->gc),
				      urgent ? BKC_FLUSH_COMMITS : 1);
		if (!r)
			r = bkc_commit_now(set);
		return r ? r : BKC_GC_MORE;
	}
	return bkc_set_failed(set) ? -EIO : r;
}

/* ---- the thread ---- */

static bool bkc_meta_pending(struct bkc_set *set)
{
	return READ_ONCE(set->mflags) || kthread_should_stop();
}

static int bkc_meta_thread(void *arg)
{
	unsigned int noio = memalloc_noio_save();
	struct bkc_set *set = arg;
	struct bkc_core *c = set->core;
	unsigned long last_flush = jiffies, gc_flush_at = jiffies;
	struct bkc_gc_moves *moves;
	void *move_buf = NULL;
	bool commit, refill, gc, busy;
	long timeout;
	u32 fill;
	int r;

	moves = kzalloc(sizeof(*moves), GFP_KERNEL);
	while (!kthread_should_stop()) {
		unsigned long delay = msecs_to_jiffies(READ_ONCE(set->journal_delay_ms));
		unsigned long first;

		/* a gate left up by a timed-out round comes down once clear */
		if (READ_ONCE(set->ip_gate) && !atomic_read(&set->ip_inflight))
			bkc_ip_gate_lower(set);
		commit = test_and_clear_bit(BKC_M_COMMIT, &set->mflags);
		refill = test_and_clear_bit(BKC_M_REFILL, &set->mflags);
		gc = test_and_clear_bit(BKC_M_GC, &set->mflags);
		if (test_and_clear_bit(BKC_M_FLUSH, &set->mflags))
			last_flush = jiffies - BKC_NODE_FLUSH_INTERVAL;
		busy = false;

		down_read(&set->lock);
		fill = bkc_core_journal_fill(c);
		refill |= bkc_core_want_refill(c);
		gc |= bkc_gc_running(&set->gc) || bkc_gc_wanted(&set->gc);
		first = set->jfirst;
		up_read(&set->lock);

		if (bkc_set_failed(set))
			break;
		if (fill >= 128 && bkc_journal_space(set, 0, BKC_FLUSH_COMMITS))
			break;
		if (refill && bkc_ip_gate_raise(set)) {
			r = bkc_refill(set);
			bkc_ip_gate_lower(set);
			if (r > 0) {
				commit |= atomic_read(&set->space_waiters) > 0;
				busy = true;
			}
		}
		if (first && (commit || time_after_eq(jiffies, first + delay))) {
			if (bkc_commit_now(set))
				break;
		}
		if (gc && moves) {
			r = bkc_gc_run(set, moves, &move_buf, &gc_flush_at);
			if (bkc_set_failed(set))
				break;
			busy |= r == BKC_GC_MORE;
		}
		if (time_after_eq(jiffies, last_flush + BKC_NODE_FLUSH_INTERVAL)) {
			bkc_flush_nodes(set, 0, BKC_FLUSH_COMMITS);
			if (bkc_set_failed(set))
				break;
			last_flush = jiffies;
		}
		wake_up_all(&set->space_wait);
		if (busy) {
			cond_resched();
			continue;
		}

		timeout = BKC_NODE_FLUSH_INTERVAL;
		first = READ_ONCE(set->jfirst);
		if (first)
			timeout = max_t(long, 1, (long)(first + delay - jiffies));
		/* a pass waiting for its next round (only this thread runs GC) */
		if (bkc_gc_end_seq(&set->gc))
			timeout = min_t(long, timeout,
					max_t(long, 1, (long)(gc_flush_at - jiffies)));
		wait_event_interruptible_timeout(set->meta_wait,
						 bkc_meta_pending(set) ||
						 (READ_ONCE(set->jfirst) && !first),
						 timeout);
	}
	if (!kthread_should_stop()) {
		/* only a failed set leaves the loop early */
		bkc_set_fail(set, "the metadata thread stopped", -EIO);
		bkc_journal_wake(set, true);
		while (!kthread_should_stop()) {
			set_current_state(TASK_INTERRUPTIBLE);
			if (!kthread_should_stop())
				schedule();
			__set_current_state(TASK_RUNNING);
		}
	}
	kvfree(move_buf);
	kfree(moves);
	memalloc_noio_restore(noio);
	return 0;
}

/* ---- dropping the keys of a detached backing device ---- */

struct bkc_first_key {
	u64	pos;
	bool	found;
};

static int bkc_first_key_fn(void *arg, const struct bkc_key *k)
{
	struct bkc_first_key *f = arg;

	f->pos = k->pos;
	f->found = true;
	return 1;
}

/*
 * Invalidate every key of backing device id @dev_id, a piece of
 * 2^BKC_INVAL_SHIFT sectors at a time (few leaves, so that their pins
 * fit; less where more leaves than that cover it), starting at each next
 * key still present.
 */
int bkc_invalidate_dev(struct bkc_set *set, u32 dev_id)
{
	struct bkc_pins pins = {};
	const u32 win = 1U << BKC_INVAL_SHIFT;
	u32 tries;
	struct bkc_first_key f;
	u64 from = bkc_pos(dev_id, 0), to = bkc_pos(dev_id + 1, 0), seq;
	u64 lba;
	u32 len;
	int r;

	for (;;) {
		f.found = false;
		down_read(&set->lock);
		r = bkc_core_iter(set->core, from, to, true,
				  bkc_first_key_fn, &f);
		up_read(&set->lock);
		if (r < 0)
			return r;
		if (!f.found)
			return 0;
		lba = bkc_pos_lba(f.pos);
		len = (u32)min_t(u64, win, BKC_LBA_MAX + 1 - lba);
		for (tries = 0;;) {
			/* the leaves first (see bkc_set_lock()) */
			r = bkc_pins_get(set, &pins, f.pos, f.pos + len);
			if (r)
				return r;
			/* more leaves than pins: the piece they cover */
			len = (u32)(bkc_pins_reach(&pins, f.pos, f.pos + len) -
				    f.pos);
			bkc_set_lock(set);
			r = bkc_core_invalidate(set->core, dev_id, lba, len, &seq);
			if (!r)
				bkc_meta_note_record(set);
			bkc_set_unlock(set);
			bkc_pins_put(set, &pins);
			if (r == -EDEADLK && tries++ < 8)
				continue;
			if (r != -EAGAIN && r != -ENOSPC)
				break;
			r = bkc_meta_wait_space(set, HZ);
			if (r)
				return r;
		}
		if (r)
			return r;
		from = f.pos + len;
		if (from >= to)
			return 0;
		cond_resched();
	}
}

/* ---- open and close ---- */

/*
 * Bytes of data written to the cache device: the sum of the CPUs' counts
 * (allocated with the set, freed by its kobject's release).
 */
u64 bkc_set_data_written(struct bkc_set *set)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += *per_cpu_ptr(set->data_written, cpu);
	return sum;
}

static void bkc_meta_free(struct bkc_set *set)
{
	if (set->wq)
		destroy_workqueue(set->wq);
	if (set->insert_wq)
		destroy_workqueue(set->insert_wq);
	set->wq = NULL;
	set->insert_wq = NULL;
	if (set->core) {
		bkc_core_exit(set->core);
		kvfree(set->core);
		set->core = NULL;
	}
	bkc_ncache_exit(&set->nc);
	kvfree(set->node_buf);
	kvfree(set->table_buf);
	kvfree(set->epochs);
	set->node_buf = NULL;
	set->table_buf = NULL;
	set->epochs = NULL;
	if (set->bs_ready)
		bioset_exit(&set->bs);
	set->bs_ready = false;
}

/*
 * A new journal starts at seq 1: entries of an earlier life of the device
 * (formatted again with the same set uuid) must not look newer.
 */
static int bkc_meta_zero_journal(struct bkc_set *set)
{
	sector_t n = set->bucket_sectors;
	u32 i;
	int r;

	for (i = 0; i < set->sb.nr_journal_buckets; i++) {
		r = blkdev_issue_zeroout(set->dev.bdev,
					 bkc_bucket_sector(set, set->sb.journal_buckets[i], 0),
					 n, GFP_KERNEL, 0);
		if (r) {
			bkc_err(set->dev.bdev, "cannot clear journal bucket %llu (%d)",
				set->sb.journal_buckets[i], r);
			return r;
		}
	}
	return 0;
}

static int bkc_meta_mark_initialized(struct bkc_set *set)
{
	int r;

	if (set->sb.flags & BKC_SB_F_INITIALIZED)
		return 0;
	set->sb.flags |= BKC_SB_F_INITIALIZED;
	r = bkc_sb_write(set->dev.bdev, &set->sb);
	if (r)
		set->sb.flags &= ~BKC_SB_F_INITIALIZED;
	return r;
}

/*
 * Bring the set's metadata up: open (replay) or format the core,
 * checkpoint it, drop keys of backing devices detached before a crash,
 * and start the meta thread.  On failure everything is released.
 */
int bkc_meta_open(struct bkc_set *set)
{
	struct bkc_core_config cfg = { .seed = get_random_u64() };
	struct block_device *bdev = set->dev.bdev;
	struct bkc_core *c;
	bool fresh = false;
	u32 i;
	int r;

	init_rwsem(&set->lock);
	init_waitqueue_head(&set->meta_wait);
	init_waitqueue_head(&set->space_wait);
	spin_lock_init(&set->jlock);
	init_waitqueue_head(&set->ip_wait);
	INIT_LIST_HEAD(&set->jwaiters);
	init_llist_head(&set->done);
	INIT_DELAYED_WORK(&set->insert_work, bkc_insert_work);
	init_llist_head(&set->ack_waiters);
	init_llist_head(&set->bflush);
	INIT_WORK(&set->bflush_work, bkc_bflush_work);
	init_llist_head(&set->promo_ready);
	INIT_DELAYED_WORK(&set->promo_kick, bkc_promo_kick);
	set->journal_delay_ms = BKC_JOURNAL_DELAY_MS;
	set->bucket_sectors = set->sb.bucket_size >> SECTOR_SHIFT;

	r = bioset_init(&set->bs, BIO_POOL_SIZE, bkc_bio_front_pad(),
			BIOSET_NEED_RESCUER);
	if (r)
		goto fail;
	set->bs_ready = true;
	set->wq = alloc_workqueue("blkcache_%pg", WQ_MEM_RECLAIM | WQ_HIGHPRI,
				  0, bdev);
	set->insert_wq = alloc_workqueue("blkcache_ins_%pg",
					 WQ_MEM_RECLAIM | WQ_HIGHPRI, 1, bdev);
	set->core = kvzalloc(sizeof(*set->core), GFP_KERNEL);
	set->epochs = kvcalloc(BKC_EPOCH_SLOTS, sizeof(*set->epochs),
			       GFP_KERNEL);
	set->table_buf = kvmalloc(set->sb.bucket_size, GFP_KERNEL);
	r = -ENOMEM;
	if (!set->wq || !set->insert_wq || !set->core || !set->epochs ||
	    !set->table_buf)
		goto fail;
	c = set->core;

	r = bkc_core_init(c, &set->sb, &cfg, &bkc_ncache_ops,
			  &bkc_core_io_ops, set);
	if (r) {
		bkc_err(bdev, "cannot set up the cache metadata (%d)", r);
		goto fail;
	}
	r = bkc_ncache_init(&set->nc, set, bkc_core_node_bytes(c));
	set->node_buf = kvmalloc(bkc_core_node_bytes(c), GFP_KERNEL);
	if (r || !set->node_buf) {
		r = -ENOMEM;
		goto fail;
	}
	r = bkc_ncache_set_sizes(&set->nc, bkc_core_node_base_bytes(c),
				 bkc_core_node_delta_bytes(c));
	if (r)
		goto fail;

	/*
	 * A cache device whose superblock is not INITIALIZED was formatted
	 * and never used since: whatever journal or nodes it still holds
	 * (a re-format with the same set uuid) belong to an earlier life.
	 */
	if (set->sb.flags & BKC_SB_F_INITIALIZED) {
		r = bkc_core_open(c);
	} else {
		fresh = true;
		r = bkc_meta_zero_journal(set);
		if (!r)
			r = bkc_core_format(c);
	}
	if (r) {
		u64 bad;
		const char *why = bkc_core_open_why(c, &bad);

		if (fresh)
			bkc_err(bdev, "cannot format the cache metadata (%d)", r);
		else if (why && strstr(why, "btree"))
			bkc_err(bdev, "cannot replay the cache metadata: %s (bucket %llu) (%d)",
				why, bad, r);
		else
			bkc_err(bdev, "cannot replay the cache metadata: %s (%d)",
				why ? why : "bad metadata", r);
		if (r == -ENOENT)
			r = -EUCLEAN;
		goto fail;
	}
	bkc_gc_init(&set->gc, c);
	set->running = true;
	r = bkc_checkpoint(set);
	if (!r)
		r = bkc_meta_mark_initialized(set);
	if (r)
		goto fail;
	set->durable_seq = bkc_core_durable_seq(c);

	r = bkc_ncache_start_shrinker(&set->nc);
	if (r)
		goto fail;
	set->meta = kthread_run(bkc_meta_thread, set, "blkcache_meta_%pg",
				bdev);
	if (IS_ERR(set->meta)) {
		r = PTR_ERR(set->meta);
		set->meta = NULL;
		goto fail;
	}

	for (i = 0; i < BKC_SB_MAX_BDEVS; i++) {
		if (set->sb.bdev_state[i] != BKC_SLOT_CLEANING)
			continue;
		r = bkc_set_slot_drop(set, i);
		if (r)
			bkc_err(bdev, "cannot drop keys of detached device slot %u (%d)",
				i, r);
	}
	bkc_info(bdev, "cache set %pUb %s: %llu buckets, %llu dirty sectors",
		 set->sb.set_uuid, fresh ? "formatted" : "replayed",
		 set->sb.nbuckets, bkc_core_dirty_sectors_lockless(c));
	return 0;
fail:
	set->running = false;
	if (set->meta)
		kthread_stop(set->meta);
	set->meta = NULL;
	bkc_meta_free(set);
	return r ? r : -ENOMEM;
}

/*
 * Stop the runtime: no backing device uses the set any more.  A clean
 * shutdown writes every dirty node, a table and a final commit, so the
 * next registration replays almost nothing.  Idempotent.
 */
void bkc_meta_close(struct bkc_set *set)
{
	if (!set->core)
		return;
	/*
	 * Promotions waiting for their kick are filled first (the kick
	 * waits for their cache writes); bflush and other items of @wq may
	 * queue inserts, and the insert worker queues nothing on @wq.
	 */
	flush_delayed_work(&set->promo_kick);
	if (set->wq)
		flush_workqueue(set->wq);
	if (set->insert_wq) {
		flush_delayed_work(&set->insert_work);
		flush_workqueue(set->insert_wq);
	}
	if (set->meta) {
		kthread_stop(set->meta);
		set->meta = NULL;
		bkc_set_lock(set);
		bkc_core_set_closing(set->core);
		bkc_set_unlock(set);
		if (set->running && (bkc_checkpoint(set) ||
				     bkc_flush_nodes(set, 0, BKC_FLUSH_COMMITS)))
			bkc_err(set->dev.bdev,
				"metadata not fully written at shutdown; the journal will be replayed");
	}
	set->running = false;
	wake_up_all(&set->space_wait);
	bkc_journal_wake(set, true);
	bkc_meta_free(set);
}
