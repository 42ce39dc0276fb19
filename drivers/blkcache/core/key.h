/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Extent keys: CPU-endian view of struct bkc_bkey plus helpers.
 *
 * A position packs (backing device id, LBA in 512-byte sectors) into one
 * u64, device in the top 16 bits, so that keys of all backing devices sort
 * in one order and a range never crosses from one device to the next.
 */
#ifndef _BKC_KEY_H
#define _BKC_KEY_H

#include "bkc_port.h"

/* 2^64 / phi: spreads consecutive integers over 64 bits (hashes, seeds) */
#define BKC_GOLDEN64		0x9e3779b97f4a7c15ULL

#define BKC_MAX_DEV		0xfffeU	/* 0xffff would let key ends wrap */
#define BKC_LBA_MAX		BKC_POS_LBA_MASK

struct bkc_key {
	u64	pos;	/* dev << 48 | lba */
	u64	ptr;	/* bucket | gen << 40 | flags */
	u32	len;	/* sectors; 0 for interior keys */
	u32	off;	/* sector in bucket; child node tag for interior keys */
};

static inline u64 bkc_pos(u32 dev, u64 lba)
{
	return ((u64)dev << BKC_POS_DEV_SHIFT) | (lba & BKC_POS_LBA_MASK);
}

static inline u32 bkc_pos_dev(u64 pos)
{
	return pos >> BKC_POS_DEV_SHIFT;
}

static inline u64 bkc_pos_lba(u64 pos)
{
	return pos & BKC_POS_LBA_MASK;
}

static inline u64 bkc_mkptr(u64 bucket, u8 gen, u64 flags)
{
	return (bucket & BKC_PTR_BUCKET_MASK) |
		((u64)gen << BKC_PTR_GEN_SHIFT) | flags;
}

static inline u64 bkc_key_end(const struct bkc_key *k)
{
	return k->pos + k->len;
}

static inline u64 bkc_key_bucket(const struct bkc_key *k)
{
	return k->ptr & BKC_PTR_BUCKET_MASK;
}

static inline u8 bkc_key_gen(const struct bkc_key *k)
{
	return (u8)(k->ptr >> BKC_PTR_GEN_SHIFT);
}

static inline bool bkc_key_dirty(const struct bkc_key *k)
{
	return k->ptr & BKC_KEY_DIRTY;
}

static inline bool bkc_key_hole(const struct bkc_key *k)
{
	return k->ptr & BKC_KEY_HOLE;
}

static inline void bkc_key_set_dirty(struct bkc_key *k, bool dirty)
{
	if (dirty)
		k->ptr |= BKC_KEY_DIRTY;
	else
		k->ptr &= ~BKC_KEY_DIRTY;
}

/* Build a leaf key. */
static inline void bkc_key_init(struct bkc_key *k, u32 dev, u64 lba, u32 len,
				u64 bucket, u32 off, u8 gen, bool dirty)
{
	k->pos = bkc_pos(dev, lba);
	k->len = len;
	k->off = off;
	k->ptr = bkc_mkptr(bucket, gen, dirty ? BKC_KEY_DIRTY : 0);
}

static inline void bkc_key_init_hole(struct bkc_key *k, u64 pos, u32 len)
{
	k->pos = pos;
	k->len = len;
	k->off = 0;
	k->ptr = BKC_KEY_HOLE;
}

/* Drop the first @n sectors of a leaf key. */
static inline void bkc_key_cut_front(struct bkc_key *k, u32 n)
{
	k->pos += n;
	k->len -= n;
	if (!bkc_key_hole(k))
		k->off += n;
}

/* Keep only the first @n sectors of a leaf key. */
static inline void bkc_key_cut_back(struct bkc_key *k, u32 n)
{
	k->len = n;
}

/* True if @a and @b map the same data: same bucket and gen, and offsets
 * that move in step with the positions.
 */
static inline bool bkc_key_same_data(const struct bkc_key *a,
				     const struct bkc_key *b)
{
	if ((a->ptr & ~BKC_KEY_DIRTY) != (b->ptr & ~BKC_KEY_DIRTY))
		return false;
	if (bkc_key_hole(a))
		return true;
	return (s64)(a->pos - b->pos) == (s64)a->off - (s64)b->off;
}

static inline void bkc_key_pack(const struct bkc_key *k, struct bkc_bkey *d)
{
	d->pos = cpu_to_le64(k->pos);
	d->ptr = cpu_to_le64(k->ptr);
	d->len = cpu_to_le32(k->len);
	d->off = cpu_to_le32(k->off);
}

static inline void bkc_key_unpack(const struct bkc_bkey *d, struct bkc_key *k)
{
	k->pos = le64_to_cpu(d->pos);
	k->ptr = le64_to_cpu(d->ptr);
	k->len = le32_to_cpu(d->len);
	k->off = le32_to_cpu(d->off);
}

/* Device geometry the key validators check against. */
struct bkc_geom {
	u64	nbuckets;
	u64	first_bucket;
	u32	bucket_sectors;
	u32	block_bytes;
	u64	set_magic;
};

u64 bkc_set_magic(const u8 *set_uuid);
int bkc_leaf_key_check(const struct bkc_geom *g, const struct bkc_key *k,
		       bool allow_hole);
int bkc_ptr_check(const struct bkc_geom *g, u64 ptr);

#endif /* _BKC_KEY_H */
