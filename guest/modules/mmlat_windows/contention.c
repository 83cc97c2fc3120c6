// SPDX-License-Identifier: GPL-2.0
/*
 * Waits: lock:contention_begin/end, which 6.1, 6.12 and 7.3 fire in the
 * spinlock, mutex and rwsem slow paths, mark the open hold of that lock on
 * this CPU or task; a contended hold starts when its wait ended, and its
 * site counts the wait apart.
 */
#include <linux/sched/clock.h>

#include "mmlat_windows.h"

void notrace mw_contention_begin(void *data, void *lock, unsigned int flags)
{
	u64 now;

	if (!READ_ONCE(mw_enabled) || in_nmi())
		return;
	now = local_clock();
	mw_spin_wait_begin(lock, now);
	mw_sleep_wait_begin(lock, now);
}

void notrace mw_contention_end(void *data, void *lock, int ret)
{
	u64 now;

	if (!READ_ONCE(mw_enabled) || in_nmi())
		return;
	now = local_clock();
	mw_spin_wait_end(lock, now);
	mw_sleep_wait_end(lock, now);
}
