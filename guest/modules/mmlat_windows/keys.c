// SPDX-License-Identifier: GPL-2.0
/*
 * The windows of at least thresh_us, keyed by their stack at open and the
 * lock whose acquisition opened them: per kind and CPU a table of
 * table_size entries, linear probing over MW_PROBE_LEN slots, each with
 * count, total, exact max and a coarse histogram.  A window the full table
 * cannot key is counted in the kind's overflow; it stays in the kind's
 * histogram.  The host merges equal keys of different CPUs.  Here are
 * the tables; mmlat_records.h counts a window in one.
 */
#include <linux/moduleparam.h>
#include <linux/vmalloc.h>

#include "mmlat_windows.h"

unsigned int mw_table_size = 4096;
module_param_named(table_size, mw_table_size, uint, 0444);
MODULE_PARM_DESC(table_size, "keyed table entries per kind and CPU (power of 2)");

static struct mw_win_key *win_table;	/* [cpu][kind][mw_table_size] */

struct mw_win_key *mw_keys(int cpu, int kind)
{
	return &win_table[(size_t)(cpu * MW_KINDS + kind) * mw_table_size];
}

/* Out of line: only windows of at least thresh_us come here. */
void mw_key_add(struct mw_win_stats *st, int cpu, int kind,
		const struct mw_win_start *s, u64 d)
{
	mw_win_key_add(st, mw_keys(cpu, kind), mw_table_size, s, d);
}

int mw_keys_init(void)
{
	if (!mw_table_size || mw_table_size & (mw_table_size - 1))
		return -EINVAL;
	win_table = vzalloc(array3_size(nr_cpu_ids * MW_KINDS, mw_table_size,
					sizeof(*win_table)));
	return win_table ? 0 : -ENOMEM;
}

void mw_keys_free(void)
{
	vfree(win_table);
}
