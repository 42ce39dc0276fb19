/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace stand-ins for the few kernel facilities the portable core uses.
 * Included only through drivers/blkcache/core/bkc_port.h.
 */
#ifndef _BKC_SHIM_H
#define _BKC_SHIM_H

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/types.h>

/* As in the kernel's build_bug.h: the message is optional. */
#undef static_assert
#define static_assert(expr, ...) __bkc_static_assert(expr, ##__VA_ARGS__, #expr)
#define __bkc_static_assert(expr, msg, ...) _Static_assert(expr, msg)

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

#define cpu_to_le16(x)	((__le16)htole16(x))
#define cpu_to_le32(x)	((__le32)htole32(x))
#define cpu_to_le64(x)	((__le64)htole64(x))
#define le16_to_cpu(x)	le16toh((u16)(x))
#define le32_to_cpu(x)	le32toh((u32)(x))
#define le64_to_cpu(x)	le64toh((u64)(x))

#ifndef min
#define min(a, b)	((a) < (b) ? (a) : (b))
#define max(a, b)	((a) > (b) ? (a) : (b))
#endif
#define min_t(t, a, b)	((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define max_t(t, a, b)	((t)(a) > (t)(b) ? (t)(a) : (t)(b))
#define clamp_t(t, v, lo, hi)	min_t(t, max_t(t, v, lo), hi)
#ifndef U64_MAX
#define U64_MAX		((u64)~0ULL)
#endif
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define fallthrough	__attribute__((__fallthrough__))

static inline bool is_power_of_2(unsigned long long n)
{
	return n != 0 && (n & (n - 1)) == 0;
}

u32 bkc_crc32c(u32 seed, const void *p, size_t len);

#include <stdlib.h>
#include <assert.h>

/* An invariant of the core: a warning in the kernel, assert() here. */
#define BKC_ASSERT(cond)	assert(cond)

/* Single-copy accesses (the kernel's READ_ONCE/WRITE_ONCE). */
#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static inline void *bkc_kvzalloc(size_t size)
{
	return calloc(1, size ? size : 1);
}

static inline void bkc_kvfree(void *p)
{
	free(p);
}

static inline u64 bkc_div64(u64 a, u64 b)
{
	return a / b;
}

#endif /* _BKC_SHIM_H */
