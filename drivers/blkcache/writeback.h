/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writeback of dirty data to a backing device, and the exclusion between
 * writeback batches and foreground writes that go to the backing device.
 */
#ifndef _BKC_WRITEBACK_H
#define _BKC_WRITEBACK_H

#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include "core/ratectl.h"

struct bkc_backing;
struct task_struct;

/*
 * A foreground write to the backing device, in flight.  A writeback batch
 * and a foreground write to the same sectors never overlap in time, so
 * old dirty data can never land on the backing device after newer data.
 */
struct bkc_fg_range {
	struct list_head	node;
	u64			start;		/* cacheN sectors */
	u64			end;
};

struct bkc_wb {
	/* exclusion (range.c) */
	spinlock_t		lock;
	struct list_head	fg;		/* struct bkc_fg_range */
	u64			batch_start;	/* batch in flight: [start, end) */
	u64			batch_end;	/* start == end: none */
	wait_queue_head_t	wait;

	/* knobs (sysfs) */
	u32			percent;	/* target dirty % of the cache */
	u32			delay;		/* s: write back data this old */
	bool			running;	/* writeback_running */
	u64			rate_max;	/* bytes/s; 0: unlimited */
	u32			max_age;	/* s: no data dirty longer; 0 off */

	/* the thread (writeback.c) */
	struct task_struct	*thread;
	wait_queue_head_t	kick;
	struct bkc_ratectl	ctl;
	u64			rate;		/* sectors/s now */
	u64			target;		/* dirty sectors aimed at */
	atomic_t		wb_writes;	/* writeback-mode writes in flight */
	unsigned long		last_io;	/* jiffies of the last request */
	unsigned long		fg_last;	/* ... that reached the backing dev */
	bool			yielding;	/* held to the rate by fg_last */
	u64			next_lba;	/* scan position */
	bool			drain;		/* write everything, full speed */
	bool			sweeping;	/* a max_age pass over all LBAs */
	unsigned long		last_sweep;	/* jiffies it began */
	u64			written;	/* sectors written back */
};

void bkc_range_init(struct bkc_wb *wb);
void bkc_fg_begin(struct bkc_backing *b, struct bkc_fg_range *r, u64 lba,
		  u32 sectors);
bool bkc_fg_try_begin(struct bkc_backing *b, struct bkc_fg_range *r, u64 lba,
		      u32 sectors);
void bkc_fg_end(struct bkc_backing *b, struct bkc_fg_range *r);
void bkc_wb_batch_begin(struct bkc_backing *b, u64 start, u64 end);
void bkc_wb_batch_end(struct bkc_backing *b);

/*
 * Store jiffies into a stamp that every request updates, only when it
 * changes: not to dirty a line both CPUs write on every I/O.  Its readers
 * (writeback.c) compare it with timeouts of many jiffies (BKC_WB_YIELD,
 * BKC_WB_IDLE), so a racing store of the jiffy before changes nothing
 * they decide.
 */
static inline void bkc_stamp(unsigned long *stamp)
{
	unsigned long now = jiffies;

	if (READ_ONCE(*stamp) != now)
		WRITE_ONCE(*stamp, now);
}

/*
 * Foreground I/O on the backing device, sent or completed now: writeback
 * yields to it for a while (writeback.c).  Stamped at both ends, so that
 * a request queued behind a writeback batch still counts.
 */
static inline void bkc_fg_stamp(struct bkc_wb *wb)
{
	bkc_stamp(&wb->fg_last);
}

void bkc_wb_init(struct bkc_backing *b);
int bkc_wb_start(struct bkc_backing *b);
void bkc_wb_stop(struct bkc_backing *b);
void bkc_wb_kick(struct bkc_backing *b);

#endif /* _BKC_WRITEBACK_H */
