// SPDX-License-Identifier: GPL-2.0
/*
 * Crash sweep.  A workload runs against the core through a small glue
 * that does what the kernel will do (data writes, inserts, journal commits
 * with PREFLUSH|FUA, node and table writes with FUA, invalidation, GC with
 * moves, writeback), on a simulated cache device that logs every write.
 *
 * Then, for every write index, power is cut there: writes not covered by
 * a completed flush (not FUA, after the last PREFLUSH) are dropped - none
 * of them, all of them and random subsets - and the cache is opened from
 * what is left.  Every sector of every backing device is read back through
 * the recovered index and checked against design.md:
 *   C1  it is no older than the last write a completed flush covered;
 *   C2  it is a value once written to that very LBA (content is tagged),
 *       never another LBA's data, never garbage, never a bucket's new
 *       contents through a stale key;
 *   C3  dirty data survives: every clean key's data is on the backing
 *       device (nothing dirty was lost or mistaken for clean).
 * plus the tree invariants and the recovered live-sector counts.  Every
 * 16th recovery is checkpointed and recovered a second time.
 *
 *   test_crash [ops]   BKC_SEED=n for one seed (default: fixed seeds and
 *                      one random seed, which is printed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "core.h"
#include "gc.h"
#include "tcheck.h"

#define NDEV		2
#define NLBA		2048
#define SECTOR		512
#define DATA_MAGIC	0x4154414443424b42ULL

static const u32 devs[NDEV] = { 3, 9 };

/* ---- the cache device's write log ---- */

struct dw {
	u64	bucket;
	u32	off;
	u32	len;
	u32	flags;
	u64	jseq;		/* journal entry written, or 0 */
	u8	*data;
};

/* what the workload did, in order, with the device write count then */
enum { EV_ACK, EV_BACK };

struct ev {
	u32	at;
	u8	type;
	u8	d;
	u16	lba;
	u32	ver;
	u64	seq;
};

struct world {
	struct sim		*s;
	struct bkc_core		*c;
	struct bkc_gc		gc;
	struct bkc_sb_info	sb;
	u64			rng;
	u8			*buf;
	u32			ver[NDEV][NLBA];
	u32			backing[NDEV][NLBA];
	struct dw		*log;
	u32			nlog;
	u32			caplog;
	struct ev		*ev;
	u32			nev;
	u32			capev;
	struct bkc_key		moves[256];
	u32			nmoves;
	bool			logging;
	bool			async;
	bool			jpending;
	struct bkc_journal_write jw;
	u64			commits;
	u64			flushes;
	u64			tables;
	u64			gc_passes;
};

static u64 rnd(struct world *w, u64 n)
{
	return sim_rand(&w->rng) % n;
}

static void log_write(struct sim *s, u64 bucket, u32 off, const void *buf,
		      u32 len, unsigned int flags)
{
	struct world *w = s->hook_arg;
	struct dw *d;

	if (!w->logging)
		return;
	if (w->nlog == w->caplog) {
		w->caplog = w->caplog ? 2 * w->caplog : 4096;
		w->log = realloc(w->log, w->caplog * sizeof(*w->log));
		REQUIRE(w->log);
	}
	d = &w->log[w->nlog++];
	d->bucket = bucket;
	d->off = off;
	d->len = len;
	d->flags = flags;
	d->jseq = 0;
	d->data = malloc(len);
	REQUIRE(d->data);
	memcpy(d->data, buf, len);
}

static void event(struct world *w, u8 type, u32 d, u32 lba, u32 ver, u64 seq)
{
	struct ev *e;

	if (w->nev == w->capev) {
		w->capev = w->capev ? 2 * w->capev : 4096;
		w->ev = realloc(w->ev, w->capev * sizeof(*w->ev));
		REQUIRE(w->ev);
	}
	e = &w->ev[w->nev++];
	e->at = w->nlog;
	e->type = type;
	e->d = d;
	e->lba = lba;
	e->ver = ver;
	e->seq = seq;
}

/* ---- sector contents ---- */

static void make_sector(u8 *p, u32 d, u32 lba, u32 ver)
{
	u64 h = DATA_MAGIC ^ ((u64)d << 48) ^ ((u64)lba << 24) ^ ver;
	u32 i;

	memset(p, 0, SECTOR);
	memcpy(p, &h, 8);
	memcpy(p + 8, &d, 4);
	memcpy(p + 12, &lba, 4);
	memcpy(p + 16, &ver, 4);
	for (i = 24; i < SECTOR; i += 8)
		memcpy(p + i, &h, 8);
}

/* Returns the version stored at @p for (@d, @lba), or -1 if it is not. */
static long read_sector(const u8 *p, u32 d, u32 lba)
{
	u32 rd, rl, rv;
	u64 h;

	memcpy(&rd, p + 8, 4);
	memcpy(&rl, p + 12, 4);
	memcpy(&rv, p + 16, 4);
	h = DATA_MAGIC ^ ((u64)rd << 48) ^ ((u64)rl << 24) ^ rv;
	if (memcmp(p, &h, 8) || rd != d || rl != lba)
		return -1;
	return rv;
}

/* ---- glue: what the kernel does ---- */

/* The journal write in flight (if any) reaches the disk and completes. */
static void commit_finish(struct world *w)
{
	if (!w->jpending)
		return;
	w->jpending = false;
	sim_write(w->s, w->jw.bucket, w->jw.offset, w->jw.buf, w->jw.bytes,
		  SIM_PREFLUSH | SIM_FUA);
	if (w->logging)
		w->log[w->nlog - 1].jseq = w->jw.seq;
	bkc_core_journal_done(w->c, &w->jw);
	w->commits++;
}

/*
 * Commit the open entry.  Like the kernel, the write may still be in
 * flight while more keys and invalidations go into the next entry; it
 * completes at the next commit or sync point.
 */
static void commit_async(struct world *w, bool wait)
{
	int ret;

	commit_finish(w);
	ret = bkc_core_journal_prepare(w->c, &w->jw);
	if (ret == -ENOSPC || ret == -EBUSY)
		return;		/* caller flushes nodes and retries */
	if (ret == -EAGAIN)
		return;		/* an entry without records saying nothing new */
	REQUIRE(ret == 0);
	w->jpending = true;
	if (wait || !w->async || rnd(w, 2))
		commit_finish(w);
}

static void commit(struct world *w)
{
	commit_async(w, true);
}

static void flush_nodes(struct world *w, u64 max_pin)
{
	struct bkc_node_write nw;
	int ret, rounds = 0;

	for (;;) {
		nw.buf = w->buf;
		ret = bkc_core_node_prepare(w->c, &nw, max_pin);
		if (ret == -EAGAIN && rounds++ < 4) {
			commit(w);
			continue;
		}
		if (ret <= 0)
			break;
		sim_write(w->s, nw.bucket, nw.offset, w->buf, nw.bytes,
			  SIM_FUA);
		bkc_core_node_done(w->c, &nw);
	}
	REQUIRE(ret == 0 || ret == -EAGAIN || ret == -ENOSPC);
	w->flushes++;
}

static void write_table(struct world *w)
{
	u64 b;
	u32 bytes;

	if (bkc_core_table_begin(w->c))
		return;
	while (bkc_core_table_next(w->c, w->buf, &b, &bytes) > 0)
		sim_write(w->s, b, 0, w->buf, bytes, SIM_FUA);
	bkc_core_table_end(w->c);
	w->tables++;
}

/* Everything durable: what registration does after format or open. */
static void checkpoint(struct world *w)
{
	int i;

	for (i = 0; i < 6; i++) {
		flush_nodes(w, 0);
		write_table(w);
		commit(w);
		commit(w);
		if (!bkc_btree_dirty(&w->c->tree) && bkc_core_checkpoint_done(w->c))
			return;
	}
	REQUIRE(bkc_core_checkpoint_done(w->c));
}

/* Keep the journal from filling: write old nodes and a new table. */
static void journal_space(struct world *w)
{
	if (bkc_core_journal_fill(w->c) < 128)
		return;
	flush_nodes(w, w->c->journal.durable_last + 1);
	flush_nodes(w, 0);
	write_table(w);
	commit(w);
}

static void writeback_some(struct world *w, u32 max);

static void refill(struct world *w)
{
	int ret, tries = 0;

	while (bkc_alloc_want_invalidate(&w->c->alloc) && tries++ < 4) {
		ret = bkc_core_refill(w->c, w->c->geom.nbuckets, 64);
		REQUIRE(ret >= 0);
		/* gens recorded now become durable with a later commit */
		if (rnd(w, 2) || !ret)
			commit_async(w, false);
		if (!ret)
			break;
	}
}

/* Make progress when an allocation or insert ran out of space. */
static void make_room(struct world *w)
{
	commit(w);
	flush_nodes(w, 0);
	commit(w);
	refill(w);
	if (w->c->alloc.nr_free < w->c->alloc.free_target / 2) {
		writeback_some(w, 64);
		commit(w);
		refill(w);
	}
	journal_space(w);
}

static void insert_key(struct world *w, const struct bkc_key *k, u64 *seq)
{
	int ret, tries = 0;

	for (;;) {
		ret = bkc_core_insert(w->c, k, seq);
		if (!ret)
			return;
		REQUIRE((ret == -EAGAIN || ret == -ENOSPC) && tries++ < 20);
		if (ret == -EAGAIN)
			commit(w);
		else
			make_room(w);
		journal_space(w);
	}
}

/* A write of @len sectors at @lba: writeback (dirty) or writethrough. */
static void do_write(struct world *w, u32 d, u32 lba, u32 len, bool dirty)
{
	u8 *data = malloc(len * SECTOR);
	u32 i, done = 0;

	REQUIRE(data);
	for (i = 0; i < len; i++) {
		w->ver[d][lba + i]++;
		make_sector(data + i * SECTOR, d, lba + i, w->ver[d][lba + i]);
		if (!dirty) {
			/* writethrough: the backing write completes too */
			w->backing[d][lba + i] = w->ver[d][lba + i];
			event(w, EV_BACK, d, lba + i, w->ver[d][lba + i], 0);
		}
	}
	while (done < len) {
		struct bkc_key k;
		u64 bucket, seq;
		u32 off, got;
		u8 gen;
		int ret;

		ret = bkc_core_alloc_data(w->c, dirty ? 0 : 1, len - done,
					  &bucket, &off, &got, &gen);
		if (ret == -ENOSPC) {
			make_room(w);
			continue;
		}
		REQUIRE(ret == 0);
		sim_write(w->s, bucket, off * SECTOR, data + done * SECTOR,
			  got * SECTOR, 0);
		bkc_key_init(&k, devs[d], lba + done, got, bucket, off, gen,
			     dirty);
		insert_key(w, &k, &seq);
		bkc_core_data_put(w->c, bucket);
		for (i = 0; i < got; i++)
			event(w, EV_ACK, d, lba + done + i,
			      w->ver[d][lba + done + i], seq);
		done += got;
	}
	free(data);
}

/* Writearound: to the backing device, then forget the cached copy. */
static void do_writearound(struct world *w, u32 d, u32 lba, u32 len)
{
	u64 seq;
	u32 i;
	int ret, tries = 0;

	for (i = 0; i < len; i++) {
		w->ver[d][lba + i]++;
		w->backing[d][lba + i] = w->ver[d][lba + i];
		event(w, EV_BACK, d, lba + i, w->ver[d][lba + i], 0);
	}
	while ((ret = bkc_core_invalidate(w->c, devs[d], lba, len, &seq))) {
		REQUIRE(tries++ < 20);
		if (ret == -EAGAIN)
			commit(w);
		else
			make_room(w);
	}
	for (i = 0; i < len; i++)
		event(w, EV_ACK, d, lba + i, w->ver[d][lba + i], seq);
}

/* Writeback: copy dirty data to the backing device, then mark clean. */
static void writeback_some(struct world *w, u32 max)
{
	struct bkc_key keys[16];
	u32 d = rnd(w, NDEV), i, j, n = 0;
	u64 from = rnd(w, NLBA), seq;
	int got, ret;

	while (n < max) {
		got = bkc_btree_next_dirty(&w->c->tree, devs[d], from, keys, 16);
		REQUIRE(got >= 0);
		if (!got) {
			if (!from)
				return;
			from = 0;
			continue;
		}
		for (i = 0; i < (u32)got; i++) {
			const u8 *p = sim_bucket(w->s, bkc_key_bucket(&keys[i]));
			u32 lba = bkc_pos_lba(keys[i].pos);

			for (j = 0; j < keys[i].len; j++) {
				long v = read_sector(p + (keys[i].off + j) *
						     SECTOR, d, lba + j);

				REQUIRE(v >= 0);
				if ((u32)v > w->backing[d][lba + j]) {
					w->backing[d][lba + j] = v;
					event(w, EV_BACK, d, lba + j, v, 0);
				}
			}
			/* the backing device was flushed before this */
			ret = bkc_core_mark_clean(w->c, &keys[i], &seq);
			if (ret == -EAGAIN || ret == -ENOSPC) {
				commit(w);
				ret = bkc_core_mark_clean(w->c, &keys[i],
							  &seq);
			}
			REQUIRE(ret >= 0 || ret == -EAGAIN || ret == -ENOSPC);
			n++;
		}
		from = bkc_pos_lba(bkc_key_end(&keys[got - 1]));
		if (from >= NLBA)
			from = 0;
		if (got < 16)
			return;
	}
}

static void move_cb(void *arg, const struct bkc_key *k)
{
	struct world *w = arg;

	if (w->nmoves < ARRAY_SIZE(w->moves))
		w->moves[w->nmoves++] = *k;
}

/* GC moves: copy the data, then re-point what still maps to it. */
static void do_moves(struct world *w)
{
	u32 i;

	for (i = 0; i < w->nmoves; i++) {
		struct bkc_key *k = &w->moves[i];
		u64 bucket, seq;
		u32 off, got;
		u8 gen;
		int ret;

		if (bkc_core_ptr_stale(w->c, k))
			continue;
		ret = bkc_core_alloc_data(w->c, 2, k->len, &bucket, &off,
					  &got, &gen);
		if (ret)
			continue;
		sim_write(w->s, bucket, off * SECTOR,
			  sim_bucket(w->s, bkc_key_bucket(k)) + k->off * SECTOR,
			  got * SECTOR, 0);
		k->len = got;
		ret = bkc_core_move(w->c, k, bucket, off, gen, &seq);
		if (ret == -EAGAIN) {
			commit(w);
			ret = bkc_core_move(w->c, k, bucket, off, gen, &seq);
		}
		bkc_core_data_put(w->c, bucket);
	}
	w->nmoves = 0;
}

static void gc_some(struct world *w)
{
	int ret;

	if (w->gc.state == BKC_GC_IDLE) {
		if (!bkc_gc_wanted(&w->gc) && rnd(w, 4))
			return;
		bkc_gc_start(&w->gc);
	}
	ret = bkc_gc_step(&w->gc, 64, move_cb, w);
	do_moves(w);
	if (ret == BKC_GC_WAIT) {
		/* all nodes, or as the meta thread does: those up to the walk */
		flush_nodes(w, rnd(w, 2) ? bkc_gc_end_seq(&w->gc) : 0);
		write_table(w);
		commit(w);
		commit(w);
		ret = bkc_gc_step(&w->gc, 64, move_cb, w);
	}
	if (!ret && w->gc.state == BKC_GC_IDLE)
		w->gc_passes++;
	REQUIRE(ret >= 0 || ret == -ENOSPC);
}

static void read_some(struct world *w, u32 d, u32 lba, u32 len);

static void workload(struct world *w, u32 nops)
{
	u32 i;

	for (i = 0; i < nops; i++) {
		u32 op = rnd(w, 100), d = rnd(w, NDEV);
		u32 len = 1 + rnd(w, rnd(w, 3) ? 8 : 40);
		u32 lba = rnd(w, NLBA - len + 1);

		if (rnd(w, 3) == 0)	/* hot spot: overwrites */
			lba = rnd(w, 32) * 4;
		if (op < 55)
			do_write(w, d, lba, len, true);
		else if (op < 70)
			do_write(w, d, lba, len, false);
		else if (op < 76)
			do_writearound(w, d, lba, len);
		else if (op < 82)
			writeback_some(w, 8);
		else
			read_some(w, d, lba, len);
		if (rnd(w, 8) == 0)
			commit_async(w, false);	/* FUA write or flush */
		if (rnd(w, 40) == 0)
			flush_nodes(w, 0);
		if (rnd(w, 150) == 0)
			write_table(w);
		if (rnd(w, 10) == 0)
			gc_some(w);
		if (bkc_alloc_want_invalidate(&w->c->alloc))
			refill(w);
		journal_space(w);
	}
	commit(w);
}

struct rd {
	struct world	*w;
	u32		d;
};

static int read_cb(void *arg, const struct bkc_key *k, u64 pos, u32 len)
{
	struct rd *r = arg;
	struct world *w = r->w;
	u32 lba = bkc_pos_lba(pos), i;

	for (i = 0; i < len; i++) {
		long v;

		if (!k) {
			CHECK_EQ(w->backing[r->d][lba + i],
				 w->ver[r->d][lba + i]);
			continue;
		}
		v = read_sector(sim_bucket(w->s, bkc_key_bucket(k)) +
				(k->off + i) * SECTOR, r->d, lba + i);
		CHECK_EQ(v, w->ver[r->d][lba + i]);
	}
	if (k)
		bkc_core_touch(w->c, bkc_key_bucket(k));
	return 0;
}

/* Reads in the running system see the newest data. */
static void read_some(struct world *w, u32 d, u32 lba, u32 len)
{
	struct rd r = { .w = w, .d = d };

	CHECK_EQ(bkc_btree_lookup(&w->c->tree, devs[d], lba, len, read_cb, &r),
		 0);
}

/* ---- recovery ---- */

struct view {
	struct world	*w;
	u8		**snap;		/* bucket images at the last flush */
	u32		from;		/* writes (from, upto) overlay snap */
	u32		upto;
	u8		*drop;		/* per write index in [from, upto) */
};

static struct view *cur_view;

static void view_fill(struct sim *s, u64 bucket, u8 *buf)
{
	struct view *v = cur_view;
	u32 i;

	if (v->snap[bucket])
		memcpy(buf, v->snap[bucket], s->bucket_bytes);
	for (i = v->from; i < v->upto; i++) {
		struct dw *d = &v->w->log[i];

		if (d->bucket == bucket && !v->drop[i - v->from])
			memcpy(buf + d->off, d->data, d->len);
	}
}

static int view_read(void *ctx, u64 bucket, u32 off, void *buf, u32 len)
{
	struct sim *s = ctx;

	if (bucket >= s->geom.nbuckets || off + len > s->bucket_bytes)
		return -EIO;
	memcpy(buf, sim_bucket(s, bucket) + off, len);
	return 0;
}

static const struct bkc_core_ops view_ops = { .read = view_read };

/* Expected state at a crash point. */
struct expect {
	u32	flushed[NDEV][NLBA];
	u32	maxver[NDEV][NLBA];
	u32	backing[NDEV][NLBA];
	bool	any_flushed;
};

struct vchk {
	struct sim	*s;
	struct expect	*x;
	u32		d;
	u64		bad;
	u64		sectors;
};

static void bad(struct vchk *v, const char *what, u32 lba, long got)
{
	if (v->bad++ < 5)
		fprintf(stderr, "  dev %u lba %u: %s\n    got %ld flushed %u max %u backing %u\n",
			v->d, lba, what, got, v->x->flushed[v->d][lba],
			v->x->maxver[v->d][lba], v->x->backing[v->d][lba]);
}

static int verify_cb(void *arg, const struct bkc_key *k, u64 pos, u32 len)
{
	struct vchk *v = arg;
	struct expect *x = v->x;
	u32 lba = bkc_pos_lba(pos), i, d = v->d;

	for (i = 0; i < len; i++, lba++) {
		long got;

		v->sectors++;
		if (!k) {
			got = x->backing[d][lba];
			if ((u32)got < x->flushed[d][lba])
				bad(v, "miss returns older data than flushed",
				    lba, got);
			continue;
		}
		got = read_sector(sim_bucket(v->s, bkc_key_bucket(k)) +
				  (k->off + i) * SECTOR, d, lba);
		if (got < 0) {
			bad(v, "hit on garbage or another LBA's data", lba, got);
			continue;
		}
		if ((u32)got < x->flushed[d][lba])
			bad(v, "hit older than the flushed data", lba, got);
		if ((u32)got > x->maxver[d][lba])
			bad(v, "hit on data never written", lba, got);
		if (!bkc_key_dirty(k) && x->backing[d][lba] < (u32)got)
			bad(v, "clean key for data not on the backing device",
			    lba, got);
	}
	return 0;
}

struct counts {
	const struct bkc_alloc	*a;
	u32			*live;	/* per bucket */
	u32			*dsum;	/* per dirty summary slot */
};

static int count_cb(void *arg, const struct bkc_key *k)
{
	struct counts *n = arg;

	n->live[bkc_key_bucket(k)] += k->len;
	sim_dsum_count(n->a, k, n->dsum);
	return 0;
}

struct stats {
	u64	points;
	u64	scenarios;
	u64	sectors;
	u64	rechecks;
	u64	failures;
	u64	fresh;
};

static u64 verify(struct world *w, struct bkc_core *c, struct sim *s,
		  struct expect *x, struct stats *st)
{
	struct bkc_btree_check bc;
	struct vchk v = { .s = s, .x = x };
	struct counts n = { .a = &c->alloc };
	u64 i;

	if (bkc_btree_check(&c->tree, &bc)) {
		fprintf(stderr, "  recovered tree: %s\n", bc.why);
		return 1;
	}
	for (v.d = 0; v.d < NDEV; v.d++)
		REQUIRE(bkc_btree_lookup(&c->tree, devs[v.d], 0, NLBA,
					 verify_cb, &v) == 0);
	n.live = calloc(c->geom.nbuckets, sizeof(u32));
	n.dsum = calloc(c->alloc.dsum_mask + 1, sizeof(u32));
	REQUIRE(n.live && n.dsum);
	REQUIRE(bkc_btree_iter(&c->tree, 0, BKC_POS_MAX, false, count_cb,
			       &n) == 0);
	for (i = 0; i < c->geom.nbuckets; i++)
		if (n.live[i] != c->alloc.b[i].live) {
			if (v.bad++ < 5)
				fprintf(stderr, "  bucket %llu live %u counted %u\n",
					(unsigned long long)i,
					c->alloc.b[i].live, n.live[i]);
		}
	/* the dirty summary, rebuilt at registration, matches the keys */
	v.bad += sim_dsum_diff(&c->alloc, n.dsum);
	free(n.live);
	free(n.dsum);
	st->sectors += v.sectors;
	return v.bad;
}

static u64 recover(struct world *w, struct expect *x, struct view *vw,
		   bool again, struct stats *st)
{
	struct bkc_core_config cfg = { .node_bytes = 4096, .ndevs = 16 };
	struct bkc_core *c = calloc(1, sizeof(*c));
	struct sim *s = calloc(1, sizeof(*s));
	u64 nbad = 0;
	int ret;

	REQUIRE(c && s);
	sim_init(s, &w->c->geom, 4096);
	s->fill = view_fill;
	cur_view = vw;
	cfg.seed = st->scenarios;
	REQUIRE(bkc_core_init(c, &w->sb, &cfg, &sim_btree_ops, &view_ops,
			      s) == 0);
	s->t = &c->tree;
	ret = bkc_core_open(c);
	if (ret == -ENOENT) {
		/* nothing was ever committed: only the backing device */
		if (x->any_flushed) {
			fprintf(stderr, "  no journal, but flushed writes\n");
			nbad = 1;
		}
		st->fresh++;
		goto out;
	}
	if (ret) {
		fprintf(stderr, "  open failed: %d\n", ret);
		nbad = 1;
		goto out;
	}
	nbad = verify(w, c, s, x, st);
	if (nbad && getenv("BKC_DEBUG"))
		fprintf(stderr, "  recovered: S %llu last %llu max %llu table seq %llu root b%llu\n",
			(unsigned long long)c->journal.durable_seq,
			(unsigned long long)c->journal.durable_last,
			(unsigned long long)c->journal.max_seq,
			(unsigned long long)c->table.seq,
			(unsigned long long)c->tree.disk_root.bucket);
	if (!nbad && again) {
		/* checkpoint the recovered cache, then recover it again */
		struct world w2 = { .c = c, .s = s };
		struct bkc_core *c2 = calloc(1, sizeof(*c2));
		struct sim *s2 = calloc(1, sizeof(*s2));
		struct stats dummy = { 0 };
		u64 b;

		REQUIRE(c2 && s2);
		w2.buf = malloc(c->bucket_bytes);
		REQUIRE(w2.buf);
		checkpoint(&w2);
		free(w2.buf);

		sim_init(s2, &c->geom, 4096);
		for (b = 0; b < c->geom.nbuckets; b++)
			if (s->mem[b])
				memcpy(sim_bucket(s2, b), s->mem[b],
				       s->bucket_bytes);
		s2->fill = view_fill;
		REQUIRE(bkc_core_init(c2, &w->sb, &cfg, &sim_btree_ops,
				      &view_ops, s2) == 0);
		s2->t = &c2->tree;
		ret = bkc_core_open(c2);
		if (ret) {
			fprintf(stderr, "  second open failed: %d\n", ret);
			nbad = 1;
		} else {
			nbad = verify(w, c2, s2, x, &dummy);
		}
		bkc_core_exit(c2);
		sim_exit(s2);
		free(c2);
		free(s2);
		st->rechecks++;
	}
out:
	bkc_core_exit(c);
	sim_exit(s);
	free(c);
	free(s);
	return nbad;
}

static void sweep(struct world *w, u64 seed, struct stats *st)
{
	struct expect *x = calloc(1, sizeof(*x));
	struct view vw = { .w = w };
	u64 nb = w->c->geom.nbuckets, durable = 0;
	u32 i, e = 0, ack = 0, last_flush = 0, j;

	REQUIRE(x);
	vw.snap = calloc(nb, sizeof(u8 *));
	vw.drop = calloc(w->nlog + 1, 1);
	REQUIRE(vw.snap && vw.drop);
	for (i = 0; i <= w->nlog; i++) {
		u32 nvol = 0, sc;

		/* events up to this point happened; flushes completed */
		while (e < w->nev && w->ev[e].at <= i) {
			struct ev *v = &w->ev[e++];

			if (v->ver > x->maxver[v->d][v->lba])
				x->maxver[v->d][v->lba] = v->ver;
			if (v->type == EV_BACK && v->ver > x->backing[v->d][v->lba])
				x->backing[v->d][v->lba] = v->ver;
		}
		while (ack < w->nev) {
			struct ev *v = &w->ev[ack];

			if (v->type == EV_ACK && v->seq > durable)
				break;
			if (v->type == EV_ACK &&
			    v->ver > x->flushed[v->d][v->lba]) {
				x->flushed[v->d][v->lba] = v->ver;
				x->any_flushed = true;
			}
			ack++;
		}
		/* writes since the last PREFLUSH that were not FUA may go */
		vw.from = last_flush;
		vw.upto = i;
		for (j = last_flush; j < i; j++)
			nvol += !(w->log[j].flags & SIM_FUA);
		for (sc = 0; sc < 4; sc++) {
			u64 nbad;

			if ((sc == 1 && !nvol) || (sc >= 2 && nvol < 2))
				break;
			for (j = vw.from; j < i; j++) {
				bool vol = !(w->log[j].flags & SIM_FUA);

				vw.drop[j - vw.from] = vol &&
					(sc == 1 || (sc >= 2 && rnd(w, 2)));
			}
			nbad = recover(w, x, &vw, (st->scenarios % 16) == 0,
				       st);
			st->scenarios++;
			if (nbad && getenv("BKC_DEBUG")) {
				for (j = i > 40 ? i - 40 : 0; j < i; j++)
					fprintf(stderr, "   w%u: b%llu off %u len %u fl %u j %llu drop %u\n",
						j, (unsigned long long)w->log[j].bucket,
						w->log[j].off, w->log[j].len,
						w->log[j].flags,
						(unsigned long long)w->log[j].jseq,
						j >= vw.from ? vw.drop[j - vw.from] : 0);
			}
			if (nbad) {
				fprintf(stderr, "seed %llu: crash at write %u of %u, scenario %u: %llu problems\n",
					(unsigned long long)seed, i, w->nlog,
					sc, (unsigned long long)nbad);
				st->failures++;
				CHECK(0);
				if (st->failures > 3)
					goto out;
			}
		}
		st->points++;
		if (i == w->nlog)
			break;
		/* write i completes: a PREFLUSH makes everything before it
		 * durable, so fold it all into the snapshot
		 */
		if (w->log[i].jseq && w->log[i].jseq > durable)
			durable = w->log[i].jseq;
		if (w->log[i].flags & SIM_PREFLUSH) {
			for (j = last_flush; j <= i; j++) {
				struct dw *d = &w->log[j];

				if (!vw.snap[d->bucket]) {
					vw.snap[d->bucket] =
						calloc(1, w->s->bucket_bytes);
					REQUIRE(vw.snap[d->bucket]);
				}
				memcpy(vw.snap[d->bucket] + d->off, d->data,
				       d->len);
			}
			last_flush = i + 1;
		}
	}
out:
	for (i = 0; i < nb; i++)
		free(vw.snap[i]);
	free(vw.snap);
	free(vw.drop);
	free(x);
}

static void run(u64 seed, u32 nops, struct stats *st)
{
	struct bkc_core_config cfg = { .node_bytes = 4096, .ndevs = 16 };
	struct world *w = calloc(1, sizeof(*w));
	const char *why;
	u64 s0 = st->scenarios;
	u32 i;

	REQUIRE(w);
	w->c = calloc(1, sizeof(*w->c));
	w->s = calloc(1, sizeof(*w->s));
	REQUIRE(w->c && w->s);
	w->rng = seed | 1;
	cfg.seed = seed;
	memset(&w->sb, 0, sizeof(w->sb));
	w->sb.version = BKC_SB_VERSION;
	w->sb.block_size = 512;
	w->sb.bucket_size = 8192;
	memset(w->sb.set_uuid, 0x5a, BKC_UUID_SIZE);
	w->sb.set_uuid[0] = seed;
	REQUIRE(bkc_sb_init_cache(&w->sb, 320ULL * 8192, &why) == 0);
	w->sb.replacement = seed % BKC_REPL_NR;

	sim_init(w->s, &(struct bkc_geom){
		.nbuckets = w->sb.nbuckets, .first_bucket = w->sb.first_bucket,
		.bucket_sectors = 16, .block_bytes = 512,
		.set_magic = bkc_set_magic(w->sb.set_uuid) }, 4096);
	w->s->on_write = log_write;
	w->s->hook_arg = w;
	w->buf = malloc(w->sb.bucket_size);
	REQUIRE(w->buf);
	REQUIRE(bkc_core_init(w->c, &w->sb, &cfg, &sim_btree_ops, &view_ops,
			      w->s) == 0);
	w->s->t = &w->c->tree;
	bkc_gc_init(&w->gc, w->c);
	w->logging = true;
	REQUIRE(bkc_core_format(w->c) == 0);
	checkpoint(w);
	w->async = true;
	workload(w, nops);
	commit_finish(w);
	printf("  seed %llu: %u ops, %u device writes, %llu commits\n",
	       (unsigned long long)seed, nops, w->nlog,
	       (unsigned long long)w->commits);
	printf("    gc: %llu keys scanned, %llu stale dropped, %llu merges, %llu keys moved\n",
	       (unsigned long long)w->gc.stats.keys_scanned,
	       (unsigned long long)w->gc.stats.stale_dropped,
	       (unsigned long long)w->gc.stats.merges,
	       (unsigned long long)w->c->stats.moved);
	printf("    %llu node flushes, %llu tables, %llu gc passes\n",
	       (unsigned long long)w->flushes,
	       (unsigned long long)w->tables,
	       (unsigned long long)w->gc_passes);
	sweep(w, seed, st);
	printf("    %llu crash scenarios recovered and checked\n",
	       (unsigned long long)(st->scenarios - s0));
	bkc_core_exit(w->c);
	sim_exit(w->s);
	for (i = 0; i < w->nlog; i++)
		free(w->log[i].data);
	free(w->log);
	free(w->ev);
	free(w->buf);
	free(w->c);
	free(w->s);
	free(w);
}

int main(int argc, char **argv)
{
	u32 nops = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000;
	const char *env = getenv("BKC_SEED");
	struct stats st = { 0 };
	u64 rseed;

	if (env) {
		run(strtoull(env, NULL, 0), nops, &st);
	} else {
		rseed = (u64)time(NULL) ^ ((u64)clock() << 16);
		printf("test_crash: random seed %llu (BKC_SEED=%llu)\n",
		       (unsigned long long)rseed, (unsigned long long)rseed);
		run(1, nops, &st);
		run(2, nops, &st);
		run(rseed, nops, &st);
	}
	printf("test_crash: %llu crash points, %llu scenarios recovered\n",
	       (unsigned long long)st.points,
	       (unsigned long long)st.scenarios);
	printf("test_crash: %llu before the first commit, %llu recovered twice\n",
	       (unsigned long long)st.fresh,
	       (unsigned long long)st.rechecks);
	printf("test_crash: %llu sectors verified, %llu failed scenarios\n",
	       (unsigned long long)st.sectors,
	       (unsigned long long)st.failures);
	return tcheck_done("test_crash");
}
