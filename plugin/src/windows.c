// SPDX-License-Identifier: GPL-2.0
/*
 * Window bookkeeping, per vCPU and kind, step for step the guest module's
 * win_begin()/win_end(), with vCPU instructions for its local_clock().
 * Windows of at least log_ns are also written one a line to the event log
 * (the calibration read-back, and later the spike matching).
 */
#include <glib.h>
#include <string.h>

#include "events.h"
#include "record.h"
#include "windows.h"

#define PROBE_LEN	8	/* linear probing distance in the keyed table */

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
				g_new0(struct win_key, table_size);
}

static u64 stack_hash(const struct win_start *s)
{
	u64 h = s->lock;
	unsigned int i;

	for (i = 0; i < s->depth; i++)
		h = h * 31 + s->stack[i];
	/* Fibonacci hashing, as the kernel's hash_64() */
	return (h * 0x61c8864680b583ebULL) >> 32;
}

static void key_add(struct win_stats *st, struct win_key *t,
		    const struct win_start *s, u64 d)
{
	u64 h = stack_hash(s);
	unsigned int i;

	for (i = 0; i < PROBE_LEN; i++) {
		struct win_key *k = &t[(h + i) & (win_table_size - 1)];

		if (!k->depth) {
			memcpy(k->stack, s->stack, s->depth * sizeof(u64));
			k->depth = s->depth;
			k->lock = s->lock;
		} else if (k->depth != s->depth || k->lock != s->lock ||
			   memcmp(k->stack, s->stack,
				  s->depth * sizeof(u64))) {
			continue;
		}
		k->n++;
		k->total += d;
		if (d > k->max)
			k->max = d;
		k->hist[bucket_of(d, KEY_SUB_BITS)]++;
		st->keyed++;
		return;
	}
	st->overflow++;
	if (d > st->overflow_max)
		st->overflow_max = d;
}

struct win_start *win_open(unsigned int cpu, int kind)
{
	struct win_start *s = &win_cpus[cpu].start[kind];

	return s->active && s->gen == record_gen ? s : NULL;
}

void win_begin(unsigned int cpu, int kind, u64 ip, u64 parent,
	       u8 lock)
{
	struct win_start *s = &win_cpus[cpu].start[kind];

	if (s->active && s->gen == record_gen)
		win_cpus[cpu].stats[kind].nested_begin++;
	s->seq++;
	s->gen = record_gen;
	if (ip == IDLE_IP) {
		s->stack[0] = IDLE_IP;
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
	struct win_start *s = &win_cpus[cpu].start[kind];
	struct win_stats *st = &win_cpus[cpu].stats[kind];
	u64 d;

	if (s->gen != record_gen) {
		/* opened before recording started: its start is unknown */
		if (s->active)
			st->edge++;
		s->active = 0;
		s->gen = record_gen;
		return;
	}
	if (!s->active) {
		st->unmatched++;
		return;
	}
	s->active = 0;
	d = insns_to_ns(vcpu_insns(cpu) - s->ts);
	st->n++;
	st->total += d;
	st->hist[bucket_of(d, SUB_BITS)]++;
	if (d > st->max) {
		st->max = d;
		memcpy(st->max_open, s->stack, s->depth * sizeof(u64));
		st->max_open_depth = s->depth;
		st->max_lock = s->lock;
		st->max_depth = end_stack(st->max_stack);
	}
	if (d >= win_thresh_ns)
		key_add(st, win_cpus[cpu].table[kind], s, d);
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
	win_begin(cpu, W_PREEMPT, IDLE_IP, 0, 0);
}
