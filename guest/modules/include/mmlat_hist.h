/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Log-linear histograms of nanoseconds, the one definition of their
 * buckets: guest/initramfs.sh copies this header beside each guest
 * module's source, and tests/unit/hist_buckets.c builds it on the host to
 * check it against the analysis's reader (analysis/mmlat/buckets.py).
 *
 * Values below 2^sb have a bucket each; above that, each power of two is
 * split into 2^sb buckets, so a bucket is at most 1/2^sb of its lower
 * bound wide (1.6 % at 6 sub-bits, 12.5 % at 3).  Values of
 * 2^MMLAT_HIST_MAX_LOG ns (about 17 s) and more share the last bucket.
 *
 * Outside the kernel the includer provides u64 and fls64().
 */
#ifndef MMLAT_HIST_H
#define MMLAT_HIST_H

#ifdef __KERNEL__
#include <linux/bitops.h>
#include <linux/types.h>
#endif

#define MMLAT_HIST_MAX_LOG	34

/*
 * The two resolutions the modules keep: SUB_BITS for totals and lock
 * sites, KEY_SUB_BITS for the windows keyed by stack, of which there are
 * thousands.  A histogram of sb sub-bits has 2^sb buckets below 2^sb and
 * 2^sb for each power of two from there up to 2^MMLAT_HIST_MAX_LOG.
 */
#define MMLAT_HIST_SUB_BITS	6
#define MMLAT_HIST_KEY_SUB_BITS	3
#define MMLAT_HIST_NBUCKETS	\
	((MMLAT_HIST_MAX_LOG - MMLAT_HIST_SUB_BITS + 1) << MMLAT_HIST_SUB_BITS)
#define MMLAT_HIST_KEY_NBUCKETS	\
	((MMLAT_HIST_MAX_LOG - MMLAT_HIST_KEY_SUB_BITS + 1) << \
	 MMLAT_HIST_KEY_SUB_BITS)

/* The buckets of a histogram of either resolution. */
static inline unsigned int mmlat_hist_buckets(unsigned int sb)
{
	return sb == MMLAT_HIST_KEY_SUB_BITS ? MMLAT_HIST_KEY_NBUCKETS :
					       MMLAT_HIST_NBUCKETS;
}

/* The bucket of a value of ns nanoseconds. */
static inline unsigned int mmlat_hist_bucket(u64 ns, unsigned int sb)
{
	unsigned int msb;

	if (ns < (1U << sb))
		return ns;
	msb = fls64(ns) - 1;
	if (msb >= MMLAT_HIST_MAX_LOG)
		return mmlat_hist_buckets(sb) - 1;
	return ((msb - sb + 1) << sb) + ((ns >> (msb - sb)) & ((1U << sb) - 1));
}

/* The lowest value of bucket b, the highest of b - 1 plus one. */
static inline u64 mmlat_hist_lo(unsigned int b, unsigned int sb)
{
	unsigned int msb;

	if (b < (1U << sb))
		return b;
	msb = (b >> sb) + sb - 1;
	return (1ULL << msb) + ((u64)(b & ((1U << sb) - 1)) << (msb - sb));
}

#endif /* MMLAT_HIST_H */
