/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The btree node cache: the kernel side of struct bkc_btree_ops.
 */
#ifndef _BKC_NCACHE_H
#define _BKC_NCACHE_H

#include <linux/list.h>
#include <linux/mempool.h>
#include <linux/mutex.h>
#include <linux/shrinker.h>
#include <linux/spinlock.h>

#include "core/btree.h"

struct bkc_set;

#define BKC_NC_HASH_BITS	12

struct bkc_ncache {
	struct bkc_set		*set;
	spinlock_t		lock;		/* hash, lru, pins, counts */
	struct mutex		io_lock;	/* one node read at a time */
	struct hlist_head	*hash;
	struct list_head	lru;		/* hashed nodes, oldest first */
	unsigned long		nr;		/* nodes in memory, on lru */
	u32			node_bytes;
	u32			base_bytes;
	u32			delta_bytes;
	void			*io_buf;	/* node_bytes, under io_lock */
	mempool_t		*pool;		/* struct bkc_nc_node */
	struct shrinker		*shrinker;
	u64			reads;
	u64			evictions;
};

extern const struct bkc_btree_ops bkc_ncache_ops;

/* Leaves pinned ahead of a change made with the set lock held for writing. */
#define BKC_PINS_MAX		16

struct bkc_pins {
	struct bkc_node	*n[BKC_PINS_MAX];
	u32		nr;
	u64		end;	/* the last get pinned the leaves up to here */
};

int bkc_pins_get(struct bkc_set *set, struct bkc_pins *p, u64 from, u64 to);
u64 bkc_pins_reach(const struct bkc_pins *p, u64 from, u64 to);
void bkc_pins_put(struct bkc_set *set, struct bkc_pins *p);

int bkc_ncache_init(struct bkc_ncache *nc, struct bkc_set *set,
		    u32 node_bytes);
/* Buffers are sized from the tree; call once the core is initialised. */
int bkc_ncache_set_sizes(struct bkc_ncache *nc, u32 base, u32 delta);
int bkc_ncache_start_shrinker(struct bkc_ncache *nc);
void bkc_ncache_exit(struct bkc_ncache *nc);
u64 bkc_ncache_bytes(struct bkc_ncache *nc);

#endif /* _BKC_NCACHE_H */
