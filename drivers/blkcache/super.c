// SPDX-License-Identifier: GPL-2.0
/*
 * Superblock I/O: read and decode, encode and write, synchronously.
 */
#include <linux/bio.h>
#include <linux/gfp.h>

#include "bkc.h"

static int bkc_sb_io(struct block_device *bdev, struct page *page,
		     blk_opf_t opf)
{
	return bkc_io_sync(bdev, opf | REQ_SYNC | REQ_META,
			   BKC_SB_OFFSET >> SECTOR_SHIFT, page_address(page),
			   BKC_SB_SIZE);
}

/*
 * Read and validate the superblock of @bdev.  Returns 0, or a -errno with
 * *why set to the reason.  -EINVAL with a bad magic means "not ours".
 */
int bkc_sb_read(struct block_device *bdev, struct bkc_sb_info *sb,
		const char **why)
{
	u64 size = bdev_nr_bytes(bdev);
	struct page *page;
	int r;

	if (size < BKC_SB_END) {
		*why = "device too small to hold a superblock";
		return -ENOSPC;
	}
	if (bdev_logical_block_size(bdev) > BKC_SB_SIZE) {
		*why = "logical block size larger than the superblock";
		return -EOPNOTSUPP;
	}
	page = alloc_page(GFP_KERNEL);
	if (!page) {
		*why = "out of memory";
		return -ENOMEM;
	}
	r = bkc_sb_io(bdev, page, REQ_OP_READ);
	if (r) {
		*why = "I/O error reading the superblock";
	} else {
		r = bkc_sb_decode(page_address(page), size, sb, why);
		if (!r && sb->block_size < bdev_logical_block_size(bdev)) {
			*why = "block size below the device's logical block size";
			r = -EUCLEAN;
		}
		if (!r && sb->block_size > PAGE_SIZE) {
			*why = "block size larger than the page size";
			r = -EOPNOTSUPP;
		}
	}
	__free_page(page);
	return r;
}

/*
 * Write @sb with its seq bumped, durably (PREFLUSH|FUA).  On failure the
 * caller's copy keeps the old seq, so nothing in memory changes.
 */
int bkc_sb_write(struct block_device *bdev, struct bkc_sb_info *sb)
{
	struct page *page;
	int r;

	page = alloc_page(GFP_NOIO);
	if (!page)
		return -ENOMEM;
	sb->seq++;
	bkc_sb_pack(sb, page_address(page));
	r = bkc_sb_io(bdev, page, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA);
	if (r) {
		sb->seq--;
		bkc_err(bdev, "superblock write failed (%d)", r);
	}
	__free_page(page);
	return r;
}
