/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-wakeup data of the latency measurement: each expiry of a real-time
 * task's hrtimer sleeper (cyclictest's measuring threads), the guest time
 * its timer was due, when the task got the CPU, and the preempt-off and
 * irq-off windows that were open on the vCPU when the timer expired, so
 * that each late wakeup can be tied to the window that held it off.
 */
#ifndef MMLAT_PLUGIN_WAKEUPS_H
#define MMLAT_PLUGIN_WAKEUPS_H

#include "types.h"
#include <stdio.h>

#include "records.h"

/* Start the log in f (the plugin's wakeups.txt). */
void wakeups_init(FILE *f, unsigned int nr_cpus);

/*
 * The hooks: the hrtimer code's clock read (__hrtimer_run_queues(), whose
 * second argument is the CLOCK_MONOTONIC time it expires timers against),
 * a sleeper's expiry (hrtimer_wakeup()) and the task switch that runs it
 * (__switch_to()).
 */
void wake_clock(unsigned int cpu, u64 now_ns);
void wake_timer(unsigned int cpu, u64 timer);
void wake_switch(unsigned int cpu, u64 next);

/* A window of kind closed at insn end: kept while a wakeup may need it. */
void wake_window_closed(unsigned int cpu, int kind,
			const struct mw_win_start *s, u64 end);

void wakeups_close(void);

#endif
