// SPDX-License-Identifier: GPL-2.0
/*
 * Request counters and their sysfs directories, per backing device and
 * per cache set: stats_total (since registration or clear_stats) and the
 * decaying windows stats_five_minute, stats_hour and stats_day, as bcache
 * has them.  Counting is a per-cpu add on the I/O path; a delayed work
 * folds the totals into the windows every BKC_STATS_FOLD_MS.
 */
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include "bkc.h"

static const u64 bkc_win_ms[BKC_WIN_NR] = {
	[BKC_WIN_FIVE_MINUTE]	= 5 * 60 * 1000ULL,
	[BKC_WIN_HOUR]		= 60 * 60 * 1000ULL,
	[BKC_WIN_DAY]		= 24 * 60 * 60 * 1000ULL,
};

static const char * const bkc_win_dir[1 + BKC_WIN_NR] = {
	"stats_total", "stats_five_minute", "stats_hour", "stats_day",
};

static u64 bkc_stats_now(void)
{
	return jiffies64_to_msecs(get_jiffies_64());
}

/*
 * The totals, summed over the cpus.  Lockless: each per-cpu counter only
 * grows (clear_stats aside) and is read whole with READ_ONCE; a sum taken
 * while others count is off by the requests in flight, as any counter.
 */
static void bkc_statset_totals(struct bkc_statset *ss, u64 *tot)
{
	int cpu, i;

	memset(tot, 0, BKC_STAT_NR * sizeof(*tot));
	for_each_possible_cpu(cpu) {
		struct bkc_stat_cpu *s = per_cpu_ptr(ss->pc, cpu);

		for (i = 0; i < BKC_STAT_NR; i++)
			tot[i] += READ_ONCE(s->c[i]);
	}
}

void bkc_statset_read(struct bkc_statset *ss, int win, u64 *out)
{
	u64 tot[BKC_STAT_NR];

	bkc_statset_totals(ss, tot);
	if (win < 0) {
		memcpy(out, tot, sizeof(tot));
		return;
	}
	spin_lock(&ss->lock);
	bkc_statwin_read(&ss->win[win], tot, bkc_stats_now(), out);
	spin_unlock(&ss->lock);
}

void bkc_statset_fold(struct bkc_statset *ss)
{
	u64 tot[BKC_STAT_NR], now = bkc_stats_now();
	int w;

	bkc_statset_totals(ss, tot);
	spin_lock(&ss->lock);
	for (w = 0; w < BKC_WIN_NR; w++)
		bkc_statwin_fold(&ss->win[w], tot, now);
	spin_unlock(&ss->lock);
}

/* Zero the totals and empty the windows. */
void bkc_statset_clear(struct bkc_statset *ss)
{
	u64 zero[BKC_STAT_NR] = {}, now = bkc_stats_now();
	int cpu, w;

	spin_lock(&ss->lock);
	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(ss->pc, cpu), 0, sizeof(struct bkc_stat_cpu));
	for (w = 0; w < BKC_WIN_NR; w++)
		bkc_statwin_init(&ss->win[w], bkc_win_ms[w], zero, now);
	spin_unlock(&ss->lock);
}

/* ---- sysfs ---- */

#define to_statdir(k) container_of(k, struct bkc_statdir, kobj)

static void bkc_statdir_read(struct kobject *kobj, u64 *out)
{
	struct bkc_statdir *d = to_statdir(kobj);

	bkc_statset_read(d->ss, d->win, out);
}

#define BKC_STAT_ATTR(name, stat)					\
static ssize_t name##_show(struct kobject *kobj,			\
			   struct kobj_attribute *attr, char *buf)	\
{									\
	u64 v[BKC_STAT_NR];						\
									\
	bkc_statdir_read(kobj, v);					\
	return sysfs_emit(buf, "%llu\n", v[stat]);			\
}									\
static struct kobj_attribute bkc_attr_##name = __ATTR_RO(name)

BKC_STAT_ATTR(cache_hits, BKC_STAT_HITS);
BKC_STAT_ATTR(cache_misses, BKC_STAT_MISSES);
BKC_STAT_ATTR(cache_bypass_hits, BKC_STAT_BYPASS_HITS);
BKC_STAT_ATTR(cache_bypass_misses, BKC_STAT_BYPASS_MISSES);
BKC_STAT_ATTR(cache_miss_collisions, BKC_STAT_MISS_COLLISIONS);
BKC_STAT_ATTR(cache_write_hits, BKC_STAT_WRITE_HITS);
BKC_STAT_ATTR(cache_write_misses, BKC_STAT_WRITE_MISSES);
BKC_STAT_ATTR(promotions, BKC_STAT_PROMOTIONS);
BKC_STAT_ATTR(readarounds, BKC_STAT_READAROUNDS);
BKC_STAT_ATTR(cache_overwrites, BKC_STAT_OVERWRITES);

static ssize_t cache_hit_ratio_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	u64 v[BKC_STAT_NR];

	bkc_statdir_read(kobj, v);
	return sysfs_emit(buf, "%u\n",
			  bkc_stat_ratio(v[BKC_STAT_HITS], v[BKC_STAT_MISSES]));
}

static ssize_t bypassed_show(struct kobject *kobj,
			     struct kobj_attribute *attr, char *buf)
{
	u64 v[BKC_STAT_NR];

	bkc_statdir_read(kobj, v);
	return bkc_emit_hsize(buf, v[BKC_STAT_BYPASSED] << SECTOR_SHIFT);
}

static struct kobj_attribute bkc_attr_cache_hit_ratio =
	__ATTR_RO(cache_hit_ratio);
static struct kobj_attribute bkc_attr_bypassed = __ATTR_RO(bypassed);

static struct attribute *bkc_statdir_attrs[] = {
	&bkc_attr_cache_hits.attr,
	&bkc_attr_cache_misses.attr,
	&bkc_attr_cache_hit_ratio.attr,
	&bkc_attr_cache_bypass_hits.attr,
	&bkc_attr_cache_bypass_misses.attr,
	&bkc_attr_cache_miss_collisions.attr,
	&bkc_attr_bypassed.attr,
	&bkc_attr_cache_write_hits.attr,
	&bkc_attr_cache_write_misses.attr,
	&bkc_attr_promotions.attr,
	&bkc_attr_readarounds.attr,
	&bkc_attr_cache_overwrites.attr,
	NULL,
};
ATTRIBUTE_GROUPS(bkc_statdir);

/* Embedded in the backing device or set, freed with it. */
static void bkc_statdir_release(struct kobject *kobj)
{
}

static const struct kobj_type bkc_statdir_ktype = {
	.release	= bkc_statdir_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= bkc_statdir_groups,
};

/* The counters, empty; no directories yet.  -ENOMEM. */
int bkc_statset_init(struct bkc_statset *ss)
{
	u64 zero[BKC_STAT_NR] = {}, now = bkc_stats_now();
	int i;

	spin_lock_init(&ss->lock);
	for (i = 0; i < BKC_WIN_NR; i++)
		bkc_statwin_init(&ss->win[i], bkc_win_ms[i], zero, now);
	for (i = 0; i <= BKC_WIN_NR; i++) {
		kobject_init(&ss->dir[i].kobj, &bkc_statdir_ktype);
		ss->dir[i].ss = ss;
		ss->dir[i].win = i - 1;
	}
	ss->pc = alloc_percpu(struct bkc_stat_cpu);
	return ss->pc ? 0 : -ENOMEM;
}

/* The four directories under @parent. */
int bkc_statset_add(struct bkc_statset *ss, struct kobject *parent)
{
	int i, r;

	for (i = 0; i <= BKC_WIN_NR; i++) {
		r = kobject_add(&ss->dir[i].kobj, parent, "%s", bkc_win_dir[i]);
		if (r)
			return r;
		ss->dir[i].added = true;
	}
	return 0;
}

/* Remove the directories.  Idempotent; without bkc_lock (kernfs drains). */
void bkc_statset_del(struct bkc_statset *ss)
{
	int i;

	for (i = 0; i <= BKC_WIN_NR; i++) {
		if (ss->dir[i].added)
			kobject_del(&ss->dir[i].kobj);
		ss->dir[i].added = false;
		if (ss->dir[i].ss) {
			kobject_put(&ss->dir[i].kobj);
			ss->dir[i].ss = NULL;
		}
	}
}

/* Free the counters (the owner's release).  Idempotent. */
void bkc_statset_exit(struct bkc_statset *ss)
{
	free_percpu(ss->pc);
	ss->pc = NULL;
}

/* ---- folding ---- */

static void bkc_stats_fold_work(struct work_struct *work);
static DECLARE_DELAYED_WORK(bkc_stats_dwork, bkc_stats_fold_work);

static void bkc_stats_fold_work(struct work_struct *work)
{
	struct bkc_backing *b;
	struct bkc_set *set;

	mutex_lock(&bkc_lock);
	list_for_each_entry(b, &bkc_backings, list)
		if (b->st.pc)
			bkc_statset_fold(&b->st);
	list_for_each_entry(set, &bkc_sets, list)
		if (set->st.pc)
			bkc_statset_fold(&set->st);
	mutex_unlock(&bkc_lock);
	queue_delayed_work(system_power_efficient_wq, &bkc_stats_dwork,
			   msecs_to_jiffies(BKC_STATS_FOLD_MS));
}

void bkc_stats_start(void)
{
	queue_delayed_work(system_power_efficient_wq, &bkc_stats_dwork,
			   msecs_to_jiffies(BKC_STATS_FOLD_MS));
}

void bkc_stats_stop(void)
{
	cancel_delayed_work_sync(&bkc_stats_dwork);
}
