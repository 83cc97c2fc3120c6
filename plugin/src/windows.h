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

#include "hist.h"
#include "stack.h"

enum { W_PREEMPT, W_IRQ, W_KINDS };

struct win_start {
	u64 ts;		/* vCPU instructions at the open */
	u64 seq;		/* windows begun on this vCPU */
	u64 gen;		/* record_gen when it began */
	u64 stack[OPEN_DEPTH];
	u8 depth;
	u8 lock;		/* lock kind + 1 whose acquisition opened it */
	u8 active;
};

struct win_key {
	u64 stack[OPEN_DEPTH];
	u8 depth;		/* 0: free */
	u8 lock;
	u64 n, total, max;
	u32 hist[KEY_NBUCKETS];
};

struct win_stats {
	u64 n, total, max;
	u64 unmatched;	/* an end with no begin since start */
	u64 nested_begin;	/* a begin while a window was open */
	u64 edge;		/* windows open when recording started */
	u64 idle_cut;
	u64 keyed, overflow, overflow_max;
	u64 max_open[OPEN_DEPTH];
	u8 max_open_depth, max_lock;
	unsigned int max_depth;
	u64 max_stack[END_DEPTH];
	u64 hist[NBUCKETS];
};

struct win_cpu {
	struct win_start start[W_KINDS];
	struct win_stats stats[W_KINDS];
	struct win_key *table[W_KINDS];
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
struct win_start *win_open(unsigned int cpu, int kind);

#endif
