// SPDX-License-Identifier: GPL-2.0
/*
 * The extent B+tree.  See btree.h for the model and
 * Documentation/blkcache/design-core.rst for the reasoning.
 *
 * Keys never cross a node boundary: a node covers [lo, hi) and an insert
 * that spans several leaves is cut into one piece per leaf.  Interior keys
 * are pivots: child i covers [key[i].pos, key[i + 1].pos), the last child
 * up to the node's hi.
 */
#include "btree.h"
#include "alloc.h"

struct path_ent {
	struct bkc_node	*node;
	u32		idx;	/* index of the child we went down to */
};

/* ---- small helpers ---- */

u32 bkc_btree_base_bytes(const struct bkc_btree *t)
{
	return t->max_keys * sizeof(struct bkc_key);
}

u32 bkc_btree_delta_bytes(const struct bkc_btree *t)
{
	return t->delta_keys * sizeof(struct bkc_key);
}

static u32 round_block(const struct bkc_btree *t, u32 bytes)
{
	u32 bs = t->geom.block_bytes;

	return (bytes + bs - 1) & ~(bs - 1);
}

static void node_put(struct bkc_btree *t, struct bkc_node *n)
{
	if (n && n != t->root)
		t->ops->put(t->ctx, n);
}

static void path_release(struct bkc_btree *t, struct path_ent *path, u32 from)
{
	u32 l;

	for (l = from; l < BKC_BTREE_MAX_DEPTH; l++) {
		node_put(t, path[l].node);
		path[l].node = NULL;
	}
}

static void child_key(const struct bkc_node *c, struct bkc_key *k)
{
	k->pos = c->lo;
	k->ptr = bkc_mkptr(c->bucket, c->gen, 0);
	k->len = 0;
	k->off = (u32)c->seq;
}

static void child_ptr(const struct bkc_node *p, u32 i, struct bkc_nptr *cp,
		      u64 *lo, u64 *hi)
{
	const struct bkc_key *k = &p->base[i];

	cp->bucket = bkc_key_bucket(k);
	cp->gen = bkc_key_gen(k);
	cp->seq = k->off;
	cp->level = p->level - 1;
	*lo = k->pos;
	*hi = i + 1 < p->nbase ? p->base[i + 1].pos : p->hi;
}

static int child_get(struct bkc_btree *t, struct bkc_node *p, u32 i,
		     struct bkc_node **out)
{
	struct bkc_nptr cp;
	u64 lo, hi;
	int ret;

	child_ptr(p, i, &cp, &lo, &hi);
	ret = t->ops->get(t->ctx, &cp, lo, hi, out);
	if (ret) {
		t->bad_bucket = cp.bucket;
		return ret;
	}
	if ((*out)->lo != lo || (*out)->hi != hi ||
	    (*out)->level != cp.level || (*out)->bucket != cp.bucket) {
		t->ops->put(t->ctx, *out);
		*out = NULL;
		t->bad_bucket = cp.bucket;
		return -EUCLEAN;
	}
	return 0;
}

bool bkc_btree_key_stale(const struct bkc_btree *t, const struct bkc_key *k)
{
	if (bkc_key_hole(k))
		return false;
	return !bkc_alloc_key_live(t->alloc, k);
}

/* ---- dirty/in-flight lists ---- */

static bool listed(const struct bkc_node *n)
{
	return n->flags & (BKC_NODE_DIRTY | BKC_NODE_INFLIGHT);
}

static void dirty_list_add(struct bkc_btree *t, struct bkc_node *n)
{
	struct bkc_node **head = &t->dirty[n->level];

	n->dprev = NULL;
	n->dnext = *head;
	if (*head)
		(*head)->dprev = n;
	*head = n;
}

static void dirty_list_del(struct bkc_btree *t, struct bkc_node *n)
{
	if (n->dprev)
		n->dprev->dnext = n->dnext;
	else
		t->dirty[n->level] = n->dnext;
	if (n->dnext)
		n->dnext->dprev = n->dprev;
	n->dnext = NULL;
	n->dprev = NULL;
}

static void pin_add(struct bkc_node *n, u64 min_seq, u64 max_seq)
{
	if (min_seq && (!n->pin_min || min_seq < n->pin_min))
		n->pin_min = min_seq;
	if (max_seq > n->pin_max)
		n->pin_max = max_seq;
}

static void mark_dirty(struct bkc_btree *t, struct bkc_node *n, u64 jseq)
{
	if (!(n->flags & BKC_NODE_DIRTY)) {
		if (!listed(n))
			dirty_list_add(t, n);
		n->flags |= BKC_NODE_DIRTY;
		t->nr_dirty[n->level]++;
	}
	pin_add(n, jseq, jseq);
	if (jseq > n->journal_seq)
		n->journal_seq = jseq;
}

static void clear_dirty(struct bkc_btree *t, struct bkc_node *n)
{
	if (n->flags & BKC_NODE_DIRTY) {
		n->flags &= ~BKC_NODE_DIRTY;
		t->nr_dirty[n->level]--;
		if (!listed(n))
			dirty_list_del(t, n);
	}
}

/* ---- node life cycle ---- */

static struct bkc_node *node_new(struct bkc_btree *t, u8 level, u64 lo,
				 u64 hi, int *err)
{
	struct bkc_node *n;
	u64 b;

	*err = bkc_alloc_bucket(t->alloc, BKC_ALLOC_BTREE, &b);
	if (*err)
		return NULL;
	n = t->ops->alloc(t->ctx, b);
	if (!n) {
		bkc_alloc_freeing(t->alloc, b);
		t->nr_freeing++;
		*err = -ENOMEM;
		return NULL;
	}
	n->bucket = b;
	n->gen = bkc_alloc_gen(t->alloc, b);
	n->seq = t->node_seq++;
	n->lo = lo;
	n->hi = hi;
	n->level = level;
	n->nbase = 0;
	n->ndelta = 0;
	n->written = 0;
	n->nbsets = 0;
	n->last_csum = 0;
	n->pin_min = 0;
	n->pin_max = 0;
	n->wpin = 0;
	n->journal_seq = 0;
	n->dnext = NULL;
	n->dprev = NULL;
	n->flags = BKC_NODE_NEW;
	t->nr_new[level]++;
	mark_dirty(t, n, 0);
	return n;
}

/* @n has been replaced in the tree; its bucket is freed later. */
static void node_kill(struct bkc_btree *t, struct bkc_node *n)
{
	clear_dirty(t, n);
	if (n->flags & BKC_NODE_NEW) {
		n->flags &= ~BKC_NODE_NEW;
		t->nr_new[n->level]--;
	}
	bkc_alloc_freeing(t->alloc, n->bucket);
	t->nr_freeing++;
	n->flags |= BKC_NODE_DEAD;
	if (!(n->flags & BKC_NODE_INFLIGHT))
		t->ops->drop(t->ctx, n);
}

/* @n arrives pinned by node_new() or get(); that pin becomes the root's. */
static void set_root(struct bkc_btree *t, struct bkc_node *n)
{
	t->root = n;
}

/* ---- interior node edits (base is the truth, delta logs changes) ---- */

static void interior_log(struct bkc_btree *t, struct bkc_node *p,
			 const struct bkc_key *e)
{
	u32 i;

	if (p->flags & (BKC_NODE_REWRITE | BKC_NODE_NEW))
		return;
	i = bkc_keys_find(p->delta, p->ndelta, e->pos);
	if (i < p->ndelta) {
		p->delta[i] = *e;
		return;
	}
	if (p->ndelta >= t->delta_keys) {
		p->flags |= BKC_NODE_REWRITE;
		p->ndelta = 0;
		return;
	}
	i = bkc_keys_last_le(p->delta, p->ndelta, e->pos);
	i = i < p->ndelta ? i + 1 : 0;
	memmove(&p->delta[i + 1], &p->delta[i],
		(p->ndelta - i) * sizeof(*p->delta));
	p->delta[i] = *e;
	p->ndelta++;
}

static int interior_set(struct bkc_btree *t, struct bkc_node *p,
			const struct bkc_key *e)
{
	u32 i = bkc_keys_last_le(p->base, p->nbase, e->pos);

	if (i < p->nbase && p->base[i].pos == e->pos) {
		p->base[i] = *e;
	} else {
		if (p->nbase >= t->max_keys)
			return -E2BIG;
		i = i < p->nbase ? i + 1 : 0;
		memmove(&p->base[i + 1], &p->base[i],
			(p->nbase - i) * sizeof(*p->base));
		p->base[i] = *e;
		p->nbase++;
	}
	interior_log(t, p, e);
	return 0;
}

static void interior_del(struct bkc_btree *t, struct bkc_node *p, u64 pos)
{
	struct bkc_key hole;
	u32 i = bkc_keys_find(p->base, p->nbase, pos);

	if (i >= p->nbase)
		return;
	memmove(&p->base[i], &p->base[i + 1],
		(p->nbase - i - 1) * sizeof(*p->base));
	p->nbase--;
	hole.pos = pos;
	hole.ptr = BKC_KEY_HOLE;
	hole.len = 0;
	hole.off = 0;
	interior_log(t, p, &hole);
}

/* ---- descent ---- */

/*
 * Fill @path from the root down to @level for position @pos.  Every node
 * except the root is pinned; path_release() releases them.
 */
static int descend(struct bkc_btree *t, u64 pos, u8 level,
		   struct path_ent *path)
{
	struct bkc_node *n = t->root;
	int ret;

	memset(path, 0, sizeof(*path) * BKC_BTREE_MAX_DEPTH);
	path[n->level].node = n;
	while (n->level > level) {
		u32 i = bkc_keys_last_le(n->base, n->nbase, pos);
		struct bkc_node *c;

		if (i >= n->nbase)
			i = 0;
		path[n->level].idx = i;
		ret = child_get(t, n, i, &c);
		if (ret) {
			path_release(t, path, 0);
			return ret;
		}
		path[c->level].node = c;
		n = c;
	}
	return 0;
}

/* ---- splitting ---- */

static int split_node(struct bkc_btree *t, struct path_ent *path, u8 level,
		      const struct bkc_key *keys, u32 cnt);

/*
 * Replace @old (at @level of @path) by @a, and @b if not NULL, in the
 * parent, or make them children of a new root.  Pins of @old move to the
 * parent, whose pointer change makes the new nodes reachable.
 */
static int replace_in_parent(struct bkc_btree *t, struct path_ent *path,
			     u8 level, struct bkc_node *old,
			     struct bkc_node *a, struct bkc_node *b)
{
	struct bkc_node *p;
	struct bkc_key e;
	int ret;

	if (old == t->root) {
		if (!b) {
			set_root(t, a);
			return 0;
		}
		if (level + 1 >= BKC_BTREE_MAX_DEPTH)
			return -E2BIG;
		p = node_new(t, level + 1, 0, BKC_POS_MAX, &ret);
		if (!p)
			return ret;
		child_key(a, &p->base[0]);
		child_key(b, &p->base[1]);
		p->nbase = 2;
		pin_add(p, old->pin_min, old->pin_max);
		set_root(t, p);
		path[level + 1].node = p;
		path[level + 1].idx = 0;
		return 0;
	}
	p = path[level + 1].node;
	child_key(a, &e);
	ret = interior_set(t, p, &e);
	if (!ret && b) {
		child_key(b, &e);
		ret = interior_set(t, p, &e);
	}
	if (ret)
		return ret;
	mark_dirty(t, p, 0);
	pin_add(p, old->pin_min, old->pin_max);
	if (p->nbase > t->split_keys) {
		/*
		 * The new children are linked already, so a parent that
		 * cannot split now just stays over-full until it can.
		 */
		ret = split_node(t, path, level + 1, p->base, p->nbase);
		if (ret == -ENOSPC)
			ret = 0;
	}
	return ret;
}

/* Split the node at @level of @path, whose resolved keys are @keys. */
static int split_node(struct bkc_btree *t, struct path_ent *path, u8 level,
		      const struct bkc_key *keys, u32 cnt)
{
	struct bkc_node *n = path[level].node, *a, *b;
	u32 mid = cnt / 2;
	int ret;

	if (cnt < 2)
		return -EUCLEAN;
	a = node_new(t, level, n->lo, keys[mid].pos, &ret);
	if (!a)
		return ret;
	b = node_new(t, level, keys[mid].pos, n->hi, &ret);
	if (!b) {
		node_kill(t, a);
		t->ops->put(t->ctx, a);
		return ret;
	}
	memcpy(a->base, keys, mid * sizeof(*keys));
	a->nbase = mid;
	memcpy(b->base, keys + mid, (cnt - mid) * sizeof(*keys));
	b->nbase = cnt - mid;
	pin_add(a, n->pin_min, n->pin_max);
	pin_add(b, n->pin_min, n->pin_max);
	a->journal_seq = n->journal_seq;
	b->journal_seq = n->journal_seq;

	ret = replace_in_parent(t, path, level, n, a, b);
	if (ret) {
		/* keep the old node; the new ones were never linked */
		node_kill(t, a);
		node_kill(t, b);
		t->ops->put(t->ctx, a);
		t->ops->put(t->ctx, b);
		return ret;
	}
	t->stats.splits++;
	if (n == path[level].node)
		path[level].node = NULL;
	if (a != t->root)
		t->ops->put(t->ctx, a);
	if (b != t->root)
		t->ops->put(t->ctx, b);
	node_kill(t, n);
	node_put(t, n);
	return 0;
}

/* Merge a leaf's delta into its base, splitting the leaf if it is full. */
static int leaf_compact(struct bkc_btree *t, struct path_ent *path)
{
	struct bkc_node *n = path[0].node;
	u32 cap = t->max_keys + 2 * t->delta_keys;
	u32 cnt;

	cnt = bkc_keys_overlay(n->base, n->nbase, n->delta, n->ndelta,
			       t->scratch, cap);
	if (cnt > cap)
		return -EUCLEAN;
	if (cnt > t->split_keys) {
		int ret = split_node(t, path, 0, t->scratch, cnt);

		if (ret != -ENOSPC || cnt > t->max_keys)
			return ret;
		/* no bucket for a split: keep the node over-full */
	}
	memcpy(n->base, t->scratch, cnt * sizeof(*n->base));
	n->nbase = cnt;
	n->ndelta = 0;
	n->flags |= BKC_NODE_REWRITE;
	return 0;
}

/* ---- leaf overlay walk ---- */

/*
 * Call @fn for every resolved piece of leaf @n in [s, e): keys clipped to
 * the range, and holes (BKC_KEY_HOLE keys) for the gaps.
 */
typedef int (*piece_fn)(void *arg, const struct bkc_key *k);

/* leaf_walk() with @j = bkc_keys_first_after(n->delta, n->ndelta, s). */
static int leaf_walk_at(const struct bkc_node *n, u64 s, u64 e, u32 j,
			piece_fn fn, void *arg)
{
	u32 i = bkc_keys_first_after(n->base, n->nbase, s);
	struct bkc_key k;
	u64 cur = s;
	int ret;

	while (cur < e) {
		u64 nxt;

		if (j < n->ndelta && n->delta[j].pos <= cur) {
			u64 pe = min_t(u64, e, bkc_key_end(&n->delta[j]));

			k = n->delta[j];
			bkc_key_cut_front(&k, cur - k.pos);
			bkc_key_cut_back(&k, pe - cur);
			ret = fn(arg, &k);
			if (ret)
				return ret;
			cur = pe;
			j++;
			continue;
		}
		nxt = j < n->ndelta ? min_t(u64, n->delta[j].pos, e) : e;
		while (cur < nxt) {
			while (i < n->nbase && bkc_key_end(&n->base[i]) <= cur)
				i++;
			if (i < n->nbase && n->base[i].pos < nxt) {
				u64 pe;

				if (n->base[i].pos > cur) {
					bkc_key_init_hole(&k, cur,
							  n->base[i].pos - cur);
					ret = fn(arg, &k);
					if (ret)
						return ret;
					cur = n->base[i].pos;
				}
				pe = min_t(u64, nxt, bkc_key_end(&n->base[i]));
				k = n->base[i];
				bkc_key_cut_front(&k, cur - k.pos);
				bkc_key_cut_back(&k, pe - cur);
				ret = fn(arg, &k);
				if (ret)
					return ret;
				cur = pe;
			} else {
				/* a gap; pieces are at most 2^32 - 1 long */
				u64 pe = nxt - cur > 0xffffffffULL ?
					 cur + 0xffffffffULL : nxt;

				bkc_key_init_hole(&k, cur, pe - cur);
				ret = fn(arg, &k);
				if (ret)
					return ret;
				cur = pe;
			}
		}
	}
	return 0;
}

static int leaf_walk(const struct bkc_node *n, u64 s, u64 e, piece_fn fn,
		     void *arg)
{
	return leaf_walk_at(n, s, e,
			    bkc_keys_first_after(n->delta, n->ndelta, s),
			    fn, arg);
}

/* A piece of an older key that an insert replaces. */
static int account_sub(void *arg, const struct bkc_key *k)
{
	struct bkc_btree *t = arg;

	if (!bkc_key_hole(k))
		t->stats.overwrites++;
	bkc_alloc_account(t->alloc, k, -1);
	return 0;
}

/* ---- insert ---- */

u32 bkc_btree_insert_reserve(const struct bkc_btree *t)
{
	return 2 * bkc_btree_depth(t) + 2;
}

/*
 * Can every leaf covering [from, to) be had without failing?  Descends to
 * each of them (the caller's node cache may refuse to read one from disk
 * now): so that an insert spanning several leaves either changes all of
 * them or none.
 */
static int leaves_present(struct bkc_btree *t, u64 from, u64 to)
{
	struct path_ent path[BKC_BTREE_MAX_DEPTH];
	u64 pos = from;
	int ret;

	while (pos < to) {
		ret = descend(t, pos, 0, path);
		if (ret)
			return ret;
		pos = path[0].node->hi;
		path_release(t, path, 0);
	}
	return 0;
}

int bkc_btree_insert(struct bkc_btree *t, const struct bkc_key *key, u64 jseq)
{
	struct path_ent path[BKC_BTREE_MAX_DEPTH];
	struct bkc_key k = *key, piece;
	bool held;
	int ret;

	if (!k.len || bkc_pos_lba(k.pos) + k.len > BKC_LBA_MAX + 1 ||
	    bkc_pos_dev(k.pos) > BKC_MAX_DEV)
		return -EINVAL;
	/* a key over several leaves: all of them first, or nothing changes */
	ret = descend(t, k.pos, 0, path);
	if (ret)
		return ret;
	held = true;
	if (bkc_key_end(&k) > path[0].node->hi) {
		path_release(t, path, 0);
		held = false;
		ret = leaves_present(t, k.pos, bkc_key_end(&k));
		if (ret)
			return ret;
	}
	while (k.len) {
		struct bkc_node *n;
		u64 end;
		u32 j;

		if (bkc_alloc_avail(t->alloc, BKC_ALLOC_BTREE) <
		    bkc_btree_insert_reserve(t)) {
			if (held)
				path_release(t, path, 0);
			return -ENOSPC;
		}
		/* the first piece of a key within one leaf: its path is held */
		if (!held) {
			ret = descend(t, k.pos, 0, path);
			if (ret)
				return ret;
		}
		held = false;
		n = path[0].node;
		if (n->ndelta + 2 > t->delta_keys) {
			ret = leaf_compact(t, path);
			path_release(t, path, 0);
			if (ret)
				return ret;
			continue;	/* the leaf may have split */
		}
		piece = k;
		end = min_t(u64, bkc_key_end(&k), n->hi);
		bkc_key_cut_back(&piece, end - k.pos);
		/* where the piece goes in the delta: for both, searched once */
		j = bkc_keys_first_after(n->delta, n->ndelta, piece.pos);
		if (!t->no_account)
			leaf_walk_at(n, piece.pos, end, j, account_sub, t);
		ret = bkc_keys_paint_at(n->delta, &n->ndelta, t->delta_keys,
					&piece, j);
		if (!ret) {
			if (!t->no_account)
				bkc_alloc_account(t->alloc, &piece, 1);
			mark_dirty(t, n, jseq);
		}
		path_release(t, path, 0);
		if (ret)
			return ret;
		bkc_key_cut_front(&k, end - k.pos);
	}
	t->stats.inserts++;
	return 0;
}

/* ---- pinning leaves for a later change ---- */

int bkc_btree_pin_range(struct bkc_btree *t, u64 from, u64 to,
			struct bkc_node **out, u32 max, u64 *reached)
{
	struct path_ent path[BKC_BTREE_MAX_DEPTH];
	u64 pos = from;
	u32 n = 0;
	int ret;

	while (pos < to) {
		if (n == max) {
			/* a leaf covers a position at least */
			BKC_ASSERT(!max || pos > from);
			if (reached)
				*reached = pos;
			return -E2BIG;
		}
		ret = descend(t, pos, 0, path);
		if (ret) {
			bkc_btree_unpin(t, out, n);
			return ret;
		}
		pos = path[0].node->hi;
		/* keep the leaf (the root is always there) */
		if (path[0].node != t->root)
			out[n++] = path[0].node;
		path[0].node = NULL;
		path_release(t, path, 1);
	}
	if (reached)
		*reached = to;
	return n;
}

void bkc_btree_unpin(struct bkc_btree *t, struct bkc_node **nodes, u32 n)
{
	u32 i;

	/* each was pinned by get(), even if it became the root since */
	for (i = 0; i < n; i++)
		t->ops->put(t->ctx, nodes[i]);
}

/* ---- lookup and iteration ---- */

struct lookup_state {
	const struct bkc_btree *t;
	bkc_lookup_fn	fn;
	void		*arg;
	u64		miss_pos;
	u64		miss_len;
};

static int lookup_flush_miss(struct lookup_state *ls)
{
	int ret = 0;

	if (ls->miss_len)
		ret = ls->fn(ls->arg, NULL, ls->miss_pos, (u32)ls->miss_len);
	ls->miss_len = 0;
	return ret;
}

static int lookup_piece(void *arg, const struct bkc_key *k)
{
	struct lookup_state *ls = arg;
	int ret;

	if (bkc_key_hole(k) || bkc_btree_key_stale(ls->t, k)) {
		if (ls->miss_len && ls->miss_pos + ls->miss_len == k->pos) {
			ls->miss_len += k->len;
			return 0;
		}
		ret = lookup_flush_miss(ls);
		ls->miss_pos = k->pos;
		ls->miss_len = k->len;
		return ret;
	}
	ret = lookup_flush_miss(ls);
	if (ret)
		return ret;
	return ls->fn(ls->arg, k, k->pos, k->len);
}

/*
 * Walk the leaves covering [s, e) and call @fn on every resolved piece,
 * holes included.  Read-only.
 */
static int range_walk(struct bkc_btree *t, u64 s, u64 e, piece_fn fn,
		      void *arg)
{
	struct path_ent path[BKC_BTREE_MAX_DEPTH];
	int ret = 0;

	while (s < e) {
		struct bkc_node *n;
		u64 le;

		ret = descend(t, s, 0, path);
		if (ret)
			return ret;
		n = path[0].node;
		le = min_t(u64, e, n->hi);
		ret = leaf_walk(n, s, le, fn, arg);
		path_release(t, path, 0);
		if (ret)
			return ret;
		s = le;
	}
	return 0;
}

int bkc_btree_lookup(struct bkc_btree *t, u32 dev, u64 lba, u32 len,
		     bkc_lookup_fn fn, void *arg)
{
	struct lookup_state ls = { .t = t, .fn = fn, .arg = arg };
	u64 s = bkc_pos(dev, lba);
	int ret;

	if (!len || dev > BKC_MAX_DEV || lba + len > BKC_LBA_MAX + 1)
		return -EINVAL;
	ret = range_walk(t, s, s + len, lookup_piece, &ls);
	if (ret)
		return ret;
	return lookup_flush_miss(&ls);
}

/*
 * The newest key of leaf @n that holds @pos, whole; NULL for a gap, a
 * hole in the delta, or a delta key that begins inside (@pos, @pos +
 * @len): the range is then not one key's, whatever holds @pos.
 */
static const struct bkc_key *leaf_at(const struct bkc_node *n, u64 pos,
				     u32 len)
{
	u32 j = bkc_keys_first_after(n->delta, n->ndelta, pos), i;

	if (j < n->ndelta && n->delta[j].pos <= pos)
		return bkc_key_hole(&n->delta[j]) ? NULL : &n->delta[j];
	if (j < n->ndelta && n->delta[j].pos < pos + len)
		return NULL;
	i = bkc_keys_first_after(n->base, n->nbase, pos);
	if (i < n->nbase && n->base[i].pos <= pos)
		return &n->base[i];
	return NULL;
}

int bkc_btree_find(struct bkc_btree *t, u32 dev, u64 lba, u32 len,
		   struct bkc_key *out)
{
	struct path_ent path[BKC_BTREE_MAX_DEPTH];
	const struct bkc_key *k = NULL;
	u64 s = bkc_pos(dev, lba);
	int ret;

	if (!len || dev > BKC_MAX_DEV || lba + len > BKC_LBA_MAX + 1)
		return -EINVAL;
	ret = descend(t, s, 0, path);
	if (ret)
		return ret;
	/* keys never cross a leaf's end: a range that does is not one key */
	if (s + len <= path[0].node->hi)
		k = leaf_at(path[0].node, s, len);
	ret = k && bkc_key_end(k) >= s + len && !bkc_btree_key_stale(t, k);
	if (ret)
		*out = *k;
	path_release(t, path, 0);
	return ret;
}

struct iter_state {
	const struct bkc_btree *t;
	bkc_iter_fn	fn;
	void		*arg;
	bool		stale;
};

static int iter_piece(void *arg, const struct bkc_key *k)
{
	struct iter_state *is = arg;

	if (bkc_key_hole(k))
		return 0;
	if (!is->stale && bkc_btree_key_stale(is->t, k))
		return 0;
	return is->fn(is->arg, k);
}

/*
 * Whole leaves are walked one at a time; gaps are skipped by jumping to
 * the next key rather than stepping through them.
 */
static int leaf_iter(const struct bkc_node *n, u64 s, u64 e,
		     struct iter_state *is)
{
	u32 i = bkc_keys_first_after(n->base, n->nbase, s);
	u32 j = bkc_keys_first_after(n->delta, n->ndelta, s);
	u64 cur = s;
	int ret;

	while (cur < e) {
		u64 nb = i < n->nbase ? max_t(u64, n->base[i].pos, cur) :
			BKC_POS_MAX;
		u64 nd = j < n->ndelta ? max_t(u64, n->delta[j].pos, cur) :
			BKC_POS_MAX;
		u64 next = min_t(u64, nb, nd), stop;

		if (next >= e)
			break;
		/* walk from the next key up to the end of the next base key */
		stop = e;
		if (i < n->nbase)
			stop = min_t(u64, e, max_t(u64, bkc_key_end(&n->base[i]),
						   next + 1));
		if (j < n->ndelta)
			stop = min_t(u64, stop,
				     max_t(u64, bkc_key_end(&n->delta[j]),
					   next + 1));
		ret = leaf_walk(n, next, stop, iter_piece, is);
		if (ret)
			return ret;
		cur = stop;
		while (i < n->nbase && bkc_key_end(&n->base[i]) <= cur)
			i++;
		while (j < n->ndelta && bkc_key_end(&n->delta[j]) <= cur)
			j++;
	}
	return 0;
}

int bkc_btree_iter(struct bkc_btree *t, u64 from, u64 to, bool stale,
		   bkc_iter_fn fn, void *arg)
{
	struct iter_state is = { .t = t, .fn = fn, .arg = arg, .stale = stale };
	struct path_ent path[BKC_BTREE_MAX_DEPTH];
	int ret;

	while (from < to) {
		struct bkc_node *n;
		u64 le;

		ret = descend(t, from, 0, path);
		if (ret)
			return ret;
		n = path[0].node;
		le = min_t(u64, to, n->hi);
		ret = leaf_iter(n, from, le, &is);
		path_release(t, path, 0);
		if (ret)
			return ret > 0 ? 0 : ret;
		from = le;
	}
	return 0;
}

struct dirty_state {
	struct bkc_key	*out;
	u32		n;
	u32		max;
};

static int dirty_piece(void *arg, const struct bkc_key *k)
{
	struct dirty_state *ds = arg;

	if (!bkc_key_dirty(k))
		return 0;
	ds->out[ds->n++] = *k;
	return ds->n >= ds->max;
}

int bkc_btree_next_dirty(struct bkc_btree *t, u32 dev, u64 lba,
			 struct bkc_key *out, u32 max)
{
	struct dirty_state ds = { .out = out, .max = max };
	int ret;

	if (!max || dev > BKC_MAX_DEV)
		return -EINVAL;
	ret = bkc_btree_iter(t, bkc_pos(dev, lba), bkc_pos(dev + 1, 0),
			     false, dirty_piece, &ds);
	return ret < 0 ? ret : (int)ds.n;
}

struct match_state {
	const struct bkc_btree *t;
	const struct bkc_key *k;
	struct bkc_key	*out;
	u32		n;
	u32		max;
	bool		dirty_only;
};

static int match_piece(void *arg, const struct bkc_key *k)
{
	struct match_state *ms = arg;

	if (bkc_key_hole(k) || (ms->dirty_only && !bkc_key_dirty(k)) ||
	    !bkc_key_same_data(k, ms->k) || bkc_btree_key_stale(ms->t, k))
		return 0;
	if (ms->n >= ms->max)
		return -E2BIG;
	ms->out[ms->n++] = *k;
	return 0;
}

int bkc_btree_match(struct bkc_btree *t, const struct bkc_key *k,
		    bool dirty_only, struct bkc_key *out, u32 max)
{
	struct match_state ms = {
		.t = t, .k = k, .out = out, .max = max,
		.dirty_only = dirty_only,
	};
	int ret;

	if (!k->len || bkc_key_hole(k))
		return -EINVAL;
	ret = range_walk(t, k->pos, bkc_key_end(k), match_piece, &ms);
	return ret ? ret : (int)ms.n;
}

/* ---- writing nodes ---- */

u64 bkc_btree_pin(const struct bkc_btree *t)
{
	u64 pin = t->root_pin;
	u32 l;

	for (l = 0; l < BKC_BTREE_MAX_DEPTH; l++) {
		const struct bkc_node *n;

		for (n = t->dirty[l]; n; n = n->dnext) {
			if (n->pin_min && (!pin || n->pin_min < pin))
				pin = n->pin_min;
			if (n->wpin && (!pin || n->wpin < pin))
				pin = n->wpin;
		}
	}
	return pin;
}

bool bkc_btree_dirty(const struct bkc_btree *t)
{
	u32 l;

	for (l = 0; l < BKC_BTREE_MAX_DEPTH; l++)
		if (t->dirty[l])
			return true;
	return false;
}

bool bkc_btree_can_release(const struct bkc_btree *t)
{
	u32 l;

	for (l = 0; l < BKC_BTREE_MAX_DEPTH; l++) {
		if (t->nr_new[l] || t->nr_inflight[l])
			return false;
		if (l && t->nr_dirty[l])
			return false;
	}
	return t->committed_ver >= t->disk_root_ver && !t->root_pin &&
		t->disk_root.bucket == t->root->bucket;
}

void bkc_btree_root_committed(struct bkc_btree *t, u64 ver)
{
	if (ver > t->committed_ver)
		t->committed_ver = ver;
	if (t->committed_ver >= t->root_pin_ver &&
	    t->disk_root.bucket == t->root->bucket &&
	    !(t->root->flags & (BKC_NODE_NEW | BKC_NODE_INFLIGHT)))
		t->root_pin = 0;
}

static void encode_node(struct bkc_btree *t, struct bkc_node *n,
			struct bkc_node_write *w, const struct bkc_key *keys,
			u32 nkeys, bool append)
{
	struct bkc_bset_info h = {
		.node_seq = n->seq, .lo = n->lo, .hi = n->hi,
		.journal_seq = n->journal_seq, .level = n->level,
	};
	u32 bytes = bkc_bset_bytes(nkeys);

	if (append) {
		h.offset = n->written;
		h.idx = n->nbsets;
		h.prev_csum = n->last_csum;
	}
	n->last_csum = bkc_bset_encode(w->buf, &h, t->geom.set_magic, keys,
				       nkeys);
	w->bytes = round_block(t, bytes);
	memset((u8 *)w->buf + bytes, 0, w->bytes - bytes);
	w->bucket = n->bucket;
	w->offset = h.offset;
	n->written = h.offset + w->bytes;
	n->nbsets = h.idx + 1;
}

/* Move a written node to a new bucket; @keys are its resolved keys. */
static int node_cow(struct bkc_btree *t, struct bkc_node *n,
		    const struct bkc_key *keys, u32 cnt, struct bkc_node **out)
{
	struct path_ent path[BKC_BTREE_MAX_DEPTH];
	bool was_root = n == t->root;
	struct bkc_node *m;
	int ret;

	ret = descend(t, n->lo, n->level, path);
	if (ret)
		return ret;
	if (path[n->level].node != n) {
		path_release(t, path, 0);
		return -EUCLEAN;
	}
	m = node_new(t, n->level, n->lo, n->hi, &ret);
	if (!m) {
		path_release(t, path, 0);
		return ret;
	}
	memcpy(m->base, keys, cnt * sizeof(*keys));
	m->nbase = cnt;
	m->journal_seq = n->journal_seq;
	pin_add(m, n->pin_min, n->pin_max);
	ret = replace_in_parent(t, path, n->level, n, m, NULL);
	if (ret) {
		node_kill(t, m);
		t->ops->put(t->ctx, m);
		path_release(t, path, 0);
		return ret;
	}
	/* the path pins @n unless it was the root, which has its own pin */
	if (was_root)
		path[n->level].node = NULL;
	path_release(t, path, 0);
	node_kill(t, n);
	if (was_root)
		t->ops->put(t->ctx, n);
	t->stats.cows++;
	*out = m;
	return 0;
}

/* Split a node found by position (used when a write finds it too full). */
static int node_split_at(struct bkc_btree *t, struct bkc_node *n,
			 const struct bkc_key *keys, u32 cnt)
{
	struct path_ent path[BKC_BTREE_MAX_DEPTH];
	int ret;

	ret = descend(t, n->lo, n->level, path);
	if (ret)
		return ret;
	if (path[n->level].node != n) {
		path_release(t, path, 0);
		return -EUCLEAN;
	}
	ret = split_node(t, path, n->level, keys, cnt);
	path_release(t, path, 0);
	return ret;
}

static bool level_ready(const struct bkc_btree *t, u32 l)
{
	return !l || !t->nr_new[l - 1];
}

/*
 * Buckets a leaf must leave for the interior nodes when it moves: every
 * dirty interior node may have to move too before old node buckets can be
 * released, and the release is what gives buckets back.
 */
static bool leaf_may_move(const struct bkc_btree *t)
{
	u32 need = bkc_btree_depth(t) + 1, l;

	for (l = 1; l < BKC_BTREE_MAX_DEPTH; l++)
		need += t->nr_dirty[l];
	return bkc_alloc_avail(t->alloc, BKC_ALLOC_BTREE) > need;
}

/*
 * Prepare the write of @n.  Returns 1 if @w was filled, 0 if the node
 * changed shape instead (split) and the caller should pick again.
 */
static int prepare_node(struct bkc_btree *t, struct bkc_node *n,
			struct bkc_node_write *w)
{
	u32 cap = t->max_keys + 2 * t->delta_keys;
	bool whole = n->flags & (BKC_NODE_NEW | BKC_NODE_REWRITE);
	const struct bkc_key *keys = n->base;
	struct bkc_node *target = n;
	u64 pmin = n->pin_min;
	u32 cnt = n->nbase;
	int ret;

	if (!whole && (n->nbsets >= BKC_NODE_MAX_BSETS ||
		       n->written + round_block(t, bkc_bset_bytes(n->ndelta)) >
		       t->node_bytes))
		whole = true;
	if (!n->level) {
		cnt = bkc_keys_overlay(n->base, n->nbase, n->delta, n->ndelta,
				       t->scratch, cap);
		if (cnt > cap)
			return -EUCLEAN;
		keys = t->scratch;
	}
	if (!n->level && !(n->flags & BKC_NODE_NEW) &&
	    (whole || cnt > t->split_keys) && !leaf_may_move(t))
		return -ENOSPC;
	if (cnt > t->split_keys) {
		ret = node_split_at(t, n, keys, cnt);
		if (!ret)
			return 0;
		if (ret != -ENOSPC || cnt > t->max_keys)
			return ret;
		whole = true;	/* no bucket to split into: write it full */
	}

	w->cow = false;
	if (!whole) {
		/* append the delta as a new bset */
		encode_node(t, n, w, n->delta, n->ndelta, true);
		t->stats.appends++;
	} else if (n->flags & BKC_NODE_NEW) {
		encode_node(t, n, w, keys, cnt, false);
	} else {
		ret = node_cow(t, n, keys, cnt, &target);
		if (ret)
			return ret;
		/* from here on the new node is the one being written */
		keys = target->base;
		encode_node(t, target, w, keys, cnt, false);
		w->cow = true;
	}
	if (!target->level && target == n) {
		memcpy(n->base, t->scratch, cnt * sizeof(*n->base));
		n->nbase = cnt;
	}
	target->ndelta = 0;
	target->flags &= ~BKC_NODE_REWRITE;
	/* the keys stay pinned until the write is done ... */
	w->pin = pmin;
	target->wpin = pmin;
	/* ... and a new root's until the journal points at it */
	if (target == t->root && (w->cow || (target->flags & BKC_NODE_NEW)) &&
	    pmin && (!t->root_pin || pmin < t->root_pin))
		t->root_pin = pmin;
	target->pin_min = 0;
	target->pin_max = 0;
	target->flags |= BKC_NODE_INFLIGHT;
	t->nr_inflight[target->level]++;
	clear_dirty(t, target);
	w->node = target;
	w->level = target->level;
	t->stats.nodes_written++;
	t->stats.bytes_written += w->bytes;
	if (target != n && target != t->root)
		t->ops->put(t->ctx, target);	/* the list holds it now */
	return 1;
}

int bkc_btree_write_prepare(struct bkc_btree *t, u64 durable_seq,
			    u64 max_pin, struct bkc_node_write *w)
{
	bool waiting = false, nospc = false;
	u32 l;
	int ret;

again:
	for (l = 0; l < BKC_BTREE_MAX_DEPTH; l++) {
		struct bkc_node *n;

		for (n = t->dirty[l]; n; n = n->dnext) {
			if (!(n->flags & BKC_NODE_DIRTY))
				continue;
			/*
			 * A leaf the caller does not ask for is not waited
			 * for either: under steady writes some leaf always
			 * holds records newer than @durable_seq, and counting
			 * it would make every bounded flush commit again.
			 */
			if (max_pin && !l && !(n->flags & BKC_NODE_NEW) &&
			    (!n->pin_min || n->pin_min > max_pin))
				continue;
			if (n->flags & BKC_NODE_INFLIGHT || !level_ready(t, l) ||
			    n->pin_max > durable_seq) {
				waiting = true;
				continue;
			}
			ret = prepare_node(t, n, w);
			if (ret == -ENOSPC) {
				/*
				 * No bucket to move this node to: write what
				 * else can be written (parents above all), so
				 * that old node buckets can be released.
				 */
				nospc = true;
				continue;
			}
			if (ret < 0)
				return ret;
			if (!ret)
				goto again;
			return 1;
		}
	}
	if (nospc)
		return -ENOSPC;
	return waiting ? -EAGAIN : 0;
}

void bkc_btree_write_done(struct bkc_btree *t, struct bkc_node_write *w)
{
	struct bkc_node *n = w->node;

	n->flags &= ~BKC_NODE_INFLIGHT;
	n->wpin = 0;
	t->nr_inflight[n->level]--;
	if (n->flags & BKC_NODE_NEW) {
		n->flags &= ~BKC_NODE_NEW;
		t->nr_new[n->level]--;
	}
	if (n->flags & BKC_NODE_DEAD) {
		dirty_list_del(t, n);
		t->ops->drop(t->ctx, n);
		return;
	}
	if (!listed(n))
		dirty_list_del(t, n);
	if (n == t->root && (t->disk_root.bucket != n->bucket ||
			     t->disk_root.seq != n->seq)) {
		t->disk_root.bucket = n->bucket;
		t->disk_root.gen = n->gen;
		t->disk_root.seq = n->seq;
		t->disk_root.level = n->level;
		t->disk_root_ver++;
		t->root_pin_ver = t->disk_root_ver;
	}
}

/* ---- merging ---- */

static u32 node_resolved(struct bkc_btree *t, struct bkc_node *n,
			 struct bkc_key *out, u32 cap)
{
	if (n->level) {
		if (n->nbase > cap)
			return cap + 1;
		memcpy(out, n->base, n->nbase * sizeof(*out));
		return n->nbase;
	}
	return bkc_keys_overlay(n->base, n->nbase, n->delta, n->ndelta, out,
				cap);
}

/*
 * How many keys two siblings at @level, holding @c1 and @c2, may have
 * together and still be merged: normally few, so that the merged node has
 * room to grow.  But a node with nothing of its own to hold (an empty leaf,
 * or an interior node with a single child) merges whenever the result
 * fits, even with a sibling too full for an ordinary merge (an interior
 * node may then have to split when written).  Else it could stay for good:
 * its other neighbour may be under another parent, out of reach here.
 */
static u32 merge_limit(const struct bkc_btree *t, u8 level, u32 c1, u32 c2)
{
	if (min_t(u32, c1, c2) <= (level ? 1U : 0U))
		return t->split_keys + (level ? 1U : 0U);
	return t->merge_keys;
}

int bkc_btree_coalesce(struct bkc_btree *t, u64 pos, u8 level)
{
	struct path_ent path[BKC_BTREE_MAX_DEPTH];
	u32 cap = t->max_keys + 2 * t->delta_keys;
	u32 c1, c2, idx;
	struct bkc_node *p, *l, *r, *m;
	struct bkc_key e;
	int ret;

	if (level >= t->root->level) {
		/* an interior root with one child: the child becomes root */
		struct bkc_node *c;

		if (!t->root->level || t->root->nbase != 1)
			return 0;
		if (t->root->flags & BKC_NODE_INFLIGHT)
			return 0;
		ret = child_get(t, t->root, 0, &c);
		if (ret)
			return ret;
		if (c->flags & BKC_NODE_INFLIGHT) {
			t->ops->put(t->ctx, c);
			return 0;
		}
		/* rewrite the child so that the new root gets written */
		if (!(c->flags & BKC_NODE_NEW)) {
			c->flags |= BKC_NODE_REWRITE;
			c->ndelta = c->level ? 0 : c->ndelta;
		}
		mark_dirty(t, c, 0);
		pin_add(c, t->root->pin_min, t->root->pin_max);
		p = t->root;
		t->root = c;
		node_kill(t, p);
		t->ops->put(t->ctx, p);		/* the old root's pin */
		t->stats.merges++;
		return 1;
	}
	if (t->root->level < level + 1)
		return 0;
	ret = descend(t, pos, level, path);
	if (ret)
		return ret;
	p = path[level + 1].node;
	idx = path[level + 1].idx;
	if (p->nbase < 2) {
		path_release(t, path, 0);
		return 0;
	}
	if (idx + 1 >= p->nbase)
		idx--;
	/* l and r are children idx and idx + 1 of p */
	ret = child_get(t, p, idx, &l);
	if (ret)
		goto out;
	ret = child_get(t, p, idx + 1, &r);
	if (ret) {
		t->ops->put(t->ctx, l);
		goto out;
	}
	ret = 0;
	if ((l->flags | r->flags) & BKC_NODE_INFLIGHT)
		goto out2;
	c1 = node_resolved(t, l, t->scratch, cap);
	if (c1 > t->split_keys)
		goto out2;
	c2 = node_resolved(t, r, t->scratch + c1, cap - c1);
	if (c1 + c2 > merge_limit(t, level, c1, c2))
		goto out2;
	m = node_new(t, level, l->lo, r->hi, &ret);
	if (!m)
		goto out2;
	memcpy(m->base, t->scratch, (c1 + c2) * sizeof(*m->base));
	m->nbase = c1 + c2;
	if (!level)	/* re-merge keys that continue across the boundary */
		m->nbase = bkc_keys_overlay(t->scratch, c1, t->scratch + c1,
					    c2, m->base, t->max_keys);
	pin_add(m, l->pin_min, l->pin_max);
	pin_add(m, r->pin_min, r->pin_max);
	m->journal_seq = max_t(u64, l->journal_seq, r->journal_seq);
	child_key(m, &e);
	ret = interior_set(t, p, &e);
	if (ret) {
		node_kill(t, m);
		t->ops->put(t->ctx, m);
		goto out2;
	}
	interior_del(t, p, r->lo);
	mark_dirty(t, p, 0);
	pin_add(p, m->pin_min, m->pin_max);
	t->ops->put(t->ctx, m);
	node_kill(t, l);
	node_kill(t, r);
	t->stats.merges++;
	ret = 1;
out2:
	t->ops->put(t->ctx, l);
	t->ops->put(t->ctx, r);
out:
	path_release(t, path, 0);
	return ret;
}

/* ---- walking and checking ---- */

static int walk(struct bkc_btree *t, struct bkc_node *n, bkc_node_fn fn,
		void *arg)
{
	u32 i;
	int ret = fn(arg, n);

	if (ret || !n->level)
		return ret;
	for (i = 0; i < n->nbase; i++) {
		struct bkc_node *c;

		ret = child_get(t, n, i, &c);
		if (ret)
			return ret;
		ret = walk(t, c, fn, arg);
		t->ops->put(t->ctx, c);
		if (ret)
			return ret;
	}
	return 0;
}

int bkc_btree_walk_nodes(struct bkc_btree *t, bkc_node_fn fn, void *arg)
{
	return walk(t, t->root, fn, arg);
}

static int check_fail(struct bkc_btree_check *c, const char *why)
{
	c->why = why;
	return -EUCLEAN;
}

static int check_keys(const struct bkc_key *k, u32 n, u64 lo, u64 hi,
		      bool leaf, bool holes, struct bkc_btree_check *c)
{
	u64 prev = lo;
	u32 i;

	for (i = 0; i < n; i++) {
		if (leaf) {
			if (!k[i].len)
				return check_fail(c, "empty key");
			if (bkc_key_hole(&k[i]) && !holes)
				return check_fail(c, "hole in a base array");
			if (k[i].pos < prev)
				return check_fail(c, "keys out of order or overlapping");
			if (bkc_key_end(&k[i]) > hi)
				return check_fail(c, "key beyond its node");
			prev = bkc_key_end(&k[i]);
		} else {
			if (k[i].pos < prev || k[i].pos >= hi)
				return check_fail(c, "pivots out of order or range");
			if (!i && k[i].pos != lo)
				return check_fail(c, "first pivot is not the node's lo");
			prev = k[i].pos + 1;
		}
	}
	return 0;
}

static int check_node(struct bkc_btree *t, struct bkc_node *n, u64 lo, u64 hi,
		      u8 level, struct bkc_btree_check *c)
{
	u32 cap = t->max_keys + 2 * t->delta_keys, cnt, i;
	int ret;

	if (n->lo != lo || n->hi != hi)
		return check_fail(c, "node range differs from its parent's pivots");
	if (n->level != level)
		return check_fail(c, "node level differs from its parent's");
	if (n->nbase > t->max_keys || n->ndelta > t->delta_keys)
		return check_fail(c, "node over capacity");
	c->nodes++;
	if (!level) {
		ret = check_keys(n->base, n->nbase, lo, hi, true, false, c);
		if (!ret)
			ret = check_keys(n->delta, n->ndelta, lo, hi, true,
					 true, c);
		if (ret)
			return ret;
		cnt = bkc_keys_overlay(n->base, n->nbase, n->delta, n->ndelta,
				       t->scratch, cap);
		if (cnt > t->max_keys)
			return check_fail(c, "leaf over capacity");
		c->leaves++;
		c->keys += cnt;
	} else {
		ret = check_keys(n->base, n->nbase, lo, hi, false, false, c);
		if (ret)
			return ret;
		if (!n->nbase)
			return check_fail(c, "empty interior node");
		cnt = n->nbase;
	}
	if (n != t->root) {
		c->min_fill = min_t(u32, c->min_fill, cnt);
		c->max_fill = max_t(u32, c->max_fill, cnt);
	}
	if (!level)
		return 0;
	for (i = 0; i < n->nbase; i++) {
		struct bkc_node *ch;
		u64 clo = n->base[i].pos;
		u64 chi = i + 1 < n->nbase ? n->base[i + 1].pos : hi;

		ret = child_get(t, n, i, &ch);
		if (ret) {
			c->why = "child could not be loaded";
			return ret;
		}
		ret = check_node(t, ch, clo, chi, level - 1, c);
		t->ops->put(t->ctx, ch);
		if (ret)
			return ret;
	}
	return 0;
}

int bkc_btree_check(struct bkc_btree *t, struct bkc_btree_check *c)
{
	memset(c, 0, sizeof(*c));
	c->min_fill = ~0U;
	c->depth = bkc_btree_depth(t);
	return check_node(t, t->root, 0, BKC_POS_MAX, t->root->level, c);
}

/* ---- set up ---- */

int bkc_btree_init(struct bkc_btree *t, const struct bkc_geom *g,
		   u32 node_bytes, const struct bkc_btree_ops *ops, void *ctx,
		   struct bkc_alloc *alloc)
{
	u32 bucket_bytes = g->bucket_sectors << 9;

	memset(t, 0, sizeof(*t));
	if (!is_power_of_2(node_bytes) || node_bytes < BKC_NODE_MIN_BYTES ||
	    node_bytes > BKC_NODE_MAX_BYTES || node_bytes > bucket_bytes ||
	    node_bytes < g->block_bytes)
		return -EINVAL;
	t->ops = ops;
	t->ctx = ctx;
	t->alloc = alloc;
	t->geom = *g;
	t->node_bytes = node_bytes;
	t->max_keys = (node_bytes - BKC_BSET_HDR) / sizeof(struct bkc_bkey);
	t->delta_keys = clamp_t(u32, t->max_keys / 16, 8, 512);
	t->split_keys = t->max_keys - 2 * t->delta_keys - 2;
	t->merge_keys = t->split_keys * 2 / 3;
	t->node_seq = 1;
	t->scratch = bkc_kvzalloc((t->max_keys + 2 * t->delta_keys) *
				  sizeof(struct bkc_key));
	if (!t->scratch)
		return -ENOMEM;
	return 0;
}

void bkc_btree_exit(struct bkc_btree *t)
{
	if (t->root)
		t->ops->put(t->ctx, t->root);
	t->root = NULL;
	bkc_kvfree(t->scratch);
	t->scratch = NULL;
}

int bkc_btree_create(struct bkc_btree *t)
{
	struct bkc_node *n;
	int ret;

	n = node_new(t, 0, 0, BKC_POS_MAX, &ret);
	if (!n)
		return ret;
	t->root = n;
	memset(&t->disk_root, 0, sizeof(t->disk_root));
	return 0;
}

int bkc_btree_open(struct bkc_btree *t, const struct bkc_nptr *root)
{
	struct bkc_node *n;
	int ret;

	t->bad_bucket = root->bucket;
	if (root->level >= BKC_BTREE_MAX_DEPTH)
		return -EUCLEAN;
	ret = t->ops->get(t->ctx, root, 0, BKC_POS_MAX, &n);
	if (ret)
		return ret;
	if (n->level != root->level || n->lo || n->hi != BKC_POS_MAX) {
		t->ops->put(t->ctx, n);
		return -EUCLEAN;
	}
	t->root = n;
	t->disk_root = *root;
	t->disk_root.seq = n->seq;
	return 0;
}

int bkc_btree_node_decode(struct bkc_btree *t, struct bkc_node *n,
			  const void *buf, const struct bkc_nptr *p,
			  u64 lo, u64 hi)
{
	const struct bkc_bset *b0 = buf;
	struct bkc_bset_info want = {
		.node_seq = p->seq, .lo = lo, .hi = hi, .level = p->level,
	};
	struct bkc_node_image img;
	int ret;

	if (p->level >= BKC_BTREE_MAX_DEPTH || p->bucket >= t->geom.nbuckets)
		return -EUCLEAN;
	if (t->alloc && bkc_alloc_gen(t->alloc, p->bucket) != p->gen)
		return -ESTALE;
	ret = bkc_node_decode(&t->geom, buf, t->node_bytes, &want, true,
			      n->base, t->max_keys, &img);
	if (ret)
		return ret;
	/* a damaged bset is never cut off silently (see t->lenient) */
	if (img.torn && !t->lenient)
		return -EBADMSG;
	n->bucket = p->bucket;
	n->gen = p->gen;
	n->seq = le64_to_cpu(b0->node_seq);
	n->lo = lo;
	n->hi = hi;
	n->level = p->level;
	n->nbase = img.nkeys;
	n->ndelta = 0;
	n->written = img.written;
	n->nbsets = img.nbsets;
	n->last_csum = img.last_csum;
	n->journal_seq = img.journal_seq;
	n->pin_min = 0;
	n->pin_max = 0;
	n->dnext = NULL;
	n->dprev = NULL;
	n->flags = 0;
	if (img.torn) {
		/* rewritten whole by the checkpoint after the replay */
		n->flags = BKC_NODE_REWRITE;
		mark_dirty(t, n, 0);
	}
	return 0;
}
