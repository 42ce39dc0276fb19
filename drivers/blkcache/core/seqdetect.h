/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sequential-stream detector, decide-only.
 *
 * It remembers the last BKC_SEQ_STREAMS streams by where each is expected
 * to continue.  An I/O that starts where a recent stream ended extends
 * it, whichever task issued it, so interleaved streams of concurrent
 * tasks are each recognised; any other I/O starts a new stream in place of
 * the least recently used one.  The caller compares the returned length
 * against its cutoff and serialises calls per detector.
 */
#ifndef _BKC_SEQDETECT_H
#define _BKC_SEQDETECT_H

#include "bkc_port.h"

#define BKC_SEQ_STREAMS		16
static_assert(BKC_SEQ_STREAMS <= 256);	/* slot numbers are u8 */

/*
 * The streams by slot, and their order of use as a list of slot numbers
 * (most recent first), so that an I/O that starts no stream's
 * continuation (random I/O, the usual case) costs one scan of @next and
 * takes the least recently used slot without a second scan.
 */
struct bkc_seq {
	u64	next[BKC_SEQ_STREAMS];	/* sector it continues at; U64_MAX: unused */
	u64	bytes[BKC_SEQ_STREAMS];	/* length so far */
	u64	stamp[BKC_SEQ_STREAMS];	/* last use, caller's clock */
	u8	newer[BKC_SEQ_STREAMS];	/* the slot used next after it */
	u8	older[BKC_SEQ_STREAMS];	/* the slot used last before it */
	u8	mru, lru;
};

void bkc_seq_init(struct bkc_seq *d);
u64 bkc_seq_account(struct bkc_seq *d, u64 sector, u32 sectors, u64 now,
		    u64 timeout);

#endif /* _BKC_SEQDETECT_H */
