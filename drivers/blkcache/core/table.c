// SPDX-License-Identifier: GPL-2.0
/*
 * Bucket table checkpoints.  See table.h.
 *
 * Table bucket i holds a header, in bucket 0 the list of all table
 * buckets, then entries for buckets [first, first + count) of the device.
 */
#include "table.h"

static_assert(sizeof(struct bkc_table) == 0x40);
static_assert(offsetof(struct bkc_table, seq) == 0x10);
static_assert(offsetof(struct bkc_table, first) == 0x18);
static_assert(offsetof(struct bkc_table, count) == 0x20);
static_assert(offsetof(struct bkc_table, idx) == 0x24);
static_assert(offsetof(struct bkc_table, nr_buckets) == 0x28);
static_assert(offsetof(struct bkc_table, nr_ptrs) == 0x2c);
static_assert(offsetof(struct bkc_table, nbuckets) == 0x30);
static_assert(offsetof(struct bkc_table, ptrs) == 0x40);
static_assert(sizeof(struct bkc_bucket_disk) == 8);

static void span(const struct bkc_geom *g, u32 nr, u32 idx, u64 *first,
		 u32 *count)
{
	u32 bb = g->bucket_sectors << 9;
	u64 f = idx ? bkc_table_per_bucket(bb, 0, nr) +
		      (idx - 1) * bkc_table_per_bucket(bb, 1, nr) : 0;
	u64 c = bkc_table_per_bucket(bb, idx, nr);

	if (f > g->nbuckets)
		f = g->nbuckets;
	*first = f;
	*count = min_t(u64, c, g->nbuckets - f);
}

int bkc_table_init(struct bkc_table_state *ts, u64 nbuckets, u32 bucket_bytes)
{
	memset(ts, 0, sizeof(*ts));
	ts->nr = bkc_table_nr(nbuckets, bucket_bytes);
	if (!ts->nr)
		return -E2BIG;
	ts->cur_b = bkc_kvzalloc(ts->nr * sizeof(u64));
	ts->new_b = bkc_kvzalloc(ts->nr * sizeof(u64));
	ts->old_b = bkc_kvzalloc(ts->nr * sizeof(u64));
	if (!ts->cur_b || !ts->new_b || !ts->old_b) {
		bkc_table_exit(ts);
		return -ENOMEM;
	}
	return 0;
}

void bkc_table_exit(struct bkc_table_state *ts)
{
	bkc_kvfree(ts->cur_b);
	bkc_kvfree(ts->new_b);
	bkc_kvfree(ts->old_b);
	ts->cur_b = NULL;
	ts->new_b = NULL;
	ts->old_b = NULL;
}

void bkc_table_set(struct bkc_table_state *ts, u64 ptr, u64 seq, const u64 *b)
{
	u32 i;

	ts->ptr = ptr;
	ts->seq = seq;
	for (i = 0; i < ts->nr && ptr; i++)
		ts->cur_b[i] = b[i] & BKC_PTR_BUCKET_MASK;
	ts->active = false;
	ts->nr_old = 0;
}

int bkc_table_begin(struct bkc_table_state *ts, struct bkc_alloc *a, u64 jseq)
{
	u32 i;
	int ret;

	if (ts->active || ts->nr_old)
		return -EBUSY;
	for (i = 0; i < ts->nr; i++) {
		ret = bkc_alloc_bucket(a, BKC_ALLOC_META, &ts->new_b[i]);
		if (ret) {
			while (i--)
				bkc_alloc_freeing(a, ts->new_b[i]);
			return ret;
		}
	}
	ts->active = true;
	ts->next = 0;
	ts->new_seq = jseq;
	return 0;
}

int bkc_table_next(struct bkc_table_state *ts, struct bkc_alloc *a, void *buf,
		   u64 *bucket, u32 *bytes)
{
	const struct bkc_geom *g = &a->geom;
	struct bkc_table *t = buf;
	struct bkc_bucket_disk *d;
	u32 idx = ts->next, count, i, nptrs, len;
	u64 first;

	if (!ts->active || idx >= ts->nr)
		return 0;
	span(g, ts->nr, idx, &first, &count);
	nptrs = idx ? 0 : ts->nr;
	len = BKC_TABLE_HDR + nptrs * 8 + count * BKC_TABLE_ENT;
	memset(t, 0, BKC_TABLE_HDR);
	t->bytes = cpu_to_le32(len);
	t->magic = cpu_to_le64(BKC_TABLE_MAGIC ^ g->set_magic);
	t->seq = cpu_to_le64(ts->new_seq);
	t->first = cpu_to_le64(first);
	t->count = cpu_to_le32(count);
	t->idx = cpu_to_le32(idx);
	t->nr_buckets = cpu_to_le32(ts->nr);
	t->nr_ptrs = cpu_to_le32(nptrs);
	t->nbuckets = cpu_to_le64(g->nbuckets);
	for (i = 0; i < nptrs; i++)
		t->ptrs[i] = cpu_to_le64(bkc_mkptr(ts->new_b[i],
				bkc_alloc_gen(a, ts->new_b[i]), 0));
	d = (struct bkc_bucket_disk *)&t->ptrs[nptrs];
	for (i = 0; i < count; i++) {
		const struct bkc_bucket *b = &a->b[first + i];

		d[i].gen = b->gen;
		d[i].oldest_gen = b->oldest_gen;
		d[i].pad = 0;
		d[i].prio = cpu_to_le32(b->prio);
	}
	t->csum = cpu_to_le32(bkc_crc32c(~0U, (u8 *)buf + 4, len - 4));
	*bytes = (len + g->block_bytes - 1) & ~(g->block_bytes - 1);
	memset((u8 *)buf + len, 0, *bytes - len);
	*bucket = ts->new_b[idx];
	ts->next++;
	return 1;
}

void bkc_table_end(struct bkc_table_state *ts, struct bkc_alloc *a, u64 jseq)
{
	u32 i;

	if (!ts->active || ts->next < ts->nr)
		return;
	/* the old table stays until an entry pointing at the new is durable */
	if (ts->ptr) {
		memcpy(ts->old_b, ts->cur_b, ts->nr * sizeof(u64));
		ts->nr_old = ts->nr;
		ts->old_until = jseq;
	}
	for (i = 0; i < ts->nr; i++)
		ts->cur_b[i] = ts->new_b[i];
	ts->ptr = bkc_mkptr(ts->new_b[0], bkc_alloc_gen(a, ts->new_b[0]), 0);
	ts->seq = ts->new_seq;
	ts->active = false;
}

void bkc_table_durable(struct bkc_table_state *ts, struct bkc_alloc *a,
		       u64 seq, u64 open_seq)
{
	u32 i;

	if (!ts->nr_old || seq < ts->old_until)
		return;
	for (i = 0; i < ts->nr_old; i++)
		bkc_alloc_release(a, ts->old_b[i]);
	ts->nr_old = 0;
}

int bkc_table_decode(const struct bkc_geom *g, const void *buf, u32 idx,
		     u64 seq, u32 nr, u64 *ptrs, struct bkc_alloc *a)
{
	const struct bkc_table *t = buf;
	const struct bkc_bucket_disk *d;
	u32 bb = g->bucket_sectors << 9, len, count, nptrs, i;
	u64 first;

	if (le64_to_cpu(t->magic) != (BKC_TABLE_MAGIC ^ g->set_magic))
		return -ESTALE;
	len = le32_to_cpu(t->bytes);
	if (len < BKC_TABLE_HDR || len > bb)
		return -EUCLEAN;
	if (le32_to_cpu(t->csum) != bkc_crc32c(~0U, (const u8 *)buf + 4,
					       len - 4))
		return -EBADMSG;
	if (le64_to_cpu(t->seq) != seq)
		return -ESTALE;
	span(g, nr, idx, &first, &count);
	nptrs = idx ? 0 : nr;
	if (le32_to_cpu(t->idx) != idx || le32_to_cpu(t->nr_buckets) != nr ||
	    le64_to_cpu(t->nbuckets) != g->nbuckets ||
	    le64_to_cpu(t->first) != first ||
	    le32_to_cpu(t->count) != count ||
	    le32_to_cpu(t->nr_ptrs) != nptrs || t->pad ||
	    len != BKC_TABLE_HDR + nptrs * 8 + count * BKC_TABLE_ENT)
		return -EUCLEAN;
	for (i = 0; i < nptrs; i++) {
		u64 p = le64_to_cpu(t->ptrs[i]);

		if (bkc_ptr_check(g, p))
			return -EUCLEAN;
		ptrs[i] = p;
	}
	d = (const struct bkc_bucket_disk *)&t->ptrs[nptrs];
	for (i = 0; i < count; i++)
		if (d[i].pad)
			return -EUCLEAN;
	if (!a)
		return 0;
	for (i = 0; i < count; i++)
		bkc_alloc_load(a, first + i, d[i].gen, d[i].oldest_gen,
			       le32_to_cpu(d[i].prio));
	return 0;
}
