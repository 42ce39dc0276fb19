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

struct bkc_seq_stream {
	u64	next;		/* sector the stream continues at */
	u64	bytes;		/* length so far */
	u64	stamp;		/* last use, caller's clock */
};

struct bkc_seq {
	struct bkc_seq_stream	s[BKC_SEQ_STREAMS];
};

void bkc_seq_init(struct bkc_seq *d);
u64 bkc_seq_account(struct bkc_seq *d, u64 sector, u32 sectors, u64 now,
		    u64 timeout);

#endif /* _BKC_SEQDETECT_H */
