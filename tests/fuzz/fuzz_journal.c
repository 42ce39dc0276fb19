// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: journal entries and replay.  The input is the
 * contents of a ring of journal buckets; the scan validates every entry
 * it finds and the pick must return a contiguous run ending in the entry
 * it resumes after.  Every entry of the run is walked.
 */
#include <string.h>

#include "journal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct bkc_geom g;

static int key_fn(void *arg, const struct bkc_key *k, u64 seq)
{
	fuzz_check(!bkc_leaf_key_check(&g, k, true));
	(*(u64 *)arg)++;
	return 0;
}

static int gen_fn(void *arg, u64 bucket, u8 gen, u64 seq)
{
	fuzz_check(bucket >= g.first_bucket && bucket < g.nbuckets);
	(*(u64 *)arg)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u8 ring[FUZZ_JBUCKETS][FUZZ_JBUCKET];
	static struct bkc_journal j;
	static bool ready;
	struct bkc_jent run[FUZZ_JBUCKETS * FUZZ_JBUCKET / FUZZ_BLOCK + 1];
	u64 buckets[FUZZ_JBUCKETS] = { 10, 11, 12, 13 }, items = 0;
	u32 i, nrun = 0;
	int ret;

	if (!ready) {
		fuzz_geom(&g, FUZZ_JBUCKET, FUZZ_NBUCKETS);
		fuzz_check(!bkc_journal_init(&j, &g, buckets, FUZZ_JBUCKETS,
					     FUZZ_JBUCKET));
		ready = true;
	}
	memset(ring, 0, sizeof(ring));
	memcpy(ring, data, size < sizeof(ring) ? size : sizeof(ring));

	/* single entry decode at offset 0 of every bucket */
	for (i = 0; i < FUZZ_JBUCKETS; i++) {
		struct bkc_jset_info h;

		if (bkc_journal_entry_check(&g, ring[i], FUZZ_JBUCKET, &h))
			continue;
		fuzz_check(h.bytes <= FUZZ_JBUCKET && h.seq >= h.last_seq);
		bkc_journal_entry_walk(ring[i], key_fn, gen_fn, &items);
	}

	/* replay: scan, pick the run, walk it */
	fuzz_check(!bkc_journal_scan_begin(&j));
	for (i = 0; i < FUZZ_JBUCKETS; i++)
		bkc_journal_scan_bucket(&j, i, ring[i]);
	fuzz_check(bkc_journal_scan_count(&j) < ARRAY_SIZE(run));
	ret = bkc_journal_pick(&j, run, &nrun);
	fuzz_check(!ret || ret == -ENOENT);
	if (!ret) {
		fuzz_check(nrun >= 1);
		fuzz_check(run[0].seq == run[nrun - 1].last_seq);
		for (i = 0; i < nrun; i++) {
			struct bkc_jset_info h;

			fuzz_check(!i || run[i].seq == run[i - 1].seq + 1);
			fuzz_check(run[i].idx < FUZZ_JBUCKETS);
			fuzz_check(run[i].offset + run[i].bytes <= FUZZ_JBUCKET);
			fuzz_check(!bkc_journal_entry_check(&g,
				ring[run[i].idx] + run[i].offset,
				FUZZ_JBUCKET - run[i].offset, &h));
			bkc_journal_entry_walk(ring[run[i].idx] + run[i].offset,
					       key_fn, gen_fn, &items);
		}
		fuzz_check(j.seq > run[nrun - 1].seq);
	}
	bkc_journal_scan_end(&j);
	return 0;
}
