// SPDX-License-Identifier: GPL-2.0
/*
 * Sequential-stream detector.  See seqdetect.h.
 */
#include "seqdetect.h"

void bkc_seq_init(struct bkc_seq *d)
{
	u32 i;

	memset(d, 0, sizeof(*d));
	for (i = 0; i < BKC_SEQ_STREAMS; i++) {
		d->next[i] = U64_MAX;
		d->newer[i] = (u8)(i + 1);
		d->older[i] = (u8)(i ? i - 1 : 0);
	}
	d->lru = 0;
	d->mru = BKC_SEQ_STREAMS - 1;
}

/* Make slot @i the most recently used. */
static void seq_touch(struct bkc_seq *d, u32 i)
{
	u8 nw = d->newer[i];

	if (d->mru == i)
		return;
	if (d->lru == i)
		d->lru = nw;
	else
		d->newer[d->older[i]] = nw;
	d->older[nw] = d->older[i];
	d->older[i] = d->mru;
	d->newer[d->mru] = (u8)i;
	d->mru = (u8)i;
}

/*
 * Account an I/O of @sectors at @sector, at time @now of the caller's
 * monotonic clock.  A stream idle for more than @timeout ticks is
 * forgotten.  Returns the length in bytes of the stream the I/O belongs
 * to, this I/O included.  No I/O starts at U64_MAX (an unused slot's
 * @next): sectors are far below it.
 */
u64 bkc_seq_account(struct bkc_seq *d, u64 sector, u32 sectors, u64 now,
		    u64 timeout)
{
	u32 i;

	for (i = 0; i < BKC_SEQ_STREAMS; i++) {
		if (d->next[i] != sector || now - d->stamp[i] > timeout)
			continue;
		d->bytes[i] += (u64)sectors << 9;
		d->next[i] = sector + sectors;
		d->stamp[i] = now;
		seq_touch(d, i);
		return d->bytes[i];
	}
	/*
	 * An unused slot first (they are the oldest), else the least
	 * recently used: by order of use, so that among streams last used
	 * at the same @now (the same jiffy) the one used first goes.
	 */
	i = d->lru;
	d->next[i] = sector + sectors;
	d->bytes[i] = (u64)sectors << 9;
	d->stamp[i] = now;
	seq_touch(d, i);
	return d->bytes[i];
}
