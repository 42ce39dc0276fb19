/* SPDX-License-Identifier: GPL-2.0 */
/*
 * make-cache: shared declarations between the formatter's source files.
 */
#ifndef _MAKE_CACHE_H
#define _MAKE_CACHE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* The one place the tool's version is defined. */
#define BKC_VERSION	"0.1.0"

/* Userspace spellings of the kernel's __printf() and __noreturn. */
#define mc_attr(x)	__attribute__(x)
#ifndef __printf
#define __printf(a, b)	mc_attr((__format__(printf, a, b)))
#endif
#ifndef __noreturn
#define __noreturn	mc_attr((__noreturn__))
#endif

/* Exit status, see Documentation/blkcache/make-cache.rst */
enum {
	MC_EXIT_OK	= 0,
	MC_EXIT_REFUSED	= 1,	/* usage error or refusal: nothing written */
	MC_EXIT_FAILED	= 2,	/* failure while writing or registering */
};

int mc_parse_size(const char *s, uint64_t *out);
const char *mc_fmt_size(uint64_t bytes, char *buf, size_t len);
int mc_is_pow2(uint64_t v);

/* sysfs.c */
int mc_read_sysfs(const char *path, char *buf, size_t len);
int mc_write_sysfs(const char *path, const char *val);
long long mc_hsize_bytes(const char *s);

/* --probe (probe.c) */
int mc_probe(const char *path);

/* --status [--json] (status.c) */
int mc_status(bool json);

/* --flush <dev>, --detach <dev> (flush.c) */
int mc_flush(const char *dev, bool detach);

#endif /* _MAKE_CACHE_H */
