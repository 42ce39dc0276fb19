/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bucket replacement policies: LRU, FIFO and random behind one decide-only
 * ops table.  A policy never blocks, allocates or does I/O: it stamps
 * buckets when they are filled or read and scores candidates; the
 * allocator evicts the highest scores first.
 */
#ifndef _BKC_POLICY_H
#define _BKC_POLICY_H

#include "alloc.h"

struct bkc_repl_ops {
	const char	*name;
	/* @bucket was opened for new data */
	void		(*filled)(struct bkc_alloc *a, u64 bucket);
	/* data in @bucket was read; may run concurrently with itself */
	void		(*accessed)(struct bkc_alloc *a, u64 bucket);
	/* eviction score: higher is evicted first */
	u64		(*score)(const struct bkc_alloc *a, u64 bucket);
};

const struct bkc_repl_ops *bkc_repl_get(u32 repl);

#endif /* _BKC_POLICY_H */
