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
ssize_t bkc_emit_hsize(char *buf, u64 v)
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
 * A size: decimal digits with an optional k/m/g/t suffix (either case,
 * powers of 1024), an optional trailing newline, nothing else.
 */
static int bkc_parse_size(const char *buf, size_t len, u64 *out)
{
	u64 v = 0, mul = 1;
	size_t i = 0;

	if (len && buf[len - 1] == '\n')
		len--;
	if (!len)
		return -EINVAL;
	for (; i < len && isdigit(buf[i]); i++) {
		if (v > (U64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (buf[i] - '0');
	}
	if (!i)
		return -EINVAL;
	if (i < len) {
		switch (tolower(buf[i])) {
		case 'k':
			mul = 1ULL << 10;
			break;
		case 'm':
			mul = 1ULL << 20;
			break;
		case 'g':
			mul = 1ULL << 30;
			break;
		case 't':
			mul = 1ULL << 40;
			break;
		default:
			return -EINVAL;
		}
		if (++i != len)
			return -EINVAL;
	}
	if (v > U64_MAX / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

/* An unsigned decimal in [lo, hi], optional newline. */
static int bkc_parse_uint(const char *buf, size_t len, u64 lo, u64 hi,
			  u64 *out)
{
	u64 v = 0;
	size_t i;

	if (len && buf[len - 1] == '\n')
		len--;
	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (!isdigit(buf[i]) || v > (U64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (buf[i] - '0');
	}
	if (v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
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

/* 1 while a detach is pending: writing back first, or retrying a failed step */
static ssize_t detach_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	struct bkc_backing *b = to_backing(kobj);
	bool pending;

	/* a flag, set and cleared by single stores: shown as it is now */
	pending = READ_ONCE(b->detaching);
	return sysfs_emit(buf, "%d\n", pending);
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

/* The uuid of the cache set the superblock names; empty if none. */
static ssize_t set_uuid_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	struct bkc_backing *b = to_backing(kobj);
	u8 uuid[BKC_UUID_SIZE];

	mutex_lock(&b->sb_io);
	memcpy(uuid, b->sb.set_uuid, BKC_UUID_SIZE);
	mutex_unlock(&b->sb_io);
	if (bkc_uuid_is_zero(uuid))
		return sysfs_emit(buf, "\n");
	return sysfs_emit(buf, "%pUb\n", uuid);
}

static ssize_t backing_dev_uuid_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%pUb\n", to_backing(kobj)->sb.uuid);
}

static ssize_t dirty_data_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	u64 v;

	mutex_lock(&bkc_lock);
	v = bkc_backing_dirty_sectors_exact(to_backing(kobj));
	mutex_unlock(&bkc_lock);
	return bkc_emit_hsize(buf, v << SECTOR_SHIFT);
}

/* Set and record a tunable (backing.c); 0 or a -errno. */
static int bkc_store_tunable(struct kobject *kobj, enum bkc_tunable which,
			     u64 v)
{
	int r;

	mutex_lock(&bkc_lock);
	r = bkc_backing_set_tunable(to_backing(kobj), which, v);
	mutex_unlock(&bkc_lock);
	return r;
}

static ssize_t sequential_cutoff_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	return bkc_emit_hsize(buf, READ_ONCE(to_backing(kobj)->sequential_cutoff));
}

static ssize_t sequential_cutoff_store(struct kobject *kobj,
				       struct kobj_attribute *attr,
				       const char *buf, size_t len)
{
	u64 v;
	int r = bkc_parse_size(buf, len, &v);

	if (r || v > BKC_TUN_CUTOFF_MAX)
		return -EINVAL;
	return bkc_store_tunable(kobj, BKC_TUN_SEQUENTIAL_CUTOFF, v) ?: len;
}

static ssize_t writeback_percent_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_backing(kobj)->wb.percent));
}

/* A tunable that is an integer in [0, @max]. */
static ssize_t bkc_store_uint_tunable(struct kobject *kobj, const char *buf,
				      size_t len, u64 max,
				      enum bkc_tunable which)
{
	u64 v;
	int r = bkc_parse_uint(buf, len, 0, max, &v);

	if (!r)
		r = bkc_store_tunable(kobj, which, v);
	return r ?: len;
}

static ssize_t writeback_percent_store(struct kobject *kobj,
				       struct kobj_attribute *attr,
				       const char *buf, size_t len)
{
	return bkc_store_uint_tunable(kobj, buf, len, 100,
				      BKC_TUN_WRITEBACK_PERCENT);
}

static ssize_t writeback_delay_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_backing(kobj)->wb.delay));
}

static ssize_t writeback_delay_store(struct kobject *kobj,
				     struct kobj_attribute *attr,
				     const char *buf, size_t len)
{
	return bkc_store_uint_tunable(kobj, buf, len, BKC_TUN_DELAY_MAX,
				      BKC_TUN_WRITEBACK_DELAY);
}

static ssize_t writeback_max_age_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_backing(kobj)->wb.max_age));
}

static ssize_t writeback_max_age_store(struct kobject *kobj,
				       struct kobj_attribute *attr,
				       const char *buf, size_t len)
{
	return bkc_store_uint_tunable(kobj, buf, len, BKC_TUN_MAX_AGE_MAX,
				      BKC_TUN_WRITEBACK_MAX_AGE);
}

static ssize_t writeback_running_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(to_backing(kobj)->wb.running));
}

static ssize_t writeback_running_store(struct kobject *kobj,
				       struct kobj_attribute *attr,
				       const char *buf, size_t len)
{
	struct bkc_backing *b = to_backing(kobj);
	u64 v;
	int r = bkc_parse_uint(buf, len, 0, 1, &v);

	if (r)
		return r;
	WRITE_ONCE(b->wb.running, v);
	bkc_wb_kick(b);
	return len;
}

static ssize_t writeback_rate_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	ssize_t n = bkc_emit_hsize(buf, READ_ONCE(to_backing(kobj)->wb.rate)
				   << SECTOR_SHIFT);

	/* "512.0k\n" -> "512.0k/sec\n" */
	return n - 1 + sysfs_emit_at(buf, n - 1, "/sec\n");
}

static ssize_t writeback_rate_max_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	static const char units[] = "kmgt";
	u64 v = READ_ONCE(to_backing(kobj)->wb.rate_max);
	int u = -1;

	/* exact, in the largest unit that divides it: it can be written back */
	while (v && u < 3 && !(v & 1023)) {
		v >>= 10;
		u++;
	}
	if (u < 0)
		return sysfs_emit(buf, "%llu\n", v);
	return sysfs_emit(buf, "%llu%c\n", v, units[u] - 32);
}

static ssize_t writeback_rate_max_store(struct kobject *kobj,
					struct kobj_attribute *attr,
					const char *buf, size_t len)
{
	u64 v;
	int r = bkc_parse_size(buf, len, &v);

	if (r || (v && v < BKC_TUN_RATE_MIN) || v > BKC_TUN_RATE_MAX)
		return -EINVAL;
	return bkc_store_tunable(kobj, BKC_TUN_WRITEBACK_RATE_MAX, v) ?: len;
}

static ssize_t writeback_rate_debug_show(struct kobject *kobj,
					 struct kobj_attribute *attr,
					 char *buf)
{
	struct bkc_backing *b = to_backing(kobj);
	struct bkc_ratectl *c = &b->wb.ctl;
	ssize_t n = 0;
	u64 dirty;

	/* the set stays while bkc_lock is held */
	mutex_lock(&bkc_lock);
	dirty = bkc_backing_dirty_sectors_exact(b);
	mutex_unlock(&bkc_lock);
	n += sysfs_emit_at(buf, n, "rate:\t\t%llu sectors/s\n",
			   READ_ONCE(b->wb.rate));
	n += sysfs_emit_at(buf, n, "dirty:\t\t%llu sectors\n", dirty);
	n += sysfs_emit_at(buf, n, "target:\t\t%llu sectors\n",
			   READ_ONCE(b->wb.target));
	n += sysfs_emit_at(buf, n, "proportional:\t%lld\n",
			   READ_ONCE(c->proportional));
	n += sysfs_emit_at(buf, n, "integral:\t%lld\n",
			   READ_ONCE(c->integral));
	n += sysfs_emit_at(buf, n, "written:\t%llu sectors\n",
			   READ_ONCE(b->wb.written));
	n += sysfs_emit_at(buf, n, "draining:\t%d\n", READ_ONCE(b->wb.drain));
	n += sysfs_emit_at(buf, n, "yielding:\t%d\n", READ_ONCE(b->wb.yielding));
	return n;
}

static ssize_t clear_stats_store(struct kobject *kobj,
				 struct kobj_attribute *attr,
				 const char *buf, size_t len)
{
	struct bkc_backing *b = to_backing(kobj);
	int r = bkc_parse_bool_one(buf, len);

	if (r)
		return r;
	mutex_lock(&bkc_lock);
	if (!b->dead && b->st.pc)
		bkc_statset_clear(&b->st);
	mutex_unlock(&bkc_lock);
	return len;
}

static ssize_t running_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	struct bkc_backing *b = to_backing(kobj);
	bool up;

	mutex_lock(&bkc_lock);
	up = b->disk;
	mutex_unlock(&bkc_lock);
	return sysfs_emit(buf, "%d\n", up);
}

/* Write 1: run without the missing or failed cache set (inconsistent). */
static ssize_t running_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t len)
{
	struct bkc_backing *b = to_backing(kobj);
	int r = bkc_parse_bool_one(buf, len);

	if (r)
		return r;
	mutex_lock(&bkc_lock);
	r = b->dead ? -ENODEV : bkc_backing_force_run(b);
	mutex_unlock(&bkc_lock);
	bkc_reap();
	return r ?: len;
}

static const char * const bkc_stop_policy[] = { "auto", "always" };

static ssize_t stop_when_cache_set_failed_show(struct kobject *kobj,
					       struct kobj_attribute *attr,
					       char *buf)
{
	bool always = READ_ONCE(to_backing(kobj)->stop_always);

	return sysfs_emit(buf, always ? "%s [%s]\n" : "[%s] %s\n",
			  bkc_stop_policy[0], bkc_stop_policy[1]);
}

static ssize_t stop_when_cache_set_failed_store(struct kobject *kobj,
						struct kobj_attribute *attr,
						const char *buf, size_t len)
{
	int i = sysfs_match_string(bkc_stop_policy, buf);

	if (i < 0)
		return -EINVAL;
	WRITE_ONCE(to_backing(kobj)->stop_always, i == 1);
	return len;
}

/*
 * lost_dirty: one line per range of /dev/cacheN whose dirty data was lost
 * with its failed cache set, "<byte offset> <bytes>", merged and in
 * order; a last line "incomplete" if the index could not all be read.
 * A binary attribute, so that no range list is ever cut at a page.
 */
static ssize_t bkc_lost_text(struct bkc_backing *b, char *out, size_t cap)
{
	size_t n = 0;
	u32 i;

	for (i = 0; i < b->nr_lost; i++)
		n += scnprintf(out ? out + n : NULL, out ? cap - n : 0,
			       "%llu %llu\n", b->lost[i].start,
			       b->lost[i].len);
	if (b->lost_partial)
		n += scnprintf(out ? out + n : NULL, out ? cap - n : 0,
			       "incomplete\n");
	return n;
}

static ssize_t lost_dirty_read(struct file *file, struct kobject *kobj,
			       struct bin_attribute *attr, char *buf,
			       loff_t off, size_t count)
{
	struct bkc_backing *b = to_backing(kobj);
	size_t cap;
	char *text;
	ssize_t n;

	mutex_lock(&bkc_lock);
	/* 42 bytes hold any line */
	cap = (size_t)b->nr_lost * 42 + 16;
	text = kvmalloc(cap, GFP_KERNEL);
	n = text ? bkc_lost_text(b, text, cap) : -ENOMEM;
	mutex_unlock(&bkc_lock);
	if (n >= 0) {
		if (off >= n) {
			n = 0;
		} else {
			n = min_t(size_t, count, n - off);
			memcpy(buf, text + off, n);
		}
	}
	kvfree(text);
	return n;
}

static struct bin_attribute bkc_bin_attr_lost_dirty = {
	.attr	= { .name = "lost_dirty", .mode = 0444 },
	.read	= lost_dirty_read,
};

static struct kobj_attribute bkc_attr_running = __ATTR_RW(running);
static struct kobj_attribute bkc_attr_stop_when_cache_set_failed =
	__ATTR_RW(stop_when_cache_set_failed);
static struct kobj_attribute bkc_attr_clear_stats = __ATTR_WO(clear_stats);
static struct kobj_attribute bkc_attr_attach = __ATTR_WO(attach);
static struct kobj_attribute bkc_attr_detach = __ATTR_RW(detach);
static struct kobj_attribute bkc_attr_stop = __ATTR_WO(stop);
static struct kobj_attribute bkc_attr_state = __ATTR_RO(state);
static struct kobj_attribute bkc_attr_cache_mode = __ATTR_RW(cache_mode);
static struct kobj_attribute bkc_attr_label = __ATTR_RW(label);
static struct kobj_attribute bkc_attr_backing_dev_name =
	__ATTR_RO(backing_dev_name);
static struct kobj_attribute bkc_attr_set_uuid = __ATTR_RO(set_uuid);
static struct kobj_attribute bkc_attr_backing_dev_uuid =
	__ATTR_RO(backing_dev_uuid);
static struct kobj_attribute bkc_attr_dirty_data = __ATTR_RO(dirty_data);
static struct kobj_attribute bkc_attr_sequential_cutoff =
	__ATTR_RW(sequential_cutoff);
static struct kobj_attribute bkc_attr_writeback_percent =
	__ATTR_RW(writeback_percent);
static struct kobj_attribute bkc_attr_writeback_delay =
	__ATTR_RW(writeback_delay);
static struct kobj_attribute bkc_attr_writeback_max_age =
	__ATTR_RW(writeback_max_age);
static struct kobj_attribute bkc_attr_writeback_running =
	__ATTR_RW(writeback_running);
static struct kobj_attribute bkc_attr_writeback_rate =
	__ATTR_RO(writeback_rate);
static struct kobj_attribute bkc_attr_writeback_rate_max =
	__ATTR_RW(writeback_rate_max);
static struct kobj_attribute bkc_attr_writeback_rate_debug =
	__ATTR_RO(writeback_rate_debug);

static struct attribute *bkc_backing_attrs[] = {
	&bkc_attr_attach.attr,
	&bkc_attr_detach.attr,
	&bkc_attr_stop.attr,
	&bkc_attr_state.attr,
	&bkc_attr_cache_mode.attr,
	&bkc_attr_label.attr,
	&bkc_attr_backing_dev_name.attr,
	&bkc_attr_backing_dev_uuid.attr,
	&bkc_attr_set_uuid.attr,
	&bkc_attr_dirty_data.attr,
	&bkc_attr_sequential_cutoff.attr,
	&bkc_attr_writeback_percent.attr,
	&bkc_attr_writeback_delay.attr,
	&bkc_attr_writeback_max_age.attr,
	&bkc_attr_writeback_running.attr,
	&bkc_attr_writeback_rate.attr,
	&bkc_attr_writeback_rate_max.attr,
	&bkc_attr_writeback_rate_debug.attr,
	&bkc_attr_clear_stats.attr,
	&bkc_attr_running.attr,
	&bkc_attr_stop_when_cache_set_failed.attr,
	NULL,
};

static struct bin_attribute *bkc_backing_bin_attrs[] = {
	&bkc_bin_attr_lost_dirty,
	NULL,
};

static const struct attribute_group bkc_backing_group = {
	.attrs		= bkc_backing_attrs,
	.bin_attrs	= bkc_backing_bin_attrs,
};

static const struct attribute_group *bkc_backing_groups[] = {
	&bkc_backing_group,
	NULL,
};

/* ---- stats_total/ ---- */

#define stats_to_backing(k) container_of(k, struct bkc_backing, stats_kobj)

static void bkc_backing_release(struct kobject *kobj)
{
	struct bkc_backing *b = to_backing(kobj);

	bkc_statset_exit(&b->st);
	kvfree(b->lost);
	kfree(b);
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

static ssize_t written_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return bkc_emit_hsize(buf, bkc_set_data_written(to_set(kobj)) +
			      atomic64_read(&to_set(kobj)->meta_written));
}

static ssize_t metadata_written_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	return bkc_emit_hsize(buf, atomic64_read(&to_set(kobj)->meta_written));
}

/* Shares of the cache's buckets, in percent, as bcache's priority_stats. */
static ssize_t priority_stats_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	struct bkc_set *set = to_set(kobj);
	struct bkc_alloc_shares s = {};
	u64 n;

	mutex_lock(&bkc_lock);
	if (set->core && !set->dead) {
		down_read(&set->lock);
		bkc_core_shares(set->core, &s);
		up_read(&set->lock);
	}
	mutex_unlock(&bkc_lock);
	n = s.unused + s.clean + s.dirty + s.metadata;
	if (!n)
		return -ENODEV;
	return sysfs_emit(buf, "Unused:\t\t%llu%%\nClean:\t\t%llu%%\nDirty:\t\t%llu%%\nMetadata:\t%llu%%\n",
			  div64_u64(s.unused * 100, n),
			  div64_u64(s.clean * 100, n),
			  div64_u64(s.dirty * 100, n),
			  div64_u64(s.metadata * 100, n));
}

static ssize_t set_clear_stats_store(struct kobject *kobj,
				     struct kobj_attribute *attr,
				     const char *buf, size_t len)
{
	struct bkc_set *set = to_set(kobj);
	int r = bkc_parse_bool_one(buf, len);

	if (r)
		return r;
	mutex_lock(&bkc_lock);
	if (!set->dead && set->st.pc)
		bkc_statset_clear(&set->st);
	mutex_unlock(&bkc_lock);
	return len;
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

static ssize_t cache_available_percent_show(struct kobject *kobj,
					    struct kobj_attribute *attr,
					    char *buf)
{
	struct bkc_set *set = to_set(kobj);
	u64 cap = 0, used = 0;

	mutex_lock(&bkc_lock);
	if (set->core) {
		cap = bkc_core_capacity(set->core);
		used = min_t(u64, bkc_core_live_sectors_lockless(set->core),
			     cap);
	}
	mutex_unlock(&bkc_lock);
	if (!cap)
		return -ENODEV;
	return sysfs_emit(buf, "%llu\n", div64_u64((cap - used) * 100, cap));
}

static ssize_t set_dirty_data_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	struct bkc_set *set = to_set(kobj);
	struct bkc_backing *b;
	u64 v = 0;
	bool up;

	mutex_lock(&bkc_lock);
	up = set->core;
	if (up) {
		/* and the acked writes' not in yet, consistently (request.c) */
		down_read(&set->lock);
		v = bkc_core_dirty_sectors_lockless(set->core);
		list_for_each_entry(b, &set->backings, set_node)
			v += READ_ONCE(b->acked_sectors);
		up_read(&set->lock);
	}
	mutex_unlock(&bkc_lock);
	if (!up)
		return -ENODEV;
	return bkc_emit_hsize(buf, v << SECTOR_SHIFT);
}

static ssize_t journal_delay_ms_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_set(kobj)->journal_delay_ms));
}

static ssize_t journal_delay_ms_store(struct kobject *kobj,
				      struct kobj_attribute *attr,
				      const char *buf, size_t len)
{
	struct bkc_set *set = to_set(kobj);
	u64 v;
	int r = bkc_parse_uint(buf, len, 0, 10000, &v);

	if (r)
		return r;
	WRITE_ONCE(set->journal_delay_ms, v);
	wake_up(&set->meta_wait);
	return len;
}

static ssize_t btree_cache_size_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	u64 v;

	mutex_lock(&bkc_lock);
	v = bkc_ncache_bytes(&to_set(kobj)->nc);
	mutex_unlock(&bkc_lock);
	return bkc_emit_hsize(buf, v);
}

static ssize_t trigger_gc_store(struct kobject *kobj,
				struct kobj_attribute *attr,
				const char *buf, size_t len)
{
	struct bkc_set *set = to_set(kobj);
	int r = bkc_parse_bool_one(buf, len);

	if (r)
		return r;
	mutex_lock(&bkc_lock);
	if (set->dead || !set->running)
		r = -ENODEV;
	else
		bkc_meta_kick(set, BKC_M_GC);
	mutex_unlock(&bkc_lock);
	return r ?: len;
}

static ssize_t io_errors_show(struct kobject *kobj, struct kobj_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&to_set(kobj)->io_errors));
}

static ssize_t io_error_limit_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_set(kobj)->io_error_limit));
}

static ssize_t io_error_limit_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t len)
{
	u64 v;
	int r = bkc_parse_uint(buf, len, 0, 1U << 20, &v);

	if (r)
		return r;
	WRITE_ONCE(to_set(kobj)->io_error_limit, v);
	return len;
}

static ssize_t io_error_halflife_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  READ_ONCE(to_set(kobj)->io_error_halflife));
}

static ssize_t io_error_halflife_store(struct kobject *kobj,
				       struct kobj_attribute *attr,
				       const char *buf, size_t len)
{
	u64 v;
	int r = bkc_parse_uint(buf, len, 0, 366 * 86400, &v);

	if (r)
		return r;
	WRITE_ONCE(to_set(kobj)->io_error_halflife, v);
	return len;
}

static struct kobj_attribute bkc_attr_io_errors = __ATTR_RO(io_errors);
static struct kobj_attribute bkc_attr_io_error_limit =
	__ATTR_RW(io_error_limit);
static struct kobj_attribute bkc_attr_io_error_halflife =
	__ATTR_RW(io_error_halflife);
static struct kobj_attribute bkc_attr_cache_available_percent =
	__ATTR_RO(cache_available_percent);
static struct kobj_attribute bkc_attr_set_dirty_data =
	__ATTR(dirty_data, 0444, set_dirty_data_show, NULL);
static struct kobj_attribute bkc_attr_journal_delay_ms =
	__ATTR_RW(journal_delay_ms);
static struct kobj_attribute bkc_attr_btree_cache_size =
	__ATTR_RO(btree_cache_size);
static struct kobj_attribute bkc_attr_trigger_gc = __ATTR_WO(trigger_gc);
static struct kobj_attribute bkc_attr_set_stop =
	__ATTR(stop, 0200, NULL, set_stop_store);
static struct kobj_attribute bkc_attr_set_unregister =
	__ATTR(unregister, 0200, NULL, set_unregister_store);
static struct kobj_attribute bkc_attr_written = __ATTR_RO(written);
static struct kobj_attribute bkc_attr_metadata_written =
	__ATTR_RO(metadata_written);
static struct kobj_attribute bkc_attr_priority_stats =
	__ATTR_RO(priority_stats);
static struct kobj_attribute bkc_attr_set_clear_stats =
	__ATTR(clear_stats, 0200, NULL, set_clear_stats_store);

static struct attribute *bkc_set_attrs[] = {
	&bkc_attr_set_stop.attr,
	&bkc_attr_set_unregister.attr,
	&bkc_attr_cache_available_percent.attr,
	&bkc_attr_set_dirty_data.attr,
	&bkc_attr_journal_delay_ms.attr,
	&bkc_attr_btree_cache_size.attr,
	&bkc_attr_trigger_gc.attr,
	&bkc_attr_io_errors.attr,
	&bkc_attr_io_error_limit.attr,
	&bkc_attr_io_error_halflife.attr,
	&bkc_attr_set_clear_stats.attr,
	&bkc_attr_written.attr,
	&bkc_attr_metadata_written.attr,
	&bkc_attr_priority_stats.attr,
	NULL,
};
ATTRIBUTE_GROUPS(bkc_set);

static void bkc_set_release(struct kobject *kobj)
{
	bkc_statset_exit(&to_set(kobj)->st);
	free_percpu(to_set(kobj)->data_written);
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

static ssize_t cache_replacement_policy_show(struct kobject *kobj,
					     struct kobj_attribute *attr,
					     char *buf)
{
	struct bkc_set *set = cdev_to_set(kobj);
	u32 cur = READ_ONCE(set->sb.replacement), i;
	ssize_t n = 0;

	for (i = 0; i < BKC_REPL_NR; i++)
		n += sysfs_emit_at(buf, n, i == cur ? "%s[%s]" : "%s%s",
				   i ? " " : "", bkc_replacement_name(i));
	n += sysfs_emit_at(buf, n, "\n");
	return n;
}

static ssize_t cache_replacement_policy_store(struct kobject *kobj,
					      struct kobj_attribute *attr,
					      const char *buf, size_t len)
{
	struct bkc_set *set = cdev_to_set(kobj);
	int repl = bkc_replacement_parse(buf, len), r;
	u32 old;

	if (repl < 0)
		return -EINVAL;
	mutex_lock(&bkc_lock);
	if (set->dead || !set->core) {
		r = -ENODEV;
		goto out;
	}
	old = set->sb.replacement;
	r = 0;
	if (old == (u32)repl)
		goto out;
	set->sb.replacement = repl;
	r = bkc_cache_sb_write(set);
	if (r) {
		set->sb.replacement = old;
		goto out;
	}
	bkc_set_lock(set);
	r = bkc_core_set_policy(set->core, repl);
	bkc_set_unlock(set);
out:
	mutex_unlock(&bkc_lock);
	return r ?: len;
}

static struct kobj_attribute bkc_attr_cache_replacement_policy =
	__ATTR_RW(cache_replacement_policy);
static struct kobj_attribute bkc_attr_nbuckets = __ATTR_RO(nbuckets);
static struct kobj_attribute bkc_attr_bucket_size = __ATTR_RO(bucket_size);
static struct kobj_attribute bkc_attr_block_size = __ATTR_RO(block_size);

static ssize_t dev_name_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%pg\n", cdev_to_set(kobj)->dev.bdev);
}

static struct kobj_attribute bkc_attr_dev_name = __ATTR_RO(dev_name);

static struct attribute *bkc_cdev_attrs[] = {
	&bkc_attr_dev_name.attr,
	&bkc_attr_cache_replacement_policy.attr,
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
