// SPDX-License-Identifier: GPL-2.0
/* The guest kernel's constants, from plugin/kernel/offsets.c's output. */
#include <stdio.h>
#include <string.h>

#include "kconst.h"

s64 kconst[K_NR];

static const char * const kconst_name[K_NR] = {
	[K_THREAD_SIZE] = "THREAD_SIZE",
	[K_TASK_STACK] = "TASK_STACK",
	[K_TASK_NVCSW] = "TASK_NVCSW",
	[K_TASK_NIVCSW] = "TASK_NIVCSW",
	[K_IN_TASK_MASK] = "IN_TASK_MASK",
	[K_PT_REGS_IP] = "PT_REGS_IP",
	[K_PT_REGS_BP] = "PT_REGS_BP",
	[K_PT_REGS_CS] = "PT_REGS_CS",
	[K_PCPU_HOT_CURRENT] = "PCPU_HOT_CURRENT",
	[K_PCPU_HOT_PREEMPT] = "PCPU_HOT_PREEMPT",
	[K_PTL_OFFSET] = "PTL_OFFSET",
	[K_PAGE_SIZE_OF] = "PAGE_SIZE_OF",
	[K_PAGE_FLAGS] = "PAGE_FLAGS",
	[K_SPARSEMEM_VMEMMAP] = "SPARSEMEM_VMEMMAP",
	[K_SPARSEMEM_EXTREME] = "SPARSEMEM_EXTREME",
	[K_SECTIONS_PGSHIFT] = "SECTIONS_PGSHIFT",
	[K_SECTIONS_MASK] = "SECTIONS_MASK",
	[K_SECTIONS_PER_ROOT] = "SECTIONS_PER_ROOT",
	[K_MEM_SECTION_SIZE] = "MEM_SECTION_SIZE",
	[K_MEM_SECTION_MAP] = "MEM_SECTION_MAP",
	[K_SECTION_MAP_MASK] = "SECTION_MAP_MASK",
	[K_SECTION_HAS_MEM_MAP] = "SECTION_HAS_MEM_MAP",
	[K_PFN_SECTION_SHIFT] = "PFN_SECTION_SHIFT",
	[K_I_MMAP_MODE] = "I_MMAP_MODE",
	[K_AS_I_MMAP] = "AS_I_MMAP",
	[K_AS_HOST] = "AS_HOST",
	[K_INODE_I_MAPPING] = "INODE_I_MAPPING",
	[K_ANON_VMA_MODE] = "ANON_VMA_MODE",
	[K_ANON_VMA_LOCK] = "ANON_VMA_LOCK",
	[K_ANON_VMA_ROOT] = "ANON_VMA_ROOT",
	[K_HRTIMER_SOFTEXPIRES] = "HRTIMER_SOFTEXPIRES",
	[K_SLEEPER_TASK] = "SLEEPER_TASK",
	[K_TASK_PRIO] = "TASK_PRIO",
	[K_TASK_PID] = "TASK_PID",
	[K_TASK_COMM] = "TASK_COMM",
	[K_MAX_RT_PRIO] = "MAX_RT_PRIO",
};

bool kconst_load(const char *path)
{
	FILE *f = fopen(path, "r");
	bool seen[K_NR] = { false };
	char name[64];
	s64 v;
	int i;

	if (!f) {
		fprintf(stderr, "mmlat plugin: cannot open %s\n", path);
		return false;
	}
	while (fscanf(f, "%63s %lli", name, &v) == 2) {
		for (i = 0; i < K_NR; i++) {
			if (!strcmp(name, kconst_name[i])) {
				kconst[i] = v;
				seen[i] = true;
			}
		}
	}
	fclose(f);
	for (i = 0; i < K_NR; i++) {
		if (!seen[i]) {
			fprintf(stderr,
				"mmlat plugin: %s has no %s: rebuild it with plugin/build.sh offsets\n",
				path, kconst_name[i]);
			return false;
		}
	}
	return true;
}
