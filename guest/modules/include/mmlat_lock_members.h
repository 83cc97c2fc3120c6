/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the locks the window module tells apart are in the kernel it is
 * built against, one definition for the module (lock_class.c) and for
 * the QEMU plugin's constants (plugin/kernel/offsets.c): the i_mmap and
 * anon_vma locks are a spinlock before the series, a mutex after it, an
 * rwsem in 6.1, and a split PTE lock lives in struct page, or from 6.5 on
 * in the struct ptdesc that overlays the page table's struct page (so the
 * lock's offset in it is its offset in the page).  Their Kbuild reads the
 * headers and says which with MMLAT_I_MMAP_*, MMLAT_ANON_VMA_* and
 * MMLAT_PTDESC.
 *
 * MW_*_MODE is how the lock is taken (mmlat_records.h's MW_SPIN...), or
 * MW_MODE_NONE; MW_*_MEMBER, where defined, is the member that is the
 * lock; MW_PTL_HOLDER is the tag of the struct that holds ptl.
 */
#ifndef MMLAT_LOCK_MEMBERS_H
#define MMLAT_LOCK_MEMBERS_H

#include "mmlat_records.h"

#if defined(MMLAT_I_MMAP_SPIN)
#define MW_I_MMAP_MODE		MW_SPIN
#define MW_I_MMAP_MEMBER	i_mmap_lock
#elif defined(MMLAT_I_MMAP_MUTEX)
#define MW_I_MMAP_MODE		MW_MUTEX
#define MW_I_MMAP_MEMBER	i_mmap_mutex
#elif defined(MMLAT_I_MMAP_RWSEM)
#define MW_I_MMAP_MODE		MW_RWSEM_W
#define MW_I_MMAP_MEMBER	i_mmap_rwsem
#else
#define MW_I_MMAP_MODE		MW_MODE_NONE
#endif

#if defined(MMLAT_ANON_VMA_SPIN)
#define MW_ANON_VMA_MODE	MW_SPIN
#define MW_ANON_VMA_MEMBER	lock
#elif defined(MMLAT_ANON_VMA_MUTEX)
#define MW_ANON_VMA_MODE	MW_MUTEX
#define MW_ANON_VMA_MEMBER	mutex
#elif defined(MMLAT_ANON_VMA_RWSEM)
#define MW_ANON_VMA_MODE	MW_RWSEM_W
#define MW_ANON_VMA_MEMBER	rwsem
#else
#define MW_ANON_VMA_MODE	MW_MODE_NONE
#endif

#ifdef MMLAT_PTDESC
#define MW_PTL_HOLDER		ptdesc
#else
#define MW_PTL_HOLDER		page
#endif

#endif /* MMLAT_LOCK_MEMBERS_H */
