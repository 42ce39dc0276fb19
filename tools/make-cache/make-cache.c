// SPDX-License-Identifier: GPL-2.0
/*
 * make-cache: format cache and backing devices for blkcache.
 *
 *   make-cache -C <dev> [-C ...] -B <dev> [-B ...] [options]
 *   make-cache --show <dev>
 *
 * The superblock layout, its defaults and its validation come from the
 * portable core (drivers/blkcache/core/sb.c), linked in, not copied.
 *
 * The tool works in three phases and never writes before the first one has
 * passed for every device of the invocation:
 *   1. check: open each device exclusively, refuse duplicates, mounted or
 *      held devices, existing signatures (unless --wipe) and geometry the
 *      core rejects;
 *   2. write: wipe (with --wipe), discard (with --discard), write the
 *      superblock at byte 4096 and fsync;
 *   3. register: hand each block device to /sys/fs/blkcache/register.
 */
#include <blkid/blkid.h>
#include <uuid/uuid.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <mntent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <linux/fs.h>

#include "sb.h"
#include "make-cache.h"

#define PROG			"make-cache"
#define MC_MAX_DEVS		64
#define MC_BUCKET_DEFAULT	(512U << 10)
#define MC_BLOCK_DEFAULT	4096U
#define MC_DATA_OFFSET_MIN	8192ULL
#define MC_WIPE_BYTES		8192U
#define MC_REGISTER		"/sys/fs/blkcache/register"
#define MC_UUID_STR		37

struct mc_dev {
	const char	*path;		/* as given on the command line */
	char		*real;		/* canonical path, for registration */
	bool		cache;		/* -C, else -B */
	bool		blk;		/* block device, else regular file */
	dev_t		rdev;		/* block devices */
	dev_t		whole;		/* whole disk of a partition, or rdev */
	dev_t		st_dev;		/* regular files */
	ino_t		ino;
	int		fd;
	u64		size;
	u32		lbs;		/* logical block size */
	u64		io_opt;		/* optimal I/O size, 0 if unknown */
	blkid_probe	pr;
	bool		had_ptable;	/* a partition table was wiped */
	struct bkc_sb_info sb;
	struct bkc_sb	raw;
};

struct mc_opts {
	u64	bucket;
	u64	block;
	u64	data_offset;
	bool	bucket_set, block_set, offset_set;
	uuid_t	set_uuid;
	bool	uuid_set;
	const char *label;
	int	mode;		/* enum bkc_cache_mode, or -1 for the default */
	int	repl;		/* enum bkc_replacement */
	bool	discard;
	bool	wipe;
	bool	no_register;
	const char *show;
	const char *probe;
	bool status;
	bool json;
	const char *flush;
	const char *detach;
};

static struct mc_dev devs[MC_MAX_DEVS];
static int ndevs;

static void __printf(1, 2) err(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage_hint(void)
{
	fprintf(stderr, "Try '" PROG " --help' for more information.\n");
}

static void __noreturn __printf(1, 2) usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage_hint();
	exit(MC_EXIT_REFUSED);
}

static void print_help(void)
{
	printf("Usage: " PROG " [-C <dev>] [-B <dev> ...] [options]   (at least one device)\n"
	       "       " PROG " --show <dev>\n"
	       "       " PROG " --probe <dev>\n"
	       "       " PROG " --status [--json]\n"
	       "       " PROG " --flush <dev> | --detach <dev>\n"
	       "\n"
	       "Format cache (-C) and backing (-B) devices for blkcache.  Block devices\n"
	       "and regular files (image files) are accepted.\n"
	       "\n"
	       "Devices:\n"
	       "  -C, --cache <dev>          format <dev> as a cache device\n"
	       "  -B, --bdev <dev>           format <dev> as a backing device\n"
	       "\n"
	       "Geometry (SIZE: bytes, or with a k/m/g suffix, powers of 1024):\n"
	       "  -b, --bucket SIZE          cache bucket size (default 512k)\n"
	       "  -w, --block SIZE           block size (default: the largest logical\n"
	       "                             block size of the devices, at least 4k)\n"
	       "  -o, --data-offset SIZE     where user data starts on backing devices\n"
	       "                             (default: the larger of 1M and the optimal\n"
	       "                             I/O size, rounded up to a multiple of it)\n"
	       "\n"
	       "Identity and policy:\n"
	       "  -u, --cset-uuid UUID       cache set uuid (default: random)\n"
	       "  -l, --label LABEL          label, at most %d bytes\n"
	       "      --writethrough         initial cache mode of backing devices (default)\n"
	       "      --writeback\n"
	       "      --writearound\n"
	       "      --cache-replacement-policy lru|fifo|random\n"
	       "                             bucket replacement policy (default lru);\n"
	       "                             --cache_replacement_policy is accepted too\n"
	       "\n"
	       "Actions:\n"
	       "      --discard              discard the data area of cache devices\n"
	       "      --wipe                 erase existing signatures instead of refusing\n"
	       "      --no-register          do not register the devices afterwards\n"
	       "      --show <dev>           print the superblock of <dev> and check it\n"
	       "      --probe <dev>          print what the superblock of <dev> says as\n"
	       "                             udev KEY=value lines (exit 1, no output: not\n"
	       "                             a blkcache device)\n"
	       "      --status [--json]      every registered cache set and device: mode,\n"
	       "                             state, dirty data, hit ratio, writeback rate,\n"
	       "                             errors (--json: for exporters)\n"
	       "      --flush <dev>          write back the dirty data of <dev> (/dev/cacheN\n"
	       "                             or its backing device) at full speed, with\n"
	       "                             progress, until none is left\n"
	       "      --detach <dev>         the same, then detach it from its cache set\n"
	       "  -h, --help                 print this help and exit\n"
	       "      --version              print the version and exit\n"
	       "\n"
	       "Exit status: 0 success; 1 usage error, refused device or invalid\n"
	       "superblock (nothing was written); 2 failure while writing or\n"
	       "registering.\n", BKC_LABEL_SIZE);
}

/* ---------------------------------------------------------------------- */
/* option parsing */

static u64 parse_size_opt(const char *what, const char *arg)
{
	u64 v;
	int rc = mc_parse_size(arg, &v);

	if (rc == -ERANGE)
		usage_error("bad %s '%s': too large", what, arg);
	if (rc)
		usage_error("bad %s '%s': not a size (use bytes or a k/m/g suffix)",
			    what, arg);
	return v;
}

static int parse_repl(const char *arg)
{
	int r = bkc_replacement_parse(arg, strlen(arg));

	if (r < 0)
		usage_error("bad cache replacement policy '%s' (use lru, fifo or random)",
			    arg);
	return r;
}

static void add_dev(const char *path, bool cache)
{
	struct mc_dev *d;

	if (ndevs >= MC_MAX_DEVS)
		usage_error("too many devices (at most %d)", MC_MAX_DEVS);
	if (!*path)
		usage_error("empty device path");
	d = &devs[ndevs++];
	memset(d, 0, sizeof(*d));
	d->path = path;
	d->cache = cache;
	d->fd = -1;
}

static void set_mode(struct mc_opts *o, int mode)
{
	if (o->mode >= 0 && o->mode != mode)
		usage_error("--%s conflicts with --%s",
			    bkc_cache_mode_name(mode), bkc_cache_mode_name(o->mode));
	o->mode = mode;
}

enum {
	OPT_WRITEBACK = 256,
	OPT_WRITETHROUGH,
	OPT_WRITEAROUND,
	OPT_REPL,
	OPT_DISCARD,
	OPT_WIPE,
	OPT_NO_REGISTER,
	OPT_VERSION,
	OPT_SHOW,
	OPT_PROBE,
	OPT_STATUS,
	OPT_JSON,
	OPT_FLUSH,
	OPT_DETACH,
};

static const struct option long_opts[] = {
	{ "cache",			required_argument, NULL, 'C' },
	{ "bdev",			required_argument, NULL, 'B' },
	{ "bucket",			required_argument, NULL, 'b' },
	{ "block",			required_argument, NULL, 'w' },
	{ "data-offset",		required_argument, NULL, 'o' },
	{ "cset-uuid",			required_argument, NULL, 'u' },
	{ "label",			required_argument, NULL, 'l' },
	{ "writeback",			no_argument,	   NULL, OPT_WRITEBACK },
	{ "writethrough",		no_argument,	   NULL, OPT_WRITETHROUGH },
	{ "writearound",		no_argument,	   NULL, OPT_WRITEAROUND },
	{ "cache-replacement-policy",	required_argument, NULL, OPT_REPL },
	{ "cache_replacement_policy",	required_argument, NULL, OPT_REPL },
	{ "discard",			no_argument,	   NULL, OPT_DISCARD },
	{ "wipe",			no_argument,	   NULL, OPT_WIPE },
	{ "no-register",		no_argument,	   NULL, OPT_NO_REGISTER },
	{ "help",			no_argument,	   NULL, 'h' },
	{ "version",			no_argument,	   NULL, OPT_VERSION },
	{ "show",			required_argument, NULL, OPT_SHOW },
	{ "probe",			required_argument, NULL, OPT_PROBE },
	{ "status",			no_argument,	   NULL, OPT_STATUS },
	{ "json",			no_argument,	   NULL, OPT_JSON },
	{ "flush",			required_argument, NULL, OPT_FLUSH },
	{ "detach",			required_argument, NULL, OPT_DETACH },
	{ NULL, 0, NULL, 0 }
};

static void parse_args(int argc, char **argv, struct mc_opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->mode = -1;
	o->repl = BKC_REPL_LRU;
	o->bucket = MC_BUCKET_DEFAULT;

	while ((c = getopt_long(argc, argv, "C:B:b:w:o:u:l:h", long_opts,
				NULL)) != -1) {
		switch (c) {
		case 'C':
			add_dev(optarg, true);
			break;
		case 'B':
			add_dev(optarg, false);
			break;
		case 'b':
			o->bucket = parse_size_opt("bucket size", optarg);
			if (!mc_is_pow2(o->bucket))
				usage_error("bad bucket size '%s': not a power of two",
					    optarg);
			if (o->bucket < BKC_BUCKET_SIZE_MIN ||
			    o->bucket > BKC_BUCKET_SIZE_MAX)
				usage_error("bad bucket size '%s': must be between 4k and 1g",
					    optarg);
			o->bucket_set = true;
			break;
		case 'w':
			o->block = parse_size_opt("block size", optarg);
			if (!mc_is_pow2(o->block))
				usage_error("bad block size '%s': not a power of two",
					    optarg);
			if (o->block < BKC_BLOCK_SIZE_MIN ||
			    o->block > BKC_BLOCK_SIZE_MAX)
				usage_error("bad block size '%s': must be between 512 and 64k",
					    optarg);
			o->block_set = true;
			break;
		case 'o':
			o->data_offset = parse_size_opt("data offset", optarg);
			if (o->data_offset < MC_DATA_OFFSET_MIN)
				usage_error("bad data offset '%s': must be at least 8k",
					    optarg);
			o->offset_set = true;
			break;
		case 'u':
			if (uuid_parse(optarg, o->set_uuid))
				usage_error("bad cache set uuid '%s'", optarg);
			if (uuid_is_null(o->set_uuid))
				usage_error("the cache set uuid must not be all zeroes");
			o->uuid_set = true;
			break;
		case 'l':
			if (strlen(optarg) > BKC_LABEL_SIZE)
				usage_error("label '%s' is longer than %d bytes",
					    optarg, BKC_LABEL_SIZE);
			o->label = optarg;
			break;
		case OPT_WRITEBACK:
			set_mode(o, BKC_MODE_WRITEBACK);
			break;
		case OPT_WRITETHROUGH:
			set_mode(o, BKC_MODE_WRITETHROUGH);
			break;
		case OPT_WRITEAROUND:
			set_mode(o, BKC_MODE_WRITEAROUND);
			break;
		case OPT_REPL:
			o->repl = parse_repl(optarg);
			break;
		case OPT_DISCARD:
			o->discard = true;
			break;
		case OPT_WIPE:
			o->wipe = true;
			break;
		case OPT_NO_REGISTER:
			o->no_register = true;
			break;
		case OPT_SHOW:
			if (o->show)
				usage_error("--show takes one device");
			o->show = optarg;
			break;
		case OPT_FLUSH:
			if (o->flush)
				usage_error("--flush takes one device");
			o->flush = optarg;
			break;
		case OPT_DETACH:
			if (o->detach)
				usage_error("--detach takes one device");
			o->detach = optarg;
			break;
		case OPT_STATUS:
			o->status = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_PROBE:
			if (o->probe)
				usage_error("--probe takes one device");
			o->probe = optarg;
			break;
		case 'h':
			print_help();
			exit(MC_EXIT_OK);
		case OPT_VERSION:
			printf(PROG " %s\n", BKC_VERSION);
			exit(MC_EXIT_OK);
		default:
			/* getopt_long has already printed what was wrong */
			usage_hint();
			exit(MC_EXIT_REFUSED);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s' (devices go after -C or -B)",
			    argv[optind]);
	if (o->json && !o->status)
		usage_error("--json goes with --status");
	if ((o->show != NULL) + (o->probe != NULL) + o->status +
	    (o->flush != NULL) + (o->detach != NULL) > 1)
		usage_error("--show, --probe, --status, --flush and --detach cannot be combined");
	if ((o->status || o->flush || o->detach) && ndevs)
		usage_error("--%s cannot be combined with -C or -B",
			    o->status ? "status" : o->flush ? "flush" : "detach");
	if ((o->show || o->probe) && ndevs)
		usage_error("--%s cannot be combined with -C or -B",
			    o->show ? "show" : "probe");
	if (!o->show && !o->probe && !o->status && !o->flush && !o->detach &&
	    !ndevs)
		usage_error("no devices given; use -C <dev> and/or -B <dev>");
}

/* ---------------------------------------------------------------------- */
/* device inspection helpers */

static const char *errno_name(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "unknown errno";
}

/* The whole disk a partition belongs to, or @rdev itself. */
static dev_t whole_disk(dev_t rdev)
{
	char path[PATH_MAX], buf[64];
	unsigned int ma, mi;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition",
		 major(rdev), minor(rdev));
	if (access(path, F_OK))
		return rdev;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../dev",
		 major(rdev), minor(rdev));
	if (mc_read_sysfs(path, buf, sizeof(buf)) ||
	    sscanf(buf, "%u:%u", &ma, &mi) != 2)
		return rdev;
	return makedev(ma, mi);
}

/* Does a /proc mount or swap source name the device @d (or a partition)? */
static bool source_is(const struct mc_dev *d, const char *src)
{
	struct stat st;

	if (!d->blk || src[0] != '/' || stat(src, &st) || !S_ISBLK(st.st_mode))
		return false;
	return st.st_rdev == d->rdev || whole_disk(st.st_rdev) == d->rdev;
}

static int check_mounts(const struct mc_dev *d)
{
	struct mntent *m;
	FILE *f;
	char line[PATH_MAX + 128];
	int bad = 0;

	f = setmntent("/proc/self/mounts", "r");
	if (f) {
		while ((m = getmntent(f))) {
			if (source_is(d, m->mnt_fsname)) {
				err("%s: %s is mounted on %s", d->path,
				    m->mnt_fsname, m->mnt_dir);
				bad = 1;
			}
		}
		endmntent(f);
	}
	f = fopen("/proc/swaps", "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char *sp = strpbrk(line, " \t");

			if (!sp)
				continue;
			*sp = '\0';
			if (source_is(d, line)) {
				err("%s: %s is in use as swap", d->path, line);
				bad = 1;
			}
		}
		fclose(f);
	}
	return bad;
}

/* An image file attached to a loop device is in use: refuse it. */
static int check_loop_backing(const struct mc_dev *d)
{
	char name[PATH_MAX], file[PATH_MAX];
	struct stat st;
	glob_t g;
	size_t i;
	int bad = 0;

	if (d->blk || glob("/sys/block/loop*/loop/backing_file", 0, NULL, &g))
		return 0;
	for (i = 0; i < g.gl_pathc; i++) {
		const char *p = g.gl_pathv[i] + strlen("/sys/block/");

		if (mc_read_sysfs(g.gl_pathv[i], file, sizeof(file)) ||
		    stat(file, &st) || st.st_dev != d->st_dev ||
		    st.st_ino != d->ino)
			continue;
		snprintf(name, sizeof(name), "%.*s",
			 (int)strcspn(p, "/"), p);
		err("%s: file is attached to /dev/%s", d->path, name);
		bad = 1;
	}
	globfree(&g);
	return bad;
}

static int check_holders(const struct mc_dev *d)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *dir;
	int bad = 0;

	if (!d->blk)
		return 0;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/holders",
		 major(d->rdev), minor(d->rdev));
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		err("%s: device is held by %s", d->path, e->d_name);
		bad = 1;
	}
	closedir(dir);
	return bad;
}

static const char *usage_desc(const char *type, const char *usage)
{
	if (!strcmp(type, "linux_raid_member"))
		return "md RAID member";
	if (!strcmp(type, "LVM2_member"))
		return "LVM physical volume";
	if (!strcmp(type, "bcache"))
		return "bcache device";
	if (usage && strcmp(usage, "filesystem"))
		return usage;
	return NULL;
}

/* Report every signature libblkid knows about.  Returns how many. */
static int probe_signatures(struct mc_dev *d, bool report)
{
	int rc, found = 0;

	blkid_reset_probe(d->pr);
	while ((rc = blkid_do_probe(d->pr)) == 0) {
		const char *type = NULL, *usage = NULL, *desc;

		if (!blkid_probe_lookup_value(d->pr, "PTTYPE", &type, NULL)) {
			found++;
			if (report)
				err("%s: contains a %s partition table signature; use --wipe to overwrite",
				    d->path, type);
			continue;
		}
		if (blkid_probe_lookup_value(d->pr, "TYPE", &type, NULL))
			continue;
		blkid_probe_lookup_value(d->pr, "USAGE", &usage, NULL);
		found++;
		if (!report)
			continue;
		desc = usage_desc(type, usage);
		if (desc)
			err("%s: contains a %s signature (%s); use --wipe to overwrite",
			    d->path, type, desc);
		else
			err("%s: contains a %s signature; use --wipe to overwrite",
			    d->path, type);
	}
	if (rc < 0) {
		err("%s: libblkid failed to probe the device", d->path);
		return -1;
	}
	return found;
}

/* libblkid does not know blkcache: look for our own magic. */
static int check_own_sb(struct mc_dev *d, bool report)
{
	struct bkc_sb raw;
	struct bkc_sb_info sb;
	char uuid[MC_UUID_STR];
	ssize_t n;

	if (d->size < BKC_SB_END)
		return 0;
	n = pread(d->fd, &raw, sizeof(raw), BKC_SB_OFFSET);
	if (n != (ssize_t)sizeof(raw))
		return 0;
	if (le64_to_cpu(raw.magic) != BKC_SB_MAGIC)
		return 0;
	if (report) {
		bkc_sb_unpack(&raw, &sb);
		uuid_unparse_lower(sb.uuid, uuid);
		err("%s: contains a blkcache signature (%s device, uuid %s); use --wipe to overwrite",
		    d->path, bkc_dev_type_name(sb.dev_type), uuid);
	}
	return 1;
}

static u64 topology_io_opt(const struct mc_dev *d)
{
	blkid_probe pr = blkid_new_probe();
	blkid_topology tp;
	u64 io_opt = 0;

	if (!pr)
		return 0;
	if (!blkid_probe_set_device(pr, d->fd, 0, 0)) {
		tp = blkid_probe_get_topology(pr);
		if (tp)
			io_opt = blkid_topology_get_optimal_io_size(tp);
	}
	blkid_free_probe(pr);
	return io_opt;
}

/* Phase 1a: stat every device and refuse duplicates before opening any. */
static int stat_devices(void)
{
	struct stat st;
	int i, j, bad = 0;

	for (i = 0; i < ndevs; i++) {
		struct mc_dev *d = &devs[i];

		if (stat(d->path, &st)) {
			err("%s: %s", d->path, strerror(errno));
			bad = 1;
			continue;
		}
		if (S_ISBLK(st.st_mode)) {
			d->blk = true;
			d->rdev = st.st_rdev;
			d->whole = whole_disk(st.st_rdev);
		} else if (S_ISREG(st.st_mode)) {
			d->st_dev = st.st_dev;
			d->ino = st.st_ino;
		} else {
			err("%s: not a block device or regular file", d->path);
			bad = 1;
			continue;
		}
		d->real = realpath(d->path, NULL);
		if (!d->real) {
			err("%s: %s", d->path, strerror(errno));
			bad = 1;
			continue;
		}
		for (j = 0; j < i; j++) {
			struct mc_dev *o = &devs[j];

			if (!o->real || o->blk != d->blk)
				continue;
			if (d->blk ? o->rdev == d->rdev :
			    (o->st_dev == d->st_dev && o->ino == d->ino)) {
				err("%s: same device given twice (also as %s)",
				    d->path, o->path);
				bad = 1;
			} else if (d->blk && (d->whole == o->rdev ||
					      o->whole == d->rdev)) {
				err("%s: overlaps %s (partition and its disk)",
				    d->path, o->path);
				bad = 1;
			}
		}
	}
	return bad;
}

/* Phase 1b: open and inspect one device.  Returns non-zero to refuse. */
static int inspect_device(struct mc_dev *d, const struct mc_opts *o)
{
	struct stat st;
	int bad = 0, n, sz;

	/* a precise message for mounted devices before O_EXCL says EBUSY */
	if (check_mounts(d) || check_loop_backing(d))
		return 1;
	d->fd = open(d->path, O_RDWR | O_CLOEXEC | (d->blk ? O_EXCL : 0));
	if (d->fd < 0) {
		if (errno == EBUSY)
			err("%s: device is busy (mounted, or held by md, dm, blkcache or another user)",
			    d->path);
		else
			err("%s: cannot open: %s", d->path, strerror(errno));
		return 1;
	}
	if (fstat(d->fd, &st)) {
		err("%s: %s", d->path, strerror(errno));
		return 1;
	}
	if (d->blk ? (!S_ISBLK(st.st_mode) || st.st_rdev != d->rdev) :
	    (!S_ISREG(st.st_mode) || st.st_dev != d->st_dev ||
	     st.st_ino != d->ino)) {
		err("%s: changed while being checked", d->path);
		return 1;
	}
	if (d->blk) {
		if (ioctl(d->fd, BLKGETSIZE64, &d->size)) {
			err("%s: cannot get the device size: %s", d->path,
			    strerror(errno));
			return 1;
		}
		if (ioctl(d->fd, BLKSSZGET, &sz) || sz <= 0) {
			err("%s: cannot get the logical block size: %s",
			    d->path, strerror(errno));
			return 1;
		}
		d->lbs = sz;
	} else {
		d->size = st.st_size;
		d->lbs = 512;
	}
	bad |= check_holders(d);

	d->pr = blkid_new_probe();
	if (!d->pr || blkid_probe_set_device(d->pr, d->fd, 0, 0)) {
		err("%s: libblkid cannot use the device", d->path);
		return 1;
	}
	blkid_probe_enable_superblocks(d->pr, 1);
	blkid_probe_set_superblocks_flags(d->pr, BLKID_SUBLKS_TYPE |
					  BLKID_SUBLKS_USAGE |
					  BLKID_SUBLKS_MAGIC |
					  BLKID_SUBLKS_BADCSUM);
	blkid_probe_enable_partitions(d->pr, 1);
	blkid_probe_set_partitions_flags(d->pr, BLKID_PARTS_MAGIC);

	n = probe_signatures(d, !o->wipe);
	if (n < 0 || (n > 0 && !o->wipe))
		bad = 1;
	if (check_own_sb(d, !o->wipe) && !o->wipe)
		bad = 1;
	if (d->blk)
		d->io_opt = topology_io_opt(d);
	return bad;
}

/* ---------------------------------------------------------------------- */
/* geometry */

static int plan_geometry(const struct mc_opts *o, const uuid_t set_uuid,
			 bool have_cache)
{
	char b1[64], b2[64];
	const char *why = NULL;
	u32 lbs_max = 0, block;
	int i, rc, bad = 0;

	for (i = 0; i < ndevs; i++)
		lbs_max = max_t(u32, lbs_max, devs[i].lbs);

	if (o->block_set) {
		block = o->block;
		for (i = 0; i < ndevs; i++) {
			if (block % devs[i].lbs) {
				err("%s: block size %u is not a multiple of the device's logical block size %u",
				    devs[i].path, block, devs[i].lbs);
				bad = 1;
			}
		}
	} else {
		block = max_t(u32, MC_BLOCK_DEFAULT, lbs_max);
		if (block > BKC_BLOCK_SIZE_MAX) {
			err("logical block size %u is larger than blkcache supports (%u)",
			    lbs_max, BKC_BLOCK_SIZE_MAX);
			return 1;
		}
	}
	if (have_cache && o->bucket % block) {
		err("bucket size %s is not a multiple of the block size %u",
		    mc_fmt_size(o->bucket, b1, sizeof(b1)), block);
		bad = 1;
	}
	if (o->offset_set && o->data_offset % block) {
		err("data offset %llu is not a multiple of the block size %u",
		    (unsigned long long)o->data_offset, block);
		bad = 1;
	}
	if (bad)
		return bad;

	for (i = 0; i < ndevs; i++) {
		struct mc_dev *d = &devs[i];
		struct bkc_sb_info *sb = &d->sb;

		memset(sb, 0, sizeof(*sb));
		sb->version = BKC_SB_VERSION;
		sb->seq = 1;
		uuid_generate(sb->uuid);
		if (o->label)
			strncpy(sb->label, o->label, BKC_LABEL_SIZE);
		sb->block_size = block;
		sb->bucket_size = o->bucket;

		if (d->cache) {
			memcpy(sb->set_uuid, set_uuid, BKC_UUID_SIZE);
			sb->replacement = o->repl;
			rc = bkc_sb_init_cache(sb, d->size, &why);
			if (rc) {
				err("%s: cannot format as a cache device: %s (device size %s, bucket size %s)",
				    d->path, why,
				    mc_fmt_size(d->size, b1, sizeof(b1)),
				    mc_fmt_size(o->bucket, b2, sizeof(b2)));
				bad = 1;
			}
		} else {
			if (have_cache) {
				memcpy(sb->set_uuid, set_uuid, BKC_UUID_SIZE);
				sb->state = BKC_STATE_CLEAN;
			} else {
				sb->state = BKC_STATE_NONE;
			}
			sb->cache_mode = o->mode >= 0 ? o->mode :
				BKC_MODE_WRITETHROUGH;
			sb->data_offset = o->offset_set ? o->data_offset : 0;
			rc = bkc_sb_init_backing(sb, d->size, d->io_opt, &why);
			if (rc) {
				err("%s: cannot format as a backing device: %s (device size %s, data offset %s)",
				    d->path, why,
				    mc_fmt_size(d->size, b1, sizeof(b1)),
				    mc_fmt_size(sb->data_offset, b2,
						sizeof(b2)));
				bad = 1;
			} else if (o->offset_set && d->io_opt &&
				   o->data_offset % d->io_opt) {
				fprintf(stderr,
					PROG ": warning: %s: data offset %llu is not a multiple of the optimal I/O size %llu; stripe alignment is lost\n",
					d->path,
					(unsigned long long)o->data_offset,
					(unsigned long long)d->io_opt);
			}
		}
		if (!rc)
			bkc_sb_pack(sb, &d->raw);
	}
	return bad;
}

/* ---------------------------------------------------------------------- */
/* writing */

static int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return -EIO;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

static int wipe_device(struct mc_dev *d)
{
	static const char zero[MC_WIPE_BYTES];
	int rc, loops = 0;

	blkid_reset_probe(d->pr);
	while (loops++ < 64 && blkid_do_probe(d->pr) == 0) {
		const char *type = NULL;

		if (!blkid_probe_lookup_value(d->pr, "PTTYPE", &type, NULL))
			d->had_ptable = true;
		else
			blkid_probe_lookup_value(d->pr, "TYPE", &type, NULL);
		printf("%s: wiping %s signature\n", d->path,
		       type ? type : "unknown");
		if (blkid_do_wipe(d->pr, 0)) {
			err("%s: failed to wipe the %s signature", d->path,
			    type ? type : "unknown");
			return -EIO;
		}
	}
	rc = pwrite_all(d->fd, zero, sizeof(zero), 0);
	if (rc)
		err("%s: cannot zero the first %u bytes: %s", d->path,
		    MC_WIPE_BYTES, strerror(-rc));
	return rc;
}

static void discard_device(struct mc_dev *d)
{
	u64 start = d->sb.first_bucket * d->sb.bucket_size;
	u64 end = d->sb.nbuckets * d->sb.bucket_size;
	u64 range[2] = { start, end - start };
	int rc;

	if (end <= start)
		return;
	if (d->blk)
		rc = ioctl(d->fd, BLKDISCARD, range);
	else
		rc = fallocate(d->fd, FALLOC_FL_PUNCH_HOLE |
			       FALLOC_FL_KEEP_SIZE, start, end - start);
	if (!rc) {
		printf("%s: discarded %llu bytes\n", d->path,
		       (unsigned long long)(end - start));
		return;
	}
	fprintf(stderr, PROG ": warning: %s: discard failed: %s\n", d->path,
		strerror(errno));
}

/*
 * Zero the journal ring: a device formatted again with the same set uuid
 * must not show the kernel the entries of its earlier life.
 */
static int zero_journal(struct mc_dev *d)
{
	static const char zero[1 << 16];
	u32 i;
	int rc;

	for (i = 0; i < d->sb.nr_journal_buckets; i++) {
		u64 off = d->sb.journal_buckets[i] * d->sb.bucket_size;
		u64 range[2] = { off, d->sb.bucket_size };
		u64 done;

		if (d->blk && !ioctl(d->fd, BLKZEROOUT, range))
			continue;
		for (done = 0; done < d->sb.bucket_size; done += sizeof(zero)) {
			rc = pwrite_all(d->fd, zero,
					min_t(u64, sizeof(zero),
					      d->sb.bucket_size - done),
					off + done);
			if (rc) {
				err("%s: cannot clear the journal: %s", d->path,
				    strerror(-rc));
				return rc;
			}
		}
	}
	return 0;
}

static int write_device(struct mc_dev *d, const struct mc_opts *o)
{
	int rc;

	if (o->wipe) {
		rc = wipe_device(d);
		if (rc)
			return rc;
	}
	if (d->cache && o->discard)
		discard_device(d);
	if (d->cache) {
		rc = zero_journal(d);
		if (rc)
			return rc;
	}
	rc = pwrite_all(d->fd, &d->raw, sizeof(d->raw), BKC_SB_OFFSET);
	if (rc) {
		err("%s: cannot write the superblock: %s", d->path,
		    strerror(-rc));
		return rc;
	}
	if (fsync(d->fd)) {
		rc = -errno;
		err("%s: fsync failed: %s", d->path, strerror(errno));
		return rc;
	}
	return 0;
}

static void print_device(const struct mc_dev *d)
{
	const struct bkc_sb_info *sb = &d->sb;
	char uuid[MC_UUID_STR], set[MC_UUID_STR], buf[64];

	uuid_unparse_lower(sb->uuid, uuid);
	uuid_unparse_lower(sb->set_uuid, set);
	printf("%s: formatted as a %s device\n", d->path,
	       d->cache ? "cache" : "backing");
	printf("  uuid:            %s\n", uuid);
	printf("  set uuid:        %s\n", set);
	if (sb->label[0])
		printf("  label:           %s\n", sb->label);
	printf("  device size:     %s\n",
	       mc_fmt_size(sb->dev_size, buf, sizeof(buf)));
	printf("  block size:      %s\n",
	       mc_fmt_size(sb->block_size, buf, sizeof(buf)));
	if (d->cache) {
		printf("  bucket size:     %s\n",
		       mc_fmt_size(sb->bucket_size, buf, sizeof(buf)));
		printf("  buckets:         %llu (first %llu)\n",
		       (unsigned long long)sb->nbuckets,
		       (unsigned long long)sb->first_bucket);
		printf("  journal buckets: %u\n", sb->nr_journal_buckets);
		printf("  replacement:     %s\n",
		       bkc_replacement_name(sb->replacement));
	} else {
		printf("  data offset:     %s\n",
		       mc_fmt_size(sb->data_offset, buf, sizeof(buf)));
		printf("  cache mode:      %s\n",
		       bkc_cache_mode_name(sb->cache_mode));
		printf("  state:           %s\n", bkc_state_name(sb->state));
	}
}

/* ---------------------------------------------------------------------- */
/* registration */

static int register_device(const struct mc_dev *d)
{
	size_t len = strlen(d->real);
	ssize_t n;
	int fd;

	fd = open(MC_REGISTER, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		err("%s: cannot open " MC_REGISTER ": %s", d->path,
		    strerror(errno));
		return -1;
	}
	n = write(fd, d->real, len);
	if (n < 0) {
		err("%s: registration failed: %s", d->path, strerror(errno));
		close(fd);
		return -1;
	}
	if (close(fd)) {
		err("%s: registration failed: %s", d->path, strerror(errno));
		return -1;
	}
	if ((size_t)n != len) {
		err("%s: registration failed: short write", d->path);
		return -1;
	}
	return 0;
}

/* Find the /dev/cacheN exporting the backing device with uuid @uuid. */
static bool find_cache_dev(const char *uuid, char *name, size_t len)
{
	glob_t g;
	size_t i;
	bool found = false;
	char buf[128];

	if (glob("/sys/block/cache*/cache/backing_dev_uuid", 0, NULL, &g))
		return false;
	for (i = 0; i < g.gl_pathc && !found; i++) {
		const char *p = g.gl_pathv[i] + strlen("/sys/block/");
		const char *slash = strchr(p, '/');

		if (mc_read_sysfs(g.gl_pathv[i], buf, sizeof(buf)) ||
		    strcasecmp(buf, uuid) || !slash)
			continue;
		snprintf(name, len, "/dev/%.*s", (int)(slash - p), p);
		found = true;
	}
	globfree(&g);
	return found;
}

static int register_all(bool *registered)
{
	int i, pass, status = MC_EXIT_OK;

	if (access(MC_REGISTER, F_OK)) {
		printf("note: the blkcache module is not loaded (no " MC_REGISTER "); devices not registered\n");
		return MC_EXIT_OK;
	}
	/* cache devices first, then backing devices */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < ndevs; i++) {
			struct mc_dev *d = &devs[i];

			if (d->cache != !pass)
				continue;
			if (!d->blk) {
				printf("note: %s is a regular file; not registered\n",
				       d->path);
				continue;
			}
			if (register_device(d))
				status = MC_EXIT_FAILED;
			else
				registered[i] = true;
		}
	}
	return status;
}

/* Print the /dev/cacheN of each registered backing device. */
static int report_cache_devs(const bool *registered)
{
	const struct timespec tick = { 0, 100 * 1000 * 1000 };
	char uuid[MC_UUID_STR], name[PATH_MAX];
	int i, tries, status = MC_EXIT_OK;

	for (i = 0; i < ndevs; i++) {
		struct mc_dev *d = &devs[i];

		if (d->cache || !registered[i])
			continue;
		uuid_unparse_lower(d->sb.uuid, uuid);
		for (tries = 0; tries < 20; tries++) {
			if (find_cache_dev(uuid, name, sizeof(name)))
				break;
			nanosleep(&tick, NULL);
		}
		if (tries < 20) {
			printf("%s: %s\n", d->path, name);
		} else {
			err("%s: registered, but no /dev/cacheN reports backing_dev_uuid %s",
			    d->path, uuid);
			status = MC_EXIT_FAILED;
		}
	}
	return status;
}

/* ---------------------------------------------------------------------- */
/* --show */

static void print_label(const u8 *label)
{
	int i;

	fputs("label: ", stdout);
	for (i = 0; i < BKC_LABEL_SIZE && label[i]; i++) {
		if (isprint(label[i]) && label[i] != '\\')
			putchar(label[i]);
		else
			printf("\\x%02x", label[i]);
	}
	putchar('\n');
}

static int show(const char *path)
{
	struct bkc_sb raw;
	struct bkc_sb_info sb, ok_sb;
	char uuid[MC_UUID_STR];
	const char *why = NULL;
	struct stat st;
	u64 size = 0;
	u32 i, nj, csum;
	ssize_t n;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err("%s: cannot open: %s", path, strerror(errno));
		return MC_EXIT_REFUSED;
	}
	if (fstat(fd, &st)) {
		size = 0;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size))
			size = 0;
	} else if (S_ISREG(st.st_mode)) {
		size = st.st_size;
	}
	n = pread(fd, &raw, sizeof(raw), BKC_SB_OFFSET);
	close(fd);
	if (n != (ssize_t)sizeof(raw)) {
		err("%s: cannot read a superblock at byte %llu: %s", path,
		    BKC_SB_OFFSET, n < 0 ? strerror(errno) : "device too small");
		return MC_EXIT_REFUSED;
	}

	bkc_sb_unpack(&raw, &sb);
	csum = bkc_sb_csum(&raw);
	printf("magic: 0x%016llx\n", (unsigned long long)le64_to_cpu(raw.magic));
	printf("version: %u\n", sb.version);
	printf("feature_compat: 0x%llx\n",
	       (unsigned long long)sb.feature_compat);
	printf("feature_ro_compat: 0x%llx\n",
	       (unsigned long long)sb.feature_ro_compat);
	printf("feature_incompat: 0x%llx\n",
	       (unsigned long long)sb.feature_incompat);
	uuid_unparse_lower(sb.uuid, uuid);
	printf("uuid: %s\n", uuid);
	uuid_unparse_lower(sb.set_uuid, uuid);
	printf("set_uuid: %s\n", uuid);
	print_label(raw.label);
	if (sb.dev_type == BKC_DEV_CACHE || sb.dev_type == BKC_DEV_BACKING)
		printf("dev_type: %s\n", bkc_dev_type_name(sb.dev_type));
	else
		printf("dev_type: unknown (%u)\n", sb.dev_type);
	printf("flags: 0x%x\n", sb.flags);
	printf("block_size: %u\n", sb.block_size);
	printf("bucket_size: %u\n", sb.bucket_size);
	printf("dev_size: %llu\n", (unsigned long long)sb.dev_size);
	printf("seq: %llu\n", (unsigned long long)sb.seq);
	printf("csum: 0x%08x\n", le32_to_cpu(raw.csum));
	if (sb.dev_type != BKC_DEV_BACKING) {
		printf("nbuckets: %llu\n", (unsigned long long)sb.nbuckets);
		printf("first_bucket: %llu\n",
		       (unsigned long long)sb.first_bucket);
		printf("nr_journal_buckets: %u\n", sb.nr_journal_buckets);
		nj = min_t(u32, sb.nr_journal_buckets,
			   BKC_SB_MAX_JOURNAL_BUCKETS);
		fputs("journal_buckets:", stdout);
		for (i = 0; i < nj; i++)
			printf(" %llu", (unsigned long long)sb.journal_buckets[i]);
		putchar('\n');
		if (sb.replacement < BKC_REPL_NR)
			printf("replacement: %s\n",
			       bkc_replacement_name(sb.replacement));
		else
			printf("replacement: unknown (%u)\n", sb.replacement);
		for (i = 0; i < BKC_SB_MAX_BDEVS; i++) {
			static const char * const slot[] = {
				"free", "attached", "cleaning"
			};

			if (!sb.bdev_state[i] && bkc_uuid_is_zero(sb.bdev_uuid[i]))
				continue;
			uuid_unparse_lower(sb.bdev_uuid[i], uuid);
			printf("bdev_slot_%u: %s %s\n", i,
			       sb.bdev_state[i] < BKC_SLOT_NR ?
			       slot[sb.bdev_state[i]] : "unknown", uuid);
		}
	}
	if (sb.dev_type != BKC_DEV_CACHE) {
		printf("data_offset: %llu\n",
		       (unsigned long long)sb.data_offset);
		if (sb.cache_mode < BKC_MODE_NR)
			printf("cache_mode: %s\n",
			       bkc_cache_mode_name(sb.cache_mode));
		else
			printf("cache_mode: unknown (%u)\n", sb.cache_mode);
		if (sb.state < BKC_STATE_NR)
			printf("state: %s\n", bkc_state_name(sb.state));
		else
			printf("state: unknown (%u)\n", sb.state);
		if (sb.flags & BKC_SB_F_TUNABLES) {
			printf("sequential_cutoff: %llu\n",
			       (unsigned long long)sb.tun.sequential_cutoff);
			printf("writeback_percent: %u\n", sb.tun.writeback_percent);
			printf("writeback_delay: %u\n", sb.tun.writeback_delay);
			printf("writeback_rate_max: %llu\n",
			       (unsigned long long)sb.tun.writeback_rate_max);
			printf("writeback_max_age: %u\n", sb.tun.writeback_max_age);
		}
	}
	printf("checksum: %s\n",
	       csum == le32_to_cpu(raw.csum) ? "valid" : "INVALID");

	rc = bkc_sb_decode(&raw, size, &ok_sb, &why);
	if (!rc) {
		printf("status: ok\n");
		return MC_EXIT_OK;
	}
	printf("status: %s (%s)\n", why ? why : "invalid", errno_name(-rc));
	return MC_EXIT_REFUSED;
}

/* ---------------------------------------------------------------------- */

static void close_all(void)
{
	int i;

	for (i = 0; i < ndevs; i++) {
		struct mc_dev *d = &devs[i];

		if (d->pr)
			blkid_free_probe(d->pr);
		d->pr = NULL;
		if (d->fd >= 0)
			close(d->fd);
		d->fd = -1;
	}
}

/* After a partition table was wiped, tell the kernel to forget it. */
static void reread_partitions(void)
{
	int i, fd;

	for (i = 0; i < ndevs; i++) {
		struct mc_dev *d = &devs[i];

		if (!d->blk || !d->had_ptable)
			continue;
		fd = open(d->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || ioctl(fd, BLKRRPART)) {
			fprintf(stderr,
				PROG ": warning: %s: cannot re-read the partition table: %s\n",
				d->path, strerror(errno));
		}
		if (fd >= 0)
			close(fd);
	}
}

int main(int argc, char **argv)
{
	struct mc_opts o;
	uuid_t set_uuid;
	char set_str[MC_UUID_STR];
	bool registered[MC_MAX_DEVS] = { false };
	bool have_cache = false, have_backing = false;
	int i, bad, status;

	parse_args(argc, argv, &o);
	if (o.show)
		return show(o.show);
	if (o.probe)
		return mc_probe(o.probe);
	if (o.status)
		return mc_status(o.json);
	if (o.flush || o.detach)
		return mc_flush(o.flush ? o.flush : o.detach, !o.flush);

	for (i = 0; i < ndevs; i++)
		have_cache |= devs[i].cache;
	if (o.uuid_set)
		uuid_copy(set_uuid, o.set_uuid);
	else if (have_cache)
		uuid_generate(set_uuid);
	else
		uuid_clear(set_uuid);
	if (o.uuid_set && !have_cache)
		fprintf(stderr,
			PROG ": warning: --cset-uuid ignored without -C; attach the backing device later through /sys/block/cacheN/cache/attach\n");
	if (o.bucket_set && !have_cache)
		fprintf(stderr, PROG ": warning: --bucket ignored without -C\n");
	for (i = 0; i < ndevs; i++)
		have_backing |= !devs[i].cache;
	if ((o.mode >= 0 || o.offset_set) && !have_backing)
		fprintf(stderr,
			PROG ": warning: cache mode and data offset ignored without -B\n");

	/* Phase 1: checks.  Nothing is written unless all pass. */
	bad = stat_devices();
	if (!bad) {
		const char *first = NULL;

		for (i = 0; i < ndevs; i++) {
			if (!devs[i].cache)
				continue;
			if (first) {
				err("%s: a cache set holds one cache device, and %s is this set's; format each cache device with its own make-cache -C",
				    devs[i].path, first);
				bad = 1;
				break;
			}
			first = devs[i].path;
		}
	}
	if (!bad) {
		bool sized = true;

		for (i = 0; i < ndevs; i++) {
			bad |= inspect_device(&devs[i], &o);
			sized &= devs[i].lbs != 0;
		}
		/* report geometry problems too, if every size is known */
		if (sized)
			bad |= plan_geometry(&o, set_uuid, have_cache);
	}
	if (bad) {
		err("refusing to format; nothing was written");
		close_all();
		return MC_EXIT_REFUSED;
	}

	/* Phase 2: write. */
	for (i = 0; i < ndevs; i++) {
		if (write_device(&devs[i], &o)) {
			err("%s: formatting failed", devs[i].path);
			close_all();
			return MC_EXIT_FAILED;
		}
		print_device(&devs[i]);
	}
	close_all();
	reread_partitions();

	/* Phase 3: register. */
	status = MC_EXIT_OK;
	if (o.no_register)
		printf("note: --no-register given; devices not registered\n");
	else
		status = register_all(registered);

	if (have_cache) {
		uuid_unparse_lower(set_uuid, set_str);
		printf("Set UUID: %s\n", set_str);
	}
	if (report_cache_devs(registered))
		status = MC_EXIT_FAILED;
	for (i = 0; i < ndevs; i++)
		free(devs[i].real);
	return status;
}
