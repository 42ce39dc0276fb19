// SPDX-License-Identifier: GPL-2.0
/*
 * Simulated cache device and node cache for the userspace tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

void sim_init(struct sim *s, const struct bkc_geom *g, u32 node_bytes)
{
	memset(s, 0, sizeof(*s));
	s->geom = *g;
	s->bucket_bytes = g->bucket_sectors << 9;
	s->node_bytes = node_bytes;
	s->mem = calloc(g->nbuckets, sizeof(*s->mem));
	s->cache = calloc(g->nbuckets, sizeof(*s->cache));
	s->iobuf = calloc(1, node_bytes);
	if (!s->mem || !s->cache || !s->iobuf)
		abort();
}

static void node_free(struct sim *s, struct sim_node *sn)
{
	free(sn->n.base);
	free(sn->n.delta);
	free(sn);
	s->live_nodes--;
}

void sim_forget_nodes(struct sim *s)
{
	u64 i;

	for (i = 0; i < s->geom.nbuckets; i++) {
		if (s->cache[i])
			node_free(s, s->cache[i]);
		s->cache[i] = NULL;
	}
	s->nr_cached = 0;
}

void sim_exit(struct sim *s)
{
	u64 i;

	sim_forget_nodes(s);
	for (i = 0; i < s->geom.nbuckets; i++)
		free(s->mem[i]);
	free(s->mem);
	free(s->cache);
	free(s->iobuf);
}

u8 *sim_bucket(struct sim *s, u64 bucket)
{
	if (bucket >= s->geom.nbuckets)
		abort();
	if (!s->mem[bucket]) {
		s->mem[bucket] = calloc(1, s->bucket_bytes);
		if (!s->mem[bucket])
			abort();
		if (s->fill)
			s->fill(s, bucket, s->mem[bucket]);
	}
	return s->mem[bucket];
}

void sim_write(struct sim *s, u64 bucket, u32 off, const void *buf, u32 len,
	       unsigned int flags)
{
	if (off + len > s->bucket_bytes || off + len < off)
		abort();
	if (s->on_write)
		s->on_write(s, bucket, off, buf, len, flags);
	memcpy(sim_bucket(s, bucket) + off, buf, len);
}

static struct sim_node *node_new(struct sim *s)
{
	struct sim_node *sn = calloc(1, sizeof(*sn));

	if (!sn)
		abort();
	sn->n.base = malloc(bkc_btree_base_bytes(s->t));
	sn->n.delta = malloc(bkc_btree_delta_bytes(s->t));
	if (!sn->n.base || !sn->n.delta)
		abort();
	sn->n.priv = sn;
	s->live_nodes++;
	return sn;
}

static int sim_get(void *ctx, const struct bkc_nptr *p, u64 lo, u64 hi,
		   struct bkc_node **out)
{
	struct sim *s = ctx;
	struct sim_node *sn;
	int ret;

	if (p->bucket >= s->geom.nbuckets)
		return -EUCLEAN;
	sn = s->cache[p->bucket];
	if (sn) {
		if ((u32)sn->n.seq != (u32)p->seq || sn->n.gen != p->gen)
			return -ESTALE;
		sn->pins++;
		*out = &sn->n;
		return 0;
	}
	if (s->fail_reads)
		return -EIO;
	sn = node_new(s);
	memcpy(s->iobuf, sim_bucket(s, p->bucket), s->node_bytes);
	ret = bkc_btree_node_decode(s->t, &sn->n, s->iobuf, p, lo, hi);
	s->node_reads++;
	if (ret) {
		node_free(s, sn);
		return ret;
	}
	sn->pins = 1;
	sn->indexed = true;
	s->cache[p->bucket] = sn;
	s->nr_cached++;
	*out = &sn->n;
	return 0;
}

static void sim_put(void *ctx, struct bkc_node *n)
{
	struct sim *s = ctx;
	struct sim_node *sn = n->priv;

	if (sn->pins <= 0)
		abort();
	if (!--sn->pins && !sn->indexed)
		node_free(s, sn);
}

static struct bkc_node *sim_alloc(void *ctx, u64 bucket)
{
	struct sim *s = ctx;
	struct sim_node *sn;

	if (s->cache[bucket])
		abort();	/* the allocator handed out a bucket in use */
	sn = node_new(s);
	sn->pins = 1;
	sn->indexed = true;
	s->cache[bucket] = sn;
	s->nr_cached++;
	return &sn->n;
}

static void sim_drop(void *ctx, struct bkc_node *n)
{
	struct sim *s = ctx;
	struct sim_node *sn = n->priv;

	if (!sn->indexed || s->cache[n->bucket] != sn)
		abort();
	sn->indexed = false;
	s->cache[n->bucket] = NULL;
	s->nr_cached--;
	if (!sn->pins)
		node_free(s, sn);
}

const struct bkc_btree_ops sim_btree_ops = {
	.get	= sim_get,
	.put	= sim_put,
	.alloc	= sim_alloc,
	.drop	= sim_drop,
};

u64 sim_evict(struct sim *s, u32 one_in, u64 *rng)
{
	u64 i, n = 0;

	for (i = 0; i < s->geom.nbuckets; i++) {
		struct sim_node *sn = s->cache[i];

		if (!sn || sn->pins || (sn->n.flags & (BKC_NODE_DIRTY |
		    BKC_NODE_INFLIGHT | BKC_NODE_NEW)))
			continue;
		if (one_in > 1 && sim_rand(rng) % one_in)
			continue;
		s->cache[i] = NULL;
		s->nr_cached--;
		node_free(s, sn);
		n++;
	}
	return n;
}

int sim_flush_tree(struct sim *s, u64 durable_seq)
{
	struct bkc_node_write w;
	u8 *buf = malloc(s->node_bytes);
	int n = 0, ret;

	if (!buf)
		abort();
	for (;;) {
		w.buf = buf;
		ret = bkc_btree_write_prepare(s->t, durable_seq, 0, &w);
		if (ret <= 0)
			break;
		sim_write(s, w.bucket, w.offset, buf, w.bytes, SIM_FUA);
		s->node_writes++;
		bkc_btree_write_done(s->t, &w);
		n++;
	}
	free(buf);
	return ret < 0 && ret != -EAGAIN ? ret : n;
}

void sim_dsum_count(const struct bkc_alloc *a, const struct bkc_key *k,
		    u32 *dsum)
{
	u32 i;

	if (!bkc_key_dirty(k))
		return;
	for (i = 0; i < k->len; i++)
		dsum[bkc_dsum_slot(a, bkc_pos_dev(k->pos),
				   bkc_pos_lba(k->pos) + i)]++;
}

u64 sim_dsum_diff(const struct bkc_alloc *a, const u32 *dsum)
{
	u64 i, bad = 0;

	for (i = 0; i <= a->dsum_mask; i++) {
		if (a->dsum[i] == dsum[i] ||
		    (a->dsum[i] == BKC_DSUM_STUCK && dsum[i] >= BKC_DSUM_STUCK))
			continue;
		if (bad++ < 5)
			fprintf(stderr, "  dirty summary slot %llu: %u, sectors %u\n",
				(unsigned long long)i, a->dsum[i], dsum[i]);
	}
	return bad;
}
