// SPDX-License-Identifier: GPL-2.0
/* The event log: single long windows and the recording marks. */

#include "events.h"
#include "frames.h"
#include "locks.h"

static FILE *events;

void events_init(FILE *f, u64 log_ns)
{
	events = f;
	if (!events)
		return;
	fprintf(events, "mmlat_plugin_events 1\n");
	fprintf(events, "param clock=icount log_ns=%llu\n", log_ns);
}

void events_window(unsigned int cpu, const char *kind, u64 begin,
		   u64 len_ns, u8 lock, const u64 *stack,
		   unsigned int depth)
{
	if (!events)
		return;
	fprintf(events, "window %s cpu=%u begin_insn=%llu len_ns=%llu lock=%s stack=",
		kind, cpu, begin, len_ns, lock_tag(lock));
	print_frames(events, stack, depth);
	fputc('\n', events);
}

void events_mark(unsigned int cpu, const char *what, u64 insns)
{
	if (events)
		fprintf(events, "mark %s cpu=%u insn=%llu\n", what, cpu,
			insns);
}

void events_close(void)
{
	if (events)
		fclose(events);
	events = NULL;
}
