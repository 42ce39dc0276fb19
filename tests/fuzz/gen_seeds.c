// SPDX-License-Identifier: GPL-2.0
/*
 * Writes the seed corpora of the fuzz targets, built with the real
 * encoders so that the fuzzers start from valid metadata:
 *   gen_seeds DIR   ->  DIR/sb DIR/node DIR/journal DIR/table
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "sb.h"
#include "bset.h"
#include "journal.h"
#include "table.h"
#include "fuzz.h"

static const char *dir;
static int nfiles;

static void put(const char *sub, int n, const void *a, size_t alen,
		const void *b, size_t blen)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/seed-%03d", dir, sub, n);
	f = fopen(path, "wb");
	if (!f || fwrite(a, 1, alen, f) != alen ||
	    (blen && fwrite(b, 1, blen, f) != blen)) {
		perror(path);
		exit(1);
	}
	fclose(f);
	nfiles++;
}

static void seeds_sb(void)
{
	static struct bkc_sb raw;
	struct bkc_sb_info sb;
	const char *why;
	u64 sizes[] = { 1ULL << 30, 64ULL << 30, 1ULL << 40 };
	int i, n = 0;

	for (i = 0; i < 3; i++) {
		u64 dev = sizes[i];

		memset(&sb, 0, sizeof(sb));
		sb.version = BKC_SB_VERSION;
		sb.block_size = 4096;
		sb.bucket_size = 512 << 10;
		sb.replacement = i % BKC_REPL_NR;
		memset(sb.set_uuid, 0x40 + i, BKC_UUID_SIZE);
		memset(sb.uuid, 0x50 + i, BKC_UUID_SIZE);
		strcpy(sb.label, "fuzz-cache");
		if (bkc_sb_init_cache(&sb, dev, &why))
			exit(1);
		bkc_sb_pack(&sb, &raw);
		put("sb", n++, &dev, 8, &raw, sizeof(raw));

		memset(&sb, 0, sizeof(sb));
		sb.version = BKC_SB_VERSION;
		sb.block_size = 512;
		sb.bucket_size = 4096;
		sb.cache_mode = i;
		sb.state = i ? BKC_STATE_DIRTY : BKC_STATE_NONE;
		memset(sb.set_uuid, i ? 0x60 : 0, BKC_UUID_SIZE);
		if (bkc_sb_init_backing(&sb, dev, (u64)(i + 1) << 19, &why))
			exit(1);
		bkc_sb_pack(&sb, &raw);
		put("sb", n++, &dev, 8, &raw, sizeof(raw));
	}
}

static u64 rng = 88172645463325252ULL;

static u64 rnd(u64 n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

/* A node of @bytes with @nb bsets at @level; returns the image size. */
static void node_seed(int n, u32 bytes, u32 nb, u8 level)
{
	static u8 img[1024U << 4];
	struct fuzz_node_hdr h = { 0 };
	struct bkc_bset_info bi = { 0 };
	struct bkc_key keys[64];
	u32 b, off = 0, prev = 0, i;
	u64 lo = bkc_pos(2, 4096), hi = bkc_pos(2, 1 << 20);

	memset(img, 0, sizeof(img));
	h.node_seq = 0x1000000 + n;
	h.lo = lo;
	h.hi = hi;
	h.level = level;
	h.size_sel = 0;
	while ((1024U << h.size_sel) < bytes)
		h.size_sel++;
	bi.node_seq = h.node_seq;
	bi.lo = lo;
	bi.hi = hi;
	bi.level = level;
	for (b = 0; b < nb; b++) {
		u32 nk = b ? 1 + rnd(6) : 4 + rnd(20);
		u64 pos = lo + (b ? rnd(4000) : 0);

		for (i = 0; i < nk; i++) {
			struct bkc_key *k = &keys[i];

			if (level) {
				k->pos = pos;
				k->len = 0;
				k->off = rnd(1 << 30);
				k->ptr = bkc_mkptr(FUZZ_FIRST + rnd(1000),
						   rnd(256), 0);
				if (b && !rnd(3) && i)
					k->ptr = BKC_KEY_HOLE, k->off = 0;
				pos += 1 + rnd(500);
				continue;
			}
			k->pos = pos;
			k->len = 1 + rnd(64);
			k->off = rnd(1024);
			k->ptr = bkc_mkptr(FUZZ_FIRST + rnd(1000), rnd(256),
					   rnd(2) ? BKC_KEY_DIRTY : 0);
			if (b && !rnd(4))
				bkc_key_init_hole(k, pos, k->len);
			pos += k->len + rnd(8);
		}
		bi.offset = off;
		bi.idx = b;
		bi.prev_csum = prev;
		bi.journal_seq = 100 + b;
		if (off + bkc_bset_bytes(nk) > bytes)
			break;
		prev = bkc_bset_encode(img + off, &bi, FUZZ_SET_MAGIC, keys,
				       nk);
		off += bkc_bset_bytes(nk);
		off = (off + FUZZ_BLOCK - 1) & ~(FUZZ_BLOCK - 1);
	}
	put("node", n, &h, sizeof(h), img, bytes);
}

static void seeds_node(void)
{
	int n = 0;

	node_seed(n++, 1024, 1, 0);
	node_seed(n++, 4096, 3, 0);
	node_seed(n++, 4096, 5, 1);
	node_seed(n++, 16384, 12, 0);
	node_seed(n++, 16384, 4, 2);
	node_seed(n++, 2048, 2, 1);
}

static void seeds_journal(void)
{
	static u8 ring[FUZZ_JBUCKETS][FUZZ_JBUCKET];
	u64 buckets[FUZZ_JBUCKETS] = { 10, 11, 12, 13 };
	struct bkc_journal j;
	struct bkc_geom g;
	int s, e, n = 0;

	fuzz_geom(&g, FUZZ_JBUCKET, FUZZ_NBUCKETS);
	for (s = 0; s < 4; s++) {
		memset(ring, 0, sizeof(ring));
		if (bkc_journal_init(&j, &g, buckets, FUZZ_JBUCKETS, 2048))
			exit(1);
		for (e = 0; e < 6 + s * 5; e++) {
			struct bkc_jset_info h = { 0 };
			struct bkc_journal_write w;
			u32 i, nk = rnd(20);

			for (i = 0; i < nk; i++) {
				struct bkc_key k;

				bkc_key_init(&k, rnd(4), rnd(1 << 20),
					     1 + rnd(16), FUZZ_FIRST + rnd(500),
					     rnd(64), rnd(256), rnd(2));
				if (!rnd(5))
					bkc_key_init_hole(&k, k.pos, k.len);
				bkc_journal_add_key(&j, &k);
				if (!rnd(4))
					bkc_journal_add_gen(&j, FUZZ_FIRST +
							    rnd(500), rnd(256));
			}
			h.last_seq = j.seq > 3 ? j.seq - 2 : 1;
			h.root_ptr = bkc_mkptr(FUZZ_FIRST + 7, 3, 0);
			h.root_seq = 77;
			h.root_level = rnd(3);
			h.table_ptr = e ? bkc_mkptr(FUZZ_FIRST + 9, 1, 0) : 0;
			h.table_seq = h.last_seq;
			if (bkc_journal_commit_prepare(&j, &h, &w))
				break;
			memcpy(ring[w.bucket - 10] + w.offset, w.buf, w.bytes);
			bkc_journal_commit_done(&j, &w);
		}
		bkc_journal_exit(&j);
		put("journal", n++, ring, sizeof(ring), NULL, 0);
	}
}

static void seeds_table(void)
{
	static u8 buf[3][FUZZ_TBUCKET];
	struct bkc_table_state ts;
	struct bkc_alloc a;
	struct bkc_geom g;
	u64 b, i;
	u32 bytes, k = 0;

	fuzz_geom(&g, FUZZ_TBUCKET, FUZZ_TNBUCKETS);
	if (bkc_alloc_init(&a, &g, 4, 0, 1) || bkc_table_init(&ts,
	    g.nbuckets, FUZZ_TBUCKET))
		exit(1);
	bkc_alloc_format(&a);
	for (i = g.first_bucket; i < g.nbuckets; i++)
		bkc_alloc_load(&a, i, rnd(256), 0, rnd(1 << 20));
	if (bkc_table_begin(&ts, &a, 42))
		exit(1);
	memset(buf, 0, sizeof(buf));
	while (k < 3 && bkc_table_next(&ts, &a, buf[k], &b, &bytes) > 0)
		k++;
	put("table", 0, buf, sizeof(buf), NULL, 0);
	bkc_table_exit(&ts);
	bkc_alloc_exit(&a);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_seeds DIR\n");
		return 2;
	}
	dir = argv[1];
	mkdir(dir, 0755);
	seeds_sb();
	seeds_node();
	seeds_journal();
	seeds_table();
	printf("gen_seeds: %d seed files in %s\n", nfiles, dir);
	return 0;
}
