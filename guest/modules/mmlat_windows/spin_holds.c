// SPDX-License-Identifier: GPL-2.0
/*
 * Spinning holds: lock, timestamps, call site and expected preempt-off
 * window in a few slots per CPU, from the lock hook to the unlock hook of
 * the same lock, which adds the hold's length to its call site.  A
 * spinlock keeps preemption off from its acquisition to its release, so
 * the preempt-off window open at the unlock is the one the acquisition
 * opened or was nested in; a hold that is not inside one window is
 * discarded.  Callers run in hook context (mmlat_windows.h).
 */
#include <linux/sched/clock.h>

#include "mmlat_windows.h"

DEFINE_PER_CPU(struct mw_lock_cpu, mw_lock_cpu);
unsigned long mw_spin_lock_start, mw_spin_lock_end;

/* The text of _raw_spin_lock, where a window opened by a lock call starts. */
int mw_spin_holds_init(void)
{
	return mw_func_range("_raw_spin_lock", &mw_spin_lock_start,
			     &mw_spin_lock_end);
}

/*
 * A slot for a spinning hold of lock, taken at ret, of this kind: opened
 * when its acquisition opens the preempt-off window, ts dating the slot.
 * NULL when the call site's table is full.
 */
struct mw_held *mw_spin_hold_claim(void *lock, unsigned long ret, int kind,
				   bool opened, u64 ts)
{
	struct mw_lock_cpu *lc = this_cpu_ptr(&mw_lock_cpu);
	struct mw_win_start *w = this_cpu_ptr(&mw_win_start[MW_PREEMPT]);
	struct mw_lock_site *site;
	struct mw_held *h;

	site = mw_site_of(smp_processor_id(), ret, kind, MW_SPIN);
	if (!site)
		return NULL;
	h = mw_held_slot(lc->held, &lc->nr_held, (unsigned long)lock);
	h->lock = (unsigned long)lock;
	h->site = site;
	h->opened = opened;
	h->task = (unsigned long)current;
	h->kind = kind;
	h->window = w->seq;
	h->acquired = 0;
	h->wait_begin = 0;
	h->ts = ts;
	return h;
}

/*
 * Returns the slot of a hold nested in an open window, whose start the
 * hook takes after turning irqs back on: an interrupt held back during the
 * hook runs right then, before the acquisition, and is no part of the
 * hold, which would otherwise read longer by that interrupt's length.
 * Preemption is already off for it, so the slot stays this CPU's.  A hold
 * that opens its window starts with the window; its hook time only dates
 * the slot.
 */
struct mw_held *mw_spin_hold_begin(void *lock, unsigned long ret)
{
	struct mw_held *h;
	bool opened;
	int kind;

	kind = mw_lock_kind(lock, MW_SPIN);
	if (kind < 0) {
		this_cpu_inc(mw_lock_cpu.nonlock);
		return NULL;
	}
	/* the lock is taken in this window, or disables preemption anew */
	opened = !mw_window_open();
	h = mw_spin_hold_claim(lock, ret, kind, opened, local_clock());
	return h && !opened ? h : NULL;
}

void mw_spin_hold_end(void *lock, u64 now)
{
	struct mw_lock_cpu *lc = this_cpu_ptr(&mw_lock_cpu);
	struct mw_win_start *w = this_cpu_ptr(&mw_win_start[MW_PREEMPT]);
	struct mw_lock_site *st;
	struct mw_held *h;
	u64 start;
	int i;

	for (i = 0; i < MW_HELD_SLOTS; i++) {
		h = &lc->held[i];
		if (h->lock != (unsigned long)lock)
			continue;
		st = h->site;
		h->lock = 0;
		lc->nr_held--;
		if (!w->active || w->gen != mw_gen) {
			st->discarded++;
			return;
		}
		/*
		 * A hold that opened its window starts when the window did:
		 * the preempt_disable tracepoint between the hook and the
		 * acquisition is instrumentation, which a hold nested in an
		 * open window does not pay; after a contended wait it starts
		 * when the wait ended.  An interrupt or a preemption between
		 * the hook and the acquisition only delays that window; a
		 * window older than the hook means a stale slot.  A nested
		 * hold must end in the window it began in.
		 */
		if (h->opened ? w->ts < h->ts : w->seq != h->window) {
			st->discarded++;
			return;
		}
		if (h->acquired)
			start = h->acquired;
		else
			start = h->opened ? w->ts : h->ts;
		mw_site_add(st, now - start, h->acquired - h->wait_begin,
			    h->acquired);
		return;
	}
}

/*
 * A lock this CPU holds a slot for is contended: the wait begins, or it
 * ends with the lock acquired, where the hold starts.  From a tracepoint
 * probe, so irqs are turned off here.
 */
void mw_spin_wait(void *lock, u64 now, bool acquired)
{
	struct mw_lock_cpu *lc = this_cpu_ptr(&mw_lock_cpu);
	unsigned long flags;
	int i;

	raw_local_irq_save(flags);
	for (i = 0; i < MW_HELD_SLOTS; i++) {
		struct mw_held *h = &lc->held[i];

		if (h->lock != (unsigned long)lock)
			continue;
		if (!acquired)
			h->wait_begin = now;
		else if (h->wait_begin)
			h->acquired = now;
	}
	raw_local_irq_restore(flags);
}

/* Add the spinning holds still open, per kind; recording stopped. */
void mw_spin_holds_in_flight(u64 *held)
{
	int cpu, i;

	for_each_possible_cpu(cpu) {
		struct mw_lock_cpu *lc = per_cpu_ptr(&mw_lock_cpu, cpu);

		for (i = 0; i < MW_HELD_SLOTS; i++)
			if (lc->held[i].lock)
				held[lc->held[i].site->kind]++;
	}
}
