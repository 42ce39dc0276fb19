/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One cache device's metadata core: the allocator, the extent tree, the
 * journal and the bucket table tied together, with the ordering rules
 * between them (design.md C1-C6) enforced here.
 *
 * Everything is decide-and-record over memory; the caller does the I/O.
 * The kernel glue calls, under one lock for everything that modifies
 * state (lookups may share a read lock):
 *
 *   data write:   bkc_core_alloc_data(), write the data, then
 *                 bkc_core_insert() (returns the journal seq that makes it
 *                 durable) and bkc_core_data_put()
 *   read:         bkc_btree_lookup(&c->tree, ...), bkc_core_touch() per
 *                 hit; after the data read, bkc_core_ptr_stale() says
 *                 whether the bucket was reused meanwhile (retry then)
 *   writeback:    bkc_btree_next_dirty(), copy to the backing device,
 *                 flush it, then bkc_core_mark_clean()
 *   discard:      bkc_core_invalidate()
 *   commit:       bkc_core_journal_prepare(), write PREFLUSH|FUA,
 *                 bkc_core_journal_done(); one commit in flight at a time
 *   node flush:   bkc_core_node_prepare(), write FUA, bkc_core_node_done()
 *   table:        bkc_core_table_begin(), _next() and write each FUA,
 *                 then _end()
 *   allocator:    bkc_core_refill() while bkc_alloc_want_invalidate()
 *   GC:           gc.h
 */
#ifndef _BKC_CORE_H
#define _BKC_CORE_H

#include "sb.h"
#include "btree.h"
#include "alloc.h"
#include "journal.h"
#include "table.h"
#include "decay.h"

struct bkc_core_ops {
	/*
	 * Read @len bytes at byte @offset of bucket @bucket: journal and
	 * table buckets during bkc_core_open().  May sleep.
	 */
	int (*read)(void *ctx, u64 bucket, u32 offset, void *buf, u32 len);
};

struct bkc_core_config {
	u32	node_bytes;	/* 0: min(bucket size, 256 KiB) */
	u32	entry_bytes;	/* journal entry limit; 0: min(bucket, 64 KiB) */
	u32	ndevs;		/* backing device ids counted; 0: 64 */
	u64	seed;		/* random policy and node_seq salt */
};

#define BKC_CAS_MAX	64

struct bkc_core_stats {
	u64	inserts;
	u64	invalidates;
	u64	cleaned;
	u64	moved;
	u64	commits;
	u64	tables;
};

struct bkc_core {
	struct bkc_geom		geom;
	u32			bucket_bytes;
	u32			nr_jbuckets;
	u64			jbuckets[BKC_SB_MAX_JOURNAL_BUCKETS];
	struct bkc_alloc	alloc;
	struct bkc_btree	tree;
	struct bkc_journal	journal;
	struct bkc_table_state	table;
	const struct bkc_core_ops *ops;
	void			*ctx;
	u64			seed;
	u64			root_ver_inflight; /* disk_root_ver in the write */
	struct bkc_key		cas[BKC_CAS_MAX];
	u8			*rbuf;		/* bucket_bytes, open only */
	u64			*tptrs;		/* table bucket list, open only */
	struct bkc_core_stats	stats;
	bool			closing;	/* commits may say CLEAN */
	const char		*open_why;	/* why bkc_core_open() failed */
};

int bkc_core_init(struct bkc_core *c, const struct bkc_sb_info *sb,
		  const struct bkc_core_config *cfg,
		  const struct bkc_btree_ops *bops,
		  const struct bkc_core_ops *ops, void *ctx);
void bkc_core_exit(struct bkc_core *c);

/* A freshly formatted cache: empty tree, empty journal. */
int bkc_core_format(struct bkc_core *c);
/*
 * Rebuild the in-memory state from disk: find the journal run, load the
 * bucket table, apply generation records, mark every bucket the durable
 * tree or the journal references, and replay the journal's keys into the
 * tree.  -ENOENT if the journal holds no valid entry.
 */
int bkc_core_open(struct bkc_core *c);
/*
 * After format or open the caller checkpoints before anything else:
 * flush every node, write a table, commit (bkc_core_checkpoint_done()
 * says when that is complete).
 */
bool bkc_core_checkpoint_done(const struct bkc_core *c);

/* Data path. */
int bkc_core_alloc_data(struct bkc_core *c, u32 wp, u32 sectors,
			u64 *bucket, u32 *off, u32 *got, u8 *gen);
void bkc_core_data_put(struct bkc_core *c, u64 bucket);
/*
 * Journal and insert one key.  *@seq is the journal entry that must be
 * durable before the write may complete with FUA or a flush.  -EAGAIN:
 * the open journal entry is full, commit it first.  -ENOSPC: the btree
 * reserve is low (flush nodes, refill, let GC and writeback run).
 */
int bkc_core_insert(struct bkc_core *c, const struct bkc_key *k, u64 *seq);
/* Forget [lba, lba + len) of @dev (discard, writearound writes). */
int bkc_core_invalidate(struct bkc_core *c, u32 dev, u64 lba, u32 len,
			u64 *seq);
/*
 * Writeback is done with @k (the backing device was flushed): mark clean
 * whatever of it is still dirty and still maps to the same data.
 * Returns sectors marked clean, or -EAGAIN/-ENOSPC as for insert.
 */
int bkc_core_mark_clean(struct bkc_core *c, const struct bkc_key *k, u64 *seq);
/*
 * GC moved the data of @old to @bucket/@off/@gen: re-point whatever still
 * maps to the old data.  Returns sectors moved or -errno.
 */
int bkc_core_move(struct bkc_core *c, const struct bkc_key *old, u64 bucket,
		  u32 off, u8 gen, u64 *seq);

/* A read hit on @bucket; safe under the shared side of the lock (policy.c) */
static inline void bkc_core_touch(struct bkc_core *c, u64 bucket)
{
	bkc_alloc_touch(&c->alloc, bucket);
}

static inline bool bkc_core_ptr_stale(const struct bkc_core *c,
				      const struct bkc_key *k)
{
	return !bkc_alloc_key_live(&c->alloc, k);
}

/* Allocator: invalidate victims, journalling their new gens. */
int bkc_core_refill(struct bkc_core *c, u32 scan_budget, u32 max);

/* Journal commit. */
u64 bkc_core_last_seq(const struct bkc_core *c);
int bkc_core_journal_prepare(struct bkc_core *c, struct bkc_journal_write *w);
void bkc_core_journal_done(struct bkc_core *c, struct bkc_journal_write *w);
/* Ring usage in 1/256: flush nodes and write a table when it is high. */
static inline u32 bkc_core_journal_fill(const struct bkc_core *c)
{
	return bkc_journal_fill(&c->journal);
}

/* Node writes; @max_pin 0 means any dirty node. */
int bkc_core_node_prepare(struct bkc_core *c, struct bkc_node_write *w,
			  u64 max_pin);
void bkc_core_node_done(struct bkc_core *c, struct bkc_node_write *w);

/* Bucket table checkpoint. */
int bkc_core_table_begin(struct bkc_core *c);
int bkc_core_table_next(struct bkc_core *c, void *buf, u64 *bucket,
			u32 *bytes);
void bkc_core_table_end(struct bkc_core *c);

/*
 * ---- Accessors for the kernel glue ----
 *
 * The glue reads core state only through these.  Unless the name ends in
 * _lockless, the caller holds the set lock (shared is enough for reads,
 * exclusive for changes).
 */
static inline int bkc_core_lookup(struct bkc_core *c, u32 dev, u64 lba,
				  u32 len, bkc_lookup_fn fn, void *arg)
{
	return bkc_btree_lookup(&c->tree, dev, lba, len, fn, arg);
}

static inline int bkc_core_find(struct bkc_core *c, u32 dev, u64 lba,
				u32 len, struct bkc_key *out)
{
	return bkc_btree_find(&c->tree, dev, lba, len, out);
}

static inline int bkc_core_iter(struct bkc_core *c, u64 from, u64 to,
				bool stale, bkc_iter_fn fn, void *arg)
{
	return bkc_btree_iter(&c->tree, from, to, stale, fn, arg);
}

static inline int bkc_core_next_dirty(struct bkc_core *c, u32 dev, u64 lba,
				      struct bkc_key *out, u32 max)
{
	return bkc_btree_next_dirty(&c->tree, dev, lba, out, max);
}

/* Pin the leaves of [from, to) ahead of a change (btree.h). */
static inline int bkc_core_pin_range(struct bkc_core *c, u64 from, u64 to,
				     struct bkc_node **out, u32 max,
				     u64 *reached)
{
	return bkc_btree_pin_range(&c->tree, from, to, out, max, reached);
}

/* Needs no lock: only the caller's node cache is involved. */
static inline void bkc_core_unpin(struct bkc_core *c, struct bkc_node **nodes,
				  u32 n)
{
	bkc_btree_unpin(&c->tree, nodes, n);
}

static inline int bkc_core_node_decode(struct bkc_core *c, struct bkc_node *n,
				       const void *buf,
				       const struct bkc_nptr *p, u64 lo, u64 hi)
{
	return bkc_btree_node_decode(&c->tree, n, buf, p, lo, hi);
}

static inline u32 bkc_core_node_bytes(const struct bkc_core *c)
{
	return c->tree.node_bytes;
}

static inline u32 bkc_core_node_base_bytes(const struct bkc_core *c)
{
	return bkc_btree_base_bytes(&c->tree);
}

static inline u32 bkc_core_node_delta_bytes(const struct bkc_core *c)
{
	return bkc_btree_delta_bytes(&c->tree);
}

static inline bool bkc_core_tree_dirty(const struct bkc_core *c)
{
	return bkc_btree_dirty(&c->tree);
}

/* Does leaf node @n hold a dirty key?  (Interior nodes: false.) */
static inline bool bkc_core_node_has_dirty(const struct bkc_node *n)
{
	u32 i;

	if (n->level)
		return false;
	for (i = 0; i < n->nbase; i++)
		if (bkc_key_dirty(&n->base[i]))
			return true;
	for (i = 0; i < n->ndelta; i++)
		if (bkc_key_dirty(&n->delta[i]))
			return true;
	return false;
}

static inline u64 bkc_core_durable_seq(const struct bkc_core *c)
{
	return c->journal.durable_seq;
}

static inline u64 bkc_core_durable_last(const struct bkc_core *c)
{
	return c->journal.durable_last;
}

/*
 * The journal entry a flush must wait for: the open one if it holds
 * records, else the one before (which may still be in flight).
 */
static inline u64 bkc_core_flush_seq(const struct bkc_core *c)
{
	return bkc_journal_empty(&c->journal) ? c->journal.seq - 1 :
		c->journal.seq;
}

/* The open journal entry's seq: its commit has not begun. */
static inline u64 bkc_core_open_seq(const struct bkc_core *c)
{
	return c->journal.seq;
}

static inline bool bkc_core_want_refill(const struct bkc_core *c)
{
	return bkc_alloc_want_invalidate(&c->alloc);
}

/* The set is shutting down cleanly: its last commit says so. */
static inline void bkc_core_set_closing(struct bkc_core *c)
{
	c->closing = true;
}

/* What bkc_core_open() could not load, or NULL; its node's bucket. */
static inline const char *bkc_core_open_why(const struct bkc_core *c,
					    u64 *bucket)
{
	*bucket = c->tree.bad_bucket;
	return c->open_why;
}

static inline int bkc_core_set_policy(struct bkc_core *c, u32 repl)
{
	return bkc_alloc_set_policy(&c->alloc, repl);
}

/*
 * Pieces of cached keys that inserts replaced so far: an insert that
 * changes it replaced cached data (a write hit).  Caller holds the set
 * lock for writing, as for the insert.
 */
static inline u64 bkc_core_overwrites(const struct bkc_core *c)
{
	return c->tree.stats.overwrites;
}

static inline u64 bkc_core_dev_dirty(const struct bkc_core *c, u32 dev)
{
	return dev < c->alloc.ndevs ? c->alloc.dev_dirty[dev] : 0;
}

/* How the buckets are used; caller holds the set lock. */
static inline void bkc_core_shares(const struct bkc_core *c,
				   struct bkc_alloc_shares *s)
{
	bkc_alloc_shares(&c->alloc, s);
}

/* Sectors of cache space for data: geometry, never changes. */
static inline u64 bkc_core_capacity(const struct bkc_core *c)
{
	return (c->geom.nbuckets - c->geom.first_bucket) *
		c->geom.bucket_sectors;
}

/*
 * Lockless reads.  Each of these is one aligned load of a value the core
 * writes with a single-copy store (WRITE_ONCE) under the set lock, so it
 * never sees a torn value, only one that was current a moment ago.  Each
 * caller says why a stale value is harmless for it.
 */

/*
 * The generation of @bucket, for a data read's completion (interrupt
 * context) to tell whether the bucket was reused while it read: a bucket
 * is rewritten only after its bumped generation is in a durable journal
 * entry, so any read that could have returned new data completes after
 * the bump, and the I/O completions in between order the bump before
 * this load.
 */
static inline u8 bkc_core_gen_lockless(const struct bkc_core *c, u64 bucket)
{
	return READ_ONCE(c->alloc.b[bucket].gen);
}

/* Dirty sectors of backing device @dev (statistics, heuristics). */
static inline u64 bkc_core_dev_dirty_lockless(const struct bkc_core *c,
					      u32 dev)
{
	return dev < c->alloc.ndevs ? READ_ONCE(c->alloc.dev_dirty[dev]) : 0;
}

/*
 * May device @dev hold dirty data in the 4 KiB granule of @lba?  False:
 * no live dirty key touches it (alloc.h).  For a write's in-place probe
 * (request.c), which a stale answer sends the usual way or makes look.
 */
static inline bool bkc_core_maybe_dirty_lockless(const struct bkc_core *c,
						 u32 dev, u64 lba)
{
	return bkc_alloc_maybe_dirty(&c->alloc, dev, lba);
}

/* Dirty sectors of the whole cache (statistics, the bypass heuristic). */
static inline u64 bkc_core_dirty_sectors_lockless(const struct bkc_core *c)
{
	return READ_ONCE(c->alloc.dirty_sectors);
}

/*
 * Is at least @pct percent of the cache's data space dirty?  One figure
 * for the "nearly full of dirty data" heuristics (request.c, writeback.c):
 * a stale value only moves the moment they switch.
 */
static inline bool bkc_core_dirty_pct_lockless(const struct bkc_core *c,
					       u32 pct)
{
	return bkc_core_dirty_sectors_lockless(c) * 100 >=
		bkc_core_capacity(c) * pct;
}

/* Sectors of live cached data (statistics). */
static inline u64 bkc_core_live_sectors_lockless(const struct bkc_core *c)
{
	return READ_ONCE(c->alloc.live_sectors);
}

#endif /* _BKC_CORE_H */
