// SPDX-License-Identifier: GPL-2.0
/*
 * Exclusion between writeback batches and foreground backing writes.
 *
 * Writeback copies dirty data to the backing device and then marks the
 * keys clean only if they still map to the same data.  That is not
 * enough on its own: a foreground write that goes straight to the backing
 * device (writethrough, writearound, bypass, discard) could land before
 * the older data writeback is copying, and be overwritten by it.  So a
 * batch announces its LBA range and waits for foreground writes in it to
 * finish, and foreground writes wait for a batch in their range.  Batches
 * are short (a few stripes), so waits are rare and brief.
 *
 * An overwrite in place of dirty data (request.c, bkc_inplace()) changes
 * what a key maps to without changing the key: it registers its range
 * the same way, but without waiting (bkc_fg_try_begin()), and goes the
 * usual way when a batch holds the range.
 *
 * bkc_fg_end() may run in a bio's end_io (irq) context.
 */
#include "bkc.h"

void bkc_range_init(struct bkc_wb *wb)
{
	spin_lock_init(&wb->lock);
	INIT_LIST_HEAD(&wb->fg);
	init_waitqueue_head(&wb->wait);
	wb->batch_start = 0;
	wb->batch_end = 0;
}

static bool bkc_overlaps(u64 s1, u64 e1, u64 s2, u64 e2)
{
	return s1 < e2 && s2 < e1;
}

static bool bkc_fg_may_start(struct bkc_wb *wb, struct bkc_fg_range *r)
{
	unsigned long flags;
	bool ok;

	spin_lock_irqsave(&wb->lock, flags);
	ok = !bkc_overlaps(r->start, r->end, wb->batch_start, wb->batch_end);
	if (ok)
		list_add_tail(&r->node, &wb->fg);
	spin_unlock_irqrestore(&wb->lock, flags);
	return ok;
}

/* Register a foreground backing write; waits out an overlapping batch. */
void bkc_fg_begin(struct bkc_backing *b, struct bkc_fg_range *r, u64 lba,
		  u32 sectors)
{
	r->start = lba;
	r->end = lba + sectors;
	wait_event(b->wb.wait, bkc_fg_may_start(&b->wb, r));
}

/* The same without waiting: false if a batch holds part of the range. */
bool bkc_fg_try_begin(struct bkc_backing *b, struct bkc_fg_range *r, u64 lba,
		      u32 sectors)
{
	r->start = lba;
	r->end = lba + sectors;
	return bkc_fg_may_start(&b->wb, r);
}

void bkc_fg_end(struct bkc_backing *b, struct bkc_fg_range *r)
{
	struct bkc_wb *wb = &b->wb;
	unsigned long flags;
	bool wake;

	spin_lock_irqsave(&wb->lock, flags);
	list_del(&r->node);
	wake = wb->batch_start != wb->batch_end;
	spin_unlock_irqrestore(&wb->lock, flags);
	if (wake)
		wake_up_all(&wb->wait);
}

static bool bkc_fg_clear(struct bkc_wb *wb)
{
	struct bkc_fg_range *r;
	unsigned long flags;
	bool clear = true;

	spin_lock_irqsave(&wb->lock, flags);
	list_for_each_entry(r, &wb->fg, node) {
		if (bkc_overlaps(r->start, r->end, wb->batch_start,
				 wb->batch_end)) {
			clear = false;
			break;
		}
	}
	spin_unlock_irqrestore(&wb->lock, flags);
	return clear;
}

/* Start a batch over [start, end): waits for foreground writes in it. */
void bkc_wb_batch_begin(struct bkc_backing *b, u64 start, u64 end)
{
	struct bkc_wb *wb = &b->wb;
	unsigned long flags;

	spin_lock_irqsave(&wb->lock, flags);
	wb->batch_start = start;
	wb->batch_end = end;
	spin_unlock_irqrestore(&wb->lock, flags);
	wait_event(wb->wait, bkc_fg_clear(wb));
}

void bkc_wb_batch_end(struct bkc_backing *b)
{
	struct bkc_wb *wb = &b->wb;
	unsigned long flags;

	spin_lock_irqsave(&wb->lock, flags);
	wb->batch_start = 0;
	wb->batch_end = 0;
	spin_unlock_irqrestore(&wb->lock, flags);
	wake_up_all(&wb->wait);
}
