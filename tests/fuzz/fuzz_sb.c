// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: superblock decoding and validation.  Any input, any
 * claimed device size; a valid superblock must survive a re-encode.
 */
#include <string.h>

#include "sb.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct bkc_sb raw, raw2;
	struct bkc_sb_info sb, sb2;
	const char *why = NULL;
	u64 dev_bytes = 0;
	int ret;

	if (size > 8) {
		memcpy(&dev_bytes, data, 8);
		data += 8;
		size -= 8;
	}
	memset(&raw, 0, sizeof(raw));
	memcpy(&raw, data, size < sizeof(raw) ? size : sizeof(raw));
	ret = bkc_sb_decode(&raw, dev_bytes, &sb, &why);
	fuzz_check(ret <= 0);
	fuzz_check(!ret || why);
	if (ret)
		return 0;
	/* valid: the label is terminated and a re-encode decodes the same */
	fuzz_check(memchr(sb.label, 0, sizeof(sb.label)) != NULL);
	bkc_sb_pack(&sb, &raw2);
	fuzz_check(bkc_sb_decode(&raw2, dev_bytes, &sb2, &why) == 0);
	fuzz_check(!memcmp(&sb, &sb2, sizeof(sb)));
	return 0;
}
