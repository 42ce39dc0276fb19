/* SPDX-License-Identifier: GPL-2.0 */
/*
 * blkcache kernel glue: shared definitions.
 *
 * Objects
 *   struct bkc_set      a cache set: one registered cache device, its
 *                       /sys/fs/blkcache/<set-uuid>/ directory and the
 *                       backing devices attached to it.
 *   struct bkc_backing  a registered backing device: its superblock, its
 *                       <backing-dev>/cache/ sysfs directory and, while
 *                       running, the /dev/cacheN disk stacked on it.
 *
 * Failure (fail.c)
 *   A cache set fails on its first failed metadata write, or when its
 *   decaying count of cache-device I/O errors passes io_error_limit.
 *   bkc_set_fail() may be called in any context; it stops all metadata
 *   work and queues the failover, which (under bkc_lock) moves every
 *   attached backing device either to passthrough (no dirty data) or to
 *   a stop with the lost ranges recorded.  Requests that need the set in
 *   between are parked on their backing device (request.c) and finished
 *   by the failover.
 *
 * Locking
 *   bkc_lock (a mutex) protects the global lists, set<->backing links,
 *   superblock rewrites and every state change.  It is never taken in the
 *   I/O path.  Teardown runs under bkc_lock, marks the object dead and moves
 *   it to a dead list.  bkc_reap(), called after bkc_lock is dropped, then
 *   removes its sysfs directory, releases its device and drops the last
 *   reference.  kobject_del() waits for sysfs handlers that may be waiting
 *   for bkc_lock, so it must not run under it; a handler that gets the lock
 *   after teardown sees ->dead and returns -ENODEV.
 */
#ifndef _BKC_H
#define _BKC_H

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/completion.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/percpu-refcount.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "core/sb.h"
#include "core/core.h"
#include "core/gc.h"
#include "core/seqdetect.h"
#include "ncache.h"
#include "stats.h"
#include "writeback.h"

#define BKC_MINORS_SHIFT	4
#define BKC_MINORS		(1 << BKC_MINORS_SHIFT)
#define BKC_SEQUENTIAL_CUTOFF	(4ULL << 20)
/*
 * A set this full of dirty data (percent of its data space): writeback
 * stops yielding to foreground I/O (writeback.c); a little fuller, new
 * writes in writeback mode bypass the cache (request.c).
 */
#define BKC_DIRTY_URGENT_PCT	90
#define BKC_DIRTY_BYPASS_PCT	95
#define BKC_DETACH_RETRY_MAX	(60 * HZ)	/* a failed detach's retry */
#define BKC_BYPASSED_NR		8	/* bypassed write streams remembered */
#define BKC_RA_INFLIGHT		16	/* read-around windows in flight */
/*
 * Ranges are forgotten in pieces of 2^BKC_INVAL_SHIFT sectors, whose
 * leaves fit in a struct bkc_pins: with 4 KiB blocks a piece holds at
 * most 512 keys, a few leaves of any node size.  Where they do not (4096
 * keys of 512 bytes in small nodes), a piece ends where the pins do.
 */
#define BKC_INVAL_SHIFT		12

/* Promotion safety: per-granule write epochs (see request.c). */
#define BKC_EPOCH_SHIFT		7		/* 64 KiB granules */
#define BKC_EPOCH_SLOTS		4096

struct bkc_epoch_slot {
	atomic_t	inflight;	/* writes to this granule in flight */
	atomic_t	acked;		/* of them completed, keys not in yet */
	atomic64_t	epoch;		/* newest epoch a write stamped here */
};

/* A waiter for a journal entry to become durable. */
struct bkc_jwait {
	struct list_head	node;
	u64			seq;
	void			(*fn)(struct bkc_jwait *jw, int err);
};

struct bkc_jsync {
	struct bkc_jwait	jw;
	struct completion	done;
	int			err;
};

/* set->fflags */
enum {
	BKC_SET_FAILED,		/* no more cache I/O; failover queued */
};

/* meta thread kick bits (set->mflags) */
enum {
	BKC_M_COMMIT,		/* commit the open journal entry now */
	BKC_M_REFILL,		/* free list wants buckets */
	BKC_M_GC,		/* run a GC pass */
	BKC_M_FLUSH,		/* write dirty btree nodes */
};

struct bkc_set {
	struct list_head	list;		/* on bkc_sets */
	struct kobject		kobj;		/* /sys/fs/blkcache/<uuid> */
	struct kobject		cdev_kobj;	/* .../cache0 */
	struct bkc_bdev		dev;		/* the cache device */
	struct bkc_sb_info	sb;
	struct list_head	backings;	/* attached bkc_backing */
	struct bkc_statset	st;		/* <uuid>/stats_* */
	u64 __percpu		*data_written;	/* bytes of data to the cache device */
	atomic64_t		meta_written;	/* of them metadata */
	bool			kobj_added;
	bool			cdev_kobj_added;
	bool			dead;

	/*
	 * The metadata core; everything in it is under @lock.  Take it for
	 * writing with bkc_set_lock(): the node cache never reads a node
	 * from disk for its holder (it gets -EDEADLK; callers pin the
	 * leaves they need, bkc_pins_get(), first or on -EDEADLK).
	 */
	struct bkc_core		*core;
	struct rw_semaphore	lock;		/* read: lookups; write: rest */
	struct task_struct	*lock_owner;	/* holder for writing */
	struct bkc_ncache	nc;
	struct bkc_gc		gc;
	bool			running;	/* core open, threads up */
	u32			bucket_sectors;

	/* the meta thread: commits, node flushes, refill, GC */
	struct task_struct	*meta;
	wait_queue_head_t	meta_wait;
	unsigned long		mflags;
	unsigned long		jfirst;		/* jiffies of oldest uncommitted record */
	void			*node_buf;	/* node_bytes */
	void			*table_buf;	/* bucket_size */
	unsigned int		journal_delay_ms;

	/* journal waiters */
	spinlock_t		jlock;
	struct list_head	jwaiters;
	u64			durable_seq;	/* READ_ONCE; journal's durable seq */

	/*
	 * In-place overwrites of dirty extents (request.c): those in
	 * flight, the gate that keeps new ones off while GC moves data or
	 * buckets are reused (meta.c), and generations of those completed
	 * and of those a cache-device flush covers.
	 */
	atomic_t		ip_inflight;
	int			ip_gate;	/* READ_ONCE; meta thread writes */
	wait_queue_head_t	ip_wait;
	atomic64_t		ip_done;
	atomic64_t		ip_flushed;

	/* writers waiting for space (buckets, journal, btree reserve) */
	wait_queue_head_t	space_wait;
	atomic_t		space_waiters;

	/*
	 * Completed data writes waiting for their keys, on a workqueue of
	 * their own: items on @wq may block until requests drain, which
	 * needs the insert worker, also when only the rescuers run.  The
	 * worker is delayed while it has only acked writes to insert
	 * (request.c, bkc_insert_soon()).
	 */
	struct workqueue_struct	*insert_wq;
	struct llist_head	done;
	struct delayed_work	insert_work;
	atomic_t		nacked;		/* acked writes, keys not in */
	/* reads of a range with acked writes, waiting for their keys */
	struct llist_head	ack_waiters;
	struct workqueue_struct	*wq;		/* everything else */

	/* promotion safety */
	atomic64_t		epoch;
	struct bkc_epoch_slot	*epochs;
	struct bkc_epoch_slot	big;		/* writes too large for slots */
	atomic_t		promotes;	/* promotions in flight */
	/* read promotions waiting for their worker (bkc_promo_kick()) */
	struct llist_head	promo_ready;
	struct delayed_work	promo_kick;

	/* writes to flush the backing device for before they apply */
	struct llist_head	bflush;
	struct work_struct	bflush_work;

	struct bio_set		bs;		/* clones onto the cache device */
	bool			bs_ready;

	/* failure policy (fail.c) */
	unsigned long		fflags;
	const char		*fail_why;	/* first reason, static string */
	int			fail_err;	/* its errno */
	struct work_struct	fail_work;
	bool			failed_over;	/* under bkc_lock */
	atomic_t		io_errors;	/* every error since registration */
	spinlock_t		err_lock;	/* errs */
	struct bkc_decount	errs;		/* decaying count */
	u32			io_error_limit;
	u32			io_error_halflife;	/* seconds; 0: no decay */
};

/* A range of /dev/cacheN whose dirty data was lost with its cache set. */
struct bkc_lost {
	u64	start;		/* bytes */
	u64	len;
};

/* Failover of a backing device whose cache set failed (fo_state). */
enum {
	BKC_FO_NONE,		/* the set works (or failed: failover pending) */
	BKC_FO_PASS,		/* no dirty data: passthrough */
	BKC_FO_DEAD,		/* dirty data lost: every request fails */
};

/* Per-CPU request statistics of a backing device. */
struct bkc_backing {
	struct list_head	list;		/* on bkc_backings */
	struct kobject		kobj;		/* <backing>/cache */
	struct bkc_bdev		dev;
	struct bkc_sb_info	sb;
	struct bkc_set		*set;		/* attached set, or NULL */
	struct list_head	set_node;	/* on set->backings */
	u32			dev_id;		/* slot in the set; valid with set */

	/* /dev/cacheN, present while running */
	struct gendisk		*disk;
	int			id;		/* N, or -1 */
	bool			disk_added;
	bool			linked;		/* /sys/block/cacheN/cache */
	sector_t		data_start;	/* data_offset in sectors */

	struct bio_set		bs;		/* clones onto the backing device */
	struct bio_set		split_bs;	/* front parts of split bios */
	bool			bs_ready;
	struct percpu_ref	inflight;
	struct completion	inflight_done;
	bool			ref_ready;

	/* I/O gate for switching sets (backing.c) */
	wait_queue_head_t	quiesce_wait;
	bool			quiescing;

	/* request path */
	spinlock_t		seq_lock;
	struct bkc_seq		seq;
	/* write streams bypassed lately (under seq_lock; request.c) */
	struct bkc_span {
		u64		start, end;	/* cacheN sectors */
	}			bypassed[BKC_BYPASSED_NR];
	u32			bypassed_next;
	/*
	 * read-around windows in flight (request.c): a bit is set, with its
	 * window's start, only under seq_lock, and cleared without it
	 */
	unsigned long		ra_busy;
	u64			ra_window[BKC_RA_INFLIGHT];
	u64			sequential_cutoff;	/* bytes; 0: off */
	struct bkc_statset	st;		/* cache/stats_* */
	struct mutex		sb_io;		/* every backing sb write */
	struct work_struct	state_work;	/* sb state -> dirty */
	/* detach once written back, or retry a failed detach */
	struct delayed_work	detach_work;
	/* both written under bkc_lock, read without it (writes, writeback) */
	bool			detaching;
	unsigned long		detach_delay;	/* retry back-off; 0: none */

	/* writeback (writeback.c) and its exclusion with foreground writes */
	struct bkc_wb		wb;

	/*
	 * Backing device flushes (backing.c): the writes to it that
	 * completed, and how many of them its last successful flush covers.
	 * A flush with nothing new to cover is not sent.
	 */
	atomic64_t		bw_done;
	atomic64_t		bw_flushed;

	/*
	 * Writeback-mode writes completed to their callers before their keys
	 * were inserted (request.c): the list (under ack_lock) is what a
	 * failover of the set reports lost besides the index's dirty keys.
	 */
	spinlock_t		ack_lock;
	struct list_head	acked;
	/* their sectors; a write leaves both under the set lock too */
	u64			acked_sectors;	/* READ_ONCE */
	atomic_t		nacked;		/* entries of @acked */

	/* cache set failure (fail.c, request.c) */
	spinlock_t		fo_lock;	/* fo_state, fo_parked */
	u8			fo_state;	/* BKC_FO_*; READ_ONCE */
	struct list_head	fo_parked;	/* requests waiting for failover */
	bool			stop_always;	/* stop_when_cache_set_failed */
	bool			set_lost;	/* its set failed with dirty data */
	struct bkc_lost		*lost;		/* lost_dirty, sorted, merged */
	u32			nr_lost;
	bool			lost_partial;	/* index not fully readable */
	u64			lost_bytes;

	bool			kobj_added;
	bool			dead;
};

extern struct mutex bkc_lock;
extern struct list_head bkc_sets;
extern struct list_head bkc_backings;
extern struct list_head bkc_dead_sets;
extern struct list_head bkc_dead_backings;
extern struct kobject *bkc_kobj;
extern int bkc_major;

/* io.c: bios over a kmalloc'ed or vmalloc'ed buffer */
int bkc_io_sync(struct block_device *bdev, blk_opf_t opf, u64 sector,
		void *buf, u32 len);
void bkc_io_async(struct block_device *bdev, blk_opf_t opf, u64 sector,
		  void *buf, u32 len, bio_end_io_t *end_io, void *private,
		  atomic_t *pending);
void bkc_io_read_done(void *buf, u32 len);

/* super.c */
int bkc_sb_read(struct block_device *bdev, struct bkc_sb_info *sb,
		const char **why);
int bkc_sb_write(struct block_device *bdev, struct bkc_sb_info *sb);

/* set.c: registration and slots */
struct bkc_set *bkc_set_find(const u8 *set_uuid);
int bkc_set_register(struct bkc_bdev *dev, struct bkc_sb_info *sb);
void bkc_set_teardown(struct bkc_set *set);
int bkc_set_stop(struct bkc_set *set, bool detach);
bool bkc_set_slot_find(struct bkc_set *set, const u8 *uuid, u32 *id);
int bkc_set_slot_get(struct bkc_set *set, const u8 *uuid, u32 *id);
int bkc_set_slot_clean(struct bkc_set *set, u32 id);
int bkc_set_slot_release(struct bkc_set *set, u32 id);
int bkc_set_slot_drop(struct bkc_set *set, u32 id);
int bkc_set_slot_drop_uuid(struct bkc_set *set, const u8 *uuid);

/* fail.c: cache-device errors and set failure */
void bkc_set_fail_init(struct bkc_set *set);
void bkc_set_io_error(struct bkc_set *set, int err, const char *what);
void bkc_set_fail(struct bkc_set *set, const char *why, int err);
void bkc_set_failover(struct bkc_set *set);
void bkc_set_fail_cancel(struct bkc_set *set);
int bkc_fail_init(void);
void bkc_fail_exit(void);
void bkc_park_queue(struct work_struct *work);

/* Raise @v to @x unless it is past it already. */
static inline void bkc_atomic64_max(atomic64_t *v, u64 x)
{
	s64 old = atomic64_read(v);

	while (old < (s64)x) {
		s64 prev = atomic64_cmpxchg(v, old, x);

		if (prev == old)
			break;
		old = prev;
	}
}

static inline bool bkc_set_failed(const struct bkc_set *set)
{
	return test_bit(BKC_SET_FAILED, &set->fflags);
}

/* meta.c: the metadata runtime of a set */
int bkc_meta_open(struct bkc_set *set);
void bkc_meta_close(struct bkc_set *set);
void bkc_meta_kick(struct bkc_set *set, int bit);
void bkc_journal_wait(struct bkc_set *set, struct bkc_jwait *jw, u64 seq);
u64 bkc_journal_flush_seq(struct bkc_set *set, bool *open);
int bkc_journal_sync(struct bkc_set *set);
int bkc_meta_wait_space(struct bkc_set *set, long timeout);
void bkc_meta_note_record(struct bkc_set *set);
int bkc_meta_io(struct bkc_set *set, blk_opf_t opf, u64 sector, void *buf,
		u32 len);
int bkc_cache_sb_write(struct bkc_set *set);
void bkc_journal_fail(struct bkc_set *set);
int bkc_invalidate_dev(struct bkc_set *set, u32 dev_id);
u64 bkc_set_data_written(struct bkc_set *set);

/* backing.c */
int bkc_backing_register(struct bkc_bdev *dev, struct bkc_sb_info *sb);
void bkc_backing_wrote(struct bkc_backing *b);
bool bkc_backing_flush_needed(struct bkc_backing *b, u64 *gen);
void bkc_backing_flushed(struct bkc_backing *b, u64 gen);
int bkc_backing_flush(struct bkc_backing *b, bool fg);
int bkc_backing_run(struct bkc_backing *b);
void bkc_backing_teardown(struct bkc_backing *b);
int bkc_backing_attach(struct bkc_backing *b, struct bkc_set *set);
int bkc_backing_detach(struct bkc_backing *b);
int bkc_backing_link(struct bkc_backing *b, struct bkc_set *set);
void bkc_backing_unlink(struct bkc_backing *b);
int bkc_backing_set_mode(struct bkc_backing *b, u32 mode);
enum bkc_tunable {
	BKC_TUN_SEQUENTIAL_CUTOFF,
	BKC_TUN_WRITEBACK_RATE_MAX,
	BKC_TUN_WRITEBACK_PERCENT,
	BKC_TUN_WRITEBACK_DELAY,
	BKC_TUN_WRITEBACK_MAX_AGE,
};
int bkc_backing_set_tunable(struct bkc_backing *b, enum bkc_tunable which,
			    u64 v);
int bkc_backing_set_label(struct bkc_backing *b, const char *label,
			  size_t len);
int bkc_backing_set_state(struct bkc_backing *b, u32 state);
bool bkc_backing_busy(struct bkc_backing *b);
u32 bkc_backing_state(struct bkc_backing *b);
u64 bkc_backing_dirty_sectors(struct bkc_backing *b);
u64 bkc_backing_dirty_sectors_exact(struct bkc_backing *b);
u64 bkc_backing_stripe(struct bkc_backing *b);
int bkc_backing_force_run(struct bkc_backing *b);
void bkc_backing_failover(struct bkc_backing *b, struct bkc_set *set);
void bkc_backing_enter(struct bkc_backing *b);
void bkc_backing_clean(struct bkc_backing *b);

/* request.c */
void bkc_submit_bio(struct bio *bio);
unsigned int bkc_bio_front_pad(void);
void bkc_insert_work(struct work_struct *work);
void bkc_promo_kick(struct work_struct *work);
void bkc_bflush_work(struct work_struct *work);
void bkc_req_failover(struct bkc_backing *b, u8 state);
u32 bkc_req_acked_ranges(struct bkc_backing *b, struct bkc_lost *out,
			 u32 cap);
int bkc_request_init(void);
void bkc_request_exit(void);

/* sysfs.c */
extern const struct kobj_type bkc_backing_ktype;
extern const struct kobj_type bkc_set_ktype;
extern const struct kobj_type bkc_cdev_ktype;
int bkc_parse_bool_one(const char *buf, size_t len);
ssize_t bkc_emit_hsize(char *buf, u64 v);

/* main.c */
void bkc_reap(void);

static inline void bkc_set_lock(struct bkc_set *set)
{
	down_write(&set->lock);
	WRITE_ONCE(set->lock_owner, current);
}

static inline void bkc_set_unlock(struct bkc_set *set)
{
	WRITE_ONCE(set->lock_owner, NULL);
	up_write(&set->lock);
}

/* Does the current task hold @set's lock for writing? */
static inline bool bkc_set_locked_by_me(struct bkc_set *set)
{
	return READ_ONCE(set->lock_owner) == current;
}

static inline sector_t bkc_bucket_sector(struct bkc_set *set, u64 bucket,
					 u32 off)
{
	return (sector_t)bucket * set->bucket_sectors + off;
}

#define bkc_err(bdev, fmt, ...) \
	pr_err("blkcache: %pg: " fmt "\n", (bdev), ##__VA_ARGS__)
#define bkc_err_ratelimited(bdev, fmt, ...) \
	pr_err_ratelimited("blkcache: %pg: " fmt "\n", (bdev), ##__VA_ARGS__)
#define bkc_info(bdev, fmt, ...) \
	pr_info("blkcache: %pg: " fmt "\n", (bdev), ##__VA_ARGS__)

#endif /* _BKC_H */
