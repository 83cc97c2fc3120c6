/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest as a hook sees it: the current vCPU's registers and its
 * kernel's memory, read by QEMU between two guest instructions (plugin API
 * v4: qemu_plugin_read_register(), qemu_plugin_read_memory_vaddr()).
 * Nothing here runs guest code, so none of it costs the guest time.
 */
#ifndef MMLAT_PLUGIN_GUEST_H
#define MMLAT_PLUGIN_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include "types.h"

enum guest_reg { R_RAX, R_RSP, R_RBP, R_RDI, R_RSI, R_GS_BASE, R_NR };

/* Find the register handles (from a vCPU init callback); false if not. */
bool guest_regs_init(void);

/* Find the per-CPU variables in System.map; false with a message. */
bool guest_percpu_init(unsigned int nr_cpus);

/*
 * A hook of this vCPU begins: what the previous one read (registers, per-
 * CPU variables) is stale.
 */
void guest_hook_begin(unsigned int cpu);

/* Which hook is running (per thread): what a hook may cache is keyed by it. */
u64 guest_hook_serial(void);

u64 guest_reg(enum guest_reg r);

bool guest_read(u64 addr, void *buf, size_t len);

static inline bool guest_read_u64(u64 addr, u64 *v)
{
	return guest_read(addr, v, sizeof(*v));
}

/* The running task (x86's per-CPU current_task), 0 if unreadable. */
u64 guest_current(void);

/* The per-CPU preempt count, false if unreadable. */
bool guest_preempt_count(u32 *count);

/* in_task() of the running context, from the preempt count. */
bool guest_in_task(void);

/* in_nmi(): followed by the hooks on irqentry_nmi_enter()/_exit(). */
bool guest_in_nmi(void);
void guest_nmi_enter(void);
void guest_nmi_exit(void);

/*
 * The current task's stack as the module bounds a frame walk:
 * [task->stack, task->stack + THREAD_SIZE - 2 words].
 */
bool guest_task_stack(u64 *lo, u64 *hi);

/* A kernel text or data address (the upper half). */
static inline bool guest_kernel_addr(u64 addr)
{
	return addr >= 0xffff800000000000ULL;
}

#endif
