/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest window module's records (guest/modules/include/mmlat_records.h),
 * the one definition, so that the plugin counts windows, keyed windows
 * and lock holds as the module does and dumps them alike.  It asks for
 * one thing of the kernel's besides the histogram's (hist.h): hash_64(),
 * so that both put a key in the same slot of their tables.
 */
#ifndef MMLAT_PLUGIN_RECORDS_H
#define MMLAT_PLUGIN_RECORDS_H

#include <string.h>

#include "hist.h"

/* glibc's <sys/cdefs.h> gives the kernel's __always_inline; else plain */
#ifndef __always_inline
#define __always_inline	inline
#endif

/* The kernel's hash_64() on a 64-bit machine: Fibonacci hashing. */
static inline u32 hash_64(u64 val, unsigned int bits)
{
	return val * 0x61c8864680b583ebULL >> (64 - bits);
}

#include "mmlat_records.h"

#endif
