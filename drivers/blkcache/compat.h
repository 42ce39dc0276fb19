/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between supported kernel versions lives here.
 *
 * Supported: Debian's 6.1 and 6.12, and newer LTS kernels.
 */
#ifndef _BKC_COMPAT_H
#define _BKC_COMPAT_H

#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/shrinker.h>
#include <linux/slab.h>

/*
 * BKC_NEW_BLOCK_API comes from Kbuild, which looks for the queue-limit
 * features of 6.11+ in the kernel headers: 1 for 6.12 and newer, 0 for 6.1.
 */
#ifndef BKC_NEW_BLOCK_API
#error "BKC_NEW_BLOCK_API must be set by Kbuild"
#endif

/* An exclusively opened block device. */
struct bkc_bdev {
	struct block_device	*bdev;
#if BKC_NEW_BLOCK_API
	struct file		*file;
#endif
};

static inline int bkc_bdev_open(struct bkc_bdev *d, const char *path,
				void *holder)
{
#if BKC_NEW_BLOCK_API
	struct file *f = bdev_file_open_by_path(path,
				BLK_OPEN_READ | BLK_OPEN_WRITE, holder, NULL);

	if (IS_ERR(f))
		return PTR_ERR(f);
	d->file = f;
	d->bdev = file_bdev(f);
#else
	struct block_device *b = blkdev_get_by_path(path,
				FMODE_READ | FMODE_WRITE | FMODE_EXCL, holder);

	if (IS_ERR(b))
		return PTR_ERR(b);
	d->bdev = b;
#endif
	return 0;
}

/* Idempotent; the exclusive claim is dropped before this returns. */
static inline void bkc_bdev_close(struct bkc_bdev *d)
{
	if (!d->bdev)
		return;
#if BKC_NEW_BLOCK_API
	bdev_fput(d->file);
	d->file = NULL;
#else
	blkdev_put(d->bdev, FMODE_READ | FMODE_WRITE | FMODE_EXCL);
#endif
	d->bdev = NULL;
}

/*
 * Queue limits of a device stacked on @bdev at @offset sectors, with
 * logical blocks of @lbs bytes, advertising a volatile write cache and FUA.
 */
static inline void bkc_limits_init(struct queue_limits *lim,
				   struct block_device *bdev, sector_t offset,
				   unsigned int lbs)
{
	blk_set_stacking_limits(lim);
	lim->logical_block_size = lbs;
	lim->physical_block_size = lbs;
	lim->io_min = lbs;
#if BKC_NEW_BLOCK_API
	queue_limits_stack_bdev(lim, bdev, offset, "blkcache");
	lim->features |= BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA | BLK_FEAT_IO_STAT;
#else
	blk_stack_limits(lim, &bdev_get_queue(bdev)->limits,
			 offset + get_start_sect(bdev));
#endif
}

/* Whether writing part of a stripe of @bdev costs reads (md RAID4/5/6). */
static inline bool bkc_partial_stripes_expensive(struct block_device *bdev)
{
#if BKC_NEW_BLOCK_API
	return bdev_get_queue(bdev)->limits.features &
		BLK_FEAT_RAID_PARTIAL_STRIPES_EXPENSIVE;
#else
	return bdev_get_queue(bdev)->limits.raid_partial_stripes_expensive;
#endif
}

/* Allocate a bio-based gendisk with @lim; never returns NULL. */
static inline struct gendisk *bkc_alloc_disk(struct queue_limits *lim,
					     struct block_device *bdev)
{
	struct gendisk *disk;

#if BKC_NEW_BLOCK_API
	disk = blk_alloc_disk(lim, NUMA_NO_NODE);
#else
	disk = blk_alloc_disk(NUMA_NO_NODE);
	if (!disk)
		return ERR_PTR(-ENOMEM);
	disk->queue->limits = *lim;
	blk_queue_write_cache(disk->queue, true, true);
	blk_queue_flag_set(QUEUE_FLAG_IO_STAT, disk->queue);
	if (blk_queue_nonrot(bdev_get_queue(bdev)))
		blk_queue_flag_set(QUEUE_FLAG_NONROT, disk->queue);
#endif
	return disk;
}

/*
 * Shrinkers: 6.7 moved to shrinker_alloc() with a private_data pointer;
 * 6.1 embeds struct shrinker.  Both are hidden behind these three calls.
 */
#if BKC_NEW_BLOCK_API
static inline struct shrinker *
bkc_shrinker_create(unsigned long (*count)(struct shrinker *,
					   struct shrink_control *),
		    unsigned long (*scan)(struct shrinker *,
					  struct shrink_control *),
		    void *priv, const char *name)
{
	struct shrinker *s = shrinker_alloc(0, "%s", name);

	if (!s)
		return NULL;
	s->count_objects = count;
	s->scan_objects = scan;
	s->seeks = DEFAULT_SEEKS;
	s->private_data = priv;
	shrinker_register(s);
	return s;
}

static inline void *bkc_shrinker_priv(struct shrinker *s)
{
	return s->private_data;
}

static inline void bkc_shrinker_destroy(struct shrinker *s)
{
	if (s)
		shrinker_free(s);
}
#else
struct bkc_shrinker {
	struct shrinker	s;
	void		*priv;
};

static inline struct shrinker *
bkc_shrinker_create(unsigned long (*count)(struct shrinker *,
					   struct shrink_control *),
		    unsigned long (*scan)(struct shrinker *,
					  struct shrink_control *),
		    void *priv, const char *name)
{
	struct bkc_shrinker *bs = kzalloc(sizeof(*bs), GFP_KERNEL);

	if (!bs)
		return NULL;
	bs->s.count_objects = count;
	bs->s.scan_objects = scan;
	bs->s.seeks = DEFAULT_SEEKS;
	bs->priv = priv;
	if (register_shrinker(&bs->s, "%s", name)) {
		kfree(bs);
		return NULL;
	}
	return &bs->s;
}

static inline void *bkc_shrinker_priv(struct shrinker *s)
{
	return container_of(s, struct bkc_shrinker, s)->priv;
}

static inline void bkc_shrinker_destroy(struct shrinker *s)
{
	if (!s)
		return;
	unregister_shrinker(s);
	kfree(container_of(s, struct bkc_shrinker, s));
}
#endif

#endif /* _BKC_COMPAT_H */
