// SPDX-License-Identifier: GPL-2.0
/*
 * Registers and memory of the vCPU whose hook is running.  x86-64 per-CPU
 * variables are offsets into the per-CPU area that the kernel's GS base
 * points at; the hooked functions all run in kernel mode, after swapgs.
 */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include <qemu-plugin.h>

#include "guest.h"
#include "kconst.h"
#include "symbols.h"

static const char * const reg_name[R_NR] = {
	[R_RAX] = "rax", [R_RSP] = "rsp", [R_RBP] = "rbp",
	[R_RDI] = "rdi", [R_RSI] = "rsi", [R_GS_BASE] = "gs_base",
};

static struct qemu_plugin_register *reg_handle[R_NR];
static u64 current_off, preempt_off;

/* Per-thread buffers: MTTCG runs each vCPU on a thread of its own. */
static __thread GByteArray *reg_buf, *mem_buf;

bool guest_regs_init(void)
{
	g_autoptr(GArray) regs = qemu_plugin_get_registers();
	unsigned int i;
	int r;

	for (i = 0; i < regs->len; i++) {
		qemu_plugin_reg_descriptor *d =
			&g_array_index(regs, qemu_plugin_reg_descriptor, i);

		for (r = 0; r < R_NR; r++)
			if (!strcmp(d->name, reg_name[r]))
				reg_handle[r] = d->handle;
	}
	for (r = 0; r < R_NR; r++) {
		if (!reg_handle[r]) {
			fprintf(stderr, "mmlat plugin: the vCPU has no register %s\n",
				reg_name[r]);
			return false;
		}
	}
	return true;
}

/*
 * A per-CPU variable named by itself (6.1, and again from 6.15 on), or a
 * member of pcpu_hot (6.2 to 6.14) at the offset offsets.c computed.
 */
static bool percpu_var(const char *name, s64 hot_member, u64 *off)
{
	u64 hot = symbol_addr("pcpu_hot");

	*off = symbol_addr(name);
	if (*off)
		return true;
	if (hot && hot_member >= 0) {
		*off = hot + hot_member;
		return true;
	}
	fprintf(stderr, "mmlat plugin: System.map has neither %s nor pcpu_hot\n",
		name);
	return false;
}

bool guest_percpu_init(void)
{
	return percpu_var("current_task", kconst[K_PCPU_HOT_CURRENT],
			  &current_off) &&
	       percpu_var("__preempt_count", kconst[K_PCPU_HOT_PREEMPT],
			  &preempt_off);
}

u64 guest_reg(enum guest_reg r)
{
	u64 v = 0;
	int n;

	if (!reg_buf)
		reg_buf = g_byte_array_new();
	g_byte_array_set_size(reg_buf, 0);
	n = qemu_plugin_read_register(reg_handle[r], reg_buf);
	/* x86 is little-endian, as is every host this runs on */
	if (n > 0)
		memcpy(&v, reg_buf->data, MIN((size_t)n, sizeof(v)));
	return v;
}

bool guest_read(u64 addr, void *buf, size_t len)
{
	if (!mem_buf)
		mem_buf = g_byte_array_new();
	if (!qemu_plugin_read_memory_vaddr(addr, mem_buf, len))
		return false;
	memcpy(buf, mem_buf->data, len);
	return true;
}

u64 guest_current(void)
{
	u64 task;

	if (!guest_read_u64(guest_reg(R_GS_BASE) + current_off, &task))
		return 0;
	return task;
}

bool guest_preempt_count(u32 *count)
{
	return guest_read(guest_reg(R_GS_BASE) + preempt_off, count,
			  sizeof(*count));
}

bool guest_in_nmi(void)
{
	u32 count;

	return guest_preempt_count(&count) && count & kconst[K_NMI_MASK];
}

bool guest_in_task(void)
{
	u32 count;

	return guest_preempt_count(&count) &&
	       !(count & kconst[K_IN_TASK_MASK]);
}

bool guest_task_stack(u64 *lo, u64 *hi)
{
	u64 task = guest_current();

	if (!task || !guest_read_u64(task + kconst[K_TASK_STACK], lo))
		return false;
	*hi = *lo + kconst[K_THREAD_SIZE] - 2 * sizeof(u64);
	return true;
}
