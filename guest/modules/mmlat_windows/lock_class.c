// SPDX-License-Identifier: GPL-2.0
/*
 * What kind of lock a lock call takes, checked at the lock's address: a
 * spinlock inside a struct page of the memory map is a split PTE lock, a
 * lock at the i_mmap member of an address_space whose host points back is
 * an i_mmap lock, a lock at the lock member of an anon_vma that is its own
 * root is an anon_vma lock.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/rmap.h>
#include <linux/uaccess.h>

#include "mmlat_windows.h"
#include "mmlat_ptl.h"

const char * const mw_mode_name[] = MW_MODE_NAMES;
const char * const mw_lock_name[MW_LOCK_KINDS] = MW_LOCK_NAMES;

static const int lock_mode[MW_LOCK_KINDS] = {
	MW_SPIN, MW_I_MMAP_MODE, MW_ANON_VMA_MODE
};

/*
 * Whether the PTE lock check below tells a PTE lock from other spinlocks:
 * only with split PTE locks inside the struct page.
 */
bool mw_ptl_filtered(void)
{
	return MMLAT_SPLIT_PTL && !ALLOC_SPLIT_PTLOCKS;
}

/*
 * A split PTE lock lives in its page table's struct page: the lock is a
 * PTE lock when lock - offsetof(struct page, ptl) is a struct page of the
 * memory map (pfn round trip; from 6.5 on ptl is declared in struct
 * ptdesc only).  A split PMD lock lives at the same place of its page
 * table's struct page and passes too: with THP off the lock users take
 * one only in mremap's whole-PMD moves and 7.3's empty page table
 * reclaim (MADV_DONTNEED).
 * Without split PTE locks (or with allocated ones, under lockdep) every
 * spinlock taken in a PTE user that is not an i_mmap or anon_vma lock
 * counts.
 */
static inline bool mw_is_pte_lock(void *lock)
{
#if MMLAT_SPLIT_PTL && !ALLOC_SPLIT_PTLOCKS
	struct page *pg = (struct page *)((unsigned long)lock -
					  offsetof(struct MW_PTL_HOLDER, ptl));
	unsigned long pfn;
#if defined(CONFIG_SPARSEMEM) && !defined(CONFIG_SPARSEMEM_VMEMMAP)
	struct mem_section *ms;

	/* classic sparse: the memory map is in the direct map */
	if (!virt_addr_valid(pg))
		return false;
	ms = __nr_to_section(page_to_section(pg));
	if (!ms || !valid_section(ms))
		return false;
	pfn = pg - __section_mem_map_addr(ms);
#else
	pfn = page_to_pfn(pg);
#endif
	return pfn_valid(pfn) && pfn_to_page(pfn) == pg;
#else
	return true;
#endif
}

/* An address_space's i_mmap lock: its host's i_mapping points back. */
static bool mw_is_i_mmap_lock(void *lock)
{
#ifdef MW_I_MMAP_MEMBER
	struct address_space *mapping =
		container_of(lock, struct address_space, MW_I_MMAP_MEMBER);
	struct address_space *back;
	struct inode *host;

	return !get_kernel_nofault(host, &mapping->host) && host &&
	       !get_kernel_nofault(back, &host->i_mapping) && back == mapping;
#else
	return false;
#endif
}

/* An anon_vma lock: the lock taken is always the root anon_vma's. */
static bool mw_is_anon_vma_lock(void *lock)
{
#ifdef MW_ANON_VMA_MEMBER
	struct anon_vma *av = container_of(lock, struct anon_vma,
					   MW_ANON_VMA_MEMBER);
	struct anon_vma *root;

	return !get_kernel_nofault(root, &av->root) && root == av;
#else
	return false;
#endif
}

/*
 * The kind of lock a lock call of this mode takes, or -1.  The PTE lock,
 * by far the most taken, first: its check is arithmetic, the others read
 * memory through get_kernel_nofault().
 */
int mw_lock_kind(void *lock, int mode)
{
	int family = mw_mode_family(mode);

	if (family == MW_SPIN && mw_is_pte_lock(lock))
		return MW_PTE;
	if (lock_mode[MW_I_MMAP] == family && mw_is_i_mmap_lock(lock))
		return MW_I_MMAP;
	if (lock_mode[MW_ANON_VMA] == family && mw_is_anon_vma_lock(lock))
		return MW_ANON_VMA;
	return -1;
}
