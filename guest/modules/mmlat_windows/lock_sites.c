// SPDX-License-Identifier: GPL-2.0
/*
 * The lock call sites: per CPU a table of MW_MAX_SITES sites, keyed by the
 * call site's return address, the lock kind and how it was taken, each
 * with the histogram of the holds taken there and the time spent waiting
 * for them.  A hold from a site the full table cannot key is counted in
 * its CPU's site_overflow.  Here are the tables; mmlat_records.h finds a
 * site in one and counts a hold there.
 */
#include <linux/vmalloc.h>

#include "mmlat_windows.h"

static struct mw_lock_site *lock_sites;	/* [cpu][MW_MAX_SITES] */

struct mw_lock_site *mw_sites(int cpu)
{
	return &lock_sites[(size_t)cpu * MW_MAX_SITES];
}

struct mw_lock_site *mw_site_of(int cpu, unsigned long ret, int kind,
				int mode)
{
	struct mw_lock_site *s = mw_site_find(mw_sites(cpu), ret, kind, mode);

	if (!s)
		this_cpu_inc(mw_lock_cpu.site_overflow);
	return s;
}

/* A hold of length d, and how long its acquisition waited if it did. */
void mw_site_add(struct mw_lock_site *st, u64 d, u64 wait, bool waited)
{
	mw_site_hold(st, d);
	if (waited) {
		st->waits++;
		st->wait_total += wait;
		if (wait > st->wait_max)
			st->wait_max = wait;
	}
}

int mw_sites_init(void)
{
	lock_sites = vzalloc(array3_size(nr_cpu_ids, MW_MAX_SITES,
					 sizeof(*lock_sites)));
	return lock_sites ? 0 : -ENOMEM;
}

void mw_sites_free(void)
{
	vfree(lock_sites);
}
