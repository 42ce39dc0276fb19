// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: btree node image decoding.  The input is a header
 * saying which node the caller expects (seq, range, level, size) and the
 * image read from disk.  A decoded node must be a well-formed sorted key
 * array inside its range.
 */
#include <string.h>

#include "bset.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_NODE	(1024U << 4)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u8 img[MAX_NODE];
	static struct bkc_key out[MAX_NODE / 24];
	struct bkc_node_image res;
	struct bkc_bset_info want = { 0 };
	struct fuzz_node_hdr h;
	struct bkc_geom g;
	u32 bytes, cap, i;
	int ret;

	if (size < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	data += sizeof(h);
	size -= sizeof(h);
	bytes = 1024U << (h.size_sel % 5);
	cap = (bytes - BKC_BSET_HDR) / sizeof(struct bkc_bkey);
	memset(img, 0, bytes);
	memcpy(img, data, size < bytes ? size : bytes);
	fuzz_geom(&g, 1U << 20, FUZZ_NBUCKETS);
	want.node_seq = h.node_seq;
	want.lo = h.lo;
	want.hi = h.hi;
	want.level = h.level;
	ret = bkc_node_decode(&g, img, bytes, &want, h.tag_only & 1, out, cap,
			      &res);
	fuzz_check(ret <= 0);
	if (ret)
		return 0;
	fuzz_check(res.nkeys <= cap);
	fuzz_check(res.written <= bytes && res.nbsets >= 1);
	for (i = 0; i < res.nkeys; i++) {
		const struct bkc_key *k = &out[i];

		if (h.level) {
			fuzz_check(!k->len && !bkc_key_hole(k));
			fuzz_check(k->pos >= h.lo && k->pos < h.hi);
			fuzz_check(i || k->pos == h.lo);
			fuzz_check(!i || k->pos > out[i - 1].pos);
			continue;
		}
		fuzz_check(k->len && !bkc_key_hole(k));
		fuzz_check(!bkc_leaf_key_check(&g, k, false));
		fuzz_check(k->pos >= h.lo && bkc_key_end(k) <= h.hi);
		fuzz_check(!i || k->pos >= bkc_key_end(&out[i - 1]));
	}
	return 0;
}
