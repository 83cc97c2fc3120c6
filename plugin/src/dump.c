// SPDX-License-Identifier: GPL-2.0
/*
 * windows.txt and locks.txt, line for line the guest module's
 * mw_windows_show() and mw_locks_show(), by the same sums
 * (mmlat_records.h) and line printers (mmlat_dump.h): every vCPU's counts
 * summed per kind and site, the keys listed per vCPU (the host merges
 * equal keys).
 */
#include <glib.h>
#include <string.h>

#include "dump.h"
#include "frames.h"
#include "locks.h"
#include "record.h"
#include "windows.h"

/* The lines both the module and the plugin print, to a FILE here. */
#define mw_dump_printf	fprintf
#define mw_dump_frame	print_frame
#include "mmlat_dump.h"

static void sum_kind(int kind, struct mw_win_stats *t)
{
	unsigned int cpu;

	memset(t, 0, sizeof(*t));
	for (cpu = 0; cpu < win_nr_cpus; cpu++)
		mw_win_stats_sum(t, &win_cpus[cpu].stats[kind]);
}

void dump_windows(FILE *f, bool running)
{
	struct mw_win_stats *t = g_new(struct mw_win_stats, 1);
	unsigned int cpu, i;
	int kind;

	fprintf(f, "mmlat_windows %d\n", MW_DUMP_VERSION);
	fprintf(f,
		"param clock=icount shift=%u source=qemu-plugin thresh_ns=%llu table_size=%u cpus=%u sub_bits=%d key_sub_bits=%d open_depth=%d running=%d preempt_disable=1 preempt_enable=1 irq_disable=1 irq_enable=1 cpu_idle=1 contention_begin=0 contention_end=0\n",
		icount_shift, win_thresh_ns, win_table_size, win_nr_cpus,
		MMLAT_HIST_SUB_BITS, MMLAT_HIST_KEY_SUB_BITS, MW_OPEN_DEPTH, running);
	for (kind = 0; kind < W_KINDS; kind++) {
		sum_kind(kind, t);
		mw_dump_kind(f, win_kind_name[kind], t, lock_tag(t->max_lock));
	}
	g_free(t);
	for (cpu = 0; cpu < win_nr_cpus; cpu++) {
		for (kind = 0; kind < W_KINDS; kind++) {
			const struct mw_win_key *k = win_cpus[cpu].table[kind];

			for (i = 0; i < win_table_size; i++)
				if (k[i].depth)
					mw_dump_key(f, win_kind_name[kind], cpu,
						    &k[i], lock_tag(k[i].lock));
		}
	}
}

/* One call site summed over every vCPU's table. */
static void sum_site(const struct mw_lock_site *key, struct mw_lock_site *t)
{
	unsigned int cpu, i;

	memset(t, 0, sizeof(*t));
	for (cpu = 0; cpu < lock_nr_cpus(); cpu++) {
		const struct mw_lock_site *tab = lock_sites_of(cpu);

		for (i = 0; i < MW_MAX_SITES; i++)
			if (mw_same_site(&tab[i], key))
				mw_site_sum(t, &tab[i]);
	}
}

/* Was this site printed from an earlier vCPU's table? */
static bool site_seen(unsigned int cpu, const struct mw_lock_site *key)
{
	unsigned int c, i;

	for (c = 0; c < cpu; c++)
		for (i = 0; i < MW_MAX_SITES; i++)
			if (mw_same_site(&lock_sites_of(c)[i], key))
				return true;
	return false;
}

void dump_locks(FILE *f, bool running)
{
	struct mw_lock_site *sum = g_new(struct mw_lock_site, 1);
	struct mw_lock_totals t;
	unsigned int cpu, i;
	const char *name;
	u64 size;

	lock_totals(&t);
	fprintf(f, "mmlat_locks %d\n", MW_DUMP_VERSION);
	fprintf(f,
		"param clock=icount shift=%u source=qemu-plugin method=qemu-plugin functions=%u missing=%u ptl_filter=%s i_mmap=%s anon_vma=%s sub_bits=%d running=%d\n",
		icount_shift, lock_nr_users(), lock_nr_missing(),
		lock_mode(MW_PTE) == MW_SPIN ? "struct-page" : "none",
		mode_name[lock_mode(MW_I_MMAP)],
		mode_name[lock_mode(MW_ANON_VMA)], MMLAT_HIST_SUB_BITS, running);
	for (i = 0; i < lock_nr_users(); i++) {
		name = lock_user_name(i, &size);
		fprintf(f, "user %s size=%llu\n", name, size);
	}
	for (cpu = 0; cpu < lock_nr_cpus(); cpu++)
		mw_sites_total(&t, lock_sites_of(cpu));
	mw_dump_lock_totals(f, lock_name, &t);
	for (cpu = 0; cpu < lock_nr_cpus(); cpu++) {
		const struct mw_lock_site *tab = lock_sites_of(cpu);

		for (i = 0; i < MW_MAX_SITES; i++) {
			if (!tab[i].ret || site_seen(cpu, &tab[i]))
				continue;
			sum_site(&tab[i], sum);
			mw_dump_site(f, sum, lock_name[sum->kind],
				     mode_name[sum->mode]);
		}
	}
	g_free(sum);
}
