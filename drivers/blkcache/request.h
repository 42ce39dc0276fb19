/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _BKC_REQUEST_H
#define _BKC_REQUEST_H

#include <linux/bio.h>

void bkc_submit_bio(struct bio *bio);
unsigned int bkc_bio_front_pad(void);

#endif /* _BKC_REQUEST_H */
