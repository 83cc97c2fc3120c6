// SPDX-License-Identifier: GPL-2.0
/* Guest frame-pointer walks at a hook (a function's entry). */
#include "guest.h"
#include "kconst.h"
#include "stack.h"

/* probe frames the guest module passes before giving up on the opener */
#define OPEN_SKIP	8

u64 hook_return_address(void)
{
	u64 ret;

	return guest_read_u64(guest_reg(R_RSP), &ret) ? ret : 0;
}

u64 hook_parent_address(void)
{
	u64 ret;

	return guest_read_u64(guest_reg(R_RBP) + 8, &ret) ? ret : 0;
}

/*
 * The hooked function has no frame yet: its return address at rsp and the
 * caller's frame pointer in rbp make a frame of their own, one word below
 * rsp, which the walk starts from.
 */
unsigned int open_stack(u64 ip, u64 parent,
			u64 stack[OPEN_DEPTH])
{
	u64 lo, hi, fp, frame[2];
	unsigned int n = 0, skipped = 0;
	bool first = true;

	if (!guest_task_stack(&lo, &hi))
		goto none;
	fp = guest_reg(R_RSP) - 8;
	while (fp >= lo && fp <= hi) {
		u64 next, ret;

		if (first) {
			next = guest_reg(R_RBP);
			if (!guest_read_u64(fp + 8, &ret))
				break;
			first = false;
		} else {
			if (!guest_read(fp, frame, sizeof(frame)))
				break;
			next = frame[0];
			ret = frame[1];
		}
		if (n || ret == ip) {
			stack[n++] = ret;
			if (n == OPEN_DEPTH)
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

unsigned int end_stack(u64 stack[END_DEPTH])
{
	u64 fp = guest_reg(R_RBP), frame[2], cs;
	unsigned int n = 0;

	stack[n++] = hook_return_address();
	while (n < END_DEPTH && guest_kernel_addr(fp)) {
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
		} else if (!guest_read(fp, frame, sizeof(frame))) {
			break;
		}
		if (!guest_kernel_addr(frame[1]))
			break;
		stack[n++] = frame[1];
		fp = frame[0];
	}
	return n;
}
