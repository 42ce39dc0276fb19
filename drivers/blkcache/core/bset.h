/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sorted key sets: in-memory operations on sorted, non-overlapping key
 * arrays, and the on-disk bset codec used for btree nodes.
 */
#ifndef _BKC_BSET_H
#define _BKC_BSET_H

#include "key.h"

#define BKC_BSET_HDR		((u32)sizeof(struct bkc_bset))
#define BKC_NODE_MAX_BSETS	64

/* Bytes of an encoded bset holding @nkeys keys. */
static inline u32 bkc_bset_bytes(u32 nkeys)
{
	return BKC_BSET_HDR + nkeys * (u32)sizeof(struct bkc_bkey);
}

/* Leaf arrays: index of the first key whose end is beyond @pos. */
u32 bkc_keys_first_after(const struct bkc_key *k, u32 n, u64 pos);
/* Interior arrays: index of the last key with k->pos <= @pos, or n. */
u32 bkc_keys_last_le(const struct bkc_key *k, u32 n, u64 pos);
/* Interior arrays: index of the key with k->pos == @pos, or n. */
u32 bkc_keys_find(const struct bkc_key *k, u32 n, u64 pos);

/*
 * Paint @k (a leaf key or a hole) over the sorted leaf array @d of @*n keys:
 * keys it overlaps are trimmed, split or removed.  @i is
 * bkc_keys_first_after(d, *n, k->pos), which the caller has already.
 * Needs room for two more keys.  Returns 0, or -ENOSPC if @cap is too
 * small.
 */
int bkc_keys_paint_at(struct bkc_key *d, u32 *n, u32 cap,
		      const struct bkc_key *k, u32 i);

/*
 * Write @base overlaid with @delta (newer; holes erase) into @out, adjacent
 * keys that continue each other merged.  Returns the number of keys, or
 * @cap + 1 if they do not fit.
 */
u32 bkc_keys_overlay(const struct bkc_key *base, u32 nbase,
		     const struct bkc_key *delta, u32 ndelta,
		     struct bkc_key *out, u32 cap);

/* Header fields of one bset, CPU endian. */
struct bkc_bset_info {
	u64	node_seq;
	u64	lo;
	u64	hi;
	u64	journal_seq;
	u32	offset;
	u32	prev_csum;
	u16	idx;
	u8	level;
};

/* Encode a bset into @buf; returns its checksum. */
u32 bkc_bset_encode(void *buf, const struct bkc_bset_info *h, u64 set_magic,
		    const struct bkc_key *keys, u32 nkeys);

/*
 * Check the header of the bset at @buf (@avail bytes readable) against
 * what the caller expects, and its checksum.  On success *@nkeys is set.
 */
int bkc_bset_check(const void *buf, u32 avail, const struct bkc_bset_info *want,
		   u64 set_magic, u32 *nkeys, u32 *csum);

/* What bkc_node_decode() found. */
struct bkc_node_image {
	u32	nkeys;		/* resolved keys written to the output */
	u32	written;	/* bytes in use, block aligned */
	u32	nbsets;
	u32	last_csum;
	u64	journal_seq;	/* newest journal_seq of the bsets read */
	/*
	 * The chain ended at a bset of this very node (its node_seq, or its
	 * place in the chain) that failed its checks: a torn append, or a
	 * damaged bset.  Its keys and those of any later bset are not in
	 * the output.
	 */
	bool	torn;
};

/*
 * Decode and validate a node image of @bytes bytes.  @want gives node_seq
 * (only the low 32 bits are compared when @tag_only), lo, hi and level.
 * Keys are resolved (later bsets win, holes erase) into @out, at most
 * @cap of them.  Returns 0 or -EUCLEAN (bad image), -EBADMSG (checksum),
 * -ESTALE (magic or node_seq mismatch: not the node we were looking for),
 * -E2BIG (resolved keys beyond @cap).
 */
int bkc_node_decode(const struct bkc_geom *g, const void *buf, u32 bytes,
		    const struct bkc_bset_info *want, bool tag_only,
		    struct bkc_key *out, u32 cap, struct bkc_node_image *img);

#endif /* _BKC_BSET_H */
