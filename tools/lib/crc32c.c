// SPDX-License-Identifier: GPL-2.0
/*
 * Table-driven CRC32C (Castagnoli, reflected polynomial 0x82f63b78) for
 * userspace builds of the portable core.  Same convention as the kernel's
 * crc32c(): the caller passes the seed and no final inversion is applied.
 */
#include "bkc_shim.h"

static u32 crc_table[256];
static bool crc_ready;

static void crc_init(void)
{
	u32 i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ ((c & 1) ? 0x82f63b78U : 0);
		crc_table[i] = c;
	}
	crc_ready = true;
}

u32 bkc_crc32c(u32 seed, const void *p, size_t len)
{
	const u8 *b = p;
	u32 c = seed;

	if (!crc_ready)
		crc_init();
	while (len--)
		c = crc_table[(c ^ *b++) & 0xff] ^ (c >> 8);
	return c;
}
