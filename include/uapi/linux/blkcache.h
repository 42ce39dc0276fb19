/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * blkcache on-disk format.
 *
 * Every blkcache device, cache or backing, carries one superblock of
 * BKC_SB_SIZE bytes at byte BKC_SB_OFFSET.  The first 4 KiB of the device
 * are left alone for partition tables and boot blocks.  All fields are
 * little-endian and fixed width; every hole is explicit padding that is
 * written as zero.  Documentation/blkcache/on-disk-format.rst describes
 * every field.
 *
 * This header holds the format only.  The code that encodes, decodes and
 * validates it lives in drivers/blkcache/core/ and is shared by the kernel
 * module, make-cache and the userspace tests.
 */
#ifndef _UAPI_LINUX_BLKCACHE_H
#define _UAPI_LINUX_BLKCACHE_H

#include <linux/types.h>

#define BKC_SB_OFFSET		4096ULL
#define BKC_SB_SIZE		4096U
#define BKC_SB_END		(BKC_SB_OFFSET + BKC_SB_SIZE)

/* "BLKCACHE" read as a little-endian 64-bit word */
#define BKC_SB_MAGIC		0x45484341434b4c42ULL
#define BKC_SB_VERSION		1U

/* No optional features exist yet; each mask lists the bits we understand. */
#define BKC_FEATURE_COMPAT_SUPP		0ULL
#define BKC_FEATURE_RO_COMPAT_SUPP	0ULL
#define BKC_FEATURE_INCOMPAT_SUPP	0ULL

#define BKC_UUID_SIZE		16
#define BKC_LABEL_SIZE		32
#define BKC_SB_MAX_JOURNAL_BUCKETS	256

/* Geometry limits, in bytes unless stated. */
#define BKC_BLOCK_SIZE_MIN	512U
#define BKC_BLOCK_SIZE_MAX	65536U
#define BKC_BUCKET_SIZE_MIN	4096U
#define BKC_BUCKET_SIZE_MAX	(1U << 30)
#define BKC_NBUCKETS_MIN	128ULL
#define BKC_NBUCKETS_MAX	(1ULL << 40)

/* sb.dev_type */
enum bkc_dev_type {
	BKC_DEV_CACHE		= 1,
	BKC_DEV_BACKING		= 2,
};

/* sb.cache_mode (backing devices) */
enum bkc_cache_mode {
	BKC_MODE_WRITETHROUGH	= 0,
	BKC_MODE_WRITEBACK	= 1,
	BKC_MODE_WRITEAROUND	= 2,
	BKC_MODE_NONE		= 3,
	BKC_MODE_NR
};

/* sb.state (backing devices) */
enum bkc_bdev_state {
	BKC_STATE_NONE		= 0,	/* not attached to a cache set */
	BKC_STATE_CLEAN		= 1,	/* attached, no dirty data in the cache */
	BKC_STATE_DIRTY		= 2,	/* attached, the cache holds dirty data */
	BKC_STATE_INCONSISTENT	= 3,	/* dirty data was lost with its cache */
	BKC_STATE_NR
};

/* sb.replacement (cache devices): bucket replacement policy */
enum bkc_replacement {
	BKC_REPL_LRU		= 0,
	BKC_REPL_FIFO		= 1,
	BKC_REPL_RANDOM		= 2,
	BKC_REPL_NR
};

/**
 * struct bkc_sb - the superblock, identical layout for both device types
 *
 * The checksum is crc32c (seed ~0, final value not inverted) over bytes
 * [4, BKC_SB_SIZE) of the encoded superblock.  Fields of the other device
 * type are zero.
 */
struct bkc_sb {
	__le32	csum;			/* 0x000 */
	__le32	version;		/* 0x004 */
	__le64	magic;			/* 0x008 */
	__le64	seq;			/* 0x010 bumped on every rewrite */
	__le64	feature_compat;		/* 0x018 */
	__le64	feature_ro_compat;	/* 0x020 */
	__le64	feature_incompat;	/* 0x028 */
	__u8	uuid[BKC_UUID_SIZE];	/* 0x030 this device */
	__u8	set_uuid[BKC_UUID_SIZE];/* 0x040 cache set; zero if none */
	__u8	label[BKC_LABEL_SIZE];	/* 0x050 NUL padded */
	__le32	dev_type;		/* 0x070 enum bkc_dev_type */
	__le32	flags;			/* 0x074 none defined, must be zero */
	__le32	block_size;		/* 0x078 bytes */
	__le32	bucket_size;		/* 0x07c bytes */
	__le64	dev_size;		/* 0x080 device size at format time */

	/* cache devices */
	__le64	nbuckets;		/* 0x088 buckets on the device */
	__le64	first_bucket;		/* 0x090 first usable bucket */
	__le32	nr_journal_buckets;	/* 0x098 */
	__le32	pad0;			/* 0x09c */

	/* backing devices */
	__le64	data_offset;		/* 0x0a0 bytes; user data starts here */
	__le32	cache_mode;		/* 0x0a8 enum bkc_cache_mode */
	__le32	state;			/* 0x0ac enum bkc_bdev_state */

	/* cache devices */
	__le32	replacement;		/* 0x0b0 enum bkc_replacement */
	__le32	pad1;			/* 0x0b4 */

	__le64	reserved[41];		/* 0x0b8 zero */

	/* cache devices: bucket numbers of the journal ring, in ring order */
	__le64	journal_buckets[BKC_SB_MAX_JOURNAL_BUCKETS];	/* 0x200 */

	__u8	pad_end[BKC_SB_SIZE - 0xa00];			/* 0xa00 */
};

#endif /* _UAPI_LINUX_BLKCACHE_H */
