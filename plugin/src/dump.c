// SPDX-License-Identifier: GPL-2.0
/*
 * windows.txt and locks.txt, line for line the guest module's
 * windows_show() and locks_show(): every vCPU's counts summed per kind and
 * site, the keys listed per vCPU (the host merges equal keys).
 */
#include <glib.h>
#include <string.h>

#include "dump.h"
#include "frames.h"
#include "locks.h"
#include "record.h"
#include "windows.h"

static void print_buckets(FILE *f, const u32 *hist, unsigned int sb)
{
	unsigned int b;

	fputs(" buckets=", f);
	for (b = 0; b < mmlat_hist_buckets(sb); b++)
		if (hist[b])
			fprintf(f, "%llu:%u,", mmlat_hist_lo(b, sb), hist[b]);
}

static void sum_kind(int kind, struct mw_win_stats *t)
{
	unsigned int cpu;

	memset(t, 0, sizeof(*t));
	for (cpu = 0; cpu < win_nr_cpus; cpu++)
		mw_win_stats_sum(t, &win_cpus[cpu].stats[kind]);
}

static void dump_kind(FILE *f, int kind)
{
	const char *name = win_kind_name[kind];
	struct mw_win_stats *t = g_new(struct mw_win_stats, 1);
	unsigned int b, i;

	sum_kind(kind, t);
	fprintf(f,
		"kind %s n=%llu total_ns=%llu max_ns=%llu unmatched=%llu nested_begin=%llu edge=%llu idle_cut=%llu keyed=%llu overflow=%llu overflow_max_ns=%llu max_lock=%s\n",
		name, t->n, t->total, t->max, t->unmatched, t->nested_begin,
		t->edge, t->idle_cut, t->keyed, t->overflow, t->overflow_max,
		lock_tag(t->max_lock));
	for (i = 0; i < t->max_open_depth; i++) {
		fprintf(f, "maxopen %s %u ", name, i);
		print_frame(f, t->max_open[i]);
		fputc('\n', f);
	}
	for (i = 0; i < t->max_depth; i++) {
		fprintf(f, "maxstack %s %u ", name, i);
		print_frame(f, t->max_stack[i]);
		fputc('\n', f);
	}
	for (b = 0; b < MMLAT_HIST_NBUCKETS; b++)
		if (t->hist[b])
			fprintf(f, "bucket %s lo_ns=%llu hi_ns=%llu n=%llu\n",
				name, mmlat_hist_lo(b, MMLAT_HIST_SUB_BITS),
				b + 1 < MMLAT_HIST_NBUCKETS ?
				mmlat_hist_lo(b + 1, MMLAT_HIST_SUB_BITS) : U64_MAX,
				t->hist[b]);
	g_free(t);
}

void dump_windows(FILE *f, bool running)
{
	unsigned int cpu, i;
	int kind;

	fputs("mmlat_windows 3\n", f);
	fprintf(f,
		"param clock=icount shift=%u source=qemu-plugin thresh_ns=%llu table_size=%u cpus=%u sub_bits=%d key_sub_bits=%d open_depth=%d running=%d preempt_disable=1 preempt_enable=1 irq_disable=1 irq_enable=1 cpu_idle=1 contention_begin=0 contention_end=0\n",
		icount_shift, win_thresh_ns, win_table_size, win_nr_cpus,
		MMLAT_HIST_SUB_BITS, MMLAT_HIST_KEY_SUB_BITS, MW_OPEN_DEPTH, running);
	for (kind = 0; kind < W_KINDS; kind++)
		dump_kind(f, kind);
	for (cpu = 0; cpu < win_nr_cpus; cpu++) {
		for (kind = 0; kind < W_KINDS; kind++) {
			const struct mw_win_key *k = win_cpus[cpu].table[kind];

			for (i = 0; i < win_table_size; i++) {
				if (!k[i].depth)
					continue;
				fprintf(f,
					"key %s cpu=%u n=%llu total_ns=%llu max_ns=%llu lock=%s stack=",
					win_kind_name[kind], cpu, k[i].n,
					k[i].total, k[i].max,
					lock_tag(k[i].lock));
				print_frames(f, k[i].stack, k[i].depth);
				print_buckets(f, k[i].hist, MMLAT_HIST_KEY_SUB_BITS);
				fputc('\n', f);
			}
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
	u64 holds[MW_LOCK_KINDS] = { 0 }, lost[MW_LOCK_KINDS] = { 0 };
	u64 discarded[MW_LOCK_KINDS] = { 0 }, size;
	struct mw_lock_site *sum = g_new(struct mw_lock_site, 1);
	struct lock_totals t;
	unsigned int cpu, i;
	const char *name;
	int k;

	lock_totals(&t);
	fputs("mmlat_locks 3\n", f);
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
		mw_sites_total(lock_sites_of(cpu), holds, lost, discarded);
	for (k = 0; k < MW_LOCK_KINDS; k++)
		fprintf(f,
			"total lock=%s holds=%llu lost=%llu discarded=%llu in_flight=%llu\n",
			lock_name[k], holds[k], lost[k], discarded[k],
			t.in_flight[k]);
	fprintf(f,
		"total nonlock=%llu site_overflow=%llu slot_overflow=%llu try_missed=%llu\n",
		t.nonlock, t.site_overflow, t.slot_overflow, t.try_missed);
	for (cpu = 0; cpu < lock_nr_cpus(); cpu++) {
		const struct mw_lock_site *tab = lock_sites_of(cpu);

		for (i = 0; i < MW_MAX_SITES; i++) {
			if (!tab[i].ret || site_seen(cpu, &tab[i]))
				continue;
			sum_site(&tab[i], sum);
			fprintf(f,
				"site lock=%s mode=%s n=%llu total_ns=%llu max_ns=%llu lost=%llu discarded=%llu slept=%llu waits=%llu wait_total_ns=%llu wait_max_ns=%llu at=",
				lock_name[tab[i].kind], mode_name[tab[i].mode],
				sum->n, sum->total, sum->max, sum->lost,
				sum->discarded, sum->slept, sum->waits,
				sum->wait_total, sum->wait_max);
			print_frame(f, tab[i].ret);
			print_buckets(f, sum->hist, MMLAT_HIST_SUB_BITS);
			fputc('\n', f);
		}
	}
	g_free(sum);
}
