// SPDX-License-Identifier: GPL-2.0
/*
 * crash-io - block-pattern writer and checker for the blkcache crash tests.
 *
 *   crash-io write DEV --blocks N --seed S --epoch E --log DIR [options]
 *   crash-io check DEV --blocks N --seed S --log DIR [options]
 *
 * The region is N blocks of 4 KiB from --first-block F on.  Every 512-byte
 * sector the writer puts there is self-describing: a magic, the seed of
 * the test, the sector's own number (relative to the start of DEV, or to
 * the start of the cached device when --dev-offset is given), a generation
 * and 480 bytes derived from all of them.  Generations are (epoch << 32) +
 * a counter, so they grow across writes and across boots.
 *
 * The writer runs --threads threads, each owning a contiguous slice of the
 * region, writing 1..--max-len blocks at random places with O_DIRECT.  A
 * write with RWF_DSYNC (REQ_FUA; --fua-pct of them) is acknowledged when it
 * completes.  It goes through Linux AIO: for a synchronous O_DSYNC write
 * to a block device the kernel sends a flush after the FUA write
 * (generic_write_sync()), which would cover a FUA write completed before
 * it was durable; for an asynchronous one it does not.  The others are
 * acknowledged when an fdatasync (a PREFLUSH) issued after they completed
 * has completed.  Acknowledged writes are
 * appended to DIR/ack-E<epoch>-T<thread>.log as (gen, block, nblocks)
 * records right after the acknowledgement, so the log never claims more
 * than was acknowledged.  With --fua-pct 100 there are no fdatasyncs at
 * all: every write is a FUA write.
 *
 * The checker reads the region and, sector by sector, requires (design.md
 * section 4, C1 and C2):
 *   - a sector of a block with an acknowledged write holds that write's
 *     generation or a later one of the same sector;
 *   - any other sector is zero (never written) or a valid pattern of this
 *     sector: never another sector's data, never garbage.
 * It prints what it found and exits 1 on any violation.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define BLK		4096u
#define SECT		512u
#define SECTS_PER_BLK	(BLK / SECT)
#define MAGIC		0x4b4f4c4248534152ull	/* "RASHBLOK" */
#define MAX_THREADS	64
#define MAX_LEN		256
#define MAX_REPORT	20

#ifndef RWF_DSYNC
#define RWF_DSYNC	0x00000002
#endif

struct hdr {
	uint64_t magic;
	uint64_t seed;
	uint64_t sector;
	uint64_t gen;
};

struct ack {
	uint64_t gen;
	uint32_t block;
	uint32_t nblocks;
};

struct opts {
	const char *dev;
	const char *log;
	const char *started;
	uint64_t first;		/* first block of the region */
	uint64_t blocks;
	uint64_t seed;
	uint64_t epoch;
	uint64_t dev_offset;	/* bytes: DEV holds the cached device from here */
	uint64_t count_epoch;	/* check: count the blocks acked in this epoch */
	unsigned int threads;
	unsigned int max_len;
	unsigned int fua_pct;
	unsigned int flush_every;
	double seconds;
	bool quiet;
};

static struct opts o = {
	.threads = 4, .max_len = 16, .fua_pct = 20, .flush_every = 8,
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("crash-io: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The 512 bytes of sector @sector at generation @gen. */
static void fill_sector(uint8_t *p, uint64_t sector, uint64_t gen)
{
	struct hdr h = { MAGIC, o.seed, sector, gen };
	uint64_t x = mix(o.seed ^ mix(sector ^ mix(gen))), *w;
	unsigned int i;

	memcpy(p, &h, sizeof(h));
	w = (uint64_t *)(p + sizeof(h));
	for (i = 0; i < (SECT - sizeof(h)) / 8; i++) {
		x = mix(x);
		w[i] = x;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *xalign(size_t n)
{
	void *p;

	if (posix_memalign(&p, BLK, n))
		die("out of memory");
	memset(p, 0, n);
	return p;
}

/* ---- writer ---- */

struct wthread {
	pthread_t tid;
	unsigned int id;
	uint64_t lo, hi;		/* blocks [lo, hi) of the region */
	int fd, logfd;
	aio_context_t aio;		/* for FUA writes */
	uint64_t rng;
	uint64_t writes, acked, flushes, fua;
	int err;
	struct ack pend[64];
	unsigned int npend;
};

static volatile int stop_all;

static uint64_t rnd(struct wthread *t)
{
	t->rng = mix(t->rng);
	return t->rng;
}

static void log_acks(struct wthread *t, struct ack *a, unsigned int n)
{
	ssize_t len = (ssize_t)(n * sizeof(*a));

	if (!n)
		return;
	if (write(t->logfd, a, len) != len)
		die("thread %u: cannot write the ack log: %s", t->id,
		    strerror(errno));
	t->acked += n;
}

/*
 * Write @len bytes of @buf at @off with RWF_DSYNC through AIO and wait for
 * the completion; returns the bytes written or -1 with errno set.
 */
static ssize_t fua_write(struct wthread *t, void *buf, size_t len, off_t off)
{
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;
	long r;

	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = (uint32_t)t->fd;
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_rw_flags = RWF_DSYNC;
	cb.aio_buf = (uint64_t)(uintptr_t)buf;
	cb.aio_nbytes = len;
	cb.aio_offset = off;
	r = syscall(SYS_io_submit, t->aio, 1L, cbs);
	if (r != 1) {
		if (!r)
			errno = EAGAIN;
		return -1;
	}
	do
		r = syscall(SYS_io_getevents, t->aio, 1L, 1L, &ev, NULL);
	while (r < 0 && errno == EINTR);
	if (r != 1) {
		if (!r)
			errno = EIO;
		return -1;
	}
	if (ev.res < 0) {
		errno = (int)-ev.res;
		return -1;
	}
	return (ssize_t)ev.res;
}

static void *writer(void *arg)
{
	struct wthread *t = arg;
	uint8_t *buf = xalign((size_t)o.max_len * BLK);
	uint64_t counter = 0, slice = t->hi - t->lo;
	double end = o.seconds > 0 ? now() + o.seconds : 0;
	unsigned int since_flush = 0, flush_at;
	bool first = true;

	flush_at = 1 + rnd(t) % o.flush_every;
	while (!stop_all && (!end || now() < end)) {
		uint64_t blk = t->lo + rnd(t) % slice, gen, s;
		unsigned int len = 1 + rnd(t) % o.max_len, i;
		bool fua = rnd(t) % 100 < o.fua_pct;
		struct iovec iov;
		ssize_t r;

		if (blk + len > t->hi)
			len = (unsigned int)(t->hi - blk);
		gen = (o.epoch << 32) + ++counter;
		for (i = 0; i < len * SECTS_PER_BLK; i++) {
			s = (o.first + blk) * SECTS_PER_BLK + i;
			fill_sector(buf + (size_t)i * SECT, s, gen);
		}
		iov.iov_base = buf;
		iov.iov_len = (size_t)len * BLK;
		if (fua)
			r = fua_write(t, buf, iov.iov_len,
				      (off_t)(o.dev_offset +
					      (o.first + blk) * BLK));
		else
			r = pwritev2(t->fd, &iov, 1,
				     (off_t)(o.dev_offset +
					     (o.first + blk) * BLK), 0);
		if (r != (ssize_t)iov.iov_len) {
			t->err = r < 0 ? errno : EIO;
			break;
		}
		t->writes++;
		if (fua) {
			struct ack a = { gen, (uint32_t)blk, len };

			t->fua++;
			log_acks(t, &a, 1);
		} else {
			t->pend[t->npend++] = (struct ack){ gen, (uint32_t)blk,
							    len };
		}
		since_flush++;
		if (t->npend && (since_flush >= flush_at ||
		    t->npend == sizeof(t->pend) / sizeof(t->pend[0]))) {
			if (fdatasync(t->fd)) {
				t->err = errno;
				break;
			}
			t->flushes++;
			log_acks(t, t->pend, t->npend);
			t->npend = 0;
			since_flush = 0;
			flush_at = 1 + rnd(t) % o.flush_every;
		}
		if (first && t->acked && o.started && t->id == 0) {
			int fd = open(o.started, O_WRONLY | O_CREAT, 0644);

			if (fd >= 0)
				close(fd);
			first = false;
		}
	}
	if (t->err)
		stop_all = 1;
	free(buf);
	return NULL;
}

static int cmd_write(void)
{
	struct wthread *t = calloc(o.threads, sizeof(*t));
	uint64_t w = 0, a = 0, f = 0, fua = 0;
	char path[4096];
	int fd, err = 0;
	unsigned int i;

	if (!t)
		die("out of memory");
	if (o.blocks < o.threads)
		die("--blocks must be at least --threads");
	fd = open(o.dev, O_RDWR | O_DIRECT);
	if (fd < 0)
		die("cannot open %s: %s", o.dev, strerror(errno));
	for (i = 0; i < o.threads; i++) {
		t[i].id = i;
		t[i].fd = fd;
		t[i].lo = o.blocks * i / o.threads;
		t[i].hi = o.blocks * (i + 1) / o.threads;
		t[i].rng = mix(o.seed ^ mix(o.epoch * 1000 + i));
		if (syscall(SYS_io_setup, 1L, &t[i].aio))
			die("io_setup failed: %s", strerror(errno));
		snprintf(path, sizeof(path), "%s/ack-E%" PRIu64 "-T%u.log",
			 o.log, o.epoch, i);
		t[i].logfd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (t[i].logfd < 0)
			die("cannot open %s: %s", path, strerror(errno));
	}
	for (i = 0; i < o.threads; i++)
		if (pthread_create(&t[i].tid, NULL, writer, &t[i]))
			die("pthread_create failed");
	for (i = 0; i < o.threads; i++) {
		pthread_join(t[i].tid, NULL);
		syscall(SYS_io_destroy, t[i].aio);
		close(t[i].logfd);
		w += t[i].writes;
		a += t[i].acked;
		f += t[i].flushes;
		fua += t[i].fua;
		if (t[i].err && !err)
			err = t[i].err;
	}
	close(fd);
	printf("crash-io: epoch %" PRIu64 ": %" PRIu64 " writes (%" PRIu64
	       " FUA), %" PRIu64 " flushes, %" PRIu64 " acknowledged%s%s\n",
	       o.epoch, w, fua, f, a, err ? "; stopped by " : "",
	       err ? strerror(err) : "");
	free(t);
	return err ? 3 : 0;
}

/* ---- checker ---- */

static uint64_t *load_acks(uint64_t *nrec, uint64_t *nepoch)
{
	uint64_t *acked = calloc(o.blocks, sizeof(*acked));
	uint8_t *in_epoch = calloc(o.blocks, 1);
	struct dirent *de;
	DIR *d = opendir(o.log);
	struct ack a;
	uint64_t b;

	if (!acked || !in_epoch)
		die("out of memory");
	if (!d)
		die("cannot open %s: %s", o.log, strerror(errno));
	*nrec = 0;
	while ((de = readdir(d))) {
		char path[4096];
		FILE *f;

		if (strncmp(de->d_name, "ack-", 4))
			continue;
		snprintf(path, sizeof(path), "%s/%s", o.log, de->d_name);
		f = fopen(path, "r");
		if (!f)
			die("cannot open %s: %s", path, strerror(errno));
		/* a record cut short by the crash is simply not counted */
		while (fread(&a, sizeof(a), 1, f) == 1) {
			uint64_t b;

			if (a.block + (uint64_t)a.nblocks > o.blocks)
				die("%s: record beyond the region", path);
			for (b = a.block; b < a.block + a.nblocks; b++) {
				if (a.gen > acked[b])
					acked[b] = a.gen;
				if (o.count_epoch && a.gen >> 32 == o.count_epoch)
					in_epoch[b] = 1;
			}
			(*nrec)++;
		}
		fclose(f);
	}
	closedir(d);
	*nepoch = 0;
	for (b = 0; b < o.blocks; b++)
		*nepoch += in_epoch[b];
	free(in_epoch);
	return acked;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static const char *gen_str(uint64_t g, char *buf, size_t n)
{
	snprintf(buf, n, "%" PRIu64 ".%" PRIu64, g >> 32, g & (uint64_t)0xffffffff);
	return buf;
}

static int cmd_check(void)
{
	const size_t chunk = 256 * BLK;
	uint64_t nrec, nepoch, *acked = load_acks(&nrec, &nepoch), b, errors = 0;
	uint64_t n_acked = 0, n_same = 0, n_newer = 0, n_zero = 0;
	uint64_t n_unacked = 0, max_epoch = 0;
	uint8_t *buf = xalign(chunk), exp[SECT];
	char g1[32], g2[32];
	int fd = open(o.dev, O_RDONLY | O_DIRECT);

	if (fd < 0)
		die("cannot open %s: %s", o.dev, strerror(errno));
	for (b = 0; b < o.blocks; b++) {
		uint64_t want = acked[b], got_min = UINT64_MAX;
		unsigned int i;
		uint8_t *blk;
		bool zero = true;

		if (b % (chunk / BLK) == 0) {
			size_t n = chunk;
			ssize_t r;

			if ((o.blocks - b) * BLK < n)
				n = (o.blocks - b) * BLK;
			r = pread(fd, buf, n, (off_t)(o.dev_offset +
						     (o.first + b) * BLK));
			if (r != (ssize_t)n)
				die("read of %s at block %" PRIu64 " failed: %s",
				    o.dev, o.first + b,
				    r < 0 ? strerror(errno) : "short read");
		}
		blk = buf + (b % (chunk / BLK)) * BLK;
		for (i = 0; i < SECTS_PER_BLK; i++) {
			uint8_t *p = blk + i * SECT;
			uint64_t s = (o.first + b) * SECTS_PER_BLK + i;
			const char *why = NULL;
			struct hdr h;

			memcpy(&h, p, sizeof(h));
			if (all_zero(p, SECT)) {
				if (want)
					why = "zeros where a flushed write was acknowledged";
				else
					continue;
			} else if (h.magic != MAGIC || h.seed != o.seed) {
				why = "garbage (not written by this test)";
			} else if (h.sector != s) {
				why = "another sector's data";
			} else {
				fill_sector(exp, s, h.gen);
				if (memcmp(exp, p, SECT))
					why = "corrupt pattern";
				else if (h.gen < want)
					why = "older than an acknowledged write";
				else if ((h.gen >> 32) > o.epoch)
					why = "generation from the future";
			}
			zero = false;
			if (why) {
				if (errors < MAX_REPORT)
					printf("crash-io: ERROR block %" PRIu64
					       " sector %u (device sector %" PRIu64
					       "): %s: found sector %" PRIu64
					       " gen %s, acknowledged gen %s\n",
					       o.first + b, i, s, why,
					       h.magic == MAGIC ? h.sector : 0,
					       gen_str(h.magic == MAGIC ? h.gen : 0,
						       g1, sizeof(g1)),
					       gen_str(want, g2, sizeof(g2)));
				errors++;
				continue;
			}
			if (h.gen < got_min)
				got_min = h.gen;
			if ((h.gen >> 32) > max_epoch)
				max_epoch = h.gen >> 32;
		}
		if (want) {
			n_acked++;
			if (got_min == want)
				n_same++;
			else if (got_min != UINT64_MAX && got_min > want)
				n_newer++;
		} else if (zero) {
			n_zero++;
		} else {
			n_unacked++;
		}
	}
	close(fd);
	if (!o.quiet || errors)
		printf("crash-io: %s: %" PRIu64 " blocks checked against %"
		       PRIu64 " ack records: %" PRIu64
		       " acknowledged (%" PRIu64 " at the acknowledged "
		       "generation, %" PRIu64 " newer), %" PRIu64
		       " written but never acknowledged, %" PRIu64
		       " never written; newest epoch seen %" PRIu64 "; %"
		       PRIu64 " bad sectors\n",
		       o.dev, o.blocks, nrec, n_acked, n_same, n_newer,
		       n_unacked, n_zero, max_epoch, errors);
	printf("verified_blocks=%" PRIu64 "\n", n_acked);
	if (o.count_epoch)
		printf("epoch_blocks=%" PRIu64 "\n", nepoch);
	free(acked);
	free(buf);
	return errors ? 1 : 0;
}

/* ---- options ---- */

static uint64_t num(const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		die("%s: bad number '%s'", opt, s);
	return v;
}

static void usage(void)
{
	fputs("usage: crash-io write|check DEV --blocks N --seed S --log DIR\n"
	      "  [--first-block F] [--dev-offset BYTES] [--epoch E]\n"
	      "  write: [--threads T] [--max-len BLOCKS] [--fua-pct P]\n"
	      "         [--flush-every N] [--seconds S] [--started FILE]\n"
	      "  check: [--quiet] [--count-epoch E]\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	bool write_mode;
	int i;

	if (argc < 3)
		usage();
	if (!strcmp(argv[1], "write"))
		write_mode = true;
	else if (!strcmp(argv[1], "check"))
		write_mode = false;
	else
		usage();
	o.dev = argv[2];
	for (i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--quiet")) {
			o.quiet = true;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--blocks"))
			o.blocks = num(a, v);
		else if (!strcmp(a, "--first-block"))
			o.first = num(a, v);
		else if (!strcmp(a, "--dev-offset"))
			o.dev_offset = num(a, v);
		else if (!strcmp(a, "--count-epoch"))
			o.count_epoch = num(a, v);
		else if (!strcmp(a, "--seed"))
			o.seed = num(a, v);
		else if (!strcmp(a, "--epoch"))
			o.epoch = num(a, v);
		else if (!strcmp(a, "--log"))
			o.log = v;
		else if (!strcmp(a, "--threads"))
			o.threads = (unsigned int)num(a, v);
		else if (!strcmp(a, "--max-len"))
			o.max_len = (unsigned int)num(a, v);
		else if (!strcmp(a, "--fua-pct"))
			o.fua_pct = (unsigned int)num(a, v);
		else if (!strcmp(a, "--flush-every"))
			o.flush_every = (unsigned int)num(a, v);
		else if (!strcmp(a, "--seconds"))
			o.seconds = strtod(v, NULL);
		else if (!strcmp(a, "--started"))
			o.started = v;
		else
			usage();
	}
	if (!o.blocks || !o.seed || !o.log)
		usage();
	if (o.dev_offset % BLK)
		die("--dev-offset must be a multiple of %u", BLK);
	if (o.blocks > UINT32_MAX)
		die("--blocks too large");
	if (write_mode) {
		if (!o.epoch || o.epoch > UINT32_MAX)
			die("--epoch must be 1..2^32-1");
		if (!o.threads || o.threads > MAX_THREADS)
			die("--threads must be 1..%d", MAX_THREADS);
		if (!o.max_len || o.max_len > MAX_LEN)
			die("--max-len must be 1..%d", MAX_LEN);
		if (!o.flush_every)
			die("--flush-every must be at least 1");
		return cmd_write();
	}
	if (!o.epoch)
		o.epoch = UINT32_MAX;
	return cmd_check();
}
