// SPDX-License-Identifier: GPL-2.0
/*
 * Preempt-off and irq-off windows, timed by the preemptirq tracepoints,
 * which fire on the outermost disable and the matching enable only.  Per
 * CPU and kind the disable stores a local_clock() timestamp and a short
 * stack at open; the enable adds the length to the kind's histogram and,
 * for windows of at least thresh_us, to the table keyed by that stack
 * (keys.c).  The longest window of each kind keeps its stack at open and
 * the kernel unwinder's stack at its end, so that the host can check one
 * against the other.  Entering idle ends the preempt-off window (as
 * stop_critical_timings() does for the preemptoff tracer), and leaving it
 * starts one attributed to "[idle]".
 */
#include <linux/build_bug.h>
#include <linux/moduleparam.h>
#include <linux/sched/clock.h>
#include <linux/stacktrace.h>
#include <linux/time64.h>
#include <linux/vmalloc.h>

#include "mmlat_windows.h"

static unsigned int thresh_us = 5;
module_param(thresh_us, uint, 0444);
MODULE_PARM_DESC(thresh_us, "windows at least this long go to the keyed table");

/*
 * stack_trace_save() stores unsigned longs into the max window's stack,
 * which the records keep as u64 (mmlat_records.h): one size on x86_64.
 */
static_assert(sizeof(unsigned long) == sizeof(u64));

/* frames of the probe and the tracepoint to pass before the opener */
#define OPEN_SKIP	8

DEFINE_PER_CPU(struct mw_win_start, mw_win_start[MW_KINDS]);
u64 mw_thresh_ns;
static struct mw_win_stats *win_stats;	/* [cpu][kind] */

struct mw_win_stats *mw_wstats(int cpu, int kind)
{
	return &win_stats[cpu * MW_KINDS + kind];
}

int mw_windows_init(void)
{
	mw_thresh_ns = (u64)thresh_us * NSEC_PER_USEC;
	win_stats = vzalloc(array3_size(nr_cpu_ids, MW_KINDS,
					sizeof(*win_stats)));
	return win_stats ? 0 : -ENOMEM;
}

void mw_windows_free(void)
{
	vfree(win_stats);
}

/*
 * The stack at window open, from the frame pointers (the bench config
 * builds with them): pass the frames of this probe and the tracepoint up
 * to the one whose return address is ip, the caller the tracepoint names
 * (e.g. _raw_spin_lock+0x1a), then keep up to MW_OPEN_DEPTH return
 * addresses from there.  Only the task's own stack is walked, each frame
 * bounds-checked against it, outward only, up to an interrupt's saved
 * registers: a window opened on an interrupt stack, or whose chain leaves
 * the task stack at once, keeps ip and parent.
 * About ten instructions a frame, where stack_trace_save() costs
 * hundreds under TCG.
 */
static __always_inline void mw_open_stack(struct mw_win_start *s,
					  unsigned long ip,
					  unsigned long parent)
{
	unsigned long lo = (unsigned long)task_stack_page(current);
	unsigned long hi = lo + THREAD_SIZE - 2 * sizeof(long);
	unsigned long fp = (unsigned long)__builtin_frame_address(0);
	unsigned int n = 0, skipped = 0;

	while (fp >= lo && fp <= hi) {
		unsigned long next = ((unsigned long *)fp)[0];
		unsigned long ret = ((unsigned long *)fp)[1];

		if (n || ret == ip) {
			s->stack[n++] = ret;
			if (n == MW_OPEN_DEPTH)
				break;
		} else if (++skipped > OPEN_SKIP) {
			break;
		}
		/*
		 * Outward only; an odd frame pointer is the entry code's
		 * encoded pt_regs (interrupted context), where the chain of
		 * this stack ends.
		 */
		if (next <= fp || next & (sizeof(long) - 1))
			break;
		fp = next;
	}
	if (!n) {
		s->stack[n++] = ip;
		if (parent && parent != ip)
			s->stack[n++] = parent;
	}
	s->depth = n;
}

static __always_inline void mw_win_begin(int kind, unsigned long ip,
					 unsigned long parent)
{
	struct mw_win_start *s = this_cpu_ptr(&mw_win_start[kind]);

	if (s->active && s->gen == mw_gen)
		mw_wstats(smp_processor_id(), kind)->nested_begin++;
	s->seq++;
	s->gen = mw_gen;
	if (ip == MW_IDLE_IP) {
		s->stack[0] = MW_IDLE_IP;
		s->depth = 1;
	} else {
		mw_open_stack(s, ip, parent);
	}
	s->lock = kind == MW_PREEMPT ? mw_opening_lock(ip) : 0;
	s->active = 1;
	/* last: the probe's own work stays outside the window it times */
	s->ts = local_clock();
}

static __always_inline void mw_win_end(int kind, u64 now)
{
	struct mw_win_start *s = this_cpu_ptr(&mw_win_start[kind]);
	int cpu = smp_processor_id();
	struct mw_win_stats *st = mw_wstats(cpu, kind);
	u64 d;

	if (!mw_win_close(s, st, mw_gen))
		return;
	d = now - s->ts;
	if (mw_win_count(st, s, d))
		st->max_depth = stack_trace_save((unsigned long *)st->max_stack,
						 MW_MAX_STACK, 0);
	if (d >= mw_thresh_ns)
		mw_key_add(st, cpu, kind, s, d);
}

/*
 * Tracepoint probes.  preempt_disable/enable fire with preemption already
 * (still) disabled, irq_disable/enable with irqs off, never in NMI: each
 * kind's per-CPU state has a single writer at a time.
 */
void notrace mw_preempt_off(void *data, unsigned long ip,
			    unsigned long parent)
{
	if (READ_ONCE(mw_enabled))
		mw_win_begin(MW_PREEMPT, ip, parent);
}

void notrace mw_preempt_on(void *data, unsigned long ip, unsigned long parent)
{
	if (READ_ONCE(mw_enabled))
		mw_win_end(MW_PREEMPT, local_clock());
}

/*
 * 6.1 skips the irq tracepoints in NMI; 6.12 and 7.3 (x86,
 * ARCH_WANTS_NO_INSTR) fire them from irqentry_nmi_enter()/_exit() too,
 * around an NMI that came in with irqs on.  Skip both ends there, as 6.1
 * does: the windows stay those of task and interrupt context.
 */
void notrace mw_irq_off(void *data, unsigned long ip, unsigned long parent)
{
	if (READ_ONCE(mw_enabled) && !in_nmi())
		mw_win_begin(MW_IRQ, ip, parent);
}

void notrace mw_irq_on(void *data, unsigned long ip, unsigned long parent)
{
	if (READ_ONCE(mw_enabled) && !in_nmi())
		mw_win_end(MW_IRQ, local_clock());
}

/*
 * power:cpu_idle: state, cpu; PWR_EVENT_EXIT is (u32)-1.  Tracepoint
 * probes run with preemption disabled; the idle task keeps it disabled.
 */
void notrace mw_cpu_idle(void *data, unsigned int state, unsigned int cpu)
{
	struct mw_win_start *s = this_cpu_ptr(&mw_win_start[MW_PREEMPT]);

	if (!READ_ONCE(mw_enabled))
		return;
	if (state != (unsigned int)-1) {
		if (s->active && s->gen == mw_gen) {
			mw_wstats(smp_processor_id(), MW_PREEMPT)->idle_cut++;
			mw_win_end(MW_PREEMPT, local_clock());
		}
	} else {
		mw_win_begin(MW_PREEMPT, MW_IDLE_IP, 0);
	}
}
