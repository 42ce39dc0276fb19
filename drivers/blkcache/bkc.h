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
#include <linux/mutex.h>
#include <linux/percpu-refcount.h>

#include "compat.h"
#include "core/sb.h"

#define BKC_MINORS_SHIFT	4
#define BKC_MINORS		(1 << BKC_MINORS_SHIFT)

struct bkc_set {
	struct list_head	list;		/* on bkc_sets */
	struct kobject		kobj;		/* /sys/fs/blkcache/<uuid> */
	struct kobject		cdev_kobj;	/* .../cache0 */
	struct bkc_bdev		dev;		/* the cache device */
	struct bkc_sb_info	sb;
	struct list_head	backings;	/* attached bkc_backing */
	bool			kobj_added;
	bool			cdev_kobj_added;
	bool			dead;
};

struct bkc_backing {
	struct list_head	list;		/* on bkc_backings */
	struct kobject		kobj;		/* <backing>/cache */
	struct bkc_bdev		dev;
	struct bkc_sb_info	sb;
	struct bkc_set		*set;		/* attached set, or NULL */
	struct list_head	set_node;	/* on set->backings */

	/* /dev/cacheN, present while running */
	struct gendisk		*disk;
	int			id;		/* N, or -1 */
	bool			disk_added;
	bool			linked;		/* /sys/block/cacheN/cache */
	sector_t		data_start;	/* data_offset in sectors */

	struct bio_set		bs;
	bool			bs_ready;
	struct percpu_ref	inflight;
	struct completion	inflight_done;
	bool			ref_ready;

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

/* super.c */
int bkc_sb_read(struct block_device *bdev, struct bkc_sb_info *sb,
		const char **why);
int bkc_sb_write(struct block_device *bdev, struct bkc_sb_info *sb);

/* set.c */
struct bkc_set *bkc_set_find(const u8 *set_uuid);
int bkc_set_register(struct bkc_bdev *dev, struct bkc_sb_info *sb);
void bkc_set_teardown(struct bkc_set *set);
int bkc_set_stop(struct bkc_set *set, bool detach);

/* backing.c */
int bkc_backing_register(struct bkc_bdev *dev, struct bkc_sb_info *sb);
int bkc_backing_run(struct bkc_backing *b);
void bkc_backing_teardown(struct bkc_backing *b);
int bkc_backing_attach(struct bkc_backing *b, struct bkc_set *set);
int bkc_backing_detach(struct bkc_backing *b);
void bkc_backing_link(struct bkc_backing *b, struct bkc_set *set);
int bkc_backing_set_mode(struct bkc_backing *b, u32 mode);
int bkc_backing_set_label(struct bkc_backing *b, const char *label,
			  size_t len);
bool bkc_backing_busy(struct bkc_backing *b);
u32 bkc_backing_state(struct bkc_backing *b);

/* sysfs.c */
extern const struct kobj_type bkc_backing_ktype;
extern const struct kobj_type bkc_set_ktype;
extern const struct kobj_type bkc_cdev_ktype;
int bkc_sysfs_init(void);
void bkc_sysfs_exit(void);
int bkc_parse_bool_one(const char *buf, size_t len);

/* main.c */
void bkc_reap(void);

#define bkc_err(bdev, fmt, ...) \
	pr_err("blkcache: %pg: " fmt "\n", (bdev), ##__VA_ARGS__)
#define bkc_info(bdev, fmt, ...) \
	pr_info("blkcache: %pg: " fmt "\n", (bdev), ##__VA_ARGS__)

#endif /* _BKC_H */
