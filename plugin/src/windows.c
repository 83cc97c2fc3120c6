// SPDX-License-Identifier: GPL-2.0
/*
 * Window bookkeeping, per vCPU and kind, step for step the guest module's
 * mw_win_begin()/mw_win_end(), counted in the same records by the same
 * functions (mmlat_records.h), with vCPU instructions for its
 * local_clock().
 * Windows of at least log_ns are also written one a line to the event log
 * (the calibration read-back, and later the spike matching).
 */
#include <glib.h>

#include "events.h"
#include "record.h"
#include "wakeups.h"
#include "windows.h"

const char * const win_kind_name[W_KINDS] = { "preempt", "irq" };

struct win_cpu *win_cpus;
unsigned int win_nr_cpus, win_table_size;
u64 win_thresh_ns;
static u64 log_ns;

void windows_init(unsigned int nr_cpus, unsigned int table_size,
		  u64 thresh_ns, u64 log_thresh_ns)
{
	unsigned int cpu;
	int kind;

	win_nr_cpus = nr_cpus;
	win_table_size = table_size;
	win_thresh_ns = thresh_ns;
	log_ns = log_thresh_ns;
	win_cpus = g_new0(struct win_cpu, nr_cpus);
	for (cpu = 0; cpu < nr_cpus; cpu++)
		for (kind = 0; kind < W_KINDS; kind++)
			win_cpus[cpu].table[kind] =
				g_new0(struct mw_win_key, table_size);
}

struct mw_win_start *win_open(unsigned int cpu, int kind)
{
	struct mw_win_start *s = &win_cpus[cpu].start[kind];

	return s->active && s->gen == record_gen ? s : NULL;
}

void win_begin(unsigned int cpu, int kind, u64 ip, u64 parent,
	       u8 lock)
{
	struct mw_win_start *s = &win_cpus[cpu].start[kind];

	if (s->active && s->gen == record_gen)
		win_cpus[cpu].stats[kind].nested_begin++;
	s->seq++;
	s->gen = record_gen;
	if (ip == MW_IDLE_IP) {
		s->stack[0] = MW_IDLE_IP;
		s->depth = 1;
	} else {
		s->depth = open_stack(ip, parent, s->stack);
	}
	s->lock = lock;
	s->active = 1;
	s->ts = vcpu_insns(cpu);
}

void win_end(unsigned int cpu, int kind)
{
	struct mw_win_start *s = &win_cpus[cpu].start[kind];
	struct mw_win_stats *st = &win_cpus[cpu].stats[kind];
	u64 d, end;

	if (!mw_win_close(s, st, record_gen))
		return;
	end = vcpu_insns(cpu);
	d = insns_to_ns(end - s->ts);
	wake_window_closed(cpu, kind, s, end);
	if (mw_win_count(st, s, d))
		st->max_depth = end_stack(st->max_stack);
	if (d >= win_thresh_ns)
		mw_win_key_add(st, win_cpus[cpu].table[kind], win_table_size,
			       s, d);
	if (log_ns && d >= log_ns)
		events_window(cpu, win_kind_name[kind], s->ts, d, s->lock,
			      s->stack, s->depth);
}

void win_idle_enter(unsigned int cpu)
{
	if (win_open(cpu, W_PREEMPT)) {
		win_cpus[cpu].stats[W_PREEMPT].idle_cut++;
		win_end(cpu, W_PREEMPT);
	}
}

void win_idle_exit(unsigned int cpu)
{
	win_begin(cpu, W_PREEMPT, MW_IDLE_IP, 0, 0);
}
