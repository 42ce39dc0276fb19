// SPDX-License-Identifier: GPL-2.0
/*
 * Cache-device errors and cache set failure (design.md section 6).
 *
 * Every I/O error of the cache device, whatever its errno, goes through
 * bkc_set_io_error(): it is counted (io_errors), and a decaying count
 * (half-life io_error_halflife seconds, none by default) is compared with
 * io_error_limit.  Passing the limit, or any failed metadata write, fails
 * the set: bkc_set_fail() may run in any context, so it only flags the
 * set (no more cache I/O from then on), wakes whatever waits for the
 * metadata thread and queues the failover.
 *
 * The failover (bkc_set_failover(), under bkc_lock, idempotent) then
 * handles every attached backing device (backing.c):
 *   - no dirty data: its superblock forgets the set, so that a later
 *     attach never trusts the old keys, and /dev/cacheN carries on in
 *     passthrough, in every mode;
 *   - dirty data (or stop_when_cache_set_failed "always"): the lost
 *     ranges are recorded (lost_dirty) and /dev/cacheN is stopped; the
 *     device stays registered so that `running` can start it.
 * Requests that needed the set in the meantime were parked on their
 * backing device and are finished by the failover (request.c).  Nothing
 * is ever written to the failed device again.
 */
#include <linux/jiffies.h>

#include "bkc.h"
#include "trace.h"

#define BKC_IO_ERROR_LIMIT	8

static struct workqueue_struct *bkc_fail_wq;
/*
 * Parked requests whose failover was already decided are finished here,
 * never on bkc_fail_wq: a failover waits for requests to drain, and with
 * only the rescuer running it would wait for work queued behind itself.
 */
static struct workqueue_struct *bkc_park_wq;

static void bkc_set_fail_work(struct work_struct *work)
{
	struct bkc_set *set = container_of(work, struct bkc_set, fail_work);

	mutex_lock(&bkc_lock);
	if (!set->dead)
		bkc_set_failover(set);
	mutex_unlock(&bkc_lock);
	/*
	 * No bkc_reap() here: the failover kills nothing, and a reap from
	 * this work could be the one that cancels this very work.
	 */
}

void bkc_set_fail_init(struct bkc_set *set)
{
	spin_lock_init(&set->err_lock);
	INIT_WORK(&set->fail_work, bkc_set_fail_work);
	set->io_error_limit = BKC_IO_ERROR_LIMIT;
	set->io_error_halflife = 0;
}

/* The set is released: its failover must not run any more.  No bkc_lock. */
void bkc_set_fail_cancel(struct bkc_set *set)
{
	cancel_work_sync(&set->fail_work);
}

/*
 * Fail @set for @why (a static string) with errno @err.  Any context;
 * idempotent, the first reason is kept.
 */
void bkc_set_fail(struct bkc_set *set, const char *why, int err)
{
	if (!cmpxchg(&set->fail_why, NULL, why))
		WRITE_ONCE(set->fail_err, err);
	if (test_and_set_bit(BKC_SET_FAILED, &set->fflags))
		return;
	trace_bkc_set_fail(set->dev.bdev->bd_dev, err, why);
	WRITE_ONCE(set->running, false);
	wake_up_all(&set->space_wait);
	wake_up(&set->meta_wait);
	queue_work(bkc_fail_wq, &set->fail_work);
}

/*
 * A cache-device I/O error of @what ("read", "write", ...).  Any context.
 * Fails the set once the decaying count passes io_error_limit.
 */
void bkc_set_io_error(struct bkc_set *set, int err, const char *what)
{
	u64 hl = (u64)READ_ONCE(set->io_error_halflife) * MSEC_PER_SEC;
	u64 limit = (u64)READ_ONCE(set->io_error_limit) << BKC_DECAY_SHIFT;
	int n = atomic_inc_return(&set->io_errors);
	unsigned long flags;
	u64 v;

	spin_lock_irqsave(&set->err_lock, flags);
	v = bkc_decount_add(&set->errs, jiffies64_to_msecs(get_jiffies_64()),
			    hl);
	spin_unlock_irqrestore(&set->err_lock, flags);
	bkc_err_ratelimited(set->dev.bdev,
			    "cache device %s error (%d), %d since registration",
			    what, err, n);
	if (v > limit)
		bkc_set_fail(set, "too many cache device I/O errors", err);
}

/*
 * Move every backing device off the failed @set.  Caller holds bkc_lock;
 * idempotent.  The set itself stays registered until it is stopped or
 * unregistered, which then writes nothing to it.
 */
void bkc_set_failover(struct bkc_set *set)
{
	struct bkc_backing *b, *n;

	lockdep_assert_held(&bkc_lock);
	if (set->failed_over || !bkc_set_failed(set))
		return;
	set->failed_over = true;
	bkc_err(set->dev.bdev,
		"cache set %pUb failed: %s (%d); the cache device is no longer used",
		set->sb.set_uuid, READ_ONCE(set->fail_why),
		READ_ONCE(set->fail_err));
	bkc_journal_fail(set);
	list_for_each_entry_safe(b, n, &set->backings, set_node)
		bkc_backing_failover(b, set);
}

int bkc_fail_init(void)
{
	bkc_fail_wq = alloc_workqueue("blkcache_fail", WQ_MEM_RECLAIM, 0);
	bkc_park_wq = alloc_workqueue("blkcache_park", WQ_MEM_RECLAIM, 0);
	if (!bkc_fail_wq || !bkc_park_wq) {
		bkc_fail_exit();
		return -ENOMEM;
	}
	return 0;
}

void bkc_fail_exit(void)
{
	if (bkc_fail_wq)
		destroy_workqueue(bkc_fail_wq);
	if (bkc_park_wq)
		destroy_workqueue(bkc_park_wq);
	bkc_fail_wq = NULL;
	bkc_park_wq = NULL;
}

/* Finish a parked request in process context (request.c). */
void bkc_park_queue(struct work_struct *work)
{
	queue_work(bkc_park_wq, work);
}
