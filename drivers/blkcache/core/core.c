// SPDX-License-Identifier: GPL-2.0
/*
 * The metadata core of one cache device.  See core.h.
 *
 * Ordering rules kept here:
 *   - a key is journalled in the same call that inserts it, so nothing can
 *     be acknowledged before its journal entry exists; the caller waits for
 *     that entry before completing FUA writes and flushes (C1, C3);
 *   - a node is written only once the journal entries of its keys are
 *     durable, and only after its new children (btree.c);
 *   - journal entries name the durable root and table and a last_seq no
 *     newer than any unwritten change, gen record or table still needed;
 *   - buckets are reused only after their new generation is durable, or
 *     when nothing durable references them (alloc.c, C4).
 */
#include "core.h"

#define NODE_MAX_DEFAULT	(256U << 10)
#define ENTRY_MAX_DEFAULT	(64U << 10)

int bkc_core_init(struct bkc_core *c, const struct bkc_sb_info *sb,
		  const struct bkc_core_config *cfg,
		  const struct bkc_btree_ops *bops,
		  const struct bkc_core_ops *ops, void *ctx)
{
	u32 node_bytes, entry, ndevs;
	int ret;

	memset(c, 0, sizeof(*c));
	if (sb->dev_type != BKC_DEV_CACHE || !sb->nr_journal_buckets ||
	    sb->nr_journal_buckets > BKC_SB_MAX_JOURNAL_BUCKETS)
		return -EINVAL;
	c->geom.nbuckets = sb->nbuckets;
	c->geom.first_bucket = sb->first_bucket;
	c->geom.bucket_sectors = sb->bucket_size >> 9;
	c->geom.block_bytes = sb->block_size;
	c->geom.set_magic = bkc_set_magic(sb->set_uuid);
	c->bucket_bytes = sb->bucket_size;
	c->nr_jbuckets = sb->nr_journal_buckets;
	memcpy(c->jbuckets, sb->journal_buckets,
	       sb->nr_journal_buckets * sizeof(u64));
	c->ops = ops;
	c->ctx = ctx;
	c->seed = cfg->seed;

	node_bytes = cfg->node_bytes ? cfg->node_bytes :
		min_t(u32, sb->bucket_size, NODE_MAX_DEFAULT);
	entry = cfg->entry_bytes ? cfg->entry_bytes :
		min_t(u32, sb->bucket_size, ENTRY_MAX_DEFAULT);
	ndevs = cfg->ndevs ? cfg->ndevs : 64;

	ret = bkc_alloc_init(&c->alloc, &c->geom, ndevs, sb->replacement,
			     cfg->seed);
	if (ret)
		return ret;
	ret = bkc_btree_init(&c->tree, &c->geom, node_bytes, bops, ctx,
			     &c->alloc);
	if (ret)
		goto err;
	ret = bkc_journal_init(&c->journal, &c->geom, c->jbuckets,
			       c->nr_jbuckets, entry);
	if (ret)
		goto err;
	ret = bkc_table_init(&c->table, c->geom.nbuckets, c->bucket_bytes);
	if (ret)
		goto err;
	return 0;
err:
	bkc_core_exit(c);
	return ret;
}

void bkc_core_exit(struct bkc_core *c)
{
	if (c->tree.scratch)
		bkc_btree_exit(&c->tree);
	bkc_journal_exit(&c->journal);
	bkc_table_exit(&c->table);
	bkc_alloc_exit(&c->alloc);
	bkc_kvfree(c->rbuf);
	bkc_kvfree(c->tptrs);
	c->rbuf = NULL;
	c->tptrs = NULL;
}

static void set_open_seq(struct bkc_core *c)
{
	c->tree.open_seq = c->journal.seq;
}

int bkc_core_format(struct bkc_core *c)
{
	bkc_alloc_format(&c->alloc);
	bkc_alloc_set_journal(&c->alloc, c->jbuckets, c->nr_jbuckets);
	bkc_journal_reset(&c->journal);
	c->tree.node_seq = (1ULL << 24) | ((c->seed & 0xffff) << 8);
	set_open_seq(c);
	return bkc_btree_create(&c->tree);
}

bool bkc_core_checkpoint_done(const struct bkc_core *c)
{
	return !c->journal.min_last_seq && c->table.ptr &&
		c->tree.disk_root.bucket && c->journal.durable_seq;
}

/* ---- open / replay ---- */

static int read_entry(struct bkc_core *c, const struct bkc_jent *e,
		      struct bkc_jset_info *h)
{
	int ret = c->ops->read(c->ctx, c->jbuckets[e->idx], e->offset,
			       c->rbuf, e->bytes);

	if (ret)
		return ret;
	/* it was valid when scanned; a changed read means a bad device */
	ret = bkc_journal_entry_check(&c->geom, c->rbuf, e->bytes, h);
	return ret ? -EIO : 0;
}

static int replay_gen(void *arg, u64 bucket, u8 gen, u64 seq)
{
	bkc_alloc_set_gen(arg, bucket, gen);
	return 0;
}

static int mark_key(void *arg, const struct bkc_key *k, u64 seq)
{
	if (!bkc_key_hole(k))
		bkc_alloc_mark(arg, bkc_key_bucket(k), BKC_BUCKET_DATA);
	return 0;
}

static int replay_key(void *arg, const struct bkc_key *k, u64 seq)
{
	struct bkc_core *c = arg;

	return bkc_btree_insert(&c->tree, k, seq);
}

static int load_table(struct bkc_core *c, u64 ptr, u64 seq)
{
	u64 b0 = ptr & BKC_PTR_BUCKET_MASK;
	u32 i, nr = c->table.nr;
	int ret;

	ret = c->ops->read(c->ctx, b0, 0, c->rbuf, c->bucket_bytes);
	if (ret)
		return ret;
	ret = bkc_table_decode(&c->geom, c->rbuf, 0, seq, nr, c->tptrs,
			       &c->alloc);
	if (ret)
		return ret;
	if ((c->tptrs[0] & BKC_PTR_BUCKET_MASK) != b0)
		return -EUCLEAN;
	for (i = 1; i < nr; i++) {
		ret = c->ops->read(c->ctx, c->tptrs[i] & BKC_PTR_BUCKET_MASK,
				   0, c->rbuf, c->bucket_bytes);
		if (ret)
			return ret;
		ret = bkc_table_decode(&c->geom, c->rbuf, i, seq, nr, NULL,
				       &c->alloc);
		if (ret)
			return ret;
	}
	for (i = 0; i < nr; i++) {
		u64 b = c->tptrs[i] & BKC_PTR_BUCKET_MASK;

		if (bkc_alloc_gen(&c->alloc, b) !=
		    (u8)(c->tptrs[i] >> BKC_PTR_GEN_SHIFT))
			return -EUCLEAN;
		bkc_alloc_mark(&c->alloc, b, BKC_BUCKET_META);
	}
	bkc_table_set(&c->table, ptr, seq, c->tptrs);
	return 0;
}

static int mark_node(void *arg, struct bkc_node *n)
{
	struct bkc_alloc *a = arg;
	u32 i;

	bkc_alloc_mark(a, n->bucket, BKC_BUCKET_BTREE);
	if (n->level)
		return 0;
	for (i = 0; i < n->nbase; i++) {
		bkc_alloc_mark(a, bkc_key_bucket(&n->base[i]),
			       BKC_BUCKET_DATA);
		bkc_alloc_account(a, &n->base[i], 1);
	}
	return 0;
}

static int open_run(struct bkc_core *c, struct bkc_jent *run, u32 nrun)
{
	struct bkc_jset_info h;
	struct bkc_nptr root;
	u32 i;
	int ret;

	/* the newest entry names the root and the table */
	c->open_why = "a journal entry changed since it was read";
	ret = read_entry(c, &run[nrun - 1], &h);
	if (ret)
		return ret;
	/* only a crash can have cut a node write short */
	c->tree.lenient = !(h.flags & BKC_JSET_F_CLEAN);
	if (h.table_ptr) {
		c->open_why = "the bucket table is invalid";
		ret = load_table(c, h.table_ptr, h.table_seq);
		if (ret)
			return ret;
		c->open_why = "the bucket table is older than the journal";
		if (h.last_seq > h.table_seq)
			return -EUCLEAN;	/* gen records missing */
	}
	c->open_why = "a journal entry changed since it was read";
	c->alloc.clock = h.clock;
	for (i = 0; i < nrun; i++) {
		ret = read_entry(c, &run[i], &h);
		if (ret)
			return ret;
		bkc_journal_entry_walk(c->rbuf, NULL, replay_gen, &c->alloc);
	}
	ret = read_entry(c, &run[nrun - 1], &h);
	if (ret)
		return ret;
	bkc_alloc_set_journal(&c->alloc, c->jbuckets, c->nr_jbuckets);

	/* node_seqs of this run never repeat an earlier run's */
	c->tree.node_seq = ((c->journal.max_seq + 1) << 24) |
		((bkc_alloc_rand(&c->alloc) & 0xffff) << 8);
	set_open_seq(c);
	if (h.root_ptr) {
		root.bucket = h.root_ptr & BKC_PTR_BUCKET_MASK;
		root.gen = h.root_ptr >> BKC_PTR_GEN_SHIFT;
		root.seq = h.root_seq;
		root.level = h.root_level;
		c->open_why = "the btree root is invalid";
		ret = bkc_btree_open(&c->tree, &root);
		if (ret)
			return ret;
		/* every durable node and key: counts and references */
		c->open_why = "a btree node is invalid";
		ret = bkc_btree_walk_nodes(&c->tree, mark_node, &c->alloc);
		if (ret)
			return ret;
	}
	c->open_why = "a journal entry changed since it was read";
	for (i = 0; i < nrun; i++) {
		ret = read_entry(c, &run[i], &h);
		if (ret)
			return ret;
		bkc_journal_entry_walk(c->rbuf, mark_key, NULL, &c->alloc);
	}
	bkc_alloc_open_finish(&c->alloc);
	if (!c->tree.root) {
		ret = bkc_btree_create(&c->tree);
		if (ret)
			return ret;
	}
	/*
	 * After a clean shutdown the nodes hold every key already.  Not
	 * replaying them also keeps the nodes clean until the first commit
	 * of this run, so that no node is appended to while the newest entry
	 * still says CLEAN (a torn append then would look like damage).
	 */
	for (i = 0; i < nrun && c->tree.lenient; i++) {
		ret = read_entry(c, &run[i], &h);
		if (ret)
			return ret;
		c->open_why = "a journal key does not fit the tree";
		ret = bkc_journal_entry_walk(c->rbuf, replay_key, NULL, c);
		if (ret)
			return ret;
	}
	c->open_why = NULL;
	return 0;
}

int bkc_core_open(struct bkc_core *c)
{
	struct bkc_jent *run = NULL;
	u32 i, nrun = 0;
	int ret;

	c->rbuf = bkc_kvzalloc(c->bucket_bytes);
	c->tptrs = bkc_kvzalloc(BKC_TABLE_MAX_BUCKETS * sizeof(u64));
	if (!c->rbuf || !c->tptrs) {
		ret = -ENOMEM;
		goto out;
	}
	ret = bkc_journal_scan_begin(&c->journal);
	if (ret)
		goto out;
	c->open_why = "a journal bucket cannot be read";
	for (i = 0; i < c->nr_jbuckets; i++) {
		ret = c->ops->read(c->ctx, c->jbuckets[i], 0, c->rbuf,
				   c->bucket_bytes);
		if (ret)
			goto out;
		bkc_journal_scan_bucket(&c->journal, i, c->rbuf);
	}
	run = bkc_kvzalloc((bkc_journal_scan_count(&c->journal) + 1) *
			   sizeof(*run));
	if (!run) {
		ret = -ENOMEM;
		goto out;
	}
	c->open_why = "no valid journal entry";
	ret = bkc_journal_pick(&c->journal, run, &nrun);
	if (ret)
		goto out;
	ret = open_run(c, run, nrun);
	/* runtime node reads are of fully written nodes */
	c->tree.lenient = false;
out:
	bkc_journal_scan_end(&c->journal);
	bkc_kvfree(run);
	bkc_kvfree(c->rbuf);
	bkc_kvfree(c->tptrs);
	c->rbuf = NULL;
	c->tptrs = NULL;
	return ret;
}

/* ---- data path ---- */

int bkc_core_alloc_data(struct bkc_core *c, u32 wp, u32 sectors,
			u64 *bucket, u32 *off, u32 *got, u8 *gen)
{
	return bkc_alloc_data(&c->alloc, wp, sectors, bucket, off, got, gen);
}

void bkc_core_data_put(struct bkc_core *c, u64 bucket)
{
	bkc_alloc_data_put(&c->alloc, bucket);
}

static int can_insert(struct bkc_core *c, u32 nkeys)
{
	if (!bkc_journal_room(&c->journal, nkeys, 0))
		return -EAGAIN;
	if (bkc_alloc_avail(&c->alloc, BKC_ALLOC_BTREE) <
	    bkc_btree_insert_reserve(&c->tree) * nkeys)
		return -ENOSPC;
	return 0;
}

static int insert_one(struct bkc_core *c, const struct bkc_key *k)
{
	int ret = bkc_btree_insert(&c->tree, k, c->journal.seq);

	if (ret)
		return ret;
	return bkc_journal_add_key(&c->journal, k);
}

int bkc_core_insert(struct bkc_core *c, const struct bkc_key *k, u64 *seq)
{
	int ret;

	if (bkc_key_hole(k) || bkc_leaf_key_check(&c->geom, k, false) ||
	    bkc_pos_dev(k->pos) > BKC_MAX_DEV)
		return -EINVAL;
	ret = can_insert(c, 1);
	if (ret)
		return ret;
	ret = insert_one(c, k);
	if (ret)
		return ret;
	c->stats.inserts++;
	*seq = c->journal.seq;
	return 0;
}

int bkc_core_invalidate(struct bkc_core *c, u32 dev, u64 lba, u32 len,
			u64 *seq)
{
	struct bkc_key k;
	int ret;

	if (!len || dev > BKC_MAX_DEV || lba > BKC_LBA_MAX ||
	    len > BKC_LBA_MAX + 1 - lba)
		return -EINVAL;
	ret = can_insert(c, 1);
	if (ret)
		return ret;
	bkc_key_init_hole(&k, bkc_pos(dev, lba), len);
	ret = insert_one(c, &k);
	if (ret)
		return ret;
	c->stats.invalidates++;
	*seq = c->journal.seq;
	return 0;
}

/*
 * Re-insert the pieces of @k that still map to its data, with @fix
 * applied: mark clean, or point at a new location.
 */
static int cas(struct bkc_core *c, const struct bkc_key *k, bool dirty_only,
	       u64 bucket, u32 off, u8 gen, bool move, u64 *seq)
{
	struct bkc_key rest = *k;
	int n, i, ret, done = 0;

	while (rest.len) {
		n = bkc_btree_match(&c->tree, &rest, dirty_only, c->cas,
				    BKC_CAS_MAX);
		if (n < 0 && n != -E2BIG)
			return n;
		if (n == -E2BIG)
			n = BKC_CAS_MAX;
		if (!n)
			break;
		ret = can_insert(c, n);
		if (ret)
			return done ? done : ret;
		for (i = 0; i < n; i++) {
			struct bkc_key nk = c->cas[i];

			if (move) {
				bool dirty = bkc_key_dirty(&nk);

				bkc_key_init(&nk, bkc_pos_dev(nk.pos),
					     bkc_pos_lba(nk.pos), nk.len,
					     bucket, off + (u32)(nk.pos - k->pos),
					     gen, dirty);
			} else {
				bkc_key_set_dirty(&nk, false);
			}
			ret = insert_one(c, &nk);
			if (ret)
				return ret;
			done += nk.len;
		}
		*seq = c->journal.seq;
		if (n < BKC_CAS_MAX)
			break;
		bkc_key_cut_front(&rest, bkc_key_end(&c->cas[n - 1]) -
				  rest.pos);
	}
	return done;
}

int bkc_core_mark_clean(struct bkc_core *c, const struct bkc_key *k, u64 *seq)
{
	int ret;

	if (bkc_key_hole(k) || !k->len)
		return -EINVAL;
	ret = cas(c, k, true, 0, 0, 0, false, seq);
	if (ret > 0)
		c->stats.cleaned += ret;
	return ret;
}

int bkc_core_move(struct bkc_core *c, const struct bkc_key *old, u64 bucket,
		  u32 off, u8 gen, u64 *seq)
{
	int ret;

	if (bkc_key_hole(old) || !old->len)
		return -EINVAL;
	ret = cas(c, old, false, bucket, off, gen, true, seq);
	if (ret > 0)
		c->stats.moved += ret;
	return ret;
}

/* ---- allocator ---- */

int bkc_core_refill(struct bkc_core *c, u32 scan_budget, u32 max)
{
	u32 n = 0;
	u64 b;
	int ret;

	while (n < max && bkc_alloc_want_invalidate(&c->alloc) &&
	       bkc_journal_room(&c->journal, 0, 1)) {
		ret = bkc_alloc_invalidate(&c->alloc, c->journal.seq,
					   scan_budget, &b);
		if (ret <= 0)
			return ret < 0 ? ret : (int)n;
		ret = bkc_journal_add_gen(&c->journal, b,
					  bkc_alloc_gen(&c->alloc, b));
		if (ret)
			return ret;
		n++;
	}
	return n;
}

/* ---- journal ---- */

u64 bkc_core_last_seq(const struct bkc_core *c)
{
	u64 last = c->journal.seq, pin = bkc_btree_pin(&c->tree);

	if (pin && pin < last)
		last = pin;
	/* gen records since the durable table are needed until the next */
	if (c->table.ptr && c->table.seq < last)
		last = c->table.seq;
	if (!c->table.ptr && c->journal.durable_last &&
	    c->journal.durable_last < last)
		last = c->journal.durable_last;
	return last;
}

/*
 * Gen records of invalidations waiting in the entry being filled are
 * covered because last_seq never passes the open entry.  Old node and
 * table buckets freed by the previous commit are released here too.
 */
int bkc_core_journal_prepare(struct bkc_core *c, struct bkc_journal_write *w)
{
	struct bkc_jset_info h = { 0 };
	const struct bkc_nptr *r = &c->tree.disk_root;
	int ret;

	h.last_seq = bkc_core_last_seq(c);
	if (r->bucket) {
		h.root_ptr = bkc_mkptr(r->bucket, r->gen, 0);
		h.root_seq = r->seq;
		h.root_level = r->level;
	}
	h.table_ptr = c->table.ptr;
	h.table_seq = c->table.seq;
	h.clock = c->alloc.clock;
	/* a clean shutdown: every node change is on disk, none in flight */
	if (c->closing && !bkc_btree_dirty(&c->tree))
		h.flags |= BKC_JSET_F_CLEAN;
	ret = bkc_journal_commit_prepare(&c->journal, &h, w);
	if (ret)
		return ret;
	c->root_ver_inflight = c->tree.disk_root_ver;
	set_open_seq(c);
	return 0;
}

void bkc_core_journal_done(struct bkc_core *c, struct bkc_journal_write *w)
{
	bkc_journal_commit_done(&c->journal, w);
	bkc_alloc_journal_durable(&c->alloc, c->journal.durable_seq);
	bkc_btree_root_committed(&c->tree, c->root_ver_inflight);
	bkc_table_durable(&c->table, &c->alloc, c->journal.durable_seq,
			  c->journal.seq);
	/* the entry just made durable names the new root and table */
	if (c->alloc.nr_freeing && bkc_btree_can_release(&c->tree))
		bkc_alloc_release_freeing(&c->alloc);
	c->stats.commits++;
}

/* ---- node writes ---- */

int bkc_core_node_prepare(struct bkc_core *c, struct bkc_node_write *w,
			  u64 max_pin)
{
	return bkc_btree_write_prepare(&c->tree, c->journal.durable_seq,
				       max_pin, w);
}

void bkc_core_node_done(struct bkc_core *c, struct bkc_node_write *w)
{
	bkc_btree_write_done(&c->tree, w);
}

/* ---- table ---- */

int bkc_core_table_begin(struct bkc_core *c)
{
	return bkc_table_begin(&c->table, &c->alloc, c->journal.seq);
}

int bkc_core_table_next(struct bkc_core *c, void *buf, u64 *bucket,
			u32 *bytes)
{
	return bkc_table_next(&c->table, &c->alloc, buf, bucket, bytes);
}

void bkc_core_table_end(struct bkc_core *c)
{
	bkc_table_end(&c->table, &c->alloc, c->journal.seq);
	c->stats.tables++;
}
