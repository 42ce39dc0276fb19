// SPDX-License-Identifier: GPL-2.0
/*
 * Cache sets: registration of the cache device, stop and unregister.
 */
#include <linux/slab.h>

#include "bkc.h"

struct bkc_set *bkc_set_find(const u8 *set_uuid)
{
	struct bkc_set *set;

	lockdep_assert_held(&bkc_lock);
	list_for_each_entry(set, &bkc_sets, list)
		if (!memcmp(set->sb.set_uuid, set_uuid, BKC_UUID_SIZE))
			return set;
	return NULL;
}

/* Attach and run the registered backing devices that wait for @set. */
static void bkc_set_adopt_waiting(struct bkc_set *set)
{
	struct bkc_backing *b;
	int r;

	list_for_each_entry(b, &bkc_backings, list) {
		if (b->set || memcmp(b->sb.set_uuid, set->sb.set_uuid,
				     BKC_UUID_SIZE))
			continue;
		if (b->sb.state != BKC_STATE_CLEAN &&
		    b->sb.state != BKC_STATE_DIRTY)
			continue;
		if (set->sb.block_size > b->sb.block_size) {
			bkc_err(b->dev.bdev,
				"cache set block size %u exceeds the backing block size %u",
				set->sb.block_size, b->sb.block_size);
			continue;
		}
		r = bkc_backing_link(b, set);
		if (!r || r == -ENOENT)	/* -ENOENT: runs without the set */
			r = bkc_backing_run(b);
		if (r)
			bkc_err(b->dev.bdev, "cannot start (%d)", r);
	}
}

/* Take ownership of @dev, a cache device described by @sb. */
int bkc_set_register(struct bkc_bdev *dev, struct bkc_sb_info *sb)
{
	struct bkc_set *set;
	int r;

	lockdep_assert_held(&bkc_lock);
	set = bkc_set_find(sb->set_uuid);
	if (set) {
		bkc_err(dev->bdev, "cache set %pUb is already registered on %pg",
			sb->set_uuid, set->dev.bdev);
		bkc_bdev_close(dev);
		return -EEXIST;
	}

	set = kzalloc(sizeof(*set), GFP_KERNEL);
	if (!set) {
		bkc_bdev_close(dev);
		return -ENOMEM;
	}
	kobject_init(&set->kobj, &bkc_set_ktype);
	kobject_init(&set->cdev_kobj, &bkc_cdev_ktype);
	INIT_LIST_HEAD(&set->backings);
	bkc_set_fail_init(set);
	set->dev = *dev;
	set->sb = *sb;
	list_add_tail(&set->list, &bkc_sets);

	r = kobject_add(&set->kobj, bkc_kobj, "%pUb", sb->set_uuid);
	if (r)
		goto fail;
	set->kobj_added = true;
	r = kobject_add(&set->cdev_kobj, &set->kobj, "cache0");
	if (r)
		goto fail;
	set->cdev_kobj_added = true;
	r = bkc_statset_init(&set->st);
	if (!r)
		r = bkc_statset_add(&set->st, &set->kobj);
	set->data_written = alloc_percpu(u64);
	if (!r && !set->data_written)
		r = -ENOMEM;
	if (r)
		goto fail;

	r = bkc_meta_open(set);
	if (r) {
		bkc_set_teardown(set);
		return r;
	}
	bkc_info(dev->bdev, "registered cache set %pUb", sb->set_uuid);
	bkc_set_adopt_waiting(set);
	kobject_uevent(&set->kobj, KOBJ_ADD);
	return 0;
fail:
	bkc_err(dev->bdev, "cannot create sysfs directory (%d)", r);
	bkc_set_teardown(set);
	return r;
}

/*
 * Release @set.  Backing devices still attached stay registered and run
 * without a cache.  Idempotent; bkc_reap() finishes the job.
 */
void bkc_set_teardown(struct bkc_set *set)
{
	struct bkc_backing *b, *n;

	lockdep_assert_held(&bkc_lock);
	if (set->dead)
		return;
	/* parked requests of a failed set are finished by its failover */
	bkc_set_failover(set);
	set->dead = true;
	list_for_each_entry_safe(b, n, &set->backings, set_node)
		bkc_backing_unlink(b);
	bkc_meta_close(set);
	list_move_tail(&set->list, &bkc_dead_sets);
}

/*
 * stop (@detach false): stop every attached /dev/cacheN, keeping the
 * attachment on disk, then release the set.  Refused with -EBUSY, changing
 * nothing, while any of them is open.
 *
 * unregister (@detach true): detach every backing device (they go on
 * without a cache), then release the set.  Refused with -EBUSY while any
 * of them has dirty data: detach those first, which writes it back.  A
 * detach that fails stays pending, and so does the set.
 */
int bkc_set_stop(struct bkc_set *set, bool detach)
{
	struct bkc_backing *b, *n;
	int r, ret = 0;

	lockdep_assert_held(&bkc_lock);
	/* a failed set has no backing devices left after this */
	bkc_set_failover(set);
	list_for_each_entry(b, &set->backings, set_node) {
		if (!detach && bkc_backing_busy(b)) {
			bkc_err(set->dev.bdev, "cannot stop: %s is in use",
				b->disk->disk_name);
			return -EBUSY;
		}
		if (detach && bkc_backing_dirty_sectors(b)) {
			bkc_err(set->dev.bdev,
				"cannot unregister: %pg has dirty data; detach it first",
				b->dev.bdev);
			return -EBUSY;
		}
	}
	list_for_each_entry_safe(b, n, &set->backings, set_node) {
		if (detach) {
			r = bkc_backing_detach(b);
			if (r && !bkc_set_failed(set)) {
				bkc_err(set->dev.bdev,
					"cannot unregister: the detach of %pg failed (%d); it stays pending",
					b->dev.bdev, r);
				ret = ret ?: r;
			}
		} else {
			bkc_backing_teardown(b);
		}
		/*
		 * A set that failed meanwhile: its failover unlinks @n too,
		 * and unregister is then a stop, refused by nothing.
		 */
		if (bkc_set_failed(set)) {
			bkc_set_failover(set);
			ret = 0;
			break;
		}
	}
	if (!list_empty(&set->backings)) {
		if (ret)
			return ret;
		/* dirty data appeared meanwhile: those are draining now */
		bkc_err(set->dev.bdev,
			"cannot unregister: a backing device got dirty data; it is being written back");
		return -EBUSY;
	}
	bkc_info(set->dev.bdev, "cache set %pUb %s", set->sb.set_uuid,
		 detach ? "unregistered" : "stopped");
	bkc_set_teardown(set);
	return ret;
}

/* ---- backing device slots (device ids) in the cache superblock ---- */

static int bkc_set_sb_commit(struct bkc_set *set, u32 id, u8 state,
			     const u8 *uuid)
{
	u8 old_state = set->sb.bdev_state[id];
	u8 old_uuid[BKC_UUID_SIZE];
	int r;

	memcpy(old_uuid, set->sb.bdev_uuid[id], BKC_UUID_SIZE);
	set->sb.bdev_state[id] = state;
	memcpy(set->sb.bdev_uuid[id], uuid, BKC_UUID_SIZE);
	r = bkc_cache_sb_write(set);
	if (r) {
		set->sb.bdev_state[id] = old_state;
		memcpy(set->sb.bdev_uuid[id], old_uuid, BKC_UUID_SIZE);
	}
	return r;
}

/* Does @set have a slot attached to backing device @uuid?  Sets *@id. */
bool bkc_set_slot_find(struct bkc_set *set, const u8 *uuid, u32 *id)
{
	u32 i;

	for (i = 0; i < BKC_SB_MAX_BDEVS; i++) {
		if (set->sb.bdev_state[i] == BKC_SLOT_ATTACHED &&
		    !memcmp(set->sb.bdev_uuid[i], uuid, BKC_UUID_SIZE)) {
			*id = i;
			return true;
		}
	}
	return false;
}

/*
 * The device id of the backing device @uuid in @set: its slot, or a free
 * one, taken and recorded durably before any key can use it.
 */
int bkc_set_slot_get(struct bkc_set *set, const u8 *uuid, u32 *id)
{
	u32 i, free = BKC_SB_MAX_BDEVS;

	lockdep_assert_held(&bkc_lock);
	for (i = 0; i < BKC_SB_MAX_BDEVS; i++) {
		if (set->sb.bdev_state[i] == BKC_SLOT_ATTACHED &&
		    !memcmp(set->sb.bdev_uuid[i], uuid, BKC_UUID_SIZE)) {
			*id = i;
			return 0;
		}
		if (set->sb.bdev_state[i] == BKC_SLOT_FREE &&
		    free == BKC_SB_MAX_BDEVS)
			free = i;
	}
	if (free == BKC_SB_MAX_BDEVS) {
		bkc_err(set->dev.bdev, "cache set %pUb serves %u backing devices already",
			set->sb.set_uuid, BKC_SB_MAX_BDEVS);
		return -ENOSPC;
	}
	*id = free;
	return bkc_set_sb_commit(set, free, BKC_SLOT_ATTACHED, uuid);
}

/* Slot @id is detached: its keys are being dropped. */
int bkc_set_slot_clean(struct bkc_set *set, u32 id)
{
	if (set->sb.bdev_state[id] != BKC_SLOT_ATTACHED)
		return 0;
	return bkc_set_sb_commit(set, id, BKC_SLOT_CLEANING,
				 set->sb.bdev_uuid[id]);
}

/* Slot @id holds no keys any more. */
int bkc_set_slot_release(struct bkc_set *set, u32 id)
{
	static const u8 zero[BKC_UUID_SIZE];

	return bkc_set_sb_commit(set, id, BKC_SLOT_FREE, zero);
}

/*
 * Drop every key of slot @id and free the slot: cleaning (durably), the
 * invalidations, a journal sync so they are durable too, then free.
 */
int bkc_set_slot_drop(struct bkc_set *set, u32 id)
{
	int r = bkc_set_slot_clean(set, id);

	if (!r)
		r = bkc_invalidate_dev(set, id);
	if (!r)
		r = bkc_journal_sync(set);
	if (!r)
		r = bkc_set_slot_release(set, id);
	return r;
}

/* Drop the slot still attached to @uuid, if there is one. */
int bkc_set_slot_drop_uuid(struct bkc_set *set, const u8 *uuid)
{
	u32 i;

	for (i = 0; i < BKC_SB_MAX_BDEVS; i++)
		if (set->sb.bdev_state[i] == BKC_SLOT_ATTACHED &&
		    !memcmp(set->sb.bdev_uuid[i], uuid, BKC_UUID_SIZE))
			return bkc_set_slot_drop(set, i);
	return 0;
}
