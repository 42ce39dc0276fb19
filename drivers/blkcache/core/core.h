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

#endif /* _BKC_CORE_H */
