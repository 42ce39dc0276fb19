/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Superblock codec: pack, unpack and validate struct bkc_sb.
 */
#ifndef _BKC_SB_H
#define _BKC_SB_H

#include "bkc_port.h"

/* A backing device's tunables, as recorded (BKC_SB_F_TUNABLES). */
struct bkc_tunables {
	u64	sequential_cutoff;	/* bytes; 0: off */
	u64	writeback_rate_max;	/* bytes/s; 0: unlimited */
	u32	writeback_percent;
	u32	writeback_delay;	/* s */
	u32	writeback_max_age;	/* s; 0: off */
};

/* Their ranges: what sysfs accepts and what a superblock may hold. */
#define BKC_TUN_CUTOFF_MAX	(1ULL << 40)
#define BKC_TUN_RATE_MIN	4096ULL
#define BKC_TUN_RATE_MAX	(1ULL << 40)
#define BKC_TUN_DELAY_MAX	3600U
#define BKC_TUN_MAX_AGE_MAX	(30U * 86400)

/*
 * The bucket table's size (table.h), part of a cache device's geometry:
 * a geometry whose table needs more than BKC_TABLE_MAX_BUCKETS buckets
 * does not validate.
 */
#define BKC_TABLE_HDR		((u32)sizeof(struct bkc_table))
#define BKC_TABLE_ENT		((u64)sizeof(struct bkc_bucket_disk))
#define BKC_TABLE_MAX_BUCKETS	4096

/* Table buckets needed for @nbuckets, or 0 if more than the maximum. */
u32 bkc_table_nr(u64 nbuckets, u32 bucket_bytes);
/* Entries in table bucket @idx of a table of @nr buckets. */
u64 bkc_table_per_bucket(u32 bucket_bytes, u32 idx, u32 nr);

/* CPU-endian view of struct bkc_sb. */
struct bkc_sb_info {
	u32	version;
	u64	seq;
	u64	feature_compat;
	u64	feature_ro_compat;
	u64	feature_incompat;
	u8	uuid[BKC_UUID_SIZE];
	u8	set_uuid[BKC_UUID_SIZE];
	char	label[BKC_LABEL_SIZE + 1];	/* always NUL terminated */
	u32	dev_type;
	u32	flags;
	u32	block_size;
	u32	bucket_size;
	u64	dev_size;

	u64	nbuckets;
	u64	first_bucket;
	u32	nr_journal_buckets;
	u64	journal_buckets[BKC_SB_MAX_JOURNAL_BUCKETS];

	u8	bdev_uuid[BKC_SB_MAX_BDEVS][BKC_UUID_SIZE];
	u8	bdev_state[BKC_SB_MAX_BDEVS];

	u64	data_offset;
	u32	cache_mode;
	u32	state;

	u32	replacement;	/* cache devices: enum bkc_replacement */

	struct bkc_tunables tun;	/* backing, with BKC_SB_F_TUNABLES */
};

/* Default backing data offset when the device reports no io_opt. */
#define BKC_DATA_OFFSET_DEFAULT		(1ULL << 20)
/* Usable buckets left after the superblock and journal, at the least. */
#define BKC_DATA_BUCKETS_MIN		64ULL

u32 bkc_sb_csum(const struct bkc_sb *raw);
void bkc_sb_pack(const struct bkc_sb_info *sb, struct bkc_sb *raw);
void bkc_sb_unpack(const struct bkc_sb *raw, struct bkc_sb_info *sb);

int bkc_tunables_validate(const struct bkc_tunables *t, bool recorded,
			  const char **why);
int bkc_sb_validate(const struct bkc_sb_info *sb, u64 dev_bytes,
		    const char **why);
int bkc_sb_decode(const struct bkc_sb *raw, u64 dev_bytes,
		  struct bkc_sb_info *sb, const char **why);

int bkc_sb_init_cache(struct bkc_sb_info *sb, u64 dev_bytes,
		      const char **why);
int bkc_sb_init_backing(struct bkc_sb_info *sb, u64 dev_bytes, u64 io_opt,
			const char **why);

bool bkc_uuid_is_zero(const u8 *uuid);
const char *bkc_dev_type_name(u32 type);
const char *bkc_cache_mode_name(u32 mode);
const char *bkc_state_name(u32 state);
int bkc_cache_mode_parse(const char *s, size_t len);
const char *bkc_replacement_name(u32 repl);
int bkc_replacement_parse(const char *s, size_t len);

#endif /* _BKC_SB_H */
