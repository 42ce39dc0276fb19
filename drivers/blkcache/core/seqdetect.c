// SPDX-License-Identifier: GPL-2.0
/*
 * Sequential-stream detector.  See seqdetect.h.
 */
#include "seqdetect.h"

void bkc_seq_init(struct bkc_seq *d)
{
	memset(d, 0, sizeof(*d));
}

/*
 * Account an I/O of @sectors at @sector, at time @now of the caller's
 * monotonic clock.  A stream idle for more than @timeout ticks is
 * forgotten.  Returns the length in bytes of the stream the I/O belongs
 * to, this I/O included.
 */
u64 bkc_seq_account(struct bkc_seq *d, u64 sector, u32 sectors, u64 now,
		    u64 timeout)
{
	struct bkc_seq_stream *s, *victim = &d->s[0];
	u32 i;

	for (i = 0; i < BKC_SEQ_STREAMS; i++) {
		s = &d->s[i];
		if (s->bytes && s->next == sector &&
		    now - s->stamp <= timeout) {
			s->bytes += (u64)sectors << 9;
			s->next = sector + sectors;
			s->stamp = now;
			return s->bytes;
		}
		/* an unused slot first, else the least recently used */
		if (victim->bytes && (!s->bytes || s->stamp < victim->stamp))
			victim = s;
	}
	victim->next = sector + sectors;
	victim->bytes = (u64)sectors << 9;
	victim->stamp = now;
	return victim->bytes;
}
