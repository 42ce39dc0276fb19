// SPDX-License-Identifier: GPL-2.0
/*
 * Key validation shared by btree node and journal decoding.
 */
#include "key.h"

static_assert(sizeof(struct bkc_bkey) == 24);
static_assert(offsetof(struct bkc_bkey, pos) == 0x00);
static_assert(offsetof(struct bkc_bkey, ptr) == 0x08);
static_assert(offsetof(struct bkc_bkey, len) == 0x10);
static_assert(offsetof(struct bkc_bkey, off) == 0x14);
static_assert(sizeof(struct bkc_key) == 24);

/*
 * The per-set value XORed into every metadata magic: two crc32c of the set
 * uuid with different seeds.  Blocks left over from another cache set on
 * the same device then fail the magic check before anything else.
 */
u64 bkc_set_magic(const u8 *set_uuid)
{
	u64 hi = bkc_crc32c(~0U, set_uuid, BKC_UUID_SIZE);
	u64 lo = bkc_crc32c(0x5bd1e995U, set_uuid, BKC_UUID_SIZE);

	return hi << 32 | lo;
}

/* A pointer to a whole bucket (btree node or table bucket). */
int bkc_ptr_check(const struct bkc_geom *g, u64 ptr)
{
	u64 b = ptr & BKC_PTR_BUCKET_MASK;

	if (ptr >> BKC_PTR_FLAGS_SHIFT)
		return -EUCLEAN;
	if (b < g->first_bucket || b >= g->nbuckets)
		return -EUCLEAN;
	return 0;
}

/*
 * A leaf key: non-empty, inside one backing device, and, unless it is a
 * hole, inside one bucket of the device.  Unknown flag bits are rejected.
 */
int bkc_leaf_key_check(const struct bkc_geom *g, const struct bkc_key *k,
		       bool allow_hole)
{
	u64 b;

	if (!k->len || k->ptr & ~(BKC_PTR_BUCKET_MASK |
				  (0xffULL << BKC_PTR_GEN_SHIFT) |
				  BKC_KEY_FLAGS_MASK))
		return -EUCLEAN;
	if (bkc_pos_lba(k->pos) + k->len > BKC_LBA_MAX + 1)
		return -EUCLEAN;
	if (bkc_key_hole(k)) {
		if (!allow_hole || k->ptr != BKC_KEY_HOLE || k->off)
			return -EUCLEAN;
		return 0;
	}
	b = bkc_key_bucket(k);
	if (b < g->first_bucket || b >= g->nbuckets)
		return -EUCLEAN;
	if (k->len > g->bucket_sectors || k->off > g->bucket_sectors - k->len)
		return -EUCLEAN;
	return 0;
}
