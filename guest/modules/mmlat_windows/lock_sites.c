// SPDX-License-Identifier: GPL-2.0
/*
 * The lock call sites: per CPU a table of MW_MAX_SITES sites, keyed by the
 * call site's return address, the lock kind and how it was taken, each
 * with the histogram of the holds taken there and the time spent waiting
 * for them.  A hold from a site the full table cannot key is counted in
 * its CPU's site_overflow.
 */
#include <linux/hash.h>
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
	struct mw_lock_site *t = mw_sites(cpu);
	unsigned long h = hash_long(ret ^ (kind << 4 | mode), 32);
	unsigned int i;

	for (i = 0; i < MW_PROBE_LEN; i++) {
		struct mw_lock_site *s = &t[(h + i) & (MW_MAX_SITES - 1)];

		if (s->ret == ret && s->kind == kind && s->mode == mode)
			return s;
		if (!s->ret) {
			s->ret = ret;
			s->kind = kind;
			s->mode = mode;
			return s;
		}
	}
	this_cpu_inc(mw_lock_cpu.site_overflow);
	return NULL;
}

void mw_site_add(struct mw_lock_site *st, u64 d, u64 wait, bool waited)
{
	st->n++;
	st->total += d;
	if (d > st->max)
		st->max = d;
	st->hist[mmlat_hist_bucket(d, MMLAT_HIST_SUB_BITS)]++;
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
