// SPDX-License-Identifier: GPL-2.0
/*
 * Backing devices: registration, the /dev/cacheN disk, attach and detach,
 * superblock updates and teardown.
 */
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/vmalloc.h>

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

/*
 * Dirty sectors of @b in its set.  Lockless: a moment's staleness is
 * harmless to every caller (sysfs, writeback pacing, "is there any left",
 * which each look again before acting on it under the set lock).
 */
u64 bkc_backing_dirty_sectors(struct bkc_backing *b)
{
	struct bkc_set *set = READ_ONCE(b->set);

	if (!set || !set->core)
		return 0;
	/* with the writes completed whose keys are not in yet (request.c) */
	return bkc_core_dev_dirty_lockless(set->core, b->dev_id) +
	       READ_ONCE(b->acked_sectors);
}

/*
 * The same, consistent with the index: the insert worker moves an acked
 * write's sectors into the index under the set lock.  May sleep; the
 * caller holds bkc_lock, so that the set stays.
 */
u64 bkc_backing_dirty_sectors_exact(struct bkc_backing *b)
{
	struct bkc_set *set = b->set;
	u64 v;

	lockdep_assert_held(&bkc_lock);
	if (!set || !set->core)
		return 0;
	down_read(&set->lock);
	v = bkc_backing_dirty_sectors(b);
	up_read(&set->lock);
	return v;
}

/*
 * Sectors per stripe of @b where writing part of a stripe costs reads
 * (md RAID5/6), with its data area stripe-aligned, so that cacheN's
 * stripes are the backing device's; else 0.  Writeback fills such
 * stripes whole, and the request path caches a stream's writes that land
 * in one holding dirty data (the RAID-stripe rule).
 */
u64 bkc_backing_stripe(struct bkc_backing *b)
{
	u64 stripe = bdev_io_opt(b->dev.bdev) >> SECTOR_SHIFT;

	if (stripe <= 1 || !bkc_partial_stripes_expensive(b->dev.bdev) ||
	    b->data_start % stripe)
		return 0;
	return stripe;
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

/*
 * A change of the superblock fields that change after format time.  Each
 * field is changed only if its bit is in @fields, and the new state is
 * decided from the current one under b->sb_io, never from a snapshot
 * taken before it (a concurrent "dirty" must not be overwritten).
 */
enum {
	BKC_MUT_SET	= 1 << 0,	/* set_uuid := @set_uuid */
	BKC_MUT_STATE	= 1 << 1,	/* state := @state */
	BKC_MUT_ATTACH	= 1 << 2,	/* state := dirty stays, else clean */
	BKC_MUT_DETACH	= 1 << 3,	/* inconsistent stays, else none */
	BKC_MUT_MODE	= 1 << 4,
	BKC_MUT_LABEL	= 1 << 5,
	BKC_MUT_TUNABLES = 1 << 6,	/* tun, and BKC_SB_F_TUNABLES */
};

struct bkc_sb_mut {
	u32	fields;
	u8	set_uuid[BKC_UUID_SIZE];
	u32	state;
	u32	cache_mode;
	char	label[BKC_LABEL_SIZE + 1];
	struct bkc_tunables tun;
};

/* The mutable fields of a superblock, to put back after a failed write. */
struct bkc_sb_saved {
	u8	set_uuid[BKC_UUID_SIZE];
	u32	state;
	u32	cache_mode;
	char	label[BKC_LABEL_SIZE + 1];
	u32	flags;
	struct bkc_tunables tun;
};

static void bkc_sb_save(const struct bkc_sb_info *sb, struct bkc_sb_saved *o)
{
	memcpy(o->set_uuid, sb->set_uuid, BKC_UUID_SIZE);
	o->state = sb->state;
	o->cache_mode = sb->cache_mode;
	memcpy(o->label, sb->label, sizeof(o->label));
	o->flags = sb->flags;
	o->tun = sb->tun;
}

static void bkc_sb_restore(struct bkc_sb_info *sb,
			   const struct bkc_sb_saved *o)
{
	memcpy(sb->set_uuid, o->set_uuid, BKC_UUID_SIZE);
	WRITE_ONCE(sb->state, o->state);
	WRITE_ONCE(sb->cache_mode, o->cache_mode);
	memcpy(sb->label, o->label, sizeof(o->label));
	sb->flags = o->flags;
	sb->tun = o->tun;
}

static void bkc_sb_apply(struct bkc_sb_info *sb, const struct bkc_sb_mut *m)
{
	u32 st = sb->state;

	if (m->fields & BKC_MUT_SET)
		memcpy(sb->set_uuid, m->set_uuid, BKC_UUID_SIZE);
	if (m->fields & BKC_MUT_STATE)
		st = m->state;
	if ((m->fields & BKC_MUT_ATTACH) && st != BKC_STATE_DIRTY)
		st = BKC_STATE_CLEAN;
	if ((m->fields & BKC_MUT_DETACH) && st != BKC_STATE_INCONSISTENT)
		st = BKC_STATE_NONE;
	WRITE_ONCE(sb->state, st);
	if (m->fields & BKC_MUT_MODE)
		WRITE_ONCE(sb->cache_mode, m->cache_mode);
	if (m->fields & BKC_MUT_LABEL)
		memcpy(sb->label, m->label, sizeof(sb->label));
	if (m->fields & BKC_MUT_TUNABLES) {
		sb->tun = m->tun;
		sb->flags |= BKC_SB_F_TUNABLES;
	}
}

/*
 * Tell udev what /dev/cacheN is (tools/udev/69-blkcache.rules makes the
 * /dev/cache/by-uuid and by-label links from it): a change uevent with the
 * backing device's uuid and label and its cache set's uuid (empty when
 * attached to none).  Sent once the device runs and whenever one of them
 * changes.  Caller holds bkc_lock (b->disk) and b->sb_io (b->sb).
 */
static void bkc_backing_uevent(struct bkc_backing *b)
{
	char uuid[16 + 37], label[16 + BKC_LABEL_SIZE + 1], set[20 + 37];
	char driver[] = "DRIVER=blkcache";
	unsigned int noio;
	char *envp[5];
	int r;

	lockdep_assert_held(&bkc_lock);
	if (!b->disk || !b->linked)
		return;
	snprintf(uuid, sizeof(uuid), "CACHED_UUID=%pUb", b->sb.uuid);
	snprintf(label, sizeof(label), "CACHED_LABEL=%s", b->sb.label);
	if (bkc_uuid_is_zero(b->sb.set_uuid))
		snprintf(set, sizeof(set), "CACHE_SET_UUID=");
	else
		snprintf(set, sizeof(set), "CACHE_SET_UUID=%pUb",
			 b->sb.set_uuid);
	envp[0] = driver;
	envp[1] = uuid;
	envp[2] = label;
	envp[3] = set;
	envp[4] = NULL;
	/* also sent by the failover, which parked I/O waits for */
	noio = memalloc_noio_save();
	r = kobject_uevent_env(&disk_to_dev(b->disk)->kobj, KOBJ_CHANGE, envp);
	memalloc_noio_restore(noio);
	if (r)
		bkc_err(b->dev.bdev, "cannot send the change uevent of %s (%d)",
			 b->disk->disk_name, r);
}

/*
 * Rewrite the backing superblock with @m applied.  Either the write
 * succeeds and memory matches the disk, or nothing changes.
 */
static int bkc_backing_sb_update(struct bkc_backing *b,
				 const struct bkc_sb_mut *m)
{
	struct bkc_sb_saved old;
	int r;

	mutex_lock(&b->sb_io);
	bkc_sb_save(&b->sb, &old);
	bkc_sb_apply(&b->sb, m);
	r = bkc_sb_write(b->dev.bdev, &b->sb);
	if (r)
		bkc_sb_restore(&b->sb, &old);
	else if (m->fields & (BKC_MUT_SET | BKC_MUT_LABEL))
		bkc_backing_uevent(b);
	mutex_unlock(&b->sb_io);
	return r;
}

/* Forget the set in the superblock: state none, or @state if given. */
static int bkc_backing_sb_forget(struct bkc_backing *b, u32 state)
{
	struct bkc_sb_mut m = { .fields = BKC_MUT_SET };

	memset(m.set_uuid, 0, BKC_UUID_SIZE);
	if (state == BKC_STATE_NONE) {
		m.fields |= BKC_MUT_DETACH;
	} else {
		m.fields |= BKC_MUT_STATE;
		m.state = state;
	}
	return bkc_backing_sb_update(b, &m);
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
	mutex_lock(&b->sb_io);
	bkc_backing_uevent(b);
	mutex_unlock(&b->sb_io);
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
	WRITE_ONCE(b->fo_state, BKC_FO_NONE);
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

/*
 * @b's superblock says "dirty" for @set, which has no slot for it (it was
 * formatted again, or lost the slot): the dirty data is gone.  Say so,
 * record "inconsistent" and go on without the set.
 */
static void bkc_backing_lost_slot(struct bkc_backing *b, struct bkc_set *set)
{
	int r = bkc_backing_sb_forget(b, BKC_STATE_INCONSISTENT);

	bkc_err(b->dev.bdev,
		"superblock says its dirty data is in cache set %pUb on %pg, which has no record of this device: that data is lost; marked inconsistent%s",
		set->sb.set_uuid, set->dev.bdev,
		r ? " in memory only (superblock write failed)" : "");
	if (r)
		WRITE_ONCE(b->sb.state, BKC_STATE_INCONSISTENT);
}

/*
 * Start using @set: find or take @b's slot (device id) in the set, switch
 * the running device over and start writeback.  Memory only, apart from
 * the cache superblock when a slot is taken.  Returns -ENOENT, having
 * marked @b inconsistent, if @b's superblock says dirty and @set has no
 * slot for it.
 */
int bkc_backing_link(struct bkc_backing *b, struct bkc_set *set)
{
	u32 id;
	int r;

	lockdep_assert_held(&bkc_lock);
	if (bkc_set_failed(set)) {
		bkc_err(b->dev.bdev, "cache set %pUb has failed",
			set->sb.set_uuid);
		return -EIO;
	}
	if (b->sb.state == BKC_STATE_DIRTY &&
	    !bkc_set_slot_find(set, b->sb.uuid, &id)) {
		bkc_backing_lost_slot(b, set);
		return -ENOENT;
	}
	r = bkc_set_slot_get(set, b->sb.uuid, &id);
	if (r)
		return r;
	bkc_backing_quiesce(b);
	b->dev_id = id;
	WRITE_ONCE(b->fo_state, BKC_FO_NONE);
	WRITE_ONCE(b->set, set);
	/* its set is back (the failed device returned): nothing was lost */
	b->set_lost = false;
	kvfree(b->lost);
	b->lost = NULL;
	b->nr_lost = 0;
	b->lost_bytes = 0;
	b->lost_partial = false;
	list_add_tail(&b->set_node, &set->backings);
	bkc_backing_resume(b);
	r = bkc_wb_start(b);
	if (r)
		bkc_err(b->dev.bdev, "cannot start writeback (%d)", r);
	return 0;
}

/*
 * A detach is over once the device has left its set (detached, or the set
 * is gone): writes may be dirty again, and writeback stops draining.
 */
static void bkc_backing_detach_end(struct bkc_backing *b)
{
	WRITE_ONCE(b->detaching, false);
	WRITE_ONCE(b->detach_delay, 0);
	WRITE_ONCE(b->wb.drain, false);
}

/* Stop using the set; the caller has quiesced @b. */
static void bkc_backing_unlink_quiesced(struct bkc_backing *b)
{
	struct bkc_set *set = b->set;

	if (!set)
		return;
	list_del_init(&b->set_node);
	WRITE_ONCE(b->set, NULL);
	WRITE_ONCE(b->fo_state, BKC_FO_NONE);
	bkc_backing_detach_end(b);
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
	/* parked requests of a failed set are finished by its failover */
	if (b->set && bkc_set_failed(b->set))
		bkc_set_failover(b->set);
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
	struct bkc_sb_mut m = {};
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
	if (!set->running || bkc_set_failed(set)) {
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
	} else if (b->sb.state == BKC_STATE_DIRTY &&
		   !bkc_set_slot_find(set, b->sb.uuid, &b->dev_id)) {
		bkc_backing_lost_slot(b, set);
		return -ENOENT;
	}
	/* the slot first: a backing sb never names a set without one */
	r = bkc_set_slot_get(set, b->sb.uuid, &b->dev_id);
	if (r)
		return r;
	m.fields = BKC_MUT_SET | BKC_MUT_ATTACH;
	memcpy(m.set_uuid, set->sb.set_uuid, BKC_UUID_SIZE);
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
 * A step of the detach failed with @err while the device is still in its
 * set: the detach stays pending, and bkc_backing_detach_work() tries again
 * after 1 s, then at doubling intervals up to BKC_DETACH_RETRY_MAX.  It
 * cannot simply end: once the cache's slot is cleaning, new data must not
 * be dirty (the slot's keys are dropped at the next registration).
 */
static void bkc_backing_detach_retry(struct bkc_backing *b, int err)
{
	unsigned long d = b->detach_delay;

	d = d ? min_t(unsigned long, d * 2, BKC_DETACH_RETRY_MAX) : HZ;
	WRITE_ONCE(b->detach_delay, d);
	/* overrides an immediate attempt bkc_backing_clean() may have queued */
	mod_delayed_work(system_long_wq, &b->detach_work, d);
	bkc_err(b->dev.bdev, "detach failed (%d): retrying in %lu s", err,
		d / HZ);
}

/*
 * Forget the cache set, on disk and in memory, and drop the set's keys of
 * this device.  Order matters for crashes: the backing superblock says
 * clean before the slot is marked cleaning, the slot is cleaning before
 * the superblock forgets the set, and it is released only once the
 * invalidations are durable.  Returns -EAGAIN if dirty data appeared
 * (the caller keeps draining).  On another failure, a detach from a set
 * stays pending (bkc_backing_detach_retry()).
 */
static int bkc_backing_detach_now(struct bkc_backing *b)
{
	struct bkc_set *set = b->set;
	u32 id = b->dev_id;
	int r;

	if (set) {
		bkc_wb_stop(b);
		bkc_backing_quiesce(b);
		if (bkc_backing_dirty_sectors(b) ||
		    atomic_read(&b->wb.wb_writes)) {
			bkc_backing_resume(b);
			r = bkc_wb_start(b);
			if (r) {
				/* nothing would drain it: try again later */
				bkc_backing_detach_retry(b, r);
			} else {
				/* writeback drains it, then bkc_backing_clean() */
				WRITE_ONCE(b->detach_delay, 0);
				cancel_delayed_work(&b->detach_work);
			}
			return -EAGAIN;
		}
		/*
		 * Never a cleaning slot under a superblock that says dirty
		 * (writeback's clean write may have failed): after a crash,
		 * that would read as dirty data lost with the slot.
		 */
		mutex_lock(&b->sb_io);
		r = bkc_backing_set_state(b, BKC_STATE_CLEAN);
		mutex_unlock(&b->sb_io);
		if (!r)
			r = bkc_set_slot_clean(set, id);
		if (r)
			goto fail;
	}
	/* a device whose dirty data died with its set stays inconsistent */
	r = bkc_backing_sb_forget(b, b->set_lost ? BKC_STATE_INCONSISTENT :
				  BKC_STATE_NONE);
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
	bkc_info(b->dev.bdev, "detached");
	return bkc_backing_run(b);
fail:
	if (set) {
		/* a failed set's failover ends the detach (fail.c) */
		if (!bkc_set_failed(set))
			bkc_backing_detach_retry(b, r);
		bkc_backing_resume(b);
		/* if this fails, the retry (or the failover) takes over */
		bkc_wb_start(b);
	}
	return r;
}

static void bkc_backing_detach_work(struct work_struct *work)
{
	struct bkc_backing *b = container_of(to_delayed_work(work),
					     struct bkc_backing, detach_work);

	mutex_lock(&bkc_lock);
	if (!b->dead && b->set) {
		/* a failed set ends the detach through its failover */
		bkc_set_failover(b->set);
		/*
		 * With dirty data (a retry after writeback failed to start),
		 * this starts writeback to drain it and returns -EAGAIN.
		 */
		if (b->set && b->detaching)
			bkc_backing_detach_now(b);
	}
	mutex_unlock(&bkc_lock);
}

/* Writeback found no dirty data left: finish a pending detach. */
void bkc_backing_clean(struct bkc_backing *b)
{
	/*
	 * Racy reads (both written under bkc_lock): a detach that just
	 * ended makes the work do nothing, and one that just failed has
	 * this attempt overridden by bkc_backing_detach_retry().
	 */
	if (READ_ONCE(b->detaching) && !READ_ONCE(b->detach_delay))
		queue_delayed_work(system_long_wq, &b->detach_work, 0);
}

/*
 * Detach: at once if the cache holds no dirty data of this device,
 * otherwise write it back first (at full speed, up to writeback_rate_max;
 * dirty_data shows the progress) and detach when it is done.  A detach
 * whose last step fails here returns the error and stays pending.
 */
int bkc_backing_detach(struct bkc_backing *b)
{
	int r;

	lockdep_assert_held(&bkc_lock);
	if (b->set && bkc_set_failed(b->set))
		bkc_set_failover(b->set);
	if (!b->set && b->sb.state == BKC_STATE_NONE)
		return 0;
	if (!b->set) {
		if (b->sb.state == BKC_STATE_DIRTY && !b->set_lost) {
			bkc_err(b->dev.bdev,
				"cannot detach: its dirty data is in cache set %pUb, which is not registered",
				b->sb.set_uuid);
			return -EBUSY;
		}
		return bkc_backing_detach_now(b);
	}
	WRITE_ONCE(b->detaching, true);
	r = bkc_backing_dirty_sectors(b) ? -EAGAIN : bkc_backing_detach_now(b);
	if (r != -EAGAIN)
		return r;
	WRITE_ONCE(b->wb.drain, true);
	bkc_wb_kick(b);
	bkc_info(b->dev.bdev, "detach: writing back %llu dirty sectors first",
		 bkc_backing_dirty_sectors(b));
	return 0;
}

int bkc_backing_set_mode(struct bkc_backing *b, u32 mode)
{
	struct bkc_sb_mut m = { .fields = BKC_MUT_MODE, .cache_mode = mode };

	lockdep_assert_held(&bkc_lock);
	if (b->sb.cache_mode == mode)
		return 0;
	return bkc_backing_sb_update(b, &m);
}

/* The tunables as they are now. */
static void bkc_backing_tunables(struct bkc_backing *b, struct bkc_tunables *t)
{
	t->sequential_cutoff = READ_ONCE(b->sequential_cutoff);
	t->writeback_rate_max = READ_ONCE(b->wb.rate_max);
	t->writeback_percent = READ_ONCE(b->wb.percent);
	t->writeback_delay = READ_ONCE(b->wb.delay);
	t->writeback_max_age = READ_ONCE(b->wb.max_age);
}

/* ---- backing device flushes ---- */

/*
 * A write to the backing device completed; called before the request it
 * belongs to can complete, so that a flush the submitter sends after
 * that completion sees it counted.
 */
void bkc_backing_wrote(struct bkc_backing *b)
{
	atomic64_inc(&b->bw_done);
	/* pairs with the full barrier of the completion's wake-up */
	smp_mb__after_atomic();
}

/*
 * Whether a flush of @b would cover a completed write that no successful
 * flush covered yet.  *@gen is then what to pass to bkc_backing_flushed()
 * once the flush succeeded (writes completing after this sample are not
 * covered by it, and count for the next one).
 */
bool bkc_backing_flush_needed(struct bkc_backing *b, u64 *gen)
{
	*gen = atomic64_read(&b->bw_done);
	return *gen != (u64)atomic64_read(&b->bw_flushed);
}

/* A flush sampled at @gen succeeded: every write counted by then is durable. */
void bkc_backing_flushed(struct bkc_backing *b, u64 gen)
{
	s64 old = atomic64_read(&b->bw_flushed);

	/* flushes may complete out of order: keep the largest */
	while ((u64)old < gen &&
	       !atomic64_try_cmpxchg(&b->bw_flushed, &old, gen))
		;
}

/*
 * Flush @b, in process context, if a completed write needs it.  @fg: for
 * foreground writes, so writeback yields to it as to their data.
 */
int bkc_backing_flush(struct bkc_backing *b, bool fg)
{
	u64 gen;
	int r;

	if (!bkc_backing_flush_needed(b, &gen))
		return 0;
	if (fg)
		bkc_fg_stamp(&b->wb);
	r = blkdev_issue_flush(b->dev.bdev);
	if (fg)
		bkc_fg_stamp(&b->wb);
	if (!r)
		bkc_backing_flushed(b, gen);
	return r;
}

static void bkc_backing_apply_tunables(struct bkc_backing *b,
				       const struct bkc_tunables *t)
{
	WRITE_ONCE(b->sequential_cutoff, t->sequential_cutoff);
	WRITE_ONCE(b->wb.rate_max, t->writeback_rate_max);
	WRITE_ONCE(b->wb.percent, t->writeback_percent);
	WRITE_ONCE(b->wb.delay, t->writeback_delay);
	WRITE_ONCE(b->wb.max_age, t->writeback_max_age);
}

/*
 * Set tunable @which to @v, recorded in the backing superblock so that it
 * survives registration.  The range is checked by the caller.  Nothing
 * changes if the write fails.
 */
int bkc_backing_set_tunable(struct bkc_backing *b, enum bkc_tunable which,
			    u64 v)
{
	struct bkc_sb_mut m = { .fields = BKC_MUT_TUNABLES };
	int r;

	lockdep_assert_held(&bkc_lock);
	if (b->dead)
		return -ENODEV;
	bkc_backing_tunables(b, &m.tun);
	switch (which) {
	case BKC_TUN_SEQUENTIAL_CUTOFF:
		m.tun.sequential_cutoff = v;
		break;
	case BKC_TUN_WRITEBACK_RATE_MAX:
		m.tun.writeback_rate_max = v;
		break;
	case BKC_TUN_WRITEBACK_PERCENT:
		m.tun.writeback_percent = v;
		break;
	case BKC_TUN_WRITEBACK_DELAY:
		m.tun.writeback_delay = v;
		break;
	case BKC_TUN_WRITEBACK_MAX_AGE:
		m.tun.writeback_max_age = v;
		break;
	}
	if ((b->sb.flags & BKC_SB_F_TUNABLES) &&
	    !memcmp(&m.tun, &b->sb.tun, sizeof(m.tun)))
		return 0;
	r = bkc_backing_sb_update(b, &m);
	if (r) {
		bkc_err(b->dev.bdev, "cannot record a tunable in the superblock (%d)",
			r);
		return r;
	}
	bkc_backing_apply_tunables(b, &m.tun);
	bkc_wb_kick(b);
	return 0;
}

int bkc_backing_set_label(struct bkc_backing *b, const char *label,
			  size_t len)
{
	struct bkc_sb_mut m = { .fields = BKC_MUT_LABEL };

	lockdep_assert_held(&bkc_lock);
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
	INIT_LIST_HEAD(&b->set_node);
	/* what was written before we held the device: the first flush goes */
	atomic64_set(&b->bw_done, 1);
	b->dev = *dev;
	b->sb = *sb;
	b->id = -1;
	b->data_start = sb->data_offset >> SECTOR_SHIFT;
	spin_lock_init(&b->seq_lock);
	bkc_seq_init(&b->seq);
	b->sequential_cutoff = BKC_SEQUENTIAL_CUTOFF;
	mutex_init(&b->sb_io);
	INIT_WORK(&b->state_work, bkc_backing_state_work);
	INIT_DELAYED_WORK(&b->detach_work, bkc_backing_detach_work);
	init_waitqueue_head(&b->quiesce_wait);
	spin_lock_init(&b->fo_lock);
	INIT_LIST_HEAD(&b->fo_parked);
	spin_lock_init(&b->ack_lock);
	INIT_LIST_HEAD(&b->acked);
	bkc_wb_init(b);
	/* the tunables the superblock recorded, else the defaults */
	if (sb->flags & BKC_SB_F_TUNABLES)
		bkc_backing_apply_tunables(b, &sb->tun);
	list_add_tail(&b->list, &bkc_backings);

	r = bkc_statset_init(&b->st);
	if (r)
		goto fail;
	/* clones, and reads of promoted misses into pages of our own */
	r = bioset_init(&b->bs, BIO_POOL_SIZE, bkc_bio_front_pad(),
			BIOSET_NEED_BVECS | BIOSET_NEED_RESCUER);
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
		r = bkc_statset_add(&b->st, &b->kobj);
	}
	if (r) {
		bkc_err(b->dev.bdev, "cannot create sysfs directory (%d)", r);
		goto fail;
	}

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
		if (r && r != -ENOENT)
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

/* ---- cache set failure (fail.c) ---- */

struct bkc_lost_walk {
	struct bkc_lost	*out;		/* NULL: count only */
	u32		cap;
	u32		nr;
	u64		bytes;
	u64		end;		/* of the last range, bytes */
	u32		shift;		/* sector to byte */
};

static int bkc_lost_key(void *arg, const struct bkc_key *k)
{
	struct bkc_lost_walk *w = arg;
	u64 start, len;

	if (!bkc_key_dirty(k))
		return 0;
	start = bkc_pos_lba(k->pos) << w->shift;
	len = (u64)k->len << w->shift;
	w->bytes += len;
	if (w->nr && w->end == start) {
		if (w->out)
			w->out[w->nr - 1].len += len;
	} else {
		if (w->out && w->nr == w->cap)
			return 1;
		if (w->out) {
			w->out[w->nr].start = start;
			w->out[w->nr].len = len;
		}
		w->nr++;
	}
	w->end = start + len;
	return 0;
}

static int bkc_lost_cmp(const void *a, const void *b)
{
	const struct bkc_lost *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sort @n ranges and merge those that overlap or touch; the new count. */
static u32 bkc_lost_merge(struct bkc_lost *v, u32 n, u64 *bytes)
{
	u32 i, o = 0;

	sort(v, n, sizeof(*v), bkc_lost_cmp, NULL);
	*bytes = 0;
	for (i = 0; i < n; i++) {
		if (o && v[i].start <= v[o - 1].start + v[o - 1].len) {
			u64 end = max(v[o - 1].start + v[o - 1].len,
				      v[i].start + v[i].len);

			*bytes += end - (v[o - 1].start + v[o - 1].len);
			v[o - 1].len = end - v[o - 1].start;
			continue;
		}
		v[o++] = v[i];
		*bytes += v[i].len;
	}
	return o;
}

/*
 * The writes of @b completed before their keys were inserted (request.c),
 * whose keys the failed set may not hold: their ranges in a new array
 * (*@out, NULL on -ENOMEM); their number.  Read before the index: a write
 * leaves the list only once its keys are in.
 */
static u32 bkc_backing_acked(struct bkc_backing *b, struct bkc_lost **out)
{
	/* no write joins the list once the set failed; it only shrinks */
	u32 n = atomic_read(&b->nacked);

	*out = NULL;
	if (!n)
		return 0;
	*out = kvmalloc_array(n, sizeof(**out), GFP_NOIO);
	if (*out)
		n = bkc_req_acked_ranges(b, *out, n);
	return n;
}

/*
 * Record which ranges of /dev/cacheN had dirty data in the failed @set:
 * the dirty keys of @b in the index in memory (the failed device is not
 * read; nodes holding dirty keys are never evicted, ncache.c, so the walk
 * normally sees them all), and the @nacked writes of @acked.
 */
static void bkc_backing_collect_lost(struct bkc_backing *b,
				     struct bkc_set *set,
				     const struct bkc_lost *acked, u32 nacked)
{
	u64 from = bkc_pos(b->dev_id, 0), to = bkc_pos(b->dev_id + 1, 0);
	struct bkc_lost_walk w = { .shift = SECTOR_SHIFT };
	int r;

	kvfree(b->lost);
	b->lost = NULL;
	b->nr_lost = 0;
	b->lost_bytes = 0;
	down_read(&set->lock);
	r = bkc_core_iter(set->core, from, to, false, bkc_lost_key, &w);
	if (r >= 0 && (w.nr || nacked)) {
		w.out = kvmalloc_array(w.nr + nacked, sizeof(*w.out),
				       GFP_KERNEL);
		if (w.out) {
			w.cap = w.nr;
			w.nr = 0;
			w.bytes = 0;
			r = bkc_core_iter(set->core, from, to, false,
					  bkc_lost_key, &w);
		} else {
			r = -ENOMEM;
		}
	}
	up_read(&set->lock);
	if (w.out && nacked) {
		if (acked) {
			memcpy(w.out + w.nr, acked, nacked * sizeof(*acked));
			w.nr = bkc_lost_merge(w.out, w.nr + nacked, &w.bytes);
		} else {
			r = -ENOMEM;
		}
	}
	b->lost = w.out;
	b->nr_lost = w.out ? w.nr : 0;
	b->lost_bytes = w.bytes;
	b->lost_partial = r < 0 || r == 1;
}

#define BKC_LOST_LOG_MAX	32

static void bkc_backing_report_lost(struct bkc_backing *b, const char *disk)
{
	u32 i;

	for (i = 0; i < b->nr_lost && i < BKC_LOST_LOG_MAX; i++)
		bkc_err(b->dev.bdev, "lost dirty data of %s: bytes %llu-%llu (%llu bytes)",
			disk, b->lost[i].start,
			b->lost[i].start + b->lost[i].len - 1, b->lost[i].len);
	if (b->nr_lost > BKC_LOST_LOG_MAX || b->lost_partial)
		bkc_err(b->dev.bdev, "%s%u lost ranges, %llu bytes in all: see lost_dirty",
			b->lost_partial ? "at least " : "", b->nr_lost,
			b->lost_bytes);
}

/*
 * @set failed: carry on without it.  Caller holds bkc_lock (fail.c).
 * Without dirty data (and stop_when_cache_set_failed "auto"), the
 * superblock forgets the set and /dev/cacheN goes on in passthrough;
 * otherwise the lost ranges are recorded and /dev/cacheN stops, the
 * device staying registered for `running`.
 */
void bkc_backing_failover(struct bkc_backing *b, struct bkc_set *set)
{
	char disk[DISK_NAME_LEN] = "";
	struct bkc_lost *acked;
	u32 nacked;
	u64 dirty;
	int r;

	lockdep_assert_held(&bkc_lock);
	nacked = bkc_backing_acked(b, &acked);
	/* what the index holds, and what acked writes would have added */
	down_read(&set->lock);
	dirty = bkc_core_dev_dirty(set->core, b->dev_id) +
		READ_ONCE(b->acked_sectors);
	up_read(&set->lock);
	if (b->disk)
		strscpy(disk, b->disk->disk_name, sizeof(disk));

	if (!dirty && !b->stop_always) {
		kvfree(acked);
		r = bkc_backing_sb_forget(b, BKC_STATE_NONE);
		bkc_req_failover(b, BKC_FO_PASS);
		bkc_backing_unlink(b);
		bkc_err(b->dev.bdev,
			"cache set %pUb on %pg failed: %s runs without a cache, no dirty data was lost%s",
			set->sb.set_uuid, set->dev.bdev, disk,
			r ? " (its superblock could not be updated)" : "");
		return;
	}
	if (dirty)
		bkc_backing_collect_lost(b, set, acked, nacked);
	kvfree(acked);
	bkc_req_failover(b, BKC_FO_DEAD);
	bkc_backing_stop_disk(b);
	bkc_backing_unlink(b);
	b->set_lost = dirty != 0;
	if (!dirty) {
		bkc_err(b->dev.bdev,
			"cache set %pUb on %pg failed: %s stopped (stop_when_cache_set_failed is always); no dirty data was lost",
			set->sb.set_uuid, set->dev.bdev, disk);
		return;
	}
	bkc_err(b->dev.bdev,
		"cache set %pUb on %pg failed holding %llu bytes of dirty data of %s: %s stopped; write 1 to running to start it without that data",
		set->sb.set_uuid, set->dev.bdev, dirty << SECTOR_SHIFT, disk,
		disk);
	bkc_backing_report_lost(b, disk);
}

/*
 * `running`: start @b without the cache set its superblock names (missing
 * or failed), on the admin's word.  Its superblock then records
 * "inconsistent" and names no set any more, so that the old keys are
 * never trusted again.  Caller holds bkc_lock.
 */
int bkc_backing_force_run(struct bkc_backing *b)
{
	u8 old_set[BKC_UUID_SIZE];
	u32 old = b->sb.state;
	int r;

	lockdep_assert_held(&bkc_lock);
	if (b->set && bkc_set_failed(b->set))
		bkc_set_failover(b->set);
	if (b->disk || b->set)
		return 0;
	if (old != BKC_STATE_CLEAN && old != BKC_STATE_DIRTY)
		return bkc_backing_run(b);
	memcpy(old_set, b->sb.set_uuid, BKC_UUID_SIZE);
	r = bkc_backing_sb_forget(b, BKC_STATE_INCONSISTENT);
	if (r)
		return r;
	bkc_err(b->dev.bdev,
		"started without cache set %pUb on request: marked inconsistent%s",
		old_set, old == BKC_STATE_DIRTY ?
		", the dirty data it held is lost" : ", no dirty data was lost");
	return bkc_backing_run(b);
}
