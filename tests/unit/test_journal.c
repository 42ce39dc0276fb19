// SPDX-License-Identifier: GPL-2.0
/*
 * Journal ring and replay: entries fill the ring in order, a full ring
 * refuses to overwrite entries still needed, the replay scan skips torn
 * and corrupt entries and picks the newest complete run, writing resumes
 * after it, and a run followed by unusable newer entries forces a
 * checkpoint before the next commit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "tcheck.h"

#define NR	4
#define BB	4096

static u8 ring[NR][BB];
static const u64 buckets[NR] = { 20, 21, 22, 23 };
static struct bkc_geom g = {
	.nbuckets = 1024, .first_bucket = 2, .bucket_sectors = BB >> 9,
	.block_bytes = 512, .set_magic = 0xfeedULL,
};

static u32 idx_of(u64 bucket)
{
	return bucket - buckets[0];
}

/* Commit an entry with @nkeys keys; last_seq trails by @lag. */
static int commit(struct bkc_journal *j, u32 nkeys, u64 lag,
		  struct bkc_journal_write *w)
{
	struct bkc_jset_info h = { 0 };
	u32 i;
	int ret;

	for (i = 0; i < nkeys; i++) {
		struct bkc_key k;

		bkc_key_init(&k, 1, j->seq * 100 + i, 8, 100 + i, 0, 1, true);
		ret = bkc_journal_add_key(j, &k);
		if (ret)
			return ret;	/* no room in the ring for more */
	}
	h.last_seq = j->seq > lag ? j->seq - lag : 1;
	ret = bkc_journal_commit_prepare(j, &h, w);
	if (ret)
		return ret;
	memcpy(ring[idx_of(w->bucket)] + w->offset, w->buf, w->bytes);
	bkc_journal_commit_done(j, w);
	return 0;
}

static int pick(struct bkc_journal *j, struct bkc_jent *run, u32 *n)
{
	u32 i;

	REQUIRE(bkc_journal_scan_begin(j) == 0);
	for (i = 0; i < NR; i++)
		bkc_journal_scan_bucket(j, i, ring[i]);
	return bkc_journal_pick(j, run, n);
}

static struct bkc_jent run[NR * BB / 512];

static void test_fill_and_wrap(void)
{
	struct bkc_journal j;
	struct bkc_journal_write w;
	u32 n, i;
	int ret;

	memset(ring, 0, sizeof(ring));
	REQUIRE(bkc_journal_init(&j, &g, buckets, NR, 2048) == 0);
	/* nothing can be reclaimed while last_seq stays at 1 */
	for (i = 0; i < 100; i++) {
		ret = commit(&j, 20, ~0ULL, &w);
		if (ret)
			break;
	}
	CHECK_EQ(ret, -ENOSPC);
	CHECK(i >= 3 * (BB / 1024) - 1);
	CHECK(bkc_journal_fill(&j) >= 192);
	/* no key fits any more, but the reserve after the last entry does */
	CHECK(!bkc_journal_room(&j, 1, 0));
	CHECK_EQ(pick(&j, run, &n), 0);
	CHECK_EQ(run[0].seq, 1);
	CHECK_EQ(run[n - 1].seq, i);
	bkc_journal_scan_end(&j);
	{
		/* entries without records: the one naming a new root ... */
		struct bkc_jset_info h = { .last_seq = 1, .root_ptr = 7 };

		CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), 0);
		bkc_journal_commit_done(&j, &w);
		/* ... one saying nothing new is not written ... */
		h = (struct bkc_jset_info){ .last_seq = 1, .root_ptr = 7 };
		CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), -EAGAIN);
		/* ... one taking the last block without giving back: no */
		h = (struct bkc_jset_info){ .last_seq = 1, .root_ptr = 8 };
		CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), -ENOSPC);
		/* ... the one whose last_seq gives the ring back: yes */
		h = (struct bkc_jset_info){ .last_seq = i + 1, .root_ptr = 8 };
		CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), 0);
		bkc_journal_commit_done(&j, &w);
		CHECK(bkc_journal_room(&j, 20, 0));
		CHECK(bkc_journal_fill(&j) <= 256 / NR);
	}
	bkc_journal_exit(&j);

	/*
	 * Entries of 2 KiB: in the last bucket the second one fills only up
	 * to the reserve, so the ring refuses the key that does not fit, not
	 * the commit.  The entry holding what was added keeps its place, so
	 * that it can always be committed (node writes wait for it before
	 * the ring can be reclaimed).
	 */
	memset(ring, 0, sizeof(ring));
	REQUIRE(bkc_journal_init(&j, &g, buckets, NR, 2048) == 0);
	for (i = 0; i < 100; i++) {
		ret = commit(&j, 60, ~0ULL, &w);
		if (ret)
			break;
	}
	CHECK_EQ(ret, -ENOSPC);
	CHECK(!bkc_journal_empty(&j));
	CHECK(!bkc_journal_room(&j, 20, 0));
	{
		struct bkc_jset_info h = { .last_seq = 1 };

		CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), 0);
		/* two blocks stay for the entries that make room */
		CHECK_EQ(w.offset + w.bytes, BB - 2 * 512);
		memcpy(ring[idx_of(w.bucket)] + w.offset, w.buf, w.bytes);
		bkc_journal_commit_done(&j, &w);
	}
	CHECK(!bkc_journal_room(&j, 1, 0));
	CHECK_EQ(pick(&j, run, &n), 0);
	CHECK_EQ(run[0].seq, 1);
	CHECK_EQ(run[n - 1].seq, i + 1);
	bkc_journal_scan_end(&j);
	bkc_journal_exit(&j);

	/* with last_seq moving on, the ring wraps for ever */
	memset(ring, 0, sizeof(ring));
	REQUIRE(bkc_journal_init(&j, &g, buckets, NR, 2048) == 0);
	for (i = 0; i < 200; i++)
		CHECK_EQ(commit(&j, 1 + i % 30, 2, &w), 0);
	CHECK_EQ(pick(&j, run, &n), 0);
	CHECK_EQ(n, 3);
	CHECK_EQ(run[n - 1].seq, 200);
	CHECK_EQ(run[0].seq, 198);
	CHECK_EQ(j.seq, 201);
	/* resumes after the last entry, no checkpoint needed */
	CHECK_EQ(j.min_last_seq, 0);
	CHECK_EQ(commit(&j, 3, 2, &w), 0);
	CHECK_EQ(w.seq, 201);
	bkc_journal_scan_end(&j);
	bkc_journal_exit(&j);
}

/*
 * Blocks as large as buckets: every entry takes a bucket, so the reserve
 * for the entries without records is two whole buckets.
 */
static void test_bucket_blocks(void)
{
	struct bkc_geom g4 = g;
	struct bkc_journal j;
	struct bkc_journal_write w;
	struct bkc_jset_info h;
	u32 i;
	int ret = 0;

	g4.block_bytes = BB;
	memset(ring, 0, sizeof(ring));
	REQUIRE(bkc_journal_init(&j, &g4, buckets, NR, BB) == 0);
	for (i = 0; i < 10; i++) {
		ret = commit(&j, 1, ~0ULL, &w);
		if (ret)
			break;
	}
	CHECK_EQ(ret, -ENOSPC);
	CHECK_EQ(i, NR - 2);
	h = (struct bkc_jset_info){ .last_seq = 1, .root_ptr = 7 };
	CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), 0);
	bkc_journal_commit_done(&j, &w);
	h = (struct bkc_jset_info){ .last_seq = 1, .root_ptr = 8 };
	CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), -ENOSPC);
	h = (struct bkc_jset_info){ .last_seq = 4, .root_ptr = 8 };
	CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), 0);
	bkc_journal_commit_done(&j, &w);
	CHECK(bkc_journal_room(&j, 1, 0));
	bkc_journal_exit(&j);
}

static void test_torn_and_corrupt(void)
{
	struct bkc_journal j;
	struct bkc_journal_write w, ws[12];
	u32 n, i;

	memset(ring, 0, sizeof(ring));
	REQUIRE(bkc_journal_init(&j, &g, buckets, NR, 2048) == 0);
	for (i = 0; i < 12; i++) {
		CHECK_EQ(commit(&j, 4, 5, &w), 0);
		ws[i] = w;
	}
	/* torn last entry: the run ends at 11 */
	ring[idx_of(ws[11].bucket)][ws[11].offset + 150] ^= 0x55;
	CHECK_EQ(pick(&j, run, &n), 0);
	CHECK_EQ(run[n - 1].seq, 11);
	CHECK_EQ(run[0].seq, 6);
	CHECK_EQ(n, 6);
	/* writing resumes where the torn entry was */
	CHECK_EQ(j.cur_off, ws[10].offset + ws[10].bytes);
	CHECK_EQ(j.min_last_seq, 0);
	bkc_journal_scan_end(&j);

	/* a corrupt entry 8 in the middle: 9..11 need it, so 7 is newest */
	ring[idx_of(ws[7].bucket)][ws[7].offset + 100] ^= 0x01;
	CHECK_EQ(pick(&j, run, &n), 0);
	CHECK_EQ(run[n - 1].seq, 7);
	CHECK_EQ(run[0].seq, 2);
	/* entries 9..11 exist: seqs go on above them, after a checkpoint */
	CHECK_EQ(j.seq, 12);
	CHECK_EQ(j.min_last_seq, 12);
	{
		struct bkc_jset_info h = { .last_seq = 3 };

		CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), -EBUSY);
		h.last_seq = 12;
		CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), 0);
		CHECK_EQ(w.seq, 12);
		CHECK_EQ(j.min_last_seq, 0);
		memcpy(ring[idx_of(w.bucket)] + w.offset, w.buf, w.bytes);
		bkc_journal_commit_done(&j, &w);
	}
	bkc_journal_scan_end(&j);
	/* the new entry 12 needs nothing older: it is picked alone */
	CHECK_EQ(pick(&j, run, &n), 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(run[0].seq, 12);
	bkc_journal_scan_end(&j);

	/* an entry from another cache set is not an entry */
	memset(ring, 0, sizeof(ring));
	j.geom.set_magic ^= 1;
	bkc_journal_reset(&j);
	CHECK_EQ(commit(&j, 2, 0, &w), 0);
	j.geom.set_magic ^= 1;
	CHECK_EQ(pick(&j, run, &n), -ENOENT);
	bkc_journal_scan_end(&j);
	bkc_journal_exit(&j);
}

static void test_records(void)
{
	struct bkc_journal j;
	struct bkc_journal_write w;
	struct bkc_jset_info h = { .last_seq = 1 };
	struct bkc_key k;
	u32 i;

	REQUIRE(bkc_journal_init(&j, &g, buckets, NR, 1024) == 0);
	CHECK(bkc_journal_empty(&j));
	bkc_key_init(&k, 3, 77, 8, 10, 0, 4, true);
	/* 1024-byte entries: 96 header, 8 per record, 24 per key */
	for (i = 0; bkc_journal_add_key(&j, &k) == 0; i++)
		;
	CHECK_EQ(i, (1024 - 96 - 8) / 24);
	CHECK_EQ(bkc_journal_add_gen(&j, 10, 5), -ENOSPC);
	CHECK(!bkc_journal_room(&j, 1, 0));
	CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), 0);
	CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), -EAGAIN);
	CHECK_EQ(bkc_journal_entry_check(&g, w.buf, w.bytes, &h), 0);
	CHECK_EQ(h.nr_recs, 1);
	/* a bad key inside a valid checksum is refused */
	bkc_journal_commit_done(&j, &w);
	bkc_key_init(&k, 3, 77, 8, g.nbuckets, 0, 4, true);
	CHECK_EQ(bkc_journal_add_key(&j, &k), 0);
	h.last_seq = 1;
	CHECK_EQ(bkc_journal_commit_prepare(&j, &h, &w), 0);
	CHECK_EQ(bkc_journal_entry_check(&g, w.buf, w.bytes, &h), -EUCLEAN);
	bkc_journal_exit(&j);
}

int main(void)
{
	test_fill_and_wrap();
	test_bucket_blocks();
	test_torn_and_corrupt();
	test_records();
	return tcheck_done("test_journal");
}
