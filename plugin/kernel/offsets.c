// SPDX-License-Identifier: GPL-2.0
/*
 * The constants the mmlat QEMU plugin needs to read a guest kernel's
 * memory, computed by that kernel's own headers: compiled to assembly
 * against its object directory (plugin/build.sh offsets VARIANT), never
 * linked or loaded, the "->NAME VALUE" markers of kbuild.h's DEFINE()
 * read back from the .s as asm-offsets are.
 *
 * What the headers declare comes from Kbuild: the lock kinds' types
 * (MMLAT_I_MMAP_* and MMLAT_ANON_VMA_*: spinlock, mutex or rwsem) and
 * MMLAT_PTDESC, which mmlat_lock_members.h turns into members and modes
 * as it does for the guest module, and MMLAT_PCPU_HOT.
 */
#include <linux/kbuild.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/mm_types.h>
#include <linux/mmzone.h>
#include <linux/preempt.h>
#include <linux/rmap.h>
#include <linux/sched.h>
#include <linux/sched/prio.h>
#include <asm/ptrace.h>

#include "mmlat_lock_members.h"
#include "mmlat_ptl.h"

/* main(), as the kernel's asm-offsets.c: compiled, never run */
int main(void)
{
	DEFINE(THREAD_SIZE, THREAD_SIZE);
	OFFSET(TASK_STACK, task_struct, stack);
	OFFSET(TASK_NVCSW, task_struct, nvcsw);
	OFFSET(TASK_NIVCSW, task_struct, nivcsw);
	/* in_task(): no NMI, no hardirq, not serving a softirq */
	DEFINE(IN_TASK_MASK, NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET);
	OFFSET(PT_REGS_IP, pt_regs, ip);
	OFFSET(PT_REGS_BP, pt_regs, bp);
	OFFSET(PT_REGS_CS, pt_regs, cs);
/*
 * x86's hot per-CPU variables (current task, preempt count) live inside
 * struct pcpu_hot in some versions (6.2 on; Kbuild tells), on their own
 * in others.
 */
#ifdef MMLAT_PCPU_HOT
	OFFSET(PCPU_HOT_CURRENT, pcpu_hot, current_task);
	OFFSET(PCPU_HOT_PREEMPT, pcpu_hot, preempt_count);
#else
	DEFINE(PCPU_HOT_CURRENT, -1);
	DEFINE(PCPU_HOT_PREEMPT, -1);
#endif

#if MMLAT_SPLIT_PTL && !ALLOC_SPLIT_PTLOCKS
	OFFSET(PTL_OFFSET, MW_PTL_HOLDER, ptl);
#else
	DEFINE(PTL_OFFSET, -1);
#endif
	DEFINE(PAGE_SIZE_OF, sizeof(struct page));
	OFFSET(PAGE_FLAGS, page, flags);
#ifdef CONFIG_SPARSEMEM_VMEMMAP
	DEFINE(SPARSEMEM_VMEMMAP, 1);
#else
	DEFINE(SPARSEMEM_VMEMMAP, 0);
#endif
#ifdef CONFIG_SPARSEMEM_EXTREME
	DEFINE(SPARSEMEM_EXTREME, 1);
#else
	DEFINE(SPARSEMEM_EXTREME, 0);
#endif
	DEFINE(SECTIONS_PGSHIFT, SECTIONS_PGSHIFT);
	DEFINE(SECTIONS_MASK, SECTIONS_MASK);
	DEFINE(SECTIONS_PER_ROOT, SECTIONS_PER_ROOT);
	DEFINE(MEM_SECTION_SIZE, sizeof(struct mem_section));
	OFFSET(MEM_SECTION_MAP, mem_section, section_mem_map);
	DEFINE(SECTION_MAP_MASK, SECTION_MAP_MASK);
	DEFINE(SECTION_HAS_MEM_MAP, SECTION_HAS_MEM_MAP);
	DEFINE(PFN_SECTION_SHIFT, PFN_SECTION_SHIFT);

	DEFINE(I_MMAP_MODE, MW_I_MMAP_MODE);
#ifdef MW_I_MMAP_MEMBER
	OFFSET(AS_I_MMAP, address_space, MW_I_MMAP_MEMBER);
#else
	DEFINE(AS_I_MMAP, -1);
#endif
	OFFSET(AS_HOST, address_space, host);
	OFFSET(INODE_I_MAPPING, inode, i_mapping);
	DEFINE(ANON_VMA_MODE, MW_ANON_VMA_MODE);
#ifdef MW_ANON_VMA_MEMBER
	OFFSET(ANON_VMA_LOCK, anon_vma, MW_ANON_VMA_MEMBER);
#else
	DEFINE(ANON_VMA_LOCK, -1);
#endif
	OFFSET(ANON_VMA_ROOT, anon_vma, root);

	/* cyclictest's sleeps: the timer, its task and whether it is RT */
	OFFSET(HRTIMER_SOFTEXPIRES, hrtimer, _softexpires);
	DEFINE(SLEEPER_TASK, offsetof(struct hrtimer_sleeper, task) -
			     offsetof(struct hrtimer_sleeper, timer));
	OFFSET(TASK_PRIO, task_struct, prio);
	OFFSET(TASK_PID, task_struct, pid);
	OFFSET(TASK_COMM, task_struct, comm);
	DEFINE(MAX_RT_PRIO, MAX_RT_PRIO);
	return 0;
}
