// SPDX-License-Identifier: GPL-2.0
/*
 * mmlat_windows: every preempt-off and irq-off window, and the hold times
 * of the PTE, i_mmap and anon_vma locks, aggregated in the guest.
 * Guest-only.  See README.md for what each part measures and how.
 *
 * This part loads the module and arms, starts and stops recording.  Every
 * probe does nothing until the enable flag is set, which start sets last
 * and stop clears first, so probe (un)registration never lands in the
 * data.  Arming registers the probes, which patches kernel text and waits
 * for grace periods, before anything is measured; start and stop only
 * flip the flag.  The probes stay registered until the module is removed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/proc_fs.h>
#include <linux/rcupdate.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>

#include "mmlat_windows.h"

bool mw_locks = true;
module_param_named(locks, mw_locks, bool, 0444);
MODULE_PARM_DESC(locks, "hook the lock functions for lock hold times");

int mw_enabled;
u64 mw_gen;
/* Serialises arm, start, stop and the dumps. */
DEFINE_MUTEX(mw_state_lock);
static bool registered, started;
u64 mw_held_at_stop[MW_LOCK_KINDS];

/*
 * The tracepoints, found by name: the preemptirq ones are not exported to
 * modules in 6.1.
 */
struct mw_tp_hook mw_tp_hooks[] = {
	{ "preempt_disable", mw_preempt_off },
	{ "preempt_enable", mw_preempt_on },
	{ "irq_disable", mw_irq_off },
	{ "irq_enable", mw_irq_on },
	{ "cpu_idle", mw_cpu_idle },
	{ "contention_begin", mw_contention_begin },
	{ "contention_end", mw_contention_end },
};

const int mw_nr_tp_hooks = ARRAY_SIZE(mw_tp_hooks);

static void mw_find_tp(struct tracepoint *tp, void *priv)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(mw_tp_hooks); i++)
		if (!strcmp(tp->name, mw_tp_hooks[i].name))
			mw_tp_hooks[i].tp = tp;
}

static void mw_unregister_tracepoints(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(mw_tp_hooks); i++)
		if (mw_tp_hooks[i].tp)
			tracepoint_probe_unregister(mw_tp_hooks[i].tp,
						    mw_tp_hooks[i].probe, NULL);
	tracepoint_synchronize_unregister();
}

static void mw_unregister_probes(void)
{
	mw_try_hooks_unregister();
	mw_lock_hooks_unregister();
	mw_unregister_tracepoints();
}

static int mw_register_probes(void)
{
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(mw_tp_hooks); i++) {
		if (!mw_tp_hooks[i].tp)
			continue;
		ret = tracepoint_probe_register(mw_tp_hooks[i].tp,
						mw_tp_hooks[i].probe, NULL);
		if (ret) {
			pr_err("cannot probe %s: %d\n", mw_tp_hooks[i].name,
			       ret);
			mw_tp_hooks[i].tp = NULL;
		}
	}
	if (!mw_locks)
		return 0;
	ret = mw_lock_hooks_register();
	if (!ret)
		ret = mw_try_hooks_register();
	if (ret)
		mw_unregister_probes();
	return ret;
}

/* Register the probes, recording off; mw_state_lock held. */
static int mw_arm_locked(void)
{
	int ret = 0;

	if (!registered) {
		ret = mw_register_probes();
		registered = !ret;
	}
	return ret;
}

int mw_arm(void)
{
	int ret;

	mutex_lock(&mw_state_lock);
	ret = mw_arm_locked();
	mutex_unlock(&mw_state_lock);
	return ret;
}

/* Arm if not yet, then record (once). */
int mw_start(void)
{
	int ret;

	mutex_lock(&mw_state_lock);
	ret = mw_arm_locked();
	if (!ret && !started) {
		WRITE_ONCE(mw_gen, mw_gen + 1);
		smp_wmb();	/* the new generation before the flag */
		WRITE_ONCE(mw_enabled, 1);
		started = true;
	}
	mutex_unlock(&mw_state_lock);
	return ret;
}

/*
 * Every probe runs with preemption disabled from its read of the flag to
 * its last write, so after a grace period none is still recording and the
 * data is stable.
 */
void mw_stop(void)
{
	mutex_lock(&mw_state_lock);
	if (READ_ONCE(mw_enabled)) {
		WRITE_ONCE(mw_enabled, 0);
		synchronize_rcu();
		memset(mw_held_at_stop, 0, sizeof(mw_held_at_stop));
		mw_spin_holds_in_flight(mw_held_at_stop);
		mw_sleep_holds_in_flight(mw_held_at_stop);
	}
	mutex_unlock(&mw_state_lock);
}

static void mw_disarm(void)
{
	mutex_lock(&mw_state_lock);
	WRITE_ONCE(mw_enabled, 0);
	if (registered) {
		mw_unregister_probes();
		registered = false;
	}
	mutex_unlock(&mw_state_lock);
}

/* /proc/mmlat_windows/control: "arm", "start" or "stop". */
static ssize_t mw_control_write(struct file *file, const char __user *ubuf,
				size_t count, loff_t *ppos)
{
	char buf[8], *cmd;
	int ret = 0;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	cmd = strim(buf);
	if (!strcmp(cmd, "arm"))
		ret = mw_arm();
	else if (!strcmp(cmd, "start"))
		ret = mw_start();
	else if (!strcmp(cmd, "stop"))
		mw_stop();
	else
		return -EINVAL;
	return ret ? ret : count;
}

static const struct proc_ops mw_control_ops = {
	.proc_write = mw_control_write,
	.proc_lseek = noop_llseek,
};

static struct proc_dir_entry *mw_dir;

static int mw_files_create(void)
{
	mw_dir = proc_mkdir("mmlat_windows", NULL);
	if (!mw_dir)
		return -ENOMEM;
	if (!proc_create("control", 0200, mw_dir, &mw_control_ops) ||
	    mw_dump_create(mw_dir)) {
		proc_remove(mw_dir);
		return -ENOMEM;
	}
	return 0;
}

static void mw_free(void)
{
	mw_lock_hooks_free();
	mw_windows_free();
	mw_keys_free();
	mw_sites_free();
	mw_users_free();
}

static int mw_locks_init(void)
{
	int ret;

	ret = mw_spin_holds_init();
	if (!ret)
		ret = mw_try_hooks_init();
	if (!ret)
		ret = mw_users_init();
	if (!ret)
		ret = mw_sites_init();
	return ret;
}

static int __init mmlat_windows_init(void)
{
	int i, ret;

	ret = mw_keys_init();
	if (!ret)
		ret = mw_windows_init();
	if (!ret && mw_locks)
		ret = mw_locks_init();
	if (ret)
		goto err;
	for_each_kernel_tracepoint(mw_find_tp, NULL);
	for (i = 0; i < ARRAY_SIZE(mw_tp_hooks); i++)
		if (!mw_tp_hooks[i].tp)
			pr_warn("no tracepoint %s\n", mw_tp_hooks[i].name);
	ret = mw_files_create();
	if (ret)
		goto err;
	return 0;

err:
	mw_free();
	return ret;
}

static void __exit mmlat_windows_exit(void)
{
	proc_remove(mw_dir);
	mw_disarm();
	mw_free();
}

module_init(mmlat_windows_init);
module_exit(mmlat_windows_exit);
MODULE_DESCRIPTION("mmlat: preempt-off/irq-off windows and lock hold times");
MODULE_LICENSE("GPL");
