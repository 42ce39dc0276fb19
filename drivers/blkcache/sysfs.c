// SPDX-License-Identifier: GPL-2.0
/*
 * sysfs attributes of backing devices (<backing>/cache/, also reached as
 * /sys/block/cacheN/cache/) and of cache sets (/sys/fs/blkcache/<uuid>/).
 *
 * Every store validates its whole input before it takes bkc_lock, and
 * changes nothing unless it returns success.
 */
#include <linux/ctype.h>
#include <linux/kernfs.h>
#include <linux/module.h>
#include <linux/sysfs.h>
#include <linux/uuid.h>

#include "bkc.h"

/* Triggers accept exactly "1", with or without a newline. */
int bkc_parse_bool_one(const char *buf, size_t len)
{
	if (len && buf[len - 1] == '\n')
		len--;
	return len == 1 && buf[0] == '1' ? 0 : -EINVAL;
}

static int bkc_parse_uuid(const char *buf, size_t len, u8 *out)
{
	char s[UUID_STRING_LEN + 1];
	uuid_t u;

	if (len && buf[len - 1] == '\n')
		len--;
	if (len != UUID_STRING_LEN)
		return -EINVAL;
	memcpy(s, buf, len);
	s[len] = '\0';
	if (uuid_parse(s, &u))
		return -EINVAL;
	memcpy(out, u.b, BKC_UUID_SIZE);
	return 0;
}

/* Human-readable size, bcache style: 0, 512, 1.5k, 20.0M, ... */
static ssize_t bkc_emit_hsize(char *buf, u64 v)
{
	static const char units[] = "kMGTPE";
	u64 frac = 0;
	int u = -1;

	while (v >= 1024 && u < (int)sizeof(units) - 2) {
		frac = v & 1023;
		v >>= 10;
		u++;
	}
	if (u < 0)
		return sysfs_emit(buf, "%llu\n", v);
	return sysfs_emit(buf, "%llu.%llu%c\n", v, frac * 10 / 1024,
			  units[u]);
}

/*
 * Run @fn on the object under bkc_lock, with the attribute's active
 * protection broken so that @fn may remove the object's own directory.
 */
static int bkc_store_self_removing(struct kobject *kobj,
				   struct kobj_attribute *attr,
				   int (*fn)(struct kobject *kobj))
{
	struct kernfs_node *kn;
	int r;

	if (!try_module_get(THIS_MODULE))
		return -ENODEV;
	kn = sysfs_break_active_protection(kobj, &attr->attr);
	mutex_lock(&bkc_lock);
	r = fn(kobj);
	mutex_unlock(&bkc_lock);
	bkc_reap();
	if (kn)
		sysfs_unbreak_active_protection(kn);
	module_put(THIS_MODULE);
	return r;
}

/* ---- backing devices ---- */

#define to_backing(k) container_of(k, struct bkc_backing, kobj)

static ssize_t attach_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t len)
{
	struct bkc_backing *b = to_backing(kobj);
	u8 uuid[BKC_UUID_SIZE];
	struct bkc_set *set;
	int r;

	r = bkc_parse_uuid(buf, len, uuid);
	if (r)
		return r;
	mutex_lock(&bkc_lock);
	if (b->dead) {
		r = -ENODEV;
		goto out;
	}
	set = bkc_set_find(uuid);
	if (!set) {
		bkc_err(b->dev.bdev, "attach: no cache set %pUb is registered",
			uuid);
		r = -ENOENT;
		goto out;
	}
	r = bkc_backing_attach(b, set);
out:
	mutex_unlock(&bkc_lock);
	return r ?: len;
}

static ssize_t detach_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t len)
{
	struct bkc_backing *b = to_backing(kobj);
	int r;

	r = bkc_parse_bool_one(buf, len);
	if (r)
		return r;
	mutex_lock(&bkc_lock);
	r = b->dead ? -ENODEV : bkc_backing_detach(b);
	mutex_unlock(&bkc_lock);
	return r ?: len;
}

static int bkc_backing_stop_locked(struct kobject *kobj)
{
	struct bkc_backing *b = to_backing(kobj);

	if (b->dead)
		return -ENODEV;
	if (bkc_backing_busy(b)) {
		bkc_err(b->dev.bdev, "cannot stop: %s is in use",
			b->disk->disk_name);
		return -EBUSY;
	}
	bkc_info(b->dev.bdev, "stopped");
	bkc_backing_teardown(b);
	return 0;
}

static ssize_t stop_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t len)
{
	int r = bkc_parse_bool_one(buf, len);

	if (!r)
		r = bkc_store_self_removing(kobj, attr, bkc_backing_stop_locked);
	return r ?: len;
}

static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	struct bkc_backing *b = to_backing(kobj);
	u32 st;

	mutex_lock(&bkc_lock);
	st = bkc_backing_state(b);
	mutex_unlock(&bkc_lock);
	return sysfs_emit(buf, "%s\n", bkc_state_name(st));
}

static ssize_t cache_mode_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	struct bkc_backing *b = to_backing(kobj);
	u32 cur = READ_ONCE(b->sb.cache_mode);
	ssize_t n = 0;
	u32 i;

	for (i = 0; i < BKC_MODE_NR; i++)
		n += sysfs_emit_at(buf, n, i == cur ? "%s[%s]" : "%s%s",
				   i ? " " : "", bkc_cache_mode_name(i));
	n += sysfs_emit_at(buf, n, "\n");
	return n;
}

static ssize_t cache_mode_store(struct kobject *kobj,
				struct kobj_attribute *attr,
				const char *buf, size_t len)
{
	struct bkc_backing *b = to_backing(kobj);
	int mode, r;

	mode = bkc_cache_mode_parse(buf, len);
	if (mode < 0)
		return mode;
	mutex_lock(&bkc_lock);
	r = b->dead ? -ENODEV : bkc_backing_set_mode(b, mode);
	mutex_unlock(&bkc_lock);
	return r ?: len;
}

static ssize_t label_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	struct bkc_backing *b = to_backing(kobj);
	ssize_t n;

	mutex_lock(&bkc_lock);
	n = sysfs_emit(buf, "%s\n", b->sb.label);
	mutex_unlock(&bkc_lock);
	return n;
}

static ssize_t label_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t len)
{
	struct bkc_backing *b = to_backing(kobj);
	size_t i, n = len;
	int r;

	if (n && buf[n - 1] == '\n')
		n--;
	if (n > BKC_LABEL_SIZE)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!isprint(buf[i]))
			return -EINVAL;
	mutex_lock(&bkc_lock);
	r = b->dead ? -ENODEV : bkc_backing_set_label(b, buf, n);
	mutex_unlock(&bkc_lock);
	return r ?: len;
}

static ssize_t backing_dev_name_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%pg\n", to_backing(kobj)->dev.bdev);
}

static ssize_t backing_dev_uuid_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%pUb\n", to_backing(kobj)->sb.uuid);
}

static ssize_t dirty_data_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return bkc_emit_hsize(buf, 0);
}

static struct kobj_attribute bkc_attr_attach = __ATTR_WO(attach);
static struct kobj_attribute bkc_attr_detach = __ATTR_WO(detach);
static struct kobj_attribute bkc_attr_stop = __ATTR_WO(stop);
static struct kobj_attribute bkc_attr_state = __ATTR_RO(state);
static struct kobj_attribute bkc_attr_cache_mode = __ATTR_RW(cache_mode);
static struct kobj_attribute bkc_attr_label = __ATTR_RW(label);
static struct kobj_attribute bkc_attr_backing_dev_name =
	__ATTR_RO(backing_dev_name);
static struct kobj_attribute bkc_attr_backing_dev_uuid =
	__ATTR_RO(backing_dev_uuid);
static struct kobj_attribute bkc_attr_dirty_data = __ATTR_RO(dirty_data);

static struct attribute *bkc_backing_attrs[] = {
	&bkc_attr_attach.attr,
	&bkc_attr_detach.attr,
	&bkc_attr_stop.attr,
	&bkc_attr_state.attr,
	&bkc_attr_cache_mode.attr,
	&bkc_attr_label.attr,
	&bkc_attr_backing_dev_name.attr,
	&bkc_attr_backing_dev_uuid.attr,
	&bkc_attr_dirty_data.attr,
	NULL,
};
ATTRIBUTE_GROUPS(bkc_backing);

static void bkc_backing_release(struct kobject *kobj)
{
	kfree(to_backing(kobj));
}

const struct kobj_type bkc_backing_ktype = {
	.release	= bkc_backing_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= bkc_backing_groups,
};

/* ---- cache sets ---- */

#define to_set(k) container_of(k, struct bkc_set, kobj)
#define cdev_to_set(k) container_of(k, struct bkc_set, cdev_kobj)

static int bkc_set_stop_locked(struct kobject *kobj)
{
	struct bkc_set *set = to_set(kobj);

	return set->dead ? -ENODEV : bkc_set_stop(set, false);
}

static int bkc_set_unregister_locked(struct kobject *kobj)
{
	struct bkc_set *set = to_set(kobj);

	return set->dead ? -ENODEV : bkc_set_stop(set, true);
}

static ssize_t set_stop_store(struct kobject *kobj,
			      struct kobj_attribute *attr,
			      const char *buf, size_t len)
{
	int r = bkc_parse_bool_one(buf, len);

	if (!r)
		r = bkc_store_self_removing(kobj, attr, bkc_set_stop_locked);
	return r ?: len;
}

static ssize_t set_unregister_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t len)
{
	int r = bkc_parse_bool_one(buf, len);

	if (!r)
		r = bkc_store_self_removing(kobj, attr,
					    bkc_set_unregister_locked);
	return r ?: len;
}

static struct kobj_attribute bkc_attr_set_stop =
	__ATTR(stop, 0200, NULL, set_stop_store);
static struct kobj_attribute bkc_attr_set_unregister =
	__ATTR(unregister, 0200, NULL, set_unregister_store);

static struct attribute *bkc_set_attrs[] = {
	&bkc_attr_set_stop.attr,
	&bkc_attr_set_unregister.attr,
	NULL,
};
ATTRIBUTE_GROUPS(bkc_set);

static void bkc_set_release(struct kobject *kobj)
{
	kfree(to_set(kobj));
}

const struct kobj_type bkc_set_ktype = {
	.release	= bkc_set_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= bkc_set_groups,
};

static ssize_t nbuckets_show(struct kobject *kobj,
			     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", cdev_to_set(kobj)->sb.nbuckets);
}

static ssize_t bucket_size_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", cdev_to_set(kobj)->sb.bucket_size);
}

static ssize_t block_size_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", cdev_to_set(kobj)->sb.block_size);
}

static struct kobj_attribute bkc_attr_nbuckets = __ATTR_RO(nbuckets);
static struct kobj_attribute bkc_attr_bucket_size = __ATTR_RO(bucket_size);
static struct kobj_attribute bkc_attr_block_size = __ATTR_RO(block_size);

static struct attribute *bkc_cdev_attrs[] = {
	&bkc_attr_nbuckets.attr,
	&bkc_attr_bucket_size.attr,
	&bkc_attr_block_size.attr,
	NULL,
};
ATTRIBUTE_GROUPS(bkc_cdev);

/* Embedded in struct bkc_set, which the set kobject's release frees. */
static void bkc_cdev_release(struct kobject *kobj)
{
}

const struct kobj_type bkc_cdev_ktype = {
	.release	= bkc_cdev_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= bkc_cdev_groups,
};
