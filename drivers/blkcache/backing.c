// SPDX-License-Identifier: GPL-2.0
/*
 * Backing devices: registration, the /dev/cacheN disk, attach and detach,
 * superblock updates and teardown.
 */
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "bkc.h"

static DEFINE_IDA(bkc_disk_ida);

static const struct block_device_operations bkc_disk_ops = {
	.owner		= THIS_MODULE,
	.submit_bio	= bkc_submit_bio,
};

static void bkc_inflight_release(struct percpu_ref *ref)
{
	struct bkc_backing *b = container_of(ref, struct bkc_backing, inflight);

	complete(&b->inflight_done);
}

/* The state userspace sees: the superblock's, unless no set is attached. */
u32 bkc_backing_state(struct bkc_backing *b)
{
	if (!b->set && b->sb.state != BKC_STATE_INCONSISTENT)
		return b->disk ? BKC_STATE_NONE : b->sb.state;
	return b->sb.state;
}

u64 bkc_backing_dirty_sectors(struct bkc_backing *b)
{
	struct bkc_set *set = READ_ONCE(b->set);

	if (!set || !set->core || b->dev_id >= set->core->alloc.ndevs)
		return 0;
	return READ_ONCE(set->core->alloc.dev_dirty[b->dev_id]);
}

/*
 * I/O gate.  Requests hold b->inflight from submission to completion;
 * changing the set a running device uses first quiesces it: new
 * requests wait, requests in flight drain.
 */
void bkc_backing_enter(struct bkc_backing *b)
{
	while (!percpu_ref_tryget_live(&b->inflight))
		wait_event(b->quiesce_wait, !READ_ONCE(b->quiescing));
}

static void bkc_backing_quiesce(struct bkc_backing *b)
{
	if (!b->ref_ready)
		return;
	WRITE_ONCE(b->quiescing, true);
	reinit_completion(&b->inflight_done);
	percpu_ref_kill(&b->inflight);
	wait_for_completion(&b->inflight_done);
}

static void bkc_backing_resume(struct bkc_backing *b)
{
	if (!b->ref_ready)
		return;
	percpu_ref_resurrect(&b->inflight);
	WRITE_ONCE(b->quiescing, false);
	wake_up_all(&b->quiesce_wait);
}

bool bkc_backing_busy(struct bkc_backing *b)
{
	return b->disk && disk_openers(b->disk);
}

/* The superblock fields that change after format time. */
struct bkc_sb_mut {
	u8	set_uuid[BKC_UUID_SIZE];
	u32	state;
	u32	cache_mode;
	char	label[BKC_LABEL_SIZE + 1];
};

static void bkc_sb_mut_get(const struct bkc_sb_info *sb, struct bkc_sb_mut *m)
{
	memcpy(m->set_uuid, sb->set_uuid, BKC_UUID_SIZE);
	m->state = sb->state;
	m->cache_mode = sb->cache_mode;
	memcpy(m->label, sb->label, sizeof(m->label));
}

static void bkc_sb_mut_put(struct bkc_sb_info *sb, const struct bkc_sb_mut *m)
{
	memcpy(sb->set_uuid, m->set_uuid, BKC_UUID_SIZE);
	sb->state = m->state;
	sb->cache_mode = m->cache_mode;
	memcpy(sb->label, m->label, sizeof(m->label));
}

/*
 * Rewrite the backing superblock with @m applied.  Either the write
 * succeeds and memory matches the disk, or nothing changes.
 */
static int bkc_backing_sb_update(struct bkc_backing *b,
				 const struct bkc_sb_mut *m)
{
	struct bkc_sb_mut old;
	int r;

	mutex_lock(&b->sb_io);
	bkc_sb_mut_get(&b->sb, &old);
	bkc_sb_mut_put(&b->sb, m);
	r = bkc_sb_write(b->dev.bdev, &b->sb);
	if (r)
		bkc_sb_mut_put(&b->sb, &old);
	mutex_unlock(&b->sb_io);
	return r;
}

/* Record clean/dirty in the superblock; caller holds b->sb_io. */
int bkc_backing_set_state(struct bkc_backing *b, u32 state)
{
	u32 old = b->sb.state;
	int r;

	lockdep_assert_held(&b->sb_io);
	if (old == state || bkc_uuid_is_zero(b->sb.set_uuid))
		return 0;
	WRITE_ONCE(b->sb.state, state);
	r = bkc_sb_write(b->dev.bdev, &b->sb);
	if (r)
		WRITE_ONCE(b->sb.state, old);
	return r;
}

static void bkc_backing_state_work(struct work_struct *work)
{
	struct bkc_backing *b = container_of(work, struct bkc_backing,
					     state_work);

	mutex_lock(&b->sb_io);
	bkc_backing_set_state(b, BKC_STATE_DIRTY);
	mutex_unlock(&b->sb_io);
}

static void bkc_backing_stop_disk(struct bkc_backing *b);

static int bkc_backing_add_disk(struct bkc_backing *b)
{
	struct block_device *bdev = b->dev.bdev;
	struct queue_limits lim;
	struct gendisk *disk;
	int r;

	bkc_limits_init(&lim, bdev, b->data_start, b->sb.block_size);
	disk = bkc_alloc_disk(&lim, bdev);
	if (IS_ERR(disk)) {
		r = PTR_ERR(disk);
		bkc_err(bdev, "cannot allocate disk (%d)", r);
		return r;
	}
	b->disk = disk;
	disk->major = bkc_major;
	disk->first_minor = b->id << BKC_MINORS_SHIFT;
	disk->minors = BKC_MINORS;
	disk->fops = &bkc_disk_ops;
	disk->private_data = b;
	snprintf(disk->disk_name, DISK_NAME_LEN, "cache%d", b->id);
	set_capacity(disk, bdev_nr_sectors(bdev) - b->data_start);

	init_completion(&b->inflight_done);
	r = percpu_ref_init(&b->inflight, bkc_inflight_release,
			    PERCPU_REF_ALLOW_REINIT, GFP_KERNEL);
	if (r)
		return r;
	b->ref_ready = true;

	r = add_disk(disk);
	if (r) {
		bkc_err(bdev, "cannot add disk %s (%d)", disk->disk_name, r);
		return r;
	}
	b->disk_added = true;

	r = sysfs_create_link(&disk_to_dev(disk)->kobj, &b->kobj, "cache");
	if (r) {
		bkc_err(bdev, "cannot link %s to its cache directory (%d)",
			disk->disk_name, r);
		return r;
	}
	b->linked = true;
	return 0;
}

/* Create /dev/cacheN.  Idempotent: a running device stays as it is. */
int bkc_backing_run(struct bkc_backing *b)
{
	int id, r;

	lockdep_assert_held(&bkc_lock);
	if (b->disk || b->dead)
		return 0;

	id = ida_alloc_max(&bkc_disk_ida, (MINORMASK >> BKC_MINORS_SHIFT) - 1,
			   GFP_KERNEL);
	if (id < 0) {
		bkc_err(b->dev.bdev, "no free cache device number (%d)", id);
		return id;
	}
	b->id = id;
	r = bkc_backing_add_disk(b);
	if (r) {
		if (b->disk) {
			bkc_backing_stop_disk(b);
		} else {
			ida_free(&bkc_disk_ida, id);
			b->id = -1;
		}
		return r;
	}
	bkc_info(b->dev.bdev, "running as /dev/%s", b->disk->disk_name);
	return 0;
}

/* Remove /dev/cacheN and wait for its I/O.  Idempotent. */
static void bkc_backing_stop_disk(struct bkc_backing *b)
{
	struct gendisk *disk = b->disk;

	if (!disk)
		return;
	if (b->linked)
		sysfs_remove_link(&disk_to_dev(disk)->kobj, "cache");
	b->linked = false;
	if (b->disk_added)
		del_gendisk(disk);
	b->disk_added = false;
	if (b->ref_ready) {
		reinit_completion(&b->inflight_done);
		percpu_ref_kill(&b->inflight);
		wait_for_completion(&b->inflight_done);
		percpu_ref_exit(&b->inflight);
	}
	b->ref_ready = false;
	put_disk(disk);
	b->disk = NULL;
	ida_free(&bkc_disk_ida, b->id);
	b->id = -1;
}

static void bkc_backing_set_bdev(struct bkc_set *set, u32 id,
				 struct block_device *bdev)
{
	mutex_lock(&set->bflush_lock);
	down_write(&set->lock);
	set->bdevs[id] = bdev;
	clear_bit(id, set->flush_devs);
	up_write(&set->lock);
	mutex_unlock(&set->bflush_lock);
}

/*
 * Start using @set: find or take @b's slot (device id) in the set, switch
 * the running device over and start writeback.  Memory only, apart from
 * the cache superblock when a slot is taken.
 */
int bkc_backing_link(struct bkc_backing *b, struct bkc_set *set)
{
	u32 id;
	int r;

	lockdep_assert_held(&bkc_lock);
	r = bkc_set_slot_get(set, b->sb.uuid, &id);
	if (r)
		return r;
	bkc_backing_quiesce(b);
	b->dev_id = id;
	bkc_backing_set_bdev(set, id, b->dev.bdev);
	WRITE_ONCE(b->set, set);
	list_add_tail(&b->set_node, &set->backings);
	bkc_backing_resume(b);
	r = bkc_wb_start(b);
	if (r)
		bkc_err(b->dev.bdev, "cannot start writeback (%d)", r);
	return 0;
}

/* Stop using the set; the caller has quiesced @b. */
static void bkc_backing_unlink_quiesced(struct bkc_backing *b)
{
	struct bkc_set *set = b->set;

	if (!set)
		return;
	bkc_backing_set_bdev(set, b->dev_id, NULL);
	list_del_init(&b->set_node);
	WRITE_ONCE(b->set, NULL);
}

/* Stop writeback and using the set.  Idempotent. */
void bkc_backing_unlink(struct bkc_backing *b)
{
	if (!b->set)
		return;
	bkc_wb_stop(b);
	bkc_backing_quiesce(b);
	bkc_backing_unlink_quiesced(b);
	bkc_backing_resume(b);
}

/*
 * Tear down everything but the sysfs directory and the device claim,
 * which bkc_reap() releases once bkc_lock is dropped.  Idempotent, and
 * safe on a half-constructed object.
 */
void bkc_backing_teardown(struct bkc_backing *b)
{
	lockdep_assert_held(&bkc_lock);
	if (b->dead)
		return;
	b->dead = true;
	bkc_wb_stop(b);
	bkc_backing_stop_disk(b);
	bkc_backing_unlink(b);
	if (b->bs_ready) {
		bioset_exit(&b->bs);
		bioset_exit(&b->split_bs);
	}
	b->bs_ready = false;
	list_move_tail(&b->list, &bkc_dead_backings);
}

/* Record @set in the superblock and link to it; run if not yet running. */
int bkc_backing_attach(struct bkc_backing *b, struct bkc_set *set)
{
	struct bkc_sb_mut m;
	int r;

	lockdep_assert_held(&bkc_lock);
	if (b->set == set)
		return 0;
	if (b->set) {
		bkc_err(b->dev.bdev, "already attached to cache set %pUb",
			b->set->sb.set_uuid);
		return -EBUSY;
	}
	if (b->sb.state == BKC_STATE_DIRTY &&
	    memcmp(b->sb.set_uuid, set->sb.set_uuid, BKC_UUID_SIZE)) {
		bkc_err(b->dev.bdev, "holds dirty data of cache set %pUb",
			b->sb.set_uuid);
		return -EBUSY;
	}
	if (set->sb.block_size > b->sb.block_size) {
		bkc_err(b->dev.bdev,
			"cache set block size %u exceeds the backing block size %u",
			set->sb.block_size, b->sb.block_size);
		return -EINVAL;
	}
	if (!set->running) {
		bkc_err(b->dev.bdev, "cache set %pUb has failed",
			set->sb.set_uuid);
		return -EIO;
	}
	/*
	 * A slot left attached from an earlier life (detached while the set
	 * was away, or a crash mid-detach) holds keys that are stale now.
	 */
	if (memcmp(b->sb.set_uuid, set->sb.set_uuid, BKC_UUID_SIZE)) {
		r = bkc_set_slot_drop_uuid(set, b->sb.uuid);
		if (r)
			return r;
	}
	/* the slot first: a backing sb never names a set without one */
	r = bkc_set_slot_get(set, b->sb.uuid, &b->dev_id);
	if (r)
		return r;
	bkc_sb_mut_get(&b->sb, &m);
	memcpy(m.set_uuid, set->sb.set_uuid, BKC_UUID_SIZE);
	if (m.state != BKC_STATE_DIRTY)
		m.state = BKC_STATE_CLEAN;
	r = bkc_backing_sb_update(b, &m);
	if (r)
		return r;
	r = bkc_backing_link(b, set);
	if (r)
		return r;
	bkc_info(b->dev.bdev, "attached to cache set %pUb", set->sb.set_uuid);
	return bkc_backing_run(b);
}

/*
 * Forget the cache set, on disk and in memory, and drop the set's keys of
 * this device.  Order matters for crashes: the slot is marked cleaning
 * before the backing superblock forgets the set, and released only once
 * the invalidations are durable.  Returns -EAGAIN if dirty data appeared
 * (the caller keeps draining).
 */
static int bkc_backing_detach_now(struct bkc_backing *b)
{
	struct bkc_set *set = b->set;
	u32 id = b->dev_id;
	struct bkc_sb_mut m;
	int r;

	if (set) {
		bkc_wb_stop(b);
		bkc_backing_quiesce(b);
		if (bkc_backing_dirty_sectors(b) ||
		    atomic_read(&b->wb.wb_writes)) {
			bkc_backing_resume(b);
			bkc_wb_start(b);
			return -EAGAIN;
		}
		r = bkc_set_slot_clean(set, id);
		if (r)
			goto fail;
	}
	bkc_sb_mut_get(&b->sb, &m);
	memset(m.set_uuid, 0, BKC_UUID_SIZE);
	if (m.state != BKC_STATE_INCONSISTENT)
		m.state = BKC_STATE_NONE;
	r = bkc_backing_sb_update(b, &m);
	if (r)
		goto fail;
	if (set) {
		bkc_backing_unlink_quiesced(b);
		bkc_backing_resume(b);
		r = bkc_set_slot_drop(set, id);
		if (r)
			bkc_err(b->dev.bdev,
				"keys of the detached device not dropped yet (%d); done at the next registration",
				r);
	}
	b->detaching = false;
	bkc_info(b->dev.bdev, "detached");
	return bkc_backing_run(b);
fail:
	if (set) {
		bkc_backing_resume(b);
		bkc_wb_start(b);
	}
	return r;
}

static void bkc_backing_detach_work(struct work_struct *work)
{
	struct bkc_backing *b = container_of(work, struct bkc_backing,
					     detach_work);

	mutex_lock(&bkc_lock);
	if (!b->dead && b->detaching && b->set &&
	    !bkc_backing_dirty_sectors(b))
		bkc_backing_detach_now(b);
	mutex_unlock(&bkc_lock);
}

/* Writeback found no dirty data left: finish a pending detach. */
void bkc_backing_clean(struct bkc_backing *b)
{
	if (READ_ONCE(b->detaching))
		schedule_work(&b->detach_work);
}

/*
 * Detach: at once if the cache holds no dirty data of this device,
 * otherwise write it back first (at full speed; dirty_data shows the
 * progress) and detach when it is done.
 */
int bkc_backing_detach(struct bkc_backing *b)
{
	int r;

	lockdep_assert_held(&bkc_lock);
	if (!b->set && b->sb.state == BKC_STATE_NONE)
		return 0;
	if (!b->set) {
		if (b->sb.state == BKC_STATE_DIRTY) {
			bkc_err(b->dev.bdev,
				"cannot detach: its dirty data is in cache set %pUb, which is not registered",
				b->sb.set_uuid);
			return -EBUSY;
		}
		return bkc_backing_detach_now(b);
	}
	WRITE_ONCE(b->detaching, true);
	r = bkc_backing_dirty_sectors(b) ? -EAGAIN : bkc_backing_detach_now(b);
	if (r == -EAGAIN) {
		b->wb.drain = true;
		bkc_wb_kick(b);
		bkc_info(b->dev.bdev,
			 "detach: writing back %llu dirty sectors first",
			 bkc_backing_dirty_sectors(b));
		return 0;
	}
	if (r)
		WRITE_ONCE(b->detaching, false);
	return r;
}

int bkc_backing_set_mode(struct bkc_backing *b, u32 mode)
{
	struct bkc_sb_mut m;

	lockdep_assert_held(&bkc_lock);
	if (b->sb.cache_mode == mode)
		return 0;
	bkc_sb_mut_get(&b->sb, &m);
	m.cache_mode = mode;
	return bkc_backing_sb_update(b, &m);
}

int bkc_backing_set_label(struct bkc_backing *b, const char *label,
			  size_t len)
{
	struct bkc_sb_mut m;

	lockdep_assert_held(&bkc_lock);
	bkc_sb_mut_get(&b->sb, &m);
	memset(m.label, 0, sizeof(m.label));
	memcpy(m.label, label, len);
	if (!strcmp(m.label, b->sb.label))
		return 0;
	return bkc_backing_sb_update(b, &m);
}

/*
 * Take ownership of @dev, whose superblock @sb says it is a backing
 * device.  Runs it at once unless its superblock names a cache set that
 * is not registered yet; it then waits for that set.
 */
int bkc_backing_register(struct bkc_bdev *dev, struct bkc_sb_info *sb)
{
	struct bkc_backing *b, *o;
	struct bkc_set *set = NULL;
	int r;

	lockdep_assert_held(&bkc_lock);
	list_for_each_entry(o, &bkc_backings, list) {
		if (!memcmp(o->sb.uuid, sb->uuid, BKC_UUID_SIZE)) {
			bkc_err(dev->bdev,
				"a device with uuid %pUb is already registered (%pg)",
				sb->uuid, o->dev.bdev);
			bkc_bdev_close(dev);
			return -EEXIST;
		}
	}

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b) {
		bkc_bdev_close(dev);
		return -ENOMEM;
	}
	kobject_init(&b->kobj, &bkc_backing_ktype);
	kobject_init(&b->stats_kobj, &bkc_stats_ktype);
	INIT_LIST_HEAD(&b->set_node);
	b->dev = *dev;
	b->sb = *sb;
	b->id = -1;
	b->data_start = sb->data_offset >> SECTOR_SHIFT;
	spin_lock_init(&b->seq_lock);
	bkc_seq_init(&b->seq);
	b->sequential_cutoff = BKC_SEQUENTIAL_CUTOFF;
	mutex_init(&b->sb_io);
	INIT_WORK(&b->state_work, bkc_backing_state_work);
	INIT_WORK(&b->detach_work, bkc_backing_detach_work);
	init_waitqueue_head(&b->quiesce_wait);
	bkc_wb_init(b);
	list_add_tail(&b->list, &bkc_backings);

	b->stats = alloc_percpu(struct bkc_stats);
	if (!b->stats) {
		r = -ENOMEM;
		goto fail;
	}
	r = bioset_init(&b->bs, BIO_POOL_SIZE, bkc_bio_front_pad(),
			BIOSET_NEED_RESCUER);
	if (r)
		goto fail;
	r = bioset_init(&b->split_bs, BIO_POOL_SIZE, 0, BIOSET_NEED_RESCUER);
	if (r) {
		bioset_exit(&b->bs);
		goto fail;
	}
	b->bs_ready = true;

	r = kobject_add(&b->kobj, bdev_kobj(b->dev.bdev), "cache");
	if (!r) {
		b->kobj_added = true;
		r = kobject_add(&b->stats_kobj, &b->kobj, "stats_total");
	}
	if (r) {
		bkc_err(b->dev.bdev, "cannot create sysfs directory (%d)", r);
		goto fail;
	}
	b->stats_kobj_added = true;

	if (!bkc_uuid_is_zero(sb->set_uuid) &&
	    (sb->state == BKC_STATE_CLEAN || sb->state == BKC_STATE_DIRTY)) {
		set = bkc_set_find(sb->set_uuid);
		if (!set) {
			bkc_info(b->dev.bdev,
				 "registered, waiting for cache set %pUb",
				 sb->set_uuid);
			kobject_uevent(&b->kobj, KOBJ_ADD);
			return 0;
		}
		r = bkc_backing_link(b, set);
		if (r)
			goto fail;
	}
	r = bkc_backing_run(b);
	if (r)
		goto fail;
	kobject_uevent(&b->kobj, KOBJ_ADD);
	return 0;
fail:
	bkc_backing_teardown(b);
	return r;
}
