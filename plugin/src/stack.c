// SPDX-License-Identifier: GPL-2.0
/* Guest frame-pointer walks at a hook (a function's entry). */
#include <glib.h>

#include "guest.h"
#include "kconst.h"
#include "stack.h"

/* probe frames the guest module passes before giving up on the opener */
#define OPEN_SKIP	8
/*
 * The stack above rsp, read once per hook in one piece: the hook's return
 * address, its caller's and a 6-frame walk seldom leave it, and each
 * separate read is a page walk of its own.  It ends at the top of the
 * task's stack, or elsewhere (an interrupt stack) at the end of rsp's
 * page, never in a guard page.
 */
#define STACK_BLOCK	1024
#define PAGE_END(a)	(((a) | 4095) + 1)

static __thread struct {
	u64 serial;		/* guest_hook_serial() it was read in */
	u64 lo;			/* guest address of words[0] */
	unsigned int n;		/* words read */
	u64 words[STACK_BLOCK / sizeof(u64)];
} b;

void hook_stack_read(void)
{
	u64 rsp = guest_reg(R_RSP), lo, hi, end = PAGE_END(rsp);
	size_t len;

	if (b.serial == guest_hook_serial())
		return;
	b.serial = guest_hook_serial();
	if (guest_task_stack(&lo, &hi) && rsp >= lo && rsp <= hi)
		end = hi + 2 * sizeof(u64);
	len = MIN(end - rsp, sizeof(b.words));
	b.lo = rsp;
	b.n = len / sizeof(u64);
	if (b.n && !guest_read(rsp, b.words, b.n * sizeof(u64)))
		b.n = 0;
}

/* Two words at addr, from the block where this hook read it. */
static bool words_at(u64 addr, u64 w[2])
{
	if (b.serial == guest_hook_serial() && addr >= b.lo && !((addr - b.lo) & 7) &&
	    (addr - b.lo) / 8 + 1 < b.n) {
		w[0] = b.words[(addr - b.lo) / 8];
		w[1] = b.words[(addr - b.lo) / 8 + 1];
		return true;
	}
	return guest_read(addr, w, 2 * sizeof(u64));
}

u64 hook_return_address(void)
{
	u64 w[2];

	if (b.serial == guest_hook_serial())
		return words_at(guest_reg(R_RSP), w) ? w[0] : 0;
	/* a lock hook, mostly on no lock user: one word is enough */
	return guest_read_u64(guest_reg(R_RSP), w) ? w[0] : 0;
}

u64 hook_parent_address(void)
{
	u64 w[2];

	return words_at(guest_reg(R_RBP), w) ? w[1] : 0;
}

/*
 * The hooked function has no frame yet: its return address at rsp and the
 * caller's frame pointer in rbp make a frame of their own, one word below
 * rsp, which the walk starts from.
 */
unsigned int open_stack(u64 ip, u64 parent,
			u64 stack[MW_OPEN_DEPTH])
{
	u64 lo, hi, fp, frame[2];
	unsigned int n = 0, skipped = 0;
	bool first = true;

	if (!guest_task_stack(&lo, &hi))
		goto none;
	hook_stack_read();
	fp = guest_reg(R_RSP) - 8;
	while (fp >= lo && fp <= hi) {
		u64 next, ret;

		if (first) {
			next = guest_reg(R_RBP);
			ret = hook_return_address();
			first = false;
		} else {
			if (!words_at(fp, frame))
				break;
			next = frame[0];
			ret = frame[1];
		}
		if (n || ret == ip) {
			stack[n++] = ret;
			if (n == MW_OPEN_DEPTH)
				break;
		} else if (++skipped > OPEN_SKIP) {
			break;
		}
		/* outward only; an odd one is an interrupt's pt_regs */
		if (next <= fp || next & (sizeof(u64) - 1))
			break;
		fp = next;
	}
none:
	if (!n) {
		stack[n++] = ip;
		if (parent && parent != ip)
			stack[n++] = parent;
	}
	return n;
}

unsigned int end_stack(u64 stack[MW_MAX_STACK])
{
	u64 fp = guest_reg(R_RBP), frame[2], cs;
	unsigned int n = 0;

	hook_stack_read();
	stack[n++] = hook_return_address();
	while (n < MW_MAX_STACK && guest_kernel_addr(fp)) {
		if (fp & 1) {
			/* ENCODE_FRAME_POINTER: an interrupt's saved registers */
			u64 regs = fp & ~1ULL;

			if (!guest_read_u64(regs + kconst[K_PT_REGS_CS], &cs) ||
			    cs & 3 ||
			    !guest_read_u64(regs + kconst[K_PT_REGS_IP],
					    &frame[1]) ||
			    !guest_read_u64(regs + kconst[K_PT_REGS_BP],
					    &frame[0]))
				break;
		} else if (!words_at(fp, frame)) {
			break;
		}
		if (!guest_kernel_addr(frame[1]))
			break;
		stack[n++] = frame[1];
		fp = frame[0];
	}
	return n;
}
