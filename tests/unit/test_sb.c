// SPDX-License-Identifier: GPL-2.0
/*
 * Superblock codec unit tests: every distinct decode error, every
 * geometry rule of sb.c, truncation, and pack/unpack round trips.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb.h"
#include "tcheck.h"

#define DEV_BYTES	(1ULL << 30)	/* 1 GiB cache or backing device */

static struct bkc_sb raw;

static void make_cache(struct bkc_sb_info *sb)
{
	const char *why = NULL;
	int rc;

	memset(sb, 0, sizeof(*sb));
	sb->version = BKC_SB_VERSION;
	sb->seq = 7;
	sb->block_size = 4096;
	sb->bucket_size = 512 << 10;
	memset(sb->uuid, 0x11, BKC_UUID_SIZE);
	memset(sb->set_uuid, 0x22, BKC_UUID_SIZE);
	strcpy(sb->label, "cache-label");
	rc = bkc_sb_init_cache(sb, DEV_BYTES, &why);
	REQUIRE(rc == 0);
}

static void make_backing(struct bkc_sb_info *sb)
{
	const char *why = NULL;
	int rc;

	memset(sb, 0, sizeof(*sb));
	sb->version = BKC_SB_VERSION;
	sb->seq = 3;
	sb->block_size = 4096;
	sb->bucket_size = 512 << 10;
	memset(sb->uuid, 0x33, BKC_UUID_SIZE);
	sb->cache_mode = BKC_MODE_WRITEBACK;
	rc = bkc_sb_init_backing(sb, DEV_BYTES, 0, &why);
	REQUIRE(rc == 0);
}

/* Pack @sb (valid checksum) and decode it against @dev_bytes. */
static int roundtrip(const struct bkc_sb_info *sb, u64 dev_bytes,
		     const char **why)
{
	struct bkc_sb_info out;

	*why = NULL;
	bkc_sb_pack(sb, &raw);
	return bkc_sb_decode(&raw, dev_bytes, &out, why);
}

/*
 * Expect decode of @sb to fail with -EUCLEAN and a reason containing
 * @needle, so that each geometry rule is proven to be the one that fired.
 */
static void expect_geometry(const struct bkc_sb_info *sb, u64 dev_bytes,
			    const char *needle, int line)
{
	const char *why;
	int rc = roundtrip(sb, dev_bytes, &why);

	if (rc != -EUCLEAN || !why || !strstr(why, needle)) {
		fprintf(stderr, "line %d: want -EUCLEAN \"%s\", got %d \"%s\"\n",
			line, needle, rc, why ? why : "(null)");
		tcheck_failures++;
	}
	tcheck_checks++;
}

#define GEOM(sb, bytes, needle) expect_geometry(sb, bytes, needle, __LINE__)

static void test_valid(void)
{
	struct bkc_sb_info sb, out;
	const char *why = NULL;
	u32 i;

	make_cache(&sb);
	CHECK_EQ(sb.nbuckets, DEV_BYTES / (512 << 10));
	CHECK_EQ(sb.first_bucket, 1);
	CHECK_EQ(sb.nr_journal_buckets, 8);
	bkc_sb_pack(&sb, &raw);
	CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES, &out, &why), 0);
	CHECK(!memcmp(&sb, &out, sizeof(sb)));
	/* unknown device size (0) skips the truncation check */
	CHECK_EQ(bkc_sb_decode(&raw, 0, &out, &why), 0);
	/* a larger device is fine (grown), a smaller one is not */
	CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES * 2, &out, &why), 0);

	make_backing(&sb);
	CHECK_EQ(sb.data_offset, 1 << 20);
	bkc_sb_pack(&sb, &raw);
	CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES, &out, &why), 0);
	CHECK(!memcmp(&sb, &out, sizeof(sb)));

	/* io_opt of a 4-disk RAID5 with 512k chunks: 1.5 MiB stripe */
	memset(&sb, 0, sizeof(sb));
	sb.version = BKC_SB_VERSION;
	sb.block_size = 4096;
	sb.bucket_size = 4096;
	CHECK_EQ(bkc_sb_init_backing(&sb, DEV_BYTES, 3 << 19, &why), 0);
	CHECK_EQ(sb.data_offset, 3 << 19);
	CHECK_EQ(sb.data_offset % (3 << 19), 0);

	/* every field survives a pack/unpack round trip byte for byte */
	make_cache(&sb);
	sb.seq = 0x0123456789abcdefULL;
	sb.feature_compat = 0xfeedULL;	/* compat bits are ignored */
	sb.replacement = BKC_REPL_RANDOM;
	for (i = 0; i < sb.nr_journal_buckets; i++)
		sb.journal_buckets[i] = 100 + 3 * i;
	memset(sb.label, 'x', BKC_LABEL_SIZE);
	sb.label[BKC_LABEL_SIZE] = '\0';
	bkc_sb_pack(&sb, &raw);
	CHECK_EQ(le64_to_cpu(raw.magic), BKC_SB_MAGIC);
	CHECK_EQ(le32_to_cpu(raw.csum), bkc_sb_csum(&raw));
	bkc_sb_unpack(&raw, &out);
	CHECK(!memcmp(&sb, &out, sizeof(sb)));
	CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES, &out, &why), 0);
	CHECK_EQ(out.replacement, BKC_REPL_RANDOM);
	CHECK_EQ(out.seq, 0x0123456789abcdefULL);

	/* pack -> unpack -> pack is a fixed point */
	{
		struct bkc_sb raw2;

		bkc_sb_pack(&out, &raw2);
		CHECK(!memcmp(&raw, &raw2, sizeof(raw)));
	}

	/*
	 * A label with bytes after its NUL (found by fuzz_sb): the label
	 * ends at the NUL, and decode -> pack -> decode gives the same.
	 */
	make_cache(&sb);
	bkc_sb_pack(&sb, &raw);
	memcpy(raw.label, "ab\0cd", 5);
	raw.csum = cpu_to_le32(bkc_sb_csum(&raw));
	CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES, &out, &why), 0);
	CHECK(!strcmp(out.label, "ab"));
	CHECK(!memcmp(out.label, "ab\0\0\0", 5));
	{
		struct bkc_sb_info out2;
		struct bkc_sb raw2;

		bkc_sb_pack(&out, &raw2);
		CHECK_EQ(bkc_sb_decode(&raw2, DEV_BYTES, &out2, &why), 0);
		CHECK(!memcmp(&out, &out2, sizeof(out)));
	}
}

static void test_header_errors(void)
{
	struct bkc_sb_info sb, out;
	const char *why;

	make_cache(&sb);

	/* bad magic comes first, even with a bad checksum */
	bkc_sb_pack(&sb, &raw);
	raw.magic ^= cpu_to_le64(1);
	CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES, &out, &why), -EINVAL);
	memset(&raw, 0, sizeof(raw));
	CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES, &out, &why), -EINVAL);

	/* any flipped bit outside csum breaks the checksum */
	bkc_sb_pack(&sb, &raw);
	((u8 *)&raw)[BKC_SB_SIZE - 1] ^= 0x80;
	CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES, &out, &why), -EBADMSG);
	bkc_sb_pack(&sb, &raw);
	raw.csum ^= cpu_to_le32(0x100);
	CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES, &out, &why), -EBADMSG);
	bkc_sb_pack(&sb, &raw);
	raw.seq ^= cpu_to_le64(1);
	CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES, &out, &why), -EBADMSG);

	/* version: checksum valid, version unknown */
	sb.version = BKC_SB_VERSION + 1;
	CHECK_EQ(roundtrip(&sb, DEV_BYTES, &why), -EPROTONOSUPPORT);
	sb.version = 0;
	CHECK_EQ(roundtrip(&sb, DEV_BYTES, &why), -EPROTONOSUPPORT);
	sb.version = BKC_SB_VERSION;

	/* unknown incompat and ro_compat features; compat bits are fine */
	sb.feature_incompat = 1ULL << 63;
	CHECK_EQ(roundtrip(&sb, DEV_BYTES, &why), -EOPNOTSUPP);
	sb.feature_incompat = 0;
	sb.feature_ro_compat = 1;
	CHECK_EQ(roundtrip(&sb, DEV_BYTES, &why), -EOPNOTSUPP);
	sb.feature_ro_compat = 0;
	sb.feature_compat = ~0ULL;
	CHECK_EQ(roundtrip(&sb, DEV_BYTES, &why), 0);
}

static void test_common_geometry(void)
{
	struct bkc_sb_info sb, base;
	const char *why;

	make_cache(&base);

	sb = base;
	sb.dev_type = 0;
	GEOM(&sb, DEV_BYTES, "unknown device type");
	sb.dev_type = 3;
	GEOM(&sb, DEV_BYTES, "unknown device type");

	sb = base;
	sb.flags = 4;
	GEOM(&sb, DEV_BYTES, "unknown flags");
	sb.flags = BKC_SB_F_TUNABLES;
	GEOM(&sb, DEV_BYTES, "backing-device fields set on a cache device");
	sb.flags = BKC_SB_F_INITIALIZED;
	CHECK(bkc_sb_validate(&sb, DEV_BYTES, &why) == 0);

	sb = base;
	sb.bdev_state[3] = BKC_SLOT_ATTACHED;
	GEOM(&sb, DEV_BYTES, "backing slot state and uuid disagree");
	sb.bdev_uuid[3][0] = 1;
	CHECK(bkc_sb_validate(&sb, DEV_BYTES, &why) == 0);
	sb.bdev_state[3] = BKC_SLOT_NR;
	GEOM(&sb, DEV_BYTES, "unknown backing slot state");

	sb = base;
	sb.block_size = 3000;
	GEOM(&sb, DEV_BYTES, "block size");
	sb.block_size = 256;
	GEOM(&sb, DEV_BYTES, "block size");
	sb.block_size = 1 << 17;
	GEOM(&sb, DEV_BYTES, "block size");
	sb.block_size = 0;
	GEOM(&sb, DEV_BYTES, "block size");

	sb = base;
	sb.bucket_size = (512 << 10) + 4096;
	GEOM(&sb, DEV_BYTES, "bucket size is not");
	sb.bucket_size = 2048;
	GEOM(&sb, DEV_BYTES, "bucket size is not");
	sb.bucket_size = 1U << 31;
	GEOM(&sb, DEV_BYTES, "bucket size is not");

	sb = base;
	sb.block_size = 65536;
	sb.bucket_size = 32768;
	GEOM(&sb, DEV_BYTES, "bucket size is smaller");

	sb = base;
	sb.dev_size = BKC_SB_END - 1;
	GEOM(&sb, 0, "recorded device size");

	/* truncated device: smaller than the recorded size */
	sb = base;
	GEOM(&sb, DEV_BYTES - 512, "truncated");
	GEOM(&sb, BKC_SB_END, "truncated");
}

static void test_cache_geometry(void)
{
	struct bkc_sb_info sb, base;
	const char *why = NULL;

	make_cache(&base);

	sb = base;
	sb.nbuckets = BKC_NBUCKETS_MIN - 1;
	GEOM(&sb, DEV_BYTES, "too few buckets");

	sb = base;
	sb.nbuckets = base.nbuckets + 1;
	GEOM(&sb, DEV_BYTES, "nbuckets beyond");
	sb.nbuckets = BKC_NBUCKETS_MAX + 1;
	sb.dev_size = ~0ULL;
	GEOM(&sb, 0, "nbuckets beyond");

	sb = base;
	sb.first_bucket = sb.nbuckets + 1;
	GEOM(&sb, DEV_BYTES, "first_bucket");
	sb.first_bucket = 0;
	GEOM(&sb, DEV_BYTES, "first_bucket");
	/* 4k buckets: bucket 1 is the superblock itself */
	sb = base;
	sb.bucket_size = 4096;
	sb.nbuckets = DEV_BYTES / 4096;
	sb.first_bucket = 1;
	GEOM(&sb, DEV_BYTES, "first_bucket");
	/* 4k buckets: the table covers about 253,000 (503 buckets of it) */
	sb = base;
	sb.bucket_size = 4096;
	CHECK_EQ(bkc_sb_init_cache(&sb, 260000ULL * 4096, &why), -EUCLEAN);
	CHECK(why && strstr(why, "too many buckets for the bucket size"));
	sb = base;
	sb.bucket_size = 4096;
	CHECK_EQ(bkc_sb_init_cache(&sb, 250000ULL * 4096, &why), 0);

	sb = base;
	sb.nr_journal_buckets = 0;
	GEOM(&sb, DEV_BYTES, "bad number of journal buckets");
	/* pack clamps the count, so forge the raw field and re-checksum */
	bkc_sb_pack(&base, &raw);
	raw.nr_journal_buckets = cpu_to_le32(BKC_SB_MAX_JOURNAL_BUCKETS + 1);
	raw.csum = cpu_to_le32(bkc_sb_csum(&raw));
	{
		struct bkc_sb_info out;
		const char *why = NULL;

		CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES, &out, &why), -EUCLEAN);
		CHECK(why && strstr(why, "bad number of journal buckets"));
	}

	sb = base;
	sb.nbuckets = BKC_NBUCKETS_MIN;
	sb.nr_journal_buckets = BKC_NBUCKETS_MIN - BKC_DATA_BUCKETS_MIN;
	GEOM(&sb, DEV_BYTES, "too few buckets left");

	sb = base;
	sb.journal_buckets[3] = 0;
	GEOM(&sb, DEV_BYTES, "journal bucket outside");
	sb.journal_buckets[3] = sb.nbuckets;
	GEOM(&sb, DEV_BYTES, "journal bucket outside");

	sb = base;
	sb.journal_buckets[5] = sb.journal_buckets[2];
	GEOM(&sb, DEV_BYTES, "listed twice");

	sb = base;
	sb.replacement = BKC_REPL_NR;
	GEOM(&sb, DEV_BYTES, "unknown replacement policy");

	sb = base;
	sb.data_offset = 1 << 20;
	GEOM(&sb, DEV_BYTES, "backing-device fields");
	sb = base;
	sb.cache_mode = 1;
	GEOM(&sb, DEV_BYTES, "backing-device fields");
	sb = base;
	sb.state = 1;
	GEOM(&sb, DEV_BYTES, "backing-device fields");
}

static void test_backing_geometry(void)
{
	struct bkc_sb_info sb, base;
	const char *why;

	make_backing(&base);

	sb = base;
	sb.data_offset = BKC_SB_END - 4096;
	GEOM(&sb, DEV_BYTES, "data_offset overlaps");

	sb = base;
	sb.data_offset = (1 << 20) + 512;
	GEOM(&sb, DEV_BYTES, "not a multiple of the block size");

	sb = base;
	sb.data_offset = DEV_BYTES;
	GEOM(&sb, DEV_BYTES, "data_offset beyond");
	sb.data_offset = base.data_offset;
	sb.dev_size = sb.data_offset + 2048;
	GEOM(&sb, DEV_BYTES, "data_offset beyond");

	sb = base;
	sb.cache_mode = BKC_MODE_NR;
	GEOM(&sb, DEV_BYTES, "unknown cache mode");

	sb = base;
	sb.state = BKC_STATE_NR;
	GEOM(&sb, DEV_BYTES, "unknown state");

	sb = base;
	sb.state = BKC_STATE_DIRTY;
	GEOM(&sb, DEV_BYTES, "without a cache set uuid");
	sb.state = BKC_STATE_CLEAN;
	GEOM(&sb, DEV_BYTES, "without a cache set uuid");
	memset(sb.set_uuid, 0x44, BKC_UUID_SIZE);
	CHECK_EQ(roundtrip(&sb, DEV_BYTES, &why), 0);

	sb = base;
	sb.nbuckets = 1024;
	GEOM(&sb, DEV_BYTES, "cache-device fields");
	sb = base;
	sb.first_bucket = 1;
	GEOM(&sb, DEV_BYTES, "cache-device fields");
	sb = base;
	sb.nr_journal_buckets = 1;
	GEOM(&sb, DEV_BYTES, "cache-device fields");
	sb = base;
	sb.replacement = BKC_REPL_FIFO;
	GEOM(&sb, DEV_BYTES, "cache-device fields");
}

static void test_init_and_names(void)
{
	struct bkc_sb_info sb;
	const char *why;

	memset(&sb, 0, sizeof(sb));
	sb.version = BKC_SB_VERSION;
	sb.block_size = 4096;
	sb.bucket_size = 3 << 12;
	CHECK_EQ(bkc_sb_init_cache(&sb, DEV_BYTES, &why), -EUCLEAN);
	sb.bucket_size = 1 << 20;
	/* too small for 128 buckets */
	CHECK_EQ(bkc_sb_init_cache(&sb, 64ULL << 20, &why), -EUCLEAN);
	CHECK_EQ(bkc_sb_init_cache(&sb, 1ULL << 40, &why), 0);
	CHECK_EQ(sb.nr_journal_buckets, BKC_SB_MAX_JOURNAL_BUCKETS);

	memset(&sb, 0, sizeof(sb));
	sb.version = BKC_SB_VERSION;
	sb.block_size = 4096;
	sb.bucket_size = 4096;
	CHECK_EQ(bkc_sb_init_backing(&sb, 1 << 20, 0, &why), -EUCLEAN);

	CHECK(!strcmp(bkc_dev_type_name(BKC_DEV_CACHE), "cache"));
	CHECK(!strcmp(bkc_dev_type_name(9), "unknown"));
	CHECK(!strcmp(bkc_cache_mode_name(BKC_MODE_WRITEAROUND),
		      "writearound"));
	CHECK(!strcmp(bkc_state_name(BKC_STATE_DIRTY), "dirty"));
	CHECK_EQ(bkc_cache_mode_parse("writeback\n", 10), BKC_MODE_WRITEBACK);
	CHECK_EQ(bkc_cache_mode_parse("writebac", 8), -EINVAL);
	CHECK_EQ(bkc_replacement_parse("fifo\n", 5), BKC_REPL_FIFO);
	CHECK_EQ(bkc_replacement_parse("random", 6), BKC_REPL_RANDOM);
	CHECK_EQ(bkc_replacement_parse("lru", 3), BKC_REPL_LRU);
	CHECK_EQ(bkc_replacement_parse("lr", 2), -EINVAL);
	CHECK(!strcmp(bkc_replacement_name(BKC_REPL_LRU), "lru"));
	CHECK(!strcmp(bkc_replacement_name(7), "unknown"));
	CHECK(bkc_uuid_is_zero((const u8 *)"\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"));
}

/* Tunables: recorded with their flag, in range, and kept by pack/unpack. */
static void test_tunables(void)
{
	struct bkc_sb_info sb, base, out;
	const char *why = NULL;

	make_backing(&base);
	sb = base;
	sb.flags = BKC_SB_F_TUNABLES;
	sb.tun = (struct bkc_tunables){
		.sequential_cutoff = 8 << 20, .writeback_rate_max = 1 << 20,
		.writeback_percent = 40, .writeback_delay = 7,
		.writeback_max_age = 60,
	};
	bkc_sb_pack(&sb, &raw);
	CHECK_EQ(bkc_sb_decode(&raw, DEV_BYTES, &out, &why), 0);
	CHECK(!memcmp(&sb, &out, sizeof(sb)));
	CHECK_EQ(out.tun.writeback_percent, 40);
	CHECK_EQ(out.tun.writeback_max_age, 60);
	/* zero values are real values (cutoff off, unlimited, drain all) */
	sb.tun = (struct bkc_tunables){ 0 };
	CHECK(bkc_sb_validate(&sb, DEV_BYTES, &why) == 0);

	sb = base;
	sb.tun.writeback_percent = 10;
	GEOM(&sb, DEV_BYTES, "tunables set without the tunables flag");
	sb.flags = BKC_SB_F_TUNABLES;
	sb.tun.writeback_percent = 101;
	GEOM(&sb, DEV_BYTES, "writeback_percent out of range");
	sb.tun.writeback_percent = 10;
	sb.tun.writeback_delay = BKC_TUN_DELAY_MAX + 1;
	GEOM(&sb, DEV_BYTES, "writeback_delay out of range");
	sb.tun.writeback_delay = 30;
	sb.tun.writeback_rate_max = 100;
	GEOM(&sb, DEV_BYTES, "writeback_rate_max out of range");
	sb.tun.writeback_rate_max = 0;
	sb.tun.writeback_max_age = BKC_TUN_MAX_AGE_MAX + 1;
	GEOM(&sb, DEV_BYTES, "writeback_max_age out of range");
	sb.tun.writeback_max_age = 0;
	sb.tun.sequential_cutoff = BKC_TUN_CUTOFF_MAX + 1;
	GEOM(&sb, DEV_BYTES, "sequential_cutoff out of range");
}

int main(void)
{
	test_valid();
	test_header_errors();
	test_common_geometry();
	test_cache_geometry();
	test_backing_geometry();
	test_init_and_names();
	test_tunables();
	return tcheck_done("test_sb");
}
