// SPDX-License-Identifier: GPL-2.0
/*
 * Bios over a buffer: the one place that cuts a kmalloc'ed or vmalloc'ed
 * buffer into bios, for the metadata and superblock I/O (synchronous)
 * and the writeback copies (asynchronous).
 *
 * A vmalloc'ed buffer is flushed before it is written and, for a
 * synchronous read, invalidated after it; an asynchronous reader
 * invalidates it itself once its reads are done (bkc_io_read_done()).
 */
#include <linux/bio.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "bkc.h"

static struct page *bkc_buf_page(const void *p)
{
	return is_vmalloc_addr(p) ? vmalloc_to_page(p) : virt_to_page(p);
}

/*
 * A bio for the start of @buf (@len bytes) at @sector of @bdev, as much
 * as one bio holds; *@added says how much that is.
 */
static struct bio *bkc_io_bio(struct block_device *bdev, blk_opf_t opf,
			      u64 sector, u8 *buf, u32 len, u32 *added)
{
	struct bio *bio = bio_alloc(bdev, BIO_MAX_VECS, opf, GFP_NOIO);
	u32 n = 0, chunk;

	bio->bi_iter.bi_sector = sector;
	while (n < len) {
		chunk = min_t(u32, len - n, PAGE_SIZE - offset_in_page(buf + n));
		if (bio_add_page(bio, bkc_buf_page(buf + n), chunk,
				 offset_in_page(buf + n)) != chunk)
			break;
		n += chunk;
	}
	*added = n;
	return bio;
}

/*
 * Read or write @len bytes of @buf at @sector of @bdev and wait.  A
 * PREFLUSH goes with the first bio only.  Returns 0 or the error of the
 * first bio that failed (nothing after it is sent).
 */
int bkc_io_sync(struct block_device *bdev, blk_opf_t opf, u64 sector,
		void *buf, u32 len)
{
	bool vm = is_vmalloc_addr(buf), write = op_is_write(opf);
	u32 pos = 0, n;
	int r = 0;

	if (vm && write)
		flush_kernel_vmap_range(buf, len);
	while (pos < len && !r) {
		struct bio *bio = bkc_io_bio(bdev, opf, sector, (u8 *)buf + pos,
					     len - pos, &n);

		r = submit_bio_wait(bio);
		bio_put(bio);
		if (!r)
			pos += n;
		sector += n >> SECTOR_SHIFT;
		opf &= ~REQ_PREFLUSH;
	}
	if (vm && !write)
		invalidate_kernel_vmap_range(buf, pos);
	return r;
}

/*
 * Submit @len bytes of @buf at @sector of @bdev as bios that complete
 * through @end_io with @private; @pending counts each bio submitted.
 */
void bkc_io_async(struct block_device *bdev, blk_opf_t opf, u64 sector,
		  void *buf, u32 len, bio_end_io_t *end_io, void *private,
		  atomic_t *pending)
{
	u32 pos = 0, n;

	if (is_vmalloc_addr(buf) && op_is_write(opf))
		flush_kernel_vmap_range(buf, len);
	while (pos < len) {
		struct bio *bio = bkc_io_bio(bdev, opf, sector, (u8 *)buf + pos,
					     len - pos, &n);

		bio->bi_private = private;
		bio->bi_end_io = end_io;
		pos += n;
		sector += n >> SECTOR_SHIFT;
		atomic_inc(pending);
		submit_bio(bio);
	}
}

/* Asynchronous reads into @buf are done: drop stale cache lines. */
void bkc_io_read_done(void *buf, u32 len)
{
	if (is_vmalloc_addr(buf))
		invalidate_kernel_vmap_range(buf, len);
}
