// SPDX-License-Identifier: GPL-2.0
/*
 * sbedit: rewrite fields of a blkcache superblock in place, for tests that
 * need corrupt or unusual superblocks.
 *
 *   sbedit <dev> [--keep-csum] field=value ...
 *
 * Numeric fields take decimal or 0x hex.  The checksum is recomputed
 * afterwards unless --keep-csum is given or csum= is one of the edits.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sb.h"

struct field {
	const char *name;
	size_t off;
	size_t size;
};

#define F(n) { #n, offsetof(struct bkc_sb, n), sizeof(((struct bkc_sb *)0)->n) }
static const struct field fields[] = {
	F(csum), F(version), F(magic), F(seq), F(feature_compat),
	F(feature_ro_compat), F(feature_incompat), F(dev_type), F(flags),
	F(block_size), F(bucket_size), F(dev_size), F(nbuckets),
	F(first_bucket), F(nr_journal_buckets), F(data_offset),
	F(cache_mode), F(state), F(replacement),
};

static int edit(struct bkc_sb *raw, const char *arg, int *csum_set)
{
	const char *eq = strchr(arg, '=');
	unsigned long long v;
	unsigned char *p;
	size_t i, j;
	char *end;

	if (!eq)
		return -1;
	v = strtoull(eq + 1, &end, 0);
	if (*end)
		return -1;
	for (i = 0; i < ARRAY_SIZE(fields); i++) {
		if (strlen(fields[i].name) != (size_t)(eq - arg) ||
		    strncmp(fields[i].name, arg, eq - arg))
			continue;
		p = (unsigned char *)raw + fields[i].off;
		for (j = 0; j < fields[i].size; j++)
			p[j] = (v >> (8 * j)) & 0xff;
		if (!strcmp(fields[i].name, "csum"))
			*csum_set = 1;
		return 0;
	}
	return -1;
}

int main(int argc, char **argv)
{
	int keep = 0, csum_set = 0, fd, i;
	struct bkc_sb raw;

	if (argc < 3) {
		fprintf(stderr, "usage: sbedit <dev> [--keep-csum] field=value...\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0 || pread(fd, &raw, sizeof(raw), BKC_SB_OFFSET) !=
	    (ssize_t)sizeof(raw)) {
		perror(argv[1]);
		return 1;
	}
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--keep-csum")) {
			keep = 1;
			continue;
		}
		if (edit(&raw, argv[i], &csum_set)) {
			fprintf(stderr, "sbedit: bad edit '%s'\n", argv[i]);
			return 2;
		}
	}
	if (!keep && !csum_set)
		raw.csum = cpu_to_le32(bkc_sb_csum(&raw));
	if (pwrite(fd, &raw, sizeof(raw), BKC_SB_OFFSET) !=
	    (ssize_t)sizeof(raw) || fsync(fd)) {
		perror(argv[1]);
		return 1;
	}
	close(fd);
	return 0;
}
