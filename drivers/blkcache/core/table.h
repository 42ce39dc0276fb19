/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bucket table: a checkpoint of every bucket's generation, oldest
 * generation and replacement stamp, written copy-on-write into buckets of
 * its own.  The journal points at the table it builds on; generation
 * records in the journal from the table's seq on complete it.
 */
#ifndef _BKC_TABLE_H
#define _BKC_TABLE_H

#include "alloc.h"
#include "sb.h"

struct bkc_table_state {
	u64	ptr;		/* durable table: bucket | gen << 40; 0 none */
	u64	seq;
	u32	nr;		/* table buckets per table */
	u64	*cur_b;		/* buckets of the durable table */
	/* a checkpoint being written */
	bool	active;
	u32	next;
	u64	new_seq;
	u64	*new_b;
	/* the previous table, freed once the new one is journalled */
	u64	*old_b;
	u32	nr_old;
	u64	old_until;	/* journal seq that must be durable first */
};

int bkc_table_init(struct bkc_table_state *ts, u64 nbuckets, u32 bucket_bytes);
void bkc_table_exit(struct bkc_table_state *ts);

/* Allocate the buckets of a new table taken at journal seq @jseq. */
int bkc_table_begin(struct bkc_table_state *ts, struct bkc_alloc *a, u64 jseq);
/*
 * Encode the next table bucket into @buf (bucket_bytes); returns 1 with
 * *@bucket and *@bytes (block aligned) set, 0 when all are done.
 */
int bkc_table_next(struct bkc_table_state *ts, struct bkc_alloc *a, void *buf,
		   u64 *bucket, u32 *bytes);
/* All table buckets are durable: journal entries from @jseq on use it. */
void bkc_table_end(struct bkc_table_state *ts, struct bkc_alloc *a, u64 jseq);
/* Journal durable up to @seq: the previous table's buckets may go. */
void bkc_table_durable(struct bkc_table_state *ts, struct bkc_alloc *a,
		       u64 seq, u64 open_seq);
/* Opening: the durable table is @ptr (taken at @seq) in buckets @b. */
void bkc_table_set(struct bkc_table_state *ts, u64 ptr, u64 seq, const u64 *b);

/*
 * Validate table bucket @idx read from @buf for a table taken at @seq.
 * For idx 0 the bucket list is copied to @ptrs (room for
 * BKC_TABLE_MAX_BUCKETS).  Returns 0 or -ESTALE/-EBADMSG/-EUCLEAN.
 */
int bkc_table_decode(const struct bkc_geom *g, const void *buf, u32 idx,
		     u64 seq, u32 nr, u64 *ptrs, struct bkc_alloc *a);

#endif /* _BKC_TABLE_H */
