/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The only door from the portable core to its environment.
 *
 * In the kernel this maps to kernel headers.  In userspace (make-cache,
 * unit tests, fuzzers) it maps to the small shim in tools/lib/bkc_shim.h.
 * Core code includes nothing else.
 */
#ifndef _BKC_PORT_H
#define _BKC_PORT_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/kernel.h>
#include <linux/build_bug.h>
#include <asm/byteorder.h>
#include <linux/crc32c.h>

#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/math64.h>
#include <linux/bug.h>
#include <linux/compiler.h>

static inline u32 bkc_crc32c(u32 seed, const void *p, size_t len)
{
	return crc32c(seed, p, len);
}

/* Set-up time allocations only (init, open, replay); never in I/O paths. */
static inline void *bkc_kvzalloc(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

static inline void bkc_kvfree(void *p)
{
	kvfree(p);
}

static inline u64 bkc_div64(u64 a, u64 b)
{
	return div64_u64(a, b);
}

/* An invariant of the core: a warning in the kernel, assert() elsewhere. */
#define BKC_ASSERT(cond)	WARN_ON_ONCE(!(cond))
#else
#include "bkc_shim.h"
#endif

#include <linux/blkcache.h>

#endif /* _BKC_PORT_H */
