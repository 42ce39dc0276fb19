/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The extent index: a B+tree keyed by position (backing device, LBA).
 *
 * Nodes live one per bucket and are loaded on demand through the caller's
 * node cache (struct bkc_btree_ops); the core never holds more than the
 * nodes of one root-to-leaf path pinned, plus the root, plus dirty nodes
 * (which the cache must not evict).  Leaf nodes hold a sorted base array
 * and a small sorted delta of changes not yet written; lookups overlay the
 * two.  Interior nodes hold their pivots in the base array and log changes
 * in the delta.  Writing a node appends the delta as a new bset to the
 * node's bucket; when that does not fit the node is rewritten whole into a
 * new bucket (copy on write) and its parent is updated.
 *
 * No locks: the caller serialises every call that modifies the tree
 * (insert, flush, coalesce, GC) against every other call.  Lookups and
 * iteration modify nothing shared and may run concurrently with each
 * other.
 */
#ifndef _BKC_BTREE_H
#define _BKC_BTREE_H

#include "bset.h"

struct bkc_alloc;

#define BKC_BTREE_MAX_DEPTH	8
#define BKC_NODE_MAX_BYTES	(256U << 10)
#define BKC_NODE_MIN_BYTES	1024U

/* Where a node lives. */
struct bkc_nptr {
	u64	bucket;
	u64	seq;	/* node_seq; from interior keys only the low 32 bits */
	u8	gen;
	u8	level;
};

enum {
	BKC_NODE_DIRTY		= 1 << 0,	/* has changes not on disk */
	BKC_NODE_NEW		= 1 << 1,	/* never written */
	BKC_NODE_REWRITE	= 1 << 2,	/* next write must be whole */
	BKC_NODE_INFLIGHT	= 1 << 3,	/* a write is being done */
	BKC_NODE_DEAD		= 1 << 4,	/* replaced; drop when unpinned */
};

/**
 * struct bkc_node - one btree node in memory
 *
 * Allocated by the caller's node cache (ops->alloc), which sets @base and
 * @delta to buffers of bkc_btree_base_bytes() and bkc_btree_delta_bytes()
 * and may use @priv; the core owns every other field.
 */
struct bkc_node {
	struct bkc_key	*base;
	struct bkc_key	*delta;
	void		*priv;

	u64		bucket;
	u64		seq;
	u64		lo;		/* covers positions [lo, hi) */
	u64		hi;
	u64		pin_min;	/* journal seqs of unwritten changes */
	u64		pin_max;	/* (0: none) */
	u64		wpin;		/* pin of the write in flight */
	u64		journal_seq;	/* newest journal seq in the node */
	struct bkc_node	*dnext;		/* dirty list of the node's level */
	struct bkc_node	*dprev;
	u32		nbase;
	u32		ndelta;
	u32		written;	/* bytes of the bucket in use */
	u32		last_csum;	/* checksum of the last bset written */
	u16		nbsets;
	u8		gen;
	u8		level;
	u8		flags;
};

/*
 * The node cache, supplied by the caller.  In the kernel these may sleep
 * (get() reads the node from disk); they never call back into the tree.
 */
struct bkc_btree_ops {
	/*
	 * Return the node @p pinned.  On a cache miss: allocate it, read
	 * node_bytes from the start of bucket p->bucket and decode it with
	 * bkc_btree_node_decode(t, n, buf, p, lo, hi).  Returns 0 or -errno.
	 */
	int (*get)(void *ctx, const struct bkc_nptr *p, u64 lo, u64 hi,
		   struct bkc_node **out);
	/* Unpin a node returned by get() or alloc(). */
	void (*put)(void *ctx, struct bkc_node *n);
	/*
	 * Return a new pinned node whose base and delta buffers are set,
	 * findable by get() under @bucket once the core has filled it in.
	 * NULL if out of memory.
	 */
	struct bkc_node *(*alloc)(void *ctx, u64 bucket);
	/* @n was replaced: forget it, free it once unpinned. */
	void (*drop)(void *ctx, struct bkc_node *n);
};

struct bkc_btree_stats {
	u64	inserts;
	u64	overwrites;	/* pieces of cached keys inserts replaced */
	u64	splits;
	u64	merges;
	u64	cows;
	u64	appends;
	u64	nodes_written;
	u64	bytes_written;
};

struct bkc_btree {
	const struct bkc_btree_ops *ops;
	void		*ctx;
	struct bkc_alloc *alloc;	/* gens, accounting, node buckets */
	struct bkc_geom	geom;

	u32		node_bytes;
	u32		max_keys;	/* keys one node can hold */
	u32		delta_keys;	/* capacity of the delta */
	u32		split_keys;	/* split above this */
	u32		merge_keys;	/* siblings merge if together below */

	struct bkc_node	*root;		/* pinned */
	struct bkc_nptr	disk_root;	/* root as last written */
	u64		disk_root_ver;	/* bumped when disk_root changes */
	u64		root_pin;	/* pins of the root until journalled */
	u64		root_pin_ver;
	u64		committed_ver;	/* newest disk_root_ver journalled */
	u64		node_seq;	/* next node_seq */
	u64		open_seq;	/* journal entry now being filled */
	bool		no_account;	/* replay: do not update counts */
	/*
	 * Replay of a journal not closed cleanly: a node whose last bset is
	 * torn (a write cut by the crash; the journal still has its keys)
	 * is taken without it and rewritten.  Otherwise such a node is
	 * damaged and refused.
	 */
	bool		lenient;
	u64		bad_bucket;	/* of the last node that failed to load */

	struct bkc_key	*scratch;	/* max_keys + 2 * delta_keys */
	struct bkc_node	*dirty[BKC_BTREE_MAX_DEPTH];
	u32		nr_dirty[BKC_BTREE_MAX_DEPTH];
	u32		nr_new[BKC_BTREE_MAX_DEPTH];
	u32		nr_inflight[BKC_BTREE_MAX_DEPTH];
	u64		nr_freeing;	/* old node buckets not yet released */
	struct bkc_btree_stats stats;
};

/* Geometry: the caller's node cache sizes its buffers from these. */
u32 bkc_btree_base_bytes(const struct bkc_btree *t);
u32 bkc_btree_delta_bytes(const struct bkc_btree *t);

int bkc_btree_init(struct bkc_btree *t, const struct bkc_geom *g,
		   u32 node_bytes, const struct bkc_btree_ops *ops, void *ctx,
		   struct bkc_alloc *alloc);
void bkc_btree_exit(struct bkc_btree *t);
/* A new, empty tree: one leaf root in a fresh bucket. */
int bkc_btree_create(struct bkc_btree *t);
/* Open an existing tree at @root (from the journal). */
int bkc_btree_open(struct bkc_btree *t, const struct bkc_nptr *root);
/* Decode a node image read by ops->get() into @n. */
int bkc_btree_node_decode(struct bkc_btree *t, struct bkc_node *n,
			  const void *buf, const struct bkc_nptr *p,
			  u64 lo, u64 hi);
static inline u32 bkc_btree_depth(const struct bkc_btree *t)
{
	return t->root->level + 1u;
}

/*
 * Insert a leaf key (or a hole) whose change is recorded in journal entry
 * @jseq (0: not journalled, e.g. GC dropping stale keys).  Existing keys
 * it overlaps are trimmed, split or replaced.  Returns 0 or -errno; on
 * -ENOSPC (no bucket for a node split) part of the key may be applied;
 * when a node cannot be had (ops->get fails), nothing is.
 */
int bkc_btree_insert(struct bkc_btree *t, const struct bkc_key *k, u64 jseq);

/*
 * Pin the leaves covering positions [from, to) (at most @max, stored in
 * @out) until bkc_btree_unpin(), so that a later change of that range
 * finds them in the caller's node cache.  Like a lookup, it may run
 * concurrently with other lookups.  Returns how many were pinned, -E2BIG
 * (with @max pinned) if more leaves cover the range, or -errno (nothing
 * pinned).  *@reached (if not NULL) is where the pinned leaves end: @to,
 * or with -E2BIG the end of the last one (beyond @from if @max > 0).
 */
int bkc_btree_pin_range(struct bkc_btree *t, u64 from, u64 to,
			struct bkc_node **out, u32 max, u64 *reached);
void bkc_btree_unpin(struct bkc_btree *t, struct bkc_node **nodes, u32 n);

/* Buckets an insert may need for node splits right now. */
u32 bkc_btree_insert_reserve(const struct bkc_btree *t);

/*
 * Range lookup over [lba, lba + len) of @dev.  @fn is called in LBA order
 * for every hit (@k clipped to the hit, never stale) and every miss (@k
 * NULL), misses merged; a non-zero return stops the walk and is returned.
 */
typedef int (*bkc_lookup_fn)(void *arg, const struct bkc_key *k,
			     u64 pos, u32 len);
int bkc_btree_lookup(struct bkc_btree *t, u32 dev, u64 lba, u32 len,
		     bkc_lookup_fn fn, void *arg);

/*
 * Is [lba, lba + len) of @dev one live key's?  1 with that key, whole, in
 * *@out; 0 if not (a miss, a stale key, or pieces of several keys);
 * -errno as bkc_btree_lookup().  One descent and two key searches: what
 * a range walk answers too, for less (a write's in-place probe).
 */
int bkc_btree_find(struct bkc_btree *t, u32 dev, u64 lba, u32 len,
		   struct bkc_key *out);

/*
 * Iterate resolved keys with positions in [from, to) in order, starting
 * from @from (keys that begin before @from are clipped).  Stale keys are
 * skipped unless @stale is set.  @fn returns non-zero to stop.
 */
typedef int (*bkc_iter_fn)(void *arg, const struct bkc_key *k);
int bkc_btree_iter(struct bkc_btree *t, u64 from, u64 to, bool stale,
		   bkc_iter_fn fn, void *arg);

/*
 * Up to @max dirty, non-stale keys of @dev from @lba on, in LBA order.
 * Returns how many were stored in @out, or -errno.
 */
int bkc_btree_next_dirty(struct bkc_btree *t, u32 dev, u64 lba,
			 struct bkc_key *out, u32 max);

/*
 * Compare-and-set helper for writeback and GC moves: store in @out (at
 * most @max) the pieces of [k->pos, end of @k) that still map to the same
 * data as @k (same bucket, gen and offsets) and, if @dirty_only, are still
 * dirty.  The caller inserts the changed copies.  Returns how many, -E2BIG
 * if more than @max (the first @max are stored), or -errno.
 */
int bkc_btree_match(struct bkc_btree *t, const struct bkc_key *k,
		    bool dirty_only, struct bkc_key *out, u32 max);

/* Is @k stale (its bucket's generation moved on)? */
bool bkc_btree_key_stale(const struct bkc_btree *t, const struct bkc_key *k);

/*
 * Flushing dirty nodes.  bkc_btree_write_prepare() picks a dirty node that
 * may be written now and encodes what must be written into @w->buf (a
 * buffer of node_bytes): a bset appended at @w->offset of bucket
 * @w->bucket, or a whole new node at offset 0 of a new bucket.  The caller
 * writes it (REQ_FUA) and calls bkc_btree_write_done().  The tree may be
 * changed in between; several writes may be in flight.
 *
 * Order rules the core enforces: a node is picked only if its unwritten
 * changes are in journal entries up to @durable_seq, and a parent only once
 * no child write is pending.  Returns 1 with @w filled, 0 if nothing is
 * ready (or nothing dirty at or below @max_pin), -EAGAIN if dirty nodes
 * wait for the journal or for writes in flight, -ENOSPC if no bucket.  With
 * @max_pin, leaves pinned only after it, or not at all, are neither
 * written nor waited for.
 */
struct bkc_node_write {
	struct bkc_node	*node;
	void		*buf;
	u64		bucket;
	u32		offset;
	u32		bytes;
	u64		pin;		/* journal pin carried by this write */
	u8		level;
	bool		cow;
};

int bkc_btree_write_prepare(struct bkc_btree *t, u64 durable_seq,
			    u64 max_pin, struct bkc_node_write *w);
void bkc_btree_write_done(struct bkc_btree *t, struct bkc_node_write *w);

/* Oldest journal seq the tree still needs, or 0 if none. */
u64 bkc_btree_pin(const struct bkc_btree *t);
/* Any dirty or in-flight nodes? */
bool bkc_btree_dirty(const struct bkc_btree *t);
/*
 * The journal entry about to be written will carry disk_root version
 * @ver; called once that entry is durable.
 */
void bkc_btree_root_committed(struct bkc_btree *t, u64 ver);
/*
 * Old node buckets can be handed back to the allocator once every parent
 * that pointed at them has been written and the root is journalled.
 */
bool bkc_btree_can_release(const struct bkc_btree *t);

/*
 * Merge the node at @level covering @pos with its right sibling (the left
 * one for a last child) if both are small, or if either is empty (a leaf)
 * or has a single child (an interior node) and the result fits.  Returns 1
 * if merged, 0 if not, -errno.
 */
int bkc_btree_coalesce(struct bkc_btree *t, u64 pos, u8 level);

/* Walk every node (for GC and checks); @fn sees each node pinned. */
typedef int (*bkc_node_fn)(void *arg, struct bkc_node *n);
int bkc_btree_walk_nodes(struct bkc_btree *t, bkc_node_fn fn, void *arg);

/* Invariant check for tests: returns 0 or -EUCLEAN with @why set. */
struct bkc_btree_check {
	u64	nodes;
	u64	leaves;
	u64	keys;
	u32	min_fill;	/* fewest keys in a non-root node */
	u32	max_fill;
	u32	depth;
	const char *why;
};
int bkc_btree_check(struct bkc_btree *t, struct bkc_btree_check *c);

#endif /* _BKC_BTREE_H */
