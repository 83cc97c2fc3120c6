// SPDX-License-Identifier: GPL-2.0
/*
 * Sleeping holds (mutexes and rwsems), in a small table by (task, lock),
 * since the holder may sleep and migrate.  A slot is claimed by cmpxchg on
 * its lock and then written by its task only; task is cleared before lock
 * when it is freed, so no other task can match a slot being reused.  A
 * hold runs from the lock hook to the unlock hook; whether the holder was
 * switched out meanwhile is counted apart (slept).  Callers run in hook
 * context (mmlat_windows.h) or, for the waits, in a tracepoint probe.
 */
#include <linux/sched/clock.h>

#include "mmlat_windows.h"

#define SLEEP_SLOTS	32		/* sleeping holds, all tasks */

struct mw_sleep_hold {
	void *lock;		/* NULL: free */
	struct task_struct *task;
	unsigned long ret;
	u8 kind, mode;
	u64 ts, acquired, wait_begin;
	unsigned long ctxsw;	/* nvcsw + nivcsw at the lock call */
};

static struct mw_sleep_hold sleep_held[SLEEP_SLOTS];
atomic_t mw_nr_sleep_open;
atomic64_t mw_slot_overflow;	/* sleeping holds without a slot */

static struct mw_sleep_hold *mw_sleep_slot(void *lock)
{
	int i;

	for (i = 0; i < SLEEP_SLOTS; i++)
		if (READ_ONCE(sleep_held[i].lock) == lock &&
		    READ_ONCE(sleep_held[i].task) == current)
			return &sleep_held[i];
	return NULL;
}

static void mw_sleep_free(struct mw_sleep_hold *sh)
{
	WRITE_ONCE(sh->task, NULL);
	smp_wmb();	/* no task matches before the slot is free */
	WRITE_ONCE(sh->lock, NULL);
	atomic_dec(&mw_nr_sleep_open);
}

void mw_sleep_hold_begin(void *lock, unsigned long ret, int mode)
{
	struct mw_sleep_hold *sh;
	int kind, i;

	kind = mw_lock_kind(lock, mode);
	if (kind < 0) {
		this_cpu_inc(mw_lock_cpu.nonlock);
		return;
	}
	sh = mw_sleep_slot(lock);
	if (sh) {
		/* taken again by its holder: the unlock went unseen */
		struct mw_lock_site *st;

		st = mw_site_of(smp_processor_id(), sh->ret, sh->kind,
				sh->mode);
		if (st)
			st->lost++;
		mw_sleep_free(sh);
	}
	for (i = 0, sh = NULL; i < SLEEP_SLOTS && !sh; i++)
		if (!READ_ONCE(sleep_held[i].lock) &&
		    !cmpxchg(&sleep_held[i].lock, NULL, lock))
			sh = &sleep_held[i];
	if (!sh) {
		atomic64_inc(&mw_slot_overflow);
		return;
	}
	atomic_inc(&mw_nr_sleep_open);
	sh->ret = ret;
	sh->kind = kind;
	sh->mode = mode;
	sh->acquired = 0;
	sh->wait_begin = 0;
	sh->ctxsw = current->nvcsw + current->nivcsw;
	sh->ts = local_clock();
	smp_wmb();	/* the slot complete before it can match */
	WRITE_ONCE(sh->task, current);
}

void mw_sleep_hold_end(void *lock, u64 now)
{
	struct mw_sleep_hold *sh = mw_sleep_slot(lock);
	struct mw_lock_site *st;

	if (!sh)
		return;
	st = mw_site_of(smp_processor_id(), sh->ret, sh->kind, sh->mode);
	if (st) {
		mw_site_add(st, now - (sh->acquired ? sh->acquired : sh->ts),
			    sh->acquired - sh->wait_begin, sh->acquired);
		if (current->nvcsw + current->nivcsw != sh->ctxsw)
			st->slept++;
	}
	mw_sleep_free(sh);
}

/*
 * The current task waits for a lock it holds a slot for, or has acquired
 * it after the wait: the hold starts then.
 */
void mw_sleep_wait(void *lock, u64 now, bool acquired)
{
	struct mw_sleep_hold *sh;

	if (!atomic_read(&mw_nr_sleep_open))
		return;
	sh = mw_sleep_slot(lock);
	if (!sh)
		return;
	if (!acquired)
		sh->wait_begin = now;
	else if (sh->wait_begin)
		sh->acquired = now;
}

/* Add the sleeping holds still open, per kind; recording stopped. */
void mw_sleep_holds_in_flight(u64 *held)
{
	int i;

	for (i = 0; i < SLEEP_SLOTS; i++)
		if (READ_ONCE(sleep_held[i].lock))
			held[sleep_held[i].kind]++;
}
