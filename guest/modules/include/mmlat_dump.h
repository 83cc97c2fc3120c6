/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lines of the window module's dumps, format 3, that the module and
 * the QEMU plugin print alike from the records (mmlat_records.h): the
 * one definition of their text, which guest/modules/mmlat_windows/
 * README.md documents and analysis/mmlat/parse.py reads.  Each side sums
 * its records, prints its own param lines and walks its own CPUs.
 *
 * The includer defines, before including it, how to print to its output
 * (a struct seq_file in the module, a FILE in the plugin), which reaches
 * here as a void *:
 *   mw_dump_printf(out, fmt, ...)	as seq_printf() or fprintf()
 *   mw_dump_frame(out, ip)		one frame, "func+0x1a/0x200", or
 *					"[idle]" for MW_IDLE_IP
 */
#ifndef MMLAT_DUMP_H
#define MMLAT_DUMP_H

#ifdef __KERNEL__
#include <linux/limits.h>
#endif

#include "mmlat_records.h"

#define MW_DUMP_VERSION	3

/* " buckets=lo_ns:n,..." of a histogram of sb sub-bits */
static inline void mw_dump_buckets(void *out, const u32 *hist,
				   unsigned int sb)
{
	unsigned int b;

	mw_dump_printf(out, " buckets=");
	for (b = 0; b < mmlat_hist_buckets(sb); b++)
		if (hist[b])
			mw_dump_printf(out, "%llu:%u,", mmlat_hist_lo(b, sb),
				       hist[b]);
}

/* The windows of a kind summed over the CPUs, t; max_lock: its tag's name */
static inline void mw_dump_kind(void *out, const char *name,
				const struct mw_win_stats *t,
				const char *max_lock)
{
	unsigned int b, i;

	mw_dump_printf(out,
		       "kind %s n=%llu total_ns=%llu max_ns=%llu unmatched=%llu nested_begin=%llu edge=%llu idle_cut=%llu keyed=%llu overflow=%llu overflow_max_ns=%llu max_lock=%s\n",
		       name, t->n, t->total, t->max, t->unmatched,
		       t->nested_begin, t->edge, t->idle_cut, t->keyed,
		       t->overflow, t->overflow_max, max_lock);
	for (i = 0; i < t->max_open_depth; i++) {
		mw_dump_printf(out, "maxopen %s %u ", name, i);
		mw_dump_frame(out, t->max_open[i]);
		mw_dump_printf(out, "\n");
	}
	for (i = 0; i < t->max_depth; i++) {
		mw_dump_printf(out, "maxstack %s %u ", name, i);
		mw_dump_frame(out, t->max_stack[i]);
		mw_dump_printf(out, "\n");
	}
	for (b = 0; b < MMLAT_HIST_NBUCKETS; b++)
		if (t->hist[b])
			mw_dump_printf(out, "bucket %s lo_ns=%llu hi_ns=%llu n=%llu\n",
				       name, mmlat_hist_lo(b, MMLAT_HIST_SUB_BITS),
				       b + 1 < MMLAT_HIST_NBUCKETS ?
				       mmlat_hist_lo(b + 1, MMLAT_HIST_SUB_BITS) :
				       U64_MAX,
				       t->hist[b]);
}

/* A keyed window of a kind on one CPU, its lock tag's name lock */
static inline void mw_dump_key(void *out, const char *name, unsigned int cpu,
			       const struct mw_win_key *k, const char *lock)
{
	unsigned int i;

	mw_dump_printf(out, "key %s cpu=%u n=%llu total_ns=%llu max_ns=%llu lock=%s stack=",
		       name, cpu, k->n, k->total, k->max, lock);
	for (i = 0; i < k->depth; i++) {
		if (i)
			mw_dump_printf(out, ",");
		mw_dump_frame(out, k->stack[i]);
	}
	mw_dump_buckets(out, k->hist, MMLAT_HIST_KEY_SUB_BITS);
	mw_dump_printf(out, "\n");
}

/* The locks dump's totals, t, the lock kinds named by names[] */
static inline void mw_dump_lock_totals(void *out, const char * const *names,
				       const struct mw_lock_totals *t)
{
	int k;

	for (k = 0; k < MW_LOCK_KINDS; k++)
		mw_dump_printf(out,
			       "total lock=%s holds=%llu lost=%llu discarded=%llu in_flight=%llu\n",
			       names[k], t->holds[k], t->lost[k],
			       t->discarded[k], t->in_flight[k]);
	mw_dump_printf(out,
		       "total nonlock=%llu site_overflow=%llu slot_overflow=%llu try_missed=%llu\n",
		       t->nonlock, t->site_overflow, t->slot_overflow,
		       t->try_missed);
}

/* A lock site summed over the CPUs, t, and its lock kind's and mode's names */
static inline void mw_dump_site(void *out, const struct mw_lock_site *t,
				const char *lock, const char *mode)
{
	mw_dump_printf(out,
		       "site lock=%s mode=%s n=%llu total_ns=%llu max_ns=%llu lost=%llu discarded=%llu slept=%llu waits=%llu wait_total_ns=%llu wait_max_ns=%llu at=",
		       lock, mode, t->n, t->total, t->max, t->lost,
		       t->discarded, t->slept, t->waits, t->wait_total,
		       t->wait_max);
	mw_dump_frame(out, t->ret);
	mw_dump_buckets(out, t->hist, MMLAT_HIST_SUB_BITS);
	mw_dump_printf(out, "\n");
}

#endif /* MMLAT_DUMP_H */
