/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Log-linear histograms of nanoseconds, bucket for bucket those of the
 * guest module (guest/modules/mmlat_windows: bucket_of(), bucket_lo()), so
 * that the analysis reads both alike: values below 2^sb are exact, each
 * power of two above is split into 2^sb buckets.
 */
#ifndef MMLAT_PLUGIN_HIST_H
#define MMLAT_PLUGIN_HIST_H

#include "types.h"

#define SUB_BITS	6	/* totals and lock sites: 1.6 % wide */
#define KEY_SUB_BITS	3	/* the keyed table: 12.5 %, max exact */
#define MAX_LOG		34	/* 2^34 ns, about 17 s */
#define NBUCKETS_OF(sb)	((MAX_LOG - (sb) + 1) << (sb))
#define NBUCKETS	NBUCKETS_OF(SUB_BITS)
#define KEY_NBUCKETS	NBUCKETS_OF(KEY_SUB_BITS)

static inline unsigned int bucket_of(u64 ns, unsigned int sb)
{
	unsigned int msb;

	if (ns < (1U << sb))
		return ns;
	msb = 63 - __builtin_clzll(ns);
	if (msb >= MAX_LOG)
		return NBUCKETS_OF(sb) - 1;
	return ((msb - sb + 1) << sb) + ((ns >> (msb - sb)) & ((1U << sb) - 1));
}

static inline u64 bucket_lo(unsigned int b, unsigned int sb)
{
	unsigned int msb;

	if (b < (1U << sb))
		return b;
	msb = (b >> sb) + sb - 1;
	return (1ULL << msb) + ((u64)(b & ((1U << sb) - 1)) << (msb - sb));
}

#endif
