// SPDX-License-Identifier: GPL-2.0
/*
 * Trylocks.  Reclaim's rmap walks take the i_mmap and anon_vma locks with
 * a trylock first (rmap_walk_file(), folio_lock_anon_vma_read()), so
 * without these hooks their holds, and the windows a spinning one opens,
 * go unseen or untagged.  Whether the lock was taken is known only on
 * return: a kretprobe (ftrace at the entry, a rethook trampoline at the
 * return; no int3) opens the hold there.  Its entry handler runs with
 * preemption off (notrace) and returns 1, asking for no return hook, for
 * calls from outside the lock users, which are most of them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/sched/clock.h>
#include <linux/string.h>

#include "mmlat_windows.h"

static unsigned long spin_trylock_start, spin_trylock_end;

struct mw_try_call {
	void *lock;
	unsigned long site;	/* mw_lock_site_ret() of the call */
	u64 ts;			/* the call */
	bool opens;	/* no window was open: a spinning acquisition opens one */
};

static int notrace mw_try_entry(struct kretprobe_instance *ri,
				struct pt_regs *regs)
{
	struct mw_try_call *tc = (struct mw_try_call *)ri->data;
	/* at the entry the stack pointer points at the return address */
	unsigned long ret = *(unsigned long *)kernel_stack_pointer(regs);

	if (!READ_ONCE(mw_enabled) || in_nmi())
		return 1;
	tc->site = mw_lock_site_ret(ret, regs->bp);
	if (!tc->site)
		return 1;
	tc->lock = (void *)regs->di;
	tc->opens = !mw_window_open();
	tc->ts = local_clock();
	return 0;
}

/*
 * The stack at open of a window opened inside _raw_spin_trylock has the
 * rethook trampoline where the trylock's return address was, in the frame
 * after the one inside the trylock: put the caller back.
 */
static void mw_unhook_open_stack(struct mw_win_start *w, unsigned long ret)
{
	int i;

	for (i = 0; i + 1 < w->depth; i++) {
		if (w->stack[i] >= spin_trylock_start &&
		    w->stack[i] < spin_trylock_end) {
			w->stack[i + 1] = ret;
			return;
		}
	}
}

/*
 * A spinning trylock that succeeded.  If no window was open at the call,
 * the one open now is the one its acquisition opened (preemption has been
 * off since): it gets the lock's tag, as a window opened inside
 * _raw_spin_lock gets it from mw_opening_lock(), and the hold starts with
 * it.  A hold nested in an open window starts after this hook, as in the
 * lock hook.
 */
static int notrace mw_try_spin_return(struct kretprobe_instance *ri,
				      struct pt_regs *regs)
{
	struct mw_try_call *tc = (struct mw_try_call *)ri->data;
	struct mw_win_start *w;
	struct mw_held *h = NULL;
	unsigned long flags;
	int kind;

	if (!regs_return_value(regs))
		return 0;
	mw_hook_enter(flags);
	kind = READ_ONCE(mw_enabled) ? mw_lock_kind(tc->lock, MW_SPIN) : -1;
	if (kind >= 0) {
		h = mw_spin_hold_claim(tc->lock, tc->site, kind, tc->opens,
				       tc->ts);
		w = this_cpu_ptr(&mw_win_start[MW_PREEMPT]);
		if (h && tc->opens && mw_window_open() && w->ts >= tc->ts) {
			w->lock = kind + 1;
			mw_unhook_open_stack(w, get_kretprobe_retaddr(ri));
		}
	}
	mw_hook_exit(flags);
	if (h && !tc->opens)
		WRITE_ONCE(h->ts, local_clock());
	return 0;
}

/* A sleeping trylock that succeeded: the hold starts now. */
static __always_inline void mw_try_sleep_return(struct kretprobe_instance *ri,
						struct pt_regs *regs,
						int mode)
{
	struct mw_try_call *tc = (struct mw_try_call *)ri->data;
	unsigned long flags;

	if (!regs_return_value(regs) || !in_task())
		return;
	mw_hook_enter(flags);
	if (READ_ONCE(mw_enabled))
		mw_sleep_hold_begin(tc->lock, tc->site, mode);
	mw_hook_exit(flags);
}

static int notrace mw_try_mutex_return(struct kretprobe_instance *ri,
				       struct pt_regs *regs)
{
	mw_try_sleep_return(ri, regs, MW_MUTEX);
	return 0;
}

static int notrace mw_try_read_return(struct kretprobe_instance *ri,
				      struct pt_regs *regs)
{
	mw_try_sleep_return(ri, regs, MW_RWSEM_R);
	return 0;
}

static int notrace mw_try_write_return(struct kretprobe_instance *ri,
				       struct pt_regs *regs)
{
	mw_try_sleep_return(ri, regs, MW_RWSEM_W);
	return 0;
}

/*
 * Calls between a trylock's entry and its return: tasks preempted inside
 * a sleeping one, interrupts inside any.  A call with no instance left
 * goes unseen and is counted in the kretprobe's nmissed.
 */
#define TRY_ACTIVE	64

struct mw_try_hook {
	const char *func;
	int family;
	struct kretprobe rp;
	bool registered;
};

#define TRY_HOOK(fn, fam, cb)						\
	{ .func = fn, .family = fam,					\
	  .rp = { .handler = cb, .entry_handler = mw_try_entry,		\
		  .data_size = sizeof(struct mw_try_call),		\
		  .maxactive = TRY_ACTIVE } }

/*
 * Only the families of the kernel's i_mmap and anon_vma locks: the PTE
 * lock is hardly ever trylocked, and every hooked call costs a kprobe.
 */
static struct mw_try_hook try_hooks[] = {
	TRY_HOOK("_raw_spin_trylock", MW_SPIN, mw_try_spin_return),
	TRY_HOOK("mutex_trylock", MW_MUTEX, mw_try_mutex_return),
	TRY_HOOK("down_read_trylock", MW_RWSEM_W, mw_try_read_return),
	TRY_HOOK("down_write_trylock", MW_RWSEM_W, mw_try_write_return),
};

/* The text of _raw_spin_trylock, for mw_unhook_open_stack(). */
int mw_try_hooks_init(void)
{
	return mw_func_range("_raw_spin_trylock", &spin_trylock_start,
			     &spin_trylock_end);
}

static int mw_hook_trylock(struct mw_try_hook *th)
{
	int ret;

	/* a kprobe registers by name only with its address cleared */
	memset(&th->rp.kp, 0, sizeof(th->rp.kp));
	th->rp.kp.symbol_name = th->func;
	th->rp.nmissed = 0;
	ret = register_kretprobe(&th->rp);
	if (ret)
		pr_err("no kretprobe on %s: %d\n", th->func, ret);
	th->registered = !ret;
	return ret;
}

/* Patches kernel text and waits for grace periods: mw_state_lock held. */
int mw_try_hooks_register(void)
{
	struct mw_try_hook *th;
	int ret = 0;

	for (th = try_hooks; th < try_hooks + ARRAY_SIZE(try_hooks) && !ret; th++)
		if (mw_family_in_use(th->family))
			ret = mw_hook_trylock(th);
	return ret;
}

void mw_try_hooks_unregister(void)
{
	int i = ARRAY_SIZE(try_hooks);

	while (i--) {
		struct mw_try_hook *th = &try_hooks[i];

		if (th->registered)
			unregister_kretprobe(&th->rp);
		th->registered = false;
	}
}

/* Trylock calls that found no free instance or ran inside another kprobe. */
u64 mw_try_missed(void)
{
	u64 n = 0;
	int i;

	for (i = 0; i < ARRAY_SIZE(try_hooks); i++)
		if (try_hooks[i].registered)
			n += try_hooks[i].rp.nmissed;
	return n;
}
