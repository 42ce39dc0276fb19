// SPDX-License-Identifier: GPL-2.0
/*
 * Journal entries, the ring of journal buckets, and the replay scan.
 * See journal.h.
 */
#include "journal.h"

static_assert(sizeof(struct bkc_jset) == 0x60);
static_assert(offsetof(struct bkc_jset, bytes) == 0x04);
static_assert(offsetof(struct bkc_jset, magic) == 0x08);
static_assert(offsetof(struct bkc_jset, seq) == 0x10);
static_assert(offsetof(struct bkc_jset, last_seq) == 0x18);
static_assert(offsetof(struct bkc_jset, root_ptr) == 0x20);
static_assert(offsetof(struct bkc_jset, root_seq) == 0x28);
static_assert(offsetof(struct bkc_jset, table_ptr) == 0x30);
static_assert(offsetof(struct bkc_jset, table_seq) == 0x38);
static_assert(offsetof(struct bkc_jset, nr_recs) == 0x40);
static_assert(offsetof(struct bkc_jset, root_level) == 0x44);
static_assert(offsetof(struct bkc_jset, flags) == 0x45);
static_assert(offsetof(struct bkc_jset, clock) == 0x48);
static_assert(sizeof(struct bkc_jrec) == 8);

#define JREC_HDR	((u32)sizeof(struct bkc_jrec))
#define JKEY_BYTES	((u32)sizeof(struct bkc_bkey))
#define JGEN_BYTES	8U
#define MAX_LEVEL	8

static u32 round_block(const struct bkc_journal *j, u32 bytes)
{
	u32 bs = j->geom.block_bytes;

	return (bytes + bs - 1) & ~(bs - 1);
}

static void reset_fill(struct bkc_journal *j)
{
	memset(j->buf[j->fill], 0, BKC_JSET_HDR);
	j->used = BKC_JSET_HDR;
	j->nr_recs = 0;
	j->last_rec = 0;
	j->nkeys = 0;
	j->ngens = 0;
}

int bkc_journal_init(struct bkc_journal *j, const struct bkc_geom *g,
		     const u64 *buckets, u32 nr, u32 entry_max)
{
	u32 bucket_bytes = g->bucket_sectors << 9;

	memset(j, 0, sizeof(*j));
	if (!nr || nr > BKC_JOURNAL_MAX_BUCKETS || !is_power_of_2(g->block_bytes))
		return -EINVAL;
	entry_max = min_t(u32, entry_max, bucket_bytes);
	entry_max &= ~(g->block_bytes - 1);
	if (entry_max < BKC_JSET_HDR + JREC_HDR + JKEY_BYTES)
		return -EINVAL;
	j->geom = *g;
	j->bucket_bytes = bucket_bytes;
	j->entry_max = entry_max;
	j->nr = nr;
	memcpy(j->buckets, buckets, nr * sizeof(*buckets));
	j->buf[0] = bkc_kvzalloc(entry_max);
	j->buf[1] = bkc_kvzalloc(entry_max);
	if (!j->buf[0] || !j->buf[1]) {
		bkc_journal_exit(j);
		return -ENOMEM;
	}
	bkc_journal_reset(j);
	return 0;
}

void bkc_journal_exit(struct bkc_journal *j)
{
	bkc_kvfree(j->buf[0]);
	bkc_kvfree(j->buf[1]);
	bkc_journal_scan_end(j);
	j->buf[0] = NULL;
	j->buf[1] = NULL;
}

void bkc_journal_reset(struct bkc_journal *j)
{
	memset(j->bucket_seq, 0, sizeof(j->bucket_seq));
	j->cur = 0;
	j->cur_off = 0;
	j->seq = 1;
	j->durable_seq = 0;
	j->durable_last = 0;
	j->min_last_seq = 0;
	j->prev_valid = false;
	j->inflight = false;
	j->fill = 0;
	reset_fill(j);
}

/* ---- building entries ---- */

/* Will ring bucket @idx be free once an entry with @last is durable? */
static bool ring_free(const struct bkc_journal *j, u32 idx, u64 last)
{
	return idx != j->cur &&
	       !(j->bucket_seq[idx] && j->bucket_seq[idx] >= last);
}

/* Blocks of the free ring buckets right after bucket @idx, up to @want. */
static u32 free_after(const struct bkc_journal *j, u32 idx, u64 last,
		      u32 want)
{
	u32 per = j->bucket_bytes / j->geom.block_bytes, n = 0, i = idx;

	while (n < want) {
		i = (i + 1) % j->nr;
		if (i == idx || !ring_free(j, i, last))
			break;
		n += per;
	}
	return n;
}

/*
 * Where an entry of @bytes goes: after the entry before it in the same
 * bucket, or at the start of the next bucket if the ring no longer needs
 * that one once an entry with @last is durable.  Room for @tail blocks
 * must stay after it, for the entries without records that make room
 * again (see entry_limit()).
 */
static bool entry_place(const struct bkc_journal *j, u32 bytes, u64 last,
			u32 tail, u32 *idx, u32 *off)
{
	u32 padded = round_block(j, bytes), bs = j->geom.block_bytes, room;

	*idx = j->cur;
	*off = j->cur_off;
	if (*off + padded > j->bucket_bytes) {
		*idx = (j->cur + 1) % j->nr;
		*off = 0;
		if (!ring_free(j, *idx, last))
			return false;
	}
	room = (j->bucket_bytes - *off - padded) / bs;
	return room >= tail || room + free_after(j, *idx, last, tail - room) >= tail;
}

/*
 * Blocks kept free after an entry with records, for entries with none:
 * the one that names the nodes written to make room (new root, table),
 * and the one whose last_seq then gives the ring back.
 */
#define RESERVE_BLOCKS	2U

/*
 * Bytes the entry being filled may grow to.  It must always be possible
 * to commit it: the node writes that make room in the ring wait for the
 * records of their keys to be durable, so an entry with no place to go
 * would wait for itself.  Computed with the durable last_seq; the entry's
 * own can only be newer, and the ring only frees up until the entry is
 * frozen, so the place stays.
 */
static u32 entry_limit(const struct bkc_journal *j)
{
	u32 bs = j->geom.block_bytes, left = j->bucket_bytes - j->cur_off;
	u32 next = (j->cur + 1) % j->nr, need, in_cur, in_next;
	u64 last = j->durable_last;

	/* in this bucket, with the reserve after it */
	need = RESERVE_BLOCKS - min(RESERVE_BLOCKS,
				    free_after(j, j->cur, last, RESERVE_BLOCKS));
	in_cur = left > need * bs ? left - need * bs : 0;
	/* anything up to @left goes here, so it must all fit here */
	if (in_cur < left || !ring_free(j, next, last))
		return min(in_cur, j->entry_max);
	/* or in the next bucket, with the reserve after it */
	need = RESERVE_BLOCKS - min(RESERVE_BLOCKS,
				    free_after(j, next, last, RESERVE_BLOCKS));
	in_next = j->bucket_bytes > need * bs ? j->bucket_bytes - need * bs : 0;
	return min(max(left, in_next), j->entry_max);
}

static void *rec_room(struct bkc_journal *j, u16 type, u32 item)
{
	u8 *b = j->buf[j->fill];
	struct bkc_jrec *r = j->last_rec ?
		(struct bkc_jrec *)(b + j->last_rec) : NULL;
	u32 limit = entry_limit(j);
	void *p;

	if (!r || le16_to_cpu(r->type) != type) {
		if (j->used + JREC_HDR + item > limit)
			return NULL;
		r = (struct bkc_jrec *)(b + j->used);
		r->type = cpu_to_le16(type);
		r->flags = 0;
		r->nr = 0;
		j->last_rec = j->used;
		j->used += JREC_HDR;
		j->nr_recs++;
	} else if (j->used + item > limit) {
		return NULL;
	}
	r->nr = cpu_to_le32(le32_to_cpu(r->nr) + 1);
	p = b + j->used;
	j->used += item;
	return p;
}

bool bkc_journal_room(const struct bkc_journal *j, u32 nkeys, u32 ngens)
{
	u32 need = nkeys * JKEY_BYTES + ngens * JGEN_BYTES + 2 * JREC_HDR;

	return j->used + need <= entry_limit(j);
}

int bkc_journal_add_key(struct bkc_journal *j, const struct bkc_key *k)
{
	struct bkc_bkey *d = rec_room(j, BKC_JREC_KEYS, JKEY_BYTES);

	if (!d)
		return -ENOSPC;
	bkc_key_pack(k, d);
	j->nkeys++;
	return 0;
}

int bkc_journal_add_gen(struct bkc_journal *j, u64 bucket, u8 gen)
{
	__le64 *d = rec_room(j, BKC_JREC_GENS, JGEN_BYTES);

	if (!d)
		return -ENOSPC;
	*d = cpu_to_le64(bkc_mkptr(bucket, gen, 0));
	j->ngens++;
	return 0;
}

u32 bkc_journal_fill(const struct bkc_journal *j)
{
	u32 i, need = 0;

	for (i = 0; i < j->nr; i++)
		if (!ring_free(j, i, j->durable_last))
			need++;
	return need * 256 / j->nr;
}

/* ---- writing ---- */

static u32 jset_csum(const void *buf, u32 bytes)
{
	return bkc_crc32c(~0U, (const u8 *)buf + 4, bytes - 4);
}

int bkc_journal_commit_prepare(struct bkc_journal *j,
			       struct bkc_jset_info *h,
			       struct bkc_journal_write *w)
{
	u8 *b = j->buf[j->fill];
	struct bkc_jset *js = (struct bkc_jset *)b;
	u32 padded = round_block(j, j->used), idx, off;
	bool empty = !j->nr_recs;

	if (j->inflight)
		return -EAGAIN;
	if (h->last_seq > j->seq || !h->last_seq)
		return -EINVAL;
	if (h->last_seq < j->min_last_seq)
		return -EBUSY;		/* replayed state not checkpointed yet */
	/* an entry without records that would say nothing new */
	if (empty && j->prev_valid && h->last_seq == j->prev.last_seq &&
	    h->root_ptr == j->prev.root_ptr &&
	    h->root_seq == j->prev.root_seq &&
	    h->root_level == j->prev.root_level &&
	    h->table_ptr == j->prev.table_ptr &&
	    h->table_seq == j->prev.table_seq && h->flags == j->prev.flags)
		return -EAGAIN;
	/*
	 * An entry with records has its place (entry_limit()); one without
	 * may use the reserve, but must leave a block of it or give ring
	 * buckets back, so that the next can still make room.
	 */
	if (!entry_place(j, j->used, h->last_seq, empty ? 1 : RESERVE_BLOCKS,
			 &idx, &off)) {
		BKC_ASSERT(empty);
		if (empty || !entry_place(j, j->used, h->last_seq, 0, &idx, &off))
			return -ENOSPC;
	}
	h->seq = j->seq;
	h->bytes = j->used;
	h->nr_recs = j->nr_recs;
	js->bytes = cpu_to_le32(j->used);
	js->magic = cpu_to_le64(BKC_JSET_MAGIC ^ j->geom.set_magic);
	js->seq = cpu_to_le64(h->seq);
	js->last_seq = cpu_to_le64(h->last_seq);
	js->root_ptr = cpu_to_le64(h->root_ptr);
	js->root_seq = cpu_to_le64(h->root_seq);
	js->table_ptr = cpu_to_le64(h->table_ptr);
	js->table_seq = cpu_to_le64(h->table_seq);
	js->nr_recs = cpu_to_le32(j->nr_recs);
	js->root_level = h->root_level;
	js->flags = h->flags & BKC_JSET_F_SUPP;
	js->pad0 = 0;
	js->clock = cpu_to_le32(h->clock);
	js->pad1 = 0;
	js->pad2[0] = 0;
	js->pad2[1] = 0;
	js->csum = cpu_to_le32(jset_csum(b, j->used));
	memset(b + j->used, 0, padded - j->used);

	w->buf = b;
	w->bucket = j->buckets[idx];
	w->offset = off;
	w->bytes = padded;
	w->seq = h->seq;
	w->last_seq = h->last_seq;

	j->cur = idx;
	j->cur_off = off + padded;
	j->bucket_seq[idx] = h->seq;
	j->min_last_seq = 0;	/* this entry does not need the old run */
	j->prev = *h;
	j->prev_valid = true;
	j->inflight = true;
	j->seq++;
	j->fill ^= 1;
	reset_fill(j);
	return 0;
}

void bkc_journal_commit_done(struct bkc_journal *j,
			     const struct bkc_journal_write *w)
{
	j->inflight = false;
	if (w->seq > j->durable_seq) {
		j->durable_seq = w->seq;
		j->durable_last = w->last_seq;
	}
	j->entries_written++;
	j->bytes_written += w->bytes;
}

/* ---- decoding ---- */

int bkc_journal_entry_check(const struct bkc_geom *g, const void *buf,
			    u32 avail, struct bkc_jset_info *h)
{
	const struct bkc_jset *js = buf;
	const u8 *b = buf;
	u32 bytes, off, i;

	if (avail < BKC_JSET_HDR)
		return -ESTALE;
	if (le64_to_cpu(js->magic) != (BKC_JSET_MAGIC ^ g->set_magic))
		return -ESTALE;
	bytes = le32_to_cpu(js->bytes);
	if (bytes < BKC_JSET_HDR || bytes > avail || bytes % 8)
		return -EUCLEAN;
	if (le32_to_cpu(js->csum) != jset_csum(buf, bytes))
		return -EBADMSG;
	h->seq = le64_to_cpu(js->seq);
	h->last_seq = le64_to_cpu(js->last_seq);
	h->root_ptr = le64_to_cpu(js->root_ptr);
	h->root_seq = le64_to_cpu(js->root_seq);
	h->table_ptr = le64_to_cpu(js->table_ptr);
	h->table_seq = le64_to_cpu(js->table_seq);
	h->nr_recs = le32_to_cpu(js->nr_recs);
	h->root_level = js->root_level;
	h->flags = js->flags;
	h->clock = le32_to_cpu(js->clock);
	h->bytes = bytes;
	if (!h->seq || !h->last_seq || h->last_seq > h->seq)
		return -EUCLEAN;
	if ((js->flags & ~BKC_JSET_F_SUPP) || js->pad0 || js->pad1 ||
	    js->pad2[0] || js->pad2[1])
		return -EUCLEAN;
	if (h->root_level >= MAX_LEVEL)
		return -EUCLEAN;
	if (h->root_ptr && bkc_ptr_check(g, h->root_ptr))
		return -EUCLEAN;
	if (h->table_ptr && bkc_ptr_check(g, h->table_ptr))
		return -EUCLEAN;
	if (h->table_seq > h->seq)
		return -EUCLEAN;

	off = BKC_JSET_HDR;
	for (i = 0; i < h->nr_recs; i++) {
		const struct bkc_jrec *r;
		u32 nr, item, k;

		if (bytes - off < JREC_HDR)
			return -EUCLEAN;
		r = (const struct bkc_jrec *)(b + off);
		off += JREC_HDR;
		nr = le32_to_cpu(r->nr);
		if (r->flags || !nr)
			return -EUCLEAN;
		switch (le16_to_cpu(r->type)) {
		case BKC_JREC_KEYS:
			item = JKEY_BYTES;
			break;
		case BKC_JREC_GENS:
			item = JGEN_BYTES;
			break;
		default:
			return -EUCLEAN;
		}
		if (nr > (bytes - off) / item)
			return -EUCLEAN;
		for (k = 0; k < nr; k++, off += item) {
			if (item == JKEY_BYTES) {
				struct bkc_key key;

				bkc_key_unpack((const struct bkc_bkey *)(b + off),
					       &key);
				if (bkc_pos_dev(key.pos) > BKC_MAX_DEV ||
				    bkc_leaf_key_check(g, &key, true))
					return -EUCLEAN;
			} else {
				u64 v = le64_to_cpu(*(const __le64 *)(b + off));

				if (bkc_ptr_check(g, v))
					return -EUCLEAN;
			}
		}
	}
	if (off != bytes)
		return -EUCLEAN;
	return 0;
}

int bkc_journal_entry_walk(const void *buf, bkc_jkey_fn key_fn,
			   bkc_jgen_fn gen_fn, void *arg)
{
	const struct bkc_jset *js = buf;
	const u8 *b = buf;
	u32 nrecs = le32_to_cpu(js->nr_recs), off = BKC_JSET_HDR, i, k;
	u64 seq = le64_to_cpu(js->seq);
	int ret;

	for (i = 0; i < nrecs; i++) {
		const struct bkc_jrec *r = (const struct bkc_jrec *)(b + off);
		u32 nr = le32_to_cpu(r->nr);
		bool keys = le16_to_cpu(r->type) == BKC_JREC_KEYS;

		off += JREC_HDR;
		for (k = 0; k < nr; k++) {
			if (keys) {
				struct bkc_key key;

				bkc_key_unpack((const struct bkc_bkey *)(b + off),
					       &key);
				off += JKEY_BYTES;
				ret = key_fn ? key_fn(arg, &key, seq) : 0;
			} else {
				u64 v = le64_to_cpu(*(const __le64 *)(b + off));

				off += JGEN_BYTES;
				ret = gen_fn ? gen_fn(arg, v & BKC_PTR_BUCKET_MASK,
						      (u8)(v >> BKC_PTR_GEN_SHIFT),
						      seq) : 0;
			}
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* ---- replay scan ---- */

int bkc_journal_scan_begin(struct bkc_journal *j)
{
	bkc_journal_scan_end(j);
	j->ents_cap = j->nr * (j->bucket_bytes / j->geom.block_bytes);
	j->ents = bkc_kvzalloc(j->ents_cap * sizeof(*j->ents));
	if (!j->ents)
		return -ENOMEM;
	j->nents = 0;
	j->max_seq = 0;
	memset(j->bucket_seq, 0, sizeof(j->bucket_seq));
	return 0;
}

void bkc_journal_scan_end(struct bkc_journal *j)
{
	bkc_kvfree(j->ents);
	j->ents = NULL;
	j->nents = 0;
	j->ents_cap = 0;
}

void bkc_journal_scan_bucket(struct bkc_journal *j, u32 idx, const void *buf)
{
	const u8 *b = buf;
	u32 off = 0;

	if (idx >= j->nr)
		return;
	while (off + BKC_JSET_HDR <= j->bucket_bytes &&
	       j->nents < j->ents_cap) {
		struct bkc_jset_info h;
		struct bkc_jent *e;

		if (bkc_journal_entry_check(&j->geom, b + off,
					    j->bucket_bytes - off, &h)) {
			off += j->geom.block_bytes;
			continue;
		}
		e = &j->ents[j->nents++];
		e->seq = h.seq;
		e->last_seq = h.last_seq;
		e->idx = idx;
		e->offset = off;
		e->bytes = round_block(j, h.bytes);
		if (h.seq > j->bucket_seq[idx])
			j->bucket_seq[idx] = h.seq;
		if (h.seq > j->max_seq)
			j->max_seq = h.seq;
		off += e->bytes;
	}
}

static bool ent_before(const struct bkc_jent *a, const struct bkc_jent *b)
{
	if (a->seq != b->seq)
		return a->seq < b->seq;
	if (a->idx != b->idx)
		return a->idx < b->idx;
	return a->offset < b->offset;
}

static void ent_sift(struct bkc_jent *e, u32 n, u32 i)
{
	for (;;) {
		u32 l = 2 * i + 1, m = i;
		struct bkc_jent tmp;

		if (l < n && ent_before(&e[m], &e[l]))
			m = l;
		if (l + 1 < n && ent_before(&e[m], &e[l + 1]))
			m = l + 1;
		if (m == i)
			return;
		tmp = e[i];
		e[i] = e[m];
		e[m] = tmp;
		i = m;
	}
}

static void ent_sort(struct bkc_jent *e, u32 n)
{
	u32 i;

	for (i = n / 2; i-- > 0;)
		ent_sift(e, n, i);
	while (n > 1) {
		struct bkc_jent tmp = e[0];

		e[0] = e[n - 1];
		e[n - 1] = tmp;
		n--;
		ent_sift(e, n, 0);
	}
}

int bkc_journal_pick(struct bkc_journal *j, struct bkc_jent *run, u32 *nrun)
{
	struct bkc_jent *e = j->ents;
	u32 n = 0, i, s, start;

	if (!j->nents)
		return -ENOENT;
	ent_sort(e, j->nents);
	/* one entry per seq: the first found in ring order */
	for (i = 0; i < j->nents; i++)
		if (!n || e[n - 1].seq != e[i].seq)
			e[n++] = e[i];
	/*
	 * The newest entry S whose needed range [last_seq, S] is present in
	 * full.  start is the first index of the contiguous run ending at i.
	 */
	start = n - 1;
	for (i = n; i-- > 0;) {
		u64 need = e[i].last_seq;

		if (i < start)
			start = i;
		while (start > 0 && e[start - 1].seq + 1 == e[start].seq &&
		       e[start].seq > need)
			start--;
		if (e[start].seq <= need)
			break;
	}
	if (i >= n)
		return -ENOENT;
	s = i;
	for (i = start; i <= s && e[i].seq < e[s].last_seq; i++)
		;
	*nrun = 0;
	for (; i <= s; i++)
		run[(*nrun)++] = e[i];

	j->cur = e[s].idx;
	j->cur_off = e[s].offset + e[s].bytes;
	j->seq = j->max_seq + 1;
	j->durable_seq = e[s].seq;
	j->durable_last = e[s].last_seq;
	j->min_last_seq = j->max_seq > e[s].seq ? j->max_seq + 1 : 0;
	j->inflight = false;
	j->fill = 0;
	reset_fill(j);
	return 0;
}
