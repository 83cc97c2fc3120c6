/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Constants of the guest kernel's build: struct offsets and sizes that the
 * plugin needs to read guest memory (the task's stack, the per-CPU preempt
 * count, lock identity).  plugin/kernel/offsets.c computes them from the
 * tree's own headers, compiled against the kernel's object directory
 * (plugin/build.sh offsets VARIANT), so no debug information is needed.
 * The file holds "NAME VALUE" lines.
 */
#ifndef MMLAT_PLUGIN_KCONST_H
#define MMLAT_PLUGIN_KCONST_H

#include <stdbool.h>
#include "types.h"

enum kconst {
	K_THREAD_SIZE,
	K_TASK_STACK,		/* offsetof(struct task_struct, stack) */
	K_TASK_NVCSW,
	K_TASK_NIVCSW,
	K_IN_TASK_MASK,		/* NMI, hardirq and softirq-serving bits */
	K_PT_REGS_IP,
	K_PT_REGS_BP,
	K_PT_REGS_CS,
	/* per-CPU variables inside pcpu_hot (6.2 on), else -1 */
	K_PCPU_HOT_CURRENT,
	K_PCPU_HOT_PREEMPT,
	/* where a split PTE lock lives, or PTL_OFFSET -1 */
	K_PTL_OFFSET,
	K_PAGE_SIZE_OF,		/* sizeof(struct page) */
	K_PAGE_FLAGS,
	K_SPARSEMEM_VMEMMAP,
	K_SPARSEMEM_EXTREME,
	K_SECTIONS_PGSHIFT,
	K_SECTIONS_MASK,
	K_SECTIONS_PER_ROOT,
	K_MEM_SECTION_SIZE,
	K_MEM_SECTION_MAP,
	K_SECTION_MAP_MASK,
	K_SECTION_HAS_MEM_MAP,
	K_PFN_SECTION_SHIFT,
	/* lock modes: MW_SPIN, MW_MUTEX, MW_RWSEM_W, else none */
	K_I_MMAP_MODE,
	K_AS_I_MMAP,
	K_AS_HOST,
	K_INODE_I_MAPPING,
	K_ANON_VMA_MODE,
	K_ANON_VMA_LOCK,
	K_ANON_VMA_ROOT,
	/* the hrtimer sleepers of real-time tasks (wakeups.c) */
	K_HRTIMER_SOFTEXPIRES,	/* offsetof(struct hrtimer, _softexpires) */
	K_SLEEPER_TASK,		/* the task of a struct hrtimer_sleeper */
	K_TASK_PRIO,
	K_TASK_PID,
	K_TASK_COMM,
	K_MAX_RT_PRIO,
	K_NR
};

extern s64 kconst[K_NR];

/* Load the file; false with a message on stderr if a value is missing. */
bool kconst_load(const char *path);

#endif
