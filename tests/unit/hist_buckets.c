// SPDX-License-Identifier: GPL-2.0
/*
 * The guest modules' histogram header (guest/modules/include/mmlat_hist.h)
 * built for the host: prints what it makes of every bucket of both
 * resolutions, for test_hist_buckets.py to check against the analysis's
 * reader (analysis/mmlat/buckets.py).  Lines:
 *
 *   resolution SUB_BITS NBUCKETS      the two the modules keep
 *   lo SUB_BITS BUCKET LO             every bucket's lowest value
 *   bucket SUB_BITS NS BUCKET         the bucket of values on and around
 *                                     every bucket's edges, and of the
 *                                     largest ones
 */
#include <stdio.h>

typedef unsigned long long u64;

static inline int fls64(u64 x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

#include "mmlat_hist.h"

static void print_bucket(unsigned int sb, u64 ns)
{
	printf("bucket %u %llu %u\n", sb, ns,
	       mmlat_hist_bucket(ns, sb));
}

static void print_resolution(unsigned int sb)
{
	unsigned int b, n = mmlat_hist_buckets(sb);

	printf("resolution %u %u\n", sb, n);
	for (b = 0; b < n; b++) {
		u64 lo = mmlat_hist_lo(b, sb);

		printf("lo %u %u %llu\n", sb, b, lo);
		if (lo)
			print_bucket(sb, lo - 1);
		print_bucket(sb, lo);
		print_bucket(sb, lo + 1);
	}
	print_bucket(sb, (1ULL << MMLAT_HIST_MAX_LOG) - 1);
	print_bucket(sb, 1ULL << MMLAT_HIST_MAX_LOG);
	print_bucket(sb, ~0ULL);
}

int main(void)
{
	print_resolution(MMLAT_HIST_SUB_BITS);
	print_resolution(MMLAT_HIST_KEY_SUB_BITS);
	return 0;
}
