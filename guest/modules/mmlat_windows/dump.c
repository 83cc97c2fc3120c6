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

/* One frame as "func+0x1a/0x200", without a module's " [name]". */
static void mw_dump_frame(struct seq_file *m, u64 ip)
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

/* The lines both the module and the plugin print, to a seq_file here. */
#define mw_dump_printf	seq_printf
#include "mmlat_dump.h"

static const char * const kind_name[MW_KINDS] = { "preempt", "irq" };

/* Sums for the show functions (too large for the stack); mw_state_lock. */
static struct mw_win_stats sum_win;
static struct mw_lock_site sum_site;

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
	mw_sum_kind(kind);
	mw_dump_kind(m, kind_name[kind], &sum_win, mw_lock_tag(sum_win.max_lock));
}

static void mw_show_keys(struct seq_file *m, int cpu, int kind)
{
	struct mw_win_key *k = mw_keys(cpu, kind);
	unsigned int i;

	for (i = 0; i < mw_table_size; i++)
		if (k[i].depth)
			mw_dump_key(m, kind_name[kind], cpu, &k[i],
				    mw_lock_tag(k[i].lock));
}

static int mw_windows_show(struct seq_file *m, void *v)
{
	int cpu, kind, i;

	mutex_lock(&mw_state_lock);
	seq_printf(m, "mmlat_windows %d\n", MW_DUMP_VERSION);
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
	struct mw_lock_totals t = {
		.slot_overflow = atomic64_read(&mw_slot_overflow),
		.try_missed = mw_try_missed(),
	};
	int cpu;

	memcpy(t.in_flight, mw_held_at_stop, sizeof(t.in_flight));
	for_each_possible_cpu(cpu) {
		t.nonlock += per_cpu(mw_lock_cpu, cpu).nonlock;
		t.site_overflow += per_cpu(mw_lock_cpu, cpu).site_overflow;
		mw_sites_total(&t, mw_sites(cpu));
	}
	mw_dump_lock_totals(m, mw_lock_name, &t);
}

static int mw_locks_show(struct seq_file *m, void *v)
{
	struct mw_lock_site *t = &sum_site;
	int cpu, i;

	mutex_lock(&mw_state_lock);
	seq_printf(m, "mmlat_locks %d\n", MW_DUMP_VERSION);
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
			mw_dump_site(m, t, mw_lock_name[t->kind],
				     mw_mode_name[t->mode]);
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
