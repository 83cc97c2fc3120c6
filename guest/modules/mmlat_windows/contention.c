// SPDX-License-Identifier: GPL-2.0
/*
 * Waits: lock:contention_begin/end, which 6.1, 6.12 and 7.3 fire in the
 * spinlock, mutex and rwsem slow paths, mark the open hold of that lock on
 * this CPU or task; a contended hold starts when its wait ended, and its
 * site counts the wait apart.
 */
#include <linux/sched/clock.h>

#include "mmlat_windows.h"

static __always_inline void mw_contention(void *lock, bool acquired)
{
	u64 now;

	if (!READ_ONCE(mw_enabled) || in_nmi())
		return;
	now = local_clock();
	mw_spin_wait(lock, now, acquired);
	mw_sleep_wait(lock, now, acquired);
}

void notrace mw_contention_begin(void *data, void *lock, unsigned int flags)
{
	mw_contention(lock, false);
}

void notrace mw_contention_end(void *data, void *lock, int ret)
{
	mw_contention(lock, true);
}
