/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Split PTE locks, as both guest modules see them on the kernels they
 * build for (6.1, 6.12 and 7.3). guest/initramfs.sh copies this header
 * beside each module's source.
 *
 * 6.1 says whether PTE locks are split with USE_SPLIT_PTE_PTLOCKS (NR_CPUS
 * against SPLIT_PTLOCK_CPUS); 6.12 and 7.3 make it CONFIG_SPLIT_PTE_PTLOCKS
 * and drop the macro.
 */
#ifndef MMLAT_PTL_H
#define MMLAT_PTL_H

#include <linux/mm_types.h>

#if defined(CONFIG_SPLIT_PTE_PTLOCKS)
#define MMLAT_SPLIT_PTL		1
#elif defined(USE_SPLIT_PTE_PTLOCKS)
#define MMLAT_SPLIT_PTL		USE_SPLIT_PTE_PTLOCKS
#else
#define MMLAT_SPLIT_PTL		0
#endif

#endif /* MMLAT_PTL_H */
