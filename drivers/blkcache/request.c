// SPDX-License-Identifier: GPL-2.0
/*
 * The /dev/cacheN request path.
 *
 * Every bio is cloned (sharing the caller's pages, no copy) onto the
 * backing device, shifted by data_offset.  Flush, FUA, discard and
 * write-zeroes bios take the same path.  Each clone holds a reference on
 * the device's in-flight counter, so stop can wait for them.
 */
#include "bkc.h"
#include "request.h"

struct bkc_io {
	struct bkc_backing	*b;
	struct bio		*orig;
	unsigned long		start;
	struct bio		clone;	/* must be last: bio_set front_pad */
};

unsigned int bkc_bio_front_pad(void)
{
	return offsetof(struct bkc_io, clone);
}

static void bkc_io_endio(struct bio *clone)
{
	struct bkc_io *io = container_of(clone, struct bkc_io, clone);
	struct bkc_backing *b = io->b;
	struct bio *orig = io->orig;
	unsigned long start = io->start;

	orig->bi_status = clone->bi_status;
	bio_put(clone);
	bio_end_io_acct(orig, start);
	bio_endio(orig);
	percpu_ref_put(&b->inflight);
}

void bkc_submit_bio(struct bio *bio)
{
	struct bkc_backing *b = bio->bi_bdev->bd_disk->private_data;
	struct bkc_io *io;
	struct bio *clone;

	clone = bio_alloc_clone(b->dev.bdev, bio, GFP_NOIO, &b->bs);
	if (unlikely(!clone)) {
		bio_io_error(bio);
		return;
	}
	io = container_of(clone, struct bkc_io, clone);
	io->b = b;
	io->orig = bio;
	io->start = bio_start_io_acct(bio);
	percpu_ref_get(&b->inflight);

	clone->bi_iter.bi_sector += b->data_start;
	clone->bi_end_io = bkc_io_endio;
	clone->bi_private = NULL;
	submit_bio_noacct(clone);
}
