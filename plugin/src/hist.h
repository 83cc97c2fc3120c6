/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest modules' histogram buckets (guest/modules/include/mmlat_hist.h),
 * the one definition, so that the analysis reads the plugin's dumps as it
 * reads the module's.
 */
#ifndef MMLAT_PLUGIN_HIST_H
#define MMLAT_PLUGIN_HIST_H

#include "types.h"

static inline unsigned int fls64(u64 x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

#include "mmlat_hist.h"

#endif
