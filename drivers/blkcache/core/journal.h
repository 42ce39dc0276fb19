/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The journal: entry format, the ring of journal buckets, and the replay
 * scan that finds the newest valid contiguous run of entries.
 *
 * Entries are built in memory (keys and generation records appended as
 * they happen), then frozen and written, one at a time, with
 * REQ_PREFLUSH | REQ_FUA.  Two buffers let the next entry fill while the
 * previous one is being written.  Only one entry may be in flight, so the
 * durable journal is always a prefix: a torn write can only be the last.
 */
#ifndef _BKC_JOURNAL_H
#define _BKC_JOURNAL_H

#include "key.h"

#define BKC_JSET_HDR		((u32)sizeof(struct bkc_jset))
#define BKC_JOURNAL_MAX_BUCKETS	BKC_SB_MAX_JOURNAL_BUCKETS

/* Header fields of an entry, CPU endian. */
struct bkc_jset_info {
	u64	seq;
	u64	last_seq;
	u64	root_ptr;	/* bucket | gen << 40; 0 if no root yet */
	u64	root_seq;
	u64	table_ptr;	/* 0 if no table yet */
	u64	table_seq;
	u32	clock;
	u32	nr_recs;
	u32	bytes;
	u8	root_level;
	u8	flags;		/* BKC_JSET_F_* */
};

/* A valid entry found by the scan. */
struct bkc_jent {
	u64	seq;
	u64	last_seq;
	u32	idx;		/* ring index of its bucket */
	u32	offset;		/* byte offset in the bucket */
	u32	bytes;		/* block aligned */
};

struct bkc_journal_write {
	void	*buf;
	u64	bucket;
	u32	offset;
	u32	bytes;		/* block aligned */
	u64	seq;
	u64	last_seq;
};

struct bkc_journal {
	struct bkc_geom	geom;
	u32		bucket_bytes;
	u32		entry_max;	/* bytes one entry may take */
	u32		nr;		/* ring buckets */
	u64		buckets[BKC_JOURNAL_MAX_BUCKETS];
	u64		bucket_seq[BKC_JOURNAL_MAX_BUCKETS];	/* newest seq */

	/* where the next entry goes */
	u32		cur;
	u32		cur_off;
	u64		seq;		/* of the entry being filled */
	u64		durable_seq;	/* newest entry known durable */
	u64		durable_last;	/* its last_seq */
	u64		min_last_seq;	/* replay: first commit must reach */
	struct bkc_jset_info prev;	/* header of the last entry written */
	bool		prev_valid;

	/* the entry being filled, and the one being written */
	u8		*buf[2];
	u32		fill;		/* index into buf[] */
	u32		used;		/* bytes of buf[fill] in use */
	u32		nr_recs;
	u32		last_rec;	/* offset of the last record header */
	u32		nkeys;
	u32		ngens;
	bool		inflight;

	/* replay */
	struct bkc_jent	*ents;
	u32		nents;
	u32		ents_cap;
	u64		max_seq;	/* newest valid seq seen anywhere */

	u64		entries_written;
	u64		bytes_written;
};

int bkc_journal_init(struct bkc_journal *j, const struct bkc_geom *g,
		     const u64 *buckets, u32 nr, u32 entry_max);
void bkc_journal_exit(struct bkc_journal *j);

/* Records in the entry being filled.  -ENOSPC when it is full. */
int bkc_journal_add_key(struct bkc_journal *j, const struct bkc_key *k);
int bkc_journal_add_gen(struct bkc_journal *j, u64 bucket, u8 gen);
bool bkc_journal_room(const struct bkc_journal *j, u32 nkeys, u32 ngens);
static inline bool bkc_journal_empty(const struct bkc_journal *j)
{
	return !j->nr_recs;
}

/* Fraction of the ring (in 1/256) still needed by the journal. */
u32 bkc_journal_fill(const struct bkc_journal *j);

/*
 * Freeze the entry being filled with header @h (seq, bytes and nr_recs
 * are filled in here) and say where it goes.  The caller writes
 * @w->bytes from @w->buf at @w->offset of bucket @w->bucket with
 * REQ_PREFLUSH | REQ_FUA, then calls bkc_journal_commit_done().
 * -EAGAIN: a write is in flight; -ENOSPC: the next ring bucket still
 * holds entries that are needed (flush btree nodes to move last_seq on).
 */
int bkc_journal_commit_prepare(struct bkc_journal *j,
			       struct bkc_jset_info *h,
			       struct bkc_journal_write *w);
void bkc_journal_commit_done(struct bkc_journal *j,
			     const struct bkc_journal_write *w);

/*
 * Decode and validate one entry at @buf (@avail bytes readable): header,
 * checksum, every record and key.  Returns 0 with @h filled, -ESTALE (no
 * entry: wrong magic), -EBADMSG (checksum), -EUCLEAN (invalid content).
 */
int bkc_journal_entry_check(const struct bkc_geom *g, const void *buf,
			    u32 avail, struct bkc_jset_info *h);

/*
 * Walk the records of a valid entry.  @key_fn gets every key, @gen_fn
 * every generation record, in entry order; a non-zero return stops.
 */
typedef int (*bkc_jkey_fn)(void *arg, const struct bkc_key *k, u64 seq);
typedef int (*bkc_jgen_fn)(void *arg, u64 bucket, u8 gen, u64 seq);
int bkc_journal_entry_walk(const void *buf, bkc_jkey_fn key_fn,
			   bkc_jgen_fn gen_fn, void *arg);

/*
 * Replay: bkc_journal_scan_begin(), then bkc_journal_scan_bucket() on the
 * contents of every ring bucket, then bkc_journal_pick() chooses the run.
 * It fills @run[0..*nrun) (seq order; at most the number of entries
 * scanned, callers size it with bkc_journal_scan_count()) and sets the
 * write position after the newest entry.  -ENOENT if no valid entry.
 */
int bkc_journal_scan_begin(struct bkc_journal *j);
void bkc_journal_scan_bucket(struct bkc_journal *j, u32 idx, const void *buf);
static inline u32 bkc_journal_scan_count(const struct bkc_journal *j)
{
	return j->nents;
}

int bkc_journal_pick(struct bkc_journal *j, struct bkc_jent *run, u32 *nrun);
void bkc_journal_scan_end(struct bkc_journal *j);

/* A fresh, empty ring (format). */
void bkc_journal_reset(struct bkc_journal *j);

#endif /* _BKC_JOURNAL_H */
