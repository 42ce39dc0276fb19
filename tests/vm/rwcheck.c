// SPDX-License-Identifier: GPL-2.0
/*
 * rwcheck - read a write back at once, and write around a block just
 * written (issue 9: writes complete before their keys are in).
 *
 *   rwcheck readback DEV FIRST_BLOCK BLOCKS ROUNDS SEED
 *   rwcheck bypass   DEV FIRST_BLOCK BLOCKS ROUNDS SEED STREAM
 *
 * Blocks are 4 KiB, I/O is O_DIRECT, one request at a time, each with a
 * pattern of its own (block, round, step and seed).
 *
 * readback: each round writes 1 to 4 distinct random blocks of the region,
 * then reads each back at once; every read must return what was written.
 *
 * bypass: round R takes block B at the R-th 1 MiB boundary of the region
 * (past its first STREAM blocks; the rounds wrap around the region),
 * writes B, then the STREAM blocks just before B in ascending order, and
 * B again: with sequential_cutoff at STREAM blocks that last write
 * continues a stream past the cutoff and bypasses the cache (B's stripe
 * holds no dirty data yet, unless B's first write is in the index
 * already), while the first one may still wait for its keys.  Reading B
 * must return the last write.
 *
 * Prints the rounds and the bad reads (with what they read instead);
 * exit status 1 on a bad read, 2 on usage or I/O errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xorshift.h"

#define BLK		4096
#define PER_MIB		(1048576 / BLK)
#define MAX_PER_ROUND	4
#define MAX_REPORT	10
#define MAGIC		0x6b63656863777221ULL	/* "!rwcheck" */

static void pattern(uint8_t *buf, uint64_t blk, uint64_t round,
		    uint64_t step, uint64_t seed)
{
	uint64_t s = (seed * 0x9e3779b97f4a7c15ULL) ^ (blk << 20) ^
		     (round << 4) ^ step ^ 0x5bd1e995ULL;
	uint64_t *w = (uint64_t *)buf;
	size_t i;

	w[0] = MAGIC;
	w[1] = blk;
	w[2] = round;
	w[3] = step;
	w[4] = seed;
	for (i = 5; i < BLK / 8; i++)
		w[i] = xorshift(&s) | 1;
}

static int fd;
static uint8_t *wbuf, *rbuf;
static unsigned long bad;

static void io(int write, uint64_t blk)
{
	ssize_t n = write ? pwrite(fd, wbuf, BLK, (off_t)(blk * BLK)) :
			    pread(fd, rbuf, BLK, (off_t)(blk * BLK));

	if (n != BLK) {
		fprintf(stderr, "rwcheck: %s of block %llu: %s\n",
			write ? "write" : "read", (unsigned long long)blk,
			n < 0 ? strerror(errno) : "short");
		exit(2);
	}
}

static void put(uint64_t blk, uint64_t round, uint64_t step, uint64_t seed)
{
	pattern(wbuf, blk, round, step, seed);
	io(1, blk);
}

/* Read @blk back and compare it with pattern (@round, @step). */
static void check(uint64_t blk, uint64_t round, uint64_t step, uint64_t seed)
{
	const uint64_t *w = (const uint64_t *)rbuf;

	io(0, blk);
	pattern(wbuf, blk, round, step, seed);
	if (!memcmp(wbuf, rbuf, BLK))
		return;
	if (++bad <= MAX_REPORT) {
		if (w[0] == MAGIC)
			printf("block %llu (round %llu, step %llu): read round %llu step %llu of block %llu\n",
			       (unsigned long long)blk,
			       (unsigned long long)round,
			       (unsigned long long)step,
			       (unsigned long long)w[2],
			       (unsigned long long)w[3],
			       (unsigned long long)w[1]);
		else
			printf("block %llu (round %llu, step %llu): read no pattern of ours\n",
			       (unsigned long long)blk,
			       (unsigned long long)round,
			       (unsigned long long)step);
	}
}

static void readback(uint64_t first, uint64_t blocks, uint64_t rounds,
		     uint64_t seed, uint64_t *rng)
{
	uint64_t r, blk[MAX_PER_ROUND];
	unsigned int i, j, n;

	for (r = 0; r < rounds; r++) {
		n = 1 + xorshift(rng) % MAX_PER_ROUND;
		for (i = 0; i < n; i++) {
again:
			blk[i] = first + xorshift(rng) % blocks;
			for (j = 0; j < i; j++)
				if (blk[j] == blk[i])
					goto again;
			put(blk[i], r, i, seed);
		}
		for (i = 0; i < n; i++)
			check(blk[i], r, i, seed);
	}
}

static void bypass(uint64_t first, uint64_t blocks, uint64_t rounds,
		   uint64_t seed, uint64_t stream)
{
	uint64_t r, b, i, mibs;

	/* B at a 1 MiB boundary of the device, STREAM blocks into the region */
	b = (first + stream + PER_MIB - 1) / PER_MIB * PER_MIB;
	if (b >= first + blocks) {
		fprintf(stderr, "rwcheck: the region holds no 1 MiB boundary past %llu blocks\n",
			(unsigned long long)stream);
		exit(2);
	}
	mibs = (first + blocks - 1 - b) / PER_MIB + 1;
	for (r = 0; r < rounds; r++) {
		b = (first + stream + PER_MIB - 1) / PER_MIB * PER_MIB +
		    r % mibs * PER_MIB;
		put(b, r, 0, seed);
		for (i = stream; i > 0; i--)
			put(b - i, r, 1, seed);
		put(b, r, 2, seed);
		check(b, r, 2, seed);
	}
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || !*s || *end) {
		fprintf(stderr, "rwcheck: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	uint64_t first, blocks, rounds, seed, rng;
	int by;

	if (argc < 7 || (strcmp(argv[1], "readback") &&
			 strcmp(argv[1], "bypass")) ||
	    argc != (strcmp(argv[1], "bypass") ? 7 : 8)) {
		fprintf(stderr,
			"usage: rwcheck readback DEV FIRST_BLOCK BLOCKS ROUNDS SEED\n"
			"       rwcheck bypass DEV FIRST_BLOCK BLOCKS ROUNDS SEED STREAM\n");
		return 2;
	}
	by = !strcmp(argv[1], "bypass");
	first = num(argv[3]);
	blocks = num(argv[4]);
	rounds = num(argv[5]);
	seed = num(argv[6]);
	if (!blocks || blocks < MAX_PER_ROUND) {
		fprintf(stderr, "rwcheck: the region is too small\n");
		return 2;
	}
	fd = open(argv[2], O_RDWR | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "rwcheck: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	if (posix_memalign((void **)&wbuf, BLK, BLK) ||
	    posix_memalign((void **)&rbuf, BLK, BLK)) {
		fprintf(stderr, "rwcheck: out of memory\n");
		return 2;
	}
	rng = seed * 0x2545f4914f6cdd1dULL + 1;
	if (by)
		bypass(first, blocks, rounds, seed, num(argv[7]));
	else
		readback(first, blocks, rounds, seed, &rng);
	printf("rwcheck %s: %llu rounds, %lu bad reads\n", argv[1],
	       (unsigned long long)rounds, bad);
	close(fd);
	return bad ? 1 : 0;
}
