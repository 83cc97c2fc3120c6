// SPDX-License-Identifier: GPL-2.0
/*
 * mmlat_calib: open preempt-off and irq-off windows of a requested length,
 * so the host can check that the tracers and hist triggers report a known
 * latency.  Guest-only.
 *
 * echo "preempt 200" > /proc/mmlat_calib   # 200 us with preemption off
 * echo "irq 1000" > /proc/mmlat_calib      # 1000 us with irqs off
 * cat /proc/mmlat_calib                    # last window: type, ns (inside),
 *                                          # outer_ns (around it), cpu
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/sched/clock.h>
#include <linux/uaccess.h>

/* Keep one request from hogging a CPU for more than this. */
#define MMLAT_CALIB_MAX_US	100000

static DEFINE_MUTEX(mmlat_calib_lock);
static const char *last_type = "none";
static u64 last_ns, last_outer_ns;
static int last_cpu = -1;

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
 * The spin times the inside of the window. An interrupt between
 * preempt_disable() and the first clock read, or after the last one,
 * lengthens the real window beyond it, so the time around the whole
 * section is kept as an upper bound (*outer).
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

static ssize_t mmlat_calib_write(struct file *file, const char __user *ubuf,
			   size_t count, loff_t *ppos)
{
	char buf[32], type[16];
	unsigned long long us;
	u64 ns, outer;
	int cpu;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	if (sscanf(buf, "%15s %llu", type, &us) != 2 || !us ||
	    us > MMLAT_CALIB_MAX_US)
		return -EINVAL;

	mutex_lock(&mmlat_calib_lock);
	if (!strcmp(type, "preempt")) {
		ns = mmlat_calib_preempt_window(us, &cpu, &outer);
		last_type = "preempt";
	} else if (!strcmp(type, "irq")) {
		ns = mmlat_calib_irq_window(us, &cpu, &outer);
		last_type = "irq";
	} else {
		mutex_unlock(&mmlat_calib_lock);
		return -EINVAL;
	}
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
	if (!proc_create("mmlat_calib", 0600, NULL, &mmlat_calib_ops))
		return -ENOMEM;
	return 0;
}

static void __exit mmlat_calib_exit(void)
{
	remove_proc_entry("mmlat_calib", NULL);
}

module_init(mmlat_calib_init);
module_exit(mmlat_calib_exit);
MODULE_DESCRIPTION("mmlat: preempt-off and irq-off windows of known length");
MODULE_LICENSE("GPL");
