/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared geometry of the libFuzzer targets and their seed generator.
 */
#ifndef _FUZZ_H
#define _FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "key.h"

#define FUZZ_SET_MAGIC		0x1234abcd5678ef90ULL
#define FUZZ_NBUCKETS		(1ULL << 20)
#define FUZZ_FIRST		2
#define FUZZ_BLOCK		512

/* node target: want header then image */
struct fuzz_node_hdr {
	uint64_t	node_seq;
	uint64_t	lo;
	uint64_t	hi;
	uint8_t		level;
	uint8_t		size_sel;	/* node bytes: 1024 << (sel % 5) */
	uint8_t		tag_only;
	uint8_t		pad[5];
};

/* journal target: a ring of FUZZ_JBUCKETS buckets of FUZZ_JBUCKET bytes */
#define FUZZ_JBUCKETS		4
#define FUZZ_JBUCKET		4096

/* table target: nbuckets chosen so that the table spans 3 buckets */
#define FUZZ_TBUCKET		4096
#define FUZZ_TNBUCKETS		1200ULL

static inline void fuzz_geom(struct bkc_geom *g, u32 bucket_bytes, u64 nb)
{
	g->nbuckets = nb;
	g->first_bucket = FUZZ_FIRST;
	g->bucket_sectors = bucket_bytes >> 9;
	g->block_bytes = FUZZ_BLOCK;
	g->set_magic = FUZZ_SET_MAGIC;
}

/* A failed check names itself before the abort that libFuzzer reports. */
#define fuzz_check(cond)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "fuzz_check failed: %s:%d: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

#endif /* _FUZZ_H */
