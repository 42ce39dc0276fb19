/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Garbage collection, in bounded steps.
 *
 * A pass walks every key in position order, a few hundred at a time:
 *   - stale keys (their bucket's generation moved on) are dropped;
 *   - small sibling nodes are merged;
 *   - keys in buckets chosen for moving (mostly-empty buckets holding
 *     dirty data, which cannot simply be invalidated) are handed to the
 *     caller, who copies the data and calls bkc_core_move().
 * Live-sector counts are kept exact by every insert, so a pass does not
 * recount them (bkc_gc_recount() does, for checks).  When the walk is
 * done the pass waits until its changes are durable and the journal no
 * longer needs anything from before it; then every bucket's oldest_gen
 * moves up to its generation at the start of the pass (C6).
 */
#ifndef _BKC_GC_H
#define _BKC_GC_H

#include "core.h"

#define BKC_GC_MOVE_MAX		16
#define BKC_GC_STALE_MAX	64

enum bkc_gc_state {
	BKC_GC_IDLE,
	BKC_GC_WALK,
	BKC_GC_FLUSH,
};

/* bkc_gc_step() results besides 0 (pass done, idle) and -errno */
#define BKC_GC_MORE	1	/* call again */
#define BKC_GC_WAIT	2	/* flush nodes, write a table, commit */

/* A key whose data should be moved; must not call into the core. */
typedef void (*bkc_gc_move_fn)(void *arg, const struct bkc_key *k);

struct bkc_gc_stats {
	u64	passes;
	u64	keys_scanned;
	u64	stale_dropped;
	u64	merges;
	u64	moves;
};

struct bkc_gc {
	struct bkc_core		*c;
	enum bkc_gc_state	state;
	u64			pos;
	u64			start_seq;
	u64			end_seq;
	u32			since_merge;
	u64			move[BKC_GC_MOVE_MAX];	/* sorted */
	u32			nr_move;
	u32			move_pct;	/* move dirty buckets below */
	struct bkc_key		stale[BKC_GC_STALE_MAX];
	u32			nr_stale;
	u32			budget;
	bool			stopped;
	bkc_gc_move_fn		move_fn;
	void			*move_arg;
	struct bkc_gc_stats	stats;
};

void bkc_gc_init(struct bkc_gc *gc, struct bkc_core *c);
/* Start a pass (no-op if one is running). */
void bkc_gc_start(struct bkc_gc *gc);
/* Work on the pass for about @budget keys; see the results above. */
int bkc_gc_step(struct bkc_gc *gc, u32 budget, bkc_gc_move_fn fn, void *arg);
/* Where the walk of the running pass goes on (its next step's start). */
static inline u64 bkc_gc_pos(const struct bkc_gc *gc)
{
	return gc->state == BKC_GC_WALK ? gc->pos : 0;
}

/* Is a pass running (walking or ending)? */
static inline bool bkc_gc_running(const struct bkc_gc *gc)
{
	return gc->state != BKC_GC_IDLE;
}

/*
 * The journal entry the walk of the running pass ended in: the pass ends
 * once nothing up to it is needed any more.  0 (none) until then.
 */
static inline u64 bkc_gc_end_seq(const struct bkc_gc *gc)
{
	return gc->state == BKC_GC_FLUSH ? gc->end_seq : 0;
}

/* Should a pass run? (gens near the window, or buckets to move) */
bool bkc_gc_wanted(const struct bkc_gc *gc);
/*
 * Recount live and dirty sectors of every bucket from the tree.  Only
 * when nothing else runs (tests, or a full check at registration).
 */
int bkc_gc_recount(struct bkc_core *c);

#endif /* _BKC_GC_H */
