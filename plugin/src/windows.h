/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Preempt-off and irq-off windows, per vCPU, kept as the guest module
 * keeps them (guest/modules/mmlat_windows): a log-linear histogram per
 * kind with the longest window's stacks, and the windows of at least
 * thresh_ns keyed by their stack at open and lock tag.
 */
#ifndef MMLAT_PLUGIN_WINDOWS_H
#define MMLAT_PLUGIN_WINDOWS_H

#include "types.h"
#include <stdio.h>

#include "records.h"
#include "stack.h"

enum { W_PREEMPT, W_IRQ, W_KINDS };

struct win_cpu {
	struct mw_win_start start[W_KINDS];
	struct mw_win_stats stats[W_KINDS];
	struct mw_win_key *table[W_KINDS];
};

extern const char * const win_kind_name[W_KINDS];
extern struct win_cpu *win_cpus;
extern unsigned int win_nr_cpus, win_table_size;
extern u64 win_thresh_ns;

void windows_init(unsigned int nr_cpus, unsigned int table_size,
		  u64 thresh_ns, u64 log_ns);

/* A window opens: ip and parent as the tracepoint passes them. */
void win_begin(unsigned int cpu, int kind, u64 ip, u64 parent,
	       u8 lock);

void win_end(unsigned int cpu, int kind);

/* The vCPU goes idle (ends the preempt-off window) or leaves idle. */
void win_idle_enter(unsigned int cpu);
void win_idle_exit(unsigned int cpu);

/* Is a preempt-off window of this interval open on the vCPU? */
struct mw_win_start *win_open(unsigned int cpu, int kind);

#endif
