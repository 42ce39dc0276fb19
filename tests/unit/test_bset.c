// SPDX-License-Identifier: GPL-2.0
/*
 * bkc_keys_overlay() against two references, over random leaves:
 *   - the overlay cut one piece at a time (each base key split around
 *     every delta key), which the run copy in bset.c must match key for
 *     key, coalescing included;
 *   - a per-sector map of what base painted over by delta resolves to.
 * Bases are coalesced (as the overlay leaves them) or not (as pieces
 * painted one by one leave them), with and without holes in the delta,
 * and with output capacities that cut the result short.
 *
 *   test_bset [rounds]     default 20,000; BKC_SEED=n replays one seed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "tcheck.h"

#define SPAN	4096	/* sectors of the leaf */
#define MAXK	512	/* keys in base or delta, at most */

static u64 rng;

static u64 rnd(u64 n)
{
	return sim_rand(&rng) % n;
}

/* The reference overlay: every piece of every base key cut on its own. */
static void ref_emit(struct bkc_key *out, u32 *n, u32 cap,
		     const struct bkc_key *k)
{
	if (*n && *n <= cap) {
		struct bkc_key *a = &out[*n - 1];

		if (bkc_key_end(a) == k->pos && a->ptr == k->ptr &&
		    (u64)a->len + k->len <= 0xffffffffULL &&
		    (bkc_key_hole(a) || a->off + a->len == k->off)) {
			a->len += k->len;
			return;
		}
	}
	if (*n < cap)
		out[*n] = *k;
	if (*n <= cap)
		(*n)++;
}

static u32 ref_overlay(const struct bkc_key *base, u32 nbase,
		       const struct bkc_key *delta, u32 ndelta,
		       struct bkc_key *out, u32 cap)
{
	u32 i, j = 0, n = 0;

	for (i = 0; i < nbase && n <= cap; i++) {
		u64 s = base[i].pos, e = bkc_key_end(&base[i]);

		while (s < e) {
			struct bkc_key piece;
			u64 pe;

			while (j < ndelta && bkc_key_end(&delta[j]) <= s) {
				if (!bkc_key_hole(&delta[j]))
					ref_emit(out, &n, cap, &delta[j]);
				j++;
			}
			if (j < ndelta && delta[j].pos <= s) {
				s = e < bkc_key_end(&delta[j]) ? e :
					bkc_key_end(&delta[j]);
				continue;
			}
			pe = j < ndelta && delta[j].pos < e ? delta[j].pos : e;
			piece = base[i];
			bkc_key_cut_front(&piece, s - piece.pos);
			bkc_key_cut_back(&piece, pe - s);
			ref_emit(out, &n, cap, &piece);
			s = pe;
		}
	}
	for (; j < ndelta && n <= cap; j++)
		if (!bkc_key_hole(&delta[j]))
			ref_emit(out, &n, cap, &delta[j]);
	return n;
}

/*
 * Random sorted, non-overlapping keys in [0, SPAN).  Neighbours often
 * continue each other (same bucket, offsets in step) unless @coalesced,
 * where such neighbours are joined as the overlay would join them.
 */
static u32 gen_keys(struct bkc_key *k, u32 max, bool holes, bool coalesced)
{
	u64 pos = rnd(64), bucket = 1 + rnd(4);
	u32 n = 0, off = (u32)rnd(64);

	while (n < max && pos < SPAN) {
		u32 len = 1 + (u32)rnd(rnd(4) ? 8 : 64);
		struct bkc_key key;

		if (pos + len > SPAN)
			len = (u32)(SPAN - pos);
		if (rnd(3))
			bucket = 1 + rnd(4);
		if (holes && !rnd(4))
			bkc_key_init_hole(&key, pos, len);
		else
			bkc_key_init(&key, 0, pos, len, bucket, off, 0, rnd(2));
		off = rnd(2) ? off + len : (u32)rnd(1024);
		if (coalesced && n && bkc_key_end(&k[n - 1]) == key.pos &&
		    k[n - 1].ptr == key.ptr &&
		    (bkc_key_hole(&key) ||
		     k[n - 1].off + k[n - 1].len == key.off))
			k[n - 1].len += len;
		else
			k[n++] = key;
		pos += len + (rnd(3) ? 0 : rnd(32));
	}
	return n;
}

/* What each sector resolves to: state 0 nothing, -1 a hole, 1 data. */
struct sector {
	u64	ptr;
	u32	off;
	int	state;
};

static struct sector map_base[SPAN], map_delta[SPAN], map_out[SPAN];

static void paint(struct sector *m, const struct bkc_key *k, u32 n)
{
	u32 i, j;

	memset(m, 0, SPAN * sizeof(*m));
	for (i = 0; i < n; i++) {
		for (j = 0; j < k[i].len; j++) {
			struct sector *x = &m[k[i].pos + j];

			x->state = bkc_key_hole(&k[i]) ? -1 : 1;
			x->ptr = x->state > 0 ? k[i].ptr : 0;
			x->off = x->state > 0 ? k[i].off + j : 0;
		}
	}
}

static void one_round(void)
{
	static struct bkc_key base[MAXK], delta[MAXK], out[2 * MAXK + 8],
		ref[2 * MAXK + 8];
	u32 nb = gen_keys(base, 1 + (u32)rnd(MAXK), false, rnd(2));
	u32 nd = gen_keys(delta, (u32)rnd(rnd(4) ? 16 : MAXK), true, false);
	u32 cap = rnd(8) ? 2 * MAXK + 8 : (u32)rnd(nb + nd + 2);
	u32 n, nr, i;
	u64 s;

	n = bkc_keys_overlay(base, nb, delta, nd, out, cap);
	nr = ref_overlay(base, nb, delta, nd, ref, cap);
	CHECK_EQ(n, nr);
	for (i = 0; i < n && i < nr && i < cap; i++) {
		CHECK_EQ(out[i].pos, ref[i].pos);
		CHECK_EQ(out[i].len, ref[i].len);
		CHECK_EQ(out[i].ptr, ref[i].ptr);
		CHECK_EQ(out[i].off, ref[i].off);
	}
	if (n > cap)
		return;
	/* sorted, apart, no holes, and each sector as the paint says */
	for (i = 0; i < n; i++) {
		CHECK(out[i].len > 0);
		CHECK(!bkc_key_hole(&out[i]));
		if (i)
			CHECK(bkc_key_end(&out[i - 1]) <= out[i].pos);
	}
	paint(map_base, base, nb);
	paint(map_delta, delta, nd);
	paint(map_out, out, n);
	for (s = 0; s < SPAN; s++) {
		const struct sector *want = map_delta[s].state ? &map_delta[s] :
			&map_base[s];
		int state = want->state > 0 ? 1 : 0;

		CHECK_EQ(map_out[s].state, state);
		CHECK_EQ(map_out[s].ptr, state ? want->ptr : 0);
		CHECK_EQ(map_out[s].off, state ? want->off : 0);
	}
}

int main(int argc, char **argv)
{
	u64 rounds = argc > 1 ? strtoull(argv[1], NULL, 0) : 20000, i;
	const char *seed = getenv("BKC_SEED");

	rng = seed ? strtoull(seed, NULL, 0) : (u64)time(NULL);
	printf("test_bset: seed %llu, %llu rounds\n",
	       (unsigned long long)rng, (unsigned long long)rounds);
	for (i = 0; i < rounds && !tcheck_failures; i++)
		one_round();
	return tcheck_done("test_bset");
}
