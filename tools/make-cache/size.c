// SPDX-License-Identifier: GPL-2.0
/*
 * Size arguments for make-cache.
 *
 * A SIZE is a decimal number of bytes, optionally followed by one unit
 * letter k, m, g or t (either case, powers of 1024), which may itself be
 * followed by "B" or "iB": 4096, 4k, 4K, 4KiB and 4KB all mean 4096 bytes.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "make-cache.h"

int mc_is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static int unit_shift(char c)
{
	switch (c) {
	case 'k':
	case 'K':
		return 10;
	case 'm':
	case 'M':
		return 20;
	case 'g':
	case 'G':
		return 30;
	case 't':
	case 'T':
		return 40;
	}
	return -1;
}

/*
 * Parse @s into *@out.  Returns 0, -EINVAL for anything that is not a
 * size, or -ERANGE when the value does not fit in 64 bits.
 */
int mc_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	int shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned int d = *s - '0';

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (*s) {
		shift = unit_shift(*s);
		if (shift < 0)
			return -EINVAL;
		s++;
		if (!strcmp(s, "iB") || !strcmp(s, "B"))
			s += strlen(s);
		if (*s)
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

/* Render @bytes as e.g. "524288 (512 KiB)" into @buf. */
const char *mc_fmt_size(uint64_t bytes, char *buf, size_t len)
{
	static const char * const units[] = { "KiB", "MiB", "GiB", "TiB" };
	int i = -1;
	uint64_t v = bytes;

	while (i < 3 && v >= 1024 && !(v % 1024)) {
		v /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%llu (%llu %s)", (unsigned long long)bytes,
			 (unsigned long long)v, units[i]);
	return buf;
}
