// SPDX-License-Identifier: GPL-2.0
/*
 * Sorted key sets.
 *
 * In memory a leaf node is a sorted array of non-overlapping extents; the
 * helpers here search it, paint a new extent over it and overlay one array
 * on another.  On disk a node is a chain of bsets (struct bkc_bset); the
 * decoder validates every header and key before use and resolves the
 * chain into one sorted array.
 */
#include "bset.h"

static_assert(sizeof(struct bkc_bset) == 0x40);
static_assert(offsetof(struct bkc_bset, nkeys) == 0x04);
static_assert(offsetof(struct bkc_bset, magic) == 0x08);
static_assert(offsetof(struct bkc_bset, node_seq) == 0x10);
static_assert(offsetof(struct bkc_bset, lo) == 0x18);
static_assert(offsetof(struct bkc_bset, hi) == 0x20);
static_assert(offsetof(struct bkc_bset, journal_seq) == 0x28);
static_assert(offsetof(struct bkc_bset, offset) == 0x30);
static_assert(offsetof(struct bkc_bset, idx) == 0x34);
static_assert(offsetof(struct bkc_bset, level) == 0x36);
static_assert(offsetof(struct bkc_bset, flags) == 0x37);
static_assert(offsetof(struct bkc_bset, prev_csum) == 0x38);
static_assert(offsetof(struct bkc_bset, keys) == 0x40);

u32 bkc_keys_first_after(const struct bkc_key *k, u32 n, u64 pos)
{
	u32 lo = 0, hi = n;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (bkc_key_end(&k[mid]) > pos)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

u32 bkc_keys_last_le(const struct bkc_key *k, u32 n, u64 pos)
{
	u32 lo = 0, hi = n;

	/* first index with k->pos > pos, minus one */
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (k[mid].pos > pos)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo ? lo - 1 : n;
}

u32 bkc_keys_find(const struct bkc_key *k, u32 n, u64 pos)
{
	u32 i = bkc_keys_last_le(k, n, pos);

	return i < n && k[i].pos == pos ? i : n;
}

/* Keys a paint steps over one by one before it searches for its end. */
#define BKC_PAINT_PROBE	4

int bkc_keys_paint_at(struct bkc_key *d, u32 *np, u32 cap,
		      const struct bkc_key *k, u32 i)
{
	u64 kend = bkc_key_end(k);
	u32 n = *np, j, probe;

	if (i < n && d[i].pos < k->pos && bkc_key_end(&d[i]) > kend) {
		/* @k falls strictly inside d[i]: left part, @k, right part */
		struct bkc_key right = d[i];

		if (n + 2 > cap)
			return -ENOSPC;
		memmove(&d[i + 3], &d[i + 1], (n - i - 1) * sizeof(*d));
		bkc_key_cut_front(&right, kend - right.pos);
		bkc_key_cut_back(&d[i], k->pos - d[i].pos);
		d[i + 1] = *k;
		d[i + 2] = right;
		*np = n + 2;
		return 0;
	}
	j = i;
	if (j < n && d[j].pos < k->pos)
		j++;		/* d[i] keeps its front */
	/* a new key covers few old ones: look at the next few first */
	for (probe = 0; j < n && bkc_key_end(&d[j]) <= kend; j++) {
		if (++probe == BKC_PAINT_PROBE) {
			j += bkc_keys_first_after(&d[j], n - j, kend);
			break;
		}
	}
	/* d[i or i+1 .. j) lie inside @k; d[j] may overlap its end */
	if (i < n && d[i].pos < k->pos) {
		if (n - (j - i - 1) + 1 > cap)
			return -ENOSPC;
		bkc_key_cut_back(&d[i], k->pos - d[i].pos);
		i++;
	} else if (n - (j - i) + 1 > cap) {
		return -ENOSPC;
	}
	if (j < n && d[j].pos < kend)
		bkc_key_cut_front(&d[j], kend - d[j].pos);
	memmove(&d[i + 1], &d[j], (n - j) * sizeof(*d));
	d[i] = *k;
	*np = n - (j - i) + 1;
	return 0;
}

/* Can @b be appended to @a as one key? */
static bool keys_continue(const struct bkc_key *a, const struct bkc_key *b)
{
	if (bkc_key_end(a) != b->pos || a->ptr != b->ptr)
		return false;
	if ((u64)a->len + b->len > 0xffffffffULL)
		return false;
	return bkc_key_hole(a) || a->off + a->len == b->off;
}

static void emit(struct bkc_key *out, u32 *n, u32 cap, const struct bkc_key *k)
{
	if (*n && *n <= cap && keys_continue(&out[*n - 1], k)) {
		out[*n - 1].len += k->len;
		return;
	}
	if (*n < cap)
		out[*n] = *k;
	if (*n <= cap)
		(*n)++;
}

/* Emit the delta keys from @j on that end at or before @s; the next @j. */
static u32 emit_delta_before(const struct bkc_key *delta, u32 ndelta, u32 j,
			     u64 s, struct bkc_key *out, u32 *n, u32 cap)
{
	for (; j < ndelta && bkc_key_end(&delta[j]) <= s; j++)
		if (!bkc_key_hole(&delta[j]))
			emit(out, n, cap, &delta[j]);
	return j;
}

u32 bkc_keys_overlay(const struct bkc_key *base, u32 nbase,
		     const struct bkc_key *delta, u32 ndelta,
		     struct bkc_key *out, u32 cap)
{
	u32 i, j = 0, n = 0;

	for (i = 0; i < nbase && n <= cap; i++) {
		u64 s = base[i].pos, e = bkc_key_end(&base[i]);
		u64 dpos;

		/*
		 * The run of base keys that end before the next delta key
		 * goes out whole: what the loop below does for each of them,
		 * without cutting pieces.
		 */
		j = emit_delta_before(delta, ndelta, j, s, out, &n, cap);
		dpos = j < ndelta ? delta[j].pos : BKC_POS_MAX;
		if (e <= dpos) {
			for (; i < nbase && bkc_key_end(&base[i]) <= dpos &&
			     n <= cap; i++)
				emit(out, &n, cap, &base[i]);
			i--;
			continue;
		}
		while (s < e) {
			struct bkc_key piece;
			u64 pe;

			j = emit_delta_before(delta, ndelta, j, s, out, &n, cap);
			if (j < ndelta && delta[j].pos <= s) {
				s = min_t(u64, e, bkc_key_end(&delta[j]));
				continue;
			}
			pe = j < ndelta ? min_t(u64, e, delta[j].pos) : e;
			piece = base[i];
			bkc_key_cut_front(&piece, s - piece.pos);
			bkc_key_cut_back(&piece, pe - s);
			emit(out, &n, cap, &piece);
			s = pe;
		}
	}
	for (; j < ndelta && n <= cap; j++)
		if (!bkc_key_hole(&delta[j]))
			emit(out, &n, cap, &delta[j]);
	return n;
}

static u32 bset_csum(const void *buf, u32 bytes)
{
	return bkc_crc32c(~0U, (const u8 *)buf + 4, bytes - 4);
}

u32 bkc_bset_encode(void *buf, const struct bkc_bset_info *h, u64 set_magic,
		    const struct bkc_key *keys, u32 nkeys)
{
	struct bkc_bset *b = buf;
	u32 i, csum;

	memset(b, 0, sizeof(*b));
	b->nkeys = cpu_to_le32(nkeys);
	b->magic = cpu_to_le64(BKC_BSET_MAGIC ^ set_magic);
	b->node_seq = cpu_to_le64(h->node_seq);
	b->lo = cpu_to_le64(h->lo);
	b->hi = cpu_to_le64(h->hi);
	b->journal_seq = cpu_to_le64(h->journal_seq);
	b->offset = cpu_to_le32(h->offset);
	b->idx = cpu_to_le16(h->idx);
	b->level = h->level;
	b->prev_csum = cpu_to_le32(h->prev_csum);
	for (i = 0; i < nkeys; i++)
		bkc_key_pack(&keys[i], &b->keys[i]);
	csum = bset_csum(buf, bkc_bset_bytes(nkeys));
	b->csum = cpu_to_le32(csum);
	return csum;
}

int bkc_bset_check(const void *buf, u32 avail, const struct bkc_bset_info *want,
		   u64 set_magic, u32 *nkeys, u32 *csum)
{
	const struct bkc_bset *b = buf;
	u32 n;

	if (avail < BKC_BSET_HDR)
		return -EUCLEAN;
	if (le64_to_cpu(b->magic) != (BKC_BSET_MAGIC ^ set_magic))
		return -ESTALE;
	n = le32_to_cpu(b->nkeys);
	if (n > (avail - BKC_BSET_HDR) / sizeof(struct bkc_bkey))
		return -EUCLEAN;
	*csum = bset_csum(buf, bkc_bset_bytes(n));
	if (le32_to_cpu(b->csum) != *csum)
		return -EBADMSG;
	if (le64_to_cpu(b->node_seq) != want->node_seq)
		return -ESTALE;
	if (le32_to_cpu(b->offset) != want->offset ||
	    le16_to_cpu(b->idx) != want->idx ||
	    le32_to_cpu(b->prev_csum) != want->prev_csum)
		return -ESTALE;
	if (le64_to_cpu(b->lo) != want->lo || le64_to_cpu(b->hi) != want->hi ||
	    b->level != want->level || b->flags || b->pad)
		return -EUCLEAN;
	*nkeys = n;
	return 0;
}

/* Validate the keys of one bset of a leaf (@interior false) or interior
 * node.  Holes are allowed in appended bsets only.
 */
static int bset_keys_check(const struct bkc_geom *g, const struct bkc_bset *b,
			   u32 n, bool interior, bool first,
			   const struct bkc_bset_info *w)
{
	struct bkc_key k;
	u64 prev_end = w->lo;
	u32 i;

	for (i = 0; i < n; i++) {
		bkc_key_unpack(&b->keys[i], &k);
		if (bkc_pos_dev(k.pos) > BKC_MAX_DEV)
			return -EUCLEAN;
		if (interior) {
			if (k.len)
				return -EUCLEAN;
			if (k.pos < prev_end || k.pos >= w->hi)
				return -EUCLEAN;
			if (first && i == 0 && k.pos != w->lo)
				return -EUCLEAN;
			if (bkc_key_hole(&k)) {
				if (first || k.ptr != BKC_KEY_HOLE || k.off)
					return -EUCLEAN;
			} else if (bkc_ptr_check(g, k.ptr)) {
				return -EUCLEAN;
			}
			prev_end = k.pos + 1;
			continue;
		}
		if (bkc_leaf_key_check(g, &k, !first))
			return -EUCLEAN;
		if (k.pos < prev_end || bkc_key_end(&k) > w->hi)
			return -EUCLEAN;
		prev_end = bkc_key_end(&k);
	}
	if (interior && first && !n)
		return -EUCLEAN;
	return 0;
}

static void bkey_at(const u8 *buf, u32 off, u32 i, struct bkc_key *k)
{
	const struct bkc_bset *b = (const struct bkc_bset *)(buf + off);

	bkc_key_unpack(&b->keys[i], k);
}

/* Leaves: later bsets are painted over earlier ones. */
static int resolve_leaf(const u8 *buf, const u32 *offs, const u16 *cnt,
			u32 nb, u64 lo, struct bkc_key *out, u32 cap, u32 *nout)
{
	u16 cur[BKC_NODE_MAX_BSETS];
	struct bkc_key k, best_key;
	u64 pos = lo;
	u32 n = 0;
	int b, best;

	memset(cur, 0, sizeof(cur));
	for (;;) {
		u64 next = BKC_POS_MAX, bound;

		best = -1;
		for (b = nb - 1; b >= 0; b--) {
			while (cur[b] < cnt[b]) {
				bkey_at(buf, offs[b], cur[b], &k);
				if (bkc_key_end(&k) > pos)
					break;
				cur[b]++;
			}
			if (cur[b] >= cnt[b])
				continue;
			if (k.pos <= pos && best < 0) {
				best = b;
				best_key = k;
			}
			if (k.pos > pos && k.pos < next)
				next = k.pos;
		}
		if (best < 0) {
			if (next == BKC_POS_MAX)
				break;
			pos = next;
			continue;
		}
		bound = bkc_key_end(&best_key);
		for (b = best + 1; b < (int)nb; b++) {
			if (cur[b] >= cnt[b])
				continue;
			bkey_at(buf, offs[b], cur[b], &k);
			bound = min_t(u64, bound, k.pos);
		}
		if (!bkc_key_hole(&best_key)) {
			bkc_key_cut_front(&best_key, pos - best_key.pos);
			bkc_key_cut_back(&best_key, bound - pos);
			emit(out, &n, cap, &best_key);
			if (n > cap)
				return -E2BIG;
		}
		pos = bound;
	}
	*nout = n;
	return 0;
}

/* Interior nodes: later bsets set or delete pivots. */
static int resolve_interior(const u8 *buf, const u32 *offs, const u16 *cnt,
			    u32 nb, u64 lo, struct bkc_key *out, u32 cap,
			    u32 *nout)
{
	struct bkc_key k;
	u32 n = 0, b, i, at;

	if (cnt[0] > cap)
		return -E2BIG;
	for (i = 0; i < cnt[0]; i++)
		bkey_at(buf, offs[0], i, &out[n++]);
	for (b = 1; b < nb; b++) {
		for (i = 0; i < cnt[b]; i++) {
			bkey_at(buf, offs[b], i, &k);
			at = bkc_keys_last_le(out, n, k.pos);
			if (at < n && out[at].pos == k.pos) {
				if (!bkc_key_hole(&k)) {
					out[at] = k;
					continue;
				}
				memmove(&out[at], &out[at + 1],
					(n - at - 1) * sizeof(*out));
				n--;
				continue;
			}
			if (bkc_key_hole(&k))
				return -EUCLEAN;	/* deletes nothing */
			if (n >= cap)
				return -E2BIG;
			at = at < n ? at + 1 : 0;
			memmove(&out[at + 1], &out[at], (n - at) * sizeof(*out));
			out[at] = k;
			n++;
		}
	}
	if (!n || out[0].pos != lo)
		return -EUCLEAN;
	*nout = n;
	return 0;
}

int bkc_node_decode(const struct bkc_geom *g, const void *buf, u32 bytes,
		    const struct bkc_bset_info *want, bool tag_only,
		    struct bkc_key *out, u32 cap, struct bkc_node_image *img)
{
	const u8 *p = buf;
	u32 offs[BKC_NODE_MAX_BSETS];
	u16 cnt[BKC_NODE_MAX_BSETS];
	struct bkc_bset_info w = *want;
	u32 off = 0, nb = 0, n, csum, prev = 0;
	u64 node_seq = 0;
	int ret;

	memset(img, 0, sizeof(*img));
	if (!bytes || bytes > (1U << 20) || !is_power_of_2(g->block_bytes) ||
	    bytes % g->block_bytes || w.hi <= w.lo)
		return -EINVAL;
	while (nb < BKC_NODE_MAX_BSETS && off <= bytes - BKC_BSET_HDR) {
		const struct bkc_bset *b = (const struct bkc_bset *)(p + off);

		if (tag_only)
			w.node_seq = (le64_to_cpu(b->node_seq) &
				      ~0xffffffffULL) |
				     (want->node_seq & 0xffffffffULL);
		w.offset = off;
		w.idx = nb;
		w.prev_csum = prev;
		ret = bkc_bset_check(b, bytes - off, &w, g->set_magic, &n,
				     &csum);
		if (ret) {
			if (!nb)
				return ret;
			/*
			 * The end of the chain, unless what is here belongs to
			 * this node: then it is a torn append or damage.  A
			 * stale bset of an earlier node in the bucket has
			 * another node_seq and another previous checksum.
			 */
			img->torn = le64_to_cpu(b->node_seq) == node_seq ||
				(le64_to_cpu(b->magic) ==
				 (BKC_BSET_MAGIC ^ g->set_magic) &&
				 le32_to_cpu(b->offset) == off &&
				 le16_to_cpu(b->idx) == nb &&
				 le32_to_cpu(b->prev_csum) == prev);
			break;
		}
		if (n > 0xffff)
			return -EUCLEAN;
		ret = bset_keys_check(g, b, n, w.level > 0, nb == 0, &w);
		if (ret)
			return ret;
		if (!nb) {
			img->journal_seq = le64_to_cpu(b->journal_seq);
			node_seq = le64_to_cpu(b->node_seq);
		} else {
			img->journal_seq = max_t(u64, img->journal_seq,
						 le64_to_cpu(b->journal_seq));
		}
		offs[nb] = off;
		cnt[nb] = n;
		nb++;
		prev = csum;
		off += bkc_bset_bytes(n);
		off = (off + g->block_bytes - 1) & ~(g->block_bytes - 1);
		if (off < bkc_bset_bytes(n))
			break;
	}
	if (w.level)
		ret = resolve_interior(p, offs, cnt, nb, w.lo, out, cap,
				       &img->nkeys);
	else
		ret = resolve_leaf(p, offs, cnt, nb, w.lo, out, cap,
				   &img->nkeys);
	if (ret)
		return ret;
	img->nbsets = nb;
	img->written = min_t(u32, off, bytes);
	img->last_csum = prev;
	return 0;
}
