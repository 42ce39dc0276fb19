// SPDX-License-Identifier: GPL-2.0
/*
 * poison-io - a hostile reader for the promotion path (issue 7).
 *
 *   poison-io fill   DEV OFFSET_MB SIZE_MB SEED
 *   poison-io attack DEV OFFSET_MB SIZE_MB SEED
 *   poison-io check  DEV OFFSET_MB SIZE_MB SEED
 *
 * fill writes every 4 KiB block of the region with a pattern of its own
 * (block number and seed), O_DIRECT.  attack reads every block once, in a
 * shuffled order, with O_DIRECT into one buffer that a second thread
 * overwrites all the time: a cache that promotes read misses from the
 * caller's buffer then stores the scribbles.  check reads every block with
 * O_DIRECT and compares it with its pattern; it prints the number of bad
 * blocks and exits 1 if there is any.  Exit status 2: usage or I/O error.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xorshift.h"

#define BLK	4096

static void pattern(uint8_t *buf, uint64_t blk, uint64_t seed)
{
	uint64_t s = (seed * 0x9e3779b97f4a7c15ULL) ^ (blk + 1) ^ 0x5bd1e995ULL;
	uint64_t *w = (uint64_t *)buf;
	size_t i;

	w[0] = 0x706f69736f6e696fULL;	/* "poisonio" */
	w[1] = blk;
	w[2] = seed;
	for (i = 3; i < BLK / 8; i++)
		w[i] = xorshift(&s);
}

static volatile int stop;
static uint8_t *shared;

static void *scribble(void *arg)
{
	unsigned int c = 0;

	(void)arg;
	while (!stop)
		memset(shared, 0xa5 ^ (c++ & 0xff), BLK);
	return NULL;
}

static void die(const char *what)
{
	fprintf(stderr, "poison-io: %s: %s\n", what, strerror(errno));
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t off, nblk, seed, i, bad = 0, *order;
	uint8_t *buf, *want;
	pthread_t t;
	int fd;

	if (argc != 6) {
		fprintf(stderr, "usage: poison-io fill|attack|check DEV OFFSET_MB SIZE_MB SEED\n");
		return 2;
	}
	off = strtoull(argv[3], NULL, 0) << 20;
	nblk = (strtoull(argv[4], NULL, 0) << 20) / BLK;
	seed = strtoull(argv[5], NULL, 0);
	fd = open(argv[2], (strcmp(argv[1], "fill") ? O_RDONLY : O_WRONLY) |
		  O_DIRECT);
	if (fd < 0)
		die(argv[2]);
	if (posix_memalign((void **)&buf, BLK, BLK) ||
	    posix_memalign((void **)&want, BLK, BLK))
		die("memory");

	if (!strcmp(argv[1], "fill")) {
		for (i = 0; i < nblk; i++) {
			pattern(buf, i, seed);
			if (pwrite(fd, buf, BLK, off + i * BLK) != BLK)
				die("write");
		}
		if (fsync(fd))
			die("fsync");
		return 0;
	}
	if (!strcmp(argv[1], "attack")) {
		uint64_t s = seed | 1, j, tmp;

		order = malloc(nblk * sizeof(*order));
		if (!order)
			die("memory");
		for (i = 0; i < nblk; i++)
			order[i] = i;
		for (i = nblk - 1; i > 0; i--) {
			j = xorshift(&s) % (i + 1);
			tmp = order[i];
			order[i] = order[j];
			order[j] = tmp;
		}
		shared = buf;
		if (pthread_create(&t, NULL, scribble, NULL))
			die("thread");
		for (i = 0; i < nblk; i++)
			if (pread(fd, buf, BLK, off + order[i] * BLK) != BLK)
				die("read");
		stop = 1;
		pthread_join(t, NULL);
		return 0;
	}
	if (!strcmp(argv[1], "check")) {
		for (i = 0; i < nblk; i++) {
			if (pread(fd, buf, BLK, off + i * BLK) != BLK)
				die("read");
			pattern(want, i, seed);
			if (memcmp(buf, want, BLK))
				bad++;
		}
		printf("%llu of %llu blocks bad\n", (unsigned long long)bad,
		       (unsigned long long)nblk);
		return bad ? 1 : 0;
	}
	fprintf(stderr, "poison-io: unknown command '%s'\n", argv[1]);
	return 2;
}
