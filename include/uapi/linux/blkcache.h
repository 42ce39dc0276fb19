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
#define BKC_SB_MAX_BDEVS	64

/* sb.flags */
#define BKC_SB_F_INITIALIZED	(1U << 0)	/* cache: journal written */
#define BKC_SB_F_TUNABLES	(1U << 1)	/* backing: tunables recorded */
#define BKC_SB_F_SUPP		(BKC_SB_F_INITIALIZED | BKC_SB_F_TUNABLES)

/* sb.bdev_state[] (cache devices) */
enum bkc_bdev_slot {
	BKC_SLOT_FREE		= 0,
	BKC_SLOT_ATTACHED	= 1,	/* keys of this id are live */
	BKC_SLOT_CLEANING	= 2,	/* detached; keys being dropped */
	BKC_SLOT_NR
};

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
	__le32	flags;			/* 0x074 BKC_SB_F_* */
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

	/* backing devices: tunables, valid with BKC_SB_F_TUNABLES */
	__le64	sequential_cutoff;	/* 0x0b8 bytes; 0: off */
	__le64	writeback_rate_max;	/* 0x0c0 bytes/s; 0: unlimited */
	__le32	writeback_percent;	/* 0x0c8 0..100 */
	__le32	writeback_delay;	/* 0x0cc seconds, 0..3600 */
	__le32	writeback_max_age;	/* 0x0d0 seconds, 0..2592000; 0: off */
	__le32	pad2;			/* 0x0d4 */

	__le64	reserved[37];		/* 0x0d8 zero */

	/* cache devices: bucket numbers of the journal ring, in ring order */
	__le64	journal_buckets[BKC_SB_MAX_JOURNAL_BUCKETS];	/* 0x200 */

	/*
	 * cache devices: the backing devices attached to the set.  Slot i
	 * holds the uuid of the device whose extent keys use device id i.
	 */
	__u8	bdev_uuid[BKC_SB_MAX_BDEVS][BKC_UUID_SIZE];	/* 0xa00 */
	__u8	bdev_state[BKC_SB_MAX_BDEVS];			/* 0xe00 */

	__u8	pad_end[BKC_SB_SIZE - 0xe40];			/* 0xe40 */
};

/*
 * Metadata on the cache device: btree nodes, the journal and the bucket
 * table.  Documentation/blkcache/on-disk-format-core.rst describes every
 * field.  Every metadata block starts with a crc32c (seed ~0, not inverted)
 * of the rest of the block and a magic that is XORed with the set magic,
 * bkc_set_magic(set_uuid), so that stale blocks of another cache set are
 * rejected.
 */

/* Keys: the position is (backing device id << BKC_POS_DEV_SHIFT) | LBA. */
#define BKC_POS_DEV_SHIFT	48
#define BKC_POS_LBA_MASK	((1ULL << BKC_POS_DEV_SHIFT) - 1)
#define BKC_POS_MAX		(~0ULL)

/* key.ptr: bucket in bits 0-39, generation in 40-47, flags in 48-63 */
#define BKC_PTR_BUCKET_BITS	40
#define BKC_PTR_BUCKET_MASK	((1ULL << BKC_PTR_BUCKET_BITS) - 1)
#define BKC_PTR_GEN_SHIFT	40
#define BKC_PTR_FLAGS_SHIFT	48
#define BKC_KEY_DIRTY		(1ULL << 48)	/* leaf: data not on backing */
#define BKC_KEY_HOLE		(1ULL << 49)	/* range holds no data */
#define BKC_KEY_FLAGS_MASK	(BKC_KEY_DIRTY | BKC_KEY_HOLE)

/**
 * struct bkc_bkey - one key in a btree node or a journal entry
 *
 * Leaf keys map [lba, lba + len) of backing device dev to sectors
 * [off, off + len) of bucket.  A hole key (BKC_KEY_HOLE, no bucket)
 * erases the range.  Interior keys (len == 0) point at a child node that
 * covers keys from pos up to the next interior key's pos; off holds the low
 * 32 bits of the child's node_seq.
 */
struct bkc_bkey {
	__le64	pos;		/* 0x00 dev << 48 | lba (sectors) */
	__le64	ptr;		/* 0x08 bucket | gen << 40 | flags */
	__le32	len;		/* 0x10 sectors; 0 in interior nodes */
	__le32	off;		/* 0x14 sector in bucket; child seq (interior) */
};

/* "BKCBSET\0" and friends, XORed with the set magic on disk */
#define BKC_BSET_MAGIC		0x0054455342434b42ULL
#define BKC_JSET_MAGIC		0x0054455341434b42ULL
/*
 * struct bkc_jset flags.  CLEAN: written by a clean shutdown, with every
 * btree node change on disk and no node write in flight, so any damaged
 * bset found in a node is corruption, never a torn append.
 */
#define BKC_JSET_F_CLEAN	(1U << 0)
#define BKC_JSET_F_SUPP		BKC_JSET_F_CLEAN
#define BKC_TABLE_MAGIC		0x004c425441434b42ULL

/**
 * struct bkc_bset - header of one sorted key set in a btree node
 *
 * A node occupies the first node_size bytes of its own bucket.  The first
 * bset starts at offset 0 and holds the node's whole contents when the
 * node was written; later bsets are appended at block-aligned offsets and
 * hold only what changed, newest last.  Readers apply them in order and
 * stop at the first bset whose magic, node_seq, offset, index, prev_csum
 * or checksum does not match; prev_csum chains each bset to the one before
 * it, so a leftover bset of an earlier write of the same node that happens
 * to sit at the next offset is not taken for a new one.  The checksum
 * covers bytes [4, 64 + 24 * nkeys).
 */
struct bkc_bset {
	__le32	csum;		/* 0x00 */
	__le32	nkeys;		/* 0x04 */
	__le64	magic;		/* 0x08 BKC_BSET_MAGIC ^ set magic */
	__le64	node_seq;	/* 0x10 node incarnation, same in every bset */
	__le64	lo;		/* 0x18 first position the node covers */
	__le64	hi;		/* 0x20 last position the node covers */
	__le64	journal_seq;	/* 0x28 newest journal entry of these keys */
	__le32	offset;		/* 0x30 byte offset of this bset in the node */
	__le16	idx;		/* 0x34 0 for the first bset, then 1, 2, ... */
	__u8	level;		/* 0x36 0 = leaf */
	__u8	flags;		/* 0x37 none defined, zero */
	__le32	prev_csum;	/* 0x38 csum of the previous bset, 0 if idx 0 */
	__le32	pad;		/* 0x3c zero */
	struct bkc_bkey keys[];	/* 0x40 sorted by pos, no overlaps */
};

/* Journal records inside a struct bkc_jset */
enum bkc_jrec_type {
	BKC_JREC_KEYS		= 1,	/* struct bkc_bkey[nr], leaf keys */
	BKC_JREC_GENS		= 2,	/* __le64[nr]: bucket | gen << 40 */
	BKC_JREC_NR
};

/**
 * struct bkc_jrec - header of one record in a journal entry
 */
struct bkc_jrec {
	__le16	type;		/* 0x00 enum bkc_jrec_type */
	__le16	flags;		/* 0x02 zero */
	__le32	nr;		/* 0x04 items that follow */
};

/**
 * struct bkc_jset - one journal entry
 *
 * Entries start at block-aligned offsets in the journal buckets and never
 * span two buckets.  bytes is the entry length up to the end of the last
 * record; the entry occupies bytes rounded up to the block size.  The
 * checksum covers bytes [4, bytes).  Every entry carries the durable btree
 * root, the bucket table it builds on and last_seq: replay needs entries
 * last_seq .. seq and nothing older.
 */
struct bkc_jset {
	__le32	csum;		/* 0x00 */
	__le32	bytes;		/* 0x04 header plus records */
	__le64	magic;		/* 0x08 BKC_JSET_MAGIC ^ set magic */
	__le64	seq;		/* 0x10 */
	__le64	last_seq;	/* 0x18 oldest entry still needed */
	__le64	root_ptr;	/* 0x20 root node: bucket | gen << 40 */
	__le64	root_seq;	/* 0x28 root node_seq */
	__le64	table_ptr;	/* 0x30 bucket table: bucket | gen << 40 */
	__le64	table_seq;	/* 0x38 journal seq the table was taken at */
	__le32	nr_recs;	/* 0x40 records that follow */
	__u8	root_level;	/* 0x44 */
	__u8	flags;		/* 0x45 BKC_JSET_F_* */
	__le16	pad0;		/* 0x46 zero */
	__le32	clock;		/* 0x48 replacement clock */
	__le32	pad1;		/* 0x4c zero */
	__le64	pad2[2];	/* 0x50 zero */
};				/* 0x60, records follow */

/**
 * struct bkc_bucket_disk - one bucket's persisted allocator state
 */
struct bkc_bucket_disk {
	__u8	gen;		/* 0x00 bucket generation */
	__u8	oldest_gen;	/* 0x01 no key anywhere is older than this */
	__le16	pad;		/* 0x02 zero */
	__le32	prio;		/* 0x04 replacement stamp */
};

/**
 * struct bkc_table - header of one bucket of the bucket table
 *
 * The table holds a struct bkc_bucket_disk for every bucket of the device.
 * It spans nr_buckets table buckets; each starts with this header and holds
 * entries for buckets [first, first + count).  The first table bucket
 * also lists all table buckets (next_ptrs) so that the journal needs to
 * point at the first one only.  The checksum covers bytes [4, bytes).
 */
struct bkc_table {
	__le32	csum;		/* 0x00 */
	__le32	bytes;		/* 0x04 header, list and entries */
	__le64	magic;		/* 0x08 BKC_TABLE_MAGIC ^ set magic */
	__le64	seq;		/* 0x10 journal seq the table was taken at */
	__le64	first;		/* 0x18 first bucket described here */
	__le32	count;		/* 0x20 entries in this table bucket */
	__le32	idx;		/* 0x24 index of this table bucket */
	__le32	nr_buckets;	/* 0x28 table buckets in total */
	__le32	nr_ptrs;	/* 0x2c entries in ptrs[] (first bucket only) */
	__le64	nbuckets;	/* 0x30 device buckets, must match sb */
	__le64	pad;		/* 0x38 zero */
	__le64	ptrs[];		/* 0x40 table buckets: bucket | gen << 40 */
};				/* entries follow ptrs[], 8-byte aligned */

#endif /* _UAPI_LINUX_BLKCACHE_H */
