// SPDX-License-Identifier: GPL-2.0
/*
 * mmlat_calib: open windows of a requested length, so the host can check
 * that the window module (or the max tracers) reports a known latency.
 * Guest-only.
 *
 * echo "preempt 200" > /proc/mmlat_calib    # 200 us with preemption off
 * echo "irq 1000" > /proc/mmlat_calib       # 1000 us with irqs off
 * echo "spin 50" > /proc/mmlat_calib        # 50 us under a plain spinlock
 * echo "ptl 100" > /proc/mmlat_calib        # 100 us holding a PTE lock
 * echo "ptl_nested 100" > /proc/mmlat_calib # the same inside preempt-off
 * cat /proc/mmlat_calib                     # last window: type, ns (inside),
 *                                           # outer_ns (around it), cpu
 */
#include <linux/gfp.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/sched/clock.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "mmlat_ptl.h"

/*
 * The PTE-lock windows need what the kernel's own page tables use: a
 * spinlock inside the struct page, which the window module recognises as a
 * PTE lock. Lock debugging makes the lock too big for the struct page and
 * moves it into a separate allocation (through unexported functions).
 */
#if !MMLAT_SPLIT_PTL || ALLOC_SPLIT_PTLOCKS
#error "mmlat_calib needs split PTE locks inside struct page (no lock debugging)"
#endif

/*
 * ptlock_init() and ptlock_ptr() take the page table's struct page in 6.1
 * and the struct ptdesc overlaying it from 6.5 on (Kbuild tells which).
 */
#ifdef MMLAT_PTDESC
#define mmlat_calib_pt(page)	page_ptdesc(page)
#else
#define mmlat_calib_pt(page)	(page)
#endif

/* Keep one request from hogging a CPU for more than this. */
#define MMLAT_CALIB_MAX_US	100000

static DEFINE_MUTEX(mmlat_calib_lock);
static const char *last_type = "none";
static u64 last_ns, last_outer_ns;
static int last_cpu = -1;

/* The "spin" window's lock: an ordinary spinlock, not a PTE lock. */
static DEFINE_SPINLOCK(mmlat_calib_spinlock);
/* The "ptl" windows' lock: the split PTE lock of a page of our own. */
static struct page *mmlat_calib_ptl_page;

/* Busy wait on the clock so the window length is measured, not assumed. */
static u64 mmlat_calib_spin(u64 us)
{
	u64 start = local_clock();
	u64 now;

	do {
		cpu_relax();
		now = local_clock();
	} while (now - start < us * NSEC_PER_USEC);
	return now - start;
}

/*
 * Each window function returns the time of its spin (inside the window).
 * An interrupt between opening the window and the first clock read, or
 * after the last one, lengthens the real window beyond it, so the time
 * around the whole section is kept as an upper bound (*outer).
 */
static noinline u64 mmlat_calib_preempt_window(u64 us, int *cpu, u64 *outer)
{
	u64 t0 = local_clock();
	u64 ns;

	preempt_disable();
	*cpu = smp_processor_id();
	ns = mmlat_calib_spin(us);
	preempt_enable();
	*outer = local_clock() - t0;
	return ns;
}

static noinline u64 mmlat_calib_irq_window(u64 us, int *cpu, u64 *outer)
{
	u64 t0 = local_clock();
	unsigned long flags;
	u64 ns;

	local_irq_save(flags);
	*cpu = smp_processor_id();
	ns = mmlat_calib_spin(us);
	local_irq_restore(flags);
	*outer = local_clock() - t0;
	return ns;
}

/* A preempt-off window opened by spin_lock() rather than preempt_disable(). */
static noinline u64 mmlat_calib_spin_window(u64 us, int *cpu, u64 *outer)
{
	u64 t0 = local_clock();
	u64 ns;

	spin_lock(&mmlat_calib_spinlock);
	*cpu = smp_processor_id();
	ns = mmlat_calib_spin(us);
	spin_unlock(&mmlat_calib_spinlock);
	*outer = local_clock() - t0;
	return ns;
}

/*
 * The PTE-lock hold. The window module counts a hold by the function that
 * took the lock: the runner names this one to it (sites=), so it must stay
 * a function of its own that calls spin_lock() itself.
 */
static noinline u64 mmlat_calib_ptl_hold(u64 us, int *cpu, u64 *outer)
{
	spinlock_t *ptl = ptlock_ptr(mmlat_calib_pt(mmlat_calib_ptl_page));
	u64 t0 = local_clock();
	u64 ns;

	spin_lock(ptl);
	*cpu = smp_processor_id();
	ns = mmlat_calib_spin(us);
	spin_unlock(ptl);
	*outer = local_clock() - t0;
	return ns;
}

/*
 * The same hold inside a section that already runs with preemption off,
 * as the baseline kernel's non-preemptible mmu_gather wraps its PTE-lock
 * holds: the lock then opens no window of its own, and the hold may cost
 * the window module a different overhead. *outer is the time around the
 * whole section, so it bounds both the hold and the preempt-off window
 * around it (which is what a max tracer reads).
 */
static noinline u64 mmlat_calib_ptl_nested_window(u64 us, int *cpu, u64 *outer)
{
	u64 t0 = local_clock();
	u64 ns;

	preempt_disable();
	ns = mmlat_calib_ptl_hold(us, cpu, outer);
	preempt_enable();
	*outer = local_clock() - t0;
	return ns;
}

static const struct mmlat_calib_kind {
	const char *name;
	u64 (*window)(u64 us, int *cpu, u64 *outer);
} mmlat_calib_kinds[] = {
	{ "preempt", mmlat_calib_preempt_window },
	{ "irq", mmlat_calib_irq_window },
	{ "spin", mmlat_calib_spin_window },
	{ "ptl", mmlat_calib_ptl_hold },
	{ "ptl_nested", mmlat_calib_ptl_nested_window },
};

static ssize_t mmlat_calib_write(struct file *file, const char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	const struct mmlat_calib_kind *kind = NULL;
	char buf[32], type[16];
	unsigned long long us;
	u64 ns, outer;
	int cpu, i;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	if (sscanf(buf, "%15s %llu", type, &us) != 2 || !us ||
	    us > MMLAT_CALIB_MAX_US)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(mmlat_calib_kinds); i++)
		if (!strcmp(type, mmlat_calib_kinds[i].name))
			kind = &mmlat_calib_kinds[i];
	if (!kind)
		return -EINVAL;

	mutex_lock(&mmlat_calib_lock);
	ns = kind->window(us, &cpu, &outer);
	last_type = kind->name;
	last_ns = ns;
	last_outer_ns = outer;
	last_cpu = cpu;
	mutex_unlock(&mmlat_calib_lock);
	return count;
}

static int mmlat_calib_show(struct seq_file *m, void *v)
{
	mutex_lock(&mmlat_calib_lock);
	seq_printf(m, "type=%s ns=%llu outer_ns=%llu cpu=%d\n", last_type,
		   last_ns, last_outer_ns, last_cpu);
	mutex_unlock(&mmlat_calib_lock);
	return 0;
}

static int mmlat_calib_open(struct inode *inode, struct file *file)
{
	return single_open(file, mmlat_calib_show, NULL);
}

static const struct proc_ops mmlat_calib_ops = {
	.proc_open = mmlat_calib_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
	.proc_write = mmlat_calib_write,
};

static int __init mmlat_calib_init(void)
{
	mmlat_calib_ptl_page = alloc_page(GFP_KERNEL);
	if (!mmlat_calib_ptl_page)
		return -ENOMEM;
	ptlock_init(mmlat_calib_pt(mmlat_calib_ptl_page));
	if (!proc_create("mmlat_calib", 0600, NULL, &mmlat_calib_ops)) {
		__free_page(mmlat_calib_ptl_page);
		return -ENOMEM;
	}
	return 0;
}

static void __exit mmlat_calib_exit(void)
{
	remove_proc_entry("mmlat_calib", NULL);
	__free_page(mmlat_calib_ptl_page);
}

module_init(mmlat_calib_init);
module_exit(mmlat_calib_exit);
MODULE_DESCRIPTION("mmlat: windows of known length, preempt-off, irq-off, under a spinlock and a PTE lock");
MODULE_LICENSE("GPL");
