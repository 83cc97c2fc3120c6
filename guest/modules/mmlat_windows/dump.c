// SPDX-License-Identifier: GPL-2.0
/*
 * The data files, /proc/mmlat_windows/windows and, with the lock hooks,
 * /proc/mmlat_windows/locks: text dumps of format 3, which README.md
 * documents and analysis/mmlat/parse.py reads.  Per-CPU records are summed
 * here; keyed windows are printed per CPU and merged by the host.  Frames
 * are resolved in the guest (%pS form, a module's name dropped).
 */
#include <linux/kallsyms.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/string.h>

#include "mmlat_windows.h"

#define DUMP_VERSION	3

static const char * const kind_name[MW_KINDS] = { "preempt", "irq" };

/* Sums for the show functions (too large for the stack); mw_state_lock. */
static struct mw_win_stats sum_win;
static struct mw_lock_site sum_site;

/* One frame as "func+0x1a/0x200", without a module's " [name]". */
static void mw_print_frame(struct seq_file *m, unsigned long ip)
{
	char buf[KSYM_SYMBOL_LEN];

	if (ip == MW_IDLE_IP) {
		seq_puts(m, "[idle]");
		return;
	}
	sprint_symbol(buf, ip);
	strreplace(buf, ' ', '\0');
	seq_puts(m, buf);
}

static void mw_print_stack(struct seq_file *m, const u64 *stack,
			   unsigned int depth)
{
	unsigned int i;

	seq_puts(m, " stack=");
	for (i = 0; i < depth; i++) {
		if (i)
			seq_putc(m, ',');
		mw_print_frame(m, stack[i]);
	}
}

static void mw_print_buckets(struct seq_file *m, const u32 *hist,
			     unsigned int sb)
{
	unsigned int b;

	seq_puts(m, " buckets=");
	for (b = 0; b < mmlat_hist_buckets(sb); b++)
		if (hist[b])
			seq_printf(m, "%llu:%u,", mmlat_hist_lo(b, sb), hist[b]);
}

static const char *mw_lock_tag(u8 lock)
{
	return lock ? mw_lock_name[lock - 1] : "none";
}

static void mw_sum_kind(int kind)
{
	struct mw_win_stats *t = &sum_win;
	int cpu;

	memset(t, 0, sizeof(*t));
	for_each_possible_cpu(cpu)
		mw_win_stats_sum(t, mw_wstats(cpu, kind));
}

static void mw_show_kind(struct seq_file *m, int kind)
{
	struct mw_win_stats *t = &sum_win;
	const char *name = kind_name[kind];
	int b, i;

	mw_sum_kind(kind);
	seq_printf(m, "kind %s n=%llu total_ns=%llu max_ns=%llu unmatched=%llu nested_begin=%llu edge=%llu idle_cut=%llu keyed=%llu overflow=%llu overflow_max_ns=%llu max_lock=%s\n",
		   name, t->n, t->total, t->max, t->unmatched,
		   t->nested_begin, t->edge, t->idle_cut, t->keyed,
		   t->overflow, t->overflow_max, mw_lock_tag(t->max_lock));
	for (i = 0; i < t->max_open_depth; i++) {
		seq_printf(m, "maxopen %s %d ", name, i);
		mw_print_frame(m, t->max_open[i]);
		seq_putc(m, '\n');
	}
	for (i = 0; i < t->max_depth; i++) {
		seq_printf(m, "maxstack %s %d ", name, i);
		mw_print_frame(m, t->max_stack[i]);
		seq_putc(m, '\n');
	}
	for (b = 0; b < MMLAT_HIST_NBUCKETS; b++)
		if (t->hist[b])
			seq_printf(m, "bucket %s lo_ns=%llu hi_ns=%llu n=%llu\n",
				   name, mmlat_hist_lo(b, MMLAT_HIST_SUB_BITS),
				   b + 1 < MMLAT_HIST_NBUCKETS ?
				   mmlat_hist_lo(b + 1, MMLAT_HIST_SUB_BITS) : U64_MAX,
				   t->hist[b]);
}

static void mw_show_keys(struct seq_file *m, int cpu, int kind)
{
	struct mw_win_key *k = mw_keys(cpu, kind);
	unsigned int i;

	for (i = 0; i < mw_table_size; i++) {
		if (!k[i].depth)
			continue;
		seq_printf(m, "key %s cpu=%d n=%llu total_ns=%llu max_ns=%llu lock=%s",
			   kind_name[kind], cpu, k[i].n, k[i].total, k[i].max,
			   mw_lock_tag(k[i].lock));
		mw_print_stack(m, k[i].stack, k[i].depth);
		mw_print_buckets(m, k[i].hist, MMLAT_HIST_KEY_SUB_BITS);
		seq_putc(m, '\n');
	}
}

static int mw_windows_show(struct seq_file *m, void *v)
{
	int cpu, kind, i;

	mutex_lock(&mw_state_lock);
	seq_printf(m, "mmlat_windows %d\n", DUMP_VERSION);
	seq_printf(m, "param clock=local_clock thresh_ns=%llu table_size=%u cpus=%u sub_bits=%d key_sub_bits=%d open_depth=%d running=%d",
		   mw_thresh_ns, mw_table_size, num_possible_cpus(),
		   MMLAT_HIST_SUB_BITS, MMLAT_HIST_KEY_SUB_BITS, MW_OPEN_DEPTH,
		   READ_ONCE(mw_enabled));
	for (i = 0; i < mw_nr_tp_hooks; i++)
		seq_printf(m, " %s=%d", mw_tp_hooks[i].name,
			   !!mw_tp_hooks[i].tp);
	seq_putc(m, '\n');
	for (kind = 0; kind < MW_KINDS; kind++)
		mw_show_kind(m, kind);
	for_each_possible_cpu(cpu)
		for (kind = 0; kind < MW_KINDS; kind++)
			mw_show_keys(m, cpu, kind);
	mutex_unlock(&mw_state_lock);
	return 0;
}

/* Sum one call site over every CPU's table into sum_site. */
static void mw_sum_site(const struct mw_lock_site *key)
{
	struct mw_lock_site *t = &sum_site;
	int cpu, i;

	memset(t, 0, sizeof(*t));
	for_each_possible_cpu(cpu) {
		struct mw_lock_site *tab = mw_sites(cpu);

		for (i = 0; i < MW_MAX_SITES; i++)
			if (mw_same_site(&tab[i], key))
				mw_site_sum(t, &tab[i]);
	}
}

/* Was this site already printed from the table of an earlier CPU? */
static bool mw_site_seen(int cpu, const struct mw_lock_site *key)
{
	int c, i;

	for (c = 0; c < cpu; c++) {
		if (!cpu_possible(c))
			continue;
		for (i = 0; i < MW_MAX_SITES; i++)
			if (mw_same_site(&mw_sites(c)[i], key))
				return true;
	}
	return false;
}

static void mw_show_lock_totals(struct seq_file *m)
{
	u64 holds[MW_LOCK_KINDS] = {}, lost[MW_LOCK_KINDS] = {};
	u64 discarded[MW_LOCK_KINDS] = {};
	u64 nonlock = 0, overflow = 0;
	int cpu, i;

	for_each_possible_cpu(cpu) {
		nonlock += per_cpu(mw_lock_cpu, cpu).nonlock;
		overflow += per_cpu(mw_lock_cpu, cpu).site_overflow;
		mw_sites_total(mw_sites(cpu), holds, lost, discarded);
	}
	for (i = 0; i < MW_LOCK_KINDS; i++)
		seq_printf(m, "total lock=%s holds=%llu lost=%llu discarded=%llu in_flight=%llu\n",
			   mw_lock_name[i], holds[i], lost[i], discarded[i],
			   mw_held_at_stop[i]);
	seq_printf(m, "total nonlock=%llu site_overflow=%llu slot_overflow=%lld try_missed=%llu\n",
		   nonlock, overflow, atomic64_read(&mw_slot_overflow),
		   mw_try_missed());
}

static int mw_locks_show(struct seq_file *m, void *v)
{
	struct mw_lock_site *t = &sum_site;
	int cpu, i;

	mutex_lock(&mw_state_lock);
	seq_printf(m, "mmlat_locks %d\n", DUMP_VERSION);
	seq_printf(m, "param clock=local_clock method=ftrace-caller functions=%d missing=%d ptl_filter=%s i_mmap=%s anon_vma=%s sub_bits=%d running=%d\n",
		   mw_nr_users, mw_nr_missing,
		   mw_ptl_filtered() ? "struct-page" : "none",
		   mw_mode_name[MW_I_MMAP_MODE], mw_mode_name[MW_ANON_VMA_MODE],
		   MMLAT_HIST_SUB_BITS, READ_ONCE(mw_enabled));
	for (i = 0; i < mw_nr_users; i++)
		seq_printf(m, "user %s size=%llu\n", mw_users[i].name,
			   mw_users[i].end - mw_users[i].start);
	mw_show_lock_totals(m);
	for_each_possible_cpu(cpu) {
		struct mw_lock_site *tab = mw_sites(cpu);

		for (i = 0; i < MW_MAX_SITES; i++) {
			if (!tab[i].ret || mw_site_seen(cpu, &tab[i]))
				continue;
			mw_sum_site(&tab[i]);
			seq_printf(m, "site lock=%s mode=%s n=%llu total_ns=%llu max_ns=%llu lost=%llu discarded=%llu slept=%llu waits=%llu wait_total_ns=%llu wait_max_ns=%llu at=",
				   mw_lock_name[tab[i].kind],
				   mw_mode_name[tab[i].mode], t->n, t->total,
				   t->max, t->lost, t->discarded, t->slept,
				   t->waits, t->wait_total, t->wait_max);
			mw_print_frame(m, tab[i].ret);
			mw_print_buckets(m, t->hist, MMLAT_HIST_SUB_BITS);
			seq_putc(m, '\n');
		}
	}
	mutex_unlock(&mw_state_lock);
	return 0;
}

static int mw_windows_open(struct inode *inode, struct file *file)
{
	return single_open_size(file, mw_windows_show, NULL, 1 << 22);
}

static int mw_locks_open(struct inode *inode, struct file *file)
{
	return single_open_size(file, mw_locks_show, NULL, 1 << 18);
}

static const struct proc_ops mw_windows_ops = {
	.proc_open = mw_windows_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

static const struct proc_ops mw_locks_ops = {
	.proc_open = mw_locks_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

/* The data files in dir; without the lock hooks there is no lock file. */
int mw_dump_create(struct proc_dir_entry *dir)
{
	if (!proc_create("windows", 0400, dir, &mw_windows_ops))
		return -ENOMEM;
	if (mw_locks && !proc_create("locks", 0400, dir, &mw_locks_ops))
		return -ENOMEM;
	return 0;
}
