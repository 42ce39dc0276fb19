// SPDX-License-Identifier: GPL-2.0
/*
 * Superblock codec.  Pure functions over memory: no I/O, no allocation.
 *
 * Decoding checks, in this order, and stops at the first failure:
 *   magic          -EINVAL
 *   checksum       -EBADMSG
 *   version        -EPROTONOSUPPORT
 *   feature bits   -EOPNOTSUPP
 *   geometry       -EUCLEAN (impossible or inconsistent sizes)
 * Each failure also yields a short static reason string for the log.
 */
#include "sb.h"

static_assert(sizeof(struct bkc_sb) == BKC_SB_SIZE);
static_assert(offsetof(struct bkc_sb, csum) == 0x000);
static_assert(offsetof(struct bkc_sb, version) == 0x004);
static_assert(offsetof(struct bkc_sb, magic) == 0x008);
static_assert(offsetof(struct bkc_sb, seq) == 0x010);
static_assert(offsetof(struct bkc_sb, feature_compat) == 0x018);
static_assert(offsetof(struct bkc_sb, feature_ro_compat) == 0x020);
static_assert(offsetof(struct bkc_sb, feature_incompat) == 0x028);
static_assert(offsetof(struct bkc_sb, uuid) == 0x030);
static_assert(offsetof(struct bkc_sb, set_uuid) == 0x040);
static_assert(offsetof(struct bkc_sb, label) == 0x050);
static_assert(offsetof(struct bkc_sb, dev_type) == 0x070);
static_assert(offsetof(struct bkc_sb, flags) == 0x074);
static_assert(offsetof(struct bkc_sb, block_size) == 0x078);
static_assert(offsetof(struct bkc_sb, bucket_size) == 0x07c);
static_assert(offsetof(struct bkc_sb, dev_size) == 0x080);
static_assert(offsetof(struct bkc_sb, nbuckets) == 0x088);
static_assert(offsetof(struct bkc_sb, first_bucket) == 0x090);
static_assert(offsetof(struct bkc_sb, nr_journal_buckets) == 0x098);
static_assert(offsetof(struct bkc_sb, data_offset) == 0x0a0);
static_assert(offsetof(struct bkc_sb, cache_mode) == 0x0a8);
static_assert(offsetof(struct bkc_sb, state) == 0x0ac);
static_assert(offsetof(struct bkc_sb, replacement) == 0x0b0);
static_assert(offsetof(struct bkc_sb, pad1) == 0x0b4);
static_assert(offsetof(struct bkc_sb, sequential_cutoff) == 0x0b8);
static_assert(offsetof(struct bkc_sb, writeback_rate_max) == 0x0c0);
static_assert(offsetof(struct bkc_sb, writeback_percent) == 0x0c8);
static_assert(offsetof(struct bkc_sb, writeback_delay) == 0x0cc);
static_assert(offsetof(struct bkc_sb, writeback_max_age) == 0x0d0);
static_assert(offsetof(struct bkc_sb, reserved) == 0x0d8);
static_assert(offsetof(struct bkc_sb, journal_buckets) == 0x200);
static_assert(offsetof(struct bkc_sb, bdev_uuid) == 0xa00);
static_assert(offsetof(struct bkc_sb, bdev_state) == 0xe00);
static_assert(offsetof(struct bkc_sb, pad_end) == 0xe40);

u32 bkc_sb_csum(const struct bkc_sb *raw)
{
	const u8 *p = (const u8 *)raw;

	return bkc_crc32c(~0U, p + sizeof(raw->csum),
			  BKC_SB_SIZE - sizeof(raw->csum));
}

void bkc_sb_pack(const struct bkc_sb_info *sb, struct bkc_sb *raw)
{
	u32 i, nj;

	memset(raw, 0, sizeof(*raw));
	raw->version = cpu_to_le32(sb->version);
	raw->magic = cpu_to_le64(BKC_SB_MAGIC);
	raw->seq = cpu_to_le64(sb->seq);
	raw->feature_compat = cpu_to_le64(sb->feature_compat);
	raw->feature_ro_compat = cpu_to_le64(sb->feature_ro_compat);
	raw->feature_incompat = cpu_to_le64(sb->feature_incompat);
	memcpy(raw->uuid, sb->uuid, BKC_UUID_SIZE);
	memcpy(raw->set_uuid, sb->set_uuid, BKC_UUID_SIZE);
	memcpy(raw->label, sb->label, strnlen(sb->label, BKC_LABEL_SIZE));
	raw->dev_type = cpu_to_le32(sb->dev_type);
	raw->flags = cpu_to_le32(sb->flags);
	raw->block_size = cpu_to_le32(sb->block_size);
	raw->bucket_size = cpu_to_le32(sb->bucket_size);
	raw->dev_size = cpu_to_le64(sb->dev_size);
	raw->nbuckets = cpu_to_le64(sb->nbuckets);
	raw->first_bucket = cpu_to_le64(sb->first_bucket);
	nj = min_t(u32, sb->nr_journal_buckets, BKC_SB_MAX_JOURNAL_BUCKETS);
	raw->nr_journal_buckets = cpu_to_le32(nj);
	for (i = 0; i < nj; i++)
		raw->journal_buckets[i] = cpu_to_le64(sb->journal_buckets[i]);
	raw->data_offset = cpu_to_le64(sb->data_offset);
	raw->cache_mode = cpu_to_le32(sb->cache_mode);
	raw->state = cpu_to_le32(sb->state);
	raw->replacement = cpu_to_le32(sb->replacement);
	raw->sequential_cutoff = cpu_to_le64(sb->tun.sequential_cutoff);
	raw->writeback_rate_max = cpu_to_le64(sb->tun.writeback_rate_max);
	raw->writeback_percent = cpu_to_le32(sb->tun.writeback_percent);
	raw->writeback_delay = cpu_to_le32(sb->tun.writeback_delay);
	raw->writeback_max_age = cpu_to_le32(sb->tun.writeback_max_age);
	memcpy(raw->bdev_uuid, sb->bdev_uuid, sizeof(raw->bdev_uuid));
	memcpy(raw->bdev_state, sb->bdev_state, sizeof(raw->bdev_state));
	raw->csum = cpu_to_le32(bkc_sb_csum(raw));
}

/*
 * Copies fields without judging them; nr_journal_buckets is clamped and
 * the label cut at its first NUL, so that packing the result again gives
 * the same fields.
 */
void bkc_sb_unpack(const struct bkc_sb *raw, struct bkc_sb_info *sb)
{
	u32 i, nj;

	memset(sb, 0, sizeof(*sb));
	sb->version = le32_to_cpu(raw->version);
	sb->seq = le64_to_cpu(raw->seq);
	sb->feature_compat = le64_to_cpu(raw->feature_compat);
	sb->feature_ro_compat = le64_to_cpu(raw->feature_ro_compat);
	sb->feature_incompat = le64_to_cpu(raw->feature_incompat);
	memcpy(sb->uuid, raw->uuid, BKC_UUID_SIZE);
	memcpy(sb->set_uuid, raw->set_uuid, BKC_UUID_SIZE);
	/* the label ends at its first NUL: bytes after it are not kept */
	memcpy(sb->label, raw->label, strnlen((const char *)raw->label,
					      BKC_LABEL_SIZE));
	sb->dev_type = le32_to_cpu(raw->dev_type);
	sb->flags = le32_to_cpu(raw->flags);
	sb->block_size = le32_to_cpu(raw->block_size);
	sb->bucket_size = le32_to_cpu(raw->bucket_size);
	sb->dev_size = le64_to_cpu(raw->dev_size);
	sb->nbuckets = le64_to_cpu(raw->nbuckets);
	sb->first_bucket = le64_to_cpu(raw->first_bucket);
	sb->nr_journal_buckets = le32_to_cpu(raw->nr_journal_buckets);
	nj = min_t(u32, sb->nr_journal_buckets, BKC_SB_MAX_JOURNAL_BUCKETS);
	for (i = 0; i < nj; i++)
		sb->journal_buckets[i] = le64_to_cpu(raw->journal_buckets[i]);
	sb->data_offset = le64_to_cpu(raw->data_offset);
	sb->cache_mode = le32_to_cpu(raw->cache_mode);
	sb->state = le32_to_cpu(raw->state);
	sb->replacement = le32_to_cpu(raw->replacement);
	sb->tun.sequential_cutoff = le64_to_cpu(raw->sequential_cutoff);
	sb->tun.writeback_rate_max = le64_to_cpu(raw->writeback_rate_max);
	sb->tun.writeback_percent = le32_to_cpu(raw->writeback_percent);
	sb->tun.writeback_delay = le32_to_cpu(raw->writeback_delay);
	sb->tun.writeback_max_age = le32_to_cpu(raw->writeback_max_age);
	memcpy(sb->bdev_uuid, raw->bdev_uuid, sizeof(sb->bdev_uuid));
	memcpy(sb->bdev_state, raw->bdev_state, sizeof(sb->bdev_state));
}

bool bkc_uuid_is_zero(const u8 *uuid)
{
	int i;

	for (i = 0; i < BKC_UUID_SIZE; i++)
		if (uuid[i])
			return false;
	return true;
}

u64 bkc_table_per_bucket(u32 bucket_bytes, u32 idx, u32 nr)
{
	u64 room = bucket_bytes - BKC_TABLE_HDR - (idx ? 0 : nr * 8ULL);

	return room / BKC_TABLE_ENT;
}

u32 bkc_table_nr(u64 nbuckets, u32 bucket_bytes)
{
	u32 nr;

	for (nr = 1; nr <= BKC_TABLE_MAX_BUCKETS; nr++) {
		if (BKC_TABLE_HDR + nr * 8ULL + BKC_TABLE_ENT > bucket_bytes)
			return 0;
		if (bkc_table_per_bucket(bucket_bytes, 0, nr) +
		    (nr - 1) * bkc_table_per_bucket(bucket_bytes, 1, nr) >=
		    nbuckets)
			return nr;
	}
	return 0;
}

/* Record why a geometry check failed; returns -EUCLEAN. */
static int geom_fail(const char **why, const char *msg)
{
	*why = msg;
	return -EUCLEAN;
}

static int validate_cache(const struct bkc_sb_info *sb, const char **why)
{
	u64 max_buckets = sb->dev_size / sb->bucket_size;
	u32 i, j;

	if (sb->nbuckets < BKC_NBUCKETS_MIN)
		return geom_fail(why, "too few buckets");
	if (sb->nbuckets > BKC_NBUCKETS_MAX || sb->nbuckets > max_buckets)
		return geom_fail(why, "nbuckets beyond the end of the device");
	if (sb->first_bucket > sb->nbuckets ||
	    sb->first_bucket * sb->bucket_size < BKC_SB_END)
		return geom_fail(why, "first_bucket overlaps the superblock");
	if (sb->nr_journal_buckets < 1 ||
	    sb->nr_journal_buckets > BKC_SB_MAX_JOURNAL_BUCKETS)
		return geom_fail(why, "bad number of journal buckets");
	if (sb->nbuckets - sb->first_bucket <
	    sb->nr_journal_buckets + BKC_DATA_BUCKETS_MIN)
		return geom_fail(why, "too few buckets left after the journal");
	if (!bkc_table_nr(sb->nbuckets, sb->bucket_size))
		return geom_fail(why, "too many buckets for the bucket size (a larger bucket size is needed)");
	for (i = 0; i < sb->nr_journal_buckets; i++) {
		u64 b = sb->journal_buckets[i];

		if (b < sb->first_bucket || b >= sb->nbuckets)
			return geom_fail(why, "journal bucket outside the device");
		for (j = 0; j < i; j++)
			if (sb->journal_buckets[j] == b)
				return geom_fail(why, "journal bucket listed twice");
	}
	if (sb->replacement >= BKC_REPL_NR)
		return geom_fail(why, "unknown replacement policy");
	for (i = 0; i < BKC_SB_MAX_BDEVS; i++) {
		if (sb->bdev_state[i] >= BKC_SLOT_NR)
			return geom_fail(why, "unknown backing slot state");
		if ((sb->bdev_state[i] == BKC_SLOT_FREE) !=
		    bkc_uuid_is_zero(sb->bdev_uuid[i]))
			return geom_fail(why, "backing slot state and uuid disagree");
	}
	if (sb->data_offset || sb->cache_mode || sb->state ||
	    (sb->flags & BKC_SB_F_TUNABLES) || sb->tun.sequential_cutoff ||
	    sb->tun.writeback_rate_max || sb->tun.writeback_percent ||
	    sb->tun.writeback_delay || sb->tun.writeback_max_age)
		return geom_fail(why, "backing-device fields set on a cache device");
	return 0;
}

int bkc_tunables_validate(const struct bkc_tunables *t, bool recorded,
			  const char **why)
{
	if (!recorded) {
		if (t->sequential_cutoff || t->writeback_rate_max ||
		    t->writeback_percent || t->writeback_delay ||
		    t->writeback_max_age)
			return geom_fail(why, "tunables set without the tunables flag");
		return 0;
	}
	if (t->sequential_cutoff > BKC_TUN_CUTOFF_MAX)
		return geom_fail(why, "sequential_cutoff out of range");
	if (t->writeback_rate_max && (t->writeback_rate_max < BKC_TUN_RATE_MIN ||
				      t->writeback_rate_max > BKC_TUN_RATE_MAX))
		return geom_fail(why, "writeback_rate_max out of range");
	if (t->writeback_percent > 100)
		return geom_fail(why, "writeback_percent out of range");
	if (t->writeback_delay > BKC_TUN_DELAY_MAX)
		return geom_fail(why, "writeback_delay out of range");
	if (t->writeback_max_age > BKC_TUN_MAX_AGE_MAX)
		return geom_fail(why, "writeback_max_age out of range");
	return 0;
}

static int validate_backing(const struct bkc_sb_info *sb, const char **why)
{
	u32 i;

	if (sb->data_offset < BKC_SB_END)
		return geom_fail(why, "data_offset overlaps the superblock");
	if (sb->data_offset % sb->block_size)
		return geom_fail(why, "data_offset is not a multiple of the block size");
	if (sb->data_offset >= sb->dev_size ||
	    sb->dev_size - sb->data_offset < sb->block_size)
		return geom_fail(why, "data_offset beyond the end of the device");
	if (sb->cache_mode >= BKC_MODE_NR)
		return geom_fail(why, "unknown cache mode");
	if (sb->state >= BKC_STATE_NR)
		return geom_fail(why, "unknown state");
	if ((sb->state == BKC_STATE_CLEAN || sb->state == BKC_STATE_DIRTY) &&
	    bkc_uuid_is_zero(sb->set_uuid))
		return geom_fail(why, "attached state without a cache set uuid");
	if (sb->nbuckets || sb->first_bucket || sb->nr_journal_buckets ||
	    sb->replacement)
		return geom_fail(why, "cache-device fields set on a backing device");
	if (sb->flags & ~BKC_SB_F_TUNABLES)
		return geom_fail(why, "unknown flags");
	for (i = 0; i < BKC_SB_MAX_BDEVS; i++)
		if (sb->bdev_state[i] || !bkc_uuid_is_zero(sb->bdev_uuid[i]))
			return geom_fail(why, "backing slots set on a backing device");
	return bkc_tunables_validate(&sb->tun, sb->flags & BKC_SB_F_TUNABLES,
				     why);
}

/*
 * Geometry checks.  @dev_bytes is the device's current size, or 0 when it
 * is unknown (the device-size checks are then skipped).
 */
int bkc_sb_validate(const struct bkc_sb_info *sb, u64 dev_bytes,
		    const char **why)
{
	if (sb->dev_type != BKC_DEV_CACHE && sb->dev_type != BKC_DEV_BACKING)
		return geom_fail(why, "unknown device type");
	if (sb->flags & ~BKC_SB_F_SUPP)
		return geom_fail(why, "unknown flags");
	if (!is_power_of_2(sb->block_size) ||
	    sb->block_size < BKC_BLOCK_SIZE_MIN ||
	    sb->block_size > BKC_BLOCK_SIZE_MAX)
		return geom_fail(why, "block size is not a power of two in [512, 64k]");
	if (!is_power_of_2(sb->bucket_size) ||
	    sb->bucket_size < BKC_BUCKET_SIZE_MIN ||
	    sb->bucket_size > BKC_BUCKET_SIZE_MAX)
		return geom_fail(why, "bucket size is not a power of two in [4k, 1g]");
	if (sb->bucket_size < sb->block_size)
		return geom_fail(why, "bucket size is smaller than the block size");
	if (sb->dev_size < BKC_SB_END)
		return geom_fail(why, "recorded device size is too small");
	if (dev_bytes && dev_bytes < sb->dev_size)
		return geom_fail(why, "device is smaller than its superblock records (truncated?)");
	if (sb->dev_type == BKC_DEV_CACHE)
		return validate_cache(sb, why);
	return validate_backing(sb, why);
}

int bkc_sb_decode(const struct bkc_sb *raw, u64 dev_bytes,
		  struct bkc_sb_info *sb, const char **why)
{
	u64 v;

	if (le64_to_cpu(raw->magic) != BKC_SB_MAGIC) {
		*why = "bad magic (not a blkcache device)";
		return -EINVAL;
	}
	if (le32_to_cpu(raw->csum) != bkc_sb_csum(raw)) {
		*why = "bad superblock checksum";
		return -EBADMSG;
	}
	if (le32_to_cpu(raw->version) != BKC_SB_VERSION) {
		*why = "unsupported superblock version";
		return -EPROTONOSUPPORT;
	}
	v = le64_to_cpu(raw->feature_incompat);
	if (v & ~BKC_FEATURE_INCOMPAT_SUPP) {
		*why = "unknown incompatible feature";
		return -EOPNOTSUPP;
	}
	v = le64_to_cpu(raw->feature_ro_compat);
	if (v & ~BKC_FEATURE_RO_COMPAT_SUPP) {
		*why = "unknown read-only-compatible feature";
		return -EOPNOTSUPP;
	}
	bkc_sb_unpack(raw, sb);
	return bkc_sb_validate(sb, dev_bytes, why);
}

/*
 * Fill in the cache geometry from sb->block_size and sb->bucket_size:
 * nbuckets, first_bucket and a journal ring of nbuckets/256 buckets
 * (at least 8, at most BKC_SB_MAX_JOURNAL_BUCKETS) right after the
 * superblock.
 */
int bkc_sb_init_cache(struct bkc_sb_info *sb, u64 dev_bytes, const char **why)
{
	u64 i, nj;

	sb->dev_type = BKC_DEV_CACHE;
	sb->dev_size = dev_bytes;
	if (!is_power_of_2(sb->bucket_size) ||
	    sb->bucket_size < BKC_BUCKET_SIZE_MIN)
		return geom_fail(why, "bucket size is not a power of two in [4k, 1g]");
	sb->nbuckets = min_t(u64, dev_bytes / sb->bucket_size,
			     BKC_NBUCKETS_MAX);
	sb->first_bucket = DIV_ROUND_UP(BKC_SB_END, sb->bucket_size);
	nj = clamp_t(u64, sb->nbuckets >> 8, 8, BKC_SB_MAX_JOURNAL_BUCKETS);
	sb->nr_journal_buckets = nj;
	for (i = 0; i < nj; i++)
		sb->journal_buckets[i] = sb->first_bucket + i;
	sb->data_offset = 0;
	sb->cache_mode = 0;
	sb->state = 0;
	return bkc_sb_validate(sb, dev_bytes, why);
}

/*
 * Fill in the backing geometry.  If sb->data_offset is zero it defaults to
 * the larger of 1 MiB and @io_opt, rounded up to a multiple of @io_opt and
 * of the block size, so that RAID stripes stay aligned.
 */
int bkc_sb_init_backing(struct bkc_sb_info *sb, u64 dev_bytes, u64 io_opt,
			const char **why)
{
	u64 off = sb->data_offset;

	sb->dev_type = BKC_DEV_BACKING;
	sb->dev_size = dev_bytes;
	if (!off) {
		off = BKC_DATA_OFFSET_DEFAULT;
		if (io_opt && io_opt < dev_bytes)
			off = DIV_ROUND_UP(off, io_opt) * io_opt;
		if (sb->block_size && is_power_of_2(sb->block_size))
			off = DIV_ROUND_UP(off, sb->block_size) *
				sb->block_size;
		sb->data_offset = off;
	}
	sb->nbuckets = 0;
	sb->first_bucket = 0;
	sb->nr_journal_buckets = 0;
	sb->replacement = 0;
	return bkc_sb_validate(sb, dev_bytes, why);
}

const char *bkc_dev_type_name(u32 type)
{
	switch (type) {
	case BKC_DEV_CACHE:
		return "cache";
	case BKC_DEV_BACKING:
		return "backing";
	}
	return "unknown";
}

static const char * const mode_names[BKC_MODE_NR] = {
	[BKC_MODE_WRITETHROUGH]	= "writethrough",
	[BKC_MODE_WRITEBACK]	= "writeback",
	[BKC_MODE_WRITEAROUND]	= "writearound",
	[BKC_MODE_NONE]		= "none",
};

static const char * const state_names[BKC_STATE_NR] = {
	[BKC_STATE_NONE]		= "no cache",
	[BKC_STATE_CLEAN]		= "clean",
	[BKC_STATE_DIRTY]		= "dirty",
	[BKC_STATE_INCONSISTENT]	= "inconsistent",
};

static const char * const repl_names[BKC_REPL_NR] = {
	[BKC_REPL_LRU]		= "lru",
	[BKC_REPL_FIFO]		= "fifo",
	[BKC_REPL_RANDOM]	= "random",
};

const char *bkc_cache_mode_name(u32 mode)
{
	return mode < BKC_MODE_NR ? mode_names[mode] : "unknown";
}

const char *bkc_state_name(u32 state)
{
	return state < BKC_STATE_NR ? state_names[state] : "unknown";
}

const char *bkc_replacement_name(u32 repl)
{
	return repl < BKC_REPL_NR ? repl_names[repl] : "unknown";
}

/*
 * Parse a cache mode name.  @len may include one trailing newline, as
 * sysfs writes do.  Returns the mode or -EINVAL.
 */
int bkc_cache_mode_parse(const char *s, size_t len)
{
	int i;

	if (len && s[len - 1] == '\n')
		len--;
	for (i = 0; i < BKC_MODE_NR; i++)
		if (strlen(mode_names[i]) == len &&
		    !memcmp(s, mode_names[i], len))
			return i;
	return -EINVAL;
}

/*
 * Parse a replacement policy name ("lru", "fifo", "random").  @len may
 * include one trailing newline.  Returns the policy or -EINVAL.
 */
int bkc_replacement_parse(const char *s, size_t len)
{
	int i;

	if (len && s[len - 1] == '\n')
		len--;
	for (i = 0; i < BKC_REPL_NR; i++)
		if (strlen(repl_names[i]) == len &&
		    !memcmp(s, repl_names[i], len))
			return i;
	return -EINVAL;
}
