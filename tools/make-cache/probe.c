// SPDX-License-Identifier: GPL-2.0
/*
 * make-cache --probe <dev>: what a blkcache superblock says, in udev's
 * KEY=value export format (IMPORT{program} in tools/udev/69-blkcache.rules).
 *
 * One 4 KiB read at BKC_SB_OFFSET, and the size from an ioctl (to check
 * the superblock as the kernel does).  A device that holds no valid
 * blkcache superblock gives exit status 1 and no output, so that the
 * rules can run it on every block device.
 */
#include <blkid/blkid.h>
#include <uuid/uuid.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "sb.h"
#include "make-cache.h"

/* Room for a label with every byte escaped as \xNN. */
#define PROBE_LABEL_ENC	(BKC_LABEL_SIZE * 4 + 1)

static int read_sb(const char *path, struct bkc_sb *raw, u64 *size)
{
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	*size = 0;
	if (!fstat(fd, &st)) {
		if (S_ISBLK(st.st_mode)) {
			if (ioctl(fd, BLKGETSIZE64, size))
				*size = 0;
		} else if (S_ISREG(st.st_mode)) {
			*size = st.st_size;
		}
	}
	n = pread(fd, raw, sizeof(*raw), BKC_SB_OFFSET);
	close(fd);
	return n == (ssize_t)sizeof(*raw) ? 0 : -1;
}

static void print_uuid(const char *key, const u8 *uuid)
{
	char s[37];

	uuid_unparse_lower(uuid, s);
	printf("%s=%s\n", key, s);
}

int mc_probe(const char *path)
{
	char safe[BKC_LABEL_SIZE + 1], enc[PROBE_LABEL_ENC];
	struct bkc_sb_info sb;
	const char *why = NULL;
	struct bkc_sb raw;
	u64 size;

	if (read_sb(path, &raw, &size) || !size)
		return MC_EXIT_REFUSED;
	if (bkc_sb_decode(&raw, size, &sb, &why))
		return MC_EXIT_REFUSED;
	if (sb.dev_type != BKC_DEV_CACHE && sb.dev_type != BKC_DEV_BACKING)
		return MC_EXIT_REFUSED;

	printf("BLKCACHE_TYPE=%s\n", bkc_dev_type_name(sb.dev_type));
	print_uuid("BLKCACHE_UUID", sb.uuid);
	if (!bkc_uuid_is_zero(sb.set_uuid))
		print_uuid("BLKCACHE_SET_UUID", sb.set_uuid);
	else
		printf("BLKCACHE_SET_UUID=\n");
	/* as blkid does for ID_FS_LABEL and ID_FS_LABEL_ENC */
	blkid_safe_string(sb.label, safe, sizeof(safe));
	printf("BLKCACHE_LABEL=%s\n", safe);
	if (blkid_encode_string(sb.label, enc, sizeof(enc)))
		enc[0] = '\0';
	printf("BLKCACHE_LABEL_ENC=%s\n", enc);
	printf("ID_FS_TYPE=blkcache\n");
	printf("ID_FS_USAGE=other\n");
	return MC_EXIT_OK;
}
