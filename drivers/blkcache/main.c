// SPDX-License-Identifier: GPL-2.0
/*
 * blkcache: a block-device cache.  Module entry points, the
 * /sys/fs/blkcache directory and device registration.
 */
#include <linux/blkdev.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "bkc.h"

DEFINE_MUTEX(bkc_lock);
LIST_HEAD(bkc_sets);
LIST_HEAD(bkc_backings);
LIST_HEAD(bkc_dead_sets);
LIST_HEAD(bkc_dead_backings);
struct kobject *bkc_kobj;
int bkc_major;

/* Holder of every exclusive open we make. */
static char bkc_holder;

/*
 * Finish the teardown of dead objects: remove their sysfs directories,
 * release their devices and drop the last reference.  Called without
 * bkc_lock (see bkc.h).
 */
void bkc_reap(void)
{
	struct bkc_backing *b;
	struct bkc_set *set;

	for (;;) {
		mutex_lock(&bkc_lock);
		b = list_first_entry_or_null(&bkc_dead_backings,
					     struct bkc_backing, list);
		if (b)
			list_del_init(&b->list);
		set = b ? NULL : list_first_entry_or_null(&bkc_dead_sets,
							  struct bkc_set, list);
		if (set)
			list_del_init(&set->list);
		mutex_unlock(&bkc_lock);

		if (b) {
			/* they check ->dead under bkc_lock, then do nothing */
			cancel_delayed_work_sync(&b->detach_work);
			cancel_work_sync(&b->state_work);
			bkc_statset_del(&b->st);
			if (b->kobj_added)
				kobject_del(&b->kobj);
			bkc_bdev_close(&b->dev);
			kobject_put(&b->kobj);
		} else if (set) {
			/* it checks ->dead under bkc_lock, then does nothing */
			bkc_set_fail_cancel(set);
			bkc_statset_del(&set->st);
			if (set->cdev_kobj_added)
				kobject_del(&set->cdev_kobj);
			kobject_put(&set->cdev_kobj);
			if (set->kobj_added)
				kobject_del(&set->kobj);
			bkc_bdev_close(&set->dev);
			kobject_put(&set->kobj);
		} else {
			return;
		}
	}
}

/* The registered device with number @devt, or NULL. */
static struct block_device *bkc_devt_registered(dev_t devt)
{
	struct bkc_backing *b;
	struct bkc_set *set;

	list_for_each_entry(set, &bkc_sets, list)
		if (set->dev.bdev->bd_dev == devt)
			return set->dev.bdev;
	list_for_each_entry(b, &bkc_backings, list)
		if (b->dev.bdev->bd_dev == devt)
			return b->dev.bdev;
	return NULL;
}

/*
 * Register the device at the path in @buf.  With @quiet, a device that
 * is already registered or carries no blkcache superblock is not an error.
 */
static int bkc_register(const char *buf, size_t len, bool quiet)
{
	struct bkc_sb_info *sb = NULL;
	struct block_device *reg;
	struct bkc_bdev dev = {};
	const char *why;
	char *copy, *path;
	dev_t devt;
	int r;

	copy = kstrndup(buf, len, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	path = strim(copy);
	if (!*path) {
		pr_err("blkcache: register: empty device path\n");
		r = -EINVAL;
		goto out;
	}
	r = lookup_bdev(path, &devt);
	if (r) {
		pr_err("blkcache: %s: not a block device (%d)\n", path, r);
		r = -EINVAL;
		goto out;
	}
	sb = kzalloc(sizeof(*sb), GFP_KERNEL);
	if (!sb) {
		r = -ENOMEM;
		goto out;
	}

	mutex_lock(&bkc_lock);
	reg = bkc_devt_registered(devt);
	if (reg) {
		r = 0;
		if (!quiet) {
			bkc_err(reg, "already registered");
			r = -EBUSY;
		}
		goto unlock;
	}
	r = bkc_bdev_open(&dev, path, &bkc_holder);
	if (r) {
		pr_err("blkcache: %s: cannot open exclusively, in use? (%d)\n",
		       path, r);
		goto unlock;
	}
	r = bkc_sb_read(dev.bdev, sb, &why);
	if (r) {
		if (quiet && r == -EINVAL)
			r = 0;
		else
			bkc_err(dev.bdev, "%s (%d)", why, r);
		bkc_bdev_close(&dev);
		goto unlock;
	}
	if (sb->dev_type == BKC_DEV_CACHE)
		r = bkc_set_register(&dev, sb);
	else
		r = bkc_backing_register(&dev, sb);
unlock:
	mutex_unlock(&bkc_lock);
	bkc_reap();
out:
	kfree(sb);
	kfree(copy);
	return r;
}

static ssize_t register_store(struct kobject *kobj,
			      struct kobj_attribute *attr,
			      const char *buf, size_t len)
{
	int r = bkc_register(buf, len, false);

	return r ?: len;
}

static ssize_t register_quiet_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t len)
{
	int r = bkc_register(buf, len, true);

	return r ?: len;
}

static struct kobj_attribute bkc_attr_register = __ATTR_WO(register);
static struct kobj_attribute bkc_attr_register_quiet =
	__ATTR_WO(register_quiet);

static struct attribute *bkc_top_attrs[] = {
	&bkc_attr_register.attr,
	&bkc_attr_register_quiet.attr,
	NULL,
};

static const struct attribute_group bkc_top_group = {
	.attrs = bkc_top_attrs,
};

/* Stop every device and release every set.  Idempotent. */
static void bkc_teardown_all(void)
{
	struct bkc_backing *b, *nb;
	struct bkc_set *set, *ns;

	mutex_lock(&bkc_lock);
	list_for_each_entry_safe(b, nb, &bkc_backings, list)
		bkc_backing_teardown(b);
	list_for_each_entry_safe(set, ns, &bkc_sets, list)
		bkc_set_teardown(set);
	mutex_unlock(&bkc_lock);
	bkc_reap();
}

static void bkc_module_teardown(void)
{
	bkc_stats_stop();
	if (bkc_kobj) {
		sysfs_remove_group(bkc_kobj, &bkc_top_group);
		bkc_teardown_all();
		kobject_put(bkc_kobj);
		bkc_kobj = NULL;
	}
	if (bkc_major > 0) {
		unregister_blkdev(bkc_major, "blkcache");
		bkc_request_exit();
		bkc_fail_exit();
	}
	bkc_major = 0;
}

static int __init bkc_init(void)
{
	int r;

	r = bkc_fail_init();
	if (r)
		return r;
	r = bkc_request_init();
	if (r) {
		bkc_fail_exit();
		return r;
	}
	r = register_blkdev(0, "blkcache");
	if (r < 0) {
		pr_err("blkcache: cannot register a block major (%d)\n", r);
		bkc_request_exit();
		bkc_fail_exit();
		return r;
	}
	bkc_major = r;

	bkc_kobj = kobject_create_and_add("blkcache", fs_kobj);
	if (!bkc_kobj) {
		r = -ENOMEM;
		goto fail;
	}
	r = sysfs_create_group(bkc_kobj, &bkc_top_group);
	if (r)
		goto fail;
	bkc_stats_start();
	pr_info("blkcache: loaded\n");
	return 0;
fail:
	pr_err("blkcache: cannot create /sys/fs/blkcache (%d)\n", r);
	bkc_module_teardown();
	return r;
}

static void __exit bkc_exit(void)
{
	bkc_module_teardown();
	pr_info("blkcache: unloaded\n");
}

module_init(bkc_init);
module_exit(bkc_exit);

MODULE_DESCRIPTION("blkcache: SSD cache for slow block devices");
MODULE_AUTHOR("The blkcache developers");
MODULE_LICENSE("GPL");
