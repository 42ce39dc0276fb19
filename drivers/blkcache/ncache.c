// SPDX-License-Identifier: GPL-2.0
/*
 * The btree node cache.
 *
 * Nodes are found by bucket in a hash table.  The core pins the nodes it
 * uses (get/alloc ... put).  Every node in the table is on one list; a
 * get of a node in the table marks it used.  The shrinker walks the list
 * from its head and moves each node it passes to the tail: a used one
 * loses its mark (a second chance), one it may not evict (below) stays,
 * an unused evictable one is freed.  So a get or put, which every I/O
 * makes, only counts the pin and sets the mark, and never moves the node
 * on the list.  The core keeps pinned, besides the path it is working
 * on, the root and every node with unwritten changes, so an unpinned
 * clean node is not referenced by anything and may go at any time.
 *
 * get() may read a node from disk; reads are serialised by io_lock and
 * run under the tree lock's read side, which other readers share.  In
 * ->submit_bio context it never reads: it returns -EAGAIN instead; for a
 * holder of the set lock for writing it returns -EDEADLK (a node read
 * would stall all I/O of the set): such callers pin the leaves they need
 * under the read side (bkc_pins_get()), beforehand or when they meet
 * -EDEADLK, and while the lock is held for writing the shrinker evicts
 * nothing.
 *
 * Nodes come from a mempool with a reserve for the deepest insert, so
 * that memory pressure makes I/O wait, never fail.
 */
#include <linux/hash.h>
#include <linux/mempool.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "bkc.h"

struct bkc_nc_node {
	struct bkc_node		n;	/* n.priv points back here */
	struct bkc_ncache	*nc;
	struct hlist_node	hash;
	struct list_head	lru;		/* on nc->lru while hashed */
	int			pins;
	bool			used;		/* got since the shrinker passed */
	bool			hashed;
	bool			dropped;
};

#define to_ncn(np) ((struct bkc_nc_node *)(np)->priv)

static struct hlist_head *nc_bucket(struct bkc_ncache *nc, u64 bucket)
{
	return &nc->hash[hash_64(bucket, BKC_NC_HASH_BITS)];
}

static struct bkc_nc_node *nc_find(struct bkc_ncache *nc, u64 bucket)
{
	struct bkc_nc_node *x;

	hlist_for_each_entry(x, nc_bucket(nc, bucket), hash)
		if (x->n.bucket == bucket)
			return x;
	return NULL;
}

/* mempool element: a node with its buffers */
static void *nc_elem_alloc(gfp_t gfp, void *data)
{
	struct bkc_ncache *nc = data;
	struct bkc_nc_node *x;

	x = kzalloc(sizeof(*x), gfp);
	if (!x)
		return NULL;
	x->n.base = kvmalloc(nc->base_bytes, gfp);
	x->n.delta = kvmalloc(nc->delta_bytes, gfp);
	if (!x->n.base || !x->n.delta) {
		kvfree(x->n.base);
		kvfree(x->n.delta);
		kfree(x);
		return NULL;
	}
	return x;
}

static void nc_elem_free(void *elem, void *data)
{
	struct bkc_nc_node *x = elem;

	kvfree(x->n.base);
	kvfree(x->n.delta);
	kfree(x);
}

/* Never fails: under memory pressure it waits for the reserve. */
static struct bkc_nc_node *nc_alloc(struct bkc_ncache *nc)
{
	struct bkc_nc_node *x = mempool_alloc(nc->pool, GFP_NOIO);
	struct bkc_key *base = x->n.base, *delta = x->n.delta;

	memset(x, 0, sizeof(*x));
	x->n.base = base;
	x->n.delta = delta;
	x->n.priv = x;
	x->nc = nc;
	INIT_LIST_HEAD(&x->lru);
	return x;
}

static void nc_free(struct bkc_nc_node *x)
{
	mempool_free(x, x->nc->pool);
}

/* Pin @x; caller holds nc->lock. */
static void nc_pin(struct bkc_nc_node *x)
{
	x->pins++;
	x->used = true;
}

/* Put new node @x in the table and on the list; caller holds nc->lock. */
static void nc_hash(struct bkc_ncache *nc, struct bkc_nc_node *x)
{
	x->hashed = true;
	hlist_add_head(&x->hash, nc_bucket(nc, x->n.bucket));
	list_add_tail(&x->lru, &nc->lru);
	nc->nr++;
}

static int nc_get(void *ctx, const struct bkc_nptr *p, u64 lo, u64 hi,
		  struct bkc_node **out)
{
	struct bkc_set *set = ctx;
	struct bkc_ncache *nc = &set->nc;
	struct bkc_nc_node *x;
	int r;

	spin_lock(&nc->lock);
	x = nc_find(nc, p->bucket);
	if (x)
		nc_pin(x);
	spin_unlock(&nc->lock);
	if (x)
		goto found;
	/*
	 * Inside ->submit_bio every bio we submit waits on current->bio_list
	 * until we return, so a node read there would wait for ever.  The
	 * request path then retries from a worker.
	 */
	if (current->bio_list)
		return -EAGAIN;
	if (bkc_set_locked_by_me(set))
		return -EDEADLK;
	/* a failed cache device is never read again */
	if (bkc_set_failed(set))
		return -EIO;

	mutex_lock(&nc->io_lock);
	spin_lock(&nc->lock);
	x = nc_find(nc, p->bucket);
	if (x)
		nc_pin(x);
	spin_unlock(&nc->lock);
	if (x) {
		mutex_unlock(&nc->io_lock);
		goto found;
	}
	x = nc_alloc(nc);
	r = bkc_meta_io(set, REQ_OP_READ | REQ_META,
			bkc_bucket_sector(set, p->bucket, 0), nc->io_buf,
			nc->node_bytes);
	if (!r)
		r = bkc_core_node_decode(set->core, &x->n, nc->io_buf, p, lo,
					 hi);
	if (r) {
		mutex_unlock(&nc->io_lock);
		/* at registration, the replay's one line says it (meta.c) */
		if (READ_ONCE(set->running))
			bkc_err(set->dev.bdev, "btree node in bucket %llu: %s (%d)",
				p->bucket, r == -EIO ? "read error" : "invalid",
				r);
		nc_free(x);
		return r;
	}
	spin_lock(&nc->lock);
	x->pins = 1;
	nc_hash(nc, x);
	nc->reads++;
	spin_unlock(&nc->lock);
	mutex_unlock(&nc->io_lock);
found:
	*out = &x->n;
	return 0;
}

static void nc_put(void *ctx, struct bkc_node *n)
{
	struct bkc_set *set = ctx;
	struct bkc_ncache *nc = &set->nc;
	struct bkc_nc_node *x = to_ncn(n);
	bool free;

	spin_lock(&nc->lock);
	free = !--x->pins && x->dropped;
	spin_unlock(&nc->lock);
	if (free)
		nc_free(x);
}

static struct bkc_node *nc_new(void *ctx, u64 bucket)
{
	struct bkc_set *set = ctx;
	struct bkc_ncache *nc = &set->nc;
	struct bkc_nc_node *x = nc_alloc(nc);

	x->n.bucket = bucket;
	x->pins = 1;
	spin_lock(&nc->lock);
	nc_hash(nc, x);
	spin_unlock(&nc->lock);
	return &x->n;
}

/* Unhash and, once unpinned, free; caller holds nc->lock. */
static bool nc_unhash(struct bkc_ncache *nc, struct bkc_nc_node *x)
{
	if (x->hashed) {
		hlist_del_init(&x->hash);
		list_del_init(&x->lru);
		x->hashed = false;
		nc->nr--;
	}
	x->dropped = true;
	return !x->pins;
}

static void nc_drop(void *ctx, struct bkc_node *n)
{
	struct bkc_set *set = ctx;
	struct bkc_ncache *nc = &set->nc;
	struct bkc_nc_node *x = to_ncn(n);
	bool free;

	spin_lock(&nc->lock);
	free = nc_unhash(nc, x);
	spin_unlock(&nc->lock);
	if (free)
		nc_free(x);
}

const struct bkc_btree_ops bkc_ncache_ops = {
	.get	= nc_get,
	.put	= nc_put,
	.alloc	= nc_new,
	.drop	= nc_drop,
};

/*
 * Only clean leaves without dirty keys are ever evicted.  Interior nodes
 * (few) and leaves holding dirty keys stay, so that the index of dirty
 * data can be walked without reading the cache device: writeback finds
 * it quickly, and a failed set can still tell which ranges it lost
 * (fail.c).  Caller holds nc->lock; an unpinned node's keys do not change
 * (changes pin it), so reading them here is safe.
 */
static bool nc_evictable(struct bkc_nc_node *x)
{
	return !x->pins && !x->n.level &&
		!(READ_ONCE(x->n.flags) & (BKC_NODE_DIRTY | BKC_NODE_NEW |
					   BKC_NODE_INFLIGHT |
					   BKC_NODE_REWRITE)) &&
		!bkc_core_node_has_dirty(&x->n);
}

static unsigned long nc_count(struct shrinker *s, struct shrink_control *sc)
{
	struct bkc_ncache *nc = bkc_shrinker_priv(s);

	/*
	 * Without the lock: a count that is stale by a node or two only
	 * sizes the next scan.  A bound: pinned, interior and dirty nodes
	 * are not freeable.
	 */
	return READ_ONCE(nc->nr);
}

static unsigned long nc_scan(struct shrinker *s, struct shrink_control *sc)
{
	struct bkc_ncache *nc = bkc_shrinker_priv(s);
	struct bkc_nc_node *x, *tmp;
	unsigned long freed = 0, scanned = 0, aged = 0;
	LIST_HEAD(victims);

	/*
	 * Not while the set lock is held for writing: its holder relies on
	 * the nodes it pinned beforehand and on everything it found in
	 * memory staying there (see the top of this file).
	 */
	if (!down_read_trylock(&nc->set->lock))
		return SHRINK_STOP;
	spin_lock(&nc->lock);
	list_for_each_entry_safe(x, tmp, &nc->lru, lru) {
		if (scanned++ >= sc->nr_to_scan)
			break;
		/*
		 * Each node passed goes to the tail, where this walk may meet
		 * it again if its budget lasts: one used since the last pass
		 * loses its mark, one that may not go stays in memory (kept
		 * at the head, the root and the interior nodes, read first,
		 * would end every walk before it reached a leaf).  Only
		 * unpinned leaves that aged count as progress: the root and
		 * the interior nodes are used by every I/O.
		 */
		if (x->used) {
			x->used = false;
			list_move_tail(&x->lru, &nc->lru);
			if (!x->pins && !x->n.level)
				aged++;
			continue;
		}
		if (!nc_evictable(x)) {
			list_move_tail(&x->lru, &nc->lru);
			continue;
		}
		nc_unhash(nc, x);
		list_add(&x->lru, &victims);
		freed++;
	}
	nc->evictions += freed;
	spin_unlock(&nc->lock);
	up_read(&nc->set->lock);
	list_for_each_entry_safe(x, tmp, &victims, lru)
		nc_free(x);
	/* nodes that only aged: the next call may free them */
	return (freed || aged) ? freed : SHRINK_STOP;
}

int bkc_ncache_init(struct bkc_ncache *nc, struct bkc_set *set,
		    u32 node_bytes)
{
	u32 i;

	nc->set = set;
	spin_lock_init(&nc->lock);
	mutex_init(&nc->io_lock);
	INIT_LIST_HEAD(&nc->lru);
	nc->node_bytes = node_bytes;
	nc->hash = kvcalloc(1 << BKC_NC_HASH_BITS, sizeof(*nc->hash),
			    GFP_KERNEL);
	nc->io_buf = kvmalloc(node_bytes, GFP_KERNEL);
	if (!nc->hash || !nc->io_buf)
		return -ENOMEM;
	for (i = 0; i < 1 << BKC_NC_HASH_BITS; i++)
		INIT_HLIST_HEAD(&nc->hash[i]);
	return 0;
}

/* Enough nodes for the deepest insert with splits at every level. */
#define BKC_NC_RESERVE		(2 * BKC_BTREE_MAX_DEPTH + 4)

int bkc_ncache_set_sizes(struct bkc_ncache *nc, u32 base, u32 delta)
{
	nc->base_bytes = base;
	nc->delta_bytes = delta;
	nc->pool = mempool_create(BKC_NC_RESERVE, nc_elem_alloc, nc_elem_free,
				  nc);
	return nc->pool ? 0 : -ENOMEM;
}

/*
 * Pin the leaves covering [from, to) of the set's tree (as many as fit in
 * @p), under the set lock's read side, so that a change of the range made
 * with the lock held for writing finds them in memory.  Returns 0 (also
 * when not all fitted: the change then gets -EDEADLK and pins again), or
 * the error of a node read.
 */
int bkc_pins_get(struct bkc_set *set, struct bkc_pins *p, u64 from, u64 to)
{
	int r;

	p->end = from;
	if (p->nr == BKC_PINS_MAX)
		return 0;
	down_read(&set->lock);
	r = bkc_core_pin_range(set->core, from, to, p->n + p->nr,
			       BKC_PINS_MAX - p->nr, &p->end);
	up_read(&set->lock);
	if (r == -E2BIG) {
		p->nr = BKC_PINS_MAX;
		return 0;
	}
	if (r < 0)
		return r;
	p->nr += r;
	return 0;
}

/*
 * Where a change of [from, to) must end for the leaves the last
 * bkc_pins_get() pinned to cover it: @to, or short of it (beyond @from)
 * where they did not all fit in @p.
 */
u64 bkc_pins_reach(const struct bkc_pins *p, u64 from, u64 to)
{
	return p->end > from && p->end < to ? p->end : to;
}

/* Drop the pins of @p.  Needs no lock. */
void bkc_pins_put(struct bkc_set *set, struct bkc_pins *p)
{
	bkc_core_unpin(set->core, p->n, p->nr);
	p->nr = 0;
}

int bkc_ncache_start_shrinker(struct bkc_ncache *nc)
{
	nc->shrinker = bkc_shrinker_create(nc_count, nc_scan, nc,
					   "blkcache-btree");
	return nc->shrinker ? 0 : -ENOMEM;
}

/*
 * Free every node.  The tree is gone: pins it still held (dirty nodes
 * after an I/O error) no longer matter.  Dropped nodes are never hashed
 * and were freed at their last put.
 */
void bkc_ncache_exit(struct bkc_ncache *nc)
{
	struct bkc_nc_node *x;
	struct hlist_node *tmp;
	u32 i;

	bkc_shrinker_destroy(nc->shrinker);
	nc->shrinker = NULL;
	if (nc->hash && nc->pool) {
		for (i = 0; i < 1 << BKC_NC_HASH_BITS; i++) {
			hlist_for_each_entry_safe(x, tmp, &nc->hash[i], hash) {
				hlist_del(&x->hash);
				nc_free(x);
			}
		}
	}
	INIT_LIST_HEAD(&nc->lru);
	mempool_destroy(nc->pool);
	nc->pool = NULL;
	kvfree(nc->hash);
	kvfree(nc->io_buf);
	nc->hash = NULL;
	nc->io_buf = NULL;
}

u64 bkc_ncache_bytes(struct bkc_ncache *nc)
{
	return (u64)READ_ONCE(nc->nr) *
		(nc->base_bytes + nc->delta_bytes + sizeof(struct bkc_nc_node));
}
