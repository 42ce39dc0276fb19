/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test glue for the portable core: a simulated cache device held in
 * memory (bucket by bucket) and a btree node cache on top of it, doing in
 * plain memory what the kernel does with bios and a shrinker.
 */
#ifndef _SIM_H
#define _SIM_H

#include "btree.h"
#include "alloc.h"

struct sim_node {
	struct bkc_node	n;
	int		pins;
	bool		indexed;
};

struct sim {
	struct bkc_geom		geom;
	u32			bucket_bytes;
	u32			node_bytes;
	u8			**mem;		/* per bucket, lazily */
	struct sim_node		**cache;	/* per bucket */
	struct bkc_btree	*t;
	u8			*iobuf;
	u64			nr_cached;
	u64			node_reads;
	u64			node_writes;
	u64			live_nodes;
	/* optional write hook (crash tests record writes) */
	void			(*on_write)(struct sim *s, u64 bucket, u32 off,
					    const void *buf, u32 len,
					    unsigned int flags);
	void			*hook_arg;
	/* optional: contents of a bucket not yet in memory */
	void			(*fill)(struct sim *s, u64 bucket, u8 *buf);
	int			fail_reads;	/* inject -EIO on node reads */
};

#define SIM_FUA		1
#define SIM_PREFLUSH	2

extern const struct bkc_btree_ops sim_btree_ops;

void sim_init(struct sim *s, const struct bkc_geom *g, u32 node_bytes);
void sim_exit(struct sim *s);
void sim_forget_nodes(struct sim *s);
u8 *sim_bucket(struct sim *s, u64 bucket);
void sim_write(struct sim *s, u64 bucket, u32 off, const void *buf, u32 len,
	       unsigned int flags);
/* Drop clean, unpinned nodes from the cache (1 in @one_in of them). */
u64 sim_evict(struct sim *s, u32 one_in, u64 *rng);
/* Write every dirty node the tree lets us write; returns nodes written. */
int sim_flush_tree(struct sim *s, u64 durable_seq);

/*
 * The allocator's dirty summary, as the keys say: sim_dsum_count() adds
 * @k's sectors, if it is dirty, to @dsum (dsum_mask + 1 slots);
 * sim_dsum_diff() returns the slots of @a that differ from it (a stuck
 * slot may be higher) and prints the first few.
 */
void sim_dsum_count(const struct bkc_alloc *a, const struct bkc_key *k,
		    u32 *dsum);
u64 sim_dsum_diff(const struct bkc_alloc *a, const u32 *dsum);

static inline u64 sim_rand(u64 *st)
{
	u64 x = *st;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*st = x;
	return x * 0x2545f4914f6cdd1dULL;
}

#endif /* _SIM_H */
