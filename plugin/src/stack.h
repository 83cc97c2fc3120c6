/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Frame-pointer stacks of the guest kernel (the bench config builds with
 * CONFIG_FRAME_POINTER), read from guest memory at a hook: a function's
 * first instruction, where the return address is at rsp and rbp is still
 * the caller's frame.
 */
#ifndef MMLAT_PLUGIN_STACK_H
#define MMLAT_PLUGIN_STACK_H

#include "records.h"	/* the depths of the stacks a window keeps */

/*
 * The stack at a window's open, as the guest module's open_stack() keeps
 * it: the frames up to the one returning to ip (the tracepoint's caller
 * ip) are passed, then up to MW_OPEN_DEPTH return addresses kept from
 * there, opener first, walking only the current task's stack, outward
 * only; a window opened elsewhere (an interrupt stack) keeps ip and
 * parent.  Returns the depth.
 */
unsigned int open_stack(u64 ip, u64 parent,
			u64 stack[MW_OPEN_DEPTH]);

/*
 * The whole stack at a hook, innermost first, through interrupt frames
 * (the entry code's encoded frame pointer) as the kernel's frame-pointer
 * unwinder goes.  Returns the depth.
 */
unsigned int end_stack(u64 stack[MW_MAX_STACK]);

/*
 * Read the stack above rsp in one piece for this hook: the frame walks
 * and the two addresses below are then read from it.
 */
void hook_stack_read(void);

/* The return address at a hook: the hooked function's caller. */
u64 hook_return_address(void);

/* The return address of the hooked function's caller (CALLER_ADDR1). */
u64 hook_parent_address(void);

#endif
