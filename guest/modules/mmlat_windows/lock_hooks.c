// SPDX-License-Identifier: GPL-2.0
/*
 * ftrace hooks on the lock and unlock functions, with one ftrace ops each
 * (the nop at each function's entry becomes a call only for these):
 * _raw_spin_lock/_raw_spin_unlock always (the PTE lock), and mutex_lock/
 * mutex_unlock or down_write/down_read/up_write/up_read where the kernel's
 * i_mmap or anon_vma lock sleeps.  A lock hook reads the lock from its
 * first argument and the call site from the return address; a call from
 * a lock user opens a hold, which the unlock hook of the same lock closes.
 *
 * ftrace calls the hook from the function's entry: no int3, which under
 * TCG costs thousands of guest instructions and, taken in kernel mode,
 * leaves the irq-tracing state set so that the next irq-off window goes
 * unseen; and no text patching per call site.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ftrace.h>
#include <linux/kallsyms.h>
#include <linux/sched/clock.h>
#include <linux/string.h>

#include "mmlat_windows.h"

/*
 * The lock hooks' first argument (the lock) and the frame pointer at the
 * lock call. 6.1's struct ftrace_regs is a struct pt_regs the hook reads;
 * 6.12 (Debian's, as upstream from 6.13) and 7.3 make it opaque, with
 * accessors.
 * The frame pointer is saved either way (x86's ftrace_caller saves %rbp).
 */
#ifdef ftrace_regs_get_argument
#define hook_lock(fregs)	((void *)ftrace_regs_get_argument(fregs, 0))
#define hook_fp(fregs)		ftrace_regs_get_frame_pointer(fregs)
#else
#define hook_lock(fregs)	((void *)(fregs)->regs.di)
#define hook_fp(fregs)		((fregs)->regs.bp)
#endif

/*
 * Called at the entry of _raw_spin_lock, with preemption on or off.  NMIs
 * may take spinlocks inside a hook's critical section, so they are left
 * alone.
 */
static void notrace mw_spin_lock_hook(unsigned long ip, unsigned long parent_ip,
				      struct ftrace_ops *op,
				      struct ftrace_regs *fregs)
{
	struct mw_held *nested = NULL;
	unsigned long flags, site;

	mw_hook_enter(flags);
	if (READ_ONCE(mw_enabled) && !in_nmi()) {
		site = mw_lock_site_ret(parent_ip, hook_fp(fregs));
		if (site)
			nested = mw_spin_hold_begin(hook_lock(fregs), site);
	}
	mw_hook_exit(flags);
	if (nested)
		WRITE_ONCE(nested->ts, local_clock());
}

static void notrace mw_spin_unlock_hook(unsigned long ip,
					unsigned long parent_ip,
					struct ftrace_ops *op,
					struct ftrace_regs *fregs)
{
	unsigned long flags;
	u64 now;

	/*
	 * Called with preemption off (a spinlock is held) and inside the
	 * window that lock keeps open: return before reading the clock
	 * unless a hold is open on this CPU.
	 */
	if (!READ_ONCE(mw_enabled) || in_nmi() ||
	    !this_cpu_read(mw_lock_cpu.nr_held))
		return;
	now = local_clock();
	raw_local_irq_save(flags);
	mw_spin_hold_end(hook_lock(fregs), now);
	raw_local_irq_restore(flags);
}

/*
 * The hooked functions.  No FTRACE_OPS_FL_RECURSION: that flag asks ftrace
 * to call the hook through ftrace_ops_assist_func(), a recursion guard
 * whose preempt_enable_notrace() may reschedule from inside every lock
 * call.  The hooks call nothing these ops trace; the one way back in is
 * their last preempt_enable_notrace() rescheduling into a spinlock, once
 * their state is consistent.  Only the families the kernel's i_mmap and
 * anon_vma locks use are hooked (the spinlock always, for the PTE lock);
 * mode is how the function takes its lock.
 */
struct mw_lock_hook {
	const char *func;
	int family, mode;
	struct ftrace_ops ops;
	bool registered;
};

/* mutex_lock, down_write, down_read: a hold of the hook's mode */
static void notrace mw_sleep_lock_hook(unsigned long ip,
				       unsigned long parent_ip,
				       struct ftrace_ops *op,
				       struct ftrace_regs *fregs)
{
	int mode = container_of(op, struct mw_lock_hook, ops)->mode;
	unsigned long flags, site;

	mw_hook_enter(flags);
	if (READ_ONCE(mw_enabled) && in_task()) {
		site = mw_lock_site_ret(parent_ip, hook_fp(fregs));
		if (site)
			mw_sleep_hold_begin(hook_lock(fregs), site, mode);
	}
	mw_hook_exit(flags);
}

/* mutex_unlock, up_write, up_read: by (task, lock), so any caller */
static void notrace mw_sleep_unlock_hook(unsigned long ip,
					 unsigned long parent_ip,
					 struct ftrace_ops *op,
					 struct ftrace_regs *fregs)
{
	unsigned long flags;
	u64 now;

	/* most calls (mmap_lock's up_read) leave here */
	if (!atomic_read(&mw_nr_sleep_open) || !in_task())
		return;
	now = local_clock();
	mw_hook_enter(flags);
	if (READ_ONCE(mw_enabled))
		mw_sleep_hold_end(hook_lock(fregs), now);
	mw_hook_exit(flags);
}

#define LOCK_HOOK(fn, fam, md, cb)					\
	{ .func = fn, .family = fam, .mode = md,			\
	  .ops = { .func = cb } }

static struct mw_lock_hook lock_hooks[] = {
	LOCK_HOOK("_raw_spin_lock", MW_SPIN, MW_SPIN, mw_spin_lock_hook),
	LOCK_HOOK("_raw_spin_unlock", MW_SPIN, MW_SPIN, mw_spin_unlock_hook),
	LOCK_HOOK("mutex_lock", MW_MUTEX, MW_MUTEX, mw_sleep_lock_hook),
	LOCK_HOOK("mutex_unlock", MW_MUTEX, MW_MUTEX, mw_sleep_unlock_hook),
	LOCK_HOOK("down_write", MW_RWSEM_W, MW_RWSEM_W, mw_sleep_lock_hook),
	LOCK_HOOK("down_read", MW_RWSEM_W, MW_RWSEM_R, mw_sleep_lock_hook),
	LOCK_HOOK("up_write", MW_RWSEM_W, MW_RWSEM_W, mw_sleep_unlock_hook),
	LOCK_HOOK("up_read", MW_RWSEM_W, MW_RWSEM_R, mw_sleep_unlock_hook),
};

static bool mw_hook_wanted(const struct mw_lock_hook *lh)
{
	return lh->family == MW_SPIN || mw_family_in_use(lh->family);
}

static int mw_hook_function(struct ftrace_ops *ops, const char *func)
{
	char buf[KSYM_NAME_LEN];
	int ret;

	strscpy(buf, func, sizeof(buf));
	ret = ftrace_set_filter(ops, buf, strlen(buf), 1);
	if (!ret)
		ret = register_ftrace_function(ops);
	if (ret)
		pr_err("no ftrace hook on %s: %d\n", func, ret);
	return ret;
}

/* Patches kernel text and waits for grace periods: mw_state_lock held. */
int mw_lock_hooks_register(void)
{
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(lock_hooks); i++) {
		if (!mw_hook_wanted(&lock_hooks[i]))
			continue;
		ret = mw_hook_function(&lock_hooks[i].ops, lock_hooks[i].func);
		if (ret)
			return ret;
		lock_hooks[i].registered = true;
	}
	return 0;
}

void mw_lock_hooks_unregister(void)
{
	int i;

	for (i = ARRAY_SIZE(lock_hooks) - 1; i >= 0; i--) {
		if (lock_hooks[i].registered)
			unregister_ftrace_function(&lock_hooks[i].ops);
		lock_hooks[i].registered = false;
	}
}

void mw_lock_hooks_free(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(lock_hooks); i++)
		ftrace_free_filter(&lock_hooks[i].ops);
}
