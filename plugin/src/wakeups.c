// SPDX-License-Identifier: GPL-2.0
/*
 * Per-wakeup records of the latency measurement (wakeups.h).
 *
 * Time: the plugin counts a vCPU's instructions, the guest's timers run on
 * CLOCK_MONOTONIC.  __hrtimer_run_queues() is given the monotonic time its
 * interrupt read, so each call pairs an instruction count with a guest
 * time.  A sleeper's timer expired (now - expires) ns before that read;
 * between its expiry and the interrupt the vCPU was running (an idle vCPU
 * takes the interrupt when the timer is due), so the expiry is that many
 * instructions earlier.  From the task switch that runs the woken task,
 * its wakeup latency is (now - expires) + the instructions since the read.
 *
 * The windows open at the expiry are the candidates for what held the
 * wakeup off: one of each kind at most, since windows of a kind do not
 * nest.  An irq-off window has closed by the time the interrupt runs, and
 * a preempt-off one may close only later, so closed windows are kept in a
 * ring per vCPU and kind until their wakeup has been written.
 *
 * Format (plugin/README.md, "wakeups.txt"):
 *   mmlat_plugin_wakeups 1
 *   param clock=icount shift=S
 *   wakeup cpu=C pid=P expires_ns=E clock_ns=N clock_insn=I expiry_insn=X
 *          run_insn=R latency_ns=L running=COMM
 *   held preempt|irq begin_insn=B end_insn=Z lock=TAG stack=FRAME,...
 *   after preempt|irq begin_insn=B end_insn=Z lock=TAG stack=FRAME,...
 *
 * "after" is the window of each kind that opened after the expiry and
 * held the task off longest before it ran (softirqs at the interrupt's
 * exit, say): no cause by the rule a window must open before the timer
 * expires, but what a reader of an unexplained spike wants to see.
 */
#include <glib.h>
#include <string.h>

#include "frames.h"
#include "guest.h"
#include "kconst.h"
#include "locks.h"
#include "record.h"
#include "wakeups.h"
#include "windows.h"

#define RING		256	/* closed windows kept per vCPU and kind */
#define MAX_PENDING	8	/* woken tasks not yet run */
#define COMM_LEN	16

struct closed_win {
	u64 seq, begin, end;
	u64 stack[MW_OPEN_DEPTH];
	u8 depth, lock;
};

struct wake_cpu {
	struct closed_win ring[W_KINDS][RING];
	unsigned int head[W_KINDS];	/* next slot to fill */
	u64 clock_insn, clock_ns;
	bool clock_valid;
};

/* A window open at a timer's expiry. */
struct held {
	bool valid;
	bool open;		/* still open when the timer ran */
	struct closed_win w;
};

struct pending {
	u64 task;		/* 0: free */
	unsigned int cpu;
	int pid;
	u64 expires, clock_ns, clock_insn, expiry_insn;
	char running[COMM_LEN + 1];
	struct held held[W_KINDS];
};

static FILE *wake_log;
static struct wake_cpu *cpus;
static struct pending pending[MAX_PENDING];

void wakeups_init(FILE *f, unsigned int nr_cpus)
{
	wake_log = f;
	cpus = g_new0(struct wake_cpu, nr_cpus);
	fprintf(wake_log, "mmlat_plugin_wakeups 1\n");
	fprintf(wake_log, "param clock=icount shift=%u\n", icount_shift);
}

void wake_window_closed(unsigned int cpu, int kind,
			const struct mw_win_start *s, u64 end)
{
	struct wake_cpu *wc;
	struct closed_win *c;

	if (!wake_log)
		return;
	wc = &cpus[cpu];
	c = &wc->ring[kind][wc->head[kind]++ % RING];
	c->seq = s->seq;
	c->begin = s->ts;
	c->end = end;
	c->depth = s->depth;
	c->lock = s->lock;
	memcpy(c->stack, s->stack, s->depth * sizeof(s->stack[0]));
}

void wake_clock(unsigned int cpu, u64 now_ns)
{
	if (!wake_log)
		return;
	cpus[cpu].clock_insn = vcpu_insns(cpu);
	cpus[cpu].clock_ns = now_ns;
	cpus[cpu].clock_valid = true;
}

/* The ring's window of kind with this seq, newest first; NULL if gone. */
static struct closed_win *closed(struct wake_cpu *wc, int kind, u64 seq)
{
	unsigned int i, n = MIN(wc->head[kind], RING);

	for (i = 1; i <= n; i++) {
		struct closed_win *c = &wc->ring[kind][(wc->head[kind] - i) % RING];

		if (c->seq == seq)
			return c;
	}
	return NULL;
}

/* The window of kind open on the vCPU at instruction at, if any. */
static void held_at(struct wake_cpu *wc, unsigned int cpu, int kind, u64 at,
		    struct held *h)
{
	struct mw_win_start *s = win_open(cpu, kind);
	unsigned int i, n = MIN(wc->head[kind], RING);

	h->valid = false;
	/*
	 * Still open since before the instant; one opened after it (the
	 * timer interrupt's own irq-off window) sends the search to the
	 * closed ones.
	 */
	if (s && s->ts <= at) {
		h->valid = true;
		h->open = true;
		h->w.seq = s->seq;
		h->w.begin = s->ts;
		h->w.end = 0;
		h->w.depth = s->depth;
		h->w.lock = s->lock;
		memcpy(h->w.stack, s->stack, s->depth * sizeof(s->stack[0]));
		return;
	}
	/* windows of a kind follow each other: newest first, stop before at */
	for (i = 1; i <= n; i++) {
		struct closed_win *c = &wc->ring[kind][(wc->head[kind] - i) % RING];

		if (c->end <= at)
			return;
		if (c->begin <= at) {
			h->valid = true;
			h->open = false;
			h->w = *c;
			return;
		}
	}
}

static void read_comm(u64 task, char *comm)
{
	unsigned int i;

	memset(comm, 0, COMM_LEN + 1);
	if (!task || !guest_read(task + kconst[K_TASK_COMM], comm, COMM_LEN)) {
		strcpy(comm, "?");
		return;
	}
	/* one word on the line */
	for (i = 0; comm[i]; i++)
		if (comm[i] <= ' ' || comm[i] > '~')
			comm[i] = '_';
	if (!comm[0])
		strcpy(comm, "?");
}

static void write_window(const char *what, int kind, u64 begin, u64 end,
			 u8 lock, const u64 *stack, unsigned int depth)
{
	fprintf(wake_log, "%s %s begin_insn=%llu end_insn=%llu lock=%s stack=",
		what, win_kind_name[kind], begin, end, lock_tag(lock));
	print_frames(wake_log, stack, depth);
	fputc('\n', wake_log);
}

/* The window of kind opened after the expiry that overlaps most of the wait. */
static void write_after(const struct pending *p, int kind, u64 run)
{
	struct wake_cpu *wc = &cpus[p->cpu];
	unsigned int i, n = MIN(wc->head[kind], RING);
	struct closed_win *best = NULL;
	u64 most = 0;

	for (i = 1; i <= n; i++) {
		struct closed_win *c = &wc->ring[kind][(wc->head[kind] - i) % RING];
		u64 overlap;

		if (c->end <= p->expiry_insn)
			break;
		if (c->begin <= p->expiry_insn)
			continue;
		overlap = MIN(c->end, run) - c->begin;
		if (overlap > most) {
			most = overlap;
			best = c;
		}
	}
	if (best)
		write_window("after", kind, best->begin, best->end, best->lock,
			     best->stack, best->depth);
}

static void write_held(const struct pending *p, int kind, u64 run)
{
	const struct held *h = &p->held[kind];
	struct closed_win *c;
	u64 end = 0;

	if (!h->valid)
		return;
	if (!h->open) {
		end = h->w.end;
	} else if ((c = closed(&cpus[p->cpu], kind, h->w.seq))) {
		end = c->end;
	} else {
		struct mw_win_start *s = win_open(p->cpu, kind);

		if (s && s->seq == h->w.seq)
			end = run;	/* still open as the task runs */
	}
	/* end_insn=0: it closed before run_insn, but fell out of the ring */
	write_window("held", kind, h->w.begin, end, h->w.lock, h->w.stack,
		     h->w.depth);
}

void wake_switch(unsigned int cpu, u64 next)
{
	struct pending *p = NULL;
	unsigned int i;
	u64 run;
	int kind;

	if (!wake_log)
		return;
	for (i = 0; i < MAX_PENDING; i++)
		if (pending[i].task == next)
			p = &pending[i];
	if (!p)
		return;
	run = vcpu_insns(cpu);
	fprintf(wake_log,
		"wakeup cpu=%u pid=%d expires_ns=%lld clock_ns=%lld clock_insn=%llu expiry_insn=%llu run_insn=%llu latency_ns=%llu running=%s\n",
		p->cpu, p->pid, (s64)p->expires, (s64)p->clock_ns,
		p->clock_insn, p->expiry_insn, run,
		insns_to_ns(run - p->expiry_insn), p->running);
	for (kind = 0; kind < W_KINDS; kind++)
		write_held(p, kind, run);
	for (kind = 0; kind < W_KINDS; kind++)
		write_after(p, kind, run);
	p->task = 0;
}

void wake_timer(unsigned int cpu, u64 timer)
{
	struct wake_cpu *wc;
	struct pending *p = NULL;
	u64 task, late;
	s64 expires;
	s32 prio, pid;
	unsigned int i;
	int kind;

	if (!wake_log)
		return;
	wc = &cpus[cpu];
	if (!wc->clock_valid ||
	    !guest_read_u64(timer + kconst[K_SLEEPER_TASK], &task) || !task ||
	    !guest_read(task + kconst[K_TASK_PRIO], &prio, sizeof(prio)) ||
	    prio >= kconst[K_MAX_RT_PRIO] ||
	    !guest_read(task + kconst[K_TASK_PID], &pid, sizeof(pid)) ||
	    !guest_read(timer + kconst[K_HRTIMER_SOFTEXPIRES], &expires,
			sizeof(expires)))
		return;
	for (i = 0; i < MAX_PENDING; i++)
		if (pending[i].task == task || (!p && !pending[i].task))
			p = &pending[i];
	if (!p)
		return;
	p->task = task;
	p->cpu = cpu;
	p->pid = pid;
	p->expires = expires;
	p->clock_ns = wc->clock_ns;
	p->clock_insn = wc->clock_insn;
	late = (s64)wc->clock_ns > expires ? wc->clock_ns - expires : 0;
	late >>= icount_shift;
	p->expiry_insn = late < wc->clock_insn ? wc->clock_insn - late : 0;
	read_comm(guest_current(), p->running);
	for (kind = 0; kind < W_KINDS; kind++)
		held_at(wc, cpu, kind, p->expiry_insn, &p->held[kind]);
	/* expired before the task slept: it runs on, no switch will come */
	if (guest_current() == task)
		wake_switch(cpu, task);
}

void wakeups_close(void)
{
	if (wake_log)
		fclose(wake_log);
	wake_log = NULL;
}
