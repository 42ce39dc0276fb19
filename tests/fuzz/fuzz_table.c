// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: bucket table decoding (the allocator state read back
 * at registration).  The input is the three table buckets.
 */
#include <string.h>

#include "table.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u8 buf[3][FUZZ_TBUCKET];
	static u64 ptrs[BKC_TABLE_MAX_BUCKETS];
	static struct bkc_alloc a;
	static bool ready;
	struct bkc_geom g;
	u32 nr, i;
	u64 seq = 0;

	fuzz_geom(&g, FUZZ_TBUCKET, FUZZ_TNBUCKETS);
	if (!ready) {
		fuzz_check(!bkc_alloc_init(&a, &g, 4, 0, 1));
		ready = true;
	}
	nr = bkc_table_nr(g.nbuckets, FUZZ_TBUCKET);
	fuzz_check(nr == 3);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
	memcpy(&seq, buf[0] + 0x10, 8);
	for (i = 0; i < nr; i++) {
		int ret = bkc_table_decode(&g, buf[i], i, seq, nr,
					   i ? NULL : ptrs, &a);

		fuzz_check(ret <= 0);
		if (ret)
			break;
		if (!i)
			fuzz_check(!bkc_ptr_check(&g, ptrs[nr - 1]));
	}
	return 0;
}
