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

/*
 * What one hook has read so far: registers and the per-CPU variables do
 * not change while it runs, and every guest read is a page walk.
 */
static __thread struct {
	u64 serial;
	unsigned int cpu;
	u32 regs_valid;
	u64 regs[R_NR];
	bool percpu_valid;
	u64 current;
	u32 preempt_count;
} hook;

/*
 * Task stacks are THREAD_SIZE-aligned (the page allocator's order, or
 * THREAD_ALIGN with VMAP_STACK): a stack pointer's aligned base is looked
 * up among the stacks seen as some current task's before.  A CPU on a
 * task's stack runs that task, so a known base needs no read of current;
 * an unknown one (an interrupt stack, a new task) is checked against
 * current->stack.  Freed stacks come back only as stacks.
 */
static GHashTable *task_stacks;

/*
 * NMI context per vCPU, followed by hooks rather than read from the
 * preempt count at every hook: in_nmi() holds from irqentry_nmi_enter()'s
 * __nmi_enter() to irqentry_nmi_exit()'s __nmi_exit(), the one pair that
 * enters NMI context (x86: NMI, int3 and other exceptions from kernel
 * mode).  Inside irqentry_nmi_exit() the one hooked call is its
 * trace_hardirqs_on_prepare(), still in NMI: the exit takes effect at the
 * first hook not called from it.
 */
struct nmi_state {
	unsigned int depth;
	bool exiting;
};

static struct nmi_state *nmi;
static u64 nmi_exit_start, nmi_exit_end;

void guest_hook_begin(unsigned int cpu)
{
	hook.serial++;
	hook.cpu = cpu;
	hook.regs_valid = 0;
	hook.percpu_valid = false;
}

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

bool guest_percpu_init(unsigned int nr_cpus)
{
	task_stacks = g_hash_table_new(g_int64_hash, g_int64_equal);
	nmi = g_new0(struct nmi_state, nr_cpus);
	if (!symbol_range("irqentry_nmi_exit", &nmi_exit_start,
			  &nmi_exit_end) || !symbol_addr("irqentry_nmi_enter")) {
		fprintf(stderr, "mmlat plugin: System.map has no irqentry_nmi_enter/exit\n");
		return false;
	}
	return percpu_var("current_task", kconst[K_PCPU_HOT_CURRENT],
			  &current_off) &&
	       percpu_var("__preempt_count", kconst[K_PCPU_HOT_PREEMPT],
			  &preempt_off);
}

u64 guest_reg(enum guest_reg r)
{
	u64 v = 0;
	int n;

	if (hook.regs_valid & 1U << r)
		return hook.regs[r];
	if (!reg_buf)
		reg_buf = g_byte_array_new();
	g_byte_array_set_size(reg_buf, 0);
	n = qemu_plugin_read_register(reg_handle[r], reg_buf);
	/* x86 is little-endian, as is every host this runs on */
	if (n > 0)
		memcpy(&v, reg_buf->data, MIN((size_t)n, sizeof(v)));
	hook.regs[r] = v;
	hook.regs_valid |= 1U << r;
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

u64 guest_hook_serial(void)
{
	return hook.serial;
}

/*
 * The current task and the preempt count, in one read where they are
 * neighbours (6.1: 64 bytes apart).
 */
#define PERCPU_SPAN	256

static bool read_percpu(void)
{
	u64 base = guest_reg(R_GS_BASE), lo = MIN(current_off, preempt_off);
	u64 span = MAX(current_off, preempt_off) + sizeof(u64) - lo;
	u8 buf[PERCPU_SPAN];

	if (hook.percpu_valid)
		return true;
	if (span <= sizeof(buf)) {
		if (!guest_read(base + lo, buf, span))
			return false;
		memcpy(&hook.current, buf + current_off - lo, sizeof(u64));
		memcpy(&hook.preempt_count, buf + preempt_off - lo,
		       sizeof(u32));
	} else if (!guest_read_u64(base + current_off, &hook.current) ||
		   !guest_read(base + preempt_off, &hook.preempt_count,
			       sizeof(u32))) {
		return false;
	}
	hook.percpu_valid = true;
	return true;
}

u64 guest_current(void)
{
	return read_percpu() ? hook.current : 0;
}

bool guest_preempt_count(u32 *count)
{
	if (!read_percpu())
		return false;
	*count = hook.preempt_count;
	return true;
}

/* An exit pending since irqentry_nmi_exit() began, unless called from it. */
static void nmi_settle(struct nmi_state *n, bool from_exit)
{
	if (n->exiting && !from_exit) {
		n->exiting = false;
		if (n->depth)
			n->depth--;
	}
}

void guest_nmi_enter(void)
{
	struct nmi_state *n = &nmi[hook.cpu];

	nmi_settle(n, false);
	n->depth++;
}

void guest_nmi_exit(void)
{
	struct nmi_state *n = &nmi[hook.cpu];

	nmi_settle(n, false);
	n->exiting = true;
}

bool guest_in_nmi(void)
{
	struct nmi_state *n = &nmi[hook.cpu];
	u64 ret;

	if (n->exiting) {
		ret = 0;
		guest_read_u64(guest_reg(R_RSP), &ret);
		nmi_settle(n, ret >= nmi_exit_start && ret < nmi_exit_end);
	}
	return n->depth;
}

bool guest_in_task(void)
{
	u32 count;

	return guest_preempt_count(&count) &&
	       !(count & kconst[K_IN_TASK_MASK]);
}

bool guest_task_stack(u64 *lo, u64 *hi)
{
	u64 size = kconst[K_THREAD_SIZE], rsp = guest_reg(R_RSP);
	u64 base = rsp & ~(size - 1), task = 0, *key;

	if (g_hash_table_contains(task_stacks, &base)) {
		*lo = base;
	} else {
		task = guest_current();
		if (!task || !guest_read_u64(task + kconst[K_TASK_STACK], lo))
			return false;
		if (*lo == base) {
			key = g_new(u64, 1);
			*key = base;
			g_hash_table_add(task_stacks, key);
		}
	}
	*hi = *lo + size - 2 * sizeof(u64);
	return true;
}
