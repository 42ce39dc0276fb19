/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Request counters of a backing device or a cache set, and their sysfs
 * directories stats_total, stats_five_minute, stats_hour and stats_day
 * (stats.c).  The window maths is the portable core's (core/statwin.h).
 */
#ifndef _BKC_STATS_H
#define _BKC_STATS_H

#include <linux/kobject.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>

#include "statwin.h"

enum {
	BKC_WIN_FIVE_MINUTE,
	BKC_WIN_HOUR,
	BKC_WIN_DAY,
	BKC_WIN_NR,
};

/* How often the windows take the totals in. */
#define BKC_STATS_FOLD_MS	5000

struct bkc_stat_cpu {
	u64	c[BKC_STAT_NR];
};

struct bkc_statset;

/* One directory: the totals (win < 0) or a window. */
struct bkc_statdir {
	struct kobject		kobj;
	struct bkc_statset	*ss;
	int			win;
	bool			added;
};

struct bkc_statset {
	struct bkc_stat_cpu __percpu *pc;	/* the totals, per cpu */
	spinlock_t		lock;		/* the windows */
	struct bkc_statwin	win[BKC_WIN_NR];
	struct bkc_statdir	dir[1 + BKC_WIN_NR];
};

/* Count @n of @stat; any context. */
static inline void bkc_stat_add(struct bkc_statset *ss, enum bkc_stat stat,
				u64 n)
{
	this_cpu_add(ss->pc->c[stat], n);
}

int bkc_statset_init(struct bkc_statset *ss);
int bkc_statset_add(struct bkc_statset *ss, struct kobject *parent);
void bkc_statset_del(struct bkc_statset *ss);
void bkc_statset_exit(struct bkc_statset *ss);
void bkc_statset_clear(struct bkc_statset *ss);
void bkc_statset_fold(struct bkc_statset *ss);
void bkc_statset_read(struct bkc_statset *ss, int win, u64 *out);

void bkc_stats_start(void);
void bkc_stats_stop(void);

#endif /* _BKC_STATS_H */
