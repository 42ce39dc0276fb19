// SPDX-License-Identifier: GPL-2.0
/*
 * metamap: where the metadata of a stopped cache device lives, for tests
 * that damage it on purpose.
 *
 *   metamap [-v] <dev>
 *
 * Opens <dev> (a cache device or an image file) read-only, decodes its
 * superblock and opens the portable core on it exactly as the kernel does
 * (bkc_core_init() and bkc_core_open(), with a node cache in plain memory
 * and reads done with pread), then walks the durable btree.  Prints one
 * line per region, "<name> <byte offset> <length>":
 *
 *   sb 4096 4096
 *   journal<i> ...      every journal bucket, whole
 *   journal<i>_used ... the start of that bucket up to the end of its last
 *                       valid entry (a block if it holds none)
 *   root ...            the root node (bytes written in its bucket)
 *   interior ...        a non-root interior node, or "interior none"
 *   leaf ...            a leaf that is not the root, or "leaf none"
 *   root_last, interior_last, leaf_last ...
 *                       the newest bset of that node (the one written
 *                       last): its offset and the bytes its checksum covers
 *   table ...           the first bucket of the durable bucket table
 *                       (its bytes in use), or "table none"
 *
 * and "journal_newest <i>" (the ring bucket of the newest entry the
 * replay picked) and "depth <n>".  -v adds a few lines about the tree on
 * stderr.  Nothing is ever written.  Exit status 0, or 1 if the device
 * cannot be opened as the kernel would (the error on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"

/* ---- the device ---- */

struct mm {
	int			fd;
	u64			dev_bytes;
	u32			bucket_bytes;
	u64			nbuckets;
	struct bkc_btree	*t;	/* the tree nodes are decoded for */
	struct mm_node		**cache; /* per bucket */
	u8			*iobuf;	/* node_bytes */
	u32			node_bytes;
};

struct mm_node {
	struct bkc_node	n;
	int		pins;
	bool		indexed;
};

static int dev_read(struct mm *m, u64 off, void *buf, u32 len)
{
	u32 done = 0;

	while (done < len) {
		ssize_t r = pread(m->fd, (u8 *)buf + done, len - done,
				  off + done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -EIO;
		if (!r) {
			/* past the end of an image file: zeroes */
			memset((u8 *)buf + done, 0, len - done);
			break;
		}
		done += r;
	}
	return 0;
}

/* bkc_core_ops.read: journal and table buckets while opening. */
static int mm_read(void *ctx, u64 bucket, u32 offset, void *buf, u32 len)
{
	struct mm *m = ctx;

	if (bucket >= m->nbuckets || offset + len > m->bucket_bytes ||
	    offset + len < offset)
		return -EIO;
	return dev_read(m, bucket * m->bucket_bytes + offset, buf, len);
}

static const struct bkc_core_ops mm_core_ops = { .read = mm_read };

/* ---- the node cache: as tests/unit/sim.c, but read from the device ---- */

static struct mm_node *node_new(struct mm *m)
{
	struct mm_node *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->n.base = malloc(bkc_btree_base_bytes(m->t));
	x->n.delta = malloc(bkc_btree_delta_bytes(m->t));
	if (!x->n.base || !x->n.delta) {
		free(x->n.base);
		free(x->n.delta);
		free(x);
		return NULL;
	}
	x->n.priv = x;
	return x;
}

static void node_free(struct mm_node *x)
{
	free(x->n.base);
	free(x->n.delta);
	free(x);
}

static int mm_get(void *ctx, const struct bkc_nptr *p, u64 lo, u64 hi,
		  struct bkc_node **out)
{
	struct mm *m = ctx;
	struct mm_node *x;
	int ret;

	if (p->bucket >= m->nbuckets)
		return -EUCLEAN;
	x = m->cache[p->bucket];
	if (x) {
		if ((u32)x->n.seq != (u32)p->seq || x->n.gen != p->gen)
			return -ESTALE;
		x->pins++;
		*out = &x->n;
		return 0;
	}
	x = node_new(m);
	if (!x)
		return -ENOMEM;
	ret = dev_read(m, p->bucket * m->bucket_bytes, m->iobuf,
		       m->node_bytes);
	if (!ret)
		ret = bkc_btree_node_decode(m->t, &x->n, m->iobuf, p, lo, hi);
	if (ret) {
		fprintf(stderr, "metamap: btree node in bucket %llu: %s (%d)\n",
			(unsigned long long)p->bucket,
			ret == -EIO ? "read error" : "invalid", ret);
		node_free(x);
		return ret;
	}
	x->pins = 1;
	x->indexed = true;
	m->cache[p->bucket] = x;
	*out = &x->n;
	return 0;
}

static void mm_put(void *ctx, struct bkc_node *n)
{
	struct mm_node *x = n->priv;

	if (x->pins <= 0)
		abort();
	if (!--x->pins && !x->indexed)
		node_free(x);
}

static struct bkc_node *mm_alloc(void *ctx, u64 bucket)
{
	struct mm *m = ctx;
	struct mm_node *x;

	if (bucket >= m->nbuckets || m->cache[bucket])
		abort();	/* the allocator handed out a bucket in use */
	x = node_new(m);
	if (!x)
		return NULL;
	x->pins = 1;
	x->indexed = true;
	m->cache[bucket] = x;
	return &x->n;
}

static void mm_drop(void *ctx, struct bkc_node *n)
{
	struct mm *m = ctx;
	struct mm_node *x = n->priv;

	if (!x->indexed || m->cache[n->bucket] != x)
		abort();
	x->indexed = false;
	m->cache[n->bucket] = NULL;
	if (!x->pins)
		node_free(x);
}

static const struct bkc_btree_ops mm_btree_ops = {
	.get	= mm_get,
	.put	= mm_put,
	.alloc	= mm_alloc,
	.drop	= mm_drop,
};

static int mm_init(struct mm *m, int fd, u64 dev_bytes,
		   const struct bkc_sb_info *sb)
{
	memset(m, 0, sizeof(*m));
	m->fd = fd;
	m->dev_bytes = dev_bytes;
	m->bucket_bytes = sb->bucket_size;
	m->nbuckets = sb->nbuckets;
	m->cache = calloc(m->nbuckets, sizeof(*m->cache));
	return m->cache ? 0 : -ENOMEM;
}

static void mm_exit(struct mm *m)
{
	u64 i;

	for (i = 0; i < m->nbuckets; i++)
		if (m->cache[i] && !m->cache[i]->pins)
			node_free(m->cache[i]);
	free(m->cache);
	free(m->iobuf);
}

/* ---- the walk ---- */

struct pick {
	struct bkc_btree *t;
	u32	block_bytes;
	u32	node_bytes;
	u64	nodes;
	u64	leaves;
	u64	keys;
	u64	interior_bucket;	/* ~0: none */
	u32	interior_len;
	u32	interior_written;
	u8	interior_level;
	u64	leaf_bucket;		/* ~0: none */
	u32	leaf_len;
	u32	leaf_written;
	u32	leaf_keys;
};

/* Bytes of a node worth damaging: what was written, at least a block. */
static u32 node_len(const struct pick *p, const struct bkc_node *n)
{
	u32 len = n->written;

	if (len < p->block_bytes)
		len = p->block_bytes;
	if (len > p->node_bytes)
		len = p->node_bytes;
	return len;
}

static int pick_node(void *arg, struct bkc_node *n)
{
	struct pick *p = arg;

	p->nodes++;
	if (n == p->t->root)
		return 0;
	if (!n->level) {
		p->leaves++;
		p->keys += n->nbase;
		/* the first leaf, the one walks and lookups reach first */
		if (p->leaf_bucket == ~0ULL) {
			p->leaf_bucket = n->bucket;
			p->leaf_len = node_len(p, n);
			p->leaf_written = n->written;
			p->leaf_keys = n->nbase;
		}
	} else if (p->interior_bucket == ~0ULL) {
		p->interior_bucket = n->bucket;
		p->interior_len = node_len(p, n);
		p->interior_written = n->written;
		p->interior_level = n->level;
	}
	return 0;
}

/*
 * The newest bset of the node in @bucket (@written bytes in use): follow
 * the chain from offset 0 as the decoder does, each bset starting at the
 * block after the previous one's keys.
 */
static int last_bset(struct mm *m, u64 bucket, u32 written, u32 block,
		     u64 *off, u32 *len)
{
	u32 at = 0, next, bytes;
	u8 *buf = malloc(m->bucket_bytes);

	if (!buf || dev_read(m, bucket * m->bucket_bytes, buf, m->bucket_bytes)) {
		free(buf);
		return -EIO;
	}
	*off = bucket * m->bucket_bytes;
	*len = BKC_BSET_HDR;
	while (at + BKC_BSET_HDR <= written) {
		const struct bkc_bset *b = (const void *)(buf + at);

		bytes = BKC_BSET_HDR + le32_to_cpu(b->nkeys) *
			(u32)sizeof(struct bkc_bkey);
		if (le32_to_cpu(b->offset) != at || bytes > written - at)
			break;
		*off = bucket * m->bucket_bytes + at;
		*len = bytes;
		next = DIV_ROUND_UP(at + bytes, block) * block;
		if (next <= at)
			break;
		at = next;
	}
	free(buf);
	return 0;
}

static void print_last(struct mm *m, const char *name, u64 bucket,
		       u32 written, u32 block)
{
	u64 off;
	u32 len;

	if (!last_bset(m, bucket, written, block, &off, &len))
		printf("%s_last %llu %u\n", name, (unsigned long long)off, len);
}

static u64 dev_size(int fd)
{
	struct stat st;
	u64 bytes;

	if (fstat(fd, &st))
		return 0;
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, BLKGETSIZE64, &bytes) ? 0 : bytes;
	return st.st_size;
}

static void usage(void)
{
	fprintf(stderr, "usage: metamap [-v] <cache device or image>\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct bkc_core_config cfg = { 0 };
	struct bkc_sb_info sb;
	struct bkc_sb raw;
	struct bkc_core *c;
	struct bkc_btree *dt;
	struct bkc_node *droot;
	struct pick pk;
	struct mm m, dm;
	const char *why = NULL, *path;
	int fd, ret, verbose = 0;
	u64 bytes, tb;
	u32 i, tlen, used[BKC_SB_MAX_JOURNAL_BUCKETS];
	u8 *tbuf;

	if (argc == 3 && !strcmp(argv[1], "-v")) {
		verbose = 1;
		path = argv[2];
	} else if (argc == 2 && argv[1][0] != '-') {
		path = argv[1];
	} else {
		usage();
	}
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	bytes = dev_size(fd);
	if (pread(fd, &raw, sizeof(raw), BKC_SB_OFFSET) != (ssize_t)sizeof(raw)) {
		fprintf(stderr, "metamap: %s: cannot read the superblock\n", path);
		return 1;
	}
	ret = bkc_sb_decode(&raw, bytes, &sb, &why);
	if (ret) {
		fprintf(stderr, "metamap: %s: %s (%d)\n", path, why, ret);
		return 1;
	}
	if (sb.dev_type != BKC_DEV_CACHE) {
		fprintf(stderr, "metamap: %s: not a cache device\n", path);
		return 1;
	}
	if (!(sb.flags & BKC_SB_F_INITIALIZED)) {
		fprintf(stderr, "metamap: %s: never registered, no metadata yet\n",
			path);
		return 1;
	}

	/* the core, opened as the kernel opens it (meta.c) */
	c = calloc(1, sizeof(*c));
	dt = calloc(1, sizeof(*dt));
	if (!c || !dt || mm_init(&m, fd, bytes, &sb) ||
	    mm_init(&dm, fd, bytes, &sb)) {
		fprintf(stderr, "metamap: out of memory\n");
		return 1;
	}
	ret = bkc_core_init(c, &sb, &cfg, &mm_btree_ops, &mm_core_ops, &m);
	if (ret) {
		fprintf(stderr, "metamap: cannot set up the core (%d)\n", ret);
		return 1;
	}
	m.t = &c->tree;
	m.node_bytes = bkc_core_node_bytes(c);
	m.iobuf = malloc(m.node_bytes);
	if (!m.iobuf)
		return 1;
	ret = bkc_core_open(c);
	if (ret) {
		fprintf(stderr, "metamap: cannot replay the cache metadata: %s (%d)\n",
			ret == -ENOENT ? "no valid journal entry" : "bad metadata",
			ret);
		return 1;
	}

	/*
	 * The replay may have changed the tree in memory (new nodes, splits):
	 * walk the durable tree, the one the newest journal entry names,
	 * through a second node cache that only reads from the device.
	 */
	if (!c->tree.disk_root.bucket) {
		fprintf(stderr, "metamap: the journal names no btree root\n");
		return 1;
	}
	ret = bkc_btree_init(dt, &c->geom, m.node_bytes, &mm_btree_ops, &dm,
			     &c->alloc);
	if (ret) {
		fprintf(stderr, "metamap: cannot set up the tree (%d)\n", ret);
		return 1;
	}
	dm.t = dt;
	dm.node_bytes = m.node_bytes;
	dm.iobuf = malloc(dm.node_bytes);
	if (!dm.iobuf)
		return 1;
	ret = bkc_btree_open(dt, &c->tree.disk_root);
	if (ret) {
		fprintf(stderr, "metamap: cannot open the durable root (%d)\n",
			ret);
		return 1;
	}
	droot = dt->root;
	memset(&pk, 0, sizeof(pk));
	pk.t = dt;
	pk.block_bytes = sb.block_size;
	pk.node_bytes = m.node_bytes;
	pk.interior_bucket = ~0ULL;
	pk.leaf_bucket = ~0ULL;
	ret = bkc_btree_walk_nodes(dt, pick_node, &pk);
	if (ret) {
		fprintf(stderr, "metamap: walking the tree failed (%d)\n", ret);
		return 1;
	}

	/* the durable table's first bucket, as much of it as is in use */
	tb = c->table.ptr & BKC_PTR_BUCKET_MASK;
	tlen = 0;
	if (c->table.ptr) {
		tbuf = malloc(sb.bucket_size);
		if (!tbuf || dev_read(&m, tb * sb.bucket_size, tbuf,
				      sb.bucket_size))
			return 1;
		tlen = le32_to_cpu(((struct bkc_table *)tbuf)->bytes);
		tlen = DIV_ROUND_UP(tlen, sb.block_size) * sb.block_size;
		if (tlen < sb.block_size || tlen > sb.bucket_size)
			tlen = sb.bucket_size;
		free(tbuf);
	}

	/* the bytes of each journal bucket that hold valid entries */
	tbuf = malloc(sb.bucket_size);
	if (!tbuf)
		return 1;
	for (i = 0; i < sb.nr_journal_buckets; i++) {
		struct bkc_jset_info h;
		u32 off = 0;

		used[i] = sb.block_size;
		if (mm_read(&m, sb.journal_buckets[i], 0, tbuf, sb.bucket_size))
			return 1;
		/* as bkc_journal_scan_bucket() walks it */
		while (off + BKC_JSET_HDR <= sb.bucket_size) {
			if (bkc_journal_entry_check(&c->geom, tbuf + off,
						    sb.bucket_size - off, &h)) {
				off += sb.block_size;
				continue;
			}
			off += DIV_ROUND_UP(h.bytes, sb.block_size) *
				sb.block_size;
			if (off > sb.bucket_size)
				off = sb.bucket_size;
			used[i] = off;
		}
	}
	free(tbuf);

	printf("sb %llu %u\n", BKC_SB_OFFSET, BKC_SB_SIZE);
	for (i = 0; i < sb.nr_journal_buckets; i++) {
		u64 off = sb.journal_buckets[i] * sb.bucket_size;

		printf("journal%u %llu %u\n", i, (unsigned long long)off,
		       sb.bucket_size);
		printf("journal%u_used %llu %u\n", i, (unsigned long long)off,
		       used[i]);
	}
	printf("root %llu %u\n",
	       (unsigned long long)(droot->bucket * sb.bucket_size),
	       node_len(&pk, droot));
	print_last(&m, "root", droot->bucket, droot->written, sb.block_size);
	if (pk.interior_bucket != ~0ULL) {
		printf("interior %llu %u\n",
		       (unsigned long long)(pk.interior_bucket * sb.bucket_size),
		       pk.interior_len);
		print_last(&m, "interior", pk.interior_bucket,
			   pk.interior_written, sb.block_size);
	} else {
		printf("interior none\n");
	}
	if (pk.leaf_bucket != ~0ULL) {
		printf("leaf %llu %u\n",
		       (unsigned long long)(pk.leaf_bucket * sb.bucket_size),
		       pk.leaf_len);
		print_last(&m, "leaf", pk.leaf_bucket, pk.leaf_written,
			   sb.block_size);
	} else {
		printf("leaf none\n");
	}
	if (c->table.ptr)
		printf("table %llu %u\n",
		       (unsigned long long)(tb * sb.bucket_size), tlen);
	else
		printf("table none\n");
	printf("journal_newest %u\n", c->journal.cur);
	printf("depth %u\n", droot->level + 1u);

	if (verbose) {
		fprintf(stderr,
			"metamap: %llu buckets of %u bytes, nodes of %u bytes; journal: %u buckets, newest seq %llu (last %llu)\n",
			(unsigned long long)sb.nbuckets, sb.bucket_size,
			m.node_bytes, sb.nr_journal_buckets,
			(unsigned long long)c->journal.durable_seq,
			(unsigned long long)c->journal.durable_last);
		fprintf(stderr,
			"metamap: durable tree: depth %u, %llu nodes, %llu non-root leaves with %llu keys; root bucket %llu (%u keys)\n",
			droot->level + 1u, (unsigned long long)pk.nodes,
			(unsigned long long)pk.leaves,
			(unsigned long long)pk.keys,
			(unsigned long long)droot->bucket, droot->nbase);
		if (pk.leaf_bucket != ~0ULL)
			fprintf(stderr, "metamap: leaf: bucket %llu, %u keys\n",
				(unsigned long long)pk.leaf_bucket,
				pk.leaf_keys);
		if (pk.interior_bucket != ~0ULL)
			fprintf(stderr, "metamap: interior: bucket %llu, level %u\n",
				(unsigned long long)pk.interior_bucket,
				pk.interior_level);
		fprintf(stderr, "metamap: table: %llu (seq %llu, %u buckets)\n",
			(unsigned long long)tb,
			(unsigned long long)c->table.seq, c->table.nr);
	}

	bkc_btree_exit(dt);
	bkc_core_exit(c);
	mm_exit(&dm);
	mm_exit(&m);
	free(dt);
	free(c);
	close(fd);
	return 0;
}
